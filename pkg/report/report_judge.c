/*
 * report_judge: what the report can say only once every input is read (the
 * nodes a pod names may come after it): pool totals and idle cost, pool
 * misconfiguration, how CPU pods reached GPU nodes, why GPU pods are Pending.
 */
#include "report/report.h"
#include "report/report_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/nodematch.h"
#include "base/quantity.h"

/* ==== Judging what needs every input ==== */

static int misconfig(struct report *r, enum report_misconfig_kind kind, size_t node, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static int misconfig(struct report *r, enum report_misconfig_kind kind, size_t node, const char *fmt, ...)
{
	struct report_misconfig *m;
	struct error err;
	char msg[1024];
	va_list ap;

	r->pools[r->nodes[node].pool].misconfigured[kind]++;
	if (report_list_push(&r->misconfigs, sizeof *m, (void **)&m, &err) != 0)
		return -1;
	if (m == NULL)
		return 0;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	m->kind = kind;
	m->pool = r->nodes[node].pool;
	m->node = strdup(r->nodes[node].name);
	m->message = strdup(msg);
	return m->node && m->message ? 0 : -1;
}

static void taint_text(const struct config *cfg, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s%s%s:%s", cfg->taint_key, cfg->taint_value[0] ? "=" : "", cfg->taint_value,
		 cfg->taint_effect);
}

/*
 * A GPU resource that is a part of a physical GPU: a MIG slice
 * (nvidia.com/mig-3g.20gb) or a time-sliced replica (nvidia.com/gpu.shared).
 * Its weight is the share of a GPU it holds, in the GPU's own units: a MIG
 * profile's compute slices (the 3 of 3g), 1 for a replica.
 */
static int fractional_gpu(const char *resource, long long *weight)
{
	const char *mig = strstr(resource, "/mig-");
	size_t len = strlen(resource);
	long long g = 0;

	*weight = 1;
	if (mig != NULL) {
		for (mig += 5; *mig >= '0' && *mig <= '9' && g < REPORT_MIG_SLICES_MAX; mig++)
			g = g * 10 + (*mig - '0');
		if (*mig == 'g' && g > 0 && g <= REPORT_MIG_SLICES_MAX)
			*weight = g;
		return 1;
	}
	return len > 7 && strcmp(resource + len - 7, ".shared") == 0;
}

/*
 * The hourly cost of node n's GPUs no pod requests (README "Cost report"):
 * price / GPUs per node for each physical GPU unrequested. Without
 * gpusPerNode, each allocatable unit is one GPU of the node. With it, a whole
 * GPU resource counts one GPU a unit, and the GPUs left (gpusPerNode minus
 * the whole ones) are shared by the fractional resources (MIG slices,
 * replicas) in proportion to their weight: 56 idle 1g slices on an 8-GPU
 * node are 8 GPUs, never 56. Never more than the node's price.
 */
static double unrequested_cost(const struct config_pool *cfg, const struct report_node *n)
{
	double price = cfg->price_per_node_hour, whole_free = 0, frac_free = 0, frac_all = 0, gpus;
	long long whole = 0, weight;
	size_t j;

	if (cfg->gpus_per_node <= 0) {
		if (n->gpus_allocatable <= 0 || n->gpus_requested >= n->gpus_allocatable)
			return 0;
		return price * (double)(n->gpus_allocatable - n->gpus_requested) / (double)n->gpus_allocatable;
	}
	for (j = 0; j < n->n_alloc; j++) {
		long long free_ = n->alloc[j].count > n->used[j] ? n->alloc[j].count - n->used[j] : 0;

		if (fractional_gpu(n->alloc[j].resource, &weight)) {
			frac_all += (double)n->alloc[j].count * (double)weight;
			frac_free += (double)free_ * (double)weight;
		} else {
			whole = quantity_add(whole, n->alloc[j].count);
			whole_free += (double)free_;
		}
	}
	gpus = whole_free;
	if (frac_all > 0 && whole < cfg->gpus_per_node)
		gpus += (double)(cfg->gpus_per_node - whole) * frac_free / frac_all;
	if (gpus > (double)cfg->gpus_per_node)
		gpus = (double)cfg->gpus_per_node;
	return price * gpus / (double)cfg->gpus_per_node;
}

static int judge_nodes(struct report *r)
{
	size_t first[65], i;  /* each pool's first node, for the taint comparison (pools <= 64) */
	char gpu_taint[400];

	taint_text(r->cfg, gpu_taint, sizeof gpu_taint);
	for (i = 0; i < r->n_pools && i < 65; i++)
		first[i] = SIZE_MAX;
	for (i = 0; i < r->n_nodes; i++) {
		struct report_node *n = &r->nodes[i];
		struct report_pool *p;
		long long unrequested;

		if (!n->seen || !n->gpu)
			continue;
		p = &r->pools[n->pool];
		p->nodes++;
		p->gpus_allocatable = quantity_add(p->gpus_allocatable, n->gpus_allocatable);
		p->gpus_requested = quantity_add(p->gpus_requested, n->gpus_requested);
		unrequested = n->gpus_allocatable > n->gpus_requested ? n->gpus_allocatable - n->gpus_requested : 0;
		p->gpus_unrequested = quantity_add(p->gpus_unrequested, unrequested);
		p->gpu_pods += n->gpu_pods;
		p->ds_pods += n->ds_pods;
		p->cpu_pods += n->cpu_pods;
		if (!report_node_busy(n))
			p->idle_nodes++;
		if (p->cfg != NULL && p->cfg->priced) {
			if (!report_node_busy(n))
				p->idle_cost += p->cfg->price_per_node_hour;
			p->unrequested_cost += unrequested_cost(p->cfg, n);
		}
		if (!n->tainted &&
		    misconfig(r, REPORT_MIS_UNTAINTED, i, "GPU node without the GPU taint %s: CPU pods can be "
			      "scheduled onto it", gpu_taint) != 0)
			return -1;
		if (n->tainted && n->gpus_allocatable == 0 && n->dra_devices == 0 &&
		    misconfig(r, REPORT_MIS_NO_ALLOCATABLE, i, "tainted %s but status.allocatable offers no GPU "
			      "(and no GPU driver's ResourceSlice in the input names it): is the device plugin, or "
			      "the DRA driver, running? GPU pods cannot be scheduled here", gpu_taint) != 0)
			return -1;
		if (p->cfg == NULL || (size_t)n->pool >= 65)
			continue;
		if (first[n->pool] == SIZE_MAX) {
			first[n->pool] = i;
		} else if (strcmp(r->nodes[first[n->pool]].taint_sig, n->taint_sig) != 0 &&
			   misconfig(r, REPORT_MIS_TAINTS_DIFFER, i, "taints [%s] differ from [%s] on %s, in the same "
				     "pool", n->taint_sig, r->nodes[first[n->pool]].taint_sig,
				     r->nodes[first[n->pool]].name) != 0) {
			return -1;
		}
	}
	return 0;
}

/* CPU pods: keep those on GPU nodes, and add what the node tells about how they got there. */
static int judge_cpu_pods(struct report *r)
{
	size_t i, kept = 0;
	unsigned long total = 0;

	for (i = 0; i < r->n_nodes; i++)
		if (r->nodes[i].seen && r->nodes[i].gpu)
			total += r->nodes[i].cpu_pods;
	for (i = 0; i < r->cpu_pods.n; i++) {
		struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);
		const struct report_node *n = &r->nodes[c->node_index];
		const json_t *t;

		if (!n->seen || !n->gpu) {
			free(c->ns);
			free(c->name);
			free(c->node);
			free(c->owner);
			report_verdict_free(&c->policy);
			report_verdict_free(&c->pinned);
			json_decref(c->tolerations);
			continue;
		}
		c->pool = n->pool;
		if (!n->tainted)
			c->routes |= REPORT_ROUTE_UNTAINTED;
		if ((t = nodematch_untolerated(c->tolerations, n->taints)) != NULL) {
			char buf[600];

			c->routes |= REPORT_ROUTE_UNTOLERATED;
			snprintf(buf, sizeof buf, "%s%s%s:%s", report_str_at(t, "key"), report_str_at(t, "value")[0] ? "=" : "",
				 report_str_at(t, "value"), report_str_at(t, "effect"));
			if ((c->taint = strdup(buf)) == NULL)
				return -1;
			if (c->pinned.reason != NULL) {
				/* Only its creator can have put it on a node whose taint it does not tolerate. */
				report_verdict_free(&c->policy);
				c->policy = c->pinned;
				memset(&c->pinned, 0, sizeof c->pinned);
			}
		}
		json_decref(c->tolerations);
		c->tolerations = NULL;
		if (kept != i)
			*REPORT_AT(r->cpu_pods, struct report_cpu_pod, kept) = *c;
		kept++;
	}
	r->cpu_pods.n = kept;
	r->cpu_pods.total = total;
	return 0;
}

/* The requested count of resource fits node n: 2 free, 1 allocatable only, 0 not even that. */
static int gpus_fit(const struct report_node *n, const struct report_pending *p, long long *max_alloc)
{
	size_t i, j;
	int fit = 2;

	for (i = 0; i < p->n_gpus; i++) {
		long long alloc = 0, used = 0;

		for (j = 0; j < n->n_alloc; j++)
			if (strcmp(n->alloc[j].resource, p->gpus[i].resource) == 0) {
				alloc = n->alloc[j].count;
				used = n->used[j];
			}
		if (alloc > max_alloc[i])
			max_alloc[i] = alloc;
		if (alloc < p->gpus[i].count)
			fit = 0;
		else if (fit == 2 && alloc - used < p->gpus[i].count)
			fit = 1;
	}
	return fit;
}

/*
 * Why a Pending GPU pod p is Pending: one reason, the first of these that
 * holds, in this order.
 *  - A scheduling gate: the scheduler does not try a gated pod at all (the
 *    SchedulingGates plugin holds it before the queue), so no node is the
 *    cause yet, whatever the nodes say.
 *  - A GPU resource no pool serves: a fact of the policy, not of the nodes,
 *    which no node added and no autoscaler can change.
 *  - Then the nodes, as a funnel, each stage a subset of the one before:
 *    enough of each GPU allocatable (fit), matched by the pod's nodeSelector
 *    and required affinity (selected), every taint tolerated (tolerated),
 *    the GPUs unrequested by other pods (free). The first stage that leaves
 *    no node is the reason, and its message counts the stage before it:
 *    counts that only mean something in this order. The stages go from
 *    what the pod can never get (the hardware: with no node fitting, the
 *    message says whether none offers the resource or none enough of it)
 *    through what the pod or the policy chose (selector, tolerations) to
 *    what passes by itself (GPUs in use: waiting, or the autoscaler), so a
 *    transient cause is named only when no lasting one stands in the way.
 *  - Else every GPU stage passes somewhere: the cause is one the report
 *    does not model (CPU, memory, pod affinity, quota), or the scheduler
 *    has not run yet.
 * p->spec is released; p->message is new. -1 only when out of memory.
 */
static int judge_pending(struct report *r, struct report_pending *p)
{
	const json_t *gates = json_object_get(p->spec, "schedulingGates");
	const json_t *tolerations = json_object_get(p->spec, "tolerations"), *taint = NULL;
	long long max_alloc[LIMIT_GPU_KINDS_MAX] = { 0 };
	unsigned long fit = 0, selected = 0, tolerated = 0, free_ = 0;
	char msg[1024], t[600];
	size_t i, k;

	msg[0] = '\0';
	if (json_array_size(gates) > 0) {
		p->reason = REPORT_PENDING_GATED;
		snprintf(msg, sizeof msg, "held by scheduling gate %s", report_str_at(json_array_get(gates, 0), "name"));
		goto done;
	}
	for (k = 0; k < p->n_gpus; k++) {
		for (i = 0; i < r->cfg->n_pools; i++)
			if (report_pool_serves(r->cfg, &r->cfg->pools[i], p->gpus[k].resource))
				break;
		if (i == r->cfg->n_pools) {
			p->reason = REPORT_PENDING_UNSERVED;
			snprintf(msg, sizeof msg, "no GPU pool serves %s", p->gpus[k].resource);
			goto done;
		}
	}
	for (i = 0; i < r->n_nodes; i++) {
		const struct report_node *n = &r->nodes[i];
		const json_t *untol;
		int f;

		if (!n->seen || !n->gpu || (f = gpus_fit(n, p, max_alloc)) == 0)
			continue;
		fit++;
		if (!nodematch_pod_selects(p->spec, n->labels, n->name))
			continue;
		selected++;
		if ((untol = nodematch_untolerated(tolerations, n->taints)) != NULL) {
			if (taint == NULL)
				taint = untol;
			continue;
		}
		tolerated++;
		if (f == 2)
			free_++;
	}
	for (k = 0; k < p->n_gpus && fit == 0; k++) {
		if (max_alloc[k] == 0) {
			p->reason = REPORT_PENDING_UNSERVED;
			snprintf(msg, sizeof msg, "no node offers %s in status.allocatable", p->gpus[k].resource);
			goto done;
		}
		if (max_alloc[k] < p->gpus[k].count) {
			p->reason = REPORT_PENDING_TOO_MANY;
			snprintf(msg, sizeof msg, "requests %lld %s; the largest node offers %lld", p->gpus[k].count,
				 p->gpus[k].resource, max_alloc[k]);
			goto done;
		}
	}
	if (selected == 0) {
		p->reason = REPORT_PENDING_SELECTOR;
		snprintf(msg, sizeof msg, "its nodeSelector and required node affinity match none of the %lu GPU "
			 "node(s) with enough %s", fit, p->n_gpus ? p->gpus[0].resource : "GPUs");
	} else if (tolerated == 0) {
		p->reason = REPORT_PENDING_TOLERATION;
		snprintf(t, sizeof t, "%s%s%s:%s", report_str_at(taint, "key"), report_str_at(taint, "value")[0] ? "=" : "",
			 report_str_at(taint, "value"), report_str_at(taint, "effect"));
		snprintf(msg, sizeof msg, "no toleration for %s, which the %lu GPU node(s) it selects carry", t,
			 selected);
	} else if (free_ == 0) {
		p->reason = REPORT_PENDING_FULL;
		snprintf(msg, sizeof msg, "none of the %lu GPU node(s) it may use has %lld %s free: other pods "
			 "request them (waiting for capacity or the autoscaler)", tolerated,
			 p->n_gpus ? p->gpus[0].count : 0, p->n_gpus ? p->gpus[0].resource : "GPUs");
	} else {
		p->reason = REPORT_PENDING_OTHER;
		snprintf(msg, sizeof msg, "%lu GPU node(s) fit its GPUs, selector and taints: the cause is "
			 "elsewhere (CPU, memory, pod affinity, quota), or the scheduler has not run yet", free_);
	}
done:
	r->pending_by_reason[p->reason]++;
	json_decref(p->spec);
	p->spec = NULL;
	return (p->message = strdup(msg)) == NULL ? -1 : 0;
}

int report_finish(struct report *r, struct error *err)
{
	size_t i;

	if (r->finished)
		return 0;
	r->finished = 1;
	/* Without nodes there is nothing to report on: the pods' placement needs them (exit 2). */
	if (r->node_items == 0 && r->n_errors == 0 && json_array_size(r->audit.errors) == 0 &&
	    report_add_error(r, "", "no Node in the input: the report needs the nodes and the pods "
		      "(kubectl get nodes,pods -A -o json)", err) != 0)
		return -1;
	for (i = 0; i + 1 < r->n_deferred; i += 2)
		if (r->nodes[r->deferred[i]].seen && r->nodes[r->deferred[i]].gpu)
			REPORT_AT(r->daemonsets, struct report_daemonset, r->deferred[i + 1])->pods++;
	if (report_dra_finish(r, err) != 0)
		return -1;
	if (judge_nodes(r) != 0 || judge_cpu_pods(r) != 0)
		goto nomem;
	for (i = 0; i < r->pending.n; i++)
		if (judge_pending(r, REPORT_AT(r->pending, struct report_pending, i)) != 0)
			goto nomem;
	if (report_dra_pending(r, err) != 0)
		return -1;
	return r->whatif.cfg != NULL ? report_whatif_finish(r, err) : 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}
