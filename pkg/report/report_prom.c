/*
 * report_prom: the cost report in the Prometheus text exposition format
 * (0.0.4), gauges only, for a node-exporter textfile collector or a CronJob
 * pushing to a Pushgateway. Every pool and every reason gets its series, at
 * 0 too, so alerts and dashboards never see a series vanish.
 */
#include "report/report.h"

#include <stdlib.h>
#include <string.h>

/* A label value as the exposition format wants it: backslash, quote and newline escaped. */
static void label(FILE *out, const char *v)
{
	for (; *v != '\0'; v++) {
		if (*v == '\\' || *v == '"')
			fprintf(out, "\\%c", *v);
		else if (*v == '\n')
			fputs("\\n", out);
		else
			fputc(*v, out);
	}
}

static void family(FILE *out, const char *name, const char *help)
{
	fprintf(out, "# HELP gpu_admission_report_%s %s\n# TYPE gpu_admission_report_%s gauge\n", name, help, name);
}

/* One series per pool with nodes (and every configured pool), valued by get(). */
static void per_pool(const struct report *r, FILE *out, const char *name, const char *help, int priced_only,
		     double (*get)(const struct report_pool *))
{
	size_t i;

	family(out, name, help);
	for (i = 0; i < r->n_pools; i++) {
		const struct report_pool *p = &r->pools[i];

		if ((p->cfg == NULL && p->nodes == 0) || (priced_only && (p->cfg == NULL || !p->cfg->priced)))
			continue;
		fprintf(out, "gpu_admission_report_%s{pool=\"", name);
		label(out, p->name);
		fprintf(out, "\"} %.10g\n", get(p));
	}
}

static double nodes(const struct report_pool *p) { return (double)p->nodes; }
static double idle(const struct report_pool *p) { return (double)p->idle_nodes; }
static double alloc(const struct report_pool *p) { return (double)p->gpus_allocatable; }
static double req(const struct report_pool *p) { return (double)p->gpus_requested; }
static double util(const struct report_pool *p)
{
	return p->gpus_allocatable > 0 ? (double)p->gpus_requested / (double)p->gpus_allocatable : 0;
}
static double idle_cost(const struct report_pool *p) { return p->idle_cost; }
static double unreq_cost(const struct report_pool *p) { return p->unrequested_cost; }
static double price(const struct report_pool *p) { return p->cfg->price_per_node_hour; }

struct ns_route {
	const char *ns;
	unsigned bit;
};

static int cmp_ns_route(const void *a, const void *b)
{
	const struct ns_route *x = a, *y = b;
	int c = strcmp(x->ns, y->ns);

	return c != 0 ? c : x->bit < y->bit ? -1 : x->bit > y->bit;
}

/*
 * Named CPU pods on GPU nodes by their namespace and route (a pod with two
 * routes counts under both), sorted: only pairs that occur, as namespaces
 * come and go. The label is pod_namespace: a scrape's target sets namespace.
 * -1 when memory ran out.
 */
static int write_routes(const struct report *r, FILE *out)
{
	struct ns_route *v = calloc(r->cpu_pods.n * REPORT_NROUTES + 1, sizeof *v);
	size_t i, n = 0, b, run;

	if (v == NULL)
		return -1;
	for (i = 0; i < r->cpu_pods.n; i++) {
		const struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);

		for (b = 0; b < REPORT_NROUTES; b++)
			if (c->routes & (1u << b))
				v[n++] = (struct ns_route){ c->ns, 1u << b };
	}
	qsort(v, n, sizeof *v, cmp_ns_route);
	family(out, "cpu_pods_on_gpu_nodes_by_route",
	       "CPU-only pods on GPU nodes (not DaemonSets) by namespace and route (named ones only).");
	for (i = 0; i < n; i += run) {
		for (run = 1; i + run < n && cmp_ns_route(&v[i], &v[i + run]) == 0; run++)
			;
		fputs("gpu_admission_report_cpu_pods_on_gpu_nodes_by_route{pod_namespace=\"", out);
		label(out, v[i].ns);
		fprintf(out, "\",route=\"%s\"} %zu\n", report_route_name(v[i].bit), run);
	}
	free(v);
	return 0;
}

/* --what-if: the other policy's answers, beside today's gauges. */
static void write_whatif(const struct report *r, FILE *out)
{
	const struct report_whatif *w = &r->whatif;
	struct report_totals t;

	report_totals(r, &t);
	family(out, "whatif_placed_pending_gpu_pods", "Pending GPU pods the --what-if policy would place.");
	fprintf(out, "gpu_admission_report_whatif_placed_pending_gpu_pods %lu\n", w->placed.total);
	family(out, "whatif_rejected_pending_gpu_pods", "Pending GPU pods the --what-if policy rejects.");
	fprintf(out, "gpu_admission_report_whatif_rejected_pending_gpu_pods %lu\n", w->rejected_pending);
	family(out, "whatif_refused_running_pods", "Running pods the --what-if policy rejects and today's does not.");
	fprintf(out, "gpu_admission_report_whatif_refused_running_pods %lu\n", w->refused.total);
	family(out, "whatif_idle_gpu_nodes", "GPU nodes idle once the pods the --what-if policy places run.");
	fprintf(out, "gpu_admission_report_whatif_idle_gpu_nodes %lu\n", w->idle_nodes);
	if (!t.priced && !w->priced)
		return;
	family(out, "whatif_idle_node_cost_per_hour", "Hourly cost of those idle nodes at the --what-if policy's prices, today's for pools it does not price.");
	fprintf(out, "gpu_admission_report_whatif_idle_node_cost_per_hour %.10g\n", w->idle_cost);
	family(out, "whatif_idle_node_cost_change_per_hour", "The --what-if idle cost minus today's.");
	fprintf(out, "gpu_admission_report_whatif_idle_node_cost_change_per_hour %.10g\n", w->idle_cost - t.idle_cost);
}

int report_prom_write(const struct report *r, FILE *out)
{
	size_t i, k;

	per_pool(r, out, "gpu_nodes", "GPU nodes in the pool.", 0, nodes);
	per_pool(r, out, "idle_gpu_nodes", "GPU nodes on which no pod requests a GPU.", 0, idle);
	per_pool(r, out, "gpus_allocatable", "GPUs the pool's nodes offer (status.allocatable).", 0, alloc);
	per_pool(r, out, "gpus_requested", "GPUs requested by non-terminated pods on the pool's nodes.", 0, req);
	per_pool(r, out, "gpu_utilisation_ratio", "GPUs requested over GPUs allocatable (0 when none).", 0, util);
	per_pool(r, out, "node_price_per_hour", "pricePerNodeHour of the pool in the policy.", 1, price);
	per_pool(r, out, "idle_node_cost_per_hour", "Hourly cost of the pool's idle GPU nodes.", 1, idle_cost);
	per_pool(r, out, "unrequested_gpu_cost_per_hour", "Hourly cost of the pool's GPUs no pod requests.", 1,
		 unreq_cost);

	family(out, "cpu_pods_on_gpu_nodes", "CPU-only pods on the pool's GPU nodes, by owner (daemonset or other).");
	for (i = 0; i < r->n_pools; i++) {
		const struct report_pool *p = &r->pools[i];

		if (p->cfg == NULL && p->nodes == 0)
			continue;
		fputs("gpu_admission_report_cpu_pods_on_gpu_nodes{pool=\"", out);
		label(out, p->name);
		fprintf(out, "\",owner=\"daemonset\"} %lu\n", p->ds_pods);
		fputs("gpu_admission_report_cpu_pods_on_gpu_nodes{pool=\"", out);
		label(out, p->name);
		fprintf(out, "\",owner=\"other\"} %lu\n", p->cpu_pods);
	}

	if (write_routes(r, out) != 0)
		return -1;

	family(out, "misconfigured_gpu_nodes", "GPU nodes of the pool with a misconfiguration, by reason.");
	for (i = 0; i < r->n_pools; i++) {
		const struct report_pool *p = &r->pools[i];

		if (p->cfg == NULL && p->nodes == 0)
			continue;
		for (k = 0; k < REPORT_MIS_NKINDS; k++) {
			fputs("gpu_admission_report_misconfigured_gpu_nodes{pool=\"", out);
			label(out, p->name);
			fprintf(out, "\",reason=\"%s\"} %lu\n", report_misconfig_name((enum report_misconfig_kind)k),
				p->misconfigured[k]);
		}
	}

	family(out, "pending_gpu_pods", "GPU pods Pending, by the reason judged from the snapshot.");
	for (k = 0; k < REPORT_PENDING_NREASONS; k++)
		fprintf(out, "gpu_admission_report_pending_gpu_pods{reason=\"%s\"} %lu\n",
			report_pending_name((enum report_pending_reason)k), r->pending_by_reason[k]);
	if (r->pending.total > r->pending.n)
		fprintf(out, "gpu_admission_report_pending_gpu_pods{reason=\"not-judged\"} %lu\n",
			r->pending.total - (unsigned long)r->pending.n);

	family(out, "workload_templates", "Pod templates of workload objects in the input, by the audit's verdict.");
	for (k = 0; k < AUDIT_NVERDICTS; k++)
		fprintf(out, "gpu_admission_report_workload_templates{verdict=\"%s\"} %lu\n",
			audit_verdict_name((enum audit_verdict)k), r->audit.count[k]);

	family(out, "input_errors", "Items or inputs that could not be read.");
	fprintf(out, "gpu_admission_report_input_errors %lu\n",
		r->n_errors + (unsigned long)json_array_size(r->audit.errors));
	if (r->whatif.cfg != NULL)
		write_whatif(r, out);
	return ferror(out) ? -1 : 0;
}
