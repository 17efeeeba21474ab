/*
 * workload: a workload object (a Deployment, a CronJob, a custom resource
 * the policy lists) judged at kubectl apply by its pod templates.
 *
 * Each template is found and judged exactly as `audit` finds and judges it
 * (template_find_object(), template_judge()): the verdict for a workload is
 * its templates' audit verdicts, by construction. They make one answer:
 *  - a template the policy would reject denies the workload (in enforce; in
 *    warn and dryrun it is admitted with a warning per such template saying
 *    what enforce would do), with a message naming the kind, each rejected
 *    template's path and its rejection (the routes, how to fix them), and
 *    whether `gpu-admission audit --fix FILE` fixes the manifest;
 *  - a template that would be mutated is admitted as it is, never patched:
 *    pods stay the only objects gpu-admission changes (GitOps tools see no
 *    drift), and its pods get the mutation when they are created; with one
 *    exception, on /mutate (req->mutate): a DaemonSet's template the
 *    gpuInfraNamespaces rule gives the GPU toleration (template_patch),
 *    since the DaemonSet controller makes no pod it could otherwise go on;
 *  - warnings only where the template's author must act (a wrong-key
 *    toleration, a wildcard toleration, ...), never for what the policy
 *    merely did (an exemption, the mode), each prefixed with the template's
 *    path and cut to kube-apiserver's 256 bytes, at most WORKLOAD_WARNINGS_MAX.
 * On UPDATE only a template that changed in what the policy reads is judged,
 * with the pod UPDATE rule against the template of the same path in
 * oldObject (a CPU template newly aimed at GPU nodes is denied, nothing else
 * is); a scale, a label or a status change, or a template unchanged, is
 * admitted untouched, even when the template would be rejected today.
 * Pure, like the policy: no I/O, no globals.
 */
#ifndef GPU_ADMISSION_WORKLOAD_H
#define GPU_ADMISSION_WORKLOAD_H

#include <jansson.h>

#include "policy/config.h"
#include "base/error.h"
#include "policy/policy.h"

#define WORKLOAD_MESSAGE_MAX 4096   /* a denial: every rejected template, cut here on a character */
#define WORKLOAD_TEMPLATES_MAX 256  /* pod templates judged in one object (and in its oldObject):
                                       real ones hold 1 to a few dozen (a JobSet's replicatedJobs,
                                       a RayCluster's worker groups); more is refused as input, so
                                       a review's work and memory stay bounded (a 1.2 MB custom
                                       resource can hold 32,000) */
#define WORKLOAD_WARNINGS_MAX 8     /* warnings of 256 bytes in an answer: kube-apiserver
                                       truncates them all past 4096 characters in total
                                       (k8s.io/apiserver/pkg/endpoints/filters/warning.go),
                                       which other webhooks share */

/* Reasons of a workload's own (otherwise the deciding template's reason code). */
#define WORKLOAD_R_NONE      "no-pod-template"          /* nothing to judge in it */
#define WORKLOAD_R_UNCHANGED "pod-templates-unchanged"  /* UPDATE that changes no template */

struct workload_request {
	const json_t *object;      /* borrowed: request.object */
	const json_t *old_object;  /* borrowed: request.oldObject on UPDATE, or NULL */
	const char *group, *kind;  /* borrowed: request.kind */
	const char *ns;            /* borrowed: request.namespace; NULL or "": the object's */
	enum policy_operation operation; /* CREATE or UPDATE (anything else is not judged) */
	const struct policy_claim_lookup *claims; /* borrowed: where the templates' DRA claims are
	                              looked up (their namespace); NULL: none is */
	int mutate;                /* the mutating webhook's review: templates the policy patches
	                              themselves (policy_result.template_patch) are patched in the
	                              answer, and on UPDATE judged even when unchanged */
};

struct workload_result {
	/*
	 * The answer: decision, verdict (REJECT or ALLOW, or MUTATE with a patch:
	 * what enforce answers),
	 * mode, exempt, reason, warnings, annotations; a patch (paths from the
	 * object's root) only with req->mutate, decision MUTATE. Its message is
	 * unused: see message.
	 */
	struct policy_result answer;
	char message[WORKLOAD_MESSAGE_MAX]; /* the denial, or what enforce would deny */
	size_t templates;                   /* found */
	size_t judged;                      /* judged (UPDATE: those that changed) */
};

/*
 * Judges the workload req describes (everything borrowed) under cfg into
 * res, which the caller releases with workload_result_free() whatever the
 * return. 0 with an answer; -1 with ERROR_INPUT (a template the policy
 * cannot read: its path and why) or ERROR_NOMEM.
 */
int workload_evaluate(const struct config *cfg, const struct workload_request *req,
		      struct workload_result *res, struct error *err);

/* Releases what res owns and zeroes it. Accepts NULL. */
void workload_result_free(struct workload_result *res);

#endif
