/*
 * policy_pool: GPU pods, the pools they may use and the patch that sends them there.
 *
 * A pool is eligible for a pod when it serves the pod's GPU resources in that
 * number, its namespaces and podSelector admit the pod, and the pod's own
 * nodeSelector and required node affinity do not rule its nodes out (judged
 * by nodematch_pod_could_select() on the labels the pool selects by: other
 * labels of its nodes are unknown, so only a sure contradiction excludes it;
 * AKS's label aliases count as the labels they stand for), and its pins by
 * name do not (a pool's nodes are told by name as for CPU pods).
 * Placement pinned sends the pod to one pool by nodeSelector; fallback to
 * every eligible pool by one required `key In [...]` requirement; whenever
 * several pools remain, preferred terms keep the cost order for the
 * scheduler: that patch is policy_pool_patch.c's.
 */
#include "policy/policy_int.h"

#include <stdio.h>
#include <string.h>

#include "k8s/nodematch.h"

#define REQUIRED "requiredDuringSchedulingIgnoredDuringExecution"

/* ==== Which pools a pod may use ==== */

enum pool_verdict {
	POOL_OK = 0,
	POOL_UNFIT,         /* does not serve the pod's GPU resources, or not that many */
	POOL_NAMESPACE,     /* pools[].namespaces leaves the pod's namespace out */
	POOL_LABELS,        /* pools[].podSelector does not match the pod's labels */
	POOL_NODE_SELECTOR, /* the pod's nodeSelector rules out the pool's nodes */
	POOL_AFFINITY,      /* the pod's required node affinity does */
	POOL_NODE_NAME      /* the pod is pinned by name to nodes none of which is the pool's */
};

/* Serves every GPU resource and claim request the pod asks for, in any number. */
static int pool_serves_all(const struct config *cfg, const struct config_pool *p, const struct pod_view *pv)
{
	size_t i;

	for (i = 0; i < pv->n_gpu; i++)
		if (policy_demand_fit(cfg, p, &pv->gpu[i]) == 0)
			return 0;
	return 1;
}

/* What the pod asks for of d, for people: "2 nvidia.com/gpu", "all devices of a node of ...". */
static void describe_count(const struct config_pool *p, const struct gpu_demand *d, char *buf, size_t cap)
{
	char what[LIMIT_POLICY_STRING_MAX + 64];

	policy_demand_describe(d, what, sizeof what);
	if (d->kind == DEMAND_REQUEST && d->dra->alts[0].mode == POLICY_ALLOC_ALL)
		snprintf(buf, cap, "every device of a node (%lld on GPU pool \"%s\") of %s", p->gpus_per_node,
			 p->name, what);
	else
		snprintf(buf, cap, "%lld %s", policy_demand_total(d), what);
}

/*
 * Why pool p cannot take this pod, written into why; or 0 when it can.
 */
static int pool_unfit(const struct config *cfg, const struct config_pool *p,
		      const struct pod_view *pv, char *why, size_t cap)
{
	char what[LIMIT_POLICY_STRING_MAX + 128];
	size_t i;

	for (i = 0; i < pv->n_gpu; i++) {
		int fit = policy_demand_fit(cfg, p, &pv->gpu[i]);

		if (fit == 0) {
			policy_demand_describe(&pv->gpu[i], what, sizeof what);
			snprintf(why, cap, "GPU pool \"%s\" does not serve %s", p->name, what);
			return 1;
		}
		if (fit == 1) {
			describe_count(p, &pv->gpu[i], what, sizeof what);
			snprintf(why, cap, "the pod requests %s but GPU pool \"%s\" allows at most %lld per pod",
				 what, p->name, p->max_gpus_per_pod);
			return 1;
		}
	}
	return 0;
}

static int namespace_allowed(const struct config_pool *p, const char *ns)
{
	return p->namespaces.n == 0 || policy_match_any(&p->namespaces, ns);
}

/* What the pod's nodeSelector requires of label key (or of its alias: the node carries both alike). */
static const char *selector_value(const struct pod_view *pv, const char *key)
{
	return policy_label_value(pv->node_selector, key);
}

/* The first of pool p's labels the pod's nodeSelector sets to another value, or NULL. */
static const struct config_kv *selector_conflict(const struct config_pool *p, const struct pod_view *pv)
{
	size_t i;

	for (i = 0; i < p->node_selector.n; i++) {
		const char *have = selector_value(pv, p->node_selector.v[i].key);

		if (have != NULL && strcmp(have, p->node_selector.v[i].value) != 0)
			return &p->node_selector.v[i];
	}
	return NULL;
}

/* 2 when the pod's nodeSelector has all of the pool's key=values, 1 some, 0 none. */
static int pool_selected(const struct config_pool *p, const struct pod_view *pv)
{
	size_t i, hits = 0;

	for (i = 0; i < p->node_selector.n; i++) {
		const char *v = selector_value(pv, p->node_selector.v[i].key);
		if (v != NULL && strcmp(v, p->node_selector.v[i].value) == 0)
			hits++;
	}
	return hits == 0 ? 0 : hits == p->node_selector.n ? 2 : 1;
}

/*
 * What every node of pool p carries: its nodeSelector, as node labels, and
 * each entry's alias alike. New; NULL on ERROR_NOMEM.
 */
static json_t *pool_labels(const struct config_pool *p, struct error *err)
{
	json_t *labels = json_object();
	const char *alias;
	size_t i;

	for (i = 0; labels != NULL && i < p->node_selector.n; i++) {
		alias = config_label_alias(p->node_selector.v[i].key);
		if (json_object_set_new(labels, p->node_selector.v[i].key,
					json_string(p->node_selector.v[i].value)) != 0 ||
		    (alias != NULL && json_object_get(labels, alias) == NULL &&
		     json_object_set_new(labels, alias, json_string(p->node_selector.v[i].value)) != 0)) {
			json_decref(labels);
			labels = NULL;
		}
	}
	if (labels == NULL)
		error_set(err, ERROR_NOMEM, "out of memory");
	return labels;
}

/*
 * The pod's pins by name: spec.nodeName, nodeSelector kubernetes.io/hostname
 * (AKS sets it to the node's name), and a required node affinity every live
 * term of which names nodes (kubernetes.io/hostname or matchFields
 * metadata.name In [...]). The scheduler (and, for nodeName, the kubelet)
 * holds the pod to them, so a pool none of whose nodes they name cannot
 * take it, whatever its eligibility otherwise.
 */
struct pins {
	const char *node_name;   /* borrowed, or NULL */
	const char *hostname;    /* borrowed, or NULL */
	const json_t *terms;     /* borrowed: the required terms, when they all name nodes; or NULL */
};

/* What one pin says of a pool: its nodes are not, may be, or are among the named. */
enum pin_state { PIN_NO = 0, PIN_MAYBE, PIN_YES, PIN_NONE };

static const json_t *required_terms(const struct pod_view *pv);

/* The node names a NodeSelectorTerm (borrowed) confines itself to, or NULL. */
static const json_t *term_names(const json_t *term)
{
	const json_t *r, *values;
	size_t i;

	for (int pass = 0; pass < 2; pass++)
		json_array_foreach(iterable(json_object_get(term, pass ? "matchFields" : "matchExpressions")),
				   i, r) {
			values = json_object_get(r, "values");
			if (strcmp(policy_str(r, "key", ""), pass ? POLICY_NAME_FIELD : POLICY_HOSTNAME_LABEL) == 0 &&
			    strcmp(policy_str(r, "operator", ""), "In") == 0 && json_array_size(values) > 0)
				return values;
		}
	return NULL;
}

/* Fills pins; 1 when the pod is pinned by name at all. */
static int read_pins(const struct pod_view *pv, struct pins *pins)
{
	const json_t *terms = required_terms(pv), *t;
	size_t i, live = 0;

	memset(pins, 0, sizeof *pins);
	pins->node_name = json_string_value(json_object_get(pv->spec, "nodeName"));
	if (pins->node_name != NULL && pins->node_name[0] == '\0')
		pins->node_name = NULL;
	pins->hostname = pv->node_selector
		? json_string_value(json_object_get(pv->node_selector, POLICY_HOSTNAME_LABEL)) : NULL;
	json_array_foreach(iterable(terms), i, t) {
		if (policy_term_matches_nothing(t))
			continue;
		if (term_names(t) == NULL) {
			live = 0;
			break;
		}
		live++;
	}
	pins->terms = live > 0 ? terms : NULL;
	return pins->node_name != NULL || pins->hostname != NULL || pins->terms != NULL;
}

static enum pin_state node_state(const struct config *cfg, const struct config_pool *p, const char *node)
{
	int in = node != NULL ? policy_node_in_pool(cfg, p, node) : 0;

	return in > 0 ? PIN_YES : in < 0 ? PIN_MAYBE : PIN_NO;
}

static enum pin_state min_state(enum pin_state a, enum pin_state b)
{
	return a < b ? a : b;
}

/* What the pod's pins together say of pool p: each must admit it (the least of them). */
static enum pin_state pins_on_pool(const struct config *cfg, const struct pins *pins, const struct config_pool *p)
{
	enum pin_state st = PIN_NONE, any;
	const json_t *t, *v;
	size_t i, j;

	if (pins->node_name != NULL)
		st = min_state(st, node_state(cfg, p, pins->node_name));
	if (pins->hostname != NULL)
		st = min_state(st, node_state(cfg, p, pins->hostname));
	if (pins->terms != NULL) {
		any = PIN_NO;
		json_array_foreach(iterable(pins->terms), i, t)
			json_array_foreach(iterable(term_names(t)), j, v) {
				enum pin_state one = node_state(cfg, p, json_string_value(v));

				any = one > any ? one : any;
			}
		st = min_state(st, any);
	}
	return st;
}

/* The first node the pod is pinned to, for messages; NULL when a name is not a string. */
static const char *pinned_node(const struct pins *pins)
{
	const json_t *t;
	size_t i;

	if (pins->node_name != NULL)
		return pins->node_name;
	if (pins->hostname != NULL)
		return pins->hostname;
	json_array_foreach(iterable(pins->terms), i, t)
		if (term_names(t) != NULL)
			return json_string_value(json_array_get(term_names(t), 0));
	return NULL;
}

/* Is pool p eligible for the pod, and if not, why? -1 only on ERROR_NOMEM. */
static int judge(const struct config *cfg, const struct pod_view *pv, const struct pins *pins,
		 const struct config_pool *p, enum pool_verdict *v, struct error *err)
{
	char scratch[2];
	json_t *known;

	*v = POOL_OK;
	if (pool_unfit(cfg, p, pv, scratch, sizeof scratch))
		*v = POOL_UNFIT;
	else if (!namespace_allowed(p, pv->ns))
		*v = POOL_NAMESPACE;
	else if (!policy_selector_match(&p->pod_selector, pv->labels))
		*v = POOL_LABELS;
	else if (selector_conflict(p, pv) != NULL)
		*v = POOL_NODE_SELECTOR;
	else if (pins != NULL && pins_on_pool(cfg, pins, p) == PIN_NO)
		*v = POOL_NODE_NAME;
	/* Nothing of the pod's own to contradict the pool: no need to look closer. */
	if (*v != POOL_OK || (pv->node_selector == NULL && json_object_get(pv->spec, "affinity") == NULL))
		return 0;
	known = pool_labels(p, err);
	if (known == NULL)
		return -1;
	if (nodematch_pod_could_select(pv->spec, known) == NODEMATCH_NO)
		*v = POOL_AFFINITY;
	json_decref(known);
	return 0;
}

/*
 * A label selector as labels.Selector.String() writes it (the form kubectl
 * takes with -l): "a=b,k in (x,y),k notin (z),k,!k".
 */
static void describe_selector(const struct config_label_selector *sel, char *buf, size_t cap)
{
	size_t i, j, n = 0;

	for (i = 0; i < sel->match_labels.n; i++)
		policy_appendf(buf, cap, "%s%s=%s", n++ ? "," : "", sel->match_labels.v[i].key,
			       sel->match_labels.v[i].value);
	for (i = 0; i < sel->n_match_expressions; i++) {
		const struct config_requirement *r = &sel->match_expressions[i];
		enum nodematch_op op = nodematch_op_parse(r->op);

		policy_appendf(buf, cap, "%s%s%s", n++ ? "," : "", op == NODEMATCH_DOES_NOT_EXIST ? "!" : "", r->key);
		if (op != NODEMATCH_IN && op != NODEMATCH_NOT_IN)
			continue;
		policy_appendf(buf, cap, " %s (", op == NODEMATCH_IN ? "in" : "notin");
		for (j = 0; j < r->values.n; j++)
			policy_appendf(buf, cap, "%s%s", j ? "," : "", r->values.v[j]);
		policy_appendf(buf, cap, ")");
	}
}

/* Why pool p (verdict v) cannot take the pod, for people, appended to buf. */
static void describe_verdict(const struct config *cfg, const struct pod_view *pv, const struct config_pool *p,
			     enum pool_verdict v, char *buf, size_t cap)
{
	size_t used = strlen(buf), i;
	const struct config_kv *kv;

	switch (v) {
	case POOL_OK:
		break;
	case POOL_UNFIT:
		if (used + 1 < cap)
			pool_unfit(cfg, p, pv, buf + used, cap - used);
		break;
	case POOL_NAMESPACE:
		policy_appendf(buf, cap, "namespace \"%s\" may not use GPU pool \"%s\"", pv->ns, p->name);
		break;
	case POOL_LABELS:
		policy_appendf(buf, cap, "GPU pool \"%s\" is only for pods labelled ", p->name);
		describe_selector(&p->pod_selector, buf, cap);
		break;
	case POOL_NODE_SELECTOR:
		kv = selector_conflict(p, pv);
		policy_appendf(buf, cap, "nodeSelector %s is \"%s\" but GPU pool \"%s\" needs \"%s\"", kv->key,
			       selector_value(pv, kv->key), p->name, kv->value);
		break;
	case POOL_NODE_NAME: {
		struct pins pins;
		const char *node;

		read_pins(pv, &pins);
		node = pinned_node(&pins);
		policy_appendf(buf, cap, "the pod is pinned by name to node %s, not a node of GPU pool \"%s\"",
			       node ? node : "?", p->name);
		if (config_pool_aks_pool(p) != NULL)
			policy_appendf(buf, cap, " (aks-%s-*)", config_pool_aks_pool(p));
		break;
	}
	case POOL_AFFINITY:
		policy_appendf(buf, cap, "the pod's required node affinity rules out GPU pool \"%s\" (", p->name);
		for (i = 0; i < p->node_selector.n; i++)
			policy_appendf(buf, cap, "%s%s=%s", i ? ", " : "", p->node_selector.v[i].key,
				       p->node_selector.v[i].value);
		policy_appendf(buf, cap, ")");
		break;
	}
}

/* "GPU pools for R: a, b; namespace "ns" may use: a", appended to buf. */
static void describe_pools_for(const struct config *cfg, const struct pod_view *pv, char *buf, size_t cap)
{
	size_t i, n = 0, allowed = 0;

	policy_appendf(buf, cap, "GPU pools for ");
	for (i = 0; i < pv->n_gpu; i++) {
		char what[LIMIT_POLICY_STRING_MAX + 64];

		policy_demand_describe(&pv->gpu[i], what, sizeof what);
		policy_appendf(buf, cap, "%s%s", i ? "+" : "", what);
	}
	policy_appendf(buf, cap, ":");
	for (i = 0; i < cfg->n_pools; i++)
		if (pool_serves_all(cfg, &cfg->pools[i], pv))
			policy_appendf(buf, cap, "%s %s", n++ ? "," : "", cfg->pools[i].name);
	policy_appendf(buf, cap, "; namespace \"%s\" may use:", pv->ns);
	for (i = 0; i < cfg->n_pools; i++)
		if (pool_serves_all(cfg, &cfg->pools[i], pv) && namespace_allowed(&cfg->pools[i], pv->ns))
			policy_appendf(buf, cap, "%s %s", allowed++ ? "," : "", cfg->pools[i].name);
	if (allowed == 0)
		policy_appendf(buf, cap, " none of them");
}

static const char *verdict_reason(enum pool_verdict v)
{
	switch (v) {
	case POOL_NAMESPACE:
	case POOL_LABELS:        return R_DENIED;
	case POOL_NODE_SELECTOR: return R_CONFLICT;
	case POOL_AFFINITY:      return R_AFF_CONFLICT;
	case POOL_NODE_NAME:     return R_NAME_CONFLICT;
	default:                 return R_MISMATCH;
	}
}

/*
 * The pool the pod's label or nodeSelector picks (by, for the message)
 * cannot take it: the rejection says why, and what the pod may use instead.
 */
static void reject_picked(const struct config *cfg, const struct pod_view *pv, const struct config_pool *p,
			  enum pool_verdict v, int by_label, struct policy_result *res)
{
	const char *label = json_string_value(json_object_get(pv->labels, POLICY_POOL_LABEL));
	const struct config_kv *kv;

	res->reason = verdict_reason(v);
	res->message[0] = '\0';
	if (v == POOL_NODE_SELECTOR) {
		kv = selector_conflict(p, pv);
		describe_verdict(cfg, pv, p, v, res->message, sizeof res->message);
		policy_appendf(res->message, sizeof res->message, "; remove the selector or set it to \"%s\"",
			       kv->value);
		return;
	}
	if (by_label)
		policy_appendf(res->message, sizeof res->message, "label %s=%s: ", POLICY_POOL_LABEL, label);
	else
		policy_appendf(res->message, sizeof res->message, "the pod's nodeSelector picks GPU pool \"%s\", but ",
			       p->name);
	describe_verdict(cfg, pv, p, v, res->message, sizeof res->message);
	if (v == POOL_UNFIT && by_label)
		policy_appendf(res->message, sizeof res->message, "; remove the label to let gpu-admission pick a pool");
	else if (v == POOL_NAMESPACE || v == POOL_LABELS) {
		policy_appendf(res->message, sizeof res->message, ". ");
		describe_pools_for(cfg, pv, res->message, sizeof res->message);
	}
}

/*
 * Does pool p admit the pod by the rules that are not about its GPUs
 * (namespaces, podSelector)? A refusal for size names only such pools: one
 * the pod could never use is no advice.
 */
static int pool_admits(const struct config_pool *p, const struct pod_view *pv)
{
	return namespace_allowed(p, pv->ns) && policy_selector_match(&p->pod_selector, pv->labels);
}

/*
 * The pool serving resource that allows the most GPUs per pod (unlimited
 * beats any limit), among those pool_admits() the pod to when admitted_only;
 * for messages.
 */
static const struct config_pool *largest_pool(const struct config *cfg, const struct pod_view *pv,
					      const struct gpu_demand *d, int admitted_only)
{
	const struct config_pool *best = NULL;
	size_t i;

	for (i = 0; i < cfg->n_pools; i++) {
		const struct config_pool *p = &cfg->pools[i];
		if (policy_demand_fit(cfg, p, d) == 0 || (admitted_only && !pool_admits(p, pv)))
			continue;
		if (best == NULL || p->max_gpus_per_pod == 0 ||
		    (best->max_gpus_per_pod != 0 && p->max_gpus_per_pod > best->max_gpus_per_pod))
			best = p;
		if (best->max_gpus_per_pod == 0)
			break;
	}
	return best;
}

/* No pool serves what the pod asks for: say which resource or count is the problem. */
static void reject_unserved(const struct config *cfg, const struct pod_view *pv, struct policy_result *res)
{
	char what[LIMIT_POLICY_STRING_MAX + 128];
	size_t i;

	res->reason = R_NO_POOL;
	for (i = 0; i < pv->n_gpu; i++) {
		const struct gpu_demand *d = &pv->gpu[i];
		const struct config_pool *big = largest_pool(cfg, pv, d, 1);

		policy_demand_describe(d, what, sizeof what);
		if (big == NULL && largest_pool(cfg, pv, d, 0) == NULL) {
			snprintf(res->message, sizeof res->message,
				 "no GPU pool serves %s; ask the cluster admin for a pool with that "
				 "%s or request another GPU type", what,
				 d->kind == DEMAND_RESOURCE ? "resource" : "DeviceClass (pools[].deviceClasses)");
			return;
		}
		if (big == NULL) {
			snprintf(res->message, sizeof res->message,
				 "the pod requests %lld %s but no GPU pool this pod may use serves %s. ",
				 policy_demand_total(d), what, what);
			describe_pools_for(cfg, pv, res->message, sizeof res->message);
			return;
		}
		if (policy_demand_fit(cfg, big, d) == 1) {
			describe_count(big, d, what, sizeof what);
			snprintf(res->message, sizeof res->message,
				 "the pod requests %s but the largest GPU pool this pod may use, \"%s\", "
				 "allows at most %lld per pod; split the work across pods",
				 what, big->name, big->max_gpus_per_pod);
			return;
		}
	}
	snprintf(res->message, sizeof res->message,
		 "no single GPU pool serves every GPU resource the pod requests");
}

/* Pools serve the pod, but none it may use: each one's reason, then what exists. */
static void reject_none(const struct config *cfg, const struct pod_view *pv, const enum pool_verdict *v,
			struct policy_result *res)
{
	size_t i, n = 0;

	for (i = 0; i < cfg->n_pools; i++)
		if (v[i] != POOL_UNFIT && n++ == 0)
			res->reason = verdict_reason(v[i]);
	if (n == 0) {
		reject_unserved(cfg, pv, res);
		return;
	}
	snprintf(res->message, sizeof res->message, "no GPU pool can take this pod: ");
	for (i = 0, n = 0; i < cfg->n_pools; i++) {
		if (v[i] == POOL_UNFIT)
			continue;
		if (n++ > 0)
			policy_appendf(res->message, sizeof res->message, "; ");
		describe_verdict(cfg, pv, &cfg->pools[i], v[i], res->message, sizeof res->message);
	}
	policy_appendf(res->message, sizeof res->message, ". ");
	describe_pools_for(cfg, pv, res->message, sizeof res->message);
}

/* ==== Pools the pod already keeps to ==== */

int policy_value_listed(const json_t *values, const char *v)
{
	const json_t *x;
	size_t i;

	json_array_foreach(iterable(values), i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
			return 1;
	return 0;
}

/* Does one of pools (n of them, one key for all) select by value v? */
static int pools_have_value(const struct config_pool *const *pools, size_t n, const char *v)
{
	size_t i;

	for (i = 0; v != NULL && i < n; i++)
		if (strcmp(pools[i]->node_selector.v[0].value, v) == 0)
			return 1;
	return 0;
}

/*
 * The values of a `key In [...]` requirement of a NodeSelectorTerm
 * (borrowed) that confines the term to pools (every value one of theirs),
 * or NULL when none does. Any one will do: requirements are ANDed, so the
 * term can match no node beyond it, whatever the others say. That is also
 * how the fallback patch is recognised when the pod comes back: a term that
 * named another pool (`key In [h100]`) has the patch's `key In [t4]` beside
 * it. NotIn, Exists and the rest leave other nodes possible.
 */
const json_t *policy_term_confined(const json_t *term, const char *key, const struct config_pool *const *pools,
				  size_t n)
{
	const json_t *r, *values, *v;
	size_t i, j;

	json_array_foreach(iterable(json_object_get(term, "matchExpressions")), i, r) {
		values = json_object_get(r, "values");
		if (!config_label_same(policy_str(r, "key", ""), key) || strcmp(policy_str(r, "operator", ""), "In") != 0 ||
		    !json_is_array(values) || json_array_size(values) == 0)
			continue;
		json_array_foreach(iterable(values), j, v)
			if (!pools_have_value(pools, n, json_string_value(v)))
				break;
		if (j == json_array_size(values))
			return values;
	}
	return NULL;
}

/* Does value v of key meet every requirement on key in a NodeSelectorTerm (borrowed)? */
int policy_term_allows(const json_t *term, const char *key, const char *v)
{
	const json_t *r;
	size_t i;

	json_array_foreach(iterable(json_object_get(term, "matchExpressions")), i, r) {
		const char *op = policy_str(r, "operator", "");

		if (!config_label_same(policy_str(r, "key", ""), key))
			continue;
		if ((strcmp(op, "In") == 0 && !policy_value_listed(json_object_get(r, "values"), v)) ||
		    (strcmp(op, "NotIn") == 0 && policy_value_listed(json_object_get(r, "values"), v)) ||
		    strcmp(op, "DoesNotExist") == 0)
			return 0;
	}
	return 1;
}

/* Does a NodeSelectorTerm (borrowed) match no node by construction (empty, or not a term at all)? */
int policy_term_matches_nothing(const json_t *term)
{
	const json_t *exprs = json_object_get(term, "matchExpressions"), *fields = json_object_get(term, "matchFields");

	return !json_is_object(term) || (exprs != NULL && !json_is_null(exprs) && !json_is_array(exprs)) ||
	       (fields != NULL && !json_is_null(fields) && !json_is_array(fields)) ||
	       (json_array_size(exprs) == 0 && json_array_size(fields) == 0);
}

static const json_t *required_terms(const struct pod_view *pv)
{
	const json_t *na = json_object_get(json_object_get(pv->spec, "affinity"), "nodeAffinity");

	return json_object_get(json_object_get(na, REQUIRED), "nodeSelectorTerms");
}

/*
 * Does the pod's required node affinity already keep it to pools ok[] allows?
 * Every term that can match anything must be confined to such pools by a
 * `key In [values]` requirement (the key all pools select by:
 * policy_term_confined()). The pools the terms admit go into ch, in the pools'
 * order.
 */
static int kept_to(const struct config *cfg, const struct pod_view *pv, const int *ok, struct pool_choice *ch)
{
	const char *key = config_pool_key(cfg);
	const json_t *terms = required_terms(pv), *t, *values;
	const struct config_pool *eligible[CONFIG_POOLS_MAX];
	int mark[CONFIG_POOLS_MAX] = { 0 };
	size_t i, j, n = 0, live = 0;

	if (key == NULL || !json_is_array(terms))
		return 0;
	for (i = 0; i < cfg->n_pools; i++)
		if (ok[i])
			eligible[n++] = &cfg->pools[i];
	json_array_foreach(iterable(terms), i, t) {
		if (policy_term_matches_nothing(t))
			continue;
		values = policy_term_confined(t, key, eligible, n);
		if (values == NULL)
			return 0;
		for (j = 0; j < cfg->n_pools; j++)
			if (ok[j] && policy_value_listed(values, cfg->pools[j].node_selector.v[0].value) &&
			    policy_term_allows(t, key, cfg->pools[j].node_selector.v[0].value))
				mark[j] = 1;
		live++;
	}
	ch->n = 0;
	for (i = 0; live > 0 && i < cfg->n_pools; i++)
		if (mark[i])
			ch->pools[ch->n++] = &cfg->pools[i];
	if (ch->n == 0)
		return 0;
	ch->how = POOL_HOW_KEPT;
	return 1;
}

/* ==== Choosing ==== */

static void name_pools(const struct pool_choice *ch, struct policy_result *res)
{
	size_t i;

	for (i = 0; i < ch->n; i++)
		res->pools[i] = ch->pools[i]->name;
	res->n_pools = ch->n;
	res->pool = ch->n == 1 ? ch->pools[0]->name : NULL;
}

/* The one pool a label or nodeSelector picks. */
static void choose_one(const struct config_pool *p, enum pool_how how, struct pool_choice *ch)
{
	ch->pools[0] = p;
	ch->n = 1;
	ch->how = how;
}

int policy_pool_choose(const struct config *cfg, const struct pod_view *pv, struct pool_choice *ch,
		       struct policy_result *res, struct error *err)
{
	const char *label = json_string_value(json_object_get(pv->labels, POLICY_POOL_LABEL));
	enum pool_verdict v[CONFIG_POOLS_MAX];
	int ok[CONFIG_POOLS_MAX];
	size_t i;
	int want;

	struct pins pins;
	int pinned = read_pins(pv, &pins), named = 0, sure = 0;

	memset(ch, 0, sizeof *ch);
	for (i = 0; i < cfg->n_pools; i++) {
		if (judge(cfg, pv, pinned ? &pins : NULL, &cfg->pools[i], &v[i], err) != 0)
			return -1;
		ok[i] = v[i] == POOL_OK;
		sure |= ok[i] && pinned && pins_on_pool(cfg, &pins, &cfg->pools[i]) == PIN_YES;
	}
	/*
	 * Pinned by name to a node of a pool known by its name (aks-<pool>-*):
	 * that pool, not one whose nodes may or may not be it. Pinned to nodes
	 * no pool is known for: the pin places the pod, and any pool selector
	 * could only contradict it (Pending, or refused by the kubelet).
	 */
	for (i = 0; pinned && i < cfg->n_pools; i++) {
		if (!ok[i] || pins_on_pool(cfg, &pins, &cfg->pools[i]) == PIN_YES)
			continue;
		if (sure) {
			ok[i] = 0;
			v[i] = POOL_NODE_NAME;
		} else {
			named = 1;
		}
	}
	if (label != NULL) {
		for (i = 0; i < cfg->n_pools; i++)
			if (strcmp(cfg->pools[i].name, label) == 0)
				break;
		if (i == cfg->n_pools) {
			res->reason = R_UNKNOWN;
			snprintf(res->message, sizeof res->message,
				 "label %s=%s names no configured GPU pool; pools are:", POLICY_POOL_LABEL, label);
			for (i = 0; i < cfg->n_pools; i++)
				policy_appendf(res->message, sizeof res->message, "%s %s", i ? "," : "",
					cfg->pools[i].name);
			return 0;
		}
		if (!ok[i]) {
			reject_picked(cfg, pv, &cfg->pools[i], v[i], 1, res);
			return 0;
		}
		choose_one(&cfg->pools[i], cfg->placement == CONFIG_PLACEMENT_FALLBACK ? POOL_HOW_AFFINITY
			   : POOL_HOW_SELECTOR, ch);
		goto out;
	}
	for (want = 2; want >= 1; want--)
		for (i = 0; i < cfg->n_pools; i++) {
			if (pool_selected(&cfg->pools[i], pv) != want)
				continue;
			if (!ok[i]) {
				reject_picked(cfg, pv, &cfg->pools[i], v[i], 0, res);
				return 0;
			}
			choose_one(&cfg->pools[i], POOL_HOW_SELECTOR, ch);
			goto out;
		}
	if (named) {
		for (i = 0; i < cfg->n_pools; i++)
			if (ok[i])
				ch->pools[ch->n++] = &cfg->pools[i];
		ch->how = POOL_HOW_NAMED;
		goto out;
	}
	if (kept_to(cfg, pv, ok, ch))
		goto out;
	for (i = 0; i < cfg->n_pools; i++)
		if (ok[i])
			ch->pools[ch->n++] = &cfg->pools[i];
	if (ch->n == 0) {
		reject_none(cfg, pv, v, res);
		return 0;
	}
	if (cfg->placement == CONFIG_PLACEMENT_FALLBACK) {
		ch->how = POOL_HOW_AFFINITY;
	} else {
		ch->how = POOL_HOW_SELECTOR;
		ch->n = 1;
	}
out:
	name_pools(ch, res);
	return 0;
}
