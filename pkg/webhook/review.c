#include "webhook/review.h"
#include "webhook/review_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/scan.h"
#include "policy/template.h"
#include "base/utf8.h"
#include "policy/workload.h"

#define UID_MAX 127

/* The template search must reach as deep as a review may nest. */
_Static_assert(TEMPLATE_DEPTH_MAX >= REVIEW_MAX_DEPTH, "templates are searched as deep as a review nests");

/* ==== Decoding ==== */

/*
 * Every member of an AdmissionReview that decode(), the template finder and
 * the policy engine read, and nothing else: the skip-scan hands only these
 * to jansson. What the policy reads of a pod is declared once, next to its
 * reads (policy_pod_fields, ...); these tables add what review reads itself.
 * The golden driver and the differential fuzz target compare the fast path
 * with the full parse on every input, and test_policy_fields fails when the
 * policy reads a member its declaration does not keep.
 */

/* An object's metadata: the policy's, and the names the log line shows. */
static const struct scan_shape metadata_shape[] = {
	{ "name", SCAN_WHOLE, NULL },
	{ "uid", SCAN_WHOLE, NULL },
	{ "generateName", SCAN_WHOLE, NULL },
	{ NULL, SCAN_ALSO, policy_pod_metadata_fields },
};

/* CronJob's spec.jobTemplate: a Job template, whose pod template the finder reads. */
static const struct scan_shape job_spec_shape[] = {
	{ TEMPLATE_KEY, SCAN_OBJECT, policy_pod_fields },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape job_template_shape[] = {
	{ "spec", SCAN_OBJECT, job_spec_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

/*
 * A Pod's spec, or a built-in workload's: where each keeps its pod template
 * (template.c), which holds what the policy reads of a pod.
 */
static const struct scan_shape spec_shape[] = {
	{ TEMPLATE_KEY, SCAN_OBJECT, policy_pod_fields },
	{ "jobTemplate", SCAN_OBJECT, job_template_shape },
	{ NULL, SCAN_ALSO, policy_pod_spec_fields },
};

/* A Pod, or a built-in workload (PodTemplate keeps its template at the top). */
static const struct scan_shape object_shape[] = {
	{ "metadata", SCAN_OBJECT, metadata_shape },
	{ "spec", SCAN_OBJECT, spec_shape },
	{ TEMPLATE_KEY, SCAN_OBJECT, policy_pod_fields },
	{ NULL, SCAN_WHOLE, NULL },
};

/*
 * A custom resource: templates can sit anywhere (template.c's search), so
 * every member that looks like one is kept whole, found at any depth below
 * the object but in its metadata, with only the way to it.
 */
static const struct scan_shape template_search[] = {
	{ TEMPLATE_KEY, SCAN_WHOLE, NULL },
	{ "*" TEMPLATE_KEY_SUFFIX, SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape custom_object_shape[] = {
	{ "metadata", SCAN_OBJECT, metadata_shape },
	{ NULL, SCAN_DESCEND, template_search },
};

/* request.kind and request.resource: only what decode() compares. */
static const struct scan_shape group_kind_shape[] = {
	{ "group", SCAN_WHOLE, NULL },
	{ "version", SCAN_WHOLE, NULL },
	{ "kind", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape resource_shape[] = {
	{ "resource", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

/* request.userInfo: who sends the pod, for the DaemonSet exemption. */
static const struct scan_shape user_info_shape[] = {
	{ "username", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

const struct scan_shape review_request_shape[REVIEW_REQUEST_SHAPE_N] = {
	{ "uid", SCAN_WHOLE, NULL },
	{ "kind", SCAN_OBJECT, group_kind_shape },
	{ "resource", SCAN_OBJECT, resource_shape },
	{ "subResource", SCAN_WHOLE, NULL },
	{ "namespace", SCAN_WHOLE, NULL },
	{ "operation", SCAN_WHOLE, NULL },
	{ "userInfo", SCAN_OBJECT, user_info_shape },
	{ "object", SCAN_OBJECT, object_shape },
	{ "oldObject", SCAN_OBJECT, object_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

const struct scan_shape review_envelope_shape[REVIEW_ENVELOPE_SHAPE_N] = {
	{ "apiVersion", SCAN_WHOLE, NULL },
	{ "kind", SCAN_WHOLE, NULL },
	{ "request", SCAN_OBJECT, review_request_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

/* A custom resource's review, scanned again once request.kind says it is one. */
static const struct scan_shape custom_request_shape[] = {
	{ "object", SCAN_OBJECT, custom_object_shape },
	{ "oldObject", SCAN_OBJECT, custom_object_shape },
	{ NULL, SCAN_ALSO, review_request_shape },
};

static const struct scan_shape custom_review_shape[] = {
	{ "request", SCAN_OBJECT, custom_request_shape },
	{ NULL, SCAN_ALSO, review_envelope_shape },
};

/*
 * Rejects nesting deeper than REVIEW_MAX_DEPTH, and more than
 * REVIEW_MAX_VALUES values, before jansson sees the body: a cheap linear scan
 * that keeps a hostile body from costing a deep parse or hundreds of MB of
 * values. Brackets and commas inside strings are skipped. The values are
 * counted as 1 + commas + non-empty containers, which for valid JSON is
 * exactly what the skip-scan counts (the root, every member and element), so
 * both parse paths refuse the same documents.
 */
static int check_depth(const char *body, size_t len, struct error *err)
{
	size_t i, depth = 0, values = 1;
	int in_string = 0, opened = 0;

	for (i = 0; i < len; i++) {
		char c = body[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
			continue;
		}
		if (c == ' ' || c == '\n' || c == '\r' || c == '\t')
			continue;
		if (opened && c != '}' && c != ']')
			values++;  /* the first member or element of a container */
		opened = 0;
		if (c == '"') {
			in_string = 1;
		} else if (c == ',') {
			values++;
		} else if (c == '{' || c == '[') {
			opened = 1;
			if (++depth > REVIEW_MAX_DEPTH) {
				error_set(err, ERROR_INPUT, "request body nests deeper than %d levels",
					  REVIEW_MAX_DEPTH);
				return -1;
			}
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
		}
		if (values > REVIEW_MAX_VALUES) {
			error_set(err, ERROR_INPUT, "request body holds more than %d JSON values",
				  REVIEW_MAX_VALUES);
			return -1;
		}
	}
	return 0;
}

/* Reads request.uid, the one thing an error answer needs. */
static const char *read_uid(const json_t *root, struct error *err)
{
	const json_t *uid = json_object_get(json_object_get(root, "request"), "uid");
	const char *s = json_string_value(uid);

	if (!json_is_object(json_object_get(root, "request"))) {
		error_set(err, ERROR_INPUT, "AdmissionReview has no request object");
		return NULL;
	}
	if (s == NULL || s[0] == '\0') {
		error_set(err, ERROR_INPUT, "AdmissionReview request.uid is missing or not a string");
		return NULL;
	}
	if (json_string_length(uid) > UID_MAX || strlen(s) != json_string_length(uid)) {
		error_set(err, ERROR_INPUT, "AdmissionReview request.uid is not a valid uid");
		return NULL;
	}
	return s;
}

/*
 * What the review carries, by request.kind: the kind of the object as the
 * webhook receives it, after the API server converted it to the version a
 * rule of the webhook registered (matchPolicy Equivalent: an apps/v1beta2
 * Deployment arrives as apps/v1, request.kind apps/v1 Deployment, while
 * request.requestKind keeps what the client sent). request.resource names
 * the resource (pods, deployments); a subresource (status, scale, ...)
 * carries another object or another change and is never judged.
 * Built-in workloads are judged at v1, the version every rule of the chart
 * names; custom resources as the policy's workloads list them (cfg NULL: the
 * policy ConfigMap's review, which has no policy in service, lists none).
 */
static enum review_object which_object(const struct config *cfg, const char *group, const char *version,
				       const char *kind, const char *resource, const char *sub)
{
	if (kind == NULL || (sub != NULL && sub[0] != '\0'))
		return REVIEW_OTHER;
	if (strcmp(kind, "Pod") == 0 && group[0] == '\0')
		return resource == NULL || strcmp(resource, "pods") == 0 ? REVIEW_POD : REVIEW_OTHER;
	if (template_builtin(group, kind))
		return version != NULL && strcmp(version, "v1") == 0 ? REVIEW_WORKLOAD : REVIEW_OTHER;
	return cfg != NULL && config_workload_find(cfg, group, version, kind) != NULL ? REVIEW_CUSTOM : REVIEW_OTHER;
}

static int decode(const struct config *cfg, const json_t *root, struct review_request *rq, struct error *err)
{
	const json_t *req = json_object_get(root, "request");
	const json_t *kind = json_object_get(req, "kind"), *resource = json_object_get(req, "resource");
	const json_t *object = json_object_get(req, "object"), *old = json_object_get(req, "oldObject");
	const json_t *user = json_object_get(req, "userInfo");
	const json_t *username = json_object_get(user, "username");
	const char *sub = json_string_value(json_object_get(req, "subResource"));
	const char *kkind = json_string_value(json_object_get(kind, "kind"));
	const char *kgroup = json_string_value(json_object_get(kind, "group"));
	const char *kversion = json_string_value(json_object_get(kind, "version"));
	const char *rname = json_string_value(json_object_get(resource, "resource"));
	const json_t *ns = json_object_get(req, "namespace");

	if (strcmp(rq->api_version, "admission.k8s.io/v1") != 0 &&
	    strcmp(rq->api_version, "admission.k8s.io/v1beta1") != 0) {
		error_set(err, ERROR_INPUT, "apiVersion must be admission.k8s.io/v1 or v1beta1");
		return -1;
	}
	if (!json_is_string(json_object_get(root, "kind")) ||
	    strcmp(json_string_value(json_object_get(root, "kind")), "AdmissionReview") != 0) {
		error_set(err, ERROR_INPUT, "kind must be AdmissionReview");
		return -1;
	}
	if (!json_is_object(kind)) {
		error_set(err, ERROR_INPUT, "request.kind must be an object");
		return -1;
	}
	if (ns != NULL && !json_is_string(ns) && !json_is_null(ns)) {
		error_set(err, ERROR_INPUT, "request.namespace must be a string");
		return -1;
	}
	rq->ns = json_string_value(ns);
	if (policy_operation_parse(json_string_value(json_object_get(req, "operation")),
				   &rq->operation, err) != 0)
		return -1;
	rq->group = kgroup != NULL ? kgroup : "";
	rq->version = kversion;
	rq->kind = kkind;
	rq->what = which_object(cfg, rq->group, kversion, kkind, rname, sub);
	if (object != NULL && !json_is_null(object) && !json_is_object(object)) {
		error_set(err, ERROR_INPUT, "request.object must be an object");
		return -1;
	}
	rq->object = json_is_object(object) ? object : NULL;
	if (old != NULL && !json_is_null(old) && !json_is_object(old)) {
		error_set(err, ERROR_INPUT, "request.oldObject must be an object");
		return -1;
	}
	rq->old_object = json_is_object(old) ? old : NULL;
	/* kube-apiserver always sends userInfo; without it nobody vouches for the pod. */
	if ((user != NULL && !json_is_null(user) && !json_is_object(user)) ||
	    (username != NULL && !json_is_null(username) && !json_is_string(username))) {
		error_set(err, ERROR_INPUT, "request.userInfo.username must be a string");
		return -1;
	}
	rq->username = json_is_string(username) ? json_string_value(username) : "";
	return 0;
}

/* Copies src (NULL: "") into dst[cap], cut to fit, as snprintf("%s") would. */
void review_copy_id(char *dst, size_t cap, const char *src)
{
	size_t n = src != NULL ? strnlen(src, cap - 1) : 0;

	if (n > 0)
		memcpy(dst, src, n);
	dst[n] = '\0';
}

/* ==== The handler ==== */

/*
 * The document to decide on: the skip-scan's pruned tree when it can vouch
 * for the body, else jansson's full parse, which also words every error.
 */
static json_t *parse(const char *body, size_t len, const struct scan_shape *shape, unsigned flags,
		     struct error *err)
{
	json_error_t jerr;  /* zeroed below: jansson leaves its code byte unset when it sets no error */
	json_t *root;

	if (!(flags & REVIEW_FULL_PARSE)) {
		root = scan_extract_ex(body, len, shape, REVIEW_MAX_DEPTH, REVIEW_MAX_VALUES, NULL);
		if (root != NULL)
			return root;
	}
	if (check_depth(body, len, err) != 0)
		return NULL;
	memset(&jerr, 0, sizeof jerr);
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	/* No error text: json_loadb() gave up before reading (out of memory setting up its lexer). */
	if (root == NULL && (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0'))
		error_set(err, ERROR_NOMEM, "out of memory parsing the request body");
	else if (root == NULL)
		error_set(err, ERROR_INPUT, "request body is not valid JSON: line %d column %d: %s",
			  jerr.line, jerr.column, jerr.text);
	return root;
}

/*
 * What every review starts with (review_int.h): the body parsed, the uid
 * read, the envelope decoded into rq. 0 when the answer is made instead: a
 * malformed request, refused with its uid.
 */
int review_open(const struct review_open_options *o, json_t **root, struct review_request *rq,
		struct review_response *res, int *rc, struct error *err)
{
	struct error perr;

	*root = parse(o->body, o->len, o->shape, o->flags, err);
	if (*root == NULL)
		return -1;
	if (!json_is_object(*root)) {
		error_set(err, ERROR_INPUT, "request body must be a JSON object (an AdmissionReview)");
		return -1;
	}
	rq->uid = read_uid(*root, err);
	if (rq->uid == NULL)
		return -1;
	review_copy_id(res->uid, sizeof res->uid, rq->uid);
	rq->api_version = json_string_value(json_object_get(*root, "apiVersion"));
	if (rq->api_version == NULL)
		rq->api_version = "";

	/* From here on every answer is an AdmissionReview carrying the uid. */
	if (decode(o->cfg, *root, rq, &perr) != 0) {
		const char *version = strcmp(rq->api_version, "admission.k8s.io/v1beta1") == 0
				      ? rq->api_version : "admission.k8s.io/v1";
		res->decision = POLICY_REJECT;
		*rc = review_encode(version, rq->uid, perr.kind, perr.msg, NULL, o->flags, res, err);
		return 0;
	}
	return 1;
}

/*
 * Keeps what the Event of a refused UPDATE names (events.h): nobody reads a
 * controller's refused write but its log, so serve publishes it.
 */
static void note_refusal(const struct review_request *rq, const char *message, struct review_response *res)
{
	struct events_object *o = &res->refused_object;
	const json_t *meta = json_object_get(rq->object, "metadata");
	const json_t *labels = json_object_get(meta, "labels");

	if (res->decision != POLICY_REJECT || rq->operation != POLICY_OP_UPDATE || rq->version == NULL)
		return;
	res->refused = 1;
	if (rq->group[0] != '\0')
		snprintf(o->api_version, sizeof o->api_version, "%s/%s", rq->group, rq->version);
	else
		review_copy_id(o->api_version, sizeof o->api_version, rq->version);
	review_copy_id(o->kind, sizeof o->kind, rq->kind);
	review_copy_id(o->ns, sizeof o->ns, res->ns);
	review_copy_id(o->name, sizeof o->name, json_string_value(json_object_get(meta, "name")));
	review_copy_id(o->uid, sizeof o->uid, json_string_value(json_object_get(meta, "uid")));
	o->queued = json_is_string(json_object_get(labels, EVENTS_KUEUE_QUEUE_LABEL));
	review_copy_id(res->refused_message, sizeof res->refused_message, message);
}

/*
 * Answers a workload's review (rq decoded from the first pass): its
 * templates judged, the answer never a patch. A custom resource's templates
 * can sit anywhere, so its body is scanned again with the shape that
 * searches for them; the full parse already holds everything.
 */
static int answer_workload(const struct config *cfg, const char *body, size_t len, unsigned flags,
			   const struct policy_claim_lookup *lk, struct review_request *rq,
			   struct review_response *res, struct error *err)
{
	struct workload_request wreq = { 0 };
	struct workload_result wr;
	struct error perr;
	json_t *custom = NULL;
	int rc = -1;

	memset(&wr, 0, sizeof wr);
	if (rq->what == REVIEW_CUSTOM && !(flags & REVIEW_FULL_PARSE)) {
		const json_t *req;

		if ((custom = parse(body, len, custom_review_shape, flags, err)) == NULL)
			goto out;
		req = json_object_get(custom, "request");
		rq->object = json_object_get(req, "object");
		rq->old_object = json_is_object(json_object_get(req, "oldObject")) ? json_object_get(req, "oldObject")
			       : NULL;
	}
	wreq.object = rq->object;
	wreq.old_object = rq->operation == POLICY_OP_UPDATE ? rq->old_object : NULL;
	wreq.group = rq->group;
	wreq.kind = rq->kind;
	wreq.ns = rq->ns;
	wreq.operation = rq->operation;
	wreq.claims = lk;
	wreq.mutate = !(flags & REVIEW_VALIDATE);
	if (workload_evaluate(cfg, &wreq, &wr, &perr) != 0) {
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		res->decision = POLICY_REJECT;
		rc = review_encode(rq->api_version, rq->uid, perr.kind, perr.msg, NULL, flags, res, err);
		goto out;
	}
	res->decision = wr.answer.decision;
	res->reason = wr.answer.reason;
	res->mode = wr.answer.mode;
	res->evaluated = 1;
	res->verdict = wr.answer.verdict;
	note_refusal(rq, wr.message, res);
	rc = review_encode(rq->api_version, rq->uid, ERROR_NONE, wr.message, &wr.answer, flags, res, err);
out:
	workload_result_free(&wr);
	json_decref(custom);
	return rc;
}

int review_handle(const struct config *cfg, const char *body, size_t len, int validate,
		  struct review_response *res, struct error *err)
{
	return review_handle_ex(cfg, body, len, validate ? REVIEW_VALIDATE : 0, res, err);
}

int review_handle_ex(const struct config *cfg, const char *body, size_t len, unsigned flags,
		     struct review_response *res, struct error *err)
{
	return review_handle_claims(cfg, body, len, flags, NULL, res, err);
}

/* The namespace a pod's claims are looked up in: the request's, else the pod's own, else "default". */
static const char *claims_ns(const struct review_request *rq)
{
	const char *ns = rq->ns;

	if (ns == NULL || ns[0] == '\0')
		ns = json_string_value(json_object_get(json_object_get(rq->object, "metadata"), "namespace"));
	return ns != NULL && ns[0] != '\0' ? ns : "default";
}

int review_handle_claims(const struct config *cfg, const char *body, size_t len, unsigned flags,
			 const struct policy_claim_lookup *lk, struct review_response *res, struct error *err)
{
	struct review_request rq;
	struct policy_request preq = { 0 };
	struct policy_claims claims = { 0 };
	struct policy_result pr;
	struct error perr;
	json_t *root = NULL;
	int rc = -1;

	static const struct policy_claim_lookup off = { NULL, NULL, REVIEW_CLAIMS_OFF };

	memset(res, 0, sizeof *res);
	memset(&pr, 0, sizeof pr);
	memset(&rq, 0, sizeof rq);
	/* No lookups here is a webhook's without them: its answer names the setting. */
	if (lk == NULL)
		lk = &off;
	res->reason = "malformed";
	if (review_open(&(const struct review_open_options){ .cfg = cfg, .body = body, .len = len,
							    .shape = review_envelope_shape, .flags = flags },
			&root, &rq, res, &rc, err) <= 0)
		goto out;
	if (rq.what == REVIEW_OTHER || rq.object == NULL) {
		res->decision = POLICY_ALLOW;
		res->reason = rq.what == REVIEW_OTHER ? "not-judged" : "no-object";
		rc = review_encode(rq.api_version, rq.uid, ERROR_NONE, NULL, NULL, flags, res, err);
		goto out;
	}
	{
		const json_t *meta = json_object_get(rq.object, "metadata");
		const char *name = json_string_value(json_object_get(meta, "name"));

		review_copy_id(res->ns, sizeof res->ns, rq.ns ? rq.ns : json_string_value(json_object_get(meta, "namespace")));
		review_copy_id(res->name, sizeof res->name, name ? name : json_string_value(json_object_get(meta, "generateName")));
	}
	res->kind = template_kind_label(rq.group, rq.kind);
	review_copy_id(res->object_kind, sizeof res->object_kind, rq.kind);
	if (rq.what != REVIEW_POD) {
		rc = answer_workload(cfg, body, len, flags, lk, &rq, res, err);
		goto out;
	}
	preq.pod = rq.object;
	preq.old_pod = rq.operation == POLICY_OP_UPDATE ? rq.old_object : NULL;
	preq.ns = rq.ns;
	preq.username = rq.username;
	preq.operation = rq.operation;
	preq.validate = (flags & REVIEW_VALIDATE) != 0;
	preq.daemonset = 0;
	/* A pod whose claims cannot be read is refused by the policy below, with the same error. */
	if (policy_claims_resolve_pod(rq.object, claims_ns(&rq), lk, &claims, &perr) == 0)
		preq.claims = &claims;
	else if (perr.kind == ERROR_NOMEM) {
		*err = perr;
		goto out;
	}
	if (policy_evaluate(cfg, &preq, &pr, &perr) != 0) {
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		res->decision = POLICY_REJECT;
		rc = review_encode(rq.api_version, rq.uid, perr.kind, perr.msg, NULL, flags, res, err);
		goto out;
	}
	res->decision = pr.decision;
	res->reason = pr.reason;
	res->mode = pr.mode;
	res->evaluated = 1;
	res->verdict = pr.verdict;
	res->unreached = pr.unreached;
	policy_describe_pools(&pr, ",", res->pools, sizeof res->pools);
	res->n_pools = pr.n_pools;
	note_refusal(&rq, pr.message, res);
	rc = review_encode(rq.api_version, rq.uid, ERROR_NONE, pr.message, &pr, flags, res, err);
out:
	policy_claims_free(&claims);
	policy_result_free(&pr);
	json_decref(root);
	return rc;
}

void review_response_free(struct review_response *res)
{
	if (res == NULL)
		return;
	free(res->body);
	memset(res, 0, sizeof *res);
}
