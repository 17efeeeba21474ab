/*
 * scan_keys: an object's keys as the duplicate check needs them: decoded when
 * spelt with escapes, hashed under a per-process random key, and compared in
 * time linear in the keys whatever an input makes collide. Apart from the
 * scanner's byte loops because it is the one part an attacker aims at (a
 * review of colliding keys) and the one that holds process state (the
 * SipHash key).
 */
#include "text/scan_int.h"

#include <pthread.h>
#include <stdlib.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "base/array.h"

/* ==== Keyed hashes (SipHash-1-3, seeded once) ==== */

#define MIX   0x9E3779B97F4A7C15ULL

/*
 * Keys are hashed with SipHash-1-3 under a per-process random key (after a
 * cheaper try, hash_quick()): the duplicate check's table then costs linear
 * time whatever the keys are, because an input cannot know which keys
 * collide. (A public hash let one 3 MB review of ~70,000 colliding
 * annotation keys hold a worker ~100 s.)
 */
static uint64_t sip_key[2];
static pthread_once_t sip_once = PTHREAD_ONCE_INIT;

static void sip_init(void)
{
	struct timespec ts;

	if (getrandom(sip_key, sizeof sip_key, 0) == (ssize_t)sizeof sip_key)
		return;
	/* No entropy yet (a very early boot): still unknown to a remote client. */
	clock_gettime(CLOCK_MONOTONIC, &ts);
	sip_key[0] = (uint64_t)ts.tv_nsec * MIX ^ (uint64_t)getpid();
	sip_key[1] = ((uint64_t)ts.tv_sec ^ (uint64_t)(uintptr_t)&ts) * MIX;
}

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))
#define SIPROUND do { \
	v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
	v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2; \
	v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0; \
	v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
} while (0)

/* SipHash-1-3 of p[0..n) under k; only equal keys must hash alike, and nobody can aim collisions. */
static uint64_t hash_bytes(const uint64_t k[2], const unsigned char *p, size_t n)
{
	uint64_t v0 = k[0] ^ 0x736f6d6570736575ULL, v1 = k[1] ^ 0x646f72616e646f6dULL;
	uint64_t v2 = k[0] ^ 0x6c7967656e657261ULL, v3 = k[1] ^ 0x7465646279746573ULL;
	uint64_t m, b = (uint64_t)n << 56;
	size_t tail = n & 7;

	for (; n >= 8; p += 8, n -= 8) {
		memcpy(&m, p, 8);  /* the machine's byte order: the hash need not be portable */
		v3 ^= m;
		SIPROUND;
		v0 ^= m;
	}
	m = 0;
	memcpy(&m, p, tail);
	b |= m;
	v3 ^= b;
	SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	SIPROUND;
	SIPROUND;
	SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}
#undef SIPROUND
#undef ROTL

/* ==== Decoding a key with escapes ==== */

/* Appends code point cp as UTF-8 (as jansson stores it). */
static size_t put_utf8(unsigned char *out, unsigned cp)
{
	if (cp < 0x80) {
		out[0] = (unsigned char)cp;
		return 1;
	}
	if (cp < 0x800) {
		out[0] = (unsigned char)(0xC0 | cp >> 6);
		out[1] = (unsigned char)(0x80 | (cp & 0x3F));
		return 2;
	}
	if (cp < 0x10000) {
		out[0] = (unsigned char)(0xE0 | cp >> 12);
		out[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
		out[2] = (unsigned char)(0x80 | (cp & 0x3F));
		return 3;
	}
	out[0] = (unsigned char)(0xF0 | cp >> 18);
	out[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
	out[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
	out[3] = (unsigned char)(0x80 | (cp & 0x3F));
	return 4;
}


/*
 * Decodes the escapes of a string scan_string() has validated into out[0..cap),
 * where cap is the decoded length it computed (key->dlen). 0 when exactly cap
 * bytes were written; -1 when the string decodes to another length, which
 * only a bug in that computation could cause, and then nothing is written
 * past cap. Escapes decode as jansson decodes them, surrogate pairs to one
 * 4-byte sequence.
 */
int scan_decode_string(const unsigned char *p, size_t len, unsigned char *out, size_t cap)
{
	const unsigned char *end = p + len;
	size_t o = 0;

	while (p < end) {
		const unsigned char *bs = memchr(p, '\\', (size_t)(end - p));
		size_t run = (size_t)((bs != NULL ? bs : end) - p);
		unsigned char u[4];
		unsigned cp, lo, i;
		size_t n;

		if (run > cap - o)
			return -1;
		memcpy(out + o, p, run);
		o += run;
		p += run;
		if (p >= end)
			break;
		if (p[1] != 'u') {
			u[0] = scan_escape_byte[p[1]];
			n = 1;
			p += 2;
		} else {
			for (cp = 0, i = 2; i < 6; i++)
				cp = cp << 4 | (unsigned)hexval(p[i]);
			p += 6;
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				for (lo = 0, i = 2; i < 6; i++)
					lo = lo << 4 | (unsigned)hexval(p[i]);
				cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
				p += 6;
			}
			n = put_utf8(u, cp);
		}
		if (n > cap - o)
			return -1;
		memcpy(out + o, u, n);
		o += n;
	}
	return o == cap ? 0 : -1;
}

/* ==== Duplicate keys ==== */

/*
 * keys_equal() for keys spelt with escapes: compares what they decode to.
 * Keys that do not decode to their length are called equal: the duplicate
 * the caller then sees sends the document to the full parse.
 */
int scan_keys_equal_decoded(const struct key *a, const struct key *b)
{
	unsigned char da[KEY_DECODED_MAX], db[KEY_DECODED_MAX];

	if (scan_decode_string((const unsigned char *)a->start, a->len, da, a->dlen) != 0 ||
	    scan_decode_string((const unsigned char *)b->start, b->len, db, b->dlen) != 0)
		return 1;
	return memcmp(da, db, a->dlen) == 0;
}


/*
 * The duplicate check's first try: a hash of the key's length and of three
 * of its 8-byte words (first, middle, last: all of a key up to 24 bytes),
 * under the same random key. A few instructions where SipHash costs a
 * hundred; but an input can make any number of keys collide under it (they
 * need only share those bytes), so that try gives up past a linear budget
 * of probes and SipHash settles the object (find_duplicates_hashed()).
 */
static uint64_t hash_quick(const uint64_t k[2], const unsigned char *p, size_t n)
{
	uint64_t a = 0, b = 0, c = 0, h;

	if (n >= 8) {
		memcpy(&a, p, 8);
		memcpy(&b, p + n / 2 - 4, 8);
		memcpy(&c, p + n - 8, 8);
	} else {
		memcpy(&a, p, n);
	}
	h = (a ^ k[0]) * MIX + (b ^ k[1]) * 0xC2B2AE3D27D4EB4FULL + (c ^ (uint64_t)n) * 0x165667B19E3779F9ULL;
	h ^= h >> 29;
	h *= MIX;
	return h ^ h >> 32;
}

static void hash_key(struct key *k, int quick)
{
	unsigned char buf[KEY_DECODED_MAX];
	const unsigned char *p = (const unsigned char *)k->start;

	if (k->escaped) {
		if (scan_decode_string(p, k->len, buf, k->dlen) != 0) {
			k->hash = 0;  /* a bad length: keys_equal() calls it a duplicate, and the full parse decides */
			return;
		}
		p = buf;
	}
	k->hash = quick ? hash_quick(sip_key, p, k->dlen) : hash_bytes(sip_key, p, k->dlen);
}

#define SET_KEYS_MAX 64  /* objects up to this size use a table on the stack */
#define QUICK_PROBES_PER_KEY 2  /* the quick hash's budget: slots probed per key, over the object */
#define DUP_GAVE_UP 1

/*
 * One try of find_duplicates_hashed() over the table set[size]: 0, -1 at a
 * duplicate, or DUP_GAVE_UP when the quick hash went over its budget.
 */
static int dup_table(struct scanner *s, struct key *k, size_t n, uint32_t *set, size_t size, int quick)
{
	size_t i, j, slot, probes = 0, budget = QUICK_PROBES_PER_KEY * n;

	memset(set, 0, size * sizeof *set);
	for (i = 0; i < n; i++) {
		hash_key(&k[i], quick);
		for (slot = k[i].hash & (size - 1); set[slot] != 0; slot = (slot + 1) & (size - 1)) {
			s->compares++;
			if (quick && ++probes > budget)
				return DUP_GAVE_UP;
			j = set[slot] - 1u;
			if (k[j].hash == k[i].hash && keys_equal(&k[i], &k[j]))
				return -1;
		}
		set[slot] = (uint32_t)(i + 1);
	}
	return 0;
}

/*
 * Finds duplicates among the n > 8 keys k[] of an object (see
 * check_duplicates()); 0, or -1 when two decode alike (or, for a large
 * object, when memory for its table runs out: the full parse decides then).
 * An open-addressing table at most half full, indexed by a keyed hash: the
 * quick one, and SipHash when that one's probes go over budget, which keeps
 * the check linear in n whatever the keys, since they cannot be chosen to
 * collide under SipHash. s->compares counts the slots probed, for the tests
 * of that claim.
 */
int scan_find_duplicates_hashed(struct scanner *s, struct key *k, size_t n)
{
	uint32_t small[4 * SET_KEYS_MAX], *set = small;  /* key index + 1 by slot; 0: empty */
	size_t size = array_cap(2 * SET_KEYS_MAX, 2 * n, 0, 0);  /* at most half full */
	int rc;

	pthread_once(&sip_once, sip_init);
	if (size == 0 || (size > sizeof small / sizeof small[0] &&
			  (size > SIZE_MAX / sizeof *set || (set = malloc(size * sizeof *set)) == NULL)))
		return -1;
	if ((rc = dup_table(s, k, n, set, size, 1)) == DUP_GAVE_UP)
		rc = dup_table(s, k, n, set, size, 0);
	if (set != small)
		free(set);
	return rc;
}
