#include "nodematch.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* jansson's iterators take a non-const json_t * though they only read. */
static json_t *iterable(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

/*
 * A string member; "" when absent or null; NULL when it has another type,
 * which the API server never stores and which therefore matches nothing.
 */
static const char *member(const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	if (v == NULL || json_is_null(v))
		return "";
	return json_string_value(v);
}

int nodematch_tolerates(const json_t *t, const char *key, const char *value, const char *effect)
{
	const char *tkey, *op, *teffect, *tvalue;

	if (!json_is_object(t))
		return 0;
	tkey = member(t, "key");
	op = member(t, "operator");
	teffect = member(t, "effect");
	tvalue = member(t, "value");
	if (tkey == NULL || op == NULL || teffect == NULL || tvalue == NULL)
		return 0;
	if (teffect[0] != '\0' && strcmp(teffect, effect) != 0)
		return 0;
	if (tkey[0] != '\0' && strcmp(tkey, key) != 0)
		return 0;
	/* An empty operator is Equal (ToleratesTaint's own switch). */
	if (op[0] == '\0' || strcmp(op, "Equal") == 0)
		return strcmp(tvalue, value) == 0;
	return strcmp(op, "Exists") == 0;
}

const json_t *nodematch_untolerated(const json_t *tolerations, const json_t *taints)
{
	const json_t *taint, *t;
	size_t i, j;

	json_array_foreach(iterable(taints), i, taint) {
		const char *key = member(taint, "key"), *value = member(taint, "value");
		const char *effect = member(taint, "effect");
		int ok = 0;

		if (key == NULL || value == NULL || effect == NULL)
			continue;  /* not a taint the API server would store */
		if (strcmp(effect, "NoSchedule") != 0 && strcmp(effect, "NoExecute") != 0)
			continue;  /* PreferNoSchedule only scores */
		json_array_foreach(iterable(tolerations), j, t)
			if (nodematch_tolerates(t, key, value, effect)) {
				ok = 1;
				break;
			}
		if (!ok)
			return taint;
	}
	return NULL;
}

/* strconv.ParseInt(s, 10, 64): optional sign, digits only, in range. */
static int parse_int64(const char *s, long long *out)
{
	char *end;

	if (s == NULL || s[0] == '\0' || s[0] == ' ' || (s[0] == '+' && s[1] == '\0'))
		return -1;
	errno = 0;
	*out = strtoll(s, &end, 10);
	if (errno != 0 || *end != '\0' || (s[0] != '-' && s[0] != '+' && (s[0] < '0' || s[0] > '9')))
		return -1;
	return 0;
}

/* The value count each operator requires (labels.NewRequirement); -1 for "one or more". */
static int operator_values(const char *op)
{
	if (strcmp(op, "In") == 0 || strcmp(op, "NotIn") == 0)
		return -1;
	if (strcmp(op, "Exists") == 0 || strcmp(op, "DoesNotExist") == 0)
		return 0;
	if (strcmp(op, "Gt") == 0 || strcmp(op, "Lt") == 0)
		return 1;
	return -2;  /* unknown operator */
}

static int value_listed(const json_t *values, const char *v)
{
	const json_t *x;
	size_t i;

	json_array_foreach(iterable(values), i, x)
		if (json_is_string(x) && strcmp(json_string_value(x), v) == 0)
			return 1;
	return 0;
}

int nodematch_requirement(const json_t *req, const json_t *labels)
{
	const char *key = member(req, "key"), *op = member(req, "operator"), *have;
	const json_t *values = json_object_get(req, "values"), *x;
	size_t i, n;
	int want;
	long long a, b;

	if (!json_is_object(req) || key == NULL || op == NULL || key[0] == '\0')
		return 0;
	if (values != NULL && !json_is_null(values) && !json_is_array(values))
		return 0;
	n = json_array_size(values);
	json_array_foreach(iterable(values), i, x)
		if (!json_is_string(x))
			return 0;
	want = operator_values(op);
	if (want == -2 || (want == -1 && n == 0) || (want >= 0 && n != (size_t)want))
		return 0;
	have = json_is_object(labels) ? json_string_value(json_object_get(labels, key)) : NULL;
	if (strcmp(op, "In") == 0)
		return have != NULL && value_listed(values, have);
	if (strcmp(op, "NotIn") == 0)
		return have == NULL || !value_listed(values, have);
	if (strcmp(op, "Exists") == 0)
		return have != NULL;
	if (strcmp(op, "DoesNotExist") == 0)
		return have == NULL;
	/* Gt, Lt: the requirement's value must parse, and so must the node's. */
	if (parse_int64(json_string_value(json_array_get(values, 0)), &b) != 0)
		return 0;
	if (have == NULL || parse_int64(have, &a) != 0)
		return 0;
	return strcmp(op, "Gt") == 0 ? a > b : a < b;
}

/* matchFields: metadata.name only, In or NotIn with exactly one value. */
static int field_requirement(const json_t *req, const char *node_name)
{
	const char *key = member(req, "key"), *op = member(req, "operator");
	const json_t *values = json_object_get(req, "values");
	const char *v;

	if (!json_is_object(req) || key == NULL || op == NULL || strcmp(key, "metadata.name") != 0)
		return 0;
	if (!json_is_array(values) || json_array_size(values) != 1)
		return 0;
	v = json_string_value(json_array_get(values, 0));
	if (v == NULL)
		return 0;
	if (strcmp(op, "In") == 0)
		return node_name != NULL && strcmp(node_name, v) == 0;
	if (strcmp(op, "NotIn") == 0)
		return node_name == NULL || strcmp(node_name, v) != 0;
	return 0;
}

int nodematch_term(const json_t *term, const json_t *labels, const char *node_name)
{
	const json_t *exprs, *fields, *r;
	size_t i;
	int ok = 1;

	if (!json_is_object(term))
		return 0;
	exprs = json_object_get(term, "matchExpressions");
	fields = json_object_get(term, "matchFields");
	if ((exprs != NULL && !json_is_null(exprs) && !json_is_array(exprs)) ||
	    (fields != NULL && !json_is_null(fields) && !json_is_array(fields)))
		return 0;
	if (json_array_size(exprs) == 0 && json_array_size(fields) == 0)
		return 0;  /* an empty term selects no node */
	/*
	 * Every requirement is looked at even after one fails: upstream, an
	 * invalid requirement fails the whole term at parse time, whatever
	 * the others say.
	 */
	json_array_foreach(iterable(exprs), i, r)
		if (!nodematch_requirement(r, labels))
			ok = 0;
	json_array_foreach(iterable(fields), i, r)
		if (!field_requirement(r, node_name))
			ok = 0;
	return ok;
}

int nodematch_pod_selects(const json_t *spec, const json_t *labels, const char *node_name)
{
	const json_t *sel = json_object_get(spec, "nodeSelector"), *v, *required, *terms, *t;
	const char *key;
	size_t i;

	if (sel != NULL && !json_is_null(sel)) {
		if (!json_is_object(sel))
			return 0;
		json_object_foreach(iterable(sel), key, v) {
			const char *have = json_is_object(labels) ? json_string_value(json_object_get(labels, key)) : NULL;

			if (!json_is_string(v) || have == NULL || strcmp(have, json_string_value(v)) != 0)
				return 0;
		}
	}
	required = json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
				   "requiredDuringSchedulingIgnoredDuringExecution");
	if (required == NULL || json_is_null(required))
		return 1;
	/* A required node selector with no matching term (or none at all) selects nothing. */
	terms = json_object_get(required, "nodeSelectorTerms");
	json_array_foreach(iterable(terms), i, t)
		if (nodematch_term(t, labels, node_name))
			return 1;
	return 0;
}
