/* A workload's answer: kube-apiserver's limits hold however many templates it has. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "policy/config.h"
#include "policy/workload.h"

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

/*
 * More than WORKLOAD_TEMPLATES_MAX templates in the object (or in oldObject)
 * is refused as input, saying so: the work and memory of one review stay
 * bounded however many a hostile object holds. Up to it, judged.
 */
static void test_templates_bounded(void)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);
	json_t *most = object_with(WORKLOAD_TEMPLATES_MAX, "{\"containers\":[{\"name\":\"c\"}]}");
	json_t *over = object_with(WORKLOAD_TEMPLATES_MAX + 1, "{\"containers\":[{\"name\":\"c\"}]}");
	struct workload_request req = { 0 };
	struct workload_result r;
	char want[256];

	judge(cfg, most, &r);
	CHECK_INT(r.templates, WORKLOAD_TEMPLATES_MAX);
	CHECK(r.answer.decision == POLICY_ALLOW);
	workload_result_free(&r);
	snprintf(want, sizeof want, "Team ml/t holds more than %d pod templates, the most the webhook judges in one "
		 "object: `gpu-admission audit FILE` judges them all", WORKLOAD_TEMPLATES_MAX);
	req.object = over;
	req.group = "x.io";
	req.kind = "Team";
	req.operation = POLICY_OP_CREATE;
	CHECK_INT(workload_evaluate(cfg, &req, &r, &err), -1);
	CHECK_INT(err.kind, ERROR_INPUT);
	CHECK_STR(err.msg, want);
	workload_result_free(&r);
	/* An UPDATE whose oldObject holds too many: the same. */
	memset(&err, 0, sizeof err);
	req.object = most;
	req.old_object = over;
	req.operation = POLICY_OP_UPDATE;
	CHECK_INT(workload_evaluate(cfg, &req, &r, &err), -1);
	CHECK_INT(err.kind, ERROR_INPUT);
	CHECK_STR(err.msg, want);
	workload_result_free(&r);
	json_decref(most);
	json_decref(over);
	config_free(cfg);
}

/* On UPDATE each template is compared with the old one at its path, whatever the members' order. */
static void test_update_matches_by_path(void)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);
	const char *cpu = "{\"containers\":[{\"name\":\"c\"}]}";
	const char *aimed = "{\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Exists\"}],\"containers\":[{\"name\":\"c\"}]}";
	char old_text[512], new_text[512], same_text[512];
	json_t *old, *changed, *reordered;
	struct workload_request req = { 0 };
	struct workload_result r;

	snprintf(old_text, sizeof old_text, "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Team\",\"metadata\":{\"name\":\"t\","
		 "\"namespace\":\"ml\"},\"spec\":{\"a\":{\"template\":{\"spec\":%s}},\"b\":{\"template\":{\"spec\":%s}}}}",
		 cpu, cpu);
	snprintf(new_text, sizeof new_text, "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Team\",\"metadata\":{\"name\":\"t\","
		 "\"namespace\":\"ml\"},\"spec\":{\"b\":{\"template\":{\"spec\":%s}},\"a\":{\"template\":{\"spec\":%s}}}}",
		 cpu, aimed);
	snprintf(same_text, sizeof same_text, "{\"apiVersion\":\"x.io/v1\",\"kind\":\"Team\",\"metadata\":{\"name\":\"t\","
		 "\"namespace\":\"ml\"},\"spec\":{\"b\":{\"template\":{\"spec\":%s}},\"a\":{\"template\":{\"spec\":%s}}}}",
		 cpu, cpu);
	old = json_loads(old_text, 0, NULL);
	changed = json_loads(new_text, 0, NULL);
	reordered = json_loads(same_text, 0, NULL);
	CHECK(old != NULL && changed != NULL && reordered != NULL);
	req.group = "x.io";
	req.kind = "Team";
	req.operation = POLICY_OP_UPDATE;
	req.old_object = old;
	req.object = reordered;
	CHECK_INT(workload_evaluate(cfg, &req, &r, &err), 0);
	CHECK_INT(r.judged, 0);  /* the same templates in another order: nothing changed */
	CHECK(r.answer.decision == POLICY_ALLOW);
	workload_result_free(&r);
	req.object = changed;
	CHECK_INT(workload_evaluate(cfg, &req, &r, &err), 0);
	CHECK_INT(r.judged, 1);  /* spec.a.template newly tolerates the GPU taint */
	CHECK(r.answer.decision == POLICY_REJECT);
	CHECK(strstr(r.message, "pod template spec.a.template:") != NULL);
	workload_result_free(&r);
	json_decref(old);
	json_decref(changed);
	json_decref(reordered);
	config_free(cfg);
}

/* jansson's allocator, counting: what the server's arena would be charged. */
static size_t counted;

static void *counting_malloc(size_t n)
{
	counted += n;
	return malloc(n);
}

/*
 * A workload's memory (its templates' results, the lists, their paths) comes
 * from jansson's allocator, which the server points at the request's arena:
 * charged to the memory budget and dropped with the request.
 */
static void test_memory_from_the_request_allocator(void)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);
	json_t *o = object_with(40, "{\"containers\":[{\"name\":\"c\"}]}");
	struct workload_result r;

	counted = 0;
	json_set_alloc_funcs(counting_malloc, free);
	judge(cfg, o, &r);
	json_set_alloc_funcs(malloc, free);
	CHECK(counted >= 40 * sizeof(struct policy_result));
	workload_result_free(&r);
	json_decref(o);
	config_free(cfg);
}

int main(void)
{
	RUN(test_warnings_bounded);
	RUN(test_message_bounded);
	RUN(test_templates_bounded);
	RUN(test_update_matches_by_path);
	RUN(test_memory_from_the_request_allocator);
	return check_done("workload");
}
