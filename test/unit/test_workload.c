/* A workload's answer: kube-apiserver's limits hold however many templates it has. */
#include <stdlib.h>

#include "check.h"
#include "config.h"
#include "workload.h"

/* A custom resource with n templates under spec.roles[i].template, each with the given PodSpec JSON. */
static json_t *object_with(size_t n, const char *podspec)
{
	json_t *roles = json_array(), *o;
	size_t i;

	for (i = 0; i < n; i++)
		json_array_append_new(roles, json_pack("{s:{s:o}}", "template", "spec", json_loads(podspec, 0, NULL)));
	o = json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:o}}", "apiVersion", "x.io/v1", "kind", "Team", "metadata",
		      "name", "t", "namespace", "ml", "spec", "roles", roles);
	return o;
}

static void judge(const struct config *cfg, const json_t *o, struct workload_result *r)
{
	struct workload_request req = { 0 };
	struct error err = { 0 };

	req.object = o;
	req.group = "x.io";
	req.kind = "Team";
	req.operation = POLICY_OP_CREATE;
	CHECK_INT(workload_evaluate(cfg, &req, r, &err), 0);
}

/* Every warning fits 256 bytes, at most WORKLOAD_WARNINGS_MAX, the last saying how many more. */
static void test_warnings_bounded(void)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);
	json_t *o = object_with(12, "{\"tolerations\":[{\"key\":\"nvidia.com/gpu\",\"operator\":\"Exists\"}],"
				"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":1}}}]}");
	struct workload_result r;
	size_t i;

	judge(cfg, o, &r);
	CHECK(r.answer.decision == POLICY_ALLOW && r.answer.patch == NULL);
	CHECK_INT(json_array_size(r.answer.warnings), WORKLOAD_WARNINGS_MAX);
	for (i = 0; i < json_array_size(r.answer.warnings); i++)
		CHECK(json_string_length(json_array_get(r.answer.warnings, i)) <= POLICY_WARNING_MAX);
	CHECK(strncmp(json_string_value(json_array_get(r.answer.warnings, 0)),
		      "pod template spec.roles[0].template: toleration nvidia.com/gpu", 60) == 0);
	CHECK_STR(json_string_value(json_array_get(r.answer.warnings, WORKLOAD_WARNINGS_MAX - 1)),
		  "5 more warnings: `gpu-admission audit FILE` shows them all");
	workload_result_free(&r);
	json_decref(o);
	config_free(cfg);
}

/* Many rejected templates: the message stays within its bound, names each while there is room. */
static void test_message_bounded(void)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);
	json_t *o = object_with(40, "{\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Exists\"}],"
				"\"containers\":[{\"name\":\"c\"}]}");
	struct workload_result r;

	judge(cfg, o, &r);
	CHECK(r.answer.decision == POLICY_REJECT);
	CHECK(strlen(r.message) < WORKLOAD_MESSAGE_MAX);
	CHECK(strncmp(r.message, "Team ml/t: 40 pod templates would be rejected. pod template spec.roles[0].template: "
		      "CPU-only pod aimed at GPU nodes", 100) == 0);
	CHECK(strstr(r.message, "spec.roles[9].template") != NULL);
	/* How to fix it survives the cut. */
	CHECK(strstr(r.message, " ... `gpu-admission audit --fix FILE` fixes the manifest (it removes what aims each "
		     "template at GPU nodes)") != NULL);
	CHECK_INT(r.templates, 40);
	CHECK_INT(r.judged, 40);
	workload_result_free(&r);
	json_decref(o);
	config_free(cfg);
}

int main(void)
{
	RUN(test_warnings_bounded);
	RUN(test_message_bounded);
	return check_done("workload");
}
