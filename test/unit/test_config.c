/* Policy configuration: defaults, partial overlays, and errors with file:line. */
#include <stdlib.h>

#include "check.h"
#include "config.h"

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
	CHECK_INT(cfg->exempt_daemonset_namespaces.n, 1);
	CHECK_STR(cfg->exempt_daemonset_namespaces.v[0], "*");
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
	CHECK_INT(cfg->exempt_pod_selectors[0].match_labels.n, 2);
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
		     "podSelectors[0]: matchLabels is required and must not be empty");
	/* Labels are the workload's own: an entry must say where it applies, and why is said. */
	expect_error("exempt:\n  podSelectors:\n    - matchLabels: {app: agent}\n",
		     "policy.yaml:3:7: exempt.podSelectors[0]: namespaces is required and must not be empty: a "
		     "workload sets its own labels");
	/* Given but empty: the error points at the empty value, as for a pool's nodeSelector. */
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [], matchLabels: {app: agent}}\n",
		     "policy.yaml:3:20: exempt.podSelectors[0]: namespaces is required");
	expect_error("exempt:\n  podSelectors:\n    - {namespaces: [a], matchLabels: {b: c}, team: x}\n",
		     "exempt.podSelectors[0].team: unknown field (known: namespaces, matchLabels)");
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
		"policy.yaml:11:50: exempt.podSelectors[0]: matchLabels is required and must not be empty",
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

	/* Billion laughs: aliases are references in libyaml's document, never expanded here. */
	o = (size_t)sprintf(buf, "a: &a [x, x, x, x, x, x, x, x, x, x]\n");
	for (i = 1; i < 9; i++)
		o += (size_t)sprintf(buf + o, "%c: &%c [*%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c, *%c]\n",
				     'a' + i, 'a' + i, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1,
				     'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1, 'a' + i - 1);
	cfg = config_load_buffer(buf, o, "laughs.yaml", &err);
	CHECK(cfg == NULL);
	CHECK(strstr(err.msg, "unknown field") != NULL);
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

int main(void)
{
	RUN(test_default);
	RUN(test_partial_file_keeps_defaults);
	RUN(test_exempt_keys);
	RUN(test_empty_file_is_default);
	RUN(test_errors_name_file_line_field);
	RUN(test_pool_prices);
	RUN(test_required_field_one_error);
	RUN(test_all_errors_listed);
	RUN(test_wrong_types);
	RUN(test_huge_map);
	RUN(test_default_yaml_round_trips);
	RUN(test_missing_file);
	RUN(test_hostile_yaml);
	return check_done("config");
}
