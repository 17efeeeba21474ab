/*
 * matchcond: the webhooks' CEL matchConditions, generated from the policy.
 *
 * kube-apiserver evaluates a webhook's matchConditions before it calls the
 * webhook, and skips the call when one is false
 * (k8s.io/apiserver/pkg/admission/plugin/webhook/matchconditions/matcher.go).
 * These conditions let through only the requests gpu-admission may act on,
 * so a webhook outage under failurePolicy Fail blocks only those. One set
 * per webhook entry, each entry one class of object, so an expression only
 * ever reads the object it was written for:
 *  - pods (both pod webhooks):
 *    - gpu-relevant: a container or init container names a GPU resource or
 *      a gpuShareResources one of the policy, or a name that looks like a
 *      GPU (warned about) (limits or requests, any value), or has resource
 *      claims; the pod has DRA resource claims, or a gpuAnnotations key and
 *      a schedulerName one of the keys names; a toleration could tolerate the GPU
 *      taint (its key, an empty key, or the nvidia.com/gpu key the policy
 *      warns about); the nodeSelector, a required or preferred node affinity
 *      term uses a GPU node label (any value) or a pool's label with a value
 *      a pool selects; or a node name (nodeName, a kubernetes.io/hostname
 *      selector or requirement, matchFields on metadata.name) could be a GPU
 *      node's;
 *    - update-changes-what-policy-reads: not an UPDATE, or one that changes
 *      a member of the pod spec the policy reads (policy_pod_spec_fields,
 *      the one declaration of them), compared whole, or, for a pod of a
 *      gpuAnnotations scheduler, its annotations: an UPDATE is judged
 *      only for what the new pod does that the stored one did not;
 *  - workloads (the built-in kinds, on /validate): the same two over the pod
 *    template of the kind request.kind names, where template.c says it is
 *    (spec.template, spec.jobTemplate.spec.template, template); an UPDATE
 *    is sent when the template changed in a member of policy_pod_fields
 *    (its metadata's too), which is the webhook's own rule (template_same());
 *    a kind the conditions do not know is sent;
 *  - custom (the policy's workloads, on /validate): CEL cannot search a
 *    custom resource for templates at any depth, as the webhook does, so
 *    every CREATE is sent, and an UPDATE unless it changes nothing but
 *    metadata the policy does not read (a template can sit anywhere else).
 * The conditions are a superset of what the webhook acts on, never a guess:
 * a list or map longer than MATCHCOND_LIST_MAX, or a name longer than
 * MATCHCOND_STRING_MAX, sends the request rather than being looked at, which
 * also bounds the evaluation cost (see matchcond_set.cost). Every member is
 * tested with has() before it is read: an evaluation error would reject the
 * request under failurePolicy Fail (matcher.go).
 *
 * Pure: builds text from a loaded policy; no I/O, no globals.
 */
#ifndef GPU_ADMISSION_MATCHCOND_H
#define GPU_ADMISSION_MATCHCOND_H

#include <stddef.h>

#include <jansson.h>

#include "policy/config.h"
#include "base/error.h"

/*
 * The API server's limits (k8s.io/apiserver/pkg/apis/cel/config.go,
 * cel/environment/base.go, pkg/apis/admissionregistration/validation):
 */
#define MATCHCOND_PER_WEBHOOK_MAX 64          /* matchConditions per webhook (validateMatchConditions) */
#define MATCHCOND_COST_PER_CALL 1000000ULL   /* PerCallLimit: one expression's runtime cost */
#define MATCHCOND_COST_BUDGET 2500000ULL     /* RuntimeCELCostBudgetMatchConditions: all of one
                                                webhook's conditions together */

/* What the expressions look at before they give up and send the request: */
#define MATCHCOND_LIST_MAX 16      /* entries of a list or map (containers, a container's
                                      limits, tolerations, nodeSelector, a requirement's values) */
#define MATCHCOND_TERMS_MAX 8      /* node selector terms (required, preferred), and
                                      requirements in one: nested, so kept lower */
#define MATCHCOND_STRING_MAX 63    /* characters of a resource name or node name looked at: a
                                      label value's limit (kubernetes.io/hostname is one) */

#define MATCHCOND_N 2              /* conditions generated, at most */

/* The webhook entries that carry conditions, one per class of object. */
enum matchcond_entry {
	MATCHCOND_PODS = 0,   /* Pods: both pod webhooks */
	MATCHCOND_WORKLOADS,  /* the built-in workload kinds (validating) */
	MATCHCOND_CUSTOM,     /* the policy's workloads, custom resources (validating) */
};
#define MATCHCOND_ENTRIES 3
#define MATCHCOND_ENTRY_CHOICES "pods|workloads|custom" /* their names, in enum order */

/* One matchCondition. */
struct matchcond {
	const char *name;            /* static storage */
	char *expression;            /* owned */
	unsigned long long cost;     /* worst-case runtime cost, in cel-go's units */
};

struct matchcond_set {
	struct matchcond v[MATCHCOND_N];
	size_t n;
	unsigned long long cost;     /* the sum: what the webhook's budget must hold */
};

/*
 * Builds the conditions of webhook entry under cfg (borrowed) into out
 * (caller storage; release with matchcond_set_free() whatever the result).
 * Returns 0, or -1 with ERROR_CONFIG when a policy string cannot be written
 * into CEL (a control character) or the worst-case cost is over the API
 * server's limits (the message says which and by how much), or ERROR_NOMEM.
 */
int matchcond_build(const struct config *cfg, enum matchcond_entry entry, struct matchcond_set *out,
		    struct error *err);

/* Releases what s owns and zeroes it. Accepts NULL. */
void matchcond_set_free(struct matchcond_set *s);

/*
 * New: s (borrowed) as YAML text ready to paste under a webhook (a comment
 * with the costs, then `matchConditions:` and the list), for free(). NULL
 * only on ERROR_NOMEM.
 */
char *matchcond_yaml(const struct matchcond_set *s, struct error *err);

/* New: s (borrowed) as {"matchConditions": [{name, expression}, ...]}. NULL on ERROR_NOMEM. */
json_t *matchcond_json(const struct matchcond_set *s, struct error *err);

#endif
