/*
 * collide.h: object keys that all collide under the public hash pkg/text/scan.c
 * used for its duplicate-key check before it was keyed (the attack of issue
 * 14: ~70,000 such annotation keys in one 3 MB review held a worker ~100 s).
 * Shared by test/unit/test_scan.c and test/tools/gen_review.c.
 *
 * The old hash, over 8-byte words w: h = len * MIX; per word h = (h ^ w) *
 * MIX, h ^= h >> 29; then the tail word. Its state after a 16-byte key's
 * second word is g(g(h0 ^ w0) ^ w1) with g invertible, so every key whose
 * w1 = g(h0 ^ w0) ^ C ends in the same state for a fixed C: the full 64-bit
 * hashes are equal. Keys are searched with w0 a counter spelt in printable
 * bytes until w1 is printable too (about one try in 3,500).
 */
#ifndef GPU_ADMISSION_TEST_COLLIDE_H
#define GPU_ADMISSION_TEST_COLLIDE_H

#include <stdint.h>
#include <string.h>

#define COLLIDE_KEY_LEN 16
#define COLLIDE_MIX 0x9E3779B97F4A7C15ULL

/* The hash scan.c used before it was keyed, for showing these keys collide. */
static inline uint64_t collide_old_hash(const unsigned char *p, size_t n)
{
	uint64_t h = n * COLLIDE_MIX, w;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&w, p, 8);
		h = (h ^ w) * COLLIDE_MIX;
		h ^= h >> 29;
	}
	w = 0;
	memcpy(&w, p, n);
	h = (h ^ w) * COLLIDE_MIX;
	return h ^ (h >> 32);
}

/* A byte that may stand in a JSON string unescaped and in a label key (no '"' or '\\'). */
static inline int collide_plain(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '"' && c != '\\';
}

/*
 * Writes the next colliding key (COLLIDE_KEY_LEN bytes, no terminator) to out,
 * advancing *state (start it at 0). Keys from one state sequence are distinct.
 */
static inline void collide_next(uint64_t *state, unsigned char out[COLLIDE_KEY_LEN])
{
	const uint64_t c = 0x2a2a2a2a2a2a2a2aULL;  /* any constant: it fixes the common hash */

	for (;;) {
		uint64_t n = (*state)++, w0 = 0, h, w1;
		int i, good = 1;

		/* w0: the counter in base 64 over the letters, digits, '-' and '_'. */
		for (i = 0; i < 8; i++, n >>= 6) {
			static const char digits[] =
				"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
			w0 |= (uint64_t)(unsigned char)digits[n & 63] << (8 * i);
		}
		h = (COLLIDE_KEY_LEN * COLLIDE_MIX ^ w0) * COLLIDE_MIX;
		h ^= h >> 29;
		w1 = h ^ c;
		for (i = 0; i < 8 && good; i++)
			good = collide_plain((unsigned char)(w1 >> (8 * i)));
		if (!good)
			continue;
		memcpy(out, &w0, 8);
		memcpy(out + 8, &w1, 8);
		return;
	}
}

#endif
