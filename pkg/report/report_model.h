/*
 * report_model: the cost report's model kept up to date by watch events
 * (a Node, Pod, ResourceSlice or ResourceClaim ADDED, MODIFIED or DELETED), one event at a time, instead
 * of re-reading the whole cluster: what `gpu-admission watch` will keep.
 *
 * Memory is what the report needs, not the cluster's bytes. Each Node keeps
 * the fields the report reads (pkg/report/report.h's item shape). A Pod keeps
 * its name and what it contributes: a GPU pod its node and requests, a
 * DaemonSet pod its node and DaemonSet; only the pods the report names (CPU
 * pods on GPU nodes, or on nodes not seen yet, and Pending GPU pods) keep
 * their fields for judging, as do Pending pods with DRA claims. Terminated
 * pods and CPU pods on CPU nodes keep only their name. A ResourceSlice keeps
 * its driver, node and number of devices, a ResourceClaim its requests'
 * classes and counts, its allocation's node and results, the pods it is
 * reserved for (report_dra_slim_slice(), _claim()), each as compact JSON
 * text (cmd/gpu-admission/README.md states the bytes).
 *
 * A running GPU pod also keeps, for the what-if, what the policy reads of it
 * (policy_pod_fields: namespace, labels, annotations, owners; containers'
 * names and resources, tolerations, nodeSelector, affinity, resourceClaims,
 * schedulerName) but its name and node, as compact JSON text shared by the
 * pods whose text is the same: a pointer per GPU pod, and per distinct text
 * its bytes and 24 more (`make bench-model`'s GPU pods, each distinct: about
 * 1 KB each). Every pod's own entry is 40 bytes, plus its key and requests.
 * CPU-only DaemonSet pods and CPU pods on CPU nodes keep no such text: the
 * what-if judges the running pods it holds fields of (GPU pods, CPU pods on
 * GPU nodes), where `report --what-if` over a snapshot judges every running
 * pod.
 *
 * report_model_report() builds the report of the current state, the same as
 * `report` over a List of the same objects (nodes in the order first added,
 * then the ResourceSlices and ResourceClaims, then pods in the order last added): test/unit/test_report_model.c checks it
 * on random event streams. What it cannot know without re-reading the pods:
 * the CPU pods already on a CPU node that later becomes a GPU node (its
 * labels, taints or allocatable changed) are counted from the next relist.
 */
#ifndef GPU_ADMISSION_REPORT_MODEL_H
#define GPU_ADMISSION_REPORT_MODEL_H

#include <jansson.h>

#include "base/error.h"
#include "policy/config.h"
#include "report/report.h"

/* ResourceSlices a model holds at most: a few per node (one per driver and pool) at REPORT_NODES_MAX nodes. */
#define REPORT_MODEL_SLICES_MAX (4u * REPORT_NODES_MAX)

struct report_model;

/* New: an empty model judged by cfg (borrowed; must outlive it), or NULL with ERROR_NOMEM. */
struct report_model *report_model_new(const struct config *cfg, struct error *err);

/* Releases m. Accepts NULL. */
void report_model_free(struct report_model *m);

/*
 * Applies one event to m: obj (borrowed) is the Node, Pod, ResourceSlice or ResourceClaim as the watch
 * sends it (report_item_parse() keeps what is read). ADDED and MODIFIED
 * replace the object of that name; DELETED removes it; OTHER is ignored. An object the report
 * refuses (a field of the wrong type, a GPU count that is not one) counts as
 * a refused event and leaves the model as it was, as does another kind.
 * 0, or -1 with ERROR_NOMEM or ERROR_TOO_LARGE (REPORT_NODES_MAX).
 */
int report_model_apply(struct report_model *m, enum report_event_type ev, const json_t *obj, struct error *err);

/*
 * Bounds the living pods m holds (0: no bound, the default), and its
 * ResourceClaims as many: a new pod or claim beyond max_pods is refused
 * (counted), so that a cluster bigger than the watch was sized for costs
 * figures, not memory. Nodes are bounded by REPORT_NODES_MAX, ResourceSlices
 * by REPORT_MODEL_SLICES_MAX.
 */
void report_model_limit(struct report_model *m, size_t max_pods);

/*
 * A list of kind ("Node", "Pod", "ResourceSlice" or "ResourceClaim") begins: it hands over every object of
 * that kind, each as an ADDED event. report_model_list_end() after a
 * complete list deletes the objects of kind it did not hand over (deleted
 * while the watch was down); a list that failed simply has no end, and what
 * it applied stays (newer than what it replaced). Mark and sweep: one mark
 * per object, one pass over the kind at the end (DRA objects: the list's keys
 * noted in a set that lives while it runs).
 */
void report_model_list_begin(struct report_model *m, const char *kind);
void report_model_list_end(struct report_model *m, const char *kind);

/* Counts: nodes, pods, ResourceSlices and ResourceClaims held, events refused; the running GPU
 * pods' judged texts and their bytes. */
struct report_model_stats {
	unsigned long nodes, pods, kept_pods, refused, slices, claims;
	unsigned long judged, judged_bytes;
	unsigned long kept_bytes;      /* the kept pods' texts */
};
void report_model_stats(const struct report_model *m, struct report_model_stats *s);

/*
 * r = the report of m's current state (r: caller storage, report_free() it
 * either way), finished. 0, or -1 with ERROR_NOMEM.
 */
int report_model_report(const struct report_model *m, struct report *r, struct error *err);

/*
 * As report_model_report(), also judged by the policy whatif (borrowed;
 * must outlive r) named name (borrowed) as `report --what-if` does over the
 * same objects, but for the running CPU-only DaemonSet pods and CPU pods on
 * CPU nodes, which it does not judge (above); whatif NULL: none.
 */
int report_model_whatif(const struct report_model *m, const struct config *whatif, const char *name,
			struct report *r, struct error *err);

#endif
