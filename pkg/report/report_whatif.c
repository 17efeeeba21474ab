/*
 * report_whatif: `report --what-if NEW-POLICY`, the same snapshot judged by
 * another policy before it is rolled out. Three answers (README "Cost
 * report"): the Pending GPU pods it would place and on which node, the
 * running pods it would now refuse, and the idle GPU cost once the placed
 * pods run, at its pools' prices.
 *
 * Pods are judged as their creator wrote them, as the report judges CPU
 * pods: without spec.nodeName. A Pending pod the other policy admits is
 * patched as it would patch it, then placed greedily, pending pod by pending
 * pod, on the first GPU node in that policy's pool order whose labels it
 * selects, whose taints it tolerates and whose unrequested GPUs it fits
 * (the scheduler's filters the report knows; CPU, memory and pod affinity
 * are not in the snapshot).
 */
#include "report/report.h"
#include "report/report_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/patch.h"
#include "k8s/nodematch.h"
#include "policy/policy.h"

void report_whatif_set(struct report *r, const struct config *cfg, const char *name)
{
	r->whatif.cfg = cfg;
	r->whatif.name = name;
}

const char *report_whatif_todays_price_pool(const struct report *r, size_t *k)
{
	const struct config *cfg = r->whatif.cfg;

	for (; cfg != NULL && r->whatif.todays_prices != NULL && *k <= cfg->n_pools; (*k)++)
		if (r->whatif.todays_prices[*k]) {
			size_t at = (*k)++;

			return at < cfg->n_pools ? cfg->pools[at].name : "unpooled";
		}
	return NULL;
}

void report_whatif_free(struct report_whatif *w)
{
	size_t i;

	for (i = 0; i < w->placed.n; i++) {
		struct report_wi_placed *p = REPORT_AT(w->placed, struct report_wi_placed, i);

		free(p->ns);
		free(p->name);
		free(p->node);
	}
	free(w->placed.v);
	for (i = 0; i < w->refused.n; i++) {
		struct report_wi_refused *f = REPORT_AT(w->refused, struct report_wi_refused, i);

		free(f->ns);
		free(f->name);
		free(f->node);
		report_verdict_free(&f->verdict);
	}
	free(w->refused.v);
	free(w->todays_prices);
	memset(w, 0, sizeof *w);
}

static const char *meta_str(const json_t *pod, const char *key, const char *dflt)
{
	const char *v = report_str_at(json_object_get(pod, "metadata"), key);

	return v[0] ? v : dflt;
}

/*
 * p->wi_spec = pod's spec as the what-if policy admits it (its patch
 * applied), or NULL when it rejects the pod. 0, or -1 with ERROR_NOMEM.
 */
int report_whatif_pending(struct report *r, const json_t *pod, struct report_pending *p, struct error *err)
{
	struct policy_request req = { .pod = pod, .operation = POLICY_OP_CREATE };
	struct policy_result res;
	struct error perr = { 0 };
	json_t *copy = NULL;
	int rc = 0;

	if (policy_evaluate(r->whatif.cfg, &req, &res, &perr) != 0) {
		policy_result_free(&res);
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			return -1;
		}
		r->whatif.rejected_pending++;  /* unreadable to it: the API server would not get it placed */
		return 0;
	}
	if (res.verdict == POLICY_REJECT) {
		r->whatif.rejected_pending++;
		goto out;
	}
	if ((copy = json_deep_copy(pod)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		rc = -1;
		goto out;
	}
	/* A patch the policy built for this very pod applies; if not, the pod is placed as it is. */
	if (res.patch != NULL && patch_apply(copy, res.patch, &perr) != 0 && perr.kind == ERROR_NOMEM) {
		*err = perr;
		rc = -1;
		goto out;
	}
	p->wi_spec = json_incref(json_object_get(copy, "spec"));
out:
	json_decref(copy);
	policy_result_free(&res);
	return rc;
}

/* A running pod on node: listed when the what-if policy rejects it and today's does not. */
int report_whatif_running(struct report *r, const json_t *pod, size_t node, struct error *err)
{
	json_t *as_created = report_unbound(pod);
	int rc;

	if (as_created == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	rc = report_whatif_running_as(r, as_created, meta_str(pod, "namespace", "default"),
				      meta_str(pod, "name", meta_str(pod, "generateName", "(unnamed)")), node, err);
	json_decref(as_created);
	return rc;
}

int report_whatif_running_as(struct report *r, const json_t *as_created, const char *ns, const char *name,
			     size_t node, struct error *err)
{
	struct report_verdict now = { 0 }, then = { 0 };
	struct report_wi_refused *f;
	int rc = -1;

	if (report_judge_pod(r->cfg, as_created, &now, err) != 0 ||
	    report_judge_pod(r->whatif.cfg, as_created, &then, err) != 0)
		goto out;
	rc = 0;
	if (!then.would_reject || now.would_reject)
		goto out;
	if (report_list_push(&r->whatif.refused, sizeof *f, (void **)&f, err) != 0) {
		rc = -1;
		goto out;
	}
	if (f == NULL)
		goto out;  /* counted, not named */
	f->ns = strdup(ns);
	f->name = strdup(name);
	f->node = strdup(r->nodes[node].name);
	f->verdict = then;
	memset(&then, 0, sizeof then);
	if (f->ns == NULL || f->name == NULL || f->node == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		rc = -1;
	}
out:
	report_verdict_free(&now);
	report_verdict_free(&then);
	return rc;
}

/* What placement needs per node: its pool under the what-if policy, GPUs the placed pods take. */
struct wi_node {
	size_t pool;                              /* index into whatif.cfg->pools; n_pools = unpooled */
	long long taken[LIMIT_GPU_KINDS_MAX];     /* by placed pods, per the node's alloc[] entry */
	int placed;                               /* a placed pod runs there */
};

/* Does p fit node n's unrequested GPUs, once the pods placed before it run? */
static int fits(const struct report_node *n, const struct wi_node *w, const struct report_pending *p)
{
	size_t i, j;

	for (i = 0; i < p->n_gpus; i++) {
		for (j = 0; j < n->n_alloc; j++)
			if (strcmp(n->alloc[j].resource, p->gpus[i].resource) == 0)
				break;
		if (j == n->n_alloc || n->alloc[j].count - n->used[j] - w->taken[j] < p->gpus[i].count)
			return 0;
	}
	return 1;
}

static void take(const struct report_node *n, struct wi_node *w, const struct report_pending *p)
{
	size_t i, j;

	for (i = 0; i < p->n_gpus; i++)
		for (j = 0; j < n->n_alloc; j++)
			if (strcmp(n->alloc[j].resource, p->gpus[i].resource) == 0)
				w->taken[j] += p->gpus[i].count;
	w->placed = 1;
}

/* The first GPU node, in the what-if policy's pool order, that takes p; SIZE_MAX when none. */
static size_t place(const struct report *r, struct wi_node *wn, const struct report_pending *p)
{
	const json_t *tolerations = json_object_get(p->wi_spec, "tolerations");
	size_t k, i;

	for (k = 0; k <= r->whatif.cfg->n_pools; k++)
		for (i = 0; i < r->n_nodes; i++) {
			const struct report_node *n = &r->nodes[i];

			if (!n->seen || !n->gpu || wn[i].pool != k || !fits(n, &wn[i], p) ||
			    !nodematch_pod_selects(p->wi_spec, n->labels, n->name) ||
			    nodematch_untolerated(tolerations, n->taints) != NULL)
				continue;
			take(n, &wn[i], p);
			return i;
		}
	return SIZE_MAX;
}

static int record_placed(struct report *r, const struct report_pending *p, size_t node, size_t pool,
			 struct error *err)
{
	struct report_wi_placed *d;

	if (report_list_push(&r->whatif.placed, sizeof *d, (void **)&d, err) != 0)
		return -1;
	if (d == NULL)
		return 0;
	d->ns = strdup(p->ns);
	d->name = strdup(p->name);
	d->node = strdup(r->nodes[node].name);
	d->pool = pool < r->whatif.cfg->n_pools ? r->whatif.cfg->pools[pool].name : "unpooled";
	if (d->ns == NULL || d->name == NULL || d->node == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/*
 * Node i's hourly price: the what-if policy's for its pool there, else
 * today's for its pool today (noted in todays_prices), else none (-1).
 */
static double node_price(struct report *r, const struct wi_node *wn, size_t i)
{
	const struct config *cfg = r->whatif.cfg;
	const struct config_pool *pool = wn[i].pool < cfg->n_pools ? &cfg->pools[wn[i].pool] : NULL;
	const struct report_node *n = &r->nodes[i];
	const struct config_pool *today = n->pool >= 0 ? r->pools[n->pool].cfg : NULL;

	if (pool != NULL && pool->priced)
		return pool->price_per_node_hour;
	if (today == NULL || !today->priced)
		return -1;
	r->whatif.todays_prices[wn[i].pool] = 1;
	r->whatif.any_todays_prices = 1;
	return today->price_per_node_hour;
}

/* Idle GPU nodes and their cost once the placed pods run, at the what-if policy's prices. */
static void idle_after(struct report *r, const struct wi_node *wn)
{
	size_t i;

	for (i = 0; i < r->n_nodes; i++) {
		const struct report_node *n = &r->nodes[i];
		double price;

		if (!n->seen || !n->gpu)
			continue;
		price = node_price(r, wn, i);
		if (price >= 0)
			r->whatif.priced = 1;
		if (report_node_busy(n) || wn[i].placed)
			continue;
		r->whatif.idle_nodes++;
		if (price >= 0)
			r->whatif.idle_cost += price;
	}
}

int report_whatif_finish(struct report *r, struct error *err)
{
	const struct config *cfg = r->whatif.cfg;
	struct wi_node *wn = calloc(r->n_nodes ? r->n_nodes : 1, sizeof *wn);
	size_t i, node;
	int rc = -1;

	free(r->whatif.todays_prices);
	r->whatif.todays_prices = calloc(cfg->n_pools + 1, 1);
	if (wn == NULL || r->whatif.todays_prices == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	for (i = 0; i < r->n_nodes; i++)
		for (wn[i].pool = 0; wn[i].pool < cfg->n_pools; wn[i].pool++)
			if (report_labels_match(&cfg->pools[wn[i].pool].node_selector, r->nodes[i].labels))
				break;
	for (i = 0; i < r->pending.n; i++) {
		struct report_pending *p = REPORT_AT(r->pending, struct report_pending, i);

		/* Scheduling gates hold a pod whatever the policy says. */
		if (p->wi_spec != NULL && p->reason != REPORT_PENDING_GATED &&
		    (node = place(r, wn, p)) != SIZE_MAX &&
		    record_placed(r, p, node, wn[node].pool, err) != 0)
			goto out;
		json_decref(p->wi_spec);
		p->wi_spec = NULL;
	}
	idle_after(r, wn);
	rc = 0;
out:
	free(wn);
	return rc;
}
