/*
 * test_review_claims: the review path's claim lookups (review_handle_lookup):
 * what it asks the lookup for, and its failure semantics: a cold cache
 * never refuses a pod, it answers with REVIEW_CLAIMS_COLD_WARNING.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "policy/config.h"
#include "webhook/review.h"

struct fake {
	int answer;              /* what find answers: -1 cold, 0 missing, 1 found */
	int calls;
	char asked[256];         /* "src ns/name," per call */
};

static int fake_find(void *ctx, enum policy_claim_source src, const char *ns, const char *name, json_t **obj)
{
	struct fake *f = ctx;
	size_t n = strlen(f->asked);

	f->calls++;
	snprintf(f->asked + n, sizeof f->asked - n, "%s %s/%s,", src == POLICY_CLAIM_FROM_CLAIM ? "claim" : "template",
		 ns, name);
	*obj = NULL;
	if (f->answer > 0)
		*obj = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:[{s:s, s:{s:s, s:i}}]}}}}", "apiVersion",
				 "resource.k8s.io/v1", "kind", "ResourceClaimTemplate", "metadata", "name", name, "spec",
				 "spec", "devices", "requests", "name", "gpu", "exactly", "deviceClassName",
				 "gpu.nvidia.com", "count", 1);
	return f->answer;
}

static const char review[] =
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u1\","
	"\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\","
	"\"resource\":\"pods\"},\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"x\"},"
	"\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"team-a\"},"
	"\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"gpu-1\"},"
	"{\"name\":\"shared\",\"resourceClaimName\":\"shared-gpu\"}],"
	"\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]}}}}";

static void run(struct fake *f, struct review_response *res, size_t *cold, unsigned flags)
{
	struct config *cfg;
	struct error err = { 0 };
	struct review_lookup lk = { fake_find, f };

	cfg = config_default(&err);
	CHECK(cfg != NULL);
	CHECK_INT(review_handle_lookup(cfg, review, strlen(review), flags, &lk, res, cold, &err), 0);
	config_free(cfg);
}

static void test_cold_never_refuses(void)
{
	struct fake f = { -1, 0, "" };
	struct review_response res;
	size_t cold = 0;
	unsigned flags;

	for (flags = 0; flags <= (REVIEW_VALIDATE | REVIEW_FULL_PARSE); flags++) {
		memset(&f, 0, sizeof f);
		f.answer = -1;
		run(&f, &res, &cold, flags);
		CHECK_INT(cold, 2);
		CHECK_INT(res.status, 200);
		CHECK(res.decision != POLICY_REJECT);
		CHECK(strstr(res.body, "\"allowed\":true") != NULL);
		CHECK(strstr(res.body, "DRA claim lookups are not ready") != NULL);
		review_response_free(&res);
	}
}

static void test_lookups_asked(void)
{
	struct fake f = { 1, 0, "" };
	struct review_response res;
	size_t cold = 5;

	run(&f, &res, &cold, 0);
	CHECK_INT(cold, 0);
	CHECK_INT(f.calls, 2);
	CHECK_STR(f.asked, "template team-a/gpu-1,claim team-a/shared-gpu,");
	CHECK(strstr(res.body, "not ready") == NULL);
	review_response_free(&res);
	memset(&f, 0, sizeof f);
	run(&f, &res, &cold, 0);  /* not found: unknown, no cold warning */
	CHECK_INT(cold, 0);
	CHECK_INT(f.calls, 2);
	CHECK(strstr(res.body, "not ready") == NULL);
	review_response_free(&res);
}

int main(void)
{
	RUN(test_cold_never_refuses);
	RUN(test_lookups_asked);
	return check_done("review_claims");
}
