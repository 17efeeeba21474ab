/*
 * report_dra: GPUs served and held through DRA, from the ResourceSlices and
 * ResourceClaims of the input (kubectl get resourceslices,resourceclaims -A
 * -o json beside the nodes and pods).
 *
 * Read in any order against the nodes and pods, so each item is boiled down
 * to what the end needs, and judged in report_dra_finish():
 *  - a ResourceSlice of a node (spec.nodeName) whose driver is named as a
 *    gpuDeviceClasses class (NVIDIA's and AMD's drivers are: gpu.nvidia.com,
 *    gpu.amd.com) publishes GPUs: its node, tainted and offering no GPU in
 *    status.allocatable, is served by a DRA driver, not missing its device plugin;
 *  - a ResourceClaim allocated (status.allocation) devices for requests of a
 *    gpuDeviceClasses class holds that many GPUs on the node its allocation
 *    selects (nodeSelector matchFields metadata.name, as the scheduler writes
 *    it for node-local devices): the node is busy, and the pods it is reserved
 *    for (status.reservedFor) are GPU pods, not CPU pods on a GPU node;
 *  - a Pending pod whose claim (spec.resourceClaims[].resourceClaimName, or the
 *    one made from its template: status.resourceClaimStatuses) asks for a GPU
 *    class gets its reason: no pool serves the class, or the claim is not
 *    allocated.
 * Limits: DeviceClass selectors are not evaluated (a result counts by the
 * class its request names, a slice by its driver's name); a claim whose pods
 * are beyond the report's named CPU pods (REPORT_FINDINGS_MAX) leaves them counted
 * as CPU pods.
 */
#include "report/report_int.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/iterable.h"
#include "base/quantity.h"

#define KEY_MAX 512  /* "namespace/name": 63 + 1 + 253, with room */

static int any_glob(const struct config_strings *globs, const char *s)
{
	size_t i;

	for (i = 0; i < globs->n; i++)
		if (policy_glob_match(globs->v[i], s))
			return 1;
	return 0;
}

static int class_is_gpu(const struct config *cfg, const char *cls)
{
	return cls != NULL && any_glob(&cfg->gpu_device_classes, cls);
}

/* A pool serves a GPU class: its deviceClasses, or without them every gpuDeviceClasses class (policy_dra.c). */
static int class_served(const struct config *cfg, const char *cls)
{
	size_t i;

	for (i = 0; i < cfg->n_pools; i++) {
		const struct config_pool *p = &cfg->pools[i];

		if (any_glob(p->device_classes.n ? &p->device_classes : &cfg->gpu_device_classes, cls))
			return 1;
	}
	return 0;
}

static void key_of(char *buf, size_t cap, const char *ns, const char *name)
{
	snprintf(buf, cap, "%s/%s", ns, name);
}

static int nomem(struct error *err)
{
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

/* The class a request (v1: exactly.deviceClassName; v1beta1: deviceClassName) or subrequest names. */
static const char *request_class(const json_t *req)
{
	const json_t *exactly = json_object_get(req, "exactly");
	const char *cls = json_string_value(json_object_get(exactly ? exactly : req, "deviceClassName"));

	return cls;
}

/* The class of the request a result names ("req", or "req/sub" for a firstAvailable alternative). */
static const char *result_class(const json_t *requests, const char *name)
{
	const char *slash = strchr(name, '/');
	size_t len = slash ? (size_t)(slash - name) : strlen(name), i, j;
	const json_t *req, *sub;

	json_array_foreach(iterable(requests), i, req) {
		const char *rn = report_str_at(req, "name");

		if (strlen(rn) != len || strncmp(rn, name, len) != 0)
			continue;
		if (slash == NULL)
			return request_class(req);
		json_array_foreach(iterable(json_object_get(req, "firstAvailable")), j, sub)
			if (strcmp(report_str_at(sub, "name"), slash + 1) == 0)
				return request_class(sub);
	}
	return NULL;
}

/* The GPU class a claim asks for (its first request of one), or NULL: the claim is no GPU's. */
static const char *claim_class(const struct config *cfg, const json_t *requests, long long *count)
{
	const json_t *req, *sub;
	size_t i, j;

	json_array_foreach(iterable(requests), i, req) {
		const json_t *exactly = json_object_get(req, "exactly");
		const char *cls = request_class(req);

		if (class_is_gpu(cfg, cls)) {
			const json_t *n = json_object_get(exactly ? exactly : req, "count");

			*count = json_is_integer(n) && json_integer_value(n) > 0 ? json_integer_value(n) : 1;
			return cls;
		}
		json_array_foreach(iterable(json_object_get(req, "firstAvailable")), j, sub)
			if (class_is_gpu(cfg, request_class(sub))) {
				*count = 1;
				return request_class(sub);
			}
	}
	return NULL;
}

/* The node an allocation's nodeSelector names (matchFields metadata.name In [one]), or NULL. */
static const char *allocation_node(const json_t *alloc)
{
	const json_t *terms = json_object_get(json_object_get(alloc, "nodeSelector"), "nodeSelectorTerms"), *t, *f;
	size_t i, j;

	json_array_foreach(iterable(terms), i, t)
		json_array_foreach(iterable(json_object_get(t, "matchFields")), j, f) {
			const json_t *values = json_object_get(f, "values");

			if (strcmp(report_str_at(f, "key"), "metadata.name") == 0 &&
			    strcmp(report_str_at(f, "operator"), "In") == 0 && json_array_size(values) == 1)
				return json_string_value(json_array_get(values, 0));
		}
	return NULL;
}

static int slice_item(struct report *r, const json_t *slice, struct error *err)
{
	const json_t *spec = json_object_get(slice, "spec");
	const char *node = json_string_value(json_object_get(spec, "nodeName"));
	const json_t *have;
	size_t devices = json_array_size(json_object_get(spec, "devices"));

	if (node == NULL || devices == 0 || !class_is_gpu(r->cfg, report_str_at(spec, "driver")))
		return 0;
	have = json_object_get(r->dra.slices, node);
	if (json_object_set_new(r->dra.slices, node,
				json_integer(quantity_add(json_integer_value(have), (long long)devices))) != 0)
		return nomem(err);
	return 0;
}

json_t *report_dra_slim_slice(const json_t *slice)
{
	const json_t *spec = json_object_get(slice, "spec"), *v;
	size_t devices = json_array_size(json_object_get(spec, "devices")), i;
	json_t *out = json_pack("{s:s, s:{s:s}, s:{s:[]}}", "kind", "ResourceSlice", "metadata", "name",
				report_str_at(json_object_get(slice, "metadata"), "name"), "spec", "devices");
	json_t *slim_spec = json_object_get(out, "spec"), *list = json_object_get(slim_spec, "devices");

	if (out == NULL)
		return NULL;
	/* Only strings are read (slice_item): another type stays out, as it would be ignored. */
	if (json_is_string(v = json_object_get(spec, "driver")) &&
	    json_object_set(slim_spec, "driver", (json_t *)(uintptr_t)v) != 0)
		goto nomem;
	if (json_is_string(v = json_object_get(spec, "nodeName")) &&
	    json_object_set(slim_spec, "nodeName", (json_t *)(uintptr_t)v) != 0)
		goto nomem;
	for (i = 0; i < devices; i++)
		if (json_array_append_new(list, json_null()) != 0)
			goto nomem;
	return out;
nomem:
	json_decref(out);
	return NULL;
}

/*
 * A new object of obj's members named in keys (NULL-terminated), their values
 * shared; obj itself (shared) when it is no object, as the readers then find
 * nothing in it either way. NULL on ENOMEM.
 */
static json_t *pick(const json_t *obj, const char *const *keys)
{
	json_t *out, *v;

	if (!json_is_object(obj))
		return json_incref(iterable(obj));
	if ((out = json_object()) == NULL)
		return NULL;
	for (; *keys != NULL; keys++)
		if ((v = json_object_get(obj, *keys)) != NULL && json_object_set(out, *keys, v) != 0) {
			json_decref(out);
			return NULL;
		}
	return out;
}

/* Sets key of into to a new array of each element of from (when an array) as fn boils it down. 0, or -1 on ENOMEM. */
static int slim_each(json_t *into, const char *key, const json_t *from, json_t *(*fn)(const json_t *))
{
	json_t *list, *v;
	const json_t *e;
	size_t i;

	if (from == NULL)
		return 0;
	if (!json_is_array(from))
		return json_object_set(into, key, iterable(from));
	if ((list = json_array()) == NULL || json_object_set_new(into, key, list) != 0)
		return -1;
	json_array_foreach(iterable(from), i, e)
		if ((v = fn(e)) == NULL || json_array_append_new(list, v) != 0)
			return -1;
	return 0;
}

static json_t *slim_exactly(const json_t *req)
{
	static const char *const keys[] = { "name", "deviceClassName", "count", NULL };
	static const char *const exactly[] = { "deviceClassName", "count", NULL };
	json_t *out = pick(req, keys), *v = json_object_get(req, "exactly");

	if (out != NULL && json_is_object(out) && v != NULL && json_object_set_new(out, "exactly", pick(v, exactly)) != 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

/* A request: what request_class() and claim_class() read (firstAvailable's subrequests as requests). */
static json_t *slim_request(const json_t *req)
{
	json_t *out = slim_exactly(req);

	if (out != NULL && json_is_object(out) &&
	    slim_each(out, "firstAvailable", json_object_get(req, "firstAvailable"), slim_exactly) != 0) {
		json_decref(out);
		return NULL;
	}
	return out;
}

static json_t *slim_result(const json_t *res)
{
	static const char *const keys[] = { "request", NULL };

	return pick(res, keys);
}

static json_t *slim_ref(const json_t *ref)
{
	static const char *const keys[] = { "resource", "name", NULL };

	return pick(ref, keys);
}

json_t *report_dra_slim_claim(const json_t *claim)
{
	static const char *const meta_keys[] = { "name", "namespace", NULL };
	static const char *const alloc_keys[] = { "nodeSelector", NULL };
	const json_t *status = json_object_get(claim, "status"), *alloc = json_object_get(status, "allocation");
	const json_t *requests = json_object_get(json_object_get(json_object_get(claim, "spec"), "devices"), "requests");
	const json_t *meta = json_object_get(claim, "metadata");
	json_t *m = meta != NULL ? pick(meta, meta_keys) : NULL, *out, *st, *a, *devs;

	if (meta != NULL && m == NULL)
		return NULL;
	out = json_pack("{s:s, s:o?, s:{s:{}}, s:{}}", "kind", "ResourceClaim", "metadata", m, "spec", "devices", "status");
	if (out == NULL)
		return NULL;
	st = json_object_get(out, "status");
	if (slim_each(json_object_get(json_object_get(out, "spec"), "devices"), "requests", requests, slim_request) != 0 ||
	    slim_each(st, "reservedFor", json_object_get(status, "reservedFor"), slim_ref) != 0)
		goto nomem;
	if (alloc != NULL) {
		if ((a = pick(alloc, alloc_keys)) == NULL || json_object_set_new(st, "allocation", a) != 0)
			goto nomem;
		devs = json_object_get(alloc, "devices");
		if (json_is_object(a) && json_is_object(devs)) {
			json_t *d = json_object();

			if (d == NULL || json_object_set_new(a, "devices", d) != 0 ||
			    slim_each(d, "results", json_object_get(devs, "results"), slim_result) != 0)
				goto nomem;
		} else if (json_is_object(a) && devs != NULL && json_object_set(a, "devices", iterable(devs)) != 0) {
			goto nomem;
		}
	}
	return out;
nomem:
	json_decref(out);
	return NULL;
}

/* A claim as the end needs it: {node, gpus (held), class, count (asked), allocated, reserved: [names]}. */
static int claim_item(struct report *r, const json_t *claim, struct error *err)
{
	const json_t *meta = json_object_get(claim, "metadata"), *status = json_object_get(claim, "status");
	const json_t *requests = json_object_get(json_object_get(json_object_get(claim, "spec"), "devices"), "requests");
	const json_t *alloc = json_object_get(status, "allocation"), *res, *ref;
	const char *cls, *node;
	char key[KEY_MAX];
	long long count = 0, held = 0;
	json_t *rec, *reserved;
	size_t i;

	if ((cls = claim_class(r->cfg, requests, &count)) == NULL)
		return 0;
	json_array_foreach(iterable(json_object_get(json_object_get(alloc, "devices"), "results")), i, res)
		held += class_is_gpu(r->cfg, result_class(requests, report_str_at(res, "request")));
	node = allocation_node(alloc);
	if ((reserved = json_array()) == NULL)
		return nomem(err);
	json_array_foreach(iterable(json_object_get(status, "reservedFor")), i, ref)
		if (strcmp(report_str_at(ref, "resource"), "pods") == 0 &&
		    json_array_append_new(reserved, json_string(report_str_at(ref, "name"))) != 0) {
			json_decref(reserved);
			return nomem(err);
		}
	rec = json_pack("{s:s?, s:I, s:s, s:I, s:b, s:o}", "node", node, "gpus", (json_int_t)held, "class", cls,
			"count", (json_int_t)count, "allocated", alloc != NULL, "reserved", reserved);
	key_of(key, sizeof key, report_str_at(meta, "namespace"), report_str_at(meta, "name"));
	if (rec == NULL || json_object_set_new(r->dra.claims, key, rec) != 0)
		return nomem(err);
	return 0;
}

int report_dra_item(struct report *r, const json_t *root, struct error *err)
{
	const char *kind = json_string_value(json_object_get(root, "kind"));

	if ((r->dra.slices == NULL && (r->dra.slices = json_object()) == NULL) ||
	    (r->dra.claims == NULL && (r->dra.claims = json_object()) == NULL))
		return nomem(err);
	r->dra.items++;
	return strcmp(kind, "ResourceSlice") == 0 ? slice_item(r, root, err) : claim_item(r, root, err);
}

int report_dra_pending_pod(struct report *r, const json_t *pod, struct error *err)
{
	const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
	const json_t *statuses = json_object_get(json_object_get(pod, "status"), "resourceClaimStatuses"), *c, *s;
	json_t *names, *rec;
	size_t i, j;

	if (json_array_size(json_object_get(spec, "resourceClaims")) == 0)
		return 0;
	if (r->dra.pending == NULL && (r->dra.pending = json_array()) == NULL)
		return nomem(err);
	if (json_array_size(r->dra.pending) >= REPORT_FINDINGS_MAX)
		return 0;
	if ((names = json_array()) == NULL)
		return nomem(err);
	json_array_foreach(iterable(json_object_get(spec, "resourceClaims")), i, c) {
		const char *claim = json_string_value(json_object_get(c, "resourceClaimName"));

		json_array_foreach(iterable(statuses), j, s)
			if (claim == NULL && strcmp(report_str_at(s, "name"), report_str_at(c, "name")) == 0)
				claim = json_string_value(json_object_get(s, "resourceClaimName"));
		if (claim != NULL && json_array_append_new(names, json_string(claim)) != 0) {
			json_decref(names);
			return nomem(err);
		}
	}
	rec = json_pack("{s:s, s:s, s:o}", "ns", report_str_at(meta, "namespace"), "name",
			report_str_at(meta, "name"), "claims", names);
	if (rec == NULL || json_array_append_new(r->dra.pending, rec) != 0)
		return nomem(err);
	return 0;
}

/* Drops the CPU pods that a GPU claim is reserved for: they are GPU pods on their nodes. */
static void reclassify(struct report *r, const json_t *gpu_pods)
{
	size_t i, o = 0;
	char key[KEY_MAX];

	for (i = 0; i < r->cpu_pods.n; i++) {
		struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);

		key_of(key, sizeof key, c->ns, c->name);
		if (json_object_get(gpu_pods, key) == NULL) {
			if (o != i)
				*REPORT_AT(r->cpu_pods, struct report_cpu_pod, o) = *c;
			o++;
			continue;
		}
		r->nodes[c->node_index].cpu_pods--;
		r->nodes[c->node_index].gpu_pods++;
		r->cpu_pods.total--;
		report_cpu_pod_free(c);
	}
	r->cpu_pods.n = o;
}

/* A Pending pod (its {ns, name}) whose claim claim_name (its record) asks for a GPU class: its reason. */
static int pending_entry(struct report *r, const json_t *pod, const json_t *claim, const char *claim_name,
			 struct error *err)
{
	const char *cls = report_str_at(claim, "class"), *node = report_str_at(claim, "node");
	enum report_pending_reason reason;
	struct report_pending *p;
	char msg[768];

	if (json_is_true(json_object_get(claim, "allocated"))) {
		reason = REPORT_PENDING_OTHER;
		snprintf(msg, sizeof msg, "its claim %s is allocated%s%s: the pod waits for its binding", claim_name,
			 node[0] ? " on " : "", node);
	} else if (!class_served(r->cfg, cls)) {
		reason = REPORT_PENDING_CLASS_UNSERVED;
		snprintf(msg, sizeof msg, "its claim %s asks for DeviceClass %s, which no pool serves "
			 "(pools[].deviceClasses)", claim_name, cls);
	} else {
		reason = REPORT_PENDING_UNALLOCATED;
		snprintf(msg, sizeof msg, "its claim %s (DeviceClass %s) is not allocated: no node's "
			 "ResourceSlices offer a free device of it that the pod may use (is the DRA driver "
			 "running on the pool's nodes?)", claim_name, cls);
	}
	if (report_list_push(&r->pending, sizeof *p, (void **)&p, err) != 0)
		return -1;
	r->pending_by_reason[reason]++;
	if (p == NULL)
		return 0;  /* counted, not named */
	p->reason = reason;
	p->ns = strdup(report_str_at(pod, "ns"));
	p->name = strdup(report_str_at(pod, "name"));
	p->message = strdup(msg);
	p->gpus[0].resource = strdup(cls);
	p->gpus[0].count = json_integer_value(json_object_get(claim, "count"));
	p->n_gpus = 1;
	if (p->ns == NULL || p->name == NULL || p->message == NULL || p->gpus[0].resource == NULL)
		return nomem(err);
	return 0;
}

int report_dra_finish(struct report *r, struct error *err)
{
	const char *key;
	json_t *rec, *gpu_pods = json_object();
	size_t idx, i;
	char pkey[KEY_MAX];

	if (gpu_pods == NULL)
		return nomem(err);
	json_object_foreach(r->dra.slices, key, rec)
		if (report_node_find(r, key, &idx))
			r->nodes[idx].dra_devices = quantity_add(r->nodes[idx].dra_devices, json_integer_value(rec));
	json_object_foreach(r->dra.claims, key, rec) {
		const char *node = json_string_value(json_object_get(rec, "node"));
		long long held = json_integer_value(json_object_get(rec, "gpus"));
		const json_t *name;
		size_t slash = strcspn(key, "/");

		if (held == 0)
			continue;
		if (node != NULL && report_node_find(r, node, &idx))
			r->nodes[idx].dra_held = quantity_add(r->nodes[idx].dra_held, held);
		json_array_foreach(json_object_get(rec, "reserved"), i, name) {
			snprintf(pkey, sizeof pkey, "%.*s/%s", (int)slash, key, json_string_value(name));
			if (json_object_set_new(gpu_pods, pkey, json_true()) != 0) {
				json_decref(gpu_pods);
				return nomem(err);
			}
		}
	}
	reclassify(r, gpu_pods);
	json_decref(gpu_pods);
	return 0;
}

int report_dra_pending(struct report *r, struct error *err)
{
	const json_t *pod, *rec;
	char pkey[KEY_MAX];
	size_t i, j;

	json_array_foreach(r->dra.pending, i, pod) {
		const json_t *name;

		json_array_foreach(json_object_get(pod, "claims"), j, name) {
			key_of(pkey, sizeof pkey, report_str_at(pod, "ns"), json_string_value(name));
			if ((rec = json_object_get(r->dra.claims, pkey)) == NULL)
				continue;
			if (pending_entry(r, pod, rec, json_string_value(name), err) != 0)
				return -1;
			break;
		}
	}
	return 0;
}

void report_dra_free(struct report_dra *d)
{
	json_decref(d->slices);
	json_decref(d->claims);
	json_decref(d->pending);
	memset(d, 0, sizeof *d);
}
