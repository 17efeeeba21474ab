/*
 * AdmissionReview decode + policy + encode, as /mutate and /validate run it,
 * and the policy ConfigMap's review, as /validate-policy runs it. Every
 * answer must be valid JSON carrying a response (a policy denial's message
 * and warnings within their bounds); no crash, no leak.
 */
#include <stdlib.h>
#include <string.h>

#include "webhook/review.h"

static struct config *cfg;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check_policy_review(const unsigned char *data, size_t size)
{
	static const struct review_policy_options o = { REVIEW_POLICY_KEY, "0.2.0" };
	struct review_response res;
	struct error err;

	if (review_policy_handle(&o, (const char *)data, size, 0, &res, &err) == 0) {
		json_t *j = json_loadb(res.body, res.len, 0, NULL);
		const json_t *r = json_object_get(j, "response");
		const char *msg = json_string_value(json_object_get(json_object_get(r, "status"), "message"));

		if (j == NULL || !json_is_object(r) || json_object_get(r, "patch") != NULL ||
		    (msg != NULL && strlen(msg) >= REVIEW_POLICY_MESSAGE_MAX) ||
		    json_array_size(json_object_get(r, "warnings")) > REVIEW_POLICY_WARNINGS_MAX)
			abort();
		json_decref(j);
	} else if (err.kind != ERROR_INPUT && err.kind != ERROR_NOMEM) {
		abort();
	}
	review_response_free(&res);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct error err;
	int validate;

	if (cfg == NULL && (cfg = config_default(&err)) == NULL)
		abort();
	for (validate = 0; validate < 2; validate++) {
		struct review_response res;

		if (review_handle(cfg, (const char *)data, size, validate, &res, &err) == 0) {
			json_t *j = json_loadb(res.body, res.len, 0, NULL);

			if (j == NULL || !json_is_object(json_object_get(j, "response")))
				abort();
			/* A patch only ever accompanies an allow. */
			if (json_object_get(json_object_get(j, "response"), "patch") != NULL &&
			    !json_is_true(json_object_get(json_object_get(j, "response"), "allowed")))
				abort();
			json_decref(j);
		} else if (err.kind != ERROR_INPUT && err.kind != ERROR_NOMEM) {
			abort();
		}
		review_response_free(&res);
	}
	check_policy_review(data, size);
	return 0;
}
