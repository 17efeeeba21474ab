/* The streaming List reader: items found across window refills, every structure error, the limits. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "text/jsonstream.h"

/* A file holding text (len bytes), opened for reading; -1 on failure. */
static int fd_of(const char *text, size_t len)
{
	FILE *f = tmpfile();
	int fd;

	if (f == NULL)
		return -1;
	if (fwrite(text, 1, len, f) != len || fflush(f) != 0) {
		fclose(f);
		return -1;
	}
	fd = dup(fileno(f));
	fclose(f);
	if (fd >= 0)
		lseek(fd, 0, SEEK_SET);
	return fd;
}

/* Reads every item of text; joins them with '|' into out. Returns the last next() result. */
static int items_of(const char *text, size_t len, char *out, size_t cap, struct error *err)
{
	int fd = fd_of(text, len), rc;
	struct jsonstream *s = jsonstream_new(fd, err);
	const char *item;
	size_t n, used = 0;
	unsigned long long off;

	out[0] = '\0';
	if (s == NULL) {
		close(fd);
		return -9;
	}
	while ((rc = jsonstream_next(s, &item, &n, &off, err)) == 1) {
		if (used + n + 2 < cap) {
			if (used > 0)
				out[used++] = '|';
			memcpy(out + used, item, n);
			used += n;
			out[used] = '\0';
		}
		if (memcmp(text + off, item, n) != 0)  /* the offset points at the item */
			rc = -8;
		if (rc != 1)
			break;
	}
	jsonstream_free(s);
	close(fd);
	return rc;
}

static void expect_items(const char *text, const char *want)
{
	char out[4096];
	struct error err = { 0 };

	CHECK_INT(items_of(text, strlen(text), out, sizeof out, &err), 0);
	CHECK_STR(out, want);
	if (err.msg[0])
		fprintf(stderr, "  unexpected error: %s\n", err.msg);
}

static void expect_error(const char *text, enum error_kind kind, const char *fragment)
{
	char out[4096];
	struct error err = { 0 };

	CHECK_INT(items_of(text, strlen(text), out, sizeof out, &err), -1);
	CHECK_INT(err.kind, kind);
	if (strstr(err.msg, fragment) == NULL)
		fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err.msg, fragment);
	CHECK(strstr(err.msg, fragment) != NULL);
}

static void test_lists(void)
{
	expect_items("{\"apiVersion\": \"v1\", \"items\": [{\"a\":1}, {\"b\":[1,{\"c\":\"}]\"}]}], \"kind\": \"List\"}",
		     "{\"a\":1}|{\"b\":[1,{\"c\":\"}]\"}]}");
	/* kubectl's layout: items last, metadata after; pretty-printed. */
	expect_items("{\n    \"apiVersion\": \"v1\",\n    \"items\": [\n        {\n            \"kind\": \"Node\"\n        }\n"
		     "    ],\n    \"kind\": \"List\",\n    \"metadata\": {\n        \"resourceVersion\": \"\"\n    }\n}\n",
		     "{\n            \"kind\": \"Node\"\n        }");
	expect_items("{\"items\": []}", "");
	expect_items("  {\"items\":[]}  \n", "");
	/* Escapes: a quote and a backslash inside strings, braces in keys. */
	expect_items("{\"items\": [{\"x\\\"}\": \"\\\\\"}, {\"y\": \"\\\\\\\"]\"}]}",
		     "{\"x\\\"}\": \"\\\\\"}|{\"y\": \"\\\\\\\"]\"}");
	/* Members before items that look like items. */
	expect_items("{\"itemsX\": [1], \"metadata\": {\"items\": [2]}, \"items\": [3, \"s\", null]}", "3|\"s\"|null");
	/* Not a List: the object is the one item. */
	expect_items("{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}}",
		     "{\"kind\": \"Node\", \"metadata\": {\"name\": \"n\"}}");
}

static void test_errors(void)
{
	expect_error("", ERROR_INPUT, "empty input");
	expect_error("   \n", ERROR_INPUT, "empty input");
	expect_error("[1,2]", ERROR_INPUT, "expected a JSON object");
	expect_error("apiVersion: v1\n", ERROR_INPUT, "byte 0: expected a JSON object");
	expect_error("{\"items\": [{\"a\": 1}", ERROR_INPUT, "truncated");
	expect_error("{\"items\": [{\"a\": \"1}]}", ERROR_INPUT, "truncated");
	expect_error("{\"items\": [{}] ", ERROR_INPUT, "truncated");
	expect_error("{\"items\": {}}", ERROR_INPUT, "\"items\" is not an array");
	expect_error("{\"items\": [], \"items\": []}", ERROR_INPUT, "two \"items\"");
	expect_error("{\"items\": [{} {}]}", ERROR_INPUT, "expected ',' or ']'");
	expect_error("{\"items\": [{},]}", ERROR_INPUT, "after the last item");
	expect_error("{\"items\": []} {}", ERROR_INPUT, "data after the top-level");
	expect_error("{\"a\" 1}", ERROR_INPUT, "expected ':'");
	expect_error("{1: 2}", ERROR_INPUT, "expected a member name");
	expect_error("{\"a\": 1 \"b\": 2}", ERROR_INPUT, "expected ',' or '}'");
}

/* Items far larger than the first window, with escapes and strings across every refill. */
static void test_big_items(void)
{
	size_t pad = 3 * JSONSTREAM_CHUNK + 18, i, len;  /* ends on an escaped quote */
	char *text = malloc(pad + 256), out[64];
	struct error err = { 0 };
	int fd, rc, count = 0;
	struct jsonstream *s;
	const char *item;
	size_t n;
	unsigned long long off;

	CHECK(text != NULL);
	if (text == NULL)
		return;
	len = (size_t)sprintf(text, "{\"items\": [{\"big\": \"");
	for (i = 0; i < pad; i++)
		text[len++] = i % 7 == 0 ? '\\' : i % 7 == 1 ? '"' : i % 5 == 0 ? '}' : 'a';
	len += (size_t)sprintf(text + len, "\"}, {\"small\": 1}]}");
	fd = fd_of(text, len);
	s = jsonstream_new(fd, &err);
	while (s != NULL && (rc = jsonstream_next(s, &item, &n, &off, &err)) == 1) {
		count++;
		if (count == 1)
			CHECK_INT(n, pad + 11);
		else
			CHECK(n == 12 && memcmp(item, "{\"small\": 1}", 12) == 0);
	}
	CHECK_INT(count, 2);
	jsonstream_free(s);
	close(fd);

	/* One item over JSONSTREAM_ITEM_MAX is refused, whatever its shape. */
	free(text);
	pad = JSONSTREAM_ITEM_MAX + JSONSTREAM_CHUNK;
	text = malloc(pad + 64);
	CHECK(text != NULL);
	if (text == NULL)
		return;
	len = (size_t)sprintf(text, "{\"items\": [\"");
	memset(text + len, 'x', pad);
	len += pad;
	len += (size_t)sprintf(text + len, "\"]}");
	CHECK_INT(items_of(text, len, out, sizeof out, &err), -1);
	CHECK_INT(err.kind, ERROR_TOO_LARGE);
	CHECK(strstr(err.msg, "16 MiB") != NULL);
	free(text);
}

static void test_peek_and_slurp(void)
{
	const char *yaml = "\n  apiVersion: v1\nkind: List\n";
	int fd = fd_of(yaml, strlen(yaml));
	struct error err = { 0 };
	struct jsonstream *s = jsonstream_new(fd, &err);
	size_t len = 0;
	char *all;

	CHECK_INT(jsonstream_peek(s, &err), 'a');
	all = jsonstream_slurp(s, 1024, &len, &err);
	CHECK_STR(all, yaml);
	CHECK_INT(len, strlen(yaml));
	free(all);
	jsonstream_free(s);
	close(fd);

	fd = fd_of(yaml, strlen(yaml));
	s = jsonstream_new(fd, &err);
	CHECK(jsonstream_slurp(s, 8, &len, &err) == NULL);
	CHECK_INT(err.kind, ERROR_TOO_LARGE);
	jsonstream_free(s);
	close(fd);

	fd = fd_of("", 0);
	s = jsonstream_new(fd, &err);
	CHECK_INT(jsonstream_peek(s, &err), -1);
	jsonstream_free(s);
	close(fd);
}

int main(void)
{
	RUN(test_lists);
	RUN(test_errors);
	RUN(test_big_items);
	RUN(test_peek_and_slurp);
	return check_done("jsonstream");
}
