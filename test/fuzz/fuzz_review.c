/*
 * AdmissionReview decode + policy + encode, as /mutate and /validate run it.
 * Every answer must be valid JSON carrying a response; no crash, no leak.
 */
#include <stdlib.h>
#include <string.h>

#include "review.h"

static struct config *cfg;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

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
	return 0;
}
