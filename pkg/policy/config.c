#include "policy/config.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/file.h"
#include "k8s/names.h"
#include "policy/policy.h"
#include "text/yaml.h"

_Static_assert(LIMIT_POOL_SELECTOR_MAX <= YML_LIST_MAX, "a pool's nodeSelector is refused at its own limit");
#define CONFIG_PRICE_MAX 1000000.0  /* pricePerNodeHour: far above any VM's hourly price */
#define CONFIG_GPUS_PER_NODE_MAX 1024
#define CONFIG_GPUS_PER_POD_MAX 1000000  /* maxGPUsPerPod: far above any node, so any pod */
#define CONFIG_POOL_TOLERATIONS_MAX 32  /* per pool: each is checked against every toleration
                                           a pod has and every one added before it */
/*
 * What a load allocates at most (config_load_memory()): measured by
 * test_oom on the costliest texts within the limits above, with room.
 */
#define CONFIG_LOAD_BASE (256u * 1024)        /* the default policy, parser buffers */
#define CONFIG_LOAD_PER_BYTE 160u             /* dense nodes: "[a,a,..." ~170 B of document per 2 bytes */
#define CONFIG_LOAD_MAX (8u * 1024 * 1024)    /* at YML_NODES_MAX, with errors */

/*
 * The embedded default. It is parsed by the same code as a user file, so the
 * text printed by print-default-config is exactly the policy in force when no
 * file is given.
 */
static const char default_yaml[] =
"# gpu-admission policy. Every field is optional in a file of your own: a field\n"
"# you leave out keeps the value shown here.\n"
"\n"
"# enforce: mutate GPU pods, reject CPU pods aimed at GPU pools.\n"
"# warn:    mutate, but a would-be rejection is admitted with a warning.\n"
"# dryrun:  never patch, never reject; warnings say what enforce would do.\n"
"mode: enforce\n"
"\n"
"# Per-namespace overrides of mode, e.g. {team-a: dryrun}.\n"
"namespaceModes: {}\n"
"\n"
"# Resource names (globs: * and ?) that count as a GPU when requested with a\n"
"# non-zero quantity in any container or init container.\n"
"gpuResources:\n"
"  - nvidia.com/gpu\n"
"  - nvidia.com/gpu.shared\n"
"  - nvidia.com/mig-*\n"
"  - amd.com/gpu\n"
"  - alpha.kubernetes.io/nvidia-gpu\n"
"\n"
"# DRA DeviceClasses (globs) whose devices are GPUs. A pod's claim (a\n"
"# ResourceClaimTemplate or ResourceClaim that a container uses) asking for\n"
"# one of them in every alternative is placed as a GPU request is, by\n"
"# pools[].deviceClasses and maxGPUsPerPod. A claim gpu-admission cannot look\n"
"# up, or that asks for another class, is never a GPU request, and opens no\n"
"# way to GPU nodes. gpu.nvidia.com and mig.nvidia.com: NVIDIA's DRA driver\n"
"# (NVIDIA/k8s-dra-driver-gpu); gpu.amd.com: AMD's (ROCm/k8s-gpu-dra-driver).\n"
"gpuDeviceClasses: [gpu.nvidia.com, mig.nvidia.com, gpu.amd.com]\n"
"\n"
"# Annotations that mean \"this pod uses a share of a GPU\" to the scheduler\n"
"# that reads them: a pod with one (and spec.schedulerName one of\n"
"# schedulerNames, as for any other scheduler it reserves nothing) is placed\n"
"# as a pod requesting one GPU of resource. KAI-Scheduler and Run:ai read the\n"
"# same keys (gpu-fraction: \"0.5\", gpu-memory: MiB).\n"
"gpuAnnotations:\n"
"  - {key: gpu-fraction, schedulerNames: [kai-scheduler], resource: nvidia.com/gpu}\n"
"  - {key: gpu-memory, schedulerNames: [kai-scheduler], resource: nvidia.com/gpu}\n"
"  - {key: gpu-fraction, schedulerNames: [runai-scheduler], resource: nvidia.com/gpu}\n"
"  - {key: gpu-memory, schedulerNames: [runai-scheduler], resource: nvidia.com/gpu}\n"
"\n"
"# Resources (globs) GPU-sharing schedulers use whose quantity is no GPU count\n"
"# (MiB, percent, vGPU slices): a pod requesting one, non-zero, asks for at\n"
"# least one GPU of resource. HAMi: nvidia.com/gpumem, gpumem-percentage,\n"
"# gpucores; Volcano: volcano.sh/vgpu-number, vgpu-memory, vgpu-cores.\n"
"gpuShareResources:\n"
"  - {name: nvidia.com/gpumem, resource: nvidia.com/gpu}\n"
"  - {name: nvidia.com/gpumem-percentage, resource: nvidia.com/gpu}\n"
"  - {name: nvidia.com/gpucores, resource: nvidia.com/gpu}\n"
"  - {name: volcano.sh/vgpu-*, resource: nvidia.com/gpu}\n"
"\n"
"# The taint on the GPU node pools. AKS GPU pools are created with\n"
"# sku=gpu:NoSchedule (not nvidia.com/gpu).\n"
"gpuTaint:\n"
"  key: sku\n"
"  value: gpu\n"
"  effect: NoSchedule\n"
"\n"
"# Node label keys whose presence in a nodeSelector or required node affinity\n"
"# aims a pod at GPU nodes.\n"
"gpuNodeLabels:\n"
"  - kubernetes.azure.com/accelerator\n"
"  - accelerator\n"
"  - nvidia.com/gpu.present\n"
"  - nvidia.com/gpu.product\n"
"\n"
"# Globs over node names that name GPU nodes, e.g. [\"aks-gpu*-vmss*\"]. A CPU\n"
"# pod pinned by name to such a node (spec.nodeName, a required node affinity\n"
"# on metadata.name, a kubernetes.io/hostname selector) is rejected: the kubelet\n"
"# ignores NoSchedule taints for a pod bound by nodeName. Empty: derived from\n"
"# the pools, since AKS names a pool's nodes aks-<pool>-<id>-vmss<n>: a pool\n"
"# selected by kubernetes.azure.com/agentpool: gput4 gives aks-gput4-*. The\n"
"# default pool selects by accelerator label, so nothing can be derived from\n"
"# it: a CPU pod pinned to a node by name is then admitted with a warning.\n"
"# `gpu-admission check-config FILE` prints the globs in force.\n"
"gpuNodeNames: []\n"
"\n"
"# GPU pools in order of preference, cheapest first. A pool is eligible for a\n"
"# GPU pod when it serves every GPU resource the pod asks for (resources:\n"
"# globs, default every GPU resource) and every GPU DeviceClass its claims ask\n"
"# for (deviceClasses: globs, default every gpuDeviceClasses class; an\n"
"# allocationMode All claim counts gpusPerNode) with a large enough\n"
"# maxGPUsPerPod (0 or\n"
"# absent: no limit), the pod's namespace is one of its namespaces (globs;\n"
"# absent: every namespace), its podSelector matches the pod's labels\n"
"# (matchLabels, matchExpressions with In, NotIn, Exists, DoesNotExist; absent:\n"
"# every pod; pods set their own labels, so this is an opt-in such as \"may be\n"
"# interrupted\", while namespaces is the admin's), and the pod's own nodeSelector\n"
"# and required node affinity do not rule out its nodes. The label\n"
"# gpu-admission/pool picks one eligible pool, else a pool the pod's\n"
"# nodeSelector already picks; none eligible: rejected, naming the pools for\n"
"# the resource and those the namespace may use.\n"
"# tolerations: added to a pod placed on the pool, besides the GPU taint's,\n"
"# e.g. an AKS spot pool's {key: kubernetes.azure.com/scalesetpriority,\n"
"# value: spot, effect: NoSchedule} (operator Equal or Exists; no effect: all).\n"
"# Optional, for the cost report (gpu-admission report): pricePerNodeHour, what\n"
"# one node of the pool costs per hour (e.g. 98.32 for a Standard_ND96isr_H100_v5\n"
"# pay-as-you-go), and gpusPerNode (8 there; absent: each node's allocatable\n"
"# GPUs). check-config warns when priced pools are not cheapest per GPU first.\n"
"# Two AKS pools (a 1-GPU pod goes to t4, 2 to 8 GPUs or a MIG slice to a100,\n"
"# an AMD or a 16-GPU pod is rejected):\n"
"# example: 1 nvidia.com/gpu -> t4; 8 nvidia.com/gpu -> a100; 1 nvidia.com/mig-1g.10gb -> a100; 1 amd.com/gpu -> rejected; 16 nvidia.com/gpu -> rejected\n"
"#   - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1,\n"
"#      nodeSelector: {kubernetes.azure.com/agentpool: gput4},\n"
"#      pricePerNodeHour: 0.526, gpusPerNode: 1}\n"
"#   - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*],\n"
"#      maxGPUsPerPod: 8, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n"
"pools:\n"
"  - name: gpu\n"
"    resources: [\"nvidia.com/*\", \"alpha.kubernetes.io/nvidia-gpu\"]\n"
"    deviceClasses: [\"*.nvidia.com\"]\n"
"    nodeSelector:\n"
"      kubernetes.azure.com/accelerator: nvidia\n"
"\n"
"# How a GPU pod is sent to its eligible pools. pinned: the nodeSelector of\n"
"# the first eligible pool. fallback: a required node affinity\n"
"# `key In [every eligible pool's value]` (ANDed into each required term the\n"
"# pod has), preferred terms weighted cheapest first, and every eligible\n"
"# pool's tolerations: the scheduler falls back to a pricier pool when the\n"
"# cheap one is full or out of spot capacity. Every pool must then select by\n"
"# one and the same label key (kubernetes.azure.com/agentpool, or\n"
"# karpenter.sh/nodepool with node auto-provisioning).\n"
"# A pod whose required affinity already keeps it to eligible pools of that\n"
"# key gets no selector or requirement, either way; when it allows several,\n"
"# the preferred terms cheapest first. A pod pinned to a node by name goes to\n"
"# that node's pool (told by its name, aks-<pool>-*).\n"
"placement: pinned\n"
"\n"
"# Pods carrying one of these label keys get the GPU toleration but no pool\n"
"# selector or affinity: their queue's ResourceFlavor (Kueue) places them, and\n"
"# two selectors that disagree would leave them Pending. The pool rules still\n"
"# apply first (a pod sets its own labels): one no pool it may use can take is\n"
"# rejected. CPU pods are judged as any other.\n"
"deferLabels: [kueue.x-k8s.io/queue-name]\n"
"\n"
"# Namespaces where the GPU stack is installed (NVIDIA's device plugin, DCGM\n"
"# exporter, a DRA driver), by name. A DaemonSet created or updated there whose\n"
"# pod template requests no GPU, selects only GPU nodes by its required node\n"
"# selection (gpuNodeLabels, nvidia.com/gpu.*, Node Feature Discovery's NVIDIA\n"
"# labels, a pool's key=value) and does not tolerate gpuTaint gets that\n"
"# toleration in its template from the mutating webhook: the DaemonSet\n"
"# controller creates no pod on a node whose NoSchedule taint the template\n"
"# does not tolerate, so without it the device plugin never starts on a GPU\n"
"# node. Applies in exempt namespaces too (it is the admin's opt-in); every\n"
"# entry must be one whose DaemonSet pods are admitted with the toleration\n"
"# (exempt.namespaces, or exempt.daemonSetNamespaces). A DaemonSet that also\n"
"# reaches CPU nodes gets nothing. Elsewhere such a DaemonSet is only warned.\n"
"# Empty: off; e.g. [gpu-operator]. The chart sends /mutate the DaemonSets of\n"
"# these namespaces only (failurePolicy Ignore).\n"
"gpuInfraNamespaces: []\n"
"\n"
"# Set by the cluster admin only: nothing a workload can put on itself.\n"
"exempt:\n"
"  # Always admitted unchanged.\n"
"  namespaces: [kube-system, gpu-operator]\n"
"  # DaemonSet pods (device plugin, DCGM exporter, log agents) are never\n"
"  # rejected. A pod is one only when its controller reference is an apps/v1\n"
"  # DaemonSet with controller: true and the DaemonSet controller created it\n"
"  # (request.userInfo.username in daemonSetControllers): any pod can claim an\n"
"  # owner reference.\n"
"  daemonSets: true\n"
"  # Namespaces (globs) where the DaemonSet exemption applies: those where\n"
"  # admins install node agents (gpu-resources: where AKS's GPU guide installs\n"
"  # NVIDIA's device plugin); add yours, e.g. monitoring. [\"*\"] would let a\n"
"  # tenant who may create a DaemonSet keep every GPU node busy with pods that\n"
"  # are never refused.\n"
"  daemonSetNamespaces: [kube-system, gpu-operator, gpu-resources]\n"
"  # The users the DaemonSet controller creates pods as.\n"
"  daemonSetControllers:\n"
"    - system:serviceaccount:kube-system:daemon-set-controller\n"
"    - system:kube-controller-manager\n"
"  # Pods in one of an entry's namespaces (globs; required, since a workload\n"
"  # sets its own labels) whose labels match its matchLabels and\n"
"  # matchExpressions (as a pool's podSelector) are admitted unchanged, e.g.\n"
"  # [{namespaces: [monitoring], matchLabels: {app: agent}}].\n"
"  podSelectors: []\n"
"\n"
"# Custom resources the validating webhook judges at kubectl apply, by their\n"
"# pod templates as `gpu-admission audit` finds them (every member named\n"
"# template or ...Template holding a pod template or a PodSpec), on CREATE and\n"
"# on UPDATE when a template changes: {group, kind, versions, resource}\n"
"# (versions: the API versions judged; absent: all of them). Deployment,\n"
"# StatefulSet, DaemonSet, ReplicaSet, Job, CronJob, ReplicationController and\n"
"# PodTemplate are always judged; the chart registers a webhook entry of their\n"
"# own (validate-custom.gpu-admission.azure.io) for every entry here, for the\n"
"# resource the kind in lower case plus \"s\" (the plural of every CRD below),\n"
"# or resource when the CRD's plural is another (kind: TrainingBatch, resource:\n"
"# trainingbatches). CEL matchConditions cannot search them for templates, so a\n"
"# webhook outage under failurePolicy Fail blocks their every create, and every\n"
"# update but one of metadata only (print-match-conditions --for custom).\n"
"# KServe's InferenceService keeps its PodSpec inline in spec.predictor, with\n"
"# no template member: listed, it is searched and nothing is found, and its\n"
"# pods are judged when they are created, as without it. For example:\n"
"#   workloads:\n"
"#     - {group: kubeflow.org, kind: PyTorchJob}           # spec.pytorchReplicaSpecs.*.template\n"
"#     - {group: ray.io, kind: RayCluster}                 # headGroupSpec, workerGroupSpecs[*]\n"
"#     - {group: ray.io, kind: RayService}                 # spec.rayClusterConfig...\n"
"#     - {group: ray.io, kind: RayJob}                     # spec.rayClusterSpec..., submitterPodTemplate\n"
"#     - {group: jobset.x-k8s.io, kind: JobSet}            # replicatedJobs[*].template.spec.template\n"
"#     - {group: leaderworkerset.x-k8s.io, kind: LeaderWorkerSet}  # leaderTemplate, workerTemplate\n"
"#     - {group: serving.kserve.io, kind: InferenceService}\n"
"#     - {group: serving.kserve.io, kind: LLMInferenceService, versions: [v1alpha1]}  # spec.template\n"
"workloads: []\n";

const char *config_default_yaml(void)
{
	return default_yaml;
}

/* ==== Error collection ==== */

void config_errors_free(struct config_errors *errs)
{
	size_t i;

	if (errs == NULL)
		return;
	for (i = 0; i < errs->n; i++)
		free(errs->v[i].text);
	free(errs->v);
	memset(errs, 0, sizeof *errs);
}

/*
 * Keeps one error; past CONFIG_ERRORS_MAX it is only counted. -1 when memory
 * ran out (the load then ends ERROR_NOMEM: a list with an error missing would
 * be a wrong answer).
 */
static int errors_add(void *sink, unsigned long line, unsigned long column,
		      const char *name, const char *path, const char *msg)
{
	struct config_errors *errs = sink;
	int n;
	char *text;

	errs->total++;
	if (errs->n >= CONFIG_ERRORS_MAX)
		return 0;
	if (errs->n % 64 == 0) {
		struct config_error *grown = realloc(errs->v, (errs->n + 64) * sizeof *grown);

		if (grown == NULL)
			return -1;
		errs->v = grown;
	}
	n = snprintf(NULL, 0, "%s:%lu:%lu: %s: %s", name, line, column, path, msg);
	if (n < 0 || (text = malloc((size_t)n + 1)) == NULL)
		return -1;
	snprintf(text, (size_t)n + 1, "%s:%lu:%lu: %s: %s", name, line, column, path, msg);
	errs->v[errs->n].line = line;
	errs->v[errs->n].column = column;
	errs->v[errs->n].text = text;
	errs->n++;
	return 0;
}

static void strings_free(struct config_strings *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void labels_free(struct config_labels *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].value);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/*
 * Replaces *out with the list of strings in n (null means empty). bad, when
 * not NULL, says why an entry is refused ("must be at most 63 characters"),
 * or NULL; each refusal is an error at its entry: "\"ENTRY\" <what><why>".
 */
static void read_strings_checked(struct yml_reader *ld, yaml_node_t *n, const char *path,
				 struct config_strings *out, const char *(*bad)(const char *), const char *what)
{
	struct config_strings l = { NULL, 0 };
	char sub[128];
	size_t i, len;
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of strings", sizeof *l.v, &items, &len) != 0)
		return;
	l.v = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		l.v[l.n] = yml_read_string(ld, item, sub, 0);
		if (l.v[l.n] != NULL && bad != NULL && (why = bad(l.v[l.n])) != NULL) {
			yml_fail(ld, item, sub, "\"%s\" %s%s", l.v[l.n], what, why);
			free(l.v[l.n]);
			l.v[l.n] = NULL;
		}
		if (l.v[l.n] != NULL)
			l.n++;
	}
	strings_free(out);
	*out = l;
}

static void read_strings(struct yml_reader *ld, yaml_node_t *n, const char *path,
			 struct config_strings *out)
{
	read_strings_checked(ld, n, path, out, NULL, NULL);
}

/* Replaces *out with the string->string map in n. */
static void read_labels(struct yml_reader *ld, yaml_node_t *n, const char *path,
			struct config_labels *out, int allow_empty_values)
{
	struct config_labels l = { NULL, 0 };
	char sub[400];
	size_t i, len;

	if (yml_is_null(n))
		goto replace;
	if (n->type != YAML_MAPPING_NODE) {
		yml_fail(ld, n, path, "must be a map of strings");
		return;
	}
	len = yml_map_len(n);
	if (len > YML_LIST_MAX) {
		yml_fail(ld, n, path, "more than %d entries", YML_LIST_MAX);
		return;
	}
	l.v = calloc(len ? len : 1, sizeof *l.v);
	if (l.v == NULL) {
		yml_fail_nomem(ld);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *k = yml_node_at(ld, n->data.mapping.pairs.start[i].key);
		yaml_node_t *v = yml_node_at(ld, n->data.mapping.pairs.start[i].value);
		char *ks, *vs;

		if (yml_check_duplicate_key(ld, n, i, k, path) != 0)
			continue;
		ks = yml_read_key(ld, k, path, 0);
		if (ks == NULL)
			continue;
		snprintf(sub, sizeof sub, "%s.%s", path, ks);
		vs = yml_read_string(ld, v, sub, allow_empty_values);
		if (vs == NULL) {
			free(ks);
			continue;
		}
		l.v[l.n].key = ks;
		l.v[l.n].value = vs;
		l.n++;
	}
replace:
	labels_free(out);
	*out = l;
}

static int parse_mode(const char *s, enum config_mode *mode)
{
	if (strcmp(s, "enforce") == 0)
		*mode = CONFIG_MODE_ENFORCE;
	else if (strcmp(s, "warn") == 0)
		*mode = CONFIG_MODE_WARN;
	else if (strcmp(s, "dryrun") == 0)
		*mode = CONFIG_MODE_DRYRUN;
	else
		return -1;
	return 0;
}

static void read_mode(struct yml_reader *ld, yaml_node_t *n, const char *path, enum config_mode *out)
{
	if (n->type != YAML_SCALAR_NODE || parse_mode(yml_scalar(n), out) != 0)
		yml_fail(ld, n, path, "must be one of enforce, warn, dryrun");
}

static void read_placement(struct yml_reader *ld, yaml_node_t *n, const char *path, enum config_placement *out)
{
	if (yml_scalar_is(n, "pinned"))
		*out = CONFIG_PLACEMENT_PINNED;
	else if (yml_scalar_is(n, "fallback"))
		*out = CONFIG_PLACEMENT_FALLBACK;
	else
		yml_fail(ld, n, path, "must be pinned or fallback");
}

/* A price: a plain decimal number (digits, at most one '.'), 0 to CONFIG_PRICE_MAX. */
static int read_price(struct yml_reader *ld, yaml_node_t *n, const char *path, double *out)
{
	const char *s = n->type == YAML_SCALAR_NODE ? yml_scalar(n) : "";
	/* Scalar types are strict: a quoted "98.32" is a string, as for every number. */
	int quoted = n->type == YAML_SCALAR_NODE && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	size_t i, dots = 0, digits = 0;
	double v;

	for (i = 0; n->type == YAML_SCALAR_NODE && i < n->data.scalar.length && i < 32; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] >= '0' && s[i] <= '9')
			digits++;
		else
			break;
	}
	if (n->type != YAML_SCALAR_NODE || quoted || n->data.scalar.length == 0 ||
	    i != n->data.scalar.length || dots > 1 || digits == 0 || (v = strtod(s, NULL), !isfinite(v)) ||
	    v > CONFIG_PRICE_MAX) {
		yml_fail(ld, n, path, "must be a price per hour: a number from 0 to %.0f, e.g. 98.32%s",
		     CONFIG_PRICE_MAX, quoted ? ", not a string (remove the quotes)" : "");
		return -1;
	}
	*out = v;
	return 0;
}

/* ==== The schema ==== */

static int taint_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
		       const char *path)
{
	struct config *cfg = target;
	char **slot = strcmp(key, "key") == 0 ? &cfg->taint_key
		    : strcmp(key, "value") == 0 ? &cfg->taint_value
		    : strcmp(key, "effect") == 0 ? &cfg->taint_effect : NULL;
	char *s;

	if (slot == NULL)
		return -1;
	s = yml_read_string(ld, v, path, slot == &cfg->taint_value);
	if (s != NULL) {
		free(*slot);
		*slot = s;
	}
	return 0;
}

/* ==== Label selectors (metav1.LabelSelector): one reader for pools and exemptions ==== */

static void requirement_free(struct config_requirement *r)
{
	free(r->key);
	free(r->op);
	strings_free(&r->values);
}

static void requirements_free(struct config_label_selector *sel)
{
	size_t i;

	for (i = 0; i < sel->n_match_expressions; i++)
		requirement_free(&sel->match_expressions[i]);
	free(sel->match_expressions);
	sel->match_expressions = NULL;
	sel->n_match_expressions = 0;
}

static void label_selector_free(struct config_label_selector *sel)
{
	labels_free(&sel->match_labels);
	requirements_free(sel);
}

static int requirement_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			     const char *path)
{
	struct config_requirement *r = target;
	char **slot = strcmp(key, "key") == 0 ? &r->key : strcmp(key, "operator") == 0 ? &r->op : NULL;

	if (strcmp(key, "values") == 0) {
		read_strings_checked(ld, v, path, &r->values, k8s_name_label_value, "is not a label value: it ");
		return 0;
	}
	if (slot == NULL)
		return -1;
	yml_read_string_into(ld, v, path, slot, 0);
	return 0;
}

/*
 * matchExpressions, checked as LabelSelectorAsSelector checks them
 * (k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go, with
 * labels.NewRequirement): In and NotIn need values, Exists and DoesNotExist
 * take none, no other operator, keys and values valid label text.
 */
static void read_requirements(struct yml_reader *ld, yaml_node_t *n, const char *path,
			      struct config_label_selector *sel)
{
	struct config_requirement *reqs;
	yaml_node_t *at;
	size_t i, len;
	char sub[320];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {key, operator, values}", sizeof *reqs, &items, &len) != 0)
		return;
	reqs = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_requirement *r = &reqs[i];
		int set;

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with key, operator and values");
			continue;
		}
		yml_read_fields(ld, item, sub, r, requirement_field, "key, operator, values");
		if (r->key == NULL && yml_map_get(ld, item, "key") == NULL)
			yml_fail(ld, item, sub, "key is required");
		if (r->op == NULL && yml_map_get(ld, item, "operator") == NULL)
			yml_fail(ld, item, sub, "operator is required");
		if (r->key == NULL || r->op == NULL)
			continue;  /* an invalid one has its own error */
		if ((why = k8s_name_label_key(r->key)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "key"), sub, "key \"%s\" is not a label key: it %s", r->key, why);
		set = strcmp(r->op, "In") == 0 || strcmp(r->op, "NotIn") == 0;
		if (!set && strcmp(r->op, "Exists") != 0 && strcmp(r->op, "DoesNotExist") != 0)
			yml_fail(ld, yml_field_at(ld, item, "operator"), sub,
			     "operator \"%s\" is not one of In, NotIn, Exists, DoesNotExist", r->op);
		else if (set && r->values.n == 0 && (at = yml_required_at(ld, item, "values", YAML_SEQUENCE_NODE)) != NULL)
			yml_fail(ld, at, sub, "operator %s needs at least one value", r->op);
		else if (!set && r->values.n > 0)
			yml_fail(ld, yml_field_at(ld, item, "values"), sub, "operator %s takes no values", r->op);
	}
	requirements_free(sel);
	sel->match_expressions = reqs;
	sel->n_match_expressions = len;
}

/* matchLabels and matchExpressions: the field reader of every label selector. */
static int label_selector_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
				const char *path)
{
	struct config_label_selector *sel = target;
	char sub[LIMIT_POLICY_STRING_MAX + 128];
	const char *why;
	size_t i;

	if (strcmp(key, "matchLabels") == 0) {
		read_labels(ld, v, path, &sel->match_labels, 1);
		for (i = 0; i < sel->match_labels.n; i++) {
			const struct config_kv *kv = &sel->match_labels.v[i];

			/* At the entry: locate() finds it by its key. */
			snprintf(sub, sizeof sub, "%s.%s", path, kv->key);
			if ((why = k8s_name_label_key(kv->key)) != NULL)
				yml_fail(ld, NULL, sub, "\"%s\" is not a label key: it %s", kv->key, why);
			else if ((why = k8s_name_label(kv->value, strlen(kv->value), 1)) != NULL)
				yml_fail(ld, NULL, sub, "\"%s\" is not a label value: it %s", kv->value, why);
		}
	} else if (strcmp(key, "matchExpressions") == 0) {
		read_requirements(ld, v, path, sel);
	} else {
		return -1;
	}
	return 0;
}

/* Whether sel has nothing to match on (it would match every pod). */
static int label_selector_empty(const struct config_label_selector *sel)
{
	return sel->match_labels.n == 0 && sel->n_match_expressions == 0;
}

/*
 * Where to say that mapping item's selector is missing or empty: at an
 * empty matchLabels or matchExpressions, or at item when neither is there;
 * NULL when one has entries or a wrong type (their own errors say so).
 */
static yaml_node_t *selector_required_at(struct yml_reader *ld, yaml_node_t *item)
{
	yaml_node_t *labels = yml_required_at(ld, item, "matchLabels", YAML_MAPPING_NODE);
	yaml_node_t *exprs = yml_required_at(ld, item, "matchExpressions", YAML_SEQUENCE_NODE);

	if (labels == NULL || exprs == NULL)
		return NULL;
	return yml_map_get(ld, item, "matchLabels") != NULL ? labels : exprs;
}

/* ==== Pools ==== */

static void tolerations_free(struct config_tolerations *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].op);
		free(l->v[i].value);
		free(l->v[i].effect);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int toleration_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			    const char *path)
{
	struct config_toleration *t = target;
	char **slot = strcmp(key, "key") == 0 ? &t->key : strcmp(key, "operator") == 0 ? &t->op
		    : strcmp(key, "value") == 0 ? &t->value : strcmp(key, "effect") == 0 ? &t->effect : NULL;
	char *str;

	if (slot == NULL)
		return -1;
	str = yml_read_string(ld, v, path, slot != &t->key);
	if (str != NULL) {
		free(*slot);
		*slot = str;
	}
	return 0;
}

/*
 * pools[].tolerations, checked as the API server checks a pod's
 * (validateTolerations, pkg/apis/core/validation): a key (required here: a
 * pool's toleration names its taint, and an empty key would tolerate every
 * taint), operator Equal or Exists, no value with Exists, a known effect.
 */
static void read_tolerations(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config_tolerations *out)
{
	struct config_tolerations l = { NULL, 0 };
	size_t i, len;
	char sub[96];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {key, operator, value, effect}", sizeof *l.v, &items, &len) != 0)
		return;
	l.v = items;
	if (len > CONFIG_POOL_TOLERATIONS_MAX) {
		yml_fail(ld, n, path, "more than %d tolerations", CONFIG_POOL_TOLERATIONS_MAX);
		free(items);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_toleration *t = &l.v[l.n++];

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with key, operator, value and effect");
			continue;
		}
		yml_read_fields(ld, item, sub, t, toleration_field, "key, operator, value, effect");
		if (t->op == NULL)
			t->op = strdup("Equal");
		if (t->value == NULL)
			t->value = strdup("");
		if (t->effect == NULL)
			t->effect = strdup("");
		if (t->op == NULL || t->value == NULL || t->effect == NULL) {
			yml_fail_nomem(ld);
			continue;
		}
		/* Each problem at its field (a field of the wrong type has its own error). */
		if (t->key == NULL && yml_map_get(ld, item, "key") == NULL)
			yml_fail(ld, item, sub, "key is required (a toleration without one tolerates every taint)");
		else if (t->key != NULL && (why = k8s_name_label_key(t->key)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "key"), sub, "key \"%s\" is not a taint key: it %s", t->key, why);
		if (strcmp(t->op, "Equal") != 0 && strcmp(t->op, "Exists") != 0)
			yml_fail(ld, yml_field_at(ld, item, "operator"), sub, "operator must be Equal or Exists");
		else if (strcmp(t->op, "Exists") == 0 && t->value[0] != '\0')
			yml_fail(ld, yml_field_at(ld, item, "value"), sub, "value must be empty with operator Exists");
		else if ((why = k8s_name_label(t->value, strlen(t->value), 1)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "value"), sub, "value \"%s\" is not a taint value: it %s",
			     t->value, why);
		if (t->effect[0] != '\0' && strcmp(t->effect, "NoSchedule") != 0 &&
		    strcmp(t->effect, "PreferNoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
			yml_fail(ld, yml_field_at(ld, item, "effect"), sub,
			     "effect must be NoSchedule, PreferNoSchedule or NoExecute (or absent: all)");
	}
	tolerations_free(out);
	*out = l;
}

static void pool_free(struct config_pool *p)
{
	free(p->name);
	labels_free(&p->node_selector);
	strings_free(&p->resources);
	strings_free(&p->device_classes);
	tolerations_free(&p->tolerations);
	strings_free(&p->namespaces);
	label_selector_free(&p->pod_selector);
}

static int pool_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
		      const char *path)
{
	struct config_pool *p = target;

	if (strcmp(key, "name") == 0) {
		char *s = yml_read_string(ld, v, path, 0);
		if (s != NULL) {
			free(p->name);
			p->name = s;
		}
	} else if (strcmp(key, "nodeSelector") == 0) {
		read_labels(ld, v, path, &p->node_selector, 1);
		/* The pinned patch adds at most this many: refused here, not cut short there. */
		if (p->node_selector.n > LIMIT_POOL_SELECTOR_MAX)
			yml_fail(ld, v, path, "more than %d entries: a pod's patch carries no more",
			     LIMIT_POOL_SELECTOR_MAX);
	} else if (strcmp(key, "resources") == 0) {
		read_strings(ld, v, path, &p->resources);
	} else if (strcmp(key, "deviceClasses") == 0) {
		read_strings(ld, v, path, &p->device_classes);
	} else if (strcmp(key, "maxGPUsPerPod") == 0) {
		yml_read_count(ld, v, path, CONFIG_GPUS_PER_POD_MAX, &p->max_gpus_per_pod);
	} else if (strcmp(key, "pricePerNodeHour") == 0) {
		if (read_price(ld, v, path, &p->price_per_node_hour) == 0)
			p->priced = 1;
	} else if (strcmp(key, "gpusPerNode") == 0) {
		long long gpus = -1;

		yml_read_count(ld, v, path, CONFIG_GPUS_PER_NODE_MAX, &gpus);
		if (gpus == 0)
			yml_fail(ld, v, path, "must be a whole number from 1 to %d", CONFIG_GPUS_PER_NODE_MAX);
		else if (gpus > 0)
			p->gpus_per_node = gpus;
	} else if (strcmp(key, "tolerations") == 0) {
		read_tolerations(ld, v, path, &p->tolerations);
	} else if (strcmp(key, "namespaces") == 0) {
		read_strings_checked(ld, v, path, &p->namespaces, k8s_name_namespace_glob, "");
	} else if (strcmp(key, "podSelector") == 0) {
		yml_read_fields(ld, v, path, &p->pod_selector, label_selector_field, "matchLabels, matchExpressions");
	} else {
		return -1;
	}
	return 0;
}

static void read_pools(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_pool *pools;
	yaml_node_t *at;
	size_t i, len;
	char sub[64];

	if (n->type != YAML_SEQUENCE_NODE) {
		yml_fail(ld, n, path, "must be a list of pools");
		return;
	}
	len = yml_seq_len(n);
	if (len == 0 || len > CONFIG_POOLS_MAX) {
		yml_fail(ld, n, path, "must list from 1 to %d pools", CONFIG_POOLS_MAX);
		return;
	}
	pools = calloc(len, sizeof *pools);
	if (pools == NULL) {
		yml_fail_nomem(ld);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with name and nodeSelector");
			continue;
		}
		yml_read_fields(ld, item, sub, &pools[i], pool_field,
			    "name, nodeSelector, resources, deviceClasses, maxGPUsPerPod, pricePerNodeHour, "
			    "gpusPerNode, tolerations, namespaces, podSelector");
		/* A field given but invalid has its own error already. */
		if (pools[i].name == NULL && yml_map_get(ld, item, "name") == NULL)
			yml_fail(ld, item, sub, "name is required");
		if (pools[i].node_selector.n == 0 &&
		    (at = yml_required_at(ld, item, "nodeSelector", YAML_MAPPING_NODE)) != NULL)
			yml_fail(ld, at, sub, "nodeSelector is required and must not be empty");
	}
	for (i = 0; i < cfg->n_pools; i++)
		pool_free(&cfg->pools[i]);
	free(cfg->pools);
	cfg->pools = pools;
	cfg->n_pools = len;
}

static void pod_selector_free(struct config_pod_selector *sel)
{
	strings_free(&sel->namespaces);
	label_selector_free(&sel->selector);
}

static int pod_selector_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			      const char *path)
{
	struct config_pod_selector *sel = target;

	if (strcmp(key, "namespaces") == 0)
		read_strings(ld, v, path, &sel->namespaces);
	else
		return label_selector_field(ld, &sel->selector, key, v, path);
	return 0;
}

static void read_pod_selectors(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_pod_selector *sels;
	yaml_node_t *at;
	size_t i, len;
	char sub[96];
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {namespaces: [...], matchLabels: {...}, matchExpressions: [...]}",
		      sizeof *sels, &items, &len) != 0)
		return;
	sels = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with namespaces, matchLabels and matchExpressions");
			continue;
		}
		yml_read_fields(ld, item, sub, &sels[i], pod_selector_field, "namespaces, matchLabels, matchExpressions");
		if (sels[i].namespaces.n == 0 && (at = yml_required_at(ld, item, "namespaces", YAML_SEQUENCE_NODE)) != NULL)
			yml_fail(ld, at, sub, "namespaces is required and must not be empty: a workload sets "
			     "its own labels, so labels alone would let any pod in any namespace exempt itself");
		if (label_selector_empty(&sels[i].selector) && (at = selector_required_at(ld, item)) != NULL)
			yml_fail(ld, at, sub, "matchLabels or matchExpressions is required and must not be empty (an "
			     "empty selector would exempt every pod in those namespaces: list them in "
			     "exempt.namespaces instead)");
	}
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++)
		pod_selector_free(&cfg->exempt_pod_selectors[i]);
	free(cfg->exempt_pod_selectors);
	cfg->exempt_pod_selectors = sels;
	cfg->n_exempt_pod_selectors = len;
}

static int exempt_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			const char *path)
{
	struct config *cfg = target;

	if (strcmp(key, "namespaces") == 0)
		read_strings(ld, v, path, &cfg->exempt_namespaces);
	else if (strcmp(key, "daemonSets") == 0)
		yml_read_bool(ld, v, path, &cfg->exempt_daemonsets);
	else if (strcmp(key, "daemonSetNamespaces") == 0)
		read_strings(ld, v, path, &cfg->exempt_daemonset_namespaces);
	else if (strcmp(key, "daemonSetControllers") == 0)
		read_strings(ld, v, path, &cfg->exempt_daemonset_controllers);
	else if (strcmp(key, "podSelectors") == 0)
		read_pod_selectors(ld, v, path, cfg);
	else
		return -1;
	return 0;
}

static void read_namespace_modes(struct yml_reader *ld, yaml_node_t *n, const char *path,
				 struct config *cfg)
{
	struct config_labels l = { NULL, 0 };
	struct config_namespace_mode *modes;
	size_t i;
	char sub[LIMIT_POLICY_STRING_MAX + 64];

	read_labels(ld, n, path, &l, 0);
	modes = calloc(l.n ? l.n : 1, sizeof *modes);
	if (modes == NULL) {
		yml_fail_nomem(ld);
		labels_free(&l);
		return;
	}
	for (i = 0; i < l.n; i++) {
		snprintf(sub, sizeof sub, "%s.%s", path, l.v[i].key);
		if (parse_mode(l.v[i].value, &modes[i].mode) != 0)
			yml_fail(ld, NULL, sub, "must be one of enforce, warn, dryrun");  /* at the value */
		modes[i].ns = l.v[i].key;  /* ownership moves to modes */
		l.v[i].key = NULL;
	}
	for (i = 0; i < cfg->n_namespace_modes; i++)
		free(cfg->namespace_modes[i].ns);
	free(cfg->namespace_modes);
	cfg->namespace_modes = modes;
	cfg->n_namespace_modes = l.n;
	labels_free(&l);
}

/* ==== Workloads: custom resources the validating webhook judges ==== */

static void workload_free(struct config_workload *w)
{
	free(w->group);
	free(w->kind);
	free(w->resource);
	strings_free(&w->versions);
}

static int workload_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			  const char *path)
{
	struct config_workload *w = target;
	char **slot = strcmp(key, "group") == 0 ? &w->group : strcmp(key, "kind") == 0 ? &w->kind
		      : strcmp(key, "resource") == 0 ? &w->resource : NULL;

	if (strcmp(key, "versions") == 0) {
		read_strings_checked(ld, v, path, &w->versions, k8s_name_api_version, "is not an API version: it ");
		return 0;
	}
	if (slot == NULL)
		return -1;
	yml_read_string_into(ld, v, path, slot, 0);
	return 0;
}

/* workloads: each entry a custom resource, named once. */
static void read_workloads(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_workload *l;
	size_t i, j, len;
	char sub[96];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {group, kind, versions, resource}", sizeof *l, &items, &len) != 0)
		return;
	l = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_workload *w = &l[i];

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with group, kind, versions and resource");
			continue;
		}
		yml_read_fields(ld, item, sub, w, workload_field, "group, kind, versions, resource");
		if (w->group == NULL && yml_map_get(ld, item, "group") == NULL)
			yml_fail(ld, item, sub, "group is required (the custom resource's API group, e.g. kubeflow.org)");
		else if (w->group != NULL && (why = k8s_name_crd_group(w->group)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "group"), sub, "group \"%s\" %s", w->group, why);
		if (w->kind == NULL && yml_map_get(ld, item, "kind") == NULL)
			yml_fail(ld, item, sub, "kind is required (e.g. PyTorchJob)");
		else if (w->kind != NULL && (why = k8s_name_dns1035(w->kind, 1)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "kind"), sub, "kind \"%s\" is not a kind: it %s", w->kind, why);
		/* A CRD's plural is a DNS-1035 label (apiextensions validation: IsDNS1035Label). */
		if (w->resource != NULL && (why = k8s_name_dns1035(w->resource, 0)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "resource"), sub, "resource \"%s\" is not a CRD's plural: it %s",
			     w->resource, why);
		for (j = 0; w->group != NULL && w->kind != NULL && j < i; j++)
			if (l[j].group != NULL && l[j].kind != NULL && strcmp(l[j].group, w->group) == 0 &&
			    strcmp(l[j].kind, w->kind) == 0) {
				yml_fail(ld, item, sub, "lists %s %s again (%s[%zu]): one entry, with every version in it",
				     w->group, w->kind, path, j);
				break;
			}
	}
	for (i = 0; i < cfg->n_workloads; i++)
		workload_free(&cfg->workloads[i]);
	free(cfg->workloads);
	cfg->workloads = l;
	cfg->n_workloads = len;
}

const struct config_workload *config_workload_find(const struct config *cfg, const char *group,
						   const char *version, const char *kind)
{
	size_t i, j;

	for (i = 0; group != NULL && kind != NULL && i < cfg->n_workloads; i++) {
		const struct config_workload *w = &cfg->workloads[i];

		if (w->group == NULL || w->kind == NULL || strcmp(w->group, group) != 0 || strcmp(w->kind, kind) != 0)
			continue;
		if (w->versions.n == 0)
			return w;
		for (j = 0; version != NULL && j < w->versions.n; j++)
			if (strcmp(w->versions.v[j], version) == 0)
				return w;
	}
	return NULL;
}

/* ==== GPU intent beyond resources: annotations and share resources ==== */

static void gpu_annotation_free(struct config_gpu_annotation *a)
{
	free(a->key);
	strings_free(&a->scheduler_names);
	free(a->resource);
}

static void gpu_annotations_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_gpu_annotations; i++)
		gpu_annotation_free(&cfg->gpu_annotations[i]);
	free(cfg->gpu_annotations);
	cfg->gpu_annotations = NULL;
	cfg->n_gpu_annotations = 0;
}

static void gpu_shares_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_gpu_shares; i++) {
		free(cfg->gpu_shares[i].name);
		free(cfg->gpu_shares[i].resource);
	}
	free(cfg->gpu_shares);
	cfg->gpu_shares = NULL;
	cfg->n_gpu_shares = 0;
}

static int gpu_annotation_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
				const char *path)
{
	struct config_gpu_annotation *a = target;

	if (strcmp(key, "schedulerNames") == 0)
		read_strings(ld, v, path, &a->scheduler_names);
	else if (strcmp(key, "key") == 0)
		yml_read_string_into(ld, v, path, &a->key, 0);
	else if (strcmp(key, "resource") == 0)
		yml_read_string_into(ld, v, path, &a->resource, 0);
	else
		return -1;
	return 0;
}

/* gpuAnnotations: each {key, schedulerNames, resource}, all required. */
static void read_gpu_annotations(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_gpu_annotation *l;
	size_t i, len;
	char sub[96];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {key, schedulerNames, resource}", sizeof *l, &items, &len) != 0)
		return;
	l = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_gpu_annotation *a = &l[i];

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with key, schedulerNames and resource");
			continue;
		}
		yml_read_fields(ld, item, sub, a, gpu_annotation_field, "key, schedulerNames, resource");
		if (a->key == NULL && yml_map_get(ld, item, "key") == NULL)
			yml_fail(ld, item, sub, "key is required (the annotation, e.g. gpu-fraction)");
		else if (a->key != NULL && (why = k8s_name_label_key(a->key)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "key"), sub, "key \"%s\" is not an annotation key: it %s",
				 a->key, why);
		/* Without a scheduler, any pod could name itself a GPU pod and reach GPU nodes. */
		if (a->scheduler_names.n == 0 && yml_map_get(ld, item, "schedulerNames") == NULL)
			yml_fail(ld, item, sub, "schedulerNames is required: the annotation means a GPU only to "
				 "the scheduler that reads it (e.g. [kai-scheduler])");
		else if (a->scheduler_names.n == 0)
			yml_fail(ld, yml_field_at(ld, item, "schedulerNames"), sub, "schedulerNames must not be empty");
		if (a->resource == NULL && yml_map_get(ld, item, "resource") == NULL)
			yml_fail(ld, item, sub, "resource is required (the GPU resource it is a share of, e.g. "
				 "nvidia.com/gpu)");
	}
	gpu_annotations_free(cfg);
	cfg->gpu_annotations = l;
	cfg->n_gpu_annotations = len;
}

static int gpu_share_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			   const char *path)
{
	struct config_gpu_share *g = target;
	char **slot = strcmp(key, "name") == 0 ? &g->name : strcmp(key, "resource") == 0 ? &g->resource : NULL;

	if (slot == NULL)
		return -1;
	yml_read_string_into(ld, v, path, slot, 0);
	return 0;
}

/* gpuShareResources: each {name, resource}, both required. */
static void read_gpu_shares(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_gpu_share *l;
	size_t i, len;
	char sub[96];
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {name, resource}", sizeof *l, &items, &len) != 0)
		return;
	l = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with name and resource");
			continue;
		}
		yml_read_fields(ld, item, sub, &l[i], gpu_share_field, "name, resource");
		if (l[i].name == NULL && yml_map_get(ld, item, "name") == NULL)
			yml_fail(ld, item, sub, "name is required (a resource name or glob, e.g. nvidia.com/gpumem)");
		if (l[i].resource == NULL && yml_map_get(ld, item, "resource") == NULL)
			yml_fail(ld, item, sub, "resource is required (the GPU resource it stands for, e.g. "
				 "nvidia.com/gpu)");
	}
	gpu_shares_free(cfg);
	cfg->gpu_shares = l;
	cfg->n_gpu_shares = len;
}

/*
 * A gpuInfraNamespaces entry: a namespace's name, not a glob, since the chart
 * selects the namespaces by kubernetes.io/metadata.name In [...].
 */
static const char *infra_namespace_bad(const char *s)
{
	if (strpbrk(s, "*?") != NULL)
		return "is not a namespace's name: globs cannot be selected by the chart's namespaceSelector";
	if (k8s_name_namespace_glob(s) != NULL)
		return "is not a namespace's name: a DNS label, at most 63 of a-z, 0-9 and '-'";
	return NULL;
}

static int top_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
		     const char *path)
{
	struct config *cfg = target;

	if (strcmp(key, "mode") == 0)
		read_mode(ld, v, path, &cfg->mode);
	else if (strcmp(key, "namespaceModes") == 0)
		read_namespace_modes(ld, v, path, cfg);
	else if (strcmp(key, "gpuResources") == 0)
		read_strings(ld, v, path, &cfg->gpu_resources);
	else if (strcmp(key, "gpuDeviceClasses") == 0)
		read_strings(ld, v, path, &cfg->gpu_device_classes);
	else if (strcmp(key, "gpuAnnotations") == 0)
		read_gpu_annotations(ld, v, path, cfg);
	else if (strcmp(key, "gpuShareResources") == 0)
		read_gpu_shares(ld, v, path, cfg);

	else if (strcmp(key, "gpuTaint") == 0)
		yml_read_fields(ld, v, path, cfg, taint_field, "key, value, effect");
	else if (strcmp(key, "gpuNodeLabels") == 0)
		read_strings(ld, v, path, &cfg->gpu_node_labels);
	else if (strcmp(key, "gpuNodeNames") == 0)
		read_strings(ld, v, path, &cfg->gpu_node_names);
	else if (strcmp(key, "pools") == 0)
		read_pools(ld, v, path, cfg);
	else if (strcmp(key, "placement") == 0)
		read_placement(ld, v, path, &cfg->placement);
	else if (strcmp(key, "deferLabels") == 0) {
		read_strings_checked(ld, v, path, &cfg->defer_labels, k8s_name_label_key, "is not a label key: it ");
	}
	else if (strcmp(key, "gpuInfraNamespaces") == 0)
		read_strings_checked(ld, v, path, &cfg->gpu_infra_namespaces, infra_namespace_bad, "");
	else if (strcmp(key, "exempt") == 0)
		yml_read_fields(ld, v, path, cfg, exempt_field,
			    "namespaces, daemonSets, daemonSetNamespaces, daemonSetControllers, podSelectors");
	else if (strcmp(key, "workloads") == 0)
		read_workloads(ld, v, path, cfg);
	else
		return -1;
	return 0;
}

const char *config_label_alias(const char *key)
{
	static const char *const aliases[][2] = {
		{ CONFIG_AKS_POOL_LABEL, CONFIG_AKS_POOL_ALIAS },
	};
	size_t i;

	for (i = 0; key != NULL && i < sizeof aliases / sizeof aliases[0]; i++) {
		if (strcmp(key, aliases[i][0]) == 0)
			return aliases[i][1];
		if (strcmp(key, aliases[i][1]) == 0)
			return aliases[i][0];
	}
	return NULL;
}

int config_label_same(const char *a, const char *b)
{
	const char *alias = config_label_alias(a);

	return strcmp(a, b) == 0 || (alias != NULL && strcmp(alias, b) == 0);
}

const char *config_pool_aks_pool(const struct config_pool *p)
{
	size_t i;

	/* The label first, then its alias: the chart's match conditions read them in this order. */
	for (int pass = 0; pass < 2; pass++)
		for (i = 0; i < p->node_selector.n; i++)
			if (strcmp(p->node_selector.v[i].key, pass ? CONFIG_AKS_POOL_ALIAS : CONFIG_AKS_POOL_LABEL) == 0 &&
			    p->node_selector.v[i].value[0])
				return p->node_selector.v[i].value;
	return NULL;
}

const char *config_pool_key(const struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_pools; i++)
		if (cfg->pools[i].node_selector.n != 1 ||
		    strcmp(cfg->pools[i].node_selector.v[0].key, cfg->pools[0].node_selector.v[0].key) != 0)
			return NULL;
	return cfg->n_pools > 0 ? cfg->pools[0].node_selector.v[0].key : NULL;
}

/*
 * placement: fallback puts every eligible pool's value into one
 * `key In [...]` requirement, which only says "one of these pools" when each
 * pool is exactly one value of one key. Each pool that is not is an error at
 * its nodeSelector (a pool without one has its own error already).
 */
static void check_fallback(struct yml_reader *ld, const struct config *cfg)
{
	const char *key = NULL;
	size_t i, ref = 0;
	char path[64];

	if (cfg->placement != CONFIG_PLACEMENT_FALLBACK || config_pool_key(cfg) != NULL)
		return;
	for (i = 0; i < cfg->n_pools && key == NULL; i++)
		if (cfg->pools[i].node_selector.n == 1) {
			key = cfg->pools[i].node_selector.v[0].key;
			ref = i;
		}
	for (i = 0; i < cfg->n_pools; i++) {
		const struct config_pool *p = &cfg->pools[i];
		const char *name = p->name ? p->name : "(unnamed)";

		snprintf(path, sizeof path, "pools[%zu].nodeSelector", i);
		if (p->node_selector.n > 1)
			yml_fail(ld, NULL, path, "placement fallback needs every pool to select by exactly one label "
			     "(pool \"%s\" has %zu), one and the same key for all (e.g. "
			     "kubernetes.azure.com/agentpool, or karpenter.sh/nodepool)", name, p->node_selector.n);
		else if (p->node_selector.n == 1 && strcmp(p->node_selector.v[0].key, key) != 0)
			yml_fail(ld, NULL, path, "placement fallback needs every pool to select by the same label key: "
			     "pool \"%s\" selects by %s, pools[%zu] by %s", name, p->node_selector.v[0].key, ref, key);
	}
}

/*
 * The toleration gpuInfraNamespaces adds to a DaemonSet's template is a
 * route to GPU nodes for a CPU-only pod: its pods are admitted only where
 * the DaemonSet exemption or a namespace's exemption admits them. Elsewhere
 * the template would be patched and then denied, or its pods refused.
 */
static void check_infra(struct yml_reader *ld, const struct config *cfg)
{
	size_t i, j;

	for (i = 0; i < cfg->gpu_infra_namespaces.n; i++) {
		const char *ns = cfg->gpu_infra_namespaces.v[i];
		int admitted = 0;

		for (j = 0; j < cfg->exempt_namespaces.n && !admitted; j++)
			admitted = strcmp(cfg->exempt_namespaces.v[j], ns) == 0;
		for (j = 0; cfg->exempt_daemonsets && j < cfg->exempt_daemonset_namespaces.n && !admitted; j++)
			admitted = policy_glob_match(cfg->exempt_daemonset_namespaces.v[j], ns);
		if (admitted)
			continue;
		yml_fail(ld, NULL, "gpuInfraNamespaces", "\"%s\": its DaemonSets would get the GPU toleration and their CPU-only pods be "
			 "refused for it: list it in exempt.daemonSetNamespaces (with exempt.daemonSets on) or in "
			 "exempt.namespaces", ns);
	}
}

/* Rules that span fields, checked once the whole file is overlaid. */
static void check_whole(struct yml_reader *ld, const struct config *cfg)
{
	size_t i, j;

	check_fallback(ld, cfg);
	check_infra(ld, cfg);
	if (cfg->gpu_resources.n == 0)
		yml_fail(ld, NULL, "gpuResources", "must list at least one resource");
	if (cfg->taint_effect != NULL && strcmp(cfg->taint_effect, "NoSchedule") != 0 &&
	    strcmp(cfg->taint_effect, "PreferNoSchedule") != 0 &&
	    strcmp(cfg->taint_effect, "NoExecute") != 0)
		yml_fail(ld, NULL, "gpuTaint.effect", "must be NoSchedule, PreferNoSchedule or NoExecute");
	for (i = 0; i < cfg->n_pools; i++)
		for (j = 0; j < i; j++)
			if (cfg->pools[i].name && cfg->pools[j].name &&
			    strcmp(cfg->pools[i].name, cfg->pools[j].name) == 0) {
				char at[64];

				snprintf(at, sizeof at, "pools[%zu].name", i);
				yml_fail(ld, NULL, at, "two pools are named \"%s\" (pools[%zu] too)",
				     cfg->pools[i].name, j);
				break;
			}
}

/* A priced pool's cost per GPU-hour, or -1 when it cannot be known from the policy alone. */
static double per_gpu_price(const struct config_pool *p)
{
	return p->priced && p->gpus_per_node > 0 ? p->price_per_node_hour / (double)p->gpus_per_node : -1;
}

size_t config_warnings(const struct config *cfg, char *buf, size_t cap)
{
	size_t i, j, n = 0, used;

	if (cap > 0)
		buf[0] = '\0';
	/* Pools are tried in order: a cheaper pool listed after a pricier one is used only as a fallback. */
	for (i = 0; i < cfg->n_pools; i++) {
		double pi = per_gpu_price(&cfg->pools[i]);

		for (j = 0; pi >= 0 && j < i; j++) {
			double pj = per_gpu_price(&cfg->pools[j]);

			if (pj < 0 || pi >= pj)
				continue;
			used = cap > 0 ? strlen(buf) : 0;
			if (used + 1 < cap)
				snprintf(buf + used, cap - used,
					 "%spools[%zu] (\"%s\", %.4g per GPU-hour) is cheaper per GPU than "
					 "pools[%zu] (\"%s\", %.4g) listed before it; pools are tried in order, "
					 "cheapest first", n ? "\n" : "", i, cfg->pools[i].name, pi, j,
					 cfg->pools[j].name, pj);
			n++;
			break;
		}
	}
	return n;
}

/* ==== Loading ==== */

/* Overlays the YAML in buf on cfg. Every problem goes to errs; 0 when there were none. */
static int apply_yaml(struct config *cfg, const char *buf, size_t len, const char *name,
		      struct config_errors *errs, struct error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	struct yml_reader ld = { .doc = &doc, .name = name, .add_error = errors_add, .sink = errs, .nomem = 0 };
	yaml_node_t *root;
	size_t before = errs->total;

	if (yml_check_bounds(&ld, buf, len) != 0)
		goto out;
	if (!yaml_parser_initialize(&parser)) {
		error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yml_problem(&ld, &parser, buf, len);
		goto out_parser;
	}
	root = yaml_document_get_root_node(&doc);
	if (root != NULL && !yml_is_null(root)) {
		if (root->type != YAML_MAPPING_NODE)
			yml_fail(&ld, root, "(top level)", "must be a map of fields");
		else
			yml_read_fields(&ld, root, "", cfg, top_field,
				    "mode, namespaceModes, gpuResources, gpuDeviceClasses, gpuAnnotations, "
				    "gpuShareResources, gpuTaint, gpuNodeLabels, gpuNodeNames, pools, placement, "
				    "deferLabels, gpuInfraNamespaces, exempt, workloads");
	}
	if (root != NULL) {
		if (!yaml_parser_load(&parser, &extra)) {
			yml_problem(&ld, &parser, buf, len);
		} else {
			if (yaml_document_get_root_node(&extra) != NULL)
				yml_fail(&ld, yaml_document_get_root_node(&extra), "(document)",
				     "a policy file holds one YAML document");
			yaml_document_delete(&extra);
		}
	}
	/* Also after other errors: a rule over several fields is one more thing to fix. */
	if (!ld.nomem)
		check_whole(&ld, cfg);
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
out:
	if (ld.nomem) {
		/* Not a policy error: no list, and err's kind tells the two apart. */
		config_errors_free(errs);
		error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		return -1;
	}
	return errs->total == before ? 0 : -1;
}

/* An error and the order it was found in: errors at the same place keep that order. */
struct ordered_error {
	struct config_error e;
	size_t seq;
};

static int ordered_cmp(const void *a, const void *b)
{
	const struct ordered_error *x = a, *y = b;

	if (x->e.line != y->e.line)
		return x->e.line < y->e.line ? -1 : 1;
	if (x->e.column != y->e.column)
		return x->e.column < y->e.column ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Puts errs in file order (rules over several fields are checked last, but
 * point into the file). -1 when out of memory.
 */
static int errors_sort(struct config_errors *errs)
{
	struct ordered_error *tmp;
	size_t i;

	if (errs->n < 2)
		return 0;
	if ((tmp = calloc(errs->n, sizeof *tmp)) == NULL)
		return -1;
	for (i = 0; i < errs->n; i++) {
		tmp[i].e = errs->v[i];
		tmp[i].seq = i;
	}
	qsort(tmp, errs->n, sizeof *tmp, ordered_cmp);
	for (i = 0; i < errs->n; i++)
		errs->v[i] = tmp[i].e;
	free(tmp);
	return 0;
}

/* The summary in err for a load that failed with errors in errs. */
static void errors_summary(const struct config_errors *errs, const char *name, int listed,
			   struct error *err)
{
	if (errs->total == 1)
		error_set(err, ERROR_CONFIG, "%s", errs->v[0].text);
	else if (listed)
		error_set(err, ERROR_CONFIG, "%s: %zu errors", name, errs->total);
	else
		error_set(err, ERROR_CONFIG, "%s (and %zu more: gpu-admission check-config %s lists them all)",
			  errs->v[0].text, errs->total - 1, name);
}

struct config *config_default(struct error *err)
{
	struct config_errors errs = { 0 };
	struct config *cfg = calloc(1, sizeof *cfg);

	if (cfg == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	if (apply_yaml(cfg, default_yaml, sizeof default_yaml - 1, "(default policy)", &errs, err) != 0) {
		if (errs.total > 0)
			errors_summary(&errs, "(default policy)", 0, err);
		config_free(cfg);
		cfg = NULL;
	}
	config_errors_free(&errs);
	return cfg;
}

struct config *config_load_buffer_all(const char *buf, size_t len, const char *name,
				      struct config_errors *errs, struct error *err)
{
	struct config_errors own = { 0 };
	struct config_errors *e = errs ? errs : &own;
	struct config *cfg;

	config_errors_free(e);
	if (len > CONFIG_FILE_MAX) {  /* as file_read() refuses a larger file */
		char size[32];

		error_set(err, ERROR_TOO_LARGE, "%s: larger than %s", name,
			  error_size_text(size, sizeof size, (size_t)CONFIG_FILE_MAX));
		return NULL;
	}
	if ((cfg = config_default(err)) == NULL)
		return NULL;
	if (apply_yaml(cfg, buf, len, name, e, err) != 0) {
		config_free(cfg);
		cfg = NULL;
		if (e->total > 0 && errors_sort(e) != 0) {
			config_errors_free(e);
			error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		} else if (e->total > 0) {
			errors_summary(e, name, errs != NULL, err);
		}
	}
	config_errors_free(&own);
	return cfg;
}

size_t config_load_memory(size_t len)
{
	size_t n = len < CONFIG_FILE_MAX ? len : CONFIG_FILE_MAX;
	size_t bound = CONFIG_LOAD_BASE + n * CONFIG_LOAD_PER_BYTE;

	return bound < CONFIG_LOAD_MAX ? bound : CONFIG_LOAD_MAX;
}

struct config *config_load_buffer(const char *buf, size_t len, const char *name,
				  struct error *err)
{
	return config_load_buffer_all(buf, len, name, NULL, err);
}

struct config *config_load_file_all(const char *path, struct config_errors *errs, struct error *err)
{
	struct config *cfg;
	size_t len;
	char *buf;

	if (errs != NULL)
		config_errors_free(errs);
	if ((buf = file_read(path, CONFIG_FILE_MAX, &len, err)) == NULL)
		return NULL;
	cfg = config_load_buffer_all(buf, len, path, errs, err);
	free(buf);
	return cfg;
}

struct config *config_load_file(const char *path, struct error *err)
{
	return config_load_file_all(path, NULL, err);
}

void config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->n_namespace_modes; i++)
		free(cfg->namespace_modes[i].ns);
	free(cfg->namespace_modes);
	strings_free(&cfg->gpu_resources);
	strings_free(&cfg->gpu_device_classes);
	gpu_annotations_free(cfg);
	gpu_shares_free(cfg);
	free(cfg->taint_key);
	free(cfg->taint_value);
	free(cfg->taint_effect);
	strings_free(&cfg->gpu_node_labels);
	strings_free(&cfg->gpu_node_names);
	for (i = 0; i < cfg->n_pools; i++)
		pool_free(&cfg->pools[i]);
	free(cfg->pools);
	strings_free(&cfg->defer_labels);
	strings_free(&cfg->gpu_infra_namespaces);
	strings_free(&cfg->exempt_namespaces);
	strings_free(&cfg->exempt_daemonset_namespaces);
	strings_free(&cfg->exempt_daemonset_controllers);
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++)
		pod_selector_free(&cfg->exempt_pod_selectors[i]);
	free(cfg->exempt_pod_selectors);
	for (i = 0; i < cfg->n_workloads; i++)
		workload_free(&cfg->workloads[i]);
	free(cfg->workloads);
	free(cfg);
}

int config_gpu_infra(const struct config *cfg, const char *ns)
{
	size_t i;

	for (i = 0; ns != NULL && i < cfg->gpu_infra_namespaces.n; i++)
		if (strcmp(cfg->gpu_infra_namespaces.v[i], ns) == 0)
			return 1;
	return 0;
}

enum config_mode config_mode_for(const struct config *cfg, const char *ns)
{
	size_t i;

	for (i = 0; ns != NULL && i < cfg->n_namespace_modes; i++)
		if (strcmp(cfg->namespace_modes[i].ns, ns) == 0)
			return cfg->namespace_modes[i].mode;
	return cfg->mode;
}

const char *config_placement_name(enum config_placement placement)
{
	return placement == CONFIG_PLACEMENT_FALLBACK ? "fallback" : "pinned";
}

const char *config_mode_name(enum config_mode mode)
{
	switch (mode) {
	case CONFIG_MODE_ENFORCE: return "enforce";
	case CONFIG_MODE_WARN:    return "warn";
	case CONFIG_MODE_DRYRUN:  return "dryrun";
	}
	return "enforce";
}
