#include "text/yaml.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/suggest.h"
#include "base/utf8.h"
#include "text/manifest.h"

/* ==== Errors, with where they are ==== */

/*
 * The node path names in the document ("pools[1].name", "namespaceModes.a"),
 * or the nearest one on the way there that exists: cross-field rules know a
 * field's path but not its node. Keys may hold dots (label keys), so the
 * longest key that matches wins. NULL for an empty document.
 */
static const yaml_node_t *locate(struct yml_reader *ld, const char *path)
{
	yaml_node_t *n = yaml_document_get_root_node(ld->doc);
	const char *p = path;

	while (n != NULL && *p != '\0' && *p != '(') {
		yaml_node_t *next = NULL;
		size_t adv = 0;

		if (*p == '[') {
			char *end;
			unsigned long i = strtoul(p + 1, &end, 10);

			if (n->type != YAML_SEQUENCE_NODE || *end != ']' ||
			    i >= (size_t)(n->data.sequence.items.top - n->data.sequence.items.start))
				break;
			next = yaml_document_get_node(ld->doc, n->data.sequence.items.start[i]);
			adv = (size_t)(end + 1 - p);
		} else if (n->type == YAML_MAPPING_NODE) {
			yaml_node_pair_t *pair;

			for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++) {
				yaml_node_t *k = yaml_document_get_node(ld->doc, pair->key);
				size_t kl;

				if (k == NULL || k->type != YAML_SCALAR_NODE)
					continue;
				kl = k->data.scalar.length;
				if (kl > adv && strncmp(p, (const char *)k->data.scalar.value, kl) == 0 &&
				    (p[kl] == '\0' || p[kl] == '.' || p[kl] == '[')) {
					next = yaml_document_get_node(ld->doc, pair->value);
					adv = kl;
				}
			}
		}
		if (next == NULL)
			break;
		n = next;
		p += adv;
		if (*p == '.')
			p++;
	}
	return n;
}

/*
 * Records one error and keeps going, so check-config can list every problem
 * in a file at once. node is where it is; NULL for a rule over several fields:
 * then path says where (see locate()).
 */
void yml_fail(struct yml_reader *ld, const yaml_node_t *node, const char *path, const char *fmt, ...)
{
	char msg[ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	error_trim_utf8(msg);
	if (node == NULL)
		node = locate(ld, path);
	/* An empty document has no node at all: its first line is as near as it gets. */
	if (ld->add_error(ld->sink, node ? node->start_mark.line + 1 : 1, node ? node->start_mark.column + 1 : 1,
		       ld->name, path[0] ? path : "(top level)", msg) != 0)
		ld->nomem = 1;
}

/*
 * An allocation failed: the load ends ERROR_NOMEM, with no list of errors
 * (a field that could not be stored would show up as a wrong one).
 */
void yml_fail_nomem(struct yml_reader *ld)
{
	ld->nomem = 1;
}

yaml_node_t *yml_node_at(struct yml_reader *ld, int id)
{
	return yaml_document_get_node(ld->doc, id);
}

int yml_scalar_is(const yaml_node_t *n, const char *s)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.length == strlen(s) &&
	       memcmp(n->data.scalar.value, s, n->data.scalar.length) == 0;
}

int yml_is_null(const yaml_node_t *n)
{
	return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE &&
	       (n->data.scalar.length == 0 || yml_scalar_is(n, "~") || yml_scalar_is(n, "null"));
}

const char *yml_scalar(const yaml_node_t *n)
{
	return (const char *)n->data.scalar.value;
}

/* ==== Typed readers: each validates and reports with the field path ==== */

/*
 * New: the typed value of plain scalar n (manifest_scalar()), or NULL when n
 * is not a plain scalar, or memory ran out (then the load ends ERROR_NOMEM:
 * libyaml hands over valid UTF-8 only, which manifest_scalar() never refuses).
 */
json_t *yml_plain_value(struct yml_reader *ld, const yaml_node_t *n)
{
	json_t *v;

	if (n->type != YAML_SCALAR_NODE || n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return NULL;
	v = manifest_scalar(yml_scalar(n), n->data.scalar.length, 1, NULL);
	if (v == NULL && utf8_valid(n->data.scalar.value, n->data.scalar.length))
		yml_fail_nomem(ld);
	return v;
}

/*
 * The JSON type Kubernetes' YAML decoder gives scalar n (manifest_scalar()'s
 * rules: plain 1 is a number, "1" a string, plain true a boolean), so a
 * policy is typed exactly as a manifest is. "a string", "a number", ...
 */
const char *yml_scalar_type(struct yml_reader *ld, const yaml_node_t *n)
{
	json_t *v;
	const char *type;

	if (n->type != YAML_SCALAR_NODE)
		return n->type == YAML_MAPPING_NODE ? "a map" : "a list";
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return "a string";
	v = yml_plain_value(ld, n);
	type = json_is_integer(v) || json_is_real(v) ? "a number" : json_is_boolean(v) ? "a boolean"
	     : json_is_null(v) ? "null" : "a string";
	json_decref(v);
	return type;
}

/* A map key, or a string's text: any scalar (YAML to JSON turns every key into a string). */
char *yml_read_key(struct yml_reader *ld, yaml_node_t *n, const char *path, int allow_empty)
{
	char *s;

	if (n->type != YAML_SCALAR_NODE) {
		yml_fail(ld, n, path, "must be a string");
		return NULL;
	}
	if (n->data.scalar.length > LIMIT_POLICY_STRING_MAX) {
		yml_fail(ld, n, path, "longer than %d characters", LIMIT_POLICY_STRING_MAX);
		return NULL;
	}
	if (strlen(yml_scalar(n)) != n->data.scalar.length) {
		yml_fail(ld, n, path, "contains a NUL character");
		return NULL;
	}
	if (!allow_empty && (n->data.scalar.length == 0 || yml_is_null(n))) {
		yml_fail(ld, n, path, "must not be empty");
		return NULL;
	}
	s = strdup(yml_is_null(n) ? "" : yml_scalar(n));
	if (s == NULL)
		yml_fail_nomem(ld);
	return s;
}

/* A string value: a plain scalar YAML reads as a number or a boolean is not one. */
char *yml_read_string(struct yml_reader *ld, yaml_node_t *n, const char *path, int allow_empty)
{
	const char *type = yml_scalar_type(ld, n);

	if (strcmp(type, "a string") != 0 && strcmp(type, "null") != 0) {
		yml_fail(ld, n, path, "must be a string, not %s%s", type,
		     n->type == YAML_SCALAR_NODE ? " (quote it)" : "");
		return NULL;
	}
	return yml_read_key(ld, n, path, allow_empty);
}

/* yml_read_string() into *slot, replacing what it held; on an error (already reported) *slot stays. */
void yml_read_string_into(struct yml_reader *ld, yaml_node_t *n, const char *path, char **slot, int allow_empty)
{
	char *s = yml_read_string(ld, n, path, allow_empty);

	if (s != NULL) {
		free(*slot);
		*slot = s;
	}
}

size_t yml_seq_len(const yaml_node_t *n)
{
	return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start);
}

size_t yml_map_len(const yaml_node_t *n)
{
	return (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
}

/*
 * The items of sequence n as a zeroed array of size-byte elements (new:
 * free()) in *out, *len of them; null means none (*out still allocated).
 * -1 after failing path when n is no list (what it must be: what), is too
 * long, or memory ran out.
 */
int yml_seq_alloc(struct yml_reader *ld, yaml_node_t *n, const char *path, const char *what, size_t size,
		     void **out, size_t *len)
{
	*out = NULL;
	*len = 0;
	if (!yml_is_null(n)) {
		if (n->type != YAML_SEQUENCE_NODE) {
			yml_fail(ld, n, path, "must be %s", what);
			return -1;
		}
		*len = yml_seq_len(n);
		if (*len > YML_LIST_MAX) {
			yml_fail(ld, n, path, "more than %d entries", YML_LIST_MAX);
			return -1;
		}
	}
	*out = calloc(*len ? *len : 1, size);
	if (*out == NULL) {
		yml_fail_nomem(ld);
		return -1;
	}
	return 0;
}

/* The value of key in mapping n, or NULL. */
yaml_node_t *yml_map_get(struct yml_reader *ld, const yaml_node_t *n, const char *key)
{
	yaml_node_pair_t *pair;

	for (pair = n->data.mapping.pairs.start; pair < n->data.mapping.pairs.top; pair++)
		if (yml_scalar_is(yml_node_at(ld, pair->key), key))
			return yml_node_at(ld, pair->value);
	return NULL;
}

/*
 * Where to say that required field key of mapping item is missing or empty:
 * item when the key is absent, the value when it is null or an empty
 * collection of the kind wanted (YAML_MAPPING_NODE or YAML_SEQUENCE_NODE);
 * NULL when the value has another type, which its own error already says.
 */
yaml_node_t *yml_required_at(struct yml_reader *ld, yaml_node_t *item, const char *key, yaml_node_type_t kind)
{
	yaml_node_t *v = yml_map_get(ld, item, key);

	if (v == NULL)
		return item;
	if (yml_is_null(v) || (v->type == kind && (kind == YAML_MAPPING_NODE ? yml_map_len(v) : yml_seq_len(v)) == 0))
		return v;
	return NULL;
}

/* Where field key of mapping item is, or item itself when it is not there. */
yaml_node_t *yml_field_at(struct yml_reader *ld, yaml_node_t *item, const char *key)
{
	yaml_node_t *v = yml_map_get(ld, item, key);

	return v != NULL ? v : item;
}

/* Duplicate keys are errors, as in Kubernetes' own strict decoding. */
int yml_check_duplicate_key(struct yml_reader *ld, yaml_node_t *map, size_t upto,
			       yaml_node_t *key, const char *path)
{
	size_t j;

	for (j = 0; j < upto; j++) {
		yaml_node_t *other = yml_node_at(ld, map->data.mapping.pairs.start[j].key);
		if (other->type == YAML_SCALAR_NODE && key->type == YAML_SCALAR_NODE &&
		    other->data.scalar.length == key->data.scalar.length &&
		    memcmp(other->data.scalar.value, key->data.scalar.value, key->data.scalar.length) == 0) {
			yml_fail(ld, key, path, "duplicate key \"%s\"", yml_scalar(key));
			return -1;
		}
	}
	return 0;
}

void yml_read_bool(struct yml_reader *ld, yaml_node_t *n, const char *path, int *out)
{
	json_t *v = yml_plain_value(ld, n);

	if (json_is_boolean(v))
		*out = json_is_true(v);
	else
		yml_fail(ld, n, path, "must be true or false, not %s%s", yml_scalar_type(ld, n),
		     n->type == YAML_SCALAR_NODE && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE
		     ? " (remove the quotes)" : "");
	json_decref(v);
}

void yml_read_count(struct yml_reader *ld, yaml_node_t *n, const char *path, long long max,
		       long long *out)
{
	json_t *v = yml_plain_value(ld, n);

	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
		yml_fail(ld, n, path, "must be a whole number from 0 to %lld%s", max,
		     n->type == YAML_SCALAR_NODE && n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE
		     ? ", not a string (remove the quotes)" : "");
	else
		*out = (long long)json_integer_value(v);
	json_decref(v);
}

/*
 * Iterates the pairs of mapping n, calling field() for each key; a key that
 * field() does not know is an error. Keeps the loader's one rule for maps:
 * keys are strings and appear once.
 */
void yml_read_fields(struct yml_reader *ld, yaml_node_t *n, const char *path, void *target,
			yml_field_fn field, const char *known)
{
	char sub[256];
	size_t i, len;

	if (yml_is_null(n))
		return;
	if (n->type != YAML_MAPPING_NODE) {
		yml_fail(ld, n, path, "must be a map");
		return;
	}
	len = yml_map_len(n);
	if (len > YML_LIST_MAX) {  /* also keeps the duplicate-key check's work bounded */
		yml_fail(ld, n, path, "more than %d fields", YML_LIST_MAX);
		return;
	}
	for (i = 0; i < len; i++) {
		yaml_node_t *k = yml_node_at(ld, n->data.mapping.pairs.start[i].key);
		yaml_node_t *v = yml_node_at(ld, n->data.mapping.pairs.start[i].value);

		if (k->type != YAML_SCALAR_NODE) {
			yml_fail(ld, k, path, "keys must be strings");
			continue;
		}
		if (yml_check_duplicate_key(ld, n, i, k, path) != 0)
			continue;
		snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", yml_scalar(k));
		if (field(ld, target, yml_scalar(k), v, sub) != 0) {
			size_t near_len = 0;
			const char *near = suggest_from_list(yml_scalar(k), known, &near_len);

			if (near != NULL)
				yml_fail(ld, k, sub, "unknown field; did you mean %.*s? (known: %s)", (int)near_len,
					 near, known);
			else
				yml_fail(ld, k, sub, "unknown field (known: %s)", known);
		}
	}
}

/*
 * libyaml stopped: one error at the place it names. It names every syntax
 * problem; a failure with none is an allocation it could not make.
 */
void yml_problem(struct yml_reader *ld, const yaml_parser_t *parser, const char *buf, size_t len)
{
	char msg[ERROR_MSG_MAX], what[ERROR_MSG_MAX];

	if (parser->error == YAML_MEMORY_ERROR || parser->error == YAML_NO_ERROR) {
		yml_fail_nomem(ld);
		return;
	}
	error_yaml_problem(what, sizeof what, parser->problem ? parser->problem : "parse error", parser->context,
			   buf, len, parser->problem_mark.index);
	snprintf(msg, sizeof msg, "not valid YAML: %s", what);
	error_trim_utf8(msg);
	if (ld->add_error(ld->sink, parser->problem_mark.line + 1, parser->problem_mark.column + 1, ld->name,
		       "(document)", msg) != 0)
		yml_fail_nomem(ld);
}

/* ==== Bounds of the YAML text (see YML_NODES_MAX) ==== */

/* An anchor seen so far, and how many nodes an alias to it stands for (0 while its node is open). */
struct bound_anchor {
	char *name;
	size_t nodes;
};

struct bounds {
	struct yml_reader *ld;
	struct bound_anchor anchors[YML_ANCHORS_MAX];
	size_t n_anchors;
	struct {
		size_t start;  /* nodes counted before this list or map */
		int anchor;    /* its entry in anchors, or -1 */
	} open[YML_DEPTH_MAX];
	size_t depth;
	size_t nodes;      /* so far, aliases expanded */
};

/* Records one problem at mark and says the check is over (-1). */
static int bounds_fail(struct bounds *b, yaml_mark_t mark, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int bounds_fail(struct bounds *b, yaml_mark_t mark, const char *fmt, ...)
{
	char msg[ERROR_MSG_MAX];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	if (b->ld->add_error(b->ld->sink, mark.line + 1, mark.column + 1, b->ld->name, "(document)", msg) != 0)
		yml_fail_nomem(b->ld);
	return -1;
}

static int bounds_count(struct bounds *b, size_t n, yaml_mark_t mark)
{
	b->nodes += n;
	if (b->nodes > YML_NODES_MAX)
		return bounds_fail(b, mark, "more than %d YAML nodes (scalars, lists and maps; an alias counts "
				   "as what it repeats): a policy needs a few hundred", YML_NODES_MAX);
	return 0;
}

/* A node's anchor: kept with its size when known (scalars), else completed when the node ends. -1 when over. */
static int bounds_anchor(struct bounds *b, const yaml_char_t *name, size_t nodes, yaml_mark_t mark, int *slot)
{
	*slot = -1;
	if (name == NULL)
		return 0;
	if (b->n_anchors == YML_ANCHORS_MAX)
		return bounds_fail(b, mark, "more than %d anchors (&name)", YML_ANCHORS_MAX);
	if ((b->anchors[b->n_anchors].name = strdup((const char *)name)) == NULL) {
		yml_fail_nomem(b->ld);
		return -1;
	}
	b->anchors[b->n_anchors].nodes = nodes;
	*slot = (int)b->n_anchors++;
	return 0;
}

/* What an alias to name stands for: the latest complete anchor of that name (libyaml refuses the rest). */
static size_t bounds_alias(const struct bounds *b, const yaml_char_t *name)
{
	size_t i;

	for (i = b->n_anchors; name != NULL && i-- > 0;)
		if (strcmp(b->anchors[i].name, (const char *)name) == 0)
			return b->anchors[i].nodes ? b->anchors[i].nodes : 1;
	return 1;
}

static int bounds_event(struct bounds *b, const yaml_event_t *ev)
{
	int slot;

	switch (ev->type) {
	case YAML_SCALAR_EVENT:
		if (bounds_count(b, 1, ev->start_mark) != 0)
			return -1;
		return bounds_anchor(b, ev->data.scalar.anchor, 1, ev->start_mark, &slot);
	case YAML_ALIAS_EVENT:
		return bounds_count(b, bounds_alias(b, ev->data.alias.anchor), ev->start_mark);
	case YAML_SEQUENCE_START_EVENT:
	case YAML_MAPPING_START_EVENT:
		if (b->depth == YML_DEPTH_MAX)
			return bounds_fail(b, ev->start_mark, "lists and maps nest deeper than %d levels",
					   YML_DEPTH_MAX);
		if (bounds_count(b, 1, ev->start_mark) != 0 ||
		    bounds_anchor(b, ev->type == YAML_SEQUENCE_START_EVENT ? ev->data.sequence_start.anchor
					   : ev->data.mapping_start.anchor, 0, ev->start_mark, &slot) != 0)
			return -1;
		b->open[b->depth].start = b->nodes - 1;
		b->open[b->depth].anchor = slot;
		b->depth++;
		return 0;
	case YAML_SEQUENCE_END_EVENT:
	case YAML_MAPPING_END_EVENT:
		if (b->depth > 0 && (slot = b->open[--b->depth].anchor) >= 0)
			b->anchors[slot].nodes = b->nodes - b->open[b->depth].start;
		return 0;
	default:
		return 0;
	}
}

/*
 * Checks buf against YML_NODES_MAX and its kin before libyaml builds a
 * document of it: 0 when within them (or not valid YAML, which the load then
 * reports as it always did, having built no more than the part checked), -1
 * with the one problem recorded (or ld->nomem set). Linear in len.
 */
int yml_check_bounds(struct yml_reader *ld, const char *buf, size_t len)
{
	struct bounds b;
	yaml_parser_t parser;
	yaml_event_t ev;
	size_t i, directives = 0, line = 0;
	int rc = 0, done = 0;

	/* Directives are all read, and compared, before the first event: counted in the text. */
	for (i = 0; i < len; i++) {
		if (buf[i] == '%' && (i == 0 || buf[i - 1] == '\n') && ++directives > YML_DIRECTIVES_MAX) {
			yaml_mark_t mark = { i, line, 0 };

			memset(&b, 0, sizeof b);
			b.ld = ld;
			return bounds_fail(&b, mark, "more than %d lines start with %% (YAML directives)",
					   YML_DIRECTIVES_MAX);
		}
		if (buf[i] == '\n')
			line++;
	}
	memset(&b, 0, sizeof b);
	b.ld = ld;
	if (!yaml_parser_initialize(&parser)) {
		yml_fail_nomem(ld);
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)buf, len);
	while (rc == 0 && !done) {
		if (!yaml_parser_parse(&parser, &ev)) {
			if (parser.error == YAML_MEMORY_ERROR) {
				yml_fail_nomem(ld);
				rc = -1;
			}
			break;  /* not YAML: the load says so */
		}
		done = ev.type == YAML_STREAM_END_EVENT;
		rc = bounds_event(&b, &ev);
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	for (i = 0; i < b.n_anchors; i++)
		free(b.anchors[i].name);
	return rc;
}
