/*
 * config_check: the rules that span fields (placement fallback and the pools'
 * keys, gpuInfraNamespaces and the exemptions, unique pool names) and the
 * advice a valid policy still earns. Apart from the schema because they are
 * judged once, on the whole policy as overlaid on the default, after every
 * field has been read.
 */
#include "policy/config_int.h"

#include <stdio.h>
#include <string.h>

#include "policy/policy.h"

/*
 * placement: fallback puts every eligible pool's value into one
 * `key In [...]` requirement, which only says "one of these pools" when each
 * pool is exactly one value of one key. Each pool that is not is an error at
 * its nodeSelector (a pool without one has its own error already).
 */
static void check_fallback(struct yml_reader *ld, const struct config *cfg)
{
	const char *key = NULL;
	size_t i, ref = 0;
	char path[64];

	if (cfg->placement != CONFIG_PLACEMENT_FALLBACK || config_pool_key(cfg) != NULL)
		return;
	for (i = 0; i < cfg->n_pools && key == NULL; i++)
		if (cfg->pools[i].node_selector.n == 1) {
			key = cfg->pools[i].node_selector.v[0].key;
			ref = i;
		}
	for (i = 0; i < cfg->n_pools; i++) {
		const struct config_pool *p = &cfg->pools[i];
		const char *name = p->name ? p->name : "(unnamed)";

		snprintf(path, sizeof path, "pools[%zu].nodeSelector", i);
		if (p->node_selector.n > 1)
			yml_fail(ld, NULL, path, "placement fallback needs every pool to select by exactly one label "
			     "(pool \"%s\" has %zu), one and the same key for all (e.g. "
			     "kubernetes.azure.com/agentpool, or karpenter.sh/nodepool)", name, p->node_selector.n);
		else if (p->node_selector.n == 1 && strcmp(p->node_selector.v[0].key, key) != 0)
			yml_fail(ld, NULL, path, "placement fallback needs every pool to select by the same label key: "
			     "pool \"%s\" selects by %s, pools[%zu] by %s", name, p->node_selector.v[0].key, ref, key);
	}
}

/*
 * The toleration gpuInfraNamespaces adds to a DaemonSet's template is a
 * route to GPU nodes for a CPU-only pod: its pods are admitted only where
 * the DaemonSet exemption or a namespace's exemption admits them. Elsewhere
 * the template would be patched and then denied, or its pods refused.
 */
static void check_infra(struct yml_reader *ld, const struct config *cfg)
{
	size_t i, j;

	for (i = 0; i < cfg->gpu_infra_namespaces.n; i++) {
		const char *ns = cfg->gpu_infra_namespaces.v[i];
		int admitted = 0;

		for (j = 0; j < cfg->exempt_namespaces.n && !admitted; j++)
			admitted = strcmp(cfg->exempt_namespaces.v[j], ns) == 0;
		for (j = 0; cfg->exempt_daemonsets && j < cfg->exempt_daemonset_namespaces.n && !admitted; j++)
			admitted = policy_glob_match(cfg->exempt_daemonset_namespaces.v[j], ns);
		if (admitted)
			continue;
		yml_fail(ld, NULL, "gpuInfraNamespaces", "\"%s\": its DaemonSets would get the GPU toleration and their CPU-only pods be "
			 "refused for it: list it in exempt.daemonSetNamespaces (with exempt.daemonSets on) or in "
			 "exempt.namespaces", ns);
	}
}

/* Rules that span fields, checked once the whole file is overlaid. */
void config_check_whole(struct yml_reader *ld, const struct config *cfg)
{
	size_t i, j;

	check_fallback(ld, cfg);
	check_infra(ld, cfg);
	if (cfg->gpu_resources.n == 0)
		yml_fail(ld, NULL, "gpuResources", "must list at least one resource");
	if (cfg->taint_effect != NULL && strcmp(cfg->taint_effect, "NoSchedule") != 0 &&
	    strcmp(cfg->taint_effect, "PreferNoSchedule") != 0 &&
	    strcmp(cfg->taint_effect, "NoExecute") != 0)
		yml_fail(ld, NULL, "gpuTaint.effect", "must be NoSchedule, PreferNoSchedule or NoExecute");
	for (i = 0; i < cfg->n_pools; i++)
		for (j = 0; j < i; j++)
			if (cfg->pools[i].name && cfg->pools[j].name &&
			    strcmp(cfg->pools[i].name, cfg->pools[j].name) == 0) {
				char at[64];

				snprintf(at, sizeof at, "pools[%zu].name", i);
				yml_fail(ld, NULL, at, "two pools are named \"%s\" (pools[%zu] too)",
				     cfg->pools[i].name, j);
				break;
			}
}

/* A priced pool's cost per GPU-hour, or -1 when it cannot be known from the policy alone. */
static double per_gpu_price(const struct config_pool *p)
{
	return p->priced && p->gpus_per_node > 0 ? p->price_per_node_hour / (double)p->gpus_per_node : -1;
}

size_t config_warnings(const struct config *cfg, char *buf, size_t cap)
{
	size_t i, j, n = 0, used;

	if (cap > 0)
		buf[0] = '\0';
	/* Pools are tried in order: a cheaper pool listed after a pricier one is used only as a fallback. */
	for (i = 0; i < cfg->n_pools; i++) {
		double pi = per_gpu_price(&cfg->pools[i]);

		for (j = 0; pi >= 0 && j < i; j++) {
			double pj = per_gpu_price(&cfg->pools[j]);

			if (pj < 0 || pi >= pj)
				continue;
			used = cap > 0 ? strlen(buf) : 0;
			if (used + 1 < cap)
				snprintf(buf + used, cap - used,
					 "%spools[%zu] (\"%s\", %.4g per GPU-hour) is cheaper per GPU than "
					 "pools[%zu] (\"%s\", %.4g) listed before it; pools are tried in order, "
					 "cheapest first", n ? "\n" : "", i, cfg->pools[i].name, pi, j,
					 cfg->pools[j].name, pj);
			n++;
			break;
		}
	}
	return n;
}
