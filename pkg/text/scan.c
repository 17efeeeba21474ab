/*
 * scan: the strict JSON skip-scan itself (text/scan.h says what it promises):
 * bytes, strings 64 at a time, numbers, skipping, keeping, searching. The
 * keys' hashing and duplicate check live in scan_keys.c, the comparison the
 * differential tests use in scan_compare.c (scan_int.h: what they share).
 */
#include "text/scan_int.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/utf8.h"

/* ==== Byte classes and the scanner ==== */

/*
 * Byte classes for the string loop: 0 = plain (copy on), anything else needs
 * a look: '"' ends, '\\' escapes, < 0x20 is invalid, >= 0x80 starts UTF-8.
 */
#define R16(v) v, v, v, v, v, v, v, v, v, v, v, v, v, v, v, v
static const unsigned char special[256] = {
	R16(1), R16(1),                                  /* 0x00-0x1F: control */
	0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,  /* 0x20-0x2F: '"' */
	R16(0), R16(0),                                  /* 0x30-0x4F */
	0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0,  /* 0x50-0x5F: '\\' */
	R16(0), R16(0),                                  /* 0x60-0x7F */
	R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), R16(1), /* 0x80-0xFF: UTF-8 */
};
#undef R16

/*
 * The one-byte escapes: the letter after a backslash, and the byte it stands
 * for (0: not one; "\u" is longer and handled apart). Validation, decoding
 * and the chunks' mask all read this table (the SSE2 chunk compares against
 * the same eight letters).
 */
const unsigned char scan_escape_byte[256] = {
	['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b', ['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t',
};

/* ==== Errors, whitespace, UTF-8 ==== */

static int scan_fail(struct scanner *s)
{
	s->failed = 1;
	return -1;
}

/* Counts one more value (a member's or an element's); -1 past s->max_values. */
static inline int count_value(struct scanner *s)
{
	return ++s->values > s->max_values ? scan_fail(s) : 0;
}

static inline void skip_ws(struct scanner *s)
{
	/* Bodies from kube-apiserver are compact: one comparison settles most calls. */
	while (s->p < s->end && *s->p <= ' ' &&
	       (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

static int read_u4(struct scanner *s, const unsigned char *at, unsigned *out)
{
	int i, v;

	if (s->end - at < 4)
		return -1;
	*out = 0;
	for (i = 0; i < 4; i++) {
		if ((v = hexval(at[i])) < 0)
			return -1;
		*out = *out << 4 | (unsigned)v;
	}
	return 0;
}

/* Validates one UTF-8 sequence at s->p the way jansson does; advances past it. */
static int utf8(struct scanner *s)
{
	size_t n = utf8_sequence(s->p, s->end);

	if (n == 0)
		return -1;
	s->p += n;
	return 0;
}

/* ==== Blocks of bytes at once (SSE2, or portable C) ==== */

/*
 * The string loops look at a block of bytes at once: block_special(p) flags
 * the bytes of p[0..SCAN_BLOCK) that need a look ('"', '\\', control bytes
 * < 0x20, UTF-8 bytes >= 0x80), and FIRST_FLAGGED() of a non-zero mask is the
 * offset of the first of them (or 0 where it cannot be exact; the byte loop
 * after it then finds the byte). On x86-64 a block is 16 bytes compared in
 * three SSE2 instructions, so the loop's exit is predictable even in the
 * escape-dense last-applied-configuration annotation (an escape every 7 bytes
 * or so), where an 8-byte word missed half the time. Elsewhere (or built with
 * SCAN_PORTABLE, as a unit test is) the same in portable C.
 */
#if defined(__SSE2__) && defined(__GNUC__) && !defined(SCAN_PORTABLE)
#include <emmintrin.h>

#define SCAN_BLOCK 16
typedef unsigned block_mask;

static inline block_mask block_special(const unsigned char *p)
{
	__m128i v = _mm_loadu_si128((const __m128i *)(const void *)p);
	/* Signed bytes: < 0x20 holds the control bytes and, negative, every byte >= 0x80. */
	__m128i hit = _mm_or_si128(_mm_cmplt_epi8(v, _mm_set1_epi8(0x20)),
				   _mm_or_si128(_mm_cmpeq_epi8(v, _mm_set1_epi8('"')),
						_mm_cmpeq_epi8(v, _mm_set1_epi8('\\'))));

	return (block_mask)_mm_movemask_epi8(hit);
}

#define FIRST_FLAGGED(m) ((size_t)__builtin_ctz(m))
#else
#define SCAN_BLOCK 8
typedef uint64_t block_mask;

#define ONES  0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL

/*
 * SWAR: the special bytes of a word as their high bits. The has-less and
 * has-zero tricks can only flag falsely above a real hit, so the lowest
 * flagged byte is exact: on a little-endian machine, the first special byte.
 */
static inline block_mask block_special(const unsigned char *p)
{
	uint64_t w, q, b;

	memcpy(&w, p, 8);
	q = w ^ (ONES * '"');
	b = w ^ (ONES * '\\');
	return (((q - ONES) & ~q) | ((b - ONES) & ~b) | ((w - ONES * 0x20) & ~w) | w) & HIGHS;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ && defined(__GNUC__)
#define FIRST_FLAGGED(m) ((size_t)__builtin_ctzll(m) >> 3)
#else
#define FIRST_FLAGGED(m) ((size_t)0)  /* then the byte loop finds it */
#endif
#endif

/* ==== Strings, 64 bytes at a time ==== */

/*
 * Long strings, 64 bytes at a time: a 64-bit mask per byte class is built
 * once per chunk, and which bytes are escaped is worked out from the mask of
 * backslashes with a few word operations, without a branch or a load per
 * escape (the escape-dense last-applied-configuration annotation, an escape
 * every 7 bytes or so, otherwise paid a load-to-branch round trip for each).
 */
#define CHUNK 64

struct chunk_masks {
	uint64_t quote, backslash;
	uint64_t odd;    /* a control byte (< 0x20) or a UTF-8 byte (>= 0x80) */
	uint64_t simple; /* the letters of scan_escape_byte[] (only worked out when there is a backslash) */
};

#if defined(__SSE2__) && defined(__GNUC__) && !defined(SCAN_PORTABLE)
/* The 64-bit mask of four 16-byte comparison results, in byte order. */
static inline uint64_t chunk_bits(__m128i a, __m128i b, __m128i c, __m128i d)
{
	return (uint64_t)(unsigned)_mm_movemask_epi8(a) | (uint64_t)(unsigned)_mm_movemask_epi8(b) << 16 |
	       (uint64_t)(unsigned)_mm_movemask_epi8(c) << 32 | (uint64_t)(unsigned)_mm_movemask_epi8(d) << 48;
}

static inline uint64_t chunk_eq(const __m128i v[4], char c)
{
	const __m128i cc = _mm_set1_epi8(c);

	return chunk_bits(_mm_cmpeq_epi8(v[0], cc), _mm_cmpeq_epi8(v[1], cc), _mm_cmpeq_epi8(v[2], cc),
			  _mm_cmpeq_epi8(v[3], cc));
}

static inline void chunk_masks(const unsigned char *p, struct chunk_masks *m)
{
	const __m128i space = _mm_set1_epi8(0x20);
	__m128i v[4];
	int i;

	for (i = 0; i < 4; i++)
		v[i] = _mm_loadu_si128((const __m128i *)(const void *)(p + 16 * i));
	m->quote = chunk_eq(v, '"');
	m->backslash = chunk_eq(v, '\\');
	/* Signed bytes: < 0x20 holds the control bytes and, negative, every byte >= 0x80. */
	m->odd = chunk_bits(_mm_cmplt_epi8(v[0], space), _mm_cmplt_epi8(v[1], space), _mm_cmplt_epi8(v[2], space),
			    _mm_cmplt_epi8(v[3], space));
	m->simple = 0;
	if (m->backslash != 0)  /* scan_escape_byte[]'s letters */
		m->simple = m->quote | m->backslash | chunk_eq(v, '/') | chunk_eq(v, 'b') | chunk_eq(v, 'f') |
			    chunk_eq(v, 'n') | chunk_eq(v, 'r') | chunk_eq(v, 't');
}
#else
static inline void chunk_masks(const unsigned char *p, struct chunk_masks *m)
{
	int i;

	m->quote = m->backslash = m->odd = m->simple = 0;
	for (i = 0; i < CHUNK; i++) {
		unsigned char c = p[i];

		m->quote |= (uint64_t)(c == '"') << i;
		m->backslash |= (uint64_t)(c == '\\') << i;
		m->odd |= (uint64_t)(c < 0x20 || c >= 0x80) << i;
		m->simple |= (uint64_t)(scan_escape_byte[c] != 0) << i;
	}
}
#endif

#if defined(__GNUC__) && defined(__POPCNT__)
#define POPCOUNT64(x) ((size_t)__builtin_popcountll(x))
#else
static inline size_t POPCOUNT64(uint64_t x)
{
	x -= (x >> 1) & 0x5555555555555555ULL;
	x = (x & 0x3333333333333333ULL) + ((x >> 2) & 0x3333333333333333ULL);
	x = (x + (x >> 4)) & 0x0F0F0F0F0F0F0F0FULL;
	return (size_t)((x * 0x0101010101010101ULL) >> 56);
}
#endif

#if defined(__GNUC__)
#define CTZ64(x) ((size_t)__builtin_ctzll(x))
#else
static size_t CTZ64(uint64_t x)
{
	size_t n = 0;

	while (!(x & 1)) {
		x >>= 1;
		n++;
	}
	return n;
}
#endif

/*
 * The bytes the chunk's backslashes escape (none of them escaped from before
 * the chunk): in a run of backslashes the first escapes the second, the
 * third the fourth, and a run of odd length escapes the byte after it.
 * *starts receives the backslashes that begin an escape. Branch-free, from
 * simdjson (Langdale and Lemire, "Parsing Gigabytes of JSON per Second",
 * 2019): subtracting the backslashes from (backslashes << 1 | odd bits)
 * borrows through each run and leaves, after the xor with the odd bits, the
 * escaping backslashes and the escaped bytes set; which is which is parity.
 * The unit tests hold it to the byte loop at every offset.
 */
static inline uint64_t chunk_escaped(uint64_t backslash, uint64_t *starts)
{
	const uint64_t odd = 0xAAAAAAAAAAAAAAAAULL;  /* bits 1, 3, 5 ... */
	uint64_t code = (((backslash << 1) | odd) - backslash) ^ odd;

	*starts = code & backslash;
	return code ^ backslash;
}

/*
 * Settles the chunk p[0..CHUNK) of a string's contents, where p is not in the
 * middle of an escape. Returns how many bytes it took: all of them, 63 when
 * the last one starts an escape (the next chunk begins with it), or the
 * offset of the closing quote with *closed set. 0 when the bytes before the
 * end of the string or chunk hold something the byte loop must look at: a
 * control byte, UTF-8, a "\u" or an invalid escape. *shrink grows by the
 * escapes taken (each two bytes for one).
 */
static inline size_t chunk_string(const unsigned char *p, size_t *shrink, int *closed)
{
	struct chunk_masks m;
	uint64_t escaped = 0, starts = 0, look, ends, before;

	chunk_masks(p, &m);
	if (m.backslash != 0)
		escaped = chunk_escaped(m.backslash, &starts);
	look = (escaped & ~m.simple) | m.odd;
	ends = m.quote & ~escaped;
	if (ends != 0) {
		size_t n = CTZ64(ends);

		before = (1ULL << n) - 1;
		if (look & before)
			return 0;
		*shrink += POPCOUNT64(escaped & before);
		*closed = 1;
		return n;
	}
	if (look != 0)
		return 0;
	*shrink += POPCOUNT64(escaped);
	return starts >> 63 ? CHUNK - 1 : CHUNK;
}

/* ==== Strings and keys ==== */

/*
 * The rest of a string from p, its first byte that needs a look (see
 * scan_string()): escapes and UTF-8 are validated here.
 */
static int scan_string_rest(struct scanner *s, struct key *key, const unsigned char *start,
			    const unsigned char *p)
{
	const unsigned char *end = s->end, *bytewise = p;  /* chunks again from bytewise on */
	size_t shrink = 0;  /* raw bytes minus decoded bytes, over all escapes */
	int escaped = 0, closed = 0;

	for (;;) {
		if (p >= bytewise) {
			size_t before = shrink, n;

			while (end - p > CHUNK && (n = chunk_string(p, &shrink, &closed)) != 0) {
				p += n;
				if (closed)
					break;
			}
			escaped |= shrink != before;
			if (closed)
				break;
			/* A chunk the byte loop must see: it goes bytewise to that chunk's end. */
			bytewise = p + CHUNK;
		}
		while (end - p >= SCAN_BLOCK) {
			block_mask m = block_special(p);

			if (m != 0) {
				p += FIRST_FLAGGED(m);
				break;
			}
			p += SCAN_BLOCK;
		}
		while (p < end && !special[*p])
			p++;
		if (p >= end)
			return scan_fail(s);
		if (*p == '"')
			break;
		if (*p == '\\') {
			unsigned cp, lo;

			escaped = 1;
			if (p + 1 >= end)
				return scan_fail(s);
			if (scan_escape_byte[p[1]]) {
				p += 2;
				shrink += 1;
				continue;
			}
			if (p[1] != 'u' || read_u4(s, p + 2, &cp) != 0 || cp == 0)
				return scan_fail(s);  /* not an escape; \u0000 is refused, as jansson does */
			p += 6;
			if (cp >= 0xDC00 && cp <= 0xDFFF)
				return scan_fail(s);  /* lone low surrogate */
			if (cp >= 0xD800 && cp <= 0xDBFF) {
				if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || read_u4(s, p + 2, &lo) != 0 ||
				    lo < 0xDC00 || lo > 0xDFFF)
					return scan_fail(s);
				p += 6;
				shrink += 12 - 4;
			} else {
				shrink += 6 - (cp < 0x80 ? 1 : cp < 0x800 ? 2 : 3);
			}
			continue;
		}
		if (*p < 0x20)
			return scan_fail(s);
		s->p = p;
		if (utf8(s) != 0)
			return scan_fail(s);
		p = s->p;
	}
	s->p = p + 1;
	if (key != NULL) {
		key->start = (const char *)start;
		key->len = (size_t)(p - start);
		key->escaped = escaped;
		key->dlen = key->len - shrink;
	}
	return 0;
}

/*
 * Scans a string (s->p at the opening quote) and leaves s->p after the closing
 * one, validating escapes and UTF-8. With key != NULL, records its raw span
 * and decoded length. Most strings are short, plain ASCII: they are settled
 * here, inline, a block at a time; the first byte that needs a look and
 * is not the closing quote hands over to scan_string_rest().
 */
static inline int scan_string(struct scanner *s, struct key *key)
{
	const unsigned char *start = s->p + 1, *p = start, *end = s->end;

	for (;; p += SCAN_BLOCK) {
		block_mask m;

		if (end - p < SCAN_BLOCK)
			return scan_string_rest(s, key, start, p);
		if ((m = block_special(p)) != 0) {
			p += FIRST_FLAGGED(m);
			break;
		}
	}
	if (*p != '"')
		return scan_string_rest(s, key, start, p);
	s->p = p + 1;
	if (key != NULL) {
		key->start = (const char *)start;
		key->len = (size_t)(p - start);
		key->escaped = 0;
		key->dlen = key->len;
	}
	return 0;
}

/* An object key: a string short enough for the fixed decode buffers. */
static int scan_key(struct scanner *s, struct key *key)
{
	if (scan_string(s, key) != 0)
		return -1;
	return key->dlen > KEY_DECODED_MAX ? scan_fail(s) : 0;  /* absurd key: let the full parse judge */
}

/* ==== Numbers and literals ==== */

/*
 * The value jansson gives the number text p[0..n), which scan_number() has
 * validated and bounded. Without a fraction or exponent it is an integer
 * (jansson's strtoll: "-0" is 0; at most 18 digits, so v cannot overflow);
 * else a real, from strtod of the same text, as jansson does it.
 */
static json_t *number_value(const unsigned char *p, size_t n, int real)
{
	char text[64], *stop;
	double d;

	if (!real) {
		int neg = *p == '-';
		unsigned long long v = 0;
		size_t i;

		for (i = (size_t)neg; i < n; i++)
			v = v * 10 + (unsigned)(p[i] - '0');
		return json_integer(neg ? -(json_int_t)v : (json_int_t)v);
	}
	if (n >= sizeof text)
		return NULL;  /* a long real (many fraction digits): the full parse has it */
	memcpy(text, p, n);
	text[n] = '\0';
	d = strtod(text, &stop);
	/*
	 * jansson turns '.' into the locale's decimal point first; under a locale
	 * where that is not '.', strtod stops short here and the full parse decides.
	 */
	if (stop != text + n)
		return NULL;
	return json_real(d);
}

/*
 * Numbers in jansson's grammar. Integers must fit a long long and reals must
 * not overflow a double; rather than reproduce strtod, anything that could
 * come near either limit is refused (the caller's full parse then decides).
 * With out != NULL the number is kept in *out.
 */
static int scan_number(struct scanner *s, json_t **out)
{
	const unsigned char *p = s->p, *end = s->end;
	size_t int_digits = 0;
	long exp = 0;
	int real = 0, exp_neg = 0;

	if (p < end && *p == '-')
		p++;
	if (p < end && *p == '0') {
		p++;
		int_digits = 1;
	} else {
		while (p < end && *p >= '0' && *p <= '9') {
			p++;
			int_digits++;
		}
	}
	if (int_digits == 0)
		return scan_fail(s);
	if (p < end && *p == '.') {
		real = 1;
		if (++p >= end || *p < '0' || *p > '9')
			return scan_fail(s);
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = 1;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			exp_neg = *p++ == '-';
		if (p >= end || *p < '0' || *p > '9')
			return scan_fail(s);
		while (p < end && *p >= '0' && *p <= '9') {
			if (exp < 100000)
				exp = exp * 10 + (*p - '0');
			p++;
		}
	}
	/* 18 digits always fit a long long; a real below 10^300 never overflows. */
	if (!real && int_digits > 18)
		return scan_fail(s);
	if (real && (long)int_digits + (exp_neg ? -exp : exp) > 300)
		return scan_fail(s);
	if (out != NULL && (*out = number_value(s->p, (size_t)(p - s->p), real)) == NULL)
		return scan_fail(s);
	s->p = p;
	return 0;
}

static int literal(struct scanner *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return scan_fail(s);
	s->p += n;
	return 0;
}

/* ==== Duplicate keys (the hashed check: scan_keys.c) ==== */

/* Checks the keys of the object that just closed (keys[from..n)) for duplicates, and pops them. */
static inline int check_duplicates(struct scanner *s, size_t from)
{
	struct key *k = s->keys + from;
	size_t n = s->n_keys - from, i, j;

	/* Most objects are small (half of a pod's hold one key or none): pairwise, no hashing. */
	if (n <= 8) {
		for (i = 1; i < n; i++)
			for (j = 0; j < i; j++)
				if (keys_equal(&k[i], &k[j]))
					return scan_fail(s);
	} else if (scan_find_duplicates_hashed(s, k, n) != 0) {
		return scan_fail(s);
	}
	s->n_keys = from;
	return 0;
}

/* ==== The key stack ==== */

/* Grows the key stack (push_key()'s rare case); -1 when memory runs out. */
static int grow_keys(struct scanner *s)
{
	int inline_keys = s->keys == s->inline_keys;
	size_t cap = inline_keys ? 0 : s->cap_keys;
	/* Off the inline stack: a heap one of twice its size, the keys copied over. */
	struct key *grown = array_grow(inline_keys ? NULL : s->keys, &cap, s->n_keys + 1, sizeof *grown,
				       2 * s->cap_keys);

	if (grown == NULL)
		return -1;
	if (inline_keys)
		memcpy(grown, s->inline_keys, sizeof s->inline_keys);
	s->keys = grown;
	s->cap_keys = cap;
	return 0;
}

static inline struct key *push_key(struct scanner *s)
{
	if (s->n_keys == s->cap_keys && grow_keys(s) != 0)
		return NULL;
	return &s->keys[s->n_keys++];
}

/* ==== Skipping what the shape does not keep ==== */

static int scan_value(struct scanner *s, const struct scan_shape *shape, enum scan_kind kind,
		      json_t **out);
static int skip_value(struct scanner *s);

/* A member or element value: a string, the usual case, without the call. */
static inline int skip_member_value(struct scanner *s)
{
	if (s->p < s->end && *s->p == '"')
		return scan_string(s, NULL);
	return skip_value(s);
}

/*
 * Skipping: the subtrees nothing is kept from (most of a pod: managedFields,
 * annotations, env, volumes). The same validation as the keeping path, with
 * none of its bookkeeping per token.
 */
static int skip_object(struct scanner *s)
{
	size_t from = s->n_keys;

	if (++s->depth > s->max_depth)
		return scan_fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		s->depth--;
		return 0;
	}
	for (;;) {
		struct key *k;

		skip_ws(s);
		if (s->p >= s->end || *s->p != '"' || count_value(s) != 0 || (k = push_key(s)) == NULL ||
		    scan_key(s, k) != 0)
			return scan_fail(s);
		skip_ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			return scan_fail(s);
		skip_ws(s);
		if (skip_member_value(s) != 0)
			return -1;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			break;
		}
		return scan_fail(s);
	}
	s->depth--;
	return check_duplicates(s, from);
}

static int skip_array(struct scanner *s)
{
	if (++s->depth > s->max_depth)
		return scan_fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		s->depth--;
		return 0;
	}
	for (;;) {
		skip_ws(s);
		if (count_value(s) != 0 || skip_member_value(s) != 0)
			return -1;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			break;
		}
		return scan_fail(s);
	}
	s->depth--;
	return 0;
}

static int skip_value(struct scanner *s)
{
	if (s->p >= s->end)
		return scan_fail(s);
	switch (*s->p) {
	case '{': return skip_object(s);
	case '[': return skip_array(s);
	case '"': return scan_string(s, NULL);
	case 't': return literal(s, "true", 4);
	case 'f': return literal(s, "false", 5);
	case 'n': return literal(s, "null", 4);
	default:  return scan_number(s, NULL);
	}
}

/* ==== Finding a key in a shape ==== */

/*
 * Keeping: the members a shape selects, built into jansson values straight
 * from bytes the scanner has just validated, the same values json_loadb()
 * would give (it is what the fast path is checked against).
 */

/* find_key() of a key spelt with escapes: looked up decoded (rare: the slow way). */
static const struct scan_shape *find_escaped(struct scanner *s, const struct scan_shape *shape,
					     const struct key *k)
{
	unsigned char decoded[KEY_DECODED_MAX];

	if (scan_decode_string((const unsigned char *)k->start, k->len, decoded, k->dlen) != 0) {
		scan_fail(s);
		return NULL;
	}
	return find_bytes(shape, (const char *)decoded, k->dlen);
}

/* The entry naming key k, or NULL (and s failed, when k does not decode to its length). */
static inline const struct scan_shape *find_key(struct scanner *s, const struct scan_shape *shape,
						const struct key *k)
{
	return k->escaped ? find_escaped(s, shape, k) : find_bytes(shape, k->start, k->len);
}

/* The entry that ends shape (through SCAN_ALSO tables): what happens to the members it does not name. */
static const struct scan_shape *rest_of(const struct scan_shape *shape)
{
	for (;;) {
		while (shape->key != NULL)
			shape++;
		if (shape->kind != SCAN_ALSO || shape->children == NULL)
			return shape;
		shape = shape->children;
	}
}

/* ==== Keeping values ==== */

/* A string value at s->p, kept in *out with its escapes decoded. */
static int keep_string(struct scanner *s, json_t **out)
{
	struct key str;
	unsigned char small[256], *buf;

	if (scan_string(s, &str) != 0)
		return -1;
	/* Validated: UTF-8, and no NUL (\u0000 is refused), so no check is needed. */
	if (!str.escaped) {
		*out = json_stringn_nocheck(str.start, str.len);
	} else {
		buf = str.dlen <= sizeof small ? small : malloc(str.dlen);
		if (buf == NULL)
			return scan_fail(s);
		*out = scan_decode_string((const unsigned char *)str.start, str.len, buf, str.dlen) == 0
		       ? json_stringn_nocheck((const char *)buf, str.dlen) : NULL;
		if (buf != small)
			free(buf);
	}
	return *out != NULL ? 0 : scan_fail(s);
}

/* A literal at s->p, kept as value (jansson's singletons). */
static int keep_literal(struct scanner *s, const char *word, size_t n, json_t *value, json_t **out)
{
	if (literal(s, word, n) != 0)
		return -1;
	*out = value;
	return 0;
}

/* Adds child to obj under key k, decoded; the reference to child is taken either way. */
static int set_member(json_t *obj, const struct key *k, json_t *child)
{
	unsigned char buf[KEY_DECODED_MAX];

	if (!k->escaped)
		return json_object_setn_new_nocheck(obj, k->start, k->len, child);
	if (scan_decode_string((const unsigned char *)k->start, k->len, buf, k->dlen) != 0) {
		json_decref(child);
		return -1;
	}
	return json_object_setn_new_nocheck(obj, (const char *)buf, k->dlen, child);
}

/* ==== Objects and arrays the shape keeps ==== */

/*
 * An object at s->p, kept in *out (a new object). With a shape, only the
 * members it names are kept, each as its entry says; with shape NULL, every
 * member is kept whole. A key spelt with escapes is looked up decoded.
 */
static int descend_value(struct scanner *s, const struct scan_shape *search, json_t **out);

/* Adds a kept member: under the shape's own key (static storage), or, for a '*' entry, the key read. */
static int set_kept(json_t *obj, const struct scan_shape *member, const struct key *k, json_t *child)
{
	if (member->key[0] == '*')
		return set_member(obj, k, child);
	return json_object_set_new_nocheck(obj, member->key, child);
}

static int scan_object(struct scanner *s, const struct scan_shape *shape, json_t **out)
{
	size_t from = s->n_keys;
	const struct scan_shape *rest = NULL;  /* the shape's end, looked up at the first member it does not name */
	json_t *obj;

	if (++s->depth > s->max_depth || (obj = json_object()) == NULL)
		return scan_fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		goto done;
	}
	for (;;) {
		struct key k;
		const struct scan_shape *member = NULL;
		json_t *child = NULL;
		struct key *pushed;

		/*
		 * Scanned into k and copied onto the stack, not the other way: k is
		 * used while the value is scanned (and the stack may move), and
		 * reading it back from the stack stalled on the stores just made.
		 */
		skip_ws(s);
		if (s->p >= s->end || *s->p != '"' || count_value(s) != 0 || scan_key(s, &k) != 0 ||
		    (pushed = push_key(s)) == NULL)
			goto bad;
		*pushed = k;
		if (shape != NULL)
			member = find_key(s, shape, &k);
		skip_ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			goto bad;
		skip_ws(s);
		if (shape == NULL) {
			if (scan_value(s, NULL, SCAN_WHOLE, &child) != 0 || set_member(obj, &k, child) != 0)
				goto bad;
		} else if (member != NULL) {
			if (scan_value(s, member->children, member->kind, &child) != 0 ||
			    set_kept(obj, member, &k, child) != 0)
				goto bad;
		} else if ((rest != NULL || (rest = rest_of(shape)) != NULL) && rest->kind == SCAN_DESCEND) {
			if (descend_value(s, rest->children, &child) != 0 ||
			    (child != NULL && set_member(obj, &k, child) != 0))
				goto bad;
		} else if (skip_value(s) != 0) {
			goto bad;
		}
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == '}') {
			s->p++;
			break;
		}
		goto bad;
	}
done:
	if (check_duplicates(s, from) != 0)
		goto bad;
	s->depth--;
	*out = obj;
	return 0;
bad:
	json_decref(obj);
	return scan_fail(s);
}

/*
 * An array at s->p, kept in *out (a new array). With elem, object elements
 * keep only the members elem names; anything else is kept whole.
 */
static int scan_array(struct scanner *s, const struct scan_shape *elem, json_t **out)
{
	json_t *arr;

	if (++s->depth > s->max_depth || (arr = json_array()) == NULL)
		return scan_fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		goto done;
	}
	for (;;) {
		json_t *child = NULL;

		skip_ws(s);
		if (count_value(s) != 0 || scan_value(s, elem, elem ? SCAN_OBJECT : SCAN_WHOLE, &child) != 0 ||
		    json_array_append_new(arr, child) != 0)
			goto bad;
		skip_ws(s);
		if (s->p < s->end && *s->p == ',') {
			s->p++;
			continue;
		}
		if (s->p < s->end && *s->p == ']') {
			s->p++;
			break;
		}
		goto bad;
	}
done:
	s->depth--;
	*out = arr;
	return 0;
bad:
	json_decref(arr);
	return scan_fail(s);
}

/* ==== Items of a container ==== */

/*
 * Enters the object or array at s->p: -1 past max_depth, 0 when it is empty
 * (closed again, depth restored), 1 when an item follows.
 */
static inline int open_items(struct scanner *s, char close)
{
	if (++s->depth > s->max_depth)
		return scan_fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == close) {
		s->p++;
		s->depth--;
		return 0;
	}
	return 1;
}

/* After a member or element: 1 at a ',' (another follows), 0 at close (consumed), -1 otherwise. */
static inline int next_item(struct scanner *s, char close)
{
	skip_ws(s);
	if (s->p < s->end && (*s->p == ',' || *s->p == close))
		return *s->p++ == ',';
	return -1;
}

/* ==== Searching at any depth (SCAN_DESCEND) ==== */

/*
 * Searching (SCAN_DESCEND): every member of every object and array below is
 * looked up in search; what an entry names is kept as it says, everything
 * else only validated, and a container is built only when something inside
 * it was kept (*out stays NULL otherwise).
 */
static int descend_object(struct scanner *s, const struct scan_shape *search, json_t **out)
{
	size_t from = s->n_keys;
	json_t *obj = NULL;
	int more = open_items(s, '}');

	if (more <= 0)
		return more;
	for (;;) {
		struct key k, *pushed;
		const struct scan_shape *member;
		json_t *child = NULL;

		skip_ws(s);
		if (s->p >= s->end || *s->p != '"' || count_value(s) != 0 || scan_key(s, &k) != 0 ||
		    (pushed = push_key(s)) == NULL)
			goto bad;
		*pushed = k;  /* as in scan_object() */
		member = find_key(s, search, &k);
		skip_ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			goto bad;
		skip_ws(s);
		if (member != NULL ? scan_value(s, member->children, member->kind, &child) != 0
		    : descend_value(s, search, &child) != 0)
			goto bad;
		if (child != NULL) {
			if (obj == NULL && (obj = json_object()) == NULL) {
				json_decref(child);
				goto bad;
			}
			if (set_member(obj, &k, child) != 0)
				goto bad;
		}
		if ((more = next_item(s, '}')) < 0)
			goto bad;
		if (!more)
			break;
	}
	s->depth--;
	if (check_duplicates(s, from) != 0)
		goto bad;
	*out = obj;
	return 0;
bad:
	json_decref(obj);
	return scan_fail(s);
}

static int descend_array(struct scanner *s, const struct scan_shape *search, json_t **out)
{
	json_t *arr = NULL;
	size_t i;
	int more = open_items(s, ']');

	if (more <= 0)
		return more;
	for (i = 0;; i++) {
		json_t *child = NULL;

		skip_ws(s);
		if (count_value(s) != 0 || descend_value(s, search, &child) != 0)
			goto bad;
		if (child != NULL) {
			if (arr == NULL && (arr = json_array()) == NULL) {
				json_decref(child);
				goto bad;
			}
			/* The elements before it that held nothing: null, so the index stays. */
			while (json_array_size(arr) < i)
				if (json_array_append_new(arr, json_null()) != 0) {
					json_decref(child);
					goto bad;
				}
			if (json_array_append_new(arr, child) != 0)
				goto bad;
		}
		if ((more = next_item(s, ']')) < 0)
			goto bad;
		if (!more)
			break;
	}
	s->depth--;
	*out = arr;
	return 0;
bad:
	json_decref(arr);
	return scan_fail(s);
}

static int descend_value(struct scanner *s, const struct scan_shape *search, json_t **out)
{
	*out = NULL;
	if (s->p >= s->end)
		return scan_fail(s);
	if (*s->p == '{')
		return descend_object(s, search, out);
	if (*s->p == '[')
		return descend_array(s, search, out);
	return skip_member_value(s);
}

/* ==== Entry points ==== */

/*
 * Any value at s->p. With out == NULL it is only validated; else it is kept
 * in *out: the container kind names is walked with shape, and anything else
 * (a SCAN_WHOLE member, or one of an unexpected type) is kept whole.
 */
static int scan_value(struct scanner *s, const struct scan_shape *shape, enum scan_kind kind,
		      json_t **out)
{
	if (out == NULL)
		return skip_value(s);
	if (s->p >= s->end)
		return scan_fail(s);
	switch (*s->p) {
	case '{': return scan_object(s, kind == SCAN_OBJECT ? shape : NULL, out);
	case '[': return scan_array(s, kind == SCAN_ARRAY_OF_OBJECTS ? shape : NULL, out);
	case '"': return keep_string(s, out);
	case 't': return keep_literal(s, "true", 4, json_true(), out);
	case 'f': return keep_literal(s, "false", 5, json_false(), out);
	case 'n': return keep_literal(s, "null", 4, json_null(), out);
	default:  return scan_number(s, out);
	}
}

json_t *scan_extract_ex(const char *body, size_t len, const struct scan_shape *shape,
			size_t max_depth, size_t max_values, struct scan_stats *stats)
{
	struct scanner s;
	json_t *root = NULL;

	s.p = (const unsigned char *)body;
	s.end = s.p + len;
	s.depth = 0;
	s.max_depth = max_depth;
	s.keys = s.inline_keys;
	s.n_keys = 0;
	s.cap_keys = sizeof s.inline_keys / sizeof s.inline_keys[0];
	s.values = 0;
	s.max_values = max_values;
	s.compares = 0;
	s.failed = 0;

	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{' || count_value(&s) != 0 || scan_object(&s, shape, &root) != 0)
		goto bad;
	skip_ws(&s);
	if (s.p != s.end || s.failed)  /* s.failed: a failure on the way that no return value carried */
		goto bad;
	goto out;
bad:
	json_decref(root);
	root = NULL;
out:
	if (s.keys != s.inline_keys)
		free(s.keys);
	if (stats != NULL) {
		stats->values = s.values;
		stats->compares = s.compares;
	}
	return root;
}

json_t *scan_extract(const char *body, size_t len, const struct scan_shape *shape,
		     size_t max_depth)
{
	return scan_extract_ex(body, len, shape, max_depth, SIZE_MAX, NULL);
}
