#include "text/manifest.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "base/array.h"
#include "base/iterable.h"
#include "text/manifest_int.h"
#include "base/utf8.h"

#define TAG_PREFIX "tag:yaml.org,2002:"

/* ==== Lines and document markers (what libyaml counts as a break) ==== */

size_t manifest_line_break(const char *p, const char *end)
{
	if (p >= end)
		return 0;
	if (p[0] == '\r')
		return p + 1 < end && p[1] == '\n' ? 2 : 1;
	if (p[0] == '\n')
		return 1;
	if ((unsigned char)p[0] == 0xC2 && p + 1 < end && (unsigned char)p[1] == 0x85)
		return 2;
	if ((unsigned char)p[0] == 0xE2 && p + 2 < end && (unsigned char)p[1] == 0x80 &&
	    ((unsigned char)p[2] == 0xA8 || (unsigned char)p[2] == 0xA9))
		return 3;
	return 0;
}

/* "---" or "..." at column 0 followed by a blank, a break or the end. */
int manifest_is_marker(const char *p, const char *end, char c)
{
	if (end - p < 3 || p[0] != c || p[1] != c || p[2] != c)
		return 0;
	return end - p == 3 || p[3] == ' ' || p[3] == '\t' || manifest_line_break(p + 3, end) > 0;
}

/* The line [ls, end) holds only blanks, or blanks and a comment. */
int manifest_comment_line(const char *ls, const char *end)
{
	while (ls < end && (*ls == ' ' || *ls == '\t'))
		ls++;
	return ls == end || *ls == '#' || manifest_line_break(ls, end) > 0;
}

/* Offset just past the line starting at p (its break included). */
static const char *next_line(const char *p, const char *end)
{
	size_t n;

	while (p < end && (n = manifest_line_break(p, end)) == 0)
		p++;
	return p + (p < end ? manifest_line_break(p, end) : 0);
}

/* Start of 1-based line `line` counted from s (which is line `first`); NULL if there is none. */
const char *manifest_line_start(const char *s, const char *end, unsigned long first, unsigned long line)
{
	while (first < line) {
		size_t n = 0;

		while (s < end && (n = manifest_line_break(s, end)) == 0)
			s++;
		if (s >= end)
			return NULL;  /* the last line has no break: no line after it */
		s += n;
		first++;
	}
	return s;
}

/* ==== Scalars: YAML 1.1 resolution as Kubernetes' decoder does it ==== */

static int in_list(const char *s, size_t len, const char *const *words)
{
	for (; *words != NULL; words++)
		if (strlen(*words) == len && memcmp(*words, s, len) == 0)
			return 1;
	return 0;
}

/* [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)? */
static int float_syntax(const char *s)
{
	size_t digits = 0;

	if (*s == '+' || *s == '-')
		s++;
	while (*s >= '0' && *s <= '9') {
		s++;
		digits++;
	}
	if (*s == '.') {
		size_t frac = 0;

		s++;
		while (*s >= '0' && *s <= '9') {
			s++;
			frac++;
		}
		if (digits == 0 && frac == 0)
			return 0;
	} else if (digits == 0) {
		return 0;
	}
	if (*s == 'e' || *s == 'E') {
		s++;
		if (*s == '+' || *s == '-')
			s++;
		if (!(*s >= '0' && *s <= '9'))
			return 0;
		while (*s >= '0' && *s <= '9')
			s++;
	}
	return *s == '\0';
}

/* Integer per Go's strconv.ParseInt(s, 0, 64): 0x, 0o, 0b, leading-0 octal, decimal. */
static int int_syntax(const char *s, long long *out, int *overflow)
{
	const char *p = s, *digits;
	int neg = 0, base = 10;
	unsigned long long v = 0, limit;

	*overflow = 0;
	if (*p == '+' || *p == '-')
		neg = *p++ == '-';
	if (p[0] == '0' && (p[1] == 'x' || p[1] == 'X')) {
		base = 16;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'o' || p[1] == 'O')) {
		base = 8;
		p += 2;
	} else if (p[0] == '0' && (p[1] == 'b' || p[1] == 'B')) {
		base = 2;
		p += 2;
	} else if (p[0] == '0' && p[1] != '\0') {
		base = 8;
		p++;
	}
	digits = p;
	limit = neg ? (unsigned long long)LLONG_MAX + 1ULL : (unsigned long long)LLONG_MAX;
	for (; *p != '\0'; p++) {
		int d;

		if (*p >= '0' && *p <= '9')
			d = *p - '0';
		else if (*p >= 'a' && *p <= 'f')
			d = *p - 'a' + 10;
		else if (*p >= 'A' && *p <= 'F')
			d = *p - 'A' + 10;
		else
			return 0;
		if (d >= base)
			return 0;
		if (v > (limit - (unsigned long long)d) / (unsigned long long)base)
			*overflow = 1;
		else
			v = v * (unsigned long long)base + (unsigned long long)d;
	}
	if (p == digits)
		return 0;
	if (!*overflow)
		*out = neg ? (long long)(0ULL - v) : (long long)v;
	return 1;
}

/*
 * The value a plain scalar resolves to (null, a boolean, a number), or NULL
 * when it is text; *nomem is set when the value could not be allocated.
 */
static json_t *resolve_plain(const char *s, size_t len, int *nomem)
{
	static const char *const nulls[] = { "", "~", "null", "Null", "NULL", NULL };
	static const char *const trues[] = { "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE",
					     "on", "On", "ON", NULL };
	static const char *const falses[] = { "n", "N", "no", "No", "NO", "false", "False", "FALSE",
					      "off", "Off", "OFF", NULL };
	char num[72];
	size_t i, n = 0;
	long long iv;
	int overflow;

	if (in_list(s, len, nulls))
		return json_null();
	if (in_list(s, len, trues))
		return json_true();
	if (in_list(s, len, falses))
		return json_false();
	if (len == 0 || len >= sizeof num || strchr("0123456789+-.", s[0]) == NULL)
		return NULL;
	for (i = 0; i < len; i++) {
		if (s[i] == '_')
			continue;  /* go-yaml v2 drops underscores in numbers */
		if (s[i] == '\0')
			return NULL;
		num[n++] = s[i];
	}
	num[n] = '\0';
	if (int_syntax(num, &iv, &overflow) && !overflow) {
		json_t *v = json_integer(iv);

		*nomem = v == NULL;
		return v;
	}
	if (float_syntax(num) || (overflow && strspn(num, "+-0123456789") == n)) {
		double d;

		errno = 0;
		d = strtod(num, NULL);
		if (errno == 0) {
			json_t *v = json_real(d);  /* NULL (left a string) for inf */

			*nomem = v == NULL && isfinite(d);
			return v;
		}
	}
	return NULL;
}

json_t *manifest_scalar(const char *s, size_t len, int plain, const char *tag)
{
	json_t *v = NULL;
	int nomem = 0;

	if (tag != NULL && strncmp(tag, TAG_PREFIX, strlen(TAG_PREFIX)) == 0) {
		const char *t = tag + strlen(TAG_PREFIX);

		if (strcmp(t, "int") == 0 || strcmp(t, "float") == 0 || strcmp(t, "bool") == 0 ||
		    strcmp(t, "null") == 0)
			plain = 1;
		else
			plain = 0;  /* !!str, !!binary, !!timestamp ...: text */
	}
	if (plain)
		v = resolve_plain(s, len, &nomem);
	if (nomem)
		return NULL;  /* never the text instead of the number it could not store */
	return v != NULL ? v : json_stringn(s, len);
}

/* ==== Building jansson values from libyaml events ==== */

struct anchor {
	char *name;
	json_t *node;  /* one reference held */
};

struct frame {
	json_t *node;         /* owned until handed to the parent */
	char *anchor;         /* owned; registered when the collection ends */
	char *key;            /* owned: the pending key of a mapping */
	size_t key_len;
	unsigned long key_line;
	int key_merge;        /* the pending key is "<<" */
	json_t *merges;       /* owned: values of "<<" keys, merged at the end */
	size_t pos;           /* index into the position table, or SIZE_MAX */
};

struct builder {
	struct frame stack[MANIFEST_DEPTH_MAX];
	size_t depth;
	json_t *root;
	json_t *graveyard;    /* replaced duplicate-key values: kept alive so addresses stay unique */
	struct anchor *anchors;
	size_t n_anchors, cap_anchors;
	size_t budget;
	int record;
	struct manifest_pos *pos;
	size_t n_pos, cap_pos;
	unsigned long line0;  /* line of the chunk's first byte */
	int aliases, json, documents;
	int too_deep;         /* an alias copy would nest deeper than MANIFEST_DEPTH_MAX */
	unsigned long content_line;
	int root_text;        /* the root is a scalar with text (null, ~): not an empty document */
	unsigned long error_line;
	char error[MANIFEST_ERROR_MAX];
	int nomem;
};

static int build_fail(struct builder *b, unsigned long line, const char *msg)
{
	if (b->error[0] == '\0') {
		b->error_line = line;
		snprintf(b->error, sizeof b->error, "%s", msg);
	}
	return -1;
}

static int oom(struct builder *b)
{
	b->nomem = 1;
	return build_fail(b, 0, "out of memory");
}

/*
 * s[0..len) did not become a JSON string: jansson refuses invalid UTF-8
 * (what: the input error), and fails the same way when out of memory.
 */
static int not_string(struct builder *b, unsigned long line, const char *s, size_t len, const char *what)
{
	return utf8_valid((const unsigned char *)s, len) ? oom(b) : build_fail(b, line, what);
}

static unsigned long abs_line(const struct builder *b, const yaml_mark_t *m)
{
	return b->line0 + (unsigned long)m->line;
}

static int anchor_add(struct builder *b, const char *name, json_t *node)
{
	struct anchor *grown;

	if (name == NULL)
		return 0;
	if ((grown = array_grow(b->anchors, &b->cap_anchors, b->n_anchors + 1, sizeof *grown, 8)) == NULL)
		return oom(b);
	b->anchors = grown;
	b->anchors[b->n_anchors].name = strdup(name);
	if (b->anchors[b->n_anchors].name == NULL)
		return oom(b);
	b->anchors[b->n_anchors++].node = json_incref(node);
	return 0;
}

/* Deep copy charged to the alias budget: an alias bomb stops here, early. */
static json_t *copy_counted(struct builder *b, const json_t *v, int depth)
{
	json_t *c = NULL, *child;
	const char *key;
	size_t i;

	if (b->budget == 0)
		return NULL;
	if (depth > MANIFEST_DEPTH_MAX) {
		b->too_deep = 1;
		return NULL;
	}
	b->budget--;
	if (json_is_object(v)) {
		if ((c = json_object()) == NULL)
			return NULL;
		json_object_foreach(iterable(v), key, child)
			if (json_object_set_new(c, key, copy_counted(b, child, depth + 1)) != 0)
				goto fail;
	} else if (json_is_array(v)) {
		if ((c = json_array()) == NULL)
			return NULL;
		json_array_foreach(v, i, child)
			if (json_array_append_new(c, copy_counted(b, child, depth + 1)) != 0)
				goto fail;
	} else {
		c = json_copy((json_t *)(uintptr_t)v);
	}
	return c;
fail:
	json_decref(c);
	return NULL;
}

/* Hands v (stolen) to the collection on top of the stack, or makes it the root. */
static int add_value(struct builder *b, json_t *v, unsigned long line)
{
	struct frame *f;
	json_t *old;
	int rc;

	if (v == NULL)
		return oom(b);
	if (b->depth == 0) {
		if (b->root != NULL) {
			json_decref(v);
			return build_fail(b, line, "more than one document without a --- separator");
		}
		b->root = v;
		return 0;
	}
	f = &b->stack[b->depth - 1];
	if (json_is_array(f->node))
		return json_array_append_new(f->node, v) == 0 ? 0 : oom(b);
	if (f->key_merge) {
		rc = json_array_append_new(f->merges, v);
	} else {
		old = json_object_getn(f->node, f->key, f->key_len);
		if (old != NULL && json_array_append(b->graveyard, old) != 0) {
			json_decref(v);
			rc = -1;
		} else {
			rc = json_object_setn_new(f->node, f->key, f->key_len, v);
		}
		if (rc != 0) {
			json_t *k = json_stringn(f->key, f->key_len);  /* why did it fail? */

			json_decref(k);
			if (k == NULL) {
				int r = not_string(b, line, f->key, f->key_len, "a mapping key is not valid UTF-8");

				free(f->key);
				f->key = NULL;
				return r;
			}
			free(f->key);
			f->key = NULL;
			return oom(b);  /* a valid key that could not be stored */
		}
	}
	free(f->key);
	f->key = NULL;
	f->key_merge = 0;
	return rc == 0 ? 0 : oom(b);
}

/* The top frame is a mapping waiting for a key. */
static int wants_key(const struct builder *b)
{
	const struct frame *f = b->depth ? &b->stack[b->depth - 1] : NULL;

	return f != NULL && json_is_object(f->node) && f->key == NULL && !f->key_merge;
}

static int set_key(struct builder *b, const char *s, size_t len, int merge, const yaml_mark_t *mark)
{
	struct frame *f = &b->stack[b->depth - 1];

	if (f->pos != SIZE_MAX && b->pos[f->pos].first_line == 0) {
		b->pos[f->pos].first_line = abs_line(b, mark);
		b->pos[f->pos].first_col = (unsigned long)mark->column;
	}
	f->key_line = abs_line(b, mark);
	if (merge) {
		f->key_merge = 1;
		b->aliases = 1;  /* text positions no longer map one-to-one */
		if (f->merges == NULL && (f->merges = json_array()) == NULL)
			return oom(b);
		return 0;
	}
	f->key = malloc(len + 1);
	if (f->key == NULL)
		return oom(b);
	memcpy(f->key, s, len);
	f->key[len] = '\0';
	f->key_len = len;
	return 0;
}

static int push(struct builder *b, json_t *node, const char *anchor, const yaml_event_t *ev, int seq)
{
	struct frame *f;
	unsigned long line = abs_line(b, &ev->start_mark);

	if (node == NULL)
		return oom(b);
	if (b->depth > 0 && wants_key(b)) {
		json_decref(node);
		return build_fail(b, line, "a mapping key is a mapping or sequence (an unrendered template?)");
	}
	if (b->depth == MANIFEST_DEPTH_MAX) {
		json_decref(node);
		return build_fail(b, line, "nesting deeper than 256 levels");
	}
	if (b->depth == 0 && b->content_line == 0) {
		b->content_line = line;
		b->json = !seq ? ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
			       : ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
	}
	f = &b->stack[b->depth];
	memset(f, 0, sizeof *f);
	f->node = node;
	f->pos = SIZE_MAX;
	b->depth++;
	if (anchor != NULL && (f->anchor = strdup(anchor)) == NULL)
		return oom(b);
	if (b->record) {
		struct manifest_pos *p;

		struct manifest_pos *grown = array_grow(b->pos, &b->cap_pos, b->n_pos + 1, sizeof *grown, 64);

		if (grown == NULL)
			return oom(b);
		b->pos = grown;
		p = &b->pos[b->n_pos];
		memset(p, 0, sizeof *p);
		p->node = node;
		p->line = b->depth > 1 && json_is_object(b->stack[b->depth - 2].node)
			  ? b->stack[b->depth - 2].key_line : line;
		p->seq = (unsigned char)seq;
		p->block = seq ? ev->data.sequence_start.style == YAML_BLOCK_SEQUENCE_STYLE
			       : ev->data.mapping_start.style == YAML_BLOCK_MAPPING_STYLE;
		if (seq) {
			p->first_line = line;
			p->first_col = (unsigned long)ev->start_mark.column;
		}
		f->pos = b->n_pos++;
	}
	return 0;
}

/* Merge keys: "<<: *base" or "<<: [*a, *b]"; explicit keys and earlier sources win. */
static int merge(struct builder *b, struct frame *f, unsigned long line)
{
	size_t i, j;
	json_t *src, *item, *v;
	const char *key;

	json_array_foreach(f->merges, i, src) {
		for (j = 0; j < (json_is_array(src) ? json_array_size(src) : 1); j++) {
			item = json_is_array(src) ? json_array_get(src, j) : src;
			if (!json_is_object(item))
				return build_fail(b, line, "a merge key (<<) value must be a mapping or a list of mappings");
			json_object_foreach(item, key, v)
				if (json_object_get(f->node, key) == NULL &&
				    json_object_set(f->node, key, v) != 0)
					return oom(b);
		}
	}
	return 0;
}

static int pop(struct builder *b, const yaml_event_t *ev)
{
	struct frame *f = &b->stack[b->depth - 1];
	unsigned long line = abs_line(b, &ev->start_mark);
	json_t *node;
	int rc;

	if (f->pos != SIZE_MAX && json_is_array(f->node)) {
		b->pos[f->pos].end_line = line;
		b->pos[f->pos].end_col = (unsigned long)ev->start_mark.column;
	}
	if (f->merges != NULL && merge(b, f, line) != 0)
		return -1;
	node = f->node;
	rc = anchor_add(b, f->anchor, node);
	free(f->anchor);
	json_decref(f->merges);
	free(f->key);
	memset(f, 0, sizeof *f);
	b->depth--;
	if (rc != 0) {
		json_decref(node);
		return -1;
	}
	return add_value(b, node, line);
}

static int on_scalar(struct builder *b, const yaml_event_t *ev)
{
	const char *s = (const char *)ev->data.scalar.value;
	size_t len = ev->data.scalar.length;
	int plain = ev->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
	unsigned long line = abs_line(b, &ev->start_mark);
	json_t *v;

	if (b->depth == 0 && b->content_line == 0)
		b->content_line = line;
	if (b->depth == 0 && (len > 0 || !plain))
		b->root_text = 1;
	if (wants_key(b)) {
		if (ev->data.scalar.anchor != NULL) {
			json_t *k = json_stringn(s, len);

			if (k == NULL)
				return not_string(b, line, s, len, "a mapping key is not valid UTF-8");
			if (anchor_add(b, (const char *)ev->data.scalar.anchor, k) != 0) {
				json_decref(k);
				return -1;
			}
			json_decref(k);
		}
		return set_key(b, s, len, plain && len == 2 && memcmp(s, "<<", 2) == 0, &ev->start_mark);
	}
	v = manifest_scalar(s, len, plain, (const char *)ev->data.scalar.tag);
	if (v == NULL)
		return not_string(b, line, s, len, "a string is not valid UTF-8");
	if (anchor_add(b, (const char *)ev->data.scalar.anchor, v) != 0) {
		json_decref(v);
		return -1;
	}
	return add_value(b, v, line);
}

static int on_alias(struct builder *b, const yaml_event_t *ev)
{
	const char *name = (const char *)ev->data.alias.anchor;
	unsigned long line = abs_line(b, &ev->start_mark);
	const json_t *target = NULL;
	json_t *v;
	size_t i;

	b->aliases = 1;
	for (i = b->n_anchors; i > 0 && target == NULL; i--)
		if (strcmp(b->anchors[i - 1].name, name) == 0)
			target = b->anchors[i - 1].node;
	if (target == NULL)
		return build_fail(b, line, "alias to an unknown (or not yet complete) anchor");
	if (wants_key(b)) {
		if (!json_is_string(target))
			return build_fail(b, line, "a mapping key alias does not name a string");
		return set_key(b, json_string_value(target), json_string_length(target), 0, &ev->start_mark);
	}
	if (b->depth == 0 && b->content_line == 0)
		b->content_line = line;
	v = copy_counted(b, target, (int)b->depth);
	if (v == NULL) {
		if (b->budget == 0)
			return build_fail(b, line, "aliases expand to more than 100000 values (an alias bomb?)");
		if (b->too_deep)
			return build_fail(b, line, "nesting deeper than 256 levels (through aliases)");
		return oom(b);
	}
	return add_value(b, v, line);
}

static void builder_reset(struct builder *b)
{
	size_t i;

	for (i = 0; i < b->depth; i++) {
		json_decref(b->stack[i].node);
		json_decref(b->stack[i].merges);
		free(b->stack[i].anchor);
		free(b->stack[i].key);
	}
	b->depth = 0;
	for (i = 0; i < b->n_anchors; i++) {
		free(b->anchors[i].name);
		json_decref(b->anchors[i].node);
	}
	free(b->anchors);
	b->anchors = NULL;
	b->n_anchors = b->cap_anchors = 0;
	json_decref(b->graveyard);
	b->graveyard = NULL;
}

static int pos_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct manifest_pos *)a)->node;
	uintptr_t y = (uintptr_t)((const struct manifest_pos *)b)->node;

	return x < y ? -1 : x > y;
}

/*
 * Parses one chunk (at most one document) into b. Returns 0 (b->root may be
 * NULL: an empty document), or -1 with b->error / b->nomem.
 */
static int parse_chunk(struct builder *b, const char *p, size_t n)
{
	yaml_parser_t parser;
	yaml_event_t ev;
	int done = 0, rc = 0;

	if (!yaml_parser_initialize(&parser))
		return oom(b);
	b->budget = MANIFEST_ALIAS_BUDGET;
	if ((b->graveyard = json_array()) == NULL) {
		yaml_parser_delete(&parser);
		return oom(b);
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)p, n);
	while (!done && rc == 0) {
		if (!yaml_parser_parse(&parser, &ev)) {
			char msg[MANIFEST_ERROR_MAX];

			if (parser.error == YAML_MEMORY_ERROR) {
				rc = oom(b);
				break;
			}
			error_yaml_problem(msg, sizeof msg, parser.problem, parser.context, p, n,
					   parser.problem_mark.index);
			rc = build_fail(b, b->line0 + (unsigned long)parser.problem_mark.line, msg);
			break;
		}
		switch (ev.type) {
		case YAML_STREAM_END_EVENT:
			done = 1;
			break;
		case YAML_DOCUMENT_START_EVENT:
			if (++b->documents > 1)
				rc = build_fail(b, abs_line(b, &ev.start_mark), "more than one document in one chunk");
			break;
		case YAML_SCALAR_EVENT:
			rc = on_scalar(b, &ev);
			break;
		case YAML_ALIAS_EVENT:
			rc = on_alias(b, &ev);
			break;
		case YAML_SEQUENCE_START_EVENT:
			rc = push(b, json_array(), (const char *)ev.data.sequence_start.anchor, &ev, 1);
			break;
		case YAML_MAPPING_START_EVENT:
			rc = push(b, json_object(), (const char *)ev.data.mapping_start.anchor, &ev, 0);
			break;
		case YAML_SEQUENCE_END_EVENT:
		case YAML_MAPPING_END_EVENT:
			rc = pop(b, &ev);
			break;
		default:
			break;
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	builder_reset(b);
	if (rc != 0) {
		json_decref(b->root);
		b->root = NULL;
		return -1;
	}
	if (b->record && b->n_pos > 1)
		qsort(b->pos, b->n_pos, sizeof *b->pos, pos_cmp);
	return 0;
}

const struct manifest_pos *manifest_pos_find(const struct manifest_doc *d, const json_t *node)
{
	struct manifest_pos key;

	if (d->pos == NULL)
		return NULL;
	memset(&key, 0, sizeof key);
	key.node = node;
	return bsearch(&key, d->pos, d->n_pos, sizeof *d->pos, pos_cmp);
}

/* New: the value of text p[0..n) (line numbers from line0), or NULL; for re-checks. */
json_t *manifest_parse_value(const char *p, size_t n, struct error *err)
{
	struct builder *b = calloc(1, sizeof *b);
	json_t *root = NULL;

	if (b == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	b->line0 = 1;
	if (parse_chunk(b, p, n) == 0) {
		root = b->root;
	} else {
		error_set(err, b->nomem ? ERROR_NOMEM : ERROR_INTERNAL, "re-reading the fixed document: "
			  "line %lu: %s", b->error_line, b->error);
	}
	free(b);
	return root;
}

unsigned long manifest_line(const struct manifest_doc *d, const json_t *node)
{
	const struct manifest_pos *p = manifest_pos_find(d, node);

	return p != NULL ? p->line : d->content_line;
}

/* ==== Loading a stream ==== */

static int load_doc(struct manifest_doc *d, const char *p, struct error *err)
{
	struct builder *b = calloc(1, sizeof *b);
	int rc = -1;

	if (b == NULL)
		goto nomem;
	b->line0 = d->line;
	b->record = 1;
	if (parse_chunk(b, p + d->off, d->len) != 0) {
		if (b->nomem)
			goto nomem;
		d->failed = 1;
		d->error_line = b->error_line;
		snprintf(d->error, sizeof d->error, "%s", b->error);
		free(b->pos);
		b->pos = NULL;
		rc = 0;
		goto out;
	}
	d->root = b->root;
	if (json_is_null(d->root)) {
		json_decref(d->root);  /* "---" and nothing else: an empty document */
		d->root = NULL;
		d->null_root = b->root_text;
	}
	d->pos = b->pos;
	d->n_pos = b->n_pos;
	d->json = b->json;
	d->aliases = b->aliases;
	d->content_line = b->content_line;
	b->pos = NULL;
	rc = 0;
	goto out;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory reading manifests");
out:
	if (b != NULL)
		free(b->pos);
	free(b);
	return rc;
}

void manifest_open(const char *buf, size_t len, struct manifest *m)
{
	const char *cr = memchr(buf, '\r', len);

	memset(m, 0, sizeof *m);
	m->buf = buf;
	m->len = len;
	m->crlf = cr != NULL && cr + 1 < buf + len && cr[1] == '\n';
	m->cur.line = 1;
	m->cur.start_line = 1;
}

/*
 * The next document's bytes [*off, *end) and first line, resuming where the
 * last call stopped; 0 when there are no more. A line is looked at once, so a
 * whole stream costs one pass and nothing is kept per document. A line ends
 * at most one document: a "---" line and a "..." line are different lines.
 */
static int next_chunk(struct manifest *m, size_t *off, size_t *end_off, unsigned long *line)
{
	struct manifest_cursor *c = &m->cur;
	const char *buf = m->buf, *end = buf + m->len;

	if (c->done)
		return 0;
	while (c->p < m->len) {
		const char *p = buf + c->p;
		int doc_end = manifest_is_marker(p, end, '.'), found = 0;

		if (c->p != c->start && manifest_is_marker(p, end, '-')) {
			/* Directives (%YAML, %TAG) right before a marker belong to its document. */
			size_t cut = c->in_dir ? c->dir : c->p;

			if (cut != c->start) {
				*off = c->start;
				*end_off = cut;
				*line = c->start_line;
				found = 1;
				c->start = cut;
				c->start_line = c->in_dir ? c->dir_line : c->line;
			}
		}
		if (*p == '%') {
			if (!c->in_dir) {
				c->in_dir = 1;
				c->dir = c->p;
				c->dir_line = c->line;
			}
		} else if (!manifest_comment_line(p, next_line(p, end))) {
			c->in_dir = 0;
		}
		c->p = (size_t)(next_line(p, end) - buf);
		c->line++;
		if (doc_end && c->p < m->len) {
			*off = c->start;
			*end_off = c->p;
			*line = c->start_line;
			found = 1;
			c->start = c->p;
			c->start_line = c->line;
		}
		if (found) {
			c->n++;
			return 1;
		}
	}
	c->done = 1;
	if (c->start < m->len || c->n == 0) {
		*off = c->start;
		*end_off = m->len;
		*line = c->start_line;
		c->n++;
		return 1;
	}
	return 0;
}

int manifest_next(struct manifest *m, struct manifest_doc *d, struct error *err)
{
	size_t off, end;
	unsigned long line;

	manifest_doc_free(d);
	if (!next_chunk(m, &off, &end, &line))
		return 0;
	d->off = off;
	d->len = end - off;
	d->line = line;
	return load_doc(d, m->buf, err) != 0 ? -1 : 1;
}

void manifest_doc_free(struct manifest_doc *d)
{
	if (d == NULL)
		return;
	free(d->pos);
	json_decref(d->root);
	memset(d, 0, sizeof *d);
}

int manifest_load(const char *buf, size_t len, struct manifest *m, struct error *err)
{
	size_t cap = 0;
	int r;

	manifest_open(buf, len, m);
	for (;;) {
		struct manifest_doc *grown = array_grow(m->docs, &cap, m->n_docs + 1, sizeof *grown, 16);

		if (grown == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory reading manifests");
			return -1;
		}
		m->docs = grown;
		memset(&m->docs[m->n_docs], 0, sizeof m->docs[0]);
		if ((r = manifest_next(m, &m->docs[m->n_docs], err)) <= 0) {
			manifest_doc_free(&m->docs[m->n_docs]);
			return r;
		}
		m->n_docs++;
	}
}

void manifest_free(struct manifest *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n_docs; i++)
		manifest_doc_free(&m->docs[i]);
	free(m->docs);
	memset(m, 0, sizeof *m);
}
