/*
 * policy_int: what the files of the policy module share. Private to
 * pkg/policy*.c; everything here is pure, like the engine itself.
 *
 *   policy.c         the engine: exemptions, decision, modes, annotations
 *   policy_pod.c     reading a pod: what it requests, typed and validated
 *   policy_pool.c    GPU pods: choosing the pool
 *   policy_pool_patch.c  GPU pods: the patch that sends them there
 *   policy_target.c  CPU pods: the routes by which they aim at GPU nodes
 */
#ifndef GPU_ADMISSION_POLICY_INT_H
#define GPU_ADMISSION_POLICY_INT_H

#include <stddef.h>

#include <jansson.h>

#include "policy/config.h"
#include "base/error.h"
#include "base/iterable.h"
#include "policy/policy.h"

/* Why a pod was admitted, mutated or rejected: stable codes for annotations and metrics. */
#define R_OPERATION   "operation-not-create"   /* DELETE, CONNECT */
#define R_UPDATE_GPU  "update-gpu-pod"         /* UPDATE of a GPU pod: never patched nor judged */
#define R_UPDATE_OK   "update-no-new-gpu-route" /* UPDATE of a CPU pod aiming nowhere new */
#define R_EXEMPT_NS   "exempt-namespace"
#define R_EXEMPT_SEL  "exempt-pod-selector"
#define R_EXEMPT_DS   "exempt-daemonset"
#define R_NO_GPU      "no-gpu"
#define R_DRA         "dra-claims"             /* claims, no GPU resource, no route to GPU nodes */
#define R_GPU_OK      "gpu-pod-ok"
#define R_GPU_MUTATED "gpu-pod-mutated"
#define R_NOT_MUTATED "gpu-pod-not-mutated"
#define R_AT_MUTATE   "judged-at-mutate"       /* /validate, warn and dryrun: a pod /mutate refuses in
                                                   enforce, its would-be rejection /mutate's to say */
#define R_QUANTITY    "invalid-gpu-quantity"
#define R_UNKNOWN     "unknown-pool"
#define R_MISMATCH    "pool-mismatch"
#define R_NO_POOL     "no-pool-fits"
#define R_CONFLICT    "node-selector-conflict"
#define R_AFF_CONFLICT "node-affinity-conflict"
#define R_NAME_CONFLICT "node-name-conflict"   /* pinned by name to a node of no pool it may use */
#define R_DENIED      "pool-not-allowed"       /* namespaces or podSelector: not this pod's pool */
#define R_CPU_TOL     "cpu-pod-gpu-toleration"
#define R_CPU_SEL     "cpu-pod-gpu-node-selector"
#define R_CPU_AFF     "cpu-pod-gpu-affinity"
#define R_CPU_NAME    "cpu-pod-gpu-node-name"
#define R_STACK_TOLERATED "gpu-stack-tolerated" /* a gpuInfraNamespaces DaemonSet template given
                                                   the GPU toleration */


/* ==== What the pod asks for (policy_pod.c) ==== */

/* What a demand counts: a resource the pod requests, or devices its DRA claims ask for. */
enum demand_kind {
	DEMAND_RESOURCE = 0,       /* name is a gpuResources resource */
	DEMAND_CLASS,              /* name is a gpuDeviceClasses class: exact counts, summed */
	DEMAND_REQUEST             /* one claim request with alternatives or allocationMode All:
	                              dra says which; name is its first alternative's class */
};

struct gpu_demand {
	const char *name;          /* borrowed from the pod (or the claim, for DRA) */
	enum demand_kind kind;
	const struct policy_device_request *dra; /* DEMAND_REQUEST: borrowed from req->claims */
	int shared;                /* DEMAND_RESOURCE asked for only by a share (gpuShareResources,
	                              gpuAnnotations): the pod requests no such resource, so the
	                              scheduler implies nothing of its nodes */
	long long app_sum;         /* sum over app containers */
	long long sidecar_sum;     /* sum over restartable init containers */
	long long init_max;        /* peak during init */
};

/* The pod as the engine reads it; every pointer borrowed from the request. */
struct pod_view {
	const json_t *metadata, *spec, *labels, *tolerations, *node_selector;
	const char *ns;
	struct gpu_demand gpu[LIMIT_GPU_KINDS_MAX];
	size_t n_gpu;
	int dra;                   /* resource claims present (in the spec or a container): a GPU
	                              request only as far as gpu[] has DRA demands (resolved, used,
	                              every alternative a GPU class); never an exemption */
	size_t n_dra_gpu;          /* demands of gpu[] from claims */
	const char *share[LIMIT_GPU_KINDS_MAX];     /* GPU resources asked for by a share
	                              (gpuShareResources, gpuAnnotations): one GPU at least */
	const char *share_why[LIMIT_GPU_KINDS_MAX]; /* the share resource or annotation key */
	size_t n_share;
	const char *unlisted;      /* a resource that looks like a GPU (x/..gpu..) but that the
	                              policy lists neither as a GPU nor as a share, or NULL */
	struct claim_seen {        /* the pod's claims that are no GPU demand, and why */
		const char *name, *object;
		const char *kind;  /* "ResourceClaimTemplate" or "ResourceClaim"; NULL unknown */
		enum policy_claim_state state;
		const char *why;   /* borrowed: static text or the claim's message; NULL: not
		                      looked up, and the caller did not say why */
		const char *code;  /* static: the audit annotation's word for why (claims=) */
		const char *cls;   /* borrowed: the DeviceClass that is not a GPU class, or NULL */
	} other[POLICY_POD_CLAIMS_MAX];
	size_t n_other;
	int daemonset;             /* a DaemonSet pod its controller created (or, offline,
	                              stored or templated as one): see policy_request */
	/* First invalid GPU quantity, reported as the rejection. */
	char bad_quantity[POLICY_MESSAGE_MAX];
};

/*
 * Fills pv from pod (req->pod or req->old_pod; borrowed, as everything in
 * pv): 0, or -1 with ERROR_INPUT when a field the policy reads has the wrong
 * type (tolerations included).
 */
int policy_pod_read(const struct config *cfg, const struct policy_request *req, const json_t *pod,
		    struct pod_view *pv, struct error *err);

/* The pod's effective request for one resource, as the scheduler computes it. */
long long policy_demand_total(const struct gpu_demand *d);

/*
 * Adds the GPU demand of the pod's claims (req->claims: resolved, used by a
 * container, every alternative of a request a gpuDeviceClasses class) to
 * pv->gpu, and records the others in pv->other. -1 with ERROR_INPUT (a field
 * of the wrong type, too many claims or GPU kinds). policy_claims_use.c.
 */
int policy_pod_claims(const struct config *cfg, const struct policy_request *req, const json_t *pod,
		      struct pod_view *pv, struct error *err);

/*
 * Does pool p serve demand d (its class or resource; a request: any
 * alternative)? 2 when it serves it in that number too (maxGPUsPerPod; an
 * All request: gpusPerNode, when both are known), 1 when only not that
 * many, 0 not at all. policy_claims_use.c.
 */
int policy_demand_fit(const struct config *cfg, const struct config_pool *p, const struct gpu_demand *d);

/* How demand d is named for people: "nvidia.com/gpu", "DeviceClass gpu.nvidia.com". */
void policy_demand_describe(const struct gpu_demand *d, char *buf, size_t cap);

/* ==== GPU pods (policy_pool.c) ==== */

/* How the chosen pools are put on a pod. */
enum pool_how {
	POOL_HOW_SELECTOR = 0, /* the one pool's nodeSelector entries (placement pinned, or the
	                          pool the pod's nodeSelector or label picks) */
	POOL_HOW_AFFINITY,     /* `key In [values]` in every required term, preferred terms
	                          cheapest first (placement fallback) */
	POOL_HOW_KEPT,         /* the pod's required affinity already keeps it to these pools:
	                          preferred terms only, when there are several */
	POOL_HOW_NAMED         /* the pod is pinned by name to a node of one of these pools, which
	                          cannot be told apart by name: nothing to add but tolerations */
};

/* The pools a GPU pod goes to. */
struct pool_choice {
	const struct config_pool *pools[CONFIG_POOLS_MAX]; /* borrowed from cfg, cheapest first */
	size_t n;
	enum pool_how how;
};

/*
 * Chooses where a GPU pod goes among the pools eligible for it (serving its
 * GPU resources, allowed for its namespace and labels, not ruled out by its
 * own node selection). Returns 0 with ch filled and res->pools named, or 0
 * with ch->n == 0 and the rejection's reason and message in res; -1 only on
 * ERROR_NOMEM.
 */
int policy_pool_choose(const struct config *cfg, const struct pod_view *pv, struct pool_choice *ch,
		       struct policy_result *res, struct error *err);

/*
 * Readers of a NodeSelectorTerm (borrowed), for the choice and the patch
 * alike. policy_value_listed: is v a string of values (an array, or NULL)?
 * policy_term_confined: the values of a `key In [...]` requirement that
 * confines the term to pools (n, one key for all: every value one of
 * theirs), or NULL; any one will do, requirements being ANDed.
 * policy_term_allows: does value v of key meet every requirement on key?
 * policy_term_matches_nothing: does the term match no node by construction
 * (empty, or not a term at all)? policy_pool.c.
 */
int policy_value_listed(const json_t *values, const char *v);
const json_t *policy_term_confined(const json_t *term, const char *key, const struct config_pool *const *pools,
				  size_t n);
int policy_term_allows(const json_t *term, const char *key, const char *v);
int policy_term_matches_nothing(const json_t *term);

/*
 * Sets res->verdict, reason, patch and changes for a GPU pod sent to the
 * pools of ch (NULL: tolerate the GPU taint only, as for a DaemonSet pod or
 * one a queue places). -1 on ERROR_NOMEM, or ERROR_INPUT when a field the
 * patch extends has the wrong type. policy_pool_patch.c.
 */
int policy_pool_mutate(const struct config *cfg, const struct pod_view *pv,
		       const struct pool_choice *ch, struct policy_result *res, struct error *err);

/*
 * Does patch (policy_pool_mutate()'s, borrowed) only add preferred node
 * affinity terms? They are a score, not a placement: /validate admits a pod
 * that lacks nothing else. policy_pool_patch.c.
 */
int policy_pool_patch_soft(const json_t *patch);

/* ==== CPU pods (policy_target.c) ==== */

/* The routes by which a pod reaches GPU nodes, as bits of pod_routes.taken. */
#define ROUTE_TOLERATION 0x01u  /* tolerates the GPU taint by key */
#define ROUTE_SELECTOR   0x02u  /* nodeSelector on a GPU node label, a pool's key=value or a
                                   GPU node's kubernetes.io/hostname */
#define ROUTE_AFFINITY   0x04u  /* a required node affinity only GPU nodes satisfy */
#define ROUTE_NODE_NAME  0x08u  /* spec.nodeName names a GPU node */
#define ROUTES_HARD      0x0fu  /* the routes a CPU-only pod is rejected for */
#define ROUTE_WILDCARD   0x10u  /* tolerates every taint (empty key, Exists): a warning */
#define ROUTE_PREFERRED  0x20u  /* preferred node affinity leans to GPU nodes: a warning */
#define ROUTE_PINNED     0x40u  /* pinned by name to a node GPU nodes cannot be told from
                                   (no gpuNodeNames, none derivable): a warning */
#define ROUTE_CLAIMS_UNREAD 1  /* policy_routes_judge(): claims, none looked up */
#define ROUTE_CLAIMS_READ   2  /* claims, some looked up, none a GPU claim */
#define ROUTE_HARD_N     4      /* hard routes, one what[] each */
#define ROUTE_WHAT_MAX   POLICY_MESSAGE_MAX  /* a route's description, cut only where the
                                               message quoting it would be */

/* What a pod does on each route it takes. */
struct pod_routes {
	unsigned taken;                          /* ROUTE_* bits */
	char what[ROUTE_HARD_N][ROUTE_WHAT_MAX]; /* per hard route, by bit index */
	const char *pinned_by;                   /* static storage: how it is pinned by name */
	int operator_label;                      /* the selector is a GPU operator's label (nvidia.com/gpu.*),
	                                            as its own pods (validators) use: they want exempting */
};

/* Finds every route the pod in pv takes (cfg and pv borrowed). Pure, cannot fail. */
void policy_routes_find(const struct config *cfg, const struct pod_view *pv, struct pod_routes *r);

/*
 * Judges the routes of r that are in which: any hard one sets res->verdict
 * REJECT with every such route in the message and, when advise, how to fix
 * it (not for a pod the DaemonSet exemption admits: its toleration is how it
 * reaches GPU nodes); else reason R_NO_GPU with a warning per soft route.
 * claims: the pod has DRA resource claims (pod_view.dra) and no GPU
 * demand, and the message says that a claim is no GPU request:
 * ROUTE_CLAIMS_UNREAD none was looked up, ROUTE_CLAIMS_READ some were, and
 * none is a GPU claim (0: no claims). unread_why (ROUTE_CLAIMS_UNREAD; NULL:
 * not known) says why none was looked up, as the caller put it
 * (policy_claim_lookup.off).
 * -1 only on ERROR_NOMEM.
 */
int policy_routes_judge(const struct config *cfg, const struct pod_routes *r, unsigned which,
			int advise, int claims, const char *unread_why, struct policy_result *res,
			struct error *err);

/*
 * Sets res->fix: the "remove" operations that take the hard routes in taken
 * away from the pod in pv (every toleration of the GPU taint by key, every
 * GPU nodeSelector entry, the required node affinity, spec.nodeName; a list
 * or map left empty goes whole). -1 only on ERROR_NOMEM.
 */
int policy_routes_fix(const struct config *cfg, const struct pod_view *pv, unsigned taken,
		      struct policy_result *res, struct error *err);

/*
 * Is node (a name) one of pool p's? 1 when its name is one AKS gives the
 * pool's nodes (aks-<pool>-*, p selecting by CONFIG_AKS_POOL_LABEL), 0 when
 * it is not (or, with gpuNodeNames set, not a GPU node at all), -1 when that
 * cannot be told (p selects otherwise). The same knowledge that judges CPU
 * pods pinned by name (policy_target.c).
 */
int policy_node_in_pool(const struct config *cfg, const struct config_pool *p, const char *node);

/* ==== The GPU stack (policy_stack.c) ==== */

/*
 * Does the pod's required node selection (nodeSelector, or every term of its
 * required node affinity) reach only GPU nodes: gpuNodeLabels, the GPU
 * operator's nvidia.com/gpu.* labels, Node Feature Discovery's NVIDIA
 * hardware labels, a pool's key=value? What the device plugin and DCGM
 * exporter select by. Pure, cannot fail.
 */
int policy_stack_aimed(const struct config *cfg, const struct pod_view *pv);

/*
 * A pod with no GPU demand whose routes r (policy_routes_find()) do not
 * tolerate the GPU taint and whose required node selection reaches only GPU
 * nodes: the GPU stack kept off the GPU nodes. Pure, cannot fail.
 */
int policy_stack_untolerated(const struct config *cfg, const struct pod_view *pv, const struct pod_routes *r);

/*
 * The gpuInfraNamespaces rule for a DaemonSet's template (req->template,
 * pv->daemonset, CREATE or UPDATE) in one of those namespaces that is
 * policy_stack_untolerated(): res becomes a MUTATE with template_patch set,
 * whose patch adds the GPU taint's toleration, and a warning says so.
 * 1 when it applied, 0 when not, -1 on ERROR_NOMEM.
 */
int policy_stack_infra(const struct config *cfg, const struct policy_request *req, const struct pod_view *pv,
		       struct policy_result *res, struct error *err);

/* ==== Shared helpers (policy.c) ==== */

/*
 * Member key of parent, when of type (absent or null: *out NULL, 0); -1 with
 * ERROR_INPUT naming path.key when it has another type.
 */
int policy_get_typed(const json_t *parent, const char *key, json_type type, const char *path,
		     const json_t **out, struct error *err);

/*
 * The value of label key in labels (an object of strings, or NULL; borrowed),
 * or of its alias (config_label_alias()) when key is absent; NULL when
 * neither: what a node selector or node labels say of key.
 */
const char *policy_label_value(const json_t *labels, const char *key);

/*
 * Does a node carrying label key=value (value NULL: key, whatever its value)
 * have to be a GPU node, by the policy? key is a gpuNodeLabels key, or a
 * pool's nodeSelector key with that value; a key and its alias
 * (config_label_alias()) are one label, as AKS puts both on every node. The
 * one rule the routes (policy_target.c) and the GPU stack (policy_stack.c)
 * judge labels by; the CEL the chart renders (admpolicy, matchcond) tests
 * the same, aliases included.
 */
int policy_gpu_label(const struct config *cfg, const char *key, const char *value);

/* The string member key of obj, or dflt. Borrowed. */
const char *policy_str(const json_t *obj, const char *key, const char *dflt);

/*
 * Do pod labels (an object of strings, or NULL: none; borrowed) match sel,
 * with metav1.LabelSelector semantics (matchLabels and matchExpressions
 * ANDed, an empty selector matching everything: LabelSelectorAsSelector)?
 */
int policy_selector_match(const struct config_label_selector *sel, const json_t *labels);
long long policy_max_ll(long long a, long long b);


/*
 * Adds a warning to res, cut to res->warning_max (kube-apiserver's 256 bytes
 * online); -1 on ERROR_NOMEM. policy_note() adds one that only says what the
 * policy did (res->notes).
 */
int policy_warn(struct policy_result *res, struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
int policy_note(struct policy_result *res, struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

#endif
