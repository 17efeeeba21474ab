#include "policy.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "patch.h"
#include "quantity.h"

#define POOL_LABEL "gpu-admission/pool"
#define GPU_KINDS_MAX 16  /* distinct GPU resource names in one pod */

/* Why a pod was admitted, mutated or rejected: stable codes for annotations and metrics. */
#define R_OPERATION   "operation-not-create"
#define R_EXEMPT_NS   "exempt-namespace"
#define R_EXEMPT_SEL  "exempt-pod-selector"
#define R_EXEMPT_DS   "exempt-daemonset"
#define R_NO_GPU      "no-gpu"
#define R_DRA         "dra-claims"
#define R_GPU_OK      "gpu-pod-ok"
#define R_GPU_MUTATED "gpu-pod-mutated"
#define R_NOT_MUTATED "gpu-pod-not-mutated"
#define R_QUANTITY    "invalid-gpu-quantity"
#define R_UNKNOWN     "unknown-pool"
#define R_MISMATCH    "pool-mismatch"
#define R_NO_POOL     "no-pool-fits"
#define R_CONFLICT    "node-selector-conflict"
#define R_CPU_TOL     "cpu-pod-gpu-toleration"
#define R_CPU_SEL     "cpu-pod-gpu-node-selector"
#define R_CPU_AFF     "cpu-pod-gpu-affinity"
#define R_CPU_NAME    "cpu-pod-gpu-node-name"

/* ==== Reading the pod: typed accessors that treat null as absent ==== */

/*
 * Each getter returns 0 and sets *out (NULL when the member is absent or
 * null), or -1 with ERROR_INPUT when the member has the wrong type. A pod from
 * kube-apiserver is always well typed; manifests and hostile clients are not.
 */
static int get_typed(const json_t *parent, const char *key, json_type type, const char *path,
		     const json_t **out, struct error *err)
{
	const json_t *v = json_is_object(parent) ? json_object_get(parent, key) : NULL;

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	if (json_typeof(v) != type) {
		error_set(err, ERROR_INPUT, "%s%s%s must be %s", path, path[0] ? "." : "", key,
			  type == JSON_OBJECT ? "an object" : type == JSON_ARRAY ? "an array" : "a string");
		return -1;
	}
	*out = v;
	return 0;
}

/*
 * jansson's foreach macros take a non-const json_t * though they only read.
 * This one conversion keeps the engine's inputs const everywhere else.
 */
static json_t *iterable(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

static const char *str_or(const json_t *obj, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : dflt;
}

/* ==== Small pure helpers ==== */

int policy_glob_match(const char *pattern, const char *s)
{
	const char *star = NULL, *resume = NULL;

	/* Iterative matcher with one backtrack point: linear in practice, no recursion. */
	while (*s != '\0') {
		if (*pattern == '*') {
			star = pattern++;
			resume = s;
		} else if (*pattern == '?' || *pattern == *s) {
			pattern++;
			s++;
		} else if (star != NULL) {
			pattern = star + 1;
			s = ++resume;
		} else {
			return 0;
		}
	}
	while (*pattern == '*')
		pattern++;
	return *pattern == '\0';
}

static int match_any(const struct config_strings *globs, const char *s)
{
	size_t i;

	for (i = 0; i < globs->n; i++)
		if (policy_glob_match(globs->v[i], s))
			return 1;
	return 0;
}

static int list_has(const struct config_strings *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

static long long sat_add(long long a, long long b)
{
	return a > QUANTITY_MAX - b ? QUANTITY_MAX : a + b;
}

static long long max_ll(long long a, long long b)
{
	return a > b ? a : b;
}

/* Appends printf text to buf (size cap) without overrunning; truncates quietly. */
static void appendf(char *buf, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static void appendf(char *buf, size_t cap, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, cap - used, fmt, ap);
	va_end(ap);
}

/* Adds a warning, cut to kube-apiserver's 256-byte cap on a character boundary. */
static int warn(struct policy_result *res, struct error *err, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int warn(struct policy_result *res, struct error *err, const char *fmt, ...)
{
	char buf[POLICY_WARNING_MAX + 1];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	error_trim_utf8(buf);
	if (json_array_append_new(res->warnings, json_string(buf)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* ==== What the pod asks for ==== */

struct gpu_demand {
	const char *name;          /* borrowed from the pod */
	long long app_sum;         /* sum over app containers */
	long long sidecar_sum;     /* sum over restartable init containers */
	long long init_max;        /* peak during init */
};

struct pod_view {
	const json_t *metadata, *spec, *labels, *tolerations, *node_selector;
	const char *ns;
	struct gpu_demand gpu[GPU_KINDS_MAX];
	size_t n_gpu;
	int dra;                   /* resource claims present */
	int daemonset;
	/* First invalid GPU quantity, reported as the rejection. */
	char bad_quantity[POLICY_MESSAGE_MAX];
};

/* The pod's effective request for one resource, as the scheduler computes it. */
static long long demand_total(const struct gpu_demand *d)
{
	return max_ll(sat_add(d->app_sum, d->sidecar_sum), d->init_max);
}

static struct gpu_demand *demand_slot(struct pod_view *pv, const char *name)
{
	size_t i;

	for (i = 0; i < pv->n_gpu; i++)
		if (strcmp(pv->gpu[i].name, name) == 0)
			return &pv->gpu[i];
	if (pv->n_gpu == GPU_KINDS_MAX)
		return NULL;
	memset(&pv->gpu[pv->n_gpu], 0, sizeof pv->gpu[0]);
	pv->gpu[pv->n_gpu].name = name;
	return &pv->gpu[pv->n_gpu++];
}

/*
 * Reads one GPU quantity; an invalid one is recorded as the pod's rejection
 * (the first one found), not returned as an error: it is the user's mistake,
 * and the message must name the container and resource.
 */
static long long gpu_quantity(struct pod_view *pv, const json_t *v, const char *cname,
			      const char *field, const char *resource)
{
	struct quantity q;
	struct error qerr;
	const char *why = NULL;

	if (quantity_from_json(v, &q, &qerr) != 0)
		why = qerr.msg;
	else if (q.negative)
		why = "it is negative";
	else if (!q.whole)
		why = "a GPU count must be a whole number";
	if (why == NULL)
		return q.value;
	if (pv->bad_quantity[0] == '\0')
		snprintf(pv->bad_quantity, sizeof pv->bad_quantity,
			 "container \"%s\": %s %s is not a valid GPU count: %s", cname, field,
			 resource, why);
	return 0;
}

static int scan_container(const struct config *cfg, struct pod_view *pv, const json_t *c,
			  const char *path, int init, struct error *err)
{
	const json_t *res, *limits, *requests, *claims, *v;
	const char *cname, *key;
	char rpath[96];
	int restartable;

	if (!json_is_object(c)) {
		error_set(err, ERROR_INPUT, "%s must be an object", path);
		return -1;
	}
	cname = str_or(c, "name", "(unnamed)");
	restartable = init && strcmp(str_or(c, "restartPolicy", ""), "Always") == 0;
	snprintf(rpath, sizeof rpath, "%s.resources", path);
	if (get_typed(c, "resources", JSON_OBJECT, path, &res, err) != 0 ||
	    get_typed(res, "limits", JSON_OBJECT, rpath, &limits, err) != 0 ||
	    get_typed(res, "requests", JSON_OBJECT, rpath, &requests, err) != 0 ||
	    get_typed(res, "claims", JSON_ARRAY, rpath, &claims, err) != 0)
		return -1;
	if (claims != NULL && json_array_size(claims) > 0)
		pv->dra = 1;

	/* Per resource, the larger of limit and request (they are equal when valid). */
	for (int pass = 0; pass < 2; pass++) {
		const json_t *list = pass == 0 ? limits : requests;
		const json_t *other = pass == 0 ? requests : limits;

		json_object_foreach(iterable(list), key, v) {
			struct gpu_demand *d;
			long long n;

			if (!match_any(&cfg->gpu_resources, key))
				continue;
			if (pass == 1 && limits != NULL && json_object_get(limits, key) != NULL)
				continue; /* counted with its limit */
			n = gpu_quantity(pv, v, cname, pass == 0 ? "limits" : "requests", key);
			if (pass == 0 && other != NULL && json_object_get(other, key) != NULL)
				n = max_ll(n, gpu_quantity(pv, json_object_get(other, key), cname,
							   "requests", key));
			if (n == 0)
				continue;
			d = demand_slot(pv, key);
			if (d == NULL) {
				error_set(err, ERROR_INPUT, "more than %d distinct GPU resources in one pod",
					  GPU_KINDS_MAX);
				return -1;
			}
			if (!init) {
				d->app_sum = sat_add(d->app_sum, n);
			} else if (restartable) {
				d->sidecar_sum = sat_add(d->sidecar_sum, n);
				d->init_max = max_ll(d->init_max, d->sidecar_sum);
			} else {
				d->init_max = max_ll(d->init_max, sat_add(n, d->sidecar_sum));
			}
		}
	}
	return 0;
}

static int owned_by_daemonset(const json_t *metadata, struct error *err)
{
	const json_t *refs, *ref;
	size_t i;

	if (get_typed(metadata, "ownerReferences", JSON_ARRAY, "metadata", &refs, err) != 0)
		return -1;
	json_array_foreach(iterable(refs), i, ref)
		if (strcmp(str_or(ref, "kind", ""), "DaemonSet") == 0)
			return 1;
	return 0;
}

/* Fails on non-string values: a map of strings is what the API guarantees. */
static int check_string_map(const json_t *map, const char *path, struct error *err)
{
	const char *key;
	const json_t *v;

	json_object_foreach(iterable(map), key, v) {
		if (!json_is_string(v)) {
			error_set(err, ERROR_INPUT, "%s.%s must be a string", path, key);
			return -1;
		}
	}
	return 0;
}

static int read_pod(const struct config *cfg, const struct policy_request *req,
		    struct pod_view *pv, struct error *err)
{
	const json_t *containers, *inits, *claims, *c;
	size_t i;
	char path[64];
	int ds;

	memset(pv, 0, sizeof *pv);
	if (!json_is_object(req->pod)) {
		error_set(err, ERROR_INPUT, "the pod must be a JSON object");
		return -1;
	}
	if (get_typed(req->pod, "metadata", JSON_OBJECT, "", &pv->metadata, err) != 0 ||
	    get_typed(req->pod, "spec", JSON_OBJECT, "", &pv->spec, err) != 0 ||
	    get_typed(pv->metadata, "labels", JSON_OBJECT, "metadata", &pv->labels, err) != 0 ||
	    get_typed(pv->spec, "tolerations", JSON_ARRAY, "spec", &pv->tolerations, err) != 0 ||
	    get_typed(pv->spec, "nodeSelector", JSON_OBJECT, "spec", &pv->node_selector, err) != 0 ||
	    get_typed(pv->spec, "containers", JSON_ARRAY, "spec", &containers, err) != 0 ||
	    get_typed(pv->spec, "initContainers", JSON_ARRAY, "spec", &inits, err) != 0 ||
	    get_typed(pv->spec, "resourceClaims", JSON_ARRAY, "spec", &claims, err) != 0)
		return -1;
	if ((pv->labels && check_string_map(pv->labels, "metadata.labels", err) != 0) ||
	    (pv->node_selector && check_string_map(pv->node_selector, "spec.nodeSelector", err) != 0))
		return -1;
	pv->ns = req->ns && req->ns[0] ? req->ns : str_or(pv->metadata, "namespace", "");
	if (pv->ns[0] == '\0')
		pv->ns = "default";
	ds = owned_by_daemonset(pv->metadata, err);
	if (ds < 0)
		return -1;
	pv->daemonset = req->daemonset || ds;
	pv->dra = claims != NULL && json_array_size(claims) > 0;

	json_array_foreach(iterable(containers), i, c) {
		snprintf(path, sizeof path, "spec.containers[%zu]", i);
		if (scan_container(cfg, pv, c, path, 0, err) != 0)
			return -1;
	}
	/* Init containers run (and sidecars start) in order: order matters for the peak. */
	json_array_foreach(iterable(inits), i, c) {
		snprintf(path, sizeof path, "spec.initContainers[%zu]", i);
		if (scan_container(cfg, pv, c, path, 1, err) != 0)
			return -1;
	}
	/* spec.ephemeralContainers never count: they cannot request resources. */
	return 0;
}

/* ==== Tolerations ==== */

/* Does toleration t tolerate taint key=value:effect? Kubernetes' own rule. */
static int tolerates(const json_t *t, const char *key, const char *value, const char *effect)
{
	const char *tkey = str_or(t, "key", ""), *op = str_or(t, "operator", "Equal");
	const char *teffect = str_or(t, "effect", "");

	if (teffect[0] != '\0' && strcmp(teffect, effect) != 0)
		return 0;
	if (tkey[0] == '\0')
		return strcmp(op, "Exists") == 0;
	if (strcmp(tkey, key) != 0)
		return 0;
	if (strcmp(op, "Exists") == 0)
		return 1;
	return strcmp(op, "Equal") == 0 && strcmp(str_or(t, "value", ""), value) == 0;
}

static int tolerations_valid(const json_t *tolerations, struct error *err)
{
	const json_t *t;
	size_t i;

	json_array_foreach(iterable(tolerations), i, t) {
		if (!json_is_object(t)) {
			error_set(err, ERROR_INPUT, "spec.tolerations[%zu] must be an object", i);
			return -1;
		}
	}
	return 0;
}

/* ==== Pools ==== */

static int pool_serves(const struct config *cfg, const struct config_pool *p, const char *res)
{
	return match_any(p->resources.n ? &p->resources : &cfg->gpu_resources, res);
}

/*
 * Why pool p cannot take this pod, written into why; or 0 when it can.
 */
static int pool_unfit(const struct config *cfg, const struct config_pool *p,
		      const struct pod_view *pv, char *why, size_t cap)
{
	size_t i;

	for (i = 0; i < pv->n_gpu; i++) {
		long long n = demand_total(&pv->gpu[i]);

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
static const struct config_pool *choose_pool(const struct config *cfg, const struct pod_view *pv,
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
				appendf(res->message, sizeof res->message, "%s %s", i ? "," : "",
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
		if (big->max_gpus_per_pod > 0 && demand_total(&pv->gpu[i]) > big->max_gpus_per_pod) {
			snprintf(res->message, sizeof res->message,
				 "the pod requests %lld %s but the largest GPU pool, \"%s\", allows at "
				 "most %lld per pod; split the work across pods",
				 demand_total(&pv->gpu[i]), pv->gpu[i].name, big->name,
				 big->max_gpus_per_pod);
			return NULL;
		}
	}
	snprintf(res->message, sizeof res->message,
		 "no single GPU pool serves every GPU resource the pod requests");
	return NULL;
}

/* ==== GPU pods: build the patch ==== */

static int describe_taint(const struct config *cfg, char *buf, size_t cap)
{
	return snprintf(buf, cap, "%s%s%s:%s", cfg->taint_key, cfg->taint_value[0] ? "=" : "",
			cfg->taint_value, cfg->taint_effect);
}

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

static int mutate_gpu_pod(const struct config *cfg, const struct pod_view *pv,
			  const struct config_pool *pool, struct policy_result *res,
			  struct error *err)
{
	const struct config_kv *missing[64];
	char taint[128];
	size_t i, n_missing = 0;
	int tolerated = 0, wrong_key = 0;
	const json_t *t;

	describe_taint(cfg, taint, sizeof taint);
	json_array_foreach(iterable(pv->tolerations), i, t) {
		if (tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
			tolerated = 1;
		if (strcmp(str_or(t, "key", ""), "nvidia.com/gpu") == 0 &&
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
		appendf(res->changes, sizeof res->changes, "+toleration %s", taint);
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
		appendf(res->changes, sizeof res->changes, "%s+nodeSelector %s=%s",
			res->changes[0] ? " " : "", missing[i]->key, missing[i]->value);

	if (wrong_key && warn(res, err, "toleration nvidia.com/gpu does not match AKS GPU node pools, "
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

/* ==== CPU pods aimed at GPU nodes ==== */

/* A label key=value (or a key alone, value NULL) that only GPU nodes carry. */
static int gpu_label(const struct config *cfg, const char *key, const char *value)
{
	size_t i, j;

	if (list_has(&cfg->gpu_node_labels, key))
		return 1;
	for (i = 0; value != NULL && i < cfg->n_pools; i++)
		for (j = 0; j < cfg->pools[i].node_selector.n; j++)
			if (strcmp(cfg->pools[i].node_selector.v[j].key, key) == 0 &&
			    strcmp(cfg->pools[i].node_selector.v[j].value, value) == 0)
				return 1;
	return 0;
}

/*
 * Can a node selector requirement only be met by GPU nodes? In with values
 * that are all GPU label values, or Exists on a GPU label key.
 */
static int gpu_requirement(const struct config *cfg, const json_t *expr)
{
	const char *key = str_or(expr, "key", ""), *op = str_or(expr, "operator", "");
	const json_t *values = json_object_get(expr, "values"), *v;
	size_t i;

	if (strcmp(op, "Exists") == 0)
		return list_has(&cfg->gpu_node_labels, key);
	if (strcmp(op, "In") != 0 || !json_is_array(values) || json_array_size(values) == 0)
		return 0;
	json_array_foreach(iterable(values), i, v)
		if (!json_is_string(v) || !gpu_label(cfg, key, json_string_value(v)))
			return 0;
	return 1;
}

static int gpu_term(const struct config *cfg, const json_t *term)
{
	const json_t *exprs = json_object_get(term, "matchExpressions"), *e;
	size_t i;

	json_array_foreach(iterable(exprs), i, e)
		if (json_is_object(e) && gpu_requirement(cfg, e))
			return 1;  /* requirements are ANDed: one GPU-only requirement suffices */
	return 0;
}

/* Required: every term is GPU-only (terms are ORed). Preferred: any term leans to GPUs. */
static void gpu_affinity(const struct config *cfg, const json_t *spec, int *required, int *preferred)
{
	const json_t *na = json_object_get(json_object_get(spec, "affinity"), "nodeAffinity");
	const json_t *terms = json_object_get(json_object_get(na, "requiredDuringSchedulingIgnoredDuringExecution"),
					      "nodeSelectorTerms");
	const json_t *prefs = json_object_get(na, "preferredDuringSchedulingIgnoredDuringExecution");
	const json_t *t;
	size_t i;

	*required = json_is_array(terms) && json_array_size(terms) > 0;
	json_array_foreach(iterable(terms), i, t)
		if (!json_is_object(t) || !gpu_term(cfg, t))
			*required = 0;
	*preferred = 0;
	json_array_foreach(iterable(prefs), i, t)
		if (json_is_object(t) && gpu_term(cfg, json_object_get(t, "preference")))
			*preferred = 1;
}

/* Records one route a CPU pod takes to GPU nodes: what it does, and what to remove. */
static void route(struct policy_result *res, const char *reason, char *fixes, size_t fcap,
		  const char *fix, const char *fmt, ...) __attribute__((format(printf, 6, 7)));

static void route(struct policy_result *res, const char *reason, char *fixes, size_t fcap,
		  const char *fix, const char *fmt, ...)
{
	char what[POLICY_MESSAGE_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof what, fmt, ap);
	va_end(ap);
	if (res->reason == NULL)
		res->reason = reason;
	appendf(res->message, sizeof res->message, "%s%s", res->message[0] ? "; " : "", what);
	appendf(fixes, fcap, "%s%s", fixes[0] ? ", " : "", fix);
}

/*
 * The four routes by which a CPU-only pod reaches GPU nodes. A rejection's
 * message lists every route taken, then one sentence on how to fix it; the
 * reason code names the first. The soft routes (wildcard toleration,
 * preferred affinity) only warn.
 */
static int check_cpu_pod(const struct config *cfg, const struct pod_view *pv,
			 struct policy_result *res, struct error *err)
{
	char taint[128], fixes[256] = "", what[POLICY_MESSAGE_MAX];
	const json_t *t, *v;
	const char *key, *node_name;
	size_t i;
	int required, preferred, wildcard = 0, tolerated = 0;

	describe_taint(cfg, taint, sizeof taint);
	res->message[0] = '\0';
	json_array_foreach(iterable(pv->tolerations), i, t) {
		if (!tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
			continue;
		if (str_or(t, "key", "")[0] == '\0') {
			wildcard = 1;
		} else if (!tolerated) {
			tolerated = 1;
			route(res, R_CPU_TOL, fixes, sizeof fixes, "the toleration",
			      "it tolerates the GPU taint %s (spec.tolerations[%zu])", taint, i);
		}
	}
	json_object_foreach(iterable(pv->node_selector), key, v) {
		if (gpu_label(cfg, key, json_string_value(v))) {
			route(res, R_CPU_SEL, fixes, sizeof fixes, "the nodeSelector entry",
			      "it selects GPU nodes with nodeSelector %s=%s", key, json_string_value(v));
			break;
		}
	}
	gpu_affinity(cfg, pv->spec, &required, &preferred);
	if (required)
		route(res, R_CPU_AFF, fixes, sizeof fixes, "the required node affinity",
		      "its required node affinity matches only GPU nodes");
	node_name = str_or(pv->spec, "nodeName", "");
	if (node_name[0] != '\0' && match_any(&cfg->gpu_node_names, node_name))
		route(res, R_CPU_NAME, fixes, sizeof fixes, "spec.nodeName",
		      "spec.nodeName binds it to GPU node %s", node_name);

	if (res->reason != NULL) {
		memcpy(what, res->message, sizeof what);
		snprintf(res->message, sizeof res->message,
			 "CPU-only pod aimed at GPU nodes: %s. GPU nodes are for GPU pods: remove %s, or "
			 "request a GPU (e.g. limits nvidia.com/gpu: 1)",
			 what, fixes);
		res->verdict = POLICY_REJECT;
		return 0;
	}
	res->reason = R_NO_GPU;
	if (wildcard && warn(res, err, "pod requests no GPU but tolerates every taint (toleration with "
			     "operator Exists and no key), so it may be scheduled onto GPU nodes (%s)", taint) != 0)
		return -1;
	if (preferred && warn(res, err, "pod requests no GPU but prefers GPU nodes through preferred "
			      "node affinity; it may take GPU capacity") != 0)
		return -1;
	return 0;
}

/* ==== Exemptions and modes ==== */

static int selector_exempt(const struct config *cfg, const struct pod_view *pv)
{
	size_t i, j;

	for (i = 0; pv->labels != NULL && i < cfg->n_exempt_pod_selectors; i++) {
		const struct config_labels *sel = &cfg->exempt_pod_selectors[i];

		for (j = 0; j < sel->n; j++) {
			const char *v = json_string_value(json_object_get(pv->labels, sel->v[j].key));
			if (v == NULL || strcmp(v, sel->v[j].value) != 0)
				break;
		}
		if (j == sel->n)
			return 1;
	}
	return 0;
}

/* Turns the verdict into the answer for the namespace's mode. */
static int apply_mode(struct policy_result *res, struct error *err)
{
	res->decision = res->verdict;
	switch (res->mode) {
	case CONFIG_MODE_ENFORCE:
		return 0;
	case CONFIG_MODE_WARN:
		if (res->verdict != POLICY_REJECT)
			return 0;
		res->decision = POLICY_ALLOW;
		return warn(res, err, "would be rejected (warn mode): %s", res->message);
	case CONFIG_MODE_DRYRUN:
		if (res->verdict == POLICY_ALLOW)
			return 0;
		res->decision = POLICY_ALLOW;
		if (res->verdict == POLICY_MUTATE)
			return warn(res, err, "would add (dryrun mode): %s", res->changes);
		return warn(res, err, "would be rejected (dryrun mode): %s", res->message);
	}
	return 0;
}

static int annotate(struct policy_result *res, struct error *err)
{
	int rc = 0;

	rc |= json_object_set_new(res->annotations, "decision",
				  json_string(res->exempt ? "exempt" : policy_decision_name(res->decision)));
	rc |= json_object_set_new(res->annotations, "reason", json_string(res->reason));
	rc |= json_object_set_new(res->annotations, "mode", json_string(config_mode_name(res->mode)));
	if (res->decision != res->verdict)
		rc |= json_object_set_new(res->annotations, "wouldDecide",
					  json_string(policy_decision_name(res->verdict)));
	if (res->pool != NULL)
		rc |= json_object_set_new(res->annotations, "pool", json_string(res->pool));
	if (rc != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* ==== The engine ==== */

static int decide(const struct config *cfg, const struct policy_request *req,
		  struct policy_result *res, struct error *err)
{
	struct pod_view pv;
	const struct config_pool *pool = NULL;
	char taint[128];

	if (read_pod(cfg, req, &pv, err) != 0 || tolerations_valid(pv.tolerations, err) != 0)
		return -1;
	res->mode = config_mode_for(cfg, pv.ns);
	res->verdict = POLICY_ALLOW;
	if (req->operation != POLICY_OP_CREATE) {
		res->reason = R_OPERATION;
		return 0;
	}
	if (list_has(&cfg->exempt_namespaces, pv.ns) || selector_exempt(cfg, &pv)) {
		res->exempt = 1;
		res->reason = list_has(&cfg->exempt_namespaces, pv.ns) ? R_EXEMPT_NS : R_EXEMPT_SEL;
		return 0;
	}
	res->gpu = pv.n_gpu > 0 || pv.bad_quantity[0] != '\0';
	if (pv.bad_quantity[0] != '\0') {
		res->verdict = POLICY_REJECT;
		res->reason = R_QUANTITY;
		snprintf(res->message, sizeof res->message, "%s", pv.bad_quantity);
	} else if (pv.n_gpu > 0) {
		if (pv.dra && warn(res, err, "pod also uses DRA resource claims; gpu-admission places it "
				   "for its GPU resources only and does not inspect the claims") != 0)
			return -1;
		/* A DaemonSet pod is pinned to its node by the controller: tolerate, don't steer. */
		if (!pv.daemonset) {
			pool = choose_pool(cfg, &pv, res);
			if (pool == NULL) {
				res->verdict = POLICY_REJECT;
				goto exempt;
			}
			res->pool = pool->name;
		}
		if (mutate_gpu_pod(cfg, &pv, pool, res, err) != 0)
			return -1;
		if (req->validate && res->verdict == POLICY_MUTATE) {
			describe_taint(cfg, taint, sizeof taint);
			res->verdict = POLICY_REJECT;
			res->reason = R_NOT_MUTATED;
			snprintf(res->message, sizeof res->message,
				 "GPU pod reached validation without what gpu-admission adds (%s): is "
				 "the mutating webhook installed and reachable?", res->changes);
			json_decref(res->patch);
			res->patch = NULL;
		}
	} else if (pv.dra) {
		res->reason = R_DRA;
		return warn(res, err, "pod uses DRA resource claims; gpu-admission cannot tell from the pod "
			    "alone whether they are GPUs, so it neither mutates nor rejects it");
	} else if (check_cpu_pod(cfg, &pv, res, err) != 0) {
		return -1;
	}
exempt:
	if (res->verdict == POLICY_REJECT && pv.daemonset && cfg->exempt_daemonsets) {
		if (warn(res, err, "admitted only because DaemonSet pods are exempt: %s", res->message) != 0)
			return -1;
		res->exempt = 1;
		res->verdict = POLICY_ALLOW;
		res->reason = R_EXEMPT_DS;
		res->message[0] = '\0';
	}
	return 0;
}

int policy_evaluate(const struct config *cfg, const struct policy_request *req,
		    struct policy_result *res, struct error *err)
{
	memset(res, 0, sizeof *res);
	res->warnings = json_array();
	res->annotations = json_object();
	if (res->warnings == NULL || res->annotations == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if (decide(cfg, req, res, err) != 0)
		return -1;
	/* Both are cut to fixed buffers and may quote pod text: end them on a whole character. */
	error_trim_utf8(res->message);
	error_trim_utf8(res->changes);
	if (apply_mode(res, err) != 0 || annotate(res, err) != 0)
		return -1;
	return 0;
}

void policy_result_free(struct policy_result *res)
{
	if (res == NULL)
		return;
	json_decref(res->patch);
	json_decref(res->warnings);
	json_decref(res->annotations);
	memset(res, 0, sizeof *res);
}

const char *policy_decision_name(enum policy_decision d)
{
	switch (d) {
	case POLICY_ALLOW:  return "allow";
	case POLICY_MUTATE: return "mutate";
	case POLICY_REJECT: return "reject";
	}
	return "allow";
}

int policy_operation_parse(const char *s, enum policy_operation *op, struct error *err)
{
	static const struct { const char *name; enum policy_operation op; } ops[] = {
		{ "CREATE", POLICY_OP_CREATE }, { "UPDATE", POLICY_OP_UPDATE },
		{ "DELETE", POLICY_OP_DELETE }, { "CONNECT", POLICY_OP_CONNECT },
	};
	size_t i;

	for (i = 0; s != NULL && i < sizeof ops / sizeof ops[0]; i++) {
		if (strcmp(s, ops[i].name) == 0) {
			*op = ops[i].op;
			return 0;
		}
	}
	error_set(err, ERROR_INPUT, "request.operation must be CREATE, UPDATE, DELETE or CONNECT");
	return -1;
}
