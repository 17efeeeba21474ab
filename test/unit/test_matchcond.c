/*
 * matchcond: the text of the generated matchConditions and their cost bound.
 * Whether they are a superset of what the webhook acts on is decided by a real
 * CEL implementation in test/e2e/matchcond.sh; here: the pieces the policy
 * puts in, escaping, refusals, and the derivation from policy_pod_spec_fields.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "matchcond.h"
#include "policy.h"
#include "scan.h"

/* New: the conditions for policy YAML text (NULL: the default), or NULL with *err. */
static int build(const char *yaml, const struct matchcond_target *t, struct matchcond_set *s, struct error *err)
{
	struct config *cfg = yaml ? config_load_buffer(yaml, strlen(yaml), "policy.yaml", err) : config_default(err);
	int rc;

	memset(s, 0, sizeof *s);
	if (cfg == NULL)
		return -1;
	rc = matchcond_build(cfg, t, s, err);
	config_free(cfg);
	return rc;
}

static int has(const struct matchcond_set *s, size_t i, const char *text)
{
	return i < s->n && strstr(s->v[i].expression, text) != NULL;
}

static void test_default(void)
{
	struct matchcond_set s;
	struct error err = { 0 };

	CHECK(build(NULL, &matchcond_pod, &s, &err) == 0);
	CHECK_INT(s.n, 2);
	CHECK_STR(s.v[0].name, "gpu-relevant");
	CHECK_STR(s.v[1].name, "update-changes-what-policy-reads");
	CHECK(strncmp(s.v[0].expression, "object != null && has(object.spec) && (\n  ", 42) == 0);
	/* gpuResources: exact ones in a list, sorted; nvidia.com/mig-* by its prefix. */
	CHECK(has(&s, 0, "(k in ['alpha.kubernetes.io/nvidia-gpu', 'amd.com/gpu', 'nvidia.com/gpu', "
		  "'nvidia.com/gpu.shared'] || size(k) > 63 || k.startsWith('nvidia.com/mig-'))"));
	/* The GPU taint's key, an empty key, the key the policy warns about. */
	CHECK(has(&s, 0, "!has(t.key) || t.key in ['', 'nvidia.com/gpu', 'sku']"));
	/* The default pool selects by a label: node names cannot be told, so any is sent. */
	CHECK(has(&s, 0, "'kubernetes.io/hostname'"));
	CHECK(has(&s, 0, "\n  || has(object.spec.nodeName)\n)"));
	CHECK(has(&s, 0, "e.key == 'metadata.name')"));
	CHECK(has(&s, 0, "has(object.spec.resourceClaims) && size(object.spec.resourceClaims) > 0"));
	CHECK(has(&s, 0, "has(c.resources.claims)"));
	CHECK(has(&s, 0, "preferredDuringSchedulingIgnoredDuringExecution"));
	/* Within the API server's limits, and their sum. */
	CHECK(s.v[0].cost > 0 && s.v[0].cost <= MATCHCOND_COST_PER_CALL);
	CHECK(s.v[1].cost > MATCHCOND_REQUEST_MAX / 10 && s.v[1].cost <= MATCHCOND_COST_PER_CALL);
	CHECK(s.cost == s.v[0].cost + s.v[1].cost && s.cost <= MATCHCOND_COST_BUDGET);
	matchcond_set_free(&s);
	matchcond_set_free(&s);  /* twice: zeroed */
	matchcond_set_free(NULL);
}

/* UPDATE: every spec member policy_pod_spec_fields declares, compared; metadata not (it only exempts). */
static void test_update_from_declaration(void)
{
	const struct scan_shape *m;
	struct matchcond_set s;
	struct error err = { 0 };
	char want[256];
	size_t n = 0;

	CHECK(build(NULL, &matchcond_pod, &s, &err) == 0);
	CHECK(strncmp(s.v[1].expression, "!has(request.operation) || request.operation != 'UPDATE' || "
		      "oldObject == null\n|| has(object.spec) != has(oldObject.spec) || has(object.spec) && (", 128) == 0);
	for (m = policy_pod_spec_fields; m->key != NULL; m++, n++) {
		snprintf(want, sizeof want, "has(object.spec.%s) != has(oldObject.spec.%s) || has(object.spec.%s) && "
			 "object.spec.%s != oldObject.spec.%s", m->key, m->key, m->key, m->key, m->key);
		CHECK(has(&s, 1, want));
	}
	CHECK(n >= 7);
	CHECK(!has(&s, 1, "metadata"));
	matchcond_set_free(&s);
}

static void test_globs_and_escaping(void)
{
	struct matchcond_set s;
	struct error err = { 0 };

	CHECK(build("gpuResources: [\"*.habana.ai/gaudi\", \"example.com/*-gpu\", \"vendor?.io/x\", "
		    "\"o'k\\\\gpu\", \"nvidia.com/gpu\", \"nvidia.com/gpu\"]\n", &matchcond_pod, &s, &err) == 0);
	CHECK(has(&s, 0, "k.endsWith('.habana.ai/gaudi')"));
	CHECK(has(&s, 0, "k.startsWith('example.com/') && k.endsWith('-gpu')"));
	CHECK(has(&s, 0, "k.startsWith('vendor') && k.endsWith('.io/x')"));
	/* Sorted, unique, ' and \ escaped. */
	CHECK(has(&s, 0, "(k in ['nvidia.com/gpu', 'o\\'k\\\\gpu'] || size(k) > 63 || "));
	matchcond_set_free(&s);

	CHECK(build("gpuResources: [\"*\"]\n", &matchcond_pod, &s, &err) == 0);
	CHECK(has(&s, 0, "c.resources.limits.exists(k, (size(k) > 63 || true))"));
	matchcond_set_free(&s);

	/* A control character cannot be quoted: no pod names it anyway. */
	CHECK(build("gpuNodeLabels: [\"a\\tb\"]\n", &matchcond_pod, &s, &err) != 0);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "control character") != NULL);
	CHECK_INT(s.n, 0);
}

static void test_node_names(void)
{
	struct matchcond_set s;
	struct error err = { 0 };

	/* Pools by agent pool: names derived, tested in nodeName, hostname and matchFields. */
	CHECK(build("pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
		    "  - {name: a100, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n",
		    &matchcond_pod, &s, &err) == 0);
	/* The pools' key: only the values they select (a CPU pod pinned to a CPU agent pool is not sent). */
	CHECK(has(&s, 0, "k in ['accelerator', 'kubernetes.azure.com/accelerator', 'nvidia.com/gpu.present', "
		  "'nvidia.com/gpu.product'] || k == 'kubernetes.azure.com/agentpool' && object.spec.nodeSelector[k] in "
		  "['gpua100', 'gput4'] || k == 'kubernetes.io/hostname' && "
		  "(size(object.spec.nodeSelector[k]) > 63 || object.spec.nodeSelector[k].startsWith('aks-gpua100-') || "
		  "object.spec.nodeSelector[k].startsWith('aks-gput4-'))"));
	CHECK(has(&s, 0, "(e.key in ['accelerator', 'kubernetes.azure.com/accelerator', 'nvidia.com/gpu.present', "
		  "'nvidia.com/gpu.product'] || e.key == 'kubernetes.azure.com/agentpool' && has(e.values) && "
		  "(size(e.values) > 16 || e.values.exists(v, v in ['gpua100', 'gput4'])) || "
		  "e.key == 'kubernetes.io/hostname' && has(e.values) && "));
	CHECK(has(&s, 0, "has(object.spec.nodeName) && (size(object.spec.nodeName) > 63 || "));
	CHECK(has(&s, 0, "e.key == 'metadata.name' && has(e.values) && (size(e.values) > 16 || e.values.exists(v, "));
	matchcond_set_free(&s);

	/* gpuNodeNames: exact names in a list, globs by their ends. */
	CHECK(build("gpuNodeNames: [gpu-node-01, \"aks-gpu*-vmss*\"]\n", &matchcond_pod, &s, &err) == 0);
	CHECK(has(&s, 0, "(object.spec.nodeName in ['gpu-node-01'] || size(object.spec.nodeName) > 63 || "
		  "object.spec.nodeName.startsWith('aks-gpu'))"));
	matchcond_set_free(&s);
}

/* Forty pools named by agent pool cost too much; a glob over their names does not. */
static void test_cost_limit(void)
{
	char yaml[8192];
	size_t len = 0;
	struct matchcond_set s;
	struct error err = { 0 };
	int i;

	len += (size_t)snprintf(yaml + len, sizeof yaml - len, "pools:\n");
	for (i = 0; i < 40; i++)
		len += (size_t)snprintf(yaml + len, sizeof yaml - len,
					"  - {name: p%d, nodeSelector: {kubernetes.azure.com/agentpool: gpupool%d}}\n", i, i);
	CHECK(build(yaml, &matchcond_pod, &s, &err) != 0);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "over the API server's limit of 1000000 per expression") != NULL);
	snprintf(yaml + len, sizeof yaml - len, "gpuNodeNames: [\"aks-gpupool*\"]\n");
	CHECK(build(yaml, &matchcond_pod, &s, &err) == 0);
	CHECK(s.cost <= MATCHCOND_COST_BUDGET);
	matchcond_set_free(&s);
}

/* Another root, for workloads: every level guarded, the templates compared whole on UPDATE. */
static void test_workload_target(void)
{
	static const struct matchcond_target t = {
		.specs = { "spec.template.spec", "spec.jobTemplate.spec.template.spec" }, .n_specs = 2,
		.changed = { "spec.template", "spec.jobTemplate.spec.template" }, .n_changed = 2,
	};
	struct matchcond_set s;
	struct error err = { 0 };

	CHECK(build(NULL, &t, &s, &err) == 0);
	CHECK(has(&s, 0, "object != null && has(object.spec) && has(object.spec.template) && "
		  "has(object.spec.template.spec) && (\n  has(object.spec.template.spec.containers)"));
	CHECK(has(&s, 0, "\n)\n|| object != null && has(object.spec) && has(object.spec.jobTemplate) && "
		  "has(object.spec.jobTemplate.spec) && has(object.spec.jobTemplate.spec.template) && "
		  "has(object.spec.jobTemplate.spec.template.spec) && (\n"));
	CHECK(has(&s, 1, "\n|| has(object.spec) != has(oldObject.spec)\n|| has(object.spec) && "
		  "(has(object.spec.template) != has(oldObject.spec.template) || has(object.spec.template) && "
		  "object.spec.template != oldObject.spec.template)"));
	CHECK(has(&s, 1, "\n|| has(object.spec.jobTemplate.spec) != has(oldObject.spec.jobTemplate.spec)\n|| "
		  "has(object.spec) && has(object.spec.jobTemplate) && has(object.spec.jobTemplate.spec) && "
		  "(has(object.spec.jobTemplate.spec.template) != has(oldObject.spec.jobTemplate.spec.template) || "));
	matchcond_set_free(&s);
}

static void test_output(void)
{
	struct matchcond_set s;
	struct error err = { 0 };
	char *yaml;
	json_t *doc;

	CHECK(build(NULL, &matchcond_pod, &s, &err) == 0);
	yaml = matchcond_yaml(&s, &err);
	CHECK(yaml != NULL && strncmp(yaml, "# Worst-case CEL cost per request", 33) == 0);
	CHECK(yaml != NULL && strstr(yaml, "\nmatchConditions:\n  - name: gpu-relevant\n    expression: |-\n      "
					   "object != null && has(object.spec) && (\n        has(") != NULL);
	CHECK(yaml != NULL && strstr(yaml, "\n      )\n  - name: update-changes-what-policy-reads\n") != NULL);
	doc = matchcond_json(&s, &err);
	CHECK(doc != NULL && json_array_size(json_object_get(doc, "matchConditions")) == 2);
	CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(doc, "matchConditions"), 1),
						    "expression")), s.v[1].expression);
	json_decref(doc);
	free(yaml);
	matchcond_set_free(&s);
}

int main(void)
{
	RUN(test_default);
	RUN(test_update_from_declaration);
	RUN(test_globs_and_escaping);
	RUN(test_node_names);
	RUN(test_cost_limit);
	RUN(test_workload_target);
	RUN(test_output);
	return check_done("matchcond");
}
