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

#endif
