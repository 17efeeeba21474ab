/*
 * report: the GPU cost report's model. What the cluster's GPU pools are
 * doing, from a `kubectl get nodes,pods -A -o json` snapshot, judged with the
 * same policy and scheduler rules as the webhook.
 *
 * Inputs are read as streams (pkg/text/jsonstream.h): each item is parsed alone
 * (pkg/text/scan.h with a shape naming only the fields read here, jansson when the
 * scanner is unsure), folded into per-node counters and findings, and freed.
 * Memory grows with nodes and findings, never with the input's size. YAML
 * input goes through pkg/text/manifest.h whole, up to LIMIT_INPUT_FILE_MAX.
 *
 * What it finds (cmd/gpu-admission/README.md "Cost report"):
 *  - per pool (pools from the policy; a node belongs to the first pool whose
 *    nodeSelector its labels match; GPU nodes no pool selects are "unpooled"):
 *    nodes, GPUs allocatable and requested by non-terminated pods (counted as
 *    the scheduler counts, policy_gpu_requests()), idle nodes, and with
 *    pricePerNodeHour the hourly cost of idle nodes and unrequested GPUs;
 *  - CPU-only pods on GPU nodes: DaemonSet pods grouped by DaemonSet, the
 *    others named, with how they got there and policy_evaluate()'s verdict;
 *  - GPU pods Pending, and why (pkg/k8s/nodematch.h against the snapshot's nodes;
 *    a DRA pod's claim from the input's ResourceClaims: report_dra.c);
 *  - GPUs held by DRA claims: their nodes are busy, their pods GPU pods;
 *  - pool misconfiguration (untainted GPU nodes, tainted nodes without GPU
 *    allocatable, one pool's nodes with different taints);
 *  - workload objects in the input, with the audit's verdicts (pkg/audit/audit.h).
 * The writers (report_text.c, report_json.c, report_prom.c) only read it.
 */
#ifndef GPU_ADMISSION_REPORT_H
#define GPU_ADMISSION_REPORT_H

#include <stdio.h>

#include <jansson.h>

#include "audit/audit.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "base/error.h"
#include "text/scan.h"

#define REPORT_NODES_MAX 100000       /* nodes (and node names pods refer to) in one report */
#define REPORT_FINDINGS_MAX 10000     /* named entries kept per list; beyond, only counted */
#define REPORT_ITEM_DEPTH_MAX 128     /* JSON nesting in one item */
#define REPORT_MIG_SLICES_MAX 16      /* compute slices a MIG profile may name (mig-7g: a whole A100/H100) */

/* Why a GPU pod is Pending, judged from the snapshot. Order: the first that applies. */
enum report_pending_reason {
	REPORT_PENDING_GATED = 0,      /* spec.schedulingGates (Kueue, ...) hold it back */
	REPORT_PENDING_UNSERVED,       /* a GPU resource no pool serves, or no node offers */
	REPORT_PENDING_TOO_MANY,       /* more GPUs than any node has */
	REPORT_PENDING_SELECTOR,       /* nodeSelector / required affinity match no GPU node that fits */
	REPORT_PENDING_TOLERATION,     /* the nodes it selects carry a taint it does not tolerate */
	REPORT_PENDING_FULL,           /* nodes fit, but their GPUs are requested by other pods */
	REPORT_PENDING_CLASS_UNSERVED, /* its DRA claim asks for a GPU DeviceClass no pool serves */
	REPORT_PENDING_UNALLOCATED,    /* its DRA claim is not allocated (no free device, no driver) */
	REPORT_PENDING_OTHER,          /* a GPU node fits by GPUs, selector and taints */
	REPORT_PENDING_NREASONS
};

/* Pool misconfiguration, per node. */
enum report_misconfig_kind {
	REPORT_MIS_UNTAINTED = 0,      /* a GPU node without the GPU taint: CPU pods can land there */
	REPORT_MIS_NO_ALLOCATABLE,     /* a tainted GPU node offering no GPU: device plugin missing
	                                  (and no GPU driver's ResourceSlice names it) */
	REPORT_MIS_TAINTS_DIFFER,      /* taints differ from the pool's first node */
	REPORT_MIS_NKINDS
};

/* How a CPU-only pod got onto a GPU node (bits). */
#define REPORT_ROUTE_TOLERATION   0x01u /* a toleration for the GPU taint */
#define REPORT_ROUTE_WILDCARD     0x02u /* an empty-key Exists toleration */
#define REPORT_ROUTE_SELECTOR     0x04u /* nodeSelector on a GPU node label or a pool's key */
#define REPORT_ROUTE_AFFINITY     0x08u /* required node affinity on such a key */
#define REPORT_ROUTE_UNTOLERATED  0x10u /* it does not tolerate the node's taints: bound by
                                           spec.nodeName, or scheduled before the taint */
#define REPORT_ROUTE_UNTAINTED    0x20u /* the node has no GPU taint */
#define REPORT_NROUTES 6

struct report_pool {
	const char *name;                 /* borrowed from cfg, or "unpooled" */
	const struct config_pool *cfg;    /* borrowed; NULL for unpooled */
	unsigned long nodes, idle_nodes, gpu_pods, ds_pods, cpu_pods;
	long long gpus_allocatable, gpus_requested, gpus_unrequested;
	double idle_cost, unrequested_cost;  /* per hour; meaningful when cfg && cfg->priced */
	unsigned long misconfigured[REPORT_MIS_NKINDS];
};

/* What policy_evaluate() says of a pod as a CREATE. */
struct report_verdict {
	int would_reject, exempt;
	char *reason, *message;          /* owned: the reason code and message */
};

struct report_cpu_pod {
	char *ns, *name, *node, *owner;  /* owned; owner "ReplicaSet/web-7d9f" or "" */
	size_t node_index;
	int pool;                        /* index into pools, or -1 */
	unsigned routes;                 /* REPORT_ROUTE_* */
	char *taint;                     /* owned: the untolerated taint, or NULL */
	/*
	 * The verdict on the pod as its creator wrote it. A stored pod's
	 * spec.nodeName is the scheduler's binding, so it is judged without it;
	 * but a pod that does not tolerate its node's taints can only have been
	 * pinned there by its creator, and is judged with it (report_finish()
	 * swaps pinned in).
	 */
	struct report_verdict policy;
	struct report_verdict pinned;    /* with spec.nodeName; reason NULL when the pod has none */
	json_t *tolerations;             /* owned until report_finish() */
};

struct report_daemonset {
	char *ns, *name;                 /* owned */
	unsigned long pods;              /* on GPU nodes */
};

struct report_gpu {
	char *resource;                  /* owned */
	long long count;
};

struct report_pending {
	char *ns, *name;                 /* owned */
	struct report_gpu gpus[LIMIT_GPU_KINDS_MAX];
	size_t n_gpus;
	enum report_pending_reason reason;
	char *message;                   /* owned, set by report_finish() */
	json_t *spec;                    /* owned until report_finish(): what placement reads */
	json_t *wi_spec;                 /* owned until report_finish(): the spec as the --what-if
	                                    policy would admit it; NULL when it rejects the pod */
};

struct report_misconfig {
	enum report_misconfig_kind kind;
	char *node;                      /* owned */
	int pool;                        /* index into pools, or -1 */
	char *message;                   /* owned */
};

/* One node named by the input (a Node item, or only a pod's spec.nodeName). */
struct report_node {
	char *name;                      /* owned */
	int seen;                        /* its Node item was read */
	int gpu;                         /* a GPU node (cmd/gpu-admission/README.md: in a pool, GPU label, taint or allocatable) */
	int pool;                        /* index into pools (unpooled: n_pools - 1), or -1 */
	int tainted;                     /* carries the policy's GPU taint */
	json_t *labels, *taints;         /* owned, GPU nodes only */
	char *taint_sig;                 /* owned: its lasting taints, sorted, GPU nodes only */
	struct report_gpu alloc[LIMIT_GPU_KINDS_MAX]; /* status.allocatable's GPU resources */
	long long used[LIMIT_GPU_KINDS_MAX];          /* ... requested by pods on it */
	size_t n_alloc;
	long long gpus_allocatable, gpus_requested;
	unsigned long gpu_pods, ds_pods, cpu_pods;
	long long dra_devices;           /* GPU devices its ResourceSlices publish (report_dra.c) */
	long long dra_held;              /* ... that allocated ResourceClaims hold */
};

/* A GPU node is busy when a pod requests a GPU on it or a DRA claim holds one of its GPUs. */
int report_node_busy(const struct report_node *n);

/* What the ResourceSlices and ResourceClaims of the input say (report_dra.c), judged at the end. */
struct report_dra {
	json_t *slices;                  /* owned: node name -> GPU devices published */
	json_t *claims;                  /* owned: "ns/name" -> what a GPU claim asks and holds */
	json_t *pending;                 /* owned: Pending pods with claims, [{ns, name, claims}] */
	unsigned long items;             /* ResourceSlice and ResourceClaim items read */
};

/* A list of findings: the first REPORT_FINDINGS_MAX kept, all counted. */
struct report_list {
	void *v;
	size_t n, cap;
	unsigned long total;
};

/* --what-if: a Pending GPU pod the other policy would place. */
struct report_wi_placed {
	char *ns, *name, *node;          /* owned */
	const char *pool;                /* borrowed from the what-if policy, or "unpooled" */
};

/* --what-if: a running pod the other policy rejects as a CREATE and today's does not. */
struct report_wi_refused {
	char *ns, *name, *node;          /* owned */
	struct report_verdict verdict;   /* the other policy's */
};

/*
 * --what-if NEW-POLICY (report_whatif.c): the same snapshot judged by another
 * policy. Nodes keep their GPU-ness and pods their requests; what changes is
 * each pod's verdict and patch, the pools nodes fall in and their prices.
 */
struct report_whatif {
	const struct config *cfg;        /* borrowed; NULL: no what-if */
	const char *name;                /* borrowed: the policy's path, for the output */
	struct report_list placed;       /* struct report_wi_placed */
	struct report_list refused;      /* struct report_wi_refused */
	unsigned long rejected_pending;  /* Pending GPU pods the other policy rejects */
	unsigned long idle_nodes;        /* GPU nodes idle once the placed pods run */
	double idle_cost;                /* their hourly cost at the other policy's prices, today's
	                                    where it sets none */
	int priced;                      /* some GPU node has a price, the other policy's or today's */
	/*
	 * Owned, one per pool of the other policy (unpooled last): 1 when a
	 * node of it is priced at today's price because that pool has none.
	 * A pool left unpriced would cost $0 and show a saving that is not
	 * there; compare like with like.
	 */
	unsigned char *todays_prices;
	int any_todays_prices;
};

struct report {
	const struct config *cfg;        /* borrowed; must outlive the report */
	struct report_pool *pools;       /* owned: cfg->n_pools + 1 (unpooled last) */
	size_t n_pools;
	struct report_node *nodes;       /* owned, in the order first named */
	size_t n_nodes, cap_nodes;
	size_t *node_index;              /* owned: hash of names -> 1 + index into nodes, 0 empty */
	size_t cap_node_index;
	size_t *ds_index;                /* owned: the same for daemonsets by namespace/name */
	size_t cap_ds_index;
	unsigned long items, node_items, pod_items, terminated_pods, gpu_nodes;
	struct report_list cpu_pods;     /* struct report_cpu_pod */
	struct report_list daemonsets;   /* struct report_daemonset */
	struct report_list pending;      /* struct report_pending */
	struct report_list misconfigs;   /* struct report_misconfig */
	unsigned long pending_by_reason[REPORT_PENDING_NREASONS];
	struct audit audit;              /* workload objects: the audit's findings and counts */
	json_t *errors;                  /* owned: [{input, offset, message}] */
	unsigned long n_errors;          /* all, including those beyond the list's limit */
	int finished;
	struct report_whatif whatif;
	struct report_dra dra;
	/* Deferred: DaemonSet pods on nodes not yet seen (node index, daemonset index). */
	size_t *deferred;
	size_t n_deferred, cap_deferred;
};

/*
 * What the report reads of one Pod, as pod items are judged: its names, node,
 * phase, GPU requests (as the scheduler counts them) and DaemonSet owner.
 * Every pointer is borrowed from the pod.
 */
struct report_pod_facts {
	const char *ns, *name, *node, *phase;  /* node "" when not bound */
	int terminated;                        /* Succeeded or Failed: holds nothing */
	struct policy_gpu_request req[LIMIT_GPU_KINDS_MAX];
	size_t count;                          /* entries of req; 0 for a CPU pod */
	int daemonset;                         /* its controller is an apps/v1 DaemonSet */
	int claims;                            /* it has spec.resourceClaims (DRA) */
	char ds_name[256];                     /* ... named so */
};

/* f = pod's facts (pod borrowed, must outlive f). 0, or -1 with msg when the report refuses the pod. */
int report_pod_facts(const struct config *cfg, const json_t *pod, struct report_pod_facts *f, char *msg,
		     size_t cap);

/* Whether a Node is a GPU node (README "What counts"). 0, or -1 with msg when the report refuses it. */
int report_node_facts(const struct config *cfg, const json_t *node, int *gpu, char *msg, size_t cap);

/* New: one item's JSON (bytes borrowed) with only the fields the report reads, or NULL with jerr. */
json_t *report_item_parse(const char *bytes, size_t len, json_error_t *jerr);

/* The fields report_item_parse() keeps (and metadata.resourceVersion), for decoders that take a shape. */
const struct scan_shape *report_item_shape(void);

/* A watch event's type (BOOKMARK, ERROR and the unknown are OTHER). */
enum report_event_type { REPORT_EVENT_ADDED = 0, REPORT_EVENT_MODIFIED, REPORT_EVENT_DELETED, REPORT_EVENT_OTHER };

/*
 * New: the object of one watch event ({"type": ..., "object": {...}}, bytes
 * borrowed) with only the fields the report reads, and its type; NULL with
 * jerr when it is not JSON or has no object.
 */
json_t *report_event_parse(const char *bytes, size_t len, enum report_event_type *type, json_error_t *jerr);

/* What makes the exit code 1 (bits; --fail-on). */
#define REPORT_FAIL_REJECT   0x01u  /* a workload, or a CPU pod on a GPU node, today's policy rejects */
#define REPORT_FAIL_MUTATE   0x02u  /* a workload the policy would mutate */
#define REPORT_FAIL_LEAK     0x04u  /* any CPU-only, non-DaemonSet pod on a GPU node */
#define REPORT_FAIL_PENDING  0x08u  /* a GPU pod Pending */
#define REPORT_FAIL_IDLE     0x10u  /* an idle GPU node */
#define REPORT_FAIL_MISCONF  0x20u  /* pool misconfiguration */

/*
 * Prepares r (caller-owned storage) for cfg (borrowed; must outlive r).
 * 0, or -1 with ERROR_NOMEM; report_free() is safe either way.
 */
int report_init(struct report *r, const struct config *cfg, struct error *err);

/*
 * --what-if: also judges the snapshot by cfg (borrowed; must outlive r),
 * named name (borrowed) in the output. Between report_init() and the first
 * report_input().
 */
void report_whatif_set(struct report *r, const struct config *cfg, const char *name);

/*
 * After report_finish(), the what-if policy's pools whose nodes are priced
 * at today's prices (it prices none of them), one by one: the name of the
 * first such pool from *k on ("unpooled" for nodes no pool of it selects),
 * *k moved past it; NULL when there are no more. Borrowed from the what-if
 * policy, or static.
 */
const char *report_whatif_todays_price_pool(const struct report *r, size_t *k);

/* Releases what r owns. Accepts NULL. */
void report_free(struct report *r);

/*
 * Reads one input from fd (borrowed, not closed) named name (borrowed; for
 * messages): JSON as a stream, else YAML whole. Items that cannot be read
 * and a broken input become input errors in r (the rest of the input is still
 * used when it can be); -1 only when the run cannot go on (ERROR_NOMEM, or
 * more than REPORT_NODES_MAX nodes).
 */
int report_input(struct report *r, const char *name, int fd, struct error *err);

/*
 * report_input() on the file at path (borrowed), or on stdin for "-". A file
 * that cannot be opened is an input error in r, not a failure of the call.
 */
int report_input_path(struct report *r, const char *path, struct error *err);

/*
 * Judges what needs every input: pending reasons, misconfiguration, costs.
 * Once, after the last report_input(). 0, or -1 with ERROR_NOMEM.
 */
int report_finish(struct report *r, struct error *err);

/* 2 with input errors, else 1 when a finding in fail_on (REPORT_FAIL_*) exists, else 0. */
int report_exit_code(const struct report *r, unsigned fail_on);

/* Parses --fail-on's comma-separated list into REPORT_FAIL_* bits; -1 on an unknown word. */
int report_fail_on_parse(const char *s, unsigned *out);

/* Stable names: "missing-toleration", "gpu-node-untainted", "toleration", ... Static storage. */
const char *report_pending_name(enum report_pending_reason reason);
const char *report_misconfig_name(enum report_misconfig_kind kind);
const char *report_route_name(unsigned route_bit);

/* The report's element i of a list, typed. */
#define REPORT_AT(list, type, i) (&((type *)(list).v)[i])

/* Totals over the pools, for the summary. */
struct report_totals {
	unsigned long nodes, idle_nodes, gpu_pods, ds_pods, cpu_pods;
	long long gpus_allocatable, gpus_requested;
	double idle_cost, unrequested_cost;
	int priced;                      /* some pool with nodes has a price */
	unsigned long misconfigured;
};
void report_totals(const struct report *r, struct report_totals *t);

/*
 * The one-line summary ("3 of 12 GPU nodes idle, $294/h; 2 CPU pods on GPU
 * nodes; 1 GPU pod Pending: missing toleration") into buf.
 */
void report_summary_line(const struct report *r, char *buf, size_t cap);

/* "$294/h" / "$0.53/h": whole units from 100 up, cents below. */
void report_money(double v, char *buf, size_t cap);

/* The three writers. Each returns 0, or -1 when writing failed. */
int report_text_write(const struct report *r, FILE *out, int color);

/*
 * report_text_write() fitted to cols columns (a terminal's width): the
 * pools' table in two pieces when it is wider, every longer line wrapped at
 * its spaces, continued 4 columns past its own indent. SIZE_MAX: as
 * report_text_write() writes it.
 */
int report_text_write_fitted(const struct report *r, FILE *out, int color, size_t cols);

/*
 * The input errors (the report's own, then its workloads' audit errors), one
 * a line as "PREFIX: INPUT: message", for stderr: the text report only
 * counts them, -o json lists them too. Returns 0, or -1 when writing failed.
 */
int report_write_problems(const struct report *r, FILE *out, const char *prefix);
int report_json_write(const struct report *r, FILE *out, int exit_code, char fmt);  /* exit_code: summary.exitCode; fmt 'j' JSON, 'y' the same as YAML */
int report_prom_write(const struct report *r, FILE *out);

#endif
