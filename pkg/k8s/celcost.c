#include "k8s/celcost.h"

#include <limits.h>

celcost_t celcost_add(celcost_t a, celcost_t b)
{
	return a > ULLONG_MAX - b ? ULLONG_MAX : a + b;
}

celcost_t celcost_mul(celcost_t a, celcost_t b)
{
	return b != 0 && a > ULLONG_MAX / b ? ULLONG_MAX : a * b;
}

celcost_t celcost_string(size_t len)
{
	return len == 0 ? CELCOST_CALL : ((celcost_t)len + 9) / 10;
}
