/*
 * admpolicy: the policy as admission policies the API server runs itself
 * (CEL: ValidatingAdmissionPolicy, MutatingAdmissionPolicy), so the two
 * guarantees hold with no webhook process:
 *  - gpu-admission-pods (validating, Pods): a CPU-only pod is refused on each
 *    route the webhook refuses it (a toleration of the GPU taint, a
 *    nodeSelector or required node affinity that only GPU nodes meet, a pin
 *    by name: spec.nodeName, kubernetes.io/hostname, matchFields on
 *    metadata.name), with the webhook's message; on UPDATE only for a route
 *    the stored pod did not take (policy.c judge_update). A GPU pod that no
 *    pool may take (resources, maxGPUsPerPod, namespaces, podSelector, a
 *    nodeSelector that contradicts the pool, gpu-admission/pool) is refused.
 *  - gpu-admission-workloads (validating, the built-in workload kinds): the
 *    same over the pod template, as /validate judges it at apply.
 *  - gpu-admission-pods (mutating, Pods, CREATE): a GPU pod gets the GPU
 *    toleration unless it tolerates the taint, and under placement pinned
 *    the chosen pool's nodeSelector entries it lacks and the pool's
 *    tolerations it lacks. It adds only what is missing, as the webhook
 *    does, so each skips what the other did.
 * Exempt namespaces and namespaceModes become the bindings' namespace
 * selectors (enforce: Deny; warn: Warn; dryrun: Audit and Warn, and no
 * mutation); exempt podSelectors and the DaemonSet exemption are CEL.
 *
 * What CEL cannot do as the webhook does (the README lists it; the cluster
 * suite asserts each case): a pod pinned by name or with a required node
 * affinity gets the toleration only, no pool (the webhook reads the pins and
 * what the affinity leaves possible); placement fallback gets the toleration
 * only (no required/preferred affinity); the requirement that the pod's
 * node affinity not rule a pool out is not judged; custom resources
 * (workloads:) are not reached (CEL cannot search them for templates);
 * GPU fractions and shares (gpuAnnotations, gpuShareResources) are not GPU
 * demand here, so such a pod tolerating the GPU taint is refused; DRA claims
 * are never resolved (no lookups in CEL); a GPU pod template changed by
 * UPDATE is not judged by the pool rules (the webhook judges it as at
 * CREATE, policy.c decide(); here its pods are, when created); warnings
 * (wildcard toleration, preferred affinity, a pod's preferred terms
 * outweighed by the pool order, pins GPU nodes cannot
 * be told from) are the webhook's; the refusals of GPU pods name no pool
 * list. A sidecar's GPUs count as if it ran beside every init container
 * (an upper bound of the webhook's peak).
 *
 * Every list an expression walks is bounded (ADMPOLICY_*_MAX): the first
 * validation refuses a pod past a bound, and the worst-case cost of each
 * expression, computed over those bounds, must stay within the API
 * server's limits or the build fails.
 *
 * Pure: builds JSON from a loaded policy; no I/O, no globals.
 */
#ifndef GPU_ADMISSION_ADMPOLICY_H
#define GPU_ADMISSION_ADMPOLICY_H

#include <jansson.h>

#include "base/error.h"
#include "policy/config.h"

/* The API server's limits (k8s.io/apiserver/pkg/apis/cel/config.go). */
#define ADMPOLICY_COST_PER_CALL 1000000ULL  /* PerCallLimit: one expression */
#define ADMPOLICY_COST_BUDGET 10000000ULL   /* RuntimeCELCostBudget: a policy's evaluation */

/* What one pod may hold for the policies to judge it (a pod past one is refused). */
#define ADMPOLICY_CONTAINERS_MAX 32   /* containers plus init containers */
#define ADMPOLICY_RESOURCES_MAX 16    /* entries of one container's limits or requests */
#define ADMPOLICY_LIST_MAX 32         /* tolerations, nodeSelector entries, owner references */
#define ADMPOLICY_TERMS_MAX 8         /* required node selector terms, requirements of one */
#define ADMPOLICY_VALUES_MAX 16       /* values of one requirement */
#define ADMPOLICY_NAME_MAX 253        /* characters of a node or resource name (a DNS subdomain) */

/* Kubernetes minors: which admission policy APIs exist (k8s.io/api admissionregistration). */
#define ADMPOLICY_MINOR_VALIDATING 30   /* ValidatingAdmissionPolicy v1 (GA) */
#define ADMPOLICY_MINOR_MUTATING_BETA 34 /* MutatingAdmissionPolicy v1beta1, feature gate off by default */
#define ADMPOLICY_MINOR_MUTATING_GA 36   /* MutatingAdmissionPolicy v1, on by default */

/*
 * New: a v1 List of the policies and their bindings for Kubernetes 1.minor
 * (no MutatingAdmissionPolicy below ADMPOLICY_MINOR_MUTATING_BETA), each
 * policy annotated with the worst-case cost of its expressions. NULL with
 * ERROR_INPUT (a minor below ADMPOLICY_MINOR_VALIDATING), ERROR_CONFIG (a
 * policy string CEL cannot hold, or a cost over the limits: the message says
 * which) or ERROR_NOMEM.
 */
json_t *admpolicy_build(const struct config *cfg, int minor, struct error *err);

#endif
