#include "render/autoscaler.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"

#define PRIORITY_STEP 10  /* between pools: room for the admin's own groups in between */
#define PRIORITY_REST 1   /* every other node group (CPU pools): lowest, but not unused */

/*
 * The scale set regex of AKS node pool name: anchored, so that gput4 does
 * not also match gput4spot, and every character outside [A-Za-z0-9] escaped
 * (AKS pool names are [a-z][a-z0-9]{0,11}, so none should be there). In a
 * single-quoted YAML scalar a backslash is literal and '' is a quote.
 */
static void put_regex(struct strbuf *t, const char *name)
{
	strbuf_addstr(t, "      - '^aks-");
	for (; *name; name++) {
		if ((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') || (*name >= '0' && *name <= '9'))
			strbuf_addch(t, *name);
		else if (*name == '\'')
			strbuf_addstr(t, "\\''");
		else
			strbuf_addf(t, "\\%c", *name);
	}
	strbuf_addstr(t, "-[0-9]+-vmss$'\n");
}

char *autoscaler_priority_configmap(const struct config *cfg, char *skipped, size_t cap, struct error *err)
{
	const char *names[CONFIG_POOLS_MAX];
	struct strbuf t = STRBUF_INIT;
	char *text;
	size_t i, j, n = 0, used = 0;

	if (skipped != NULL && cap > 0)
		skipped[0] = '\0';
	for (i = 0; i < cfg->n_pools; i++) {
		const char *ap = config_pool_aks_pool(&cfg->pools[i]);

		if (ap == NULL) {
			if (skipped != NULL && used + 1 < cap)
				used += (size_t)snprintf(skipped + used, cap - used, "%s%s", used ? ", " : "",
							 cfg->pools[i].name);
			if (used >= cap)
				used = cap - 1;
			continue;
		}
		for (j = 0; j < n && strcmp(names[j], ap) != 0; j++)
			;
		if (j == n)
			names[n++] = ap;  /* two pools on one node pool: the first one's place */
	}
	if (n == 0) {
		error_set(err, ERROR_CONFIG, "no pool selects by " CONFIG_AKS_POOL_LABEL ", so no AKS node pool is "
			  "known to give priorities to (with node auto-provisioning, give the Karpenter NodePools "
			  "spec.weight instead)");
		return NULL;
	}
	strbuf_addstr(&t, "# cluster-autoscaler's priority expander: scale the GPU node pools in the\n"
		"# order gpu-admission prefers them (its pools, cheapest first); every other\n"
		"# node group comes after. On AKS each node pool is a scale set named\n"
		"# aks-<pool>-<number>-vmss. Apply it, then:\n"
		"#   az aks update -g RESOURCE_GROUP -n CLUSTER --cluster-autoscaler-profile expander=priority\n"
		"apiVersion: v1\n"
		"kind: ConfigMap\n"
		"metadata:\n"
		"  name: cluster-autoscaler-priority-expander\n"
		"  namespace: kube-system\n"
		"data:\n"
		"  priorities: |-\n");
	for (i = 0; i < n; i++) {
		strbuf_addf(&t, "    %zu:\n", (n - i) * PRIORITY_STEP);
		put_regex(&t, names[i]);
	}
	strbuf_addf(&t, "    %d:\n      - '.*'\n", PRIORITY_REST);
	if ((text = strbuf_detach(&t, NULL)) == NULL)
		error_set(err, ERROR_NOMEM, "out of memory");
	return text;
}
