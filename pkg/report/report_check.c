/*
 * report_check: the type of every field the report reads, checked before the
 * model reads it. Apart from the model (report.c) because it is the one
 * place that decides what a malformed snapshot is, field by field, and the
 * model may then read without asking again.
 */
#include "report/report_int.h"

#include <stdint.h>
#include <stdio.h>

#include "base/iterable.h"
#include "base/quantity.h"

/* ==== What is read must have its type ==== */

/*
 * The report reads stored objects, which the API server keeps well typed; a
 * wrong type in a field it reads (a hand-edited snapshot, a broken tool) is
 * an input error naming the field, never read as if it were absent: a
 * nodeName that is an array would turn a running GPU pod into a Pending one.
 * null counts as absent, as the API server's decoder takes it.
 */
enum want { WANT_OBJECT, WANT_ARRAY, WANT_STRING, WANT_BOOL };

/* *out = parent[key] (NULL when absent or null); -1 with msg when it has another type. */
static int typed(const json_t *parent, const char *key, enum want w, const char *path, const json_t **out,
		 char *msg, size_t cap)
{
	static const char *const names[] = { "an object", "an array", "a string", "true or false" };
	const json_t *v = json_object_get(parent, key);
	int ok;

	*out = NULL;
	if (v == NULL || json_is_null(v))
		return 0;
	ok = w == WANT_OBJECT ? json_is_object(v) : w == WANT_ARRAY ? json_is_array(v) :
	     w == WANT_STRING ? json_is_string(v) : json_is_boolean(v);
	if (!ok) {
		snprintf(msg, cap, "%s%s%s must be %s", path, path[0] ? "." : "", key, names[w]);
		return -1;
	}
	*out = v;
	return 0;
}

/* The string members keys[] of obj (at path) have their type. */
static int strings(const json_t *obj, const char *const *keys, const char *path, char *msg, size_t cap)
{
	const json_t *v;

	for (; *keys != NULL; keys++)
		if (typed(obj, *keys, WANT_STRING, path, &v, msg, cap) != 0)
			return -1;
	return 0;
}

/* Each element of arr (at path) is an object whose keys[] are strings. */
static int objects_of_strings(const json_t *arr, const char *const *keys, const char *path, char *msg, size_t cap)
{
	const json_t *e;
	char at[256];
	size_t i;

	json_array_foreach(iterable(arr), i, e) {
		snprintf(at, sizeof at, "%s[%zu]", path, i);
		if (!json_is_object(e)) {
			snprintf(msg, cap, "%s must be an object", at);
			return -1;
		}
		if (strings(e, keys, at, msg, cap) != 0)
			return -1;
	}
	return 0;
}

/*
 * A name member (metadata.name, a container's name) that is there is a
 * string: null is no name at all, which the API server never stores, not
 * an absent optional field.
 */
static int name_string(const json_t *obj, const char *path, char *msg, size_t cap)
{
	const json_t *v = json_object_get(obj, "name");

	if (v != NULL && !json_is_string(v)) {
		snprintf(msg, cap, "%s%sname must be a string", path, path[0] ? "." : "");
		return -1;
	}
	return 0;
}

/*
 * The containers of list (at path) have a string name and, init containers
 * only, a string restartPolicy (which makes a sidecar, whose GPUs count
 * beside the app containers').
 */
static int containers_valid(const json_t *list, const char *path, int init, char *msg, size_t cap)
{
	static const char *const init_keys[] = { "restartPolicy", NULL }, *const no_keys[] = { NULL };
	const json_t *c;
	char at[64];
	size_t i;

	if (objects_of_strings(list, init ? init_keys : no_keys, path, msg, cap) != 0)
		return -1;
	json_array_foreach(iterable(list), i, c) {
		snprintf(at, sizeof at, "%s[%zu]", path, i);
		if (name_string(c, at, msg, cap) != 0)
			return -1;
	}
	return 0;
}

/*
 * At most one owner reference with controller: true, as the API server
 * validates it (k8s.io/apimachinery pkg/api/validation/objectmeta.go,
 * validateOwnerReferences: "Only one reference can have Controller set to
 * true"); the one is the pod's controller (owner_of()).
 */
static int one_controller(const json_t *refs, char *msg, size_t cap)
{
	const json_t *ref;
	size_t i, first = SIZE_MAX;

	json_array_foreach(iterable(refs), i, ref) {
		if (!json_is_true(json_object_get(ref, "controller")))
			continue;
		if (first != SIZE_MAX) {
			snprintf(msg, cap, "metadata.ownerReferences[%zu].controller: only one reference can have "
				 "controller: true (metadata.ownerReferences[%zu] has it)", i, first);
			return -1;
		}
		first = i;
	}
	return 0;
}

/* A map of strings (labels, nodeSelector). */
static int string_map(const json_t *map, const char *path, char *msg, size_t cap)
{
	const char *key;
	const json_t *v;

	json_object_foreach(iterable(map), key, v)
		if (!json_is_string(v)) {
			snprintf(msg, cap, "%s.%s must be a string", path, key);
			return -1;
		}
	return 0;
}

/* A list of strings (a requirement's values). */
static int string_list(const json_t *arr, const char *path, char *msg, size_t cap)
{
	const json_t *x;
	size_t i;

	json_array_foreach(iterable(arr), i, x)
		if (!json_is_string(x)) {
			snprintf(msg, cap, "%s[%zu] must be a string", path, i);
			return -1;
		}
	return 0;
}

/* The required node affinity's terms, as the scheduler reads them (nodematch). */
static int affinity_valid(const json_t *spec, char *msg, size_t cap)
{
	static const char *const req_keys[] = { "key", "operator", NULL };
	const json_t *aff, *na, *req, *terms, *term, *list, *e, *values;
	char at[256], eat[300], vat[310];
	size_t i, j, k;

	if (typed(spec, "affinity", WANT_OBJECT, "spec", &aff, msg, cap) != 0 ||
	    typed(aff, "nodeAffinity", WANT_OBJECT, "spec.affinity", &na, msg, cap) != 0 ||
	    typed(na, "requiredDuringSchedulingIgnoredDuringExecution", WANT_OBJECT, "spec.affinity.nodeAffinity",
		  &req, msg, cap) != 0 ||
	    typed(req, "nodeSelectorTerms", WANT_ARRAY,
		  "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution", &terms, msg, cap) != 0)
		return -1;
	json_array_foreach(iterable(terms), i, term) {
		snprintf(at, sizeof at, "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution."
			 "nodeSelectorTerms[%zu]", i);
		if (!json_is_object(term)) {
			snprintf(msg, cap, "%s must be an object", at);
			return -1;
		}
		for (k = 0; k < 2; k++) {
			const char *which = k == 0 ? "matchExpressions" : "matchFields";

			if (typed(term, which, WANT_ARRAY, at, &list, msg, cap) != 0)
				return -1;
			json_array_foreach(iterable(list), j, e) {
				snprintf(eat, sizeof eat, "%s.%s[%zu]", at, which, j);
				if (!json_is_object(e)) {
					snprintf(msg, cap, "%s must be an object", eat);
					return -1;
				}
				snprintf(vat, sizeof vat, "%s.values", eat);
				if (strings(e, req_keys, eat, msg, cap) != 0 ||
				    typed(e, "values", WANT_ARRAY, eat, &values, msg, cap) != 0 ||
				    string_list(values, vat, msg, cap) != 0)
					return -1;
			}
		}
	}
	return 0;
}

/* Every field of a Pod the report reads has its type (the policy checks its own on top). */
int report_pod_valid(const json_t *pod, char *msg, size_t cap)
{
	static const char *const meta_keys[] = { "name", "generateName", "namespace", NULL };
	static const char *const owner_keys[] = { "apiVersion", "kind", "name", NULL };
	static const char *const toleration_keys[] = { "key", "operator", "value", "effect", NULL };
	static const char *const gate_keys[] = { "name", NULL };
	const json_t *meta, *spec, *status, *labels, *refs, *ref, *v;
	char at[64];
	size_t i;

	if (typed(pod, "metadata", WANT_OBJECT, "", &meta, msg, cap) != 0 ||
	    typed(pod, "spec", WANT_OBJECT, "", &spec, msg, cap) != 0 ||
	    typed(pod, "status", WANT_OBJECT, "", &status, msg, cap) != 0 ||
	    typed(status, "phase", WANT_STRING, "status", &v, msg, cap) != 0 ||
	    strings(meta, meta_keys, "metadata", msg, cap) != 0 ||
	    typed(meta, "labels", WANT_OBJECT, "metadata", &labels, msg, cap) != 0 ||
	    string_map(labels, "metadata.labels", msg, cap) != 0 ||
	    typed(meta, "ownerReferences", WANT_ARRAY, "metadata", &refs, msg, cap) != 0 ||
	    objects_of_strings(refs, owner_keys, "metadata.ownerReferences", msg, cap) != 0)
		return -1;
	json_array_foreach(iterable(refs), i, ref) {
		snprintf(at, sizeof at, "metadata.ownerReferences[%zu]", i);
		if (typed(ref, "controller", WANT_BOOL, at, &v, msg, cap) != 0)
			return -1;
	}
	if (name_string(meta, "metadata", msg, cap) != 0 || one_controller(refs, msg, cap) != 0 ||
	    typed(spec, "containers", WANT_ARRAY, "spec", &v, msg, cap) != 0 ||
	    containers_valid(v, "spec.containers", 0, msg, cap) != 0 ||
	    typed(spec, "initContainers", WANT_ARRAY, "spec", &v, msg, cap) != 0 ||
	    containers_valid(v, "spec.initContainers", 1, msg, cap) != 0)
		return -1;
	if (typed(spec, "nodeName", WANT_STRING, "spec", &v, msg, cap) != 0 ||
	    typed(spec, "nodeSelector", WANT_OBJECT, "spec", &v, msg, cap) != 0 ||
	    string_map(v, "spec.nodeSelector", msg, cap) != 0 ||
	    typed(spec, "tolerations", WANT_ARRAY, "spec", &v, msg, cap) != 0 ||
	    objects_of_strings(v, toleration_keys, "spec.tolerations", msg, cap) != 0 ||
	    typed(spec, "schedulingGates", WANT_ARRAY, "spec", &v, msg, cap) != 0 ||
	    objects_of_strings(v, gate_keys, "spec.schedulingGates", msg, cap) != 0)
		return -1;
	return affinity_valid(spec, msg, cap);
}

/* Every field of a Node the report reads has its type; allocatable is read as counts below. */
int report_node_valid(const json_t *node, char *msg, size_t cap)
{
	static const char *const meta_keys[] = { "name", NULL };
	static const char *const taint_keys[] = { "key", "value", "effect", NULL };
	const json_t *meta, *spec, *status, *v;

	if (typed(node, "metadata", WANT_OBJECT, "", &meta, msg, cap) != 0 ||
	    typed(node, "spec", WANT_OBJECT, "", &spec, msg, cap) != 0 ||
	    typed(node, "status", WANT_OBJECT, "", &status, msg, cap) != 0 ||
	    strings(meta, meta_keys, "metadata", msg, cap) != 0 || name_string(meta, "metadata", msg, cap) != 0 ||
	    typed(meta, "labels", WANT_OBJECT, "metadata", &v, msg, cap) != 0 ||
	    string_map(v, "metadata.labels", msg, cap) != 0 ||
	    typed(spec, "taints", WANT_ARRAY, "spec", &v, msg, cap) != 0 ||
	    objects_of_strings(v, taint_keys, "spec.taints", msg, cap) != 0 ||
	    typed(status, "allocatable", WANT_OBJECT, "status", &v, msg, cap) != 0)
		return -1;
	return 0;
}

/*
 * A GPU count as pods must give one: a whole, non-negative quantity below
 * QUANTITY_MAX (10^18, where quantities saturate: no count means that). 0,
 * or -1 with why.
 */
int report_gpu_count(const json_t *v, long long *out, const char **why, struct error *qerr)
{
	struct quantity q;

	*why = NULL;
	if (quantity_from_json(v, &q, qerr) != 0)
		*why = qerr->msg;
	else if (q.negative)
		*why = "it is negative";
	else if (!q.whole)
		*why = "a GPU count must be a whole number";
	else if (q.value >= QUANTITY_MAX)
		*why = "it is 10^18 or more";
	*out = *why == NULL ? q.value : 0;
	return *why == NULL ? 0 : -1;
}
