/* policy_claims: a pod's DRA claims, and what a ResourceClaimTemplate or ResourceClaim asks for. */
#include "policy/policy_claims.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "policy/policy_int.h"

#define RESOURCE_GROUP "resource.k8s.io/"

/* The request shapes resource.k8s.io has served. */
enum claim_shape {
	SHAPE_NESTED = 0, /* v1, v1beta2: requests[].exactly or requests[].firstAvailable */
	SHAPE_FLAT        /* v1beta1, v1alpha3: the request's own deviceClassName, count ... */
};

const char *policy_claim_state_name(enum policy_claim_state state)
{
	switch (state) {
	case POLICY_CLAIM_UNKNOWN_NO_LOOKUP: return "no lookups";
	case POLICY_CLAIM_UNKNOWN_NOT_FOUND: return "not found";
	case POLICY_CLAIM_UNKNOWN_COLD:      return "cache not synced";
	case POLICY_CLAIM_UNKNOWN_NOT_SERVED: return "resource.k8s.io not served";
	case POLICY_CLAIM_UNKNOWN_INVALID:   return "invalid";
	case POLICY_CLAIM_RESOLVED:          return "resolved";
	}
	return "invalid";
}

int policy_claims_from_pod(const json_t *pod, struct policy_claim *out, size_t cap, size_t *n,
			   struct error *err)
{
	const json_t *spec, *claims, *e;
	size_t i;

	*n = 0;
	if (policy_get_typed(pod, "spec", JSON_OBJECT, "", &spec, err) != 0 ||
	    policy_get_typed(spec, "resourceClaims", JSON_ARRAY, "spec", &claims, err) != 0)
		return -1;
	if (json_array_size(claims) > cap) {
		error_set(err, ERROR_INPUT, "more than %zu spec.resourceClaims", cap);
		return -1;
	}
	json_array_foreach(iterable(claims), i, e) {
		struct policy_claim *c = &out[i];
		const json_t *name, *claim, *tmpl;
		char path[48];

		snprintf(path, sizeof path, "spec.resourceClaims[%zu]", i);
		if (!json_is_object(e)) {
			error_set(err, ERROR_INPUT, "%s must be an object", path);
			return -1;
		}
		if (policy_get_typed(e, "name", JSON_STRING, path, &name, err) != 0 ||
		    policy_get_typed(e, "resourceClaimName", JSON_STRING, path, &claim, err) != 0 ||
		    policy_get_typed(e, "resourceClaimTemplateName", JSON_STRING, path, &tmpl, err) != 0)
			return -1;
		memset(c, 0, sizeof *c);
		c->name = name ? json_string_value(name) : "";
		c->source = claim ? POLICY_CLAIM_FROM_CLAIM : POLICY_CLAIM_FROM_TEMPLATE;
		c->object = claim ? json_string_value(claim) : tmpl ? json_string_value(tmpl) : "";
		if ((claim == NULL) == (tmpl == NULL)) {
			c->state = POLICY_CLAIM_UNKNOWN_INVALID;
			snprintf(c->message, sizeof c->message,
				 "%s must name exactly one of resourceClaimName and resourceClaimTemplateName", path);
		}
		*n = i + 1;
	}
	return 0;
}

const struct policy_claim *policy_claims_find(const struct policy_claims *cs, const char *name)
{
	size_t i;

	for (i = 0; cs != NULL && name != NULL && i < cs->n; i++)
		if (cs->v[i].name != NULL && strcmp(cs->v[i].name, name) == 0)
			return &cs->v[i];
	return NULL;
}

/*
 * One way to satisfy a request (path names it in errors): deviceClassName
 * required, allocationMode ExactCount (the default) with count >= 1 (default
 * 1), or All with no count. As upstream validation has it
 * (validateDeviceRequest, validateExactDeviceRequest).
 */
static int read_alt(const json_t *o, const char *path, struct policy_device_alt *a, struct error *err)
{
	const json_t *cls, *mode, *count;

	if (!json_is_object(o)) {
		error_set(err, ERROR_INPUT, "%s must be an object", path);
		return -1;
	}
	if (policy_get_typed(o, "deviceClassName", JSON_STRING, path, &cls, err) != 0 ||
	    policy_get_typed(o, "allocationMode", JSON_STRING, path, &mode, err) != 0 ||
	    policy_get_typed(o, "count", JSON_INTEGER, path, &count, err) != 0)
		return -1;
	if (cls == NULL || json_string_length(cls) == 0) {
		error_set(err, ERROR_INPUT, "%s.deviceClassName is required", path);
		return -1;
	}
	a->device_class = json_string_value(cls);
	a->mode = POLICY_ALLOC_EXACT;
	if (mode != NULL && strcmp(json_string_value(mode), "All") == 0)
		a->mode = POLICY_ALLOC_ALL;
	else if (mode != NULL && strcmp(json_string_value(mode), "ExactCount") != 0) {
		error_set(err, ERROR_INPUT, "%s.allocationMode must be ExactCount or All", path);
		return -1;
	}
	if (a->mode == POLICY_ALLOC_ALL) {
		if (count != NULL && json_integer_value(count) != 0) {
			error_set(err, ERROR_INPUT, "%s.count must not be set with allocationMode All", path);
			return -1;
		}
		a->count = 0;
		return 0;
	}
	a->count = count ? json_integer_value(count) : 1;
	if (a->count < 1) {
		error_set(err, ERROR_INPUT, "%s.count must be at least 1", path);
		return -1;
	}
	return 0;
}

static int read_first_available(const json_t *list, const char *path, struct policy_device_request *r,
				struct error *err)
{
	const json_t *e;
	size_t i;
	char apath[128];

	if (json_array_size(list) == 0 || json_array_size(list) > POLICY_CLAIM_ALTS_MAX) {
		error_set(err, ERROR_INPUT, "%s.firstAvailable must have 1 to %d entries", path,
			  POLICY_CLAIM_ALTS_MAX);
		return -1;
	}
	json_array_foreach(iterable(list), i, e) {
		snprintf(apath, sizeof apath, "%s.firstAvailable[%zu]", path, i);
		if (read_alt(e, apath, &r->alts[i], err) != 0)
			return -1;
	}
	r->n_alts = json_array_size(list);
	return 0;
}

static int read_request(const json_t *o, enum claim_shape shape, const char *path,
			struct policy_device_request *r, struct error *err)
{
	const json_t *name, *exactly, *first, *admin;
	char epath[128];

	memset(r, 0, sizeof *r);
	if (!json_is_object(o)) {
		error_set(err, ERROR_INPUT, "%s must be an object", path);
		return -1;
	}
	if (policy_get_typed(o, "name", JSON_STRING, path, &name, err) != 0 ||
	    policy_get_typed(o, "firstAvailable", JSON_ARRAY, path, &first, err) != 0)
		return -1;
	r->name = name ? json_string_value(name) : "";
	if (shape == SHAPE_NESTED) {
		if (policy_get_typed(o, "exactly", JSON_OBJECT, path, &exactly, err) != 0)
			return -1;
		if ((exactly == NULL) == (first == NULL)) {
			error_set(err, ERROR_INPUT, "%s must set exactly one of exactly and firstAvailable", path);
			return -1;
		}
		if (first != NULL)
			return read_first_available(first, path, r, err);
		snprintf(epath, sizeof epath, "%s.exactly", path);
		o = exactly;
		path = epath;
	} else if (first != NULL && json_object_get(o, "deviceClassName") != NULL) {
		error_set(err, ERROR_INPUT, "%s must set exactly one of deviceClassName and firstAvailable", path);
		return -1;
	} else if (first != NULL) {
		return read_first_available(first, path, r, err);
	}
	admin = json_object_get(o, "adminAccess");
	if (admin != NULL && !json_is_boolean(admin) && !json_is_null(admin)) {
		error_set(err, ERROR_INPUT, "%s.adminAccess must be a boolean", path);
		return -1;
	}
	r->admin_access = json_is_true(admin);
	r->n_alts = 1;
	return read_alt(o, path, &r->alts[0], err);
}

/* The requests array of obj, for its kind, and the shape its version has. */
static int locate_requests(const struct policy_claim *c, const json_t *obj, enum claim_shape *shape,
			   const json_t **requests, struct error *err)
{
	const char *api = policy_str(obj, "apiVersion", ""), *kind = policy_str(obj, "kind", "");
	const char *want = c->source == POLICY_CLAIM_FROM_CLAIM ? "ResourceClaim" : "ResourceClaimTemplate";
	const json_t *spec, *devices;
	const char *version;

	if (!json_is_object(obj) || strncmp(api, RESOURCE_GROUP, strlen(RESOURCE_GROUP)) != 0 ||
	    strcmp(kind, want) != 0) {
		error_set(err, ERROR_INPUT, "not a %s of resource.k8s.io", want);
		return -1;
	}
	version = api + strlen(RESOURCE_GROUP);
	if (strcmp(version, "v1") == 0 || strcmp(version, "v1beta2") == 0)
		*shape = SHAPE_NESTED;
	else if (strcmp(version, "v1beta1") == 0 || strcmp(version, "v1alpha3") == 0)
		*shape = SHAPE_FLAT;
	else {
		error_set(err, ERROR_INPUT, "%s: version %s not known", want, version);
		return -1;
	}
	if (policy_get_typed(obj, "spec", JSON_OBJECT, "", &spec, err) != 0)
		return -1;
	if (c->source == POLICY_CLAIM_FROM_TEMPLATE &&
	    policy_get_typed(spec, "spec", JSON_OBJECT, "spec", &spec, err) != 0)
		return -1;
	return policy_get_typed(spec, "devices", JSON_OBJECT, "spec", &devices, err) != 0 ||
	       policy_get_typed(devices, "requests", JSON_ARRAY, "devices", requests, err) != 0 ? -1 : 0;
}

int policy_claim_resolve(struct policy_claim *c, const json_t *obj, struct error *err)
{
	const json_t *requests = NULL, *r;
	enum claim_shape shape;
	size_t i;
	char path[48];

	c->n_requests = 0;
	c->message[0] = '\0';
	c->state = POLICY_CLAIM_UNKNOWN_INVALID;
	if (locate_requests(c, obj, &shape, &requests, err) != 0)
		goto invalid;
	if (json_array_size(requests) > POLICY_CLAIM_REQUESTS_MAX) {
		error_set(err, ERROR_INPUT, "more than %d device requests", POLICY_CLAIM_REQUESTS_MAX);
		goto invalid;
	}
	json_array_foreach(iterable(requests), i, r) {
		snprintf(path, sizeof path, "requests[%zu]", i);
		if (read_request(r, shape, path, &c->requests[i], err) != 0)
			goto invalid;
	}
	c->n_requests = json_array_size(requests);
	c->state = POLICY_CLAIM_RESOLVED;
	return 0;
invalid:
	c->n_requests = 0;
	snprintf(c->message, sizeof c->message, "%s", err ? err->msg : "invalid");
	error_trim_utf8(c->message);
	return -1;
}

/* ==== Resolving a pod's claims ==== */

void policy_claims_free(struct policy_claims *cs)
{
	if (cs == NULL)
		return;
	free(cs->v);
	memset(cs, 0, sizeof *cs);
}

int policy_claims_resolve_pod(const json_t *pod, const char *ns, const struct policy_claim_lookup *lk,
			      struct policy_claims *out, struct error *err)
{
	const json_t *spec = json_object_get(pod, "spec");
	size_t i, n = json_array_size(json_object_get(spec, "resourceClaims"));

	memset(out, 0, sizeof *out);
	if (n == 0)
		return 0;
	if (n > POLICY_POD_CLAIMS_MAX) {
		error_set(err, ERROR_INPUT, "more than %d spec.resourceClaims", POLICY_POD_CLAIMS_MAX);
		return -1;
	}
	out->v = calloc(n, sizeof *out->v);
	if (out->v == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if (policy_claims_from_pod(pod, out->v, n, &out->n, err) != 0) {
		policy_claims_free(out);
		return -1;
	}
	for (i = 0; lk != NULL && lk->fn == NULL && lk->off != NULL && i < out->n; i++)
		if (out->v[i].state == POLICY_CLAIM_UNKNOWN_NO_LOOKUP)
			snprintf(out->v[i].message, sizeof out->v[i].message, "%s", lk->off);
	for (i = 0; lk != NULL && lk->fn != NULL && i < out->n; i++) {
		struct policy_claim *c = &out->v[i];
		const json_t *obj = NULL;
		struct error cerr = { 0 };

		if (c->state != POLICY_CLAIM_UNKNOWN_NO_LOOKUP)
			continue;
		c->state = lk->fn(lk->ctx, ns, c->source, c->object, &obj);
		if (c->state == POLICY_CLAIM_RESOLVED)
			(void)policy_claim_resolve(c, obj, &cerr); /* invalid: said in c->message */
	}
	return 0;
}

/* ==== A set of claim objects ==== */

static int object_cmp(const char *ns, enum policy_claim_source src, const char *name,
		      const struct policy_claim_object *o)
{
	int c = strcmp(ns, o->ns);

	if (c == 0)
		c = (int)src - (int)o->source;
	return c != 0 ? c : strcmp(name, o->name);
}

static int by_key(const void *a, const void *b)
{
	const struct policy_claim_object *x = a, *y = b;

	return object_cmp(x->ns, x->source, x->name, y);
}

int policy_claim_objects_add(struct policy_claim_objects *set, const json_t *obj, struct error *err)
{
	const char *kind = policy_str(obj, "kind", ""), *api = policy_str(obj, "apiVersion", "");
	const json_t *md = json_object_get(obj, "metadata");
	struct policy_claim_object *o;

	if (!json_is_object(obj) || strncmp(api, RESOURCE_GROUP, strlen(RESOURCE_GROUP)) != 0 ||
	    (strcmp(kind, "ResourceClaimTemplate") != 0 && strcmp(kind, "ResourceClaim") != 0) ||
	    policy_str(md, "name", "")[0] == '\0')
		return 0;
	if (set->n == set->cap) {
		struct policy_claim_object *grown = array_grow(set->v, &set->cap, set->n + 1, sizeof *grown, 16);

		if (grown == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		set->v = grown;
	}
	o = &set->v[set->n++];
	o->ns = policy_str(md, "namespace", "");
	if (o->ns[0] == '\0')
		o->ns = "default";
	o->name = policy_str(md, "name", "");
	o->source = strcmp(kind, "ResourceClaim") == 0 ? POLICY_CLAIM_FROM_CLAIM : POLICY_CLAIM_FROM_TEMPLATE;
	o->obj = obj;
	set->sorted = 0;
	return 1;
}

enum policy_claim_state policy_claim_objects_lookup(void *ctx, const char *ns, enum policy_claim_source source,
						    const char *name, const json_t **obj)
{
	struct policy_claim_objects *set = ctx;
	size_t lo = 0, hi;

	if (!set->sorted && set->n > 1)
		qsort(set->v, set->n, sizeof *set->v, by_key);
	set->sorted = 1;
	if (ns == NULL || ns[0] == '\0')
		ns = "default";
	hi = set->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = object_cmp(ns, source, name, &set->v[mid]);

		if (c == 0) {
			*obj = set->v[mid].obj;
			return POLICY_CLAIM_RESOLVED;
		}
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return POLICY_CLAIM_UNKNOWN_NOT_FOUND;
}

void policy_claim_objects_free(struct policy_claim_objects *set)
{
	if (set == NULL)
		return;
	free(set->v);
	memset(set, 0, sizeof *set);
}
