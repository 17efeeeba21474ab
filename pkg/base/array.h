/*
 * array: growing an array of fixed-size elements by doubling, with the size
 * arithmetic checked, so that no caller writes its own `cap *= 2` loop.
 *
 *	struct item *grown = array_grow(l->v, &l->cap, l->n + 1, sizeof *l->v, 16);
 *
 *	if (grown == NULL)
 *		return -1;  // l->v and l->cap untouched, still valid
 *	l->v = grown;
 *
 * A buffer with a bound of its own, or one charged to a budget before it
 * grows, asks array_cap() for the next capacity and array_resize() for the
 * memory. Ownership stays with the caller (free() the array); nothing else
 * is kept. This file and strbuf.c are the only callers of realloc()
 * (test/lint/realloc.sh).
 */
#ifndef GPU_ADMISSION_ARRAY_H
#define GPU_ADMISSION_ARRAY_H

#include <stddef.h>

/*
 * The capacity that holds need: cap itself when it does, else the first of
 * first (cap when not 0), 2 first, 4 first, ... that does, cut to max when
 * max is not 0. 0 when need passes max, or the doubling would overflow a
 * size_t. Pure: for tables rebuilt rather than reallocated (hash indexes)
 * and for buffers that must know their size before they grow.
 */
size_t array_cap(size_t cap, size_t need, size_t first, size_t max);

/*
 * v (NULL, or an allocation owned by the caller) reallocated to n elements
 * of size bytes, *cap set to n. NULL when memory ran out or n * size would
 * overflow a size_t (n 0 is refused too: realloc's answer would be
 * ambiguous): then v and *cap are as they were.
 */
void *array_resize(void *v, size_t *cap, size_t n, size_t size);

/*
 * v (room for *cap elements of size bytes; NULL when *cap is 0) with room
 * for need at least: v itself when it has it, else reallocated to the first
 * of first, 2 first, 4 first, ... that holds need, and *cap updated. NULL
 * when memory ran out or the bytes would overflow a size_t: then v and *cap
 * are as they were. New elements are not initialised.
 */
void *array_grow(void *v, size_t *cap, size_t need, size_t size, size_t first);

#endif
