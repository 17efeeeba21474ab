/*
 * policy_dra: a pod's DRA claims as GPU demand.
 *
 * A claim is GPU demand only when its caller resolved it (policy_claims.h),
 * a container or init container uses it, and every alternative of one of its
 * requests asks for a gpuDeviceClasses class: then that request is placed as
 * a GPU resource is (pools[].deviceClasses, maxGPUsPerPod). Anything else
 * (not looked up, not found, a cold cache, unused, another class, a request
 * that could be met by a non-GPU alternative) is no GPU demand and so never
 * an exemption from the CPU-route checks: no claim opens a route to GPU
 * nodes that the engine cannot show to be a GPU's.
 */
#include "policy/policy_int.h"

#include <stdio.h>
#include <string.h>

#include "base/quantity.h"

static int class_is_gpu(const struct config *cfg, const char *cls)
{
	return policy_match_any(&cfg->gpu_device_classes, cls);
}

static int class_served(const struct config *cfg, const struct config_pool *p, const char *cls)
{
	return class_is_gpu(cfg, cls) &&
	       policy_match_any(p->device_classes.n ? &p->device_classes : &cfg->gpu_device_classes, cls);
}

/* Does a container or init container of spec use claim name (resources.claims[].name)? */
static int claim_used(const json_t *spec, const char *name)
{
	static const char *const lists[] = { "containers", "initContainers" };
	const json_t *c, *ref;
	size_t i, j, k;

	for (k = 0; k < sizeof lists / sizeof lists[0]; k++) {
		json_array_foreach(iterable(json_object_get(spec, lists[k])), i, c) {
			const json_t *claims = json_object_get(json_object_get(c, "resources"), "claims");

			json_array_foreach(iterable(claims), j, ref)
				if (strcmp(policy_str(ref, "name", ""), name) == 0)
					return 1;
		}
	}
	return 0;
}

/*
 * Records claim name (c: its lookup, NULL: none) as no GPU demand: why (for
 * the warning), code (for the audit annotation), cls (a DeviceClass that is
 * not a GPU class, or NULL).
 */
static void note_other(struct pod_view *pv, const char *name, const struct policy_claim *c,
		       enum policy_claim_state state, const char *why, const char *code, const char *cls)
{
	struct claim_seen *o;

	if (pv->n_other == POLICY_POD_CLAIMS_MAX)
		return; /* bounded by the pod's claims, checked before */
	o = &pv->other[pv->n_other++];
	o->name = name;
	o->object = c != NULL ? c->object : NULL;
	o->kind = c == NULL ? NULL : c->source == POLICY_CLAIM_FROM_CLAIM ? "ResourceClaim" : "ResourceClaimTemplate";
	o->state = state;
	o->why = why;
	o->code = code;
	o->cls = cls;
}

/* Why an unresolved claim did not count, for the warning; its annotation word into *code. */
static const char *unresolved_why(const struct policy_claim *c, const char **code)
{
	switch (c->state) {
	case POLICY_CLAIM_UNKNOWN_NO_LOOKUP:
		*code = "not-looked-up";
		return c->message[0] ? c->message : NULL;
	case POLICY_CLAIM_UNKNOWN_NOT_FOUND:
		*code = "not-found";
		return "not found";
	case POLICY_CLAIM_UNKNOWN_COLD:
		/* "cache not synced": the words operators and the cluster suite look for. */
		*code = "cache-not-synced";
		return "claim cache not synced yet (gpu-admission just started, or cannot reach the API server)";
	case POLICY_CLAIM_UNKNOWN_NOT_SERVED:
		*code = "api-not-served";
		return "the API server does not serve resource.k8s.io/v1 (DRA, Kubernetes 1.34 and later)";
	case POLICY_CLAIM_UNKNOWN_INVALID:
	case POLICY_CLAIM_RESOLVED:
		break;
	}
	*code = "invalid";
	return c->message[0] ? c->message : policy_claim_state_name(c->state);
}

/* The first DeviceClass of c's requests that is not a GPU class (NULL: none). */
static const char *other_class(const struct config *cfg, const struct policy_claim *c)
{
	size_t i, j;

	for (i = 0; i < c->n_requests; i++)
		for (j = 0; j < c->requests[i].n_alts; j++)
			if (!class_is_gpu(cfg, c->requests[i].alts[j].device_class))
				return c->requests[i].alts[j].device_class;
	return NULL;
}

static struct gpu_demand *new_slot(struct pod_view *pv, const char *name, enum demand_kind kind,
				   struct error *err)
{
	size_t i;

	for (i = 0; kind == DEMAND_CLASS && i < pv->n_gpu; i++)
		if (pv->gpu[i].kind == DEMAND_CLASS && strcmp(pv->gpu[i].name, name) == 0)
			return &pv->gpu[i];
	if (pv->n_gpu == LIMIT_GPU_KINDS_MAX) {
		error_set(err, ERROR_INPUT, "more than %d distinct GPU resources and claim requests in one pod",
			  LIMIT_GPU_KINDS_MAX);
		return NULL;
	}
	memset(&pv->gpu[pv->n_gpu], 0, sizeof pv->gpu[0]);
	pv->gpu[pv->n_gpu].name = name;
	pv->gpu[pv->n_gpu].kind = kind;
	pv->n_dra_gpu++;
	return &pv->gpu[pv->n_gpu++];
}

/* Every alternative of r a GPU class: r is GPU demand. */
static int request_is_gpu(const struct config *cfg, const struct policy_device_request *r)
{
	size_t i;

	for (i = 0; i < r->n_alts; i++)
		if (!class_is_gpu(cfg, r->alts[i].device_class))
			return 0;
	return r->n_alts > 0;
}

/* The GPU requests of resolved claim c as demands; how many there were into *n. */
static int add_requests(const struct config *cfg, struct pod_view *pv, const struct policy_claim *c,
			size_t *n, struct error *err)
{
	size_t i;

	*n = 0;
	for (i = 0; i < c->n_requests; i++) {
		const struct policy_device_request *r = &c->requests[i];
		struct gpu_demand *d;

		if (!request_is_gpu(cfg, r))
			continue;
		(*n)++;
		if (r->n_alts == 1 && r->alts[0].mode == POLICY_ALLOC_EXACT) {
			if ((d = new_slot(pv, r->alts[0].device_class, DEMAND_CLASS, err)) == NULL)
				return -1;
			d->app_sum = quantity_add(d->app_sum, r->alts[0].count);
			continue;
		}
		if ((d = new_slot(pv, r->alts[0].device_class, DEMAND_REQUEST, err)) == NULL)
			return -1;
		d->dra = r;
		d->app_sum = r->alts[0].mode == POLICY_ALLOC_EXACT ? r->alts[0].count : 1;
	}
	return 0;
}

int policy_pod_claims(const struct config *cfg, const struct policy_request *req, const json_t *pod,
		      struct pod_view *pv, struct error *err)
{
	const json_t *claims = json_object_get(pv->spec, "resourceClaims"), *e;
	size_t i, n;

	if (json_array_size(claims) > POLICY_POD_CLAIMS_MAX) {
		error_set(err, ERROR_INPUT, "more than %d spec.resourceClaims", POLICY_POD_CLAIMS_MAX);
		return -1;
	}
	json_array_foreach(iterable(claims), i, e) {
		const char *name = policy_str(e, "name", "");
		const struct policy_claim *c = pod == req->pod || pod == req->old_pod ?
			policy_claims_find(req->claims, name) : NULL;

		if (!json_is_object(e)) {
			error_set(err, ERROR_INPUT, "spec.resourceClaims[%zu] must be an object", i);
			return -1;
		}
		if (c == NULL) {
			note_other(pv, name, NULL, POLICY_CLAIM_UNKNOWN_NO_LOOKUP, NULL, "not-looked-up", NULL);
		} else if (c->state != POLICY_CLAIM_RESOLVED) {
			const char *code, *why = unresolved_why(c, &code);

			note_other(pv, name, c, c->state, why, code, NULL);
		} else if (!claim_used(pv->spec, name)) {
			note_other(pv, name, c, c->state, "no container uses it", "unused", NULL);
		} else if (add_requests(cfg, pv, c, &n, err) != 0) {
			return -1;
		} else if (n == 0 && c->n_requests == 0) {
			note_other(pv, name, c, c->state, "it asks for no device", "no-device", NULL);
		} else if (n == 0) {
			note_other(pv, name, c, c->state, "none of its requests asks only for GPU DeviceClasses "
				   "(gpuDeviceClasses)", "not-gpu-class", other_class(cfg, c));
		}
	}
	return 0;
}

int policy_demand_fit(const struct config *cfg, const struct config_pool *p, const struct gpu_demand *d)
{
	long long max = p->max_gpus_per_pod;
	int best = 0;
	size_t i;

	switch (d->kind) {
	case DEMAND_RESOURCE:
		if (!policy_match_any(p->resources.n ? &p->resources : &cfg->gpu_resources, d->name))
			return 0;
		return max > 0 && policy_demand_total(d) > max ? 1 : 2;
	case DEMAND_CLASS:
		if (!class_served(cfg, p, d->name))
			return 0;
		return max > 0 && policy_demand_total(d) > max ? 1 : 2;
	case DEMAND_REQUEST:
		break;
	}
	for (i = 0; i < d->dra->n_alts; i++) {
		const struct policy_device_alt *a = &d->dra->alts[i];
		/* All: every matching device of the node, which gpusPerNode bounds when given. */
		long long n = a->mode == POLICY_ALLOC_EXACT ? a->count : p->gpus_per_node;
		int fit;

		if (!class_served(cfg, p, a->device_class))
			continue;
		fit = max > 0 && n > max ? 1 : 2;
		if (fit > best)
			best = fit;
	}
	return best;
}

void policy_demand_describe(const struct gpu_demand *d, char *buf, size_t cap)
{
	if (cap > 0)
		buf[0] = '\0';
	if (d->kind == DEMAND_RESOURCE) {
		policy_appendf(buf, cap, "%s", d->name);
		return;
	}
	policy_appendf(buf, cap, "DeviceClass %s", d->name);
	if (d->kind == DEMAND_REQUEST && d->dra->n_alts > 1)
		policy_appendf(buf, cap, " (or %zu other alternatives)", d->dra->n_alts - 1);
	if (d->kind == DEMAND_REQUEST && d->dra->alts[0].mode == POLICY_ALLOC_ALL)
		policy_appendf(buf, cap, " (allocationMode All)");
}
