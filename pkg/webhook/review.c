#include "webhook/review.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/scan.h"
#include "policy/template.h"
#include "base/utf8.h"
#include "policy/workload.h"

#define UID_MAX 127

/* The template search must reach as deep as a review may nest, and an answer's warnings fit the API server's total. */
_Static_assert(TEMPLATE_DEPTH_MAX >= REVIEW_MAX_DEPTH, "templates are searched as deep as a review nests");
_Static_assert(REVIEW_POLICY_WARNINGS_MAX * POLICY_WARNING_MAX <= LIMIT_KUBE_WARNINGS_TOTAL,
	       "a policy answer's warnings are not truncated by the API server");

/* What kind of object a review carries, and how it is judged. */
enum review_object {
	REVIEW_OTHER = 0,  /* admitted untouched */
	REVIEW_POD,        /* kind Pod, resource pods, no subresource: the policy */
	REVIEW_WORKLOAD,   /* a built-in workload kind (apps/v1 Deployment, ...): its templates */
	REVIEW_CUSTOM      /* a custom resource the policy lists under workloads: its templates */
};

struct review_request {
	const char *api_version;  /* borrowed from the parsed body */
	const char *uid;
	const json_t *object;
	const json_t *old_object; /* UPDATE: the object as stored; NULL when absent */
	const char *ns;
	const char *username;     /* request.userInfo.username; "" when absent */
	const char *group, *kind; /* request.kind */
	enum policy_operation operation;
	enum review_object what;
};

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

static const struct scan_shape request_shape[] = {
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

static const struct scan_shape review_shape[] = {
	{ "apiVersion", SCAN_WHOLE, NULL },
	{ "kind", SCAN_WHOLE, NULL },
	{ "request", SCAN_OBJECT, request_shape },
	{ NULL, SCAN_WHOLE, NULL },
};

/* A custom resource's review, scanned again once request.kind says it is one. */
static const struct scan_shape custom_request_shape[] = {
	{ "object", SCAN_OBJECT, custom_object_shape },
	{ "oldObject", SCAN_OBJECT, custom_object_shape },
	{ NULL, SCAN_ALSO, request_shape },
};

static const struct scan_shape custom_review_shape[] = {
	{ "request", SCAN_OBJECT, custom_request_shape },
	{ NULL, SCAN_ALSO, review_shape },
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

/* ==== Encoding ==== */

static const char b64_table[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

#define BASE64_LEN(n) (((n) + 2) / 3 * 4)

/* Writes the base64 of in[0..len) to out: BASE64_LEN(len) bytes, no terminator. */
static void base64_to(const char *in, size_t len, char *out)
{
	size_t i, o = 0;

	for (i = 0; i + 2 < len; i += 3) {
		unsigned v = (unsigned char)in[i] << 16 | (unsigned char)in[i + 1] << 8 | (unsigned char)in[i + 2];
		out[o++] = b64_table[v >> 18 & 63];
		out[o++] = b64_table[v >> 12 & 63];
		out[o++] = b64_table[v >> 6 & 63];
		out[o++] = b64_table[v & 63];
	}
	if (i < len) {
		unsigned v = (unsigned char)in[i] << 16 | (i + 1 < len ? (unsigned char)in[i + 1] << 8 : 0);
		out[o++] = b64_table[v >> 18 & 63];
		out[o++] = b64_table[v >> 12 & 63];
		out[o++] = i + 1 < len ? b64_table[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
}

static char *base64(const char *in, size_t len)
{
	char *out = malloc(BASE64_LEN(len) + 1);

	if (out == NULL)
		return NULL;
	base64_to(in, len, out);
	out[BASE64_LEN(len)] = '\0';
	return out;
}

/*
 * The answer written straight into one buffer. json_dumps() costs more here
 * than decoding a 6 KB review (a strbuffer grown by a call per run of bytes,
 * and per container a loop-check hashtable entry keyed by a snprintf'd
 * pointer), and json_pack() parses its format on every call.
 *
 * The writer reproduces json_dumps(JSON_COMPACT) byte for byte for what an
 * answer holds: objects in insertion order, arrays, strings, integers,
 * true/false/null. For anything else (a real, a string that is not UTF-8,
 * a NULL string, nesting deep enough to be a loop) it gives up and the
 * answer is made by jansson, whose encoding stays the reference:
 * REVIEW_FULL_PARSE always uses it, so the golden driver and the
 * differential fuzz target compare the two on every input.
 */
struct writer {
	char *buf;   /* owned; NUL-terminated once finished */
	size_t len, cap;
	int failed;  /* out of memory, or a value only jansson encodes */
	int nomem;   /* it failed for memory: jansson would not do better (see encode()) */
};

#define WRITER_MAX_DEPTH 32  /* answers nest 4 deep; deeper is left to jansson */

/* Room for n more bytes (and a terminator); 0, or -1 once failed. */
static int w_room(struct writer *w, size_t n)
{
	size_t cap;
	char *grown;

	if (w->failed)
		return -1;
	if (w->cap - w->len > n)
		return 0;
	for (cap = w->cap ? w->cap * 2 : 1024; cap - w->len <= n; cap *= 2)
		;
	grown = realloc(w->buf, cap);
	if (grown == NULL) {
		w->failed = w->nomem = 1;
		return -1;
	}
	w->buf = grown;
	w->cap = cap;
	return 0;
}

static void w_bytes(struct writer *w, const void *p, size_t n)
{
	if (w_room(w, n) == 0) {
		memcpy(w->buf + w->len, p, n);
		w->len += n;
	}
}

#define W_LIT(w, lit) w_bytes((w), (lit), sizeof(lit) - 1)

/*
 * A string as json_dumps() writes it without flags: '"' and '\\' escaped,
 * control bytes as \b \f \n \r \t or \u00XX (upper-case hex), everything
 * else as is, '/' and UTF-8 included. jansson refuses to dump a string that
 * is not UTF-8; so does this.
 */
static void w_string(struct writer *w, const char *str, size_t len)
{
	static const char hex[] = "0123456789ABCDEF";
	const unsigned char *p = (const unsigned char *)str, *end;
	char *out;

	if (str == NULL) {
		w->failed = 1;
		return;
	}
	end = p + len;
	/* Room for the string as is and its quotes; each escape asks for more. */
	if (w_room(w, len + 2) != 0)
		return;
	out = w->buf + w->len;
	*out++ = '"';
	while (p < end) {
		size_t n;

		if (*p >= 0x20 && *p < 0x80 && *p != '"' && *p != '\\') {
			*out++ = (char)*p++;
			continue;
		}
		if (*p >= 0x80) {
			if ((n = utf8_sequence(p, end)) == 0) {
				w->failed = 1;
				return;
			}
			memcpy(out, p, n);
			out += n;
			p += n;
			continue;
		}
		w->len = (size_t)(out - w->buf);
		if (w_room(w, 6 + (size_t)(end - p) + 1) != 0)
			return;
		out = w->buf + w->len;
		*out++ = '\\';
		switch (*p) {
		case '"':  case '\\': *out++ = (char)*p; break;
		case '\b': *out++ = 'b'; break;
		case '\f': *out++ = 'f'; break;
		case '\n': *out++ = 'n'; break;
		case '\r': *out++ = 'r'; break;
		case '\t': *out++ = 't'; break;
		default:
			memcpy(out, "u00", 3);
			out[3] = hex[*p >> 4];
			out[4] = hex[*p & 15];
			out += 5;
			break;
		}
		p++;
	}
	*out++ = '"';
	w->len = (size_t)(out - w->buf);
}

static void w_cstring(struct writer *w, const char *s)
{
	w_string(w, s, s ? strlen(s) : 0);
}

static void w_integer(struct writer *w, json_int_t v)
{
	char digits[24], *p = digits + sizeof digits;
	unsigned long long u = v < 0 ? 0 - (unsigned long long)v : (unsigned long long)v;

	do
		*--p = (char)('0' + u % 10);
	while ((u /= 10) != 0);
	if (v < 0)
		*--p = '-';
	w_bytes(w, p, (size_t)(digits + sizeof digits - p));
}

static void w_value(struct writer *w, json_t *v, int depth)
{
	size_t i;
	void *it;

	if (depth > WRITER_MAX_DEPTH) {
		w->failed = 1;
		return;
	}
	switch (json_typeof(v)) {
	case JSON_OBJECT:
		W_LIT(w, "{");
		for (i = 0, it = json_object_iter(v); it != NULL && !w->failed;
		     i++, it = json_object_iter_next(v, it)) {
			if (i > 0)
				W_LIT(w, ",");
			w_string(w, json_object_iter_key(it), json_object_iter_key_len(it));
			W_LIT(w, ":");
			w_value(w, json_object_iter_value(it), depth + 1);
		}
		W_LIT(w, "}");
		break;
	case JSON_ARRAY:
		W_LIT(w, "[");
		for (i = 0; i < json_array_size(v) && !w->failed; i++) {
			if (i > 0)
				W_LIT(w, ",");
			w_value(w, json_array_get(v, i), depth + 1);
		}
		W_LIT(w, "]");
		break;
	case JSON_STRING:  w_string(w, json_string_value(v), json_string_length(v)); break;
	case JSON_INTEGER: w_integer(w, json_integer_value(v)); break;
	case JSON_TRUE:    W_LIT(w, "true"); break;
	case JSON_FALSE:   W_LIT(w, "false"); break;
	case JSON_NULL:    W_LIT(w, "null"); break;
	default:           w->failed = 1; break;  /* a real: jansson's %.17g and its tidying */
	}
}

/* The patch as json_dumps() text, base64-encoded into w. */
static void w_patch(struct writer *w, json_t *patch)
{
	struct writer text = { NULL, 0, 0, 0, 0 };

	if (!json_is_array(patch) && !json_is_object(patch)) {
		w->failed = 1;  /* json_dumps() refuses other roots without JSON_ENCODE_ANY */
		return;
	}
	w_value(&text, patch, 1);
	if (text.failed) {
		w->failed = 1;
		w->nomem |= text.nomem;
	}
	else if (w_room(w, BASE64_LEN(text.len)) == 0) {
		base64_to(text.buf, text.len, w->buf + w->len);
		w->len += BASE64_LEN(text.len);
	}
	free(text.buf);
}

/*
 * The answer (see encode()) from the writer: 0 with res filled, -1 when the
 * writer gave up on a value (nothing in res is touched), -2 when memory ran out.
 */
static int write_answer(const char *api_version, const char *uid, int allowed, enum error_kind kind,
			const char *message, const struct policy_result *pr, struct review_response *res)
{
	struct writer w = { NULL, 0, 0, 0, 0 };
	int patched = allowed && pr != NULL && pr->decision == POLICY_MUTATE && pr->patch != NULL;

	W_LIT(&w, "{\"apiVersion\":");
	w_cstring(&w, api_version);
	W_LIT(&w, ",\"kind\":\"AdmissionReview\",\"response\":{\"uid\":");
	w_cstring(&w, uid);
	if (allowed)
		W_LIT(&w, ",\"allowed\":true");
	else
		W_LIT(&w, ",\"allowed\":false");
	if (patched) {
		W_LIT(&w, ",\"patchType\":\"JSONPatch\",\"patch\":\"");
		w_patch(&w, pr->patch);
		W_LIT(&w, "\"");
	}
	if (!allowed) {
		W_LIT(&w, ",\"status\":{\"code\":");
		w_integer(&w, error_http_status(kind));
		W_LIT(&w, ",\"status\":\"Failure\",\"reason\":");
		w_cstring(&w, error_status_reason(kind));
		W_LIT(&w, ",\"message\":");
		w_cstring(&w, message);
		W_LIT(&w, "}");
	}
	if (pr != NULL && json_array_size(pr->warnings) > 0) {
		W_LIT(&w, ",\"warnings\":");
		w_value(&w, pr->warnings, 2);
	}
	if (pr != NULL && json_object_size(pr->annotations) > 0) {
		W_LIT(&w, ",\"auditAnnotations\":");
		w_value(&w, pr->annotations, 2);
	}
	W_LIT(&w, "}}");
	if (w.failed) {
		free(w.buf);
		return w.nomem ? -2 : -1;
	}
	w.buf[w.len] = '\0';  /* w_room() always keeps a byte for it */
	res->body = w.buf;
	res->len = w.len;
	res->status = error_http_status(allowed ? ERROR_NONE : kind);
	if (patched)
		res->patched = 1;
	return 0;
}

/*
 * json_dumps() of v into memory of our own (malloc), which review_response_free()
 * and free() may release: jansson allocates with whatever json_set_alloc_funcs()
 * installed (the server points it at a per-request arena), so its buffer is
 * copied out and handed back to jansson's own free. NULL when out of memory.
 */
static char *dump_compact(const json_t *v)
{
	json_malloc_t jmalloc;
	json_free_t jfree;
	char *text = json_dumps(v, JSON_COMPACT), *copy;

	if (text == NULL)
		return NULL;
	json_get_alloc_funcs(&jmalloc, &jfree);
	copy = strdup(text);
	jfree(text);
	return copy;
}

/* The answer (see encode()) from jansson: json_pack() and json_dumps(). */
static int pack_answer(const char *api_version, const char *uid, int allowed, enum error_kind kind,
		       const char *message, const struct policy_result *pr, struct review_response *res,
		       struct error *err)
{
	json_t *root = NULL, *resp;
	char *patch_text = NULL, *patch_b64 = NULL;
	int rc = -1;

	resp = json_pack("{s:s, s:b}", "uid", uid, "allowed", allowed);
	root = json_pack("{s:s, s:s, s:o}", "apiVersion", api_version, "kind", "AdmissionReview",
			 "response", resp);
	if (root == NULL)
		goto nomem;
	if (allowed && pr != NULL && pr->decision == POLICY_MUTATE && pr->patch != NULL) {
		patch_text = dump_compact(pr->patch);
		patch_b64 = patch_text ? base64(patch_text, strlen(patch_text)) : NULL;
		if (patch_b64 == NULL ||
		    json_object_set_new(resp, "patchType", json_string("JSONPatch")) != 0 ||
		    json_object_set_new(resp, "patch", json_string(patch_b64)) != 0)
			goto nomem;
		res->patched = 1;
	}
	if (!allowed &&
	    json_object_set_new(resp, "status",
				json_pack("{s:i, s:s, s:s, s:s}", "code", error_http_status(kind),
					  "status", "Failure", "reason", error_status_reason(kind),
					  "message", message)) != 0)
		goto nomem;
	if (pr != NULL && json_array_size(pr->warnings) > 0 &&
	    json_object_set(resp, "warnings", pr->warnings) != 0)
		goto nomem;
	if (pr != NULL && json_object_size(pr->annotations) > 0 &&
	    json_object_set(resp, "auditAnnotations", pr->annotations) != 0)
		goto nomem;
	res->body = dump_compact(root);
	if (res->body == NULL)
		goto nomem;
	res->len = strlen(res->body);
	res->status = error_http_status(allowed ? ERROR_NONE : kind);
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

/*
 * Builds the response AdmissionReview. kind ERROR_NONE answers with the
 * policy result (pr may be NULL for a plain allow); any other kind is a
 * refusal with message, its code and reason from pkg/base/error.c. Everything
 * passed in is borrowed. The writer makes it unless flags hold
 * REVIEW_FULL_PARSE (the reference path) or it gives up; jansson then does.
 */
static int encode(const char *api_version, const char *uid, enum error_kind kind, const char *message,
		  const struct policy_result *pr, unsigned flags, struct review_response *res,
		  struct error *err)
{
	int allowed = kind == ERROR_NONE && (pr == NULL || pr->decision != POLICY_REJECT);

	if (!allowed && kind == ERROR_NONE)
		kind = ERROR_POLICY;
	if (!(flags & REVIEW_FULL_PARSE)) {
		int rc = write_answer(api_version, uid, allowed, kind, message, pr, res);

		if (rc == 0)
			return 0;
		/* Out of memory: jansson would be short of it too, and its encoder does not report it reliably. */
		if (rc == -2) {
			error_set(err, ERROR_NOMEM, "out of memory encoding the response");
			return -1;
		}
	}
	return pack_answer(api_version, uid, allowed, kind, message, pr, res, err);
}

/* Copies src (NULL: "") into dst[cap], cut to fit, as snprintf("%s") would. */
static void copy_id(char *dst, size_t cap, const char *src)
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
 * What every review starts with: body parsed (shape: what the fast path
 * keeps), the uid read, the envelope decoded into rq (borrowing from
 * *root, which the caller releases; cfg's workloads say which custom
 * resources are judged, none when NULL). 1 when rq is ready; 0 when the
 * answer is made instead (a malformed request, refused with its uid: *rc
 * says whether encoding it worked); -1 when no answer can carry a uid (err).
 */
static int open_review(const struct config *cfg, const char *body, size_t len, const struct scan_shape *shape,
		       unsigned flags, json_t **root, struct review_request *rq, struct review_response *res, int *rc,
		       struct error *err)
{
	struct error perr;

	*root = parse(body, len, shape, flags, err);
	if (*root == NULL)
		return -1;
	if (!json_is_object(*root)) {
		error_set(err, ERROR_INPUT, "request body must be a JSON object (an AdmissionReview)");
		return -1;
	}
	rq->uid = read_uid(*root, err);
	if (rq->uid == NULL)
		return -1;
	copy_id(res->uid, sizeof res->uid, rq->uid);
	rq->api_version = json_string_value(json_object_get(*root, "apiVersion"));
	if (rq->api_version == NULL)
		rq->api_version = "";

	/* From here on every answer is an AdmissionReview carrying the uid. */
	if (decode(cfg, *root, rq, &perr) != 0) {
		const char *version = strcmp(rq->api_version, "admission.k8s.io/v1beta1") == 0
				      ? rq->api_version : "admission.k8s.io/v1";
		res->decision = POLICY_REJECT;
		*rc = encode(version, rq->uid, perr.kind, perr.msg, NULL, flags, res, err);
		return 0;
	}
	return 1;
}

/*
 * Answers a workload's review (rq decoded from the first pass): its
 * templates judged, the answer never a patch. A custom resource's templates
 * can sit anywhere, so its body is scanned again with the shape that
 * searches for them; the full parse already holds everything.
 */
static int answer_workload(const struct config *cfg, const char *body, size_t len, unsigned flags,
			   struct review_request *rq, struct review_response *res, struct error *err)
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
	if (workload_evaluate(cfg, &wreq, &wr, &perr) != 0) {
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		res->decision = POLICY_REJECT;
		rc = encode(rq->api_version, rq->uid, perr.kind, perr.msg, NULL, flags, res, err);
		goto out;
	}
	res->decision = wr.answer.decision;
	res->reason = wr.answer.reason;
	res->mode = wr.answer.mode;
	res->evaluated = 1;
	res->verdict = wr.answer.verdict;
	rc = encode(rq->api_version, rq->uid, ERROR_NONE, wr.message, &wr.answer, flags, res, err);
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
	return review_handle_lookup(cfg, body, len, flags, NULL, res, NULL, err);
}

/*
 * The pod's claims (pod and ns borrowed) looked up through lk into cs
 * (cs->v owned by the caller: free() it); the objects found are kept alive
 * in *held (new reference, or NULL), which the claims borrow from. *cold
 * gets how many could not be looked up. A pod whose claims do not read
 * (policy_claims_from_pod() refuses them) is left with cs->n 0: the engine
 * reports that input error itself. -1 only when memory runs out.
 */
static int resolve_claims(const struct review_lookup *lk, const json_t *pod, const char *ns,
			  struct policy_claims *cs, json_t **held, size_t *cold, struct error *err)
{
	size_t i, n = 0, want = json_array_size(json_object_get(json_object_get(pod, "spec"), "resourceClaims"));
	struct error ignored;

	memset(cs, 0, sizeof *cs);
	*held = NULL;
	if (want == 0 || want > POLICY_POD_CLAIMS_MAX)
		return 0;  /* none; or more than the engine reads, which it refuses itself */
	if ((cs->v = calloc(want, sizeof *cs->v)) == NULL || (*held = json_array()) == NULL)
		goto nomem;
	if (policy_claims_from_pod(pod, cs->v, want, &n, &ignored) != 0)
		return 0;
	for (i = 0; i < n; i++) {
		struct policy_claim *c = &cs->v[i];
		json_t *obj = NULL;
		int found;

		if (c->state == POLICY_CLAIM_UNKNOWN_INVALID)
			continue;
		found = lk->find(lk->ctx, c->source, ns ? ns : "", c->object, &obj);
		if (found < 0) {
			c->state = POLICY_CLAIM_UNKNOWN_COLD;
			(*cold)++;
		} else if (found == 0 || obj == NULL) {
			c->state = POLICY_CLAIM_UNKNOWN_NOT_FOUND;
			if (found > 0)
				goto nomem;
		} else {
			if (json_array_append_new(*held, obj) != 0)
				goto nomem;
			(void)policy_claim_resolve(c, obj, &ignored);  /* invalid: the state and message say so */
		}
	}
	cs->n = n;
	return 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory looking claims up");
	return -1;
}

/* The cold-cache warning, appended to the policy's own (an answer's warnings stay within the API server's total). */
static int warn_cold(struct policy_result *pr, struct error *err)
{
	if (pr->warnings == NULL || json_array_size(pr->warnings) >= REVIEW_POLICY_WARNINGS_MAX)
		return 0;
	if (json_array_append_new(pr->warnings, json_string(REVIEW_CLAIMS_COLD_WARNING)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

int review_handle_lookup(const struct config *cfg, const char *body, size_t len, unsigned flags,
			 const struct review_lookup *lk, struct review_response *res, size_t *cold_out,
			 struct error *err)
{
	struct review_request rq;
	struct policy_request preq = { 0 };
	struct policy_claims claims = { NULL, 0 };
	json_t *held = NULL;
	size_t cold = 0;
	struct policy_result pr;
	struct error perr;
	json_t *root = NULL;
	int rc = -1;

	memset(res, 0, sizeof *res);
	memset(&pr, 0, sizeof pr);
	memset(&rq, 0, sizeof rq);
	res->reason = "malformed";
	if (open_review(cfg, body, len, review_shape, flags, &root, &rq, res, &rc, err) <= 0)
		goto out;
	if (rq.what == REVIEW_OTHER || rq.object == NULL) {
		res->decision = POLICY_ALLOW;
		res->reason = rq.what == REVIEW_OTHER ? "not-judged" : "no-object";
		rc = encode(rq.api_version, rq.uid, ERROR_NONE, NULL, NULL, flags, res, err);
		goto out;
	}
	{
		const json_t *meta = json_object_get(rq.object, "metadata");
		const char *name = json_string_value(json_object_get(meta, "name"));

		copy_id(res->ns, sizeof res->ns, rq.ns ? rq.ns : json_string_value(json_object_get(meta, "namespace")));
		copy_id(res->name, sizeof res->name, name ? name : json_string_value(json_object_get(meta, "generateName")));
	}
	res->kind = template_kind_label(rq.group, rq.kind);
	copy_id(res->object_kind, sizeof res->object_kind, rq.kind);
	if (rq.what != REVIEW_POD) {
		rc = answer_workload(cfg, body, len, flags, &rq, res, err);
		goto out;
	}
	preq.pod = rq.object;
	preq.old_pod = rq.operation == POLICY_OP_UPDATE ? rq.old_object : NULL;
	preq.ns = rq.ns;
	preq.username = rq.username;
	preq.operation = rq.operation;
	preq.validate = (flags & REVIEW_VALIDATE) != 0;
	preq.daemonset = 0;
	if (lk != NULL) {
		if (resolve_claims(lk, rq.object, res->ns, &claims, &held, &cold, err) != 0)
			goto out;
		preq.claims = &claims;
	}
	if (policy_evaluate(cfg, &preq, &pr, &perr) != 0) {
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		res->decision = POLICY_REJECT;
		rc = encode(rq.api_version, rq.uid, perr.kind, perr.msg, NULL, flags, res, err);
		goto out;
	}
	if (cold > 0 && warn_cold(&pr, err) != 0)
		goto out;
	res->decision = pr.decision;
	res->reason = pr.reason;
	res->mode = pr.mode;
	res->evaluated = 1;
	res->verdict = pr.verdict;
	policy_describe_pools(&pr, ",", res->pools, sizeof res->pools);
	res->n_pools = pr.n_pools;
	rc = encode(rq.api_version, rq.uid, ERROR_NONE, pr.message, &pr, flags, res, err);
out:
	if (cold_out != NULL)
		*cold_out = cold;
	policy_result_free(&pr);
	free(claims.v);
	json_decref(held);
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

/* ==== The policy ConfigMap (POST /validate-policy) ==== */

/*
 * What a policy review reads: decode()'s members, and of the ConfigMap its
 * names, its labels and the one data key (built per call: the key is an
 * option). binaryData is read for the key only, to say where it went.
 */
struct policy_shape {
	struct scan_shape key[2], metadata[4], object[4], request[12], review[6];
};

/*
 * Copies shape src into dst (room for cap entries), member key's entry
 * replaced by an object of children. The terminator is copied as it is, so a
 * shape that goes on in another table (SCAN_ALSO) or searches (SCAN_DESCEND)
 * still does; key must be one of src's own entries, not of such a table.
 */
static void shape_swap(struct scan_shape *dst, size_t cap, const struct scan_shape *src, const char *key,
		       const struct scan_shape *children)
{
	size_t i;

	for (i = 0; i + 1 < cap && src[i].key != NULL; i++)
		dst[i] = strcmp(src[i].key, key) == 0 ? (struct scan_shape){ key, SCAN_OBJECT, children } : src[i];
	dst[i] = src[i].key == NULL ? src[i] : (struct scan_shape){ NULL, SCAN_WHOLE, NULL };
}

static void policy_shape_init(struct policy_shape *s, const char *key)
{
	static const struct scan_shape metadata[] = {
		{ "name", SCAN_WHOLE, NULL }, { "namespace", SCAN_WHOLE, NULL }, { "labels", SCAN_WHOLE, NULL },
		{ NULL, SCAN_WHOLE, NULL },
	};
	_Static_assert(sizeof request_shape <= sizeof s->request && sizeof review_shape <= sizeof s->review,
		       "room for decode()'s members");

	s->key[0] = (struct scan_shape){ key, SCAN_WHOLE, NULL };
	s->key[1] = (struct scan_shape){ NULL, SCAN_WHOLE, NULL };
	memcpy(s->metadata, metadata, sizeof metadata);
	s->object[0] = (struct scan_shape){ "metadata", SCAN_OBJECT, s->metadata };
	s->object[1] = (struct scan_shape){ "data", SCAN_OBJECT, s->key };
	s->object[2] = (struct scan_shape){ "binaryData", SCAN_OBJECT, s->key };
	s->object[3] = (struct scan_shape){ NULL, SCAN_WHOLE, NULL };
	/* decode()'s members, with the ConfigMap where the pod was. */
	shape_swap(s->request, sizeof s->request / sizeof s->request[0], request_shape, "object", s->object);
	shape_swap(s->review, sizeof s->review / sizeof s->review[0], review_shape, "request", s->request);
}

/* A ConfigMap (core v1, resource configmaps, no subresource): the only object judged. */
static int is_configmap(const json_t *req)
{
	const char *kind = json_string_value(json_object_get(json_object_get(req, "kind"), "kind"));
	const char *group = json_string_value(json_object_get(json_object_get(req, "kind"), "group"));
	const char *resource = json_string_value(json_object_get(json_object_get(req, "resource"), "resource"));
	const char *sub = json_string_value(json_object_get(req, "subResource"));

	return kind != NULL && strcmp(kind, "ConfigMap") == 0 && (group == NULL || group[0] == '\0') &&
	       (resource == NULL || strcmp(resource, "configmaps") == 0) && (sub == NULL || sub[0] == '\0');
}

/* Appends text to msg (cap bytes) whole; 0, or -1 (msg unchanged) when it does not fit. */
static int append_whole(char *msg, size_t cap, const char *text)
{
	size_t used = strlen(msg), n = strlen(text);

	if (n >= cap - used)
		return -1;
	memcpy(msg + used, text, n + 1);
	return 0;
}

/* The denial for errs: how many, then each one whole, as check-config prints them, while they fit. */
static void policy_errors_message(const char *key, const struct config_errors *errs, char *msg, size_t cap)
{
	char tail[160];
	size_t i, listed = 0;

	snprintf(msg, cap, "the policy in data[\"%s\"] has %zu error%s, as gpu-admission check-config %s "
		 "prints %s:", key, errs->total, errs->total == 1 ? "" : "s", key, errs->total == 1 ? "it" : "them");
	/* Room is kept for the count of those left out, so it is never what is cut. */
	for (i = 0; i < errs->n && listed < REVIEW_POLICY_ERRORS_MAX; i++) {
		size_t used = strlen(msg), n = strlen(errs->v[i].text);

		if (used + 1 + n >= cap - sizeof tail)
			break;
		msg[used] = '\n';
		memcpy(msg + used + 1, errs->v[i].text, n + 1);
		listed++;
	}
	if (listed < errs->total) {
		snprintf(tail, sizeof tail, "\n... and %zu more error%s (gpu-admission check-config %s lists them all)",
			 errs->total - listed, errs->total - listed == 1 ? "" : "s", key);
		append_whole(msg, cap, tail);
	}
	error_trim_utf8(msg);
}

/* Adds warning text (cut to POLICY_WARNING_MAX on a character boundary) while there is room; -1: no memory. */
static int policy_warning(json_t *warnings, const char *text, size_t n)
{
	char buf[POLICY_WARNING_MAX + 1];

	if (json_array_size(warnings) >= REVIEW_POLICY_WARNINGS_MAX)
		return 0;
	if (n > POLICY_WARNING_MAX)
		n = POLICY_WARNING_MAX;
	memcpy(buf, text, n);
	buf[n] = '\0';
	error_trim_utf8(buf);
	return json_array_append_new(warnings, json_string(buf));
}

/*
 * The verdict on text[0..n) as the policy under o->key (other: the release
 * the ConfigMap is labelled for, when not this one): pr->decision, its
 * reason and warnings, the denial in msg, the errors found in *n_errors.
 * -1 when memory ran out (err).
 */
static int judge_policy(const struct review_policy_options *o, const char *text, size_t n, const char *other,
			struct policy_result *pr, char *msg, size_t cap, size_t *n_errors, struct error *err)
{
	struct config_errors errs = { 0 };
	struct error lerr = { 0 };
	struct config *cfg = config_load_buffer_all(text, n, o->key, &errs, &lerr);
	char buf[4096];  /* config_warnings(): a few lines per misordered pool, cut beyond */
	size_t i;
	int rc = -1;

	if (cfg == NULL && lerr.kind == ERROR_NOMEM) {
		*err = lerr;
		goto out;
	}
	pr->decision = cfg != NULL || other != NULL ? POLICY_ALLOW : POLICY_REJECT;
	if (cfg != NULL) {
		const char *line;

		pr->reason = other != NULL ? "policy-other-release" : "policy-valid";
		buf[0] = '\0';
		config_warnings(cfg, buf, sizeof buf);
		/* One warning a line, as check-config prints them: "KEY: warning: ...". */
		for (line = buf; *line != '\0';) {
			char w[POLICY_WARNING_MAX + 1];
			size_t n_line = strcspn(line, "\n");

			snprintf(w, sizeof w, "%s: warning: %.*s", o->key, (int)n_line, line);
			if (policy_warning(pr->warnings, w, strlen(w)) != 0)
				goto nomem;
			line += n_line + (line[n_line] == '\n');
		}
	} else if (other != NULL) {
		/* Another release's policy: what this one finds is advice, the new replicas judge it. */
		pr->reason = "policy-other-release";
		snprintf(buf, sizeof buf, "not enforced: the ConfigMap is labelled %s=%s and this webhook runs "
			 "%s, which finds %zu error%s in it; the %s replicas judge it when they load it",
			 REVIEW_VERSION_LABEL, other, o->version, errs.total ? errs.total : 1,
			 errs.total > 1 ? "s" : "", other);
		if (policy_warning(pr->warnings, buf, strlen(buf)) != 0)
			goto nomem;
		for (i = 0; i < errs.n; i++)
			if (policy_warning(pr->warnings, errs.v[i].text, strlen(errs.v[i].text)) != 0)
				goto nomem;
		if (errs.n == 0 && policy_warning(pr->warnings, lerr.msg, strlen(lerr.msg)) != 0)
			goto nomem;
	} else {
		pr->reason = "policy-invalid";
		if (errs.total > 0)
			policy_errors_message(o->key, &errs, msg, cap);
		else  /* not a list of errors: the text could not be read at all (too large) */
			snprintf(msg, cap, "the policy in data[\"%s\"] cannot be loaded: %s", o->key, lerr.msg);
	}
	*n_errors = errs.total;
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory answering the policy review");
out:
	config_errors_free(&errs);
	config_free(cfg);
	return rc;
}

int review_policy_handle(const struct review_policy_options *o, const char *body, size_t len, unsigned flags,
			 struct review_response *res, struct error *err)
{
	struct review_request rq;
	struct policy_shape shape;
	struct policy_result pr;
	json_t *root = NULL;
	const json_t *meta, *data, *value, *bin;
	const char *other = NULL, *labelled;
	char *msg = NULL, count[32];
	size_t n_errors = 0;
	int rc = -1;

	memset(res, 0, sizeof *res);
	memset(&pr, 0, sizeof pr);
	memset(&rq, 0, sizeof rq);
	res->reason = "malformed";
	policy_shape_init(&shape, o->key);
	if (open_review(NULL, body, len, shape.review, flags, &root, &rq, res, &rc, err) <= 0)
		goto out;
	if (!is_configmap(json_object_get(root, "request")) || rq.object == NULL) {
		res->decision = POLICY_ALLOW;
		res->reason = rq.object == NULL ? "no-object" : "not-a-configmap";
		rc = encode(rq.api_version, rq.uid, ERROR_NONE, NULL, NULL, flags, res, err);
		goto out;
	}
	meta = json_object_get(rq.object, "metadata");
	copy_id(res->ns, sizeof res->ns, rq.ns ? rq.ns : json_string_value(json_object_get(meta, "namespace")));
	copy_id(res->name, sizeof res->name, json_string_value(json_object_get(meta, "name")));
	data = json_object_get(rq.object, "data");
	value = json_object_get(data, o->key);
	bin = json_object_get(rq.object, "binaryData");
	if ((data != NULL && !json_is_object(data) && !json_is_null(data)) ||
	    (value != NULL && !json_is_string(value) && !json_is_null(value))) {
		res->decision = POLICY_REJECT;
		rc = encode(rq.api_version, rq.uid, ERROR_INPUT, "request.object.data must map keys to strings",
			    NULL, flags, res, err);
		goto out;
	}
	labelled = json_string_value(json_object_get(json_object_get(meta, "labels"), REVIEW_VERSION_LABEL));
	if (o->version != NULL && labelled != NULL && strcmp(labelled, o->version) != 0)
		other = labelled;
	pr.warnings = json_array();
	pr.annotations = json_object();
	msg = malloc(REVIEW_POLICY_MESSAGE_MAX);
	if (pr.warnings == NULL || pr.annotations == NULL || msg == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory answering the policy review");
		goto out;
	}
	msg[0] = '\0';
	if (json_is_string(value)) {
		if (judge_policy(o, json_string_value(value), json_string_length(value), other, &pr, msg,
				 REVIEW_POLICY_MESSAGE_MAX, &n_errors, err) != 0)
			goto out;
	} else {
		pr.decision = POLICY_REJECT;
		pr.reason = "policy-key-missing";
		snprintf(msg, REVIEW_POLICY_MESSAGE_MAX, "data[\"%s\"] is missing%s: it holds the policy gpu-admission "
			 "serves (the key serve --policy-key names)", o->key,
			 json_object_get(bin, o->key) != NULL ? " (it is under binaryData: the policy is text, under data)"
			 : "");
	}
	/* As for pods: the API server logs them as policy.gpu-admission.azure.io/decision, ... */
	snprintf(count, sizeof count, "%zu", n_errors);
	if (json_object_set_new(pr.annotations, "decision", json_string(policy_decision_name(pr.decision))) != 0 ||
	    json_object_set_new(pr.annotations, "reason", json_string(pr.reason)) != 0 ||
	    (n_errors > 0 && json_object_set_new(pr.annotations, "errors", json_string(count)) != 0)) {
		error_set(err, ERROR_NOMEM, "out of memory answering the policy review");
		goto out;
	}
	res->decision = pr.decision;
	res->reason = pr.reason;
	rc = encode(rq.api_version, rq.uid, ERROR_NONE, msg, &pr, flags, res, err);
out:
	free(msg);
	policy_result_free(&pr);
	json_decref(root);
	return rc;
}

int review_policy_key_check(const char *key, struct error *err)
{
	size_t i, n = key != NULL ? strlen(key) : 0;

	if (n == 0 || n > REVIEW_POLICY_KEY_MAX || strcmp(key, ".") == 0 || strcmp(key, "..") == 0) {
		error_set(err, ERROR_INPUT, "a ConfigMap key has 1 to %d characters and is not \".\" or \"..\"",
			  REVIEW_POLICY_KEY_MAX);
		return -1;
	}
	for (i = 0; i < n; i++)
		if (!(isalnum((unsigned char)key[i]) || key[i] == '-' || key[i] == '_' || key[i] == '.')) {
			error_set(err, ERROR_INPUT, "\"%s\" is not a ConfigMap key: it may hold only letters, "
				  "digits, '-', '_' and '.'", key);
			return -1;
		}
	return 0;
}
