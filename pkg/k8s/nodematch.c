#include "k8s/nodematch.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/iterable.h"

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

enum nodematch_op nodematch_op_parse(const char *op)
{
	static const struct { const char *name; enum nodematch_op op; } ops[] = {
		{ "In", NODEMATCH_IN }, { "NotIn", NODEMATCH_NOT_IN }, { "Exists", NODEMATCH_EXISTS },
		{ "DoesNotExist", NODEMATCH_DOES_NOT_EXIST }, { "Gt", NODEMATCH_GT }, { "Lt", NODEMATCH_LT },
	};
	size_t i;

	for (i = 0; op != NULL && i < sizeof ops / sizeof ops[0]; i++)
		if (strcmp(op, ops[i].name) == 0)
			return ops[i].op;
	return NODEMATCH_OP_INVALID;
}

/* The value count each operator requires (labels.NewRequirement); -1 for "one or more". */
static int operator_values(enum nodematch_op op)
{
	switch (op) {
	case NODEMATCH_IN: case NODEMATCH_NOT_IN: return -1;
	case NODEMATCH_EXISTS: case NODEMATCH_DOES_NOT_EXIST: return 0;
	case NODEMATCH_GT: case NODEMATCH_LT: return 1;
	case NODEMATCH_OP_INVALID: break;
	}
	return -2;
}

int nodematch_set_op(enum nodematch_op op, const char *have, int listed)
{
	switch (op) {
	case NODEMATCH_IN:             return have != NULL && listed;
	case NODEMATCH_NOT_IN:         return have == NULL || !listed;
	case NODEMATCH_EXISTS:         return have != NULL;
	case NODEMATCH_DOES_NOT_EXIST: return have == NULL;
	default:                       return 0;
	}
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

/*
 * Is req a requirement labels.NewRequirement accepts: an object with a key,
 * a known operator, string values in the count it needs, and for Gt and Lt
 * a value that parses? Fills *key, *op, *values (borrowed).
 */
static int requirement_valid(const json_t *req, const char **key, enum nodematch_op *op, const json_t **values)
{
	const json_t *x;
	long long bound;
	size_t i, n;
	int want;

	*key = member(req, "key");
	*op = nodematch_op_parse(member(req, "operator"));
	*values = json_object_get(req, "values");
	if (!json_is_object(req) || *key == NULL || (*key)[0] == '\0')
		return 0;
	if (*values != NULL && !json_is_null(*values) && !json_is_array(*values))
		return 0;
	n = json_array_size(*values);
	json_array_foreach(iterable(*values), i, x)
		if (!json_is_string(x))
			return 0;
	want = operator_values(*op);
	if (want == -2 || (want == -1 && n == 0) || (want >= 0 && n != (size_t)want))
		return 0;
	/* Gt, Lt: the requirement's own value must parse, whatever the node has. */
	return want != 1 || parse_int64(json_string_value(json_array_get(*values, 0)), &bound) == 0;
}

int nodematch_requirement(const json_t *req, const json_t *labels)
{
	const json_t *values;
	const char *key, *have;
	enum nodematch_op op;
	long long a, b;

	if (!requirement_valid(req, &key, &op, &values))
		return 0;
	have = json_is_object(labels) ? json_string_value(json_object_get(labels, key)) : NULL;
	if (op != NODEMATCH_GT && op != NODEMATCH_LT)
		return nodematch_set_op(op, have, have != NULL && value_listed(values, have));
	/* Gt, Lt: the node's value must parse too. */
	if (have == NULL || parse_int64(have, &a) != 0)
		return 0;
	parse_int64(json_string_value(json_array_get(values, 0)), &b);
	return op == NODEMATCH_GT ? a > b : a < b;
}

/* matchFields: metadata.name only, In or NotIn with exactly one value (*name, borrowed). */
static int field_valid(const json_t *req, enum nodematch_op *op, const char **name)
{
	const char *key = member(req, "key");
	const json_t *values = json_object_get(req, "values");

	*op = nodematch_op_parse(member(req, "operator"));
	*name = json_string_value(json_array_get(values, 0));
	return json_is_object(req) && key != NULL && strcmp(key, "metadata.name") == 0 &&
	       (*op == NODEMATCH_IN || *op == NODEMATCH_NOT_IN) && json_array_size(values) == 1 &&
	       *name != NULL;
}

static int field_requirement(const json_t *req, const char *node_name)
{
	enum nodematch_op op;
	const char *v;

	if (!field_valid(req, &op, &v))
		return 0;
	if (op == NODEMATCH_IN)
		return node_name != NULL && strcmp(node_name, v) == 0;
	return node_name == NULL || strcmp(node_name, v) != 0;
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

int nodematch_covers(const json_t *have, const char *key, const char *op, const char *value,
		     const char *effect)
{
	static const char *const effects[] = { "NoSchedule", "PreferNoSchedule", "NoExecute" };
	size_t i;

	/*
	 * Probed with the taints want tolerates: its effect, or all three when
	 * it names none; for Exists, two values no one Equal toleration can
	 * both match, so only an Exists (or wildcard) toleration passes.
	 */
	for (i = 0; i < sizeof effects / sizeof effects[0]; i++) {
		if (effect[0] != '\0' && strcmp(effect, effects[i]) != 0)
			continue;
		if (strcmp(op, "Exists") == 0) {
			if (!nodematch_tolerates(have, key, "", effects[i]) ||
			    !nodematch_tolerates(have, key, "-", effects[i]))
				return 0;
		} else if (!nodematch_tolerates(have, key, value, effects[i])) {
			return 0;
		}
	}
	return 1;
}

/* ==== Nodes known in part: could one of them be selected? ==== */

static enum nodematch_tri tri_and(enum nodematch_tri a, enum nodematch_tri b)
{
	if (a == NODEMATCH_NO || b == NODEMATCH_NO)
		return NODEMATCH_NO;
	return a == NODEMATCH_MAYBE || b == NODEMATCH_MAYBE ? NODEMATCH_MAYBE : NODEMATCH_YES;
}

static enum nodematch_tri tri_or(enum nodematch_tri a, enum nodematch_tri b)
{
	if (a == NODEMATCH_YES || b == NODEMATCH_YES)
		return NODEMATCH_YES;
	return a == NODEMATCH_MAYBE || b == NODEMATCH_MAYBE ? NODEMATCH_MAYBE : NODEMATCH_NO;
}

/* A requirement on a known key is decided by the upstream rule; on another key it may hold. */
static enum nodematch_tri requirement_could(const json_t *req, const json_t *known)
{
	const json_t *values;
	const char *key;
	enum nodematch_op op;

	if (!requirement_valid(req, &key, &op, &values))
		return NODEMATCH_NO;  /* holds nowhere */
	if (json_object_get(known, key) == NULL)
		return NODEMATCH_MAYBE;
	return nodematch_requirement(req, known) ? NODEMATCH_YES : NODEMATCH_NO;
}

static enum nodematch_tri term_could(const json_t *term, const json_t *known)
{
	const json_t *exprs, *fields, *r;
	enum nodematch_tri t = NODEMATCH_YES;
	size_t i;

	if (!json_is_object(term))
		return NODEMATCH_NO;
	exprs = json_object_get(term, "matchExpressions");
	fields = json_object_get(term, "matchFields");
	if ((exprs != NULL && !json_is_null(exprs) && !json_is_array(exprs)) ||
	    (fields != NULL && !json_is_null(fields) && !json_is_array(fields)) ||
	    (json_array_size(exprs) == 0 && json_array_size(fields) == 0))
		return NODEMATCH_NO;
	json_array_foreach(iterable(exprs), i, r)
		t = tri_and(t, requirement_could(r, known));
	/* Node names are not known: a valid field requirement may hold, an invalid one nowhere. */
	json_array_foreach(iterable(fields), i, r) {
		enum nodematch_op op;
		const char *name;

		t = tri_and(t, field_valid(r, &op, &name) ? NODEMATCH_MAYBE : NODEMATCH_NO);
	}
	return t;
}

enum nodematch_tri nodematch_pod_could_select(const json_t *spec, const json_t *known)
{
	const json_t *sel = json_object_get(spec, "nodeSelector"), *v, *required, *terms, *t;
	enum nodematch_tri all = NODEMATCH_YES, any = NODEMATCH_NO;
	const char *key;
	size_t i;

	if (sel != NULL && !json_is_null(sel)) {
		if (!json_is_object(sel))
			return NODEMATCH_NO;
		json_object_foreach(iterable(sel), key, v) {
			const char *have = json_string_value(json_object_get(known, key));

			if (!json_is_string(v))
				return NODEMATCH_NO;
			if (json_object_get(known, key) == NULL)
				all = tri_and(all, NODEMATCH_MAYBE);
			else if (have == NULL || strcmp(have, json_string_value(v)) != 0)
				return NODEMATCH_NO;
		}
	}
	required = json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
				   "requiredDuringSchedulingIgnoredDuringExecution");
	if (required == NULL || json_is_null(required))
		return all;
	terms = json_object_get(required, "nodeSelectorTerms");
	json_array_foreach(iterable(terms), i, t)
		any = tri_or(any, term_could(t, known));
	return tri_and(all, any);
}
