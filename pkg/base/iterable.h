/*
 * iterable: a const json_t * as jansson's foreach macros and iterators take
 * it. They want a non-const json_t * though they only read; this one
 * conversion, in one place, keeps every reader's inputs const.
 */
#ifndef GPU_ADMISSION_ITERABLE_H
#define GPU_ADMISSION_ITERABLE_H

#include <stdint.h>

#include <jansson.h>

/* j itself (borrowed, may be NULL), to read through only: never changed, kept or freed through it. */
static inline json_t *iterable(const json_t *j)
{
	return (json_t *)(uintptr_t)j;
}

#endif
