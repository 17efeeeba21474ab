#include "base/base64.h"

#include <ctype.h>
#include <stdlib.h>

static const char digits[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t base64_len(size_t n)
{
	return (n + 2) / 3 * 4;
}

void base64_encode_to(const void *in, size_t len, char *out)
{
	const unsigned char *p = in;
	size_t i, o = 0;

	for (i = 0; i + 2 < len; i += 3) {
		unsigned long v = (unsigned long)p[i] << 16 | (unsigned long)p[i + 1] << 8 | p[i + 2];

		out[o++] = digits[v >> 18 & 63];
		out[o++] = digits[v >> 12 & 63];
		out[o++] = digits[v >> 6 & 63];
		out[o++] = digits[v & 63];
	}
	if (i < len) {
		unsigned long v = (unsigned long)p[i] << 16 | (i + 1 < len ? (unsigned long)p[i + 1] << 8 : 0);

		out[o++] = digits[v >> 18 & 63];
		out[o++] = digits[v >> 12 & 63];
		out[o++] = i + 1 < len ? digits[v >> 6 & 63] : '=';
		out[o++] = '=';
	}
}

char *base64_encode(const void *in, size_t len)
{
	char *out;

	if (len > BASE64_IN_MAX || (out = malloc(base64_len(len) + 1)) == NULL)
		return NULL;
	base64_encode_to(in, len, out);
	out[base64_len(len)] = '\0';
	return out;
}

/* The value of digit c, or -1. */
static int digit(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	return c == '+' ? 62 : c == '/' ? 63 : -1;
}

/* Strict padding: s[pad..len) all '=', at most two of them, closing a text of whole quads. */
static int padding_ok(const char *s, size_t pad, size_t len)
{
	size_t i;

	if (len % 4 != 0 || len - pad > 2)
		return 0;
	for (i = pad; i < len; i++)
		if (s[i] != '=')
			return 0;
	return 1;
}

char *base64_decode(const char *s, size_t len, enum base64_mode mode, size_t *out_len, int *nomem)
{
	unsigned long acc = 0;
	int bits = 0, d;
	size_t i, o = 0;
	char *out;

	*nomem = 0;
	if (mode == BASE64_STRICT && len % 4 != 0)
		return NULL;
	/* 3 bytes a quad, up to 2 from an unpadded end (loose), and the NUL. */
	if ((out = malloc(len / 4 * 3 + 3)) == NULL) {
		*nomem = 1;
		return NULL;
	}
	for (i = 0; i < len && s[i] != '='; i++) {
		if (mode == BASE64_LOOSE && isspace((unsigned char)s[i]))
			continue;
		if ((d = digit((unsigned char)s[i])) < 0)
			goto bad;
		acc = (acc << 6 | (unsigned long)d) & 0xffffff;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[o++] = (char)(acc >> bits & 0xff);
		}
	}
	if (mode == BASE64_STRICT && i < len && !padding_ok(s, i, len))
		goto bad;
	out[o] = '\0';
	*out_len = o;
	return out;
bad:
	free(out);
	return NULL;
}
