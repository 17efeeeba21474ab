#include "base/array.h"

#include <stdint.h>
#include <stdlib.h>

void *array_grow(void *v, size_t *cap, size_t need, size_t size, size_t first)
{
	size_t n;
	void *grown;

	if (need <= *cap && v != NULL)
		return v;
	n = *cap ? *cap : (first ? first : 1);
	while (n < need) {
		if (n > SIZE_MAX / 2)
			return NULL;
		n *= 2;
	}
	if (size != 0 && n > SIZE_MAX / size)
		return NULL;
	grown = realloc(v, n * size);
	if (grown == NULL)
		return NULL;
	*cap = n;
	return grown;
}
