/* The policy ConfigMap's review (POST /validate-policy): the denial lists what check-config lists, bounded. */
#include <stdlib.h>

#include <jansson.h>

#include "check.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "webhook/review.h"

/* New: a ConfigMap UPDATE review holding text under data[key] (and labelled for release, when not NULL). */
static char *configmap_review(const char *key, const char *text, const char *release)
{
	json_t *labels = json_pack("{s:s}", "gpu-admission.azure.io/policy", "true");
	json_t *review;
	char *body;

	if (release != NULL)
		json_object_set_new(labels, REVIEW_VERSION_LABEL, json_string(release));
	review = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s, s:{s:s},"
			   " s:{s:s, s:s, s:{s:s, s:s, s:o}, s:{s:s}}}}",
			   "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request",
			   "uid", "u-1", "kind", "group", "", "version", "v1", "kind", "ConfigMap",
			   "resource", "group", "", "version", "v1", "resource", "configmaps",
			   "namespace", "gpu-admission", "operation", "UPDATE", "userInfo", "username", "alice",
			   "object", "apiVersion", "v1", "kind", "ConfigMap", "metadata", "name", "gpu-admission-policy",
			   "namespace", "gpu-admission", "labels", labels, "data", key, text);
	body = review ? json_dumps(review, JSON_COMPACT) : NULL;
	json_decref(review);
	return body;
}

/* New: the answer AdmissionReview, parsed, for text under key; NULL when none came. */
static json_t *answer(const struct review_policy_options *o, const char *key, const char *text, const char *release)
{
	struct review_response res;
	struct error err = { 0 };
	char *body = configmap_review(key, text, release);
	json_t *doc = NULL;

	if (body != NULL && review_policy_handle(o, body, strlen(body), 0, &res, &err) == 0)
		doc = json_loadb(res.body, res.len, 0, NULL);
	review_response_free(&res);
	free(body);
	return doc;
}

static const char *message_of(const json_t *doc)
{
	return json_string_value(json_object_get(json_object_get(json_object_get(doc, "response"), "status"),
						 "message"));
}

/*
 * The denial's lines after the first are check-config's errors for the same
 * text under the same name, in its order, whole; then, when some did not
 * fit, how many more. Whatever the errors, the message stays within
 * REVIEW_POLICY_MESSAGE_MAX.
 */
static void test_denial_lists_check_config_errors(void)
{
	static const char *const texts[] = {
		"mode: enforcing\npools: [{name: t4, maxGPUsPerPod: \"1\", nodeSelector: {a: b}}]\n",
		"namespaceModes: {a: x, b: y, c: z}\nplacement: sideways\nunknown: 1\n",
		/* 40 errors of ~560 bytes: a few listed, the rest counted. */
		NULL,
	};
	struct review_policy_options o = { REVIEW_POLICY_KEY, NULL };
	char *long_errors = malloc(40 * 300 + 64), *p;
	size_t i, t;

	CHECK(long_errors != NULL);
	if (long_errors == NULL)
		return;
	p = long_errors + sprintf(long_errors, "exempt:\n  podSelectors:\n");
	for (i = 0; i < 40; i++)
		p += sprintf(p, "  - {namespaces: [ops], matchLabels: {\"%.*s!%zu\": x}}\n", 250,
			     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
			     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk"
			     "kkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkkk", i);
	for (t = 0; t < sizeof texts / sizeof texts[0]; t++) {
		const char *text = texts[t] ? texts[t] : long_errors;
		struct config_errors errs = { 0 };
		struct error err = { 0 };
		struct config *cfg = config_load_buffer_all(text, strlen(text), REVIEW_POLICY_KEY, &errs, &err);
		json_t *doc = answer(&o, REVIEW_POLICY_KEY, text, NULL);
		const char *msg = message_of(doc), *line;
		size_t listed = 0;

		CHECK(cfg == NULL && errs.n > 0);
		CHECK(msg != NULL);
		if (msg == NULL || cfg != NULL) {
			json_decref(doc);
			config_free(cfg);
			continue;
		}
		CHECK(strlen(msg) < REVIEW_POLICY_MESSAGE_MAX);
		CHECK_INT(json_integer_value(json_object_get(json_object_get(json_object_get(doc, "response"),
										 "status"), "code")), 403);
		line = strchr(msg, '\n');
		for (i = 0; line != NULL && i < errs.n; i++, listed++) {
			size_t n = strlen(errs.v[i].text);

			if (strncmp(line + 1, errs.v[i].text, n) != 0 || (line[1 + n] != '\n' && line[1 + n] != '\0'))
				break;
			line += 1 + n;
			if (*line == '\0')
				line = NULL;
		}
		CHECK(listed > 0);
		CHECK(listed <= REVIEW_POLICY_ERRORS_MAX);
		if (listed < errs.total) {
			char tail[128];

			snprintf(tail, sizeof tail, "\n... and %zu more error%s (gpu-admission check-config %s lists them all)",
				 errs.total - listed, errs.total - listed == 1 ? "" : "s", REVIEW_POLICY_KEY);
			CHECK_STR(line, tail);
		} else {
			CHECK(line == NULL);
		}
		json_decref(doc);
		config_errors_free(&errs);
	}
	free(long_errors);
}

/* Another release's policy: allowed, its errors as warnings, each within the API server's 256 bytes, a few. */
static void test_other_release_warns(void)
{
	struct review_policy_options o = { "gpu.yaml", "0.2.0" };
	char text[16384], *p = text;
	json_t *doc, *w;
	size_t i, j;

	p += sprintf(p, "namespaceModes:\n");
	for (i = 0; i < 30; i++) {  /* keys of 2-byte characters, so a warning's cut falls inside one */
		p += sprintf(p, "  \"t");
		for (j = 0; j < 120 + i % 2; j++)
			p += sprintf(p, "\xc3\xa9");
		p += sprintf(p, "%zu\": sometimes\n", i);
	}
	doc = answer(&o, "gpu.yaml", text, "0.3.0");
	CHECK(json_is_true(json_object_get(json_object_get(doc, "response"), "allowed")));
	w = json_object_get(json_object_get(doc, "response"), "warnings");
	CHECK_INT(json_array_size(w), REVIEW_POLICY_WARNINGS_MAX);
	for (i = 0; i < json_array_size(w); i++)
		CHECK(json_string_length(json_array_get(w, i)) <= POLICY_WARNING_MAX);
	CHECK(strstr(json_string_value(json_array_get(w, 0)), "finds 30 errors") != NULL);
	CHECK(strncmp(json_string_value(json_array_get(w, 1)), "gpu.yaml:2:", 11) == 0);
	json_decref(doc);
	/* The same text labelled for this release, or not labelled: judged, denied. */
	doc = answer(&o, "gpu.yaml", text, "0.2.0");
	CHECK(json_is_false(json_object_get(json_object_get(doc, "response"), "allowed")));
	json_decref(doc);
	doc = answer(&o, "gpu.yaml", text, NULL);
	CHECK(json_is_false(json_object_get(json_object_get(doc, "response"), "allowed")));
	json_decref(doc);
}

static void test_key_check(void)
{
	static const char *const good[] = { "policy.yaml", "a", "gpu_admission-policy.v2.yaml", ".hidden" };
	static const char *const bad[] = { "", ".", "..", "a/b", "policy yaml", "pol\xc3\xa9", NULL };
	struct error err = { 0 };
	char longest[REVIEW_POLICY_KEY_MAX + 2];
	size_t i;

	for (i = 0; i < sizeof good / sizeof good[0]; i++)
		CHECK(review_policy_key_check(good[i], &err) == 0);
	for (i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		CHECK(review_policy_key_check(bad[i], &err) == -1);
		CHECK_INT(err.kind, ERROR_INPUT);
	}
	memset(longest, 'k', sizeof longest - 1);
	longest[REVIEW_POLICY_KEY_MAX] = '\0';
	CHECK(review_policy_key_check(longest, &err) == 0);
	longest[REVIEW_POLICY_KEY_MAX] = 'k';
	longest[REVIEW_POLICY_KEY_MAX + 1] = '\0';
	CHECK(review_policy_key_check(longest, &err) == -1);
}

int main(void)
{
	RUN(test_denial_lists_check_config_errors);
	RUN(test_other_release_warns);
	RUN(test_key_check);
	return check_done("review_policy");
}
