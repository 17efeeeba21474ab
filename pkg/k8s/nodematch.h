/*
 * nodematch: where a pod may run, by the rules kube-scheduler and the kubelet
 * apply, evaluated on JSON as the API server stores it.
 *
 * One implementation of upstream semantics, shared by every module that
 * must agree with the scheduler: the policy (does a toleration tolerate the
 * GPU taint?), pool placement tests (is a patched pod schedulable exactly on
 * the eligible pools?) and the cost report (why is this GPU pod Pending?).
 * Sources, read for this module:
 *  - Toleration.ToleratesTaint, k8s.io/api/core/v1/toleration.go: an empty
 *    effect matches every effect, an empty key (with Exists) every key, an
 *    empty or absent operator means Equal;
 *  - FindMatchingUntoleratedTaint with the scheduler's TaintToleration
 *    filter: only NoSchedule and NoExecute taints keep a pod off a node;
 *  - k8s.io/component-helpers/scheduling/corev1/nodeaffinity: terms are
 *    ORed, requirements within a term ANDed, a term with neither
 *    matchExpressions nor matchFields matches no node, a term with an invalid
 *    requirement matches no node; matchFields knows only metadata.name;
 *  - k8s.io/apimachinery/pkg/labels Requirement.Matches: NotIn and
 *    DoesNotExist match a node without the key; Gt and Lt need the key and
 *    both sides to parse as base-10 int64.
 * Pure functions: no I/O, no globals, nothing allocated.
 */
#ifndef GPU_ADMISSION_NODEMATCH_H
#define GPU_ADMISSION_NODEMATCH_H

#include <stddef.h>

#include <jansson.h>

/*
 * Does toleration t (a Toleration object; borrowed) tolerate the taint
 * key=value:effect? value "" is a taint without a value. Anything that is not
 * an object, or has a member of the wrong type, tolerates nothing.
 */
int nodematch_tolerates(const json_t *t, const char *key, const char *value, const char *effect);

/*
 * The first of taints (a node's spec.taints array; borrowed) that keeps a pod
 * with tolerations (borrowed; NULL for none) off the node, as the scheduler's
 * TaintToleration filter sees it: effect NoSchedule or NoExecute, tolerated
 * by none. Returns that taint (borrowed from taints), or NULL when the pod
 * tolerates them all.
 */
const json_t *nodematch_untolerated(const json_t *tolerations, const json_t *taints);

/*
 * Does one NodeSelectorRequirement (a matchExpressions entry; borrowed) hold
 * for a node with labels (an object of strings; borrowed, NULL for none)?
 * An invalid requirement (unknown operator, wrong value count) holds nowhere.
 */
int nodematch_requirement(const json_t *req, const json_t *labels);

/*
 * Does a NodeSelectorTerm (borrowed) match a node with labels and name?
 * An empty term matches no node.
 */
int nodematch_term(const json_t *term, const json_t *labels, const char *node_name);

/*
 * Does a pod spec (borrowed) admit a node with labels and name, by its
 * nodeSelector and required node affinity (the scheduler's NodeAffinity
 * filter)? spec.nodeName and taints are not looked at: see
 * nodematch_untolerated() for taints.
 */
int nodematch_pod_selects(const json_t *spec, const json_t *labels, const char *node_name);

/*
 * Does toleration have (borrowed) tolerate every taint that the toleration
 * key/op/value/effect tolerates (op "Equal" or "Exists"; effect "" for every
 * effect)? How an existing toleration makes one gpu-admission would add
 * redundant.
 */
int nodematch_covers(const json_t *have, const char *key, const char *op, const char *value,
		     const char *effect);

/* The operators of labels.Requirement (NodeSelectorRequirement's, LabelSelector's). */
enum nodematch_op {
	NODEMATCH_OP_INVALID = 0,
	NODEMATCH_IN,
	NODEMATCH_NOT_IN,
	NODEMATCH_EXISTS,
	NODEMATCH_DOES_NOT_EXIST,
	NODEMATCH_GT,
	NODEMATCH_LT
};

/* The operator named op (NULL or unknown: NODEMATCH_OP_INVALID). */
enum nodematch_op nodematch_op_parse(const char *op);

/*
 * labels.Requirement.Matches for the set operators (In, NotIn, Exists,
 * DoesNotExist; anything else matches nothing): have is the label's value
 * (NULL when the label is absent), listed whether it is among the
 * requirement's values. The one place these semantics are written: node
 * requirements and metav1.LabelSelector expressions (which
 * LabelSelectorAsSelector turns into the same requirements) both use it.
 */
int nodematch_set_op(enum nodematch_op op, const char *have, int listed);

/* Three answers for nodes known only in part. */
enum nodematch_tri {
	NODEMATCH_NO = 0,   /* no such node satisfies the pod */
	NODEMATCH_YES,      /* every such node does */
	NODEMATCH_MAYBE     /* it depends on labels that are not known */
};

/*
 * Could a node carrying the labels known (an object of strings; borrowed)
 * satisfy pod spec's nodeSelector and required node affinity (borrowed)? A
 * node's other labels and its name are unknown: a requirement on a key known
 * does not set, or on metadata.name, may hold (MAYBE), unless it is invalid
 * and so holds nowhere. Terms are ORed, requirements ANDed, an empty term
 * matches nothing, as in nodematch_pod_selects(). Used to tell which pools a
 * pod's own node selection rules out: a pool's nodes carry its nodeSelector.
 */
enum nodematch_tri nodematch_pod_could_select(const json_t *spec, const json_t *known);

#endif
