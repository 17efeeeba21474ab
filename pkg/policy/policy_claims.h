/*
 * policy_claims: what a pod's DRA resource claims ask for, as its caller
 * could resolve them.
 *
 * A pod names its claims (spec.resourceClaims[]: a ResourceClaim, or a
 * ResourceClaimTemplate its claim will be made from); which DeviceClass and
 * how many devices each asks for is in those objects, not in the pod. The
 * engine stays pure: the caller resolves (`review` and `audit` from the
 * objects in their input, the webhook from its cache of the API) and passes
 * the result in policy_request.claims; the engine decides. A claim the
 * caller could not resolve is UNKNOWN, with the reason, and never counts as
 * GPU demand: no claim opens a route to GPU nodes unless it is shown to ask
 * for a GPU DeviceClass (README, Security).
 *
 * Everything here is pure. Strings in a policy_claim are borrowed from the
 * JSON it was filled from (the pod for the reference, the template or claim
 * for the requests): the caller keeps both alive while the engine runs.
 */
#ifndef GPU_ADMISSION_POLICY_CLAIMS_H
#define GPU_ADMISSION_POLICY_CLAIMS_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"

/*
 * Upstream bounds (k8s.io/kubernetes pkg/apis/resource/types.go):
 * DeviceRequestsMaxSize (requests of one claim) and
 * FirstAvailableDeviceRequestMaxSize (alternatives of one request). An
 * object with more is invalid and resolves to an error, never cut.
 */
#define POLICY_CLAIM_REQUESTS_MAX 32
#define POLICY_CLAIM_ALTS_MAX 8
/* spec.resourceClaims entries of one pod the engine reads; a pod with more is an input error. */
#define POLICY_POD_CLAIMS_MAX 32

enum policy_claim_state {
	POLICY_CLAIM_UNKNOWN_NO_LOOKUP = 0, /* the caller does no lookups (the zero value) */
	POLICY_CLAIM_UNKNOWN_NOT_FOUND,     /* looked up: no such template or claim (yet) */
	POLICY_CLAIM_UNKNOWN_COLD,          /* the caller's cache has not synced: cannot tell */
	POLICY_CLAIM_UNKNOWN_NOT_SERVED,    /* the API server does not serve the resource.k8s.io
	                                       version the caller reads: nothing can be found */
	POLICY_CLAIM_UNKNOWN_INVALID,       /* found, but not readable as a claim (see message) */
	POLICY_CLAIM_RESOLVED               /* requests[] says what it asks for */
};

enum policy_claim_source {
	POLICY_CLAIM_FROM_TEMPLATE = 0, /* spec.resourceClaims[].resourceClaimTemplateName */
	POLICY_CLAIM_FROM_CLAIM         /* spec.resourceClaims[].resourceClaimName */
};

enum policy_alloc_mode {
	POLICY_ALLOC_EXACT = 0, /* allocationMode ExactCount (the default): count devices */
	POLICY_ALLOC_ALL        /* allocationMode All: every matching device of one node */
};

/* One way to satisfy a request: `exactly`, or one `firstAvailable` entry. */
struct policy_device_alt {
	const char *device_class; /* deviceClassName; borrowed, never NULL once resolved */
	enum policy_alloc_mode mode;
	long long count;          /* POLICY_ALLOC_EXACT: >= 1; POLICY_ALLOC_ALL: 0 */
};

/* One spec.devices.requests[] entry: satisfied by the first alternative that can be. */
struct policy_device_request {
	const char *name;         /* borrowed */
	struct policy_device_alt alts[POLICY_CLAIM_ALTS_MAX];
	size_t n_alts;            /* 1 for `exactly`, else the firstAvailable entries */
	int admin_access;         /* adminAccess: true (monitoring access, not allocation) */
};

/* What the pod's spec.resourceClaims[] entry `name` asks for, as far as the caller knows. */
struct policy_claim {
	const char *name;               /* the pod's claim name (spec.resourceClaims[].name); borrowed */
	enum policy_claim_source source;
	const char *object;             /* the template's or claim's name; borrowed */
	enum policy_claim_state state;
	char message[128];              /* UNKNOWN_INVALID: why; UNKNOWN_NO_LOOKUP: why nothing
	                                   was looked up (policy_claim_lookup.off), or "" */
	struct policy_device_request requests[POLICY_CLAIM_REQUESTS_MAX];
	size_t n_requests;              /* RESOLVED: 0 asks for nothing */
};

/*
 * The claims a caller resolved for one pod, passed in policy_request.claims:
 * v[0..n) caller-owned (heap: a policy_claim is a few KiB). Each names a
 * spec.resourceClaims[] entry by name; a pod's claim with no entry here is
 * UNKNOWN_NO_LOOKUP. A pod template's claims are judged the same way.
 */
struct policy_claims {
	struct policy_claim *v;
	size_t n;
};

/*
 * The pod's spec.resourceClaims[] (pod borrowed: a Pod or a template
 * {metadata, spec}) as unresolved claims: out[0..*n) gets name, source and
 * object, state UNKNOWN_NO_LOOKUP: what the caller must look up (a
 * template or claim `object` in the pod's namespace). At most cap entries.
 * An entry naming neither (or both) is left UNKNOWN_INVALID with its
 * message. Returns 0, or -1 with ERROR_INPUT (a field of the wrong type,
 * more than cap entries).
 */
int policy_claims_from_pod(const json_t *pod, struct policy_claim *out, size_t cap, size_t *n,
			   struct error *err);

/*
 * Fills c's requests from obj (borrowed; must outlive c's use): a
 * resource.k8s.io ResourceClaimTemplate (spec.spec.devices.requests) or
 * ResourceClaim (spec.devices.requests), in v1 or v1beta2 (`exactly` or
 * `firstAvailable` per request) or v1beta1 / v1alpha3 (the request's own
 * deviceClassName, allocationMode, count; v1beta1's firstAvailable) shape.
 * The kind must match c->source. c->name, source and object are kept.
 * Returns 0 with c->state RESOLVED; or -1 with ERROR_INPUT (wrong kind or
 * version, a field of the wrong type, a count < 1, too many requests or
 * alternatives), c->state UNKNOWN_INVALID and c->message saying why.
 */
int policy_claim_resolve(struct policy_claim *c, const json_t *obj, struct error *err);

/*
 * The claims entry for the pod's claim name in cs (NULL: none, then it is
 * UNKNOWN_NO_LOOKUP). Borrowed.
 */
const struct policy_claim *policy_claims_find(const struct policy_claims *cs, const char *name);

/*
 * How a caller finds the object a claim names: fn returns
 * POLICY_CLAIM_RESOLVED with *obj set (borrowed: it must outlive the
 * evaluation), or POLICY_CLAIM_UNKNOWN_NOT_FOUND, or
 * POLICY_CLAIM_UNKNOWN_COLD (the cache cannot tell yet), or
 * POLICY_CLAIM_UNKNOWN_NOT_SERVED (the API server does not serve the
 * version the cache reads). ns is the pod's namespace. The webhook's cache,
 * `audit` and `review` (the objects of their input: policy_claim_objects)
 * each provide one.
 */
typedef enum policy_claim_state (*policy_claim_lookup_fn)(void *ctx, const char *ns,
							   enum policy_claim_source source,
							   const char *name, const json_t **obj);

/*
 * fn NULL: the caller looks nothing up, and off (static text, or NULL) says
 * why in the pod's warnings and refusals ("claim lookups are off
 * (claimLookups.enabled, serve --claim-lookups)"): the author of a pod whose
 * claim did not count must learn which setting would make it count.
 */
struct policy_claim_lookup {
	policy_claim_lookup_fn fn;
	void *ctx;
	const char *off;
};

/* policy_claim_lookup.off of `audit` and `review` given no claim object to look claims up in. */
#define POLICY_CLAIMS_NONE_IN_INPUT "no ResourceClaimTemplate or ResourceClaim in the input"


/*
 * Resolves every claim of pod (borrowed; ns its namespace) through lk
 * (NULL or lk->fn NULL: none looked up, each claim UNKNOWN_NO_LOOKUP with
 * lk->off as its message) into out, whose v it allocates (release with
 * policy_claims_free()). A claim whose object is found but unreadable is
 * UNKNOWN_INVALID with its message, not an error: it is the pod's author's
 * to fix, and the engine warns. Returns 0, or -1 with ERROR_INPUT (the
 * pod's resourceClaims unreadable: the engine refuses the pod the same way)
 * or ERROR_NOMEM.
 */
int policy_claims_resolve_pod(const json_t *pod, const char *ns, const struct policy_claim_lookup *lk,
			      struct policy_claims *out, struct error *err);

/* Releases what cs owns and zeroes it. Accepts NULL. */
void policy_claims_free(struct policy_claims *cs);

/*
 * The ResourceClaimTemplates and ResourceClaims of an input (audit's files,
 * review's manifest), to look claims up in: objects borrowed (they must
 * outlive the set), indexed by (namespace, kind, name) so that a lookup
 * costs O(log n) whatever the input. A namespace left out is "default", as
 * for a pod.
 */
struct policy_claim_objects {
	struct policy_claim_object {
		const char *ns, *name;
		enum policy_claim_source source;
		const json_t *obj;
	} *v;
	size_t n, cap;
	int sorted;
};

/*
 * Adds obj (borrowed) when it is a resource.k8s.io ResourceClaimTemplate or
 * ResourceClaim with a name: 1; 0 for anything else. -1 on ERROR_NOMEM.
 */
int policy_claim_objects_add(struct policy_claim_objects *set, const json_t *obj, struct error *err);

/*
 * A policy_claim_lookup_fn over set (ctx: the struct policy_claim_objects).
 * The first lookup sorts the set; adding after it is allowed (sorted again).
 */
enum policy_claim_state policy_claim_objects_lookup(void *ctx, const char *ns, enum policy_claim_source source,
						    const char *name, const json_t **obj);

/* Releases what set owns (not the objects) and zeroes it. Accepts NULL. */
void policy_claim_objects_free(struct policy_claim_objects *set);

/*
 * "no lookups", "not found", "cache not synced", "resource.k8s.io not
 * served", "invalid", "resolved". Static storage.
 */
const char *policy_claim_state_name(enum policy_claim_state state);

#endif
