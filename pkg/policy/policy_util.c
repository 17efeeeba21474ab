/*
 * policy_util: the helpers every part of the policy engine shares (typed
 * member access, glob and list matching, warnings and notes, label
 * selectors; counts saturate with base/quantity.h's quantity_add()). They sit below policy.c, policy_pod.c,
 * policy_pool.c and policy_target.c, so none of those calls back up into
 * the engine's top (policy.c), which only decides.
 */
#include "policy/policy_int.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/quantity.h"
#include "k8s/nodematch.h"
/* ==== Reading the pod: typed accessors that treat null as absent ==== */

/*
 * Each getter returns 0 and sets *out (NULL when the member is absent or
 * null), or -1 with ERROR_INPUT when the member has the wrong type. A pod from
 * kube-apiserver is always well typed; manifests and hostile clients are not.
 */
int policy_get_typed(const json_t *parent, const char *key, json_type type, const char *path,
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

const char *policy_str(const json_t *obj, const char *key, const char *dflt)
{
	const char *s = json_string_value(json_object_get(obj, key));
	return s ? s : dflt;
}

const char *policy_label_value(const json_t *labels, const char *key)
{
	const char *v = json_string_value(json_object_get(labels, key)), *alias;

	if (v == NULL && (alias = config_label_alias(key)) != NULL)
		v = json_string_value(json_object_get(labels, alias));
	return v;
}

int policy_gpu_label(const struct config *cfg, const char *key, const char *value)
{
	const char *alias = config_label_alias(key);
	size_t i, j;

	if (policy_list_has(&cfg->gpu_node_labels, key) ||
	    (alias != NULL && policy_list_has(&cfg->gpu_node_labels, alias)))
		return 1;
	for (i = 0; value != NULL && i < cfg->n_pools; i++)
		for (j = 0; j < cfg->pools[i].node_selector.n; j++)
			if (config_label_same(cfg->pools[i].node_selector.v[j].key, key) &&
			    strcmp(cfg->pools[i].node_selector.v[j].value, value) == 0)
				return 1;
	return 0;
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

int policy_match_any(const struct config_strings *globs, const char *s)
{
	size_t i;

	for (i = 0; i < globs->n; i++)
		if (policy_glob_match(globs->v[i], s))
			return 1;
	return 0;
}

int policy_list_has(const struct config_strings *l, const char *s)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i], s) == 0)
			return 1;
	return 0;
}

long long policy_max_ll(long long a, long long b)
{
	return a > b ? a : b;
}

/* Appends printf text to buf (size cap) without overrunning; truncates quietly. */
void policy_appendf(char *buf, size_t cap, const char *fmt, ...)
{
	size_t used = strlen(buf);
	va_list ap;

	if (used + 1 >= cap)
		return;
	va_start(ap, fmt);
	vsnprintf(buf + used, cap - used, fmt, ap);
	va_end(ap);
}

/*
 * Adds a warning (note: one that only says what the policy did, see
 * policy_result.notes), cut to res->warning_max (kube-apiserver's 256 bytes
 * online) on a character boundary.
 */
static int add_warning(struct policy_result *res, struct error *err, int note, const char *fmt, va_list ap)
	__attribute__((format(printf, 4, 0)));

static int add_warning(struct policy_result *res, struct error *err, int note, const char *fmt, va_list ap)
{
	char buf[POLICY_WARNING_FULL_MAX + 1];
	size_t cap = res->warning_max && res->warning_max < POLICY_WARNING_FULL_MAX ? res->warning_max
		     : POLICY_WARNING_FULL_MAX;
	size_t i = json_array_size(res->warnings);

	vsnprintf(buf, cap + 1, fmt, ap);
	error_trim_utf8(buf);
	if (json_array_append_new(res->warnings, json_string(buf)) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if (note && i < POLICY_NOTES_BITS)
		res->notes |= 1ul << i;
	return 0;
}

int policy_warn(struct policy_result *res, struct error *err, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = add_warning(res, err, 0, fmt, ap);
	va_end(ap);
	return rc;
}

int policy_note(struct policy_result *res, struct error *err, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = add_warning(res, err, 1, fmt, ap);
	va_end(ap);
	return rc;
}

int policy_describe_taint(const struct config *cfg, char *buf, size_t cap)
{
	return snprintf(buf, cap, "%s%s%s:%s", cfg->taint_key, cfg->taint_value[0] ? "=" : "",
			cfg->taint_value, cfg->taint_effect);
}


int policy_selector_match(const struct config_label_selector *sel, const json_t *labels)
{
	size_t i;

	for (i = 0; i < sel->match_labels.n; i++) {
		const char *v = json_string_value(json_object_get(labels, sel->match_labels.v[i].key));

		if (v == NULL || strcmp(v, sel->match_labels.v[i].value) != 0)
			return 0;
	}
	for (i = 0; i < sel->n_match_expressions; i++) {
		const struct config_requirement *r = &sel->match_expressions[i];
		const char *have = json_string_value(json_object_get(labels, r->key));

		if (!nodematch_set_op(nodematch_op_parse(r->op), have, have != NULL && policy_list_has(&r->values, have)))
			return 0;
	}
	return 1;
}

/* ==== The pools' label keys (render/matchcond.c, render/admpolicy.c) ==== */

static int by_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct policy_pool_key *)a)->key, ((const struct policy_pool_key *)b)->key);
}

void policy_pool_keys_free(struct policy_pool_key *keys, size_t n)
{
	size_t i;

	for (i = 0; keys != NULL && i < n; i++)
		free(keys[i].values.v);
	free(keys);
}

int policy_pool_keys(const struct config *cfg, const char *const *skip, size_t n_skip,
		     struct policy_pool_key **keys, size_t *n)
{
	struct policy_pool_key *k;
	size_t i, j, m, s, total = 0, nk = 0;

	*keys = NULL;
	*n = 0;
	/* Each selector entry adds at most two keys (its own and its alias) and one value to each. */
	for (i = 0; i < cfg->n_pools; i++)
		total += 2 * cfg->pools[i].node_selector.n;
	if ((k = calloc(total ? total : 1, sizeof *k)) == NULL)
		return -1;
	for (i = 0; i < cfg->n_pools; i++)
		for (j = 0; j < 2 * cfg->pools[i].node_selector.n; j++) {
			const struct config_kv *kv = &cfg->pools[i].node_selector.v[j / 2];
			const char *key = j % 2 ? config_label_alias(kv->key) : kv->key;

			if (key == NULL)
				continue;
			for (s = 0; s < n_skip && strcmp(skip[s], key) != 0; s++)
				;
			if (s < n_skip)
				continue;
			for (m = 0; m < nk && strcmp(k[m].key, key) != 0; m++)
				;
			if (m == nk) {
				k[m].key = key;
				if ((k[m].values.v = calloc(total, sizeof *k[m].values.v)) == NULL) {
					policy_pool_keys_free(k, nk);
					return -1;
				}
				nk++;
			}
			k[m].values.v[k[m].values.n++] = kv->value;
		}
	qsort(k, nk, sizeof *k, by_key);
	for (m = 0; m < nk; m++) {
		size_t o = 0;

		qsort(k[m].values.v, k[m].values.n, sizeof *k[m].values.v, by_str);
		for (i = 0; i < k[m].values.n; i++)
			if (o == 0 || strcmp(k[m].values.v[o - 1], k[m].values.v[i]) != 0)
				k[m].values.v[o++] = k[m].values.v[i];
		k[m].values.n = o;
	}
	*keys = k;
	*n = nk;
	return 0;
}
