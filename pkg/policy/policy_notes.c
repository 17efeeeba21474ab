/*
 * policy_notes: what a valid policy does that its text does not say.
 *
 * check-config prints these after "configuration OK": the policy loads and
 * the webhook enforces it, but an admin reading it would expect otherwise.
 * Pure: reads two loaded policies, writes text.
 */
#include "policy/policy_int.h"

#include <string.h>

/*
 * Glob comparisons the resource note makes at most: a pool's resources
 * against gpuResources is a product of two lists a file may make long;
 * real policies need a few dozen. Past it, entries are not looked at.
 */
#define NOTES_GLOB_BUDGET 10000

/* Starts a new note in buf: a newline after the ones before it. */
static void note_start(char *buf, size_t cap, size_t *n)
{
	if ((*n)++ > 0)
		policy_appendf(buf, cap, "\n");
}

/* Does glob match every namespace name? Only one made of '*' does. */
static int matches_all(const char *glob)
{
	return glob[0] != '\0' && strspn(glob, "*") == strlen(glob);
}

/*
 * Could a resource name match both pool glob r and a gpuResources glob?
 * Either matches the other's text: exact for a name without wildcards, and
 * for the globs of real policies (nvidia.com/mig-* and nvidia.com/mig-1g.*).
 */
static int overlaps_gpu(const struct config *cfg, const char *r, size_t *budget)
{
	size_t i;

	for (i = 0; i < cfg->gpu_resources.n; i++) {
		if (*budget == 0)
			return 1;  /* not looked at: no note */
		(*budget)--;
		if (policy_glob_match(cfg->gpu_resources.v[i], r) || policy_glob_match(r, cfg->gpu_resources.v[i]))
			return 1;
	}
	return 0;
}

size_t policy_notes(const struct config *cfg, const struct config *defaults, char *buf, size_t cap)
{
	size_t i, j, n = 0, missing = 0, budget = NOTES_GLOB_BUDGET;
	char none[1];

	if (cap == 0) {  /* only counted: policy_appendf() needs a terminated buffer */
		buf = none;
		cap = sizeof none;
	}
	buf[0] = '\0';

	/* A list replaces the default's: the namespaces it drops are judged from now on. */
	for (i = 0; defaults != NULL && i < defaults->exempt_namespaces.n; i++) {
		const char *ns = defaults->exempt_namespaces.v[i];

		if (policy_list_has(&cfg->exempt_namespaces, ns))
			continue;
		if (missing++ == 0) {
			note_start(buf, cap, &n);
			policy_appendf(buf, cap, "exempt.namespaces: ");
		}
		policy_appendf(buf, cap, "%s%s", missing > 1 ? ", " : "", ns);
	}
	if (missing > 0)
		policy_appendf(buf, cap, " %s no longer exempt: the list replaces the default one, it does not add "
			       "to it (list %s too to keep %s exempt)", missing > 1 ? "are" : "is",
			       missing > 1 ? "them" : "it", missing > 1 ? "them" : "it");

	/*
	 * DaemonSet pods are never refused and keep their GPU requests: where any
	 * tenant may create a DaemonSet, it is a pod holding GPUs on every GPU node.
	 */
	for (i = 0; cfg->exempt_daemonsets && i < cfg->exempt_daemonset_namespaces.n; i++)
		if (matches_all(cfg->exempt_daemonset_namespaces.v[i])) {
			note_start(buf, cap, &n);
			policy_appendf(buf, cap, "exempt.daemonSetNamespaces: \"%s\" exempts DaemonSet pods in every "
				       "namespace: a tenant who may create a DaemonSet can keep every GPU node busy "
				       "with pods that are never refused; list the namespaces where admins install "
				       "node agents (e.g. [kube-system, gpu-operator, gpu-resources])",
				       cfg->exempt_daemonset_namespaces.v[i]);
			break;
		}

	/* A pool resource no GPU pod can ask for: the pod is not judged as a GPU pod at all. */
	for (i = 0; i < cfg->n_pools; i++)
		for (j = 0; j < cfg->pools[i].resources.n; j++) {
			const char *r = cfg->pools[i].resources.v[j];

			if (overlaps_gpu(cfg, r, &budget))
				continue;
			note_start(buf, cap, &n);
			policy_appendf(buf, cap, "pools[%zu].resources[%zu]: \"%s\" is not a GPU resource "
				       "(gpuResources): a pod asking for it is not judged as a GPU pod, so pool "
				       "\"%s\" never serves it; add it to gpuResources or remove it",
				       i, j, r, cfg->pools[i].name);
		}
	return n;
}
