/*
 * The skip-scan fast path against jansson's full parse, on any input:
 *  - the scanner keeping everything (shape NULL) accepts only what
 *    json_loadb() accepts, and builds the same document, byte for byte once
 *    dumped (integer or real, -0.0, every decoded escape, key order);
 *  - review answers are byte-identical on both paths, or both fail with the
 *    same message: pods, the built-in workloads judged by their templates,
 *    the custom resources the policy below lists (whose templates the fast
 *    path finds by searching, SCAN_DESCEND), and the policy ConfigMap
 *    (/validate-policy), seeded with every golden request, workload-* and
 *    policy-cm-* cases included.
 */
#include <stdlib.h>
#include <string.h>

#include "webhook/review.h"
#include "text/scan.h"

static struct config *cfg;

/* The default policy, with the custom resources of the golden cases (and more) listed. */
static const char policy[] =
	"workloads:\n"
	"  - {group: kubeflow.org, kind: PyTorchJob}\n"
	"  - {group: ray.io, kind: RayCluster}\n"
	"  - {group: ray.io, kind: RayService}\n"
	"  - {group: jobset.x-k8s.io, kind: JobSet}\n"
	"  - {group: leaderworkerset.x-k8s.io, kind: LeaderWorkerSet}\n"
	"  - {group: serving.kserve.io, kind: LLMInferenceService}\n";

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

static void check_scan(const unsigned char *data, size_t size)
{
	json_t *scanned = scan_extract((const char *)data, size, NULL, REVIEW_MAX_DEPTH);
	json_t *parsed;
	char *a, *b;

	if (scanned == NULL)
		return;  /* refusing is always allowed: the full parse decides */
	parsed = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, NULL);
	if (parsed == NULL)
		abort();  /* accepted what jansson refuses */
	a = json_dumps(scanned, JSON_COMPACT | JSON_ENCODE_ANY);
	b = json_dumps(parsed, JSON_COMPACT | JSON_ENCODE_ANY);
	if (a == NULL || b == NULL || strcmp(a, b) != 0)
		abort();  /* kept a different value */
	free(a);
	free(b);
	json_decref(scanned);
	json_decref(parsed);
}

/* The two paths of /validate-policy answer alike. */
static void check_policy(const unsigned char *data, size_t size)
{
	static const struct review_policy_options o = { REVIEW_POLICY_KEY, "0.2.0" };
	struct review_response fast, full;
	struct error efast, efull;
	int rf = review_policy_handle(&o, (const char *)data, size, 0, &fast, &efast);
	int rs = review_policy_handle(&o, (const char *)data, size, REVIEW_FULL_PARSE, &full, &efull);

	if (rf != rs || (rf == 0 && (fast.len != full.len || memcmp(fast.body, full.body, fast.len) != 0)) ||
	    (rf != 0 && strcmp(efast.msg, efull.msg) != 0))
		abort();
	review_response_free(&fast);
	review_response_free(&full);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	struct review_response fast, full;
	struct error efast, efull;
	int rf, rs;

	if (cfg == NULL && (cfg = config_load_buffer(policy, strlen(policy), "fuzz", &efast)) == NULL)
		abort();
	check_scan(data, size);
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
	check_policy(data, size);
	return 0;
}
