/* The pod-template finder and judge that audit and the webhook share. */
#include <stdlib.h>

#include "check.h"
#include "policy/config.h"
#include "policy/template.h"

static json_t *parse(const char *text)
{
	json_t *v = json_loads(text, 0, NULL);

	if (v == NULL)
		fprintf(stderr, "  bad JSON in test: %s\n", text);
	return v;
}

/* The built-in kinds at their one place, by API group; another group's kind of that name is searched. */
static void test_builtin_by_group(void)
{
	json_t *o = parse("{\"apiVersion\":\"batch/v1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"j\"},\"spec\":{"
			  "\"template\":{\"spec\":{\"containers\":[]}},"
			  "\"other\":{\"template\":{\"spec\":{\"containers\":[]}}}}}");
	json_t *v = parse("{\"apiVersion\":\"batch.volcano.sh/v1alpha1\",\"kind\":\"Job\",\"metadata\":{\"name\":\"vj\"},"
			  "\"spec\":{\"tasks\":[{\"name\":\"w\",\"template\":{\"spec\":{\"containers\":[]}}}]}}");
	struct template_list l = { 0 };
	struct error err = { 0 };

	CHECK_INT(template_find(o, &l, &err), 0);
	CHECK_INT(l.n, 1);  /* spec.template only: a built-in kind is not searched */
	if (l.n == 1)
		CHECK_STR(l.v[0].path, "spec.template");
	template_list_free(&l);
	CHECK_INT(template_find(v, &l, &err), 0);
	CHECK_INT(l.n, 1);
	if (l.n == 1) {
		CHECK_STR(l.v[0].path, "spec.tasks[0].template");
		CHECK_STR(l.v[0].kind, "Job");
	}
	template_list_free(&l);
	/* By request.kind: the same objects, told their group. */
	CHECK_INT(template_find_object(v, "batch", "Job", &l, &err), 0);
	CHECK_INT(l.n, 0);  /* as a batch Job it has no spec.template */
	template_list_free(&l);
	CHECK(template_builtin("apps", "Deployment") && template_builtin("", "PodTemplate"));
	CHECK(!template_builtin("apps.kruise.io", "DaemonSet") && !template_builtin("", "Deployment"));
	CHECK_STR(template_kind_label("apps", "DaemonSet"), "DaemonSet");
	CHECK_STR(template_kind_label("kubeflow.org", "PyTorchJob"), "custom");
	json_decref(o);
	json_decref(v);
}

/* A custom resource: templates anywhere but its metadata, a PodSpec held directly too. */
static void test_custom_resources(void)
{
	json_t *o = parse("{\"apiVersion\":\"x.io/v1\",\"kind\":\"Thing\",\"metadata\":{\"name\":\"t\",\"namespace\":\"ml\","
			  "\"labels\":{\"team\":\"a\"},\"annotations\":{\"template\":\"x\"},"
			  "\"extra\":{\"template\":{\"spec\":{\"containers\":[]}}}},"
			  "\"spec\":{\"template\":{\"containers\":[{\"name\":\"c\"}]},"
			  "\"a\":[1,{\"workerTemplate\":{\"metadata\":{},\"spec\":{\"containers\":[]}}}],"
			  "\"Template\":{\"spec\":{\"containers\":[]}},"
			  "\"job\":{\"template\":{\"spec\":{\"template\":{\"spec\":{\"containers\":[]}}}}}}}");
	struct template_list l = { 0 };
	struct error err = { 0 };

	CHECK_INT(template_find(o, &l, &err), 0);
	CHECK_INT(l.n, 3);
	if (l.n == 3) {
		CHECK_STR(l.v[0].path, "spec.template");  /* a PodSpec held directly */
		CHECK(l.v[0].own != NULL && l.v[0].pod == l.v[0].own);
		CHECK(json_object_get(l.v[0].own, "metadata") == json_object_get(o, "metadata"));
		CHECK(json_object_get(l.v[0].own, "spec") == json_object_get(json_object_get(o, "spec"), "template"));
		CHECK_STR(l.v[0].ns, "ml");
		CHECK_STR(l.v[1].pointer, "/spec/a/1/workerTemplate");
		CHECK_STR(l.v[2].path, "spec.job.template.spec.template");
		CHECK(template_at(&l, "/spec/a/1/workerTemplate") == &l.v[1]);
		CHECK(template_at(&l, "/spec/a/0") == NULL);
	}
	template_list_free(&l);
	json_decref(o);
}

/* A template's ownerReferences never count; a DaemonSet's template is exempt where its pods are. */
static void test_judge(void)
{
	json_t *ds = parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"DaemonSet\",\"metadata\":{\"name\":\"d\",\"namespace\":\"mon\"},"
			   "\"spec\":{\"template\":{\"spec\":{\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Exists\"}],"
			   "\"containers\":[{\"name\":\"c\"}]}}}}");
	json_t *dep = parse("{\"apiVersion\":\"apps/v1\",\"kind\":\"Deployment\",\"metadata\":{\"name\":\"x\"},"
			    "\"spec\":{\"template\":{\"metadata\":{\"ownerReferences\":[{\"apiVersion\":\"apps/v1\","
			    "\"kind\":\"DaemonSet\",\"name\":\"d\",\"controller\":true}]},"
			    "\"spec\":{\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\"}]}}}}");
	const char *wide = "exempt: {daemonSetNamespaces: [kube-system, mon]}\n";
	struct config *cfg = NULL, *widened = NULL;
	struct template_list l = { 0 };
	struct policy_result r;
	struct error err = { 0 };

	cfg = config_default(&err);
	widened = config_load_buffer(wide, strlen(wide), "p", &err);
	CHECK(cfg != NULL && widened != NULL);
	if (cfg == NULL || widened == NULL)
		goto out;
	CHECK_INT(template_find(ds, &l, &err), 0);
	CHECK(l.n == 1 && l.v[0].daemonset);
	CHECK_INT(template_judge(widened, &l.v[0], NULL, POLICY_OP_CREATE, &r, &err), 0);
	CHECK(r.exempt && r.verdict == POLICY_ALLOW);
	policy_result_free(&r);
	CHECK_INT(template_judge(cfg, &l.v[0], NULL, POLICY_OP_CREATE, &r, &err), 0);
	CHECK(!r.exempt && r.verdict == POLICY_REJECT && r.fix != NULL);  /* the default does not list mon */
	CHECK(strstr(r.message, "list mon there") != NULL);
	policy_result_free(&r);
	template_list_free(&l);
	CHECK_INT(template_find(dep, &l, &err), 0);
	CHECK(l.n == 1 && !l.v[0].daemonset);
	CHECK_INT(template_judge(cfg, &l.v[0], NULL, POLICY_OP_CREATE, &r, &err), 0);
	CHECK(!r.exempt && r.verdict == POLICY_REJECT);  /* its claimed DaemonSet owner is not its pods' */
	policy_result_free(&r);
	/* UPDATE against itself: nothing new, admitted; template_same says so on what the policy reads. */
	CHECK_INT(template_judge(cfg, &l.v[0], &l.v[0], POLICY_OP_UPDATE, &r, &err), 0);
	CHECK(r.verdict == POLICY_ALLOW);
	CHECK(template_same(&l.v[0], &l.v[0]));
	policy_result_free(&r);
out:
	template_list_free(&l);
	config_free(cfg);
	config_free(widened);
	json_decref(ds);
	json_decref(dep);
}

/* A fix rebased onto the document: under the template's pointer; for a PodSpec held directly, /spec is it. */
static void test_rebase(void)
{
	json_t *o = parse("{\"kind\":\"LLMInferenceService\",\"apiVersion\":\"serving.kserve.io/v1alpha1\","
			  "\"spec\":{\"template\":{\"containers\":[]},\"x\":{\"template\":{\"spec\":{\"containers\":[]}}}}}");
	json_t *fix = parse("[{\"op\":\"remove\",\"path\":\"/spec/tolerations/0\"}]"), *out = json_array();
	json_t *bad = parse("[{\"op\":\"remove\",\"path\":\"/metadata/labels\"}]");
	struct template_list l = { 0 };
	struct error err = { 0 };

	CHECK_INT(template_find(o, &l, &err), 0);
	CHECK_INT(l.n, 2);
	if (l.n == 2) {
		CHECK_INT(template_rebase(&l.v[0], fix, out, &err), 0);
		CHECK_INT(template_rebase(&l.v[1], fix, out, &err), 0);
		CHECK_STR(json_string_value(json_object_get(json_array_get(out, 0), "path")),
			  "/spec/template/tolerations/0");
		CHECK_STR(json_string_value(json_object_get(json_array_get(out, 1), "path")),
			  "/spec/x/template/spec/tolerations/0");
		CHECK_INT(template_rebase(&l.v[0], bad, out, &err), -1);  /* the object's metadata is not the template's */
	}
	template_list_free(&l);
	json_decref(o);
	json_decref(fix);
	json_decref(bad);
	json_decref(out);
}

int main(void)
{
	RUN(test_builtin_by_group);
	RUN(test_custom_resources);
	RUN(test_judge);
	RUN(test_rebase);
	return check_done("template");
}
