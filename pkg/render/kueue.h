/*
 * kueue: the Kueue objects under which Kueue's flavors and gpu-admission's pools
 * agree by construction (print-kueue-config): one ResourceFlavor per pool (the
 * pool's nodeSelector as spec.nodeLabels, the GPU taint's toleration and the
 * pool's own as spec.tolerations), a ClusterQueue over the pools in the policy's
 * order (cheapest first, the order Kueue tries flavors in), and LocalQueues.
 *
 * Kueue v0.17 serves kueue.x-k8s.io v1beta1 and v1beta2 and stores v1beta2
 * (config/components/crd/bases in sigs.k8s.io/kueue v0.17.0); without its
 * conversion webhook a v1beta1 object is only relabelled, so v1beta2 is written.
 * When Kueue admits a Workload it copies the flavor's nodeLabels into the pod
 * template's nodeSelector and appends its tolerations (pkg/podset FromAssignment,
 * Merge), an UPDATE of the Job gpu-admission's validating webhook judges: what
 * Kueue cannot express (maxGPUsPerPod, podSelector, namespace globs) is said as a
 * note, since such a flavor may be assigned to a pod the pool refuses.
 * Pure: builds text, does no I/O.
 */
#ifndef GPU_ADMISSION_KUEUE_H
#define GPU_ADMISSION_KUEUE_H

#include <stddef.h>

#include "policy/config.h"
#include "base/error.h"

#define KUEUE_API_VERSION "kueue.x-k8s.io/v1beta2"
#define KUEUE_QUEUE_DEFAULT "gpu"        /* the ClusterQueue's name when none is given */
#define KUEUE_FLAVOR_LABELS_MAX 8        /* ResourceFlavor spec.nodeLabels maxProperties */
#define KUEUE_FLAVOR_TOLERATIONS_MAX 8   /* ResourceFlavor spec.tolerations maxItems */
#define KUEUE_RESOURCES_MAX 64           /* a resource group's coveredResources maxItems */
#define KUEUE_FLAVORS_MAX 64             /* a resource group's flavors maxItems */
#define KUEUE_NAME_MAX 253               /* an object name: a DNS subdomain */

/* --quota RES=N: the nominalQuota of RES in every flavor of the queue that serves it. */
struct kueue_quota {
	const char *resource;
	const char *quantity;  /* a Kubernetes quantity, not negative */
};

/* What to print besides the flavors. Every member may be zero. */
struct kueue_options {
	const char *queue;                 /* the ClusterQueue's name; NULL: KUEUE_QUEUE_DEFAULT */
	const char *const *pools;          /* the pools it uses, by name, in the policy's order
	                                      whatever the order given; n_pools 0: every pool */
	size_t n_pools;
	const char *const *resources;      /* GPU resources to cover besides the pools' exact ones */
	size_t n_resources;
	const struct kueue_quota *quotas;  /* a covered resource each; the rest get "0" */
	size_t n_quotas;
	const char *const *local_queues;   /* namespaces given a LocalQueue named as the queue */
	size_t n_local_queues;
};

/*
 * New: the objects as multi-document YAML (free()): a ResourceFlavor per pool
 * of cfg, then the ClusterQueue over opt's pools covering cpu, memory and the
 * GPU resources they serve by exact name (a flavor's quota is 0 for a resource
 * its pool does not serve), then the LocalQueues. notes (cap bytes, may be
 * NULL) receives one line per thing Kueue cannot be told (a pool's per-pod
 * limit, podSelector or namespace globs; resources served by glob only). NULL
 * with ERROR_CONFIG when a pool cannot be a flavor (its name, more labels or
 * tolerations than a flavor holds) or the chosen pools share no namespace;
 * ERROR_INPUT when opt names an unknown pool, a resource that is no GPU
 * resource of the policy, a quota of a resource not covered or not a quantity,
 * or an invalid name; ERROR_NOMEM.
 */
char *kueue_config(const struct config *cfg, const struct kueue_options *opt, char *notes, size_t cap,
		   struct error *err);

#endif
