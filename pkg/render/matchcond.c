#include "render/matchcond.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "k8s/celcost.h"
#include "policy/policy.h"
#include "text/scan.h"
#include "policy/template.h"

/*
 * The chart renders the same text from its policy values
 * (charts/gpu-admission/templates/_helpers.tpl, "gpu-admission.podMatchConditions";
 * test/matchcond/matchcond.sh compares the two): a change to the text here is made
 * there too. Lists are sorted and without duplicates, as the chart's
 * sortAlpha and uniq give them.
 */

#define WRONG_TAINT_KEY "nvidia.com/gpu"  /* the toleration key the policy warns about */
#define EXPRESSION_MAX 100000  /* bytes of one expression: cel-go's parser refuses more than
                                  100,000 code points (expressionSizeCodePointLimit's default,
                                  parser/parser.go), and the API server keeps that default */

#define KIND "request.kind.kind"
/*
 * A resource name that looks like a GPU (policy_pod.c looks_like_gpu(): a domain
 * prefix, then "gpu" in any case): the webhook warns about one that the
 * policy does not list, so such a pod is sent. RE2 as CEL's matches() runs
 * it: a partial match.
 */
#define GPU_LOOKING_RE "^[^/]+/.*[gG][pP][uU]"
#define COST_REGEX_FACTOR 4  /* runtimecost.go: a regex costs a quarter of its length
                                (RegexStringLengthCostFactor), times the string's tenth */
#define PATH_MAX_LEN 96        /* a dotted path under object: the longest is CronJob's
                                  spec.jobTemplate.spec.template.spec */

/*
 * Where one class of object keeps the pod spec the conditions read: in a
 * Pod, its spec; in a built-in workload of one of kinds, its template's.
 */
struct root {
	const char *kinds[TEMPLATE_KINDS];  /* request.kind.kind values, sorted; none: a Pod */
	size_t n_kinds;
	char tmpl[PATH_MAX_LEN];            /* the pod template's dotted path; "": the object is the pod */
	char spec[PATH_MAX_LEN];            /* the pod spec's */
};

/* What one webhook entry receives. */
struct target {
	struct root roots[TEMPLATE_KINDS];
	size_t n_roots;
	const char *kinds[TEMPLATE_KINDS];  /* every root's kinds, sorted: any other is sent */
	size_t n_kinds;
};

/* ==== cel-go's runtime cost model (interpreter/runtimecost.go), as the API server runs it ==== */

/*
 * The model itself is k8s/celcost.h's, shared with the admission policies.
 * What these expressions add to it: has() costs at most as much as the path
 * it tests (the API server counts the test itself 0: PresenceTestHasCost),
 * && and || are counted 1 though cel-go charges them nothing, `x in [list]`
 * costs the list's length, and string equality and startsWith/endsWith a
 * tenth of the shorter or the receiver's length.
 */

/* A dotted path's selections: "object.spec.nodeName" costs 3. */
static celcost_t path_cost(const char *path)
{
	celcost_t n = 1;

	for (; *path; path++)
		n += *path == '.';
	return n;
}

/* `has(L) && (size(L) > max || L.exists(x, body))`, L a path: body runs at most max times. */
static celcost_t guarded_exists_cost(const char *list, int max, celcost_t body)
{
	celcost_t guard = 3 * path_cost(list) + 4 * CELCOST_CALL;

	return celcost_add(celcost_add(guard, CELCOST_FOLD), celcost_mul((celcost_t)max, celcost_add(CELCOST_ITERATION, body)));
}

/* ==== Text ==== */

/* A CEL string literal: single-quoted, with \ and ' escaped (the only two the chart escapes too). */
static void put_lit(struct strbuf *b, const char *s, size_t len)
{
	size_t i;

	strbuf_addf(b, "'");
	for (i = 0; i < len; i++)
		strbuf_addf(b, "%s%c", s[i] == '\\' || s[i] == '\'' ? "\\" : "", s[i]);
	strbuf_addf(b, "'");
}

/* `[... quoted, comma-separated ...]`. */
static void put_list(struct strbuf *b, const char *const *v, size_t n)
{
	size_t i;

	strbuf_addf(b, "[");
	for (i = 0; i < n; i++) {
		strbuf_addf(b, "%s", i ? ", " : "");
		put_lit(b, v[i], strlen(v[i]));
	}
	strbuf_addf(b, "]");
}

/* ==== What the policy names, sorted and unique ==== */

struct names {
	const char **v;  /* owned array of borrowed strings */
	size_t n, cap;
};

static int by_string(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Room for cap names; -1 on allocation failure. */
static int names_init(struct names *l, size_t cap)
{
	l->n = 0;
	l->cap = cap;
	l->v = calloc(cap ? cap : 1, sizeof *l->v);
	return l->v == NULL ? -1 : 0;
}

/* Sized by names_init() for every name added: never drops one (the superset depends on it). */
static void names_add(struct names *l, const char *s)
{
	if (l->n < l->cap)
		l->v[l->n++] = s;
}

static void names_sort(struct names *l)
{
	size_t i, o = 0;

	qsort(l->v, l->n, sizeof l->v[0], by_string);
	for (i = 0; i < l->n; i++)
		if (o == 0 || strcmp(l->v[o - 1], l->v[i]) != 0)
			l->v[o++] = l->v[i];
	l->n = o;
}

static int is_wild(char c)
{
	return c == '*' || c == '?';
}

/*
 * What a pod's name or resource key v must look like to match glob g:
 * start with what comes before g's first wildcard and end with what comes
 * after its last. A superset of the glob (policy_glob_match), exact without
 * a wildcard (g has one: split_globs()). Appends the test and returns its cost.
 */
static celcost_t put_glob_test(struct strbuf *b, const char *v, const char *g)
{
	size_t len = strlen(g), pre = 0, suf_at = len;
	celcost_t cost = 0;

	while (pre < len && !is_wild(g[pre]))
		pre++;
	while (suf_at > 0 && !is_wild(g[suf_at - 1]))
		suf_at--;
	if (pre == 0 && suf_at == len) {
		strbuf_addf(b, "true");
		return 0;
	}
	if (pre > 0) {
		strbuf_addf(b, "%s.startsWith(", v);
		put_lit(b, g, pre);
		strbuf_addf(b, ")");
		cost = celcost_add(cost, celcost_add(CELCOST_SELECT, celcost_string(MATCHCOND_STRING_MAX)));
	}
	if (suf_at < len) {
		strbuf_addf(b, "%s%s.endsWith(", pre > 0 ? " && " : "", v);
		put_lit(b, g + suf_at, len - suf_at);
		strbuf_addf(b, ")");
		cost = celcost_add(cost, celcost_add(CELCOST_SELECT + CELCOST_CALL, celcost_string(MATCHCOND_STRING_MAX)));
	}
	return cost;
}

/* `(v in [exact] || size(v) > MAX || <glob tests>)`: does v match one of globs? */
static celcost_t put_any_glob(struct strbuf *b, const char *v, const struct names *exact, const struct names *wild)
{
	celcost_t cost = 0;
	size_t i;

	strbuf_addf(b, "(");
	if (exact->n > 0) {
		strbuf_addf(b, "%s in ", v);
		put_list(b, exact->v, exact->n);
		cost = CELCOST_SELECT + CELCOST_LIST_LITERAL + exact->n;
	}
	if (wild->n > 0) {
		strbuf_addf(b, "%ssize(%s) > %d", exact->n > 0 ? " || " : "", v, MATCHCOND_STRING_MAX);
		cost = celcost_add(cost, CELCOST_SELECT + 3 * CELCOST_CALL);
	}
	for (i = 0; i < wild->n; i++) {
		strbuf_addf(b, " || ");
		cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_glob_test(b, v, wild->v[i])));
	}
	strbuf_addf(b, ")");
	return cost;
}

/* ==== The roots: where each class of object keeps its pod spec ==== */

/* The path of a built-in kind's template, dotted ("spec.template"); 0 if it has none (a Pod). */
static size_t kind_template(size_t kind, char *buf, size_t cap)
{
	size_t j, len = 0;
	const char *step;

	buf[0] = '\0';
	for (j = 0; (step = template_kind_step(kind, j)) != NULL && len < cap; j++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s", j ? "." : "", step);
	return j;
}

static void target_fill(struct target *t, enum matchcond_entry entry)
{
	char tmpl[PATH_MAX_LEN];
	size_t i, r;

	memset(t, 0, sizeof *t);
	if (entry == MATCHCOND_PODS) {
		snprintf(t->roots[0].spec, sizeof t->roots[0].spec, "spec");
		t->n_roots = 1;
	}
	if (entry != MATCHCOND_WORKLOADS)
		return;
	/* Kinds that keep their template at the same path share a root, in template.c's order. */
	for (i = 0; template_kind(i) != NULL; i++) {
		if (kind_template(i, tmpl, sizeof tmpl) == 0)
			continue;
		for (r = 0; r < t->n_roots && strcmp(t->roots[r].tmpl, tmpl) != 0; r++)
			;
		if (r == t->n_roots) {
			snprintf(t->roots[r].tmpl, sizeof t->roots[r].tmpl, "%s", tmpl);
			snprintf(t->roots[r].spec, sizeof t->roots[r].spec, "%s.spec", tmpl);
			t->n_roots++;
		}
		t->roots[r].kinds[t->roots[r].n_kinds++] = template_kind(i);
		t->kinds[t->n_kinds++] = template_kind(i);
	}
	for (r = 0; r < t->n_roots; r++)
		qsort(t->roots[r].kinds, t->roots[r].n_kinds, sizeof t->roots[r].kinds[0], by_string);
	qsort(t->kinds, t->n_kinds, sizeof t->kinds[0], by_string);
}

/*
 * `!has(request.kind) || !has(request.kind.kind) || !(request.kind.kind in [...])`:
 * an object of a kind the conditions do not know is sent. Returns the cost.
 */
static celcost_t put_unknown_kind(struct strbuf *b, const struct target *t)
{
	strbuf_addf(b, "!has(request.kind) || !has(" KIND ") || !(" KIND " in ");
	put_list(b, t->kinds, t->n_kinds);
	strbuf_addf(b, ")");
	return 2 * path_cost(KIND) + 5 * CELCOST_CALL + path_cost(KIND) + CELCOST_LIST_LITERAL + t->n_kinds;
}

/* `request.kind.kind in [...] && `: root r's kinds. Returns the cost. */
static celcost_t put_kind_guard(struct strbuf *b, const struct root *r)
{
	strbuf_addf(b, KIND " in ");
	put_list(b, r->kinds, r->n_kinds);
	strbuf_addf(b, " && ");
	return path_cost(KIND) + CELCOST_LIST_LITERAL + r->n_kinds + 2 * CELCOST_CALL;
}

/* ==== The policy's view: what gpu-relevant looks for ==== */

struct view {
	struct names res_exact, res_wild;   /* gpuResources and gpuShareResources */
	struct names ann_keys;              /* gpuAnnotations' keys */
	struct names ann_scheds;            /* and their schedulerNames: only these pods read them */
	struct names taint_keys;            /* "", the GPU taint's key, nvidia.com/gpu */
	struct names labels;                /* gpuNodeLabels (and hostname when GPU nodes cannot
	                                       be told by name): any value aims at GPU nodes */
	struct policy_pool_key *pool_keys;  /* the pools' other label keys, each with the values
	                                       pools select: only those aim at GPU nodes */
	size_t n_pool_keys;
	int names_known;                    /* GPU nodes are told by name (policy_target.c) */
	struct names node_exact, node_wild; /* how: gpuNodeNames, or aks-<pool>-* per pool */
	char **derived;                     /* owned: the aks-<pool>-* globs, one per pool */
};

static void view_free(struct view *w)
{
	size_t i;

	free(w->res_exact.v);
	free(w->res_wild.v);
	free(w->ann_keys.v);
	free(w->ann_scheds.v);
	free(w->taint_keys.v);
	free(w->labels.v);
	policy_pool_keys_free(w->pool_keys, w->n_pool_keys);
	free(w->node_exact.v);
	free(w->node_wild.v);
	for (i = 0; w->derived != NULL && w->derived[i] != NULL; i++)
		free(w->derived[i]);
	free(w->derived);
}

/* Adds each glob to exact or wild: with a wildcard or without. */
static void split_globs(const char *const *globs, size_t n, struct names *exact, struct names *wild)
{
	size_t i;

	for (i = 0; i < n; i++)
		names_add(strpbrk(globs[i], "*?") ? wild : exact, globs[i]);
}

/* Whether s can be written into CEL as it is; 0 with ERROR_CONFIG if not. */
static int printable(const char *s, struct error *err)
{
	const char *c;

	for (c = s; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) {
			error_set(err, ERROR_CONFIG, "matchConditions: the policy names \"%s\", which holds a "
				  "control character: no pod can name it, and CEL cannot quote it", s);
			return 0;
		}
	return 1;
}

static int all_printable(const struct names *l, struct error *err)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (!printable(l->v[i], err))
			return 0;
	return 1;
}

static int view_fill(const struct config *cfg, struct view *w, struct error *err)
{
	const struct names *all[9];
	size_t i, j, n_scheds = 0, n_labels = 2 * cfg->gpu_node_labels.n + 1, n_names = cfg->gpu_node_names.n + cfg->n_pools;

	for (i = 0; i < cfg->n_gpu_annotations; i++)
		n_scheds += cfg->gpu_annotations[i].scheduler_names.n;
	if (names_init(&w->res_exact, cfg->gpu_resources.n + cfg->n_gpu_shares) != 0 ||
	    names_init(&w->res_wild, cfg->gpu_resources.n + cfg->n_gpu_shares) != 0 ||
	    names_init(&w->ann_keys, cfg->n_gpu_annotations) != 0 || names_init(&w->ann_scheds, n_scheds) != 0 ||
	    names_init(&w->taint_keys, 3) != 0 ||
	    names_init(&w->labels, n_labels) != 0 || names_init(&w->node_exact, n_names) != 0 ||
	    names_init(&w->node_wild, n_names) != 0 ||
	    (w->derived = calloc(cfg->n_pools + 1, sizeof *w->derived)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	split_globs((const char *const *)cfg->gpu_resources.v, cfg->gpu_resources.n, &w->res_exact, &w->res_wild);
	/* A share resource makes a GPU pod as a GPU resource does (policy_pod.c). */
	for (i = 0; i < cfg->n_gpu_shares; i++)
		if (cfg->gpu_shares[i].name != NULL)
			split_globs((const char *const *)&cfg->gpu_shares[i].name, 1, &w->res_exact, &w->res_wild);
	/*
	 * So does a gpuAnnotations key on a pod of one of its schedulers: the
	 * keys and the schedulers are tested apart, a superset of the pairs.
	 */
	for (i = 0; i < cfg->n_gpu_annotations; i++) {
		const struct config_gpu_annotation *a = &cfg->gpu_annotations[i];

		if (a->key == NULL)
			continue;
		names_add(&w->ann_keys, a->key);
		for (j = 0; j < a->scheduler_names.n; j++)
			names_add(&w->ann_scheds, a->scheduler_names.v[j]);
	}
	names_add(&w->taint_keys, "");
	names_add(&w->taint_keys, cfg->taint_key);
	names_add(&w->taint_keys, WRONG_TAINT_KEY);

	/* A GPU node label's alias is on the same nodes (config_label_alias()). */
	for (i = 0; i < cfg->gpu_node_labels.n; i++) {
		names_add(&w->labels, cfg->gpu_node_labels.v[i]);
		if (config_label_alias(cfg->gpu_node_labels.v[i]) != NULL)
			names_add(&w->labels, config_label_alias(cfg->gpu_node_labels.v[i]));
	}

	/* As policy_target.c's names_known() and node_named(). */
	w->names_known = 1;
	if (cfg->gpu_node_names.n > 0) {
		split_globs((const char *const *)cfg->gpu_node_names.v, cfg->gpu_node_names.n, &w->node_exact,
			    &w->node_wild);
	} else {
		for (i = 0, j = 0; i < cfg->n_pools; i++) {
			const char *pool = config_pool_aks_pool(&cfg->pools[i]);
			size_t len;

			if (pool == NULL) {
				w->names_known = 0;
				continue;
			}
			len = strlen(pool) + sizeof "aks--*";
			if ((w->derived[j] = malloc(len)) == NULL) {
				error_set(err, ERROR_NOMEM, "out of memory");
				return -1;
			}
			snprintf(w->derived[j], len, "aks-%s-*", pool);
			names_add(&w->node_wild, w->derived[j++]);
		}
	}
	if (!w->names_known) {
		names_add(&w->labels, POLICY_HOSTNAME_LABEL);
		w->node_exact.n = w->node_wild.n = 0;
	} else if (w->node_exact.n + w->node_wild.n == 0) {
		error_set(err, ERROR_INTERNAL, "matchConditions: GPU nodes are told by name, but by no name");
		return -1;
	}
	names_sort(&w->labels);
	if (policy_pool_keys(cfg, w->labels.v, w->labels.n, &w->pool_keys, &w->n_pool_keys) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	all[0] = &w->res_exact, all[1] = &w->res_wild, all[2] = &w->taint_keys, all[3] = &w->labels;
	all[4] = &w->node_exact, all[5] = &w->node_wild, all[6] = &w->ann_keys, all[7] = &w->ann_scheds;
	all[8] = NULL;
	for (i = 0; all[i] != NULL; i++) {
		names_sort((struct names *)(uintptr_t)all[i]);
		if (!all_printable(all[i], err))
			return -1;
	}
	for (i = 0; i < w->n_pool_keys; i++) {
		if (!printable(w->pool_keys[i].key, err))
			return -1;
		for (j = 0; j < w->pool_keys[i].values.n; j++)
			if (!printable(w->pool_keys[i].values.v[j], err))
				return -1;
	}
	return 0;
}

/* Whether a node named v (a pod's string) could be a GPU node: `(v in [...] || size(v) > MAX || <globs>)`. */
static celcost_t put_node_name_test(struct strbuf *b, const struct view *w, const char *v)
{
	return put_any_glob(b, v, &w->node_exact, &w->node_wild);
}

/*
 * Node names are judged by their value: GPU nodes are told by name. Then
 * there is at least one name or glob (config_schema.c: a policy has a pool, and
 * every pool derives one when gpuNodeNames is empty). Else any name is sent.
 */
static int names_tested(const struct view *w)
{
	return w->names_known;
}

/* ==== gpu-relevant, per pod spec ==== */

/* `has(M) && (size(M) > MAX || M.exists(k, <a GPU resource>))`, M a limits or requests map. */
static celcost_t put_resource_map(struct strbuf *b, const struct view *w, const char *m)
{
	celcost_t key;

	strbuf_addf(b, "has(%s) && (size(%s) > %d || %s.exists(k, ", m, m, MATCHCOND_LIST_MAX, m);
	key = put_any_glob(b, "k", &w->res_exact, &w->res_wild);
	/* A longer name is sent unread (the globs' test says so when there is one): the regex's cost grows with the name. */
	if (w->res_wild.n == 0)
		strbuf_addf(b, " || size(k) > %d", MATCHCOND_STRING_MAX);
	strbuf_addf(b, " || k.matches('" GPU_LOOKING_RE "')))");
	key = celcost_add(key, 2 * CELCOST_SELECT + 5 * CELCOST_CALL +
			   celcost_string(MATCHCOND_STRING_MAX + 1) *
			   ((sizeof GPU_LOOKING_RE - 1 + COST_REGEX_FACTOR - 1) / COST_REGEX_FACTOR));
	return guarded_exists_cost(m, MATCHCOND_LIST_MAX, key);
}

static celcost_t put_containers(struct strbuf *b, const struct view *w, const char *spec, const char *field)
{
	char list[128];
	celcost_t body = 2 * CELCOST_SELECT + 3 * CELCOST_SELECT + 3 * CELCOST_CALL;

	snprintf(list, sizeof list, "%s.%s", spec, field);
	/* "!= null": kube-apiserver hands CEL a pod encoded from its Go type, where a pod
	 * without containers has "containers": null (no omitempty) and has() is true. */
	strbuf_addf(b, "has(%s) && %s != null && (size(%s) > %d || %s.exists(c, has(c.resources) && (has(c.resources.claims) || ",
	    list, list, list, MATCHCOND_LIST_MAX, list);
	body = celcost_add(body, put_resource_map(b, w, "c.resources.limits"));
	strbuf_addf(b, " || ");
	body = celcost_add(body, put_resource_map(b, w, "c.resources.requests"));
	strbuf_addf(b, ")))");
	return celcost_add(guarded_exists_cost(list, MATCHCOND_LIST_MAX, body), path_cost(list) + CELCOST_CALL);
}

/* A node selector term's requirements (term: a CEL value such as "t" or "p.preference"). */
static celcost_t put_term(struct strbuf *b, const struct view *w, const char *term)
{
	char exprs[128], fields[128];
	celcost_t req = 2 * CELCOST_SELECT + CELCOST_CALL + CELCOST_SELECT + CELCOST_LIST_LITERAL + w->labels.n, cost;
	int names = names_tested(w);
	size_t i;

	snprintf(exprs, sizeof exprs, "%s.matchExpressions", term);
	snprintf(fields, sizeof fields, "%s.matchFields", term);
	strbuf_addf(b, "has(%s) && (size(%s) > %d || %s.exists(e, has(e.key) && (e.key in ", exprs, exprs,
	    MATCHCOND_TERMS_MAX, exprs);
	put_list(b, w->labels.v, w->labels.n);
	for (i = 0; i < w->n_pool_keys; i++) {
		const struct policy_pool_key *pk = &w->pool_keys[i];

		/* In with a value a pool selects (policy_target.c requirement(): all of them, a subset). */
		strbuf_addf(b, " || e.key == ");
		put_lit(b, pk->key, strlen(pk->key));
		strbuf_addf(b, " && has(e.values) && (size(e.values) > %d || e.values.exists(v, v in ", MATCHCOND_LIST_MAX);
		put_list(b, pk->values.v, pk->values.n);
		strbuf_addf(b, "))");
		req = celcost_add(req, celcost_add(2 * CELCOST_SELECT + 2 * CELCOST_CALL + celcost_string(strlen(pk->key)),
				     guarded_exists_cost("e.values", MATCHCOND_LIST_MAX,
							 CELCOST_SELECT + CELCOST_LIST_LITERAL + pk->values.n)));
	}
	if (names) {
		/* e.key == 'kubernetes.io/hostname' && has(e.values) && (size(e.values) > MAX || e.values.exists(...)) */
		strbuf_addf(b, " || e.key == '" POLICY_HOSTNAME_LABEL "' && has(e.values) && (size(e.values) > %d || "
		    "e.values.exists(v, ", MATCHCOND_LIST_MAX);
		req = celcost_add(req, celcost_add(2 * CELCOST_SELECT + 2 * CELCOST_CALL + celcost_string(strlen(POLICY_HOSTNAME_LABEL)),
				     guarded_exists_cost("e.values", MATCHCOND_LIST_MAX, put_node_name_test(b, w, "v"))));
		strbuf_addf(b, "))");
	}
	strbuf_addf(b, ")))");
	cost = guarded_exists_cost(exprs, MATCHCOND_TERMS_MAX, req);
	/* matchFields knows only metadata.name: a node's name. */
	strbuf_addf(b, " || has(%s) && (size(%s) > %d || "
		    "%s.exists(e, has(e.key) && e.key == '" POLICY_NAME_FIELD "'",
	    fields, fields, MATCHCOND_TERMS_MAX, fields);
	req = 3 * CELCOST_SELECT + 2 * CELCOST_CALL + celcost_string(strlen(POLICY_NAME_FIELD));
	if (names) {
		strbuf_addf(b, " && has(e.values) && (size(e.values) > %d || e.values.exists(v, ", MATCHCOND_LIST_MAX);
		req = celcost_add(req, celcost_add(CELCOST_CALL, guarded_exists_cost("e.values", MATCHCOND_LIST_MAX, put_node_name_test(b, w, "v"))));
		strbuf_addf(b, "))");
	}
	strbuf_addf(b, "))");
	return celcost_add(cost, celcost_add(CELCOST_CALL, guarded_exists_cost(fields, MATCHCOND_TERMS_MAX, req)));
}

static celcost_t put_affinity(struct strbuf *b, const struct view *w, const char *spec)
{
	char na[128], req[192], terms[224], pref[192];
	celcost_t cost;

	snprintf(na, sizeof na, "%s.affinity.nodeAffinity", spec);
	snprintf(req, sizeof req, "%s.requiredDuringSchedulingIgnoredDuringExecution", na);
	snprintf(terms, sizeof terms, "%s.nodeSelectorTerms", req);
	snprintf(pref, sizeof pref, "%s.preferredDuringSchedulingIgnoredDuringExecution", na);
	/* nodeSelectorTerms has no omitempty either: null under an empty required term. */
	strbuf_addf(b, "has(%s.affinity) && has(%s) && (has(%s) && has(%s) && %s != null && (size(%s) > %d || %s.exists(t, ",
	    spec, na, req, terms, terms, terms, MATCHCOND_TERMS_MAX, terms);
	cost = celcost_add(path_cost(na) * 2 + path_cost(req) + path_cost(terms) + CELCOST_CALL * 5,
		    guarded_exists_cost(terms, MATCHCOND_TERMS_MAX, put_term(b, w, "t")));
	strbuf_addf(b, ")) || has(%s) && (size(%s) > %d || %s.exists(p, has(p.preference) && (", pref, pref,
	    MATCHCOND_TERMS_MAX, pref);
	cost = celcost_add(cost, guarded_exists_cost(pref, MATCHCOND_TERMS_MAX,
					      celcost_add(2 * CELCOST_SELECT + CELCOST_CALL, put_term(b, w, "p.preference"))));
	strbuf_addf(b, "))))");
	return cost;
}

/*
 * `has(S.schedulerName) && S.schedulerName in [...] && has(M) && has(M.annotations)
 * && (size(M.annotations) > MAX || M.annotations.exists(k, k in [...]))`:
 * a gpuAnnotations key on a pod of a scheduler that reads one. Returns the cost.
 */
static celcost_t put_annotations(struct strbuf *b, const struct view *w, const char *spec, const char *meta)
{
	char sched[PATH_MAX_LEN + 32], ann[PATH_MAX_LEN + 32];
	celcost_t cost;

	snprintf(sched, sizeof sched, "%s.schedulerName", spec);
	snprintf(ann, sizeof ann, "%s.annotations", meta);
	strbuf_addf(b, "has(%s) && %s in ", sched, sched);
	put_list(b, w->ann_scheds.v, w->ann_scheds.n);
	strbuf_addf(b, " && has(%s) && has(%s) && (size(%s) > %d || %s.exists(k, k in ", meta, ann, ann,
	    MATCHCOND_LIST_MAX, ann);
	put_list(b, w->ann_keys.v, w->ann_keys.n);
	strbuf_addf(b, "))");
	cost = 2 * path_cost(sched) + 2 * CELCOST_CALL + CELCOST_LIST_LITERAL + w->ann_scheds.n;
	cost = celcost_add(cost, path_cost(meta) + CELCOST_CALL + 2 * CELCOST_CALL);
	return celcost_add(cost, guarded_exists_cost(ann, MATCHCOND_LIST_MAX,
						  CELCOST_SELECT + CELCOST_CALL + CELCOST_LIST_LITERAL + w->ann_keys.n));
}

/*
 * gpu-relevant for the pod spec at spec (e.g. "object.spec") and its pod's
 * metadata at meta: the disjuncts, each on a line of its own. Returns the cost.
 */
static celcost_t put_spec_relevant(struct strbuf *b, const struct view *w, const char *spec, const char *meta)
{
	char sel[128];
	celcost_t cost = 0, c;
	size_t i;

	strbuf_addf(b, "  ");
	cost = celcost_add(cost, put_containers(b, w, spec, "containers"));
	strbuf_addf(b, "\n  || ");
	cost = celcost_add(cost, put_containers(b, w, spec, "initContainers"));
	strbuf_addf(b, "\n  || has(%s.resourceClaims) && size(%s.resourceClaims) > 0", spec, spec);
	cost = celcost_add(cost, 2 * path_cost(spec) + 2 + 3 * CELCOST_CALL);
	if (w->ann_keys.n > 0) {
		strbuf_addf(b, "\n  || ");
		cost = celcost_add(cost, put_annotations(b, w, spec, meta));
	}

	strbuf_addf(b, "\n  || has(%s.tolerations) && (size(%s.tolerations) > %d || %s.tolerations.exists(t, "
	    "!has(t.key) || t.key in ", spec, spec, MATCHCOND_LIST_MAX, spec);
	put_list(b, w->taint_keys.v, w->taint_keys.n);
	strbuf_addf(b, "))");
	snprintf(sel, sizeof sel, "%s.tolerations", spec);
	cost = celcost_add(cost, guarded_exists_cost(sel, MATCHCOND_LIST_MAX, 4 * CELCOST_SELECT + 2 * CELCOST_CALL + CELCOST_LIST_LITERAL +
					      w->taint_keys.n));

	snprintf(sel, sizeof sel, "%s.nodeSelector", spec);
	strbuf_addf(b, "\n  || has(%s) && (size(%s) > %d || %s.exists(k, k in ", sel, sel, MATCHCOND_LIST_MAX, sel);
	put_list(b, w->labels.v, w->labels.n);
	c = CELCOST_SELECT + CELCOST_LIST_LITERAL + w->labels.n;
	for (i = 0; i < w->n_pool_keys; i++) {
		const struct policy_pool_key *pk = &w->pool_keys[i];

		strbuf_addf(b, " || k == ");
		put_lit(b, pk->key, strlen(pk->key));
		strbuf_addf(b, " && %s[k] in ", sel);
		put_list(b, pk->values.v, pk->values.n);
		c = celcost_add(c, CELCOST_SELECT + 2 * CELCOST_CALL + celcost_string(strlen(pk->key)) + path_cost(sel) + 2 * CELCOST_SELECT +
			    CELCOST_LIST_LITERAL + pk->values.n);
	}
	if (names_tested(w)) {
		char value[160];

		snprintf(value, sizeof value, "%s[k]", sel);
		strbuf_addf(b, " || k == '" POLICY_HOSTNAME_LABEL "' && ");
		c = celcost_add(c, celcost_add(CELCOST_SELECT + 2 * CELCOST_CALL + celcost_string(strlen(POLICY_HOSTNAME_LABEL)),
				 celcost_add(path_cost(sel) + CELCOST_SELECT, put_node_name_test(b, w, value))));
	}
	strbuf_addf(b, "))");
	cost = celcost_add(cost, guarded_exists_cost(sel, MATCHCOND_LIST_MAX, c));

	strbuf_addf(b, "\n  || ");
	cost = celcost_add(cost, put_affinity(b, w, spec));

	strbuf_addf(b, "\n  || has(%s.nodeName)", spec);
	cost = celcost_add(cost, path_cost(spec) + 1 + CELCOST_CALL);
	if (names_tested(w)) {
		char node[128];

		snprintf(node, sizeof node, "%s.nodeName", spec);
		strbuf_addf(b, " && ");
		cost = celcost_add(cost, celcost_add(CELCOST_CALL + path_cost(node), put_node_name_test(b, w, node)));
	}
	return cost;
}

/* `object != null && has(object.a) && has(object.a.b)` for path "a.b"; returns the cost. */
static celcost_t put_guard(struct strbuf *b, const char *path)
{
	const char *dot = path;
	celcost_t cost = 2 * CELCOST_SELECT;

	strbuf_addf(b, "object != null");
	do {
		dot = strchr(dot, '.');
		strbuf_addf(b, " && has(object.%.*s)", (int)(dot ? (size_t)(dot - path) : strlen(path)), path);
		cost = celcost_add(cost, CELCOST_CALL + path_cost(path) + 1);
		if (dot)
			dot++;
	} while (dot);
	return cost;
}

/*
 * gpu-relevant over every root of t. The kinds of the roots do not overlap,
 * and && stops at a false left side (cel-go's evalAnd without exhaustive
 * evaluation, which the API server does not ask for: test/matchcond/NOTES):
 * one request pays every kind test but one root's expression, the dearest.
 */
static celcost_t put_relevant(struct strbuf *b, const struct view *w, const struct target *t)
{
	celcost_t cost = 0, root, dearest = 0;
	size_t i;

	if (t->n_kinds > 0)
		cost = celcost_add(cost, put_unknown_kind(b, t));
	for (i = 0; i < t->n_roots; i++) {
		const struct root *r = &t->roots[i];
		char spec[PATH_MAX_LEN + 8], meta[PATH_MAX_LEN + 16];

		snprintf(spec, sizeof spec, "object.%s", r->spec);
		snprintf(meta, sizeof meta, "object%s%s.metadata", r->tmpl[0] ? "." : "", r->tmpl);
		strbuf_addf(b, "%s", t->n_kinds > 0 ? "\n|| " : "");
		if (r->n_kinds > 0)
			cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_kind_guard(b, r)));
		root = put_guard(b, r->spec);
		strbuf_addf(b, " && (\n");
		root = celcost_add(root, put_spec_relevant(b, w, spec, meta));
		strbuf_addf(b, "\n)");
		dearest = root > dearest ? root : dearest;
	}
	return celcost_add(cost, dearest);
}

/* ==== update-changes-what-policy-reads ==== */

/*
 * `has(object.P) != has(oldObject.P) || has(object.P) && object.P != oldObject.P`,
 * or for an object whose members the policy reads one by one, the same
 * over each of them, indented by depth. The comparisons cost a tenth of the
 * smaller side's size (runtimecost.go: Equals, NotEquals): over members that
 * do not overlap that adds up to a tenth of the object at most, which the
 * caller adds once.
 */
static celcost_t put_changed(struct strbuf *b, const char *path, const struct scan_shape *m, int depth)
{
	char sub[160];
	celcost_t cost = celcost_add(4 * path_cost(path), 4 * CELCOST_SELECT + 3 * CELCOST_CALL);
	const struct scan_shape *c;

	strbuf_addf(b, "has(object.%s) != has(oldObject.%s) || has(object.%s) && ", path, path, path);
	if (m == NULL || m->kind != SCAN_OBJECT || m->children == NULL) {
		strbuf_addf(b, "object.%s != oldObject.%s", path, path);
		return celcost_add(cost, 2 * path_cost(path) + 2 * CELCOST_SELECT);
	}
	strbuf_addf(b, "(\n%*s", 2 * (depth + 1), "");
	for (c = m->children; c->key != NULL; c++) {
		snprintf(sub, sizeof sub, "%s.%s", path, c->key);
		strbuf_addf(b, "%s", c == m->children ? "" : "\n");
		if (c != m->children)
			strbuf_addf(b, "%*s|| ", 2 * (depth + 1), "");
		cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_changed(b, sub, c, depth + 1)));
	}
	strbuf_addf(b, "\n%*s)", 2 * depth, "");
	return cost;
}

/*
 * A pod template as the workload UPDATE condition compares it: what the
 * policy reads (policy_pod_fields) but the annotations, compared apart and
 * only for pods of a scheduler that reads gpuAnnotations (put_annotations_changed()):
 * a rollout restart's annotation is no change to what the policy decides.
 */
static const struct scan_shape template_metadata_fields[] = {
	{ "namespace", SCAN_WHOLE, NULL },
	{ "labels", SCAN_WHOLE, NULL },
	{ "ownerReferences", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};
static const struct scan_shape template_fields[] = {
	{ "metadata", SCAN_OBJECT, template_metadata_fields },
	{ "spec", SCAN_OBJECT, policy_pod_spec_fields },
	{ NULL, SCAN_WHOLE, NULL },
};

/* The member of policy_pod_fields (a pod as the policy reads it) at dotted path (e.g. "spec"), or NULL. */
static const struct scan_shape *declared(const char *path)
{
	const struct scan_shape *m = policy_pod_fields;
	size_t len;

	while (m != NULL) {
		len = strcspn(path, ".");
		for (; m->key != NULL; m++)
			if (strlen(m->key) == len && strncmp(m->key, path, len) == 0)
				break;
		if (m->key == NULL)
			return NULL;
		if (path[len] == '\0')
			return m;
		path += len + 1;
		m = m->children;
	}
	return NULL;
}

/*
 * put_changed() for m at a dotted path whose levels may be absent: each
 * level from the one at path + from on compared as put_changed() compares
 * an object, with the next level its one member, so nothing is read that
 * is not there in both objects.
 */
static celcost_t put_changed_at(struct strbuf *b, const char *path, size_t from, const struct scan_shape *m, int depth)
{
	const char *dot = strchr(path + from, '.');
	int len;
	celcost_t cost;

	if (dot == NULL)
		return put_changed(b, path, m, depth);
	len = (int)(dot - path);
	strbuf_addf(b, "has(object.%.*s) != has(oldObject.%.*s) || has(object.%.*s) && (\n%*s", len, path, len, path, len,
	    path, 2 * (depth + 1), "");
	cost = celcost_add(4 * path_cost(path), 4 * CELCOST_SELECT + 3 * CELCOST_CALL);
	cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_changed_at(b, path, (size_t)len + 1, m, depth + 1)));
	strbuf_addf(b, "\n%*s)", 2 * depth, "");
	return cost;
}

/* A pod template as the policy reads it: compared member by member. */
static const struct scan_shape template_member = { TEMPLATE_KEY, SCAN_OBJECT, template_fields };

/*
 * `has(object.S) && has(object.S.schedulerName) && object.S.schedulerName in [...]
 * && (<the annotations at M changed>)`, for a spec at S and its metadata at
 * M (dotted, under object), indented by depth: a gpuAnnotations key added or
 * removed changes what the policy decides of a pod of one of the keys'
 * schedulers only (a GPU pod whose key is removed is a CPU-only one, judged
 * on its routes); the schedulerName itself is compared with the spec.
 * Nothing without gpuAnnotations. Returns the cost.
 */
static celcost_t put_annotations_changed(struct strbuf *b, const struct view *w, const char *spec, const char *meta,
				      int depth)
{
	char sched[PATH_MAX_LEN + 32], ann[PATH_MAX_LEN + 32];
	const char *dot = sched;
	celcost_t cost = 0;

	if (w->ann_keys.n == 0)
		return 0;
	snprintf(sched, sizeof sched, "%s.schedulerName", spec);
	snprintf(ann, sizeof ann, "%s.annotations", meta);
	strbuf_addf(b, "\n%*s|| ", 2 * depth, "");
	do {
		dot = strchr(dot, '.');
		strbuf_addf(b, "has(object.%.*s) && ", (int)(dot ? (size_t)(dot - sched) : strlen(sched)), sched);
		cost = celcost_add(cost, CELCOST_CALL + path_cost(sched) + 1);
		if (dot)
			dot++;
	} while (dot);
	strbuf_addf(b, "object.%s in ", sched);
	put_list(b, w->ann_scheds.v, w->ann_scheds.n);
	strbuf_addf(b, " && (\n%*s", 2 * (depth + 1), "");
	cost = celcost_add(cost, path_cost(sched) + 1 + CELCOST_LIST_LITERAL + w->ann_scheds.n + 2 * CELCOST_CALL);
	cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_changed_at(b, ann, 0, NULL, depth + 1)));
	strbuf_addf(b, "\n%*s)", 2 * depth, "");
	return cost;
}

#define UPDATE_ONLY "!has(request.operation) || request.operation != 'UPDATE' || oldObject == null"
#define UPDATE_ONLY_COST (2 * CELCOST_SELECT + 2 * CELCOST_CALL + 1 + CELCOST_SELECT + CELCOST_CALL)

/*
 * An UPDATE is acted on only for what the new pod's spec does that the
 * stored one's did not (policy.c judge_update: a CPU-only pod's new routes to
 * GPU nodes; a GPU pod never). Of the metadata the policy reads, labels,
 * owner references and the namespace only ever exempt a pod, but a
 * gpuAnnotations key removed turns a fraction pod into a CPU-only one whose
 * routes are all new. So for a Pod the spec's members the policy reads are
 * compared, as policy_pod_spec_fields declares them (a list of objects,
 * containers, whole), and its annotations when its scheduler reads
 * gpuAnnotations (put_annotations_changed()). A workload's
 * template is judged on UPDATE when it changed in what the policy reads of
 * a pod, its metadata included (template_same()): the same comparison, over
 * policy_pod_fields (the annotations as a Pod's), for the root of the kind request.kind names (one root
 * per request: see put_relevant()). Comparisons of members that do not
 * overlap cost a tenth of the object at most, added once.
 */
static celcost_t put_update(struct strbuf *b, const struct view *w, const struct target *t)
{
	celcost_t cost = UPDATE_ONLY_COST, dearest = 0, root;
	size_t i;

	strbuf_addf(b, UPDATE_ONLY);
	if (t->n_kinds > 0) {
		strbuf_addf(b, "\n|| ");
		cost = celcost_add(cost, put_unknown_kind(b, t));
	}
	for (i = 0; i < t->n_roots; i++) {
		const struct root *r = &t->roots[i];

		strbuf_addf(b, "\n|| ");
		if (r->n_kinds == 0) {
			root = celcost_add(CELCOST_CALL, put_changed_at(b, r->spec, 0, declared(r->spec), 0));
			root = celcost_add(root, put_annotations_changed(b, w, r->spec, "metadata", 0));
		} else {
			char meta[PATH_MAX_LEN + 16];

			snprintf(meta, sizeof meta, "%s.metadata", r->tmpl);
			cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_kind_guard(b, r)));
			strbuf_addf(b, "(\n  ");
			root = put_changed_at(b, r->tmpl, 0, &template_member, 1);
			root = celcost_add(root, put_annotations_changed(b, w, r->spec, meta, 1));
			strbuf_addf(b, "\n)");
		}
		dearest = root > dearest ? root : dearest;
	}
	return celcost_add(celcost_add(cost, dearest), LIMIT_KUBE_REQUEST_MAX / 10);
}

/*
 * A custom resource's UPDATE: its templates can be anywhere but in its
 * metadata (template.c), which CEL cannot search, so every top-level member
 * but metadata is compared whole (an object of more than MATCHCOND_LIST_MAX
 * members is sent), and of the metadata what the policy reads of a pod's
 * (a PodSpec held directly is judged with the object's metadata). What is
 * left out: the rest of the metadata (annotations, finalizers,
 * resourceVersion, managedFields), which no template holds.
 */
/*
 * Of a custom resource's metadata, what the policy reads of a pod's but its
 * annotations: `kubectl annotate` on a custom resource stays unsent (a
 * gpuAnnotations key on one that holds its PodSpec directly is judged when
 * its pods are created).
 */
static const struct scan_shape custom_metadata_fields[] = {
	{ "namespace", SCAN_WHOLE, NULL },
	{ "labels", SCAN_WHOLE, NULL },
	{ "ownerReferences", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};
static const struct scan_shape custom_metadata = { "metadata", SCAN_OBJECT, custom_metadata_fields };

static celcost_t put_custom_update(struct strbuf *b)
{
	/* Per member: k != 'metadata', !(k in old), object[k] != oldObject[k], and the operators. */
	celcost_t member = CELCOST_SELECT + CELCOST_CALL + 2 * CELCOST_SELECT + 2 * CELCOST_CALL + 4 * CELCOST_SELECT +
			2 * CELCOST_CALL + 2 * CELCOST_CALL;
	celcost_t cost = celcost_add(UPDATE_ONLY_COST, 2 * CELCOST_SELECT + 2 * CELCOST_CALL);

	strbuf_addf(b, UPDATE_ONLY " || object == null");
	strbuf_addf(b, "\n|| size(object) > %d || size(oldObject) > %d", MATCHCOND_LIST_MAX, MATCHCOND_LIST_MAX);
	cost = celcost_add(cost, 2 * (CELCOST_SELECT + 3 * CELCOST_CALL));
	strbuf_addf(b, "\n|| object.exists(k, k != 'metadata' && (!(k in oldObject) || object[k] != oldObject[k]))");
	strbuf_addf(b, "\n|| oldObject.exists(k, k != 'metadata' && !(k in object))");
	cost = celcost_add(cost, 2 * celcost_add(CELCOST_SELECT + CELCOST_FOLD, celcost_mul(MATCHCOND_LIST_MAX, celcost_add(CELCOST_ITERATION, member))));
	strbuf_addf(b, "\n|| ");
	cost = celcost_add(cost, celcost_add(CELCOST_CALL, put_changed_at(b, "metadata", 0, &custom_metadata, 0)));
	return celcost_add(cost, LIMIT_KUBE_REQUEST_MAX / 10);
}

/* ==== The set ==== */

void matchcond_set_free(struct matchcond_set *s)
{
	size_t i;

	if (s == NULL)
		return;
	for (i = 0; i < s->n; i++)
		free(s->v[i].expression);
	memset(s, 0, sizeof *s);
}

/* Moves b's text into s->v[s->n] as condition name; -1 with err when b failed (b keeps its text). */
static int take(struct matchcond_set *s, struct strbuf *b, const char *name, celcost_t cost, struct error *err)
{
	char *text;

	if (b->failed == STRBUF_TOOLONG) {
		error_set(err, ERROR_CONFIG, "matchConditions: %s would be longer than %d bytes", name, EXPRESSION_MAX);
		return -1;
	}
	if (b->failed || (text = strbuf_detach(b, NULL)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	s->v[s->n].name = name;
	s->v[s->n].expression = text;
	s->v[s->n].cost = cost;
	s->n++;
	s->cost = celcost_add(s->cost, cost);
	return 0;
}

int matchcond_build(const struct config *cfg, enum matchcond_entry entry, struct matchcond_set *out,
		    struct error *err)
{
	struct view *w = calloc(1, sizeof *w);
	struct target *t = calloc(1, sizeof *t);
	struct strbuf b = STRBUF_INIT_MAX(EXPRESSION_MAX);
	celcost_t cost;
	size_t i;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (w == NULL || t == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	target_fill(t, entry);
	if (entry != MATCHCOND_CUSTOM) {
		if (view_fill(cfg, w, err) != 0)
			goto out;
		cost = put_relevant(&b, w, t);
		if (take(out, &b, "gpu-relevant", cost, err) != 0)
			goto out;
		cost = put_update(&b, w, t);
	} else {
		cost = put_custom_update(&b);
	}
	if (take(out, &b, "update-changes-what-policy-reads", cost, err) != 0)
		goto out;
	for (i = 0; i < out->n; i++)
		if (out->v[i].cost > MATCHCOND_COST_PER_CALL) {
			error_set(err, ERROR_CONFIG, "matchConditions: %s could cost up to %llu per request, over "
				  "the API server's limit of %llu per expression: set gpuNodeNames to a few globs "
				  "(e.g. [\"aks-gpu*\"]) rather than one name per pool, or list fewer GPU resources, "
				  "GPU node labels or pools", out->v[i].name, out->v[i].cost, MATCHCOND_COST_PER_CALL);
			goto out;
		}
	if (out->cost > MATCHCOND_COST_BUDGET) {
		error_set(err, ERROR_CONFIG, "matchConditions could cost up to %llu per request together, over the "
			  "API server's budget of %llu per webhook", out->cost, MATCHCOND_COST_BUDGET);
		goto out;
	}
	rc = 0;
out:
	strbuf_release(&b);
	if (w != NULL)
		view_free(w);
	free(w);
	free(t);
	if (rc != 0)
		matchcond_set_free(out);
	return rc;
}

/* ==== Output ==== */

char *matchcond_yaml(const struct matchcond_set *s, struct error *err)
{
	struct strbuf b = STRBUF_INIT_MAX((MATCHCOND_N + 1) * 2 * EXPRESSION_MAX);  /* indentation at most doubles one */
	char *text;
	size_t i;

	strbuf_addf(&b, "# Worst-case CEL cost per request (the API server's units):");
	for (i = 0; i < s->n; i++)
		strbuf_addf(&b, " %s %llu,", s->v[i].name, s->v[i].cost);
	strbuf_addf(&b, " of %llu per expression\n# and %llu for all of a webhook's matchConditions together.\n",
	    MATCHCOND_COST_PER_CALL, MATCHCOND_COST_BUDGET);
	strbuf_addf(&b, "matchConditions:\n");
	for (i = 0; i < s->n; i++) {
		const char *line = s->v[i].expression, *nl;

		strbuf_addf(&b, "  - name: %s\n    expression: |-\n", s->v[i].name);
		do {
			nl = strchr(line, '\n');
			strbuf_addf(&b, "      %.*s\n", (int)(nl ? (size_t)(nl - line) : strlen(line)), line);
			line = nl + 1;
		} while (nl != NULL);
	}
	if ((text = strbuf_detach(&b, NULL)) == NULL)
		error_set(err, ERROR_NOMEM, "out of memory");
	return text;
}

json_t *matchcond_json(const struct matchcond_set *s, struct error *err)
{
	json_t *list = json_array(), *doc = json_object();
	size_t i;

	for (i = 0; list != NULL && i < s->n; i++)
		if (json_array_append_new(list, json_pack("{s:s, s:s}", "name", s->v[i].name, "expression",
							  s->v[i].expression)) != 0) {
			json_decref(list);
			list = NULL;
		}
	/* json_object_set_new() takes list even when it fails. */
	if (doc != NULL && list != NULL && json_object_set_new(doc, "matchConditions", list) == 0)
		return doc;
	if (doc == NULL)
		json_decref(list);
	json_decref(doc);
	error_set(err, ERROR_NOMEM, "out of memory");
	return NULL;
}
