/*
 * scan_int: what the files of the scanner share. Private to pkg/text/scan*.c.
 *
 *   scan.c          the skip-scan: bytes, strings, numbers, skipping, keeping, searching
 *   scan_keys.c     keys: escapes decoded, keyed hashes, duplicate keys
 *   scan_compare.c  kept trees compared through a shape (the differential tests)
 *
 * The helpers on the hot path are static inline here, so each file still
 * inlines them as when they were one.
 */
#ifndef GPU_ADMISSION_SCAN_INT_H
#define GPU_ADMISSION_SCAN_INT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "text/scan.h"

/* A scanned string: an object key, or a string value being kept. */
struct key {
	const char *start;  /* raw bytes between the quotes */
	size_t len;
	size_t dlen;        /* decoded length (len when not escaped) */
	uint64_t hash;      /* of the decoded bytes, computed only in large objects */
	int escaped;
};

struct scanner {
	const unsigned char *p, *end;
	size_t depth, max_depth;
	struct key *keys;   /* a stack: each open object's keys, innermost last */
	size_t n_keys, cap_keys;
	size_t values, max_values; /* values seen so far, and the most allowed */
	size_t compares;           /* duplicate check: slots probed (scan_stats) */
	int failed;
	struct key inline_keys[128]; /* enough for real objects: no allocation per review */
};

#define KEY_DECODED_MAX 1024  /* longer keys are left to the full parse */

/*
 * The one-byte escapes: the letter after a backslash, and the byte it stands
 * for (0: not one). Defined in scan.c; scan_keys.c decodes with it.
 */
extern const unsigned char scan_escape_byte[256];

static inline int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
}

/*
 * Decodes the escapes of a string scan_string() has validated into out[0..cap),
 * where cap is the decoded length it computed (key->dlen). 0 when exactly cap
 * bytes were written; -1 when the string decodes to another length, which
 * only a bug in that computation could cause, and then nothing is written
 * past cap. Escapes decode as jansson decodes them, surrogate pairs to one
 * 4-byte sequence. scan_keys.c.
 */
int scan_decode_string(const unsigned char *p, size_t len, unsigned char *out, size_t cap);

/*
 * keys_equal() for keys spelt with escapes: compares what they decode to.
 * Keys that do not decode to their length are called equal: the duplicate
 * the caller then sees sends the document to the full parse. scan_keys.c.
 */
int scan_keys_equal_decoded(const struct key *a, const struct key *b);

/* Exact comparison of two keys, on their decoded bytes. */
static inline int keys_equal(const struct key *a, const struct key *b)
{
	if (a->dlen != b->dlen)
		return 0;
	if (!a->escaped && !b->escaped)
		return memcmp(a->start, b->start, a->len) == 0;
	return scan_keys_equal_decoded(a, b);
}

/*
 * Finds duplicates among the n > 8 keys k[] of an object (the scanner's
 * check_duplicates() compares fewer pairwise); 0, or -1 when two decode
 * alike (or, for a large object, when memory for its table runs out: the
 * full parse decides then). s->compares counts the slots probed.
 * scan_keys.c.
 */
int scan_find_duplicates_hashed(struct scanner *s, struct key *k, size_t n);

/* The entry of shape (through SCAN_ALSO tables) naming the key p[0..n), or NULL. */
static inline const struct scan_shape *find_bytes(const struct scan_shape *shape, const char *p, size_t n)
{
	for (;;) {
		/* The first byte settles most comparisons; strncmp stops at the shape key's end. */
		for (; shape->key != NULL; shape++) {
			const char *pat = shape->key;

			if ((n == 0 || pat[0] == p[0]) && strncmp(pat, p, n) == 0 && pat[n] == '\0')
				return shape;
			if (pat[0] == '*') {
				size_t m = strlen(pat + 1);

				if (n > m && memcmp(p + n - m, pat + 1, m) == 0)
					return shape;
			}
		}
		if (shape->kind != SCAN_ALSO || shape->children == NULL)
			return NULL;
		shape = shape->children;
	}
}

#endif
