/*
 * policy: the GPU admission policy engine.
 *
 * A pure function of (pod, namespace, operation, config): no I/O, no globals,
 * and nothing allocated outlives the call except what struct policy_result
 * owns. The same engine serves the webhook (/mutate, /validate), the `review`
 * CLI and the offline auditor.
 *
 * Decisions:
 *  - a pod that requests a GPU resource (non-zero, in any container or init
 *    container) gets the GPU taint's toleration and is sent to the pools it
 *    may use (eligible: serving it, allowed for its namespace and labels, not
 *    ruled out by its own node selection, pins by name included): the first
 *    one's node selector (placement pinned) or a required affinity over all
 *    of them (fallback), with their tolerations and, when several remain,
 *    preferred terms cheapest first (MUTATE), unless it already has them
 *    (ALLOW); a pod a queue places (deferLabels) gets the toleration only,
 *    once some pool it may use can take it;
 *  - a pod that requests no GPU but targets GPU nodes (toleration, nodeSelector,
 *    required node affinity, nodeName) is REJECTed with a message saying how
 *    to fix it;
 *  - exempt namespaces, DaemonSet pods the DaemonSet controller created (in
 *    the namespaces where that exemption applies) and admin-listed pod
 *    selectors (each scoped to namespaces) are admitted unchanged;
 *  - a DaemonSet's template in a gpuInfraNamespaces namespace that requests
 *    no GPU, selects only GPU nodes and does not tolerate the GPU taint gets
 *    that toleration (MUTATE with template_patch: the template is patched,
 *    on CREATE and UPDATE, before any exemption);
 *  - an UPDATE is never patched: it is REJECTed only when the new pod, a
 *    CPU-only one, takes a route to GPU nodes the old one did not (any
 *    route, when the old one requested a GPU), else ALLOWed.
 * The namespace's mode (enforce / warn / dryrun) then turns a REJECT into an
 * ALLOW with a warning (warn, dryrun) and drops the patch (dryrun).
 */
#ifndef GPU_ADMISSION_POLICY_H
#define GPU_ADMISSION_POLICY_H

#include <jansson.h>

#include "policy/config.h"
#include "policy/policy_claims.h"
#include "base/error.h"
#include "text/scan.h"

enum policy_decision {
	POLICY_ALLOW = 0, /* admit unchanged */
	POLICY_MUTATE,    /* admit with result.patch applied */
	POLICY_REJECT     /* deny with result.message */
};

enum policy_operation {
	POLICY_OP_CREATE = 0,
	POLICY_OP_UPDATE,
	POLICY_OP_DELETE,
	POLICY_OP_CONNECT
};

#define POLICY_WARNING_MAX LIMIT_KUBE_WARNING_MAX  /* bytes per warning */
#define POLICY_MESSAGE_MAX 1024
#define POLICY_WARNING_FULL_MAX (POLICY_MESSAGE_MAX + 128) /* a whole warning: a message and its preamble */
#define POLICY_NOTES_BITS (sizeof(unsigned long) * 8)    /* warnings policy_result.notes tells apart */

struct policy_request {
	const json_t *pod;          /* borrowed: a Pod, or a pod template {metadata, spec} */
	const json_t *old_pod;      /* borrowed: on UPDATE, the pod as stored (request.oldObject);
	                               NULL: none, every route of pod counts as new */
	const char *ns;             /* borrowed; NULL: metadata.namespace, else "default" */
	const char *username;       /* borrowed: who sends the pod (request.userInfo.username,
	                               "" when absent). Online callers (webhook, review) always
	                               set it: a controller reference to a DaemonSet counts only
	                               when it is in exempt.daemonSetControllers. NULL means
	                               offline (audit, reports): the pod is as the API server
	                               stored it, so a DaemonSet controller reference is trusted */
	enum policy_operation operation;
	int validate;               /* validating webhook (a pod): never patch; the pod is
	                               judged as the mutating webhook leaves it, and the
	                               answer says only what that webhook cannot have said
	                               (policy_evaluate()) */
	int daemonset;              /* the caller knows the pod belongs to a DaemonSet: a
	                               DaemonSet's template (with template set), or offline
	                               a stored pod audited as one */
	int template;               /* pod is a pod template, judged for the pods a controller
	                               will create from it: its own ownerReferences are none
	                               of theirs (controllers set their own), and daemonset
	                               alone says whether they are a DaemonSet's, whoever
	                               sends the template (username is then not consulted) */
	const struct policy_claims *claims; /* borrowed: what the caller resolved of the pod's
	                               spec.resourceClaims (policy_claims.h); NULL: no lookups,
	                               every claim unknown. The engine never looks anything up:
	                               an unknown claim is never GPU demand */
	int full_warnings;          /* offline (audit): keep warnings whole, up to
	                               POLICY_WARNING_FULL_MAX, not cut to the API
	                               server's POLICY_WARNING_MAX */
};

struct policy_result {
	enum policy_decision decision; /* what to answer, after the mode */
	enum policy_decision verdict;  /* what enforce mode would answer */
	enum config_mode mode;         /* the mode in force for the namespace */
	int exempt;                    /* an exemption applied */
	int unreached;                 /* req.validate only: enforce's mutating webhook refuses the
	                                  pod, so enforce's validating webhook never judges it; in
	                                  warn and dryrun the mutating webhook said and counted the
	                                  would-be rejection, and this answer admits it saying and
	                                  counting nothing (metrics skip it) */
	int gpu;                       /* the pod requests a GPU */
	const char *reason;            /* short stable code, e.g. "cpu-pod-gpu-toleration";
	                                  static storage */
	const char *pool;              /* the one pool the pod goes to, or NULL (none, or several:
	                                  see pools); borrowed from config */
	const char *pools[CONFIG_POOLS_MAX]; /* every pool the pod may land on, cheapest first
	                                  (placement fallback: the eligible pools); borrowed */
	size_t n_pools;                /* entries of pools; 1 when pool is set, 0 when none */
	const char *deferred;          /* the deferLabels key that left placement to a queue, or
	                                  NULL; borrowed from config */
	char message[POLICY_MESSAGE_MAX]; /* the rejection (or would-be rejection) text */
	char changes[POLICY_MESSAGE_MAX]; /* what the patch adds, for people:
	                                     "+toleration sku=gpu:NoSchedule +nodeSelector k=v" */
	json_t *patch;                 /* owned: JSON Patch enforce mode would apply, or NULL.
	                                  Send it only when decision == POLICY_MUTATE. */
	int template_patch;            /* patch is for the DaemonSet template judged, not for the
	                                  pods it makes: the GPU toleration gpuInfraNamespaces
	                                  adds to a GPU-stack DaemonSet (policy_stack.c) */
	json_t *fix;                   /* owned: for a CPU-only pod rejected for its routes to GPU
	                                  nodes, the JSON Patch ("remove" operations, paths from
	                                  the pod's root) that takes them away as the message
	                                  advises: what `audit --fix` writes. NULL otherwise */
	json_t *warnings;              /* owned: array of strings, each <= warning_max bytes */
	unsigned long notes;           /* bit i set: warnings[i] only says what the policy or the
	                                  mode did (an exemption, DRA claims it cannot judge, a
	                                  rejection warn mode admitted): nothing the pod's author
	                                  must change. Only the first POLICY_NOTES_BITS warnings
	                                  are told apart; later ones count as warnings */
	size_t warning_max;            /* POLICY_WARNING_MAX, or more with req.full_warnings */
	json_t *annotations;           /* owned: auditAnnotations (decision, reason, mode, pool or
	                                  pools, deferredTo, wouldDecide) */
};

/*
 * The members of a pod the policy reads, and nothing else, as scan shapes: a
 * Pod or a pod template {metadata, spec} (policy_pod_fields), and its
 * metadata and spec on their own for callers that read more of them (review
 * and report keep names for their logs: SCAN_ALSO). Declared once, next to
 * the reads (policy_pod.c); every fast path that prunes a pod before the
 * policy sees it takes its shape from here, and test/unit/test_policy_fields.c
 * fails when the policy reads a member these do not keep.
 */
extern const struct scan_shape policy_pod_fields[];
extern const struct scan_shape policy_pod_metadata_fields[];
extern const struct scan_shape policy_pod_spec_fields[];

/*
 * Evaluates req against cfg (both borrowed) and fills res, which the caller
 * must release with policy_result_free() whatever the return value.
 * With req->validate, a pod is judged as the chart's mutating webhook, which
 * sees every pod first in the same mode, leaves it, and the answer says only
 * what that webhook cannot have said: a pod lacking what it adds is rejected
 * in enforce and warn (it did not run), and in dryrun (where it adds
 * nothing) judged as patched, i.e. admitted; a pod it refuses is rejected in
 * enforce (it did not run) and in warn and dryrun admitted silently
 * (res->unreached, reason judged-at-mutate); warnings only with a rejection
 * in enforce or a pod it did not mutate. So mode by mode, both webhooks
 * together announce (wouldDecide) the rejections enforce makes, once.
 * Returns 0 with a decision, or -1 when the pod cannot be read at all
 * (ERROR_INPUT: a field has the wrong JSON type) or memory ran out
 * (ERROR_NOMEM). A policy rejection is a decision, not an error.
 */
int policy_evaluate(const struct config *cfg, const struct policy_request *req,
		    struct policy_result *res, struct error *err);

/* Releases what res owns and zeroes it. Accepts NULL. */
void policy_result_free(struct policy_result *res);

/*
 * The pools res names (res->pools, cheapest first) joined by sep into buf
 * (cap bytes, NUL-terminated, cut quietly): for logs and annotations.
 */
void policy_describe_pools(const struct policy_result *res, const char *sep, char *buf, size_t cap);

/* Appends printf text to buf (size cap, NUL-terminated), cut quietly at the end: for messages. */
void policy_appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* "allow", "mutate" or "reject". Static storage. */
const char *policy_decision_name(enum policy_decision d);

/*
 * Parses an AdmissionReview operation ("CREATE", ...). Returns 0, or -1 with
 * ERROR_INPUT for anything else.
 */
int policy_operation_parse(const char *s, enum policy_operation *op, struct error *err);

/* One GPU resource a pod requests, counted as the scheduler counts it. */
struct policy_gpu_request {
	const char *resource;  /* borrowed from the pod */
	long long count;       /* > 0 */
};

/*
 * The policy's DaemonSet rule for a stored pod: 1 when the reference marked
 * controller: true in metadata (borrowed) is an apps/v1 DaemonSet, else 0
 * (a mere owner, or no controller, is not the DaemonSet controller's pod);
 * -1 with ERROR_INPUT when ownerReferences is not an array.
 */
int policy_controlled_by_daemonset(const json_t *metadata, struct error *err);

/*
 * What pod (borrowed: a Pod or a template) requests of each GPU resource of
 * cfg, as the scheduler computes a pod's request: the larger of the app
 * containers' sum (plus restartable init containers, i.e. sidecars) and the
 * init containers' peak; ephemeral containers never count. The same code the
 * policy places pods with. Fills out[0..*n), at most cap entries (resources
 * beyond are an error). Returns 0, or -1 with ERROR_INPUT (a field of the
 * wrong type, an invalid GPU quantity, too many GPU resources).
 */
int policy_gpu_requests(const struct config *cfg, const json_t *pod, struct policy_gpu_request *out,
			size_t cap, size_t *n, struct error *err);

/*
 * Says, for people, how GPU nodes are told by name under cfg (borrowed): the
 * configured gpuNodeNames, the globs derived from the pools when it is empty
 * (a pool selected by kubernetes.azure.com/agentpool: X has nodes aks-X-*),
 * or that nothing can be derived. One line into buf (cap bytes, cut to fit).
 */
void policy_describe_node_names(const struct config *cfg, char *buf, size_t cap);

/*
 * Notes on a valid cfg (borrowed): what it does that its text does not say.
 * exempt.namespaces without a namespace the default exempts (defaults,
 * borrowed: the embedded default; NULL skips this note); the DaemonSet
 * exemption in every namespace; a pool resource that is not a GPU resource.
 * One line per note into buf (cap bytes, NUL-terminated, cut quietly; with
 * cap 0, buf may be NULL and the notes are only counted); returns how many
 * there were.
 */
size_t policy_notes(const struct config *cfg, const struct config *defaults, char *buf, size_t cap);

/*
 * Glob match of the patterns used in config: '*' matches any run of
 * characters (including '/'), '?' any one character; everything else is
 * literal. Exposed for config validation and tests.
 */
int policy_glob_match(const char *pattern, const char *s);

/*
 * ==== What the generators (pkg/render/) read as the engine does ====
 * The CEL, Kueue and autoscaler writers restate the engine's decisions in
 * other systems' terms; they name labels, taints and pools through these so
 * that both sides cannot drift apart.
 */

#define POLICY_POOL_LABEL     "gpu-admission/pool"     /* a pod's label naming its pool */
#define POLICY_HOSTNAME_LABEL "kubernetes.io/hostname" /* equals the node's name on AKS */
#define POLICY_NAME_FIELD     "metadata.name"          /* the one field matchFields knows */

/* Does s match any glob of globs (policy_glob_match())? */
int policy_match_any(const struct config_strings *globs, const char *s);

/* Is s one of l's strings, exactly? */
int policy_list_has(const struct config_strings *l, const char *s);

/* "sku=gpu:NoSchedule" into buf; snprintf's return. */
int policy_describe_taint(const struct config *cfg, char *buf, size_t cap);

/* A node label key the pools select by, and the values they select by it. */
struct policy_pool_key {
	const char *key;
	struct {
		const char **v;  /* owned array of borrowed strings */
		size_t n;
	} values;
};

/*
 * The label keys cfg's pools select by (policy_gpu_label(): a key's
 * alias is a key of its own), each with the values pools select, but the
 * keys in skip[0..n_skip) (the CEL writers skip the GPU node labels, which
 * aim at GPU nodes whatever the value); sorted by key, values sorted and
 * unique. Strings are borrowed from cfg. 0, or -1 when out of memory
 * (*keys then NULL). policy_pool_keys_free() frees the array (NULL is fine).
 */
int policy_pool_keys(const struct config *cfg, const char *const *skip, size_t n_skip,
		     struct policy_pool_key **keys, size_t *n);
void policy_pool_keys_free(struct policy_pool_key *keys, size_t n);

#endif
