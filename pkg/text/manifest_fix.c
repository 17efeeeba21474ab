/*
 * manifest_fix: writing a document back out with a JSON Patch applied, for
 * audit --fix. The parsing side is pkg/text/manifest.c.
 */
#include "text/manifest.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "text/manifest_int.h"
#include "base/iterable.h"
#include "base/patch.h"
#include "base/strbuf.h"
#include "base/utf8.h"

#define WRITE_DEPTH_MAX 16    /* values the text inserter writes by hand */

/* ==== --fix: rendering a patched document ==== */

/*
 * Two ways, tried in order:
 *
 * 1. Text edits. A mutation only adds: a key to a mapping (spec.tolerations,
 *    spec.nodeSelector, a nodeSelector entry) or an item to a sequence
 *    (spec.tolerations/-). For a block-style target we know from libyaml's
 *    marks where its first key starts (insert the new key there, at the same
 *    indentation) or where the token after its last item starts (append the
 *    new item there, at the indentation of the existing "-"). A rejected
 *    template's fix only removes: a mapping entry (its key's line through its
 *    value) or a sequence item (its "- " line through the item), whole lines
 *    of block style, found by following the document's events to the path.
 *    Comments, quoting and layout of everything else stay as written.
 *
 * 2. Re-emitting the document from the patched value with libyaml's emitter
 *    (or jansson for a JSON document), keeping the marker line and leading
 *    comments. Used for flow-style targets, documents with aliases or merge
 *    keys (one text position may stand for several values), and whenever the
 *    inserted text does not read back as the patched value.
 *
 * Either way the result is parsed again and must equal the patched value; a
 * text insertion that does not is discarded, so a layout the inserter did not
 * foresee costs formatting, never correctness.
 */

/* 1 when s may be written plain (it reads back as the same string), 0 when not, -1 out of memory. */
static int plain_ok(const char *s)
{
	json_t *v;
	int ok;

	if (s[0] == '\0' || strchr("-?:,[]{}#&*!|>'\"%@`", s[0]) != NULL)
		return 0;
	if (strspn(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._/-") != strlen(s))
		return 0;
	v = manifest_scalar(s, strlen(s), 1, NULL);
	if (v == NULL)
		return -1;  /* these bytes are ASCII: only memory can have failed */
	ok = json_is_string(v);
	json_decref(v);
	return ok;
}

static void write_scalar(struct strbuf *o, const json_t *v)
{
	char *s;
	int plain = json_is_string(v) ? plain_ok(json_string_value(v)) : 0;

	if (plain < 0) {
		strbuf_fail(o, STRBUF_NOMEM);
		return;
	}
	if (plain) {
		strbuf_addstr(o, json_string_value(v));
		return;
	}
	s = json_dumps(v, JSON_ENCODE_ANY);  /* a JSON string is a YAML double-quoted scalar */
	if (s == NULL) {
		strbuf_fail(o, STRBUF_NOMEM);
		return;
	}
	strbuf_addstr(o, s);
	free(s);
}

static int write_value(struct strbuf *o, const json_t *v, size_t indent, const char *nl, int depth);

/* Writes the entries of object v, the first one inline (after "- "), the rest at indent. */
static int write_entries(struct strbuf *o, const json_t *v, size_t indent, int first_inline,
			 const char *nl, int depth)
{
	const char *key;
	json_t *child;
	int first = 1;

	json_object_foreach(iterable(v), key, child) {
		json_t *k;

		if (!(first && first_inline))
			strbuf_addchars(o, ' ', indent);
		first = 0;
		k = json_string(key);
		if (k == NULL) {
			strbuf_fail(o, STRBUF_NOMEM);  /* a key of an object jansson holds is valid UTF-8: memory failed */
			return -1;
		}
		write_scalar(o, k);
		json_decref(k);
		strbuf_addstr(o, ":");
		if (write_value(o, child, indent + 2, nl, depth + 1) != 0)
			return -1;
	}
	return 0;
}

/* Writes one sequence item "<indent>- ..." (a mapping's first entry on the dash line). */
static int write_item(struct strbuf *o, const json_t *item, size_t indent, const char *nl, int depth)
{
	strbuf_addchars(o, ' ', indent);
	strbuf_addstr(o, "-");
	if (json_is_object(item) && json_object_size(item) > 0) {
		strbuf_addstr(o, " ");
		return write_entries(o, item, indent + 2, 1, nl, depth + 1);
	}
	if (json_is_array(item) && json_array_size(item) > 0)
		return -1;  /* nested block sequences: leave them to the emitter */
	return write_value(o, item, indent + 2, nl, depth + 1);
}

/* Writes " scalar\n" or "\n" + block content at indent, after a "key:". */
static int write_value(struct strbuf *o, const json_t *v, size_t indent, const char *nl, int depth)
{
	size_t i;
	json_t *item;

	if (depth > WRITE_DEPTH_MAX)
		return -1;
	if (json_is_object(v) && json_object_size(v) > 0) {
		strbuf_addstr(o, nl);
		return write_entries(o, v, indent, 0, nl, depth);
	}
	if (json_is_array(v) && json_array_size(v) > 0) {
		strbuf_addstr(o, nl);
		json_array_foreach(v, i, item)
			if (write_item(o, item, indent, nl, depth + 1) != 0)
				return -1;
		return 0;
	}
	strbuf_addstr(o, " ");
	if (json_is_object(v))
		strbuf_addstr(o, "{}");
	else if (json_is_array(v))
		strbuf_addstr(o, "[]");
	else
		write_scalar(o, v);
	strbuf_addstr(o, nl);
	return 0;
}

struct insertion {
	size_t off;     /* in the document's bytes */
	size_t del;     /* bytes removed there (a fix's "remove"), 0 for an insertion */
	size_t seq;     /* patch order: equal offsets keep it */
	char *text;     /* inserted at off; "" for a removal */
};

static int ins_cmp(const void *a, const void *b)
{
	const struct insertion *x = a, *y = b;

	if (x->off != y->off)
		return x->off > y->off ? -1 : 1;  /* from the end backwards */
	return x->seq > y->seq ? -1 : x->seq < y->seq;
}

/* Offset of (line, col) in the document when the line holds only spaces before col. */
static int text_offset(const struct manifest *m, const struct manifest_doc *d, unsigned long line,
		       unsigned long col, size_t *off)
{
	const char *s = m->buf + d->off, *end = s + d->len, *ls = manifest_line_start(s, end, d->line, line);
	unsigned long i;

	if (ls == NULL)
		return -1;
	for (i = 0; i < col; i++)
		if (ls + i >= end || ls[i] != ' ')
			return -1;
	*off = (size_t)(ls - s);
	return 0;
}

/*
 * Moves an insertion point (a line start at off) up over the comment and
 * blank lines just above it, so an addition lands next to the entries it
 * joins rather than between a comment and what the comment is about.
 */
static size_t before_comments(const char *chunk, size_t off)
{
	while (off > 0) {
		size_t ls = off - 1;  /* inside the previous line's break */

		if (ls > 0 && chunk[ls] == '\n' && chunk[ls - 1] == '\r')
			ls--;
		while (ls > 0 && chunk[ls - 1] != '\n' && chunk[ls - 1] != '\r')
			ls--;
		if (!manifest_comment_line(chunk + ls, chunk + off))
			break;
		off = ls;
	}
	return off;
}

/*
 * Builds the text for one "add" operation, or -1 when this layout is not one
 * it handles, or when memory ran out (then *nomem is set: re-emitting is no
 * way out of that, and would change the output).
 */
static int plan_insertion(const struct manifest *m, const struct manifest_doc *d, const json_t *op,
			  struct insertion *ins, int *nomem)
{
	const char *path = json_string_value(json_object_get(op, "path"));
	const json_t *value = json_object_get(op, "value");
	const char *nl = m->crlf ? "\r\n" : "\n", *slash, *chunk = m->buf + d->off;
	char parent_ptr[LIMIT_TEMPLATE_POINTER_MAX], tok[1024];
	const struct manifest_pos *p;
	json_t *parent;
	struct strbuf o = STRBUF_INIT;
	size_t n;
	int rc = -1;

	const char *kind = json_string_value(json_object_get(op, "op"));

	if (path == NULL || value == NULL || kind == NULL || strcmp(kind, "add") != 0)
		return -1;
	slash = strrchr(path, '/');
	if (slash == NULL || (size_t)(slash - path) >= sizeof parent_ptr)
		return -1;
	memcpy(parent_ptr, path, (size_t)(slash - path));
	parent_ptr[slash - path] = '\0';
	parent = patch_pointer_get(d->root, parent_ptr);
	p = parent ? manifest_pos_find(d, parent) : NULL;
	if (p == NULL || !p->block || p->first_line == 0)
		return -1;
	n = 0;
	for (const char *s = slash + 1; *s != '\0' && n + 1 < sizeof tok; ) {
		if (s[0] == '~' && (s[1] == '0' || s[1] == '1')) {
			tok[n++] = s[1] == '0' ? '~' : '/';
			s += 2;
		} else {
			tok[n++] = *s++;
		}
	}
	tok[n] = '\0';
	if (json_is_object(parent)) {
		json_t *k = json_string(tok);

		if (k == NULL && utf8_valid((const unsigned char *)tok, n))
			*nomem = 1;
		if (k == NULL || json_object_get(parent, tok) != NULL ||
		    text_offset(m, d, p->first_line, p->first_col, &ins->off) != 0) {
			json_decref(k);
			return -1;
		}
		ins->off = before_comments(chunk, ins->off);
		strbuf_addchars(&o, ' ', p->first_col);
		write_scalar(&o, k);
		json_decref(k);
		strbuf_addstr(&o, ":");
		if (write_value(&o, value, p->first_col + 2, nl, 0) != 0)
			goto out;
	} else if (json_is_array(parent) && strcmp(tok, "-") == 0) {
		if (p->end_line == 0)
			goto out;
		if (text_offset(m, d, p->end_line, p->end_col, &ins->off) != 0) {
			/*
			 * The sequence ends the document on a last line without a
			 * break: libyaml puts the end of the stream on the line after.
			 */
			if (p->end_col != 0 || p->end_line == 0 ||
			    manifest_line_start(chunk, chunk + d->len, d->line, p->end_line - 1) == NULL ||
			    manifest_line_break(chunk + d->len - 1, chunk + d->len) > 0)
				goto out;
			ins->off = d->len;
			strbuf_addstr(&o, nl);
		}
		if (ins->off == d->len && o.len > 0) {
			/* No break at the end: a trailing comment line can still be stepped over. */
			const char *ls = chunk + d->len;

			while (ls > chunk && ls[-1] != '\n' && ls[-1] != '\r')
				ls--;
			if (ls > chunk && manifest_comment_line(ls, chunk + d->len)) {
				ins->off = (size_t)(ls - chunk);
				strbuf_setlen(&o, 0);
			}
		}
		ins->off = before_comments(chunk, ins->off);
		if (write_item(&o, value, p->first_col, nl, 0) != 0)
			goto out;
	} else {
		goto out;
	}
	if (o.failed)
		goto out;
	ins->text = strbuf_detach(&o, NULL);
	rc = 0;
out:
	if (o.failed)
		*nomem = 1;
	strbuf_release(&o);
	return rc;
}

/* ==== Removals: the span of the value a pointer names, from the document's events ==== */

#define REMOVE_DEPTH_MAX 64  /* nesting a removal's path is followed to */
#define FRAME_KEY_MAX 1024   /* bytes of a key (and of a path's token) a removal follows */

struct frame {
	int map;            /* a mapping (else a sequence) */
	int flow;           /* flow style: not edited as text */
	int want_key;       /* mapping: the next node is a key */
	size_t index;       /* sequence: the next item's index */
	char key[FRAME_KEY_MAX];  /* mapping: the current key */
	yaml_mark_t key_at; /* mapping: where the current key starts */
};

/* Byte offset in chunk of a libyaml mark (0-based line, column in characters), or -1. */
static long mark_offset(const char *chunk, size_t len, const yaml_mark_t *m)
{
	const char *ls = manifest_line_start(chunk, chunk + len, 0, m->line), *p = ls;
	size_t col;

	if (ls == NULL)
		return m->line == 0 ? 0 : -1;
	for (col = 0; col < m->column; col++) {
		if (p >= chunk + len)
			return -1;
		p++;
		while (p < chunk + len && ((unsigned char)*p & 0xC0) == 0x80)
			p++;  /* the rest of a UTF-8 character */
	}
	return (long)(p - chunk);
}

/* The offset of the start of the line holding off. */
static size_t line_of(const char *chunk, size_t off)
{
	while (off > 0 && chunk[off - 1] != '\n' && chunk[off - 1] != '\r')
		off--;
	return off;
}

/* The offset just past the end of the line holding off (its break included). */
static size_t line_end(const char *chunk, size_t len, size_t off)
{
	while (off < len && manifest_line_break(chunk + off, chunk + len) == 0)
		off++;
	return off + manifest_line_break(chunk + off, chunk + len);
}

/* Whether chunk[from, to) holds only blanks, and item: a "-" after them. */
static int only_indent(const char *chunk, size_t from, size_t to, int item)
{
	while (from < to && chunk[from] == ' ')
		from++;
	if (item && from < to && chunk[from] == '-') {
		from++;
		while (from < to && chunk[from] == ' ')
			from++;
	}
	return from == to;
}

/* Whether the value about to be read, under stack[0..depth), is the one tokens[0..n_tok) names. */
static int at_path(const struct frame *stack, size_t depth, const char *const *tokens, size_t n_tok)
{
	char idx[32];
	size_t n;

	if (depth != n_tok)
		return 0;
	for (n = 0; n < depth; n++) {
		const char *tok = stack[n].key;

		if (!stack[n].map) {
			snprintf(idx, sizeof idx, "%zu", stack[n].index);
			tok = idx;
		}
		if (strcmp(tok, tokens[n]) != 0)
			return 0;
	}
	return 1;
}

/* removal_span()'s walk over the document's events. */
struct removal {
	const char *chunk;
	size_t len;
	const char *tokens[REMOVE_DEPTH_MAX];  /* the path's, unescaped */
	size_t n_tok;
	struct frame *stack;                   /* REMOVE_DEPTH_MAX + 1 of them */
	size_t depth;
	long start, end;                       /* the value's lines, once found (-1: not yet) */
	int item;                              /* it is a sequence item (else a mapping entry) */
	int target;                            /* the depth it sits at, once found (-1: not yet) */
	int done;
};

/*
 * Splits JSON Pointer path into r->tokens, unescaped into text (room for
 * strlen(path) + 1 bytes). -1 when it is not a path this follows (empty,
 * deeper than REMOVE_DEPTH_MAX, a token of FRAME_KEY_MAX bytes or more).
 */
static int path_tokens(struct removal *r, const char *path, char *text)
{
	while (*path == '/' && r->n_tok < REMOVE_DEPTH_MAX) {
		const char *s = path + 1;
		size_t n;

		r->tokens[r->n_tok++] = text;
		for (n = 0; *s != '\0' && *s != '/' && n + 1 < FRAME_KEY_MAX; s++, n++)
			*text++ = s[0] == '~' && (s[1] == '0' || s[1] == '1') ? (*++s == '0' ? '~' : '/') : *s;
		*text++ = '\0';
		path = s;
	}
	return *path != '\0' || r->n_tok == 0 ? -1 : 0;
}

/* A mapping's key, kept in its frame: plain text only (a collection as a key is nothing Kubernetes has). */
static void removal_key(struct removal *r, const yaml_event_t *ev, struct frame *top)
{
	if (ev->type != YAML_SCALAR_EVENT || ev->data.scalar.length >= sizeof top->key) {
		r->done = 1;
		return;
	}
	memcpy(top->key, ev->data.scalar.value, ev->data.scalar.length);
	top->key[ev->data.scalar.length] = '\0';
	top->key_at = ev->start_mark;
	top->want_key = 0;
}

/* A value (a scalar, an alias, a collection opening) under top: where the target starts, when it is the one. */
static void removal_value(struct removal *r, const yaml_event_t *ev, struct frame *top)
{
	int scalar = ev->type == YAML_SCALAR_EVENT || ev->type == YAML_ALIAS_EVENT;

	if (r->target < 0 && at_path(r->stack, r->depth, r->tokens, r->n_tok)) {
		if (top->flow || (ev->type == YAML_MAPPING_START_EVENT &&
				  ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE) ||
		    (ev->type == YAML_SEQUENCE_START_EVENT &&
		     ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE)) {
			r->done = 1;  /* flow style: left to re-emission */
		} else {
			r->item = !top->map;
			r->start = mark_offset(r->chunk, r->len, top->map ? &top->key_at : &ev->start_mark);
			r->target = (int)r->depth;
			if (scalar) {
				r->end = mark_offset(r->chunk, r->len, &ev->end_mark);
				r->end = r->end < 0 ? -1 : (long)line_end(r->chunk, r->len, (size_t)r->end);
				r->done = 1;
			}
		}
	}
	if (scalar && top != NULL) {
		if (top->map)
			top->want_key = 1;
		else
			top->index++;
	}
}

/* A collection opens or closes: the frames follow it; where the target ends, when it is the one closing. */
static void removal_nesting(struct removal *r, const yaml_event_t *ev)
{
	const char *chunk = r->chunk;

	if (ev->type == YAML_MAPPING_START_EVENT || ev->type == YAML_SEQUENCE_START_EVENT) {
		struct frame *f = &r->stack[r->depth];

		if (r->depth >= REMOVE_DEPTH_MAX) {
			r->done = 1;
			return;
		}
		memset(f, 0, sizeof *f);
		f->map = ev->type == YAML_MAPPING_START_EVENT;
		f->want_key = f->map;
		f->flow = f->map ? ev->data.mapping_start.style == YAML_FLOW_MAPPING_STYLE
			: ev->data.sequence_start.style == YAML_FLOW_SEQUENCE_STYLE;
		r->depth++;
	} else if (ev->type == YAML_MAPPING_END_EVENT || ev->type == YAML_SEQUENCE_END_EVENT) {
		if (r->depth > 0)
			r->depth--;
		if (r->target >= 0 && (size_t)r->target == r->depth) {
			/* The value's end: where the next token starts, a line below its last. */
			long end = mark_offset(chunk, r->len, &ev->end_mark);

			if (end >= 0 && (size_t)end < r->len && !only_indent(chunk, line_of(chunk, (size_t)end), (size_t)end, 0))
				end = -1;
			else if (end >= 0)
				end = (long)before_comments(chunk, line_of(chunk, (size_t)end));
			r->end = end;
			r->done = 1;
		} else if (r->depth > 0) {
			if (r->stack[r->depth - 1].map)
				r->stack[r->depth - 1].want_key = 1;
			else
				r->stack[r->depth - 1].index++;
		}
	}
}

/*
 * The lines to delete for the value the JSON Pointer path names in the
 * document chunk[0..len): from the start of its key's
 * line (a mapping entry) or its "- " line (a sequence item) to the end of
 * its last line, whole lines of block style only. 0 with [*from, *to), or
 * -1 when the layout is not one this handles, or when memory ran out (then
 * *nomem is set).
 */
static int removal_span(const char *chunk, size_t len, const char *path, size_t *from, size_t *to, int *nomem)
{
	struct removal r = { .chunk = chunk, .len = len, .start = -1, .end = -1, .target = -1 };
	char *text = malloc(strlen(path) + 1);
	yaml_parser_t parser;
	yaml_event_t ev;
	int rc = -1;

	if (text == NULL) {
		*nomem = 1;
		return -1;
	}
	if (path_tokens(&r, path, text) != 0) {
		free(text);
		return -1;
	}
	if ((r.stack = calloc(REMOVE_DEPTH_MAX + 1, sizeof *r.stack)) == NULL || !yaml_parser_initialize(&parser)) {
		free(r.stack);
		free(text);
		*nomem = 1;
		return -1;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)chunk, len);
	while (!r.done) {
		struct frame *top;
		int node;

		if (!yaml_parser_parse(&parser, &ev)) {
			*nomem = parser.error == YAML_MEMORY_ERROR;
			break;
		}
		node = ev.type == YAML_SCALAR_EVENT || ev.type == YAML_MAPPING_START_EVENT ||
		       ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_ALIAS_EVENT;
		top = r.depth > 0 ? &r.stack[r.depth - 1] : NULL;
		if (ev.type == YAML_STREAM_END_EVENT || ev.type == YAML_DOCUMENT_END_EVENT)
			r.done = 1;
		if (node && top != NULL && top->map && top->want_key) {
			removal_key(&r, &ev, top);
		} else {
			if (node)
				removal_value(&r, &ev, top);
			removal_nesting(&r, &ev);
		}
		yaml_event_delete(&ev);
	}
	yaml_parser_delete(&parser);
	free(r.stack);
	free(text);
	if (r.start >= 0 && r.end > r.start) {
		size_t ls = line_of(chunk, (size_t)r.start);

		if (only_indent(chunk, ls, (size_t)r.start, r.item)) {
			*from = ls;
			*to = (size_t)r.end;
			rc = 0;
		}
	}
	return rc;
}

/*
 * Plans one "remove" operation as the deletion of whole lines; -1 when this
 * layout is not one it handles, or when memory ran out (then *nomem is set).
 */
static int plan_removal(const struct manifest *m, const struct manifest_doc *d, const json_t *op,
			struct insertion *ins, int *nomem)
{
	const char *path = json_string_value(json_object_get(op, "path"));
	size_t from, to;

	if (path == NULL || removal_span(m->buf + d->off, d->len, path, &from, &to, nomem) != 0)
		return -1;
	if ((ins->text = calloc(1, 1)) == NULL) {
		*nomem = 1;
		return -1;
	}
	ins->off = from;
	ins->del = to - from;
	return 0;
}

/*
 * The document with the patch applied as text, or NULL: then the caller
 * re-emits, unless *nomem says memory ran out.
 */
static char *insert_text(const struct manifest *m, const struct manifest_doc *d, const json_t *patch,
			 size_t *outlen, int *nomem)
{
	struct insertion *ins = NULL;
	size_t n = json_array_size(patch), i, done = 0;
	struct strbuf o = STRBUF_INIT;
	const char *chunk = m->buf + d->off;
	size_t cursor;

	if (d->json || d->aliases || n == 0)
		return NULL;
	if ((ins = calloc(n, sizeof *ins)) == NULL) {
		*nomem = 1;
		return NULL;
	}
	for (i = 0; i < n; i++) {
		const json_t *op = json_array_get(patch, i);
		const char *kind = json_string_value(json_object_get(op, "op"));

		ins[i].seq = i;
		if ((kind != NULL && strcmp(kind, "remove") == 0 ? plan_removal(m, d, op, &ins[i], nomem)
		     : plan_insertion(m, d, op, &ins[i], nomem)) != 0)
			goto out;
	}
	qsort(ins, n, sizeof *ins, ins_cmp);
	/* Assemble front to back: ins is sorted back to front, so walk it in reverse. */
	cursor = 0;
	for (i = n; i > 0; i--) {
		if (ins[i - 1].off < cursor)
			goto out;  /* edits that overlap: left to re-emission */
		strbuf_add(&o, chunk + cursor, ins[i - 1].off - cursor);
		strbuf_addstr(&o, ins[i - 1].text);
		cursor = ins[i - 1].off + ins[i - 1].del;
	}
	strbuf_add(&o, chunk + cursor, d->len - cursor);
	done = !o.failed;
	if (o.failed)
		*nomem = 1;
out:
	for (i = 0; i < n; i++)
		free(ins[i].text);
	free(ins);
	if (!done) {
		strbuf_release(&o);
		return NULL;
	}
	return strbuf_detach(&o, outlen);
}

static int emit_handler(void *data, unsigned char *buffer, size_t size)
{
	struct strbuf *o = data;

	strbuf_add(o, (const char *)buffer, size);
	return !o->failed;
}

static int emit_node(yaml_emitter_t *e, const json_t *v, int depth)
{
	yaml_event_t ev;
	const char *key;
	json_t *child;
	size_t i;

	if (depth > MANIFEST_DEPTH_MAX + 8)
		return -1;
	if (json_is_object(v)) {
		if (!yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, json_object_size(v) ?
							  YAML_BLOCK_MAPPING_STYLE : YAML_FLOW_MAPPING_STYLE) ||
		    !yaml_emitter_emit(e, &ev))
			return -1;
		json_object_foreach(iterable(v), key, child) {
			json_t *k = json_string(key);
			int rc = k ? emit_node(e, k, depth + 1) : -1;

			json_decref(k);
			if (rc != 0 || emit_node(e, child, depth + 1) != 0)
				return -1;
		}
		if (!yaml_mapping_end_event_initialize(&ev) || !yaml_emitter_emit(e, &ev))
			return -1;
		return 0;
	}
	if (json_is_array(v)) {
		if (!yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, json_array_size(v) ?
							   YAML_BLOCK_SEQUENCE_STYLE : YAML_FLOW_SEQUENCE_STYLE) ||
		    !yaml_emitter_emit(e, &ev))
			return -1;
		json_array_foreach(v, i, child)
			if (emit_node(e, child, depth + 1) != 0)
				return -1;
		if (!yaml_sequence_end_event_initialize(&ev) || !yaml_emitter_emit(e, &ev))
			return -1;
		return 0;
	}
	{
		char *text;
		const char *s;
		size_t len;
		int plain_implicit, rc;

		if (json_is_string(v)) {
			json_t *back;

			s = json_string_value(v);
			len = json_string_length(v);
			back = manifest_scalar(s, len, 1, NULL);
			if (back == NULL && utf8_valid((const unsigned char *)s, len))
				return -1;  /* out of memory: re-emitting fails, the caller says so */
			/*
			 * A string that would read back as a number, bool or null must be
			 * quoted, and so must "<<": plain, it is a merge key.
			 */
			plain_implicit = json_is_string(back) && !(len == 2 && memcmp(s, "<<", 2) == 0);
			json_decref(back);
			text = NULL;
		} else {
			/* A real in the fewest digits that read back the same: 0.29, not 0.28999999999999998. */
			text = json_dumps(v, JSON_ENCODE_ANY | (json_is_real(v) ? JSON_REAL_PRECISION(15) : 0));
			if (text != NULL && json_is_real(v) && strtod(text, NULL) != json_real_value(v)) {
				free(text);
				text = json_dumps(v, JSON_ENCODE_ANY);
			}
			if (text == NULL)
				return -1;
			s = text;
			len = strlen(text);
			plain_implicit = 1;
		}
		rc = yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)(uintptr_t)s, (int)len,
						  plain_implicit, 1, YAML_ANY_SCALAR_STYLE) &&
		     yaml_emitter_emit(e, &ev) ? 0 : -1;
		free(text);
		return rc;
	}
}

static int emit_yaml(int crlf, const json_t *v, struct strbuf *o)
{
	yaml_emitter_t e;
	yaml_event_t ev;
	int rc = -1;

	if (!yaml_emitter_initialize(&e))
		return -1;
	yaml_emitter_set_output(&e, emit_handler, o);
	yaml_emitter_set_unicode(&e, 1);
	yaml_emitter_set_width(&e, -1);
	yaml_emitter_set_indent(&e, 2);
	yaml_emitter_set_break(&e, crlf ? YAML_CRLN_BREAK : YAML_LN_BREAK);
	if (!yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING) || !yaml_emitter_emit(&e, &ev) ||
	    !yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1) || !yaml_emitter_emit(&e, &ev) ||
	    emit_node(&e, v, 0) != 0 ||
	    !yaml_document_end_event_initialize(&ev, 1) || !yaml_emitter_emit(&e, &ev) ||
	    !yaml_stream_end_event_initialize(&ev) || !yaml_emitter_emit(&e, &ev))
		goto out;
	rc = 0;
out:
	yaml_emitter_delete(&e);
	return rc;
}

/* The marker line and comments before the document's content, kept verbatim. */
static size_t leading_text(const struct manifest *m, const struct manifest_doc *d)
{
	const char *s = m->buf + d->off, *end = s + d->len;
	const char *ls = d->content_line > d->line ? manifest_line_start(s, end, d->line, d->content_line) : NULL;

	return ls ? (size_t)(ls - s) : 0;
}

static char *re_emit(const struct manifest *m, const struct manifest_doc *d, const json_t *v, size_t *outlen)
{
	struct strbuf o = STRBUF_INIT;
	const char *nl = m->crlf ? "\r\n" : "\n";
	size_t lead = leading_text(m, d);

	strbuf_add(&o, m->buf + d->off, lead);
	if (lead == 0 && manifest_is_marker(m->buf + d->off, m->buf + d->off + d->len, '-')) {
		strbuf_addstr(&o, "---");
		strbuf_addstr(&o, nl);
	}
	if (d->json) {
		char *s = json_dumps(v, JSON_INDENT(2));

		if (s == NULL) {
			strbuf_release(&o);
			return NULL;
		}
		strbuf_addstr(&o, s);
		strbuf_addstr(&o, nl);
		free(s);
	} else if (emit_yaml(m->crlf, v, &o) != 0) {
		strbuf_fail(&o, STRBUF_NOMEM);
	}
	return strbuf_detach(&o, outlen);
}

char *manifest_to_yaml(const json_t *v, size_t *len, struct error *err)
{
	struct strbuf o = STRBUF_INIT;
	char *text;

	if (emit_yaml(0, v, &o) != 0 || o.failed) {
		error_set(err, o.failed ? ERROR_NOMEM : ERROR_INPUT, "cannot write the value as YAML");
		strbuf_release(&o);
		return NULL;
	}
	if ((text = strbuf_detach(&o, len)) == NULL)
		error_set(err, ERROR_NOMEM, "cannot write the value as YAML");
	return text;
}

int manifest_render_patched(const struct manifest *m, const struct manifest_doc *d, const json_t *patch,
			    char **out, size_t *outlen, const char **how, struct error *err)
{
	json_t *patched = NULL, *back = NULL;
	char *text = NULL;
	size_t len = 0;
	int rc = -1, nomem = 0;

	*out = NULL;
	*outlen = 0;
	if (d->root == NULL) {
		error_set(err, ERROR_INTERNAL, "the document has no value to patch");
		return -1;
	}
	patched = json_deep_copy(d->root);
	if (patched == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	if (patch_apply(patched, patch, err) != 0)
		goto out;
	text = insert_text(m, d, patch, &len, &nomem);
	if (text != NULL) {
		struct error ignored = { 0 };

		/* The inserted text starts at the chunk's first line; line numbers are not needed here. */
		back = manifest_parse_value(text, len, &ignored);
		if (back != NULL && json_equal(back, patched)) {
			*how = "inserted";
			goto done;
		}
		nomem = back == NULL && ignored.kind == ERROR_NOMEM;
		json_decref(back);
		back = NULL;
		free(text);
		text = NULL;
	}
	if (nomem) {
		error_set(err, ERROR_NOMEM, "out of memory writing the fixed document");
		goto out;
	}
	text = re_emit(m, d, patched, &len);
	if (text == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory writing the fixed document");
		goto out;
	}
	back = manifest_parse_value(text, len, err);
	if (back == NULL || !json_equal(back, patched)) {
		if (back != NULL)
			error_set(err, ERROR_INTERNAL, "the re-emitted document does not read back as written");
		goto out;
	}
	*how = "re-emitted";
done:
	*out = text;
	*outlen = len;
	text = NULL;
	rc = 0;
out:
	free(text);
	json_decref(back);
	json_decref(patched);
	return rc;
}
