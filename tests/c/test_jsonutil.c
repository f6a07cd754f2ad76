/* jsonutil: the one JSON validator every reader goes through (RFC 8259:
 * each class of text it must refuse, with the message naming where and
 * why, and texts it must accept), integers read as written, and JSON's
 * lack of inf and NaN on output. The expected results are RFC 8259's
 * grammar and the messages' contract, not this code's output. */
#include "check.h"
#include "core/jsonutil.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* Text (length given: some hold NUL) -> message, or NULL when valid. */
struct vcase {
	const char *text;
	size_t len;
	const char *want;
};

#define T(s, w) { s, sizeof s - 1, w }

static const struct vcase cases[] = {
	/* valid */
	T("{}", NULL), T(" [1, -0, 0.5, -1.5e+3, 2E-2, true, false, null] ", NULL),
	T("\"\\u00e9\\ud83d\\ude00 \\\" \\\\ \\/ \\b\\f\\n\\r\\t\"", NULL),
	T("\"caf\xc3\xa9 \xf0\x9f\x98\x80 \xe2\x82\xac\"", NULL),
	T("{\"a\": {\"b\": [[]]}}\r\n\t ", NULL),
	/* raw control characters and NUL inside strings */
	T("{\"a\nb\": 1}", "not valid JSON (line 1, column 4): raw control character 0x0a in a string"),
	T("[\"\t\"]", "not valid JSON (line 1, column 3): raw control character 0x09 in a string"),
	T("{\"a\0b\": 1}", "not valid JSON (line 1, column 4): raw control character 0x00 in a string"),
	T("[\"\x1f\"]", "not valid JSON (line 1, column 3): raw control character 0x1f in a string"),
	T("{\"a\": 1}\0", "not valid JSON (line 1, column 9): unexpected byte 0x00, expected nothing after the JSON value"),
	/* \u0000 and surrogates */
	T("[\"a\\u0000b\"]", "not valid JSON (line 1, column 4): \\u0000 in a string (C strings cannot hold NUL)"),
	T("[\"\\ud800\"]", "not valid JSON (line 1, column 3): lone surrogate \\uD800"),
	T("[\"\\ud800\\u0041\"]", "not valid JSON (line 1, column 3): lone surrogate \\uD800"),
	T("[\"\\udc00\\ud800\"]", "not valid JSON (line 1, column 3): lone surrogate \\uDC00"),
	T("[\"\\u12\"]", "not valid JSON (line 1, column 5): \\u needs four hex digits"),
	T("[\"\\x41\"]", "not valid JSON (line 1, column 4): invalid escape \\'x'"),
	T("[\"\\'\"]", "not valid JSON (line 1, column 4): invalid escape \\\"'\""),
	/* bytes that are not UTF-8 */
	T("[\"\xff\"]", "not valid JSON (line 1, column 3): byte 0xff is not valid UTF-8"),
	T("[\"\xc0\xaf\"]", "not valid JSON (line 1, column 3): byte 0xc0 is not valid UTF-8"),
	T("[\"\xe0\x80\xaf\"]", "not valid JSON (line 1, column 3): overlong UTF-8 sequence"),
	T("[\"\xed\xa0\x80\"]", "not valid JSON (line 1, column 3): UTF-8 encoded surrogate U+D800"),
	T("[\"\xf4\x90\x80\x80\"]", "not valid JSON (line 1, column 3): UTF-8 sequence past U+10FFFF"),
	T("[\"\xc3(\"]", "not valid JSON (line 1, column 3): byte 0xc3 is not valid UTF-8"),
	T("[\"\xe2\x82", "not valid JSON (line 1, column 3): UTF-8 sequence cut short"),
	T("\xef\xbb\xbf{}", "not valid JSON (line 1, column 1): unexpected byte 0xef, expected a JSON value"),
	/* numbers outside the grammar or a double's range */
	T("[01]", "not valid JSON (line 1, column 2): invalid number"),
	T("[1.]", "not valid JSON (line 1, column 2): invalid number"),
	T("[.5]", "not valid JSON (line 1, column 2): unexpected '.', expected a JSON value"),
	T("[+1]", "not valid JSON (line 1, column 2): unexpected '+', expected a JSON value"),
	T("[-]", "not valid JSON (line 1, column 2): invalid number"),
	T("[1e]", "not valid JSON (line 1, column 2): invalid number"),
	T("[0x10]", "not valid JSON (line 1, column 2): invalid number"),
	T("[1e999]", "not valid JSON (line 1, column 2): number out of range"),
	T("[-1e400]", "not valid JSON (line 1, column 2): number out of range"),
	T("[NaN]", "not valid JSON (line 1, column 2): unexpected 'N', expected a JSON value"),
	T("[Infinity]", "not valid JSON (line 1, column 2): unexpected 'I', expected a JSON value"),
	T("[-Infinity]", "not valid JSON (line 1, column 2): invalid number"),
	/* structure */
	T("", "not valid JSON (line 1, column 1): unexpected end of text, expected a JSON value"),
	T("{\"a\": 1,}", "not valid JSON (line 1, column 9): unexpected '}', expected a string key"),
	T("[1,]", "not valid JSON (line 1, column 4): unexpected ']', expected a JSON value"),
	T("{'a': 1}", "not valid JSON (line 1, column 2): unexpected \"'\", expected a string key"),
	T("{\"a\" 1}", "not valid JSON (line 1, column 6): unexpected '1', expected ':' after a key"),
	T("[1 2]", "not valid JSON (line 1, column 4): unexpected '2', expected ',' or ']'"),
	T("[tru]", "not valid JSON (line 1, column 2): unexpected 't', expected a JSON value"),
	T("[nulls]", "not valid JSON (line 1, column 2): unexpected 'n', expected a JSON value"),
	T("{} {}", "not valid JSON (line 1, column 4): unexpected '{', expected nothing after the JSON value"),
	T("[\"abc", "not valid JSON (line 1, column 6): unterminated string"),
	T("[1,\n2,\n\x0b]", "not valid JSON (line 3, column 1): unexpected byte 0x0b, expected a JSON value"),
	T("/* c */ {}", "not valid JSON (line 1, column 1): unexpected '/', expected a JSON value"),
	/* duplicate keys: compared unescaped, in every object at every depth,
	 * the earliest repeat reported; equal keys in different objects and
	 * prefixes of each other are fine */
	T("{\"a\": 1, \"b\": {\"a\": 2}, \"ab\": [{\"a\": 1}, {\"a\": 2}]}", NULL),
	T("{\"a\": 1, \"a\": 1}", "not valid JSON (line 1, column 10): duplicate key 'a'"),
	T("{\"role\":\"user\",\n \"role\":\"bogus\"}", "not valid JSON (line 2, column 2): duplicate key 'role'"),
	T("[{}, {\"x\": {\"k\": 1, \"y\": 2, \"k\": 3}}]", "not valid JSON (line 1, column 29): duplicate key 'k'"),
	T("{\"a\": 1, \"\\u0061\": 2}", "not valid JSON (line 1, column 10): duplicate key 'a'"),
	T("{\"\\ud83d\\ude00\": 1, \"\xf0\x9f\x98\x80\": 2}", "not valid JSON (line 1, column 21): duplicate key '\xf0\x9f\x98\x80'"),
	T("{\"\\n\": 1, \"\\u000a\": 2}", "not valid JSON (line 1, column 11): duplicate key '\\x0a'"),
	T("{\"b\": 1, \"c\": 1, \"c\": 2, \"b\": 2}", "not valid JSON (line 1, column 18): duplicate key 'c'"),
	T("{\"\": 1, \"\": 2}", "not valid JSON (line 1, column 9): duplicate key ''"),
};

static void test_validate(void)
{
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const struct vcase *c = &cases[i];
		struct err e = { .msg = "" };
		int rc = json_validate(c->text, c->len, NULL, &e);
		if (!c->want)
			CHECK(rc == 0, "case %zu: refused: %s", i, e.msg);
		else
			CHECK(rc < 0 && strcmp(e.msg, c->want) == 0, "case %zu: want \"%s\", got "
			      "\"%s\"", i, c->want, rc < 0 ? e.msg : "(accepted)");
		/* json_parse_text says the same (it needs a NUL after the text) */
		char *copy = malloc(c->len + 1);
		memcpy(copy, c->text, c->len);
		copy[c->len] = 0;
		cJSON *j = NULL;
		struct err e2 = { .msg = "" };
		int rc2 = json_parse_text(&j, copy, c->len, "f.json", &e2);
		char want2[256];
		snprintf(want2, sizeof want2, "f.json: %s", c->want ? c->want : "");
		CHECK(c->want ? rc2 < 0 && !j && strcmp(e2.msg, want2) == 0 : rc2 == 0 && j,
		      "case %zu: json_parse_text: %s", i, rc2 < 0 ? e2.msg : "(accepted)");
		cJSON_Delete(j);
		free(copy);
	}
}

static void test_depth(void)
{
	char deep[2 * JSON_MAX_DEPTH + 8];
	size_t n = 0;
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		deep[n++] = '[';
	for (int i = 0; i < JSON_MAX_DEPTH; i++)
		deep[n++] = ']';
	struct err e;
	CHECK(json_validate(deep, n, NULL, &e) == 0, "depth %d refused: %s", JSON_MAX_DEPTH, e.msg);
	memmove(deep + 1, deep, n);
	deep[0] = '[';
	deep[++n] = ']';
	n++;
	CHECK(json_validate(deep, n, "d", &e) < 0 && strstr(e.msg, "nested deeper than 128"),
	      "depth %d accepted or wrong message: %s", JSON_MAX_DEPTH + 1, e.msg);
}

/* Integers exactly as written: the literal decides, not the double. */
static void test_integer(void)
{
	static const struct { const char *lit; int ok; int64_t v; } ints[] = {
		{ "24", 1, 24 }, { "-7", 1, -7 }, { "0", 1, 0 }, { "-0", 1, 0 },
		{ "9007199254740993", 1, 9007199254740993LL },  /* 2^53 + 1: no double */
		{ "9223372036854775807", 1, INT64_MAX },
		{ "9223372036854775808", 1, INT64_MAX },        /* saturated */
		{ "-9223372036854775808", 1, INT64_MIN },
		{ "-99999999999999999999", 1, INT64_MIN },
		{ "24.0", 0, 0 }, { "2.4e1", 0, 0 }, { "24e0", 0, 0 }, { "1E2", 0, 0 },
		{ "\"24\"", 0, 0 }, { "true", 0, 0 }, { "null", 0, 0 },
	};
	for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++) {
		char text[64];
		snprintf(text, sizeof text, "[%s]", ints[i].lit);
		cJSON *j;
		struct err e;
		if (json_parse_text(&j, text, strlen(text), NULL, &e) < 0) {
			CHECK(0, "%s: %s", text, e.msg);
			continue;
		}
		int64_t v = 12345;
		int rc = json_integer(j->child, &v);
		CHECK(ints[i].ok ? rc == 0 && v == ints[i].v : rc < 0, "%s: rc %d, value %lld",
		      ints[i].lit, rc, (long long)v);
		char buf[64];
		CHECK(!cJSON_IsNumber(j->child) ||
		      strcmp(json_print_scalar(buf, sizeof buf, j->child), ints[i].lit) == 0,
		      "%s printed as %s", ints[i].lit, buf);
		cJSON_Delete(j);
	}
	/* a tree cJSON made by itself has no literals: never an integer */
	cJSON *n = cJSON_CreateNumber(3);
	int64_t v;
	CHECK(json_integer(n, &v) < 0, "a number without its literal passed as an integer");
	cJSON_Delete(n);
}

static void test_write_float(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	double xs[] = { -1.5, -INFINITY, INFINITY, NAN, 0.1f };
	for (size_t i = 0; i < sizeof xs / sizeof xs[0]; i++) {
		json_write_float(f, xs[i]);
		fputc(' ', f);
	}
	fclose(f);
	CHECK(strcmp(buf, "-1.5 null null null 0.100000001 ") == 0, "wrote '%s'", buf);
	free(buf);
}

int main(void)
{
	test_validate();
	test_depth();
	test_integer();
	test_write_float();
	return check_done("jsonutil");
}
