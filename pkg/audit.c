#include "audit.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "policy.h"
#include "utf8.h"

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
	if (a->findings == NULL || a->errors == NULL) {
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
	free(a->order);
	memset(a, 0, sizeof *a);
}

/* Remembers whether the next report line is a finding (0) or an error (1). */
static int note_order(struct audit *a, unsigned char what, struct error *err)
{
	if (a->n_order == a->cap_order) {
		size_t cap = a->cap_order ? a->cap_order * 2 : 64;
		unsigned char *grown = realloc(a->order, cap);

		if (grown == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		a->order = grown;
		a->cap_order = cap;
	}
	a->order[a->n_order++] = what;
	return 0;
}

int audit_add_error(struct audit *a, const char *name, unsigned long line, const char *msg,
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
	if (e == NULL || json_array_append_new(a->errors, e) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return note_order(a, 1, err);
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
 * Prefixes every operation's path with the template's pointer, turning a patch
 * against the template into one against the document. Appends to doc_patch.
 */
static int rebase_patch(json_t *doc_patch, const json_t *patch, const char *pointer, struct error *err)
{
	size_t i;
	json_t *op;

	json_array_foreach(patch, i, op) {
		const char *path = json_string_value(json_object_get(op, "path"));
		/* Member by member: json_copy() drops a member it cannot store, and says nothing. */
		json_t *copy = json_object(), *v;
		const char *key;
		char *full;
		size_t n;

		if (copy == NULL || path == NULL)
			goto nomem_copy;
		json_object_foreach(op, key, v)
			if (strcmp(key, "path") != 0 && json_object_set(copy, key, v) != 0)
				goto nomem_copy;
		n = strlen(pointer) + strlen(path) + 1;
		full = malloc(n);
		if (full == NULL)
			goto nomem_copy;
		snprintf(full, n, "%s%s", pointer, path);
		if (json_object_set_new(copy, "path", json_string(full)) != 0) {
			free(full);
			goto nomem_copy;
		}
		free(full);
		if (json_array_append_new(doc_patch, copy) != 0) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		continue;
nomem_copy:
		json_decref(copy);
		error_set(err, path == NULL ? ERROR_INTERNAL : ERROR_NOMEM, "cannot rebase a patch operation");
		return -1;
	}
	return 0;
}

/* Evaluates one template and records its finding; doc_patch collects its mutation for --fix. */
static int audit_template(struct audit *a, const char *name, size_t doc_index,
			  const struct manifest_template *t, json_t *doc_patch, struct error *err)
{
	struct policy_request req = { 0 };
	struct policy_result res;
	struct error perr = { 0 };
	enum audit_verdict v;
	json_t *f = NULL;
	int rc = -1;

	req.pod = t->pod;
	req.ns = t->ns;
	req.operation = POLICY_OP_CREATE;
	req.daemonset = t->daemonset;
	if (policy_evaluate(a->cfg, &req, &res, &perr) != 0) {
		char msg[ERROR_MSG_MAX + 256];

		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		snprintf(msg, sizeof msg, "%s %s/%s [%s]: %s", t->kind, t->ns, t->name, t->path, perr.msg);
		rc = audit_add_error(a, name, t->line, msg, err);
		goto out;
	}
	v = verdict_of(&res);
	f = json_pack("{s:s, s:I, s:I, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s?, s:s, s:s, s:O, s:O}",
		      "file", name, "line", (json_int_t)t->line, "document", (json_int_t)doc_index,
		      "kind", t->kind, "namespace", t->ns, "name", t->name,
		      "path", t->path, "pointer", t->pointer,
		      "verdict", audit_verdict_name(v), "reason", res.reason ? res.reason : "",
		      "message", message_of(v, &res), "changes", res.changes, "pool", res.pool,
		      "mode", config_mode_name(res.mode), "decision", policy_decision_name(res.decision),
		      "warnings", res.warnings,
		      "patch", res.verdict == POLICY_MUTATE && res.patch ? res.patch : json_null());
	if (f == NULL) {
		/* A name or kind that is not valid UTF-8 cannot reach here: the YAML reader refuses them. */
		error_set(err, ERROR_NOMEM, "out of memory recording a finding");
		goto out;
	}
	if (json_array_append_new(a->findings, f) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	if (note_order(a, 0, err) != 0)
		goto out;
	a->templates++;
	a->count[v]++;
	if (doc_patch != NULL && res.verdict == POLICY_MUTATE && res.patch != NULL && !res.exempt &&
	    rebase_patch(doc_patch, res.patch, t->pointer, err) != 0)
		goto out;
	rc = 0;
out:
	policy_result_free(&res);
	return rc;
}

int audit_input(struct audit *a, const char *name, const char *buf, size_t len,
		char **fixed, size_t *fixed_len, int *changed, struct error *err)
{
	struct manifest m;
	struct {
		char *p;
		size_t len, cap;
	} out = { 0 };
	json_t *doc_patch = NULL;
	char *owned_name = NULL;
	size_t i, j;
	int rc = -1;

	if (fixed != NULL) {
		*fixed = NULL;
		*fixed_len = 0;
		*changed = 0;
	}
	memset(&m, 0, sizeof m);
	if ((name = printable_name(name, &owned_name)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	if (manifest_split(buf, len, &m, err) != 0)
		goto out;
	a->files++;
	for (i = 0; i < m.n_docs; i++) {
		const struct manifest_doc *d = &m.docs[i];
		const char *piece = buf + d->off;
		size_t piece_len = d->len;
		char *rendered = NULL;

		if (i > 0)
			manifest_doc_release(&m, i - 1);  /* one document's values at a time */
		if (manifest_doc_load(&m, i, err) != 0)
			goto out;

		if (d->failed) {
			char msg[MANIFEST_ERROR_MAX + 64];

			snprintf(msg, sizeof msg, "unreadable document: %s", d->error);
			if (audit_add_error(a, name, d->error_line, msg, err) != 0)
				goto out;
		}
		if (d->root != NULL)
			a->documents++;
		if (fixed != NULL) {
			json_decref(doc_patch);
			if ((doc_patch = json_array()) == NULL) {
				error_set(err, ERROR_NOMEM, "out of memory");
				goto out;
			}
		}
		for (j = 0; j < d->n_templates; j++)
			if (audit_template(a, name, i, &d->templates[j], doc_patch, err) != 0)
				goto out;
		if (fixed == NULL)
			continue;
		if (json_array_size(doc_patch) > 0) {
			const char *how = NULL;

			struct error ferr = { 0 };

			if (manifest_render_patched(&m, i, doc_patch, &rendered, &piece_len, &how, &ferr) != 0) {
				/* One document that cannot be written fixed stays as it was; the rest are still fixed. */
				char msg[ERROR_MSG_MAX + 64];

				if (ferr.kind == ERROR_NOMEM) {
					*err = ferr;
					goto out;
				}
				snprintf(msg, sizeof msg, "--fix: %s; document left unchanged", ferr.msg);
				piece_len = d->len;
				if (audit_add_error(a, name, d->content_line, msg, err) != 0)
					goto out;
			} else {
				piece = rendered;
				*changed = 1;
			}
		}
		if (out.len + piece_len + 1 > out.cap) {
			size_t cap = out.cap ? out.cap : len + 1024;
			char *grown;

			while (cap < out.len + piece_len + 1)
				cap *= 2;
			grown = realloc(out.p, cap);
			if (grown == NULL) {
				free(rendered);
				error_set(err, ERROR_NOMEM, "out of memory");
				goto out;
			}
			out.p = grown;
			out.cap = cap;
		}
		memcpy(out.p + out.len, piece, piece_len);
		out.len += piece_len;
		out.p[out.len] = '\0';
		free(rendered);
	}
	if (fixed != NULL) {
		if (out.p == NULL && (out.p = calloc(1, 1)) == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			goto out;
		}
		*fixed = out.p;
		*fixed_len = out.len;
		out.p = NULL;
	}
	rc = 0;
out:
	free(out.p);
	free(owned_name);
	json_decref(doc_patch);
	manifest_free(&m);
	return rc;
}

int audit_exit_code(const struct audit *a)
{
	if (json_array_size(a->errors) > 0)
		return 2;
	if (a->count[AUDIT_REJECT] > 0 || (a->fail_on_mutate && a->count[AUDIT_MUTATE] > 0))
		return 1;
	return 0;
}

/* ==== Reports ==== */

static const char *colour_of(const char *verdict)
{
	static const struct { const char *name, *sgr; } colours[] = {
		{ "ok", "\033[32m" }, { "mutate", "\033[33m" }, { "reject", "\033[1;31m" },
		{ "exempt", "\033[36m" }, { "warn", "\033[35m" }, { "error", "\033[1;31m" },
	};
	size_t i;

	for (i = 0; i < sizeof colours / sizeof colours[0]; i++)
		if (strcmp(colours[i].name, verdict) == 0)
			return colours[i].sgr;
	return "";
}

static const char *str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

/* "file:line  ERROR  message"; an error about a whole file (line 0) has no line. */
static void write_error(FILE *out, const json_t *e, int color)
{
	long long line = (long long)json_integer_value(json_object_get(e, "line"));

	fprintf(out, "%s", str(e, "file"));
	if (line > 0)
		fprintf(out, ":%lld", line);
	fprintf(out, "  %s%s%s  %s\n", color ? colour_of("error") : "", "ERROR", color ? "\033[0m" : "",
		str(e, "message"));
}

static void write_finding(FILE *out, const json_t *f, int color)
{
	const char *verdict = str(f, "verdict");
	enum audit_verdict v = AUDIT_OK;
	size_t k, skip;
	json_t *w;

	for (k = 0; k < AUDIT_NVERDICTS; k++)
		if (strcmp(audit_verdict_name((enum audit_verdict)k), verdict) == 0)
			v = (enum audit_verdict)k;
	fprintf(out, "%s:%lld  %s %s/%s  [%s]  %s%s%s  ", str(f, "file"),
		(long long)json_integer_value(json_object_get(f, "line")), str(f, "kind"),
		str(f, "namespace"), str(f, "name"), str(f, "path"),
		color ? colour_of(verdict) : "", verdict, color ? "\033[0m" : "");
	fprintf(out, "%s", v == AUDIT_OK || v == AUDIT_EXEMPT ? str(f, "reason") : str(f, "message"));
	if (v == AUDIT_MUTATE && json_is_string(json_object_get(f, "pool")))
		fprintf(out, " (pool %s)", str(f, "pool"));
	/* Only where the mode changes the outcome: warn mode still mutates, it just never rejects. */
	if ((v == AUDIT_MUTATE || v == AUDIT_REJECT) && strcmp(str(f, "decision"), verdict) != 0)
		fprintf(out, " [mode %s: the webhook would %s]", str(f, "mode"),
			strcmp(str(f, "decision"), "mutate") == 0 ? "mutate it, with a warning"
			: "admit it as is, with a warning");
	fputc('\n', out);
	/* A warn line already shows its first warning; the exempt/dryrun ones explain themselves. */
	skip = v == AUDIT_WARN ? 1 : 0;
	json_array_foreach(json_object_get(f, "warnings"), k, w)
		if (k >= skip)
			fprintf(out, "    warning: %s\n", json_string_value(w));
}

int audit_write_text(const struct audit *a, FILE *out, int color)
{
	size_t i, nf = 0, ne = 0;

	for (i = 0; i < a->n_order; i++) {
		if (a->order[i] == 0)
			write_finding(out, json_array_get(a->findings, nf++), color);
		else
			write_error(out, json_array_get(a->errors, ne++), color);
	}
	fprintf(out, "%lu pod templates in %lu documents, %lu files: %lu ok, %lu mutate, %lu reject, "
		"%lu exempt, %lu warn; %zu input errors\n", a->templates, a->documents, a->files,
		a->count[AUDIT_OK], a->count[AUDIT_MUTATE], a->count[AUDIT_REJECT], a->count[AUDIT_EXEMPT],
		a->count[AUDIT_WARN], json_array_size(a->errors));
	return ferror(out) ? -1 : 0;
}

int audit_write_json(const struct audit *a, FILE *out)
{
	json_t *doc = json_pack("{s:O, s:O, s:{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i}}",
				"findings", a->findings, "errors", a->errors, "summary",
				"files", (json_int_t)a->files, "documents", (json_int_t)a->documents,
				"templates", (json_int_t)a->templates,
				"ok", (json_int_t)a->count[AUDIT_OK], "mutate", (json_int_t)a->count[AUDIT_MUTATE],
				"reject", (json_int_t)a->count[AUDIT_REJECT],
				"exempt", (json_int_t)a->count[AUDIT_EXEMPT], "warn", (json_int_t)a->count[AUDIT_WARN],
				"errors", (json_int_t)json_array_size(a->errors), "exitCode", audit_exit_code(a));
	int rc;

	if (doc == NULL)
		return -1;
	rc = json_dumpf(doc, out, JSON_INDENT(2));
	fputc('\n', out);
	json_decref(doc);
	return rc == 0 && !ferror(out) ? 0 : -1;
}
