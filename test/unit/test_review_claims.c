/*
 * test_review_claims: the review path's claim lookups (review_handle_claims,
 * as serve calls it with its caches): what it asks the lookup for, and the
 * failure semantics: a cold cache never refuses a pod, it answers with a
 * warning saying the cache has not synced; a found GPU claim places the pod.
 */
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "policy/config.h"
#include "webhook/review.h"

struct fake {
	enum policy_claim_state answer; /* what the lookup answers */
	int calls;
	char asked[256];                /* "src ns/name," per call */
	json_t *held;                   /* what it found (an array), alive until the review returns */
};

static enum policy_claim_state fake_find(void *ctx, const char *ns, enum policy_claim_source src, const char *name,
					 const json_t **obj)
{
	struct fake *f = ctx;
	size_t n = strlen(f->asked);
	json_t *o;

	f->calls++;
	snprintf(f->asked + n, sizeof f->asked - n, "%s %s/%s,", src == POLICY_CLAIM_FROM_CLAIM ? "claim" : "template",
		 ns, name);
	*obj = NULL;
	if (f->answer != POLICY_CLAIM_RESOLVED)
		return f->answer;
	if (f->held == NULL)
		f->held = json_array();
	o = json_pack("{s:s, s:s, s:{s:s}, s:{s:{s:{s:[{s:s, s:{s:s, s:i}}]}}}}", "apiVersion",
			    "resource.k8s.io/v1", "kind", src == POLICY_CLAIM_FROM_CLAIM ? "ResourceClaim" :
			    "ResourceClaimTemplate", "metadata", "name", name, "spec", "spec", "devices", "requests", "name",
			    "gpu", "exactly", "deviceClassName", "gpu.nvidia.com", "count", 1);
	if (src == POLICY_CLAIM_FROM_CLAIM) {  /* a claim's spec is the template's spec.spec */
		json_t *inner = json_incref(json_object_get(json_object_get(o, "spec"), "spec"));

		json_object_set_new(o, "spec", inner);
	}
	json_array_append_new(f->held, o);
	*obj = o;
	return POLICY_CLAIM_RESOLVED;
}

static const char review[] =
	"{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\",\"request\":{\"uid\":\"u1\","
	"\"kind\":{\"group\":\"\",\"version\":\"v1\",\"kind\":\"Pod\"},\"resource\":{\"group\":\"\",\"version\":\"v1\","
	"\"resource\":\"pods\"},\"namespace\":\"team-a\",\"operation\":\"CREATE\",\"userInfo\":{\"username\":\"x\"},"
	"\"object\":{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"p\",\"namespace\":\"team-a\"},"
	"\"spec\":{\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimTemplateName\":\"gpu-1\"},"
	"{\"name\":\"shared\",\"resourceClaimName\":\"shared-gpu\"}],"
	"\"containers\":[{\"name\":\"c\",\"image\":\"x\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]}}}}";

static void run(struct fake *f, struct review_response *res, unsigned flags)
{
	struct config *cfg;
	struct error err = { 0 };
	struct policy_claim_lookup lk = { fake_find, f, NULL };

	cfg = config_default(&err);
	CHECK(cfg != NULL);
	CHECK_INT(review_handle_claims(cfg, review, strlen(review), flags, &lk, res, &err), 0);
	config_free(cfg);
}

static void test_cold_never_refuses(void)
{
	struct fake f;
	struct review_response res;
	unsigned flags;

	for (flags = 0; flags <= (REVIEW_VALIDATE | REVIEW_FULL_PARSE); flags++) {
		memset(&f, 0, sizeof f);
		f.answer = POLICY_CLAIM_UNKNOWN_COLD;
		run(&f, &res, flags);
		CHECK_INT(res.status, 200);
		CHECK(res.decision != POLICY_REJECT);
		CHECK(strstr(res.body, "\"allowed\":true") != NULL);
		/* Said by /mutate, which sees the pod first; /validate repeats none of it. */
		CHECK((strstr(res.body, "cache not synced") != NULL) == !(flags & REVIEW_VALIDATE));
		CHECK(strstr(res.body, "\"patch\"") == NULL);
		review_response_free(&res);
	}
}

static void test_lookups_asked(void)
{
	struct fake f;
	struct review_response res;

	memset(&f, 0, sizeof f);
	f.answer = POLICY_CLAIM_UNKNOWN_NOT_FOUND;
	run(&f, &res, 0);  /* not found: unknown, never a GPU, never refused for it */
	CHECK_INT(f.calls, 2);
	CHECK_STR(f.asked, "template team-a/gpu-1,claim team-a/shared-gpu,");
	CHECK(strstr(res.body, "\"allowed\":true") != NULL);
	CHECK(strstr(res.body, "not found") != NULL);
	CHECK(strstr(res.body, "\"patch\"") == NULL);
	review_response_free(&res);
}

/* Found, asking for gpu.nvidia.com (a default gpuDeviceClasses class): the pod is placed as a GPU pod. */
static void test_found_places(void)
{
	struct fake f;
	struct review_response res;

	memset(&f, 0, sizeof f);
	f.answer = POLICY_CLAIM_RESOLVED;
	run(&f, &res, 0);
	CHECK(strstr(res.body, "\"allowed\":true") != NULL);
	CHECK(strstr(res.body, "\"patch\"") != NULL);
	CHECK_INT(res.patched, 1);
	CHECK(strstr(res.body, "cache not synced") == NULL);
	review_response_free(&res);
	json_decref(f.held);
}

int main(void)
{
	RUN(test_cold_never_refuses);
	RUN(test_lookups_asked);
	RUN(test_found_places);
	return check_done("review_claims");
}
