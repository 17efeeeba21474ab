/* policy_claims: a pod's DRA claims, and what a ResourceClaimTemplate or ResourceClaim asks for. */
#include "policy/policy_claims.h"

#include <stdio.h>
#include <string.h>

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
	json_array_foreach(policy_iterable(claims), i, e) {
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
	json_array_foreach(policy_iterable(list), i, e) {
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
	json_array_foreach(policy_iterable(requests), i, r) {
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
