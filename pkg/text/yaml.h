/*
 * yaml: a YAML document read field by field, every problem kept with its line
 * and column, and the text's shape bounded before libyaml builds a document.
 *
 * The policy file is its one reader today (policy/config_schema.c holds the schema);
 * what is here knows YAML and Kubernetes' typing of it (manifest_scalar():
 * plain 1 is a number, "1" a string), not the policy. The prefix is yml_,
 * not yaml_: libyaml owns that one, internal functions included.
 *
 * The readers never stop at the first problem: each one is handed to the
 * reader's add_error() with the node's place and the field's path
 * ("pools[1].name"), and reading goes on, so a user sees every problem in a
 * file at once. An allocation that fails sets nomem instead: the caller's
 * load then ends ERROR_NOMEM, with no list (a field that could not be stored
 * would show up as a wrong one).
 */
#ifndef GPU_ADMISSION_YAML_H
#define GPU_ADMISSION_YAML_H

#include <stddef.h>

#include <jansson.h>
#include <yaml.h>

#include "base/error.h"
#include "base/limit.h"

#define YML_LIST_MAX 1024  /* entries in any one list or map */

/*
 * The shape of the YAML text, checked on libyaml's event stream before the
 * document is built (yml_check_bounds()): the policy also arrives from the
 * network (the webhook judges edits of its ConfigMap), and libyaml's own
 * costs are not linear in the text. A 1 MiB flow list of one-letter scalars
 * builds a 90 MB document; flow nesting costs the scanner time in the square
 * of the depth (minutes at 500,000 levels); each anchor and each %TAG
 * directive is compared with every earlier one (18 s for 88,000 anchors, 5 s
 * for 40,000 directives); an alias is walked by the loader as a copy of what
 * it names. A policy needs a few hundred nodes, nesting 7 deep, no anchors.
 */
#define YML_NODES_MAX 20000    /* scalars, lists and maps, an alias counting as what it
                                  repeats: ~170 bytes each in libyaml's document */
#define YML_DEPTH_MAX 32       /* lists and maps inside each other */
#define YML_ANCHORS_MAX 64     /* &anchors in a file */
#define YML_DIRECTIVES_MAX 16  /* lines starting with %, where directives go */

/* One document being read; the caller owns every member. */
struct yml_reader {
	yaml_document_t *doc;  /* NULL while only yml_check_bounds() runs */
	const char *name;      /* the file, as errors name it */
	/* Keeps one error (name:line:column: path: msg); -1 when memory ran out. */
	int (*add_error)(void *sink, unsigned long line, unsigned long column, const char *name,
			 const char *path, const char *msg);
	void *sink;            /* add_error()'s */
	int nomem;             /* an allocation failed: the load ends ERROR_NOMEM, not with errors */
};

/*
 * Records one error and keeps going. node is where it is; NULL for a rule
 * over several fields: then path ("pools[1].name") says where, the nearest
 * node on the way there that exists.
 */
void yml_fail(struct yml_reader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* An allocation failed (see nomem). */
void yml_fail_nomem(struct yml_reader *ld);
/* libyaml's parser stopped: one error where it says, or nomem when it says nothing. */
void yml_problem(struct yml_reader *ld, const yaml_parser_t *parser, const char *buf, size_t len);

/*
 * 0 when buf is within YML_NODES_MAX and its kin (or not valid YAML, which
 * the load then reports having built no more than the part checked); -1 with
 * the one problem recorded (or nomem). Linear in len; no document is built.
 */
int yml_check_bounds(struct yml_reader *ld, const char *buf, size_t len);

/* ---- Nodes (borrowed from ld->doc) ---- */

yaml_node_t *yml_node_at(struct yml_reader *ld, int id);
int yml_scalar_is(const yaml_node_t *n, const char *s);
/* A plain empty scalar, ~ or null. */
int yml_is_null(const yaml_node_t *n);
/* A scalar's text (NUL-terminated by libyaml). */
const char *yml_scalar(const yaml_node_t *n);
size_t yml_seq_len(const yaml_node_t *n);
size_t yml_map_len(const yaml_node_t *n);
/* The value of key in mapping n, or NULL. */
yaml_node_t *yml_map_get(struct yml_reader *ld, const yaml_node_t *n, const char *key);
/*
 * Where to say that required field key of mapping item is missing or empty:
 * item when absent, the value when null or an empty collection of kind; NULL
 * when the value has another type (its own error says so).
 */
yaml_node_t *yml_required_at(struct yml_reader *ld, yaml_node_t *item, const char *key, yaml_node_type_t kind);
/* Where field key of mapping item is, or item itself when it is not there. */
yaml_node_t *yml_field_at(struct yml_reader *ld, yaml_node_t *item, const char *key);
/* -1 (and an error at key) when key appears among map's first upto keys. */
int yml_check_duplicate_key(struct yml_reader *ld, yaml_node_t *map, size_t upto, yaml_node_t *key,
			    const char *path);

/* ---- Typed readers: each reports with the field path ---- */

/* New (json_decref()): the typed value of plain scalar n, or NULL when it is none (or nomem). */
json_t *yml_plain_value(struct yml_reader *ld, const yaml_node_t *n);
/* The JSON type Kubernetes' YAML decoder gives n: "a string", "a number", "a map", ... (static). */
const char *yml_scalar_type(struct yml_reader *ld, const yaml_node_t *n);
/* New (free()): a map key, any scalar of at most LIMIT_POLICY_STRING_MAX bytes; NULL after an error. */
char *yml_read_key(struct yml_reader *ld, yaml_node_t *n, const char *path, int allow_empty);
/* New (free()): a string value (a plain number or boolean is not one); NULL after an error. */
char *yml_read_string(struct yml_reader *ld, yaml_node_t *n, const char *path, int allow_empty);
/* yml_read_string() into *slot (owned), freeing what it held; on an error *slot stays. */
void yml_read_string_into(struct yml_reader *ld, yaml_node_t *n, const char *path, char **slot, int allow_empty);
/*
 * The items of sequence n as a zeroed array of size-byte elements (new:
 * free()) in *out, *len of them; null means none. -1 after an error when n is
 * no list (what it must be: what), is longer than YML_LIST_MAX, or nomem.
 */
int yml_seq_alloc(struct yml_reader *ld, yaml_node_t *n, const char *path, const char *what, size_t size,
		  void **out, size_t *len);
void yml_read_bool(struct yml_reader *ld, yaml_node_t *n, const char *path, int *out);
/* A whole number from 0 to max into *out; on an error *out stays. */
void yml_read_count(struct yml_reader *ld, yaml_node_t *n, const char *path, long long max, long long *out);

/*
 * One field of a map: reads value into target; -1 when key is not a field
 * (yml_read_fields() then says so, listing known).
 */
typedef int (*yml_field_fn)(struct yml_reader *ld, void *target, const char *key, yaml_node_t *value,
			    const char *path);
/* Each pair of mapping n (null: none) through field(); keys are strings, each once. */
void yml_read_fields(struct yml_reader *ld, yaml_node_t *n, const char *path, void *target,
		     yml_field_fn field, const char *known);

#endif
