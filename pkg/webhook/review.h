/*
 * review: AdmissionReview in, AdmissionReview out.
 *
 * Decodes an admission.k8s.io/v1 or v1beta1 AdmissionReview, runs the policy
 * on the Pod it carries, or on the pod templates of the workload it carries
 * (pkg/policy/workload.c: built-in workload kinds, and the custom resources the
 * policy lists), and encodes the answer in the same version with the
 * request's uid. This is the whole of what /mutate, /validate and the
 * `review` CLI do; the server adds only transport. /validate-policy judges
 * the policy ConfigMap's edits the same way (review_policy_handle()).
 */
#ifndef GPU_ADMISSION_REVIEW_H
#define GPU_ADMISSION_REVIEW_H

#include <stddef.h>

#include "k8s/names.h"
#include "policy/config.h"
#include "base/error.h"
#include "policy/policy.h"
#include "webhook/events.h"
#include "policy/template.h"

#define REVIEW_MAX_DEPTH 100 /* JSON nesting accepted; a Pod needs about 20 */
/*
 * JSON values accepted in one review (the root, every member and element):
 * what a parse may build is bounded by it. Real reviews hold a few hundred
 * (a 6.7 KB pod: 268) to a few thousand (99 KB, 24 containers: 5,800); a
 * 3 MiB body of empty objects would hold a million (250 MB once parsed).
 */
#define REVIEW_MAX_VALUES 100000

struct review_response {
	char *body;                   /* owned: the AdmissionReview JSON text */
	size_t len;
	int status;                   /* response.status.code: 200, 400 or 403 */
	enum policy_decision decision;/* what was answered */
	const char *reason;           /* short code (static storage), for logs/metrics */
	enum config_mode mode;
	int evaluated;                /* the policy ran: verdict and mode are set */
	enum policy_decision verdict; /* what enforce mode answers (differs from decision in warn/dryrun) */
	int unreached;                /* /validate of a pod enforce's /mutate refuses (warn, dryrun:
	                                 policy_result.unreached): the metrics do not count it */
	int patched;                  /* a patch was sent */
	const char *kind;             /* what was judged, for the metrics' kind label: "Pod", a
	                                 built-in workload kind, or "custom" (static storage);
	                                 NULL when nothing was */
	/* Identifiers for the one log line per decision; empty when absent. */
	char uid[128];
	char ns[64];
	char name[254];
	char object_kind[64];         /* request.kind.kind of what was judged (cut to fit) */
	char pools[256];              /* the pool the policy names, or the eligible pools in order,
	                                 comma-separated (cut to fit); empty when none */
	size_t n_pools;               /* how many it names */
	/*
	 * A refused UPDATE (decision POLICY_REJECT): the object as an Event's
	 * involvedObject names it and the refusal (pkg/webhook/events.h); refused
	 * is 0 for anything else.
	 */
	int refused;
	struct events_object refused_object;
	char refused_message[EVENTS_MESSAGE_MAX];
};

/*
 * Handles one AdmissionReview in body[0..len) (borrowed) against cfg
 * (borrowed). validate selects /validate semantics (never a patch).
 *
 * Returns 0 with res->body set whenever a request.uid could be read, even for
 * a malformed request (then allowed=false, status.code 400): kube-apiserver
 * wants a well-formed AdmissionReview. Returns -1 when no uid could be read
 * (ERROR_INPUT: the caller answers a plain HTTP 400) or memory ran out.
 * res must be released with review_response_free() either way.
 */
int review_handle(const struct config *cfg, const char *body, size_t len, int validate,
		  struct review_response *res, struct error *err);

/* Flags for review_handle_ex(). */
#define REVIEW_VALIDATE   1  /* /validate semantics: never a patch */
#define REVIEW_FULL_PARSE 2  /* parse the whole body with jansson instead of the skip-scan,
                                and encode the answer with jansson instead of the direct
                                writer (the reference both fast paths are tested against) */

/*
 * As review_handle(), with flags. Both parse paths give byte-identical
 * answers; REVIEW_FULL_PARSE exists for tests, fuzzing and benchmarks.
 */
int review_handle_ex(const struct config *cfg, const char *body, size_t len, unsigned flags,
		     struct review_response *res, struct error *err);

/*
 * Why a webhook without claim lookups resolves no claim: the words of a
 * pod's warning or refusal, naming the chart value and the flag that turn
 * the lookups on.
 */
#define REVIEW_CLAIMS_OFF "claim lookups are off: claimLookups.enabled, serve --claim-lookups"

/*
 * As review_handle_ex(), the DRA claims of the pod (or of the workload's
 * templates) resolved through lk (borrowed): the webhook's cache of
 * ResourceClaimTemplates and ResourceClaims, or the objects `review` was
 * given (policy_claims.h). NULL: none looked up, as review_handle_ex(), and
 * the answer says REVIEW_CLAIMS_OFF (lk->fn NULL says lk->off instead).
 * What lk returns must stay valid until this returns.
 */
int review_handle_claims(const struct config *cfg, const char *body, size_t len, unsigned flags,
			 const struct policy_claim_lookup *lk, struct review_response *res, struct error *err);

/* Releases what res owns and zeroes it. Accepts NULL. */
void review_response_free(struct review_response *res);

/* ==== The policy ConfigMap (POST /validate-policy) ==== */

#define REVIEW_POLICY_KEY "policy.yaml"  /* the data key the chart keeps the policy in, and mounts */
#define REVIEW_POLICY_KEY_MAX K8S_NAME_CONFIGMAP_KEY_MAX  /* a ConfigMap key */
#define REVIEW_POLICY_ERRORS_MAX 20      /* errors a denial lists (check-config lists them all) */
#define REVIEW_POLICY_MESSAGE_MAX 4096   /* bytes of a denial's message: an error that does not fit
                                            whole is counted, not listed */
#define REVIEW_POLICY_WARNINGS_MAX 10    /* warnings an answer carries, each <= POLICY_WARNING_MAX */
#define REVIEW_VERSION_LABEL "app.kubernetes.io/version"

struct review_policy_options {
	const char *key;      /* the data key that holds the policy (REVIEW_POLICY_KEY) */
	const char *version;  /* this binary's release; NULL: no ConfigMap is taken for another
	                         release's (see review_policy_handle()) */
};

/*
 * Judges the ConfigMap an AdmissionReview (body[0..len), borrowed) carries
 * as the policy gpu-admission would serve: data[o->key] is loaded as serve
 * --config loads a file (config_load_buffer_all(), named o->key, so the
 * errors read as `gpu-admission check-config KEY` prints them). Valid: allowed,
 * with config_warnings() as warnings. Invalid, missing, or not text: denied
 * (403), the message listing the errors (at most REVIEW_POLICY_ERRORS_MAX,
 * within REVIEW_POLICY_MESSAGE_MAX bytes). A ConfigMap labelled
 * REVIEW_VERSION_LABEL with a release other than o->version is one a chart
 * upgrade is rolling out, written for a binary whose policy fields this one
 * may not know: it is allowed, its errors here given as warnings (the new
 * replicas judge it when they load it, and stay not ready on a bad one).
 * Anything but a ConfigMap CREATE or UPDATE is allowed untouched. flags:
 * REVIEW_FULL_PARSE as for review_handle_ex(). Returns as review_handle().
 * The load allocates with malloc, outside jansson: up to
 * config_load_memory() bytes of the policy text's length.
 */
int review_policy_handle(const struct review_policy_options *o, const char *body, size_t len, unsigned flags,
			 struct review_response *res, struct error *err);

/*
 * 0 when key is a ConfigMap data key (1 to REVIEW_POLICY_KEY_MAX of
 * letters, digits, '-', '_' and '.', not "." or ".."), else -1 with
 * ERROR_INPUT saying why.
 */
int review_policy_key_check(const char *key, struct error *err);

/* ==== Offline, for the review command (review_offline.c) ==== */

/*
 * New: the AdmissionReview (admission.k8s.io/v1, CREATE, dryRun) the API
 * server would send for the pod template t (borrowed) describes: a Pod as it
 * is, or the Pod a controller would create from its template, in t's
 * namespace (a DaemonSet's owning it, sent by the DaemonSet controller's
 * service account). NULL only on ERROR_NOMEM.
 */
json_t *review_wrap(const struct template_item *t, struct error *err);

/*
 * New: the AdmissionReview (admission.k8s.io/v1, CREATE, dryRun) the API
 * server sends when obj (borrowed: an object of a manifest, with apiVersion
 * and kind) is applied, as the validating webhook receives it: request.kind
 * from its apiVersion and kind, in its namespace (default "default"). NULL
 * with ERROR_INPUT (no apiVersion or kind, metadata not a map) or
 * ERROR_NOMEM.
 */
json_t *review_wrap_object(const json_t *obj, struct error *err);

/*
 * Reads an answer (an AdmissionReview response, borrowed) back: *patch gets
 * a new reference to its JSON Patch, decoded ([] when there is none), and
 * message[cap] its status message ("" when none). 0, or -1 with err.
 */
int review_answer_read(const char *answer, size_t len, json_t **patch, char *message, size_t cap,
		       struct error *err);

/*
 * New: request.object of the AdmissionReview text review (borrowed) with
 * patch (borrowed) applied; NULL with err (ERROR_INPUT when there is none).
 */
json_t *review_patched_object(const char *review, size_t len, const json_t *patch, struct error *err);

/*
 * Whether buf[0..len) is a manifest holding pod templates rather than an
 * AdmissionReview (someone gave review a Pod or a Deployment): 1 with the
 * first template's kind in kind[cap], else 0.
 */
int review_sniff(const char *buf, size_t len, char *kind, size_t cap);

#endif
