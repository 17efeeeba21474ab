/*
 * Manifest loading (YAML/JSON streams, aliases, multi-doc) and template
 * discovery, then the policy on every template and its patch applied.
 */
#include <stdlib.h>
#include <string.h>

#include "text/manifest.h"
#include "base/patch.h"
#include "policy/policy.h"
#include "policy/template.h"

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
			struct template_list l = { 0 };

			if (template_find(m.docs[d].root, &l, &err) != 0)
				abort(); /* only memory can fail it */
			for (t = 0; t < l.n; t++) {
				struct policy_result res;

				(void)manifest_line(&m.docs[d], l.v[t].node);
				if (template_judge(cfg, &l.v[t], NULL, POLICY_OP_CREATE, &res, &err) == 0 &&
				    res.patch != NULL) {
					json_t *copy = json_deep_copy(l.v[t].pod);

					if (copy == NULL || patch_apply(copy, res.patch, &err) != 0)
						abort(); /* the engine's own patch must apply */
					json_decref(copy);
				}
				policy_result_free(&res);
			}
			template_list_free(&l);
		}
	}
	manifest_free(&m);
	return 0;
}
