/*
 * report_summary: what the report says in a word or a line, whatever its
 * format: the stable names of reasons, kinds and routes (JSON, metrics), the
 * totals, money, the summary line, the exit code. Apart from the model
 * (report.c), which only counts, so every output (text, JSON, Prometheus)
 * names a thing the same way.
 */
#include "report/report_int.h"

#include <stdio.h>
#include <string.h>

#include "base/quantity.h"

/* ==== Names ==== */

const char *report_pending_name(enum report_pending_reason reason)
{
	static const char *const names[REPORT_PENDING_NREASONS] = {
		"scheduling-gated", "unserved-resource", "too-many-gpus", "selector-mismatch",
		"missing-toleration", "gpus-in-use", "class-unserved", "claim-unallocated", "other",
	};

	return reason < REPORT_PENDING_NREASONS ? names[reason] : "other";
}

const char *report_misconfig_name(enum report_misconfig_kind kind)
{
	static const char *const names[REPORT_MIS_NKINDS] = {
		"gpu-node-untainted", "no-gpu-allocatable", "pool-taints-differ",
	};

	return kind < REPORT_MIS_NKINDS ? names[kind] : "";
}

const char *report_route_name(unsigned route_bit)
{
	switch (route_bit) {
	case REPORT_ROUTE_TOLERATION:  return "toleration";
	case REPORT_ROUTE_WILDCARD:    return "wildcard-toleration";
	case REPORT_ROUTE_SELECTOR:    return "nodeSelector";
	case REPORT_ROUTE_AFFINITY:    return "affinity";
	case REPORT_ROUTE_UNTOLERATED: return "untolerated-taint";
	case REPORT_ROUTE_UNTAINTED:   return "untainted-node";
	}
	return "";
}

int report_fail_on_parse(const char *s, unsigned *out)
{
	static const struct { const char *word; unsigned bits; } words[] = {
		{ "reject", REPORT_FAIL_REJECT }, { "mutate", REPORT_FAIL_MUTATE | REPORT_FAIL_REJECT },
		{ "leak", REPORT_FAIL_LEAK }, { "pending", REPORT_FAIL_PENDING },
		{ "idle", REPORT_FAIL_IDLE }, { "misconfig", REPORT_FAIL_MISCONF }, { "none", 0 },
	};
	size_t i, len;

	*out = 0;
	while (*s != '\0') {
		len = strcspn(s, ",");
		for (i = 0; i < sizeof words / sizeof words[0]; i++)
			if (strlen(words[i].word) == len && strncmp(words[i].word, s, len) == 0)
				break;
		if (i == sizeof words / sizeof words[0])
			return -1;
		*out |= words[i].bits;
		s += len;
		if (*s == ',')
			s++;
	}
	return 0;
}

/* ==== Summaries ==== */

void report_totals(const struct report *r, struct report_totals *t)
{
	size_t i, k;

	memset(t, 0, sizeof *t);
	for (i = 0; i < r->n_pools; i++) {
		const struct report_pool *p = &r->pools[i];

		t->nodes += p->nodes;
		t->idle_nodes += p->idle_nodes;
		t->gpu_pods += p->gpu_pods;
		t->ds_pods += p->ds_pods;
		t->cpu_pods += p->cpu_pods;
		t->gpus_allocatable = quantity_add(t->gpus_allocatable, p->gpus_allocatable);
		t->gpus_requested = quantity_add(t->gpus_requested, p->gpus_requested);
		for (k = 0; k < REPORT_MIS_NKINDS; k++)
			t->misconfigured += p->misconfigured[k];
		if (p->cfg != NULL && p->cfg->priced && p->nodes > 0) {
			t->priced = 1;
			t->idle_cost += p->idle_cost;
			t->unrequested_cost += p->unrequested_cost;
		}
	}
}

void report_money(double v, char *buf, size_t cap)
{
	if (v >= 99.995)  /* what would print as $100.00 and up */
		snprintf(buf, cap, "$%.0f/h", v);
	else
		snprintf(buf, cap, "$%.2f/h", v);
}

/* People's words for the pending reasons, in the summary line. */
static const char *pending_words(enum report_pending_reason reason)
{
	static const char *const words[REPORT_PENDING_NREASONS] = {
		"scheduling gate", "resource no pool serves", "more GPUs than any node", "selector matches no GPU node",
		"missing toleration", "GPUs in use", "DeviceClass no pool serves", "claim not allocated", "other cause",
	};

	return reason < REPORT_PENDING_NREASONS ? words[reason] : "";
}

void report_summary_line(const struct report *r, char *buf, size_t cap)
{
	struct report_totals t;
	char money[64];
	size_t k, used, reasons = 0;
	unsigned long judged = 0;

	report_totals(r, &t);
	snprintf(buf, cap, "%lu of %lu GPU nodes idle", t.idle_nodes, t.nodes);
	used = strlen(buf);
	if (t.priced && used < cap) {
		report_money(t.idle_cost, money, sizeof money);
		used += (size_t)snprintf(buf + used, cap - used, ", %s", money);
	}
	if (used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "; %lu CPU pod%s on GPU nodes", t.cpu_pods,
					 t.cpu_pods == 1 ? "" : "s");
	if (used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "; %lu GPU pod%s Pending", r->pending.total,
					 r->pending.total == 1 ? "" : "s");
	for (k = 0; k < REPORT_PENDING_NREASONS; k++)
		if (r->pending_by_reason[k] > 0) {
			reasons++;
			judged += r->pending_by_reason[k];
		}
	for (k = 0; k < REPORT_PENDING_NREASONS && used < cap; k++) {
		if (r->pending_by_reason[k] == 0)
			continue;
		if (reasons == 1 && judged == r->pending.total)
			used += (size_t)snprintf(buf + used, cap - used, ": %s", pending_words((enum report_pending_reason)k));
		else
			used += (size_t)snprintf(buf + used, cap - used, "%s%lu %s", judged ? ": " : ", ",
						 r->pending_by_reason[k], pending_words((enum report_pending_reason)k));
		judged = 0;  /* the first reason is introduced with ':', the others with ',' */
	}
	if (t.misconfigured > 0 && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "; %lu pool misconfiguration%s", t.misconfigured,
					 t.misconfigured == 1 ? "" : "s");
	if (r->audit.count[AUDIT_REJECT] > 0 && used < cap)
		used += (size_t)snprintf(buf + used, cap - used, "; %lu workload template%s would be rejected",
					 r->audit.count[AUDIT_REJECT], r->audit.count[AUDIT_REJECT] == 1 ? "" : "s");
	if (r->n_errors + json_array_size(r->audit.errors) > 0 && used < cap)
		snprintf(buf + used, cap - used, "; %lu input error%s",
			 r->n_errors + (unsigned long)json_array_size(r->audit.errors),
			 r->n_errors + json_array_size(r->audit.errors) == 1 ? "" : "s");
}

int report_exit_code(const struct report *r, unsigned fail_on)
{
	struct report_totals t;
	size_t i;
	int rejected = r->audit.count[AUDIT_REJECT] > 0;

	if (r->n_errors > 0 || json_array_size(r->audit.errors) > 0)
		return 2;
	report_totals(r, &t);
	for (i = 0; i < r->cpu_pods.n; i++)
		if (REPORT_AT(r->cpu_pods, struct report_cpu_pod, i)->policy.would_reject)
			rejected = 1;
	if (((fail_on & REPORT_FAIL_REJECT) && rejected) ||
	    ((fail_on & REPORT_FAIL_MUTATE) && r->audit.count[AUDIT_MUTATE] > 0) ||
	    ((fail_on & REPORT_FAIL_LEAK) && t.cpu_pods > 0) ||
	    ((fail_on & REPORT_FAIL_PENDING) && r->pending.total > 0) ||
	    ((fail_on & REPORT_FAIL_IDLE) && t.idle_nodes > 0) ||
	    ((fail_on & REPORT_FAIL_MISCONF) && t.misconfigured > 0))
		return 1;
	return 0;
}
