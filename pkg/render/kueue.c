#include "render/kueue.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"
#include "base/quantity.h"
#include "base/strbuf.h"
#include "k8s/names.h"

#define NS_NAME_LABEL "kubernetes.io/metadata.name"  /* the API server sets it on every namespace */
#define NVIDIA_GPU "nvidia.com/gpu"  /* what NVIDIA's device plugin advertises */
/* The GPU resource of Kubernetes before 1.11 (the default pool lists it): no node has it now. */
#define LEGACY_GPU "alpha.kubernetes.io/nvidia-gpu"
#define NOTE_MAX 512  /* bytes of one note: a pool name and a resource at most, worded */

_Static_assert(CONFIG_POOLS_MAX <= KUEUE_FLAVORS_MAX, "every pool can be a flavor of one ClusterQueue");

struct kq {
	const struct config *cfg;
	const struct kueue_options *opt;
	struct error *err;
	struct strbuf t;
	char *notes;
	size_t cap, used;
	const char *queue;
	size_t pools[CONFIG_POOLS_MAX];     /* indices into cfg->pools, the policy's order */
	size_t n_pools;
	const char *res[KUEUE_RESOURCES_MAX]; /* covered: cpu, memory, then GPU resources */
	size_t n_res;
	const char **ns;                    /* the namespaces every chosen pool admits; NULL: any */
	size_t n_ns;
};

/* One line of notes; a line that does not fit is left out whole (the YAML says them too). */
static void note(struct kq *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(struct kq *k, const char *fmt, ...)
{
	char line[NOTE_MAX];
	va_list ap;
	int n;

	if (k->notes == NULL)
		return;
	va_start(ap, fmt);
	n = vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	if (n < 0 || k->used + (size_t)n + 2 > k->cap)
		return;
	memcpy(k->notes + k->used, line, (size_t)n);
	k->used += (size_t)n;
	k->notes[k->used++] = '\n';
	k->notes[k->used] = '\0';
}

/* An object name (IsDNS1123Subdomain): lower-case alphanumerics, '-' and '.', alphanumeric at both ends. */
static int dns_subdomain(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > KUEUE_NAME_MAX)
		return 0;
	for (i = 0; i < n; i++) {
		char c = s[i];
		int alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');

		if (!alnum && ((c != '-' && c != '.') || i == 0 || i == n - 1))
			return 0;
	}
	return 1;
}

static int has_glob(const char *s)
{
	return strpbrk(s, "*?[") != NULL;
}

/* A double-quoted YAML scalar: names and label values are plain ASCII, but "true" or "1" must stay strings. */
static void put_str(struct strbuf *t, const char *s)
{
	strbuf_addch(t, '"');
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			strbuf_addch(t, '\\');
		strbuf_addch(t, *s);
	}
	strbuf_addch(t, '"');
}

static int pool_index(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->n_pools; i++)
		if (strcmp(cfg->pools[i].name, name) == 0)
			return (int)i;
	return -1;
}

/* k->pools: opt's pools (each must exist), or every pool; always in the policy's order. */
static int choose_pools(struct kq *k)
{
	const struct kueue_options *o = k->opt;
	size_t i, j;

	for (j = 0; j < o->n_pools; j++)
		if (pool_index(k->cfg, o->pools[j]) < 0) {
			error_set(k->err, ERROR_INPUT, "no pool is named \"%s\"", o->pools[j]);
			return -1;
		}
	for (i = 0; i < k->cfg->n_pools; i++) {
		for (j = 0; j < o->n_pools && strcmp(o->pools[j], k->cfg->pools[i].name) != 0; j++)
			;
		if (o->n_pools == 0 || j < o->n_pools)
			k->pools[k->n_pools++] = i;
	}
	return 0;
}

static int pool_serves(const struct config *cfg, const struct config_pool *p, const char *res)
{
	if (strcmp(res, "cpu") == 0 || strcmp(res, "memory") == 0)
		return 1;
	return policy_match_any(p->resources.n ? &p->resources : &cfg->gpu_resources, res);
}

static int add_resource(struct kq *k, const char *res)
{
	size_t i;

	for (i = 0; i < k->n_res; i++)
		if (strcmp(k->res[i], res) == 0)
			return 0;
	if (k->n_res == KUEUE_RESOURCES_MAX) {
		error_set(k->err, ERROR_INPUT, "more than %d resources: a resource group covers no more",
			  KUEUE_RESOURCES_MAX);
		return -1;
	}
	k->res[k->n_res++] = res;
	return 0;
}

/*
 * cpu and memory (a GPU Job's pods request them too, and Kueue admits a
 * workload only if every resource it requests is covered), nvidia.com/gpu when
 * a chosen pool serves it (by glob too: what NVIDIA's device plugin
 * advertises), the chosen pools' other exact GPU resources, then opt's. A glob
 * cannot be covered: it is noted.
 */
static int cover_resources(struct kq *k)
{
	size_t i, j;

	if (add_resource(k, "cpu") != 0 || add_resource(k, "memory") != 0)
		return -1;
	for (i = 0; i < k->n_pools; i++)
		if (pool_serves(k->cfg, &k->cfg->pools[k->pools[i]], NVIDIA_GPU) && add_resource(k, NVIDIA_GPU) != 0)
			return -1;
	for (i = 0; i < k->n_pools; i++) {
		const struct config_pool *p = &k->cfg->pools[k->pools[i]];

		for (j = 0; j < p->resources.n; j++) {
			const char *r = p->resources.v[j];

			if (has_glob(r)) {
				note(k, "pool %s serves %s by glob; a ClusterQueue covers exact names: "
				     "add each one Kueue should count with --resource", p->name, r);
				continue;
			}
			if (strcmp(r, LEGACY_GPU) != 0 && add_resource(k, r) != 0)
				return -1;
		}
	}
	for (j = 0; j < k->opt->n_resources; j++) {
		const char *r = k->opt->resources[j];

		if (has_glob(r) || !policy_match_any(&k->cfg->gpu_resources, r)) {
			error_set(k->err, ERROR_INPUT, "--resource %s: not a GPU resource of the policy (gpuResources)", r);
			return -1;
		}
		if (add_resource(k, r) != 0)
			return -1;
	}
	if (k->n_res == 2) {
		error_set(k->err, ERROR_INPUT, "the pools serve no GPU resource by exact name: "
			  "name the ones Kueue should count with --resource");
		return -1;
	}
	return 0;
}

static int check_quotas(struct kq *k)
{
	size_t i, j;

	for (i = 0; i < k->opt->n_quotas; i++) {
		const struct kueue_quota *q = &k->opt->quotas[i];
		struct quantity v;
		struct error e = { 0 };

		for (j = 0; j < k->n_res && strcmp(k->res[j], q->resource) != 0; j++)
			;
		if (j == k->n_res) {
			error_set(k->err, ERROR_INPUT, "--quota %s: the queue does not cover %s", q->resource,
				  q->resource);
			return -1;
		}
		if (quantity_parse(q->quantity, strlen(q->quantity), &v, &e) != 0 || v.negative) {
			error_set(k->err, ERROR_INPUT, "--quota %s=%s: not a quantity of 0 or more", q->resource,
				  q->quantity);
			return -1;
		}
	}
	return 0;
}

/* The quota given for res, or "0" (nothing admitted until the admin says how much). */
static const char *quota_of(const struct kq *k, const char *res)
{
	size_t i;
	const char *v = "0";

	for (i = 0; i < k->opt->n_quotas; i++)
		if (strcmp(k->opt->quotas[i].resource, res) == 0)
			v = k->opt->quotas[i].quantity;  /* the last one given wins, as for any option */
	return v;
}

/* Does another chosen pool take pods bigger than p's maxGPUsPerPod (a pod only p's limit refuses)? */
static int takes_more(const struct kq *k, const struct config_pool *p)
{
	size_t i;

	if (p->max_gpus_per_pod == 0)
		return 0;
	for (i = 0; i < k->n_pools; i++) {
		long long m = k->cfg->pools[k->pools[i]].max_gpus_per_pod;

		if (m == 0 || m > p->max_gpus_per_pod)
			return 1;
	}
	return 0;
}

/*
 * k->ns: the namespaces every chosen pool with a namespaces list admits, when
 * they are exact names (Kueue selects a ClusterQueue's namespaces by label,
 * which a glob is not); what Kueue cannot be told is noted.
 */
static int restrict_namespaces(struct kq *k)
{
	const struct config_pool *first = NULL;
	size_t i, j, n;

	for (i = 0; i < k->n_pools; i++) {
		const struct config_pool *p = &k->cfg->pools[k->pools[i]];

		if (takes_more(k, p))
			note(k, "pool %s takes at most %lld GPU%s per pod, fewer than another flavor's pool; Kueue "
			     "cannot be told: a bigger pod it assigns flavor %s is refused by gpu-admission when "
			     "Kueue starts its Job", p->name, p->max_gpus_per_pod, p->max_gpus_per_pod == 1 ? "" : "s",
			     p->name);
		if (p->pod_selector.match_labels.n > 0 || p->pod_selector.n_match_expressions > 0)
			note(k, "pool %s admits only pods its podSelector matches; Kueue cannot be told: another "
			     "pod it assigns flavor %s is refused by gpu-admission when Kueue starts its Job",
			     p->name, p->name);
		if (p->namespaces.n == 0)
			continue;
		for (j = 0; j < p->namespaces.n && !has_glob(p->namespaces.v[j]); j++)
			;
		if (j < p->namespaces.n) {
			note(k, "pool %s admits namespaces by glob; a namespaceSelector cannot say it: "
			     "select them on a label of your own", p->name);
			continue;
		}
		if (first == NULL)
			first = p;
	}
	if (first == NULL)
		return 0;
	if ((k->ns = calloc(first->namespaces.n, sizeof *k->ns)) == NULL) {
		error_set(k->err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	for (j = 0; j < first->namespaces.n; j++) {
		for (i = 0, n = 0; i < k->n_pools; i++) {
			const struct config_pool *p = &k->cfg->pools[k->pools[i]];

			n += p->namespaces.n == 0 || policy_match_any(&p->namespaces, first->namespaces.v[j]);
		}
		if (n == k->n_pools)
			k->ns[k->n_ns++] = first->namespaces.v[j];
	}
	if (k->n_ns == 0) {
		error_set(k->err, ERROR_CONFIG, "the pools of queue %s share no namespace: no namespace could "
			  "use every flavor; give them queues of their own (--pools)", k->queue);
		return -1;
	}
	return 0;
}

static void put_toleration(struct strbuf *t, const char *key, const char *op, const char *value, const char *effect)
{
	strbuf_addstr(t, "    - key: ");
	put_str(t, key);
	strbuf_addf(t, "\n      operator: %s\n", op);
	if (value[0] != '\0') {
		strbuf_addstr(t, "      value: ");
		put_str(t, value);
		strbuf_addch(t, '\n');
	}
	if (effect[0] != '\0')
		strbuf_addf(t, "      effect: %s\n", effect);
}

/* The pool's ResourceFlavor: its nodeSelector as nodeLabels, the tolerations its pods get. */
static int put_flavor(struct kq *k, const struct config_pool *p)
{
	const struct config *c = k->cfg;
	size_t i;

	if (!dns_subdomain(p->name)) {
		error_set(k->err, ERROR_CONFIG, "pool %s: a ResourceFlavor's name must be a DNS subdomain "
			  "(lower-case letters, digits, '-' and '.')", p->name);
		return -1;
	}
	if (p->node_selector.n > KUEUE_FLAVOR_LABELS_MAX || 1 + p->tolerations.n > KUEUE_FLAVOR_TOLERATIONS_MAX) {
		error_set(k->err, ERROR_CONFIG, "pool %s: a ResourceFlavor holds at most %d nodeLabels and %d "
			  "tolerations (the GPU taint's included)", p->name, KUEUE_FLAVOR_LABELS_MAX,
			  KUEUE_FLAVOR_TOLERATIONS_MAX);
		return -1;
	}
	strbuf_addf(&k->t, "---\napiVersion: " KUEUE_API_VERSION "\nkind: ResourceFlavor\nmetadata:\n  name: %s\n"
		    "spec:\n  nodeLabels:\n", p->name);
	for (i = 0; i < p->node_selector.n; i++) {
		strbuf_addstr(&k->t, "    ");
		put_str(&k->t, p->node_selector.v[i].key);
		strbuf_addstr(&k->t, ": ");
		put_str(&k->t, p->node_selector.v[i].value);
		strbuf_addch(&k->t, '\n');
	}
	strbuf_addstr(&k->t, "  tolerations:\n");
	put_toleration(&k->t, c->taint_key, c->taint_value[0] ? "Equal" : "Exists", c->taint_value, c->taint_effect);
	for (i = 0; i < p->tolerations.n; i++) {
		const struct config_toleration *o = &p->tolerations.v[i];

		put_toleration(&k->t, o->key, o->op, o->value, o->effect);
	}
	return 0;
}

static void put_namespace_selector(struct kq *k)
{
	size_t i;

	if (k->ns == NULL) {
		strbuf_addstr(&k->t, "  namespaceSelector: {}  # every namespace (Kueue reads no selector as none)\n");
		return;
	}
	strbuf_addstr(&k->t, "  namespaceSelector:  # the namespaces every flavor's pool admits\n"
		      "    matchExpressions:\n      - key: " NS_NAME_LABEL "\n        operator: In\n"
		      "        values:\n");
	for (i = 0; i < k->n_ns; i++) {
		strbuf_addstr(&k->t, "          - ");
		put_str(&k->t, k->ns[i]);
		strbuf_addch(&k->t, '\n');
	}
}

/* The ClusterQueue: one resource group, a flavor per chosen pool in the policy's order. */
static void put_queue(struct kq *k)
{
	size_t i, j;

	strbuf_addstr(&k->t, "---\n# Kueue tries the flavors in this order, the policy's (cheapest first). A\n"
		      "# nominalQuota of \"0\": nothing of that resource is admitted on that flavor\n"
		      "# (a resource its pool does not serve, or one to fill in: --quota RES=N).\n"
		      "# A CPU-only Job here would get a GPU flavor's cpu quota, and gpu-admission\n"
		      "# refuses its start: give CPU Jobs a queue of their own.\n");
	for (i = 0; i < k->used && k->notes != NULL; i = j + 1) {
		for (j = i; j < k->used && k->notes[j] != '\n'; j++)
			;
		strbuf_addf(&k->t, "# note: %.*s\n", (int)(j - i), k->notes + i);
	}
	strbuf_addf(&k->t, "apiVersion: " KUEUE_API_VERSION "\nkind: ClusterQueue\nmetadata:\n  name: %s\nspec:\n",
		    k->queue);
	put_namespace_selector(k);
	strbuf_addstr(&k->t, "  resourceGroups:\n    - coveredResources: [");
	for (i = 0; i < k->n_res; i++)
		strbuf_addf(&k->t, "%s\"%s\"", i ? ", " : "", k->res[i]);
	strbuf_addstr(&k->t, "]\n      flavors:\n");
	for (i = 0; i < k->n_pools; i++) {
		const struct config_pool *p = &k->cfg->pools[k->pools[i]];

		strbuf_addf(&k->t, "        - name: %s\n          resources:\n", p->name);
		for (j = 0; j < k->n_res; j++) {
			strbuf_addf(&k->t, "            - name: \"%s\"\n              nominalQuota: ", k->res[j]);
			put_str(&k->t, pool_serves(k->cfg, p, k->res[j]) ? quota_of(k, k->res[j]) : "0");
			strbuf_addch(&k->t, '\n');
		}
	}
}

static int put_local_queues(struct kq *k)
{
	size_t i;

	for (i = 0; i < k->opt->n_local_queues; i++) {
		const char *ns = k->opt->local_queues[i];

		if (k8s_name_label(ns, strlen(ns), 0) != NULL || !dns_subdomain(ns)) {
			error_set(k->err, ERROR_INPUT, "--local-queue %s: not a namespace name", ns);
			return -1;
		}
		strbuf_addf(&k->t, "---\napiVersion: " KUEUE_API_VERSION "\nkind: LocalQueue\nmetadata:\n"
			    "  name: %s\n  namespace: %s\nspec:\n  clusterQueue: %s\n", k->queue, ns, k->queue);
	}
	if (k->opt->n_local_queues == 0)
		strbuf_addf(&k->t, "# A namespace's LocalQueue (--local-queue NS prints it); a Job joins it with\n"
			    "# the label kueue.x-k8s.io/queue-name: %s\n"
			    "#   apiVersion: " KUEUE_API_VERSION "\n#   kind: LocalQueue\n"
			    "#   metadata: {name: %s, namespace: NS}\n#   spec: {clusterQueue: %s}\n",
			    k->queue, k->queue, k->queue);
	return 0;
}

char *kueue_config(const struct config *cfg, const struct kueue_options *opt, char *notes, size_t cap,
		   struct error *err)
{
	struct kq k = { .cfg = cfg, .opt = opt, .err = err, .t = STRBUF_INIT, .notes = notes, .cap = cap };
	char *text = NULL;
	size_t i;

	if (notes != NULL && cap > 0)
		notes[0] = '\0';
	k.queue = opt->queue != NULL ? opt->queue : KUEUE_QUEUE_DEFAULT;
	if (!dns_subdomain(k.queue)) {
		error_set(err, ERROR_INPUT, "--queue %s: a ClusterQueue's name must be a DNS subdomain", k.queue);
		return NULL;
	}
	if (choose_pools(&k) != 0 || cover_resources(&k) != 0 || check_quotas(&k) != 0 ||
	    restrict_namespaces(&k) != 0)
		goto out;
	strbuf_addstr(&k.t, "# Kueue objects for gpu-admission's pools (print-kueue-config): a ResourceFlavor\n"
		      "# per pool, its nodeLabels the pool's nodeSelector and its tolerations those\n"
		      "# gpu-admission gives the pool's pods, and a ClusterQueue over them. Fill in\n"
		      "# the nominalQuota values, then apply; print again when the pools change.\n");
	for (i = 0; i < cfg->n_pools; i++)
		if (put_flavor(&k, &cfg->pools[i]) != 0)
			goto out;
	put_queue(&k);
	if (put_local_queues(&k) != 0)
		goto out;
	if ((text = strbuf_detach(&k.t, NULL)) == NULL)
		error_set(err, ERROR_NOMEM, "out of memory");
out:
	strbuf_release(&k.t);
	free(k.ns);
	return text;
}
