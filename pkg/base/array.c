#include "base/array.h"

#include <stdint.h>
#include <stdlib.h>

size_t array_cap(size_t cap, size_t need, size_t first, size_t max)
{
	size_t n = cap ? cap : (first ? first : 1);

	if (max != 0 && need > max)
		return 0;
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return 0;
		n *= 2;
	}
	return max != 0 && n > max ? max : n;
}

void *array_resize(void *v, size_t *cap, size_t n, size_t size)
{
	void *grown;

	if (n == 0 || size == 0 || n > SIZE_MAX / size)
		return NULL;
	if ((grown = realloc(v, n * size)) == NULL)
		return NULL;
	*cap = n;
	return grown;
}

void *array_grow(void *v, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t n;

	if (need <= *cap && v != NULL)
		return v;
	if ((n = array_cap(*cap, need, first, 0)) == 0)
		return NULL;
	return array_resize(v, cap, n, size);
}
