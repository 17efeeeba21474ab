/* Policy configuration: defaults, partial overlays, and errors with file:line. */
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "policy/config.h"
#include "repeat.h"

static struct config *load(const char *yaml, struct error *err)
{
	return config_load_buffer(yaml, strlen(yaml), "policy.yaml", err);
}

static void test_default(void)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);

	CHECK(cfg != NULL);
	CHECK_INT(cfg->mode, CONFIG_MODE_ENFORCE);
	CHECK_STR(cfg->taint_key, "sku");
	CHECK_STR(cfg->taint_value, "gpu");
	CHECK_STR(cfg->taint_effect, "NoSchedule");
	CHECK_INT(cfg->gpu_resources.n, 5);
	CHECK_INT(cfg->n_pools, 1);
	CHECK_STR(cfg->pools[0].name, "gpu");
	CHECK_STR(cfg->pools[0].node_selector.v[0].key, "kubernetes.azure.com/accelerator");
	CHECK_INT(cfg->exempt_daemonsets, 1);
	CHECK_INT(cfg->exempt_namespaces.n, 2);
	CHECK_INT(cfg->gpu_node_labels.n, 4);
	CHECK_INT(cfg->gpu_node_names.n, 0);  /* derived from the pools */
	CHECK_INT(cfg->exempt_daemonset_namespaces.n, 3);
	CHECK_STR(cfg->exempt_daemonset_namespaces.v[0], "kube-system");
	CHECK_STR(cfg->exempt_daemonset_namespaces.v[1], "gpu-operator");
	CHECK_STR(cfg->exempt_daemonset_namespaces.v[2], "gpu-resources");
	CHECK_INT(cfg->exempt_daemonset_controllers.n, 2);
	CHECK_STR(cfg->exempt_daemonset_controllers.v[0], "system:serviceaccount:kube-system:daemon-set-controller");
	CHECK_STR(cfg->exempt_daemonset_controllers.v[1], "system:kube-controller-manager");
	CHECK_INT(cfg->n_exempt_pod_selectors, 0);
	config_free(cfg);
}

static void test_exempt_keys(void)
{
	struct error err = { 0 };
	struct config *cfg = load("exempt:\n"
				  "  daemonSetNamespaces: [monitoring, \"node-*\"]\n"
				  "  daemonSetControllers: [system:serviceaccount:kube-system:my-ds]\n"
				  "  podSelectors:\n"
				  "    - namespaces: [monitoring]\n"
				  "      matchLabels: {app: agent, tier: node}\n", &err);

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	CHECK_INT(cfg->exempt_daemonsets, 1);  /* untouched */
	CHECK_INT(cfg->exempt_daemonset_namespaces.n, 2);
	CHECK_STR(cfg->exempt_daemonset_namespaces.v[1], "node-*");
	CHECK_INT(cfg->exempt_daemonset_controllers.n, 1);
	CHECK_INT(cfg->n_exempt_pod_selectors, 1);
	CHECK_INT(cfg->exempt_pod_selectors[0].namespaces.n, 1);
	CHECK_STR(cfg->exempt_pod_selectors[0].namespaces.v[0], "monitoring");
	CHECK_INT(cfg->exempt_pod_selectors[0].selector.match_labels.n, 2);
	config_free(cfg);
}

static void test_partial_file_keeps_defaults(void)
{
	struct error err = { 0 };
	struct config *cfg = load("mode: warn\nnamespaceModes: {team-a: dryrun}\n", &err);

	CHECK(cfg != NULL);
	CHECK_INT(cfg->mode, CONFIG_MODE_WARN);
	CHECK_INT(config_mode_for(cfg, "team-a"), CONFIG_MODE_DRYRUN);
	CHECK_INT(config_mode_for(cfg, "team-b"), CONFIG_MODE_WARN);
	CHECK_INT(cfg->n_pools, 1);         /* untouched */
	CHECK_STR(cfg->taint_key, "sku");   /* untouched */
	config_free(cfg);

	cfg = load("gpuTaint: {key: nvidia.com/gpu}\nexempt: {daemonSets: false}\n", &err);
	CHECK(cfg != NULL);
	CHECK_STR(cfg->taint_key, "nvidia.com/gpu");
	CHECK_STR(cfg->taint_value, "gpu");  /* sibling field kept */
	CHECK_INT(cfg->exempt_daemonsets, 0);
	CHECK_INT(cfg->exempt_namespaces.n, 2);
	config_free(cfg);
}

static void test_empty_file_is_default(void)
{
	struct error err = { 0 };
	struct config *cfg = load("", &err);

	CHECK(cfg != NULL);
	config_free(cfg);
	cfg = load("# only a comment\n", &err);
	CHECK(cfg != NULL);
	config_free(cfg);
}

static void expect_error(const char *yaml, const char *fragment)
{
	struct error err = { 0 };
	struct config *cfg = load(yaml, &err);

	CHECK(cfg == NULL);
	CHECK_INT(err.kind, ERROR_CONFIG);
	if (strstr(err.msg, fragment) == NULL)
		fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err.msg, fragment);
	CHECK(strstr(err.msg, fragment) != NULL);
	config_free(cfg);
}

static void test_errors_name_file_line_field(void)
{
	expect_error("mode: enforce\nmodee: warn\n", "policy.yaml:2:1: modee: unknown field");
	expect_error("mode: strict\n", "policy.yaml:1:7: mode: must be one of enforce, warn, dryrun");
	expect_error("pools:\n  - name: a\n", "pools[0]: nodeSelector is required");
	expect_error("pools:\n  - nodeSelector: {a: b}\n", "pools[0]: name is required");
	expect_error("pools: []\n", "pools: must list from 1 to 64 pools");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, maxGPUsPerPod: -1}\n",
		     "pools[0].maxGPUsPerPod: must be a whole number");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, maxGPUsPerPod: 2.5}\n", "maxGPUsPerPod");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}}\n  - {name: a, nodeSelector: {c: d}}\n",
		     "two pools are named \"a\"");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, color: red}\n", "pools[0].color: unknown field");
	expect_error("gpuResources: nvidia.com/gpu\n", "gpuResources: must be a list of strings");
	expect_error("gpuResources: []\n", "gpuResources: must list at least one resource");
	expect_error("gpuTaint: {effect: Sometimes}\n", "gpuTaint.effect");
	expect_error("exempt: {daemonSets: maybe}\n", "exempt.daemonSets: must be true or false");
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [a], matchLabels: {}}\n",
		     "podSelectors[0]: matchLabels or matchExpressions is required");
	/* Labels are the workload's own: an entry must say where it applies, and why is said. */
	expect_error("exempt:\n  podSelectors:\n    - matchLabels: {app: agent}\n",
		     "policy.yaml:3:7: exempt.podSelectors[0]: namespaces is required and must not be empty: a "
		     "workload sets its own labels");
	/* Given but empty: the error points at the empty value, as for a pool's nodeSelector. */
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [], matchLabels: {app: agent}}\n",
		     "policy.yaml:3:20: exempt.podSelectors[0]: namespaces is required");
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [a], matchLabels: {b: c}, team: x}\n",
		     "exempt.podSelectors[0].team: unknown field (known: namespaces, matchLabels, matchExpressions)");
	expect_error("exempt:\n  podSelectors: [{namespaces: [a], matchLabels: {a: b}}, x]\n",
		     "podSelectors[1]: must be a map");
	expect_error("exempt: {daemonSetNamespaces: monitoring}\n", "exempt.daemonSetNamespaces: must be a list");
	expect_error("exempt: {daemonSetControllers: [\"\"]}\n", "exempt.daemonSetControllers[0]: must not be empty");
	expect_error("namespaceModes: {a: loud}\n", "namespaceModes.a: must be one of");
	expect_error("mode: warn\nmode: dryrun\n", "duplicate key \"mode\"");
	expect_error("- a\n- b\n", "must be a map of fields");
	expect_error("mode: [unclosed\n", "not valid YAML");
	expect_error("mode: warn\n---\nmode: dryrun\n", "one YAML document");
}

/* pools[].pricePerNodeHour and gpusPerNode: read, bounded, and the cheapest-per-GPU order advised. */
static void test_pool_prices(void)
{
	struct error err = { 0 };
	char buf[1024];
	struct config *cfg = load("pools:\n"
				  "  - {name: t4, nodeSelector: {a: t4}, pricePerNodeHour: 0.526, gpusPerNode: 1}\n"
				  "  - {name: a100, nodeSelector: {a: a100}, pricePerNodeHour: 27.197, gpusPerNode: 8}\n"
				  "  - {name: any, nodeSelector: {a: x}}\n"
				  "  - {name: h100, nodeSelector: {a: h100}, pricePerNodeHour: 98.32}\n", &err);

	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	CHECK_INT(cfg->pools[0].priced, 1);
	CHECK(cfg->pools[1].price_per_node_hour > 27.196 && cfg->pools[1].price_per_node_hour < 27.198);
	CHECK_INT(cfg->pools[1].gpus_per_node, 8);
	CHECK_INT(cfg->pools[2].priced, 0);
	CHECK_INT(cfg->pools[3].gpus_per_node, 0);
	/* In order, and h100 has no gpusPerNode: nothing to say. */
	CHECK_INT(config_warnings(cfg, buf, sizeof buf), 0);
	CHECK_STR(buf, "");
	config_free(cfg);

	cfg = load("pools:\n"
		   "  - {name: a100, nodeSelector: {a: a100}, pricePerNodeHour: 27.197, gpusPerNode: 8}\n"
		   "  - {name: h100, nodeSelector: {a: h100}, pricePerNodeHour: 98.32, gpusPerNode: 8}\n"
		   "  - {name: t4, nodeSelector: {a: t4}, pricePerNodeHour: 0.526, gpusPerNode: 1}\n", &err);
	CHECK(cfg != NULL);
	if (cfg == NULL)
		return;
	CHECK_INT(config_warnings(cfg, buf, sizeof buf), 1);
	CHECK(strstr(buf, "pools[2] (\"t4\", 0.526 per GPU-hour) is cheaper per GPU than pools[0] (\"a100\"") != NULL);
	CHECK_INT(config_warnings(cfg, buf, 8), 1);  /* cut, still terminated */
	CHECK_INT(strlen(buf), 7);
	config_free(cfg);

	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, pricePerNodeHour: -1}\n",
		     "pools[0].pricePerNodeHour: must be a price per hour");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, pricePerNodeHour: 1e3}\n", "pricePerNodeHour");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, pricePerNodeHour: 1.2.3}\n", "pricePerNodeHour");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, pricePerNodeHour: 2000000}\n", "pricePerNodeHour");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, pricePerNodeHour: [1]}\n", "pricePerNodeHour");
	/* Scalar types are strict, as for every other number: a quoted price is a string. */
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, pricePerNodeHour: \"98.32\"}\n",
		     "pools[0].pricePerNodeHour: must be a price per hour: a number from 0 to 1000000, e.g. 98.32, "
		     "not a string (remove the quotes)");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, gpusPerNode: \"8\"}\n",
		     "not a string (remove the quotes)");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, gpusPerNode: 0}\n",
		     "pools[0].gpusPerNode: must be a whole number from 1 to 1024");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, gpusPerNode: 2000}\n", "gpusPerNode");
}

/* Every error of a file, each with its own line:column, in file order; err sums them up. */
/* A required field of the wrong type is one error (its type), not two. */
static void test_required_field_one_error(void)
{
	static const char *const yaml[] = {
		"exempt:\n  podSelectors: [{namespaces: ml, matchLabels: {app: agent}}]\n",
		"exempt:\n  podSelectors: [{namespaces: [ml], matchLabels: [app]}]\n",
		"pools:\n  - {name: a, nodeSelector: [gpu]}\n",
	};
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	size_t i;

	for (i = 0; i < sizeof yaml / sizeof yaml[0]; i++) {
		CHECK(config_load_buffer_all(yaml[i], strlen(yaml[i]), "p.yaml", &errs, &err) == NULL);
		if (errs.total != 1)
			fprintf(stderr, "  %s: %zu errors, first \"%s\"\n", yaml[i], errs.total,
				errs.n ? errs.v[0].text : "");
		CHECK_INT(errs.total, 1);
		CHECK(strstr(err.msg, "must be a") != NULL);
	}
	config_errors_free(&errs);
}

/* Pools v2: tolerations, namespaces, podSelector, placement, deferLabels. */
static void test_pool_access(void)
{
	struct error err = { 0 };
	struct config *cfg = load("placement: fallback\n"
				  "deferLabels: [kueue.x-k8s.io/queue-name, example.com/queue]\n"
				  "pools:\n"
				  "  - name: t4-spot\n"
				  "    nodeSelector: {kubernetes.azure.com/agentpool: gput4spot}\n"
				  "    tolerations:\n"
				  "      - {key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}\n"
				  "      - {key: example.com/x, operator: Exists}\n"
				  "    namespaces: [ml-*, batch]\n"
				  "    podSelector:\n"
				  "      matchLabels: {gpu-admission/interruptible: \"true\"}\n"
				  "      matchExpressions:\n"
				  "        - {key: tier, operator: NotIn, values: [prod]}\n"
				  "        - {key: team, operator: Exists}\n"
				  "  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n", &err);

	CHECK(cfg != NULL);
	if (cfg == NULL) {
		fprintf(stderr, "  %s\n", err.msg);
		return;
	}
	CHECK_INT(cfg->placement, CONFIG_PLACEMENT_FALLBACK);
	CHECK_STR(config_placement_name(cfg->placement), "fallback");
	CHECK_STR(config_pool_key(cfg), "kubernetes.azure.com/agentpool");
	CHECK_INT(cfg->defer_labels.n, 2);
	CHECK_INT(cfg->pools[0].tolerations.n, 2);
	CHECK_STR(cfg->pools[0].tolerations.v[0].op, "Equal");  /* the API's default */
	CHECK_STR(cfg->pools[0].tolerations.v[1].value, "");
	CHECK_STR(cfg->pools[0].tolerations.v[1].effect, "");
	CHECK_INT(cfg->pools[0].namespaces.n, 2);
	CHECK_INT(cfg->pools[0].pod_selector.match_labels.n, 1);
	CHECK_INT(cfg->pools[0].pod_selector.n_match_expressions, 2);
	CHECK_STR(cfg->pools[0].pod_selector.match_expressions[0].op, "NotIn");
	CHECK_INT(cfg->pools[1].namespaces.n, 0);
	config_free(cfg);

	/* The defaults: pinned, Kueue's queue label. */
	cfg = load("", &err);
	CHECK(cfg != NULL);
	if (cfg != NULL) {
		CHECK_INT(cfg->placement, CONFIG_PLACEMENT_PINNED);
		CHECK_INT(cfg->defer_labels.n, 1);
		CHECK_STR(cfg->defer_labels.v[0], "kueue.x-k8s.io/queue-name");
		CHECK_STR(config_pool_key(cfg), "kubernetes.azure.com/accelerator");
	}
	config_free(cfg);

	/* fallback: one and the same key for every pool; each error at the pool's nodeSelector. */
	expect_error("placement: fallback\npools:\n  - {name: a, nodeSelector: {kubernetes.azure.com/agentpool: a}}\n"
		     "  - {name: b, nodeSelector: {karpenter.sh/nodepool: b}}\n",
		     "policy.yaml:4:29: pools[1].nodeSelector: placement fallback needs every pool to select by the "
		     "same label key: pool \"b\" selects by karpenter.sh/nodepool, pools[0] by "
		     "kubernetes.azure.com/agentpool");
	expect_error("placement: fallback\npools:\n  - {name: a, nodeSelector: {k: a, accelerator: nvidia}}\n",
		     "policy.yaml:3:29: pools[0].nodeSelector: placement fallback needs every pool to select by "
		     "exactly one label (pool \"a\" has 2)");

	expect_error("placement: spread\n", "placement: must be pinned or fallback");
	/* Unknown keys, at every level. */
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, tolerations: [{key: k, seconds: 5}]}\n",
		     "pools[0].tolerations[0].seconds: unknown field (known: key, operator, value, effect)");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchLabel: {a: b}}}\n",
		     "pools[0].podSelector.matchLabel: unknown field; did you mean matchLabels? (known: matchLabels, "
		     "matchExpressions)");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchExpressions: [{key: a, "
		     "operator: Exists, value: [b]}]}}\n", "matchExpressions[0].value: unknown field");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, namespace: [x]}\n",
		     "pools[0].namespace: unknown field; did you mean namespaces? (known: name, nodeSelector, "
		     "resources, deviceClasses, maxGPUsPerPod, pricePerNodeHour, gpusPerNode, tolerations, "
		     "namespaces, podSelector)");
	expect_error("deferLabel: [a]\n", "deferLabel: unknown field; did you mean deferLabels? (known: ");
	/* A typo of a known field says which; a field far from every one lists them all. */
	expect_error("placment: {}\n", "placment: unknown field; did you mean placement? (known: mode, ");
	expect_error("gpuResorces: [nvidia.com/gpu]\n", "gpuResorces: unknown field; did you mean gpuResources?");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelectr: {}}\n",
		     "pools[0].podSelectr: unknown field; did you mean podSelector? (known: name, ");
	expect_error("colour: red\n", "colour: unknown field (known: mode, ");
	/* Bad globs and label text. */
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, namespaces: [Team-A]}\n",
		     "policy.yaml:2:50: pools[0].namespaces[0]: \"Team-A\" can never match a namespace");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, namespaces: [\"ml/*\"]}\n", "can never match");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, namespaces: [\"\"]}\n", "namespaces[0]: must not be empty");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchExpressions: [{key: a, "
		     "operator: In}]}}\n", "operator In needs at least one value");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchExpressions: [{key: a, "
		     "operator: Exists, values: [x]}]}}\n", "operator Exists takes no values");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchExpressions: [{key: a, "
		     "operator: Gt, values: [\"1\"]}]}}\n", "operator \"Gt\" is not one of In, NotIn, Exists, DoesNotExist");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchLabels: {\"a b\": c}}}\n",
		     "is not a label");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, podSelector: {matchExpressions: [{key: a, "
		     "operator: In, values: [\"-x\"]}]}}\n", "matchExpressions[0].values[0]: \"-x\" is not a label value");
	expect_error("deferLabels: [\"/queue\"]\n", "deferLabels[0]: \"/queue\" is not a label key");
	/* Tolerations as the API server checks them, and never a wildcard. */
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, tolerations: [{operator: Exists}]}\n",
		     "tolerations[0]: key is required");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, tolerations: [{key: k, operator: Exists, value: v}]}\n",
		     "value must be empty with operator Exists");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, tolerations: [{key: k, operator: Gt}]}\n",
		     "operator must be Equal or Exists");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, tolerations: [{key: k, effect: Never}]}\n",
		     "effect must be NoSchedule");
	{
		char yaml[4096] = "pools:\n  - {name: a, nodeSelector: {a: b}, tolerations: [";
		int i;

		for (i = 0; i < 33; i++)
			strcat(yaml, i ? ", {key: k}" : "{key: k}");
		strcat(yaml, "]}\n");
		expect_error(yaml, "pools[0].tolerations: more than 32 tolerations");
	}
	/* exempt.podSelectors shares the reader: matchExpressions there too, checked alike. */
	cfg = load("exempt:\n  podSelectors:\n    - {namespaces: [monitoring], matchExpressions: [{key: app, "
		   "operator: In, values: [agent, exporter]}]}\n", &err);
	CHECK(cfg != NULL);
	if (cfg != NULL)
		CHECK_INT(cfg->exempt_pod_selectors[0].selector.n_match_expressions, 1);
	config_free(cfg);
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [m], matchExpressions: [{key: a, operator: In}]}\n",
		     "exempt.podSelectors[0].matchExpressions[0]: operator In needs at least one value");
}

/*
 * Every pools v2 error is in the list with its own place: a rule over several
 * fields (placement fallback against the pools' keys) at the field it names,
 * an entry of a list at the entry, a toleration's or requirement's field at
 * that field. Never file:0:0, and an invalid field is one error, not two.
 */
/* Loading yaml fails with exactly the errors want[0..n) (each a prefix), in order. */
static void expect_errors(const char *yaml, const char *const *want, size_t n)
{
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	struct config *cfg = config_load_buffer_all(yaml, strlen(yaml), "policy.yaml", &errs, &err);
	size_t i;

	CHECK(cfg == NULL);
	CHECK_INT(errs.total, n);
	for (i = 0; i < errs.n; i++)
		if (i >= n || strncmp(errs.v[i].text, want[i], strlen(want[i])) != 0)
			fprintf(stderr, "  error %zu: \"%s\", want \"%s...\"\n", i, errs.v[i].text, i < n ? want[i] : "");
	for (i = 0; i < n && i < errs.n; i++)
		CHECK(strncmp(errs.v[i].text, want[i], strlen(want[i])) == 0);
	config_errors_free(&errs);
	config_free(cfg);
}

static void test_pool_errors_placed(void)
{
	static const char yaml[] =
		"placement: fallback\n"
		"deferLabels: [kueue.x-k8s.io/queue-name, \"/queue\"]\n"                        /* 2:42 */
		"pools:\n"
		"  - {name: a}\n"                                                                   /* 4:5 */
		"  - {name: b, nodeSelector: {k: b}, namespaces: [ml, Team-A]}\n"                  /* 5:54 */
		"  - {name: c, nodeSelector: {j: c}}\n"                                             /* 6:29 */
		"  - name: d\n"
		"    nodeSelector: {k: d}\n"
		"    tolerations:\n"
		"      - {key: 5, operator: Exists}\n"                                              /* 10:15 */
		"      - {key: t, operator: Exists, value: v, effect: Never}\n"                     /* 11:43, 11:54 */
		"    podSelector:\n"
		"      matchLabels: {app: \"a b\"}\n"                                               /* 13:26 */
		"      matchExpressions:\n"
		"        - {key: x, operator: Gt, values: [\"1\"]}\n"                                /* 15:30 */
		"        - {key: w, operator: In, values: [ok, \"-x\"]}\n"                            /* 16:47 */
		"        - {key: z, operator: In}\n"                                                 /* 17:11 */
		"placement: pinned\n";                                                              /* 18:1 */
	static const char *const want[] = {
		"policy.yaml:2:42: deferLabels[1]: \"/queue\" is not a label key: it must have a prefix of 1 to 253 "
		"characters before '/'",
		"policy.yaml:4:5: pools[0]: nodeSelector is required and must not be empty",
		"policy.yaml:5:54: pools[1].namespaces[1]: \"Team-A\" can never match a namespace",
		"policy.yaml:6:29: pools[2].nodeSelector: placement fallback needs every pool to select by the same "
		"label key: pool \"c\" selects by j, pools[1] by k",
		"policy.yaml:10:15: pools[3].tolerations[0].key: must be a string, not a number (quote it)",
		"policy.yaml:11:43: pools[3].tolerations[1]: value must be empty with operator Exists",
		"policy.yaml:11:54: pools[3].tolerations[1]: effect must be NoSchedule, PreferNoSchedule or NoExecute",
		"policy.yaml:13:26: pools[3].podSelector.matchLabels.app: \"a b\" is not a label value: it may hold "
		"only letters, digits, '-', '_' and '.'",
		"policy.yaml:15:30: pools[3].podSelector.matchExpressions[0]: operator \"Gt\" is not one of In, NotIn, "
		"Exists, DoesNotExist",
		"policy.yaml:16:47: pools[3].podSelector.matchExpressions[1].values[1]: \"-x\" is not a label value: it "
		"must begin and end with a letter or digit",
		"policy.yaml:17:11: pools[3].podSelector.matchExpressions[2]: operator In needs at least one value",
		"policy.yaml:18:1: (top level): duplicate key \"placement\"",
	};
	struct error err = { 0 };
	struct config *cfg;

	expect_errors(yaml, want, sizeof want / sizeof want[0]);

	/* A missing selector is at the entry; an empty one at itself; one of the wrong type only says so. */
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [m]}\n",
		     "policy.yaml:3:7: exempt.podSelectors[0]: matchLabels or matchExpressions is required");
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [m], matchExpressions: []}\n",
		     "policy.yaml:3:43: exempt.podSelectors[0]: matchLabels or matchExpressions is required");
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [m], matchLabels: [a]}\n",
		     "policy.yaml:3:38: exempt.podSelectors[0].matchLabels: must be a map of strings");
	cfg = load("exempt:\n  podSelectors:\n    - {namespaces: [m], matchLabels: [a]}\n", &err);
	CHECK(cfg == NULL && strstr(err.msg, "more") == NULL);  /* that error alone */
	config_free(cfg);
}

/* workloads: custom resources only, each once, every problem at its place. */
static void test_workloads(void)
{
	static const char yaml[] =
		"workloads:\n"
		"  - {group: kubeflow.org, kind: PyTorchJob}\n"
		"  - {group: apps, kind: Deployment}\n"                                   /* 3:13 */
		"  - {group: ray.io}\n"                                                   /* 4:5 */
		"  - {group: ray.io, kind: \"Ray_Cluster\", versions: [V1, v1]}\n"       /* 5:27, 5:53 */
		"  - {group: kubeflow.org, kind: PyTorchJob}\n"                           /* 6:5 */
		"  - {group: 1, kind: X, colour: red}\n"                                  /* 7:13, 7:25 */
		"  - x\n"                                                                  /* 8:5 */
		"  - {group: b.io, kind: TrainingBatch, resource: TrainingBatches}\n";    /* 9:50 */
	static const char *const want[] = {
		"policy.yaml:3:13: workloads[1]: group \"apps\" has no dot: list custom resources only",
		"policy.yaml:4:5: workloads[2]: kind is required",
		"policy.yaml:5:27: workloads[3]: kind \"Ray_Cluster\" is not a kind: it may hold only letters, digits and '-'",
		"policy.yaml:5:53: workloads[3].versions[0]: \"V1\" is not an API version",
		"policy.yaml:6:5: workloads[4]: lists kubeflow.org PyTorchJob again (workloads[0])",
		"policy.yaml:7:13: workloads[5].group: must be a string, not a number (quote it)",
		"policy.yaml:7:25: workloads[5].colour: unknown field (known: group, kind, versions, resource)",
		"policy.yaml:8:5: workloads[6]: must be a map with group, kind, versions and resource",
		"policy.yaml:9:50: workloads[7]: resource \"TrainingBatches\" is not a CRD's plural: it may hold only "
		"lower-case letters, digits and '-'",
	};
	struct error err = { 0 };
	struct config *cfg;

	expect_errors(yaml, want, sizeof want / sizeof want[0]);

	cfg = load("workloads:\n  - {group: kubeflow.org, kind: PyTorchJob}\n"
		   "  - {group: serving.kserve.io, kind: LLMInferenceService, versions: [v1alpha1]}\n"
		   "  - {group: b.io, kind: TrainingBatch, resource: trainingbatches}\n", &err);
	CHECK(cfg != NULL);
	if (cfg != NULL) {
		CHECK_INT(cfg->n_workloads, 3);
		CHECK(cfg->workloads[0].resource == NULL);  /* the chart's default: pytorchjobs */
		CHECK_STR(cfg->n_workloads == 3 ? cfg->workloads[2].resource : "", "trainingbatches");
		CHECK(config_workload_find(cfg, "kubeflow.org", "v1", "PyTorchJob") != NULL);
		CHECK(config_workload_find(cfg, "kubeflow.org", "v2", "PyTorchJob") != NULL);  /* every version */
		CHECK(config_workload_find(cfg, "kubeflow.org", "v1", "TFJob") == NULL);
		CHECK(config_workload_find(cfg, "serving.kserve.io", "v1alpha1", "LLMInferenceService") != NULL);
		CHECK(config_workload_find(cfg, "serving.kserve.io", "v1beta1", "LLMInferenceService") == NULL);
		CHECK(config_workload_find(cfg, "", "v1", "Deployment") == NULL);
	}
	config_free(cfg);
	cfg = config_default(&err);
	CHECK(cfg != NULL && cfg->n_workloads == 0);  /* the default lists none: its examples are comments */
	config_free(cfg);
}

static void test_all_errors_listed(void)
{
	static const char yaml[] =
		"mode: strict\n"                                   /* 1:7 */
		"color: red\n"                                     /* 2:1 */
		"namespaceModes: {a: loud, b: dryrun}\n"           /* 3:21 */
		"gpuTaint: {effect: Sometimes}\n"                  /* 4:20 (a rule over fields) */
		"pools:\n"
		"  - {name: t4, nodeSelector: {a: b}, maxGPUsPerPod: lots}\n"   /* 6:53 */
		"  - {name: t4, nodeSelector: {c: d}}\n"           /* 7:12 (duplicate name) */
		"  - {nodeSelector: {e: f}, resources: nvidia}\n"  /* 8:5 name, 8:39 resources */
		"exempt:\n"
		"  daemonSets: \"true\"\n"                         /* 10:15 */
		"  podSelectors: [{namespaces: [ml], matchLabels: {}}]\n"; /* 11:50 */
	static const char *const want[] = {
		"policy.yaml:1:7: mode: must be one of enforce, warn, dryrun",
		"policy.yaml:2:1: color: unknown field",
		"policy.yaml:3:21: namespaceModes.a: must be one of enforce, warn, dryrun",
		"policy.yaml:4:20: gpuTaint.effect: must be NoSchedule, PreferNoSchedule or NoExecute",
		"policy.yaml:6:53: pools[0].maxGPUsPerPod: must be a whole number from 0 to 1000000",
		"policy.yaml:7:12: pools[1].name: two pools are named \"t4\" (pools[0] too)",
		"policy.yaml:8:5: pools[2]: name is required",
		"policy.yaml:8:39: pools[2].resources: must be a list of strings",
		"policy.yaml:10:15: exempt.daemonSets: must be true or false, not a string (remove the quotes)",
		"policy.yaml:11:50: exempt.podSelectors[0]: matchLabels or matchExpressions is required and "
		"must not be empty",
	};
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	struct config *cfg = config_load_buffer_all(yaml, strlen(yaml), "policy.yaml", &errs, &err);
	size_t i, n = sizeof want / sizeof want[0];

	CHECK(cfg == NULL);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK_STR(err.msg, "policy.yaml: 10 errors");
	CHECK_INT(errs.total, n);
	CHECK_INT(errs.n, n);
	for (i = 0; i < n && i < errs.n; i++) {
		if (strncmp(errs.v[i].text, want[i], strlen(want[i])) != 0)
			fprintf(stderr, "  error %zu: \"%s\", want \"%s...\"\n", i, errs.v[i].text, want[i]);
		CHECK(strncmp(errs.v[i].text, want[i], strlen(want[i])) == 0);
		CHECK(errs.v[i].line > 0 && errs.v[i].column > 0);
	}
	config_errors_free(&errs);
	config_errors_free(NULL);

	/* Without a list, err holds the first error and says how many more there are. */
	cfg = load(yaml, &err);
	CHECK(cfg == NULL);
	CHECK(strncmp(err.msg, want[0], strlen(want[0])) == 0);
	CHECK(strstr(err.msg, "(and 9 more") != NULL);

	/* One error alone is err itself; a valid file leaves the list empty. */
	cfg = config_load_buffer_all("mode: loud\n", 11, "p.yaml", &errs, &err);
	CHECK(cfg == NULL);
	CHECK_INT(errs.n, 1);
	CHECK_STR(err.msg, "p.yaml:1:7: mode: must be one of enforce, warn, dryrun");
	cfg = config_load_buffer_all("mode: warn\n", 11, "p.yaml", &errs, &err);
	CHECK(cfg != NULL);
	CHECK_INT(errs.total, 0);
	config_free(cfg);
	config_errors_free(&errs);
}

/* Types as Kubernetes reads YAML: a quoted "true" is a string, a plain 1 a number. */
static void test_wrong_types(void)
{
	struct error err = { 0 };
	struct config *cfg;

	expect_error("exempt: {daemonSets: \"true\"}\n", "exempt.daemonSets: must be true or false, not a string");
	expect_error("exempt: {daemonSets: 1}\n", "must be true or false, not a number");
	expect_error("pools:\n  - {name: a, nodeSelector: {a: b}, maxGPUsPerPod: \"8\"}\n",
		     "pools[0].maxGPUsPerPod: must be a whole number from 0 to 1000000, not a string");
	expect_error("pools:\n  - {name: 100, nodeSelector: {a: b}}\n", "pools[0].name: must be a string, not a number");
	expect_error("pools:\n  - {name: a, nodeSelector: {gpu: true}}\n",
		     "pools[0].nodeSelector.gpu: must be a string, not a boolean (quote it)");
	expect_error("gpuTaint: {key: [sku]}\n", "gpuTaint.key: must be a string, not a list");
	expect_error("pools:\n  - {name: a, nodeSelector: {}}\n", "pools[0]: nodeSelector is required");
	expect_error("mode: warn\n---\nmode: [\n", "not valid YAML");

	cfg = load("mode: \"warn\"\nexempt: {daemonSets: no}\ngpuTaint: {value: \"\"}\n"
		   "pools:\n  - {name: \"100\", nodeSelector: {gpu: \"true\", '1': x}, maxGPUsPerPod: 0x8}\n", &err);
	CHECK(cfg != NULL);
	if (cfg != NULL) {
		CHECK_INT(cfg->mode, CONFIG_MODE_WARN);
		CHECK_INT(cfg->exempt_daemonsets, 0);
		CHECK_STR(cfg->taint_value, "");
		CHECK_STR(cfg->pools[0].name, "100");
		CHECK_STR(cfg->pools[0].node_selector.v[0].value, "true");
		CHECK_INT(cfg->pools[0].max_gpus_per_pod, 8);
	}
	config_free(cfg);
}

/* A map too large to be a policy is refused before its keys are compared pairwise. */
static void test_huge_map(void)
{
	struct error err = { 0 };
	size_t cap = 40000, o = 0, i;
	char *buf = malloc(cap);

	for (i = 0; i < 2000; i++)
		o += (size_t)snprintf(buf + o, cap - o, "k%zu: 1\n", i);
	CHECK(load(buf, &err) == NULL);
	CHECK(strstr(err.msg, "policy.yaml:1:1: (top level): more than 1024 fields") != NULL);
	free(buf);
}

static void test_default_yaml_round_trips(void)
{
	struct error err = { 0 };
	const char *text = config_default_yaml();
	struct config *cfg = config_load_buffer(text, strlen(text), "default", &err);

	CHECK(cfg != NULL);
	CHECK(strstr(text, "# ") != NULL); /* commented */
	config_free(cfg);
}

static void test_missing_file(void)
{
	struct error err = { 0 };

	CHECK(config_load_file("/nonexistent/policy.yaml", &err) == NULL);
	CHECK_INT(err.kind, ERROR_NOT_FOUND);
	CHECK(strstr(err.msg, "/nonexistent/policy.yaml") != NULL);
	config_free(NULL);
}

/* Hostile policy files: a clear error (or a valid config), bounded memory, no crash. */
static void test_hostile_yaml(void)
{
	struct error err = { 0 };
	struct config *cfg;
	char *buf = malloc(200000);
	size_t o = 0;
	int i;

	/*
	 * Billion laughs: aliases are references in libyaml's document, but the
	 * loader walks each as a copy of what it names; counted so, the file is
	 * refused before the document is built.
	 */
	o = (size_t)sprintf(buf, "a: &a [x, x, x, x, x, x, x, x, x, x]\n");
	for (i = 1; i < 9; i++)
		o += (size_t)sprintf(buf + o, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n",
				     'a' + i, 'a' + i, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1,
				     'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1);
	cfg = config_load_buffer(buf, o, "laughs.yaml", &err);
	CHECK(cfg == NULL);
	CHECK(strstr(err.msg, "more than 20000 YAML nodes") != NULL);
	/* The same bomb where a list of strings is expected. */
	o += (size_t)sprintf(buf + o, "gpuResources: *i\n");
	cfg = config_load_buffer(buf, o, "laughs.yaml", &err);
	CHECK(cfg == NULL);
	/* 10,000-deep flow nesting. */
	o = (size_t)sprintf(buf, "mode: ");
	for (i = 0; i < 10000; i++)
		buf[o++] = '[';
	for (i = 0; i < 10000; i++)
		buf[o++] = ']';
	buf[o++] = '\n';
	cfg = config_load_buffer(buf, o, "deep.yaml", &err);
	CHECK(cfg == NULL);
	CHECK(strstr(err.msg, "deep.yaml:1:") != NULL);
	/* A 150 KB scalar where a string is expected: refused by length. */
	o = (size_t)sprintf(buf, "pools:\n  - name: ");
	memset(buf + o, 'p', 150000);
	o += 150000;
	o += (size_t)sprintf(buf + o, "\n    nodeSelector: {a: b}\n");
	cfg = config_load_buffer(buf, o, "long.yaml", &err);
	CHECK(cfg == NULL);
	CHECK(strstr(err.msg, "long.yaml:2:11: pools[0].name: longer than") != NULL);
	/* Invalid UTF-8 and a NUL byte. */
	cfg = config_load_buffer("mode: \xff\xfe\n", 9, "utf8.yaml", &err);
	CHECK(cfg == NULL);
	cfg = config_load_buffer("mode: warn\0\n", 12, "nul.yaml", &err);
	CHECK(cfg == NULL);
	free(buf);
}


/*
 * What libyaml's own costs would make of a policy that arrives from the
 * network (the webhook judges its ConfigMap): each refused, with its place,
 * before libyaml builds a document. Before the bounds: a 90 MB document for
 * 1 MiB of "[a,a,...", minutes for 500,000 levels of flow nesting, 18 s for
 * 88,000 anchors, 5 s for 40,000 %TAG directives.
 */
static void test_yaml_bounds(void)
{
	static const struct {
		const char *name, *head, *unit, *tail;
		size_t n;
		const char *want;
	} cases[] = {
		{ "dense", "gpuResources: [", "a,", "a]\n", 524000,
		  "dense.yaml:1:40010: (document): more than 20000 YAML nodes" },
		{ "deep", "mode: ", "[", "\n", 500000, "deep.yaml:1:38: (document): lists and maps nest deeper than 32" },
		{ "anchors", "gpuResources:\n", "- &a# x\n", "", 88000, "anchors.yaml:66:3: (document): more than 64 anchors" },
		{ "directives", "", "%TAG !a#! tag:x,2000:\n", "---\nmode: warn\n", 40000,
		  "directives.yaml:17:1: (document): more than 16 lines start with % (YAML directives)" },
	};
	struct error err = { 0 };
	size_t i, len = 0;

	for (i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char name[32], *buf = repeat_text(cases[i].head, cases[i].unit, cases[i].n, cases[i].tail, SIZE_MAX,
						  &len);
		struct config *cfg;

		CHECK(buf != NULL);
		if (buf == NULL)
			continue;
		snprintf(name, sizeof name, "%s.yaml", cases[i].name);
		cfg = config_load_buffer(buf, len, name, &err);
		CHECK(cfg == NULL);
		if (strncmp(err.msg, cases[i].want, strlen(cases[i].want)) != 0)
			fprintf(stderr, "  %s: %s\n", cases[i].name, err.msg);
		CHECK(strncmp(err.msg, cases[i].want, strlen(cases[i].want)) == 0);
		config_free(cfg);
		free(buf);
	}
}

/* Within the bounds a policy loads as before: 20,000 nodes, 32 levels, 64 anchors and aliases to them. */
static void test_yaml_bounds_kept(void)
{
	struct error err = { 0 };
	struct config *cfg;
	char *buf, *p;
	size_t len = 0, i;

	/* 64 anchored namespaces, each named again by an alias: 128 list entries. */
	buf = malloc(64 * 40 + 64);
	CHECK(buf != NULL);
	if (buf == NULL)
		return;
	p = buf + sprintf(buf, "exempt:\n  namespaces:\n");
	for (i = 0; i < 64; i++)
		p += sprintf(p, "  - &n%zu team-%zu\n", i, i);
	for (i = 0; i < 64; i++)
		p += sprintf(p, "  - *n%zu\n", i);
	cfg = config_load_buffer(buf, (size_t)(p - buf), "anchors.yaml", &err);
	CHECK(cfg != NULL);
	CHECK_INT(cfg ? cfg->exempt_namespaces.n : 0, 128);
	config_free(cfg);
	free(buf);
	/* 32 levels (the top-level map, and 31 lists in it): refused for its type, not its depth. */
	buf = repeat_text("mode: ", "[", 31, "", SIZE_MAX, &len);
	CHECK(buf != NULL);
	if (buf != NULL) {
		char *deep = malloc(len + 33);

		CHECK(deep != NULL);
		if (deep != NULL) {
			memcpy(deep, buf, len);
			memset(deep + len, ']', 31);
			deep[len + 31] = '\n';
			cfg = config_load_buffer(deep, len + 32, "deep.yaml", &err);
			CHECK(cfg == NULL);
			CHECK(strstr(err.msg, "deep.yaml:1:7: mode: must be") != NULL);
			free(deep);
		}
		free(buf);
	}
	/* 1024 entries of a list (the loader's own cap), well under the node bound. */
	buf = repeat_text("gpuNodeNames: [", "aks-gpu-*,", 1023, "aks-gpu-*]\n", SIZE_MAX, &len);
	CHECK(buf != NULL);
	cfg = buf ? config_load_buffer(buf, len, "list.yaml", &err) : NULL;
	CHECK(cfg != NULL);
	CHECK_INT(cfg ? cfg->gpu_node_names.n : 0, 1024);
	config_free(cfg);
	free(buf);
}

/* A buffer over 1 MiB is refused as a file over 1 MiB is. */
static void test_buffer_too_large(void)
{
	struct error err = { 0 };
	size_t len = 0;
	char *buf = repeat_text("# ", "x", 1024 * 1024, "\n", SIZE_MAX, &len);

	CHECK(buf != NULL);
	CHECK(buf == NULL || config_load_buffer(buf, len, "big.yaml", &err) == NULL);
	CHECK_INT(err.kind, ERROR_TOO_LARGE);
	CHECK_STR(err.msg, "big.yaml: larger than 1 MiB");
	free(buf);
}

int main(void)
{
	RUN(test_default);
	RUN(test_partial_file_keeps_defaults);
	RUN(test_exempt_keys);
	RUN(test_empty_file_is_default);
	RUN(test_errors_name_file_line_field);
	RUN(test_pool_prices);
	RUN(test_required_field_one_error);
	RUN(test_pool_access);
	RUN(test_pool_errors_placed);
	RUN(test_all_errors_listed);
	RUN(test_workloads);
	RUN(test_wrong_types);
	RUN(test_huge_map);
	RUN(test_default_yaml_round_trips);
	RUN(test_missing_file);
	RUN(test_hostile_yaml);
	RUN(test_yaml_bounds);
	RUN(test_yaml_bounds_kept);
	RUN(test_buffer_too_large);
	return check_done("config");
}
