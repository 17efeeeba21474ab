/*
 * pkg/render/autoscaler.c: the priority-expander ConfigMap. Its format is that of
 * kubernetes/autoscaler cluster-autoscaler/expander/priority (readme.md,
 * priority.go: data.priorities, a YAML map of int to regexes searched in the
 * node group id); on AKS a node group id is the scale set's name,
 * aks-<pool>-<number>-vmss (see test/e2e/pools.sh for the sources).
 */
#include <stdlib.h>

#include "render/autoscaler.h"
#include "check.h"

static char *configmap(const char *yaml, char *skipped, size_t cap, struct error *err)
{
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "policy.yaml", err);
	char *text = cfg ? autoscaler_priority_configmap(cfg, skipped, cap, err) : NULL;

	config_free(cfg);
	return text;
}

static void test_order(void)
{
	struct error err = { 0 };
	char skipped[64];
	char *text = configmap("pools:\n"
			       "  - {name: spot, nodeSelector: {kubernetes.azure.com/agentpool: gput4spot}}\n"
			       "  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
			       "  - {name: t4-team, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n"
			       "  - {name: nap, nodeSelector: {karpenter.sh/nodepool: gpu}}\n"
			       "  - {name: a100, nodeSelector: {kubernetes.azure.com/agentpool: gpua100, x: z}}\n",
			       skipped, sizeof skipped, &err);

	CHECK(text != NULL);
	if (text == NULL)
		return;
	CHECK(strstr(text, "  priorities: |-\n"
			   "    30:\n      - '^aks-gput4spot-[0-9]+-vmss$'\n"
			   "    20:\n      - '^aks-gput4-[0-9]+-vmss$'\n"
			   "    10:\n      - '^aks-gpua100-[0-9]+-vmss$'\n"
			   "    1:\n      - '.*'\n") != NULL);
	CHECK(strstr(text, "  name: cluster-autoscaler-priority-expander\n  namespace: kube-system\n") != NULL);
	CHECK_STR(skipped, "nap");
	free(text);
}

static void test_none(void)
{
	struct error err = { 0 };
	char skipped[8];

	CHECK(configmap("pools:\n  - {name: nap, nodeSelector: {karpenter.sh/nodepool: gpu}}\n", skipped,
			sizeof skipped, &err) == NULL);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "no pool selects by kubernetes.azure.com/agentpool") != NULL);
	/* The default pool selects by the accelerator label: nothing to prioritise. */
	CHECK(configmap("", NULL, 0, &err) == NULL);
}

int main(void)
{
	RUN(test_order);
	RUN(test_none);
	return check_done("autoscaler");
}
