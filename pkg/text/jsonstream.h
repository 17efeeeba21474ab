/*
 * jsonstream: the items of a Kubernetes List (`kubectl get ... -o json`), one
 * at a time, from a file descriptor, in memory that does not grow with the
 * input.
 *
 * A 2 GB `kubectl get nodes,pods -A -o json` cannot be parsed whole. The
 * reader keeps a window of the input (JSONSTREAM_CHUNK to start, doubling up
 * to JSONSTREAM_ITEM_MAX plus a chunk while one item needs it), finds the
 * elements of the top-level object's "items" array with a structural scan
 * (strings, escapes, nesting) and hands out each element's bytes. It does not
 * validate an element: the caller parses it (pkg/text/scan.c, or jansson), which
 * does. The List's own members other than "items" (apiVersion, kind,
 * metadata) are skipped, wherever they stand. A top-level object without an
 * "items" member (`kubectl get node NAME -o json`) is handed out whole, as
 * one item.
 *
 * Limits: one item (or an object without items) at most JSONSTREAM_ITEM_MAX
 * bytes; anything else about the input is only bounded by the caller's
 * patience. Structure errors (truncation, a top level that is not an object,
 * trailing data) stop the stream with ERROR_INPUT and the byte offset.
 */
#ifndef GPU_ADMISSION_JSONSTREAM_H
#define GPU_ADMISSION_JSONSTREAM_H

#include <stddef.h>

#include "base/error.h"

#define JSONSTREAM_CHUNK (1024 * 1024)             /* bytes read at a time; the window's first size */
#define JSONSTREAM_ITEM_MAX (16UL * 1024 * 1024)    /* one item: far above etcd's 1.5 MiB per object,
                                                      pretty-printed */

struct jsonstream;

/*
 * New: a reader of fd (borrowed: read from its current position, never
 * closed). NULL with ERROR_NOMEM.
 */
struct jsonstream *jsonstream_new(int fd, struct error *err);

/* Releases s. Accepts NULL. */
void jsonstream_free(struct jsonstream *s);

/*
 * The first byte of the input that is not JSON whitespace, or -1 when the
 * input is empty or cannot be read (err says which; empty is not an error).
 * Reads only what it must; the stream still starts at the beginning.
 */
int jsonstream_peek(struct jsonstream *s, struct error *err);

/*
 * The next item: 1 with *item, *len (borrowed: valid until the next call)
 * and *offset (the item's byte offset in the input); 0 at the end of the
 * input; -1 with err (ERROR_INPUT for structure, ERROR_TOO_LARGE for an item
 * over JSONSTREAM_ITEM_MAX, ERROR_SYSTEM for a read error, ERROR_NOMEM).
 * After -1 the stream is done.
 */
int jsonstream_next(struct jsonstream *s, const char **item, size_t *len, unsigned long long *offset,
		    struct error *err);

/*
 * New: the whole input from its start (what was read already and the rest),
 * NUL-terminated, for inputs that are not JSON (YAML goes through
 * pkg/text/manifest.h whole). At most max bytes, else NULL with ERROR_TOO_LARGE;
 * ERROR_SYSTEM, ERROR_NOMEM. Only before the first jsonstream_next().
 */
char *jsonstream_slurp(struct jsonstream *s, size_t max, size_t *len, struct error *err);

#endif
