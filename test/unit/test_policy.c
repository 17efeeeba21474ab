/*
 * Policy engine pieces in isolation: glob matching, the toleration rule and
 * pool choice, each driven through policy_evaluate() with small pods.
 */
#include "check.h"
#include "policy/policy.h"
#include "policy/policy_int.h"

static struct config *cfg_default, *cfg_pools;

static const char three_pools[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, nodeSelector: {pool: t4}}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 8, nodeSelector: {pool: a100}}\n"
	"  - {name: h100, maxGPUsPerPod: 8, nodeSelector: {pool: h100}}\n";

/* Evaluates pod (JSON text) as a CREATE in namespace "ml". */
static void eval(const struct config *cfg, const char *pod_json, struct policy_result *res)
{
	struct error err = { 0 };
	json_error_t jerr;
	json_t *pod = json_loads(pod_json, 0, &jerr);
	struct policy_request req = { .pod = pod, .ns = "ml", .operation = POLICY_OP_CREATE };

	if (pod == NULL)
		fprintf(stderr, "bad test JSON: %s\n", jerr.text);
	CHECK(pod != NULL);
	CHECK_INT(policy_evaluate(cfg, &req, res, &err), 0);
	json_decref(pod);
}

static void test_glob(void)
{
	CHECK(policy_glob_match("nvidia.com/mig-*", "nvidia.com/mig-1g.10gb"));
	CHECK(!policy_glob_match("nvidia.com/mig-*", "nvidia.com/gpu"));
	CHECK(policy_glob_match("nvidia.com/*", "nvidia.com/gpu.shared"));
	CHECK(policy_glob_match("*", ""));
	CHECK(policy_glob_match("a?c", "abc"));
	CHECK(!policy_glob_match("a?c", "ac"));
	CHECK(policy_glob_match("aks-gpu*-vmss*", "aks-gpu01-12345-vmss000001"));
	CHECK(!policy_glob_match("nvidia.com/gpu", "nvidia.com/gpu.shared"));
	CHECK(policy_glob_match("*a*b*c", "xxaxxbxxc"));
	CHECK(!policy_glob_match("*a*b*c", "xxaxxbxx"));
}

/* A GPU pod with one toleration: is the GPU toleration still added? */
static int adds_toleration(const char *toleration)
{
	char pod[1024];
	struct policy_result res;
	int added = 0;

	snprintf(pod, sizeof pod, "{\"spec\":{\"tolerations\":[%s],\"nodeSelector\":"
		 "{\"kubernetes.azure.com/accelerator\":\"nvidia\"},\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}", toleration);
	eval(cfg_default, pod, &res);
	added = res.patch != NULL;
	policy_result_free(&res);
	return added;
}

static void test_toleration_matching(void)
{
	static const struct { const char *t; int tolerates; } cases[] = {
		{ "{\"key\":\"sku\",\"operator\":\"Equal\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}", 1 },
		{ "{\"key\":\"sku\",\"value\":\"gpu\"}", 1 },                    /* Equal by default, any effect */
		{ "{\"key\":\"sku\",\"operator\":\"Exists\"}", 1 },
		{ "{\"key\":\"sku\",\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}", 1 },
		{ "{\"operator\":\"Exists\"}", 1 },                              /* wildcard */
		{ "{\"operator\":\"Exists\",\"effect\":\"NoSchedule\"}", 1 },
		{ "{\"operator\":\"Exists\",\"effect\":\"NoExecute\"}", 0 },
		{ "{\"key\":\"sku\",\"operator\":\"Equal\",\"value\":\"cpu\"}", 0 },
		{ "{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"PreferNoSchedule\"}", 0 },
		{ "{\"key\":\"SKU\",\"operator\":\"Exists\"}", 0 },              /* keys are case-sensitive */
		{ "{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}", 0 },
		{ "{\"key\":\"sku\",\"operator\":\"Bogus\",\"value\":\"gpu\"}", 0 },
		{ "{\"operator\":\"Equal\"}", 0 },                               /* empty key needs Exists */
	};
	size_t i;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		int added = adds_toleration(cases[i].t);
		if (added == cases[i].tolerates)
			fprintf(stderr, "  toleration %s: tolerates=%d expected %d\n", cases[i].t, !added,
				cases[i].tolerates);
		CHECK(added != cases[i].tolerates);
	}
}

static const char *pool_for(const char *limits, const char *extra_spec, const char *labels)
{
	static char chosen[64];
	char pod[1024];
	struct policy_result res;

	snprintf(pod, sizeof pod, "{\"metadata\":{\"labels\":{%s}},\"spec\":{%s\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{%s}}}]}}", labels, extra_spec, limits);
	eval(cfg_pools, pod, &res);
	snprintf(chosen, sizeof chosen, "%s", res.decision == POLICY_REJECT ? "REJECT"
		 : res.pool ? res.pool : "(none)");
	policy_result_free(&res);
	return chosen;
}

static void test_pool_choice(void)
{
	CHECK_STR(pool_for("\"nvidia.com/gpu\":1", "", ""), "t4");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":2", "", ""), "a100");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":8", "", ""), "a100");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":9", "", ""), "REJECT");
	CHECK_STR(pool_for("\"nvidia.com/mig-1g.10gb\":1", "", ""), "a100");
	CHECK_STR(pool_for("\"nvidia.com/gpu.shared\":1", "", ""), "h100"); /* only h100 serves all */
	CHECK_STR(pool_for("\"nvidia.com/gpu\":1", "", "\"gpu-admission/pool\":\"h100\""), "h100");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":1", "", "\"gpu-admission/pool\":\"nope\""), "REJECT");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":1", "\"nodeSelector\":{\"pool\":\"a100\"},", ""), "a100");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":4", "\"nodeSelector\":{\"pool\":\"t4\"},", ""), "REJECT");
	CHECK_STR(pool_for("\"nvidia.com/gpu\":1,\"nvidia.com/mig-1g.10gb\":1", "", ""), "a100");
}

static void test_no_pool_message_names_largest(void)
{
	struct policy_result res;

	eval(cfg_pools, "{\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
		 "{\"nvidia.com/gpu\":16}}}]}}", &res);
	CHECK_INT(res.decision, POLICY_REJECT);
	CHECK(strstr(res.message, "\"a100\"") != NULL);
	CHECK(strstr(res.message, "16") != NULL);
	CHECK_STR(res.reason, "no-pool-fits");
	policy_result_free(&res);
}

static void test_patch_order_is_deterministic(void)
{
	struct policy_result a, b;
	struct error err = { 0 };
	static const char yaml[] = "pools: [{name: p, nodeSelector: {zeta: '1', alpha: '2', mid: '3'}}]\n";
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "t", &err);
	char *ta, *tb;

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	eval(cfg, "{\"spec\":{\"nodeSelector\":{\"x\":\"y\"},\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}", &a);
	eval(cfg, "{\"spec\":{\"nodeSelector\":{\"x\":\"y\"},\"containers\":[{\"name\":\"c\","
		 "\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}}", &b);
	ta = json_dumps(a.patch, JSON_COMPACT);
	tb = json_dumps(b.patch, JSON_COMPACT);
	CHECK_STR(ta, tb);
	CHECK(strstr(ta, "alpha") < strstr(ta, "mid") && strstr(ta, "mid") < strstr(ta, "zeta"));
	free(ta);
	free(tb);
	policy_result_free(&a);
	policy_result_free(&b);
	config_free(cfg);
}

/*
 * The decision for a CPU DaemonSet-owned pod tolerating the GPU taint, sent as
 * username, in ns; a rejection's message is copied into message when not NULL.
 */
static enum policy_decision daemonset_pod_in(const char *ns, const char *api_version, const char *controller,
					     const char *username, int template_of_daemonset, char *message,
					     size_t cap)
{
	char text[1024];
	struct policy_result res;
	struct error err = { 0 };
	struct policy_request req = { .ns = ns, .operation = POLICY_OP_CREATE, .username = username,
				      .daemonset = template_of_daemonset };
	json_t *pod;
	enum policy_decision d;

	snprintf(text, sizeof text, "{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"%s\",\"kind\":"
		 "\"DaemonSet\",\"name\":\"agent\",\"uid\":\"u\"%s%s}]},\"spec\":{\"tolerations\":[{\"key\":"
		 "\"sku\",\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\"}]}}", api_version,
		 controller ? ",\"controller\":" : "", controller ? controller : "");
	pod = json_loads(text, 0, NULL);
	CHECK(pod != NULL);
	req.pod = pod;
	CHECK_INT(policy_evaluate(cfg_default, &req, &res, &err), 0);
	d = res.decision;
	if (d == POLICY_ALLOW)
		CHECK_STR(res.reason, "exempt-daemonset");
	if (message != NULL)
		snprintf(message, cap, "%s", res.message);
	policy_result_free(&res);
	json_decref(pod);
	return d;
}

/* The same in gpu-resources, a namespace of the default exempt.daemonSetNamespaces. */
static enum policy_decision daemonset_pod(const char *api_version, const char *controller, const char *username,
					  int template_of_daemonset)
{
	return daemonset_pod_in("gpu-resources", api_version, controller, username, template_of_daemonset, NULL, 0);
}

static void test_daemonset_contract(void)
{
	static const char ctrl[] = "system:serviceaccount:kube-system:daemon-set-controller";

	/* Online: only the DaemonSet controller's requests count. */
	CHECK_INT(daemonset_pod("apps/v1", "true", ctrl, 0), POLICY_ALLOW);
	CHECK_INT(daemonset_pod("apps/v1", "true", "system:kube-controller-manager", 0), POLICY_ALLOW);
	CHECK_INT(daemonset_pod("apps/v1", "true", "alice@example.com", 0), POLICY_REJECT);
	CHECK_INT(daemonset_pod("apps/v1", "true", "", 0), POLICY_REJECT);       /* no userInfo */
	CHECK_INT(daemonset_pod("apps/v1", "true", "alice@example.com", 1), POLICY_REJECT); /* offline flag ignored */
	/* Whoever sends it: only an apps/v1 controller reference is a DaemonSet's. */
	CHECK_INT(daemonset_pod("example.com/v1", "true", ctrl, 0), POLICY_REJECT);
	CHECK_INT(daemonset_pod("apps/v1", "false", ctrl, 0), POLICY_REJECT);
	CHECK_INT(daemonset_pod("apps/v1", NULL, ctrl, 0), POLICY_REJECT);
	/* Offline (NULL username): the stored controller reference is trusted, and so is the caller's flag. */
	CHECK_INT(daemonset_pod("apps/v1", "true", NULL, 0), POLICY_ALLOW);
	CHECK_INT(daemonset_pod("example.com/v1", "true", NULL, 0), POLICY_REJECT);
	CHECK_INT(daemonset_pod("example.com/v1", "true", NULL, 1), POLICY_ALLOW);
}

/*
 * The default exempts DaemonSet pods only where admins install node agents:
 * elsewhere the controller's own pod is refused, told which list to add its
 * namespace to (its toleration is what a node agent needs).
 */
static void test_daemonset_namespaces(void)
{
	static const char ctrl[] = "system:serviceaccount:kube-system:daemon-set-controller";
	char message[POLICY_MESSAGE_MAX];

	CHECK_INT(daemonset_pod_in("ml", "apps/v1", "true", ctrl, 0, message, sizeof message), POLICY_REJECT);
	CHECK(strstr(message, "DaemonSet pods are exempt only in exempt.daemonSetNamespaces: if an admin "
			      "installed this DaemonSet as a node agent, list ml there") != NULL);
	/* Not the controller's: no hint, a list would not admit it. */
	CHECK_INT(daemonset_pod_in("ml", "apps/v1", "true", "alice@example.com", 0, message, sizeof message),
		  POLICY_REJECT);
	CHECK(strstr(message, "daemonSetNamespaces") == NULL);
}

static void describes(const char *yaml, const char *want)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "t", &err);
	char buf[512];

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	policy_describe_node_names(cfg, buf, sizeof buf);
	if (strstr(buf, want) == NULL)
		fprintf(stderr, "  \"%s\" lacks \"%s\"\n", buf, want);
	CHECK(strstr(buf, want) != NULL);
	config_free(cfg);
}

static void test_node_names_described(void)
{
	describes("", "gpuNodeNames: not set; pool \"gpu\" does not select by kubernetes.azure.com/agentpool");
	describes("gpuNodeNames: [\"aks-gpu*-vmss*\", x]\n", "gpuNodeNames: aks-gpu*-vmss*, x");
	describes("pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
		  "  - {name: a100, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n",
		  "gpuNodeNames: not set; derived from the pools: aks-gput4-*, aks-gpua100-*");
	describes("pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
		  "  - {name: x, nodeSelector: {accelerator: nvidia}}\n",
		  "derived from the pools: aks-gput4-*; pool \"x\" does not select");
	/* Every pool that cannot be told by name is named (pkg/policy/README.md's NAP example has two). */
	describes("placement: fallback\npools:\n"
		  "  - {name: gpu-spot, resources: [nvidia.com/gpu], nodeSelector: {karpenter.sh/nodepool: gpu-spot}}\n"
		  "  - {name: gpu-ondemand, resources: [nvidia.com/gpu], nodeSelector: {karpenter.sh/nodepool: gpu-ondemand}}\n",
		  "gpuNodeNames: not set; pools \"gpu-spot\" and \"gpu-ondemand\" do not select by "
		  "kubernetes.azure.com/agentpool, so their nodes");
	describes("pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
		  "  - {name: a, nodeSelector: {x: a}}\n  - {name: b, nodeSelector: {x: b}}\n"
		  "  - {name: c, nodeSelector: {x: c}}\n",
		  "aks-gput4-*; pools \"a\", \"b\" and \"c\" do not select");
}

/* The decision for a CPU pod pinned by spec.nodeName under a policy. */
static enum policy_decision pinned_to(const char *yaml, const char *node, int *warned)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "t", &err);
	char pod[512];
	struct policy_result res;
	enum policy_decision d;

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return POLICY_ALLOW;
	snprintf(pod, sizeof pod, "{\"spec\":{\"nodeName\":\"%s\",\"containers\":[{\"name\":\"c\"}]}}", node);
	eval(cfg, pod, &res);
	d = res.decision;
	*warned = json_array_size(res.warnings) > 0;
	policy_result_free(&res);
	config_free(cfg);
	return d;
}

static void test_derived_node_names(void)
{
	static const char agentpools[] =
		"pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n";
	int warned;

	CHECK_INT(pinned_to(agentpools, "aks-gput4-12345678-vmss000000", &warned), POLICY_REJECT);
	CHECK_INT(pinned_to(agentpools, "aks-gput4x-12345678-vmss000000", &warned), POLICY_ALLOW);
	CHECK(!warned);                               /* every pool derives: a CPU node */
	CHECK_INT(pinned_to(agentpools, "aks-gput", &warned), POLICY_ALLOW);
	CHECK_INT(pinned_to(agentpools, "gput4-1", &warned), POLICY_ALLOW);
	/* Configured globs replace the derived ones. */
	CHECK_INT(pinned_to("gpuNodeNames: [\"gpu-*\"]\npools:\n  - {name: t4, nodeSelector: "
			    "{kubernetes.azure.com/agentpool: gput4}}\n", "aks-gput4-1-vmss0", &warned), POLICY_ALLOW);
	CHECK(!warned);
	/* Nothing derivable: admitted with a warning. */
	CHECK_INT(pinned_to("", "aks-gpunp-12345678-vmss000000", &warned), POLICY_ALLOW);
	CHECK(warned);
}

static void test_result_free_accepts_null(void)
{
	struct policy_result res;

	memset(&res, 0, sizeof res);
	policy_result_free(NULL);
	policy_result_free(&res);
	CHECK(1);
}

/*
 * The one rule for a label only GPU nodes carry (policy_gpu_label()), which
 * the routes and the GPU stack both judge by: a gpuNodeLabels key, or a
 * pool's key with its value, and a key's AKS alias is the same label (AKS
 * puts agentpool and kubernetes.azure.com/agentpool alike on every node).
 * The stack check once ignored the alias of a gpuNodeLabels key, so a
 * device plugin selecting by agentpool went unwarned while the routes, the
 * admission policies and the match conditions all counted it.
 */
static void test_gpu_label_rule(void)
{
	static const char yaml[] = "gpuNodeLabels: [agentpool, nvidia.com/gpu.present]\n";
	static const char pool[] = "pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n";
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "t", &err);

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	/* gpuNodeLabels: the key, whatever its value, and its alias too. */
	CHECK_INT(policy_gpu_label(cfg, "agentpool", NULL), 1);
	CHECK_INT(policy_gpu_label(cfg, "kubernetes.azure.com/agentpool", NULL), 1);
	CHECK_INT(policy_gpu_label(cfg, "kubernetes.azure.com/agentpool", "anything"), 1);
	CHECK_INT(policy_gpu_label(cfg, "nvidia.com/gpu.present", NULL), 1);
	CHECK_INT(policy_gpu_label(cfg, "gpu.present", NULL), 0);  /* no alias of its own */
	config_free(cfg);

	/* A pool's key: only with a value it selects, under either spelling. */
	cfg = config_load_buffer(pool, sizeof pool - 1, "t", &err);
	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	CHECK_INT(policy_gpu_label(cfg, "kubernetes.azure.com/agentpool", "gput4"), 1);
	CHECK_INT(policy_gpu_label(cfg, "agentpool", "gput4"), 1);
	CHECK_INT(policy_gpu_label(cfg, "agentpool", "system"), 0);
	CHECK_INT(policy_gpu_label(cfg, "agentpool", NULL), 0);  /* the key alone: every node has it */
	config_free(cfg);
}

int main(void)
{
	struct error err = { 0 };

	cfg_default = config_default(&err);
	cfg_pools = config_load_buffer(three_pools, sizeof three_pools - 1, "three-pools", &err);
	if (cfg_default == NULL || cfg_pools == NULL) {
		fprintf(stderr, "config: %s\n", err.msg);
		return 1;
	}
	RUN(test_glob);
	RUN(test_toleration_matching);
	RUN(test_pool_choice);
	RUN(test_no_pool_message_names_largest);
	RUN(test_patch_order_is_deterministic);
	RUN(test_daemonset_contract);
	RUN(test_daemonset_namespaces);
	RUN(test_node_names_described);
	RUN(test_derived_node_names);
	RUN(test_result_free_accepts_null);
	RUN(test_gpu_label_rule);
	config_free(cfg_default);
	config_free(cfg_pools);
	return check_done("policy");
}
