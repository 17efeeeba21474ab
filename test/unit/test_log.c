/* log: every line one JSON object, escaped, filtered by level. */
#include <jansson.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "base/log.h"

/* Runs fn with stderr sent to a temporary file; returns what it wrote, up to 2 MB (new). */
static char *capture(void (*fn)(void))
{
	FILE *f = tmpfile();
	int saved = dup(STDERR_FILENO);
	size_t cap = 2 << 20, n;
	char *buf = calloc(1, cap);

	fflush(stderr);
	dup2(fileno(f), STDERR_FILENO);
	fn();
	dup2(saved, STDERR_FILENO);
	close(saved);
	rewind(f);
	n = fread(buf, 1, cap - 1, f);
	buf[n] = '\0';
	fclose(f);
	return buf;
}

static void write_hostile(void)
{
	log_set_level(LOG_LEVEL_INFO);
	log_msg(LOG_LEVEL_INFO, "quote \" backslash \\ newline \n tab \t", "field", "bad utf8 \xff\xfe end",
		"skipped", (const char *)NULL, "ok", "caf\xc3\xa9", "surrogate", "<\xed\xa0\x80>",
		"overlong", "<\xe0\x80\xaf>", LOG_END);
}

static void test_escaping(void)
{
	char *out = capture(write_hostile);
	json_error_t jerr;
	json_t *line = json_loads(out, JSON_DECODE_ANY, &jerr);

	CHECK(line != NULL);
	CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* exactly one line */
	CHECK_STR(json_string_value(json_object_get(line, "msg")), "quote \" backslash \\ newline \n tab \t");
	CHECK_STR(json_string_value(json_object_get(line, "field")), "bad utf8 \xef\xbf\xbd\xef\xbf\xbd end");
	CHECK_STR(json_string_value(json_object_get(line, "ok")), "caf\xc3\xa9");
	/* Encoded surrogates and overlong forms are not UTF-8 either: each byte becomes U+FFFD. */
	CHECK_STR(json_string_value(json_object_get(line, "surrogate")), "<\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd>");
	CHECK_STR(json_string_value(json_object_get(line, "overlong")), "<\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbd>");
	CHECK(json_object_get(line, "skipped") == NULL);
	CHECK_STR(json_string_value(json_object_get(line, "level")), "info");
	CHECK(json_string_length(json_object_get(line, "time")) == 24);
	json_decref(line);
	free(out);
}

static void write_decision(void)
{
	struct log_decision d = { "mutate", "uid-1", "ml", "train-0", "mutate", "gpu-pod-mutated",
				  "enforce", 200, 1234, NULL, "t4-spot,t4", NULL, 200 };

	log_set_level(LOG_LEVEL_INFO);
	log_decision(&d);
	d.ns = "";
	d.pod = NULL;
	d.pool = "t4";
	d.pools = NULL;
	log_decision(&d);
}

static void test_decision(void)
{
	char *out = capture(write_decision), *second = strchr(out, '\n');
	json_t *a = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);
	json_t *b = second ? json_loads(second + 1, JSON_DISABLE_EOF_CHECK, NULL) : NULL;

	CHECK(a != NULL && b != NULL);
	CHECK_STR(json_string_value(json_object_get(a, "msg")), "admission");
	CHECK_STR(json_string_value(json_object_get(a, "uid")), "uid-1");
	CHECK_STR(json_string_value(json_object_get(a, "namespace")), "ml");
	CHECK_STR(json_string_value(json_object_get(a, "pod")), "train-0");
	CHECK_STR(json_string_value(json_object_get(a, "decision")), "mutate");
	CHECK_STR(json_string_value(json_object_get(a, "reason")), "gpu-pod-mutated");
	CHECK_INT(json_integer_value(json_object_get(a, "latency_us")), 1234);
	CHECK_INT(json_integer_value(json_object_get(a, "upload_us")), 200);
	CHECK_INT(json_integer_value(json_object_get(a, "status")), 200);
	CHECK_STR(json_string_value(json_object_get(a, "pools")), "t4-spot,t4");
	CHECK(json_object_get(a, "pool") == NULL);
	CHECK_STR(json_string_value(json_object_get(b, "pool")), "t4");
	CHECK(json_object_get(b, "namespace") == NULL); /* empty fields are left out */
	CHECK(json_object_get(b, "pod") == NULL);
	json_decref(a);
	json_decref(b);
	free(out);
}

static void write_decision_kind(void)
{
	struct log_decision d = { "validate-policy", "uid-2", "gpu-admission", "gpu-admission-policy", "reject",
				  "policy-invalid", NULL, 200, 310, NULL, NULL, "ConfigMap", 0 };

	log_set_level(LOG_LEVEL_INFO);
	log_decision(&d);
}

/* An object other than a pod: its kind, and its name as name (not pod). */
static void test_decision_kind(void)
{
	char *out = capture(write_decision_kind);
	json_t *a = json_loads(out, JSON_DISABLE_EOF_CHECK, NULL);

	CHECK(a != NULL);
	CHECK_STR(json_string_value(json_object_get(a, "endpoint")), "validate-policy");
	CHECK_STR(json_string_value(json_object_get(a, "kind")), "ConfigMap");
	CHECK_STR(json_string_value(json_object_get(a, "name")), "gpu-admission-policy");
	CHECK(json_object_get(a, "pod") == NULL);
	CHECK(json_object_get(a, "mode") == NULL);
	json_decref(a);
	free(out);
}

static void write_text(void)
{
	struct log_decision d = { "mutate", "uid-1", "ml", "train-0", "mutate", "gpu-pod-mutated",
				  "enforce", 200, 1234, NULL, "t4-spot,t4", NULL, 200 };
	static char big[6000];

	log_set_level(LOG_LEVEL_INFO);
	log_set_format(LOG_FORMAT_TEXT);
	log_msg(LOG_LEVEL_WARN, "two\nlines", "key", "two words", "plain", "x", "empty", "", "quote", "a\"b",
		"bad", "\xff", "ctl", "a\tb", "eq", "a=b", LOG_END);
	log_decision(&d);
	memset(big, 'x', sizeof big - 1);
	log_msg(LOG_LEVEL_INFO, "long", "value", big, LOG_END);
	log_set_format(LOG_FORMAT_JSON);
}

/* The text format: the same fields, key=value, quoted only where a value needs it. */
static void test_text_format(void)
{
	char *out = capture(write_text), *second, *third;
	enum log_format f = LOG_FORMAT_JSON;

	second = strchr(out, '\n');
	CHECK(second != NULL);
	third = second ? strchr(second + 1, '\n') : NULL;
	CHECK(third != NULL);
	if (third != NULL) {
		/* "2026-01-02T03:04:05.678Z warn  ..." */
		CHECK(out[4] == '-' && out[10] == 'T' && out[23] == 'Z' && out[24] == ' ');
		*second = *third = '\0';
		CHECK_STR(out + 25, "warn  two lines key=\"two words\" plain=x empty=\"\" quote=\"a\\\"b\" "
			  "bad=\xef\xbf\xbd ctl=\"a\\tb\" eq=\"a=b\"");
		CHECK_STR(second + 1 + 25, "info  admission endpoint=mutate uid=uid-1 namespace=ml pod=train-0 "
			  "decision=mutate reason=gpu-pod-mutated mode=enforce pools=t4-spot,t4 status=200 latency_us=1234 upload_us=200");
		CHECK(strlen(third + 1) <= 4096);
		CHECK(strstr(third + 1, "info  long value=xxx") != NULL);
		CHECK(strlen(third + 1) > 13 && strcmp(third + 1 + strlen(third + 1) - 13, " (truncated)\n") == 0);
	}
	CHECK_INT(log_format_parse("text", &f), 0);
	CHECK_INT(f, LOG_FORMAT_TEXT);
	CHECK_INT(log_format_parse("json", &f), 0);
	CHECK_INT(f, LOG_FORMAT_JSON);
	CHECK_INT(log_format_parse("xml", &f), -1);
	free(out);
}

static void write_filtered(void)
{
	struct log_decision d = { 0 };

	log_set_level(LOG_LEVEL_WARN);
	log_msg(LOG_LEVEL_INFO, "hidden", LOG_END);
	log_msg(LOG_LEVEL_DEBUG, "hidden", LOG_END);
	log_decision(&d);
	log_msg(LOG_LEVEL_ERROR, "shown", LOG_END);
	log_set_level(LOG_LEVEL_INFO);
}

static void test_levels(void)
{
	char *out = capture(write_filtered);
	enum log_level l = LOG_LEVEL_INFO;

	CHECK(strstr(out, "hidden") == NULL);
	CHECK(strstr(out, "\"admission\"") == NULL);
	CHECK(strstr(out, "\"level\":\"error\",\"msg\":\"shown\"") != NULL);
	CHECK_INT(log_level_parse("debug", &l), 0);
	CHECK_INT(l, LOG_LEVEL_DEBUG);
	CHECK_INT(log_level_parse("warn", &l), 0);
	CHECK_INT(l, LOG_LEVEL_WARN);
	CHECK_INT(log_level_parse("loud", &l), -1);
	CHECK_INT(log_level_parse(NULL, &l), -1);
	log_set_level(LOG_LEVEL_INFO);
	CHECK(!log_enabled(LOG_LEVEL_DEBUG));
	CHECK(log_enabled(LOG_LEVEL_WARN));
	free(out);
}

static void write_long(void)
{
	static char big[10000];

	memset(big, 'x', sizeof big - 1);
	log_set_level(LOG_LEVEL_INFO);
	log_msg(LOG_LEVEL_INFO, "long", "value", big, LOG_END);
}

static void test_long_value_is_cut_but_line_ends(void)
{
	char *out = capture(write_long);
	size_t n = strlen(out);

	CHECK(n > 0 && n <= 4096);
	CHECK(n >= 2 && out[n - 1] == '\n' && out[n - 2] == '}');
	free(out);
}

/* Values that fill the line: an escape, a UTF-8 character, a later field, all at the cut. */
static void write_cut(void)
{
	static char big[5000];
	size_t i;

	log_set_level(LOG_LEVEL_INFO);
	for (i = 0; i + 1 < sizeof big; i++)
		big[i] = "\"\n"[i % 2];
	big[sizeof big - 1] = '\0';
	log_msg(LOG_LEVEL_INFO, "escapes", "value", big, "after", "dropped", LOG_END);
	for (i = 0; i + 2 < sizeof big; i += 2) {
		big[i] = (char)0xc3;
		big[i + 1] = (char)0xa9;
	}
	big[i] = '\0';
	for (i = 0; i < 7; i++) /* shift the cut across every byte position */
		log_msg(LOG_LEVEL_INFO, "utf8", "pad", "xxxxxxx" + i, "value", big, LOG_END);
	log_msg(LOG_LEVEL_INFO, "key", big, "v", LOG_END);
}

static void test_cut_lines_stay_json(void)
{
	char *out = capture(write_cut), *p = out, *nl;
	int lines = 0;

	while ((nl = strchr(p, '\n')) != NULL) {
		json_t *line = json_loadb(p, (size_t)(nl - p), 0, NULL);

		CHECK(line != NULL);
		CHECK(nl - p < 4096);
		CHECK(json_is_true(json_object_get(line, "truncated")));
		CHECK(json_object_get(line, "after") == NULL);
		if (lines == 0)
			CHECK(json_string_length(json_object_get(line, "value")) > 900); /* ~4 KB of escapes */
		json_decref(line);
		lines++;
		p = nl + 1;
	}
	CHECK_INT(lines, 9);
	free(out);
}

/*
 * Every message length around the line's limit, then more fields: a string
 * that ends exactly where the reserve begins must not push the line past it.
 */
static void write_every_length(void)
{
	static char msg[4200];
	size_t n;

	log_set_level(LOG_LEVEL_INFO);
	for (n = 3900; n < sizeof msg; n++) {
		memset(msg, 'm', n);
		msg[n] = '\0';
		log_msg(LOG_LEVEL_INFO, msg, "a", "1", "b", "22", "c", "333", LOG_END);
	}
}

static void test_every_length_near_the_limit(void)
{
	char *out = capture(write_every_length), *p = out, *nl;
	int lines = 0, bad = 0;

	while ((nl = strchr(p, '\n')) != NULL) {
		json_t *line = json_loadb(p, (size_t)(nl - p), 0, NULL);

		if (line == NULL || nl - p >= 4096)
			bad++;
		json_decref(line);
		lines++;
		p = nl + 1;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(lines, 4200 - 3900);
	free(out);
}

static void write_every_length_text(void)
{
	log_set_format(LOG_FORMAT_TEXT);
	write_every_length();
	log_set_format(LOG_FORMAT_JSON);
}

/* The same in the text format: every line whole, within the limit, quotes closed. */
static void test_every_length_text(void)
{
	char *out = capture(write_every_length_text), *p = out, *nl;
	int lines = 0, bad = 0;

	while ((nl = strchr(p, '\n')) != NULL) {
		size_t quotes = 0;
		char *q;

		for (q = p; q < nl; q++)
			quotes += *q == '"';
		if (nl - p >= 4096 || quotes % 2 != 0)
			bad++;
		lines++;
		p = nl + 1;
	}
	CHECK_INT(bad, 0);
	CHECK_INT(lines, 4200 - 3900);
	free(out);
}

int main(void)
{
	RUN(test_escaping);
	RUN(test_decision);
	RUN(test_decision_kind);
	RUN(test_levels);
	RUN(test_text_format);
	RUN(test_long_value_is_cut_but_line_ends);
	RUN(test_cut_lines_stay_json);
	RUN(test_every_length_near_the_limit);
	RUN(test_every_length_text);
	return check_done("log");
}
