/*
 * policy_stack: the GPU stack's own pods (device plugin, DRA driver, DCGM
 * exporter), which select GPU nodes by the labels their hardware carries
 * and must tolerate the GPU pools' taint to start there at all.
 *
 * NVIDIA's device-plugin chart (0.20.0, default values) requires one of
 * feature.node.kubernetes.io/pci-10de.present=true (Node Feature
 * Discovery: a PCI device of vendor 10de, NVIDIA), cpu-model.vendor_id=NVIDIA
 * (an NVIDIA SoC) or nvidia.com/gpu.present=true, and tolerates only
 * nvidia.com/gpu: on AKS, whose GPU pools are tainted sku=gpu:NoSchedule,
 * it never starts, no node offers nvidia.com/gpu and every GPU pod stays
 * Pending. These NFD labels mean NVIDIA hardware whatever the policy lists
 * in gpuNodeLabels (which also judges CPU pods, where a guess costs a
 * rejection): here they only decide a warning.
 */
#include "policy/policy_int.h"

#include <string.h>

/* Node Feature Discovery's labels for NVIDIA hardware, and the value that means it. */
static const struct { const char *key, *value; } nvidia_hw[] = {
	{ "feature.node.kubernetes.io/pci-10de.present", "true" },
	{ "feature.node.kubernetes.io/cpu-model.vendor_id", "NVIDIA" },
};

#define GPU_OPERATOR_PREFIX "nvidia.com/gpu." /* labels the GPU operator puts on GPU nodes only */

/*
 * Does a node carrying key=value (value NULL: any) have to be a GPU node?
 * The policy's rule (policy_gpu_label()), and NVIDIA's own labels.
 */
static int gpu_only(const struct config *cfg, const char *key, const char *value)
{
	size_t i;

	if (policy_gpu_label(cfg, key, value) || strncmp(key, GPU_OPERATOR_PREFIX, strlen(GPU_OPERATOR_PREFIX)) == 0)
		return 1;
	for (i = 0; value != NULL && i < sizeof nvidia_hw / sizeof nvidia_hw[0]; i++)
		if (strcmp(key, nvidia_hw[i].key) == 0 && strcmp(value, nvidia_hw[i].value) == 0)
			return 1;
	return 0;
}

/* A requirement only GPU nodes meet: In with every value a GPU one, or Exists on a GPU label. */
static int requirement_gpu_only(const struct config *cfg, const json_t *req)
{
	const char *key = policy_str(req, "key", ""), *op = policy_str(req, "operator", "");
	const json_t *values = json_object_get(req, "values"), *v;
	size_t i;

	if (strcmp(op, "Exists") == 0)
		return gpu_only(cfg, key, NULL);
	if (strcmp(op, "In") != 0 || json_array_size(values) == 0)
		return 0;
	json_array_foreach(iterable(values), i, v)
		if (!json_is_string(v) || !gpu_only(cfg, key, json_string_value(v)))
			return 0;
	return 1;
}

/* Every term of the required node affinity holds a requirement only GPU nodes meet. */
static int affinity_gpu_only(const struct config *cfg, const json_t *spec)
{
	const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
	const json_t *terms = json_object_get(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"),
					      "nodeSelectorTerms");
	const json_t *term, *req;
	size_t i, j;

	if (json_array_size(terms) == 0)
		return 0;
	json_array_foreach(iterable(terms), i, term) {
		int found = 0;

		json_array_foreach(iterable(json_object_get(term, "matchExpressions")), j, req)
			if (requirement_gpu_only(cfg, req))
				found = 1;
		if (!found)
			return 0;
	}
	return 1;
}

int policy_stack_aimed(const struct config *cfg, const struct pod_view *pv)
{
	const char *key;
	const json_t *v;

	json_object_foreach(iterable(pv->node_selector), key, v)
		if (gpu_only(cfg, key, json_string_value(v)))
			return 1;
	return affinity_gpu_only(cfg, pv->spec);
}

int policy_stack_untolerated(const struct config *cfg, const struct pod_view *pv, const struct pod_routes *r)
{
	return pv->n_gpu == 0 && pv->bad_quantity[0] == '\0' && !(r->taken & (ROUTE_TOLERATION | ROUTE_WILDCARD)) &&
	       policy_stack_aimed(cfg, pv);
}

/*
 * Only the template can be given the toleration: the DaemonSet controller
 * builds each pod from it (NewPod) and creates none for a node whose
 * NoSchedule taint it does not tolerate (NodeShouldRunDaemonPod, predicates:
 * k8s.io/kubernetes pkg/controller/daemon/daemon_controller.go), so there is
 * no pod to mutate. The rule is the admin's opt-in for namespaces where only
 * the GPU stack runs; it comes before the exemptions, since an exempt
 * namespace (gpu-operator) is where that stack is usually installed, and it
 * opens no route: the template already selects only GPU nodes.
 */
int policy_stack_infra(const struct config *cfg, const struct policy_request *req, const struct pod_view *pv,
		       struct policy_result *res, struct error *err)
{
	struct pod_routes routes;
	char taint[128];

	if (!req->template || !pv->daemonset ||
	    (req->operation != POLICY_OP_CREATE && req->operation != POLICY_OP_UPDATE) ||
	    !policy_list_has(&cfg->gpu_infra_namespaces, pv->ns))
		return 0;
	policy_routes_find(cfg, pv, &routes);
	if (!policy_stack_untolerated(cfg, pv, &routes))
		return 0;
	if (policy_pool_mutate(cfg, pv, NULL, res, err) != 0)
		return -1;
	res->reason = R_STACK_TOLERATED;
	res->template_patch = 1;
	policy_describe_taint(cfg, taint, sizeof taint);
	if (policy_warn(res, err, "namespace %s is in gpuInfraNamespaces: gpu-admission's mutating webhook adds "
			"the GPU taint's toleration (%s) to this DaemonSet's template, whose required node "
			"selection reaches only GPU nodes", pv->ns, taint) != 0)
		return -1;
	return 1;
}
