/*
 * policy_pool_patch: the JSON Patch that sends a GPU pod to the pools
 * policy_pool.c chose: the GPU taint's and the pools' tolerations, the one
 * pool's nodeSelector (pinned), or a required `key In [...]` with preferred
 * terms cheapest first (fallback, or several pools the pod keeps to). Apart
 * from the choice because the choice is a judgement and this is how it is
 * written into a pod: only what the pod lacks, so the patched pod, reviewed
 * again, gains nothing.
 */
#include "policy/policy_int.h"

#include <stdio.h>
#include <string.h>

#include "k8s/nodematch.h"
#include "base/patch.h"

#define NODE_AFFINITY "/spec/affinity/nodeAffinity"
#define REQUIRED      "requiredDuringSchedulingIgnoredDuringExecution"
#define PREFERRED     "preferredDuringSchedulingIgnoredDuringExecution"
#define PATH_MAX_LEN  256  /* a JSON Pointer into the pod's affinity */

/* Each eligible pool value gets a weight of its own (preferred_terms()). */
_Static_assert(CONFIG_POOLS_MAX <= LIMIT_PREFERRED_WEIGHT_MAX, "a distinct preferred weight per pool");

/* ==== The patch ==== */

static json_t *new_toleration(const struct config *cfg)
{
	if (cfg->taint_value[0] == '\0')
		return json_pack("{s:s, s:s, s:s}", "key", cfg->taint_key, "operator", "Exists",
				 "effect", cfg->taint_effect);
	return json_pack("{s:s, s:s, s:s, s:s}", "key", cfg->taint_key, "operator", "Equal",
			 "value", cfg->taint_value, "effect", cfg->taint_effect);
}

/* A pool's toleration as the API stores one: no value with Exists, no effect when it has none. */
static json_t *pool_toleration(const struct config_toleration *t)
{
	json_t *j = json_pack("{s:s, s:s}", "key", t->key, "operator", t->op);

	if (j != NULL && t->value[0] != '\0' && json_object_set_new(j, "value", json_string(t->value)) != 0) {
		json_decref(j);
		return NULL;
	}
	if (j != NULL && t->effect[0] != '\0' && json_object_set_new(j, "effect", json_string(t->effect)) != 0) {
		json_decref(j);
		return NULL;
	}
	return j;
}

/* Is toleration t already covered by one in list (an array, borrowed)? */
static int covered(const json_t *list, const struct config_toleration *t)
{
	const json_t *have;
	size_t i;

	json_array_foreach(iterable(list), i, have)
		if (nodematch_covers(have, t->key, t->op, t->value, t->effect))
			return 1;
	return 0;
}

/*
 * The tolerations to add into add (an array): the GPU taint's unless the pod
 * tolerates it, then those of the chosen pools that neither the pod nor an
 * earlier one already covers. Their description goes to res->changes.
 */
static int collect_tolerations(const struct config *cfg, const struct pod_view *pv, const struct pool_choice *ch,
			       json_t *add, struct policy_result *res, struct error *err)
{
	char taint[128];
	const json_t *t;
	size_t i, j;
	int tolerated = 0, wrong_key = 0;

	policy_describe_taint(cfg, taint, sizeof taint);
	json_array_foreach(iterable(pv->tolerations), i, t) {
		if (nodematch_tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
			tolerated = 1;
		if (strcmp(policy_str(t, "key", ""), "nvidia.com/gpu") == 0 &&
		    strcmp(cfg->taint_key, "nvidia.com/gpu") != 0)
			wrong_key = 1;
	}
	if (!tolerated) {
		if (json_array_append_new(add, new_toleration(cfg)) != 0)
			goto nomem;
		policy_appendf(res->changes, sizeof res->changes, "+toleration %s", taint);
	}
	for (i = 0; ch != NULL && i < ch->n; i++)
		for (j = 0; j < ch->pools[i]->tolerations.n; j++) {
			const struct config_toleration *pt = &ch->pools[i]->tolerations.v[j];

			if (covered(pv->tolerations, pt) || covered(add, pt))
				continue;
			if (json_array_append_new(add, pool_toleration(pt)) != 0)
				goto nomem;
			policy_appendf(res->changes, sizeof res->changes, "%s+toleration %s%s%s%s%s",
				       res->changes[0] ? " " : "", pt->key, pt->value[0] ? "=" : "", pt->value,
				       pt->effect[0] ? ":" : "", pt->effect);
		}
	/*
	 * Said of the pod as it came, in words that hold wherever the note is
	 * read: /mutate in any mode (dryrun adds nothing), a workload's template
	 * at apply (its pods get the toleration, the template does not), audit,
	 * and /validate of a pod /mutate never saw.
	 */
	if (wrong_key && policy_warn(res, err, "toleration nvidia.com/gpu does not match AKS GPU node pools, "
				     "whose taint is %s; %s", taint,
				     tolerated ? "the pod already tolerates that taint"
					       : "gpu-admission adds a toleration for that taint") != 0)
		return -1;
	return 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

static int add_tolerations(const struct pod_view *pv, json_t *add, json_t *patch, struct error *err)
{
	json_t *t;
	size_t i;

	if (json_array_size(add) == 0)
		return 0;
	if (pv->tolerations == NULL)
		return patch_add(patch, "/spec/tolerations", NULL, json_incref(add), err);
	json_array_foreach(add, i, t)
		if (patch_add(patch, "/spec/tolerations/-", NULL, json_incref(t), err) != 0)
			return -1;
	return 0;
}

/* Sorts a pool's selector entries by key so patches come out in one order. */
static void sort_entries(const struct config_kv **v, size_t n)
{
	size_t i, j;

	for (i = 1; i < n; i++)
		for (j = i; j > 0 && strcmp(v[j - 1]->key, v[j]->key) > 0; j--) {
			const struct config_kv *t = v[j];
			v[j] = v[j - 1];
			v[j - 1] = t;
		}
}

/*
 * Node labels every node offering a GPU resource carries: AKS labels each
 * node with an NVIDIA GPU kubernetes.azure.com/accelerator=nvidia, and only
 * such nodes offer nvidia.com/ resources. A pod requesting one runs nowhere
 * else, so a selector on the label keeps it to nothing narrower.
 */
static const struct implied_label {
	const char *resource;  /* glob */
	const char *key, *value;
} implied_labels[] = {
	{ "nvidia.com/*", "kubernetes.azure.com/accelerator", "nvidia" },
};

/* Does every node that can run the pod (by its GPU requests) carry key=value? */
static int implied_by_request(const struct pod_view *pv, const char *key, const char *value)
{
	size_t i, j;

	for (i = 0; i < sizeof implied_labels / sizeof implied_labels[0]; i++) {
		const struct implied_label *l = &implied_labels[i];

		if (!config_label_same(l->key, key) || strcmp(l->value, value) != 0)
			continue;
		for (j = 0; j < pv->n_gpu; j++)
			if (pv->gpu[j].kind == DEMAND_RESOURCE && !pv->gpu[j].shared &&
			    policy_glob_match(l->resource, pv->gpu[j].name))
				return 1;
	}
	return 0;
}

/*
 * pinned: the pool's nodeSelector entries the pod lacks (it sets none to
 * another value: judge()). Entries its GPU request already implies
 * (implied_by_request()) go in with the rest of a patch, for all to see, but
 * a pod lacking nothing else is placed: left alone, as `audit --fail-on
 * mutate` and /validate then agree.
 */
static int add_selector(const struct pod_view *pv, const struct config_pool *pool, struct policy_result *res,
			struct error *err)
{
	const struct config_kv *missing[LIMIT_POOL_SELECTOR_MAX];
	size_t i, n_missing = 0, n_implied = 0;

	for (i = 0; i < pool->node_selector.n && n_missing < LIMIT_POOL_SELECTOR_MAX; i++)
		if (policy_label_value(pv->node_selector, pool->node_selector.v[i].key) == NULL) {
			missing[n_missing++] = &pool->node_selector.v[i];
			n_implied += implied_by_request(pv, pool->node_selector.v[i].key, pool->node_selector.v[i].value);
		}
	if (n_implied == n_missing && json_array_size(res->patch) == 0)
		return 0;
	sort_entries(missing, n_missing);
	if (n_missing > 0 && pv->node_selector == NULL) {
		json_t *obj = json_object();

		for (i = 0; obj != NULL && i < n_missing; i++)
			if (json_object_set_new(obj, missing[i]->key, json_string(missing[i]->value)) != 0) {
				json_decref(obj);
				obj = NULL;
			}
		if (patch_add(res->patch, "/spec/nodeSelector", NULL, obj, err) != 0)
			return -1;
	} else {
		for (i = 0; i < n_missing; i++)
			if (patch_add(res->patch, "/spec/nodeSelector", missing[i]->key,
				      json_string(missing[i]->value), err) != 0)
				return -1;
	}
	for (i = 0; i < n_missing; i++)
		policy_appendf(res->changes, sizeof res->changes, "%s+nodeSelector %s=%s",
			res->changes[0] ? " " : "", missing[i]->key, missing[i]->value);
	return 0;
}

/* `key In [values]` (values borrowed, copied). New; NULL on ERROR_NOMEM. */
static json_t *key_in(const char *key, const json_t *values)
{
	return json_pack("{s:s, s:s, s:O}", "key", key, "operator", "In", "values", values);
}

/*
 * A preferred term's weight as the scheduler adds it: 1..100
 * (ValidatePreferredSchedulingTerms refuses others), else 0.
 */
static long long term_weight(const json_t *t)
{
	const json_t *w = json_object_get(t, "weight");
	json_int_t v = json_is_integer(w) ? json_integer_value(w) : 0;

	return v >= 1 && v <= LIMIT_PREFERRED_WEIGHT_MAX ? (long long)v : 0;
}

/*
 * Does a NodeSelectorTerm (borrowed) match every node whose label key is v,
 * whatever else they carry? Only when it has requirements, all of them on
 * key, and v meets each: In listing it, NotIn not, Exists.
 */
static int term_sure(const json_t *term, const char *key, const char *v)
{
	const json_t *r;
	size_t i;

	if (policy_term_matches_nothing(term) || json_array_size(json_object_get(term, "matchFields")) > 0)
		return 0;
	json_array_foreach(iterable(json_object_get(term, "matchExpressions")), i, r) {
		const char *op = policy_str(r, "operator", "");
		int listed = policy_value_listed(json_object_get(r, "values"), v);

		if (!config_label_same(policy_str(r, "key", ""), key) ||
		    !((strcmp(op, "In") == 0 && listed) || (strcmp(op, "NotIn") == 0 && !listed) ||
		      strcmp(op, "Exists") == 0))
			return 0;
	}
	return 1;
}

/* The weight a pool's term has without the pod's own terms: ceil(100 * (n - i) / n), 0 past the last. */
static long long plain_weight(size_t i, size_t n)
{
	return i >= n ? 0 : (long long)((LIMIT_PREFERRED_WEIGHT_MAX * (n - i) + n - 1) / n);
}

/* What preferred_terms() found: set as it returns 0. */
struct pref_outcome {
	long long own;  /* the weight of the preferred terms the pod has (any that match something) */
	int outweighed; /* the pool order was raised above them */
	int too_heavy;  /* raising it would take over LIMIT_PREFERRED_TERMS_ADDED terms: not raised */
};

/*
 * The preferred terms that keep the cost order among values (one per pool
 * value, cheapest first), appended to add; none for a single value.
 *
 * The scheduler sums the weights of every preferred term a node matches,
 * the pod's own and these alike (k8s.io/component-helpers
 * scheduling/corev1/nodeaffinity PreferredSchedulingTerms.Score, called by
 * k8s.io/kubernetes pkg/scheduler/framework/plugins/nodeaffinity
 * NodeAffinity.Score), then scales the sums to 0..100 by the highest one
 * (helper.DefaultNormalizeScore) and weighs the plugin 2 in the default
 * profile (apis/config/v1/default_plugins.go). So a pod's own term (a zone,
 * weight 50) can lift a pricier pool's node above a cheaper pool's: the cost
 * order is the policy and dominates, the pod's terms choose among a pool's
 * nodes. Without own terms, pool i's terms weigh plain_weight(i) (100, then
 * down in equal steps: all distinct for n <= 100). With them, each pool's
 * lowest possible sum (its terms, plus the pod's terms sure to match all of
 * its nodes: term_sure()) must exceed the highest possible sum on any
 * pricier pool's node (its terms plus every pod term that could match it) by
 * the step the plain weights leave between them plus the spread (the most
 * the pod's terms can weigh on one pool's nodes beyond what they surely do
 * on all: hi - lo). The scaling by the highest sum shrinks a fixed margin as
 * the pod's terms grow, and the other score plugins add up to 100 each: the
 * spread keeps the scaled margin near two thirds of the plain one (a zone
 * at 50 among three pools: t4 300, a100 167, h100 34, 23 of 100 against the
 * plain 33, where the step alone left 14). A pool's weight above 100 is made
 * of several terms. Every term there already counts, the earlier patch's
 * included (it adds to lo and hi alike, leaving the spread): the pod comes
 * back with nothing to add. Terms the scheduler reads as matching nothing
 * add nothing. Over LIMIT_PREFERRED_TERMS_ADDED terms, the plain weights
 * only (out->too_heavy).
 */
static int preferred_terms(const char *key, const json_t *values, const json_t *have, json_t *add,
			   struct pref_outcome *out, struct error *err)
{
	long long lo[CONFIG_POOLS_MAX] = { 0 }, hi[CONFIG_POOLS_MAX] = { 0 }, need[CONFIG_POOLS_MAX] = { 0 };
	long long plain[CONFIG_POOLS_MAX] = { 0 }, top = 0, terms = 0, spread = 0;
	size_t i, j, n = json_array_size(values);
	const json_t *t;

	memset(out, 0, sizeof *out);
	if (n < 2)
		return 0;
	json_array_foreach(iterable(have), j, t) {
		const json_t *pref = json_object_get(t, "preference");
		long long w = term_weight(t);

		if (w == 0 || policy_term_matches_nothing(pref))
			continue;
		for (i = 0; i < n; i++) {
			const char *v = json_string_value(json_array_get(values, i));

			lo[i] += term_sure(pref, key, v) ? w : 0;
			hi[i] += policy_term_allows(pref, key, v) ? w : 0;
		}
		out->own += w;
	}
	for (i = 0; i < n; i++)
		spread = policy_max_ll(spread, hi[i] - lo[i]);
	for (i = n; i-- > 0;) {
		long long step = plain_weight(i, n) - plain_weight(i + 1, n);

		plain[i] = policy_max_ll(0, plain_weight(i, n) - lo[i]);
		/* The dearest pool has none to beat. */
		need[i] = i + 1 == n ? plain[i] : policy_max_ll(plain[i], top + step + spread - lo[i]);
		out->outweighed |= need[i] > plain[i];
		top = policy_max_ll(top, need[i] + hi[i]);
		terms += (need[i] + LIMIT_PREFERRED_WEIGHT_MAX - 1) / LIMIT_PREFERRED_WEIGHT_MAX;
	}
	if (terms > LIMIT_PREFERRED_TERMS_ADDED) {
		out->too_heavy = 1;
		out->outweighed = 0;
		memcpy(need, plain, sizeof need);
	}
	for (i = 0; i < n; i++)
		while (need[i] > 0) {
			long long w = need[i] < LIMIT_PREFERRED_WEIGHT_MAX ? need[i] : LIMIT_PREFERRED_WEIGHT_MAX;
			json_t *one = json_pack("[O]", json_array_get(values, i)), *term;

			term = one ? json_pack("{s:I, s:{s:[o]}}", "weight", (json_int_t)w,
					       "preference", "matchExpressions", key_in(key, one)) : NULL;
			json_decref(one);
			if (term == NULL || json_array_append_new(add, term) != 0) {
				error_set(err, ERROR_NOMEM, "out of memory");
				return -1;
			}
			need[i] -= w;
		}
	return 0;
}

/*
 * A new nodeAffinity (or its required part, when na exists) holding term
 * and, with no nodeAffinity yet, the preferred terms prefs. The smallest
 * missing object goes in with one "add". Borrows term and prefs.
 */
static int add_new_affinity(const json_t *affinity, const json_t *na, const json_t *term, const json_t *prefs,
			    json_t *patch, struct error *err)
{
	json_t *req = json_pack("{s:[O]}", "nodeSelectorTerms", iterable(term)), *value;

	if (na != NULL)
		return patch_add(patch, NODE_AFFINITY "/" REQUIRED, NULL, req, err);
	value = req ? json_pack("{s:o}", REQUIRED, req) : NULL;
	if (value != NULL && json_array_size(prefs) > 0 &&
	    json_object_set(value, PREFERRED, iterable(prefs)) != 0) {
		json_decref(value);
		value = NULL;
	}
	if (value == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if (affinity != NULL)
		return patch_add(patch, "/spec/affinity/nodeAffinity", NULL, value, err);
	return patch_add(patch, "/spec/affinity", NULL, json_pack("{s:o}", "nodeAffinity", value), err);
}

/*
 * Says what preferred_terms() did to the pod's own terms: a note when the
 * pool order was raised above them (nothing for the author to change: the
 * policy chose cost order), and the auditAnnotation preferredOutweighed
 * (their weight) for the audit log; a warning when they weigh too much to
 * outweigh, as they may then send the pod to a pricier pool.
 */
static int tell_outweighed(const struct pool_choice *ch, const struct pref_outcome *pref, struct policy_result *res,
			   struct error *err)
{
	char w[32];

	if (pref->too_heavy)
		return policy_warn(res, err, "the pod's own preferred node affinity (weight %lld) weighs too much for "
				   "the pool order (%s first) to outweigh with %d added terms: it may send the pod "
				   "to a pricier pool; lighten it or pick a pool with the %s label", pref->own,
				   ch->pools[0]->name, LIMIT_PREFERRED_TERMS_ADDED, POLICY_POOL_LABEL);
	if (!pref->outweighed)
		return 0;
	snprintf(w, sizeof w, "%lld", pref->own);
	if (json_object_set_new(res->annotations, "preferredOutweighed", json_string(w)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return policy_note(res, err, "the pool order (%s first) outweighs the pod's own preferred node affinity "
			   "(weight %lld): it picks among the nodes of a pool, not a pricier pool",
			   ch->pools[0]->name, pref->own);
}

/*
 * fallback: `key In [values]` ANDed into every required term that can match
 * anything and is not already confined to those values (a new required node
 * affinity when there is none), and the preferred terms. judge() has read
 * the pod's affinity: a required one here has a term that can match a pool.
 * A pod whose own required affinity keeps it to several pools
 * (POOL_HOW_KEPT) gets the preferred terms alone: the scheduler would
 * otherwise score the pools alike and may pick the dearest.
 */
static int add_affinity(const struct pod_view *pv, const struct pool_choice *ch, struct policy_result *res,
			struct error *err)
{
	const char *key = ch->pools[0]->node_selector.v[0].key;
	const json_t *affinity, *na = NULL, *required = NULL, *have_pref = NULL, *t;
	int kept = ch->how == POOL_HOW_KEPT;
	struct pref_outcome pref;
	json_t *values = json_array(), *prefs = json_array(), *term = NULL;
	char path[PATH_MAX_LEN];
	size_t i, before = json_array_size(res->patch);
	int rc = -1;

	for (i = 0; values != NULL && i < ch->n; i++) {
		const char *v = ch->pools[i]->node_selector.v[0].value;

		/* A value two pools share (say, for two namespaces) goes in once. */
		if (!policy_value_listed(values, v) && json_array_append_new(values, json_string(v)) != 0)
			goto nomem;
	}
	term = values ? json_pack("{s:[o]}", "matchExpressions", key_in(key, values)) : NULL;
	if (term == NULL || prefs == NULL)
		goto nomem;
	if (policy_get_typed(pv->spec, "affinity", JSON_OBJECT, "spec", &affinity, err) != 0 ||
	    policy_get_typed(affinity, "nodeAffinity", JSON_OBJECT, "spec.affinity", &na, err) != 0 ||
	    policy_get_typed(na, REQUIRED, JSON_OBJECT, "spec.affinity.nodeAffinity", &required, err) != 0 ||
	    policy_get_typed(na, PREFERRED, JSON_ARRAY, "spec.affinity.nodeAffinity", &have_pref, err) != 0 ||
	    preferred_terms(key, values, have_pref, prefs, &pref, err) != 0 ||
	    tell_outweighed(ch, &pref, res, err) != 0)
		goto out;
	if (!kept && required == NULL && add_new_affinity(affinity, na, term, prefs, res->patch, err) != 0)
		goto out;
	json_array_foreach(iterable(kept ? NULL : json_object_get(required, "nodeSelectorTerms")), i, t) {
		if (policy_term_matches_nothing(t))
			continue;  /* an empty term must not come to match the pools */
		if (policy_term_confined(t, key, ch->pools, ch->n) != NULL)
			continue;
		t = json_object_get(t, "matchExpressions");
		snprintf(path, sizeof path, NODE_AFFINITY "/" REQUIRED "/nodeSelectorTerms/%zu/matchExpressions%s",
			 i, json_is_array(t) ? "/-" : "");
		if (patch_add(res->patch, path, NULL, json_is_array(t) ? key_in(key, values)
			      : json_pack("[o]", key_in(key, values)), err) != 0)
			goto out;
	}
	/* Without a nodeAffinity before, the preferred terms went in with the new one. */
	if (na != NULL && have_pref == NULL && json_array_size(prefs) > 0 &&
	    patch_add(res->patch, NODE_AFFINITY "/" PREFERRED, NULL, json_incref(prefs), err) != 0)
		goto out;
	for (i = 0; have_pref != NULL && i < json_array_size(prefs); i++)
		if (patch_add(res->patch, NODE_AFFINITY "/" PREFERRED "/-", NULL, json_incref(json_array_get(prefs, i)),
			      err) != 0)
			goto out;
	if (json_array_size(res->patch) > before) {
		policy_appendf(res->changes, sizeof res->changes, "%s+%s %s in (", res->changes[0] ? " " : "",
			       kept ? "preferred affinity" : "affinity", key);
		for (i = 0; i < json_array_size(values); i++)
			policy_appendf(res->changes, sizeof res->changes, "%s%s", i ? ", " : "",
				       json_string_value(json_array_get(values, i)));
		policy_appendf(res->changes, sizeof res->changes, ")");
	}
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
out:
	json_decref(term);
	json_decref(prefs);
	json_decref(values);
	return rc;
}

int policy_pool_patch_soft(const json_t *patch)
{
	const json_t *op;
	size_t i;

	json_array_foreach(iterable(patch), i, op)
		if (strncmp(policy_str(op, "path", ""), NODE_AFFINITY "/" PREFERRED,
			    sizeof NODE_AFFINITY "/" PREFERRED - 1) != 0)
			return 0;
	return json_array_size(patch) > 0;
}

int policy_pool_mutate(const struct config *cfg, const struct pod_view *pv,
		       const struct pool_choice *ch, struct policy_result *res, struct error *err)
{
	json_t *add = json_array();
	int rc = -1;

	res->patch = json_array();
	if (add == NULL || res->patch == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	if (collect_tolerations(cfg, pv, ch, add, res, err) != 0 ||
	    add_tolerations(pv, add, res->patch, err) != 0)
		goto out;
	if (ch != NULL && ch->how == POOL_HOW_SELECTOR && add_selector(pv, ch->pools[0], res, err) != 0)
		goto out;
	if (ch != NULL && (ch->how == POOL_HOW_AFFINITY || (ch->how == POOL_HOW_KEPT && ch->n > 1)) &&
	    add_affinity(pv, ch, res, err) != 0)
		goto out;
	if (json_array_size(res->patch) == 0) {
		json_decref(res->patch);
		res->patch = NULL;
		res->verdict = POLICY_ALLOW;
		res->reason = R_GPU_OK;
	} else {
		res->verdict = POLICY_MUTATE;
		res->reason = R_GPU_MUTATED;
	}
	rc = 0;
out:
	json_decref(add);
	return rc;
}
