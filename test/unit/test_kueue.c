/*
 * pkg/render/kueue.c: Kueue's objects from the pools. Their shape is Kueue v0.17's
 * kueue.x-k8s.io/v1beta2 CRDs (sigs.k8s.io/kueue config/components/crd/bases:
 * ResourceFlavor spec.nodeLabels at most 8, spec.tolerations at most 8; a resource
 * group's flavors each list every covered resource, in order); the cluster suite
 * (test/cluster/scenarios/85-kueue.sh) applies them to the real CRDs.
 */
#include <stdlib.h>

#include "render/kueue.h"
#include "check.h"

static char *objects(const char *yaml, const struct kueue_options *o, char *notes, size_t cap, struct error *err)
{
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "policy.yaml", err);
	char *text = cfg ? kueue_config(cfg, o, notes, cap, err) : NULL;

	config_free(cfg);
	return text;
}

static const char *const POOLS =
	"pools:\n"
	"  - name: t4-spot\n"
	"    resources: [nvidia.com/gpu]\n"
	"    maxGPUsPerPod: 1\n"
	"    nodeSelector: {kubernetes.azure.com/agentpool: gput4spot}\n"
	"    tolerations: [{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}]\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 8,\n"
	"     nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n"
	"  - {name: h100, resources: [nvidia.com/gpu], nodeSelector: {kubernetes.azure.com/agentpool: gpuh100},\n"
	"     namespaces: [research, team-b]}\n";

static void test_flavors(void)
{
	struct kueue_options o = { 0 };
	struct error err = { 0 };
	char notes[1024];
	char *text = objects(POOLS, &o, notes, sizeof notes, &err);

	CHECK(text != NULL);
	if (text == NULL)
		return;
	/* The pool's labels, the GPU taint's toleration, then the pool's own. */
	CHECK(strstr(text, "---\napiVersion: kueue.x-k8s.io/v1beta2\nkind: ResourceFlavor\nmetadata:\n  name: t4-spot\n"
			   "spec:\n  nodeLabels:\n    \"kubernetes.azure.com/agentpool\": \"gput4spot\"\n"
			   "  tolerations:\n"
			   "    - key: \"sku\"\n      operator: Equal\n      value: \"gpu\"\n      effect: NoSchedule\n"
			   "    - key: \"kubernetes.azure.com/scalesetpriority\"\n      operator: Equal\n"
			   "      value: \"spot\"\n      effect: NoSchedule\n") != NULL);
	/* The flavors in the policy's order; a resource the pool does not serve is 0. */
	CHECK(strstr(text, "    - coveredResources: [\"cpu\", \"memory\", \"nvidia.com/gpu\"]\n      flavors:\n"
			   "        - name: t4-spot\n") != NULL);
	CHECK(strstr(text, "        - name: t4-spot\n") < strstr(text, "        - name: a100\n"));
	CHECK(strstr(text, "        - name: a100\n") < strstr(text, "        - name: h100\n"));
	/* h100 admits two namespaces by name: the queue selects them. */
	CHECK(strstr(text, "      - key: kubernetes.io/metadata.name\n        operator: In\n        values:\n"
			   "          - \"research\"\n          - \"team-b\"\n") != NULL);
	CHECK(strstr(notes, "pool a100 serves nvidia.com/mig-* by glob") != NULL);
	CHECK(strstr(notes, "pool t4-spot takes at most 1 GPU per pod") != NULL);
	/* h100 has no limit: a 9-GPU pod Kueue gives a100 would be refused. */
	CHECK(strstr(notes, "pool a100 takes at most 8 GPUs per pod") != NULL);
	CHECK(strstr(notes, "pool h100 takes") == NULL);
	CHECK(strstr(text, "# note: pool t4-spot takes at most 1 GPU per pod") != NULL);
	CHECK(strstr(text, "kind: LocalQueue") != NULL);  /* the commented example */
	free(text);
}

static void test_quota_and_queues(void)
{
	const char *pools[] = { "h100", "t4-spot" }, *res[] = { "nvidia.com/mig-1g.10gb" }, *lq[] = { "team-b" };
	const struct kueue_quota q[] = { { "nvidia.com/gpu", "8" }, { "cpu", "64" }, { "nvidia.com/mig-1g.10gb", "7" } };
	struct kueue_options o = { .queue = "team-b", .pools = pools, .n_pools = 2, .resources = res,
				   .n_resources = 1, .quotas = q, .n_quotas = 3, .local_queues = lq,
				   .n_local_queues = 1 };
	struct error err = { 0 };
	char *text = objects(POOLS, &o, NULL, 0, &err);

	CHECK(text != NULL);
	if (text == NULL)
		return;
	CHECK(strstr(text, "kind: ClusterQueue\nmetadata:\n  name: team-b\n") != NULL);
	/* The policy's order, whatever the order given; a100 is no flavor of this queue. */
	CHECK(strstr(text, "      flavors:\n        - name: t4-spot\n") != NULL);
	CHECK(strstr(text, "        - name: a100\n") == NULL);
	CHECK(strstr(text, "coveredResources: [\"cpu\", \"memory\", \"nvidia.com/gpu\", \"nvidia.com/mig-1g.10gb\"]") != NULL);
	/* t4-spot serves nvidia.com/gpu only: its MIG quota is 0, h100's too. */
	CHECK(strstr(text, "        - name: t4-spot\n          resources:\n"
			   "            - name: \"cpu\"\n              nominalQuota: \"64\"\n"
			   "            - name: \"memory\"\n              nominalQuota: \"0\"\n"
			   "            - name: \"nvidia.com/gpu\"\n              nominalQuota: \"8\"\n"
			   "            - name: \"nvidia.com/mig-1g.10gb\"\n              nominalQuota: \"0\"\n") != NULL);
	CHECK(strstr(text, "kind: LocalQueue\nmetadata:\n  name: team-b\n  namespace: team-b\nspec:\n"
			   "  clusterQueue: team-b\n") != NULL);
	free(text);
}

static void test_errors(void)
{
	const char *unknown[] = { "v100" }, *amd[] = { "amd.com/gpu*" };
	const struct kueue_quota bad[] = { { "nvidia.com/gpu", "-1" } }, *none = NULL;
	const struct kueue_quota uncovered[] = { { "amd.com/gpu", "1" } };
	struct kueue_options o = { .pools = unknown, .n_pools = 1 };
	struct error err = { 0 };

	CHECK(objects(POOLS, &o, NULL, 0, &err) == NULL);
	CHECK_INT(err.kind, ERROR_INPUT);
	CHECK(strstr(err.msg, "no pool is named \"v100\"") != NULL);
	o = (struct kueue_options){ .resources = amd, .n_resources = 1 };
	CHECK(objects(POOLS, &o, NULL, 0, &err) == NULL);
	CHECK(strstr(err.msg, "not a GPU resource") != NULL);
	o = (struct kueue_options){ .quotas = bad, .n_quotas = 1 };
	CHECK(objects(POOLS, &o, NULL, 0, &err) == NULL);
	CHECK(strstr(err.msg, "not a quantity") != NULL);
	o = (struct kueue_options){ .quotas = uncovered, .n_quotas = 1 };
	CHECK(objects(POOLS, &o, NULL, 0, &err) == NULL);
	CHECK(strstr(err.msg, "does not cover amd.com/gpu") != NULL);
	o = (struct kueue_options){ .queue = "Team_A", .quotas = none };
	CHECK(objects(POOLS, &o, NULL, 0, &err) == NULL);
	o = (struct kueue_options){ 0 };
	/* Two pools that share no namespace cannot be one queue's flavors. */
	CHECK(objects("pools:\n  - {name: a, nodeSelector: {x: a}, namespaces: [ns-a]}\n"
		      "  - {name: b, nodeSelector: {x: b}, namespaces: [ns-b]}\n", &o, NULL, 0, &err) == NULL);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "share no namespace") != NULL);
	/* A pool name a flavor cannot have. */
	CHECK(objects("pools:\n  - {name: T4_Pool, nodeSelector: {x: a}}\n", &o, NULL, 0, &err) == NULL);
	CHECK(strstr(err.msg, "DNS subdomain") != NULL);
	/* The default policy: nvidia.com/gpu covered (its pool serves every nvidia.com resource by glob). */
	{
		char *text = objects("", &o, NULL, 0, &err);

		CHECK(text != NULL && strstr(text, "coveredResources: [\"cpu\", \"memory\", \"nvidia.com/gpu\"]") != NULL);
		free(text);
	}
}

int main(void)
{
	RUN(test_flavors);
	RUN(test_quota_and_queues);
	RUN(test_errors);
	return check_done("kueue");
}
