/* Policy file loading: an error with a message, or a config that works. */
#include <stdlib.h>
#include <string.h>

#include "policy/config.h"
#include "policy/policy.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct error err;
	struct config *cfg = config_load_buffer((const char *)data, size, "fuzz.yaml", &err);

	if (cfg == NULL) {
		if (err.msg[0] == '\0')
			abort();
		return 0;
	}
	/* A config that loads must be usable: evaluate a GPU pod with it. */
	{
		json_t *pod = json_loads("{\"metadata\":{\"labels\":{\"gpu-admission/pool\":\"gpu\"}},"
					 "\"spec\":{\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":"
					 "{\"nvidia.com/gpu\":2}}}]}}", 0, NULL);
		struct policy_request req = { .pod = pod, .ns = "ml", .operation = POLICY_OP_CREATE };
		struct policy_result res;

		if (policy_evaluate(cfg, &req, &res, &err) != 0 && err.kind != ERROR_INPUT)
			abort();
		policy_result_free(&res);
		json_decref(pod);
	}
	config_free(cfg);
	return 0;
}
