/*
 * admpolicy: the admission policies and their bindings (admpolicy.h); the
 * CEL pieces are admpolicy_cel.c's.
 */
#include "render/admpolicy_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/policy.h"

#define NAME "gpu-admission"
#define COST_ANNOTATION "gpu-admission.azure.io/worst-case-cel-cost"
#define NS_LABEL "kubernetes.io/metadata.name"   /* the namespace lifecycle controller sets it on every namespace */
#define ACCELERATOR_LABEL "kubernetes.azure.com/accelerator"
#define COSTS_TEXT_MAX 4096

/* ==== The view ==== */

static void view_free(struct cel_view *w)
{
	policy_pool_keys_free(w->pool_keys, w->n_pool_keys);
	free(w->labels.v);
	memset(w, 0, sizeof *w);
}

static void add_unique(struct config_strings *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return;
	l->v[l->n++] = (char *)(uintptr_t)s;
}

static int view_fill(const struct config *cfg, struct cel_view *w)
{
	size_t i;

	memset(w, 0, sizeof *w);
	w->cfg = cfg;
	policy_describe_taint(cfg, w->taint, sizeof w->taint);
	if ((w->labels.v = calloc(2 * cfg->gpu_node_labels.n + 1, sizeof *w->labels.v)) == NULL)
		return -1;
	for (i = 0; i < cfg->gpu_node_labels.n; i++) {
		add_unique(&w->labels, cfg->gpu_node_labels.v[i]);
		if (config_label_alias(cfg->gpu_node_labels.v[i]) != NULL)
			add_unique(&w->labels, config_label_alias(cfg->gpu_node_labels.v[i]));
	}
	/* As policy_gpu_label(): a pool's key (or its alias) with a value a pool selects. */
	return policy_pool_keys(cfg, NULL, 0, &w->pool_keys, &w->n_pool_keys);
}

/* ==== One policy object being built ==== */

struct pol {
	const struct cel_view *w;
	json_t *vars, *items;   /* variables; validations or mutations */
	celcost_t total;
	char costs[COSTS_TEXT_MAX];
	struct error *err;
	int failed;
};

/* Takes b's text as member key of a new object {name, key: text} appended to list; checks its cost. */
static json_t *take(struct pol *p, json_t *list, const char *name, const char *key, struct cel *b)
{
	json_t *o = NULL;
	size_t used = strlen(p->costs);

	if (p->failed)
		goto out;
	if (b->sb.failed == STRBUF_NOMEM || b->sb.buf == NULL) {
		error_set(p->err, ERROR_NOMEM, "out of memory");
		goto fail;
	}
	if (b->sb.failed == STRBUF_TOOLONG) {
		error_set(p->err, ERROR_CONFIG, "admission policies: %s would be longer than the 100000 characters "
			  "CEL parses", name);
		goto fail;
	}
	if (b->cost > ADMPOLICY_COST_PER_CALL) {
		error_set(p->err, ERROR_CONFIG, "admission policies: %s could cost up to %llu per request, over the "
			  "API server's limit of %llu per expression: list fewer GPU resources, node names or pools",
			  name, b->cost, ADMPOLICY_COST_PER_CALL);
		goto fail;
	}
	p->total = celcost_add(p->total, b->cost);
	snprintf(p->costs + used, sizeof p->costs - used, "%s%s %llu", used ? ", " : "", name, b->cost);
	o = json_pack("{s:s, s:s}", "name", name, key, b->sb.buf);
	if (o == NULL || json_array_append_new(list, o) != 0) {
		error_set(p->err, ERROR_NOMEM, "out of memory");
		goto fail;
	}
	goto out;
fail:
	p->failed = 1;
	o = NULL;
out:
	strbuf_release(&b->sb);
	*b = (struct cel)CEL_INIT;
	return o;
}

/* A variable named name whose expression is the text fmt makes (no comprehension cost of its own). */
static void var_text(struct pol *p, const char *name, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void var_text(struct pol *p, const char *name, const char *fmt, ...)
{
	struct cel b = CEL_INIT;
	char text[2048];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof text, fmt, ap);
	va_end(ap);
	cel_put(&b, "%s", text);
	take(p, p->vars, name, "expression", &b);
}

/* ==== Label selectors, namespaces ==== */

/* Labels L (a CEL map) match sel (policy_selector_match()). */
static void put_selector(struct cel *b, const struct config_label_selector *sel, const char *l)
{
	size_t i;

	cel_put(b, "(true");
	for (i = 0; i < sel->match_labels.n; i++) {
		cel_put(b, " && ");
		cel_lit(b, sel->match_labels.v[i].key);
		cel_put(b, " in %s && %s[", l, l);
		cel_lit(b, sel->match_labels.v[i].key);
		cel_put(b, "] == ");
		cel_lit(b, sel->match_labels.v[i].value);
	}
	for (i = 0; i < sel->n_match_expressions; i++) {
		const struct config_requirement *r = &sel->match_expressions[i];
		int not = strcmp(r->op, "NotIn") == 0 || strcmp(r->op, "DoesNotExist") == 0;
		size_t j;

		cel_put(b, " && %s(", not ? "!" : "");
		cel_lit(b, r->key);
		cel_put(b, " in %s", l);
		if (r->values.n > 0) {
			cel_put(b, " && %s[", l);
			cel_lit(b, r->key);
			cel_put(b, "] in [");
			for (j = 0; j < r->values.n; j++) {
				cel_put(b, "%s", j ? ", " : "");
				cel_lit(b, r->values.v[j]);
			}
			cel_put(b, "]");
			cel_charge(b, 10 + r->values.n);
		}
		cel_put(b, ")");
	}
	cel_put(b, ")");
}

/* The pod is exempt by an exempt.podSelectors entry (policy.c selector_exempt()). */
static void put_selector_exempt(struct cel *b, const struct config *cfg, const char *ns, const char *l)
{
	size_t i;

	cel_put(b, "(false");
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++) {
		cel_put(b, " || ");
		cel_glob(b, ns, &cfg->exempt_pod_selectors[i].namespaces);
		cel_put(b, " && ");
		put_selector(b, &cfg->exempt_pod_selectors[i].selector, l);
	}
	cel_put(b, ")");
}

/* ==== Pools ==== */

/* The pod's nodeSelector (spec s) sets key, or its alias when it does not set key (policy_label_value()). */
static void put_ns_has(struct cel *b, const char *s, const char *key)
{
	const char *alias = config_label_alias(key);

	cel_put(b, "(has(%s.nodeSelector) && %s.nodeSelector != null && (", s, s);
	cel_lit(b, key);
	cel_put(b, " in %s.nodeSelector", s);
	if (alias != NULL) {
		cel_put(b, " || ");
		cel_lit(b, alias);
		cel_put(b, " in %s.nodeSelector", s);
	}
	cel_put(b, "))");
}

static void put_ns_is(struct cel *b, const char *s, const char *key, const char *value)
{
	const char *alias = config_label_alias(key);

	cel_put(b, "(has(%s.nodeSelector) && %s.nodeSelector != null && (", s, s);
	cel_lit(b, key);
	cel_put(b, " in %s.nodeSelector ? %s.nodeSelector[", s, s);
	cel_lit(b, key);
	cel_put(b, "] == ");
	cel_lit(b, value);
	cel_put(b, " : ");
	if (alias != NULL) {
		cel_lit(b, alias);
		cel_put(b, " in %s.nodeSelector && %s.nodeSelector[", s, s);
		cel_lit(b, alias);
		cel_put(b, "] == ");
		cel_lit(b, value);
	} else {
		cel_put(b, "false");
	}
	cel_put(b, "))");
}

/* Pool p serves every GPU resource the pod requests (policy_pool.c pool_serves_all()). */
static void put_serves(struct cel *b, const struct cel_view *w, const struct config_pool *p)
{
	static const char *const m[2] = { "limits", "requests" };
	celcost_t was;
	int i;

	if (p->resources.n == 0) {
		cel_put(b, "true");
		return;
	}
	cel_put(b, "variables.containers.all(c, !has(c.resources) || ");
	was = cel_loop(b, ADMPOLICY_CONTAINERS_MAX);
	for (i = 0; i < 2; i++) {
		cel_put(b, "%s(!has(c.resources.%s) || c.resources.%s.all(k, !", i ? " && " : "(", m[i], m[i]);
		cel_loop(b, ADMPOLICY_RESOURCES_MAX);
		cel_glob(b, "k", &w->cfg->gpu_resources);
		cel_put(b, " || ");
		cel_glob(b, "k", &p->resources);
		cel_put(b, "))");
		b->mult = was * (ADMPOLICY_CONTAINERS_MAX + 1);
	}
	b->mult = was;
	cel_put(b, "))");
}

/* Pool p may take the pod: pool_unfit(), namespace_allowed(), its podSelector, selector_conflict(). */
static void put_pool_ok(struct cel *b, const struct cel_view *w, const struct config_pool *p, const char *s,
			const char *ns, const char *l)
{
	size_t i;

	cel_put(b, "(");
	put_serves(b, w, p);
	if (p->max_gpus_per_pod > 0)
		cel_put(b, " && variables.demand <= %lld", p->max_gpus_per_pod);
	if (p->namespaces.n > 0) {
		cel_put(b, " && ");
		cel_glob(b, ns, &p->namespaces);
	}
	cel_put(b, " && ");
	put_selector(b, &p->pod_selector, l);
	for (i = 0; i < p->node_selector.n; i++) {
		cel_put(b, " && !(");
		put_ns_has(b, s, p->node_selector.v[i].key);
		cel_put(b, " && !");
		put_ns_is(b, s, p->node_selector.v[i].key, p->node_selector.v[i].value);
		cel_put(b, ")");
	}
	cel_put(b, ")");
}

/* How many of pool p's selector entries the pod's nodeSelector has: all (want 2) or some (want 1). */
static void put_selected(struct cel *b, const struct config_pool *p, const char *s, int want)
{
	size_t i;

	cel_put(b, "(");
	for (i = 0; i < p->node_selector.n; i++) {
		cel_put(b, "%s", i ? (want == 2 ? " && " : " || ") : "");
		put_ns_is(b, s, p->node_selector.v[i].key, p->node_selector.v[i].value);
	}
	cel_put(b, ")");
}

/*
 * The pool the webhook picks (policy_pool_choose(), without the pins and
 * the pod's affinity): its index; -1 none may take it; -2 the label
 * gpu-admission/pool names no pool; -3 the pool the label or the pod's
 * nodeSelector picks may not take it.
 */
static void put_pick(struct cel *b, const struct config *cfg, const char *s, const char *l)
{
	size_t i;
	int want;

	cel_put(b, "'" POLICY_POOL_LABEL "' in %s ? (", l);
	for (i = 0; i < cfg->n_pools; i++) {
		cel_put(b, "%s['" POLICY_POOL_LABEL "'] == ", l);
		cel_lit(b, cfg->pools[i].name);
		cel_put(b, " ? (variables.pool%zu ? %zu : -3) : ", i, i);
	}
	cel_put(b, "-2) : ");
	for (want = 2; want >= 1; want--)
		for (i = 0; i < cfg->n_pools; i++) {
			put_selected(b, &cfg->pools[i], s, want);
			cel_put(b, " ? (variables.pool%zu ? %zu : -3) : ", i, i);
		}
	for (i = 0; i < cfg->n_pools; i++)
		cel_put(b, "variables.pool%zu ? %zu : ", i, i);
	cel_put(b, "-1");
}

/* The variables every policy over one pod spec s has: containers, gpu, exemptions, pools, pick. */
static void common_vars(struct pol *p, const char *s, const char *ns, const char *l, const char *ds)
{
	const struct config *cfg = p->w->cfg;
	struct cel b = CEL_INIT;
	char name[32];
	size_t i;

	cel_containers(&b, s);
	take(p, p->vars, "containers", "expression", &b);
	cel_gpu(&b, p->w, "variables.containers");
	take(p, p->vars, "gpu", "expression", &b);
	put_selector_exempt(&b, cfg, ns, l);
	take(p, p->vars, "exempt", "expression", &b);
	cel_put(&b, "%s", ds);
	take(p, p->vars, "ds", "expression", &b);
	cel_put(&b, "variables.ds && %s && ", cfg->exempt_daemonsets ? "true" : "false");
	cel_glob(&b, ns, &cfg->exempt_daemonset_namespaces);
	take(p, p->vars, "dsExempt", "expression", &b);
	for (i = 0; i < cfg->n_pools && cfg->pools[i].max_gpus_per_pod == 0; i++)
		;
	if (i < cfg->n_pools) {  /* only maxGPUsPerPod reads it */
		cel_demand(&b, p->w, s);
		take(p, p->vars, "demand", "expression", &b);
	}
	for (i = 0; i < cfg->n_pools; i++) {
		snprintf(name, sizeof name, "pool%zu", i);
		put_pool_ok(&b, p->w, &cfg->pools[i], s, ns, l);
		take(p, p->vars, name, "expression", &b);
	}
	put_pick(&b, cfg, s, l);
	take(p, p->vars, "pick", "expression", &b);
}

/* ==== Validating: the CPU-only routes ==== */

typedef void (*route_fn)(struct cel *, const struct cel_view *, const char *);

static const struct route {
	const char *name;
	route_fn fn;
	const char *fix;
} routes[] = {
	{ "Tol", cel_route_toleration, "the toleration" },
	{ "Sel", cel_route_selector, "the nodeSelector entry" },
	{ "Aff", cel_route_affinity, "the required node affinity" },
	{ "Name", cel_route_node_name, "spec.nodeName" },
};
#define N_ROUTES (sizeof routes / sizeof routes[0])

/*
 * Per route: whether the pod spec s takes it (`tol`...), the stored one did
 * (`oldTol`...), and whether it is judged (`rTol`...): on UPDATE only a
 * route the stored CPU-only pod did not take (policy.c judge_update()).
 */
static void route_vars(struct pol *p, const char *s, const char *old)
{
	struct cel b = CEL_INIT;
	char name[32];
	size_t i;

	var_text(p, "update", "request.operation == 'UPDATE' && oldObject != null");
	cel_containers(&b, old);
	take(p, p->vars, "oldContainers", "expression", &b);
	cel_gpu(&b, p->w, "variables.oldContainers");
	take(p, p->vars, "oldGpu", "expression", &b);
	for (i = 0; i < N_ROUTES; i++) {
		routes[i].fn(&b, p->w, s);
		snprintf(name, sizeof name, "%c%s", routes[i].name[0] + 'a' - 'A', routes[i].name + 1);
		take(p, p->vars, name, "expression", &b);
		routes[i].fn(&b, p->w, old);
		snprintf(name, sizeof name, "old%s", routes[i].name);
		take(p, p->vars, name, "expression", &b);
		snprintf(name, sizeof name, "r%s", routes[i].name);
		var_text(p, name, "variables.%c%s && !(variables.update && !variables.oldGpu && variables.old%s)",
			 routes[i].name[0] + 'a' - 'A', routes[i].name + 1, routes[i].name);
	}
}

/* The messageExpression of the CPU-only refusal: policy_target.c policy_routes_judge()'s words. */
static void put_route_message(struct cel *b, const struct cel_view *w, const char *s, const char *prefix)
{
	size_t i;

	cel_put(b, "%s(has(%s.resourceClaims) && %s.resourceClaims != null && size(%s.resourceClaims) > 0 ? "
		"'pod with DRA resource claims but no GPU resource' : 'CPU-only pod') + ' aimed at GPU nodes: ' + [",
		prefix, s, s, s);
	cel_put(b, "variables.rTol ? 'it tolerates the GPU taint %s (spec.tolerations[' + string(%s.tolerations"
		".map(t, ", w->taint, s);
	cel_tolerates(b, w, "t", 1);
	cel_put(b, ").indexOf(true)) + '])' : '', variables.rSel ? %s.nodeSelector.filter(k, ", s);
	{
		char v[160];

		snprintf(v, sizeof v, "%s.nodeSelector[k]", s);
		cel_selects_gpu(b, w, "k", v);
	}
	cel_put(b, ").map(k, k == '" POLICY_HOSTNAME_LABEL "' && !(k in [");
	for (i = 0; i < w->labels.n; i++) {
		cel_put(b, "%s", i ? ", " : "");
		cel_lit(b, w->labels.v[i]);
	}
	cel_put(b, "]) ? 'it selects GPU node ' + %s.nodeSelector[k] + "
		"' with nodeSelector " POLICY_HOSTNAME_LABEL "' : "
		"'it selects GPU nodes with nodeSelector ' + k + '=' + %s.nodeSelector[k])[0] : '', "
		"variables.rAff ? 'its required node affinity matches only GPU nodes' : '', "
		"variables.rName ? 'spec.nodeName binds it to GPU node ' + %s.nodeName : ''].filter(x, x != '')"
		".join('; ') + '. ' + (has(%s.resourceClaims) && %s.resourceClaims != null && size(%s.resourceClaims) > 0 ? "
		"'gpu-admission does not recognise a DRA claim as a GPU request yet, and a claim opens no route to "
		"GPU nodes: request the GPU as a resource (e.g. limits nvidia.com/gpu: 1), ask the cluster admin "
		"to exempt the namespace (exempt.namespaces), or remove ' : 'GPU nodes are for GPU pods: remove ') + [",
		s, s, s, s, s, s);
	for (i = 0; i < N_ROUTES; i++)
		cel_put(b, "%svariables.r%s ? '%s' : ''", i ? ", " : "", routes[i].name, routes[i].fix);
	cel_put(b, "].filter(x, x != '').join(', ')");
	cel_put(b, " + (has(%s.resourceClaims) && %s.resourceClaims != null && size(%s.resourceClaims) > 0 ? '' : "
		"', or request a GPU (e.g. limits nvidia.com/gpu: 1)')", s, s, s);
	cel_charge(b, 20 * 10);
}

/* The validation that a pod (or template) stays within the bounds the costs were computed for. */
static void put_bounds(struct cel *b, const char *s)
{
	cel_put(b, "size(variables.containers) <= %d && variables.containers.all(c, !has(c.resources) || "
		"(!has(c.resources.limits) || size(c.resources.limits) <= %d) && "
		"(!has(c.resources.requests) || size(c.resources.requests) <= %d))",
		ADMPOLICY_CONTAINERS_MAX, ADMPOLICY_RESOURCES_MAX, ADMPOLICY_RESOURCES_MAX);
	cel_charge(b, ADMPOLICY_CONTAINERS_MAX * 40);
	cel_put(b, " && (!has(%s.tolerations) || %s.tolerations == null || size(%s.tolerations) <= %d)"
		" && (!has(%s.nodeSelector) || %s.nodeSelector == null || size(%s.nodeSelector) <= %d) && ",
		s, s, s, ADMPOLICY_LIST_MAX, s, s, s, ADMPOLICY_LIST_MAX);
	cel_required_terms(b, s);
	cel_put(b, ".all(t, (!has(t.matchExpressions) || t.matchExpressions == null || size(t.matchExpressions) <= %d "
		"&& t.matchExpressions.all(e, !has(e.values) || e.values == null || size(e.values) <= %d)) && "
		"(!has(t.matchFields) || t.matchFields == null || size(t.matchFields) <= %d && t.matchFields.all(e, "
		"!has(e.values) || e.values == null || size(e.values) <= %d)))", ADMPOLICY_TERMS_MAX, ADMPOLICY_VALUES_MAX,
		ADMPOLICY_TERMS_MAX, ADMPOLICY_VALUES_MAX);
	cel_charge(b, ADMPOLICY_TERMS_MAX * ADMPOLICY_TERMS_MAX * 40);
	cel_put(b, " && ");
	cel_required_terms(b, s);
	cel_put(b, ".size() <= %d", ADMPOLICY_TERMS_MAX);
}

/* The validations of one pod spec s: bounds, the CPU-only routes, the GPU pod's pool. */
static void validations(struct pol *p, const char *s, const char *prefix, const char *what)
{
	const struct config *cfg = p->w->cfg;
	struct cel b = CEL_INIT;
	json_t *v;
	size_t i;

	put_bounds(&b, s);
	v = take(p, p->items, "within-bounds", "expression", &b);
	if (v != NULL) /* a Validation has no name: it is for the cost annotation only */
		json_object_del(v, "name");
	if (v != NULL)
		json_object_set_new(v, "message", json_pack("s+", what, " holds more than the in-process admission "
			"policies judge (containers, resources, tolerations, nodeSelector entries or node affinity terms): "
			"it is refused rather than let through unjudged"));
	cel_put(&b, "variables.gpu || variables.exempt || variables.dsExempt || !(variables.rTol || variables.rSel || "
		"variables.rAff || variables.rName)");
	v = take(p, p->items, "cpu-only-pod-aimed-at-gpu-nodes", "expression", &b);
	if (v != NULL)
		json_object_del(v, "name");
	put_route_message(&b, p->w, s, prefix);
	/* take() always releases b's text, even after a failure: called first. */
	if (take(p, p->vars, "cpuMessage", "expression", &b) != NULL && v != NULL)
		json_object_set_new(v, "messageExpression", json_string("variables.cpuMessage"));
	cel_put(&b, "!variables.gpu || variables.exempt || variables.ds || variables.update || variables.pick >= 0");
	v = take(p, p->items, "gpu-pod-has-a-pool", "expression", &b);
	if (v != NULL)
		json_object_del(v, "name");
	cel_put(&b, "%s(variables.pick == -2 ? 'label " POLICY_POOL_LABEL "=' + "
		"variables.labels['" POLICY_POOL_LABEL "'] + "
		"' names no configured GPU pool; pools are: ", prefix);
	for (i = 0; i < cfg->n_pools; i++)
		cel_put(&b, "%s%s", i ? ", " : "", cfg->pools[i].name);
	cel_put(&b, "' : 'no GPU pool can take this pod (its GPU resources and count, namespace, labels and "
		"nodeSelector, as the policy\\'s pools allow them; gpu-admission review says which pool refuses it "
		"and why)')");
	if (take(p, p->vars, "poolMessage", "expression", &b) != NULL && v != NULL)
		json_object_set_new(v, "messageExpression", json_string("variables.poolMessage"));
}

/* ==== Mutating: the GPU toleration and the pinned pool ==== */

/* Toleration h tolerates key=value:effect (nodematch_tolerates(), written out for fixed values). */
static void put_tolerates_fixed(struct cel *b, const char *h, const char *key, const char *value, const char *effect)
{
	cel_put(b, "((!has(%s.effect) || %s.effect == '' || %s.effect == ", h, h, h);
	cel_lit(b, effect);
	cel_put(b, ") && (!has(%s.key) || %s.key == '' || %s.key == ", h, h, h);
	cel_lit(b, key);
	cel_put(b, ") && (!has(%s.operator) || %s.operator in ['', 'Equal'] ? (has(%s.value) ? %s.value : '') == ", h, h,
		h, h);
	cel_lit(b, value);
	cel_put(b, " : %s.operator == 'Exists'))", h);
	cel_charge(b, 10);
}

/* A toleration literal: the list element type of a Pod's spec.tolerations. */
static void put_toleration(struct cel *b, const char *key, const char *op, const char *value, const char *effect)
{
	cel_put(b, "Object.spec.tolerations{key: ");
	cel_lit(b, key);
	cel_put(b, ", operator: ");
	cel_lit(b, op);
	if (value[0] != '\0') {
		cel_put(b, ", value: ");
		cel_lit(b, value);
	}
	if (effect[0] != '\0') {
		cel_put(b, ", effect: ");
		cel_lit(b, effect);
	}
	cel_put(b, "}");
}

/*
 * Pool toleration t unless the pod has one that covers it (nodematch_covers()):
 * a list of 0 or 1, or with count, the number 0 or 1.
 */
static void put_pool_toleration(struct cel *b, const struct config_toleration *t, int count)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	size_t i;
	celcost_t was;

	cel_put(b, "(has(object.spec.tolerations) && object.spec.tolerations != null && "
		"object.spec.tolerations.exists(h, true");
	was = cel_loop(b, ADMPOLICY_LIST_MAX);
	for (i = 0; i < sizeof effects / sizeof effects[0]; i++) {
		if (t->effect[0] != '\0' && strcmp(t->effect, effects[i]) != 0)
			continue;
		cel_put(b, " && ");
		put_tolerates_fixed(b, "h", t->key, strcmp(t->op, "Exists") == 0 ? "" : t->value, effects[i]);
		if (strcmp(t->op, "Exists") == 0) {
			cel_put(b, " && ");
			put_tolerates_fixed(b, "h", t->key, "-", effects[i]);
		}
	}
	b->mult = was;
	if (count) {
		cel_put(b, ") ? 0 : 1)");
		return;
	}
	cel_put(b, ") ? [] : [");
	put_toleration(b, t->key, t->op, t->value, t->effect);
	cel_put(b, "])");
	cel_charge(b, 2 * 10);
}

/* `/spec/nodeSelector/<key>`: a JSON Pointer token (~ and / escaped). */
static void put_pointer_key(struct cel *b, const char *key)
{
	cel_put(b, "'/spec/nodeSelector/");
	for (; *key; key++)
		cel_put(b, "%s", *key == '~' ? "~0" : *key == '/' ? "~1" : *key == '\'' ? "\\'" : (char[2]){ *key, 0 });
	cel_put(b, "'");
}

/*
 * Pool p's nodeSelector entries the pod lacks, as JSON Patch operations
 * (policy_pool.c add_selector()): none when the only ones missing are
 * implied by the pod's request and nothing else is added.
 */
static void put_selector_patch(struct cel *b, const struct config_pool *p)
{
	size_t i;

	cel_put(b, "((variables.nTols > 0");
	for (i = 0; i < p->node_selector.n; i++) {
		const struct config_kv *kv = &p->node_selector.v[i];
		int implied = config_label_same(ACCELERATOR_LABEL, kv->key) && strcmp(kv->value, "nvidia") == 0;

		cel_put(b, " || !");
		put_ns_has(b, "object.spec", kv->key);
		if (implied)
			cel_put(b, " && !variables.nvidia");
	}
	cel_put(b, ") ? (!has(object.spec.nodeSelector) || object.spec.nodeSelector == null ? "
		"[JSONPatch{op: 'add', path: '/spec/nodeSelector', value: {");
	for (i = 0; i < p->node_selector.n; i++) {
		cel_put(b, "%s", i ? ", " : "");
		cel_lit(b, p->node_selector.v[i].key);
		cel_put(b, ": ");
		cel_lit(b, p->node_selector.v[i].value);
	}
	cel_put(b, "}}] : []");
	for (i = 0; i < p->node_selector.n; i++) {
		cel_put(b, " + (");
		put_ns_has(b, "object.spec", p->node_selector.v[i].key);
		cel_put(b, " ? [] : [JSONPatch{op: 'add', path: ");
		put_pointer_key(b, p->node_selector.v[i].key);
		cel_put(b, ", value: ");
		cel_lit(b, p->node_selector.v[i].value);
		cel_put(b, "}])");
	}
	cel_put(b, ") : [])");
	cel_charge(b, 10 * (p->node_selector.n + 2));
}

/* The GPU resources of the policy that are nvidia.com/ ones (implied_by_request()'s glob), into v. */
static size_t nvidia_resources(const struct config *cfg, char **v, size_t cap)
{
	size_t i, n = 0;

	for (i = 0; i < cfg->gpu_resources.n && n < cap; i++)
		if (strncmp(cfg->gpu_resources.v[i], "nvidia.com/", sizeof "nvidia.com/" - 1) == 0)
			v[n++] = cfg->gpu_resources.v[i];
	return n;
}

static void mutating_vars(struct pol *p)
{
	const struct config *cfg = p->w->cfg;
	char *nv_res[CEL_GLOBS_MAX];
	struct config nv = *cfg;
	struct cel_view nv_view = *p->w;
	struct cel b = CEL_INIT;
	size_t i, j;

	/* A pod requesting an nvidia.com/ GPU runs only where AKS sets the accelerator label. */
	nv.gpu_resources.v = nv_res;
	nv.gpu_resources.n = nvidia_resources(cfg, nv_res, CEL_GLOBS_MAX);
	nv_view.cfg = &nv;
	cel_gpu(&b, &nv_view, "variables.containers");
	take(p, p->vars, "nvidia", "expression", &b);
	cel_put(&b, "has(object.spec.nodeName) && object.spec.nodeName != '' || has(object.spec.nodeSelector) && "
		"object.spec.nodeSelector != null && '" POLICY_HOSTNAME_LABEL "' in object.spec.nodeSelector || size(");
	cel_required_terms(&b, "object.spec");
	cel_put(&b, ") > 0");
	take(p, p->vars, "pins", "expression", &b);
	cel_put(&b, "false");
	for (i = 0; i < cfg->defer_labels.n; i++) {
		cel_put(&b, " || ");
		cel_lit(&b, cfg->defer_labels.v[i]);
		cel_put(&b, " in variables.labels");
	}
	take(p, p->vars, "deferred", "expression", &b);
	var_text(p, "place", "%s && !variables.ds && !variables.deferred && !variables.pins && variables.pick >= 0",
		 cfg->placement == CONFIG_PLACEMENT_PINNED ? "true" : "false");
	cel_put(&b, "has(object.spec.tolerations) && object.spec.tolerations != null && "
		"object.spec.tolerations.exists(t, ");
	cel_loop(&b, ADMPOLICY_LIST_MAX);
	cel_tolerates(&b, p->w, "t", 0);
	b.mult = 1;
	cel_put(&b, ")");
	take(p, p->vars, "tolerated", "expression", &b);
	cel_put(&b, "(variables.tolerated ? 0 : 1) + (variables.place ? (");
	for (i = 0; i < cfg->n_pools; i++) {
		cel_put(&b, "variables.pick == %zu ? (0", i);
		for (j = 0; j < cfg->pools[i].tolerations.n; j++) {
			cel_put(&b, " + ");
			put_pool_toleration(&b, &cfg->pools[i].tolerations.v[j], 1);
		}
		cel_put(&b, ") : ");
	}
	cel_put(&b, "0) : 0)");
	take(p, p->vars, "nTols", "expression", &b);
}

/* The tolerations to add (as nTols counts them): typed literals, which only a mutation can write. */
static void put_add_tolerations(struct cel *b, const struct config *cfg)
{
	size_t i, j;

	cel_put(b, "((variables.tolerated ? [] : [");
	put_toleration(b, cfg->taint_key, cfg->taint_value[0] ? "Equal" : "Exists", cfg->taint_value, cfg->taint_effect);
	cel_put(b, "]) + (variables.place ? (");
	for (i = 0; i < cfg->n_pools; i++) {
		cel_put(b, "variables.pick == %zu ? ([]", i);
		for (j = 0; j < cfg->pools[i].tolerations.n; j++) {
			cel_put(b, " + ");
			put_pool_toleration(b, &cfg->pools[i].tolerations.v[j], 0);
		}
		cel_put(b, ") : ");
	}
	cel_put(b, "[]) : []))");

}

/* Appends {patchType: JSONPatch, jsonPatch: {expression}} made of b (take()'s checks). */
static void mutation(struct pol *p, const char *name, struct cel *b)
{
	json_t *scratch = json_array(), *m;

	if (scratch == NULL) {
		error_set(p->err, ERROR_NOMEM, "out of memory");
		p->failed = 1;
		strbuf_release(&b->sb);
		*b = (struct cel)CEL_INIT;
		return;
	}
	m = take(p, scratch, name, "expression", b);
	if (m != NULL && json_array_append_new(p->items, json_pack("{s:s, s:{s:O}}", "patchType", "JSONPatch",
			"jsonPatch", "expression", json_object_get(m, "expression"))) != 0) {
		error_set(p->err, ERROR_NOMEM, "out of memory");
		p->failed = 1;
	}
	json_decref(scratch);
}

static void mutations(struct pol *p)
{
	const struct config *cfg = p->w->cfg;
	struct cel b = CEL_INIT;
	size_t i;

	cel_put(&b, "!variables.place ? [] : ");
	for (i = 0; i < cfg->n_pools; i++) {
		cel_put(&b, "variables.pick == %zu ? ", i);
		put_selector_patch(&b, &cfg->pools[i]);
		cel_put(&b, " : ");
	}
	cel_put(&b, "[]");
	mutation(p, "pool-node-selector", &b);
	/*
	 * Second: the variables are evaluated again on the object the first
	 * mutation left, where the toleration the selector's rule counts
	 * (nTols) would be there already.
	 */
	cel_put(&b, "variables.nTols == 0 ? [] : !has(object.spec.tolerations) || object.spec.tolerations == null ? "
		"[JSONPatch{op: 'add', path: '/spec/tolerations', value: ");
	put_add_tolerations(&b, cfg);
	cel_put(&b, "}] : ");
	put_add_tolerations(&b, cfg);
	cel_put(&b, ".map(t, JSONPatch{op: 'add', path: '/spec/tolerations/-', value: t})");
	cel_charge(&b, ADMPOLICY_LIST_MAX * 10);
	mutation(p, "gpu-toleration", &b);
}

/* ==== The objects ==== */

static const char *const mode_actions[3][3] = {
	[CONFIG_MODE_ENFORCE] = { "Deny", NULL, NULL },
	[CONFIG_MODE_WARN] = { "Warn", NULL, NULL },
	[CONFIG_MODE_DRYRUN] = { "Warn", "Audit", NULL },
};

/*
 * A selector of the namespaces whose mode is in modes (a mask of 1 << mode),
 * less the exempt ones: In them when in, else NotIn the others and the
 * exempt. NULL with *none set when in and no namespace qualifies (no
 * binding to make); NULL with *none clear when memory ran out.
 */
static json_t *modes_selector(const struct config *cfg, unsigned modes, int in, int *none)
{
	json_t *values = json_array();
	size_t i;

	*none = 0;
	for (i = 0; values != NULL && !in && i < cfg->exempt_namespaces.n; i++)
		json_array_append_new(values, json_string(cfg->exempt_namespaces.v[i]));
	for (i = 0; values != NULL && i < cfg->n_namespace_modes; i++) {
		const struct config_namespace_mode *nm = &cfg->namespace_modes[i];

		if ((int)((modes >> nm->mode) & 1u) == in && !policy_list_has(&cfg->exempt_namespaces, nm->ns))
			json_array_append_new(values, json_string(nm->ns));
	}
	if (values == NULL)
		return NULL;
	if (json_array_size(values) == 0) {
		json_decref(values);
		*none = in;
		return in ? NULL : json_object();
	}
	return json_pack("{s:[{s:s, s:s, s:o}]}", "matchExpressions", "key", NS_LABEL, "operator", in ? "In" : "NotIn",
			 "values", values);
}

/* The namespaces of mode m: In them, or, for the policy's own mode, NotIn the others and the exempt. */
static json_t *namespace_selector(const struct config *cfg, enum config_mode m, int *none)
{
	return modes_selector(cfg, 1u << m, m != cfg->mode, none);
}

static json_t *metadata(const char *name)
{
	return json_pack("{s:s, s:{s:s, s:s}}", "name", name, "labels", "app.kubernetes.io/name", NAME,
			 "app.kubernetes.io/component", "admission-policy");
}

/*
 * The namespaces the policy's mutation applies in: all but the exempt and
 * the dryrun ones (the webhook patches nothing there); under mode dryrun,
 * only those given enforce or warn.
 */
static json_t *mutate_selector(const struct config *cfg, int *none)
{
	return modes_selector(cfg, (1u << CONFIG_MODE_ENFORCE) | (1u << CONFIG_MODE_WARN),
			      cfg->mode == CONFIG_MODE_DRYRUN, none);
}

/* A binding of policy to the namespaces of sel (taken; {}: all); actions NULL for a mutating one. */
static int binding(json_t *items, const char *policy, const char *suffix, const char *api, json_t *sel,
		   const char *const *actions)
{
	char name[96];
	json_t *spec, *b, *list;
	size_t i;

	snprintf(name, sizeof name, "%s-%s", policy, suffix);
	spec = json_pack("{s:s, s:{}}", "policyName", policy, "matchResources");
	if (spec == NULL || sel == NULL) {
		json_decref(spec);
		json_decref(sel);
		return -1;
	}
	if (json_object_size(sel) > 0)
		json_object_set(json_object_get(spec, "matchResources"), "namespaceSelector", sel);
	json_decref(sel);
	if (actions != NULL) {
		list = json_array();
		for (i = 0; list != NULL && actions[i] != NULL; i++)
			json_array_append_new(list, json_string(actions[i]));
		json_object_set_new(spec, "validationActions", list);
	}
	b = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", api, "kind",
		      actions ? "ValidatingAdmissionPolicyBinding" : "MutatingAdmissionPolicyBinding", "metadata",
		      metadata(name), "spec", spec);
	return b == NULL || json_array_append_new(items, b) != 0 ? -1 : 0;
}

/* One binding of validating policy per mode that has namespaces. */
static int validating_bindings(json_t *items, const struct config *cfg, const char *policy)
{
	int m, empty;

	for (m = CONFIG_MODE_ENFORCE; m <= CONFIG_MODE_DRYRUN; m++) {
		json_t *sel = namespace_selector(cfg, (enum config_mode)m, &empty);

		if (sel == NULL && empty)
			continue;
		if (binding(items, policy, config_mode_name((enum config_mode)m), "admissionregistration.k8s.io/v1", sel,
			    mode_actions[m]) != 0)
			return -1;
	}
	return 0;
}

/* The policy object of p, kind with spec (taken), annotated with its costs. NULL when p failed. */
static json_t *finish(struct pol *p, const char *api, const char *kind, const char *name, json_t *spec)
{
	char note[COSTS_TEXT_MAX + 160];
	json_t *md = metadata(name), *o;

	if (p->failed || md == NULL || spec == NULL) {
		if (!p->failed)
			error_set(p->err, ERROR_NOMEM, "out of memory");
		json_decref(md);
		json_decref(spec);
		return NULL;
	}
	if (p->total > ADMPOLICY_COST_BUDGET) {
		error_set(p->err, ERROR_CONFIG, "admission policies: %s could cost up to %llu per request in all, over the "
			  "API server's budget of %llu", name, p->total, ADMPOLICY_COST_BUDGET);
		json_decref(md);
		json_decref(spec);
		return NULL;
	}
	snprintf(note, sizeof note, "%llu in all (budget %llu; at most %llu per expression): %s", p->total,
		 ADMPOLICY_COST_BUDGET, ADMPOLICY_COST_PER_CALL, p->costs);
	json_object_set_new(md, "annotations", json_pack("{s:s}", COST_ANNOTATION, note));
	o = json_pack("{s:s, s:s, s:o, s:o}", "apiVersion", api, "kind", kind, "metadata", md, "spec", spec);
	if (o == NULL)
		error_set(p->err, ERROR_NOMEM, "out of memory");
	return o;
}

static int pol_init(struct pol *p, const struct cel_view *w, struct error *err)
{
	memset(p, 0, sizeof *p);
	p->w = w;
	p->err = err;
	p->vars = json_array();
	p->items = json_array();
	if (p->vars == NULL || p->items == NULL) {
		json_decref(p->vars);
		json_decref(p->items);
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* `request.userInfo.username in [controllers] && <controlled by an apps/v1 DaemonSet>` (policy_pod_read()). */
static void put_daemonset_pod(struct cel *b, const struct config *cfg)
{
	cel_in(b, "request.userInfo.username", &cfg->exempt_daemonset_controllers);
	cel_put(b, " && has(object.metadata.ownerReferences) && object.metadata.ownerReferences.exists(r, "
		"has(r.controller) && r.controller && r.apiVersion == 'apps/v1' && r.kind == 'DaemonSet')");
	cel_charge(b, ADMPOLICY_LIST_MAX * 40);
}

#define POD_LABELS "has(object.metadata.labels) ? object.metadata.labels : {}"
#define POD_RULES "[{\"apiGroups\": [\"\"], \"apiVersions\": [\"v1\"], \"operations\": [%s], \"resources\": [\"pods\"]}]"

static json_t *pods_validating(const struct cel_view *w, struct error *err)
{
	struct pol p;
	struct cel b = CEL_INIT;
	json_t *spec;

	if (pol_init(&p, w, err) != 0)
		return NULL;
	var_text(&p, "labels", POD_LABELS);
	var_text(&p, "ns", "request.namespace");
	put_daemonset_pod(&b, w->cfg);
	common_vars(&p, "object.spec", "variables.ns", "variables.labels", b.sb.buf ? b.sb.buf : "false");
	strbuf_release(&b.sb);
	route_vars(&p, "object.spec", "oldObject.spec");
	validations(&p, "object.spec", "", "the pod");
	spec = json_pack("{s:s, s:{s:[{s:[s], s:[s], s:[s, s], s:[s]}]}, s:O, s:O}", "failurePolicy", "Fail",
			 "matchConstraints", "resourceRules", "apiGroups", "", "apiVersions", "v1", "operations", "CREATE",
			 "UPDATE", "resources", "pods", "variables", p.vars, "validations", p.items);
	json_decref(p.vars);
	json_decref(p.items);
	return finish(&p, "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", NAME "-pods", spec);
}

/* The pod template of the built-in workload kinds (template.c's paths), over object or oldObject. */
#define TEMPLATE_OF(o) "request.kind.kind == 'CronJob' ? " o ".spec.jobTemplate.spec.template : " \
	"request.kind.kind == 'PodTemplate' ? " o ".template : " o ".spec.template"
#define TEMPLATE_PATH "(request.kind.kind == 'CronJob' ? 'spec.jobTemplate.spec.template' : " \
	"request.kind.kind == 'PodTemplate' ? 'template' : 'spec.template')"

static json_t *workloads_validating(const struct cel_view *w, struct error *err)
{
	struct pol p;
	json_t *spec;

	if (pol_init(&p, w, err) != 0)
		return NULL;
	var_text(&p, "tmpl", TEMPLATE_OF("object"));
	var_text(&p, "oldTmpl", TEMPLATE_OF("oldObject"));
	var_text(&p, "labels", "has(variables.tmpl.metadata) && has(variables.tmpl.metadata.labels) ? "
		 "variables.tmpl.metadata.labels : {}");
	var_text(&p, "ns", "request.namespace");
	/* A DaemonSet's pods: the webhook judges its template as one (template.c). */
	common_vars(&p, "variables.tmpl.spec", "variables.ns", "variables.labels", "request.kind.kind == 'DaemonSet'");
	route_vars(&p, "variables.tmpl.spec", "variables.oldTmpl.spec");
	validations(&p, "variables.tmpl.spec", "request.kind.kind + ' ' + request.namespace + '/' + "
		    "(has(object.metadata.name) ? object.metadata.name : '') + ': pod template ' + " TEMPLATE_PATH
		    " + ': ' + ", "the pod template");
	spec = json_pack("{s:s, s:{s:[{s:[s], s:[s], s:[s, s], s:[s, s, s, s]}, {s:[s], s:[s], s:[s, s], s:[s, s]},"
			 " {s:[s], s:[s], s:[s, s], s:[s, s]}]}, s:O, s:O}", "failurePolicy", "Fail",
			 "matchConstraints", "resourceRules",
			 "apiGroups", "apps", "apiVersions", "v1", "operations", "CREATE", "UPDATE", "resources",
			 "deployments", "replicasets", "daemonsets", "statefulsets",
			 "apiGroups", "batch", "apiVersions", "v1", "operations", "CREATE", "UPDATE", "resources", "jobs",
			 "cronjobs",
			 "apiGroups", "", "apiVersions", "v1", "operations", "CREATE", "UPDATE", "resources",
			 "replicationcontrollers", "podtemplates", "variables", p.vars, "validations", p.items);
	json_decref(p.vars);
	json_decref(p.items);
	return finish(&p, "admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", NAME "-workloads", spec);
}

static json_t *pods_mutating(const struct cel_view *w, const char *api, struct error *err)
{
	struct pol p;
	struct cel b = CEL_INIT, c = CEL_INIT;
	json_t *spec, *conds = json_array();

	if (conds == NULL || pol_init(&p, w, err) != 0) {
		json_decref(conds);
		return NULL;
	}
	var_text(&p, "labels", POD_LABELS);
	var_text(&p, "ns", "request.namespace");
	put_daemonset_pod(&b, w->cfg);
	common_vars(&p, "object.spec", "variables.ns", "variables.labels", b.sb.buf ? b.sb.buf : "false");
	strbuf_release(&b.sb);
	mutating_vars(&p);
	mutations(&p);
	/* matchConditions cannot read variables: the GPU test and the exemption written out. */
	b = (struct cel)CEL_INIT;
	cel_put(&c, "(");
	cel_containers(&c, "object.spec");
	cel_put(&c, ")");
	if (c.sb.buf != NULL)
		cel_gpu(&b, w, c.sb.buf);
	strbuf_release(&c.sb);
	take(&p, conds, "gpu-pod", "expression", &b);
	cel_put(&b, "!");
	put_selector_exempt(&b, w->cfg, "request.namespace", "(" POD_LABELS ")");
	take(&p, conds, "not-exempt-by-labels", "expression", &b);
	spec = json_pack("{s:s, s:s, s:{s:[{s:[s], s:[s], s:[s], s:[s]}]}, s:o, s:O, s:O}", "failurePolicy", "Fail",
			 "reinvocationPolicy", "IfNeeded", "matchConstraints", "resourceRules", "apiGroups", "",
			 "apiVersions", "v1", "operations", "CREATE", "resources", "pods", "matchConditions", conds,
			 "variables", p.vars, "mutations", p.items);
	json_decref(p.vars);
	json_decref(p.items);
	return finish(&p, api, "MutatingAdmissionPolicy", NAME "-pods", spec);
}

json_t *admpolicy_build(const struct config *cfg, int minor, struct error *err)
{
	struct cel_view w;
	json_t *items = json_array(), *o;
	const char *map_api = minor >= ADMPOLICY_MINOR_MUTATING_GA ? "admissionregistration.k8s.io/v1"
			      : "admissionregistration.k8s.io/v1beta1";
	int empty;

	if (minor < ADMPOLICY_MINOR_VALIDATING) {
		json_decref(items);
		error_set(err, ERROR_INPUT, "Kubernetes 1.%d has no ValidatingAdmissionPolicy v1 (1.%d and later)", minor,
			  ADMPOLICY_MINOR_VALIDATING);
		return NULL;
	}
	if (items == NULL || view_fill(cfg, &w) != 0) {
		json_decref(items);
		view_free(&w);
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	if ((o = pods_validating(&w, err)) == NULL || json_array_append_new(items, o) != 0 ||
	    validating_bindings(items, cfg, NAME "-pods") != 0 ||
	    (o = workloads_validating(&w, err)) == NULL || json_array_append_new(items, o) != 0 ||
	    validating_bindings(items, cfg, NAME "-workloads") != 0)
		goto fail;
	if (minor >= ADMPOLICY_MINOR_MUTATING_BETA) {
		json_t *sel = mutate_selector(cfg, &empty);

		if ((o = pods_mutating(&w, map_api, err)) == NULL || json_array_append_new(items, o) != 0) {
			json_decref(sel);
			goto fail;
		}
		if (!(sel == NULL && empty) && binding(items, NAME "-pods", "mutate", map_api, sel, NULL) != 0)
			goto fail;
	}
	view_free(&w);
	return json_pack("{s:s, s:s, s:o}", "apiVersion", "v1", "kind", "List", "items", items);
fail:
	if (err->kind == ERROR_NONE)
		error_set(err, ERROR_NOMEM, "out of memory");
	view_free(&w);
	json_decref(items);
	return NULL;
}
