/* report_json: the cost report as one stable JSON document (fields: cmd/gpu-admission/README.md "Cost report"). */
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

#include "text/manifest.h"

/* Money and percentages to two decimals; NULL (JSON null) when unknown. */
static json_t *real2(double v)
{
	/* |v| stays far below 2^53 / 100: prices <= 1e6 per node, nodes <= REPORT_NODES_MAX. */
	return json_real((double)(long long)(v * 100.0 + (v < 0 ? -0.5 : 0.5)) / 100.0);
}

static json_t *ratio(long long part, long long whole)
{
	return whole > 0 ? real2(100.0 * (double)part / (double)whole) : json_null();
}

/* Appends v (stolen) to arr; returns -1 when v is NULL or the append fails. */
static int push(json_t *arr, json_t *v)
{
	return v == NULL || json_array_append_new(arr, v) != 0 ? -1 : 0;
}

static json_t *pools(const struct report *r)
{
	json_t *arr = json_array();
	size_t i, j, k;

	for (i = 0; arr != NULL && i < r->n_pools; i++) {
		const struct report_pool *p = &r->pools[i];
		int priced = p->cfg != NULL && p->cfg->priced;
		json_t *idle = json_array(), *mis = json_object(), *o;

		for (j = 0; idle != NULL && j < r->n_nodes; j++) {
			const struct report_node *n = &r->nodes[j];

			if (n->seen && n->gpu && n->pool == (int)i && !report_node_busy(n) &&
			    push(idle, json_string(n->name)) != 0)
				break;
		}
		for (k = 0; mis != NULL && k < REPORT_MIS_NKINDS; k++)
			json_object_set_new(mis, report_misconfig_name((enum report_misconfig_kind)k),
					    json_integer((json_int_t)p->misconfigured[k]));
		o = json_pack("{s:s, s:o, s:o, s:I, s:I, s:o, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:o}",
			      "name", p->name,
			      "pricePerNodeHour", priced ? json_real(p->cfg->price_per_node_hour) : json_null(),
			      "gpusPerNode", p->cfg && p->cfg->gpus_per_node ? json_integer(p->cfg->gpus_per_node)
									: json_null(),
			      "nodes", (json_int_t)p->nodes, "idleNodes", (json_int_t)p->idle_nodes,
			      "idleNodeNames", idle ? idle : json_null(),
			      "gpusAllocatable", (json_int_t)p->gpus_allocatable,
			      "gpusRequested", (json_int_t)p->gpus_requested,
			      "gpusUnrequested", (json_int_t)p->gpus_unrequested,
			      "utilisation", ratio(p->gpus_requested, p->gpus_allocatable),
			      "idleCostPerHour", priced ? real2(p->idle_cost) : json_null(),
			      "unrequestedCostPerHour", priced ? real2(p->unrequested_cost) : json_null(),
			      "gpuPods", (json_int_t)p->gpu_pods, "daemonSetPods", (json_int_t)p->ds_pods,
			      "cpuPods", (json_int_t)p->cpu_pods, "misconfigured", mis ? mis : json_null());
		if (push(arr, o) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *cpu_pods(const struct report *r)
{
	json_t *arr = json_array();
	size_t i;
	unsigned bit;

	for (i = 0; arr != NULL && i < r->cpu_pods.n; i++) {
		const struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);
		json_t *routes = json_array();

		for (bit = 1; routes != NULL && bit < (1u << REPORT_NROUTES); bit <<= 1)
			if ((c->routes & bit) && push(routes, json_string(report_route_name(bit))) != 0)
				break;
		if (push(arr, json_pack("{s:s, s:s, s:s, s:s?, s:s, s:o, s:s?, s:{s:s, s:s, s:s}}",
					"namespace", c->ns, "name", c->name, "node", c->node,
					"pool", c->pool >= 0 ? r->pools[c->pool].name : NULL, "owner", c->owner,
					"routes", routes ? routes : json_null(), "untoleratedTaint", c->taint,
					"policy", "verdict", c->policy.would_reject ? "reject" : c->policy.exempt ? "exempt" : "admit",
					"reason", c->policy.reason, "message", c->policy.message)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *daemonsets(const struct report *r)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr != NULL && i < r->daemonsets.n; i++) {
		const struct report_daemonset *d = REPORT_AT(r->daemonsets, struct report_daemonset, i);

		if (d->pods > 0 && push(arr, json_pack("{s:s, s:s, s:I}", "namespace", d->ns, "name", d->name,
						       "pods", (json_int_t)d->pods)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *pending(const struct report *r)
{
	json_t *arr = json_array();
	size_t i, k;

	for (i = 0; arr != NULL && i < r->pending.n; i++) {
		const struct report_pending *p = REPORT_AT(r->pending, struct report_pending, i);
		json_t *gpus = json_object();

		for (k = 0; gpus != NULL && k < p->n_gpus; k++)
			json_object_set_new(gpus, p->gpus[k].resource, json_integer(p->gpus[k].count));
		if (push(arr, json_pack("{s:s, s:s, s:o, s:s, s:s}", "namespace", p->ns, "name", p->name,
					"gpus", gpus ? gpus : json_null(), "reason", report_pending_name(p->reason),
					"message", p->message ? p->message : "")) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

static json_t *misconfigs(const struct report *r)
{
	json_t *arr = json_array();
	size_t i;

	for (i = 0; arr != NULL && i < r->misconfigs.n; i++) {
		const struct report_misconfig *m = REPORT_AT(r->misconfigs, struct report_misconfig, i);

		if (push(arr, json_pack("{s:s, s:s?, s:s, s:s}", "node", m->node,
					"pool", m->pool >= 0 ? r->pools[m->pool].name : NULL,
					"reason", report_misconfig_name(m->kind), "message", m->message)) != 0) {
			json_decref(arr);
			return NULL;
		}
	}
	return arr;
}

/* The audit's findings that would change something, with the fields that mean something here. */
static json_t *workloads(const struct report *r)
{
	static const char *const keys[] = { "kind", "namespace", "name", "path", "verdict", "reason", "message",
					     "changes", "pool" };
	json_t *arr = json_array(), *f;
	size_t i, k;

	json_array_foreach(r->audit.findings, i, f) {
		const char *v = json_string_value(json_object_get(f, "verdict"));
		json_t *o;

		if (arr == NULL)
			break;
		if (v == NULL || (strcmp(v, "reject") != 0 && strcmp(v, "mutate") != 0))
			continue;
		if ((o = json_object()) == NULL || push(arr, o) != 0) {
			json_decref(arr);
			return NULL;
		}
		for (k = 0; k < sizeof keys / sizeof keys[0]; k++)
			json_object_set(o, keys[k], json_object_get(f, keys[k]));
	}
	return arr;
}

static json_t *errors(const struct report *r)
{
	json_t *arr = json_deep_copy(r->errors), *e;
	size_t i;

	json_array_foreach(r->audit.errors, i, e)
		if (arr != NULL && push(arr, json_pack("{s:O, s:O}", "input", json_object_get(e, "file"),
						       "message", json_object_get(e, "message"))) != 0) {
			json_decref(arr);
			return NULL;
		}
	return arr;
}

/*
 * --what-if: {policy, placed[], rejectedPending, refused[], idleNodes,
 * idleCostPerHour, todaysPricesFor[]}: the last names the what-if pools
 * whose nodes kept today's prices, the policy setting none.
 */
static json_t *whatif(const struct report *r)
{
	const struct report_whatif *w = &r->whatif;
	json_t *placed = json_array(), *refused = json_array(), *todays = json_array();
	struct report_totals t;
	const char *name;
	size_t i, k = 0;
	int priced;

	report_totals(r, &t);
	priced = t.priced || w->priced;
	for (i = 0; placed != NULL && i < w->placed.n; i++) {
		const struct report_wi_placed *d = REPORT_AT(w->placed, struct report_wi_placed, i);

		if (push(placed, json_pack("{s:s, s:s, s:s, s:s}", "namespace", d->ns, "name", d->name, "pool", d->pool,
					   "node", d->node)) != 0)
			goto fail;
	}
	for (i = 0; refused != NULL && i < w->refused.n; i++) {
		const struct report_wi_refused *f = REPORT_AT(w->refused, struct report_wi_refused, i);

		if (push(refused, json_pack("{s:s, s:s, s:s, s:s, s:s}", "namespace", f->ns, "name", f->name, "node",
					    f->node, "reason", f->verdict.reason, "message", f->verdict.message)) != 0)
			goto fail;
	}
	while (todays != NULL && (name = report_whatif_todays_price_pool(r, &k)) != NULL)
		if (push(todays, json_string(name)) != 0)
			goto fail;
	if (placed == NULL || refused == NULL || todays == NULL)
		goto fail;
	return json_pack("{s:s, s:I, s:o, s:I, s:I, s:o, s:{s:I, s:I}, s:{s:o, s:o, s:o}, s:o}", "policy", w->name,
			 "placedPendingGpuPods", (json_int_t)w->placed.total, "placed", placed,
			 "rejectedPendingGpuPods", (json_int_t)w->rejected_pending,
			 "refusedRunningPods", (json_int_t)w->refused.total, "refused", refused,
			 "idleNodes", "before", (json_int_t)t.idle_nodes, "after", (json_int_t)w->idle_nodes,
			 "idleCostPerHour", "before", priced ? real2(t.idle_cost) : json_null(),
			 "after", priced ? real2(w->idle_cost) : json_null(),
			 "change", priced ? real2(w->idle_cost - t.idle_cost) : json_null(), "todaysPricesFor", todays);
fail:
	json_decref(placed);
	json_decref(refused);
	json_decref(todays);
	return NULL;
}

int report_json_write(const struct report *r, FILE *out, int exit_code, char fmt)
{
	struct report_totals t;
	char line[1024];
	json_t *by_reason = json_object(), *doc;
	size_t k;
	int rc;

	report_totals(r, &t);
	report_summary_line(r, line, sizeof line);
	for (k = 0; by_reason != NULL && k < REPORT_PENDING_NREASONS; k++)
		json_object_set_new(by_reason, report_pending_name((enum report_pending_reason)k),
				    json_integer((json_int_t)r->pending_by_reason[k]));
	doc = json_pack("{s:{s:s, s:I, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:i},"
			" s:o, s:o, s:o, s:o, s:o, s:o, s:o,"
			" s:{s:I, s:I, s:I, s:I, s:I, s:I}, s:o}",
			"summary", "line", line, "gpuNodes", (json_int_t)t.nodes, "idleNodes", (json_int_t)t.idle_nodes,
			"gpusAllocatable", (json_int_t)t.gpus_allocatable, "gpusRequested", (json_int_t)t.gpus_requested,
			"utilisation", ratio(t.gpus_requested, t.gpus_allocatable),
			"idleCostPerHour", t.priced ? real2(t.idle_cost) : json_null(),
			"unrequestedCostPerHour", t.priced ? real2(t.unrequested_cost) : json_null(),
			"cpuPodsOnGpuNodes", (json_int_t)t.cpu_pods, "daemonSetPodsOnGpuNodes", (json_int_t)t.ds_pods,
			"pendingGpuPods", (json_int_t)r->pending.total, "misconfigurations", (json_int_t)t.misconfigured,
			"items", (json_int_t)r->items, "nodes", (json_int_t)r->node_items, "pods", (json_int_t)r->pod_items,
			"terminatedPods", (json_int_t)r->terminated_pods,
			"errors", (json_int_t)(r->n_errors + json_array_size(r->audit.errors)), "exitCode", exit_code,
			"pools", pools(r), "cpuPods", cpu_pods(r), "daemonSets", daemonsets(r),
			"pendingGpuPods", pending(r), "pendingByReason", by_reason ? by_reason : json_null(),
			"misconfigurations", misconfigs(r), "workloads", workloads(r),
			"workloadTemplates", "templates", (json_int_t)r->audit.templates,
			"ok", (json_int_t)r->audit.count[AUDIT_OK], "mutate", (json_int_t)r->audit.count[AUDIT_MUTATE],
			"reject", (json_int_t)r->audit.count[AUDIT_REJECT], "exempt", (json_int_t)r->audit.count[AUDIT_EXEMPT],
			"warn", (json_int_t)r->audit.count[AUDIT_WARN],
			"errors", errors(r));
	if (doc != NULL && r->whatif.cfg != NULL && json_object_set_new(doc, "whatIf", whatif(r)) != 0) {
		json_decref(doc);
		return -1;
	}
	if (doc == NULL)
		return -1;
	if (fmt == 'y') {
		struct error ignored;
		size_t len = 0;
		char *text = manifest_to_yaml(doc, &len, &ignored);

		rc = text != NULL && fwrite(text, 1, len, out) == len ? 0 : -1;
		free(text);
	} else {
		rc = json_dumpf(doc, out, JSON_INDENT(2) | JSON_REAL_PRECISION(12));
		fputc('\n', out);
	}
	json_decref(doc);
	return rc == 0 && !ferror(out) ? 0 : -1;
}
