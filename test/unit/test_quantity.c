/* Kubernetes quantity parsing: zero, whole, value, and what is not a quantity. */
#include "check.h"
#include "base/quantity.h"

static int parse(const char *s, struct quantity *q)
{
	struct error err = { 0 };
	return quantity_parse(s, strlen(s), q, &err);
}

#define WHOLE(text, v) do { struct quantity q_; CHECK_INT(parse(text, &q_), 0); \
	CHECK_INT(q_.whole, 1); CHECK_INT(q_.value, v); CHECK_INT(q_.negative, 0); } while (0)
#define FRACTION(text) do { struct quantity q_; CHECK_INT(parse(text, &q_), 0); CHECK_INT(q_.whole, 0); } while (0)
#define INVALID(text) do { struct quantity q_; CHECK_INT(parse(text, &q_), -1); } while (0)

static void test_plain_integers(void)
{
	WHOLE("0", 0);
	WHOLE("1", 1);
	WHOLE("+8", 8);
	WHOLE("0008", 8);
	WHOLE("2.0", 2);
	WHOLE("2.000000000000000000000", 2);
}

static void test_suffixes(void)
{
	WHOLE("1k", 1000);
	WHOLE("1M", 1000000);
	WHOLE("2Ki", 2048);
	WHOLE("1Mi", 1048576);
	WHOLE("1000m", 1);
	WHOLE("0m", 0);
	WHOLE("1.5k", 1500);
	WHOLE("1e3", 1000);
	WHOLE("1E3", 1000);
	WHOLE("5e-0", 5);
	WHOLE("10e-1", 1);
	WHOLE("0.5Ki", 512);
	WHOLE("1E", 1000000000000000000LL); /* E alone is exa, not an exponent */
}

static void test_fractions(void)
{
	FRACTION("500m");
	FRACTION("1.5");
	FRACTION("0.1");
	FRACTION("1e-1");
	FRACTION("1001m");
	FRACTION("0.0001Ki"); /* 0.1024 */
	FRACTION("1.0000000000000000001");
}

static void test_saturation(void)
{
	struct quantity q;

	CHECK_INT(parse("1e300", &q), 0);
	CHECK_INT(q.whole, 1);
	CHECK_INT(q.value, QUANTITY_MAX);
	CHECK_INT(parse("1Ei", &q), 0);
	CHECK_INT(q.value, QUANTITY_MAX);
	CHECK_INT(parse("99999999999999999999", &q), 0);
	CHECK_INT(q.value, QUANTITY_MAX);
}

static void test_negative(void)
{
	struct quantity q;

	CHECK_INT(parse("-1", &q), 0);
	CHECK_INT(q.negative, 1);
	CHECK_INT(q.value, 1);
	CHECK_INT(parse("-0", &q), 0);
	CHECK_INT(q.negative, 0); /* zero has no sign */
}

static void test_invalid(void)
{
	INVALID("");
	INVALID("one");
	INVALID("1 ");
	INVALID(" 1");
	INVALID("1.2.3");
	INVALID("1x");
	INVALID("1ki");
	INVALID("1e");
	INVALID("1e+");
	INVALID(".");
	INVALID("+");
	INVALID("1KiB");
	INVALID("0x10");
	INVALID("11111111111111111111111111111111111111111111111111111111111111111"); /* 65 chars */
}

static void test_embedded_nul(void)
{
	struct quantity q;
	struct error err = { 0 };

	CHECK_INT(quantity_parse("1\0" "5", 3, &q, &err), -1);
}

static void test_json(void)
{
	struct quantity q;
	struct error err = { 0 };
	json_t *v;

	v = json_integer(4);
	CHECK_INT(quantity_from_json(v, &q, &err), 0);
	CHECK_INT(q.value, 4);
	json_decref(v);
	v = json_real(0.5);
	CHECK_INT(quantity_from_json(v, &q, &err), 0);
	CHECK_INT(q.whole, 0);
	json_decref(v);
	v = json_real(3.0);
	CHECK_INT(quantity_from_json(v, &q, &err), 0);
	CHECK_INT(q.whole, 1);
	CHECK_INT(q.value, 3);
	json_decref(v);
	v = json_real(1e30);
	CHECK_INT(quantity_from_json(v, &q, &err), 0);
	CHECK_INT(q.value, QUANTITY_MAX);
	json_decref(v);
	v = json_integer(-3);
	CHECK_INT(quantity_from_json(v, &q, &err), 0);
	CHECK_INT(q.negative, 1);
	json_decref(v);
	v = json_true();
	CHECK_INT(quantity_from_json(v, &q, &err), -1);
	CHECK_INT(err.kind, ERROR_INPUT);
	json_decref(v);
}

int main(void)
{
	RUN(test_plain_integers);
	RUN(test_suffixes);
	RUN(test_fractions);
	RUN(test_saturation);
	RUN(test_negative);
	RUN(test_invalid);
	RUN(test_embedded_nul);
	RUN(test_json);
	return check_done("quantity");
}
