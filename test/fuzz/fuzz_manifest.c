/*
 * Manifest loading (YAML/JSON streams, aliases, multi-doc) and template
 * discovery, then the policy on every template and its patch applied.
 */
#include <stdlib.h>
#include <string.h>

#include "manifest.h"
#include "patch.h"
#include "policy.h"

static struct config *cfg;

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct manifest m;
	struct error err;
	size_t d, t;

	if (cfg == NULL && (cfg = config_default(&err)) == NULL)
		abort();
	memset(&m, 0, sizeof m);
	if (manifest_load((const char *)data, size, &m, &err) == 0) {
		for (d = 0; d < m.n_docs; d++) {
			for (t = 0; t < m.docs[d].n_templates; t++) {
				const struct manifest_template *tp = &m.docs[d].templates[t];
				struct policy_request req = { .pod = tp->pod, .ns = tp->ns,
							      .operation = POLICY_OP_CREATE,
							      .daemonset = tp->daemonset };
				struct policy_result res;

				if (policy_evaluate(cfg, &req, &res, &err) == 0 && res.patch != NULL) {
					json_t *copy = json_deep_copy(tp->pod);

					if (copy == NULL || patch_apply(copy, res.patch, &err) != 0)
						abort(); /* the engine's own patch must apply */
					json_decref(copy);
				}
				policy_result_free(&res);
			}
		}
	}
	manifest_free(&m);
	return 0;
}
