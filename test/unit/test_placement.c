/*
 * The patched pod, as kube-apiserver stores it, schedules exactly on the
 * pools the policy names (issue 12): each scenario is reviewed by the
 * policy, the JSON Patch applied (pkg/base/patch.c, as the API server applies a
 * webhook's patch), and the result tried against a table of fake AKS nodes
 * with the scheduler's own filters: NodeAffinity (nodeSelector and required
 * affinity, nodematch_pod_selects) and TaintToleration (NoSchedule and
 * NoExecute taints, nodematch_untolerated). Nodes carry what AKS puts on them:
 * kubernetes.azure.com/agentpool (the pool name), kubernetes.azure.com/accelerator
 * on GPU pools, the spot pool's kubernetes.azure.com/scalesetpriority=spot label
 * and taint (AKS adds both to --priority Spot pools), the GPU taint the admin
 * sets (sku=gpu:NoSchedule), a zone, and node names aks-<pool>-<id>-vmss<n>.
 */
#include <jansson.h>
#include <stdlib.h>

#include "check.h"
#include "policy/config.h"
#include "k8s/nodematch.h"
#include "base/patch.h"
#include "policy/policy.h"

#define NODE(pool, n, zone, extra_labels, extra_taints) \
	"{\"name\":\"aks-" pool "-31415926-vmss00000" n "\",\"labels\":{\"kubernetes.azure.com/agentpool\":\"" pool "\"," \
	"\"kubernetes.io/hostname\":\"aks-" pool "-31415926-vmss00000" n "\",\"topology.kubernetes.io/zone\":\"" zone "\"" \
	extra_labels "},\"taints\":[" extra_taints "]}"
#define GPU_LABELS ",\"kubernetes.azure.com/accelerator\":\"nvidia\""
#define GPU_TAINT "{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}"
#define SPOT ",\"kubernetes.azure.com/scalesetpriority\":\"spot\""
#define SPOT_TAINT ",{\"key\":\"kubernetes.azure.com/scalesetpriority\",\"value\":\"spot\",\"effect\":\"NoSchedule\"}"

static const char nodes_json[] = "["
	NODE("gput4spot", "0", "eastus-1", GPU_LABELS SPOT, GPU_TAINT SPOT_TAINT) ","
	NODE("gput4spot", "1", "eastus-2", GPU_LABELS SPOT, GPU_TAINT SPOT_TAINT) ","
	NODE("gput4", "0", "eastus-1", GPU_LABELS, GPU_TAINT) ","
	NODE("gput4", "1", "eastus-2", GPU_LABELS, GPU_TAINT) ","
	NODE("gpua100", "0", "eastus-1", GPU_LABELS, GPU_TAINT) ","
	NODE("gpuh100", "0", "eastus-2", GPU_LABELS, GPU_TAINT) ","
	NODE("cpu", "0", "eastus-1", "", "") ","
	NODE("cpu", "1", "eastus-2", "", "")
	"]";

/* The pools of golden/pools-* (spot for pods that opt in; A100 and H100 for some namespaces). */
static const char pools_yaml[] =
	"pools:\n"
	"  - name: t4-spot\n"
	"    resources: [nvidia.com/gpu]\n"
	"    maxGPUsPerPod: 1\n"
	"    nodeSelector: {kubernetes.azure.com/agentpool: gput4spot}\n"
	"    tolerations: [{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}]\n"
	"    podSelector: {matchLabels: {gpu-admission/interruptible: \"true\"}}\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 8,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gpua100}, namespaces: [training-*, ml]}\n"
	"  - {name: h100, resources: [nvidia.com/gpu], maxGPUsPerPod: 8,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gpuh100}, namespaces: [training-*]}\n";

static json_t *nodes;

/* The pool a node belongs to: the agent pool, mapped to the policy's pool name. */
static const char *pool_of(const struct config *cfg, const json_t *node)
{
	const char *ap = json_string_value(json_object_get(json_object_get(node, "labels"),
							   "kubernetes.azure.com/agentpool"));
	size_t i;

	for (i = 0; ap != NULL && i < cfg->n_pools; i++)
		if (strcmp(cfg->pools[i].node_selector.v[0].value, ap) == 0)
			return cfg->pools[i].name;
	return "(cpu)";
}

/* Is name one of the comma-separated names in list? ("t4" is not in "t4-spot".) */
static int listed(const char *list, const char *name)
{
	size_t n = strlen(name);
	const char *p;

	for (p = list; p != NULL; p = strchr(p, ','), p = p ? p + 1 : NULL)
		if (strncmp(p, name, n) == 0 && (p[n] == ',' || p[n] == '\0'))
			return 1;
	return 0;
}

/* Can the pod (borrowed) run on node, by the scheduler's NodeAffinity and TaintToleration filters? */
static int schedulable(const json_t *pod, const json_t *node)
{
	const json_t *spec = json_object_get(pod, "spec");

	return nodematch_pod_selects(spec, json_object_get(node, "labels"),
				     json_string_value(json_object_get(node, "name"))) &&
	       nodematch_untolerated(json_object_get(spec, "tolerations"), json_object_get(node, "taints")) == NULL;
}

/*
 * Reviews pod_json in ns under policy text yaml, applies the patch, and
 * checks that the pods schedules on exactly the nodes of the pools the
 * policy names (and, when zone is set, only in that zone); want is those
 * pools, comma-joined, in the policy's order.
 */
static void placed(const char *yaml, const char *ns, const char *pod_json, const char *want, const char *zone)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "policy.yaml", &err);
	json_t *pod = json_loads(pod_json, 0, NULL), *stored = NULL, *node;
	struct policy_request req = { .pod = pod, .ns = ns, .username = "", .operation = POLICY_OP_CREATE };
	struct policy_result res = { 0 };
	char named[512] = "", on[512] = "";
	size_t i, n_on = 0;

	CHECK(cfg != NULL && pod != NULL);
	if (cfg == NULL || pod == NULL)
		goto out;
	/* Before: a GPU pod without the toleration fits no GPU node. */
	json_array_foreach(nodes, i, node)
		CHECK(!schedulable(pod, node) || strcmp(pool_of(cfg, node), "(cpu)") == 0);
	CHECK_INT(policy_evaluate(cfg, &req, &res, &err), 0);
	CHECK_INT(res.decision, POLICY_MUTATE);
	policy_describe_pools(&res, ",", named, sizeof named);
	CHECK_STR(named, want);
	stored = json_deep_copy(pod);
	CHECK_INT(patch_apply(stored, res.patch, &err), 0);
	json_array_foreach(nodes, i, node) {
		const char *pool = pool_of(cfg, node);
		const char *node_zone = json_string_value(json_object_get(json_object_get(node, "labels"),
									  "topology.kubernetes.io/zone"));
		int expect = listed(named, pool) && (zone == NULL || strcmp(zone, node_zone) == 0);

		if (schedulable(stored, node)) {
			n_on++;
			if (!listed(on, pool))
				snprintf(on + strlen(on), sizeof on - strlen(on), "%s%s", on[0] ? "," : "", pool);
		}
		if (schedulable(stored, node) != expect)
			fprintf(stderr, "  %s: node %s (pool %s): schedulable %d, want %d\n", pod_json,
				json_string_value(json_object_get(node, "name")), pool, !expect, expect);
		CHECK_INT(schedulable(stored, node), expect);
	}
	CHECK(n_on > 0);
	if (zone == NULL)
		CHECK_STR(on, want);
out:
	policy_result_free(&res);
	json_decref(stored);
	json_decref(pod);
	config_free(cfg);
}

#define POD(labels, extra) "{\"metadata\":{\"name\":\"p\",\"labels\":{" labels "}},\"spec\":{\"containers\":[{\"name\":\"c\"," \
	"\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]" extra "}}"
#define INTERRUPTIBLE "\"gpu-admission/interruptible\":\"true\""
#define ZONE_TERM "{\"matchExpressions\":[{\"key\":\"topology.kubernetes.io/zone\",\"operator\":\"In\",\"values\":[\"eastus-1\"]}]}"
#define REQUIRED(terms) ",\"affinity\":{\"nodeAffinity\":{\"requiredDuringSchedulingIgnoredDuringExecution\":" \
	"{\"nodeSelectorTerms\":[" terms "]}}}"

static void test_pinned(void)
{
	placed(pools_yaml, "ml", POD(INTERRUPTIBLE, ""), "t4-spot", NULL);
	placed(pools_yaml, "ml", POD("", ""), "t4", NULL);
	placed(pools_yaml, "training-a", POD("", REQUIRED("{\"matchExpressions\":[{\"key\":\"kubernetes.azure.com/agentpool\","
						"\"operator\":\"In\",\"values\":[\"gpuh100\"]}]}")), "h100", NULL);
	placed(pools_yaml, "ml", POD(INTERRUPTIBLE, REQUIRED(ZONE_TERM)), "t4-spot", "eastus-1");
}

static void test_fallback(void)
{
	char yaml[2048];

	snprintf(yaml, sizeof yaml, "placement: fallback\n%s", pools_yaml);
	placed(yaml, "ml", POD(INTERRUPTIBLE, ""), "t4-spot,t4,a100", NULL);
	placed(yaml, "ml", POD("", ""), "t4,a100", NULL);
	placed(yaml, "training-a", POD("", ""), "t4,a100,h100", NULL);
	placed(yaml, "notebooks", POD(INTERRUPTIBLE, ""), "t4-spot,t4", NULL);
	/* The pod's own required terms keep their meaning, ANDed with the pools'. */
	placed(yaml, "ml", POD(INTERRUPTIBLE, REQUIRED(ZONE_TERM)), "t4-spot,t4,a100", "eastus-1");
	placed(yaml, "ml", POD("", REQUIRED(ZONE_TERM ",{}")), "t4,a100", "eastus-1");
	/* The label picks one pool. */
	placed(yaml, "ml", POD("\"gpu-admission/pool\":\"a100\"", ""), "a100", NULL);
}

/* The scheduler's NodeAffinity Score of a node: the weights of the preferred terms it matches, summed. */
static long long affinity_score(const json_t *pod, const json_t *node)
{
	const json_t *na = json_object_get(json_object_get(json_object_get(pod, "spec"), "affinity"), "nodeAffinity");
	const json_t *t;
	long long sum = 0;
	size_t i;

	json_array_foreach(json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution"), i, t)
		if (nodematch_term(json_object_get(t, "preference"), json_object_get(node, "labels"),
				   json_string_value(json_object_get(node, "name"))))
			sum += json_integer_value(json_object_get(t, "weight"));
	return sum;
}

/* The index of a node's pool in the policy (cfg->n_pools for a CPU node). */
static size_t pool_index(const struct config *cfg, const json_t *node)
{
	const char *name = pool_of(cfg, node);
	size_t i;

	for (i = 0; i < cfg->n_pools && strcmp(cfg->pools[i].name, name) != 0; i++)
		;
	return i;
}

/*
 * Issue "First contact that holds", item 7: whatever preferred terms the pod
 * has, every node it may run on scores strictly higher than every node of a
 * pricier pool (the cost order dominates its own preferences).
 */
static void cost_order_holds(const char *yaml, const char *ns, const char *pod_json)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "policy.yaml", &err);
	json_t *pod = json_loads(pod_json, 0, NULL), *stored = NULL, *a, *b;
	struct policy_request req = { .pod = pod, .ns = ns, .username = "", .operation = POLICY_OP_CREATE };
	struct policy_result res = { 0 };
	size_t i, j;

	CHECK(cfg != NULL && pod != NULL);
	if (cfg == NULL || pod == NULL)
		goto out;
	CHECK_INT(policy_evaluate(cfg, &req, &res, &err), 0);
	stored = json_deep_copy(pod);
	CHECK_INT(patch_apply(stored, res.patch, &err), 0);
	json_array_foreach(nodes, i, a)
		json_array_foreach(nodes, j, b) {
			if (!schedulable(stored, a) || !schedulable(stored, b) || pool_index(cfg, a) >= pool_index(cfg, b))
				continue;
			if (affinity_score(stored, a) <= affinity_score(stored, b))
				fprintf(stderr, "  %s: %s scores %lld, pricier %s %lld\n", pod_json,
					json_string_value(json_object_get(a, "name")), affinity_score(stored, a),
					json_string_value(json_object_get(b, "name")), affinity_score(stored, b));
			CHECK(affinity_score(stored, a) > affinity_score(stored, b));
		}
out:
	policy_result_free(&res);
	json_decref(stored);
	json_decref(pod);
	config_free(cfg);
}

#define PREF(w, key, values) "{\"weight\":" #w ",\"preference\":{\"matchExpressions\":[{\"key\":\"" key "\"," \
	"\"operator\":\"In\",\"values\":[" values "]}]}}"
#define ZONE "topology.kubernetes.io/zone"
#define AGENTPOOL "kubernetes.azure.com/agentpool"

static void test_cost_order(void)
{
	/* The pod's own preferred terms. */
	static const char *const prefs[] = {
		"",
		PREF(1, ZONE, "\"eastus-1\""),
		PREF(50, ZONE, "\"eastus-1\""),
		PREF(100, ZONE, "\"eastus-1\""),
		PREF(100, ZONE, "\"eastus-2\""),
		PREF(100, ZONE, "\"eastus-1\"") "," PREF(100, ZONE, "\"eastus-1\",\"eastus-2\""),
		PREF(100, AGENTPOOL, "\"gpuh100\""),
		PREF(100, "agentpool", "\"gpua100\"") "," PREF(60, ZONE, "\"eastus-1\""),
		PREF(100, AGENTPOOL, "\"gput4\",\"gpua100\""),
		PREF(5, AGENTPOOL, "\"gput4spot\"") "," PREF(10, ZONE, "\"eastus-2\""),
	};
	/* The pod's own required node affinity: none, or one keeping it to a100 and h100. */
	static const char *const required[] = {
		"",
		"\"requiredDuringSchedulingIgnoredDuringExecution\":{\"nodeSelectorTerms\":[{\"matchExpressions\":"
		"[{\"key\":\"" AGENTPOOL "\",\"operator\":\"In\",\"values\":[\"gpua100\",\"gpuh100\"]}]}]},",
	};
	char yaml[2048], aff[1024], pod[2048];
	size_t i, j;

	snprintf(yaml, sizeof yaml, "placement: fallback\n%s", pools_yaml);
	for (i = 0; i < sizeof prefs / sizeof prefs[0]; i++)
		for (j = 0; j < sizeof required / sizeof required[0]; j++) {
			snprintf(aff, sizeof aff, ",\"affinity\":{\"nodeAffinity\":{%s"
				 "\"preferredDuringSchedulingIgnoredDuringExecution\":[%s]}}", required[j], prefs[i]);
			snprintf(pod, sizeof pod, POD("", "%s"), aff);
			cost_order_holds(yaml, "training-a", pod);
			snprintf(pod, sizeof pod, POD(INTERRUPTIBLE, "%s"), aff);
			cost_order_holds(yaml, "ml", pod);
		}
}

int main(void)
{
	nodes = json_loads(nodes_json, 0, NULL);
	CHECK(nodes != NULL);
	RUN(test_pinned);
	RUN(test_fallback);
	RUN(test_cost_order);
	json_decref(nodes);
	return check_done("placement");
}
