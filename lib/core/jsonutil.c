/* jsonutil: see jsonutil.h. */
#include "core/jsonutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

int json_parse_text(cJSON **out, const char *text, size_t len, const char *what,
		    struct err *e)
{
	const char *end = NULL;
	*out = cJSON_ParseWithLengthOpts(text, len, &end, 0);
	if (*out) {
		while (end < text + len && *end && strchr(" \t\r\n", *end))
			end++;
		if (end == text + len)
			return 0;
		cJSON_Delete(*out);
		*out = NULL;
	}
	if (!end || end < text || end > text + len)
		end = text;
	long line = 1, col = 1;
	for (const char *p = text; p < end; p++, col++)
		if (*p == '\n') {
			line++;
			col = 0;
		}
	return err_set(e, "%s%snot valid JSON (line %ld, column %ld)", what ? what : "",
		       what ? ": " : "", line, col);
}

static int by_key(const void *a, const void *b)
{
	const cJSON *x = *(const cJSON *const *)a, *y = *(const cJSON *const *)b;
	int c = strcmp(x->string, y->string);
	if (c)
		return c;
	return (x > y) - (x < y);  /* stable: keep document order */
}

const cJSON *json_find_duplicate(const cJSON *obj)
{
	int n = cJSON_GetArraySize(obj);
	if (n < 2)
		return NULL;
	const cJSON **v = malloc((size_t)n * sizeof *v);
	if (!v)
		return obj->child;  /* cannot tell: refuse rather than trust */
	int i = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		v[i++] = c;
	qsort(v, (size_t)n, sizeof *v, by_key);
	const cJSON *dup = NULL;
	for (i = 1; i < n; i++)
		if (strcmp(v[i - 1]->string, v[i]->string) == 0) {
			dup = v[i];
			break;
		}
	free(v);
	return dup;
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
	if (cJSON_IsNumber(v))
		snprintf(buf, cap, "%.17g", v->valuedouble);
	else if (cJSON_IsString(v))
		json_quote(buf, cap, v->valuestring);
	else
		snprintf(buf, cap, "%s", cJSON_IsTrue(v) ? "true" :
			 cJSON_IsFalse(v) ? "false" : cJSON_IsNull(v) ? "null" :
			 cJSON_IsArray(v) ? "an array" : "an object");
	return buf;
}
