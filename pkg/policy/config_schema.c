/*
 * config_schema: the policy file's fields, each read, typed and bounded where
 * it stands, so that every error names its own line and column. Apart from
 * loading (config.c) so the schema reads as one list of fields, and from the
 * rules over several fields (config_check.c), which only make sense once the
 * whole file is overlaid on the default.
 */
#include "policy/config_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "k8s/names.h"
#include "policy/policy.h"

_Static_assert(LIMIT_POOL_SELECTOR_MAX <= YML_LIST_MAX, "a pool's nodeSelector is refused at its own limit");
#define CONFIG_PRICE_MAX 1000000.0  /* pricePerNodeHour: far above any VM's hourly price */
#define CONFIG_GPUS_PER_NODE_MAX 1024
#define CONFIG_GPUS_PER_POD_MAX 1000000  /* maxGPUsPerPod: far above any node, so any pod */
#define CONFIG_POOL_TOLERATIONS_MAX 32  /* per pool: each is checked against every toleration
                                           a pod has and every one added before it */

static void strings_free(struct config_strings *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static void labels_free(struct config_labels *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].value);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/*
 * Replaces *out with the list of strings in n (null means empty). bad, when
 * not NULL, says why an entry is refused ("must be at most 63 characters"),
 * or NULL; each refusal is an error at its entry: "\"ENTRY\" <what><why>".
 */
static void read_strings_checked(struct yml_reader *ld, yaml_node_t *n, const char *path,
				 struct config_strings *out, const char *(*bad)(const char *), const char *what)
{
	struct config_strings l = { NULL, 0 };
	char sub[128];
	size_t i, len;
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of strings", sizeof *l.v, &items, &len) != 0)
		return;
	l.v = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		l.v[l.n] = yml_read_string(ld, item, sub, 0);
		if (l.v[l.n] != NULL && bad != NULL && (why = bad(l.v[l.n])) != NULL) {
			yml_fail(ld, item, sub, "\"%s\" %s%s", l.v[l.n], what, why);
			free(l.v[l.n]);
			l.v[l.n] = NULL;
		}
		if (l.v[l.n] != NULL)
			l.n++;
	}
	strings_free(out);
	*out = l;
}

static void read_strings(struct yml_reader *ld, yaml_node_t *n, const char *path,
			 struct config_strings *out)
{
	read_strings_checked(ld, n, path, out, NULL, NULL);
}

/* Replaces *out with the string->string map in n. */
static void read_labels(struct yml_reader *ld, yaml_node_t *n, const char *path,
			struct config_labels *out, int allow_empty_values)
{
	struct config_labels l = { NULL, 0 };
	char sub[400];
	size_t i, len;

	if (yml_is_null(n))
		goto replace;
	if (n->type != YAML_MAPPING_NODE) {
		yml_fail(ld, n, path, "must be a map of strings");
		return;
	}
	len = yml_map_len(n);
	if (len > YML_LIST_MAX) {
		yml_fail(ld, n, path, "more than %d entries", YML_LIST_MAX);
		return;
	}
	l.v = calloc(len ? len : 1, sizeof *l.v);
	if (l.v == NULL) {
		yml_fail_nomem(ld);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *k = yml_node_at(ld, n->data.mapping.pairs.start[i].key);
		yaml_node_t *v = yml_node_at(ld, n->data.mapping.pairs.start[i].value);
		char *ks, *vs;

		if (yml_check_duplicate_key(ld, n, i, k, path) != 0)
			continue;
		ks = yml_read_key(ld, k, path, 0);
		if (ks == NULL)
			continue;
		snprintf(sub, sizeof sub, "%s.%s", path, ks);
		vs = yml_read_string(ld, v, sub, allow_empty_values);
		if (vs == NULL) {
			free(ks);
			continue;
		}
		l.v[l.n].key = ks;
		l.v[l.n].value = vs;
		l.n++;
	}
replace:
	labels_free(out);
	*out = l;
}

static int parse_mode(const char *s, enum config_mode *mode)
{
	if (strcmp(s, "enforce") == 0)
		*mode = CONFIG_MODE_ENFORCE;
	else if (strcmp(s, "warn") == 0)
		*mode = CONFIG_MODE_WARN;
	else if (strcmp(s, "dryrun") == 0)
		*mode = CONFIG_MODE_DRYRUN;
	else
		return -1;
	return 0;
}

static void read_mode(struct yml_reader *ld, yaml_node_t *n, const char *path, enum config_mode *out)
{
	if (n->type != YAML_SCALAR_NODE || parse_mode(yml_scalar(n), out) != 0)
		yml_fail(ld, n, path, "must be one of enforce, warn, dryrun");
}

static void read_placement(struct yml_reader *ld, yaml_node_t *n, const char *path, enum config_placement *out)
{
	if (yml_scalar_is(n, "pinned"))
		*out = CONFIG_PLACEMENT_PINNED;
	else if (yml_scalar_is(n, "fallback"))
		*out = CONFIG_PLACEMENT_FALLBACK;
	else
		yml_fail(ld, n, path, "must be pinned or fallback");
}

/* A price: a plain decimal number (digits, at most one '.'), 0 to CONFIG_PRICE_MAX. */
static int read_price(struct yml_reader *ld, yaml_node_t *n, const char *path, double *out)
{
	const char *s = n->type == YAML_SCALAR_NODE ? yml_scalar(n) : "";
	/* Scalar types are strict: a quoted "98.32" is a string, as for every number. */
	int quoted = n->type == YAML_SCALAR_NODE && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE;
	size_t i, dots = 0, digits = 0;
	double v;

	for (i = 0; n->type == YAML_SCALAR_NODE && i < n->data.scalar.length && i < 32; i++) {
		if (s[i] == '.')
			dots++;
		else if (s[i] >= '0' && s[i] <= '9')
			digits++;
		else
			break;
	}
	if (n->type != YAML_SCALAR_NODE || quoted || n->data.scalar.length == 0 ||
	    i != n->data.scalar.length || dots > 1 || digits == 0 || (v = strtod(s, NULL), !isfinite(v)) ||
	    v > CONFIG_PRICE_MAX) {
		yml_fail(ld, n, path, "must be a price per hour: a number from 0 to %.0f, e.g. 98.32%s",
		     CONFIG_PRICE_MAX, quoted ? ", not a string (remove the quotes)" : "");
		return -1;
	}
	*out = v;
	return 0;
}

/* ==== The schema ==== */

static int taint_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
		       const char *path)
{
	struct config *cfg = target;
	char **slot = strcmp(key, "key") == 0 ? &cfg->taint_key
		    : strcmp(key, "value") == 0 ? &cfg->taint_value
		    : strcmp(key, "effect") == 0 ? &cfg->taint_effect : NULL;
	char *s;

	if (slot == NULL)
		return -1;
	s = yml_read_string(ld, v, path, slot == &cfg->taint_value);
	if (s != NULL) {
		free(*slot);
		*slot = s;
	}
	return 0;
}

/* ==== Label selectors (metav1.LabelSelector): one reader for pools and exemptions ==== */

static void requirement_free(struct config_requirement *r)
{
	free(r->key);
	free(r->op);
	strings_free(&r->values);
}

static void requirements_free(struct config_label_selector *sel)
{
	size_t i;

	for (i = 0; i < sel->n_match_expressions; i++)
		requirement_free(&sel->match_expressions[i]);
	free(sel->match_expressions);
	sel->match_expressions = NULL;
	sel->n_match_expressions = 0;
}

static void label_selector_free(struct config_label_selector *sel)
{
	labels_free(&sel->match_labels);
	requirements_free(sel);
}

static int requirement_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			     const char *path)
{
	struct config_requirement *r = target;
	char **slot = strcmp(key, "key") == 0 ? &r->key : strcmp(key, "operator") == 0 ? &r->op : NULL;

	if (strcmp(key, "values") == 0) {
		read_strings_checked(ld, v, path, &r->values, k8s_name_label_value, "is not a label value: it ");
		return 0;
	}
	if (slot == NULL)
		return -1;
	yml_read_string_into(ld, v, path, slot, 0);
	return 0;
}

/*
 * matchExpressions, checked as LabelSelectorAsSelector checks them
 * (k8s.io/apimachinery/pkg/apis/meta/v1/helpers.go, with
 * labels.NewRequirement): In and NotIn need values, Exists and DoesNotExist
 * take none, no other operator, keys and values valid label text.
 */
static void read_requirements(struct yml_reader *ld, yaml_node_t *n, const char *path,
			      struct config_label_selector *sel)
{
	struct config_requirement *reqs;
	yaml_node_t *at;
	size_t i, len;
	char sub[320];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {key, operator, values}", sizeof *reqs, &items, &len) != 0)
		return;
	reqs = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_requirement *r = &reqs[i];
		int set;

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with key, operator and values");
			continue;
		}
		yml_read_fields(ld, item, sub, r, requirement_field, "key, operator, values");
		if (r->key == NULL && yml_map_get(ld, item, "key") == NULL)
			yml_fail(ld, item, sub, "key is required");
		if (r->op == NULL && yml_map_get(ld, item, "operator") == NULL)
			yml_fail(ld, item, sub, "operator is required");
		if (r->key == NULL || r->op == NULL)
			continue;  /* an invalid one has its own error */
		if ((why = k8s_name_label_key(r->key)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "key"), sub, "key \"%s\" is not a label key: it %s", r->key, why);
		set = strcmp(r->op, "In") == 0 || strcmp(r->op, "NotIn") == 0;
		if (!set && strcmp(r->op, "Exists") != 0 && strcmp(r->op, "DoesNotExist") != 0)
			yml_fail(ld, yml_field_at(ld, item, "operator"), sub,
			     "operator \"%s\" is not one of In, NotIn, Exists, DoesNotExist", r->op);
		else if (set && r->values.n == 0 && (at = yml_required_at(ld, item, "values", YAML_SEQUENCE_NODE)) != NULL)
			yml_fail(ld, at, sub, "operator %s needs at least one value", r->op);
		else if (!set && r->values.n > 0)
			yml_fail(ld, yml_field_at(ld, item, "values"), sub, "operator %s takes no values", r->op);
	}
	requirements_free(sel);
	sel->match_expressions = reqs;
	sel->n_match_expressions = len;
}

/* matchLabels and matchExpressions: the field reader of every label selector. */
static int label_selector_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
				const char *path)
{
	struct config_label_selector *sel = target;
	char sub[LIMIT_POLICY_STRING_MAX + 128];
	const char *why;
	size_t i;

	if (strcmp(key, "matchLabels") == 0) {
		read_labels(ld, v, path, &sel->match_labels, 1);
		for (i = 0; i < sel->match_labels.n; i++) {
			const struct config_kv *kv = &sel->match_labels.v[i];

			/* At the entry: locate() finds it by its key. */
			snprintf(sub, sizeof sub, "%s.%s", path, kv->key);
			if ((why = k8s_name_label_key(kv->key)) != NULL)
				yml_fail(ld, NULL, sub, "\"%s\" is not a label key: it %s", kv->key, why);
			else if ((why = k8s_name_label(kv->value, strlen(kv->value), 1)) != NULL)
				yml_fail(ld, NULL, sub, "\"%s\" is not a label value: it %s", kv->value, why);
		}
	} else if (strcmp(key, "matchExpressions") == 0) {
		read_requirements(ld, v, path, sel);
	} else {
		return -1;
	}
	return 0;
}

/* Whether sel has nothing to match on (it would match every pod). */
static int label_selector_empty(const struct config_label_selector *sel)
{
	return sel->match_labels.n == 0 && sel->n_match_expressions == 0;
}

/*
 * Where to say that mapping item's selector is missing or empty: at an
 * empty matchLabels or matchExpressions, or at item when neither is there;
 * NULL when one has entries or a wrong type (their own errors say so).
 */
static yaml_node_t *selector_required_at(struct yml_reader *ld, yaml_node_t *item)
{
	yaml_node_t *labels = yml_required_at(ld, item, "matchLabels", YAML_MAPPING_NODE);
	yaml_node_t *exprs = yml_required_at(ld, item, "matchExpressions", YAML_SEQUENCE_NODE);

	if (labels == NULL || exprs == NULL)
		return NULL;
	return yml_map_get(ld, item, "matchLabels") != NULL ? labels : exprs;
}

/* ==== Pools ==== */

static void tolerations_free(struct config_tolerations *l)
{
	size_t i;

	for (i = 0; i < l->n; i++) {
		free(l->v[i].key);
		free(l->v[i].op);
		free(l->v[i].value);
		free(l->v[i].effect);
	}
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

static int toleration_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			    const char *path)
{
	struct config_toleration *t = target;
	char **slot = strcmp(key, "key") == 0 ? &t->key : strcmp(key, "operator") == 0 ? &t->op
		    : strcmp(key, "value") == 0 ? &t->value : strcmp(key, "effect") == 0 ? &t->effect : NULL;
	char *str;

	if (slot == NULL)
		return -1;
	str = yml_read_string(ld, v, path, slot != &t->key);
	if (str != NULL) {
		free(*slot);
		*slot = str;
	}
	return 0;
}

/*
 * pools[].tolerations, checked as the API server checks a pod's
 * (validateTolerations, pkg/apis/core/validation): a key (required here: a
 * pool's toleration names its taint, and an empty key would tolerate every
 * taint), operator Equal or Exists, no value with Exists, a known effect.
 */
static void read_tolerations(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config_tolerations *out)
{
	struct config_tolerations l = { NULL, 0 };
	size_t i, len;
	char sub[96];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {key, operator, value, effect}", sizeof *l.v, &items, &len) != 0)
		return;
	l.v = items;
	if (len > CONFIG_POOL_TOLERATIONS_MAX) {
		yml_fail(ld, n, path, "more than %d tolerations", CONFIG_POOL_TOLERATIONS_MAX);
		free(items);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_toleration *t = &l.v[l.n++];

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with key, operator, value and effect");
			continue;
		}
		yml_read_fields(ld, item, sub, t, toleration_field, "key, operator, value, effect");
		if (t->op == NULL)
			t->op = strdup("Equal");
		if (t->value == NULL)
			t->value = strdup("");
		if (t->effect == NULL)
			t->effect = strdup("");
		if (t->op == NULL || t->value == NULL || t->effect == NULL) {
			yml_fail_nomem(ld);
			continue;
		}
		/* Each problem at its field (a field of the wrong type has its own error). */
		if (t->key == NULL && yml_map_get(ld, item, "key") == NULL)
			yml_fail(ld, item, sub, "key is required (a toleration without one tolerates every taint)");
		else if (t->key != NULL && (why = k8s_name_label_key(t->key)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "key"), sub, "key \"%s\" is not a taint key: it %s", t->key, why);
		if (strcmp(t->op, "Equal") != 0 && strcmp(t->op, "Exists") != 0)
			yml_fail(ld, yml_field_at(ld, item, "operator"), sub, "operator must be Equal or Exists");
		else if (strcmp(t->op, "Exists") == 0 && t->value[0] != '\0')
			yml_fail(ld, yml_field_at(ld, item, "value"), sub, "value must be empty with operator Exists");
		else if ((why = k8s_name_label(t->value, strlen(t->value), 1)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "value"), sub, "value \"%s\" is not a taint value: it %s",
			     t->value, why);
		if (t->effect[0] != '\0' && strcmp(t->effect, "NoSchedule") != 0 &&
		    strcmp(t->effect, "PreferNoSchedule") != 0 && strcmp(t->effect, "NoExecute") != 0)
			yml_fail(ld, yml_field_at(ld, item, "effect"), sub,
			     "effect must be NoSchedule, PreferNoSchedule or NoExecute (or absent: all)");
	}
	tolerations_free(out);
	*out = l;
}

static void pool_free(struct config_pool *p)
{
	free(p->name);
	labels_free(&p->node_selector);
	strings_free(&p->resources);
	strings_free(&p->device_classes);
	tolerations_free(&p->tolerations);
	strings_free(&p->namespaces);
	label_selector_free(&p->pod_selector);
}

static int pool_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
		      const char *path)
{
	struct config_pool *p = target;

	if (strcmp(key, "name") == 0) {
		char *s = yml_read_string(ld, v, path, 0);
		if (s != NULL) {
			free(p->name);
			p->name = s;
		}
	} else if (strcmp(key, "nodeSelector") == 0) {
		read_labels(ld, v, path, &p->node_selector, 1);
		/* The pinned patch adds at most this many: refused here, not cut short there. */
		if (p->node_selector.n > LIMIT_POOL_SELECTOR_MAX)
			yml_fail(ld, v, path, "more than %d entries: a pod's patch carries no more",
			     LIMIT_POOL_SELECTOR_MAX);
	} else if (strcmp(key, "resources") == 0) {
		read_strings(ld, v, path, &p->resources);
	} else if (strcmp(key, "deviceClasses") == 0) {
		read_strings(ld, v, path, &p->device_classes);
	} else if (strcmp(key, "maxGPUsPerPod") == 0) {
		yml_read_count(ld, v, path, CONFIG_GPUS_PER_POD_MAX, &p->max_gpus_per_pod);
	} else if (strcmp(key, "pricePerNodeHour") == 0) {
		if (read_price(ld, v, path, &p->price_per_node_hour) == 0)
			p->priced = 1;
	} else if (strcmp(key, "gpusPerNode") == 0) {
		long long gpus = -1;

		yml_read_count(ld, v, path, CONFIG_GPUS_PER_NODE_MAX, &gpus);
		if (gpus == 0)
			yml_fail(ld, v, path, "must be a whole number from 1 to %d", CONFIG_GPUS_PER_NODE_MAX);
		else if (gpus > 0)
			p->gpus_per_node = gpus;
	} else if (strcmp(key, "tolerations") == 0) {
		read_tolerations(ld, v, path, &p->tolerations);
	} else if (strcmp(key, "namespaces") == 0) {
		read_strings_checked(ld, v, path, &p->namespaces, k8s_name_namespace_glob, "");
	} else if (strcmp(key, "podSelector") == 0) {
		yml_read_fields(ld, v, path, &p->pod_selector, label_selector_field, "matchLabels, matchExpressions");
	} else {
		return -1;
	}
	return 0;
}

static void read_pools(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_pool *pools;
	yaml_node_t *at;
	size_t i, len;
	char sub[64];

	if (n->type != YAML_SEQUENCE_NODE) {
		yml_fail(ld, n, path, "must be a list of pools");
		return;
	}
	len = yml_seq_len(n);
	if (len == 0 || len > CONFIG_POOLS_MAX) {
		yml_fail(ld, n, path, "must list from 1 to %d pools", CONFIG_POOLS_MAX);
		return;
	}
	pools = calloc(len, sizeof *pools);
	if (pools == NULL) {
		yml_fail_nomem(ld);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with name and nodeSelector");
			continue;
		}
		yml_read_fields(ld, item, sub, &pools[i], pool_field,
			    "name, nodeSelector, resources, deviceClasses, maxGPUsPerPod, pricePerNodeHour, "
			    "gpusPerNode, tolerations, namespaces, podSelector");
		/* A field given but invalid has its own error already. */
		if (pools[i].name == NULL && yml_map_get(ld, item, "name") == NULL)
			yml_fail(ld, item, sub, "name is required");
		if (pools[i].node_selector.n == 0 &&
		    (at = yml_required_at(ld, item, "nodeSelector", YAML_MAPPING_NODE)) != NULL)
			yml_fail(ld, at, sub, "nodeSelector is required and must not be empty");
	}
	for (i = 0; i < cfg->n_pools; i++)
		pool_free(&cfg->pools[i]);
	free(cfg->pools);
	cfg->pools = pools;
	cfg->n_pools = len;
}

static void pod_selector_free(struct config_pod_selector *sel)
{
	strings_free(&sel->namespaces);
	label_selector_free(&sel->selector);
}

static int pod_selector_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			      const char *path)
{
	struct config_pod_selector *sel = target;

	if (strcmp(key, "namespaces") == 0)
		read_strings(ld, v, path, &sel->namespaces);
	else
		return label_selector_field(ld, &sel->selector, key, v, path);
	return 0;
}

static void read_pod_selectors(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_pod_selector *sels;
	yaml_node_t *at;
	size_t i, len;
	char sub[96];
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {namespaces: [...], matchLabels: {...}, matchExpressions: [...]}",
		      sizeof *sels, &items, &len) != 0)
		return;
	sels = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with namespaces, matchLabels and matchExpressions");
			continue;
		}
		yml_read_fields(ld, item, sub, &sels[i], pod_selector_field, "namespaces, matchLabels, matchExpressions");
		if (sels[i].namespaces.n == 0 && (at = yml_required_at(ld, item, "namespaces", YAML_SEQUENCE_NODE)) != NULL)
			yml_fail(ld, at, sub, "namespaces is required and must not be empty: a workload sets "
			     "its own labels, so labels alone would let any pod in any namespace exempt itself");
		if (label_selector_empty(&sels[i].selector) && (at = selector_required_at(ld, item)) != NULL)
			yml_fail(ld, at, sub, "matchLabels or matchExpressions is required and must not be empty (an "
			     "empty selector would exempt every pod in those namespaces: list them in "
			     "exempt.namespaces instead)");
	}
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++)
		pod_selector_free(&cfg->exempt_pod_selectors[i]);
	free(cfg->exempt_pod_selectors);
	cfg->exempt_pod_selectors = sels;
	cfg->n_exempt_pod_selectors = len;
}

static int exempt_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			const char *path)
{
	struct config *cfg = target;

	if (strcmp(key, "namespaces") == 0)
		read_strings(ld, v, path, &cfg->exempt_namespaces);
	else if (strcmp(key, "daemonSets") == 0)
		yml_read_bool(ld, v, path, &cfg->exempt_daemonsets);
	else if (strcmp(key, "daemonSetNamespaces") == 0)
		read_strings(ld, v, path, &cfg->exempt_daemonset_namespaces);
	else if (strcmp(key, "daemonSetControllers") == 0)
		read_strings(ld, v, path, &cfg->exempt_daemonset_controllers);
	else if (strcmp(key, "podSelectors") == 0)
		read_pod_selectors(ld, v, path, cfg);
	else
		return -1;
	return 0;
}

static void read_namespace_modes(struct yml_reader *ld, yaml_node_t *n, const char *path,
				 struct config *cfg)
{
	struct config_labels l = { NULL, 0 };
	struct config_namespace_mode *modes;
	size_t i;
	char sub[LIMIT_POLICY_STRING_MAX + 64];

	read_labels(ld, n, path, &l, 0);
	modes = calloc(l.n ? l.n : 1, sizeof *modes);
	if (modes == NULL) {
		yml_fail_nomem(ld);
		labels_free(&l);
		return;
	}
	for (i = 0; i < l.n; i++) {
		snprintf(sub, sizeof sub, "%s.%s", path, l.v[i].key);
		if (parse_mode(l.v[i].value, &modes[i].mode) != 0)
			yml_fail(ld, NULL, sub, "must be one of enforce, warn, dryrun");  /* at the value */
		modes[i].ns = l.v[i].key;  /* ownership moves to modes */
		l.v[i].key = NULL;
	}
	for (i = 0; i < cfg->n_namespace_modes; i++)
		free(cfg->namespace_modes[i].ns);
	free(cfg->namespace_modes);
	cfg->namespace_modes = modes;
	cfg->n_namespace_modes = l.n;
	labels_free(&l);
}

/* ==== Workloads: custom resources the validating webhook judges ==== */

static void workload_free(struct config_workload *w)
{
	free(w->group);
	free(w->kind);
	free(w->resource);
	strings_free(&w->versions);
}

static int workload_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			  const char *path)
{
	struct config_workload *w = target;
	char **slot = strcmp(key, "group") == 0 ? &w->group : strcmp(key, "kind") == 0 ? &w->kind
		      : strcmp(key, "resource") == 0 ? &w->resource : NULL;

	if (strcmp(key, "versions") == 0) {
		read_strings_checked(ld, v, path, &w->versions, k8s_name_api_version, "is not an API version: it ");
		return 0;
	}
	if (slot == NULL)
		return -1;
	yml_read_string_into(ld, v, path, slot, 0);
	return 0;
}

/* workloads: each entry a custom resource, named once. */
static void read_workloads(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_workload *l;
	size_t i, j, len;
	char sub[96];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {group, kind, versions, resource}", sizeof *l, &items, &len) != 0)
		return;
	l = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_workload *w = &l[i];

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with group, kind, versions and resource");
			continue;
		}
		yml_read_fields(ld, item, sub, w, workload_field, "group, kind, versions, resource");
		if (w->group == NULL && yml_map_get(ld, item, "group") == NULL)
			yml_fail(ld, item, sub, "group is required (the custom resource's API group, e.g. kubeflow.org)");
		else if (w->group != NULL && (why = k8s_name_crd_group(w->group)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "group"), sub, "group \"%s\" %s", w->group, why);
		if (w->kind == NULL && yml_map_get(ld, item, "kind") == NULL)
			yml_fail(ld, item, sub, "kind is required (e.g. PyTorchJob)");
		else if (w->kind != NULL && (why = k8s_name_dns1035(w->kind, 1)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "kind"), sub, "kind \"%s\" is not a kind: it %s", w->kind, why);
		/* A CRD's plural is a DNS-1035 label (apiextensions validation: IsDNS1035Label). */
		if (w->resource != NULL && (why = k8s_name_dns1035(w->resource, 0)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "resource"), sub, "resource \"%s\" is not a CRD's plural: it %s",
			     w->resource, why);
		for (j = 0; w->group != NULL && w->kind != NULL && j < i; j++)
			if (l[j].group != NULL && l[j].kind != NULL && strcmp(l[j].group, w->group) == 0 &&
			    strcmp(l[j].kind, w->kind) == 0) {
				yml_fail(ld, item, sub, "lists %s %s again (%s[%zu]): one entry, with every version in it",
				     w->group, w->kind, path, j);
				break;
			}
	}
	for (i = 0; i < cfg->n_workloads; i++)
		workload_free(&cfg->workloads[i]);
	free(cfg->workloads);
	cfg->workloads = l;
	cfg->n_workloads = len;
}

/* ==== GPU intent beyond resources: annotations and share resources ==== */

static void gpu_annotation_free(struct config_gpu_annotation *a)
{
	free(a->key);
	strings_free(&a->scheduler_names);
	free(a->resource);
}

static void gpu_annotations_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_gpu_annotations; i++)
		gpu_annotation_free(&cfg->gpu_annotations[i]);
	free(cfg->gpu_annotations);
	cfg->gpu_annotations = NULL;
	cfg->n_gpu_annotations = 0;
}

static void gpu_shares_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_gpu_shares; i++) {
		free(cfg->gpu_shares[i].name);
		free(cfg->gpu_shares[i].resource);
	}
	free(cfg->gpu_shares);
	cfg->gpu_shares = NULL;
	cfg->n_gpu_shares = 0;
}

static int gpu_annotation_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
				const char *path)
{
	struct config_gpu_annotation *a = target;

	if (strcmp(key, "schedulerNames") == 0)
		read_strings(ld, v, path, &a->scheduler_names);
	else if (strcmp(key, "key") == 0)
		yml_read_string_into(ld, v, path, &a->key, 0);
	else if (strcmp(key, "resource") == 0)
		yml_read_string_into(ld, v, path, &a->resource, 0);
	else
		return -1;
	return 0;
}

/* gpuAnnotations: each {key, schedulerNames, resource}, all required. */
static void read_gpu_annotations(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_gpu_annotation *l;
	size_t i, len;
	char sub[96];
	const char *why;
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {key, schedulerNames, resource}", sizeof *l, &items, &len) != 0)
		return;
	l = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);
		struct config_gpu_annotation *a = &l[i];

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with key, schedulerNames and resource");
			continue;
		}
		yml_read_fields(ld, item, sub, a, gpu_annotation_field, "key, schedulerNames, resource");
		if (a->key == NULL && yml_map_get(ld, item, "key") == NULL)
			yml_fail(ld, item, sub, "key is required (the annotation, e.g. gpu-fraction)");
		else if (a->key != NULL && (why = k8s_name_label_key(a->key)) != NULL)
			yml_fail(ld, yml_field_at(ld, item, "key"), sub, "key \"%s\" is not an annotation key: it %s",
				 a->key, why);
		/* Without a scheduler, any pod could name itself a GPU pod and reach GPU nodes. */
		if (a->scheduler_names.n == 0 && yml_map_get(ld, item, "schedulerNames") == NULL)
			yml_fail(ld, item, sub, "schedulerNames is required: the annotation means a GPU only to "
				 "the scheduler that reads it (e.g. [kai-scheduler])");
		else if (a->scheduler_names.n == 0)
			yml_fail(ld, yml_field_at(ld, item, "schedulerNames"), sub, "schedulerNames must not be empty");
		if (a->resource == NULL && yml_map_get(ld, item, "resource") == NULL)
			yml_fail(ld, item, sub, "resource is required (the GPU resource it is a share of, e.g. "
				 "nvidia.com/gpu)");
	}
	gpu_annotations_free(cfg);
	cfg->gpu_annotations = l;
	cfg->n_gpu_annotations = len;
}

static int gpu_share_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
			   const char *path)
{
	struct config_gpu_share *g = target;
	char **slot = strcmp(key, "name") == 0 ? &g->name : strcmp(key, "resource") == 0 ? &g->resource : NULL;

	if (slot == NULL)
		return -1;
	yml_read_string_into(ld, v, path, slot, 0);
	return 0;
}

/* gpuShareResources: each {name, resource}, both required. */
static void read_gpu_shares(struct yml_reader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_gpu_share *l;
	size_t i, len;
	char sub[96];
	void *items;

	if (yml_seq_alloc(ld, n, path, "a list of {name, resource}", sizeof *l, &items, &len) != 0)
		return;
	l = items;
	for (i = 0; i < len; i++) {
		yaml_node_t *item = yml_node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			yml_fail(ld, item, sub, "must be a map with name and resource");
			continue;
		}
		yml_read_fields(ld, item, sub, &l[i], gpu_share_field, "name, resource");
		if (l[i].name == NULL && yml_map_get(ld, item, "name") == NULL)
			yml_fail(ld, item, sub, "name is required (a resource name or glob, e.g. nvidia.com/gpumem)");
		if (l[i].resource == NULL && yml_map_get(ld, item, "resource") == NULL)
			yml_fail(ld, item, sub, "resource is required (the GPU resource it stands for, e.g. "
				 "nvidia.com/gpu)");
	}
	gpu_shares_free(cfg);
	cfg->gpu_shares = l;
	cfg->n_gpu_shares = len;
}

/*
 * A gpuInfraNamespaces entry: a namespace's name, not a glob, since the chart
 * selects the namespaces by kubernetes.io/metadata.name In [...].
 */
static const char *infra_namespace_bad(const char *s)
{
	if (strpbrk(s, "*?") != NULL)
		return "is not a namespace's name: globs cannot be selected by the chart's namespaceSelector";
	if (k8s_name_namespace_glob(s) != NULL)
		return "is not a namespace's name: a DNS label, at most 63 of a-z, 0-9 and '-'";
	return NULL;
}

static int top_field(struct yml_reader *ld, void *target, const char *key, yaml_node_t *v,
		     const char *path)
{
	struct config *cfg = target;

	if (strcmp(key, "mode") == 0)
		read_mode(ld, v, path, &cfg->mode);
	else if (strcmp(key, "namespaceModes") == 0)
		read_namespace_modes(ld, v, path, cfg);
	else if (strcmp(key, "gpuResources") == 0)
		read_strings(ld, v, path, &cfg->gpu_resources);
	else if (strcmp(key, "gpuDeviceClasses") == 0)
		read_strings(ld, v, path, &cfg->gpu_device_classes);
	else if (strcmp(key, "gpuAnnotations") == 0)
		read_gpu_annotations(ld, v, path, cfg);
	else if (strcmp(key, "gpuShareResources") == 0)
		read_gpu_shares(ld, v, path, cfg);

	else if (strcmp(key, "gpuTaint") == 0)
		yml_read_fields(ld, v, path, cfg, taint_field, "key, value, effect");
	else if (strcmp(key, "gpuNodeLabels") == 0)
		read_strings(ld, v, path, &cfg->gpu_node_labels);
	else if (strcmp(key, "gpuNodeNames") == 0)
		read_strings(ld, v, path, &cfg->gpu_node_names);
	else if (strcmp(key, "pools") == 0)
		read_pools(ld, v, path, cfg);
	else if (strcmp(key, "placement") == 0)
		read_placement(ld, v, path, &cfg->placement);
	else if (strcmp(key, "deferLabels") == 0) {
		read_strings_checked(ld, v, path, &cfg->defer_labels, k8s_name_label_key, "is not a label key: it ");
	}
	else if (strcmp(key, "gpuInfraNamespaces") == 0)
		read_strings_checked(ld, v, path, &cfg->gpu_infra_namespaces, infra_namespace_bad, "");
	else if (strcmp(key, "exempt") == 0)
		yml_read_fields(ld, v, path, cfg, exempt_field,
			    "namespaces, daemonSets, daemonSetNamespaces, daemonSetControllers, podSelectors");
	else if (strcmp(key, "workloads") == 0)
		read_workloads(ld, v, path, cfg);
	else
		return -1;
	return 0;
}

void config_schema_read(struct yml_reader *ld, yaml_node_t *root, struct config *cfg)
{
	yml_read_fields(ld, root, "", cfg, top_field,
			"mode, namespaceModes, gpuResources, gpuDeviceClasses, gpuAnnotations, "
			"gpuShareResources, gpuTaint, gpuNodeLabels, gpuNodeNames, pools, placement, "
			"deferLabels, gpuInfraNamespaces, exempt, workloads");
}

void config_schema_free(struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_namespace_modes; i++)
		free(cfg->namespace_modes[i].ns);
	free(cfg->namespace_modes);
	strings_free(&cfg->gpu_resources);
	strings_free(&cfg->gpu_device_classes);
	gpu_annotations_free(cfg);
	gpu_shares_free(cfg);
	free(cfg->taint_key);
	free(cfg->taint_value);
	free(cfg->taint_effect);
	strings_free(&cfg->gpu_node_labels);
	strings_free(&cfg->gpu_node_names);
	for (i = 0; i < cfg->n_pools; i++)
		pool_free(&cfg->pools[i]);
	free(cfg->pools);
	strings_free(&cfg->defer_labels);
	strings_free(&cfg->gpu_infra_namespaces);
	strings_free(&cfg->exempt_namespaces);
	strings_free(&cfg->exempt_daemonset_namespaces);
	strings_free(&cfg->exempt_daemonset_controllers);
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++)
		pod_selector_free(&cfg->exempt_pod_selectors[i]);
	free(cfg->exempt_pod_selectors);
	for (i = 0; i < cfg->n_workloads; i++)
		workload_free(&cfg->workloads[i]);
	free(cfg->workloads);
}
