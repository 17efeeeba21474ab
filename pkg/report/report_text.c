/* report_text: the cost report for people: a summary line, the pools' table, then each finding. */
#include "report/report.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHOW_IDLE_MAX 20  /* idle node names listed per pool; the rest are counted */
#define REPORT_TEXT_TABLE_COLUMNS 81 /* the pools' table past its POOL column, in one piece */
#define REPORT_TEXT_WRAP_INDENT 4    /* what a wrapped line's continuation adds to its indent */

struct style {
	const char *bold, *red, *yellow, *green, *dim, *off;
};

static const struct style plain = { "", "", "", "", "", "" };
static const struct style colour = { "\033[1m", "\033[1;31m", "\033[33m", "\033[32m", "\033[2m", "\033[0m" };

/* "50%" or "-" when there is nothing to divide by. */
static void percent(long long part, long long whole, char *buf, size_t cap)
{
	if (whole <= 0)
		snprintf(buf, cap, "-");
	else
		snprintf(buf, cap, "%.0f%%", 100.0 * (double)part / (double)whole);
}

static void cost(const struct report_pool *p, double v, char *buf, size_t cap)
{
	if (p == NULL || (p->cfg != NULL && p->cfg->priced))
		snprintf(buf, cap, "%.2f", v);
	else
		snprintf(buf, cap, "-");
}

/* The pools' table: one row a pool, then the totals. costs: the cost columns, counts: the others. */
static void write_pool_rows(const struct report *r, FILE *out, const struct style *s, size_t w, int counts, int costs)
{
	struct report_totals t;
	char util[16], price[32], idle[32], unreq[32];
	size_t i;

	fprintf(out, "%s%-*s", s->bold, (int)w, "POOL");
	if (counts)
		fprintf(out, " %6s %5s %6s %6s %5s", "NODES", "IDLE", "GPUS", "REQ", "UTIL");
	if (costs)
		fprintf(out, " %9s %9s %9s", "$/NODE-H", "IDLE $/H", "UNREQ $/H");
	if (counts)
		fprintf(out, " %8s %8s", "DS PODS", "CPU PODS");
	fprintf(out, "%s\n", s->off);
	for (i = 0; i < r->n_pools; i++) {
		const struct report_pool *p = &r->pools[i];

		if (p->cfg == NULL && p->nodes == 0)
			continue;  /* no unpooled GPU node: no row */
		percent(p->gpus_requested, p->gpus_allocatable, util, sizeof util);
		if (p->cfg != NULL && p->cfg->priced)
			snprintf(price, sizeof price, "%.2f", p->cfg->price_per_node_hour);
		else
			snprintf(price, sizeof price, "-");
		cost(p, p->idle_cost, idle, sizeof idle);
		cost(p, p->unrequested_cost, unreq, sizeof unreq);
		fprintf(out, "%-*s", (int)w, p->name);
		if (counts)
			fprintf(out, " %6lu %s%5lu%s %6lld %6lld %5s", p->nodes, p->idle_nodes ? s->yellow : "",
				p->idle_nodes, p->idle_nodes ? s->off : "", p->gpus_allocatable, p->gpus_requested, util);
		if (costs)
			fprintf(out, " %9s %9s %9s", price, idle, unreq);
		if (counts)
			fprintf(out, " %8lu %s%8lu%s", p->ds_pods, p->cpu_pods ? s->red : "", p->cpu_pods,
				p->cpu_pods ? s->off : "");
		fputc('\n', out);
	}
	report_totals(r, &t);
	percent(t.gpus_requested, t.gpus_allocatable, util, sizeof util);
	if (t.priced) {
		snprintf(idle, sizeof idle, "%.2f", t.idle_cost);
		snprintf(unreq, sizeof unreq, "%.2f", t.unrequested_cost);
	} else {
		snprintf(idle, sizeof idle, "-");
		snprintf(unreq, sizeof unreq, "-");
	}
	fprintf(out, "%s%-*s", s->bold, (int)w, "total");
	if (counts)
		fprintf(out, " %6lu %5lu %6lld %6lld %5s", t.nodes, t.idle_nodes, t.gpus_allocatable, t.gpus_requested,
			util);
	if (costs)
		fprintf(out, " %9s %9s %9s", "", idle, unreq);
	if (counts)
		fprintf(out, " %8lu %8lu", t.ds_pods, t.cpu_pods);
	fprintf(out, "%s\n", s->off);
}

/*
 * The pools' table, in one piece when it fits cols, else as two: the counts,
 * then the costs (each narrower than REPORT_TEXT_SPLIT_WIDTH with a pool name
 * of 8), so that no row is cut by a narrow terminal.
 */
static void write_pools(const struct report *r, FILE *out, const struct style *s, size_t cols)
{
	size_t i, w = 8;

	for (i = 0; i < r->n_pools; i++)
		if (strlen(r->pools[i].name) > w)
			w = strlen(r->pools[i].name);
	if (w + REPORT_TEXT_TABLE_COLUMNS <= cols) {
		write_pool_rows(r, out, s, w, 1, 1);
		return;
	}
	write_pool_rows(r, out, s, w, 1, 0);
	fputc('\n', out);
	write_pool_rows(r, out, s, w, 0, 1);
}

static void write_idle(const struct report *r, FILE *out, const struct style *s)
{
	size_t i, p;

	for (p = 0; p < r->n_pools; p++) {
		unsigned long shown = 0;

		if (r->pools[p].idle_nodes == 0)
			continue;
		fprintf(out, "  %s%s%s:", s->yellow, r->pools[p].name, s->off);
		for (i = 0; i < r->n_nodes && shown < SHOW_IDLE_MAX; i++) {
			const struct report_node *n = &r->nodes[i];

			if (n->seen && n->gpu && n->pool == (int)p && !report_node_busy(n))
				fprintf(out, "%s %s (%lld GPU%s)", shown++ ? "," : "", n->name, n->gpus_allocatable,
					n->gpus_allocatable == 1 ? "" : "s");
		}
		if (r->pools[p].idle_nodes > shown)
			fprintf(out, ", and %lu more", r->pools[p].idle_nodes - shown);
		fputc('\n', out);
	}
}

static void write_routes(unsigned routes, const char *taint, FILE *out)
{
	unsigned bit;
	int first = 1;

	for (bit = 1; bit < (1u << REPORT_NROUTES); bit <<= 1) {
		if (!(routes & bit))
			continue;
		fprintf(out, "%s%s", first ? "" : "+", report_route_name(bit));
		if (bit == REPORT_ROUTE_UNTOLERATED && taint != NULL)
			fprintf(out, " %s", taint);
		first = 0;
	}
	if (first)
		fprintf(out, "unknown");
}

static void more(const struct report_list *l, FILE *out)
{
	if (l->total > l->n)
		fprintf(out, "  ... and %lu more (only the first %d are kept)\n", l->total - (unsigned long)l->n,
			REPORT_FINDINGS_MAX);
}

static void write_cpu_pods(const struct report *r, FILE *out, const struct style *s)
{
	size_t i;

	for (i = 0; i < r->cpu_pods.n; i++) {
		const struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);

		fprintf(out, "  %s/%s  on %s (%s)  via ", c->ns, c->name, c->node,
			c->pool >= 0 ? r->pools[c->pool].name : "-");
		write_routes(c->routes, c->taint, out);
		if (c->owner[0])
			fprintf(out, "  owner %s", c->owner);
		fprintf(out, "  policy: %s%s%s (%s)\n", c->policy.would_reject ? s->red : s->dim,
			c->policy.would_reject ? "would reject" : c->policy.exempt ? "exempt" : "would admit", s->off, c->policy.reason);
		if (c->policy.message[0])
			fprintf(out, "      %s\n", c->policy.message);
	}
	more(&r->cpu_pods, out);
}

static void write_daemonsets(const struct report *r, FILE *out)
{
	size_t i;

	for (i = 0; i < r->daemonsets.n; i++) {
		const struct report_daemonset *d = REPORT_AT(r->daemonsets, struct report_daemonset, i);

		if (d->pods > 0)
			fprintf(out, "  %s/%s  %lu pod%s\n", d->ns, d->name, d->pods, d->pods == 1 ? "" : "s");
	}
	more(&r->daemonsets, out);
}

static void write_pending(const struct report *r, FILE *out, const struct style *s)
{
	size_t i, k;

	for (i = 0; i < r->pending.n; i++) {
		const struct report_pending *p = REPORT_AT(r->pending, struct report_pending, i);

		fprintf(out, "  %s/%s ", p->ns, p->name);
		for (k = 0; k < p->n_gpus; k++)
			fprintf(out, " %s=%lld", p->gpus[k].resource, p->gpus[k].count);
		fprintf(out, "  %s%s%s: %s\n", s->yellow, report_pending_name(p->reason), s->off, p->message);
	}
	more(&r->pending, out);
}

static void write_misconfigs(const struct report *r, FILE *out, const struct style *s)
{
	size_t i;

	for (i = 0; i < r->misconfigs.n; i++) {
		const struct report_misconfig *m = REPORT_AT(r->misconfigs, struct report_misconfig, i);

		fprintf(out, "  %s (%s)  %s%s%s: %s\n", m->node, m->pool >= 0 ? r->pools[m->pool].name : "-", s->red,
			report_misconfig_name(m->kind), s->off, m->message);
	}
	more(&r->misconfigs, out);
}

static const char *str(const json_t *obj, const char *key)
{
	const char *v = json_string_value(json_object_get(obj, key));

	return v ? v : "";
}

static void write_workloads(const struct report *r, FILE *out, const struct style *s)
{
	const json_t *f;
	size_t i;

	json_array_foreach(r->audit.findings, i, f) {
		const char *v = str(f, "verdict");

		if (strcmp(v, "reject") != 0 && strcmp(v, "mutate") != 0)
			continue;
		fprintf(out, "  %s %s/%s  %s%s%s  %s%s%s  %s\n", str(f, "kind"), str(f, "namespace"), str(f, "name"),
			audit_path_open(str(f, "path")), str(f, "path"), audit_path_close(str(f, "path")),
			strcmp(v, "reject") == 0 ? s->red : s->yellow, v, s->off, str(f, "message"));
	}
}

int report_write_problems(const struct report *r, FILE *out, const char *prefix)
{
	const json_t *e;
	size_t i;

	json_array_foreach(r->errors, i, e) {
		const char *input = str(e, "input");

		fprintf(out, "%s: %s%s%s\n", prefix, input, input[0] ? ": " : "", str(e, "message"));
	}
	if (r->n_errors > json_array_size(r->errors))
		fprintf(out, "%s: ... and %lu more input errors\n", prefix,
			r->n_errors - (unsigned long)json_array_size(r->errors));
	if (audit_write_problems(&r->audit, out, prefix, 0) != 0)
		return -1;
	return ferror(out) ? -1 : 0;
}

static void heading(FILE *out, const struct style *s, const char *what, unsigned long n)
{
	fprintf(out, "\n%s%s: %lu%s\n", s->bold, what, n, s->off);
}

/* --what-if: the pools whose nodes kept today's prices, the other policy setting none. */
static void write_todays_prices(const struct report *r, FILE *out)
{
	const char *name;
	size_t k = 0, n = 0;

	if (!r->whatif.any_todays_prices)
		return;
	fprintf(out, "  At today's prices, to compare like with like: pools");
	while ((name = report_whatif_todays_price_pool(r, &k)) != NULL)
		fprintf(out, "%s %s", n++ > 0 ? "," : "", name);
	fprintf(out, ", which %s does not price\n", r->whatif.name);
}

/* --what-if: what the other policy would change, after today's findings. */
static void write_whatif(const struct report *r, FILE *out, const struct style *s)
{
	const struct report_whatif *w = &r->whatif;
	struct report_totals t;
	char before[64], after[64], change[64];
	size_t i;

	report_totals(r, &t);
	fprintf(out, "\n%sWhat if the policy were %s:%s\n", s->bold, w->name, s->off);
	fprintf(out, "  Pending GPU pods it would place: %lu of %lu (%lu it rejects)\n", w->placed.total,
		r->pending.total, w->rejected_pending);
	for (i = 0; i < w->placed.n; i++) {
		const struct report_wi_placed *d = REPORT_AT(w->placed, struct report_wi_placed, i);

		fprintf(out, "    %s/%s  %s%s%s: %s\n", d->ns, d->name, s->green, d->pool, s->off, d->node);
	}
	more(&w->placed, out);
	fprintf(out, "  Running pods it would now refuse: %lu\n", w->refused.total);
	for (i = 0; i < w->refused.n; i++) {
		const struct report_wi_refused *f = REPORT_AT(w->refused, struct report_wi_refused, i);

		fprintf(out, "    %s/%s on %s  %s%s%s: %s\n", f->ns, f->name, f->node, s->red, f->verdict.reason,
			s->off, f->verdict.message);
	}
	more(&w->refused, out);
	if (!t.priced && !w->priced) {
		fprintf(out, "  Idle GPU nodes: %lu -> %lu (no pool is priced)\n", t.idle_nodes, w->idle_nodes);
		return;
	}
	report_money(t.idle_cost, before, sizeof before);
	report_money(w->idle_cost, after, sizeof after);
	report_money(w->idle_cost >= t.idle_cost ? w->idle_cost - t.idle_cost : t.idle_cost - w->idle_cost, change,
		     sizeof change);
	fprintf(out, "  Idle GPU nodes: %lu -> %lu; idle cost %s -> %s (%s%s)\n", t.idle_nodes, w->idle_nodes, before,
		after, w->idle_cost >= t.idle_cost ? "+" : "-", change);
	write_todays_prices(r, out);
}

static int write_text(const struct report *r, FILE *out, int color, size_t cols)
{
	const struct style *s = color ? &colour : &plain;
	struct report_totals t;
	unsigned long workloads = r->audit.count[AUDIT_REJECT] + r->audit.count[AUDIT_MUTATE];
	char line[1024];

	report_totals(r, &t);
	report_summary_line(r, line, sizeof line);
	fprintf(out, "%s%s%s\n\n", s->bold, line, s->off);
	write_pools(r, out, s, cols);
	if (t.idle_nodes > 0) {
		heading(out, s, "Idle GPU nodes (no pod requests a GPU)", t.idle_nodes);
		write_idle(r, out, s);
	}
	if (r->cpu_pods.total > 0) {
		heading(out, s, "CPU pods on GPU nodes (not DaemonSets)", r->cpu_pods.total);
		write_cpu_pods(r, out, s);
	}
	if (t.ds_pods > 0) {
		heading(out, s, "DaemonSet pods on GPU nodes (expected: device plugin, DCGM, log agents)", t.ds_pods);
		write_daemonsets(r, out);
	}
	if (r->pending.total > 0) {
		heading(out, s, "GPU pods Pending", r->pending.total);
		write_pending(r, out, s);
	}
	if (r->misconfigs.total > 0) {
		heading(out, s, "Pool misconfiguration", r->misconfigs.total);
		write_misconfigs(r, out, s);
	}
	if (r->audit.templates > 0) {
		heading(out, s, "Workload pod templates (audit)", r->audit.templates);
		fprintf(out, "  %lu reject, %lu mutate, %lu ok, %lu exempt, %lu warn\n", r->audit.count[AUDIT_REJECT],
			r->audit.count[AUDIT_MUTATE], r->audit.count[AUDIT_OK], r->audit.count[AUDIT_EXEMPT],
			r->audit.count[AUDIT_WARN]);
		if (workloads > 0)
			write_workloads(r, out, s);
	}
	if (r->whatif.cfg != NULL)
		write_whatif(r, out, s);
	return ferror(out) ? -1 : 0;
}

int report_text_write(const struct report *r, FILE *out, int color)
{
	return write_text(r, out, color, SIZE_MAX);
}

/* How many columns s[0..n) takes on a terminal: its bytes but colour escapes and UTF-8 continuation bytes. */
static size_t visible(const char *s, size_t n)
{
	size_t i, cols = 0;

	for (i = 0; i < n; i++) {
		if (s[i] == '\033') {
			while (i < n && s[i] != 'm')
				i++;
		} else if (((unsigned char)s[i] & 0xc0) != 0x80) {
			cols++;
		}
	}
	return cols;
}

/* line[0..n) (no newline) onto out, wrapped at spaces to cols; a continuation indented past the line's own. */
static void write_fitted(FILE *out, const char *line, size_t n, size_t cols)
{
	size_t indent = strspn(line, " "), col = 0, pos = 0, cont = indent + REPORT_TEXT_WRAP_INDENT;

	if (indent > n)
		indent = n;
	while (pos < n) {
		size_t start = pos, end;

		while (pos < n && line[pos] == ' ')
			pos++;
		end = pos;
		while (end < n && line[end] != ' ')
			end++;
		/* A word that would pass cols starts a new line, unless the line holds nothing else yet. */
		if (col > cont && col + visible(line + start, end - start) > cols) {
			fprintf(out, "\n%*s", (int)cont, "");
			col = cont;
			start = pos;
		}
		fwrite(line + start, 1, end - start, out);
		col += visible(line + start, end - start);
		pos = end;
	}
	fputc('\n', out);
}

int report_text_write_fitted(const struct report *r, FILE *out, int color, size_t cols)
{
	char *text = NULL;
	size_t len = 0, i = 0;
	FILE *mem;
	int rc;

	if (cols == SIZE_MAX)
		return write_text(r, out, color, cols);
	if ((mem = open_memstream(&text, &len)) == NULL)
		return -1;
	rc = write_text(r, mem, color, cols);
	if (fclose(mem) != 0 || text == NULL)
		rc = -1;
	while (rc == 0 && i < len) {
		const char *nl = memchr(text + i, '\n', len - i);
		size_t n = nl ? (size_t)(nl - (text + i)) : len - i;

		write_fitted(out, text + i, n, cols);
		i += n + 1;
	}
	free(text);
	return rc == 0 && !ferror(out) ? 0 : -1;
}
