#include "audit/audit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/iterable.h"
#include "base/strbuf.h"
#include "text/manifest.h"
#include "policy/policy.h"
#include "policy/template.h"
#include "base/utf8.h"

/* Manifests are searched for templates as deep as they may nest. */
_Static_assert(TEMPLATE_DEPTH_MAX >= MANIFEST_DEPTH_MAX, "templates are searched as deep as a manifest nests");

/*
 * A file name for the report: names are bytes, JSON strings are UTF-8. A name
 * that is not valid UTF-8 is shown with '?' for every byte above 0x7f.
 * Returns name itself or a new string in *owned (free it); NULL on ENOMEM.
 */
static const char *printable_name(const char *name, char **owned)
{
	json_t *probe = json_string(name);
	size_t i;

	*owned = NULL;
	if (probe != NULL) {
		json_decref(probe);
		return name;
	}
	if ((*owned = strdup(name)) == NULL)
		return NULL;
	for (i = 0; (*owned)[i] != '\0'; i++)
		if ((unsigned char)(*owned)[i] >= 0x80)
			(*owned)[i] = '?';
	return *owned;
}

const char *audit_path_open(const char *path)
{
	return path[0] == '[' ? "" : "[";
}

const char *audit_path_close(const char *path)
{
	return path[0] == '[' ? "" : "]";
}

const char *audit_verdict_name(enum audit_verdict v)
{
	static const char *const names[AUDIT_NVERDICTS] = { "ok", "mutate", "reject", "exempt", "warn" };

	return v < AUDIT_NVERDICTS ? names[v] : "ok";
}

int audit_init(struct audit *a, const struct config *cfg, struct error *err)
{
	memset(a, 0, sizeof *a);
	a->cfg = cfg;
	a->findings = json_array();
	a->errors = json_array();
	a->notes = json_array();
	a->rewritten = json_array();
	a->owners = json_array();
	a->groups = json_object();
	if (a->findings == NULL || a->errors == NULL || a->notes == NULL || a->rewritten == NULL ||
	    a->owners == NULL || a->groups == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

void audit_free(struct audit *a)
{
	if (a == NULL)
		return;
	json_decref(a->findings);
	json_decref(a->errors);
	json_decref(a->notes);
	json_decref(a->rewritten);
	json_decref(a->owners);
	json_decref(a->groups);
	json_decref(a->claim_keep);
	policy_claim_objects_free(&a->claims);
	memset(a, 0, sizeof *a);
}

/* Appends {file, line, message} to list (errors or notes). */
static int add_problem(json_t *list, const char *name, unsigned long line, const char *msg,
		       struct error *err)
{
	char *owned = NULL;
	const char *file = printable_name(name, &owned);
	json_t *e = file ? json_pack("{s:s, s:I, s:s}", "file", file, "line", (json_int_t)line,
				     "message", msg) : NULL;

	/* msg not valid UTF-8 (libyaml quoting the input), or out of memory, which the check tells apart. */
	if (e == NULL && file != NULL && !utf8_valid((const unsigned char *)msg, strlen(msg)))
		e = json_pack("{s:s, s:I, s:s}", "file", file, "line", (json_int_t)line,
			      "message", "(error message not valid UTF-8)");
	free(owned);
	if (e == NULL || json_array_append_new(list, e) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

int audit_add_error(struct audit *a, const char *name, unsigned long line, const char *msg,
		    struct error *err)
{
	return add_problem(a->errors, name, line, msg, err);
}

int audit_add_note(struct audit *a, const char *name, unsigned long line, const char *msg,
		   struct error *err)
{
	return add_problem(a->notes, name, line, msg, err);
}

static enum audit_verdict verdict_of(const struct policy_result *r)
{
	if (r->exempt)
		return AUDIT_EXEMPT;
	if (r->verdict == POLICY_REJECT)
		return AUDIT_REJECT;
	if (r->verdict == POLICY_MUTATE)
		return AUDIT_MUTATE;
	return json_array_size(r->warnings) > 0 ? AUDIT_WARN : AUDIT_OK;
}

/* The human text of a finding: what would change, why it is rejected, or the reason code. */
static const char *message_of(enum audit_verdict v, const struct policy_result *r)
{
	switch (v) {
	case AUDIT_MUTATE: return r->changes;
	case AUDIT_REJECT: return r->message;
	case AUDIT_WARN:   return json_string_value(json_array_get(r->warnings, 0));
	default:           return "";
	}
}

/*
 * New: a Pod's controller as [kind, name, pod-template-hash label or null]
 * (the ownerReference marked controller, else the first), or null for
 * anything else. audit_finish() looks the controller up among the findings.
 */
static json_t *controller_of(const struct template_item *t)
{
	const json_t *meta = json_object_get(t->pod, "metadata"), *refs, *ref, *pick = NULL;
	const char *kind, *name, *hash;
	size_t i;

	if (strcmp(t->kind, "Pod") != 0)
		return json_null();
	refs = json_object_get(meta, "ownerReferences");
	json_array_foreach(refs, i, ref) {
		if (pick == NULL || json_is_true(json_object_get(ref, "controller")))
			pick = ref;
		if (json_is_true(json_object_get(ref, "controller")))
			break;
	}
	kind = json_string_value(json_object_get(pick, "kind"));
	name = json_string_value(json_object_get(pick, "name"));
	hash = json_string_value(json_object_get(json_object_get(meta, "labels"), "pod-template-hash"));
	if (kind == NULL || name == NULL)
		return json_null();
	return json_pack("[s, s, s?]", kind, name, hash);
}

/*
 * The first string in v that holds a Go template action ("{{ .Values.gpus }}"),
 * or NULL. Depth is bounded by the YAML reader's nesting cap.
 */
static const char *unrendered(const json_t *v)
{
	const char *s, *key, *found;
	const json_t *x;
	size_t i;

	if (json_is_string(v)) {
		s = strstr(json_string_value(v), "{{");
		return s != NULL && strstr(s + 2, "}}") != NULL ? json_string_value(v) : NULL;
	}
	json_array_foreach(v, i, x)
		if ((found = unrendered(x)) != NULL)
			return found;
	json_object_foreach(iterable(v), key, x)
		if ((found = unrendered(x)) != NULL)
			return found;
	return NULL;
}

/*
 * Whether t is a Pod as the cluster holds it (kubectl get output: it has
 * metadata.uid, resourceVersion or creationTimestamp) or one a controller
 * owns: what --fix writes into it never reaches the cluster, as a running
 * Pod's placement cannot change and an owned Pod is made again from its
 * controller's template.
 */
static int is_live_pod(const struct template_item *t)
{
	const json_t *meta = json_object_get(t->pod, "metadata"), *ref;
	size_t i;

	if (strcmp(t->kind, "Pod") != 0)
		return 0;
	if (json_object_get(meta, "uid") || json_object_get(meta, "resourceVersion") ||
	    json_object_get(meta, "creationTimestamp"))
		return 1;
	json_array_foreach(json_object_get(meta, "ownerReferences"), i, ref)
		if (json_is_true(json_object_get(ref, "controller")))
			return 1;
	return 0;
}

/* --fix: what the current document's patch changes, counted once it is written. */
struct doc_fix {
	unsigned long live;                    /* live Pods it changes */
	unsigned long fixes[AUDIT_NVERDICTS];  /* findings it settles, by verdict */
};

/*
 * Evaluates one template and records its finding; doc_patch collects its
 * mutation for --fix, and fx counts what that patch changes.
 */
static int audit_template(struct audit *a, const char *name, size_t doc_index,
			  const struct template_item *t, json_t *doc_patch, struct doc_fix *fx, struct error *err)
{
	struct policy_result res;
	struct error perr = { 0 };
	/* Claims are looked up when the input holds claim objects; else none is (nothing to find). */
	struct policy_claim_lookup lk = { policy_claim_objects_lookup, &a->claims, NULL };
	struct policy_claim_lookup none = { NULL, NULL, a->claims_off ? a->claims_off : POLICY_CLAIMS_NONE_IN_INPUT };
	enum audit_verdict v;
	const char *tmpl;
	json_t *f = NULL, *pools;
	size_t k;
	int rc = -1;

	/* The webhook's own judgement of a workload's templates (and, offline, of a stored Pod). */
	if (template_judge_claims(a->cfg, t, NULL, POLICY_OP_CREATE, a->claims.n > 0 ? &lk : &none, &res,
				  &perr) != 0) {
		char msg[ERROR_MSG_MAX + 256];

		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		snprintf(msg, sizeof msg, "%s %s/%s %s%s%s: %s", t->kind, t->ns, t->name, audit_path_open(t->path),
			 t->path, audit_path_close(t->path), perr.msg);
		rc = audit_add_error(a, name, t->line, msg, err);
		goto out;
	}
	v = verdict_of(&res);
	/*
	 * A rejection of a template that still holds "{{ ... }}" (quoted, so the YAML
	 * parsed) is about an unrendered chart, not about the policy: an input error.
	 */
	if (v == AUDIT_REJECT && (tmpl = unrendered(t->pod)) != NULL) {
		char msg[ERROR_MSG_MAX + 256];

		snprintf(msg, sizeof msg, "%s %s/%s %s%s%s: an unrendered template (\"%.80s\"): render the chart "
			 "first: helm template CHART | gpu-admission audit -", t->kind, t->ns, t->name,
			 audit_path_open(t->path), t->path, audit_path_close(t->path), tmpl);
		rc = audit_add_error(a, name, t->line, msg, err);
		goto out;
	}
	/* Several pools (placement fallback): all of them, cheapest first; one is "pool". */
	pools = res.n_pools > 1 ? json_array() : NULL;
	for (k = 0; pools != NULL && k < res.n_pools; k++)
		if (json_array_append_new(pools, json_string(res.pools[k])) != 0) {
			json_decref(pools);
			pools = NULL;
		}
	f = res.n_pools > 1 && pools == NULL ? NULL :
	    json_pack("{s:s, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:o*, s:s, s:s, s:O, s:O, s:n}",
		      "file", name, "line", (json_int_t)t->line, "document", (json_int_t)doc_index,
		      "kind", t->kind, "namespace", t->ns, "name", t->name,
		      "path", t->path, "pointer", t->pointer,
		      "verdict", audit_verdict_name(v), "reason", res.reason ? res.reason : "",
		      "message", message_of(v, &res), "changes", res.changes, "pool", res.pool, "pools", pools,
		      "mode", config_mode_name(res.mode), "decision", policy_decision_name(res.decision),
		      "warnings", res.warnings,
		      "patch", res.verdict == POLICY_MUTATE && res.patch && !a->drop_patches ? res.patch : json_null(),
		      "groupedUnder");
	if (f == NULL) {
		/* A name or kind that is not valid UTF-8 cannot reach here: the YAML reader refuses them. */
		error_set(err, ERROR_NOMEM, "out of memory recording a finding");
		goto out;
	}
	if (json_array_append_new(a->findings, f) != 0 ||
	    json_array_append_new(a->owners, controller_of(t)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	a->templates++;
	a->count[v]++;
	/* --fix: what the webhook would add to its pods, or the routes a rejection says to remove. */
	if (doc_patch != NULL && res.verdict == POLICY_MUTATE && res.patch != NULL && !res.exempt) {
		if (template_rebase(t, res.patch, doc_patch, err) != 0)
			goto out;
		fx->live += is_live_pod(t);
		fx->fixes[v]++;
	}
	if (doc_patch != NULL && res.verdict == POLICY_REJECT && res.fix != NULL) {
		if (template_rebase(t, res.fix, doc_patch, err) != 0)
			goto out;
		fx->live += is_live_pod(t);
		fx->fixes[v]++;
	}
	rc = 0;
out:
	policy_result_free(&res);
	return rc;
}

/* Whether a document's patch removes anything (a rejected template's fix). */
static int removes(const json_t *doc_patch)
{
	size_t i;
	const json_t *op;

	json_array_foreach(doc_patch, i, op) {
		const char *kind = json_string_value(json_object_get(op, "op"));

		if (kind != NULL && strcmp(kind, "remove") == 0)
			return 1;
	}
	return 0;
}

/* One input as audit_input() reads, judges and (with --fix) writes it back. */
struct input {
	struct audit *a;
	const char *name;           /* printable */
	const char *buf;            /* the text, borrowed */
	size_t len;
	struct manifest m;
	int utf16;                  /* libyaml read it as UTF-16 by its byte order mark */
	struct template_list found; /* the current document's templates */
	int fixing;                 /* --fix */
	json_t *doc_patch;          /* --fix: the current document's patch; NULL without */
	struct doc_fix fx;          /* what the patch changes */
	struct strbuf out;          /* --fix: the text written back */
	int *changed;               /* --fix: a document was written changed */
};

/*
 * Why a document was re-emitted from its value rather than edited as text,
 * as its note says it: the first reason that applies, in this order.
 */
static const char *reemit_note(const struct input *in, const struct manifest_doc *d)
{
	const struct {
		int applies;
		const char *note;
	} why[] = {
		{ in->utf16, "--fix wrote this UTF-16 file as UTF-8, re-emitted from its value: comments inside it "
			     "were lost; convert it back (iconv -t UTF-16) if UTF-16 is what its readers need" },
		{ d->json, "--fix rewrote this JSON document indented, in a new layout" },
		{ d->aliases, "--fix re-emitted this document from its value, as it uses anchors and aliases: "
			      "comments inside it were lost" },
		{ removes(in->doc_patch), "--fix re-emitted this document from its value, as it removes routes "
					  "to GPU nodes from it: comments inside it were lost" },
		{ 1, "--fix re-emitted this document from its value, as what it extends is in flow style ([] or "
		     "{}): comments inside it were lost" },
	};
	size_t k;

	for (k = 0; !why[k].applies; k++)
		;
	return why[k].note;
}

/* Document i (d): counted, its errors and its templates' findings recorded, their fixes in in->doc_patch. */
static int judge_document(struct input *in, size_t i, const struct manifest_doc *d, struct error *err)
{
	size_t j;

	if (d->failed) {
		char msg[MANIFEST_ERROR_MAX + 64];

		snprintf(msg, sizeof msg, "unreadable document: %s", d->error);
		if (audit_add_error(in->a, in->name, d->error_line, msg, err) != 0)
			return -1;
	}
	if (d->root != NULL)
		in->a->documents++;
	if (in->fixing) {
		json_decref(in->doc_patch);
		if ((in->doc_patch = json_array()) == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
	}
	if (template_find(d->root, &in->found, err) != 0)
		return -1;
	if (in->found.n == 0 && d->root != NULL &&
	    audit_note_intent(in->a, in->name, d->content_line, d->root, err) != 0)
		return -1;
	memset(&in->fx, 0, sizeof in->fx);
	for (j = 0; j < in->found.n; j++) {
		in->found.v[j].line = manifest_line(d, in->found.v[j].node);
		if (audit_template(in->a, in->name, i, &in->found.v[j], in->doc_patch, &in->fx, err) != 0)
			return -1;
	}
	return 0;
}

/*
 * --fix: document d written to in->out, with its patch applied when it has
 * one and it can be written (else as it was, with an error saying why).
 */
static int fix_document(struct input *in, const struct manifest_doc *d, struct error *err)
{
	const char *piece = in->buf + d->off;
	size_t piece_len = d->len;
	char *rendered = NULL;
	int rc = -1;

	if (json_array_size(in->doc_patch) > 0 && in->fx.live > 0) {
		char msg[256];

		snprintf(msg, sizeof msg, "--fix changed %lu live Pod%s (kubectl get output, or owned by a "
			 "controller): applying this will not place %s, as a running Pod's placement cannot "
			 "change and a controller makes its Pods again; fix the workloads or manifests "
			 "that create them", in->fx.live, in->fx.live == 1 ? "" : "s", in->fx.live == 1 ? "it" : "them");
		if (audit_add_note(in->a, in->name, d->content_line, msg, err) != 0)
			return -1;
	}
	if (json_array_size(in->doc_patch) > 0) {
		const char *how = NULL;
		struct error ferr = { 0 };

		if (manifest_render_patched(&in->m, d, in->doc_patch, &rendered, &piece_len, &how, &ferr) != 0) {
			/* One document that cannot be written fixed stays as it was; the rest are still fixed. */
			char msg[ERROR_MSG_MAX + 64];

			if (ferr.kind == ERROR_NOMEM) {
				*err = ferr;
				goto out;
			}
			snprintf(msg, sizeof msg, "--fix: %s; document left unchanged", ferr.msg);
			piece_len = d->len;
			if (audit_add_error(in->a, in->name, d->content_line, msg, err) != 0)
				goto out;
		} else {
			size_t k;

			piece = rendered;
			*in->changed = 1;
			/* Written: what this document's patch settles no longer fails the run. */
			for (k = 0; k < AUDIT_NVERDICTS; k++)
				in->a->fixed[k] += in->fx.fixes[k];
			if (strcmp(how, "re-emitted") == 0 &&
			    audit_add_note(in->a, in->name, d->content_line, reemit_note(in, d), err) != 0)
				goto out;
		}
	}
	if (in->out.buf == NULL)
		strbuf_grow(&in->out, in->len + 1024);  /* the file and some: as a rule the one allocation */
	if (strbuf_add(&in->out, piece, piece_len) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	free(rendered);
	return rc;
}

int audit_input(struct audit *a, const char *name, const char *buf, size_t len,
		char **fixed, size_t *fixed_len, int *changed, struct error *err)
{
	struct input in = { .a = a, .buf = buf, .len = len, .fixing = fixed != NULL, .out = STRBUF_INIT,
			    .changed = changed };
	struct manifest_doc doc;
	char *owned_name = NULL;
	size_t i;
	int rc = -1, more;

	if (fixed != NULL) {
		*fixed = NULL;
		*fixed_len = 0;
		*changed = 0;
	}
	memset(&doc, 0, sizeof doc);
	if ((in.name = printable_name(name, &owned_name)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	/* Its own claim objects first: a pod before its ResourceClaimTemplate in one file. */
	if (!a->claims_collected && audit_collect(a, buf, len, err) != 0)
		goto out;
	/* One document's values at a time: memory does not grow with the number of documents. */
	manifest_open(buf, len, &in.m);
	a->files++;
	/* libyaml reads UTF-16 by its byte order mark; what --fix writes is UTF-8. */
	in.utf16 = len >= 2 && (((unsigned char)buf[0] == 0xff && (unsigned char)buf[1] == 0xfe) ||
				((unsigned char)buf[0] == 0xfe && (unsigned char)buf[1] == 0xff));
	for (i = 0;; i++) {
		template_list_free(&in.found);  /* they borrow from the document released next */
		if ((more = manifest_next(&in.m, &doc, err)) < 0)
			goto out;
		if (more == 0)
			break;
		if (judge_document(&in, i, &doc, err) != 0 || (in.fixing && fix_document(&in, &doc, err) != 0))
			goto out;
	}
	if (fixed != NULL && (*fixed = strbuf_detach(&in.out, fixed_len)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&in.out);
	free(owned_name);
	json_decref(in.doc_patch);
	template_list_free(&in.found);
	manifest_doc_free(&doc);
	return rc;
}

int audit_exit_code(const struct audit *a)
{
	if (json_array_size(a->errors) > 0)
		return 2;
	if (a->count[AUDIT_REJECT] + a->grouped[AUDIT_REJECT] > a->fixed[AUDIT_REJECT] ||
	    (a->fail_on_mutate && a->count[AUDIT_MUTATE] + a->grouped[AUDIT_MUTATE] > a->fixed[AUDIT_MUTATE]))
		return 1;
	return 0;
}

/* ==== Grouping pods under their controllers ==== */

static enum audit_verdict verdict_named(const char *name)
{
	size_t k;

	for (k = 0; k < AUDIT_NVERDICTS; k++)
		if (strcmp(audit_verdict_name((enum audit_verdict)k), name) == 0)
			return (enum audit_verdict)k;
	return AUDIT_OK;
}

static const char *str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

#define AUDIT_NOMEM (-2) /* find_controller(), owner_finding(): out of memory, not "no controller" */

/* The index of the finding for kind ns/name in index (built by audit_finish), -1, or AUDIT_NOMEM. */
static long long find_controller(json_t *index, const char *kind, const char *ns, const char *name, size_t name_len)
{
	size_t n = strlen(kind) + strlen(ns) + name_len + 3;
	char *key = malloc(n);
	json_t *v;

	if (key == NULL)
		return AUDIT_NOMEM;
	/* '/' appears in no kind, namespace or object name: an unambiguous separator. */
	snprintf(key, n, "%s/%s/%.*s", kind, ns, (int)name_len, name);
	v = json_object_get(index, key);
	free(key);
	return json_is_integer(v) ? (long long)json_integer_value(v) : -1;
}

/*
 * The controller finding of a pod owned by owner = [kind, name, hash], -1, or AUDIT_NOMEM.
 * A Deployment's pods are owned by a ReplicaSet named DEPLOYMENT-HASH, a
 * CronJob's by a Job named CRONJOB-SCHEDULEDTIME: when only the top
 * controller is in the input, its name is found by dropping that suffix.
 */
static long long owner_finding(json_t *index, const json_t *owner, const char *ns)
{
	const char *kind = json_string_value(json_array_get(owner, 0));
	const char *name = json_string_value(json_array_get(owner, 1));
	const char *hash = json_string_value(json_array_get(owner, 2));
	const char *dash = strrchr(name, '-');
	size_t len = strlen(name);
	long long i = find_controller(index, kind, ns, name, len);

	if (i != -1 || dash == NULL || dash == name)
		return i;
	if (strcmp(kind, "ReplicaSet") == 0 &&
	    (hash == NULL || (strlen(hash) < len && strcmp(name + len - strlen(hash), hash) == 0 &&
			      name[len - strlen(hash) - 1] == '-')))
		return find_controller(index, "Deployment", ns, name, (size_t)(dash - name));
	if (strcmp(kind, "Job") == 0 && dash[1] != '\0' && strspn(dash + 1, "0123456789") == strlen(dash + 1))
		return find_controller(index, "CronJob", ns, name, (size_t)(dash - name));
	return -1;
}

int audit_finish(struct audit *a, struct error *err)
{
	json_t *index = json_object(), *f, *owner;
	char key[32];
	size_t i;
	int rc = -1;

	if (a->templates == 0 && json_array_size(a->errors) == 0 &&
	    audit_add_error(a, "", 0, "no pod template found in any input (a Pod, or an object with a pod "
			    "template: Deployment, Job, CronJob, ...)", err) != 0)
		goto out;
	if (index == NULL)
		goto nomem;
	json_array_foreach(a->findings, i, f) {
		char *k;
		size_t n;

		if (strcmp(str(f, "kind"), "Pod") == 0)
			continue;
		n = strlen(str(f, "kind")) + strlen(str(f, "namespace")) + strlen(str(f, "name")) + 3;
		if ((k = malloc(n)) == NULL)
			goto nomem;
		snprintf(k, n, "%s/%s/%s", str(f, "kind"), str(f, "namespace"), str(f, "name"));
		/* The first template of a controller stands for it. */
		if (json_object_get(index, k) == NULL && json_object_set_new(index, k, json_integer((json_int_t)i)) != 0) {
			free(k);
			goto nomem;
		}
		free(k);
	}
	json_array_foreach(a->owners, i, owner) {
		json_t *pods;
		long long c;
		enum audit_verdict v;

		if (!json_is_array(owner))
			continue;
		f = json_array_get(a->findings, i);
		if ((c = owner_finding(index, owner, str(f, "namespace"))) == AUDIT_NOMEM)
			goto nomem;
		if (c < 0)
			continue;
		snprintf(key, sizeof key, "%lld", c);
		if ((pods = json_object_get(a->groups, key)) == NULL) {
			if (json_object_set_new(a->groups, key, pods = json_array()) != 0 || pods == NULL)
				goto nomem;
		}
		if (json_array_append_new(pods, json_integer((json_int_t)i)) != 0 ||
		    json_object_set_new(f, "groupedUnder", json_integer(c)) != 0)
			goto nomem;
		v = verdict_named(str(f, "verdict"));
		a->count[v]--;
		a->grouped[v]++;
	}
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory grouping pods");
out:
	json_decref(index);
	return rc;
}

/* ==== Reports ==== */

static const char *plural(unsigned long n)
{
	return n == 1 ? "" : "s";
}

static unsigned long grouped_total(const struct audit *a)
{
	unsigned long n = 0;
	size_t k;

	for (k = 0; k < AUDIT_NVERDICTS; k++)
		n += a->grouped[k];
	return n;
}

static const char *colour_of(const char *verdict)
{
	static const struct { const char *name, *sgr; } colours[] = {
		{ "ok", "\033[32m" }, { "mutate", "\033[33m" }, { "reject", "\033[1;31m" },
		{ "exempt", "\033[36m" }, { "warn", "\033[35m" },
	};
	size_t i;

	for (i = 0; i < sizeof colours / sizeof colours[0]; i++)
		if (strcmp(colours[i].name, verdict) == 0)
			return colours[i].sgr;
	return "";
}

/* Joins two words of a reason so that the text report never breaks a line between them. */
#define AUDIT_NBSP "\x1f"

/* What the reason part of a finding says: the reason code, the changes and pool, or the message. */
static void finding_reason(char *buf, size_t cap, const json_t *f)
{
	const char *verdict = str(f, "verdict");
	enum audit_verdict v = verdict_named(verdict);
	size_t k, used;

	snprintf(buf, cap, "%s", v == AUDIT_OK || v == AUDIT_EXEMPT ? str(f, "reason") : str(f, "message"));
	used = strlen(buf);
	if (v == AUDIT_MUTATE && json_is_string(json_object_get(f, "pool"))) {
		snprintf(buf + used, cap - used, " (pool" AUDIT_NBSP "%s)", str(f, "pool"));
	} else if (v == AUDIT_MUTATE && json_array_size(json_object_get(f, "pools")) > 1) {
		const json_t *pools = json_object_get(f, "pools");

		for (k = 0; k < json_array_size(pools); k++) {
			used = strlen(buf);
			snprintf(buf + used, cap - used, "%s %s", k ? "," : " (pools",
				 json_string_value(json_array_get(pools, k)));
		}
		used = strlen(buf);
		snprintf(buf + used, cap - used, ")");
	}
	/* Only where the mode changes the outcome: warn mode still mutates, it just never rejects. */
	used = strlen(buf);
	if ((v == AUDIT_MUTATE || v == AUDIT_REJECT) && strcmp(str(f, "decision"), verdict) != 0)
		snprintf(buf + used, cap - used, " [mode %s: the webhook would %s]", str(f, "mode"),
			 strcmp(str(f, "decision"), "mutate") == 0 ? "mutate it, with a warning"
			 : "admit it as is, with a warning");
}

/* Writes s[0..n) with every AUDIT_NBSP as the space it stands for. */
static void write_joined(FILE *out, const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		fputc(s[i] == AUDIT_NBSP[0] ? ' ' : s[i], out);
}

/*
 * Writes prefix and text from column indent, words wrapped so that lines end
 * by cols; continuation lines start at indent + cont. A word longer than a
 * line is written whole; AUDIT_NBSP joins words that stay together and is
 * written as a space. Widths count bytes, so UTF-8 wraps early, never late.
 */
static void write_wrapped(FILE *out, size_t cols, const char *prefix, const char *text, size_t indent, size_t cont)
{
	size_t col = indent + strlen(prefix);
	int first = 1;

	fprintf(out, "%*s%s", (int)indent, "", prefix);
	while (*text == ' ')
		text++;
	while (*text != '\0') {
		size_t n = strcspn(text, " ");

		if (!first && col + 1 + n > cols) {
			fprintf(out, "\n%*s", (int)(indent + cont), "");
			col = indent + cont;
		} else if (!first) {
			fputc(' ', out);
			col++;
		}
		write_joined(out, text, n);
		col += n;
		text += n;
		first = 0;
		while (*text == ' ')
			text++;
	}
	fputc('\n', out);
}

/* Whether f's namespace is said: not for "default", as kubectl needs no -n for it. */
static int says_namespace(const json_t *f)
{
	return strcmp(str(f, "namespace"), "default") != 0;
}

/* The length of the object as write_object() writes it. */
static size_t object_len(const json_t *f)
{
	return strlen(str(f, "kind")) + 1 + strlen(str(f, "name")) +
	       (says_namespace(f) ? 4 + strlen(str(f, "namespace")) : 0);
}

/* "Job/train -n team-a": the object as kubectl names it, padded to width. */
static void write_object(FILE *out, const json_t *f, size_t width)
{
	size_t n = object_len(f);

	fprintf(out, "%s/%s", str(f, "kind"), str(f, "name"));
	if (says_namespace(f))
		fprintf(out, " -n %s", str(f, "namespace"));
	fprintf(out, "%*s", (int)(n < width ? width - n : 0), "");
}

/* -o wide: everything on one line, as grep and editors want it. */
static void write_finding_wide(FILE *out, const json_t *f, int color)
{
	const char *verdict = str(f, "verdict");
	char reason[AUDIT_REASON_MAX];

	finding_reason(reason, sizeof reason, f);
	fprintf(out, "%s:%lld  %s %s/%s  %s%s%s  %s%s%s  ", str(f, "file"),
		(long long)json_integer_value(json_object_get(f, "line")), str(f, "kind"),
		str(f, "namespace"), str(f, "name"), audit_path_open(str(f, "path")), str(f, "path"),
		audit_path_close(str(f, "path")),
		color ? colour_of(verdict) : "", verdict, color ? "\033[0m" : "");
	write_joined(out, reason, strlen(reason));
	fputc('\n', out);
}

/* The columns: verdict, object (padded to width), file:line; then the reason, indented and wrapped at cols. */
static void write_finding(FILE *out, const json_t *f, int color, size_t width, size_t cols)
{
	const char *verdict = str(f, "verdict");
	size_t vlen = strlen(verdict);
	char reason[AUDIT_REASON_MAX];

	fprintf(out, "%s%s%s%*s", color ? colour_of(verdict) : "", verdict, color ? "\033[0m" : "",
		(int)(vlen < AUDIT_TEXT_VERDICT_COLUMN ? AUDIT_TEXT_VERDICT_COLUMN - vlen : 1), "");
	write_object(out, f, width);
	fprintf(out, "  %s:%lld\n", str(f, "file"),
		(long long)json_integer_value(json_object_get(f, "line")));
	finding_reason(reason, sizeof reason, f);
	if (reason[0] != '\0')
		write_wrapped(out, cols, "", reason, AUDIT_TEXT_INDENT, 0);
}

/* Every warning but the one a warn line already shows, whole (wide) or wrapped at cols. */
static void write_warnings(FILE *out, const json_t *f, int wide, size_t cols)
{
	size_t k, skip = verdict_named(str(f, "verdict")) == AUDIT_WARN ? 1 : 0;
	json_t *w;

	json_array_foreach(json_object_get(f, "warnings"), k, w) {
		if (k < skip)
			continue;
		if (wide)
			fprintf(out, "    warning: %s\n", json_string_value(w));
		else
			write_wrapped(out, cols, "warning: ", json_string_value(w), AUDIT_TEXT_INDENT, 2);
	}
}

/* The pods of a controller, on one line under it: "+ 2 pods of it in the input: 1 ok, 1 mutate". */
static void write_group(FILE *out, const struct audit *a, const json_t *pods, size_t indent)
{
	unsigned long count[AUDIT_NVERDICTS] = { 0 };
	size_t i, k, n = json_array_size(pods);
	const json_t *f = NULL, *p;
	int first = 1;

	json_array_foreach(pods, i, p) {
		f = json_array_get(a->findings, (size_t)json_integer_value(p));
		count[verdict_named(str(f, "verdict"))]++;
	}
	fprintf(out, "%*s+ %zu pod%s of it in the input", (int)indent, "", n, plural(n));
	if (n == 1) {
		fprintf(out, " (%s): %s %s\n", str(f, "name"), str(f, "verdict"), str(f, "reason"));
		return;
	}
	fputs(":", out);
	for (k = 0; k < AUDIT_NVERDICTS; k++) {
		if (count[k] == 0)
			continue;
		fprintf(out, "%s %lu %s", first ? "" : ",", count[k], audit_verdict_name((enum audit_verdict)k));
		first = 0;
	}
	fputc('\n', out);
}

/* Whether the report shows f on a line of its own. */
static int shown(const json_t *f, int quiet)
{
	enum audit_verdict v = verdict_named(str(f, "verdict"));

	if (json_is_integer(json_object_get(f, "groupedUnder")))
		return 0;  /* under its controller */
	return !quiet || v == AUDIT_MUTATE || v == AUDIT_REJECT || v == AUDIT_WARN;
}

int audit_write_text(const struct audit *a, FILE *out, unsigned flags, size_t cols)
{
	int color = (flags & AUDIT_TEXT_COLOR) != 0, quiet = (flags & AUDIT_TEXT_QUIET) != 0;
	int wide = (flags & AUDIT_TEXT_WIDE) != 0;
	unsigned long grouped = grouped_total(a);
	size_t i, width = 0, nerr = json_array_size(a->errors), nrw = json_array_size(a->rewritten);
	const json_t *f, *pods;
	char key[32];

	/* The object column is as wide as its longest entry, up to a cap a longer one overflows. */
	json_array_foreach(a->findings, i, f)
		if (shown(f, quiet) && object_len(f) > width)
			width = object_len(f) > AUDIT_TEXT_OBJECT_MAX ? AUDIT_TEXT_OBJECT_MAX : object_len(f);
	json_array_foreach(a->findings, i, f) {
		if (!shown(f, quiet))
			continue;
		if (wide)
			write_finding_wide(out, f, color);
		else
			write_finding(out, f, color, width, cols > 0 ? cols : AUDIT_TEXT_WIDTH);
		write_warnings(out, f, wide, cols > 0 ? cols : AUDIT_TEXT_WIDTH);
		snprintf(key, sizeof key, "%zu", i);
		if (!quiet && (pods = json_object_get(a->groups, key)) != NULL)
			write_group(out, a, pods, wide ? 4 : AUDIT_TEXT_INDENT);
	}
	if (quiet)
		return ferror(out) ? -1 : 0;
	fprintf(out, "%lu pod template%s in %lu document%s, %lu file%s", a->templates, plural(a->templates),
		a->documents, plural(a->documents), a->files, plural(a->files));
	if (grouped > 0)
		fprintf(out, " (%lu pod%s grouped under %s controller%s)", grouped, plural(grouped),
			grouped == 1 ? "its" : "their", plural(grouped));
	/* The counts on a line of their own, so that the summary fits the width too. */
	fprintf(out, ":%s%lu ok, %lu mutate, %lu reject, %lu exempt, %lu warn; %zu input error%s\n", wide ? " " : "\n",
		a->count[AUDIT_OK], a->count[AUDIT_MUTATE], a->count[AUDIT_REJECT], a->count[AUDIT_EXEMPT],
		a->count[AUDIT_WARN], nerr, plural(nerr));
	if (flags & AUDIT_TEXT_REWRITE) {
		fprintf(out, "rewrote %zu file%s%s", nrw, plural(nrw), nrw ? ":" : "");
		for (i = 0; i < nrw; i++) {
			const char *file = json_string_value(json_array_get(a->rewritten, i));

			fprintf(out, "%s %s", i ? "," : "", file);
		}
		fputc('\n', out);
	}
	return ferror(out) ? -1 : 0;
}

int audit_write_problems(const struct audit *a, FILE *out, const char *prefix, int notes)
{
	const json_t *lists[2] = { a->errors, notes ? a->notes : NULL }, *e;
	size_t l, i;

	for (l = 0; l < 2; l++) {
		json_array_foreach(lists[l], i, e) {
			long long line = (long long)json_integer_value(json_object_get(e, "line"));

			fprintf(out, "%s: %s%s", prefix, l ? "note: " : "", str(e, "file"));
			if (line > 0)
				fprintf(out, ":%lld", line);
			fprintf(out, "%s%s\n", str(e, "file")[0] ? ": " : "", str(e, "message"));
		}
	}
	return ferror(out) ? -1 : 0;
}

int audit_write_doc(const struct audit *a, FILE *out, char fmt)
{
	json_t *doc = json_pack("{s:O, s:O, s:O, s:O, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i}}",
				"findings", a->findings, "errors", a->errors, "notes", a->notes,
				"rewritten", a->rewritten, "summary",
				"files", (json_int_t)a->files, "documents", (json_int_t)a->documents,
				"templates", (json_int_t)a->templates, "grouped", (json_int_t)grouped_total(a),
				"ok", (json_int_t)a->count[AUDIT_OK], "mutate", (json_int_t)a->count[AUDIT_MUTATE],
				"reject", (json_int_t)a->count[AUDIT_REJECT],
				"exempt", (json_int_t)a->count[AUDIT_EXEMPT], "warn", (json_int_t)a->count[AUDIT_WARN],
				"errors", (json_int_t)json_array_size(a->errors), "exitCode", audit_exit_code(a));
	char *text = NULL;
	size_t len = 0;
	int rc = -1;

	if (doc == NULL)
		return -1;
	if (fmt == 'y') {
		struct error ignored;

		if ((text = manifest_to_yaml(doc, &len, &ignored)) != NULL && fwrite(text, 1, len, out) == len)
			rc = 0;
	} else if (json_dumpf(doc, out, JSON_INDENT(2)) == 0 && fputc('\n', out) != EOF) {
		rc = 0;
	}
	free(text);
	json_decref(doc);
	return rc == 0 && !ferror(out) ? 0 : -1;
}
