/*
 * config: loading a policy. The default (default-config.yaml, compiled in) is
 * read first and a user's file overlaid on it by the same schema
 * (config_schema.c), then the rules over several fields are checked
 * (config_check.c) and every error is put in file order. Also the small
 * queries the engine asks of a loaded policy.
 */
#include "policy/config_int.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/array.h"
#include "base/file.h"

/*
 * What a load allocates at most (config_load_memory()): measured by
 * test_oom on the costliest texts within the schema's limits
 * (config_schema.c), with room.
 */
#define CONFIG_LOAD_BASE (256u * 1024)        /* the default policy, parser buffers */
#define CONFIG_LOAD_PER_BYTE 160u             /* dense nodes: "[a,a,..." ~170 B of document per 2 bytes */
#define CONFIG_LOAD_MAX (8u * 1024 * 1024)    /* at YML_NODES_MAX, with errors */

/*
 * The embedded default. It is parsed by the same code as a user file, so the
 * text printed by print-default-config is exactly the policy in force when no
 * file is given.
 */
const char *config_default_yaml(void)
{
	return (const char *)config_default_text;
}

/* ==== Error collection ==== */

void config_errors_free(struct config_errors *errs)
{
	size_t i;

	if (errs == NULL)
		return;
	for (i = 0; i < errs->n; i++)
		free(errs->v[i].text);
	free(errs->v);
	memset(errs, 0, sizeof *errs);
}

/*
 * Keeps one error; past CONFIG_ERRORS_MAX it is only counted. -1 when memory
 * ran out (the load then ends ERROR_NOMEM: a list with an error missing would
 * be a wrong answer).
 */
static int errors_add(void *sink, unsigned long line, unsigned long column,
		      const char *name, const char *path, const char *msg)
{
	struct config_errors *errs = sink;
	int n;
	char *text;

	errs->total++;
	if (errs->n >= CONFIG_ERRORS_MAX)
		return 0;
	if (errs->n == errs->cap) {
		struct config_error *grown = array_grow(errs->v, &errs->cap, errs->n + 1, sizeof *grown, 64);

		if (grown == NULL)
			return -1;
		errs->v = grown;
	}
	n = snprintf(NULL, 0, "%s:%lu:%lu: %s: %s", name, line, column, path, msg);
	if (n < 0 || (text = malloc((size_t)n + 1)) == NULL)
		return -1;
	snprintf(text, (size_t)n + 1, "%s:%lu:%lu: %s: %s", name, line, column, path, msg);
	errs->v[errs->n].line = line;
	errs->v[errs->n].column = column;
	errs->v[errs->n].text = text;
	errs->n++;
	return 0;
}

/* ==== Loading ==== */

/* Overlays the YAML in buf on cfg. Every problem goes to errs; 0 when there were none. */
static int apply_yaml(struct config *cfg, const char *buf, size_t len, const char *name,
		      struct config_errors *errs, struct error *err)
{
	yaml_parser_t parser;
	yaml_document_t doc, extra;
	struct yml_reader ld = { .doc = &doc, .name = name, .add_error = errors_add, .sink = errs, .nomem = 0 };
	yaml_node_t *root;
	size_t before = errs->total;

	if (yml_check_bounds(&ld, buf, len) != 0)
		goto out;
	if (!yaml_parser_initialize(&parser)) {
		error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	if (!yaml_parser_load(&parser, &doc)) {
		yml_problem(&ld, &parser, buf, len);
		goto out_parser;
	}
	root = yaml_document_get_root_node(&doc);
	if (root != NULL && !yml_is_null(root)) {
		if (root->type != YAML_MAPPING_NODE)
			yml_fail(&ld, root, "(top level)", "must be a map of fields");
		else
			config_schema_read(&ld, root, cfg);
	}
	if (root != NULL) {
		if (!yaml_parser_load(&parser, &extra)) {
			yml_problem(&ld, &parser, buf, len);
		} else {
			if (yaml_document_get_root_node(&extra) != NULL)
				yml_fail(&ld, yaml_document_get_root_node(&extra), "(document)",
				     "a policy file holds one YAML document");
			yaml_document_delete(&extra);
		}
	}
	/* Also after other errors: a rule over several fields is one more thing to fix. */
	if (!ld.nomem)
		config_check_whole(&ld, cfg);
	yaml_document_delete(&doc);
out_parser:
	yaml_parser_delete(&parser);
out:
	if (ld.nomem) {
		/* Not a policy error: no list, and err's kind tells the two apart. */
		config_errors_free(errs);
		error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		return -1;
	}
	return errs->total == before ? 0 : -1;
}

/* An error and the order it was found in: errors at the same place keep that order. */
struct ordered_error {
	struct config_error e;
	size_t seq;
};

static int ordered_cmp(const void *a, const void *b)
{
	const struct ordered_error *x = a, *y = b;

	if (x->e.line != y->e.line)
		return x->e.line < y->e.line ? -1 : 1;
	if (x->e.column != y->e.column)
		return x->e.column < y->e.column ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/*
 * Puts errs in file order (rules over several fields are checked last, but
 * point into the file). -1 when out of memory.
 */
static int errors_sort(struct config_errors *errs)
{
	struct ordered_error *tmp;
	size_t i;

	if (errs->n < 2)
		return 0;
	if ((tmp = calloc(errs->n, sizeof *tmp)) == NULL)
		return -1;
	for (i = 0; i < errs->n; i++) {
		tmp[i].e = errs->v[i];
		tmp[i].seq = i;
	}
	qsort(tmp, errs->n, sizeof *tmp, ordered_cmp);
	for (i = 0; i < errs->n; i++)
		errs->v[i] = tmp[i].e;
	free(tmp);
	return 0;
}

/* The summary in err for a load that failed with errors in errs. */
static void errors_summary(const struct config_errors *errs, const char *name, int listed,
			   struct error *err)
{
	if (errs->total == 1)
		error_set(err, ERROR_CONFIG, "%s", errs->v[0].text);
	else if (listed)
		error_set(err, ERROR_CONFIG, "%s: %zu errors", name, errs->total);
	else
		error_set(err, ERROR_CONFIG, "%s (and %zu more: gpu-admission check-config %s lists them all)",
			  errs->v[0].text, errs->total - 1, name);
}

struct config *config_default(struct error *err)
{
	struct config_errors errs = { 0 };
	struct config *cfg = calloc(1, sizeof *cfg);

	if (cfg == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	if (apply_yaml(cfg, config_default_yaml(), config_default_len, "(default policy)", &errs, err) != 0) {
		if (errs.total > 0)
			errors_summary(&errs, "(default policy)", 0, err);
		config_free(cfg);
		cfg = NULL;
	}
	config_errors_free(&errs);
	return cfg;
}

struct config *config_load_buffer_all(const char *buf, size_t len, const char *name,
				      struct config_errors *errs, struct error *err)
{
	struct config_errors own = { 0 };
	struct config_errors *e = errs ? errs : &own;
	struct config *cfg;

	config_errors_free(e);
	if (len > CONFIG_FILE_MAX) {  /* as file_read() refuses a larger file */
		char size[32];

		error_set(err, ERROR_TOO_LARGE, "%s: larger than %s", name,
			  error_size_text(size, sizeof size, (size_t)CONFIG_FILE_MAX));
		return NULL;
	}
	if ((cfg = config_default(err)) == NULL)
		return NULL;
	if (apply_yaml(cfg, buf, len, name, e, err) != 0) {
		config_free(cfg);
		cfg = NULL;
		if (e->total > 0 && errors_sort(e) != 0) {
			config_errors_free(e);
			error_set(err, ERROR_NOMEM, "%s: out of memory", name);
		} else if (e->total > 0) {
			errors_summary(e, name, errs != NULL, err);
		}
	}
	config_errors_free(&own);
	return cfg;
}

size_t config_load_memory(size_t len)
{
	size_t n = len < CONFIG_FILE_MAX ? len : CONFIG_FILE_MAX;
	size_t bound = CONFIG_LOAD_BASE + n * CONFIG_LOAD_PER_BYTE;

	return bound < CONFIG_LOAD_MAX ? bound : CONFIG_LOAD_MAX;
}

struct config *config_load_buffer(const char *buf, size_t len, const char *name,
				  struct error *err)
{
	return config_load_buffer_all(buf, len, name, NULL, err);
}

struct config *config_load_file_all(const char *path, struct config_errors *errs, struct error *err)
{
	struct config *cfg;
	size_t len;
	char *buf;

	if (errs != NULL)
		config_errors_free(errs);
	if ((buf = file_read(path, CONFIG_FILE_MAX, &len, err)) == NULL)
		return NULL;
	cfg = config_load_buffer_all(buf, len, path, errs, err);
	free(buf);
	return cfg;
}

struct config *config_load_file(const char *path, struct error *err)
{
	return config_load_file_all(path, NULL, err);
}

void config_free(struct config *cfg)
{
	if (cfg == NULL)
		return;
	config_schema_free(cfg);
	free(cfg);
}

/* ==== What the engine and the generators ask of a loaded policy ==== */

const char *config_label_alias(const char *key)
{
	static const char *const aliases[][2] = {
		{ CONFIG_AKS_POOL_LABEL, CONFIG_AKS_POOL_ALIAS },
	};
	size_t i;

	for (i = 0; key != NULL && i < sizeof aliases / sizeof aliases[0]; i++) {
		if (strcmp(key, aliases[i][0]) == 0)
			return aliases[i][1];
		if (strcmp(key, aliases[i][1]) == 0)
			return aliases[i][0];
	}
	return NULL;
}

int config_label_same(const char *a, const char *b)
{
	const char *alias = config_label_alias(a);

	return strcmp(a, b) == 0 || (alias != NULL && strcmp(alias, b) == 0);
}

const char *config_pool_aks_pool(const struct config_pool *p)
{
	size_t i;

	/* The label first, then its alias: the chart's match conditions read them in this order. */
	for (int pass = 0; pass < 2; pass++)
		for (i = 0; i < p->node_selector.n; i++)
			if (strcmp(p->node_selector.v[i].key, pass ? CONFIG_AKS_POOL_ALIAS : CONFIG_AKS_POOL_LABEL) == 0 &&
			    p->node_selector.v[i].value[0])
				return p->node_selector.v[i].value;
	return NULL;
}

const char *config_pool_key(const struct config *cfg)
{
	size_t i;

	for (i = 0; i < cfg->n_pools; i++)
		if (cfg->pools[i].node_selector.n != 1 ||
		    strcmp(cfg->pools[i].node_selector.v[0].key, cfg->pools[0].node_selector.v[0].key) != 0)
			return NULL;
	return cfg->n_pools > 0 ? cfg->pools[0].node_selector.v[0].key : NULL;
}

const struct config_workload *config_workload_find(const struct config *cfg, const char *group,
						   const char *version, const char *kind)
{
	size_t i, j;

	for (i = 0; group != NULL && kind != NULL && i < cfg->n_workloads; i++) {
		const struct config_workload *w = &cfg->workloads[i];

		if (w->group == NULL || w->kind == NULL || strcmp(w->group, group) != 0 || strcmp(w->kind, kind) != 0)
			continue;
		if (w->versions.n == 0)
			return w;
		for (j = 0; version != NULL && j < w->versions.n; j++)
			if (strcmp(w->versions.v[j], version) == 0)
				return w;
	}
	return NULL;
}

int config_gpu_infra(const struct config *cfg, const char *ns)
{
	size_t i;

	for (i = 0; ns != NULL && i < cfg->gpu_infra_namespaces.n; i++)
		if (strcmp(cfg->gpu_infra_namespaces.v[i], ns) == 0)
			return 1;
	return 0;
}

enum config_mode config_mode_for(const struct config *cfg, const char *ns)
{
	size_t i;

	for (i = 0; ns != NULL && i < cfg->n_namespace_modes; i++)
		if (strcmp(cfg->namespace_modes[i].ns, ns) == 0)
			return cfg->namespace_modes[i].mode;
	return cfg->mode;
}

const char *config_placement_name(enum config_placement placement)
{
	return placement == CONFIG_PLACEMENT_FALLBACK ? "fallback" : "pinned";
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
