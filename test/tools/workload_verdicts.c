/*
 * workload_verdicts: the verdict for a workload at kubectl apply is the audit
 * verdict of its templates.
 *
 * usage: workload_verdicts DIR|FILE...
 *
 * Every *.yaml, *.yml and *.json below the arguments is audited as
 * `gpu-admission audit` audits it (with the policy its audit case names in
 * args, --config FILE, else the default), every custom resource in it that
 * holds a pod template listed under workloads:. Then each workload object
 * (a built-in workload kind at v1, or such a custom resource) is wrapped in
 * the AdmissionReview kubectl apply makes (review_wrap_object()) and answered
 * on /validate, by the skip-scan and by the full parse, and on /mutate, and
 * the answers must be, from the audit's findings for its templates alone:
 *  - the same bytes on both parse paths, never a patch (but /mutate's for a
 *    DaemonSet in gpuInfraNamespaces: its template's GPU toleration),
 *    /mutate answering as /validate does;
 *  - denied exactly when a template's finding is reject and the mode is
 *    enforce; the message naming each such template's path with the
 *    finding's message; in warn and dryrun, a warning saying so for each;
 *  - annotated with the deciding template (a reject, else a mutate, else one
 *    with warnings, else the first), its reason and the mode;
 *  - warning only with text that comes from a finding's warnings.
 * Before the result line it checks that the comparison fails on findings
 * that do not match (a check that cannot fail proves nothing).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audit/audit.h"
#include "policy/config.h"
#include "base/file.h"
#include "text/manifest.h"
#include "webhook/review.h"
#include "policy/template.h"
#include "policy/workload.h"
#include "workload_check.h"

#define TEXT_MAX 8192

#define FIXTURE_MAX ((size_t)64 << 20)  /* the largest fixture a case may hold (hostile reviews are ~3 MiB) */

static int passed, failed;
static json_t *blind_probe;  /* one denied object's answer and findings, for the last check */

/* A fixture file, whole and NUL-terminated (pkg/base/file.c reads it); NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
	struct error err;

	return file_read(path, FIXTURE_MAX, len, &err);
}

/* The group of an apiVersion ("apps/v1": apps, "v1": the core group) and its version. */
static void split_api(const char *api, char *group, size_t cap, const char **version)
{
	const char *slash = strchr(api, '/');

	snprintf(group, cap, "%.*s", slash ? (int)(slash - api) : 0, api);
	*version = slash ? slash + 1 : api;
}

/* The objects of a document: itself, a List's items, an array's elements; with their pointers. */
static size_t objects_of(const json_t *root, const json_t **obj, char (*ptr)[64], size_t cap)
{
	const char *kind = json_string_value(json_object_get(root, "kind"));
	const json_t *items = json_is_array(root) ? root : NULL, *v;
	size_t i, n = 0;

	if (json_is_object(root) && kind != NULL && strlen(kind) > 4 && strcmp(kind + strlen(kind) - 4, "List") == 0)
		items = json_object_get(root, "items");
	if (items == NULL) {
		if (json_is_object(root) && cap > 0) {
			obj[0] = root;
			ptr[0][0] = '\0';
			return 1;
		}
		return 0;
	}
	json_array_foreach(items, i, v) {
		if (n < cap && json_is_object(v)) {
			obj[n] = v;
			snprintf(ptr[n], sizeof ptr[n], "%s/%zu", json_is_array(root) ? "" : "/items", i);
			n++;
		}
	}
	return n;
}

/* Whether the object's kind holds pod templates the webhook judges: 1 built in, 2 custom, 0 neither. */
static int workload_kind(const json_t *obj)
{
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind")), *version;
	struct template_list l = { 0 };
	struct error err;
	char group[256];
	int found;

	if (api == NULL || kind == NULL || strcmp(kind, "Pod") == 0)
		return 0;
	split_api(api, group, sizeof group, &version);
	if (template_builtin(group, kind))
		return strcmp(version, "v1") == 0 ? 1 : 0;
	found = template_find_object(obj, group, kind, &l, &err) == 0 && l.n > 0;
	template_list_free(&l);
	return found ? 2 : 0;
}

/* The policy for file: the case's, with every custom resource of the file listed under workloads. */
static struct config *policy_for(const char *config_path, const struct manifest *m, struct error *err)
{
	char *text = NULL, *base;
	size_t len = 0, i, k, n;
	struct config *cfg = NULL;
	const json_t *obj[256];
	char ptr[256][64];
	int listed = 0;

	if (config_path != NULL && (text = slurp(config_path, &len)) == NULL) {
		error_set(err, ERROR_NOT_FOUND, "%s: cannot read", config_path);
		return NULL;
	}
	base = malloc(len + TEXT_MAX);
	if (base == NULL) {
		free(text);
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	snprintf(base, len + TEXT_MAX, "%s\n", text ? text : "");
	for (i = 0; i < m->n_docs; i++) {
		n = objects_of(m->docs[i].root, obj, ptr, 256);
		for (k = 0; k < n; k++) {
			char group[256], entry[512];
			const char *version;

			if (workload_kind(obj[k]) != 2)
				continue;
			split_api(wc_str(obj[k], "apiVersion"), group, sizeof group, &version);
			snprintf(entry, sizeof entry, "  - {group: %s, kind: %s}\n", group, wc_str(obj[k], "kind"));
			if (strstr(base, entry) != NULL)
				continue;
			if (!listed++)
				strncat(base, "workloads:\n", len + TEXT_MAX - strlen(base) - 1);
			strncat(base, entry, len + TEXT_MAX - strlen(base) - 1);
		}
	}
	cfg = config_load_buffer(base, strlen(base), config_path ? config_path : "(default)", err);
	free(base);
	free(text);
	return cfg;
}

/* The findings of document doc whose pointer lies in the object at ptr. */
static json_t *findings_of(const json_t *findings, size_t doc, const char *ptr)
{
	json_t *out = json_array(), *f;
	size_t i, n = strlen(ptr);

	json_array_foreach(findings, i, f) {
		const char *p = wc_str(f, "pointer");

		if ((size_t)json_integer_value(json_object_get(f, "document")) == doc && strncmp(p, ptr, n) == 0 &&
		    (p[n] == '/' || p[n] == '\0'))
			json_array_append(out, f);
	}
	return out;
}

static json_t *answer(const struct config *cfg, const char *body, unsigned flags, char **text)
{
	struct review_response res;
	struct error err = { 0 };
	json_t *doc = NULL;

	*text = NULL;
	if (review_handle_ex(cfg, body, strlen(body), flags, &res, &err) == 0) {
		doc = json_loadb(res.body, res.len, 0, NULL);
		*text = strdup(res.body);
	}
	review_response_free(&res);
	return doc;
}

static void fail(const char *where, const char *what)
{
	fprintf(stderr, "FAIL %s: %s\n", where, what);
	failed++;
}

/* Reviews one workload object and compares the answers with its findings. */
static void check_object(const struct config *cfg, const char *where, const json_t *obj, const json_t *findings)
{
	struct template_list l = { 0 };
	struct error err = { 0 };
	json_t *review = review_wrap_object(obj, &err), *rel = json_array(), *v = NULL, *m = NULL, *full = NULL;
	char *body = review ? json_dumps(review, JSON_COMPACT) : NULL, *tv = NULL, *tm = NULL, *tf = NULL;
	char group[256];
	const char *version, *why;
	size_t i;

	split_api(wc_str(obj, "apiVersion"), group, sizeof group, &version);
	if (body == NULL || template_find_object(obj, group, wc_str(obj, "kind"), &l, &err) != 0) {
		fail(where, "cannot wrap the object");
		goto out;
	}
	/* The findings' templates, by path from the object, in the finder's order. */
	if (l.n != json_array_size(findings)) {
		fail(where, "the finder and audit see different templates");
		goto out;
	}
	for (i = 0; i < l.n; i++)
		json_array_append_new(rel, json_string(l.v[i].path));
	v = answer(cfg, body, REVIEW_VALIDATE, &tv);
	full = answer(cfg, body, REVIEW_VALIDATE | REVIEW_FULL_PARSE, &tf);
	m = answer(cfg, body, 0, &tm);
	if (v == NULL || m == NULL || full == NULL) {
		fail(where, "no answer");
		goto out;
	}
	if (strcmp(tv, tf) != 0) {
		fail(where, "the skip-scan and the full parse answer differently");
		goto out;
	}
	/* /mutate patches only the template of a DaemonSet in gpuInfraNamespaces (the GPU toleration). */
	if (!json_equal(json_object_get(json_object_get(v, "response"), "allowed"),
			json_object_get(json_object_get(m, "response"), "allowed")) ||
	    (json_object_get(json_object_get(m, "response"), "patch") != NULL &&
	     !(strcmp(wc_str(obj, "kind"), "DaemonSet") == 0 &&
	       config_gpu_infra(cfg, wc_str(json_object_get(obj, "metadata"), "namespace"))))) {
		fail(where, "/mutate answers otherwise than /validate");
		goto out;
	}
	if ((why = wc_compare(json_object_get(v, "response"), findings, rel, 0)) != NULL) {
		fail(where, why);
		fprintf(stderr, "  answer: %s\n", tv);
		goto out;
	}
	passed++;
	if (getenv("VERBOSE") != NULL)
		printf("ok %s: %s\n", where, json_is_true(json_object_get(json_object_get(v, "response"), "allowed"))
		       ? "allowed" : "denied");
	if (blind_probe == NULL && !json_is_true(json_object_get(json_object_get(v, "response"), "allowed")))
		blind_probe = json_pack("{s:O, s:O, s:O}", "response", json_object_get(v, "response"),
					"findings", findings, "rel", rel);
out:
	free(body);
	free(tv);
	free(tm);
	free(tf);
	json_decref(v);
	json_decref(m);
	json_decref(full);
	json_decref(rel);
	json_decref(review);
	template_list_free(&l);
}

static void check_file(const char *path, const char *config_path)
{
	struct manifest m;
	struct audit a;
	struct error err = { 0 };
	struct config *cfg = NULL;
	char *buf;
	size_t len = 0, i, k, n;
	const json_t *obj[256];
	char ptr[256][64], where[4096];

	memset(&m, 0, sizeof m);
	memset(&a, 0, sizeof a);
	if ((buf = slurp(path, &len)) == NULL || manifest_load(buf, len, &m, &err) != 0) {
		fail(path, "cannot read");
		goto out;
	}
	if ((cfg = policy_for(config_path, &m, &err)) == NULL) {
		fail(path, err.msg);
		goto out;
	}
	if (audit_init(&a, cfg, &err) != 0) {
		fail(path, err.msg);
		goto out;
	}
	/* The answers compared are a webhook's without claim lookups: its words for why. */
	a.claims_off = REVIEW_CLAIMS_OFF;
	if (audit_input(&a, path, buf, len, NULL, NULL, NULL, &err) != 0) {
		fail(path, err.msg);
		goto out;
	}
	for (i = 0; i < m.n_docs; i++) {
		n = objects_of(m.docs[i].root, obj, ptr, 256);
		for (k = 0; k < n; k++) {
			json_t *f;

			if (workload_kind(obj[k]) == 0)
				continue;
			f = findings_of(a.findings, i, ptr[k]);
			snprintf(where, sizeof where, "%s: document %zu%s%s: %s %s", path, i, ptr[k][0] ? " at " : "",
				 ptr[k], wc_str(obj[k], "kind"), wc_str(json_object_get(obj[k], "metadata"), "name"));
			check_object(cfg, where, obj[k], f);
			json_decref(f);
		}
	}
out:
	audit_free(&a);
	config_free(cfg);
	manifest_free(&m);
	free(buf);
}

static int is_input(const char *name)
{
	size_t n = strlen(name);

	if (strncmp(name, "expect", 6) == 0)
		return 0;
	return (n > 5 && strcmp(name + n - 5, ".yaml") == 0) || (n > 4 && strcmp(name + n - 4, ".yml") == 0) ||
	       (n > 5 && strcmp(name + n - 5, ".json") == 0);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * The policy an audit case names in its args (--config FILE or -c FILE, or
 * =FILE), relative to the case: into out, or "" for the default.
 */
static void case_config(const char *dir, char *out, size_t cap)
{
	char path[4096], *args, *p;
	size_t len = 0;

	out[0] = '\0';
	snprintf(path, sizeof path, "%s/args", dir);
	if ((args = slurp(path, &len)) == NULL)
		return;
	for (p = strtok(args, " \t\n"); p != NULL; p = strtok(NULL, " \t\n")) {
		if (strncmp(p, "--config=", 9) == 0) {
			snprintf(out, cap, "%s/%s", dir, p + 9);
			break;
		}
		if (strcmp(p, "--config") == 0 || strcmp(p, "-c") == 0) {
			if ((p = strtok(NULL, " \t\n")) != NULL)
				snprintf(out, cap, "%s/%s", dir, p);
			break;
		}
	}
	free(args);
}

/* Every input below path, in name order; config: the policy of the audit case it is in. */
static void walk(const char *path, const char *config)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char **names = NULL, sub[4096], cfg[4096];
	size_t n = 0, i;

	if (stat(path, &st) != 0) {
		fail(path, "no such file or directory");
		return;
	}
	if (!S_ISDIR(st.st_mode)) {
		check_file(path, config);
		return;
	}
	snprintf(sub, sizeof sub, "%s/args", path);
	if (stat(sub, &st) == 0) {  /* an audit case: its policy */
		case_config(path, cfg, sizeof cfg);
		config = cfg[0] ? cfg : NULL;
	}
	if ((d = opendir(path)) == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		char **grown;

		if (e->d_name[0] == '.')
			continue;
		if ((grown = realloc(names, (n + 1) * sizeof *names)) == NULL)
			break;
		names = grown;
		if ((names[n] = strdup(e->d_name)) != NULL)
			n++;
	}
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	for (i = 0; i < n; i++) {
		snprintf(sub, sizeof sub, "%s/%s", path, names[i]);
		if (stat(sub, &st) == 0 && (S_ISDIR(st.st_mode) ||
		    (is_input(names[i]) && (config == NULL || strcmp(sub, config) != 0))))
			walk(sub, config);
		free(names[i]);
	}
	free(names);
}

/* The comparison must fail when the findings do not match the answer: flip the rejection. */
static void check_not_blind(void)
{
	json_t *findings, *f;
	size_t i;

	if (blind_probe == NULL) {
		fail("self-check", "no denied workload among the inputs");
		return;
	}
	findings = json_deep_copy(json_object_get(blind_probe, "findings"));
	json_array_foreach(findings, i, f)
		if (strcmp(wc_str(f, "verdict"), "reject") == 0)
			json_object_set_new(f, "verdict", json_string("ok"));
	if (wc_compare(json_object_get(blind_probe, "response"), findings, json_object_get(blind_probe, "rel"), 0) == NULL)
		fail("self-check", "the comparison is blind: an answer matched findings it does not");
	else
		passed++;
	json_decref(findings);
	json_decref(blind_probe);
}

int main(int argc, char **argv)
{
	int i;

	if (argc < 2) {
		fprintf(stderr, "usage: workload_verdicts DIR|FILE...\n");
		return 2;
	}
	for (i = 1; i < argc; i++)
		walk(argv[i], NULL);
	check_not_blind();
	printf("workload verdicts: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
