/* policy_pod: reading a pod, what it requests, typed and validated. */
#include "policy/policy_int.h"

#include <stdio.h>
#include <string.h>

#include "base/quantity.h"

/*
 * What policy_pod_read() and everything after it read of a pod, and nothing
 * else (see policy.h). Whole: affinity (policy_target.c, policy_pool.c),
 * tolerations, nodeSelector, labels, ownerReferences, resources and
 * resourceClaims, read at any depth.
 */
static const struct scan_shape container_fields[] = {
	{ "name", SCAN_WHOLE, NULL },
	{ "restartPolicy", SCAN_WHOLE, NULL },
	{ "resources", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

const struct scan_shape policy_pod_spec_fields[] = {
	{ "containers", SCAN_ARRAY_OF_OBJECTS, container_fields },
	{ "initContainers", SCAN_ARRAY_OF_OBJECTS, container_fields },
	{ "tolerations", SCAN_WHOLE, NULL },
	{ "nodeSelector", SCAN_WHOLE, NULL },
	{ "affinity", SCAN_WHOLE, NULL },
	{ "nodeName", SCAN_WHOLE, NULL },
	{ "resourceClaims", SCAN_WHOLE, NULL },
	{ "schedulerName", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

const struct scan_shape policy_pod_metadata_fields[] = {
	{ "namespace", SCAN_WHOLE, NULL },
	{ "labels", SCAN_WHOLE, NULL },
	{ "annotations", SCAN_WHOLE, NULL },
	{ "ownerReferences", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

const struct scan_shape policy_pod_fields[] = {
	{ "metadata", SCAN_OBJECT, policy_pod_metadata_fields },
	{ "spec", SCAN_OBJECT, policy_pod_spec_fields },
	{ NULL, SCAN_WHOLE, NULL },
};

long long policy_demand_total(const struct gpu_demand *d)
{
	return policy_max_ll(quantity_add(d->app_sum, d->sidecar_sum), d->init_max);
}

static struct gpu_demand *demand_slot(struct pod_view *pv, const char *name);

/* A quantity that is zero (a share asked for as 0 asks for nothing); an invalid one is not. */
static int quantity_zero(const json_t *v)
{
	struct quantity q;
	struct error qerr;

	return quantity_from_json(v, &q, &qerr) == 0 && !q.negative && q.value == 0 && q.whole;
}

/* Records that the pod asks for a share of resource, because of what (borrowed). */
static void add_share(struct pod_view *pv, const char *resource, const char *what)
{
	size_t i;

	if (resource == NULL)
		return;
	for (i = 0; i < pv->n_share; i++)
		if (strcmp(pv->share[i], resource) == 0)
			return;
	if (pv->n_share == LIMIT_GPU_KINDS_MAX)
		return;
	pv->share[pv->n_share] = resource;
	pv->share_why[pv->n_share++] = what;
}

/*
 * gpuAnnotations: an annotation present, non-empty and not "0", on a pod of
 * one of the entry's schedulers, is a share of its resource.
 */
static void scan_annotations(const struct config *cfg, struct pod_view *pv)
{
	const json_t *ann = json_object_get(pv->metadata, "annotations");
	const char *sched = policy_str(pv->spec, "schedulerName", "default-scheduler");
	size_t i;

	for (i = 0; json_is_object(ann) && i < cfg->n_gpu_annotations; i++) {
		const struct config_gpu_annotation *a = &cfg->gpu_annotations[i];
		const char *v = a->key ? json_string_value(json_object_get(ann, a->key)) : NULL;

		if (v == NULL || v[0] == '\0' || strcmp(v, "0") == 0 ||
		    !policy_list_has(&a->scheduler_names, sched))
			continue;
		add_share(pv, a->resource, a->key);
	}
}

/*
 * The shares become demand: at least one GPU of their resource (a pod that
 * also requests it whole keeps its count).
 */
static int shares_to_demand(struct pod_view *pv, struct error *err)
{
	size_t i;

	for (i = 0; i < pv->n_share; i++) {
		struct gpu_demand *d = demand_slot(pv, pv->share[i]);

		if (d == NULL) {
			error_set(err, ERROR_INPUT, "more than %d distinct GPU resources in one pod",
				  LIMIT_GPU_KINDS_MAX);
			return -1;
		}
		if (policy_demand_total(d) == 0) {
			d->app_sum = 1;
			d->shared = 1;
		}
	}
	return 0;
}

static struct gpu_demand *demand_slot(struct pod_view *pv, const char *name)
{
	size_t i;

	for (i = 0; i < pv->n_gpu; i++)
		if (strcmp(pv->gpu[i].name, name) == 0)
			return &pv->gpu[i];
	if (pv->n_gpu == LIMIT_GPU_KINDS_MAX)
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

/*
 * Does resource name look like a GPU: a domain-prefixed name whose own part
 * says gpu (nvidia.com/sharedgpu, example.com/gpu-small)? The policy should
 * list it, one way or the other: the warning says so.
 */
static int looks_like_gpu(const char *name)
{
	const char *slash = strchr(name, '/'), *p;

	if (slash == NULL || slash == name)
		return 0;
	for (p = slash + 1; *p != '\0'; p++)
		if ((p[0] == 'g' || p[0] == 'G') && (p[1] == 'p' || p[1] == 'P') && (p[2] == 'u' || p[2] == 'U'))
			return 1;
	return 0;
}

/* Records what list (limits or requests) says of GPU shares and GPU-looking names. */
static void note_intent(const struct config *cfg, struct pod_view *pv, const json_t *list)
{
	const char *key;
	const json_t *v;
	size_t i;

	json_object_foreach(iterable(list), key, v) {
		int shared = 0;

		if (policy_match_any(&cfg->gpu_resources, key))
			continue;
		for (i = 0; i < cfg->n_gpu_shares; i++) {
			if (cfg->gpu_shares[i].name == NULL || !policy_glob_match(cfg->gpu_shares[i].name, key))
				continue;
			shared = 1;
			if (!quantity_zero(v))
				add_share(pv, cfg->gpu_shares[i].resource, key);
			break;
		}
		if (!shared && pv->unlisted == NULL && looks_like_gpu(key))
			pv->unlisted = key;
	}
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
	cname = policy_str(c, "name", "(unnamed)");
	restartable = init && strcmp(policy_str(c, "restartPolicy", ""), "Always") == 0;
	snprintf(rpath, sizeof rpath, "%s.resources", path);
	if (policy_get_typed(c, "resources", JSON_OBJECT, path, &res, err) != 0 ||
	    policy_get_typed(res, "limits", JSON_OBJECT, rpath, &limits, err) != 0 ||
	    policy_get_typed(res, "requests", JSON_OBJECT, rpath, &requests, err) != 0 ||
	    policy_get_typed(res, "claims", JSON_ARRAY, rpath, &claims, err) != 0)
		return -1;
	if (claims != NULL && json_array_size(claims) > 0)
		pv->dra = 1;
	note_intent(cfg, pv, limits);
	note_intent(cfg, pv, requests);

	/* Per resource, the larger of limit and request (they are equal when valid). */
	for (int pass = 0; pass < 2; pass++) {
		const json_t *list = pass == 0 ? limits : requests;
		const json_t *other = pass == 0 ? requests : limits;

		json_object_foreach(iterable(list), key, v) {
			struct gpu_demand *d;
			long long n;

			if (!policy_match_any(&cfg->gpu_resources, key))
				continue;
			if (pass == 1 && limits != NULL && json_object_get(limits, key) != NULL)
				continue; /* counted with its limit */
			n = gpu_quantity(pv, v, cname, pass == 0 ? "limits" : "requests", key);
			if (pass == 0 && other != NULL && json_object_get(other, key) != NULL)
				n = policy_max_ll(n, gpu_quantity(pv, json_object_get(other, key), cname,
							   "requests", key));
			if (n == 0)
				continue;
			d = demand_slot(pv, key);
			if (d == NULL) {
				error_set(err, ERROR_INPUT, "more than %d distinct GPU resources in one pod",
					  LIMIT_GPU_KINDS_MAX);
				return -1;
			}
			if (!init) {
				d->app_sum = quantity_add(d->app_sum, n);
			} else if (restartable) {
				d->sidecar_sum = quantity_add(d->sidecar_sum, n);
				d->init_max = policy_max_ll(d->init_max, d->sidecar_sum);
			} else {
				d->init_max = policy_max_ll(d->init_max, quantity_add(n, d->sidecar_sum));
			}
		}
	}
	return 0;
}

/*
 * Is the pod's controller reference an apps/v1 DaemonSet? Only such a pod can
 * be a DaemonSet's: the API server keeps at most one reference with
 * controller: true, a mere owner (controller false or absent) is not managed
 * by it, and a DaemonSet of another group (example.com/v1) is nothing the
 * DaemonSet controller or the garbage collector knows. Who sent the pod is
 * the caller's question (policy_pod_read).
 */
int policy_controlled_by_daemonset(const json_t *metadata, struct error *err)
{
	const json_t *refs, *ref;
	size_t i;

	if (policy_get_typed(metadata, "ownerReferences", JSON_ARRAY, "metadata", &refs, err) != 0)
		return -1;
	json_array_foreach(iterable(refs), i, ref) {
		if (!json_is_true(json_object_get(ref, "controller")))
			continue;
		return strcmp(policy_str(ref, "apiVersion", ""), "apps/v1") == 0 &&
		       strcmp(policy_str(ref, "kind", ""), "DaemonSet") == 0;
	}
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

int policy_pod_read(const struct config *cfg, const struct policy_request *req, const json_t *pod,
		    struct pod_view *pv, struct error *err)
{
	const json_t *containers, *inits, *claims, *c, *ann, *sched;
	size_t i;
	char path[64];
	int ds;

	memset(pv, 0, sizeof *pv);
	if (!json_is_object(pod)) {
		error_set(err, ERROR_INPUT, "the pod must be a JSON object");
		return -1;
	}
	if (policy_get_typed(pod, "metadata", JSON_OBJECT, "", &pv->metadata, err) != 0 ||
	    policy_get_typed(pod, "spec", JSON_OBJECT, "", &pv->spec, err) != 0 ||
	    policy_get_typed(pv->metadata, "labels", JSON_OBJECT, "metadata", &pv->labels, err) != 0 ||
	    policy_get_typed(pv->spec, "tolerations", JSON_ARRAY, "spec", &pv->tolerations, err) != 0 ||
	    policy_get_typed(pv->spec, "nodeSelector", JSON_OBJECT, "spec", &pv->node_selector, err) != 0 ||
	    policy_get_typed(pv->spec, "containers", JSON_ARRAY, "spec", &containers, err) != 0 ||
	    policy_get_typed(pv->spec, "initContainers", JSON_ARRAY, "spec", &inits, err) != 0 ||
	    policy_get_typed(pv->spec, "resourceClaims", JSON_ARRAY, "spec", &claims, err) != 0)
		return -1;
	if ((pv->labels && check_string_map(pv->labels, "metadata.labels", err) != 0) ||
	    (pv->node_selector && check_string_map(pv->node_selector, "spec.nodeSelector", err) != 0))
		return -1;
	pv->ns = req->ns && req->ns[0] ? req->ns : policy_str(pv->metadata, "namespace", "");
	if (pv->ns[0] == '\0')
		pv->ns = "default";
	ds = req->template ? 0 : policy_controlled_by_daemonset(pv->metadata, err);
	if (ds < 0)
		return -1;
	/*
	 * A template's pods get their controller's reference, never the
	 * template's own (controller.GetPodFromTemplate copies labels,
	 * annotations and finalizers): whether they are a DaemonSet's is the
	 * caller's to say. Online, a pod's reference counts only from the
	 * DaemonSet controller itself: anyone who may create a pod can write one.
	 * Offline (no username) the pod is as stored, and a stored DaemonSet pod
	 * was created by its controller.
	 */
	if (req->template || req->username == NULL)
		pv->daemonset = req->daemonset || ds;
	else
		pv->daemonset = ds && policy_list_has(&cfg->exempt_daemonset_controllers, req->username);
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
	if (tolerations_valid(pv->tolerations, err) != 0)
		return -1;
	if (policy_get_typed(pv->metadata, "annotations", JSON_OBJECT, "metadata", &ann, err) != 0 ||
	    policy_get_typed(pv->spec, "schedulerName", JSON_STRING, "spec", &sched, err) != 0 ||
	    (ann != NULL && check_string_map(ann, "metadata.annotations", err) != 0))
		return -1;
	scan_annotations(cfg, pv);
	if (pv->bad_quantity[0] == '\0' && shares_to_demand(pv, err) != 0)
		return -1;
	return policy_pod_claims(cfg, req, pod, pv, err);
}

int policy_gpu_requests(const struct config *cfg, const json_t *pod, struct policy_gpu_request *out,
			size_t cap, size_t *n, struct error *err)
{
	struct policy_request req = { .pod = pod, .operation = POLICY_OP_CREATE };
	struct pod_view pv;
	size_t i;

	*n = 0;
	if (policy_pod_read(cfg, &req, pod, &pv, err) != 0)
		return -1;
	if (pv.bad_quantity[0] != '\0') {
		error_set(err, ERROR_INPUT, "%s", pv.bad_quantity);
		return -1;
	}
	if (pv.n_gpu > cap) {
		error_set(err, ERROR_INPUT, "more than %zu distinct GPU resources in one pod", cap);
		return -1;
	}
	for (i = 0; i < pv.n_gpu; i++) {
		out[i].resource = pv.gpu[i].name;
		out[i].count = policy_demand_total(&pv.gpu[i]);
	}
	*n = pv.n_gpu;
	return 0;
}
