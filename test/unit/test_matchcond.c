/*
 * matchcond: the text of the generated matchConditions and their cost bound.
 * Whether they are a superset of what the webhook acts on is decided by a real
 * CEL implementation in test/matchcond/matchcond.sh; here: the pieces the policy
 * puts in, escaping, refusals, and the derivation from policy_pod_spec_fields.
 */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "policy/config.h"
#include "render/matchcond.h"
#include "policy/policy.h"
#include "text/scan.h"

/* New: the conditions for policy YAML text (NULL: the default), or NULL with *err. */
static int build(const char *yaml, enum matchcond_entry e, struct matchcond_set *s, struct error *err)
{
	struct config *cfg = yaml ? config_load_buffer(yaml, strlen(yaml), "policy.yaml", err) : config_default(err);
	int rc;

	memset(s, 0, sizeof *s);
	if (cfg == NULL)
		return -1;
	rc = matchcond_build(cfg, e, s, err);
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

	CHECK(build(NULL, MATCHCOND_PODS, &s, &err) == 0);
	CHECK_INT(s.n, 2);
	CHECK_STR(s.v[0].name, "gpu-relevant");
	CHECK_STR(s.v[1].name, "update-changes-what-policy-reads");
	CHECK(strncmp(s.v[0].expression, "object != null && has(object.spec) && (\n  ", 42) == 0);
	/*
	 * gpuResources and gpuShareResources: exact ones in a list, sorted; nvidia.com/mig-* and
	 * volcano.sh/vgpu-* by their prefixes; then any name that looks like a GPU (warned about).
	 */
	CHECK(has(&s, 0, "(k in ['alpha.kubernetes.io/nvidia-gpu', 'amd.com/gpu', 'nvidia.com/gpu', "
		  "'nvidia.com/gpu.shared', 'nvidia.com/gpucores', 'nvidia.com/gpumem', 'nvidia.com/gpumem-percentage'] || "
		  "size(k) > 63 || k.startsWith('nvidia.com/mig-') || k.startsWith('volcano.sh/vgpu-')) || "
		  "k.matches('^[^/]+/.*[gG][pP][uU]')"));
	/* gpuAnnotations: their keys, on a pod of one of their schedulers. */
	CHECK(has(&s, 0, "\n  || has(object.spec.schedulerName) && object.spec.schedulerName in ['kai-scheduler', "
		  "'runai-scheduler'] && has(object.metadata) && has(object.metadata.annotations) && "
		  "(size(object.metadata.annotations) > 16 || object.metadata.annotations.exists(k, k in "
		  "['gpu-fraction', 'gpu-memory']))"));
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
	CHECK(s.v[1].cost > LIMIT_KUBE_REQUEST_MAX / 10 && s.v[1].cost <= MATCHCOND_COST_PER_CALL);
	CHECK(s.cost == s.v[0].cost + s.v[1].cost && s.cost <= MATCHCOND_COST_BUDGET);
	matchcond_set_free(&s);
	matchcond_set_free(&s);  /* twice: zeroed */
	matchcond_set_free(NULL);
}

/*
 * UPDATE: every spec member policy_pod_spec_fields declares, compared; of the metadata only
 * the annotations of a pod of a gpuAnnotations scheduler (the rest only exempts).
 */
static void test_update_from_declaration(void)
{
	const struct scan_shape *m;
	struct matchcond_set s;
	struct error err = { 0 };
	char want[256];
	size_t n = 0;

	CHECK(build(NULL, MATCHCOND_PODS, &s, &err) == 0);
	CHECK(strncmp(s.v[1].expression, "!has(request.operation) || request.operation != 'UPDATE' || "
		      "oldObject == null\n|| has(object.spec) != has(oldObject.spec) || has(object.spec) && (", 128) == 0);
	for (m = policy_pod_spec_fields; m->key != NULL; m++, n++) {
		/* schedulerName too: a Pod's never changes, but a template's does (the same declaration). */
		snprintf(want, sizeof want, "has(object.spec.%s) != has(oldObject.spec.%s) || has(object.spec.%s) && "
			 "object.spec.%s != oldObject.spec.%s", m->key, m->key, m->key, m->key, m->key);
		CHECK(has(&s, 1, want));
	}
	CHECK(n >= 8);
	CHECK(has(&s, 1, "\n|| has(object.spec) && has(object.spec.schedulerName) && object.spec.schedulerName in "
		  "['kai-scheduler', 'runai-scheduler'] && (\n  has(object.metadata) != has(oldObject.metadata) || "
		  "has(object.metadata) && (\n    has(object.metadata.annotations) != has(oldObject.metadata.annotations)"));
	CHECK(!has(&s, 1, "metadata.labels") && !has(&s, 1, "ownerReferences"));
	matchcond_set_free(&s);
	/* Without gpuAnnotations, no metadata at all. */
	CHECK(build("gpuAnnotations: []\n", MATCHCOND_PODS, &s, &err) == 0);
	CHECK(!has(&s, 0, "annotations") && !has(&s, 1, "metadata"));
	matchcond_set_free(&s);
}

static void test_globs_and_escaping(void)
{
	struct matchcond_set s;
	struct error err = { 0 };

	CHECK(build("gpuResources: [\"*.habana.ai/gaudi\", \"example.com/*-gpu\", \"vendor?.io/x\", "
		    "\"o'k\\\\gpu\", \"nvidia.com/gpu\", \"nvidia.com/gpu\"]\n", MATCHCOND_PODS, &s, &err) == 0);
	CHECK(has(&s, 0, "k.endsWith('.habana.ai/gaudi')"));
	CHECK(has(&s, 0, "k.startsWith('example.com/') && k.endsWith('-gpu')"));
	CHECK(has(&s, 0, "k.startsWith('vendor') && k.endsWith('.io/x')"));
	/* Sorted (the default gpuShareResources among them), unique, ' and \ escaped. */
	CHECK(has(&s, 0, "(k in ['nvidia.com/gpu', 'nvidia.com/gpucores', 'nvidia.com/gpumem', "
		  "'nvidia.com/gpumem-percentage', 'o\\'k\\\\gpu'] || size(k) > 63 || "));
	matchcond_set_free(&s);

	CHECK(build("gpuResources: [\"*\"]\n", MATCHCOND_PODS, &s, &err) == 0);
	CHECK(has(&s, 0, "c.resources.limits.exists(k, (k in ['nvidia.com/gpucores', 'nvidia.com/gpumem', "
		  "'nvidia.com/gpumem-percentage'] || size(k) > 63 || true || k.startsWith('volcano.sh/vgpu-'))"));
	matchcond_set_free(&s);

	/* Without a glob, the GPU-looking test bounds the names it reads itself. */
	CHECK(build("gpuResources: [nvidia.com/gpu]\ngpuShareResources: []\n", MATCHCOND_PODS, &s, &err) == 0);
	CHECK(has(&s, 0, "c.resources.limits.exists(k, (k in ['nvidia.com/gpu']) || size(k) > 63 || "
		  "k.matches('^[^/]+/.*[gG][pP][uU]'))"));
	matchcond_set_free(&s);

	/* A control character cannot be quoted: no pod names it anyway. */
	CHECK(build("gpuNodeLabels: [\"a\\tb\"]\n", MATCHCOND_PODS, &s, &err) != 0);
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
		    MATCHCOND_PODS, &s, &err) == 0);
	/*
	 * The pools' key and its alias (AKS sets both alike): only the values they select (a CPU
	 * pod pinned to a CPU agent pool is not sent).
	 */
	CHECK(has(&s, 0, "k in ['accelerator', 'kubernetes.azure.com/accelerator', 'nvidia.com/gpu.present', "
		  "'nvidia.com/gpu.product'] || k == 'agentpool' && object.spec.nodeSelector[k] in ['gpua100', 'gput4'] "
		  "|| k == 'kubernetes.azure.com/agentpool' && object.spec.nodeSelector[k] in "
		  "['gpua100', 'gput4'] || k == 'kubernetes.io/hostname' && "
		  "(size(object.spec.nodeSelector[k]) > 63 || object.spec.nodeSelector[k].startsWith('aks-gpua100-') || "
		  "object.spec.nodeSelector[k].startsWith('aks-gput4-'))"));
	CHECK(has(&s, 0, "(e.key in ['accelerator', 'kubernetes.azure.com/accelerator', 'nvidia.com/gpu.present', "
		  "'nvidia.com/gpu.product'] || e.key == 'agentpool' && has(e.values) && "
		  "(size(e.values) > 16 || e.values.exists(v, v in ['gpua100', 'gput4'])) || "
		  "e.key == 'kubernetes.azure.com/agentpool' && has(e.values) && "
		  "(size(e.values) > 16 || e.values.exists(v, v in ['gpua100', 'gput4'])) || "
		  "e.key == 'kubernetes.io/hostname' && has(e.values) && "));
	CHECK(has(&s, 0, "has(object.spec.nodeName) && (size(object.spec.nodeName) > 63 || "));
	CHECK(has(&s, 0, "e.key == 'metadata.name' && has(e.values) && (size(e.values) > 16 || e.values.exists(v, "));
	matchcond_set_free(&s);

	/* gpuNodeNames: exact names in a list, globs by their ends. */
	CHECK(build("gpuNodeNames: [gpu-node-01, \"aks-gpu*-vmss*\"]\n", MATCHCOND_PODS, &s, &err) == 0);
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
	CHECK(build(yaml, MATCHCOND_PODS, &s, &err) != 0);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "over the API server's limit of 1000000 per expression") != NULL);
	snprintf(yaml + len, sizeof yaml - len, "gpuNodeNames: [\"aks-gpupool*\"]\n");
	CHECK(build(yaml, MATCHCOND_PODS, &s, &err) == 0);
	CHECK(s.cost <= MATCHCOND_COST_BUDGET);
	matchcond_set_free(&s);
}

/* The built-in workloads: each kind's template read at the path template.c gives it, guarded by kind. */
static void test_workloads(void)
{
	struct matchcond_set s, pods;
	struct error err = { 0 };
	char want[512];
	const char *gpu;

	CHECK(build(NULL, MATCHCOND_WORKLOADS, &s, &err) == 0);
	CHECK(build(NULL, MATCHCOND_PODS, &pods, &err) == 0);
	CHECK_INT(s.n, 2);
	CHECK_STR(s.v[0].name, "gpu-relevant");
	CHECK_STR(s.v[1].name, "update-changes-what-policy-reads");
	/* A kind the conditions do not know is sent; each known one reads its own root. */
	CHECK(strncmp(s.v[0].expression, "!has(request.kind) || !has(request.kind.kind) || !(request.kind.kind in "
		      "['CronJob', 'DaemonSet', 'Deployment', 'Job', 'PodTemplate', 'ReplicaSet', "
		      "'ReplicationController', 'StatefulSet'])\n|| request.kind.kind in ['DaemonSet', 'Deployment', "
		      "'Job', 'ReplicaSet', 'ReplicationController', 'StatefulSet'] && object != null && has(object.spec) && "
		      "has(object.spec.template) && has(object.spec.template.spec) && (\n  ", 400) == 0);
	CHECK(has(&s, 0, "\n)\n|| request.kind.kind in ['CronJob'] && object != null && has(object.spec) && "
		  "has(object.spec.jobTemplate) && has(object.spec.jobTemplate.spec) && "
		  "has(object.spec.jobTemplate.spec.template) && has(object.spec.jobTemplate.spec.template.spec) && (\n"));
	CHECK(has(&s, 0, "\n)\n|| request.kind.kind in ['PodTemplate'] && object != null && has(object.template) && "
		  "has(object.template.spec) && (\n  has(object.template.spec.containers)"));
	/* The pod's predicates, over the template's spec: the toleration test of a Pod, moved. */
	gpu = strstr(pods.v[0].expression, "\n  || has(object.spec.tolerations)");
	CHECK(gpu != NULL);
	CHECK(has(&s, 0, "\n  || has(object.spec.template.spec.tolerations) && (size(object.spec.template.spec.tolerations) > 16 || "
		  "object.spec.template.spec.tolerations.exists(t, !has(t.key) || t.key in ['', 'nvidia.com/gpu', 'sku']))"));
	CHECK(!has(&s, 0, "object.spec.containers"));
	/* UPDATE: the template compared on what the policy reads of a pod, metadata included (template_same()). */
	CHECK(has(&s, 1, "\n|| request.kind.kind in ['CronJob'] && (\n  has(object.spec) != has(oldObject.spec) || "
		  "has(object.spec) && (\n    has(object.spec.jobTemplate) != has(oldObject.spec.jobTemplate) || "
		  "has(object.spec.jobTemplate) && (\n"));
	snprintf(want, sizeof want, "|| has(object.template.metadata.labels) != has(oldObject.template.metadata.labels) || "
		 "has(object.template.metadata.labels) && object.template.metadata.labels != oldObject.template.metadata.labels");
	CHECK(has(&s, 1, want));
	CHECK(has(&s, 1, "object.spec.template.spec.resourceClaims != oldObject.spec.template.spec.resourceClaims"));
	/* A template's annotations only for a gpuAnnotations scheduler's pods: a rollout restart is not sent. */
	CHECK(has(&s, 1, "\n  || has(object.spec) && has(object.spec.template) && has(object.spec.template.spec) && "
		  "has(object.spec.template.spec.schedulerName) && object.spec.template.spec.schedulerName in "
		  "['kai-scheduler', 'runai-scheduler'] && (\n"));
	CHECK(has(&s, 1, "object.spec.template.metadata.annotations != oldObject.spec.template.metadata.annotations"));
	/* One root per request: not three times the pod's cost. */
	CHECK(s.v[0].cost > pods.v[0].cost && s.v[0].cost < pods.v[0].cost + pods.v[0].cost / 10);
	CHECK(s.cost <= MATCHCOND_COST_BUDGET && s.v[1].cost <= MATCHCOND_COST_PER_CALL);
	matchcond_set_free(&s);
	matchcond_set_free(&pods);
}

/* Custom resources: no search at depth in CEL, so only the UPDATE condition, on everything but metadata. */
static void test_custom(void)
{
	struct matchcond_set s;
	struct error err = { 0 };

	CHECK(build(NULL, MATCHCOND_CUSTOM, &s, &err) == 0);
	CHECK_INT(s.n, 1);
	CHECK_STR(s.v[0].name, "update-changes-what-policy-reads");
	CHECK(has(&s, 0, "\n|| size(object) > 16 || size(oldObject) > 16\n"));
	CHECK(has(&s, 0, "object.exists(k, k != 'metadata' && (!(k in oldObject) || object[k] != oldObject[k]))"));
	CHECK(has(&s, 0, "oldObject.exists(k, k != 'metadata' && !(k in object))"));
	/* Of the metadata, what the policy reads of a pod's. */
	CHECK(has(&s, 0, "object.metadata.ownerReferences != oldObject.metadata.ownerReferences"));
	CHECK(!has(&s, 0, "annotations") && !has(&s, 0, "spec"));
	CHECK(s.cost > LIMIT_KUBE_REQUEST_MAX / 10 && s.cost <= MATCHCOND_COST_PER_CALL);
	matchcond_set_free(&s);
}

static void test_output(void)
{
	struct matchcond_set s;
	struct error err = { 0 };
	char *yaml;
	json_t *doc;

	CHECK(build(NULL, MATCHCOND_PODS, &s, &err) == 0);
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
	RUN(test_workloads);
	RUN(test_custom);
	RUN(test_output);
	return check_done("matchcond");
}
