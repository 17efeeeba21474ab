#include "base/suggest.h"

#include <stdint.h>
#include <string.h>

/*
 * The optimal-string-alignment distance between a[0..alen) and b[0..blen)
 * (edits, adjacent swaps included), or SUGGEST_LEN_MAX + 1 when either is
 * longer than SUGGEST_LEN_MAX. Three rows of the table are enough: a swap
 * looks two rows back.
 */
static size_t distance(const char *a, size_t alen, const char *b, size_t blen)
{
	size_t rows[3][SUGGEST_LEN_MAX + 1];
	size_t i, j;

	if (alen > SUGGEST_LEN_MAX || blen > SUGGEST_LEN_MAX)
		return SUGGEST_LEN_MAX + 1;
	for (j = 0; j <= blen; j++)
		rows[0][j] = j;
	for (i = 1; i <= alen; i++) {
		size_t *cur = rows[i % 3], *up = rows[(i - 1) % 3], *up2 = rows[(i + 1) % 3];

		cur[0] = i;
		for (j = 1; j <= blen; j++) {
			size_t best = up[j - 1] + (a[i - 1] != b[j - 1]);

			if (up[j] + 1 < best)
				best = up[j] + 1;
			if (cur[j - 1] + 1 < best)
				best = cur[j - 1] + 1;
			if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && up2[j - 2] + 1 < best)
				best = up2[j - 2] + 1;
			cur[j] = best;
		}
	}
	return rows[alen % 3][blen];
}

size_t suggest_closeness(const char *typed, size_t len, const char *name, size_t name_len)
{
	size_t d = distance(typed, len, name, name_len);

	if (d <= (len <= 4 ? 1u : 2u) && d < name_len)
		return d;
	if (len >= 2 && len <= name_len && strncmp(typed, name, len) == 0)
		return 1;
	return SIZE_MAX;
}

const char *suggest_from_list(const char *typed, const char *list, size_t *len)
{
	size_t typed_len = strlen(typed), best = SIZE_MAX;
	const char *p = list, *pick = NULL;

	while (*p != '\0') {
		size_t n = strcspn(p, ", "), c = suggest_closeness(typed, typed_len, p, n);

		if (c < best) {
			best = c;
			pick = p;
			*len = n;
		}
		p += n;
		p += strspn(p, ", ");
	}
	return pick;
}
