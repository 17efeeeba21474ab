#include "scan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

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

struct key {
	uint64_t hash;      /* FNV-1a of the decoded key */
	const char *start;  /* raw bytes between the quotes */
	size_t len;
	int escaped;
};

struct scanner {
	const unsigned char *p, *end;
	size_t depth, max_depth;
	struct key *keys;   /* a stack: each open object's keys, innermost last */
	size_t n_keys, cap_keys;
	int failed;
};

static int fail(struct scanner *s)
{
	s->failed = 1;
	return -1;
}

static void skip_ws(struct scanner *s)
{
	while (s->p < s->end && (*s->p == ' ' || *s->p == '\n' || *s->p == '\r' || *s->p == '\t'))
		s->p++;
}

static int hexval(unsigned char c)
{
	if (c >= '0' && c <= '9') return c - '0';
	if (c >= 'a' && c <= 'f') return c - 'a' + 10;
	if (c >= 'A' && c <= 'F') return c - 'A' + 10;
	return -1;
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
	const unsigned char *p = s->p;
	unsigned c = p[0], value, n, i;

	if (c >= 0xC2 && c <= 0xDF) { n = 2; value = c & 0x1F; }
	else if (c >= 0xE0 && c <= 0xEF) { n = 3; value = c & 0x0F; }
	else if (c >= 0xF0 && c <= 0xF4) { n = 4; value = c & 0x07; }
	else return -1;
	if ((size_t)(s->end - p) < n)
		return -1;
	for (i = 1; i < n; i++) {
		if ((p[i] & 0xC0) != 0x80)
			return -1;
		value = value << 6 | (p[i] & 0x3F);
	}
	if (value > 0x10FFFF || (value >= 0xD800 && value <= 0xDFFF) ||
	    (n == 3 && value < 0x800) || (n == 4 && value < 0x10000))
		return -1;
	s->p += n;
	return 0;
}

#define FNV_OFFSET 1469598103934665603ULL
#define FNV_PRIME 1099511628211ULL

static uint64_t fnv(uint64_t h, unsigned char c)
{
	return (h ^ c) * FNV_PRIME;
}

/* Hashes the UTF-8 encoding of code point cp, as jansson would store it. */
static uint64_t fnv_cp(uint64_t h, unsigned cp)
{
	if (cp < 0x80)
		return fnv(h, (unsigned char)cp);
	if (cp < 0x800)
		return fnv(fnv(h, (unsigned char)(0xC0 | cp >> 6)), (unsigned char)(0x80 | (cp & 0x3F)));
	if (cp < 0x10000)
		return fnv(fnv(fnv(h, (unsigned char)(0xE0 | cp >> 12)), (unsigned char)(0x80 | (cp >> 6 & 0x3F))),
			   (unsigned char)(0x80 | (cp & 0x3F)));
	return fnv(fnv(fnv(fnv(h, (unsigned char)(0xF0 | cp >> 18)), (unsigned char)(0x80 | (cp >> 12 & 0x3F))),
		       (unsigned char)(0x80 | (cp >> 6 & 0x3F))), (unsigned char)(0x80 | (cp & 0x3F)));
}

/*
 * Scans a string (s->p at the opening quote) and leaves s->p after the closing
 * one. With key != NULL the decoded bytes are hashed for the duplicate check.
 */
static int scan_string(struct scanner *s, struct key *key)
{
	const unsigned char *p = ++s->p, *end = s->end;
	uint64_t h = FNV_OFFSET;
	int escaped = 0;

	for (;;) {
		if (key == NULL) {
			while (p < end && !special[*p])
				p++;
		} else {
			while (p < end && !special[*p])
				h = fnv(h, *p++);
		}
		if (p >= end)
			return fail(s);
		if (*p == '"')
			break;
		if (*p == '\\') {
			unsigned cp, lo;

			escaped = 1;
			if (p + 1 >= end)
				return fail(s);
			switch (p[1]) {
			case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
				if (key)
					h = fnv(h, p[1] == 'b' ? '\b' : p[1] == 'f' ? '\f' : p[1] == 'n' ? '\n'
						: p[1] == 'r' ? '\r' : p[1] == 't' ? '\t' : p[1]);
				p += 2;
				continue;
			case 'u':
				if (read_u4(s, p + 2, &cp) != 0 || cp == 0)
					return fail(s);  /* \u0000 is refused, as jansson does */
				p += 6;
				if (cp >= 0xDC00 && cp <= 0xDFFF)
					return fail(s);  /* lone low surrogate */
				if (cp >= 0xD800 && cp <= 0xDBFF) {
					if (end - p < 6 || p[0] != '\\' || p[1] != 'u' || read_u4(s, p + 2, &lo) != 0 ||
					    lo < 0xDC00 || lo > 0xDFFF)
						return fail(s);
					cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
					p += 6;
				}
				if (key)
					h = fnv_cp(h, cp);
				continue;
			default:
				return fail(s);
			}
		}
		if (*p < 0x20)
			return fail(s);
		/* UTF-8 lead byte */
		{
			const unsigned char *start = p;

			s->p = p;
			if (utf8(s) != 0)
				return fail(s);
			p = s->p;
			while (key && start < p)
				h = fnv(h, *start++);
		}
	}
	if (key) {
		key->hash = h;
		key->start = (const char *)s->p;
		key->len = (size_t)(p - s->p);
		key->escaped = escaped;
	}
	s->p = p + 1;
	return 0;
}

/*
 * Numbers in jansson's grammar. Integers must fit a long long and reals must
 * not overflow a double; rather than reproduce strtod, anything that could
 * come near either limit is refused (the caller's full parse then decides).
 */
static int scan_number(struct scanner *s)
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
		return fail(s);
	if (p < end && *p == '.') {
		real = 1;
		if (++p >= end || *p < '0' || *p > '9')
			return fail(s);
		while (p < end && *p >= '0' && *p <= '9')
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = 1;
		p++;
		if (p < end && (*p == '+' || *p == '-'))
			exp_neg = *p++ == '-';
		if (p >= end || *p < '0' || *p > '9')
			return fail(s);
		while (p < end && *p >= '0' && *p <= '9') {
			if (exp < 100000)
				exp = exp * 10 + (*p - '0');
			p++;
		}
	}
	/* 18 digits always fit a long long; a real below 10^300 never overflows. */
	if (!real && int_digits > 18)
		return fail(s);
	if (real && (long)int_digits + (exp_neg ? -exp : exp) > 300)
		return fail(s);
	s->p = p;
	return 0;
}

static int literal(struct scanner *s, const char *word, size_t n)
{
	if ((size_t)(s->end - s->p) < n || memcmp(s->p, word, n) != 0)
		return fail(s);
	s->p += n;
	return 0;
}

/* Exact comparison of two keys that hash alike: decode both through jansson. */
static int keys_equal(const struct key *a, const struct key *b)
{
	json_t *ja, *jb;
	int eq;

	if (!a->escaped && !b->escaped)
		return a->len == b->len && memcmp(a->start, b->start, a->len) == 0;
	/* Rare: escapes in colliding keys. Quote the raw bytes and let jansson decode. */
	ja = json_loadb(a->start - 1, a->len + 2, JSON_DECODE_ANY, NULL);
	jb = json_loadb(b->start - 1, b->len + 2, JSON_DECODE_ANY, NULL);
	eq = ja == NULL || jb == NULL || json_equal(ja, jb); /* unsure counts as equal: fall back */
	json_decref(ja);
	json_decref(jb);
	return eq;
}

static int by_hash(const void *a, const void *b)
{
	uint64_t x = ((const struct key *)a)->hash, y = ((const struct key *)b)->hash;
	return (x > y) - (x < y);
}

/* Checks the keys of the object that just closed (keys[from..n)) for duplicates. */
static int check_duplicates(struct scanner *s, size_t from)
{
	struct key *k = s->keys + from;
	size_t n = s->n_keys - from, i, j;

	if (n <= 16) {
		for (i = 1; i < n; i++)
			for (j = 0; j < i; j++)
				if (k[i].hash == k[j].hash && keys_equal(&k[i], &k[j]))
					return fail(s);
	} else {
		qsort(k, n, sizeof *k, by_hash);
		for (i = 1; i < n; i++)
			for (j = i; j-- > 0 && k[j].hash == k[i].hash;)
				if (keys_equal(&k[i], &k[j]))
					return fail(s);
	}
	s->n_keys = from;
	return 0;
}

static struct key *push_key(struct scanner *s)
{
	if (s->n_keys == s->cap_keys) {
		size_t cap = s->cap_keys ? s->cap_keys * 2 : 64;
		struct key *grown = realloc(s->keys, cap * sizeof *grown);

		if (grown == NULL)
			return NULL;
		s->keys = grown;
		s->cap_keys = cap;
	}
	return &s->keys[s->n_keys++];
}

static int scan_value(struct scanner *s, const struct scan_shape *shape, enum scan_kind kind,
		      json_t **out);

static const struct scan_shape *find(const struct scan_shape *shape, const struct key *k)
{
	for (; shape != NULL && shape->key != NULL; shape++)
		if (!k->escaped && strlen(shape->key) == k->len && memcmp(shape->key, k->start, k->len) == 0)
			return shape;
	return NULL;
}

/*
 * An object at s->p. With out != NULL, members named in shape are kept in
 * *out (a new object); a member whose key is escaped is never a match, which
 * is safe only because escaped keys the shape names cannot occur in real
 * Kubernetes objects and are refused below.
 */
static int scan_object(struct scanner *s, const struct scan_shape *shape, json_t **out)
{
	size_t from = s->n_keys;
	json_t *obj = NULL;

	if (++s->depth > s->max_depth)
		return fail(s);
	if (out != NULL && (obj = json_object()) == NULL)
		return fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == '}') {
		s->p++;
		goto done;
	}
	for (;;) {
		struct key *k;
		const struct scan_shape *member;
		json_t *child = NULL;

		skip_ws(s);
		if (s->p >= s->end || *s->p != '"' || (k = push_key(s)) == NULL ||
		    scan_string(s, k) != 0)
			goto bad;
		/* A kept member spelt with escapes would be missed: refuse, the full parse decides. */
		member = out ? find(shape, k) : NULL;
		if (out && member == NULL && k->escaped && shape != NULL)
			goto bad;
		skip_ws(s);
		if (s->p >= s->end || *s->p++ != ':')
			goto bad;
		skip_ws(s);
		if (scan_value(s, member ? member->children : NULL, member ? member->kind : SCAN_WHOLE,
			       member ? &child : NULL) != 0)
			goto bad;
		if (member != NULL && (child == NULL || json_object_set_new(obj, member->key, child) != 0))
			goto bad;
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
	if (out != NULL)
		*out = obj;
	return 0;
bad:
	json_decref(obj);
	return fail(s);
}

static int scan_array(struct scanner *s, const struct scan_shape *elem, json_t **out)
{
	json_t *arr = NULL;

	if (++s->depth > s->max_depth)
		return fail(s);
	if (out != NULL && (arr = json_array()) == NULL)
		return fail(s);
	s->p++;
	skip_ws(s);
	if (s->p < s->end && *s->p == ']') {
		s->p++;
		goto done;
	}
	for (;;) {
		json_t *child = NULL;

		skip_ws(s);
		if (scan_value(s, elem, elem ? SCAN_OBJECT : SCAN_WHOLE, out ? &child : NULL) != 0)
			goto bad;
		if (out != NULL && (child == NULL || json_array_append_new(arr, child) != 0))
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
	if (out != NULL)
		*out = arr;
	return 0;
bad:
	json_decref(arr);
	return fail(s);
}

/*
 * Any value at s->p. With out != NULL the value is kept: containers the
 * shape describes are walked, anything else is validated and then parsed by
 * jansson from its slice.
 */
static int scan_value(struct scanner *s, const struct scan_shape *shape, enum scan_kind kind,
		      json_t **out)
{
	const unsigned char *start = s->p;
	int rc;

	if (s->p >= s->end)
		return fail(s);
	if (out != NULL && kind == SCAN_OBJECT && *s->p == '{')
		return scan_object(s, shape, out);
	if (out != NULL && kind == SCAN_ARRAY_OF_OBJECTS && *s->p == '[')
		return scan_array(s, shape, out);
	switch (*s->p) {
	case '{': rc = scan_object(s, NULL, NULL); break;
	case '[': rc = scan_array(s, NULL, NULL); break;
	case '"': rc = scan_string(s, NULL); break;
	case 't': rc = literal(s, "true", 4); break;
	case 'f': rc = literal(s, "false", 5); break;
	case 'n': rc = literal(s, "null", 4); break;
	default:  rc = scan_number(s); break;
	}
	if (rc != 0 || out == NULL)
		return rc;
	*out = json_loadb((const char *)start, (size_t)(s->p - start),
			  JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, NULL);
	return *out ? 0 : fail(s);
}

json_t *scan_extract(const char *body, size_t len, const struct scan_shape *shape,
		     size_t max_depth)
{
	struct scanner s = {
		.p = (const unsigned char *)body, .end = (const unsigned char *)body + len,
		.max_depth = max_depth,
	};
	json_t *root = NULL;

	skip_ws(&s);
	if (s.p >= s.end || *s.p != '{' || scan_object(&s, shape, &root) != 0)
		goto bad;
	skip_ws(&s);
	if (s.p != s.end)
		goto bad;
	free(s.keys);
	return root;
bad:
	free(s.keys);
	json_decref(root);
	return NULL;
}
