/*
 * Quantity parsing: never reads past len, and agrees with plain integer
 * arithmetic wherever the text is a plain integer.
 */
#include <stdlib.h>
#include <string.h>

#include "base/quantity.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct quantity q;
	struct error err;
	char buf[80];
	size_t i;
	int plain = size > 0 && size <= 18;

	/* An exact-size heap copy lets ASan catch any read past len. */
	char *copy = malloc(size ? size : 1);
	if (copy == NULL)
		return 0;
	memcpy(copy, data, size);
	for (i = 0; i < size; i++)
		if (data[i] < '0' || data[i] > '9')
			plain = 0;
	if (quantity_parse(copy, size, &q, &err) == 0) {
		if (q.value < 0 || q.value > QUANTITY_MAX)
			abort();
		if (plain) {
			memcpy(buf, data, size);
			buf[size] = '\0';
			if (!q.whole || q.negative || q.value != strtoll(buf, NULL, 10))
				abort();
		}
	} else if (plain) {
		abort(); /* every plain integer is a quantity */
	}
	free(copy);
	return 0;
}
