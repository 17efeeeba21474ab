#include "webhook/review.h"
#include "webhook/review_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/utf8.h"

/* An answer's warnings fit the API server's total. */
_Static_assert(REVIEW_POLICY_WARNINGS_MAX * POLICY_WARNING_MAX <= LIMIT_KUBE_WARNINGS_TOTAL,
	       "a policy answer's warnings are not truncated by the API server");

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
	_Static_assert(sizeof review_request_shape <= sizeof s->request && sizeof review_envelope_shape <= sizeof s->review,
		       "room for decode()'s members");

	s->key[0] = (struct scan_shape){ key, SCAN_WHOLE, NULL };
	s->key[1] = (struct scan_shape){ NULL, SCAN_WHOLE, NULL };
	memcpy(s->metadata, metadata, sizeof metadata);
	s->object[0] = (struct scan_shape){ "metadata", SCAN_OBJECT, s->metadata };
	s->object[1] = (struct scan_shape){ "data", SCAN_OBJECT, s->key };
	s->object[2] = (struct scan_shape){ "binaryData", SCAN_OBJECT, s->key };
	s->object[3] = (struct scan_shape){ NULL, SCAN_WHOLE, NULL };
	/* decode()'s members, with the ConfigMap where the pod was. */
	shape_swap(s->request, sizeof s->request / sizeof s->request[0], review_request_shape, "object", s->object);
	shape_swap(s->review, sizeof s->review / sizeof s->review[0], review_envelope_shape, "request", s->request);
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
	/* No policy's workloads: the object is a ConfigMap, never a custom resource to judge. */
	if (review_open(&(const struct review_open_options){ .cfg = NULL, .body = body, .len = len,
							    .shape = shape.review, .flags = flags },
			&root, &rq, res, &rc, err) <= 0)
		goto out;
	if (!is_configmap(json_object_get(root, "request")) || rq.object == NULL) {
		res->decision = POLICY_ALLOW;
		res->reason = rq.object == NULL ? "no-object" : "not-a-configmap";
		rc = review_encode(rq.api_version, rq.uid, ERROR_NONE, NULL, NULL, flags, res, err);
		goto out;
	}
	meta = json_object_get(rq.object, "metadata");
	review_copy_id(res->ns, sizeof res->ns, rq.ns ? rq.ns : json_string_value(json_object_get(meta, "namespace")));
	review_copy_id(res->name, sizeof res->name, json_string_value(json_object_get(meta, "name")));
	data = json_object_get(rq.object, "data");
	value = json_object_get(data, o->key);
	bin = json_object_get(rq.object, "binaryData");
	if ((data != NULL && !json_is_object(data) && !json_is_null(data)) ||
	    (value != NULL && !json_is_string(value) && !json_is_null(value))) {
		res->decision = POLICY_REJECT;
		rc = review_encode(rq.api_version, rq.uid, ERROR_INPUT, "request.object.data must map keys to strings",
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
	rc = review_encode(rq.api_version, rq.uid, ERROR_NONE, msg, &pr, flags, res, err);
out:
	free(msg);
	policy_result_free(&pr);
	json_decref(root);
	return rc;
}

int review_policy_key_check(const char *key, struct error *err)
{
	const char *why = k8s_name_configmap_key(key);

	if (why == NULL)
		return 0;
	/* Quoted back only when short enough to read. */
	if (key != NULL && strlen(key) <= K8S_NAME_CONFIGMAP_KEY_MAX)
		error_set(err, ERROR_INPUT, "\"%s\" is not a ConfigMap key: it %s", key, why);
	else
		error_set(err, ERROR_INPUT, "a ConfigMap key %s", why);
	return -1;
}
