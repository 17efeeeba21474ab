/* celcost: the CEL cost model's arithmetic saturates instead of wrapping, and strings cost a tenth. */
#include <limits.h>

#include "check.h"
#include "k8s/celcost.h"

static void test_saturation(void)
{
	CHECK(celcost_add(2, 3) == 5);
	CHECK(celcost_add(ULLONG_MAX - 1, 1) == ULLONG_MAX);
	CHECK(celcost_add(ULLONG_MAX, ULLONG_MAX) == ULLONG_MAX);
	CHECK(celcost_mul(6, 7) == 42);
	CHECK(celcost_mul(ULLONG_MAX / 2 + 1, 2) == ULLONG_MAX);
	CHECK(celcost_mul(ULLONG_MAX, 0) == 0);
}

static void test_string(void)
{
	CHECK(celcost_string(0) == CELCOST_CALL);
	CHECK(celcost_string(1) == 1);
	CHECK(celcost_string(10) == 1);
	CHECK(celcost_string(11) == 2);
	CHECK(celcost_string(63) == 7);
}

int main(void)
{
	RUN(test_saturation);
	RUN(test_string);
	return check_done("test_celcost");
}
