/*
 * DRA claims: a pod's references, and what a ResourceClaimTemplate or
 * ResourceClaim asks for in each version's shape (v1 and v1beta2 nest a
 * request's class under `exactly` or `firstAvailable`; v1beta1 and
 * v1alpha3 keep it on the request).
 */
#include "check.h"
#include "policy/policy_claims.h"

#include <stdlib.h>

static struct policy_claim claim;

static json_t *parse(const char *text)
{
	json_error_t jerr;
	json_t *j = json_loads(text, 0, &jerr);

	if (j == NULL)
		fprintf(stderr, "  bad test JSON: %s\n", jerr.text);
	return j;
}

/* Resolves text as claim source src; the JSON is kept in *keep for the borrowed strings. */
static int resolve(const char *text, enum policy_claim_source src, json_t **keep)
{
	struct error err = { 0 };

	memset(&claim, 0, sizeof claim);
	claim.name = "gpu";
	claim.source = src;
	*keep = parse(text);
	return policy_claim_resolve(&claim, *keep, &err);
}

static void test_v1_template_exactly(void)
{
	json_t *j;

	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\","
			  "\"metadata\":{\"name\":\"two\"},\"spec\":{\"spec\":{\"devices\":{\"requests\":["
			  "{\"name\":\"g\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\",\"count\":2}},"
			  "{\"name\":\"all\",\"exactly\":{\"deviceClassName\":\"mig.nvidia.com\","
			  "\"allocationMode\":\"All\"}}]}}}}", POLICY_CLAIM_FROM_TEMPLATE, &j), 0);
	CHECK_INT(claim.state, POLICY_CLAIM_RESOLVED);
	CHECK_INT(claim.n_requests, 2);
	CHECK_STR(claim.requests[0].name, "g");
	CHECK_INT(claim.requests[0].n_alts, 1);
	CHECK_STR(claim.requests[0].alts[0].device_class, "gpu.nvidia.com");
	CHECK_INT(claim.requests[0].alts[0].count, 2);
	CHECK_INT(claim.requests[1].alts[0].mode, POLICY_ALLOC_ALL);
	CHECK_INT(claim.requests[1].alts[0].count, 0);
	json_decref(j);
}

static void test_v1_claim_first_available(void)
{
	json_t *j;

	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
			  "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"firstAvailable\":["
			  "{\"name\":\"big\",\"deviceClassName\":\"gpu.nvidia.com\"},"
			  "{\"name\":\"mig\",\"deviceClassName\":\"mig.nvidia.com\",\"count\":2}]}]}}}",
			  POLICY_CLAIM_FROM_CLAIM, &j), 0);
	CHECK_INT(claim.n_requests, 1);
	CHECK_INT(claim.requests[0].n_alts, 2);
	CHECK_INT(claim.requests[0].alts[0].count, 1); /* the default */
	CHECK_STR(claim.requests[0].alts[1].device_class, "mig.nvidia.com");
	CHECK_INT(claim.requests[0].alts[1].count, 2);
	json_decref(j);
}

static void test_v1beta1_flat(void)
{
	json_t *j;

	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1beta1\",\"kind\":\"ResourceClaimTemplate\","
			  "\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\","
			  "\"deviceClassName\":\"gpu.amd.com\",\"count\":4,\"adminAccess\":true}]}}}}",
			  POLICY_CLAIM_FROM_TEMPLATE, &j), 0);
	CHECK_STR(claim.requests[0].alts[0].device_class, "gpu.amd.com");
	CHECK_INT(claim.requests[0].alts[0].count, 4);
	CHECK_INT(claim.requests[0].admin_access, 1);
	json_decref(j);
	/* v1beta2 has v1's shape: a flat request there is an error, not a guess. */
	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1beta2\",\"kind\":\"ResourceClaimTemplate\","
			  "\"spec\":{\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\","
			  "\"deviceClassName\":\"gpu.amd.com\"}]}}}}", POLICY_CLAIM_FROM_TEMPLATE, &j), -1);
	CHECK_INT(claim.state, POLICY_CLAIM_UNKNOWN_INVALID);
	CHECK(strstr(claim.message, "exactly one of exactly and firstAvailable") != NULL);
	json_decref(j);
}

static void test_empty_and_invalid(void)
{
	json_t *j;

	/* A template that asks for nothing resolves, to no request. */
	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaimTemplate\","
			  "\"spec\":{\"spec\":{\"devices\":{\"requests\":[]}}}}", POLICY_CLAIM_FROM_TEMPLATE, &j), 0);
	CHECK_INT(claim.state, POLICY_CLAIM_RESOLVED);
	CHECK_INT(claim.n_requests, 0);
	json_decref(j);
	/* The pod names a template: a ResourceClaim of the same name is not it. */
	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
			  "\"spec\":{\"devices\":{\"requests\":[]}}}", POLICY_CLAIM_FROM_TEMPLATE, &j), -1);
	json_decref(j);
	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
			  "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
			  "\"deviceClassName\":\"gpu.nvidia.com\",\"count\":0}}]}}}", POLICY_CLAIM_FROM_CLAIM, &j), -1);
	CHECK(strstr(claim.message, "count must be at least 1") != NULL);
	json_decref(j);
	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v2\",\"kind\":\"ResourceClaim\",\"spec\":{}}",
			  POLICY_CLAIM_FROM_CLAIM, &j), -1);
	json_decref(j);
	CHECK_INT(resolve("{\"apiVersion\":\"resource.k8s.io/v1\",\"kind\":\"ResourceClaim\","
			  "\"spec\":{\"devices\":{\"requests\":[{\"name\":\"g\",\"exactly\":{"
			  "\"deviceClassName\":\"gpu.nvidia.com\",\"allocationMode\":\"Some\"}}]}}}",
			  POLICY_CLAIM_FROM_CLAIM, &j), -1);
	json_decref(j);
}

static void test_pod_references(void)
{
	struct policy_claim cs[4];
	struct error err = { 0 };
	size_t n = 99;
	json_t *pod = parse("{\"spec\":{\"resourceClaims\":[{\"name\":\"a\",\"resourceClaimTemplateName\":\"t\"},"
			    "{\"name\":\"b\",\"resourceClaimName\":\"c\"},{\"name\":\"bad\"}]}}");
	struct policy_claims all = { cs, 0 };

	CHECK_INT(policy_claims_from_pod(pod, cs, 4, &n, &err), 0);
	CHECK_INT(n, 3);
	CHECK_STR(cs[0].object, "t");
	CHECK_INT(cs[0].source, POLICY_CLAIM_FROM_TEMPLATE);
	CHECK_INT(cs[0].state, POLICY_CLAIM_UNKNOWN_NO_LOOKUP);
	CHECK_INT(cs[1].source, POLICY_CLAIM_FROM_CLAIM);
	CHECK_STR(cs[1].object, "c");
	CHECK_INT(cs[2].state, POLICY_CLAIM_UNKNOWN_INVALID);
	all.n = n;
	CHECK(policy_claims_find(&all, "b") == &cs[1]);
	CHECK(policy_claims_find(&all, "zz") == NULL);
	CHECK_INT(policy_claims_from_pod(pod, cs, 2, &n, &err), -1);
	json_decref(pod);
}

int main(void)
{
	RUN(test_v1_template_exactly);
	RUN(test_v1_claim_first_available);
	RUN(test_v1beta1_flat);
	RUN(test_empty_and_invalid);
	RUN(test_pod_references);
	return check_done("claims");
}
