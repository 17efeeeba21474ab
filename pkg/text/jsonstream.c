#include "text/jsonstream.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/array.h"

#define NONE SIZE_MAX
#define WINDOW_MAX (JSONSTREAM_ITEM_MAX + JSONSTREAM_CHUNK)

enum state { ST_BEGIN, ST_MEMBERS, ST_ITEMS, ST_AFTER, ST_DONE };

struct jsonstream {
	int fd;
	char *buf;               /* the window: bytes [0, end) of the input from offset base */
	size_t cap, pos, end;    /* scanning at pos */
	size_t mark;             /* the lowest byte that must stay in the window, or NONE */
	size_t key;              /* a member name being read, or NONE */
	unsigned long long base; /* input offset of buf[0] */
	int eof;
	enum state state;
	int first;               /* the next member or element is its container's first */
	int list;                /* the top-level object has an "items" member */
	size_t obj;              /* the top-level object's '{', kept while it may be the only item */
};

/* Byte classes outside strings: 1 '"', 2 opens, 3 closes. In strings, '"' and '\\' stop the skip. */
static const unsigned char outside[256] = { ['"'] = 1, ['{'] = 2, ['['] = 2, ['}'] = 3, [']'] = 3 };
static const unsigned char inside[256] = { ['"'] = 1, ['\\'] = 1 };

struct jsonstream *jsonstream_new(int fd, struct error *err)
{
	struct jsonstream *s = calloc(1, sizeof *s);

	if (s == NULL || (s->buf = malloc(JSONSTREAM_CHUNK)) == NULL) {
		free(s);
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	s->fd = fd;
	s->cap = JSONSTREAM_CHUNK;
	s->mark = s->key = s->obj = NONE;
	s->state = ST_BEGIN;
	return s;
}

void jsonstream_free(struct jsonstream *s)
{
	if (s == NULL)
		return;
	free(s->buf);
	free(s);
}

static int stream_fail(struct jsonstream *s, struct error *err, enum error_kind kind, const char *what)
{
	error_set(err, kind, "byte %llu: %s", s->base + s->pos, what);
	s->state = ST_DONE;
	return -2;
}

/*
 * Reads more input into the window, first dropping what nothing needs any
 * more (before pos, mark and key). 1: more bytes; 0: end of input; -2: error.
 */
static int refill(struct jsonstream *s, struct error *err)
{
	size_t keep = s->pos;
	ssize_t r;

	if (s->eof)
		return 0;
	if (s->mark < keep)
		keep = s->mark;
	if (s->key < keep)
		keep = s->key;
	if (keep > 0) {
		memmove(s->buf, s->buf + keep, s->end - keep);
		s->end -= keep;
		s->pos -= keep;
		s->base += keep;
		if (s->mark != NONE)
			s->mark -= keep;
		if (s->key != NONE)
			s->key -= keep;
		if (s->obj != NONE && s->obj >= keep)
			s->obj -= keep;
	}
	if (s->end == s->cap) {
		/* Doubled, up to WINDOW_MAX: 0 once the window is that large already. */
		size_t cap = array_cap(s->cap, s->cap + 1, 0, WINDOW_MAX);
		char *grown;

		if (cap == 0)
			return stream_fail(s, err, ERROR_TOO_LARGE, "an item (or an object without items) is larger "
				    "than the 16 MiB limit (JSONSTREAM_ITEM_MAX)");
		if ((grown = array_resize(s->buf, &s->cap, cap, 1)) == NULL)
			return stream_fail(s, err, ERROR_NOMEM, "out of memory");
		s->buf = grown;
	}
	do
		r = read(s->fd, s->buf + s->end, s->cap - s->end);
	while (r < 0 && errno == EINTR);
	if (r < 0) {
		char msg[128];

		snprintf(msg, sizeof msg, "read failed: %s", strerror(errno));
		return stream_fail(s, err, ERROR_SYSTEM, msg);
	}
	if (r == 0) {
		s->eof = 1;
		return 0;
	}
	s->end += (size_t)r;
	return 1;
}

/* The byte at pos, reading as needed: -1 at the end of input, -2 on error. */
static int peekc(struct jsonstream *s, struct error *err)
{
	while (s->pos == s->end) {
		int r = refill(s, err);

		if (r <= 0)
			return r == 0 ? -1 : -2;
	}
	return (unsigned char)s->buf[s->pos];
}

static int skip_ws(struct jsonstream *s, struct error *err)
{
	for (;;) {
		int c = peekc(s, err);

		if (c != ' ' && c != '\n' && c != '\r' && c != '\t')
			return c;
		s->pos++;
	}
}

/* Stops the stream with err; jsonstream_next()'s -1. */
static int stop(struct jsonstream *s, struct error *err, const char *what)
{
	stream_fail(s, err, ERROR_INPUT, what);
	return -1;
}

/* A truncated input, or the error peekc() already reported. */
static int truncated(struct jsonstream *s, struct error *err, int c)
{
	return c == -2 ? -2 : stream_fail(s, err, ERROR_INPUT, "the input ends inside the JSON document (truncated?)");
}

/*
 * Skips one value starting at pos: a string, an object or array (nesting and
 * strings followed, not validated), or a scalar up to its delimiter.
 * 0, or -2 with err.
 */
static int skip_value(struct jsonstream *s, struct error *err)
{
	size_t depth = 0;
	int in_str = 0, esc = 0, c = peekc(s, err);

	if (c < 0)
		return truncated(s, err, c);
	if (c != '"' && c != '{' && c != '[') {
		while ((c = peekc(s, err)) >= 0 && c != ',' && c != '}' && c != ']' && c != ' ' &&
		       c != '\n' && c != '\r' && c != '\t')
			s->pos++;
		return c == -2 ? -2 : 0;
	}
	for (;;) {
		const unsigned char *p = (const unsigned char *)s->buf + s->pos;
		const unsigned char *e = (const unsigned char *)s->buf + s->end;
		int r;

		while (p < e) {
			if (esc) {
				esc = 0;
				p++;
			} else if (in_str) {
				while (p < e && !inside[*p])
					p++;
				if (p == e)
					break;
				if (*p == '"') {
					in_str = 0;
					if (depth == 0) {  /* a bare string value */
						s->pos = (size_t)((const char *)p + 1 - s->buf);
						return 0;
					}
				} else {
					esc = 1;
				}
				p++;
			} else {
				while (p < e && !outside[*p])
					p++;
				if (p == e)
					break;
				if (*p == '"') {
					in_str = 1;
				} else if (outside[*p] == 2) {
					depth++;
				} else if (--depth == 0) {
					s->pos = (size_t)((const char *)p + 1 - s->buf);
					return 0;
				}
				p++;
			}
		}
		s->pos = s->end;
		if ((r = refill(s, err)) <= 0)
			return truncated(s, err, r == 0 ? -1 : -2);
	}
}

int jsonstream_peek(struct jsonstream *s, struct error *err)
{
	size_t at = s->pos;
	int c;

	s->mark = at;
	c = skip_ws(s, err);
	s->pos = s->mark;
	s->mark = NONE;
	return c < 0 ? -1 : c;
}

/* A member name at pos; *items says whether it is exactly "items". 0 or -2. */
static int member_name(struct jsonstream *s, int *items, struct error *err)
{
	int rc;

	s->key = s->pos;
	rc = skip_value(s, err);
	*items = rc == 0 && s->pos - s->key == 7 && memcmp(s->buf + s->key, "\"items\"", 7) == 0;
	s->key = NONE;
	return rc;
}

/*
 * jsonstream_next()'s steps, one per state: each returns 1 with an item in
 * *it, 0 at the end, -1 with err, or STEP_AGAIN once the state moved on.
 */
#define STEP_AGAIN 2

struct item_out {
	const char **item;
	size_t *len;
	unsigned long long *offset;
};

/* The item is buf[from, pos): handed out. */
static int hand_out(struct jsonstream *s, size_t from, const struct item_out *it)
{
	*it->item = s->buf + from;
	*it->len = s->pos - from;
	*it->offset = s->base + from;
	return 1;
}

/* skip_ws() where the input may not end: an end or a read error is told as such. */
static int skip_ws_more(struct jsonstream *s, struct error *err)
{
	int c = skip_ws(s, err);

	if (c < 0)
		(void)truncated(s, err, c);
	return c;
}

/* The top-level object opens. */
static int step_begin(struct jsonstream *s, struct error *err)
{
	int c = skip_ws(s, err);

	if (c == -1)
		return stop(s, err, "empty input: expected the JSON of kubectl get -o json");
	if (c < 0)
		return -1;
	if (c != '{')
		return stop(s, err, "expected a JSON object (a List, as kubectl get "
			    "-o json prints)");
	s->obj = s->mark = s->pos++;
	s->state = ST_MEMBERS;
	s->first = 1;
	return STEP_AGAIN;
}

/* One member of the top-level object: skipped, or "items" opened; at '}' the object itself when no List. */
static int step_members(struct jsonstream *s, const struct item_out *it, struct error *err)
{
	int c, items;

	if ((c = skip_ws_more(s, err)) < 0)
		return -1;
	if (c == '}') {
		s->pos++;
		s->state = ST_AFTER;
		if (!s->list)  /* one object, not a List: it is the item */
			return hand_out(s, s->obj, it);
		return STEP_AGAIN;
	}
	if (!s->first) {
		if (c != ',')
			return stop(s, err, "expected ',' or '}' in the top-level object");
		s->pos++;
		if ((c = skip_ws_more(s, err)) < 0)
			return -1;
	}
	s->first = 0;
	if (c != '"')
		return stop(s, err, "expected a member name in the top-level object");
	if (member_name(s, &items, err) != 0)
		return -1;
	if ((c = skip_ws(s, err)) != ':') {
		if (c < 0)
			(void)truncated(s, err, c);
		else
			(void)stream_fail(s, err, ERROR_INPUT, "expected ':' after a member name");
		return -1;
	}
	s->pos++;
	if ((c = skip_ws_more(s, err)) < 0)
		return -1;
	if (!items)
		return skip_value(s, err) != 0 ? -1 : STEP_AGAIN;
	if (s->list)
		return stop(s, err, "two \"items\" members");
	if (c != '[')
		return stop(s, err, "\"items\" is not an array");
	s->list = 1;
	s->mark = NONE;  /* a List: what came before items is not needed */
	s->obj = NONE;
	s->pos++;
	s->state = ST_ITEMS;
	s->first = 1;
	return STEP_AGAIN;
}

/* One element of items, handed out; at ']' back to the members. */
static int step_items(struct jsonstream *s, const struct item_out *it, struct error *err)
{
	int c;

	if ((c = skip_ws_more(s, err)) < 0)
		return -1;
	if (c == ']') {
		s->pos++;
		s->state = ST_MEMBERS;
		s->first = 0;
		return STEP_AGAIN;
	}
	if (!s->first) {
		if (c != ',')
			return stop(s, err, "expected ',' or ']' between items");
		s->pos++;
		if ((c = skip_ws_more(s, err)) < 0)
			return -1;
		if (c == ']')
			return stop(s, err, "a ',' after the last item");
	}
	s->first = 0;
	s->mark = s->pos;
	if (skip_value(s, err) != 0)
		return -1;
	return hand_out(s, s->mark, it);
}

/* After the top-level object: only whitespace to the end. */
static int step_after(struct jsonstream *s, struct error *err)
{
	int c = skip_ws(s, err);

	if (c == -1) {
		s->state = ST_DONE;
		return 0;
	}
	if (c < 0)
		return -1;
	return stop(s, err, "data after the top-level JSON object");
}

int jsonstream_next(struct jsonstream *s, const char **item, size_t *len, unsigned long long *offset,
		    struct error *err)
{
	const struct item_out it = { item, len, offset };
	int rc = STEP_AGAIN;

	/* The previous item may go; the top-level object stays while it may be the only item. */
	s->mark = s->state == ST_MEMBERS && !s->list ? s->obj : NONE;
	while (rc == STEP_AGAIN) {
		switch (s->state) {
		case ST_BEGIN:   rc = step_begin(s, err); break;
		case ST_MEMBERS: rc = step_members(s, &it, err); break;
		case ST_ITEMS:   rc = step_items(s, &it, err); break;
		case ST_AFTER:   rc = step_after(s, err); break;
		case ST_DONE:    rc = 0; break;
		}
	}
	return rc;
}

char *jsonstream_slurp(struct jsonstream *s, size_t max, size_t *len, struct error *err)
{
	size_t have = s->end - s->pos, cap = have + JSONSTREAM_CHUNK + 1;
	char *out, *grown;
	ssize_t r;

	if (have > max) {
		error_set(err, ERROR_TOO_LARGE, "the input is larger than %zu MiB", max >> 20);
		return NULL;
	}
	if ((out = malloc(cap)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	memcpy(out, s->buf + s->pos, have);
	while (!s->eof) {
		if (have + 1 == cap) {
			if (have >= max) {
				free(out);
				error_set(err, ERROR_TOO_LARGE, "the input is larger than %zu MiB", max >> 20);
				return NULL;
			}
			/* Doubled, up to max + 2: one byte past max tells a larger input, one is the NUL. */
			if ((grown = array_resize(out, &cap, array_cap(cap, cap + 1, 0, max + 2), 1)) == NULL) {
				free(out);
				error_set(err, ERROR_NOMEM, "out of memory");
				return NULL;
			}
			out = grown;
		}
		do
			r = read(s->fd, out + have, cap - 1 - have);
		while (r < 0 && errno == EINTR);
		if (r < 0) {
			error_set(err, ERROR_SYSTEM, "read failed: %s", strerror(errno));
			free(out);
			return NULL;
		}
		if (r == 0)
			s->eof = 1;
		have += (size_t)r;
	}
	if (have > max) {
		free(out);
		error_set(err, ERROR_TOO_LARGE, "the input is larger than %zu MiB", max >> 20);
		return NULL;
	}
	out[have] = '\0';
	*len = have;
	s->pos = s->end;
	s->state = ST_DONE;
	return out;
}
