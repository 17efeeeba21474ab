/*
 * template: the pod templates inside Kubernetes objects, found on plain JSON
 * values, and judged. One finder and one judge for the auditor and the
 * webhook, so a workload is judged at kubectl apply exactly as `audit`
 * judges its templates. Positions are the caller's: the auditor looks them
 * up in the manifest it read (manifest_line()).
 *
 * Where the templates are:
 *  - in the kinds Kubernetes defines, at the one place each puts it: a Pod is
 *    its own; Deployment, ReplicaSet, StatefulSet, DaemonSet, Job,
 *    ReplicationController: spec.template; CronJob:
 *    spec.jobTemplate.spec.template; PodTemplate: template;
 *  - in any other object (custom resources): every member named "template"
 *    or "...Template" (LeaderWorkerSet's leaderTemplate, workerTemplate)
 *    whose value is a pod template ({metadata, spec} with spec.containers an
 *    array: Kubeflow, Ray, JobSet, LeaderWorkerSet) or a PodSpec itself
 *    ({containers: [...]}: KServe LLMInferenceService's spec.template),
 *    searched everywhere below the object but in its own metadata (names,
 *    labels, annotations, managedFields: never a pod template), and not
 *    inside a template found.
 * A PodSpec held directly is judged as {metadata: the object's metadata,
 * spec: the PodSpec}: its labels are the object's (for pool podSelectors
 * and exempt.podSelectors), its namespace the object's.
 */
#ifndef GPU_ADMISSION_TEMPLATE_H
#define GPU_ADMISSION_TEMPLATE_H

#include <stddef.h>

#include <jansson.h>

#include "policy/config.h"
#include "base/error.h"
#include "policy/policy.h"

#define TEMPLATE_KEY "template"            /* a member holding a pod template ... */
#define TEMPLATE_KEY_SUFFIX "Template"     /* ... or one whose name ends so */
#define TEMPLATE_LIST_DEPTH_MAX 4          /* kind: List nested in kind: List ... */
#define TEMPLATE_PATH_DEPTH 4             /* members on the way to a built-in kind's template
                                              (CronJob's spec.jobTemplate.spec.template) */
#define TEMPLATE_DEPTH_MAX 256             /* nesting searched: manifests (MANIFEST_DEPTH_MAX) and
                                              reviews (REVIEW_MAX_DEPTH) nest no deeper */

/* One pod template found. */
struct template_item {
	const json_t *pod;    /* what the policy judges: a Pod or a template {metadata, spec}
	                         (borrowed from the object), or own */
	json_t *own;          /* owned: {metadata, spec} built for a PodSpec held directly, or NULL */
	const json_t *node;   /* borrowed: the template's value where it sits in the object */
	char *pointer;        /* owned: JSON Pointer from the root searched, "" for a Pod */
	char *path;           /* owned: the same for people, "spec.template", "." for a Pod */
	const char *kind;     /* borrowed: the owning object's kind ("Deployment") */
	const char *name;     /* borrowed: metadata.name (or generateName), or "(unnamed)" */
	const char *ns;       /* borrowed: metadata.namespace, or "default" (callers may replace it) */
	int pod_itself;       /* a Pod, judged as the pod it is, not as a template */
	int daemonset;        /* its pods are a DaemonSet's (an apps/v1 DaemonSet's template) */
	unsigned long line;   /* 0: the caller fills it where it has positions */
};

/* Templates found, in the order of the object's members. Zeroed before first use. */
struct template_list {
	struct template_item *v;  /* owned, n of them */
	size_t n, cap;
	size_t max;               /* 0: any number; else finding more fails (ERROR_INPUT) */
	int indexed;              /* template_list_index() has sorted v by pointer */
};

/*
 * Memory for what finding and judging templates holds (lists, their paths,
 * a workload's results): jansson's allocator, which the server points at
 * the request's arena, so a workload review is charged to the memory budget
 * and released with the request like its parsed values; malloc elsewhere.
 * template_mem_free() accepts NULL.
 */
void *template_mem_alloc(size_t n);
void template_mem_free(void *p);

/*
 * Appends to out the templates of a document's root (borrowed; out's items
 * borrow from it): an object (its apiVersion's group and its kind say where
 * to look; without apiVersion, the kind alone), the items of a kind: *List,
 * or the objects of an array (`kubectl get -o json | jq .items`). Returns 0,
 * or -1 with ERROR_NOMEM.
 */
int template_find(const json_t *root, struct template_list *out, struct error *err);

/*
 * As template_find() for one object obj (borrowed) of the given group and
 * kind (borrowed: an AdmissionReview's request.kind), never a list.
 */
int template_find_object(const json_t *obj, const char *group, const char *kind, struct template_list *out,
			 struct error *err);

/*
 * Sorts l's items by pointer, for lists only looked up with template_at()
 * (an UPDATE's old templates): each lookup then costs O(log n), not O(n),
 * so a hostile object's templates cannot cost n² comparisons. The order of
 * the object's members is lost.
 */
void template_list_index(struct template_list *l);

/* The template of l at pointer (borrowed), or NULL. Borrowed from l. */
const struct template_item *template_at(const struct template_list *l, const char *pointer);

/* Releases what l owns and zeroes it. Accepts NULL. */
void template_list_free(struct template_list *l);

/*
 * Whether group/kind is one of the kinds Kubernetes defines with a pod
 * template at one place (or a Pod): its templates are only there.
 */
int template_builtin(const char *group, const char *kind);

#define TEMPLATE_KINDS 9  /* Pod and the eight workload kinds Kubernetes defines */

/* Built-in kind i < TEMPLATE_KINDS ("Pod", "Deployment", ...), or NULL. Static storage. */
const char *template_kind(size_t i);

/*
 * Member j of the way to built-in kind i's pod template ("spec", then
 * "template" for a Deployment), NULL past its end (at once for a Pod, its
 * own). Static storage: what matchcond's conditions read, declared once.
 */
const char *template_kind_step(size_t i, size_t j);

/*
 * A bounded label for group/kind: its name when it is one of the built-in
 * kinds (template_kind()), else "custom". Static storage.
 */
const char *template_kind_label(const char *group, const char *kind);

/*
 * Judges t (borrowed) with cfg (borrowed) into res (released by the caller
 * with policy_result_free() whatever the return): policy_evaluate() with the
 * one request auditor and webhook share, CREATE (old NULL) or, with op
 * UPDATE, against old (the same template as stored, or NULL when it is new).
 * A template is judged for the pods it makes: never patched, never expected
 * mutated already (/validate's own rule), its warnings whole; callers cut
 * them to their limits. Returns policy_evaluate()'s result.
 */
int template_judge(const struct config *cfg, const struct template_item *t, const struct template_item *old,
		   enum policy_operation op, struct policy_result *res, struct error *err);

/*
 * As template_judge(), its DRA claims resolved through lk (borrowed; NULL:
 * none looked up, as template_judge()): ResourceClaimTemplates and
 * ResourceClaims in t's namespace (policy_claims.h).
 */
int template_judge_claims(const struct config *cfg, const struct template_item *t, const struct template_item *old,
			  enum policy_operation op, const struct policy_claim_lookup *lk,
			  struct policy_result *res, struct error *err);

/*
 * Appends the operations of patch (borrowed: a result's patch or fix, paths
 * from the judged pod's root) to doc_patch with paths from the root t was
 * found in: under t's pointer, and for a PodSpec held directly, /spec/x as
 * the PodSpec's own x. 0, or -1 with ERROR_NOMEM (ERROR_INTERNAL: an
 * operation outside what the template holds).
 */
int template_rebase(const struct template_item *t, const json_t *patch, json_t *doc_patch, struct error *err);

/*
 * Whether two templates are alike in everything the policy reads
 * (policy_pod_fields): a change elsewhere (an image, an env) cannot change
 * a verdict.
 */
int template_same(const struct template_item *a, const struct template_item *b);

#endif
