/* review_offline: wrapping a manifest's pod, reading an answer back, telling a Pod from a review. */
#include <stdlib.h>

#include "check.h"
#include "text/manifest.h"
#include "webhook/review.h"

static const char deployment[] =
	"apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web, namespace: shop}\n"
	"spec:\n  template:\n    metadata: {labels: {app: web}}\n    spec: {containers: [{name: w, image: x}]}\n";

static void test_wrap_template(void)
{
	struct manifest m;
	struct template_list l = { 0 };
	struct error err = { 0 };
	json_t *r = NULL, *req, *pod;

	memset(&m, 0, sizeof m);
	CHECK_INT(manifest_load(deployment, strlen(deployment), &m, &err), 0);
	CHECK_INT(template_find(m.docs[0].root, &l, &err), 0);
	CHECK_INT(l.n, 1);
	if (l.n == 1)
		r = review_wrap(&l.v[0], &err);
	CHECK(r != NULL);
	req = json_object_get(r, "request");
	pod = json_object_get(req, "object");
	CHECK_STR(json_string_value(json_object_get(r, "apiVersion")), "admission.k8s.io/v1");
	CHECK_STR(json_string_value(json_object_get(req, "operation")), "CREATE");
	CHECK_STR(json_string_value(json_object_get(req, "namespace")), "shop");
	CHECK_STR(json_string_value(json_object_get(json_object_get(req, "resource"), "resource")), "pods");
	CHECK_STR(json_string_value(json_object_get(pod, "kind")), "Pod");
	/* As the ReplicaSet would create it: named after its controller, in its namespace, labels kept. */
	CHECK_STR(json_string_value(json_object_get(json_object_get(pod, "metadata"), "generateName")), "web-");
	CHECK_STR(json_string_value(json_object_get(json_object_get(pod, "metadata"), "namespace")), "shop");
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(pod, "metadata"), "labels"), "app")), "web");
	CHECK(json_is_array(json_object_get(json_object_get(pod, "spec"), "containers")));
	/* Not a DaemonSet's pod: sent by someone the policy does not vouch for. */
	CHECK_STR(json_string_value(json_object_get(json_object_get(req, "userInfo"), "username")),
		  "gpu-admission review --wrap");
	json_decref(r);
	template_list_free(&l);
	manifest_free(&m);
}

static void test_wrap_daemonset_pod_is_owned(void)
{
	static const char ds[] = "kind: DaemonSet\nmetadata: {name: plugin}\n"
				 "spec: {template: {spec: {containers: [{name: p}]}}}\n";
	struct manifest m;
	struct template_list l = { 0 };
	struct error err = { 0 };
	json_t *r = NULL, *ref;

	memset(&m, 0, sizeof m);
	CHECK_INT(manifest_load(ds, strlen(ds), &m, &err), 0);
	if (template_find(m.docs[0].root, &l, &err) == 0 && l.n == 1)
		r = review_wrap(&l.v[0], &err);
	ref = json_array_get(json_object_get(json_object_get(json_object_get(json_object_get(r, "request"),
		"object"), "metadata"), "ownerReferences"), 0);
	CHECK_STR(json_string_value(json_object_get(ref, "kind")), "DaemonSet");
	CHECK_STR(json_string_value(json_object_get(ref, "name")), "plugin");
	CHECK_STR(json_string_value(json_object_get(json_object_get(r, "request"), "namespace")), "default");
	/* Sent by the DaemonSet controller, as in the cluster: the exemption trusts no one else. */
	CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(r, "request"), "userInfo"),
						    "username")),
		  "system:serviceaccount:kube-system:daemon-set-controller");
	json_decref(r);
	template_list_free(&l);
	manifest_free(&m);
}

static void test_answer_read(void)
{
	/* [{"op":"add","path":"/a","value":1}] */
	static const char allowed[] = "{\"response\":{\"uid\":\"u\",\"allowed\":true,\"patchType\":\"JSONPatch\","
				      "\"patch\":\"W3sib3AiOiJhZGQiLCJwYXRoIjoiL2EiLCJ2YWx1ZSI6MX1d\"}}";
	static const char rejected[] = "{\"response\":{\"uid\":\"u\",\"allowed\":false,"
				       "\"status\":{\"code\":403,\"message\":\"no\"}}}";
	static const char garbled[] = "{\"response\":{\"patch\":\"W3s=b3Ai\"}}";
	struct error err = { 0 };
	char message[64];
	json_t *patch = NULL, *patched;

	CHECK_INT(review_answer_read(allowed, strlen(allowed), &patch, message, sizeof message, &err), 0);
	CHECK_INT(json_array_size(patch), 1);
	CHECK_STR(json_string_value(json_object_get(json_array_get(patch, 0), "path")), "/a");
	CHECK_STR(message, "");
	patched = review_patched_object("{\"request\":{\"object\":{\"b\":2}}}", 30, patch, &err);
	CHECK(patched != NULL && json_integer_value(json_object_get(patched, "a")) == 1);
	json_decref(patched);
	CHECK(review_patched_object("{\"request\":{}}", 14, patch, &err) == NULL);
	json_decref(patch);
	CHECK_INT(review_answer_read(rejected, strlen(rejected), &patch, message, sizeof message, &err), 0);
	CHECK_INT(json_array_size(patch), 0);
	CHECK_STR(message, "no");
	json_decref(patch);
	CHECK_INT(review_answer_read(garbled, strlen(garbled), &patch, message, sizeof message, &err), -1);
	CHECK(patch == NULL);
	CHECK_INT(review_answer_read("[]", 2, &patch, message, sizeof message, &err), -1);
}

static void test_sniff(void)
{
	static const char review[] = "{\"apiVersion\":\"admission.k8s.io/v1\",\"kind\":\"AdmissionReview\","
				     "\"request\":{\"uid\":\"u\"}}";
	char kind[32] = "";

	CHECK_INT(review_sniff(deployment, strlen(deployment), kind, sizeof kind), 1);
	CHECK_STR(kind, "Deployment");
	CHECK_INT(review_sniff(review, strlen(review), kind, sizeof kind), 0);
	CHECK_INT(review_sniff("not: [valid", 11, kind, sizeof kind), 0);
}

int main(void)
{
	RUN(test_wrap_template);
	RUN(test_wrap_daemonset_pod_is_owned);
	RUN(test_answer_read);
	RUN(test_sniff);
	return check_done("review_offline");
}
