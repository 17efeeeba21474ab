/*
 * The skip-scan fast path against jansson's full parse: on every input both
 * must give byte-identical answers, or fail with the same message.
 */
#include <stdlib.h>
#include <string.h>

#include "review.h"

static struct config *cfg;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct review_response fast, full;
	struct error efast, efull;
	int rf, rs;

	if (cfg == NULL && (cfg = config_default(&efast)) == NULL)
		abort();
	rf = review_handle_ex(cfg, (const char *)data, size, 0, &fast, &efast);
	rs = review_handle_ex(cfg, (const char *)data, size, REVIEW_FULL_PARSE, &full, &efull);
	if (rf != rs)
		abort();
	if (rf == 0 && (fast.len != full.len || memcmp(fast.body, full.body, fast.len) != 0))
		abort();
	if (rf != 0 && strcmp(efast.msg, efull.msg) != 0)
		abort();
	review_response_free(&fast);
	review_response_free(&full);
	return 0;
}
