/*
 * The skip-scan's contract: it never accepts a document jansson rejects, and
 * what it keeps is what jansson would have parsed.
 */
#include <stdlib.h>

#include "check.h"
#include "policy/config.h"
#include "collide.h"
#include "webhook/review.h"
#include "text/scan.h"

static const struct scan_shape inner[] = {
	{ "keep", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};
static const struct scan_shape shape[] = {
	{ "a", SCAN_WHOLE, NULL },
	{ "obj", SCAN_OBJECT, inner },
	{ "list", SCAN_ARRAY_OF_OBJECTS, inner },
	{ NULL, SCAN_WHOLE, NULL },
};

static json_t *scan(const char *text)
{
	return scan_extract(text, strlen(text), shape, 64);
}

static int jansson_accepts(const char *text, size_t len)
{
	json_t *j = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	int ok = json_is_object(j);

	json_decref(j);
	return ok;
}

static void test_extracts_only_the_shape(void)
{
	json_t *got = scan("{\"a\":[1,{\"x\":2}],\"skip\":{\"deep\":[true,false,null,-1.5e3]},"
			   "\"obj\":{\"keep\":\"v\",\"drop\":1},\"list\":[{\"keep\":1,\"drop\":2},\"s\",3]}");
	json_t *want = json_loads("{\"a\":[1,{\"x\":2}],\"obj\":{\"keep\":\"v\"},\"list\":[{\"keep\":1},\"s\",3]}",
				  0, NULL);

	CHECK(got != NULL);
	CHECK(json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

static void test_wrong_container_type_kept_whole(void)
{
	json_t *got = scan("{\"obj\":[1,2],\"list\":{\"keep\":1}}");

	CHECK(got != NULL);
	CHECK(json_is_array(json_object_get(got, "obj")));
	CHECK(json_is_object(json_object_get(got, "list")));
	json_decref(got);
}

static void test_refuses_what_jansson_refuses(void)
{
	static const char *const bad_docs[] = {
		"", " ", "[]", "{", "}", "{\"a\":1,}", "{\"a\" 1}", "{'a':1}", "{\"a\":1} x", "{\"a\":1}{}",
		"{\"a\":1,\"a\":2}", "{\"x\":{\"k\":1,\"k\":2}}", "{\"b\":1,\"\\u0062\":2}",
		"{\"\\u0000\":1}", "{\"\\ud800\":1}", "{\"\xff\":1}",
	};
	/* Each bad value is tried where the shape keeps it and where the scanner skips it. */
	static const char *const bad_values[] = {
		"01", "1.", ".5", "-", "1e", "1e+", "tru", "nul", "falsey", "\"x", "\"\\u0000\"", "\"\\ud800\"",
		"\"\\udc00\"", "\"\\ud800\\u0041\"", "\"\\x\"", "\"\\u12\"", "\"\t\"", "\"\x01\"",
		"\"\xc0\x80\"", "\"\xed\xa0\x80\"", "\"\xf5\x80\x80\x80\"", "\"\xe2\x82\"", "\"\x80\"",
		"\"\xf0\x8f\xbf\xbf\"", "99999999999999999999", "-99999999999999999999", "1e400", "[1 2]",
		"[,]", "[1,]", "{\"k\":}", "{\"k\":1,\"k\":1}", "{1:2}", "+1", "0x10", "NaN", "Infinity", "\"a\"\"b\"",
	};
	char doc[256];
	size_t i;
	int pos;

	for (i = 0; i < sizeof bad_docs / sizeof bad_docs[0]; i++) {
		json_t *got = scan(bad_docs[i]);
		if (got != NULL)
			fprintf(stderr, "  accepted: %s\n", bad_docs[i]);
		CHECK(got == NULL);
		json_decref(got);
	}
	for (i = 0; i < sizeof bad_values / sizeof bad_values[0]; i++) {
		for (pos = 0; pos < 2; pos++) {
			json_t *got;

			snprintf(doc, sizeof doc, pos ? "{\"skip\":{\"deep\":[%s]}}" : "{\"a\":%s}", bad_values[i]);
			got = scan(doc);
			if (got != NULL || jansson_accepts(doc, strlen(doc)))
				fprintf(stderr, "  accepted (%s): %s\n", pos ? "skipped" : "kept", doc);
			CHECK(got == NULL);
			CHECK(!jansson_accepts(doc, strlen(doc))); /* the case itself is invalid */
			json_decref(got);
		}
	}
}

static void test_accepts_valid(void)
{
	static const char *const good[] = {
		"{}", " {\"a\" : 1 } \n", "{\"a\":\"\\ud83d\\ude00 \\u00e9 \\n\\\"\"}", "{\"a\":\"\xe2\x82\xac\"}",
		"{\"a\":-0.0e-5}", "{\"a\":123456789012345678}", "{\"\":1}", "{\"x\":{\"a\":1},\"y\":{\"a\":1}}",
	};
	size_t i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++) {
		json_t *got = scan(good[i]);
		CHECK(got != NULL);
		CHECK(jansson_accepts(good[i], strlen(good[i])));
		json_decref(got);
	}
}

/*
 * The whole document kept (shape NULL) against json_loadb(): the same values,
 * compared through json_dumps() so that integer and real, -0.0 and 0, every
 * decoded escape and key order all count. NULL when they differ; "" when the
 * scanner refused (always allowed).
 */
static char *kept_vs_parsed(const char *text, size_t len)
{
	json_t *kept = scan_extract(text, len, NULL, 64);
	json_t *parsed = json_loadb(text, len, JSON_REJECT_DUPLICATES, NULL);
	char *a = kept ? json_dumps(kept, JSON_COMPACT) : NULL;
	char *b = parsed ? json_dumps(parsed, JSON_COMPACT) : NULL;
	char *r = NULL;

	if (kept == NULL)
		r = strdup("");
	else if (a != NULL && b != NULL && strcmp(a, b) == 0)
		r = a, a = NULL;
	else
		fprintf(stderr, "  kept:   %s\n  parsed: %s\n", a ? a : "(null)", b ? b : "(null)");
	free(a);
	free(b);
	json_decref(kept);
	json_decref(parsed);
	return r;
}

static void test_keeps_what_jansson_parses(void)
{
	static const char *const docs[] = {
		"{\"i\":[0,-0,7,-7,123456789012345678,-123456789012345678,999999999999999999]}",
		"{\"r\":[-0.0,0.0,1.5,-1.5e3,1E2,1e+2,1e-2,0.1,2.2250738585072011e-308,4.9e-324,1e-400]}",
		"{\"r\":[1.7976931348623157e299,123456789.123456789e-5]}",
		"{\"s\":[\"\",\"plain\",\"\\\"\\\\\\/\\b\\f\\n\\r\\t\",\"\\u0041\\u00e9\\u20ac\\uffff\\ud83d\\ude00\",\"\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80\"]}",
		"{\"l\":[true,false,null,{},[],[[]],{\"a\":{\"b\":[1,{\"c\":null}]}}]}",
		"{\"\\u0061b\":1,\"a\\n\":2,\"\":3,\"\\ud83d\\ude00\":4,\"z\":5,\"y\":6}",
		" { \"ws\" : [ 1 , 2 ] , \"o\" : { } } ",
	};
	size_t i;

	for (i = 0; i < sizeof docs / sizeof docs[0]; i++) {
		char *r = kept_vs_parsed(docs[i], strlen(docs[i]));

		CHECK(r != NULL && r[0] != '\0');  /* each is kept, and kept alike */
		free(r);
	}
}

static void test_escaped_string_longer_than_the_stack_buffer(void)
{
	char doc[8000];
	size_t o = 0;
	int i;
	char *r;

	o += (size_t)sprintf(doc + o, "{\"long\":\"");
	for (i = 0; i < 1000; i++)
		o += (size_t)sprintf(doc + o, "\\u00e9");
	o += (size_t)sprintf(doc + o, "\\n\"}");
	r = kept_vs_parsed(doc, o);
	CHECK(r != NULL && strlen(r) > 2000);
	free(r);
}

static void test_depth_limit(void)
{
	char deep[256];
	size_t i;

	for (i = 0; i < 70; i++)
		deep[i] = '[';
	for (i = 0; i < 70; i++)
		deep[70 + i] = ']';
	deep[140] = '\0';
	memmove(deep + 5, deep, 141);
	memcpy(deep, "{\"a\":", 5);
	strcat(deep, "}");
	CHECK(scan(deep) == NULL); /* 71 levels > 64 */
}

static void test_many_keys_duplicate_found(void)
{
	char *buf = malloc(200000);
	size_t o = 0;
	int i;

	o += (size_t)sprintf(buf + o, "{");
	for (i = 0; i < 5000; i++)
		o += (size_t)sprintf(buf + o, "\"k%d\":%d,", i, i);
	o += (size_t)sprintf(buf + o, "\"k1234\":0}");
	CHECK(scan(buf) == NULL);
	buf[o - 6] = '9';          /* "k1234" -> "k1239"? still a duplicate */
	CHECK(scan(buf) == NULL);
	memcpy(buf + o - 8, "zz", 2); /* a fresh key */
	{
		json_t *j = scan(buf);
		CHECK(j != NULL);
		CHECK(jansson_accepts(buf, o));
		json_decref(j);
	}
	free(buf);
}

/*
 * Objects of 9 to 70 keys (the hash set's sizes and just past them), skipped
 * and kept whole: a duplicate of the first key, of the last, or of the first
 * spelt with an escape is found; a fresh escaped key is not one.
 */
static void test_medium_objects_duplicate_found(void)
{
	char members[2048], last[32], doc[2100];
	int n, dup, o, i;
	size_t w;

	for (n = 9; n <= 70; n++) {
		for (o = i = 0; i < n; i++)
			o += sprintf(members + o, "\"key%d\":%d,", i, i);
		for (dup = 0; dup < 4; dup++) {
			if (dup == 0)
				sprintf(last, "\"key0\":0");
			else if (dup == 1)
				sprintf(last, "\"key%d\":0", n - 1);
			else if (dup == 2)
				sprintf(last, "\"\\u006bey0\":0");
			else
				sprintf(last, "\"\\u006bey%d\":0", n);  /* fresh */
			strcpy(members + o, last);
			for (w = 0; w < 2; w++) {
				json_t *j;

				if (w == 0)
					snprintf(doc, sizeof doc, "{\"skip\":{%s}}", members);
				else
					snprintf(doc, sizeof doc, "{\"a\":{%s}}", members);
				j = scan(doc);
				CHECK((j != NULL) == (dup == 3));
				CHECK(jansson_accepts(doc, strlen(doc)) == (dup == 3));
				json_decref(j);
			}
		}
	}
}

/*
 * Deterministic mutation: flip, insert and delete bytes of a realistic body;
 * whenever the scanner accepts, jansson must accept too, and keeping the
 * whole document must give what jansson parses.
 */
static void test_mutations_never_accepted_wrongly(void)
{
	static const char seed[] =
		"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u\","
		"\"obj\":{\"keep\":[1,2.5,-3e2,\"\\u00e9\\ud83d\\ude00\"],\"drop\":{\"x\":null,\"y\":true}},"
		"\"list\":[{\"keep\":\"\xc3\xa9\"},{\"keep\":false}],\"a\":\"\\\\\\\"/\\b\\f\\n\\r\\t\"}}";
	static const char alphabet[] = "{}[]\":,\\u0123456789abcdefABCDEF-+.eE tnrfl\x80\xc3\xa9\xed\xf0\x00\t";
	char buf[sizeof seed + 8];
	unsigned long x = 88172645463325252UL;
	int i, wrong = 0, accepted = 0;

	for (i = 0; i < 200000; i++) {
		size_t len = sizeof seed - 1, pos;
		int k;

		memcpy(buf, seed, len);
		for (k = 0; k < 1 + i % 3; k++) {
			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			pos = x % len;
			switch ((x >> 32) % 3) {
			case 0: buf[pos] = alphabet[(x >> 40) % (sizeof alphabet - 1)]; break;
			case 1: if (len + 1 < sizeof buf) { memmove(buf + pos + 1, buf + pos, len - pos);
					buf[pos] = alphabet[(x >> 40) % (sizeof alphabet - 1)]; len++; } break;
			default: memmove(buf + pos, buf + pos + 1, len - pos - 1); len--; break;
			}
		}
		{
			json_t *j = scan_extract(buf, len, shape, 64);
			char *same = kept_vs_parsed(buf, len);

			if (same == NULL)
				wrong++;
			free(same);
			if (j != NULL) {
				accepted++;
				if (!jansson_accepts(buf, len)) {
					if (wrong++ < 3)
						fprintf(stderr, "  scanner accepted what jansson refuses: %.*s\n", (int)len, buf);
				}
			}
			json_decref(j);
		}
	}
	CHECK_INT(wrong, 0);
	CHECK(accepted > 1000); /* the mutations do leave many valid documents */
}

/* SCAN_DESCEND: template-looking members found anywhere, kept whole, the way to them only. */
static const struct scan_shape search[] = {
	{ "template", SCAN_WHOLE, NULL },
	{ "*Template", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};
static const struct scan_shape descending[] = {
	{ "kind", SCAN_WHOLE, NULL },
	{ "metadata", SCAN_OBJECT, inner },
	{ NULL, SCAN_DESCEND, search },
};

/* {"a":{KEY:0,...}} with n keys from collide.h (collide) or plain ones of the same length. */
static char *object_of_keys(size_t n, int collide, size_t *len)
{
	char *buf = malloc(n * (COLLIDE_KEY_LEN + 5) + 16);
	uint64_t state = 0;
	unsigned char key[COLLIDE_KEY_LEN];
	size_t o = 0, i;

	if (buf == NULL)
		return NULL;
	o += (size_t)sprintf(buf, "{\"a\":{");
	for (i = 0; i < n; i++) {
		if (collide)
			collide_next(&state, key);
		else
			snprintf((char *)key, sizeof key, "%015zu", i), key[15] = 'k';
		o += (size_t)sprintf(buf + o, "%s\"%.*s\":0", i ? "," : "", COLLIDE_KEY_LEN, (const char *)key);
	}
	o += (size_t)sprintf(buf + o, "}}");
	*len = o;
	return buf;
}

/*
 * Issue 14's hash flood: keys that all share one full 64-bit hash under the
 * old public hash (quadratic there: 20,000 of them took 1.2 s, 70,000 about
 * 100 s on a loaded machine) cost what ordinary keys of the same count cost,
 * counted in slots probed rather than timed: linear, a few per key.
 */
static void test_colliding_keys_cost_linear(void)
{
	const size_t n = 20000;
	struct scan_stats col = { 0 }, ord = { 0 };
	size_t lc = 0, lo = 0;
	char *dc = object_of_keys(n, 1, &lc), *dord = object_of_keys(n, 0, &lo);
	uint64_t state = 0, h0 = 0;
	unsigned char key[COLLIDE_KEY_LEN];
	size_t i, same = 0;
	json_t *a, *b;
	char *dup;

	CHECK(dc != NULL && dord != NULL);
	if (dc == NULL || dord == NULL)
		goto out;
	for (i = 0; i < n; i++) {  /* the input is adversarial: one old hash for all */
		collide_next(&state, key);
		if (i == 0)
			h0 = collide_old_hash(key, sizeof key);
		same += collide_old_hash(key, sizeof key) == h0;
	}
	CHECK_INT(same, n);
	a = scan_extract_ex(dc, lc, NULL, 8, SIZE_MAX, &col);
	b = scan_extract_ex(dord, lo, NULL, 8, SIZE_MAX, &ord);
	CHECK(a != NULL && b != NULL);
	CHECK(jansson_accepts(dc, lc));
	CHECK(col.compares <= 4 * n);
	CHECK(ord.compares <= 4 * n);
	CHECK(col.compares <= 2 * ord.compares + n);
	if (col.compares > 4 * n)
		fprintf(stderr, "  colliding keys probed %zu slots for %zu keys\n", col.compares, n);
	json_decref(a);
	json_decref(b);
	/* The same where a shape searches the object (SCAN_DESCEND, a custom resource's review). */
	memset(&col, 0, sizeof col);
	a = scan_extract_ex(dc, lc, descending, 8, SIZE_MAX, &col);
	CHECK(a != NULL);
	CHECK(col.compares > 0 && col.compares <= 4 * n);  /* checked, in linear time */
	json_decref(a);
	/* ... and a duplicate among them is found there. */
	if (lo > 2 && (dup = malloc(lo + 32)) != NULL) {
		memcpy(dup, dord, lo - 2);
		snprintf(dup + lo - 2, 32, ",\"%.*s\":1}}", COLLIDE_KEY_LEN, dord + 7);
		CHECK(scan_extract_ex(dup, strlen(dup), descending, 8, SIZE_MAX, NULL) == NULL);
		CHECK(!jansson_accepts(dup, strlen(dup)));
		free(dup);
	}
out:
	free(dc);
	free(dord);
}

/*
 * The duplicate check tries a cheap hash of a key's length and first, middle
 * and last eight bytes first. Keys alike in all of those collide under it
 * whatever its random key: the check must still probe a linear number of
 * slots (it goes over to SipHash) and still find a duplicate among them.
 */
static void test_keys_alike_at_the_ends_cost_linear(void)
{
	const size_t n = 20000;
	char *doc = malloc(n * 48 + 64);
	size_t o = 0, i;
	struct scan_stats st = { 0 };
	json_t *j;

	CHECK(doc != NULL);
	if (doc == NULL)
		return;
	o += (size_t)sprintf(doc, "{\"a\":{");
	for (i = 0; i < n; i++)  /* 40 bytes: 0-7, 16-23 and 32-39 the same in every key */
		o += (size_t)sprintf(doc + o, "%s\"aaaaaaaa%08zubbbbbbbb%08zudddddddd\":0", i ? "," : "", i, n - i);
	strcpy(doc + o, "}}");
	j = scan_extract_ex(doc, o + 2, NULL, 8, SIZE_MAX, &st);
	CHECK(j != NULL);
	CHECK(st.compares <= 4 * n);
	if (st.compares > 4 * n)
		fprintf(stderr, "  keys alike at the ends probed %zu slots for %zu keys\n", st.compares, n);
	json_decref(j);
	/* The last key again: a duplicate, found. */
	o += (size_t)sprintf(doc + o, ",\"aaaaaaaa%08zubbbbbbbb%08zudddddddd\":1}}", n - 1, (size_t)1);
	CHECK(scan_extract_ex(doc, o, NULL, 8, SIZE_MAX, NULL) == NULL);
	CHECK(!jansson_accepts(doc, o));
	free(doc);
}

/*
 * REVIEW_MAX_VALUES: the scanner stops past the cap and the full parse's
 * pre-check refuses the same documents, so both paths answer alike at the
 * boundary (one value under, at, and over it). For a Pod, and for a custom
 * resource the policy lists, whose review is scanned again with a shape that
 * searches it (SCAN_DESCEND): the list sits where that search goes.
 */
static void value_cap_case(const struct config *cfg, const char *head, size_t around)
{
	int extra;

	for (extra = -1; extra <= 1; extra++) {
		size_t n = REVIEW_MAX_VALUES - around + (size_t)(extra + 1) - 1, o = 0, i;
		char *doc = malloc(2 * n + 1024);
		struct review_response fast, full;
		struct error ef, eu;
		struct scan_stats st = { 0 };
		json_t *kept;
		int rf, ru;

		if (doc == NULL)
			break;
		o += (size_t)sprintf(doc, "%s", head);
		for (i = 0; i < n; i++)
			o += (size_t)sprintf(doc + o, i ? ",0" : "0");
		o += (size_t)sprintf(doc + o, "]}}}}}");
		kept = scan_extract_ex(doc, o, NULL, REVIEW_MAX_DEPTH, REVIEW_MAX_VALUES, &st);
		CHECK((kept != NULL) == (extra <= 0));
		if (extra <= 0)
			CHECK_INT(st.values, REVIEW_MAX_VALUES + extra);
		json_decref(kept);
		rf = review_handle_ex(cfg, doc, o, REVIEW_VALIDATE, &fast, &ef);
		ru = review_handle_ex(cfg, doc, o, REVIEW_VALIDATE | REVIEW_FULL_PARSE, &full, &eu);
		CHECK_INT(rf, ru);
		CHECK_INT(rf, extra <= 0 ? 0 : -1);
		if (rf == 0 && ru == 0)
			CHECK(fast.len == full.len && memcmp(fast.body, full.body, fast.len) == 0);
		if (rf != 0 && ru != 0)
			CHECK_STR(ef.msg, eu.msg);
		review_response_free(&fast);
		review_response_free(&full);
		free(doc);
	}
}

static void test_value_cap_same_on_both_paths(void)
{
	static const char workloads[] = "workloads: [{group: kubeflow.org, kind: PyTorchJob}]\n";
	struct error err;
	struct config *cfg = config_default(&err);
	struct config *custom = config_load_buffer(workloads, sizeof workloads - 1, "workloads.yaml", &err);

	CHECK(cfg != NULL && custom != NULL);
	/* 31 values around the list (root, request, pod ...), then the list's zeros. */
	if (cfg != NULL)
		value_cap_case(cfg, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
			"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},"
			"\"resource\":{\"group\":\"\",\"version\":\"v1\",\"resource\":\"pods\"},\"namespace\":\"ml\","
			"\"operation\":\"CREATE\",\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\","
			"\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"containers\":[{\"name\":\"c\","
			"\"image\":\"x\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}],\"nodeSelector\":{\"l\":[",
			31);
	/* The same around a PyTorchJob's list, which only the search (SCAN_DESCEND) walks: 31 values around it too. */
	if (custom != NULL)
		value_cap_case(custom, "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
			"\"request\":{\"uid\":\"u\",\"kind\":{\"group\":\"kubeflow.org\",\"version\":\"v1\","
			"\"kind\":\"PyTorchJob\"},\"resource\":{\"group\":\"kubeflow.org\",\"version\":\"v1\","
			"\"resource\":\"pytorchjobs\"},\"namespace\":\"ml\",\"operation\":\"CREATE\","
			"\"object\":{\"apiVersion\":\"kubeflow.org/v1\",\"kind\":\"PyTorchJob\","
			"\"metadata\":{\"name\":\"p\",\"namespace\":\"ml\"},\"spec\":{\"pytorchReplicaSpecs\":{"
			"\"Worker\":{\"template\":{\"spec\":{\"containers\":[{\"name\":\"c\"}]}}}},\"runPolicy\":{\"l\":[",
			31);
	config_free(cfg);
	config_free(custom);
}

/* SCAN_ALSO: a table extended by another, as review extends the fields the policy reads. */
static const struct scan_shape shared[] = {
	{ "b", SCAN_WHOLE, NULL },
	{ "obj", SCAN_OBJECT, inner },
	{ NULL, SCAN_WHOLE, NULL },
};
static const struct scan_shape extended[] = {
	{ "a", SCAN_WHOLE, NULL },
	{ NULL, SCAN_ALSO, shared },
};

static void test_also_extends_a_shared_table(void)
{
	const char *text = "{\"a\":1,\"b\":2,\"c\":3,\"obj\":{\"keep\":4,\"drop\":5}}";
	json_t *got = scan_extract(text, strlen(text), extended, 64);
	json_t *want = json_loads("{\"a\":1,\"b\":2,\"obj\":{\"keep\":4}}", 0, NULL);

	CHECK(got != NULL && json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

static json_t *descend(const char *text)
{
	return scan_extract(text, strlen(text), descending, 64);
}

static void test_descend_keeps_the_way_to_what_it_finds(void)
{
	json_t *got = descend("{\"kind\":\"J\",\"metadata\":{\"keep\":1,\"template\":{\"x\":1}},"
			      "\"spec\":{\"n\":3,\"big\":{\"deep\":[1,2,{\"z\":\"s\"}]},"
			      "\"jobs\":[{\"name\":\"a\"},7,{\"template\":{\"spec\":{\"containers\":[]}},\"x\":1},"
			      "\"s\",{\"leaderTemplate\":{\"a\":[1]},\"Template\":{\"no\":1}}]}}");
	json_t *want = json_loads("{\"kind\":\"J\",\"metadata\":{\"keep\":1},\"spec\":{\"jobs\":"
				  "[null,null,{\"template\":{\"spec\":{\"containers\":[]}}},null,"
				  "{\"leaderTemplate\":{\"a\":[1]}}]}}", 0, NULL);

	CHECK(got != NULL && json_equal(got, want));
	json_decref(got);
	json_decref(want);
	/* Nothing found: nothing built, not even the empty containers on the way. */
	got = descend("{\"spec\":{\"a\":{\"b\":[{},[]]},\"c\":[]}}");
	CHECK(got != NULL && json_object_size(got) == 0);
	json_decref(got);
}

static void test_descend_decodes_escaped_keys(void)
{
	/* "\u0074emplate" is "template": found, and kept under its decoded name. */
	json_t *got = descend("{\"spec\":{\"\\u0074emplate\":{\"a\":1},\"x\\n\":{\"template\":2}}}");
	json_t *want = json_loads("{\"spec\":{\"template\":{\"a\":1},\"x\\n\":{\"template\":2}}}", 0, NULL);

	CHECK(got != NULL && json_equal(got, want));
	json_decref(got);
	json_decref(want);
}

/* What descending keeps is what jansson parses, and it refuses what jansson refuses. */
static void test_descend_validates_everything(void)
{
	static const char *const bad_docs[] = {
		"{\"spec\":{\"a\":1,\"a\":2}}",           /* duplicate key on the way */
		"{\"spec\":[{\"template\":1,\"template\":1}]}",
		"{\"spec\":{\"a\":[1,]}}",
		"{\"spec\":{\"a\":\"\\ud800\"}}",
		"{\"spec\":{\"template\":{\"a\":tru}}}",
	};
	char deep[256];
	size_t i;

	for (i = 0; i < sizeof bad_docs / sizeof bad_docs[0]; i++) {
		json_t *got = descend(bad_docs[i]);

		CHECK(got == NULL);
		CHECK(!jansson_accepts(bad_docs[i], strlen(bad_docs[i])));
		json_decref(got);
	}
	/* The depth limit holds while searching too. */
	strcpy(deep, "{\"spec\":");
	for (i = 0; i < 70; i++)
		strcat(deep, "[");
	for (i = 0; i < 70; i++)
		strcat(deep, "]");
	strcat(deep, "}");
	CHECK(descend(deep) == NULL);
}

/*
 * The search (SCAN_DESCEND) counts what it walks as the rest of the scan
 * does: the same count with or without it, and the cap holds inside it.
 */
static void test_descend_counts_values(void)
{
	static const char doc[] = "{\"kind\":\"J\",\"spec\":{\"a\":[1,{\"b\":2,\"c\":[]},[3,4]],"
				  "\"template\":{\"x\":[5]},\"d\":{}}}";
	struct scan_stats all = { 0 }, searched = { 0 };
	json_t *a = scan_extract_ex(doc, sizeof doc - 1, NULL, 64, SIZE_MAX, &all);
	json_t *b = scan_extract_ex(doc, sizeof doc - 1, descending, 64, SIZE_MAX, &searched), *c;

	CHECK(a != NULL && b != NULL);
	CHECK_INT(all.values, 15);
	CHECK_INT(searched.values, all.values);
	c = scan_extract_ex(doc, sizeof doc - 1, descending, 64, all.values - 1, NULL);
	CHECK(c == NULL);
	json_decref(a);
	json_decref(b);
	json_decref(c);
}

static void test_shape_equal_compares_what_is_kept(void)
{
	json_t *a = json_loads("{\"a\":1,\"x\":1,\"obj\":{\"keep\":[1],\"drop\":1},"
			       "\"list\":[{\"keep\":1,\"drop\":1}]}", 0, NULL);
	json_t *b = json_loads("{\"a\":1,\"x\":2,\"obj\":{\"keep\":[1],\"drop\":2},"
			       "\"list\":[{\"keep\":1,\"drop\":2}]}", 0, NULL);
	json_t *c = json_loads("{\"a\":1,\"obj\":{\"keep\":[1]},\"list\":[{\"keep\":2}]}", 0, NULL);
	json_t *d = json_loads("{\"a\":1,\"obj\":{\"keep\":[1]},\"list\":[{\"keep\":1},{}]}", 0, NULL);
	json_t *e = json_loads("{\"obj\":{\"keep\":[1]},\"list\":[{\"keep\":1}]}", 0, NULL);

	CHECK(scan_shape_equal(a, b, shape));    /* differ only where nothing is kept */
	CHECK(!scan_shape_equal(a, c, shape));   /* a kept member of an element differs */
	CHECK(!scan_shape_equal(a, d, shape));   /* one more element */
	CHECK(!scan_shape_equal(a, e, shape));   /* a kept member missing */
	CHECK(!scan_shape_equal(e, a, shape));
	CHECK(scan_shape_equal(a, b, extended)); /* through SCAN_ALSO: obj.keep is compared, obj.drop not */
	CHECK(!scan_shape_equal(a, e, extended)); /* a is kept there too */
	json_decref(a);
	json_decref(b);
	json_decref(c);
	json_decref(d);
	json_decref(e);
}

/*
 * Strings longer than a chunk (64 bytes), where the scanner takes escapes as
 * bit masks: every piece below at every offset across two chunk boundaries,
 * then random strings of escape-dense pieces. The scanner must accept exactly
 * what jansson accepts (nothing here is outside what it decides itself), keep
 * the same string, and find duplicate keys however they are spelt.
 */
static const char *const long_pieces[] = {
	/* ASCII with one-byte escapes, what a chunk settles (LONG_SHORT of them): */
	"\\\"", "\\\\", "\\/", "\\b", "\\f", "\\n", "\\r", "\\t", "\\\\\\\"", "\\\\\\\\", "x", "ab",
	/* valid, for the byte loop (LONG_VALID in all): */
	"\\u00e9", "\\u0041", "\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	/* invalid, or not alone (a lone backslash escapes what follows): */
	"\\", "\\x", "\\u00", "\\u0000", "\\ud800", "\\udc00", "\x01", "\x1f", "\xc3\x28", "\xed\xa0\x80", "\xff", "\"",
};
#define LONG_SHORT 12
#define LONG_VALID 18
#define LONG_ALL (sizeof long_pieces / sizeof long_pieces[0])

/* 1 when scanner and jansson agree on doc (accepted alike and kept alike, or both refuse). */
static int long_agrees(const char *doc, size_t len)
{
	json_t *kept = scan_extract(doc, len, NULL, 64);
	json_t *parsed = json_loadb(doc, len, JSON_REJECT_DUPLICATES, NULL);
	json_t *skipped = scan_extract(doc, len, shape, 64);  /* nothing kept: the skipping path */
	int ok = (kept != NULL) == (parsed != NULL) && (skipped != NULL) == (parsed != NULL) &&
		 (kept == NULL || json_equal(kept, parsed));

	if (!ok)
		fprintf(stderr, "  disagree (scanner %s, jansson %s): %.*s\n", kept ? "accepts" : "refuses",
			parsed ? "accepts" : "refuses", (int)len, doc);
	json_decref(kept);
	json_decref(parsed);
	json_decref(skipped);
	return ok;
}

static void test_long_strings_agree_with_jansson(void)
{
	static const char dots[] = "................................................................"
				   "................................................................"
				   "................";
	char doc[2048], key[600];
	size_t i, k, n, o, kl;
	unsigned long x = 2463534242UL;
	int bad = 0, accepted = 0;

	/*
	 * One piece at every offset 0..140 of a plain string, as a value and as
	 * a key. The leading escape starts the chunks at the string's first
	 * byte, so the piece lands on every chunk offset, across 64 and 128.
	 */
	for (i = 0; i < LONG_ALL; i++)
		for (k = 0; k <= 140; k++) {
			o = (size_t)snprintf(doc, sizeof doc, "{\"v\":\"\\t%.*s%s%.*s\",\"\\t%.*s%s%.*s\":1}",
					     (int)k, dots, long_pieces[i], (int)(140 - k), dots,
					     (int)k, dots, long_pieces[i], (int)(100 - k % 100), dots);
			bad += !long_agrees(doc, o);
		}
	/*
	 * Random escape-dense strings: half of one-byte escapes only, a third
	 * with \u and UTF-8 too, the rest with an invalid piece now and then. A
	 * second key spelt differently may decode to the first.
	 */
	for (n = 0; n < 40000; n++) {
		size_t mix = n % 6 < 3 ? LONG_SHORT : n % 6 < 5 ? LONG_VALID : LONG_ALL;

		kl = 0;
		for (k = 0; k < 2 + n % 150; k++) {
			const char *piece;

			x ^= x << 13; x ^= x >> 7; x ^= x << 17;
			piece = long_pieces[(x >> 8) % (mix == LONG_ALL && x % 20 != 0 ? LONG_VALID : mix)];
			if (kl + strlen(piece) < sizeof key)
				kl += (size_t)snprintf(key + kl, sizeof key - kl, "%s", piece);
		}
		o = 0;
		x ^= x << 13; x ^= x >> 7; x ^= x << 17;
		if (x % 4 == 0) {
			/* The same key again with its first 'x' as \u0078: a duplicate however spelt. */
			char *at = memchr(key, 'x', kl);

			if (at != NULL)
				o = (size_t)snprintf(doc, sizeof doc, "{\"%.*s\":1,\"%.*s\\u0078%.*s\":2}", (int)kl, key,
						     (int)(at - key), key, (int)(kl - (size_t)(at - key) - 1), at + 1);
		}
		if (o == 0)
			o = (size_t)snprintf(doc, sizeof doc, "{\"%.*s\":\"%.*s\",\"pad\":[\"%.*s\"]}", (int)kl, key,
					     (int)kl, key, (int)kl, key);
		if (o >= sizeof doc)
			continue;
		bad += !long_agrees(doc, o);
		accepted += jansson_accepts(doc, o);
	}
	CHECK_INT(bad, 0);
	CHECK(accepted > 25000);  /* most are valid: the fast path is what is exercised */
}

int main(void)
{
	RUN(test_extracts_only_the_shape);
	RUN(test_wrong_container_type_kept_whole);
	RUN(test_refuses_what_jansson_refuses);
	RUN(test_accepts_valid);
	RUN(test_keeps_what_jansson_parses);
	RUN(test_escaped_string_longer_than_the_stack_buffer);
	RUN(test_long_strings_agree_with_jansson);
	RUN(test_depth_limit);
	RUN(test_medium_objects_duplicate_found);
	RUN(test_many_keys_duplicate_found);
	RUN(test_colliding_keys_cost_linear);
	RUN(test_keys_alike_at_the_ends_cost_linear);
	RUN(test_value_cap_same_on_both_paths);
	RUN(test_mutations_never_accepted_wrongly);
	RUN(test_also_extends_a_shared_table);
	RUN(test_descend_keeps_the_way_to_what_it_finds);
	RUN(test_descend_decodes_escaped_keys);
	RUN(test_descend_validates_everything);
	RUN(test_descend_counts_values);
	RUN(test_shape_equal_compares_what_is_kept);
	return check_done("scan");
}
