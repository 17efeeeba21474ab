#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "file.h"

#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_LIST_MAX 1024   /* entries in any one list or map */
#define CONFIG_STRING_MAX 316  /* a label key: 253 prefix + '/' + 63 name, rounded */

/*
 * The embedded default. It is parsed by the same code as a user file, so the
 * text printed by print-default-config is exactly the policy in force when no
 * file is given.
 */
static const char default_yaml[] =
"# gpu-admission policy. Every field is optional in a file of your own: a field\n"
"# you leave out keeps the value shown here.\n"
"\n"
"# enforce: mutate GPU pods, reject CPU pods aimed at GPU pools.\n"
"# warn:    mutate, but a would-be rejection is admitted with a warning.\n"
"# dryrun:  never patch, never reject; warnings say what enforce would do.\n"
"mode: enforce\n"
"\n"
"# Per-namespace overrides of mode, e.g. {team-a: dryrun}.\n"
"namespaceModes: {}\n"
"\n"
"# Resource names (globs: * and ?) that count as a GPU when requested with a\n"
"# non-zero quantity in any container or init container.\n"
"gpuResources:\n"
"  - nvidia.com/gpu\n"
"  - nvidia.com/gpu.shared\n"
"  - nvidia.com/mig-*\n"
"  - amd.com/gpu\n"
"  - alpha.kubernetes.io/nvidia-gpu\n"
"\n"
"# The taint on the GPU node pools. AKS GPU pools are created with\n"
"# sku=gpu:NoSchedule (not nvidia.com/gpu).\n"
"gpuTaint:\n"
"  key: sku\n"
"  value: gpu\n"
"  effect: NoSchedule\n"
"\n"
"# Node label keys whose presence in a nodeSelector or required node affinity\n"
"# aims a pod at GPU nodes.\n"
"gpuNodeLabels:\n"
"  - kubernetes.azure.com/accelerator\n"
"  - accelerator\n"
"  - nvidia.com/gpu.present\n"
"  - nvidia.com/gpu.product\n"
"\n"
"# Globs over spec.nodeName that name GPU nodes, e.g. aks-gpu*-vmss*.\n"
"gpuNodeNames: []\n"
"\n"
"# GPU pools in order of preference, cheapest first. A GPU pod goes to the pool\n"
"# its label gpu-admission/pool names, else the pool whose nodeSelector it\n"
"# already matches, else the first pool that serves every GPU resource it asks\n"
"# for with a large enough maxGPUsPerPod (0 or absent: no limit). resources\n"
"# defaults to every GPU resource.\n"
"pools:\n"
"  - name: gpu\n"
"    resources: [\"nvidia.com/*\", \"alpha.kubernetes.io/nvidia-gpu\"]\n"
"    nodeSelector:\n"
"      kubernetes.azure.com/accelerator: nvidia\n"
"\n"
"# Set by the cluster admin only: nothing a workload can put on itself.\n"
"exempt:\n"
"  # Always admitted unchanged.\n"
"  namespaces: [kube-system, gpu-operator]\n"
"  # Pods owned by a DaemonSet (device plugin, DCGM exporter, log agents) are\n"
"  # never rejected.\n"
"  daemonSets: true\n"
"  # Pods whose labels match all of one entry's matchLabels are never rejected.\n"
"  podSelectors: []\n";

const char *config_default_yaml(void)
{
	return default_yaml;
}

/* ==== Loader state and error collection ==== */

struct loader {
	yaml_document_t *doc;
	const char *name;
	struct error *err;
	int errors;
	int nomem;          /* an allocation failed: the result is ERROR_NOMEM, not a policy error */
};

/*
 * Records one error and keeps going, so check-config can list every problem
 * in a file at once. Messages are joined by newlines while they fit.
 */
static void fail(struct loader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

static void fail(struct loader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
{
	char msg[ERROR_MSG_MAX];
	va_list ap;
	size_t used;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (ld->errors++ == 0) {
		error_set(ld->err, ERROR_CONFIG, "%s:%zu:%zu: %s: %s", ld->name,
			  node ? node->start_mark.line + 1 : 0, node ? node->start_mark.column + 1 : 0,
			  path, msg);
		return;
	}
	if (ld->err == NULL)
		return;
	used = strlen(ld->err->msg);
	if (used + 2 < sizeof ld->err->msg)
		snprintf(ld->err->msg + used, sizeof ld->err->msg - used, "\n%s:%zu:%zu: %s: %s",
			 ld->name, node ? node->start_mark.line + 1 : 0,
			 node ? node->start_mark.column + 1 : 0, path, msg);
}

/* An allocation failed while reading path: recorded like an error, and the load ends as ERROR_NOMEM. */
static void fail_nomem(struct loader *ld, const yaml_node_t *node, const char *path)
{
	fail(ld, node, path, "out of memory");
	ld->nomem = 1;
}

static yaml_node_t *node_at(struct loader *ld, int id)
{
	return yaml_document_get_node(ld->doc, id);
}

static int scalar_is(const yaml_node_t *n, const char *s)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
	       memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

static int is_null(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (n->data.scalar.length == 0 || scalar_is(n, "~") || scalar_is(n, "null"));
}

static const char *scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* ==== Typed readers: each validates and reports with the field path ==== */

static char *read_string(struct loader *ld, yaml_node_t *n, const char *path, int allow_empty)
{
	char *s;

	if (n->type != YAML_SCALAR_NODE || (is_null(n) && !allow_empty)) {
		fail(ld, n, path, "must be a string");
		return NULL;
	}
	if (n->data.scalar.length > CONFIG_STRING_MAX) {
		fail(ld, n, path, "longer than %d characters", CONFIG_STRING_MAX);
		return NULL;
	}
	if (strlen(scalar(n)) != n->data.scalar.length) {
		fail(ld, n, path, "contains a NUL character");
		return NULL;
	}
	if (!allow_empty && n->data.scalar.length == 0) {
		fail(ld, n, path, "must not be empty");
		return NULL;
	}
	s = strdup(is_null(n) ? "" : scalar(n));
	if (s == NULL)
		fail_nomem(ld, n, path);
	return s;
}

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

static size_t seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static size_t map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

/* Replaces *out with the list of strings in n (null means empty). */
static void read_strings(struct loader *ld, yaml_node_t *n, const char *path,
			 struct config_strings *out)
{
	struct config_strings l = { NULL, 0 };
	char sub[128];
	size_t i, len;

	if (is_null(n))
		goto replace;
	if (n->type != YAML_SEQUENCE_NODE) {
		fail(ld, n, path, "must be a list of strings");
		return;
	}
	len = seq_len(n);
	if (len > CONFIG_LIST_MAX) {
		fail(ld, n, path, "more than %d entries", CONFIG_LIST_MAX);
		return;
	}
	l.v = calloc(len ? len : 1, sizeof *l.v);
	if (l.v == NULL) {
		fail_nomem(ld, n, path);
		return;
	}
	for (i = 0; i < len; i++) {
		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		l.v[l.n] = read_string(ld, node_at(ld, n->data.sequence.items.start[i]), sub, 0);
		if (l.v[l.n] != NULL)
			l.n++;
	}
replace:
	strings_free(out);
	*out = l;
}

/* Duplicate keys are errors, as in Kubernetes' own strict decoding. */
static int check_duplicate_key(struct loader *ld, yaml_node_t *map, size_t upto,
			       yaml_node_t *key, const char *path)
{
	size_t j;

	for (j = 0; j < upto; j++) {
		yaml_node_t *other = node_at(ld, map->data.mapping.pairs.start[j].key);
		if (other->type == YAML_SCALAR_NODE && key->type == YAML_SCALAR_NODE &&
		    other->data.scalar.length == key->data.scalar.length &&
		    memcmp(other->data.scalar.value, key->data.scalar.value, key->data.scalar.length) == 0) {
			fail(ld, key, path, "duplicate key \"%s\"", scalar(key));
			return -1;
		}
	}
	return 0;
}

/* Replaces *out with the string->string map in n. */
static void read_labels(struct loader *ld, yaml_node_t *n, const char *path,
			struct config_labels *out, int allow_empty_values)
{
	struct config_labels l = { NULL, 0 };
	char sub[400];
	size_t i, len;

	if (is_null(n))
		goto replace;
	if (n->type != YAML_MAPPING_NODE) {
		fail(ld, n, path, "must be a map of strings");
		return;
	}
	len = map_len(n);
	if (len > CONFIG_LIST_MAX) {
		fail(ld, n, path, "more than %d entries", CONFIG_LIST_MAX);
		return;
	}
	l.v = calloc(len ? len : 1, sizeof *l.v);
	if (l.v == NULL) {
		fail_nomem(ld, n, path);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *k = node_at(ld, n->data.mapping.pairs.start[i].key);
		yaml_node_t *v = node_at(ld, n->data.mapping.pairs.start[i].value);
		char *ks, *vs;

		if (check_duplicate_key(ld, n, i, k, path) != 0)
			continue;
		ks = read_string(ld, k, path, 0);
		if (ks == NULL)
			continue;
		snprintf(sub, sizeof sub, "%s.%s", path, ks);
		vs = read_string(ld, v, sub, allow_empty_values);
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

static void read_mode(struct loader *ld, yaml_node_t *n, const char *path, enum config_mode *out)
{
	if (n->type != YAML_SCALAR_NODE || parse_mode(scalar(n), out) != 0)
		fail(ld, n, path, "must be one of enforce, warn, dryrun");
}

static void read_bool(struct loader *ld, yaml_node_t *n, const char *path, int *out)
{
	if (scalar_is(n, "true") || scalar_is(n, "True") || scalar_is(n, "TRUE"))
		*out = 1;
	else if (scalar_is(n, "false") || scalar_is(n, "False") || scalar_is(n, "FALSE"))
		*out = 0;
	else
		fail(ld, n, path, "must be true or false");
}

static void read_count(struct loader *ld, yaml_node_t *n, const char *path, long long max,
		       long long *out)
{
	char *end;
	long long v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.length == 0) {
		fail(ld, n, path, "must be a whole number from 0 to %lld", max);
		return;
	}
	errno = 0;
	v = strtoll(scalar(n), &end, 10);
	if (errno != 0 || *end != '\0' || v < 0 || v > max || scalar(n)[0] == '+' || scalar(n)[0] == ' ') {
		fail(ld, n, path, "must be a whole number from 0 to %lld", max);
		return;
	}
	*out = v;
}

/*
 * Iterates the pairs of mapping n, calling field() for each key; a key that
 * field() does not know is an error. Keeps the loader's one rule for maps:
 * keys are strings and appear once.
 */
typedef int (*field_fn)(struct loader *ld, void *target, const char *key, yaml_node_t *value,
			const char *path);

static void read_fields(struct loader *ld, yaml_node_t *n, const char *path, void *target,
			field_fn field, const char *known)
{
	char sub[256];
	size_t i, len;

	if (is_null(n))
		return;
	if (n->type != YAML_MAPPING_NODE) {
		fail(ld, n, path, "must be a map");
		return;
	}
	len = map_len(n);
	for (i = 0; i < len; i++) {
		yaml_node_t *k = node_at(ld, n->data.mapping.pairs.start[i].key);
		yaml_node_t *v = node_at(ld, n->data.mapping.pairs.start[i].value);

		if (k->type != YAML_SCALAR_NODE) {
			fail(ld, k, path, "keys must be strings");
			continue;
		}
		if (check_duplicate_key(ld, n, i, k, path) != 0)
			continue;
		snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", scalar(k));
		if (field(ld, target, scalar(k), v, sub) != 0)
			fail(ld, k, sub, "unknown field (known: %s)", known);
	}
}

/* ==== The schema ==== */

static int taint_field(struct loader *ld, void *target, const char *key, yaml_node_t *v,
		       const char *path)
{
	struct config *cfg = target;
	char **slot = strcmp(key, "key") == 0 ? &cfg->taint_key
		    : strcmp(key, "value") == 0 ? &cfg->taint_value
		    : strcmp(key, "effect") == 0 ? &cfg->taint_effect : NULL;
	char *s;

	if (slot == NULL)
		return -1;
	s = read_string(ld, v, path, slot == &cfg->taint_value);
	if (s != NULL) {
		free(*slot);
		*slot = s;
	}
	return 0;
}

static void pool_free(struct config_pool *p)
{
	free(p->name);
	labels_free(&p->node_selector);
	strings_free(&p->resources);
}

static int pool_field(struct loader *ld, void *target, const char *key, yaml_node_t *v,
		      const char *path)
{
	struct config_pool *p = target;

	if (strcmp(key, "name") == 0) {
		char *s = read_string(ld, v, path, 0);
		if (s != NULL) {
			free(p->name);
			p->name = s;
		}
	} else if (strcmp(key, "nodeSelector") == 0) {
		read_labels(ld, v, path, &p->node_selector, 1);
	} else if (strcmp(key, "resources") == 0) {
		read_strings(ld, v, path, &p->resources);
	} else if (strcmp(key, "maxGPUsPerPod") == 0) {
		read_count(ld, v, path, 1000000, &p->max_gpus_per_pod);
	} else {
		return -1;
	}
	return 0;
}

static void read_pools(struct loader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_pool *pools;
	size_t i, len;
	char sub[64];

	if (n->type != YAML_SEQUENCE_NODE) {
		fail(ld, n, path, "must be a list of pools");
		return;
	}
	len = seq_len(n);
	if (len == 0 || len > 64) {
		fail(ld, n, path, "must list from 1 to 64 pools");
		return;
	}
	pools = calloc(len, sizeof *pools);
	if (pools == NULL) {
		fail_nomem(ld, n, path);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *item = node_at(ld, n->data.sequence.items.start[i]);

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE) {
			fail(ld, item, sub, "must be a map with name and nodeSelector");
			continue;
		}
		read_fields(ld, item, sub, &pools[i], pool_field,
			    "name, nodeSelector, resources, maxGPUsPerPod");
		if (pools[i].name == NULL)
			fail(ld, item, sub, "name is required");
		if (pools[i].node_selector.n == 0)
			fail(ld, item, sub, "nodeSelector is required and must not be empty");
	}
	for (i = 0; i < cfg->n_pools; i++)
		pool_free(&cfg->pools[i]);
	free(cfg->pools);
	cfg->pools = pools;
	cfg->n_pools = len;
}

static void read_pod_selectors(struct loader *ld, yaml_node_t *n, const char *path, struct config *cfg)
{
	struct config_labels *sels = NULL;
	size_t i, len = 0;
	char sub[96];

	if (!is_null(n)) {
		if (n->type != YAML_SEQUENCE_NODE) {
			fail(ld, n, path, "must be a list of {matchLabels: {...}}");
			return;
		}
		len = seq_len(n);
		if (len > CONFIG_LIST_MAX) {
			fail(ld, n, path, "more than %d entries", CONFIG_LIST_MAX);
			return;
		}
		sels = calloc(len ? len : 1, sizeof *sels);
		if (sels == NULL) {
			fail_nomem(ld, n, path);
			return;
		}
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *item = node_at(ld, n->data.sequence.items.start[i]);
		yaml_node_t *k, *v;

		snprintf(sub, sizeof sub, "%s[%zu]", path, i);
		if (item->type != YAML_MAPPING_NODE || map_len(item) != 1 ||
		    !scalar_is(k = node_at(ld, item->data.mapping.pairs.start[0].key), "matchLabels")) {
			fail(ld, item, sub, "must be a map with exactly one field, matchLabels");
			continue;
		}
		v = node_at(ld, item->data.mapping.pairs.start[0].value);
		snprintf(sub, sizeof sub, "%s[%zu].matchLabels", path, i);
		read_labels(ld, v, sub, &sels[i], 1);
		if (sels[i].n == 0)
			fail(ld, v, sub, "must not be empty (it would exempt every pod)");
	}
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++)
		labels_free(&cfg->exempt_pod_selectors[i]);
	free(cfg->exempt_pod_selectors);
	cfg->exempt_pod_selectors = sels;
	cfg->n_exempt_pod_selectors = len;
}

static int exempt_field(struct loader *ld, void *target, const char *key, yaml_node_t *v,
			const char *path)
{
	struct config *cfg = target;

	if (strcmp(key, "namespaces") == 0)
		read_strings(ld, v, path, &cfg->exempt_namespaces);
	else if (strcmp(key, "daemonSets") == 0)
		read_bool(ld, v, path, &cfg->exempt_daemonsets);
	else if (strcmp(key, "podSelectors") == 0)
		read_pod_selectors(ld, v, path, cfg);
	else
		return -1;
	return 0;
}

static void read_namespace_modes(struct loader *ld, yaml_node_t *n, const char *path,
				 struct config *cfg)
{
	struct config_labels l = { NULL, 0 };
	struct config_namespace_mode *modes;
	size_t i;
	char sub[128];

	read_labels(ld, n, path, &l, 0);
	modes = calloc(l.n ? l.n : 1, sizeof *modes);
	if (modes == NULL) {
		fail_nomem(ld, n, path);
		labels_free(&l);
		return;
	}
	for (i = 0; i < l.n; i++) {
		snprintf(sub, sizeof sub, "%s.%s", path, l.v[i].key);
		if (parse_mode(l.v[i].value, &modes[i].mode) != 0)
			fail(ld, n, sub, "must be one of enforce, warn, dryrun");
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

static int top_field(struct loader *ld, void *target, const char *key, yaml_node_t *v,
		     const char *path)
{
	struct config *cfg = target;

	if (strcmp(key, "mode") == 0)
		read_mode(ld, v, path, &cfg->mode);
	else if (strcmp(key, "namespaceModes") == 0)
		read_namespace_modes(ld, v, path, cfg);
	else if (strcmp(key, "gpuResources") == 0)
		read_strings(ld, v, path, &cfg->gpu_resources);
	else if (strcmp(key, "gpuTaint") == 0)
		read_fields(ld, v, path, cfg, taint_field, "key, value, effect");
	else if (strcmp(key, "gpuNodeLabels") == 0)
		read_strings(ld, v, path, &cfg->gpu_node_labels);
	else if (strcmp(key, "gpuNodeNames") == 0)
		read_strings(ld, v, path, &cfg->gpu_node_names);
	else if (strcmp(key, "pools") == 0)
		read_pools(ld, v, path, cfg);
	else if (strcmp(key, "exempt") == 0)
		read_fields(ld, v, path, cfg, exempt_field, "namespaces, daemonSets, podSelectors");
	else
		return -1;
	return 0;
}

/* Rules that span fields, checked once the whole file is overlaid. */
static void check_whole(struct loader *ld, const struct config *cfg)
{
	size_t i, j;

	if (cfg->gpu_resources.n == 0)
		fail(ld, NULL, "gpuResources", "must list at least one resource");
	if (cfg->taint_effect != NULL && strcmp(cfg->taint_effect, "NoSchedule") != 0 &&
	    strcmp(cfg->taint_effect, "PreferNoSchedule") != 0 &&
	    strcmp(cfg->taint_effect, "NoExecute") != 0)
		fail(ld, NULL, "gpuTaint.effect", "must be NoSchedule, PreferNoSchedule or NoExecute");
	for (i = 0; i < cfg->n_pools; i++)
		for (j = 0; j < i; j++)
			if (cfg->pools[i].name && cfg->pools[j].name &&
			    strcmp(cfg->pools[i].name, cfg->pools[j].name) == 0)
				fail(ld, NULL, "pools", "two pools are named \"%s\"", cfg->pools[i].name);
}

/* ==== Loading ==== */

static int apply_yaml(struct config *cfg, const char *buf, size_t len, const char *name,
		      struct error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	struct loader ld = { .doc = &doc, .name = name, .err = err, .errors = 0, .nomem = 0 };
	yaml_node_t *root;
	int rc = -1;

	if (!yaml_parser_initialize(&parser)) {
		error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		/* libyaml names every syntax problem; a failure with none is an allocation it could not make. */
		if (parser.error == YAML_MEMORY_ERROR || parser.error == YAML_NO_ERROR)
			error_set(err, ERROR_NOMEM, "%s: out of memory reading the YAML", name);
		else
			error_set(err, ERROR_CONFIG, "%s:%zu:%zu: not valid YAML: %s", name,
			  parser.problem_mark.line + 1, parser.problem_mark.column + 1,
			  parser.problem ? parser.problem : "parse error");
		goto out_parser;
	}
	root = yaml_document_get_root_node(&doc);
	if (root != NULL && !is_null(root)) {
		if (root->type != YAML_MAPPING_NODE)
			fail(&ld, root, "(top level)", "must be a map of fields");
		else
			read_fields(&ld, root, "", cfg, top_field,
				    "mode, namespaceModes, gpuResources, gpuTaint, gpuNodeLabels, "
				    "gpuNodeNames, pools, exempt");
	}
	if (root != NULL && yaml_parser_load(&parser, &extra)) {
		if (yaml_document_get_root_node(&extra) != NULL)
			fail(&ld, yaml_document_get_root_node(&extra), "(document)",
			     "a policy file holds one YAML document");
		yaml_document_delete(&extra);
	}
	if (ld.errors == 0)
		check_whole(&ld, cfg);
	rc = ld.errors == 0 ? 0 : -1;
	if (ld.nomem)
		error_set(err, ERROR_NOMEM, "%s: out of memory", name);
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
	return rc;
}

struct config *config_default(struct error *err)
{
	struct config *cfg = calloc(1, sizeof *cfg);

	if (cfg == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	if (apply_yaml(cfg, default_yaml, sizeof default_yaml - 1, "(default policy)", err) != 0) {
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

struct config *config_load_buffer(const char *buf, size_t len, const char *name,
				  struct error *err)
{
	struct config *cfg = config_default(err);

	if (cfg == NULL)
		return NULL;
	if (apply_yaml(cfg, buf, len, name, err) != 0) {
		config_free(cfg);
		return NULL;
	}
	return cfg;
}

struct config *config_load_file(const char *path, struct error *err)
{
	struct config *cfg;
	size_t len;
	char *buf = file_read(path, CONFIG_FILE_MAX, &len, err);

	if (buf == NULL)
		return NULL;
	cfg = config_load_buffer(buf, len, path, err);
	free(buf);
	return cfg;
}

void config_free(struct config *cfg)
{
	size_t i;

	if (cfg == NULL)
		return;
	for (i = 0; i < cfg->n_namespace_modes; i++)
		free(cfg->namespace_modes[i].ns);
	free(cfg->namespace_modes);
	strings_free(&cfg->gpu_resources);
	free(cfg->taint_key);
	free(cfg->taint_value);
	free(cfg->taint_effect);
	strings_free(&cfg->gpu_node_labels);
	strings_free(&cfg->gpu_node_names);
	for (i = 0; i < cfg->n_pools; i++)
		pool_free(&cfg->pools[i]);
	free(cfg->pools);
	strings_free(&cfg->exempt_namespaces);
	for (i = 0; i < cfg->n_exempt_pod_selectors; i++)
		labels_free(&cfg->exempt_pod_selectors[i]);
	free(cfg->exempt_pod_selectors);
	free(cfg);
}

enum config_mode config_mode_for(const struct config *cfg, const char *ns)
{
	size_t i;

	for (i = 0; ns != NULL && i < cfg->n_namespace_modes; i++)
		if (strcmp(cfg->namespace_modes[i].ns, ns) == 0)
			return cfg->namespace_modes[i].mode;
	return cfg->mode;
}

const char *config_mode_name(enum config_mode mode)
{
	switch (mode) {
	case CONFIG_MODE_ENFORCE: return "enforce";
	case CONFIG_MODE_WARN:    return "warn";
	case CONFIG_MODE_DRYRUN:  return "dryrun";
	}
	return "enforce";
}
