/* jsonutil: see jsonutil.h. */
#include "core/jsonutil.h"

#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* ---- json_validate: one pass over the bytes, by the RFC's grammar ---- */

struct scan {
	const unsigned char *p, *end;
	char why[64];          /* the reason, set by fail() */
	struct literal { const char *at; size_t n; } *nums;  /* when not NULL: each number */
	size_t n_nums, cap_nums;
	/* The keys of the objects being read, innermost last: an object's
	 * keys are checked for duplicates when it closes, then dropped. A key
	 * with an escape is stored decoded in the arena (at an offset). */
	struct key {
		const unsigned char *at;  /* in the text, after the quote */
		const char *text;         /* set when the object closes */
		size_t n, off;
		int decoded;
	} *keys;
	size_t n_keys, cap_keys;
	char *arena;
	size_t n_arena, cap_arena;
	int oom;
};

static int fail(struct scan *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(struct scan *s, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s->why, sizeof s->why, fmt, ap);
	va_end(ap);
	return -1;
}

/* "'x'" for a printable byte ("\"'\"" for the quote), else "byte 0xNN". */
static const char *byte_name(char *buf, size_t cap, unsigned char c)
{
	if (c == '\'')
		snprintf(buf, cap, "\"'\"");
	else if (c > 0x20 && c < 0x7f)
		snprintf(buf, cap, "'%c'", c);
	else
		snprintf(buf, cap, "byte 0x%02x", c);
	return buf;
}

static int unexpected(struct scan *s, const char *wanted)
{
	char b[16];
	if (s->p == s->end)
		return fail(s, "unexpected end of text, expected %s", wanted);
	return fail(s, "unexpected %s, expected %s", byte_name(b, sizeof b, *s->p), wanted);
}

static void ws(struct scan *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\t' || *s->p == '\n' || *s->p == '\r'))
		s->p++;
}

/* One UTF-8 sequence at s->p (first byte >= 0x80), strictly: no overlong
 * form, no surrogate, nothing past U+10FFFF. */
static int utf8_seq(struct scan *s)
{
	const unsigned char *p = s->p;
	unsigned c = p[0], n, min;
	if (c >= 0xc2 && c <= 0xdf)
		n = 1, min = 0x80;
	else if (c >= 0xe0 && c <= 0xef)
		n = 2, min = 0x800;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 3, min = 0x10000;
	else
		return fail(s, "byte 0x%02x is not valid UTF-8", c);
	if ((size_t)(s->end - p) <= n)
		return fail(s, "UTF-8 sequence cut short");
	unsigned cp = c & (0x3f >> n);
	for (unsigned i = 1; i <= n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return fail(s, "byte 0x%02x is not valid UTF-8", c);
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if (cp < min)
		return fail(s, "overlong UTF-8 sequence");
	if (cp >= 0xd800 && cp <= 0xdfff)
		return fail(s, "UTF-8 encoded surrogate U+%04X", cp);
	if (cp > 0x10ffff)
		return fail(s, "UTF-8 sequence past U+10FFFF");
	s->p += n + 1;
	return 0;
}

static int hex4(struct scan *s, unsigned *out)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned char c = s->p + i < s->end ? s->p[i] : 0;
		int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
			c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
		if (d < 0)
			return fail(s, "\\u needs four hex digits");
		v = v << 4 | (unsigned)d;
	}
	s->p += 4;
	*out = v;
	return 0;
}

/* The bytes a string can hold as they are: printable ASCII but the quote
 * and the backslash. (The scan spends its time here: tokenizer.json is
 * 7 MB of short strings.) */
static const unsigned char PLAIN[256] = {
#define R16(x) x, x, x, x, x, x, x, x, x, x, x, x, x, x, x, x
	R16(0), R16(0),
	1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,    /* 0x20: '"' */
	R16(1), R16(1),
	1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,    /* 0x50: '\\' */
	R16(1), R16(1),
#undef R16
};

static int string(struct scan *s)
{
	s->p++;  /* the opening quote */
	for (;;) {
		while (s->p < s->end && PLAIN[*s->p])
			s->p++;
		if (s->p == s->end)
			return fail(s, "unterminated string");
		unsigned char c = *s->p;
		if (c == '"') {
			s->p++;
			return 0;
		}
		if (c < 0x20)
			return fail(s, "raw control character 0x%02x in a string", c);
		if (c >= 0x80) {
			if (utf8_seq(s) < 0)
				return -1;
			continue;
		}
		s->p++;
		if (c != '\\')
			continue;
		if (s->p == s->end)
			return fail(s, "unterminated string");
		c = *s->p++;
		if (strchr("\"\\/bfnrt", c) && c)
			continue;
		if (c != 'u') {
			s->p--;
			char b[16];
			return fail(s, "invalid escape \\%s", byte_name(b, sizeof b, c));
		}
		unsigned u, lo;
		if (hex4(s, &u) < 0)
			return -1;
		if (u == 0) {
			s->p -= 6;
			return fail(s, "\\u0000 in a string (C strings cannot hold NUL)");
		}
		if (u >= 0xdc00 && u <= 0xdfff) {
			s->p -= 6;
			return fail(s, "lone surrogate \\u%04X", u);
		}
		if (u >= 0xd800 && u <= 0xdbff) {
			if (s->end - s->p < 2 || s->p[0] != '\\' || s->p[1] != 'u') {
				s->p -= 6;
				return fail(s, "lone surrogate \\u%04X", u);
			}
			s->p += 2;
			if (hex4(s, &lo) < 0)
				return -1;
			if (lo < 0xdc00 || lo > 0xdfff) {
				s->p -= 12;
				return fail(s, "lone surrogate \\u%04X", u);
			}
		}
	}
}

static int digits(struct scan *s)
{
	if (s->p == s->end || *s->p < '0' || *s->p > '9')
		return -1;
	while (s->p < s->end && *s->p >= '0' && *s->p <= '9')
		s->p++;
	return 0;
}

/* -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, within a double's range. */
static int number(struct scan *s)
{
	const unsigned char *at = s->p;
	if (*s->p == '-')
		s->p++;
	if (s->p < s->end && *s->p == '0')
		s->p++;
	else if (digits(s) < 0)
		goto bad;
	if (s->p < s->end && *s->p == '.') {
		s->p++;
		if (digits(s) < 0)
			goto bad;
	}
	if (s->p < s->end && (*s->p == 'e' || *s->p == 'E')) {
		s->p++;
		if (s->p < s->end && (*s->p == '+' || *s->p == '-'))
			s->p++;
		if (digits(s) < 0)
			goto bad;
	}
	if (s->p < s->end && (isalnum(*s->p) || *s->p == '.' || *s->p == '+' || *s->p == '-'))
		goto bad;
	/* The range: strtod on a copy (the text need not end after it). */
	size_t n = (size_t)(s->p - at);
	char buf[64], *tmp = n < sizeof buf ? buf : malloc(n + 1);
	if (!tmp) {
		s->oom = 1;
		return fail(s, "out of memory");
	}
	memcpy(tmp, at, n);
	tmp[n] = 0;
	double d = strtod(tmp, NULL);
	if (tmp != buf)
		free(tmp);
	if (!isfinite(d)) {
		s->p = at;
		return fail(s, "number out of range");
	}
	if (s->nums) {
		if (s->n_nums == s->cap_nums) {
			size_t cap = 2 * s->cap_nums;
			struct literal *v = realloc(s->nums, cap * sizeof *v);
			if (!v) {
				s->oom = 1;
				return fail(s, "out of memory");
			}
			s->nums = v;
			s->cap_nums = cap;
		}
		s->nums[s->n_nums++] = (struct literal){ (const char *)at, n };
	}
	return 0;
bad:
	s->p = at;
	return fail(s, "invalid number");
}

static int literal(struct scan *s, const char *word)
{
	size_t n = strlen(word);
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0 ||
	    ((size_t)(s->end - s->p) > n && isalnum(s->p[n])))
		return unexpected(s, "a JSON value");
	s->p += n;
	return 0;
}

static int grow(void **p, size_t *cap, size_t need, size_t size)
{
	if (need <= *cap)
		return 0;
	size_t c = *cap ? *cap : 64;
	while (c < need)
		c *= 2;
	void *q = realloc(*p, c * size);
	if (!q)
		return -1;
	*p = q;
	*cap = c;
	return 0;
}

/* The code point of the \uXXXX (or surrogate pair) at p, moving p past it
 * (the scan has checked it). */
static unsigned unescape_u(const unsigned char **p)
{
	unsigned v = 0;
	for (int i = 0; i < 4; i++) {
		unsigned c = (*p)[i];
		v = v << 4 | (c <= '9' ? c - '0' : (c | 0x20) - 'a' + 10);
	}
	*p += 4;
	if (v >= 0xd800 && v <= 0xdbff) {
		*p += 2;
		unsigned lo = unescape_u(p);
		v = 0x10000 + ((v - 0xd800) << 10) + (lo - 0xdc00);
	}
	return v;
}

/* Records the key whose text (between its quotes, already scanned) is
 * at[0..n), decoded when it holds an escape. */
static int add_key(struct scan *s, const unsigned char *at, size_t n)
{
	if (grow((void **)&s->keys, &s->cap_keys, s->n_keys + 1, sizeof *s->keys) < 0)
		goto oom;
	struct key k = { at, NULL, n, 0, 0 };
	if (memchr(at, '\\', n)) {
		/* decoding never lengthens: \uXXXX is 6 bytes, UTF-8 at most 4 */
		if (grow((void **)&s->arena, &s->cap_arena, s->n_arena + n, 1) < 0)
			goto oom;
		char *o = s->arena + s->n_arena;
		size_t m = 0;
		for (const unsigned char *p = at, *end = at + n; p < end;) {
			if (*p != '\\') {
				o[m++] = (char)*p++;
				continue;
			}
			p++;
			unsigned char c = *p++;
			if (c != 'u') {
				const char *from = "\"\\/bfnrt", *to = "\"\\/\b\f\n\r\t";
				o[m++] = to[strchr(from, c) - from];
				continue;
			}
			unsigned cp = unescape_u(&p);
			if (cp < 0x80) {
				o[m++] = (char)cp;
			} else if (cp < 0x800) {
				o[m++] = (char)(0xc0 | cp >> 6);
				o[m++] = (char)(0x80 | (cp & 0x3f));
			} else if (cp < 0x10000) {
				o[m++] = (char)(0xe0 | cp >> 12);
				o[m++] = (char)(0x80 | (cp >> 6 & 0x3f));
				o[m++] = (char)(0x80 | (cp & 0x3f));
			} else {
				o[m++] = (char)(0xf0 | cp >> 18);
				o[m++] = (char)(0x80 | (cp >> 12 & 0x3f));
				o[m++] = (char)(0x80 | (cp >> 6 & 0x3f));
				o[m++] = (char)(0x80 | (cp & 0x3f));
			}
		}
		k = (struct key){ at, NULL, m, s->n_arena, 1 };
		s->n_arena += m;
	}
	s->keys[s->n_keys++] = k;
	return 0;
oom:
	s->oom = 1;
	return fail(s, "out of memory");
}

/* By text, then by place in the document. */
static int by_text(const void *a, const void *b)
{
	const struct key *x = a, *y = b;
	size_t n = x->n < y->n ? x->n : y->n;
	int c = memcmp(x->text, y->text, n);
	if (c)
		return c;
	if (x->n != y->n)
		return x->n < y->n ? -1 : 1;
	return (x->at > y->at) - (x->at < y->at);
}

/* Checks the keys from base on (one object's) for a repeat, pointing s->p
 * at the earliest key that repeats an earlier one; then drops them. */
static int check_keys(struct scan *s, size_t base, size_t arena_base)
{
	size_t n = s->n_keys - base;
	struct key *k = s->keys + base;
	const unsigned char *dup = NULL;
	if (n > 1) {
		for (size_t i = 0; i < n; i++)
			k[i].text = k[i].decoded ? s->arena + k[i].off : (const char *)k[i].at;
		qsort(k, n, sizeof *k, by_text);
		size_t di = 0;
		for (size_t i = 1; i < n; i++)
			if (k[i].n == k[i - 1].n &&
			    !memcmp(k[i].text, k[i - 1].text, k[i].n) &&
			    (!dup || k[i].at < dup)) {
				dup = k[i].at;
				di = i;
			}
		if (dup) {
			char text[64], q[80];
			size_t m = k[di].n < sizeof text - 1 ? k[di].n : sizeof text - 1;
			memcpy(text, k[di].text, m);
			text[m] = 0;
			s->p = dup - 1;  /* the opening quote */
			return fail(s, "duplicate key %s", json_quote(q, sizeof q, text));
		}
	}
	s->n_keys = base;
	s->n_arena = arena_base;
	return 0;
}

static int value(struct scan *s, int depth)
{
	ws(s);
	if (s->p == s->end)
		return unexpected(s, "a JSON value");
	unsigned char c = *s->p;
	if (c == '"')
		return string(s);
	if (c == '-' || (c >= '0' && c <= '9'))
		return number(s);
	if (c == 't')
		return literal(s, "true");
	if (c == 'f')
		return literal(s, "false");
	if (c == 'n')
		return literal(s, "null");
	if (c != '[' && c != '{')
		return unexpected(s, "a JSON value");
	if (depth == JSON_MAX_DEPTH)
		return fail(s, "nested deeper than %d", JSON_MAX_DEPTH);
	unsigned char close = c == '[' ? ']' : '}';
	size_t base = s->n_keys, arena_base = s->n_arena;
	s->p++;
	ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		return 0;
	}
	for (;;) {
		if (close == '}') {
			ws(s);
			if (s->p == s->end || *s->p != '"')
				return unexpected(s, "a string key");
			const unsigned char *key = s->p + 1;
			if (string(s) < 0 || add_key(s, key, (size_t)(s->p - 1 - key)) < 0)
				return -1;
			ws(s);
			if (s->p == s->end || *s->p != ':')
				return unexpected(s, "':' after a key");
			s->p++;
		}
		if (value(s, depth + 1) < 0)
			return -1;
		ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == close) {
			s->p++;
			return close == '}' ? check_keys(s, base, arena_base) : 0;
		}
		return unexpected(s, close == ']' ? "',' or ']'" : "',' or '}'");
	}
}

static int scan_text(struct scan *s, const char *text, size_t len, const char *what,
		     struct err *e)
{
	s->p = (const unsigned char *)text;
	s->end = s->p + len;
	s->why[0] = 0;
	int rc = value(s, 0);
	if (rc == 0) {
		ws(s);
		if (s->p != s->end)
			rc = unexpected(s, "nothing after the JSON value");
	}
	if (rc == 0)
		return 0;
	if (s->oom)
		return err_set(e, "out of memory");
	long line = 1, col = 1;
	for (const char *p = text; p < (const char *)s->p; p++, col++)
		if (*p == '\n') {
			line++;
			col = 0;
		}
	return err_set(e, "%s%snot valid JSON (line %ld, column %ld): %s", what ? what : "",
		       what ? ": " : "", line, col, s->why);
}

int json_validate(const char *text, size_t len, const char *what, struct err *e)
{
	struct scan s = { 0 };
	int rc = scan_text(&s, text, len, what, e);
	free(s.keys);
	free(s.arena);
	return rc;
}

/* Gives each number node of the tree, in document order (the order cJSON
 * built it in and the scan met the numbers in), its literal. */
static int attach_literals(cJSON *v, const struct literal *nums, size_t n, size_t *i)
{
	for (; v; v = v->next) {
		if (cJSON_IsNumber(v)) {
			if (*i == n)
				return -1;
			v->valuestring = strndup(nums[*i].at, nums[*i].n);
			if (!v->valuestring)
				return -1;
			++*i;
		} else if (v->child && attach_literals(v->child, nums, n, i) < 0) {
			return -1;
		}
	}
	return 0;
}

int json_parse_text(cJSON **out, const char *text, size_t len, const char *what,
		    struct err *e)
{
	*out = NULL;
	struct scan s = { .nums = malloc(64 * sizeof *s.nums), .cap_nums = 64 };
	if (!s.nums)
		return err_set(e, "out of memory");
	int bad = scan_text(&s, text, len, what, e);
	free(s.keys);
	free(s.arena);
	if (bad) {
		free(s.nums);
		return -1;
	}
	/* Valid JSON within cJSON's limits: cJSON parses it the same way, so
	 * it fails only for memory. It is given a NUL-terminated copy (it
	 * reads a byte past a number or literal to see where it ends). */
	char *copy = malloc(len + 1);
	if (copy) {
		memcpy(copy, text, len);
		copy[len] = 0;
		*out = cJSON_ParseWithLength(copy, len);
		free(copy);
	}
	size_t i = 0;
	int ok = *out && attach_literals(*out, s.nums, s.n_nums, &i) == 0 && i == s.n_nums;
	free(s.nums);
	if (!ok) {
		cJSON_Delete(*out);
		*out = NULL;
		return err_set(e, "out of memory");
	}
	return 0;
}

int json_integer(const cJSON *v, int64_t *out)
{
	if (!cJSON_IsNumber(v) || !v->valuestring)
		return -1;
	const char *p = v->valuestring;
	int neg = *p == '-';
	p += neg;
	if (!*p)
		return -1;
	uint64_t m = 0, lim = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		unsigned d = (unsigned)(*p - '0');
		m = m > (lim - d) / 10 ? lim : m * 10 + d;
	}
	*out = neg ? (m == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)m) : (int64_t)m;
	return 0;
}

void json_write_float(FILE *f, double x)
{
	if (isfinite(x))
		fprintf(f, "%.9g", x);
	else
		fputs("null", f);
}

bool utf8_valid(const char *s)
{
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	while (*p) {
		utf8proc_int32_t c;
		utf8proc_ssize_t n = utf8proc_iterate(p, -1, &c);
		if (n <= 0)
			return false;
		p += n;
	}
	return true;
}

char *json_quote(char *buf, size_t cap, const char *s)
{
	size_t o = 0;
	buf[o++] = '\'';
	const utf8proc_uint8_t *p = (const utf8proc_uint8_t *)s;
	while (*p) {
		char piece[8];
		size_t n;
		utf8proc_int32_t c;
		utf8proc_ssize_t k = utf8proc_iterate(p, -1, &c);
		if (k <= 0 || c < 0x20 || c == 0x7f || c == '\'' || c == '\\') {
			snprintf(piece, sizeof piece, "\\x%02x", *p);
			n = 4;
			k = 1;
		} else {
			memcpy(piece, p, (size_t)k);
			n = (size_t)k;
		}
		if (o + n + 5 > cap) {  /* room for "...'" and the NUL */
			memcpy(buf + o, "...", 3);
			o += 3;
			break;
		}
		memcpy(buf + o, piece, n);
		o += n;
		p += k;
	}
	buf[o++] = '\'';
	buf[o] = 0;
	return buf;
}

char *json_print_scalar(char *buf, size_t cap, const cJSON *v)
{
	if (cJSON_IsNumber(v) && v->valuestring)
		snprintf(buf, cap, "%s", v->valuestring);
	else if (cJSON_IsNumber(v))
		snprintf(buf, cap, "%.17g", v->valuedouble);
	else if (cJSON_IsString(v))
		json_quote(buf, cap, v->valuestring);
	else
		snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" :
			 cJSON_IsFalse(v) ? "false" : cJSON_IsNull(v) ? "null" :
			 cJSON_IsArray(v) ? "an array" : "an object");
	return buf;
}
