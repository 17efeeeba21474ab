/*
 * golden: runs every golden case under a directory (default test/golden).
 *
 * A case is a directory holding
 *   request.json   an AdmissionReview as kube-apiserver sends it
 *   config.yaml    optional policy file (else the embedded default)
 *   validate       optional empty file: answer as /validate
 *   policy         optional file: answer as /validate-policy (a policy
 *                  ConfigMap's review); its lines may set key=KEY (the data
 *                  key, default policy.yaml) and version=V (the release the
 *                  webhook runs; unset: a ConfigMap is never taken for
 *                  another release's)
 *   modes          optional empty file: answer the request in every mode, the
 *                  policy's mode set to enforce, warn and dryrun in turn (the
 *                  policy may not set namespaceModes then)
 *   expect.json    the expected answer: the response AdmissionReview with
 *                  response.patch decoded from base64 into JSON, or
 *                  {"error": "..."} when no AdmissionReview can be answered;
 *                  with modes, expect.json is enforce's answer and
 *                  expect.warn.json and expect.dryrun.json the others'
 *   claims.yaml    optional: ResourceClaimTemplates and ResourceClaims (YAML
 *                  documents) the pod's DRA claims are looked up in, as the
 *                  webhook's cache would hold them; without it nothing is
 *                  looked up
 *   cache          optional: "cold" or "not-served" (one line): the webhook's
 *                  claim cache in that state (not synced yet; the API server
 *                  answering 404 for resource.k8s.io/v1), every lookup
 *                  answering it (instead of claims.yaml)
 *   NOTES          optional: where the case comes from, what it shows
 *
 * Beyond the comparison, every case is checked for the invariants that hold
 * for all answers: the uid and apiVersion are echoed, warnings fit 256 bytes,
 * only a CREATE is ever patched, and a patched pod re-parses, has well-formed tolerations and node
 * selectors, and is answered with no patch when reviewed again (idempotence)
 * and admitted by /validate; and the fast skip-scan and jansson's full parse
 * give byte-identical answers. A workload's answer (an object judged by its
 * pod templates) is never patched (but /mutate's for a DaemonSet in
 * gpuInfraNamespaces, its template given the GPU toleration, CREATE or
 * UPDATE: then idempotent as a pod's), is what the audit of its templates says
 * (test/tools/workload_check.h), and, for a CREATE case, its UPDATE rules
 * hold: a scale and a label change are admitted untouched, removing the
 * routes a rejection names is admitted, adding them back is denied.
 * And the modes are held to each other: a pod's CREATE or UPDATE (or a
 * gpuInfraNamespaces DaemonSet's) is taken through /mutate and then
 * /validate on what /mutate's patch made, in enforce, warn and dryrun (every
 * namespace in that mode), and warn and dryrun must refuse nothing, announce
 * (wouldDecide: reject) as many rejections as enforce makes, have the
 * metrics count the same reviews and rejections per endpoint, and /validate
 * repeat none of /mutate's warnings (check_trail()).
 *
 * UPDATE=1 rewrites expect.json from the actual answers: review the diff.
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "audit/audit.h"
#include "policy/config.h"
#include "base/file.h"
#include "base/patch.h"
#include "policy/policy.h"
#include "webhook/review.h"
#include "policy/template.h"
#include "workload_check.h"

#define FIXTURE_MAX ((size_t)64 << 20)  /* the largest fixture a case may hold (hostile reviews are ~3 MiB) */

static int passed, failed;

/* The case is a policy ConfigMap's review (a `policy` file): how /validate-policy is set up. NULL: not one. */
static const struct review_policy_options *policy_case;

/* A case's cache file: the state every lookup answers (ctx: an enum policy_claim_state). */
static enum policy_claim_state cache_state_lookup(void *ctx, const char *ns, enum policy_claim_source source,
						  const char *name, const json_t **obj)
{
	*obj = NULL;
	return *(const enum policy_claim_state *)ctx;
}

static enum policy_claim_state cache_state;

/* The case's claims.yaml: its text, the objects kept, and the lookup over them. NULL lookup: none. */
static char *claims_text;
static size_t claims_len;
static struct audit claims_held;
static struct policy_claim_lookup claims_lookup_store;
static const struct policy_claim_lookup *claims_lookup;

/* A fixture file, whole and NUL-terminated (pkg/base/file.c reads it); NULL when it cannot be read. */
static char *slurp(const char *path, size_t *len)
{
	struct error err;

	return file_read(path, FIXTURE_MAX, len, &err);
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

static int b64val(int c)
{
	if (c >= 'A' && c <= 'Z') return c - 'A';
	if (c >= 'a' && c <= 'z') return c - 'a' + 26;
	if (c >= '0' && c <= '9') return c - '0' + 52;
	if (c == '+') return 62;
	if (c == '/') return 63;
	return -1;
}

/* New: the JSON a base64 patch decodes to, or NULL. */
static json_t *decode_patch(const char *b64)
{
	size_t len = strlen(b64), i, o = 0;
	char *out = malloc(len / 4 * 3 + 1);
	json_t *j;

	if (out == NULL)
		return NULL;
	for (i = 0; i + 3 < len; i += 4) {
		int a = b64val(b64[i]), b = b64val(b64[i + 1]);
		int c = b64[i + 2] == '=' ? 0 : b64val(b64[i + 2]);
		int d = b64[i + 3] == '=' ? 0 : b64val(b64[i + 3]);
		unsigned v;

		if (a < 0 || b < 0 || c < 0 || d < 0)
			break;
		v = (unsigned)a << 18 | (unsigned)b << 12 | (unsigned)c << 6 | (unsigned)d;
		out[o++] = (char)(v >> 16);
		if (b64[i + 2] != '=')
			out[o++] = (char)(v >> 8 & 0xff);
		if (b64[i + 3] != '=')
			out[o++] = (char)(v & 0xff);
	}
	j = json_loadb(out, o, 0, NULL);
	free(out);
	return j;
}

struct answer {
	int rc;
	json_t *doc;   /* the AdmissionReview (patch decoded) or {"error": ...} */
	json_t *patch; /* borrowed from doc, or NULL */
	int counted;   /* the server counts its verdict in gpu_admission_policy_verdicts_total */
	enum policy_decision verdict; /* the verdict counted */
};

static void answer(const struct config *cfg, const char *body, size_t len, int validate,
		   struct answer *a)
{
	struct review_response res;
	struct error err = { 0 };
	json_t *resp;
	const char *b64;

	a->patch = NULL;
	a->rc = policy_case ? review_policy_handle(policy_case, body, len, 0, &res, &err)
		: review_handle_claims(cfg, body, len, validate ? REVIEW_VALIDATE : 0, claims_lookup, &res, &err);
	if (a->rc != 0) {
		a->doc = json_pack("{s:s}", "error", err.msg);
		review_response_free(&res);
		return;
	}
	/* As server_http.c counts it. */
	a->counted = res.evaluated && !res.unreached;
	a->verdict = res.verdict;
	a->doc = json_loadb(res.body, res.len, JSON_REJECT_DUPLICATES, NULL);
	review_response_free(&res);
	resp = json_object_get(a->doc, "response");
	b64 = json_string_value(json_object_get(resp, "patch"));
	if (b64 != NULL) {
		a->patch = decode_patch(b64);
		json_object_set_new(resp, "patch", a->patch ? a->patch : json_string("(undecodable)"));
	}
}

/*
 * The skip-scan and jansson's full parse must answer byte for byte alike (or
 * fail alike, with the same message).
 */
static int check_paths_agree(const struct config *cfg, const char *body, size_t len, int validate)
{
	struct review_response fast, full;
	struct error efast = { 0 }, efull = { 0 };
	unsigned flags = validate ? REVIEW_VALIDATE : 0;
	int rf = policy_case ? review_policy_handle(policy_case, body, len, 0, &fast, &efast)
		 : review_handle_claims(cfg, body, len, flags, claims_lookup, &fast, &efast);
	int rs = policy_case ? review_policy_handle(policy_case, body, len, REVIEW_FULL_PARSE, &full, &efull)
		 : review_handle_claims(cfg, body, len, flags | REVIEW_FULL_PARSE, claims_lookup, &full, &efull);
	int same = rf == rs && (rf != 0 ? strcmp(efast.msg, efull.msg) == 0
			      : fast.len == full.len && memcmp(fast.body, full.body, fast.len) == 0);

	if (!same)
		fprintf(stderr, "  fast:  %s\n  full:  %s\n", rf ? efast.msg : fast.body,
			rs ? efull.msg : full.body);
	review_response_free(&fast);
	review_response_free(&full);
	return same ? 0 : -1;
}

static int fail(const char *name, const char *what)
{
	fprintf(stderr, "FAIL %s: %s\n", name, what);
	return -1;
}

static int check_tolerations(const json_t *pod)
{
	const json_t *tols = json_object_get(json_object_get(pod, "spec"), "tolerations");
	const json_t *sel = json_object_get(json_object_get(pod, "spec"), "nodeSelector");
	const json_t *t, *v;
	const char *k;
	size_t i;

	if (tols != NULL && !json_is_array(tols))
		return -1;
	for (i = 0; i < json_array_size(tols); i++) {
		t = json_array_get(tols, i);
		const char *op = json_string_value(json_object_get(t, "operator"));
		/* An empty operator is Equal (Toleration.ToleratesTaint; validation accepts it). */
		if (!json_is_object(t) || (op && op[0] && strcmp(op, "Equal") && strcmp(op, "Exists")))
			return -1;
	}
	if (sel != NULL && !json_is_object(sel))
		return -1;
	json_object_foreach((json_t *)(uintptr_t)sel, k, v)
		if (!json_is_string(v) || k[0] == '\0')
			return -1;
	return 0;
}

/* Applies the patch, re-parses, re-reviews: nothing more may be added. */
static int check_idempotent(const char *name, const struct config *cfg, const json_t *request,
			    const json_t *patch, int validate)
{
	json_t *req = json_deep_copy(request), *obj, *reparsed = NULL;
	struct error err = { 0 };
	struct answer again = { 0 };
	char *text = NULL;
	int rc = -1;

	obj = json_object_get(json_object_get(req, "request"), "object");
	if (patch_apply(obj, patch, &err) != 0) {
		fail(name, err.msg);
		goto out;
	}
	text = json_dumps(req, JSON_COMPACT);
	reparsed = text ? json_loads(text, JSON_REJECT_DUPLICATES, NULL) : NULL;
	if (reparsed == NULL) {
		fail(name, "patched object does not re-parse");
		goto out;
	}
	if (check_tolerations(json_object_get(json_object_get(reparsed, "request"), "object")) != 0) {
		fail(name, "patched pod has malformed tolerations or nodeSelector");
		goto out;
	}
	answer(cfg, text, strlen(text), validate, &again);
	if (again.patch != NULL || !json_is_true(json_object_get(json_object_get(again.doc, "response"), "allowed"))) {
		fail(name, "re-review of the patched pod is not an allow without patch");
		json_dumpf(again.doc, stderr, JSON_INDENT(2));
		goto out;
	}
	json_decref(again.doc);
	again.doc = NULL;
	answer(cfg, text, strlen(text), 1, &again);
	if (!json_is_true(json_object_get(json_object_get(again.doc, "response"), "allowed"))) {
		fail(name, "/validate rejects the patched pod");
		json_dumpf(again.doc, stderr, JSON_INDENT(2));
		goto out;
	}
	rc = 0;
out:
	json_decref(again.doc);
	json_decref(reparsed);
	free(text);
	json_decref(req);
	return rc;
}

static int check_invariants(const char *name, const json_t *request, const struct answer *a, int infra)
{
	const json_t *resp = json_object_get(a->doc, "response");
	const char *ver = json_string_value(json_object_get(request, "apiVersion"));
	const char *op = json_string_value(json_object_get(json_object_get(request, "request"), "operation"));
	const json_t *w;
	size_t i;

	if (a->rc != 0)
		return 0;
	if (!json_equal(json_object_get(resp, "uid"),
			json_object_get(json_object_get(request, "request"), "uid")))
		return fail(name, "response.uid differs from request.uid");
	if (ver && (strcmp(ver, "admission.k8s.io/v1") == 0 || strcmp(ver, "admission.k8s.io/v1beta1") == 0) &&
	    strcmp(ver, json_string_value(json_object_get(a->doc, "apiVersion"))) != 0)
		return fail(name, "answered in another apiVersion");
	for (i = 0; i < json_array_size(json_object_get(resp, "warnings")); i++) {
		w = json_array_get(json_object_get(resp, "warnings"), i);
		if (!json_is_string(w) || json_string_length(w) > POLICY_WARNING_MAX)
			return fail(name, "a warning is longer than 256 bytes");
	}
	if (a->patch != NULL && !json_is_true(json_object_get(resp, "allowed")))
		return fail(name, "a patch on a rejection");
	/* A pod is patched on CREATE only; a gpuInfraNamespaces DaemonSet's template on UPDATE too. */
	if (a->patch != NULL && strcmp(op ? op : "", "CREATE") != 0 && !(infra && strcmp(op ? op : "", "UPDATE") == 0))
		return fail(name, "a patch on an operation other than CREATE");
	return 0;
}

/* ==== Workloads: the answer is the audit of the templates, and UPDATE judges only changes ==== */

/* The request's object under another operation: a new review text (free it). */
static char *with_update(const json_t *request, const json_t *object, const json_t *old)
{
	json_t *r = json_deep_copy(request), *req = json_object_get(r, "request");
	char *text;

	json_object_set_new(req, "operation", json_string("UPDATE"));
	json_object_set(req, "object", (json_t *)(uintptr_t)object);
	json_object_set(req, "oldObject", (json_t *)(uintptr_t)old);
	text = json_dumps(r, JSON_COMPACT);
	json_decref(r);
	return text;
}

/* The response of request text under cfg (/validate), or NULL. New reference. */
static json_t *response_of(const struct config *cfg, const char *text)
{
	struct answer a = { 0 };
	json_t *resp;

	answer(cfg, text, strlen(text), 1, &a);
	resp = json_incref(json_object_get(a.doc, "response"));
	json_decref(a.doc);
	return resp;
}

/*
 * obj with what audit --fix does to it: every rejected template's fix (the
 * routes to GPU nodes removed). New, or NULL when a rejected template has
 * none (a rejection no edit of routes cures).
 */
static json_t *fixed_object(const struct config *cfg, const json_t *obj, const struct template_list *l)
{
	json_t *fixed = json_deep_copy(obj), *patch = json_array();
	struct error err = { 0 };
	size_t i;
	int ok = 1;

	for (i = 0; i < l->n && ok; i++) {
		struct policy_result r;

		if (template_judge_claims(cfg, &l->v[i], NULL, POLICY_OP_CREATE, claims_lookup, &r, &err) != 0)
			ok = 0;
		else if (r.verdict == POLICY_REJECT && (r.fix == NULL || template_rebase(&l->v[i], r.fix, patch, &err) != 0))
			ok = 0;
		policy_result_free(&r);
	}
	if (!ok || patch_apply(fixed, patch, &err) != 0) {
		json_decref(fixed);
		fixed = NULL;
	}
	json_decref(patch);
	return fixed;
}

/*
 * A workload's answer: never a patch; what the audit of its templates says
 * (workload_check.h); and on UPDATE, for a CREATE case, the rules: a scale
 * and a label change is admitted untouched, even when its templates would
 * be rejected; taking away what a rejection names is admitted; putting it
 * back (a CPU template newly aimed at GPU nodes) is denied, in enforce.
 */
static int check_workload(const char *name, const struct config *cfg, const json_t *request,
			  const json_t *resp, int may_patch)
{
	const json_t *req = json_object_get(request, "request");
	const json_t *obj = json_object_get(req, "object"), *kind = json_object_get(req, "kind");
	struct template_list l = { 0 };
	struct audit a;
	struct error err = { 0 };
	json_t *rel = json_array(), *touched = NULL, *fixed = NULL, *r = NULL;
	char *text = json_dumps(obj, JSON_COMPACT), *update = NULL;
	const char *why;
	size_t i;
	int rc = -1;

	memset(&a, 0, sizeof a);
	if (json_object_get(resp, "patch") != NULL && !may_patch) {
		fail(name, "a workload was patched");
		goto out;
	}
	/* An UPDATE is judged against oldObject (its NOTES say how); a denial still names the template. */
	if (strcmp(wc_str(req, "operation"), "CREATE") != 0) {
		if (!json_is_true(json_object_get(resp, "allowed")) &&
		    strstr(wc_str(json_object_get(resp, "status"), "message"), "pod template ") == NULL &&
		    json_integer_value(json_object_get(json_object_get(resp, "status"), "code")) == 403)
			fail(name, "a workload denied without naming its template");
		else
			rc = 0;
		goto out;
	}
	if (text == NULL || audit_init(&a, cfg, &err) != 0) {
		fail(name, "cannot audit request.object");
		goto out;
	}
	/* The audit stands for the webhook: without claims.yaml, one whose lookups are off. */
	a.claims_off = REVIEW_CLAIMS_OFF;
	if ((claims_text != NULL && audit_collect(&a, claims_text, claims_len, &err) != 0) ||
	    audit_input(&a, "request.object", text, strlen(text), NULL, NULL, NULL, &err) != 0 ||
	    template_find_object(obj, wc_str(kind, "group"), wc_str(kind, "kind"), &l, &err) != 0) {
		fail(name, "cannot audit request.object");
		goto out;
	}
	for (i = 0; i < l.n; i++)
		json_array_append_new(rel, json_string(l.v[i].path));
	if (json_array_size(a.findings) != l.n) {
		fail(name, "audit and the webhook find different templates");
		goto out;
	}
	if ((why = wc_compare(resp, a.findings, rel, may_patch)) != NULL) {
		fail(name, why);
		goto out;
	}
	/* A scale and a label change: nothing the policy reads of a template changed. */
	touched = json_deep_copy(obj);
	json_object_set_new(json_object_get(touched, "metadata"), "resourceVersion", json_string("2"));
	json_object_set_new(json_object_get(touched, "spec"), "replicas", json_integer(7));
	update = with_update(request, touched, obj);
	r = response_of(cfg, update);
	if (!json_is_true(json_object_get(r, "allowed")) || json_array_size(json_object_get(r, "warnings")) > 0 ||
	    (l.n > 0 && strcmp(wc_str(json_object_get(r, "auditAnnotations"), "reason"), WORKLOAD_R_UNCHANGED) != 0)) {
		fail(name, "UPDATE changing no template: not admitted untouched");
		goto out;
	}
	if (json_is_true(json_object_get(resp, "allowed")) || (fixed = fixed_object(cfg, obj, &l)) == NULL) {
		rc = 0;
		goto out;
	}
	/* Denied for its routes: taking them away is admitted, putting them back is not. */
	json_decref(r);
	free(update);
	update = with_update(request, fixed, obj);
	r = response_of(cfg, update);
	if (!json_is_true(json_object_get(r, "allowed"))) {
		fail(name, "UPDATE removing the routes to GPU nodes: denied");
		goto out;
	}
	json_decref(r);
	free(update);
	update = with_update(request, obj, fixed);
	r = response_of(cfg, update);
	if (json_is_true(json_object_get(r, "allowed")) ||
	    strstr(wc_str(json_object_get(r, "status"), "message"), "pod template ") == NULL) {
		fail(name, "UPDATE aiming a CPU template at GPU nodes again: not denied naming the template");
		goto out;
	}
	rc = 0;
out:
	json_decref(r);
	json_decref(touched);
	json_decref(fixed);
	json_decref(rel);
	free(update);
	free(text);
	template_list_free(&l);
	audit_free(&a);
	return rc;
}

/*
 * Whether the answer may patch the workload: /mutate's for a DaemonSet in
 * gpuInfraNamespaces (its template given the GPU toleration), CREATE or UPDATE.
 */
static int infra_daemonset(const struct config *cfg, const json_t *request, int validate)
{
	const json_t *req = json_object_get(request, "request");

	return !validate && strcmp(wc_str(json_object_get(req, "kind"), "kind"), "DaemonSet") == 0 &&
	       config_gpu_infra(cfg, wc_str(req, "namespace"));
}

/* Whether the request carries an object the webhook judged as a workload (never on /validate-policy). */
static int is_workload(const json_t *request, const json_t *resp)
{
	const json_t *req = json_object_get(request, "request");

	return policy_case == NULL && json_is_object(json_object_get(req, "object")) &&
	       strcmp(wc_str(json_object_get(req, "kind"), "kind"), "Pod") != 0 &&
	       json_object_get(json_object_get(resp, "auditAnnotations"), "decision") != NULL;
}

/* The modes a case with a `modes` file is answered in, and its expect file for each. */
static const struct {
	enum config_mode mode;
	const char *expect;
} modes[] = {
	{ CONFIG_MODE_ENFORCE, "expect.json" },
	{ CONFIG_MODE_WARN, "expect.warn.json" },
	{ CONFIG_MODE_DRYRUN, "expect.dryrun.json" },
};

/* Answers one request under cfg and checks it against expect (a path): 0 or -1. */
static int check_answer(const char *name, const char *expect_path, const struct config *cfg,
			const char *body, size_t len, int validate, const json_t *request)
{
	struct answer a = { 0 };
	json_t *expect = NULL;
	int rc = -1;

	answer(cfg, body, len, validate, &a);
	if (getenv("UPDATE") && strcmp(getenv("UPDATE"), "1") == 0) {
		json_dump_file(a.doc, expect_path, JSON_INDENT(2));
		FILE *f = fopen(expect_path, "a");
		if (f) { fputc('\n', f); fclose(f); }
	}
	expect = json_load_file(expect_path, 0, NULL);
	if (expect == NULL) {
		fail(name, "no readable expect file (UPDATE=1 writes it)");
		goto out;
	}
	if (!json_equal(expect, a.doc)) {
		fprintf(stderr, "FAIL %s: answer differs from %s; got:\n", name, expect_path);
		json_dumpf(a.doc, stderr, JSON_INDENT(2));
		fputc('\n', stderr);
		goto out;
	}
	if (check_paths_agree(cfg, body, len, validate) != 0) {
		fail(name, "the skip-scan and the full parse answer differently");
		goto out;
	}
	if (request != NULL && check_invariants(name, request, &a, infra_daemonset(cfg, request, validate)) != 0)
		goto out;
	if (request != NULL && is_workload(request, json_object_get(a.doc, "response")) &&
	    check_workload(name, cfg, request, json_object_get(a.doc, "response"),
			   infra_daemonset(cfg, request, validate)) != 0)
		goto out;
	if (a.patch != NULL && check_idempotent(name, cfg, request, a.patch, validate) != 0)
		goto out;
	rc = 0;
out:
	json_decref(a.doc);
	json_decref(expect);
	return rc;
}

/* ==== The two webhooks in turn: what warn and dryrun announce is what enforce does ==== */

/*
 * What one pod leaves behind on its way through the chart's two webhooks:
 * /mutate, then /validate on the pod /mutate's patch made (kube-apiserver runs
 * the validating webhooks on the final object; the chart sends every pod to
 * both, under one policy).
 */
struct trail {
	int denied;          /* an answer refused the pod (403: the policy's refusal) */
	int error;           /* an answer was an error (400: the pod cannot be read) */
	int would_reject;    /* answers whose auditAnnotations say wouldDecide: reject */
	int rejects;         /* reject verdicts the metrics count, both endpoints */
	int counted[2];      /* reviews the metrics count: [0] /mutate, [1] /validate */
	json_t *warnings[2]; /* each answer's warnings (owned), NULL when it was not asked */
};

static void trail_free(struct trail *t)
{
	json_decref(t->warnings[0]);
	json_decref(t->warnings[1]);
	memset(t, 0, sizeof *t);
}

/* Adds answer a of endpoint ep (0 /mutate, 1 /validate) to t. 1 when the pod goes on, 0 when it stops here. */
static int trail_add(struct trail *t, int ep, const struct answer *a)
{
	const json_t *resp = json_object_get(a->doc, "response");
	const json_t *ann = json_object_get(resp, "auditAnnotations");

	t->would_reject += strcmp(wc_str(ann, "wouldDecide"), "reject") == 0;
	t->counted[ep] += a->counted;
	t->rejects += a->counted && a->verdict == POLICY_REJECT;
	t->warnings[ep] = json_incref(json_object_get(resp, "warnings"));
	if (json_is_true(json_object_get(resp, "allowed")))
		return 1;
	if (json_integer_value(json_object_get(json_object_get(resp, "status"), "code")) == 403)
		t->denied = 1;
	else
		t->error = 1;
	return 0;
}

/* Takes request's pod through /mutate and /validate under cfg into t: 0, or -1 (said) when it cannot. */
static int trail_follow(const char *name, const struct config *cfg, const json_t *request, struct trail *t)
{
	json_t *req = json_deep_copy(request);
	struct answer a = { 0 };
	struct error err = { 0 };
	char *text = json_dumps(req, JSON_COMPACT);
	int rc = -1;

	if (text == NULL)
		goto out;
	answer(cfg, text, strlen(text), 0, &a);
	if (a.rc != 0 || !trail_add(t, 0, &a)) {
		rc = 0;
		goto out;
	}
	if (a.patch != NULL &&
	    patch_apply(json_object_get(json_object_get(req, "request"), "object"), a.patch, &err) != 0) {
		fail(name, err.msg);
		goto out;
	}
	free(text);
	json_decref(a.doc);
	a.doc = NULL;
	text = json_dumps(req, JSON_COMPACT);
	if (text == NULL)
		goto out;
	answer(cfg, text, strlen(text), 1, &a);
	if (a.rc == 0)
		trail_add(t, 1, &a);
	rc = 0;
out:
	json_decref(a.doc);
	free(text);
	json_decref(req);
	return rc;
}

/*
 * Sets every mode cfg holds (its own and each namespace's) to m, the old
 * ones kept in saved (1 + n_namespace_modes entries) when it is not NULL;
 * with m < 0, puts back the saved ones.
 */
static void modes_set(struct config *cfg, int m, enum config_mode *saved)
{
	size_t i;

	if (m < 0)
		cfg->mode = saved[0];
	else if (saved != NULL)
		saved[0] = cfg->mode;
	if (m >= 0)
		cfg->mode = (enum config_mode)m;
	for (i = 0; i < cfg->n_namespace_modes; i++) {
		if (m < 0) {
			cfg->namespace_modes[i].mode = saved[i + 1];
			continue;
		}
		if (saved != NULL)
			saved[i + 1] = cfg->namespace_modes[i].mode;
		cfg->namespace_modes[i].mode = (enum config_mode)m;
	}
}

/*
 * Is request a CREATE or UPDATE that /mutate and /validate both receive: a
 * pod's, or a DaemonSet's in gpuInfraNamespaces (the chart's
 * mutate-daemonsets entry)?
 */
static int trail_applies(const struct config *cfg, const json_t *request)
{
	const json_t *req = json_object_get(request, "request");
	const char *op = wc_str(req, "operation");

	return policy_case == NULL && json_is_object(json_object_get(req, "object")) &&
	       (strcmp(wc_str(json_object_get(req, "kind"), "kind"), "Pod") == 0 ||
		infra_daemonset(cfg, request, 0)) &&
	       (strcmp(op, "CREATE") == 0 || strcmp(op, "UPDATE") == 0);
}

/*
 * The differential check of the modes, for a pod: taken through both
 * webhooks in enforce, warn and dryrun (every namespace in the same mode),
 * warn and dryrun refuse nothing, their answers announce (wouldDecide:
 * reject) exactly as many rejections as enforce makes, the metrics count
 * the same reviews and rejections on each endpoint, and /validate, which
 * sees the pod /mutate answered for, repeats none of its warnings. 0, -1
 * (said), or 1 when request is no pod's review.
 */
static int check_trail(const char *name, struct config *cfg, const json_t *request)
{
	struct trail t[3];
	enum config_mode *saved;
	size_t m;
	int rc = 0;

	if (request == NULL || !trail_applies(cfg, request))
		return 1;
	memset(t, 0, sizeof t);
	saved = calloc(cfg->n_namespace_modes + 1, sizeof *saved);
	if (saved == NULL)
		return fail(name, "out of memory");
	for (m = 0; m < 3 && rc == 0; m++) {
		modes_set(cfg, modes[m].mode, saved);
		rc = trail_follow(name, cfg, request, &t[m]);
		modes_set(cfg, -1, saved);
	}
	free(saved);
	for (m = 0; m < 3 && rc == 0 && !t[0].error; m++) {
		const char *mode = config_mode_name(modes[m].mode);
		char why[512];

		if (m > 0 && t[m].denied)
			snprintf(why, sizeof why, "%s mode refused the pod", mode);
		else if (m > 0 && t[m].would_reject != t[0].denied)
			snprintf(why, sizeof why, "%s mode announces %d would-be rejections (wouldDecide: reject), "
				 "enforce makes %d", mode, t[m].would_reject, t[0].denied);
		else if (t[m].rejects != t[0].rejects || t[m].counted[0] != t[0].counted[0] ||
			 t[m].counted[1] != t[0].counted[1])
			snprintf(why, sizeof why, "%s mode's metrics count %d/%d reviews (mutate/validate), %d "
				 "rejections; enforce's %d/%d, %d", mode, t[m].counted[0], t[m].counted[1],
				 t[m].rejects, t[0].counted[0], t[0].counted[1], t[0].rejects);
		else if (json_array_size(t[m].warnings[1]) > 0)
			snprintf(why, sizeof why, "%s mode: /validate repeats what /mutate said of the pod: %s", mode,
				 json_string_value(json_array_get(t[m].warnings[1], 0)));
		else
			continue;
		rc = fail(name, why);
	}
	for (m = 0; m < 3; m++)
		trail_free(&t[m]);
	return rc;
}

/*
 * The /validate-policy setup a `policy` file describes (lines key=KEY,
 * version=V) into *o, its strings in buf; 0, or -1 for a line it does not know.
 */
static int read_policy_options(const char *path, struct review_policy_options *o, char *buf, size_t cap)
{
	size_t len = 0;
	char *text = slurp(path, &len), *line, *save = NULL;
	int rc = 0;

	o->key = REVIEW_POLICY_KEY;
	o->version = NULL;
	if (text == NULL)
		return -1;
	snprintf(buf, cap, "%s", text);
	for (line = strtok_r(buf, "\n", &save); line != NULL; line = strtok_r(NULL, "\n", &save)) {
		if (strncmp(line, "key=", 4) == 0)
			o->key = line + 4;
		else if (strncmp(line, "version=", 8) == 0)
			o->version = line + 8;
		else
			rc = -1;
	}
	free(text);
	return rc;
}

static void run_case(const char *dir, const char *name)
{
	char path[4096], policy_buf[512];
	char *body = NULL;
	size_t len = 0, m, n_modes;
	struct config *cfg = NULL;
	struct error err = { 0 };
	struct review_policy_options policy_opts;
	json_t *request = NULL;
	int validate;

	snprintf(path, sizeof path, "%s/%s/config.yaml", dir, name);
	cfg = exists(path) ? config_load_file(path, &err) : config_default(&err);
	if (cfg == NULL) {
		fail(name, err.msg);
		failed++;
		goto out;
	}
	snprintf(path, sizeof path, "%s/%s/validate", dir, name);
	validate = exists(path);
	snprintf(path, sizeof path, "%s/%s/policy", dir, name);
	if (exists(path) && read_policy_options(path, &policy_opts, policy_buf, sizeof policy_buf) != 0) {
		fail(name, "its policy file holds a line other than key=KEY or version=V");
		failed++;
		goto out;
	}
	policy_case = exists(path) ? &policy_opts : NULL;
	snprintf(path, sizeof path, "%s/%s/modes", dir, name);
	n_modes = exists(path) ? sizeof modes / sizeof modes[0] : 1;
	if (n_modes > 1 && cfg->n_namespace_modes > 0) {
		fail(name, "a case answered in every mode cannot set namespaceModes");
		failed++;
		goto out;
	}
	snprintf(path, sizeof path, "%s/%s/claims.yaml", dir, name);
	if (exists(path)) {
		claims_text = slurp(path, &claims_len);
		if (claims_text == NULL || audit_init(&claims_held, cfg, &err) != 0 ||
		    audit_collect(&claims_held, claims_text, claims_len, &err) != 0) {
			fail(name, "cannot read claims.yaml");
			failed++;
			goto out;
		}
		claims_lookup_store.fn = policy_claim_objects_lookup;
		claims_lookup_store.ctx = &claims_held.claims;
		claims_lookup = &claims_lookup_store;
	}
	snprintf(path, sizeof path, "%s/%s/cache", dir, name);
	if (claims_lookup == NULL && exists(path)) {
		size_t state_len;
		char *state = slurp(path, &state_len);

		if (state != NULL && strcmp(state, "cold\n") == 0)
			cache_state = POLICY_CLAIM_UNKNOWN_COLD;
		else if (state != NULL && strcmp(state, "not-served\n") == 0)
			cache_state = POLICY_CLAIM_UNKNOWN_NOT_SERVED;
		else {
			free(state);
			fail(name, "cache must say cold or not-served");
			failed++;
			goto out;
		}
		free(state);
		claims_lookup_store.fn = cache_state_lookup;
		claims_lookup_store.ctx = &cache_state;
		claims_lookup = &claims_lookup_store;
	}
	snprintf(path, sizeof path, "%s/%s/request.json", dir, name);
	body = slurp(path, &len);
	if (body == NULL) {
		fail(name, "no request.json");
		failed++;
		goto out;
	}
	request = json_loadb(body, len, 0, NULL); /* may be NULL: malformed-input cases */
	for (m = 0; m < n_modes; m++) {
		if (n_modes > 1)
			cfg->mode = modes[m].mode;
		snprintf(path, sizeof path, "%s/%s/%s", dir, name, modes[m].expect);
		if (check_answer(name, path, cfg, body, len, validate, request) == 0)
			passed++;
		else
			failed++;
	}
	switch (check_trail(name, cfg, request)) {
	case 0:
		passed++;
		break;
	case -1:
		failed++;
		break;
	}
out:
	policy_case = NULL;
	claims_lookup = NULL;
	audit_free(&claims_held);
	free(claims_text);
	claims_text = NULL;
	json_decref(request);
	free(body);
	config_free(cfg);
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv)
{
	const char *dir = argc > 1 ? argv[1] : "test/golden";
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL, **grown;
	size_t n = 0, i;

	if (d == NULL) {
		perror(dir);
		printf("golden: 0 passed, 1 failed\n");
		return 1;
	}
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] == '.')
			continue;
		grown = realloc(names, (n + 1) * sizeof *names);
		if (grown == NULL || (grown[n] = strdup(e->d_name)) == NULL) {
			free(grown ? grown : names);
			closedir(d);
			return 1;
		}
		names = grown;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	for (i = 0; i < n; i++) {
		run_case(dir, names[i]);
		free(names[i]);
	}
	free(names);
	printf("golden: %d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}
