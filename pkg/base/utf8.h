/*
 * utf8: the one check of a UTF-8 sequence, by jansson's rules (no overlong
 * forms, no surrogates, nothing above U+10FFFF), shared by the scanner that
 * validates requests, the writer that must match jansson's encoder, and the
 * log's escaper. Inline: the scanner runs it on every non-ASCII byte.
 */
#ifndef GPU_ADMISSION_UTF8_H
#define GPU_ADMISSION_UTF8_H

#include <stddef.h>

/*
 * The length (2..4) of the valid multi-byte sequence starting at p (p < end,
 * *p >= 0x80, both borrowed), or 0 when it is not one: a stray continuation
 * byte, an overlong form, a surrogate, a code point past U+10FFFF, or a
 * sequence cut by end.
 */
static inline size_t utf8_sequence(const unsigned char *p, const unsigned char *end)
{
	unsigned c = p[0], value;
	size_t n, i;

	if (c >= 0xC2 && c <= 0xDF) { n = 2; value = c & 0x1F; }
	else if (c >= 0xE0 && c <= 0xEF) { n = 3; value = c & 0x0F; }
	else if (c >= 0xF0 && c <= 0xF4) { n = 4; value = c & 0x07; }
	else return 0;
	if ((size_t)(end - p) < n)
		return 0;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return 0;
		value = value << 6 | (p[i] & 0x3F);
	}
	if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF) ||
	    (n == 3 && value < 0x800) || (n == 4 && value < 0x10000))
		return 0;
	return n;
}

/* Whether p[0..n) (borrowed) is all valid UTF-8 by the rules above. */
static inline int utf8_valid(const unsigned char *p, size_t n)
{
	const unsigned char *end = p + n;
	size_t k;

	while (p < end) {
		if (*p < 0x80) {
			p++;
			continue;
		}
		if ((k = utf8_sequence(p, end)) == 0)
			return 0;
		p += k;
	}
	return 1;
}

#endif
