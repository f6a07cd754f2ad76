/* pretok: see pretok.h. */
#include "text/pretok.h"
#include "core/utf8.h"

#include <stdint.h>
#include <utf8proc.h>

const char PRETOK_QWEN2_PATTERN[] =
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}"
	"| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/* Unicode White_Space (PropList.txt), complete: it has not changed since
 * Unicode 6.0. Deliberately not utf8proc's categories: U+0085 is Cc but
 * whitespace, U+200B is Cf and not, U+001C..U+001F are Cc and not. */
static int is_white_space(int cp)
{
	return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 ||
	       cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
	       cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
	       cp == 0x3000;
}

int pretok_class(int cp)
{
	int c = 0;
	switch (utf8proc_category(cp)) {
	case UTF8PROC_CATEGORY_LU: case UTF8PROC_CATEGORY_LL:
	case UTF8PROC_CATEGORY_LT: case UTF8PROC_CATEGORY_LM:
	case UTF8PROC_CATEGORY_LO:
		c = PT_L;
		break;
	case UTF8PROC_CATEGORY_ND: case UTF8PROC_CATEGORY_NL:
	case UTF8PROC_CATEGORY_NO:
		c = PT_N;
		break;
	default:
		break;
	}
	if (is_white_space(cp))
		c |= PT_S;
	if (cp == '\r' || cp == '\n')
		c |= PT_CRLF;
	return c;
}

/* ASCII classes, computed once. */
static unsigned char ascii_class[128];
static int ascii_ready;

static void init_ascii(void)
{
	for (int c = 0; c < 128; c++)
		ascii_class[c] = (unsigned char)pretok_class(c);
	ascii_ready = 1;
}

/* One character at s[i]: its class, its length (*len) and its code point
 * (*cp; -1 for an invalid byte, whose class is that of U+FFFD: none). */
static inline int char_at(const unsigned char *s, size_t n, size_t i, int *len, int32_t *cp)
{
	if (s[i] < 0x80) {
		*len = 1;
		*cp = s[i];
		return ascii_class[s[i]];
	}
	int l = utf8_decode(s + i, n - i, cp);
	if (l == 0) {
		*len = 1;
		*cp = -1;
		return 0;
	}
	*len = l;
	return pretok_class(*cp);
}

/* The class at i, or -1 past the end. */
static inline int class_at(const unsigned char *s, size_t n, size_t i, int *len)
{
	int32_t cp;
	if (i >= n) {
		*len = 0;
		return -1;
	}
	return char_at(s, n, i, len, &cp);
}

/* Alternative 1, (?i:'s|'t|'re|'ve|'m|'ll|'d), at s[i] == '\''. Returns
 * the end of the match or 0. */
static size_t contraction(const unsigned char *s, size_t n, size_t i)
{
	size_t j = i + 1;
	if (j >= n)
		return 0;
	int c = s[j] | 0x20; /* ASCII lower case (only used for letters below) */
	if (s[j] == 0xC5 && j + 1 < n && s[j + 1] == 0xBF)
		return j + 2;  /* U+017F folds to 's' */
	if (!((s[j] >= 'A' && s[j] <= 'Z') || (s[j] >= 'a' && s[j] <= 'z')))
		return 0;
	if (c == 's' || c == 't' || c == 'm' || c == 'd')
		return j + 1;
	if (j + 1 < n) {
		int d = s[j + 1] | 0x20;
		int d_alpha = (s[j + 1] >= 'A' && s[j + 1] <= 'Z') ||
			      (s[j + 1] >= 'a' && s[j + 1] <= 'z');
		if (d_alpha && ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') ||
				(c == 'l' && d == 'l')))
			return j + 2;
	}
	return 0;
}

/* The end of the run of characters from j on whose class has any of the
 * bits in want and none of the bits in avoid; an invalid byte (class 0)
 * counts when want is 0 ("anything but"). */
static size_t run_of(const unsigned char *s, size_t n, size_t j, int want, int avoid)
{
	int len;
	while (j < n) {
		int c = class_at(s, n, j, &len);
		if ((want && !(c & want)) || (c & avoid))
			break;
		j += (size_t)len;
	}
	return j;
}

size_t pretok_next(const unsigned char *s, size_t n, size_t i)
{
	if (!ascii_ready)
		init_ascii();
	int len0, len1;
	int c0 = class_at(s, n, i, &len0);
	size_t j;

	/* 1: contractions */
	if (s[i] == '\'' && (j = contraction(s, n, i)))
		return j;
	/* 2: [^\r\n\p{L}\p{N}]?\p{L}+ */
	if (c0 & PT_L)
		return run_of(s, n, i, PT_L, 0);
	if (!(c0 & (PT_CRLF | PT_N)) && i + len0 < n &&
	    (class_at(s, n, i + len0, &len1) & PT_L))
		return run_of(s, n, i + len0, PT_L, 0);
	/* 3: \p{N} */
	if (c0 & PT_N)
		return i + (size_t)len0;
	/* 4: ' ?[^\s\p{L}\p{N}]+[\r\n]*' */
	j = i;
	if (s[i] == ' ' && i + 1 < n && !(class_at(s, n, i + 1, &len1) & (PT_S | PT_L | PT_N)))
		j = i + 1;
	if (!(class_at(s, n, j, &len1) & (PT_S | PT_L | PT_N))) {
		j = run_of(s, n, j, 0, PT_S | PT_L | PT_N);
		return run_of(s, n, j, PT_CRLF, 0);
	}
	/* Here s[i] is whitespace. 5: \s*[\r\n]+ ends after the run's last
	 * \r or \n; 6: \s+(?!\S) stops before the run's last character unless
	 * the run ends the text; 7: \s+ takes a lone one. */
	size_t end = i, last_nl = 0, last_start = i;
	while (end < n) {
		int c = class_at(s, n, end, &len1);
		if (!(c & PT_S))
			break;
		last_start = end;
		end += (size_t)len1;
		if (c & PT_CRLF)
			last_nl = end;
	}
	if (last_nl)
		return last_nl;
	if (end == n || last_start == i)
		return end;
	return last_start;
}
