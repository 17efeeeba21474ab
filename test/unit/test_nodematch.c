/*
 * Unit tests of pkg/k8s/nodematch.c against the upstream rules it cites:
 * Toleration.ToleratesTaint, the scheduler's TaintToleration filter,
 * component-helpers' nodeaffinity and apimachinery's label requirements.
 */
#include <jansson.h>

#include "check.h"
#include "k8s/nodematch.h"

static json_t *J(const char *text)
{
	json_t *j = json_loads(text, 0, NULL);

	if (j == NULL)
		fprintf(stderr, "  bad test JSON: %s\n", text);
	return j;
}

static int tol(const char *toleration, const char *key, const char *value, const char *effect)
{
	json_t *t = J(toleration);
	int r = nodematch_tolerates(t, key, value, effect);

	json_decref(t);
	return r;
}

static void test_tolerates(void)
{
	CHECK(tol("{\"key\":\"sku\",\"operator\":\"Equal\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}",
		  "sku", "gpu", "NoSchedule"));
	/* Absent and explicit empty operator both mean Equal. */
	CHECK(tol("{\"key\":\"sku\",\"value\":\"gpu\"}", "sku", "gpu", "NoSchedule"));
	CHECK(tol("{\"key\":\"sku\",\"operator\":\"\",\"value\":\"gpu\"}", "sku", "gpu", "NoSchedule"));
	CHECK(!tol("{\"key\":\"sku\",\"operator\":\"\",\"value\":\"cpu\"}", "sku", "gpu", "NoSchedule"));
	CHECK(tol("{\"key\":\"sku\",\"operator\":\"Exists\"}", "sku", "gpu", "NoExecute"));
	CHECK(!tol("{\"key\":\"sku\",\"operator\":\"Exists\",\"effect\":\"NoExecute\"}", "sku", "gpu",
		   "NoSchedule"));
	CHECK(tol("{\"operator\":\"Exists\"}", "sku", "gpu", "NoSchedule"));
	CHECK(!tol("{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}", "sku", "gpu", "NoSchedule"));
	CHECK(!tol("{\"key\":\"sku\",\"operator\":\"Gt\",\"value\":\"1\"}", "sku", "gpu", "NoSchedule"));
	/* A taint without a value: Equal with no value matches it. */
	CHECK(tol("{\"key\":\"dedicated\",\"operator\":\"Equal\"}", "dedicated", "", "NoSchedule"));
	/* Wrong types tolerate nothing. */
	CHECK(!tol("{\"key\":1,\"operator\":\"Exists\"}", "sku", "gpu", "NoSchedule"));
	CHECK(!tol("[]", "sku", "gpu", "NoSchedule"));
}

static void test_untolerated(void)
{
	json_t *taints = J("[{\"key\":\"a\",\"value\":\"x\",\"effect\":\"PreferNoSchedule\"},"
			   "{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"},"
			   "{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"value\":\"spot\","
			   "\"effect\":\"NoSchedule\"}]");
	json_t *none = J("[]");
	json_t *gpu = J("[{\"key\":\"sku\",\"operator\":\"Equal\",\"value\":\"gpu\"}]");
	json_t *both = J("[{\"key\":\"sku\",\"operator\":\"Exists\"},"
			 "{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"operator\":\"Equal\","
			 "\"value\":\"spot\",\"effect\":\"NoSchedule\"}]");
	const json_t *t;

	t = nodematch_untolerated(none, taints);
	CHECK_STR(json_string_value(json_object_get(t, "key")), "sku");  /* PreferNoSchedule is skipped */
	t = nodematch_untolerated(gpu, taints);
	CHECK_STR(json_string_value(json_object_get(t, "key")), "kubernetes.azure.com/scalesetpriority");
	CHECK(nodematch_untolerated(both, taints) == NULL);
	CHECK(nodematch_untolerated(NULL, NULL) == NULL);
	json_decref(taints);
	json_decref(none);
	json_decref(gpu);
	json_decref(both);
}

static int req(const char *requirement, const char *labels)
{
	json_t *r = J(requirement), *l = J(labels);
	int m = nodematch_requirement(r, l);

	json_decref(r);
	json_decref(l);
	return m;
}

static void test_requirements(void)
{
	const char *gpu = "{\"accelerator\":\"nvidia\",\"gpus\":\"8\"}", *cpu = "{\"pool\":\"cpu\"}";

	CHECK(req("{\"key\":\"accelerator\",\"operator\":\"In\",\"values\":[\"amd\",\"nvidia\"]}", gpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"In\",\"values\":[\"nvidia\"]}", cpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"In\",\"values\":[]}", gpu));
	/* NotIn and DoesNotExist match nodes without the label. */
	CHECK(req("{\"key\":\"accelerator\",\"operator\":\"NotIn\",\"values\":[\"nvidia\"]}", cpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"NotIn\",\"values\":[\"nvidia\"]}", gpu));
	CHECK(req("{\"key\":\"accelerator\",\"operator\":\"DoesNotExist\"}", cpu));
	CHECK(req("{\"key\":\"accelerator\",\"operator\":\"Exists\"}", gpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"Exists\",\"values\":[\"x\"]}", gpu));
	/* Gt and Lt need the label, and integers on both sides. */
	CHECK(req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"4\"]}", gpu));
	CHECK(!req("{\"key\":\"gpus\",\"operator\":\"Lt\",\"values\":[\"4\"]}", gpu));
	CHECK(!req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"4\"]}", cpu));
	CHECK(!req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"four\"]}", gpu));
	CHECK(!req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"1\",\"2\"]}", gpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"Gt\",\"values\":[\"1\"]}", gpu));
	CHECK(req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"-1\"]}", gpu));
	CHECK(!req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\" 1\"]}", gpu));
	CHECK(!req("{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"99999999999999999999\"]}", gpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"in\",\"values\":[\"nvidia\"]}", gpu));
	CHECK(!req("{\"key\":\"accelerator\",\"operator\":\"In\",\"values\":[1]}", gpu));
}

static int pod_on(const char *spec, const char *labels, const char *name)
{
	json_t *s = J(spec), *l = J(labels);
	int m = nodematch_pod_selects(s, l, name);

	json_decref(s);
	json_decref(l);
	return m;
}

#define REQUIRED(terms) "{\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
			"{\"nodeSelectorTerms\":" terms "}}}}"

static void test_terms(void)
{
	const char *gpu = "{\"accelerator\":\"nvidia\"}", *cpu = "{\"pool\":\"cpu\"}";

	CHECK(pod_on("{}", cpu, "n1"));
	CHECK(pod_on("{\"nodeSelector\":{\"accelerator\":\"nvidia\"}}", gpu, "n1"));
	CHECK(!pod_on("{\"nodeSelector\":{\"accelerator\":\"nvidia\"}}", cpu, "n1"));
	/* An empty term matches no node; the other term still can. */
	CHECK(!pod_on(REQUIRED("[{}]"), cpu, "n1"));
	CHECK(!pod_on(REQUIRED("[{\"matchExpressions\":[]}]"), gpu, "n1"));
	CHECK(pod_on(REQUIRED("[{\"matchExpressions\":[{\"key\":\"accelerator\",\"operator\":\"In\","
			      "\"values\":[\"nvidia\"]}]},{}]"), gpu, "n1"));
	CHECK(!pod_on(REQUIRED("[{\"matchExpressions\":[{\"key\":\"accelerator\",\"operator\":\"In\","
			       "\"values\":[\"nvidia\"]}]},{}]"), cpu, "n1"));
	CHECK(!pod_on(REQUIRED("[]"), gpu, "n1"));
	/* Terms are ORed, requirements ANDed. */
	CHECK(pod_on(REQUIRED("[{\"matchExpressions\":[{\"key\":\"x\",\"operator\":\"Exists\"}]},"
			      "{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\",\"values\":[\"cpu\"]}]}]"),
		     cpu, "n1"));
	CHECK(!pod_on(REQUIRED("[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"In\",\"values\":[\"cpu\"]},"
			       "{\"key\":\"x\",\"operator\":\"Exists\"}]}]"), cpu, "n1"));
	/* An invalid requirement fails its whole term. */
	CHECK(!pod_on(REQUIRED("[{\"matchExpressions\":[{\"key\":\"pool\",\"operator\":\"NotIn\",\"values\":[\"gpu\"]},"
			       "{\"key\":\"x\",\"operator\":\"Bogus\"}]}]"), cpu, "n1"));
	/* matchFields: metadata.name, In or NotIn, exactly one value. */
	CHECK(pod_on(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]"),
		     cpu, "n1"));
	CHECK(!pod_on(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]"),
		      cpu, "n2"));
	CHECK(pod_on(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"NotIn\",\"values\":[\"n1\"]}]}]"),
		     cpu, "n2"));
	CHECK(!pod_on(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"n1\",\"n2\"]}]}]"),
		      cpu, "n1"));
	CHECK(!pod_on(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\",\"values\":[\"n1\"]}]}]"),
		      cpu, "n1"));
	/* nodeSelector and required affinity are ANDed. */
	CHECK(!pod_on("{\"nodeSelector\":{\"pool\":\"cpu\"},\"affinity\":{\"nodeAffinity\":{"
		      "\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":"
		      "[{\"key\":\"accelerator\",\"operator\":\"Exists\"}]}]}}}}", cpu, "n1"));
}

static int covers(const char *have, const char *key, const char *op, const char *value, const char *effect)
{
	json_t *h = J(have);
	int r = nodematch_covers(h, key, op, value, effect);

	json_decref(h);
	return r;
}

static void test_covers(void)
{
	const char *spot = "kubernetes.azure.com/scalesetpriority";

	/* The same toleration, or a wider one, covers it. */
	CHECK(covers("{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"operator\":\"Equal\",\"value\":\"spot\","
		     "\"effect\":\"NoSchedule\"}", spot, "Equal", "spot", "NoSchedule"));
	CHECK(covers("{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"operator\":\"Exists\"}", spot, "Equal",
		     "spot", "NoSchedule"));
	CHECK(covers("{\"operator\":\"Exists\"}", spot, "Exists", "", ""));
	/* Narrower: another effect, another value, Equal where Exists is wanted, one effect of all. */
	CHECK(!covers("{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"operator\":\"Equal\",\"value\":\"spot\","
		      "\"effect\":\"NoExecute\"}", spot, "Equal", "spot", "NoSchedule"));
	CHECK(!covers("{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"value\":\"regular\"}", spot, "Equal",
		      "spot", "NoSchedule"));
	CHECK(!covers("{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"value\":\"\"}", spot, "Exists", "",
		      "NoSchedule"));
	CHECK(!covers("{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"operator\":\"Exists\","
		      "\"effect\":\"NoSchedule\"}", spot, "Exists", "", ""));
	CHECK(!covers("[]", spot, "Exists", "", "NoSchedule"));
}

static void test_set_ops(void)
{
	/* labels.Requirement.Matches for the four set operators. */
	CHECK(nodematch_set_op(nodematch_op_parse("In"), "a", 1));
	CHECK(!nodematch_set_op(nodematch_op_parse("In"), "a", 0));
	CHECK(!nodematch_set_op(nodematch_op_parse("In"), NULL, 0));
	CHECK(nodematch_set_op(nodematch_op_parse("NotIn"), NULL, 0));
	CHECK(nodematch_set_op(nodematch_op_parse("NotIn"), "b", 0));
	CHECK(!nodematch_set_op(nodematch_op_parse("NotIn"), "a", 1));
	CHECK(nodematch_set_op(nodematch_op_parse("Exists"), "", 0));
	CHECK(!nodematch_set_op(nodematch_op_parse("Exists"), NULL, 0));
	CHECK(nodematch_set_op(nodematch_op_parse("DoesNotExist"), NULL, 0));
	CHECK(!nodematch_set_op(nodematch_op_parse("DoesNotExist"), "", 0));
	CHECK(!nodematch_set_op(nodematch_op_parse("Gt"), "5", 1));
	CHECK_INT(nodematch_op_parse("in"), NODEMATCH_OP_INVALID);
	CHECK_INT(nodematch_op_parse(NULL), NODEMATCH_OP_INVALID);
}

static enum nodematch_tri could(const char *spec, const char *known)
{
	json_t *s = J(spec), *k = J(known);
	enum nodematch_tri t = nodematch_pod_could_select(s, k);

	json_decref(s);
	json_decref(k);
	return t;
}

#define IN(key, vals) "{\"key\":\"" key "\",\"operator\":\"In\",\"values\":[" vals "]}"

/* A pool's nodes carry its selector's labels; other labels are unknown. */
static void test_could_select(void)
{
	const char *t4 = "{\"kubernetes.azure.com/agentpool\":\"gput4\"}";

	CHECK_INT(could("{}", t4), NODEMATCH_YES);
	CHECK_INT(could("{\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":\"gput4\"}}", t4), NODEMATCH_YES);
	CHECK_INT(could("{\"nodeSelector\":{\"kubernetes.azure.com/agentpool\":\"gpuh100\"}}", t4), NODEMATCH_NO);
	CHECK_INT(could("{\"nodeSelector\":{\"topology.kubernetes.io/zone\":\"eastus-1\"}}", t4), NODEMATCH_MAYBE);
	/* The case: required affinity names the h100 pool. */
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[" IN("kubernetes.azure.com/agentpool", "\"gpuh100\"") "]}]"),
			t4), NODEMATCH_NO);
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[" IN("kubernetes.azure.com/agentpool", "\"gpuh100\",\"gput4\"")
				 "]}]"), t4), NODEMATCH_YES);
	/* Another key: it may hold on the pool's nodes. NotIn of another value holds. */
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[" IN("topology.kubernetes.io/zone", "\"1\"") "]}]"), t4),
		  NODEMATCH_MAYBE);
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[{\"key\":\"kubernetes.azure.com/agentpool\","
				 "\"operator\":\"NotIn\",\"values\":[\"gpuh100\"]}]}]"), t4), NODEMATCH_YES);
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[{\"key\":\"kubernetes.azure.com/agentpool\","
				 "\"operator\":\"DoesNotExist\"}]}]"), t4), NODEMATCH_NO);
	/* Terms ORed: one that may hold is enough; requirements ANDed: one that cannot hold sinks the term. */
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[" IN("kubernetes.azure.com/agentpool", "\"gpuh100\"") "]},"
				 "{\"matchExpressions\":[" IN("zone", "\"1\"") "]}]"), t4), NODEMATCH_MAYBE);
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[" IN("zone", "\"1\"") ","
				 IN("kubernetes.azure.com/agentpool", "\"gpuh100\"") "]}]"), t4), NODEMATCH_NO);
	/* Empty terms, no terms and invalid requirements hold nowhere, on a known key or not. */
	CHECK_INT(could(REQUIRED("[{}]"), t4), NODEMATCH_NO);
	CHECK_INT(could(REQUIRED("[]"), t4), NODEMATCH_NO);
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[{\"key\":\"zone\",\"operator\":\"Bogus\"}]}]"), t4),
		  NODEMATCH_NO);
	CHECK_INT(could(REQUIRED("[{\"matchExpressions\":[{\"key\":\"gpus\",\"operator\":\"Gt\",\"values\":[\"x\"]}]}]"),
			t4), NODEMATCH_NO);
	/* Node names are unknown: a valid matchFields may hold. */
	CHECK_INT(could(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\","
				 "\"values\":[\"aks-gput4-1-vmss000000\"]}]}]"), t4), NODEMATCH_MAYBE);
	CHECK_INT(could(REQUIRED("[{\"matchFields\":[{\"key\":\"metadata.uid\",\"operator\":\"In\","
				 "\"values\":[\"x\"]}]}]"), t4), NODEMATCH_NO);
	/* nodeSelector and affinity ANDed: a contradiction in either rules the pool out. */
	CHECK_INT(could("{\"nodeSelector\":{\"zone\":\"1\"},\"affinity\":{\"nodeAffinity\":{"
			"\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":["
			IN("kubernetes.azure.com/agentpool", "\"gpua100\"") "]}]}}}}", t4), NODEMATCH_NO);
}

int main(void)
{
	RUN(test_covers);
	RUN(test_set_ops);
	RUN(test_could_select);
	RUN(test_tolerates);
	RUN(test_untolerated);
	RUN(test_requirements);
	RUN(test_terms);
	return check_done("nodematch");
}
