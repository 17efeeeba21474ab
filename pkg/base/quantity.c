#include "base/quantity.h"

#include <stdio.h>
#include <string.h>

/*
 * A quantity is held as decimal digits D and an exponent x (value = D * 10^x),
 * with binary suffixes folded in by multiplying D by 1024. Exact arithmetic on
 * a small digit buffer answers "is it a whole number" without floating point,
 * so "0.5", "500m" and "1.0000000000000000001" are judged correctly.
 */
#define QUANTITY_TEXT_MAX 64   /* longer text is not a quantity anyone means */
#define DIGITS_MAX (QUANTITY_TEXT_MAX + 24)  /* room for six multiplications by 1024 */
#define EXPONENT_LIMIT 100000  /* |x| beyond this saturates or underflows the same way */

struct digits {
	unsigned char d[DIGITS_MAX]; /* most significant first */
	size_t n;
};

static int is_digit(char c)
{
	return c >= '0' && c <= '9';
}

static void digits_mul_small(struct digits *a, unsigned m)
{
	unsigned carry = 0;
	size_t i;

	for (i = a->n; i-- > 0;) {
		unsigned v = a->d[i] * m + carry;
		a->d[i] = (unsigned char)(v % 10);
		carry = v / 10;
	}
	while (carry > 0 && a->n < DIGITS_MAX) {
		for (i = a->n; i > 0; i--) /* a loop, not memmove: see quantity_parse */
			a->d[i] = a->d[i - 1];
		a->d[0] = (unsigned char)(carry % 10);
		carry /= 10;
		a->n++;
	}
}

/* Parses an optionally signed decimal integer exponent, clamped to +-EXPONENT_LIMIT. */
static int parse_exponent(const char *s, size_t len, long *out)
{
	size_t i = 0;
	long v = 0;
	int neg = 0;

	if (i < len && (s[i] == '+' || s[i] == '-'))
		neg = s[i++] == '-';
	if (i == len)
		return -1;
	for (; i < len; i++) {
		if (!is_digit(s[i]))
			return -1;
		if (v < EXPONENT_LIMIT)
			v = v * 10 + (s[i] - '0');
	}
	if (v > EXPONENT_LIMIT)
		v = EXPONENT_LIMIT;
	*out = neg ? -v : v;
	return 0;
}

/* Reads the suffix into a decimal exponent and a count of 1024 factors. */
static int parse_suffix(const char *s, size_t len, long *exp10, int *pow1024)
{
	static const struct { const char *text; int exp10; int pow1024; } table[] = {
		{ "", 0, 0 }, { "m", -3, 0 }, { "k", 3, 0 }, { "M", 6, 0 }, { "G", 9, 0 },
		{ "T", 12, 0 }, { "P", 15, 0 }, { "E", 18, 0 },
		{ "Ki", 0, 1 }, { "Mi", 0, 2 }, { "Gi", 0, 3 }, { "Ti", 0, 4 },
		{ "Pi", 0, 5 }, { "Ei", 0, 6 },
	};
	size_t i;

	*exp10 = 0;
	*pow1024 = 0;
	for (i = 0; i < sizeof table / sizeof table[0]; i++) {
		if (strlen(table[i].text) == len && memcmp(table[i].text, s, len) == 0) {
			*exp10 = table[i].exp10;
			*pow1024 = table[i].pow1024;
			return 0;
		}
	}
	/* "E" alone is exa; "e3" / "E-2" is a decimal exponent. */
	if (len >= 2 && (s[0] == 'e' || s[0] == 'E'))
		return parse_exponent(s + 1, len - 1, exp10);
	return -1;
}

int quantity_parse(const char *s, size_t len, struct quantity *q, struct error *err)
{
	struct digits a = { .n = 0 };
	size_t i = 0, int_digits = 0, frac_digits = 0;
	long exp10 = 0, x;
	int pow1024 = 0, neg = 0;

	memset(q, 0, sizeof *q);
	if (len == 0) {
		error_set(err, ERROR_INPUT, "empty quantity");
		return -1;
	}
	if (len > QUANTITY_TEXT_MAX) {
		error_set(err, ERROR_INPUT, "quantity longer than %d characters", QUANTITY_TEXT_MAX);
		return -1;
	}
	if (s[i] == '+' || s[i] == '-')
		neg = s[i++] == '-';
	for (; i < len && is_digit(s[i]); i++, int_digits++)
		if (a.n > 0 || s[i] != '0')
			a.d[a.n++] = (unsigned char)(s[i] - '0');
	if (i < len && s[i] == '.') {
		for (i++; i < len && is_digit(s[i]); i++, frac_digits++)
			a.d[a.n++] = (unsigned char)(s[i] - '0');
	}
	if (int_digits + frac_digits == 0 || parse_suffix(s + i, len - i, &exp10, &pow1024) != 0) {
		error_set(err, ERROR_INPUT, "\"%.*s\" is not a Kubernetes quantity", (int)len, s);
		return -1;
	}
	while (pow1024-- > 0)
		digits_mul_small(&a, 1024);

	/* value = a * 10^x; drop leading zeros (from the fraction) and trailing zeros. */
	x = exp10 - (long)frac_digits;
	{
		size_t lead = 0, k;

		while (lead < a.n && a.d[lead] == 0)
			lead++;
		/*
		 * A byte loop, not memmove: with _FORTIFY_SOURCE glibc's __memmove_chk
		 * is __memcpy_chk's code, and valgrind reports the (legal) overlap.
		 */
		for (k = 0; lead > 0 && k + lead < a.n; k++)
			a.d[k] = a.d[k + lead];
		a.n -= lead;
	}
	while (a.n > 0 && a.d[a.n - 1] == 0) {
		a.n--;
		x++;
	}
	if (a.n == 0) {  /* zero, whatever the suffix or sign */
		q->whole = 1;
		return 0;
	}
	q->negative = neg;
	q->whole = x >= 0;
	/* Integer part: the first a.n + x digits, then x zeros when x > 0. */
	{
		long int_len = (long)a.n + x;
		long long v = 0;
		long k;

		if (int_len > 18) {
			v = QUANTITY_MAX;
		} else {
			for (k = 0; k < int_len; k++)
				v = v * 10 + (k < (long)a.n ? a.d[k] : 0);
			if (v > QUANTITY_MAX)
				v = QUANTITY_MAX;
		}
		q->value = v;
	}
	return 0;
}

int quantity_from_json(const json_t *v, struct quantity *q, struct error *err)
{
	char buf[64];
	int n;

	if (json_is_string(v))
		return quantity_parse(json_string_value(v), json_string_length(v), q, err);
	if (json_is_integer(v)) {
		json_int_t i = json_integer_value(v);
		memset(q, 0, sizeof *q);
		q->whole = 1;
		q->negative = i < 0;
		/* -(i+1)+1 avoids overflow at the most negative value. */
		q->value = i < 0 ? (long long)(-(i + 1)) + 1 : (long long)i;
		if (q->value > QUANTITY_MAX)
			q->value = QUANTITY_MAX;
		return 0;
	}
	if (json_is_real(v)) {
		/* %.17g round-trips a double; the text then follows the string rules. */
		n = snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
		if (n > 0 && (size_t)n < sizeof buf)
			return quantity_parse(buf, (size_t)n, q, err);
	}
	memset(q, 0, sizeof *q);
	error_set(err, ERROR_INPUT, "a quantity must be a string or a number");
	return -1;
}

long long quantity_add(long long a, long long b)
{
	return a > QUANTITY_MAX - b ? QUANTITY_MAX : a + b;
}
