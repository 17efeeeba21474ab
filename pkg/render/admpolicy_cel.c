/*
 * admpolicy_cel: the CEL text of the admission policies (admpolicy.h), and
 * its worst-case runtime cost.
 *
 * CEL has no functions, so each test is written out inline over the CEL
 * value it tests (a pod spec such as "object.spec", a toleration "t").
 * The cost is counted as the text is written: every byte costs one unit
 * times the iterations of the comprehensions around it (an upper bound of
 * cel-go's runtime cost as k8s/celcost.h models it, where an identifier, a
 * selection, an operator or a call costs 1 and takes at least one byte),
 * plus what a byte does not bound: a list literal (ListCreateBaseCost 10),
 * `in` over a list (its length), string comparisons and matches() over a
 * name (StringTraversalCostFactor 0.1, RegexStringLengthCostFactor 0.25).
 */
#include "render/admpolicy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"


/* ==== Text ==== */

void cel_put(struct cel *b, const char *fmt, ...)
{
	size_t was = b->sb.len;
	va_list ap;

	va_start(ap, fmt);
	strbuf_vaddf(&b->sb, fmt, ap);  /* past CEL_EXPRESSION_MAX, or out of memory: nothing added, failed */
	va_end(ap);
	if (!b->uncharged)
		b->cost = celcost_add(b->cost, celcost_mul((celcost_t)(b->sb.len - was), b->mult ? b->mult : 1));
}

void cel_charge(struct cel *b, celcost_t units)
{
	if (!b->uncharged)
		b->cost = celcost_add(b->cost, celcost_mul(units, b->mult ? b->mult : 1));
}

celcost_t cel_loop(struct cel *b, size_t n)
{
	celcost_t was = b->mult ? b->mult : 1;

	b->mult = celcost_mul(was, (celcost_t)n + 1);  /* + 1: the comprehension's own steps */
	return was;
}

void cel_lit(struct cel *b, const char *s)
{
	cel_put(b, "'");
	for (; *s; s++)
		cel_put(b, "%s%c", *s == '\\' || *s == '\'' ? "\\" : "", *s);
	cel_put(b, "'");
}

/* `[a, b, c]`, charged as a list literal; `v in` it costs its length more. */
static void put_in(struct cel *b, const char *v, const char *const *l, size_t n)
{
	size_t i;

	cel_put(b, "%s in [", v);
	for (i = 0; i < n; i++) {
		cel_put(b, "%s", i ? ", " : "");
		cel_lit(b, l[i]);
	}
	cel_put(b, "]");
	cel_charge(b, CELCOST_LIST_LITERAL + n);
}

void cel_in(struct cel *b, const char *v, const struct config_strings *l)
{
	put_in(b, v, (const char *const *)l->v, l->n);
}

static int is_wild(const char *s)
{
	return strpbrk(s, "*?") != NULL;
}

/* RE2 text matching exactly what glob g matches (policy_glob_match: * any run, ? one character). */
static void put_regex(struct cel *b, const char *g)
{
	struct cel re = CEL_INIT;

	cel_put(&re, "^");
	for (; *g; g++) {
		if (*g == '*')
			cel_put(&re, ".*");
		else if (*g == '?')
			cel_put(&re, ".");
		else if (strchr("\\.+()[]{}^$|", *g) != NULL)
			cel_put(&re, "\\%c", *g);
		else
			cel_put(&re, "%c", *g);
	}
	cel_put(&re, "$");
	if (re.sb.failed) {
		strbuf_fail(&b->sb, re.sb.failed);
	} else {
		cel_lit(b, re.sb.buf);
		cel_charge(b, celcost_mul(celcost_string(ADMPOLICY_NAME_MAX + 1), (re.sb.len + 3) / 4));
	}
	strbuf_release(&re.sb);
}

void cel_glob(struct cel *b, const char *v, const struct config_strings *globs)
{
	struct config_strings exact = { 0 };
	char *ev[CEL_GLOBS_MAX];
	size_t i, any = 0;

	exact.v = ev;
	for (i = 0; i < globs->n && exact.n < CEL_GLOBS_MAX; i++)
		if (!is_wild(globs->v[i]))
			ev[exact.n++] = globs->v[i];
	cel_put(b, "(");
	if (exact.n > 0) {
		cel_in(b, v, &exact);
		any++;
	}
	for (i = 0; i < globs->n; i++) {
		if (!is_wild(globs->v[i]))
			continue;
		cel_put(b, "%s%s.matches(", any++ ? " || " : "", v);
		put_regex(b, globs->v[i]);
		cel_put(b, ")");
	}
	cel_put(b, "%s)", any ? "" : "false");
}

/* ==== Node names and labels ==== */

void cel_node_gpu(struct cel *b, const struct cel_view *w, const char *v)
{
	size_t i, any = 0;

	if (w->cfg->gpu_node_names.n > 0) {
		cel_glob(b, v, &w->cfg->gpu_node_names);
		return;
	}
	/* policy_target.c node_named(): aks-<pool>- for each pool told by its AKS pool. */
	cel_put(b, "(");
	for (i = 0; i < w->cfg->n_pools; i++) {
		const char *pool = config_pool_aks_pool(&w->cfg->pools[i]);

		if (pool == NULL)
			continue;
		/* A label value: no quote or backslash to escape (config_schema.c checks its characters). */
		cel_put(b, "%s%s.startsWith('aks-%s-')", any++ ? " || " : "", v, pool);
		cel_charge(b, celcost_string(ADMPOLICY_NAME_MAX));
	}
	cel_put(b, "%s)", any ? "" : "false");
}

/* `k` is a GPU node label key (gpuNodeLabels or an alias of one). */
static void put_gpu_label(struct cel *b, const struct cel_view *w, const char *k)
{
	cel_in(b, k, &w->labels);
}

/* key k = value v selects only a pool's nodes (a pool's key, or its alias, with its value). */
static void put_pool_value(struct cel *b, const struct cel_view *w, const char *k, const char *v)
{
	size_t i;

	cel_put(b, "(");
	for (i = 0; i < w->n_pool_keys; i++) {
		cel_put(b, "%s%s == ", i ? " || " : "", k);
		cel_lit(b, w->pool_keys[i].key);
		cel_put(b, " && ");
		put_in(b, v, w->pool_keys[i].values.v, w->pool_keys[i].values.n);
	}
	cel_put(b, "%s)", w->n_pool_keys ? "" : "false");
}

/* ==== The routes (policy_target.c) ==== */

/* Toleration t tolerates the GPU taint; hard: by its key (not a wildcard). */
void cel_tolerates(struct cel *b, const struct cel_view *w, const char *t, int hard)
{
	const struct config *c = w->cfg;

	cel_put(b, "(");
	if (hard) {
		cel_put(b, "has(%s.key) && %s.key == ", t, t);
		cel_lit(b, c->taint_key);
	} else {
		cel_put(b, "(!has(%s.key) || %s.key == '' || %s.key == ", t, t, t);
		cel_lit(b, c->taint_key);
		cel_put(b, ")");
	}
	cel_put(b, " && (!has(%s.effect) || %s.effect == '' || %s.effect == ", t, t, t);
	cel_lit(b, c->taint_effect);
	cel_put(b, ") && (!has(%s.operator) || %s.operator in ['', 'Equal'] ? (has(%s.value) ? %s.value : '') == ", t,
		t, t, t);
	cel_lit(b, c->taint_value);
	cel_put(b, " : %s.operator == 'Exists'))", t);
	cel_charge(b, 3 * CELCOST_LIST_LITERAL);
}

void cel_route_toleration(struct cel *b, const struct cel_view *w, const char *s)
{
	celcost_t was;

	cel_put(b, "has(%s.tolerations) && %s.tolerations != null && %s.tolerations.exists(t, ", s, s, s);
	was = cel_loop(b, ADMPOLICY_LIST_MAX);
	cel_tolerates(b, w, "t", 1);
	b->mult = was;
	cel_put(b, ")");
}

/* nodeSelector entry k = v selects GPU nodes: a GPU label, a pool's value, a GPU node's hostname. */
void cel_selects_gpu(struct cel *b, const struct cel_view *w, const char *k, const char *v)
{
	cel_put(b, "(");
	put_gpu_label(b, w, k);
	cel_put(b, " || ");
	put_pool_value(b, w, k, v);
	cel_put(b, " || %s == '" POLICY_HOSTNAME_LABEL "' && ", k);
	cel_node_gpu(b, w, v);
	cel_put(b, ")");
}

void cel_route_selector(struct cel *b, const struct cel_view *w, const char *s)
{
	char v[160];
	celcost_t was;

	snprintf(v, sizeof v, "%s.nodeSelector[k]", s);
	cel_put(b, "has(%s.nodeSelector) && %s.nodeSelector != null && %s.nodeSelector.exists(k, ", s, s, s);
	was = cel_loop(b, ADMPOLICY_LIST_MAX);
	cel_selects_gpu(b, w, "k", v);
	b->mult = was;
	cel_put(b, ")");
}

/* A requirement's values, [] when it has none. */
#define VALUES "(has(e.values) && e.values != null ? e.values : [])"

/* One requirement e of matchExpressions only GPU nodes meet (policy_target.c requirement()). */
static void put_requirement(struct cel *b, const struct cel_view *w)
{
	struct cel names = CEL_INIT, pools = CEL_INIT;
	celcost_t was, branch;

	/* The values are tested as node names or as pool values, never both: the dearer is charged. */
	cel_node_gpu(&names, w, "v");
	put_pool_value(&pools, w, "e.key", "v");
	branch = names.cost > pools.cost ? names.cost : pools.cost;
	strbuf_release(&names.sb);
	strbuf_release(&pools.sb);
	cel_put(b, "has(e.key) && has(e.operator) && (");
	put_gpu_label(b, w, "e.key");
	cel_put(b, " ? (e.operator == 'In' && size(" VALUES ") > 0 || e.operator in ['Exists', 'Gt', 'Lt'])"
		" : e.operator == 'In' && size(" VALUES ") > 0 && "
		"(e.key == '" POLICY_HOSTNAME_LABEL "' ? " VALUES ".all(v, ");
	was = cel_loop(b, ADMPOLICY_VALUES_MAX);
	cel_charge(b, branch);
	b->uncharged = 1;
	cel_node_gpu(b, w, "v");
	cel_put(b, ") : " VALUES ".all(v, ");
	put_pool_value(b, w, "e.key", "v");
	b->uncharged = 0;
	cel_charge(b, 2 * sizeof ") : " VALUES ".all(v, ");
	b->mult = was;
	cel_put(b, ")))");
	cel_charge(b, 6 * CELCOST_LIST_LITERAL);
}

/* Term t has a requirement only GPU nodes meet. */
static void put_term_gpu(struct cel *b, const struct cel_view *w)
{
	celcost_t was;

	cel_put(b, "(has(t.matchExpressions) && t.matchExpressions != null && t.matchExpressions.exists(e, ");
	was = cel_loop(b, ADMPOLICY_TERMS_MAX);
	put_requirement(b, w);
	cel_put(b, ") || has(t.matchFields) && t.matchFields != null && t.matchFields.exists(e, has(e.key) && "
		"e.key == '" POLICY_NAME_FIELD "' && has(e.operator) && e.operator == 'In' && size(" VALUES ") > 0 && "
		VALUES ".all(v, ");
	cel_loop(b, ADMPOLICY_VALUES_MAX);
	cel_node_gpu(b, w, "v");
	b->mult = was;
	cel_put(b, ")))");
	cel_charge(b, 2 * CELCOST_LIST_LITERAL);
}

/* Term t matches no node: neither matchExpressions nor matchFields. */
#define TERM_NONE "((!has(t.matchExpressions) || t.matchExpressions == null || size(t.matchExpressions) == 0) && " \
	"(!has(t.matchFields) || t.matchFields == null || size(t.matchFields) == 0))"

void cel_required_terms(struct cel *b, const char *s)
{
	cel_put(b, "(has(%s.affinity) && has(%s.affinity.nodeAffinity) && "
		"has(%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution) && "
		"has(%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms) && "
		"%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms != null ? "
		"%s.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms : [])",
		s, s, s, s, s, s);
	cel_charge(b, CELCOST_LIST_LITERAL);
}

/*
 * Every term that matches anything matches only GPU nodes, and one does
 * (required_affinity()): a term with a requirement matches something, so
 * each is looked at once.
 */
void cel_route_affinity(struct cel *b, const struct cel_view *w, const char *s)
{
	celcost_t was;

	cel_required_terms(b, s);
	cel_put(b, ".exists(t, !" TERM_NONE ") && ");
	cel_required_terms(b, s);
	cel_put(b, ".all(t, " TERM_NONE " || ");
	was = cel_loop(b, ADMPOLICY_TERMS_MAX);
	put_term_gpu(b, w);
	b->mult = was;
	cel_put(b, ")");
	cel_charge(b, (ADMPOLICY_TERMS_MAX + 1) * sizeof TERM_NONE);
}

void cel_route_node_name(struct cel *b, const struct cel_view *w, const char *s)
{
	char v[128];

	snprintf(v, sizeof v, "%s.nodeName", s);
	cel_put(b, "has(%s.nodeName) && %s.nodeName != '' && ", s, s);
	cel_node_gpu(b, w, v);
}

/* ==== Pods: containers, GPU requests ==== */

void cel_containers(struct cel *b, const char *s)
{
	cel_put(b, "(has(%s.containers) && %s.containers != null ? %s.containers : []) + "
		"(has(%s.initContainers) && %s.initContainers != null ? %s.initContainers : [])", s, s, s, s, s, s);
	cel_charge(b, 2 * CELCOST_LIST_LITERAL);
}

/* Quantity q (a CEL value) is not zero: an invalid one counts, as the webhook counts it a GPU and refuses it. */
static void put_nonzero(struct cel *b, const char *q)
{
	/* sign() is newer than the quantity library of 1.34's stored expressions: compared with 0 instead. */
	cel_put(b, "(!isQuantity(string(%s)) || quantity(string(%s)).isGreaterThan(quantity('0')) || "
		"quantity(string(%s)).isLessThan(quantity('0')))", q, q, q);
	cel_charge(b, 5 * celcost_string(ADMPOLICY_NAME_MAX));
}

/* A container c requests a GPU resource: the map m of it (limits or requests) names one, not zero. */
static void put_map_gpu(struct cel *b, const struct cel_view *w, const char *m)
{
	char q[96];
	celcost_t was;

	snprintf(q, sizeof q, "%s[k]", m);
	cel_put(b, "has(%s) && %s.exists(k, ", m, m);
	was = cel_loop(b, ADMPOLICY_RESOURCES_MAX);
	cel_glob(b, "k", &w->cfg->gpu_resources);
	cel_put(b, " && ");
	put_nonzero(b, q);
	b->mult = was;
	cel_put(b, ")");
}

void cel_gpu(struct cel *b, const struct cel_view *w, const char *containers)
{
	celcost_t was;

	cel_put(b, "%s.exists(c, has(c.resources) && (", containers);
	was = cel_loop(b, ADMPOLICY_CONTAINERS_MAX);
	put_map_gpu(b, w, "c.resources.limits");
	cel_put(b, " || ");
	put_map_gpu(b, w, "c.resources.requests");
	b->mult = was;
	cel_put(b, "))");
}

/* Container c's GPUs, all GPU resources together: each by its limit, else its request (0 if no whole number). */
static void put_count(struct cel *b, const struct cel_view *w)
{
	static const char *const m[2] = { "limits", "requests" };
	celcost_t was;
	int i;

	for (i = 0; i < 2; i++) {
		cel_put(b, "%s(has(c.resources) && has(c.resources.%s) ? ([0] + c.resources.%s.filter(k, ", i ? " + " : "",
			m[i], m[i]);
		was = cel_loop(b, ADMPOLICY_RESOURCES_MAX);
		cel_glob(b, "k", &w->cfg->gpu_resources);
		if (i == 1)
			cel_put(b, " && !(has(c.resources.limits) && k in c.resources.limits)");
		cel_put(b, ").map(k, isQuantity(string(c.resources.%s[k])) && quantity(string(c.resources.%s[k]))"
			".isInteger() ? quantity(string(c.resources.%s[k])).asInteger() : 0)).sum() : 0)", m[i], m[i], m[i]);
		cel_charge(b, 3 * celcost_string(ADMPOLICY_NAME_MAX) + CELCOST_LIST_LITERAL);
		b->mult = was;
	}
}

/*
 * The most GPUs the pod needs at once (policy_demand_total(): the
 * containers and sidecars together, or an init container with the
 * sidecars), counted over all its GPU resources together and with every
 * sidecar beside every init container: an upper bound of the webhook's
 * per-resource peak, equal to it for a pod of one GPU resource.
 */
void cel_demand(struct cel *b, const struct cel_view *w, const char *s)
{
	struct cel body = CEL_INIT;
	celcost_t was;

	/*
	 * The three lists split the pod's containers: together they are at most
	 * ADMPOLICY_CONTAINERS_MAX, so the count is charged once for each.
	 */
	put_count(&body, w);
	strbuf_release(&body.sb);
	was = b->mult ? b->mult : 1;
	cel_put(b, "([0] + (has(%s.initContainers) && %s.initContainers != null ? %s.initContainers : [])"
		".filter(c, has(c.restartPolicy) && c.restartPolicy == 'Always').map(c, ", s, s, s);
	b->uncharged = 1;  /* the text below is charged by body, after it */
	put_count(b, w);
	cel_put(b, ")).sum() + [([0] + (has(%s.containers) && %s.containers != null ? %s.containers : []).map(c, ",
		s, s, s);
	put_count(b, w);
	cel_put(b, ")).sum(), ([0] + (has(%s.initContainers) && %s.initContainers != null ? %s.initContainers : [])"
		".filter(c, !has(c.restartPolicy) || c.restartPolicy != 'Always').map(c, ", s, s, s);
	put_count(b, w);
	cel_put(b, ")).max()].max()");
	b->uncharged = 0;
	b->mult = was;
	cel_charge(b, 8 * CELCOST_LIST_LITERAL + 3 * 200 * (ADMPOLICY_CONTAINERS_MAX + 1));
	cel_charge(b, body.cost * (ADMPOLICY_CONTAINERS_MAX + 1));
}
