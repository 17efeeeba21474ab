#include "review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "scan.h"

#define UID_MAX 127

struct review_request {
	const char *api_version;  /* borrowed from the parsed body */
	const char *uid;
	const json_t *object;
	const char *ns;
	enum policy_operation operation;
	int is_pod;               /* kind Pod, resource pods, no subresource */
};

/* ==== Decoding ==== */

/*
 * Every member of an AdmissionReview that decode() and the policy engine
 * read, and nothing else: the skip-scan hands only these to jansson. A member
 * read anywhere but listed here would silently read as absent on the fast
 * path; the golden driver and the differential fuzz target compare both
 * paths on every input to catch exactly that.
 */
static const struct scan_shape container_shape[] = {
	{ "name", SCAN_WHOLE, NULL },
	{ "restartPolicy", SCAN_WHOLE, NULL },
	{ "resources", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape spec_shape[] = {
	{ "containers", SCAN_ARRAY_OF_OBJECTS, container_shape },
	{ "initContainers", SCAN_ARRAY_OF_OBJECTS, container_shape },
	{ "tolerations", SCAN_WHOLE, NULL },
	{ "nodeSelector", SCAN_WHOLE, NULL },
	{ "affinity", SCAN_WHOLE, NULL },
	{ "nodeName", SCAN_WHOLE, NULL },
	{ "resourceClaims", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape metadata_shape[] = {
	{ "name", SCAN_WHOLE, NULL },
	{ "generateName", SCAN_WHOLE, NULL },
	{ "namespace", SCAN_WHOLE, NULL },
	{ "labels", SCAN_WHOLE, NULL },
	{ "ownerReferences", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape object_shape[] = {
	{ "metadata", SCAN_OBJECT, metadata_shape },
	{ "spec", SCAN_OBJECT, spec_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape request_shape[] = {
	{ "uid", SCAN_WHOLE, NULL },
	{ "kind", SCAN_WHOLE, NULL },
	{ "resource", SCAN_WHOLE, NULL },
	{ "subResource", SCAN_WHOLE, NULL },
	{ "namespace", SCAN_WHOLE, NULL },
	{ "operation", SCAN_WHOLE, NULL },
	{ "object", SCAN_OBJECT, object_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

static const struct scan_shape review_shape[] = {
	{ "apiVersion", SCAN_WHOLE, NULL },
	{ "kind", SCAN_WHOLE, NULL },
	{ "request", SCAN_OBJECT, request_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

/*
 * Rejects nesting deeper than REVIEW_MAX_DEPTH before jansson sees the body:
 * a cheap linear scan that keeps a hostile body from costing a deep parse.
 * Brackets inside strings are skipped.
 */
static int check_depth(const char *body, size_t len, struct error *err)
{
	size_t i, depth = 0;
	int in_string = 0;

	for (i = 0; i < len; i++) {
		char c = body[i];

		if (in_string) {
			if (c == '\\')
				i++;
			else if (c == '"')
				in_string = 0;
		} else if (c == '"') {
			in_string = 1;
		} else if (c == '{' || c == '[') {
			if (++depth > REVIEW_MAX_DEPTH) {
				error_set(err, ERROR_INPUT, "request body nests deeper than %d levels",
					  REVIEW_MAX_DEPTH);
				return -1;
			}
		} else if ((c == '}' || c == ']') && depth > 0) {
			depth--;
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

static int decode(const json_t *root, struct review_request *rq, struct error *err)
{
	const json_t *req = json_object_get(root, "request");
	const json_t *kind = json_object_get(req, "kind"), *resource = json_object_get(req, "resource");
	const json_t *object = json_object_get(req, "object");
	const char *sub = json_string_value(json_object_get(req, "subResource"));
	const char *kkind = json_string_value(json_object_get(kind, "kind"));
	const char *kgroup = json_string_value(json_object_get(kind, "group"));
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
	rq->is_pod = kkind != NULL && strcmp(kkind, "Pod") == 0 && (kgroup == NULL || kgroup[0] == '\0') &&
		     (rname == NULL || strcmp(rname, "pods") == 0) && (sub == NULL || sub[0] == '\0');
	if (object != NULL && !json_is_null(object) && !json_is_object(object)) {
		error_set(err, ERROR_INPUT, "request.object must be an object");
		return -1;
	}
	rq->object = json_is_object(object) ? object : NULL;
	return 0;
}

/* ==== Encoding ==== */

static char *base64(const char *in, size_t len)
{
	static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	size_t i, o = 0;
	char *out = malloc((len + 2) / 3 * 4 + 1);

	if (out == NULL)
		return NULL;
	for (i = 0; i + 2 < len; i += 3) {
		unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
		out[o++] = tbl[v >> 6 & 63];
		out[o++] = tbl[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned char)in[i] << 16 | (i + 1 < len ? (unsigned char)in[i + 1] << 8 : 0);
		out[o++] = tbl[v >> 18 & 63];
		out[o++] = tbl[v >> 12 & 63];
		out[o++] = i + 1 < len ? tbl[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
	out[o] = '\0';
	return out;
}

/*
 * Builds the response AdmissionReview. kind ERROR_NONE answers with the
 * policy result (pr may be NULL for a plain allow); any other kind is a
 * refusal with message, its code and reason from pkg/error.c. Everything
 * passed in is borrowed.
 */
static int encode(const char *api_version, const char *uid, enum error_kind kind, const char *message,
		  const struct policy_result *pr, struct review_response *res, struct error *err)
{
	json_t *root = NULL, *resp;
	char *patch_text = NULL, *patch_b64 = NULL;
	int allowed = kind == ERROR_NONE && (pr == NULL || pr->decision != POLICY_REJECT);
	int status, rc = -1;

	resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", allowed);
	root = json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", "AdmissionReview",
			 "response", resp);
	if (root == NULL)
		goto nomem;
	if (allowed && pr != NULL && pr->decision == POLICY_MUTATE && pr->patch != NULL) {
		patch_text = json_dumps(pr->patch, JSON_COMPACT);
		patch_b64 = patch_text ? base64(patch_text, strlen(patch_text)) : NULL;
		if (patch_b64 == NULL ||
		    json_object_set_new(resp, "patchType", json_string("JSONPatch")) != 0 ||
		    json_object_set_new(resp, "patch", json_string(patch_b64)) != 0)
			goto nomem;
		res->patched = 1;
	}
	if (!allowed) {
		if (kind == ERROR_NONE)
			kind = ERROR_POLICY;
		if (json_object_set_new(resp, "status",
					json_pack("{s:i, s:s, s:s, s:s}", "code", error_http_status(kind),
						  "status", "Failure", "reason", error_status_reason(kind),
						  "message", message)) != 0)
			goto nomem;
	}
	status = error_http_status(allowed ? ERROR_NONE : kind);
	if (pr != NULL && json_array_size(pr->warnings) > 0 &&
	    json_object_set(resp, "warnings", pr->warnings) != 0)
		goto nomem;
	if (pr != NULL && json_object_size(pr->annotations) > 0 &&
	    json_object_set(resp, "auditAnnotations", pr->annotations) != 0)
		goto nomem;
	res->body = json_dumps(root, JSON_COMPACT);
	if (res->body == NULL)
		goto nomem;
	res->len = strlen(res->body);
	res->status = status;
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory encoding the response");
out:
	free(patch_text);
	free(patch_b64);
	json_decref(root);
	return rc;
}

static void copy_id(char *dst, size_t cap, const char *src)
{
	snprintf(dst, cap, "%s", src ? src : "");
}

/* ==== The handler ==== */

/*
 * The document to decide on: the skip-scan's pruned tree when it can vouch
 * for the body, else jansson's full parse, which also words every error.
 */
static json_t *parse(const char *body, size_t len, unsigned flags, struct error *err)
{
	json_error_t jerr;
	json_t *root;

	if (!(flags & REVIEW_FULL_PARSE)) {
		root = scan_extract(body, len, review_shape, REVIEW_MAX_DEPTH);
		if (root != NULL)
			return root;
	}
	if (check_depth(body, len, err) != 0)
		return NULL;
	root = json_loadb(body, len, JSON_REJECT_DUPLICATES, &jerr);
	if (root == NULL)
		error_set(err, ERROR_INPUT, "request body is not valid JSON: line %d column %d: %s",
			  jerr.line, jerr.column, jerr.text);
	return root;
}

int review_handle(const struct config *cfg, const char *body, size_t len, int validate,
		  struct review_response *res, struct error *err)
{
	return review_handle_ex(cfg, body, len, validate ? REVIEW_VALIDATE : 0, res, err);
}

int review_handle_ex(const struct config *cfg, const char *body, size_t len, unsigned flags,
		     struct review_response *res, struct error *err)
{
	struct review_request rq;
	struct policy_request preq;
	struct policy_result pr;
	struct error perr;
	json_t *root = NULL;
	int rc = -1;

	memset(res, 0, sizeof *res);
	memset(&pr, 0, sizeof pr);
	memset(&rq, 0, sizeof rq);
	res->reason = "malformed";
	root = parse(body, len, flags, err);
	if (root == NULL)
		goto out;
	if (!json_is_object(root)) {
		error_set(err, ERROR_INPUT, "request body must be a JSON object (an AdmissionReview)");
		goto out;
	}
	rq.uid = read_uid(root, err);
	if (rq.uid == NULL)
		goto out;
	copy_id(res->uid, sizeof res->uid, rq.uid);
	rq.api_version = json_string_value(json_object_get(root, "apiVersion"));
	if (rq.api_version == NULL)
		rq.api_version = "";

	/* From here on every answer is an AdmissionReview carrying the uid. */
	if (decode(root, &rq, &perr) != 0) {
		const char *version = strcmp(rq.api_version, "admission.k8s.io/v1beta1") == 0
				      ? rq.api_version : "admission.k8s.io/v1";
		res->decision = POLICY_REJECT;
		rc = encode(version, rq.uid, perr.kind, perr.msg, NULL, res, err);
		goto out;
	}
	if (!rq.is_pod || rq.object == NULL) {
		res->decision = POLICY_ALLOW;
		res->reason = rq.is_pod ? "no-object" : "not-a-pod";
		rc = encode(rq.api_version, rq.uid, ERROR_NONE, NULL, NULL, res, err);
		goto out;
	}
	{
		const json_t *meta = json_object_get(rq.object, "metadata");
		const char *name = json_string_value(json_object_get(meta, "name"));

		copy_id(res->ns, sizeof res->ns, rq.ns ? rq.ns : json_string_value(json_object_get(meta, "namespace")));
		copy_id(res->name, sizeof res->name, name ? name : json_string_value(json_object_get(meta, "generateName")));
	}
	preq.pod = rq.object;
	preq.ns = rq.ns;
	preq.operation = rq.operation;
	preq.validate = (flags & REVIEW_VALIDATE) != 0;
	preq.daemonset = 0;
	if (policy_evaluate(cfg, &preq, &pr, &perr) != 0) {
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		res->decision = POLICY_REJECT;
		rc = encode(rq.api_version, rq.uid, perr.kind, perr.msg, NULL, res, err);
		goto out;
	}
	res->decision = pr.decision;
	res->reason = pr.reason;
	res->mode = pr.mode;
	rc = encode(rq.api_version, rq.uid, ERROR_NONE, pr.message, &pr, res, err);
out:
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
