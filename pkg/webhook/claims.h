/*
 * claims: the webhook's DRA claim lookups (serve --claim-lookups). Three
 * watch caches of resource.k8s.io/v1 (ResourceClaimTemplates,
 * ResourceClaims, DeviceClasses, cluster-wide) kept from the API server
 * with a read-only identity, the review_lookup the review path resolves a
 * pod's claims through, and their Prometheus metrics.
 *
 * Failure semantics: a lookup never waits for the API server. Until a cache
 * has synced (the first list done) a claim it holds is "cold"
 * (POLICY_CLAIM_UNKNOWN_COLD): the pod is judged as if the claim were
 * unknown, with the engine's warning naming the claim and "cache not
 * synced", and gpu_admission_claim_lookups_total{result="cold"}. Readiness does not
 * depend on the caches: a replica whose API server is unreachable, or does
 * not serve resource.k8s.io/v1 (Kubernetes before 1.34: each list answered
 * 404, the claim POLICY_CLAIM_UNKNOWN_NOT_SERVED and the warning saying so,
 * the caches retrying after their backoff in case it is enabled), still
 * answers (a cold cache must never block pods). After the first sync the
 * caches answer from what they last saw while they reconnect
 * (gpu_admission_claim_cache_watching 0 says so).
 */
#ifndef GPU_ADMISSION_CLAIMS_H
#define GPU_ADMISSION_CLAIMS_H

#include <stddef.h>

#include "base/error.h"
#include "k8s/watchcache.h"
#include "policy/policy_claims.h"

/*
 * The API group and version the caches read: resource.k8s.io/v1, served by
 * default from Kubernetes 1.34 (DRA's GA) on; 1.37 serves it too.
 */
#define CLAIMS_API_VERSION "resource.k8s.io/v1"
#define CLAIMS_CACHES 3         /* templates, claims, device classes */

struct claims_options {
	const char *kubeconfig;     /* a kubeconfig file; NULL: the in-cluster service account */
	const char *sa_dir;         /* in-cluster: the service account's directory (NULL: KUBE_SA_DIR) */
	size_t max_objects;         /* per cache; 0: WATCHCACHE_MAX_OBJECTS */
	size_t max_object_bytes;    /* 0: WATCHCACHE_MAX_OBJECT_BYTES */
};

struct claims;

/*
 * New: the API configuration loaded (ERROR_CONFIG when it cannot be: a bad
 * kubeconfig, not in a cluster) and the caches' threads started. An
 * unreachable API server is no error here: the caches stay cold and retry.
 */
struct claims *claims_start(const struct claims_options *o, struct error *err);

/* Stops the caches and frees c. Accepts NULL. */
void claims_free(struct claims *c);

/*
 * One review's lookups: the objects parsed out of the caches (on the
 * calling thread's allocator: serve's request arena), alive until
 * claims_review_end(), as policy_claim_lookup wants them.
 */
struct claims_review {
	struct claims *c;
	json_t *held;
};

/* Fills lk (for review_handle_claims()) to look up through c for the review cr (caller-owned). */
void claims_review_begin(struct claims *c, struct claims_review *cr, struct policy_claim_lookup *lk);

/* Releases what the review's lookups hold. */
void claims_review_end(struct claims_review *cr);

/* Whether every cache has synced once. */
int claims_synced(const struct claims *c);

/*
 * Appends the caches' and lookups' metrics (Prometheus text) to *text
 * (malloc'd, *len bytes, NUL-terminated; reallocated). 0, or -1 with
 * ERROR_NOMEM (*text left as it was).
 */
int claims_metrics(const struct claims *c, char **text, size_t *len, struct error *err);

#endif
