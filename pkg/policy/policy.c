#include "policy/policy_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/nodematch.h"
#include "base/quantity.h"

/* ==== Exemptions and modes ==== */

/*
 * An admin-listed pod selector: the pod is in one of the entry's namespaces
 * and its labels match the entry. Labels alone would not do: a workload sets
 * its own, so every entry is scoped to namespaces (config refuses one
 * without).
 */
static int selector_exempt(const struct config *cfg, const struct pod_view *pv)
{
	size_t i;

	for (i = 0; pv->labels != NULL && i < cfg->n_exempt_pod_selectors; i++) {
		const struct config_pod_selector *sel = &cfg->exempt_pod_selectors[i];

		if (policy_match_any(&sel->namespaces, pv->ns) && policy_selector_match(&sel->selector, pv->labels))
			return 1;
	}
	return 0;
}

/* The deferLabels key the pod carries (its queue places it), or NULL. Borrowed from cfg. */
static const char *deferred_to(const struct config *cfg, const struct pod_view *pv)
{
	size_t i;

	for (i = 0; pv->labels != NULL && i < cfg->defer_labels.n; i++)
		if (json_object_get(pv->labels, cfg->defer_labels.v[i]) != NULL)
			return cfg->defer_labels.v[i];
	return NULL;
}

/* The DaemonSet exemption: a DaemonSet pod (see policy_request) where the admin lets it apply. */
static int daemonset_exempt(const struct config *cfg, const struct pod_view *pv)
{
	return pv->daemonset && cfg->exempt_daemonsets &&
	       policy_match_any(&cfg->exempt_daemonset_namespaces, pv->ns);
}

/* Turns the verdict into the answer for the namespace's mode. */
static int apply_mode(struct policy_result *res, struct error *err)
{
	res->decision = res->verdict;
	switch (res->mode) {
	case CONFIG_MODE_ENFORCE:
		return 0;
	case CONFIG_MODE_WARN:
		if (res->verdict != POLICY_REJECT)
			return 0;
		res->decision = POLICY_ALLOW;
		return policy_note(res, err, "would be rejected (warn mode): %s", res->message);
	case CONFIG_MODE_DRYRUN:
		if (res->verdict == POLICY_ALLOW)
			return 0;
		res->decision = POLICY_ALLOW;
		if (res->verdict == POLICY_MUTATE)
			return policy_note(res, err, "would add (dryrun mode): %s", res->changes);
		return policy_note(res, err, "would be rejected (dryrun mode): %s", res->message);
	}
	return 0;
}

static int annotate(struct policy_result *res, struct error *err)
{
	int rc = 0;

	rc |= json_object_set_new(res->annotations, "decision",
				  json_string(res->exempt ? "exempt" : policy_decision_name(res->decision)));
	rc |= json_object_set_new(res->annotations, "reason", json_string(res->reason));
	rc |= json_object_set_new(res->annotations, "mode", json_string(config_mode_name(res->mode)));
	if (res->decision != res->verdict)
		rc |= json_object_set_new(res->annotations, "wouldDecide",
					  json_string(policy_decision_name(res->verdict)));
	if (res->pool != NULL)
		rc |= json_object_set_new(res->annotations, "pool", json_string(res->pool));
	else if (res->n_pools > 1) {
		size_t i, len = 1;
		char *pools;

		for (i = 0; i < res->n_pools; i++)
			len += strlen(res->pools[i]) + 1;
		pools = malloc(len);
		if (pools != NULL)
			policy_describe_pools(res, ",", pools, len);
		rc |= pools == NULL || json_object_set_new(res->annotations, "pools", json_string(pools)) != 0;
		free(pools);
	}
	if (res->deferred != NULL)
		rc |= json_object_set_new(res->annotations, "deferredTo", json_string(res->deferred));
	if (rc != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* A rejection the DaemonSet exemption admits: said in a note. */
static int exempt_daemonset(struct policy_result *res, struct error *err)
{
	if (policy_note(res, err, "admitted only because DaemonSet pods are exempt: %s", res->message) != 0)
		return -1;
	res->exempt = 1;
	res->verdict = POLICY_ALLOW;
	res->reason = R_EXEMPT_DS;
	res->message[0] = '\0';
	return 0;
}

/* ==== DRA claims ==== */

/* Were any of the pod's claims that are no GPU demand looked up at all? */
static int claims_read(const struct pod_view *pv)
{
	size_t i;

	for (i = 0; i < pv->n_other; i++)
		if (pv->other[i].state != POLICY_CLAIM_UNKNOWN_NO_LOOKUP)
			return 1;
	return 0;
}

/* How policy_routes_judge() names the claims of a pod with no GPU demand. */
static int claims_kind(const struct pod_view *pv)
{
	if (!pv->dra || pv->n_gpu > 0)
		return 0;
	return claims_read(pv) ? ROUTE_CLAIMS_READ : ROUTE_CLAIMS_UNREAD;
}

/* Why the pod's claims were not looked up, as its caller said (NULL: it did not). */
static const char *claims_unread_why(const struct pod_view *pv)
{
	size_t i;

	for (i = 0; i < pv->n_other; i++)
		if (pv->other[i].state == POLICY_CLAIM_UNKNOWN_NO_LOOKUP && pv->other[i].why != NULL)
			return pv->other[i].why;
	return NULL;
}

/*
 * The audit annotation claims: each claim that is no GPU demand as
 * name=why (claim_seen.code), so that an audit log tells a cold cache from
 * lookups that are off without the pod's warnings, which it does not keep.
 */
static int claims_annotate(const struct pod_view *pv, struct policy_result *res, struct error *err)
{
	char buf[POLICY_MESSAGE_MAX] = "";
	size_t i;

	for (i = 0; i < pv->n_other; i++)
		policy_appendf(buf, sizeof buf, "%s%s=%s", i ? "," : "", pv->other[i].name, pv->other[i].code);
	if (pv->n_other == 0)
		return 0;
	error_trim_utf8(buf);  /* claim names are the pod's text, cut to the buffer */
	if (json_object_set_new(res->annotations, "claims", json_string(buf)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Says what the claims that are no GPU demand are, one warning each: one
 * not found, or a cold cache, is the usual GitOps order (the template comes
 * in the same apply) or a restart, and the pod's author must know that it
 * goes unplaced. Claims no one looked up are said once, with why when the
 * caller said it (unread: the pod's only claims, or beside GPU resources).
 */
static int claims_warn(const struct pod_view *pv, struct policy_result *res, struct error *err)
{
	const char *unread_why = claims_unread_why(pv);
	size_t i;
	int unread = 0;

	if (claims_annotate(pv, res, err) != 0)
		return -1;
	for (i = 0; i < pv->n_other; i++) {
		const struct claim_seen *o = &pv->other[i];
		int rc;

		if (o->state == POLICY_CLAIM_UNKNOWN_NO_LOOKUP) {
			unread = 1;
			continue;
		}
		if (o->cls != NULL)
			rc = policy_warn(res, err, "DRA claim \"%s\" (%s %s): it asks for DeviceClass %s, which the "
					 "policy does not list in gpuDeviceClasses; not counted as a GPU request, so it "
					 "gets no GPU toleration nor pool from it", o->name, o->kind ? o->kind : "object",
					 o->object ? o->object : "?", o->cls);
		else
			rc = policy_warn(res, err, "DRA claim \"%s\" (%s %s): %s; not counted as a GPU request, so "
					 "it gets no GPU toleration nor pool from it", o->name, o->kind ? o->kind : "object",
					 o->object ? o->object : "?", o->why);
		if (rc != 0)
			return -1;
	}
	if (!unread)
		return 0;
	if (pv->n_gpu > 0)
		return policy_note(res, err, "pod also uses DRA resource claims; gpu-admission places it "
				   "for its GPU resources only and does not inspect the claims%s%s%s",
				   unread_why ? " (" : "", unread_why ? unread_why : "", unread_why ? ")" : "");
	return 0;
}

/* ==== The GPU stack ==== */

/*
 * A CPU pod whose required node selection reaches only GPU nodes and that
 * does not tolerate the GPU taint never starts there: a device plugin or
 * exporter so placed leaves every GPU node without its GPUs. It is told
 * which toleration to add, at apply (its DaemonSet's template) and in
 * audit. Adding it to the pods instead cannot work: the DaemonSet
 * controller creates no pod for a node whose NoSchedule taint its template
 * does not tolerate (pkg/controller/daemon: NodeShouldRunDaemonPod), so
 * there is no pod to mutate; only the DaemonSet's template can be, which
 * gpu-admission does in gpuInfraNamespaces only (policy_stack_infra()).
 */
static int judge_stack(const struct config *cfg, const struct pod_view *pv, struct policy_result *res,
		       struct error *err)
{
	char taint[128];

	policy_describe_taint(cfg, taint, sizeof taint);
	if (policy_warn(res, err, "its required node selection reaches only GPU nodes, but it does not tolerate "
			"the GPU taint %s, so it never starts there: add the toleration {key: %s, operator: "
			"Equal, value: %s, effect: %s}", taint, cfg->taint_key, cfg->taint_value,
			cfg->taint_effect) != 0)
		return -1;
	return 0;
}

/* ==== The engine ==== */

/*
 * The routes judged for a pod: all of them, but for a DaemonSet pod not the
 * warning about a pin by name GPU nodes cannot be told from. That pin is the
 * DaemonSet controller's own doing (a required affinity on metadata.name,
 * on every pod it creates), and it only places pods on nodes whose taints
 * they tolerate, which the toleration route judges.
 */
static unsigned judged_routes(const struct pod_view *pv)
{
	return pv->daemonset ? ~ROUTE_PINNED : ~0u;
}

/*
 * Judges the routes of r in which; a rejection of a pod the DaemonSet
 * exemption does not admit says how to fix it, and carries the fix.
 */
static int judge_routes(const struct config *cfg, const struct pod_view *pv, const struct pod_routes *r,
			unsigned which, struct policy_result *res, struct error *err)
{
	int advise = !daemonset_exempt(cfg, pv);

	if (policy_routes_judge(cfg, r, which, advise, claims_kind(pv), claims_unread_why(pv), res, err) != 0)
		return -1;
	/*
	 * The GPU operator's validators select its labels: the usual fix is its namespace's
	 * exemption (not for "default", which no operator runs in and no one should exempt).
	 */
	if (advise && res->verdict == POLICY_REJECT && r->operator_label && (r->taken & which & ROUTE_SELECTOR) &&
	    strcmp(pv->ns, "default") != 0)
		policy_appendf(res->message, sizeof res->message, ". If this is the GPU operator's own pod (its "
			       "validator, say), exempt its namespace instead: exempt.namespaces: [%s]", pv->ns);
	if (advise && res->verdict == POLICY_REJECT)
		return policy_routes_fix(cfg, pv, r->taken & which, res, err);
	return 0;
}

/*
 * UPDATE. Kubernetes lets tolerations be added to a pod, and nodeSelector
 * entries be added and node affinity changed while it has scheduling gates
 * (ValidatePodUpdate, pkg/apis/core/validation/validation.go): a pod created
 * clean can be aimed at GPU nodes afterwards. So a CPU-only pod is rejected
 * for each route its new version takes that the stored one did not (every
 * route, when the stored one requested a GPU), with the message CREATE
 * would give; a pod whose only "GPU" is a DRA claim is such a pod (see
 * decide()). Everything else is allowed untouched, and
 * nothing is ever patched: pods admitted earlier (in dryrun, by an
 * exemption, before the webhook was installed) keep working, and GPU pods
 * were placed when they were created.
 */
static int judge_update(const struct config *cfg, const struct policy_request *req,
			const struct pod_view *pv, struct policy_result *res, struct error *err)
{
	struct pod_view old;
	struct pod_routes now, before;
	int old_gpu = 1;

	memset(&before, 0, sizeof before);
	if (req->old_pod != NULL) {
		if (policy_pod_read(cfg, req, req->old_pod, &old, err) != 0) {
			error_prefix(err, "request.oldObject: ");
			return -1;
		}
		old_gpu = old.n_gpu > 0 || old.bad_quantity[0] != '\0';
	}
	/*
	 * A GPU pod stays one: its resources cannot change. A pod that became
	 * one by UPDATE (a gpuAnnotations key added: metadata is mutable) is
	 * judged as the CPU pod it was, or the annotation would open its routes.
	 * A template's new pods are created with it: the template is what it says.
	 */
	if (res->gpu && (old_gpu || req->template)) {
		res->reason = R_UPDATE_GPU;
		return 0;
	}
	res->gpu = 0;
	if (req->old_pod != NULL) {
		/*
		 * A GPU pod's routes are its own: the CPU-only pod it became takes
		 * them anew. A pod cannot drop its GPU (extended resources are not
		 * resized), but a workload's template can, and its pods will be
		 * refused: so is the update, at apply.
		 */
		if (old.n_gpu == 0 && old.bad_quantity[0] == '\0')
			policy_routes_find(cfg, &old, &before);
	}
	policy_routes_find(cfg, pv, &now);
	if (judge_routes(cfg, pv, &now, judged_routes(pv) & ~before.taken, res, err) != 0)
		return -1;
	if (res->verdict != POLICY_REJECT)
		res->reason = R_UPDATE_OK;
	return 0;
}

/* A GPU pod's creation: its pools chosen (unless a DaemonSet's or deferred to a queue) and the patch. */
static int decide_gpu(const struct config *cfg, const struct policy_request *req, const struct pod_view *pv,
		      struct policy_result *res, struct error *err)
{
	struct pool_choice choice = { .n = 0 };

	if (claims_warn(pv, res, err) != 0)
		return -1;
	/*
	 * A DaemonSet pod is pinned to its node by the controller: tolerate,
	 * don't steer. A queued one is placed by its queue, but only among
	 * the pools it may use: the label that defers is the pod's own, so
	 * the pool rules are applied first, and only the steering is left
	 * to the queue.
	 */
	res->deferred = deferred_to(cfg, pv);
	if (!pv->daemonset) {
		if (policy_pool_choose(cfg, pv, &choice, res, err) != 0)
			return -1;
		if (choice.n == 0) {
			res->verdict = POLICY_REJECT;
			return 0;  /* decide() still applies the DaemonSet exemption */
		}
	}
	if (res->deferred != NULL) {
		choice.n = 0;
		res->pool = NULL;
		res->n_pools = 0;
	}
	if (policy_pool_mutate(cfg, pv, choice.n > 0 ? &choice : NULL, res, err) != 0)
		return -1;
	if (req->validate && res->verdict == POLICY_MUTATE && policy_pool_patch_soft(res->patch)) {
		res->verdict = POLICY_ALLOW;
		res->reason = R_GPU_OK;
		res->changes[0] = '\0';
		json_decref(res->patch);
		res->patch = NULL;
	} else if (req->validate && res->verdict == POLICY_MUTATE) {
		res->verdict = POLICY_REJECT;
		res->reason = R_NOT_MUTATED;
		snprintf(res->message, sizeof res->message,
			 "GPU pod reached validation without what gpu-admission adds (%s): is "
			 "the mutating webhook installed and reachable?", res->changes);
		json_decref(res->patch);
		res->patch = NULL;
	}
	return 0;
}

/*
 * A pod with no GPU demand (CREATE): its routes to GPU nodes, the GPU stack
 * rule, and what its DRA claims, if any, did not count for.
 */
static int judge_cpu(const struct config *cfg, const struct pod_view *pv, struct policy_result *res,
		     struct error *err)
{
	struct pod_routes routes;

	/*
	 * Claims that are no GPU demand (policy_dra.c: not resolved, unused,
	 * another class) are no exemption either: were they one, any pod could
	 * add one and reach GPU nodes. Such a pod is judged on its routes as a
	 * CPU-only pod is (its message says why), and one that takes no route
	 * is admitted unchanged, with a warning per claim.
	 */
	policy_routes_find(cfg, pv, &routes);
	if (judge_routes(cfg, pv, &routes, judged_routes(pv), res, err) != 0)
		return -1;
	/* A CPU pod refused for its selection is told to drop it, not to tolerate the taint too. */
	if ((pv->daemonset || res->verdict != POLICY_REJECT) && policy_stack_untolerated(cfg, pv, &routes) &&
	    judge_stack(cfg, pv, res, err) != 0)
		return -1;
	if (pv->dra && claims_warn(pv, res, err) != 0)
		return -1;
	if (pv->dra && res->verdict == POLICY_ALLOW) {
		res->reason = R_DRA;
		/* A warning of at most POLICY_WARNING_MAX: the why first, the setting it names kept. */
		if (!claims_read(pv) && claims_unread_why(pv) != NULL &&
		    policy_note(res, err, "pod's DRA claims not looked up (%s): admitted unchanged (no "
				"toleration, no pool); to run on GPU nodes, have claims looked up, request the "
				"GPU as a resource or have the namespace exempted", claims_unread_why(pv)) != 0)
			return -1;
		if (!claims_read(pv) && claims_unread_why(pv) == NULL &&
		    policy_note(res, err, "pod's DRA claims not looked up, so none counts as a GPU request: "
				"admitted unchanged (no toleration, no pool); to run on GPU nodes, request the "
				"GPU as a resource or have the namespace exempted") != 0)
			return -1;
	}
	return 0;
}

static int decide(const struct config *cfg, const struct policy_request *req,
		  struct policy_result *res, struct error *err)
{
	struct pod_view pv;

	if (policy_pod_read(cfg, req, req->pod, &pv, err) != 0)
		return -1;
	res->mode = config_mode_for(cfg, pv.ns);
	res->verdict = POLICY_ALLOW;
	if (req->operation != POLICY_OP_CREATE && req->operation != POLICY_OP_UPDATE) {
		res->reason = R_OPERATION;
		return 0;
	}
	switch (policy_stack_infra(cfg, req, &pv, res, err)) {
	case -1:
		return -1;
	case 1:
		return 0;
	}
	if (policy_list_has(&cfg->exempt_namespaces, pv.ns) || selector_exempt(cfg, &pv)) {
		res->exempt = 1;
		res->reason = policy_list_has(&cfg->exempt_namespaces, pv.ns) ? R_EXEMPT_NS : R_EXEMPT_SEL;
		return 0;
	}
	res->gpu = pv.n_gpu > 0 || pv.bad_quantity[0] != '\0';
	/*
	 * The webhook and audit alike: the match conditions send a pod for a
	 * resource name that looks like a GPU (render/matchcond.c GPU_LOOKING_RE), so
	 * every such pod gets the warning.
	 */
	if (req->operation == POLICY_OP_CREATE && pv.unlisted != NULL &&
	    policy_warn(res, err, "resource %s looks like a GPU, but the policy lists it neither in gpuResources nor "
			"in gpuShareResources: it counts as no GPU here (no toleration, no pool); ask the cluster "
			"admin to list it", pv.unlisted) != 0)
		return -1;
	/*
	 * A GPU pod template changed by UPDATE is judged as at CREATE (the workload
	 * judges only the templates that changed): its pods will be created from
	 * it and refused by /mutate one by one for a pool rule it breaks, where
	 * only the controller's events say so. Kueue starts a queued Job by such
	 * an update (its flavor's nodeSelector written into the template), which
	 * a pool the namespace may not use must refuse. A pod's own UPDATE is not:
	 * a GPU pod was placed when it was created.
	 */
	if (req->operation == POLICY_OP_UPDATE && !(req->template && pv.n_gpu > 0 && pv.bad_quantity[0] == '\0')) {
		if (judge_update(cfg, req, &pv, res, err) != 0)
			return -1;
	} else if (pv.bad_quantity[0] != '\0') {
		res->verdict = POLICY_REJECT;
		res->reason = R_QUANTITY;
		snprintf(res->message, sizeof res->message, "%s", pv.bad_quantity);
	} else if (pv.n_gpu > 0) {
		if (decide_gpu(cfg, req, &pv, res, err) != 0)
			return -1;
	} else if (judge_cpu(cfg, &pv, res, err) != 0) {
		return -1;
	}
	if (res->verdict == POLICY_REJECT && daemonset_exempt(cfg, &pv))
		return exempt_daemonset(res, err);
	/*
	 * A DaemonSet's pod refused only because its namespace is not listed:
	 * a node agent the admin installed there needs the namespace listed,
	 * not its toleration removed (that would keep it off the GPU nodes).
	 */
	if (res->verdict == POLICY_REJECT && pv.daemonset && cfg->exempt_daemonsets)
		policy_appendf(res->message, sizeof res->message, ". DaemonSet pods are exempt only in "
			       "exempt.daemonSetNamespaces: if an admin installed this DaemonSet as a node agent, "
			       "list %s there", pv.ns);
	return 0;
}

/*
 * /validate of a pod (req->validate). kube-apiserver runs the validating
 * webhooks on the pod the mutating ones made, and the chart sends every pod
 * to /mutate first, under the same policy and so in the same mode: /mutate
 * has said all the policy says of this pod, and in enforce refused what the
 * policy refuses. So the pod is judged as /mutate leaves it, and the answer
 * says only what /mutate cannot have said (the mode's note follows, from
 * apply_mode()):
 *  - a GPU pod lacking what /mutate adds (R_NOT_MUTATED): in enforce and
 *    warn /mutate would have added it, so it did not run: a rejection, with
 *    every warning. In dryrun /mutate adds nothing: the pod is judged as
 *    patched, and /validate admits a patched pod (patches are idempotent;
 *    the golden driver checks it of every one), so it is admitted as
 *    enforce's /validate admits it, not announced as a rejection enforce
 *    never makes;
 *  - a rejection /mutate makes too: in enforce /mutate did not run (or the
 *    pod changed after it): a rejection, with every warning. In warn and
 *    dryrun /mutate admitted the pod, announcing and counting the would-be
 *    rejection where enforce makes it, and enforce's /validate never sees
 *    the pod: admitted, saying and counting nothing (res->unreached);
 *  - anything admitted: /mutate gave its warnings, and none is repeated
 *    (read beside /mutate's, a note about the patched pod contradicted the
 *    same note about the pod before the patch).
 */
static void judge_as_mutated(struct policy_result *res)
{
	int unmutated = res->verdict == POLICY_REJECT && strcmp(res->reason, R_NOT_MUTATED) == 0;

	if (res->verdict == POLICY_REJECT &&
	    (res->mode == CONFIG_MODE_ENFORCE || (unmutated && res->mode == CONFIG_MODE_WARN)))
		return;
	if (unmutated) {
		res->verdict = POLICY_ALLOW;
		res->reason = R_GPU_OK;
		res->changes[0] = '\0';
	} else if (res->verdict == POLICY_REJECT) {
		res->verdict = POLICY_ALLOW;
		res->reason = R_AT_MUTATE;
		res->unreached = 1;
		json_decref(res->fix);
		res->fix = NULL;
	}
	res->message[0] = '\0';
	json_array_clear(res->warnings);
	res->notes = 0;
}

int policy_evaluate(const struct config *cfg, const struct policy_request *req,
		    struct policy_result *res, struct error *err)
{
	memset(res, 0, sizeof *res);
	res->warning_max = req->full_warnings ? POLICY_WARNING_FULL_MAX : POLICY_WARNING_MAX;
	res->warnings = json_array();
	res->annotations = json_object();
	if (res->warnings == NULL || res->annotations == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if (decide(cfg, req, res, err) != 0)
		return -1;
	if (req->validate)
		judge_as_mutated(res);
	/* Both are cut to fixed buffers and may quote pod text: end them on a whole character. */
	error_trim_utf8(res->message);
	error_trim_utf8(res->changes);
	if (apply_mode(res, err) != 0 || annotate(res, err) != 0)
		return -1;
	return 0;
}

void policy_result_free(struct policy_result *res)
{
	if (res == NULL)
		return;
	json_decref(res->patch);
	json_decref(res->fix);
	json_decref(res->warnings);
	json_decref(res->annotations);
	memset(res, 0, sizeof *res);
}

void policy_describe_pools(const struct policy_result *res, const char *sep, char *buf, size_t cap)
{
	size_t i;

	if (cap > 0)
		buf[0] = '\0';
	for (i = 0; i < res->n_pools; i++)
		policy_appendf(buf, cap, "%s%s", i ? sep : "", res->pools[i]);
}

const char *policy_decision_name(enum policy_decision d)
{
	switch (d) {
	case POLICY_ALLOW:  return "allow";
	case POLICY_MUTATE: return "mutate";
	case POLICY_REJECT: return "reject";
	}
	return "allow";
}

int policy_operation_parse(const char *s, enum policy_operation *op, struct error *err)
{
	static const struct { const char *name; enum policy_operation op; } ops[] = {
		{ "CREATE", POLICY_OP_CREATE }, { "UPDATE", POLICY_OP_UPDATE },
		{ "DELETE", POLICY_OP_DELETE }, { "CONNECT", POLICY_OP_CONNECT },
	};
	size_t i;

	for (i = 0; s != NULL && i < sizeof ops / sizeof ops[0]; i++) {
		if (strcmp(s, ops[i].name) == 0) {
			*op = ops[i].op;
			return 0;
		}
	}
	error_set(err, ERROR_INPUT, "request.operation must be CREATE, UPDATE, DELETE or CONNECT");
	return -1;
}

