#include "base/hash.h"

#define FNV1A_PRIME 1099511628211ULL

uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len-- > 0)
		h = (h ^ *b++) * FNV1A_PRIME;
	return h;
}

uint64_t hash_fnv1a_str(uint64_t h, const char *s)
{
	for (; *s != '\0'; s++)
		h = (h ^ (unsigned char)*s) * FNV1A_PRIME;
	return h;
}
