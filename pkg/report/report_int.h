/*
 * report_int: what the files of the report's model share. Private to
 * pkg/report/report*.c.
 *
 *   report.c        the model: nodes, pods, workloads folded into it, item by item
 *   report_input.c  reading the inputs: JSON Lists streamed, YAML documents, watch events
 *   report_check.c  the type of every field the model reads, checked first
 *   report_summary.c names, totals, the summary line and the exit code, for every output
 *   report_judge.c  judging what needs every input: pools, costs, misconfiguration,
 *                   CPU pods' routes, Pending pods' reasons
 *   report_whatif.c --what-if: the same snapshot judged by another policy
 *   report_dra.c    ResourceSlices and ResourceClaims: GPUs served and held through DRA
 */
#ifndef GPU_ADMISSION_REPORT_INT_H
#define GPU_ADMISSION_REPORT_INT_H

#include <stddef.h>

#include <jansson.h>

#include "report/report.h"
#include "policy/policy.h"

#define REPORT_ITEM_MSG_MAX (ERROR_MSG_MAX + 512)  /* an input error about one item, its place included */

/*
 * Folds one Node or Pod item (borrowed; off: its byte in the input, for
 * messages) into r: an item that is not what the report reads is an input
 * error in r, not a failure. -1 only on ERROR_NOMEM. report.c, called by
 * report_input.c.
 */
int report_node_item(struct report *r, const char *input, const json_t *node, unsigned long long off,
		     struct error *err);
int report_pod_item(struct report *r, const char *input, const json_t *pod, unsigned long long off,
		    struct error *err);

/*
 * Does every field of a Pod (a Node) the report reads have its type? 0, or
 * -1 with what is wrong in msg (cap bytes), naming the field. report_check.c.
 */
int report_pod_valid(const json_t *pod, char *msg, size_t cap);
int report_node_valid(const json_t *node, char *msg, size_t cap);

/*
 * A GPU count as pods must give one: a whole, non-negative quantity below
 * QUANTITY_MAX. 0 with *out, or -1 with why (static text, or qerr's
 * message, which qerr holds). report_check.c.
 */
int report_gpu_count(const json_t *v, long long *out, const char **why, struct error *qerr);

/* obj[key] as a string, or "" (borrowed). */
const char *report_str_at(const json_t *obj, const char *key);

/* A new zeroed element of l in *out; *out NULL when l holds REPORT_FINDINGS_MAX already. -1 on ENOMEM. */
int report_list_push(struct report_list *l, size_t size, void **out, struct error *err);

/* Frees what v owns and zeroes it. */
void report_verdict_free(struct report_verdict *v);

/* Does a configured pool serve resource? (A pool without resources serves every GPU resource.) */
int report_pool_serves(const struct config *cfg, const struct config_pool *p, const char *resource);

/* An input error in r (input and msg borrowed); -1 only on ENOMEM. */
int report_add_error(struct report *r, const char *input, const char *msg, struct error *err);

/* v = cfg's verdict on pod (borrowed) as a CREATE. 0, or -1 with ERROR_NOMEM. */
int report_judge_pod(const struct config *cfg, const json_t *pod, struct report_verdict *v, struct error *err);

/* New: pod without spec.nodeName (shallow copies; the rest shared), or NULL. */
json_t *report_unbound(const json_t *pod);

/* Do labels (borrowed, may be NULL) hold every key=value of a non-empty selector? */
int report_labels_match(const struct config_labels *sel, const json_t *labels);

/* The node named name in r (made on first mention): its index. -1 on ENOMEM or beyond REPORT_NODES_MAX. */
int report_node_index(struct report *r, const char *name, size_t *idx, struct error *err);

/* A bound pod requesting GPUs (count > 0) on node idx; a DaemonSet pod (ns, ds_name borrowed) on it. */
int report_gpu_pod_on(struct report *r, size_t idx, const struct policy_gpu_request *req, size_t count,
		      struct error *err);
int report_ds_pod_on(struct report *r, size_t idx, const char *ns, const char *ds_name, struct error *err);

/* One item (Node, Pod, or a workload for the auditor) folded into r, as an input's item is. */
int report_take_item(struct report *r, const char *input, const json_t *root, struct error *err);

/* The node named name, if the input named it: 1 with idx, else 0. */
int report_node_find(const struct report *r, const char *name, size_t *idx);

/* report_dra.c: a ResourceSlice or ResourceClaim item; a Pending pod (no GPU resource); the end's judgement. */
int report_dra_item(struct report *r, const json_t *root, struct error *err);
int report_dra_pending_pod(struct report *r, const json_t *pod, struct error *err);
int report_dra_finish(struct report *r, struct error *err);   /* before the nodes are judged */
int report_dra_pending(struct report *r, struct error *err);  /* after the Pending GPU pods are */
void report_dra_free(struct report_dra *d);
/*
 * A ResourceSlice item boiled down to what report_dra_item() reads of it (its
 * name, driver, node, and its devices as as many nulls): a new object, or
 * NULL on ENOMEM. The live model keeps this, not the devices' attributes.
 */
json_t *report_dra_slim_slice(const json_t *slice);
/*
 * As report_dra_slim_slice(), a ResourceClaim item: its name and namespace,
 * its requests' names, classes and counts, its allocation's node selector and
 * results' request names, the kinds and names it is reserved for.
 */
json_t *report_dra_slim_claim(const json_t *claim);

/* --what-if's parts (report_whatif.c): a Pending GPU pod p as read, a running pod on node, then once at the end. */
int report_whatif_pending(struct report *r, const json_t *pod, struct report_pending *p, struct error *err);
int report_whatif_running(struct report *r, const json_t *pod, size_t node, struct error *err);
/* The same, of a pod as its creator wrote it (no spec.nodeName) named ns/name (all borrowed). */
int report_whatif_running_as(struct report *r, const json_t *as_created, const char *ns, const char *name,
			     size_t node, struct error *err);
int report_whatif_finish(struct report *r, struct error *err);
void report_whatif_free(struct report_whatif *w);

/* Frees what c owns (its strings, verdicts, tolerations), not c itself: an entry of a report list. */
void report_cpu_pod_free(struct report_cpu_pod *c);

#endif
