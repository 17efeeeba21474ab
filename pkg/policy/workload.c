/* workload: a workload object judged by its pod templates (see workload.h). */
#include "policy/workload.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/template.h"

_Static_assert(WORKLOAD_WARNINGS_MAX * POLICY_WARNING_MAX <= LIMIT_KUBE_WARNINGS_TOTAL,
	       "a workload answer's warnings are not truncated by the API server");

/* One template and what became of it. */
struct judged {
	const struct template_item *t;
	struct policy_result res;  /* valid when judged */
	int judged;                /* 0: unchanged on UPDATE, not judged */
};

/* How much a template's outcome weighs in choosing the one that decides: higher first. */
static int weight(const struct judged *j)
{
	const struct policy_result *r = &j->res;

	if (!j->judged)
		return 0;
	if (r->verdict == POLICY_REJECT)
		return 4;
	if (r->verdict == POLICY_MUTATE)
		return 3;
	return json_array_size(r->warnings) > 0 ? 2 : 1;
}

/* Whether warning i of r asks something of the template's author (see policy_result.notes). */
static int actionable(const struct policy_result *r, size_t i)
{
	return i >= POLICY_NOTES_BITS || !(r->notes & (1ul << i));
}

/*
 * Adds "<path>: <text>" as a warning, cut to kube-apiserver's 256 bytes on a
 * character. Past WORKLOAD_WARNINGS_MAX - 1, only counts it in *more.
 */
static int add_warning(struct workload_result *res, const char *prefix, const char *path, const char *text,
		       size_t *more, struct error *err)
{
	char buf[POLICY_WARNING_MAX + 1];

	if (json_array_size(res->answer.warnings) >= WORKLOAD_WARNINGS_MAX - 1) {
		(*more)++;
		return 0;
	}
	snprintf(buf, sizeof buf, "%spod template %s: %s", prefix, path, text);
	error_trim_utf8(buf);
	if (json_array_append_new(res->answer.warnings, json_string(buf)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* The object's own namespace, or "default". */
static const char *object_ns(const json_t *obj)
{
	const char *s = json_string_value(json_object_get(json_object_get(obj, "metadata"), "namespace"));

	return s != NULL && s[0] != '\0' ? s : "default";
}

/* The object's kind and name, as messages name it: "Deployment ml/logshipper". */
static void describe(const struct workload_request *req, const struct judged *j, size_t n, const char *ns,
		     char *buf, size_t cap)
{
	const char *name = n > 0 ? j[0].t->name : NULL;
	const json_t *meta = json_object_get(req->object, "metadata");

	if (name == NULL)
		name = json_string_value(json_object_get(meta, "name"));
	if (name == NULL || name[0] == '\0')
		name = json_string_value(json_object_get(meta, "generateName"));
	snprintf(buf, cap, "%s %s/%s", req->kind, ns, name != NULL && name[0] ? name : "(unnamed)");
}

/*
 * The denial: the object, then each rejected template's path and rejection,
 * then how the manifest gets fixed. Many templates are cut short, on a
 * character, before that last sentence, which is always there.
 */
static void deny_message(struct workload_result *res, const char *who, const struct judged *j, size_t n)
{
	size_t i, rejected = 0, fixable = 0, room;
	char *m = res->message, tail[256];

	for (i = 0; i < n; i++)
		if (j[i].judged && j[i].res.verdict == POLICY_REJECT) {
			rejected++;
			fixable += j[i].res.fix != NULL;
		}
	if (fixable == rejected)
		snprintf(tail, sizeof tail, "`gpu-admission audit --fix FILE` fixes the manifest (it removes what "
			 "aims %s at GPU nodes)", rejected > 1 ? "each template" : "the template");
	else
		snprintf(tail, sizeof tail, "`gpu-admission audit FILE` shows each template's verdict%s",
			 fixable > 0 ? ", and `--fix` removes the routes to GPU nodes of those it can" : "");
	room = sizeof res->message - strlen(tail) - sizeof " ... ";
	snprintf(m, room, "%s: ", who);
	if (rejected > 1)
		policy_appendf(m, room, "%zu pod templates would be rejected. ", rejected);
	for (i = 0; i < n; i++) {
		if (!j[i].judged || j[i].res.verdict != POLICY_REJECT)
			continue;
		policy_appendf(m, room, "pod template %s: %s. ", j[i].t->path, j[i].res.message);
	}
	if (strlen(m) + 1 >= room) {
		error_trim_utf8(m);
		policy_appendf(m, sizeof res->message, " ... ");
	}
	policy_appendf(m, sizeof res->message, "%s", tail);
}

/*
 * The answer's auditAnnotations: the deciding template's own (its reason,
 * pool or pools, deferredTo), the workload's decision and mode, and which
 * template decided.
 */
static int annotate(struct workload_result *res, const struct judged *decider, struct error *err)
{
	struct policy_result *a = &res->answer;
	json_t *ann = a->annotations;
	int rc = 0;

	if (decider != NULL)
		rc |= json_object_update(ann, decider->res.annotations);
	json_object_del(ann, "wouldDecide");  /* the template's; the workload's own follows */
	rc |= json_object_set_new(ann, "decision",
				  json_string(a->exempt ? "exempt" : policy_decision_name(a->decision)));
	rc |= json_object_set_new(ann, "reason", json_string(a->reason));
	rc |= json_object_set_new(ann, "mode", json_string(config_mode_name(a->mode)));
	if (a->decision != a->verdict)
		rc |= json_object_set_new(ann, "wouldDecide", json_string(policy_decision_name(a->verdict)));
	if (decider != NULL)
		rc |= json_object_set_new(ann, "template", json_string(decider->t->path));
	if (rc != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* Judges each template found (on UPDATE, each that changed) into j[]. */
static int judge_all(const struct config *cfg, const struct workload_request *req,
		     const struct template_list *now, const struct template_list *before, struct judged *j,
		     struct error *err)
{
	size_t i;

	for (i = 0; i < now->n; i++) {
		const struct template_item *t = &now->v[i], *old = NULL;

		j[i].t = t;
		if (req->operation == POLICY_OP_UPDATE) {
			old = template_at(before, t->pointer);
			/* Nothing the policy reads changed: not judged, but for the toleration /mutate adds. */
			if (old != NULL && template_same(old, t) &&
			    !(req->mutate && t->daemonset && config_gpu_infra(cfg, t->ns)))
				continue;
		}
		j[i].judged = 1;
		if (template_judge_claims(cfg, t, old, req->operation, req->claims, &j[i].res, err) != 0) {
			if (err->kind != ERROR_NOMEM)
				error_prefix(err, "%s %s: ", req->kind, t->path);
			return -1;
		}
	}
	return 0;
}

/*
 * /validate in dryrun: a DaemonSet template the gpuInfraNamespaces rule
 * patches went to /mutate first (the chart's mutate-daemonsets entry), which
 * said all there is to say of it and, in this mode, added nothing. Judged as
 * /mutate leaves it in enforce (patched, then exempt), it has nothing to say
 * here. In enforce and warn such a template reaching /validate unpatched
 * means /mutate did not run (that entry fails open): its warnings stand.
 */
static void quiet_infra(const struct workload_request *req, enum config_mode mode, struct judged *j, size_t n)
{
	size_t i;

	for (i = 0; !req->mutate && mode == CONFIG_MODE_DRYRUN && i < n; i++) {
		if (!j[i].judged || !j[i].res.template_patch)
			continue;
		json_array_clear(j[i].res.warnings);
		j[i].res.notes = 0;
	}
}

/*
 * The answer's warnings: what enforce would deny (warn, dryrun), then what
 * the authors must change, at most POLICY_WARNING_MAX with a last one
 * counting the rest. j[0..n) are the templates' judgements.
 */
static int warn_all(struct workload_result *res, const struct judged *j, size_t n, struct error *err)
{
	struct policy_result *a = &res->answer;
	size_t i, more = 0;

	for (i = 0; a->decision != a->verdict && i < n; i++) {
		char prefix[64];

		if (!j[i].judged || j[i].res.verdict != POLICY_REJECT)
			continue;
		snprintf(prefix, sizeof prefix, "would be rejected (%s mode): ", config_mode_name(a->mode));
		if (add_warning(res, prefix, j[i].t->path, j[i].res.message, &more, err) != 0)
			return -1;
	}
	for (i = 0; i < n; i++) {
		size_t w;

		for (w = 0; j[i].judged && w < json_array_size(j[i].res.warnings); w++)
			if (actionable(&j[i].res, w) &&
			    add_warning(res, "", j[i].t->path, json_string_value(json_array_get(j[i].res.warnings, w)),
					&more, err) != 0)
				return -1;
	}
	if (more > 0) {
		char buf[POLICY_WARNING_MAX + 1];

		snprintf(buf, sizeof buf, "%zu more warning%s: `gpu-admission audit FILE` shows them all", more,
			 more == 1 ? "" : "s");
		if (json_array_append_new(a->warnings, json_string(buf)) != 0) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
	}
	return 0;
}

/*
 * /mutate: the templates the policy patches themselves, their patches put
 * together with paths from the object's root into the answer (MUTATE). A
 * template's own decision says whether its mode applies the patch (dryrun
 * does not: its result is ALLOW with a note).
 */
static int patch_templates(struct workload_result *res, const struct judged *j, size_t n, struct error *err)
{
	struct policy_result *a = &res->answer;
	size_t i;

	for (i = 0; i < n; i++) {
		if (!j[i].judged || !j[i].res.template_patch || j[i].res.decision != POLICY_MUTATE)
			continue;
		if (a->patch == NULL && (a->patch = json_array()) == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		if (template_rebase(j[i].t, j[i].res.patch, a->patch, err) != 0)
			return -1;
		a->decision = a->verdict = POLICY_MUTATE;
	}
	return 0;
}

int workload_evaluate(const struct config *cfg, const struct workload_request *req,
		      struct workload_result *res, struct error *err)
{
	struct template_list now = { 0 }, before = { 0 };
	struct judged *j = NULL;
	const struct judged *decider = NULL;
	struct policy_result *a = &res->answer;
	const char *ns = req->ns != NULL && req->ns[0] ? req->ns : NULL;
	char who[512];
	size_t i, exempt = 0;
	int rc = -1;

	memset(res, 0, sizeof *res);
	a->warning_max = POLICY_WARNING_MAX;
	a->warnings = json_array();
	a->annotations = json_object();
	if (a->warnings == NULL || a->annotations == NULL)
		goto nomem;
	now.max = before.max = WORKLOAD_TEMPLATES_MAX;
	if (template_find_object(req->object, req->group, req->kind, &now, err) != 0 ||
	    (req->operation == POLICY_OP_UPDATE && req->old_object != NULL &&
	     template_find_object(req->old_object, req->group, req->kind, &before, err) != 0)) {
		if (err->kind == ERROR_INPUT) {
			describe(req, NULL, 0, ns != NULL ? ns : object_ns(req->object), who, sizeof who);
			error_set(err, ERROR_INPUT, "%s holds more than %d pod templates, the most the webhook judges "
				  "in one object: `gpu-admission audit FILE` judges them all", who, WORKLOAD_TEMPLATES_MAX);
		}
		goto out;
	}
	template_list_index(&before);  /* each template is looked up there: O(log n) each */
	/* The pods' namespace is the request's (the API server sets the object's to it). */
	for (i = 0; ns != NULL && i < now.n; i++)
		now.v[i].ns = ns;
	for (i = 0; ns != NULL && i < before.n; i++)
		before.v[i].ns = ns;
	if (ns == NULL)
		ns = now.n > 0 ? now.v[0].ns : "default";
	/* Not zeroed (each result is 2.5 KB): judged says which results are set. */
	if (now.n > 0 && (j = template_mem_alloc(now.n * sizeof *j)) == NULL)
		goto nomem;
	for (i = 0; i < now.n; i++)
		j[i].judged = 0;
	res->templates = now.n;
	a->mode = config_mode_for(cfg, ns);
	a->verdict = POLICY_ALLOW;
	a->reason = now.n == 0 ? WORKLOAD_R_NONE : WORKLOAD_R_UNCHANGED;
	if (now.n > 0 && judge_all(cfg, req, &now, &before, j, err) != 0)
		goto out;
	quiet_infra(req, a->mode, j, now.n);
	for (i = 0; i < now.n; i++) {
		if (!j[i].judged)
			continue;
		res->judged++;
		exempt += j[i].res.exempt;
		if (decider == NULL || weight(&j[i]) > weight(decider))
			decider = &j[i];
	}
	if (decider != NULL) {
		a->reason = decider->res.reason;
		a->exempt = exempt == res->judged;
		a->verdict = decider->res.verdict == POLICY_REJECT ? POLICY_REJECT : POLICY_ALLOW;
	}
	a->decision = a->verdict == POLICY_REJECT && a->mode == CONFIG_MODE_ENFORCE ? POLICY_REJECT : POLICY_ALLOW;
	if (req->mutate && a->decision == POLICY_ALLOW && patch_templates(res, j, now.n, err) != 0)
		goto out;
	describe(req, j, now.n, ns, who, sizeof who);
	if (a->verdict == POLICY_REJECT)
		deny_message(res, who, j, now.n);
	if (warn_all(res, j, now.n, err) != 0)
		goto out;
	if (annotate(res, decider, err) != 0)
		goto out;
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
out:
	for (i = 0; j != NULL && i < now.n; i++)
		if (j[i].judged)
			policy_result_free(&j[i].res);
	template_mem_free(j);
	template_list_free(&now);
	template_list_free(&before);
	return rc;
}

void workload_result_free(struct workload_result *res)
{
	if (res == NULL)
		return;
	policy_result_free(&res->answer);
	memset(res, 0, sizeof *res);
}
