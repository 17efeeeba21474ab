#include "policy/autoscaler.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PRIORITY_STEP 10  /* between pools: room for the admin's own groups in between */
#define PRIORITY_REST 1   /* every other node group (CPU pools): lowest, but not unused */

struct text {
	char *buf;   /* owned */
	size_t len, cap;
	int failed;
};

static void put(struct text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void put(struct text *t, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (t->failed)
		return;
	va_start(ap, fmt);
	n = vsnprintf(t->buf ? t->buf + t->len : NULL, t->buf ? t->cap - t->len : 0, fmt, ap);
	va_end(ap);
	if (n < 0) {
		t->failed = 1;
		return;
	}
	if (t->buf == NULL || (size_t)n >= t->cap - t->len) {
		size_t cap = (t->cap ? t->cap : 1024);
		char *grown;

		while (cap - t->len <= (size_t)n)
			cap *= 2;
		grown = realloc(t->buf, cap);
		if (grown == NULL) {
			t->failed = 1;
			return;
		}
		t->buf = grown;
		t->cap = cap;
		va_start(ap, fmt);
		vsnprintf(t->buf + t->len, t->cap - t->len, fmt, ap);
		va_end(ap);
	}
	t->len += (size_t)n;
}

/*
 * The scale set regex of AKS node pool name: anchored, so that gput4 does
 * not also match gput4spot, and every character outside [A-Za-z0-9] escaped
 * (AKS pool names are [a-z][a-z0-9]{0,11}, so none should be there). In a
 * single-quoted YAML scalar a backslash is literal and '' is a quote.
 */
static void put_regex(struct text *t, const char *name)
{
	put(t, "      - '^aks-");
	for (; *name; name++) {
		if ((*name >= 'a' && *name <= 'z') || (*name >= 'A' && *name <= 'Z') || (*name >= '0' && *name <= '9'))
			put(t, "%c", *name);
		else if (*name == '\'')
			put(t, "\\''");
		else
			put(t, "\\%c", *name);
	}
	put(t, "-[0-9]+-vmss$'\n");
}

char *autoscaler_priority_configmap(const struct config *cfg, char *skipped, size_t cap, struct error *err)
{
	const char *names[CONFIG_POOLS_MAX];
	struct text t = { NULL, 0, 0, 0 };
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
	put(&t, "# cluster-autoscaler's priority expander: scale the GPU node pools in the\n"
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
		put(&t, "    %zu:\n", (n - i) * PRIORITY_STEP);
		put_regex(&t, names[i]);
	}
	put(&t, "    %d:\n      - '.*'\n", PRIORITY_REST);
	if (t.failed) {
		free(t.buf);
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	return t.buf;
}
