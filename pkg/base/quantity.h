/*
 * quantity: Kubernetes resource quantities ("1", "500m", "2Ki", "1e3").
 *
 * Only what admission needs: is the value zero, is it a whole number, and its
 * integer value (saturating at QUANTITY_MAX). Pure, no allocation.
 */
#ifndef GPU_ADMISSION_QUANTITY_H
#define GPU_ADMISSION_QUANTITY_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"

#define QUANTITY_MAX 1000000000000000000LL /* 1e18: saturation point */

struct quantity {
	int negative;     /* the value is below zero */
	int whole;        /* the value is an integer */
	long long value;  /* |integer part|, saturated at QUANTITY_MAX */
};

/*
 * Parses the quantity text s[0..len) with Kubernetes' grammar:
 * sign? digits ('.' digits)? (binarySI | decimalSI | [eE] sign? digits)?
 * Returns 0, or -1 with ERROR_INPUT when s is not a quantity.
 */
int quantity_parse(const char *s, size_t len, struct quantity *q, struct error *err);

/*
 * Parses a quantity given as a JSON string or number (both appear in real
 * manifests). v is borrowed. Returns 0, or -1 with ERROR_INPUT.
 */
int quantity_from_json(const json_t *v, struct quantity *q, struct error *err);

/* a + b for counts of quantities (both 0 to QUANTITY_MAX), saturating at QUANTITY_MAX. */
long long quantity_add(long long a, long long b);

#endif
