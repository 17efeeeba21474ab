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
 * Ownership stays with the caller (free() the array); nothing else is kept.
 */
#ifndef GPU_ADMISSION_ARRAY_H
#define GPU_ADMISSION_ARRAY_H

#include <stddef.h>

/*
 * v (room for *cap elements of size bytes; NULL when *cap is 0) with room
 * for need at least: v itself when it has it, else reallocated to the first
 * of first, 2 first, 4 first, ... that holds need, and *cap updated. NULL
 * when memory ran out or the bytes would overflow a size_t: then v and *cap
 * are as they were. New elements are not initialised.
 */
void *array_grow(void *v, size_t *cap, size_t need, size_t size, size_t first);

#endif
