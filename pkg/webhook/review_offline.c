/*
 * review_offline: what `gpu-admission review` needs around review_handle()
 * on a terminal: a manifest's pod wrapped in the AdmissionReview the API
 * server would send, an answer read back for people (its patch decoded, its
 * message), and the patched object.
 */
#include "webhook/review.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text/manifest.h"
#include "base/base64.h"
#include "base/patch.h"

#define WRAP_UID "gpu-admission-review-wrap"
#define WRAP_USER "gpu-admission review --wrap"  /* who sends a pod no controller creates */
#define WRAP_APPLY_USER "gpu-admission review --apply"  /* who applies an object */
/*
 * Who sends a DaemonSet's pods: the DaemonSet controller, under its own
 * service account (kube-controller-manager --use-service-account-credentials,
 * cmd/kube-controller-manager/app/apps.go: ClientOrDie("daemon-set-controller")),
 * the first of the default exempt.daemonSetControllers.
 */
#define WRAP_DAEMONSET_USER "system:serviceaccount:kube-system:daemon-set-controller"

/* ==== Wrapping ==== */

/* New: the Pod a template stands for, as its controller would create it in ns. */
static json_t *pod_of(const struct template_item *t)
{
	json_t *pod, *meta;

	if (t->pod_itself) {  /* a Pod already (alone, or an item of a list) */
		pod = json_deep_copy(t->pod);
		meta = json_object_get(pod, "metadata");
		if (pod != NULL && !json_is_object(meta)) {
			meta = json_object();
			if (json_object_set_new(pod, "metadata", meta) != 0)
				goto fail;
		}
	} else {
		const json_t *tmeta = json_object_get(t->pod, "metadata");
		const json_t *labels = json_object_get(tmeta, "labels");

		/* A PodSpec held directly is judged with its object's metadata; its pods get the labels. */
		pod = json_pack("{s:s, s:s, s:o, s:O}", "apiVersion", "v1", "kind", "Pod", "metadata",
				t->own != NULL ? json_pack("{s:O*}", "labels", labels)
				: json_is_object(tmeta) ? json_deep_copy(tmeta) : json_object(),
				"spec", json_object_get(t->pod, "spec"));
		meta = json_object_get(pod, "metadata");
		/* A controller names its pods after itself, with a suffix the API server adds. */
		if (pod != NULL && json_object_get(meta, "name") == NULL &&
		    json_object_get(meta, "generateName") == NULL) {
			char gen[300];

			snprintf(gen, sizeof gen, "%s-", t->name);
			if (json_object_set_new(meta, "generateName", json_string(gen)) != 0)
				goto fail;
		}
		/* The policy knows a DaemonSet pod by its owner, as it would in the cluster. */
		if (pod != NULL && t->daemonset &&
		    json_object_set_new(meta, "ownerReferences",
					json_pack("[{s:s, s:s, s:s, s:b}]", "apiVersion", "apps/v1", "kind",
						  "DaemonSet", "name", t->name, "controller", 1)) != 0)
			goto fail;
	}
	if (pod == NULL || json_object_set_new(meta, "namespace", json_string(t->ns)) != 0)
		goto fail;
	return pod;
fail:
	json_decref(pod);
	return NULL;
}

json_t *review_wrap(const struct template_item *t, struct error *err)
{
	json_t *pod = pod_of(t), *review;
	const char *name;

	if (pod == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory wrapping the pod");
		return NULL;
	}
	name = json_string_value(json_object_get(json_object_get(pod, "metadata"), "name"));
	review = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s, s:s?, s:s, "
			   "s:{s:s}, s:o, s:b}}",
			   "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request",
			   "uid", WRAP_UID,
			   "kind", "group", "", "version", "v1", "kind", "Pod",
			   "resource", "group", "", "version", "v1", "resource", "pods",
			   "namespace", t->ns, "name", name, "operation", "CREATE",
			   "userInfo", "username", t->daemonset ? WRAP_DAEMONSET_USER : WRAP_USER,
			   "object", pod, "dryRun", 1);
	if (review == NULL)
		error_set(err, ERROR_NOMEM, "out of memory wrapping the pod");
	return review;
}

/*
 * The resource an object's kind is served as: the kind in lower case with an
 * s, every built-in workload's plural and the usual CRD plural (review reads
 * request.resource only to tell pods apart).
 */
static void resource_of(const char *kind, char *buf, size_t cap)
{
	size_t i;

	for (i = 0; kind[i] != '\0' && i + 2 < cap; i++)
		buf[i] = (char)(kind[i] >= 'A' && kind[i] <= 'Z' ? kind[i] - 'A' + 'a' : kind[i]);
	buf[i++] = 's';
	buf[i] = '\0';
}

json_t *review_wrap_object(const json_t *obj, struct error *err)
{
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const json_t *meta = json_object_get(obj, "metadata");
	const char *ns = json_string_value(json_object_get(meta, "namespace"));
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *slash = api != NULL ? strchr(api, '/') : NULL;
	char group[256], resource[128];
	json_t *copy = NULL, *review = NULL;

	if (api == NULL || kind == NULL) {
		error_set(err, ERROR_INPUT, "the object has no apiVersion and kind to be sent as");
		return NULL;
	}
	snprintf(group, sizeof group, "%.*s", slash ? (int)(slash - api) : 0, api);
	resource_of(kind, resource, sizeof resource);
	if (ns == NULL || ns[0] == '\0')
		ns = "default";
	if (meta != NULL && !json_is_object(meta)) {
		error_set(err, ERROR_INPUT, "the object's metadata is not a map");
		return NULL;
	}
	/* As the API server stores it: in the namespace it was created in. */
	copy = json_deep_copy(obj);
	if (copy != NULL && meta == NULL && json_object_set_new(copy, "metadata", json_object()) != 0) {
		json_decref(copy);
		copy = NULL;
	}
	if (copy == NULL ||
	    json_object_set_new(json_object_get(copy, "metadata"), "namespace", json_string(ns)) != 0) {
		json_decref(copy);
		error_set(err, ERROR_NOMEM, "out of memory wrapping the object");
		return NULL;
	}
	review = json_pack("{s:s, s:s, s:{s:s, s:{s:s, s:s, s:s}, s:{s:s, s:s, s:s}, s:s?, s:s, s:s, "
			   "s:{s:s}, s:o, s:b}}",
			   "apiVersion", "admission.k8s.io/v1", "kind", "AdmissionReview", "request",
			   "uid", WRAP_UID,
			   "kind", "group", group, "version", slash ? slash + 1 : api, "kind", kind,
			   "resource", "group", group, "version", slash ? slash + 1 : api, "resource", resource,
			   "name", name, "namespace", ns, "operation", "CREATE",
			   "userInfo", "username", WRAP_APPLY_USER, "object", copy, "dryRun", 1);
	if (review == NULL)
		error_set(err, ERROR_NOMEM, "out of memory wrapping the object");
	return review;
}

/* ==== Reading an answer back ==== */

/*
 * New: text[0..len) parsed, or NULL with err: ERROR_NOMEM when jansson ran
 * out of memory (or gave up before reading), else kind with what.
 */
static json_t *parse_or(const char *text, size_t len, enum error_kind kind, const char *what, struct error *err)
{
	json_error_t jerr;  /* zeroed: jansson leaves its code byte unset when it sets no error */
	json_t *root;

	memset(&jerr, 0, sizeof jerr);
	root = json_loadb(text, len, 0, &jerr);
	if (root == NULL && (json_error_code(&jerr) == json_error_out_of_memory || jerr.text[0] == '\0'))
		error_set(err, ERROR_NOMEM, "out of memory reading %s", what);
	else if (root == NULL)
		error_set(err, kind, "%s is not valid JSON: %s", what, jerr.text);
	return root;
}

int review_answer_read(const char *answer, size_t len, json_t **patch, char *message, size_t cap,
		       struct error *err)
{
	json_t *root, *resp;
	const char *b64, *msg;
	char *text = NULL;
	size_t text_len = 0;
	int rc = -1, nomem = 0;

	*patch = NULL;
	if (cap > 0)
		message[0] = '\0';
	if ((root = parse_or(answer, len, ERROR_INTERNAL, "the answer", err)) == NULL)
		return -1;
	resp = json_object_get(root, "response");
	if (!json_is_object(resp)) {
		error_set(err, ERROR_INTERNAL, "the answer is not an AdmissionReview response");
		goto out;
	}
	msg = json_string_value(json_object_get(json_object_get(resp, "status"), "message"));
	if (msg != NULL && cap > 0)
		snprintf(message, cap, "%s", msg);
	b64 = json_string_value(json_object_get(resp, "patch"));
	if (b64 == NULL) {
		if ((*patch = json_array()) == NULL)
			nomem = 1;
	} else if ((text = base64_decode(b64, strlen(b64), BASE64_STRICT, &text_len, &nomem)) != NULL) {
		if ((*patch = parse_or(text, text_len, ERROR_INTERNAL, "the answer's patch", err)) == NULL)
			goto out;
		if (!json_is_array(*patch)) {
			json_decref(*patch);
			*patch = NULL;
		}
	}
	if (*patch == NULL) {
		error_set(err, nomem ? ERROR_NOMEM : ERROR_INTERNAL, nomem ? "out of memory reading the answer's patch"
			  : "cannot read the answer's patch");
		goto out;
	}
	rc = 0;
out:
	free(text);
	json_decref(root);
	return rc;
}

json_t *review_patched_object(const char *review, size_t len, const json_t *patch, struct error *err)
{
	json_t *root = parse_or(review, len, ERROR_INPUT, "the review", err), *object;
	const json_t *in = json_object_get(json_object_get(root, "request"), "object");

	if (root == NULL)
		return NULL;
	object = json_deep_copy(in);
	if (object == NULL && json_is_object(in)) {
		json_decref(root);
		error_set(err, ERROR_NOMEM, "out of memory copying request.object");
		return NULL;
	}
	json_decref(root);
	if (!json_is_object(object)) {
		json_decref(object);
		error_set(err, ERROR_INPUT, "the review carries no request.object to patch");
		return NULL;
	}
	if (patch_apply(object, patch, err) != 0) {
		json_decref(object);
		return NULL;
	}
	return object;
}

/* ==== Telling what the input is ==== */

int review_sniff(const char *buf, size_t len, char *kind, size_t cap)
{
	struct manifest m;
	struct template_list l = { 0 };
	size_t i;
	int found = 0;
	struct error ignored;

	memset(&m, 0, sizeof m);
	if (manifest_load(buf, len, &m, &ignored) == 0) {
		for (i = 0; i < m.n_docs && !found; i++) {
			const char *k = json_string_value(json_object_get(m.docs[i].root, "kind"));

			/* A review that did not pass holds an object, but is no manifest: its own error stands. */
			if (k != NULL && strcmp(k, "AdmissionReview") == 0)
				continue;
			if (template_find(m.docs[i].root, &l, &ignored) == 0 && l.n > 0) {
				snprintf(kind, cap, "%s", l.v[0].kind);
				found = 1;
			}
			template_list_free(&l);
		}
	}
	manifest_free(&m);
	return found;
}
