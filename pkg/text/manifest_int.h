/*
 * manifest_int: what pkg/text/manifest.c (parsing, positions) and
 * pkg/text/manifest_fix.c (rendering --fix output) share. Private to the
 * manifest module.
 */
#ifndef GPU_ADMISSION_MANIFEST_INT_H
#define GPU_ADMISSION_MANIFEST_INT_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"
#include "base/limit.h"
#include "text/manifest.h"


/* Where a collection sits in the document's text (libyaml marks, 1-based lines). */
struct manifest_pos {
	const json_t *node;
	unsigned long line;       /* the line of its key ("template:"), or of itself */
	unsigned long first_line; /* first key (mapping) or first "-" (block sequence) */
	unsigned long first_col;
	unsigned long end_line;   /* sequences: where the next token after the last item starts */
	unsigned long end_col;
	unsigned char block;      /* block style (not flow) */
	unsigned char seq;
};


/* Length of the line break at p (1..3: \n, \r\n, \r, NEL, LS, PS), 0 when none. */
size_t manifest_line_break(const char *p, const char *end);

/* "---" (c '-') or "..." (c '.') at p, followed by a blank, a break or the end. */
int manifest_is_marker(const char *p, const char *end, char c);

/* The line [ls, end) holds only blanks, or blanks and a comment. */
int manifest_comment_line(const char *ls, const char *end);

/* Start of 1-based line `line` counted from s (which is line `first`); NULL if there is none. */
const char *manifest_line_start(const char *s, const char *end, unsigned long first, unsigned long line);

/* Where node (borrowed) sits in d's text, or NULL. Borrowed from d. */
const struct manifest_pos *manifest_pos_find(const struct manifest_doc *d, const json_t *node);

/* New: the value of the YAML text p[0..n) (one document), or NULL with err; for re-checks. */
json_t *manifest_parse_value(const char *p, size_t n, struct error *err);

#endif
