/* policy_pool: GPU pods, the pool they go to and the patch that sends them there. */
#include "policy_int.h"

#include <stdio.h>
#include <string.h>

#include "nodematch.h"
#include "patch.h"

/* ==== Pools ==== */

static int pool_serves(const struct config *cfg, const struct config_pool *p, const char *res)
{
	return policy_match_any(p->resources.n ? &p->resources : &cfg->gpu_resources, res);
}

/*
 * Why pool p cannot take this pod, written into why; or 0 when it can.
 */
static int pool_unfit(const struct config *cfg, const struct config_pool *p,
		      const struct pod_view *pv, char *why, size_t cap)
{
	size_t i;

	for (i = 0; i < pv->n_gpu; i++) {
		long long n = policy_demand_total(&pv->gpu[i]);

		if (!pool_serves(cfg, p, pv->gpu[i].name)) {
			snprintf(why, cap, "GPU pool \"%s\" does not serve %s", p->name, pv->gpu[i].name);
			return 1;
		}
		if (p->max_gpus_per_pod > 0 && n > p->max_gpus_per_pod) {
			snprintf(why, cap, "the pod requests %lld %s but GPU pool \"%s\" allows at most %lld per pod",
				 n, pv->gpu[i].name, p->name, p->max_gpus_per_pod);
			return 1;
		}
	}
	return 0;
}

static const char *selector_value(const struct pod_view *pv, const char *key)
{
	return pv->node_selector ? json_string_value(json_object_get(pv->node_selector, key)) : NULL;
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

/* The pool allowing the most GPUs per pod (unlimited beats any limit); for messages. */
static const struct config_pool *largest_pool(const struct config *cfg, const char *resource)
{
	const struct config_pool *best = NULL;
	size_t i;

	for (i = 0; i < cfg->n_pools; i++) {
		const struct config_pool *p = &cfg->pools[i];
		if (!pool_serves(cfg, p, resource))
			continue;
		if (best == NULL || p->max_gpus_per_pod == 0 ||
		    (best->max_gpus_per_pod != 0 && p->max_gpus_per_pod > best->max_gpus_per_pod))
			best = p;
		if (best->max_gpus_per_pod == 0)
			break;
	}
	return best;
}

/*
 * Chooses the pool for a GPU pod: the one its label names, else one its
 * nodeSelector already picks (wholly, then partly), else the first that
 * fits. Returns the pool, or NULL with the rejection in res.
 */
const struct config_pool *policy_pool_choose(const struct config *cfg, const struct pod_view *pv,
					     struct policy_result *res)
{
	const char *label = pv->labels ? json_string_value(json_object_get(pv->labels, POOL_LABEL)) : NULL;
	char why[POLICY_MESSAGE_MAX];
	size_t i;
	int want;

	if (label != NULL) {
		for (i = 0; i < cfg->n_pools; i++)
			if (strcmp(cfg->pools[i].name, label) == 0)
				break;
		if (i == cfg->n_pools) {
			res->reason = R_UNKNOWN;
			snprintf(res->message, sizeof res->message,
				 "label %s=%s names no configured GPU pool; pools are:", POOL_LABEL, label);
			for (i = 0; i < cfg->n_pools; i++)
				policy_appendf(res->message, sizeof res->message, "%s %s", i ? "," : "",
					cfg->pools[i].name);
			return NULL;
		}
		if (pool_unfit(cfg, &cfg->pools[i], pv, why, sizeof why)) {
			res->reason = R_MISMATCH;
			snprintf(res->message, sizeof res->message,
				 "label %s=%s: %s; remove the label to let gpu-admission pick a pool",
				 POOL_LABEL, label, why);
			return NULL;
		}
		return &cfg->pools[i];
	}
	for (want = 2; want >= 1; want--) {
		for (i = 0; i < cfg->n_pools; i++) {
			if (pool_selected(&cfg->pools[i], pv) != want)
				continue;
			if (pool_unfit(cfg, &cfg->pools[i], pv, why, sizeof why)) {
				res->reason = R_MISMATCH;
				snprintf(res->message, sizeof res->message,
					 "the pod's nodeSelector picks GPU pool \"%s\", but %s",
					 cfg->pools[i].name, why);
				return NULL;
			}
			return &cfg->pools[i];
		}
	}
	for (i = 0; i < cfg->n_pools; i++)
		if (!pool_unfit(cfg, &cfg->pools[i], pv, why, sizeof why))
			return &cfg->pools[i];

	res->reason = R_NO_POOL;
	for (i = 0; i < pv->n_gpu; i++) {
		const struct config_pool *big = largest_pool(cfg, pv->gpu[i].name);

		if (big == NULL) {
			snprintf(res->message, sizeof res->message,
				 "no GPU pool serves %s; ask the cluster admin for a pool with that "
				 "resource or request another GPU type", pv->gpu[i].name);
			return NULL;
		}
		if (big->max_gpus_per_pod > 0 && policy_demand_total(&pv->gpu[i]) > big->max_gpus_per_pod) {
			snprintf(res->message, sizeof res->message,
				 "the pod requests %lld %s but the largest GPU pool, \"%s\", allows at "
				 "most %lld per pod; split the work across pods",
				 policy_demand_total(&pv->gpu[i]), pv->gpu[i].name, big->name,
				 big->max_gpus_per_pod);
			return NULL;
		}
	}
	snprintf(res->message, sizeof res->message,
		 "no single GPU pool serves every GPU resource the pod requests");
	return NULL;
}

/* ==== GPU pods: build the patch ==== */

static json_t *new_toleration(const struct config *cfg)
{
	if (cfg->taint_value[0] == '\0')
		return json_pack("{s:s, s:s, s:s}", "key", cfg->taint_key, "operator", "Exists",
				 "effect", cfg->taint_effect);
	return json_pack("{s:s, s:s, s:s, s:s}", "key", cfg->taint_key, "operator", "Equal",
			 "value", cfg->taint_value, "effect", cfg->taint_effect);
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

int policy_pool_mutate(const struct config *cfg, const struct pod_view *pv,
			  const struct config_pool *pool, struct policy_result *res,
			  struct error *err)
{
	const struct config_kv *missing[64];
	char taint[128];
	size_t i, n_missing = 0;
	int tolerated = 0, wrong_key = 0;
	const json_t *t;

	policy_describe_taint(cfg, taint, sizeof taint);
	json_array_foreach(policy_iterable(pv->tolerations), i, t) {
		if (nodematch_tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
			tolerated = 1;
		if (strcmp(policy_str(t, "key", ""), "nvidia.com/gpu") == 0 &&
		    strcmp(cfg->taint_key, "nvidia.com/gpu") != 0)
			wrong_key = 1;
	}
	for (i = 0; pool != NULL && i < pool->node_selector.n && n_missing < 64; i++) {
		const struct config_kv *kv = &pool->node_selector.v[i];
		const char *have = selector_value(pv, kv->key);

		if (have == NULL) {
			missing[n_missing++] = kv;
		} else if (strcmp(have, kv->value) != 0) {
			res->reason = R_CONFLICT;
			snprintf(res->message, sizeof res->message,
				 "nodeSelector %s is \"%s\" but GPU pool \"%s\" needs \"%s\"; remove the "
				 "selector or set it to \"%s\"", kv->key, have, pool->name, kv->value,
				 kv->value);
			res->verdict = POLICY_REJECT;
			return 0;
		}
	}
	sort_entries(missing, n_missing);

	res->patch = json_array();
	if (res->patch == NULL)
		goto nomem;
	if (!tolerated) {
		json_t *tol = new_toleration(cfg);

		if (pv->tolerations == NULL) {
			if (patch_add(res->patch, "/spec/tolerations", NULL, json_pack("[o]", tol), err) != 0)
				return -1;
		} else if (patch_add(res->patch, "/spec/tolerations/-", NULL, tol, err) != 0) {
			return -1;
		}
		policy_appendf(res->changes, sizeof res->changes, "+toleration %s", taint);
	}
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

	if (wrong_key && policy_warn(res, err, "toleration nvidia.com/gpu does not match AKS GPU node pools, "
			      "whose taint is %s; %s", taint,
			      tolerated ? "the pod already tolerates it" : "gpu-admission added a toleration for it") != 0)
		return -1;

	if (json_array_size(res->patch) == 0) {
		json_decref(res->patch);
		res->patch = NULL;
		res->verdict = POLICY_ALLOW;
		res->reason = R_GPU_OK;
	} else {
		res->verdict = POLICY_MUTATE;
		res->reason = R_GPU_MUTATED;
	}
	return 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

