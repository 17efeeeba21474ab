/*
 * watch_metrics: prints the /metrics text of a real `gpu-admission watch`
 * (report_watch.h, every option that adds metrics on: --policy-reports,
 * --events) run against the unit tests' fake API server (test/unit/fake_api.h)
 * on loopback: one GPU node, one Pending GPU pod no pool serves, the
 * PolicyReport CRD absent. Printed once the watch is ready and has published
 * once, so every family it can export is there.
 *
 *   watch_metrics >metrics.txt
 *
 * test/helm/helm.sh checks the text with promtool and every gpu_admission_watch_*
 * name the chart's dashboard and PrometheusRule read against it: a metric the
 * binary renames fails there. Exit 0, or 1 (on stderr why) when the watch did
 * not get there within the deadline.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fake_api.h"
#include "base/log.h"
#include "k8s/kubeclient.h"
#include "policy/config.h"
#include "report/report_watch.h"

#define WAIT_TRIES 3000   /* 20 ms each: a minute, for a loaded machine */

static const char policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], pricePerNodeHour: 0.5, gpusPerNode: 1,\n"
	"     nodeSelector: {agentpool: t4}}\n";

static const char nodes[] = "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
	"{\"metadata\":{\"name\":\"t4-a\",\"labels\":{\"agentpool\":\"t4\"}},"
	"\"spec\":{\"taints\":[{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]},"
	"\"status\":{\"allocatable\":{\"cpu\":\"8\",\"nvidia.com/gpu\":\"1\"}}}]}";
static const char pods[] = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
	"{\"metadata\":{\"name\":\"amd\",\"namespace\":\"ml\"},\"spec\":{"
	"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"amd.com/gpu\":\"1\"}}}]},"
	"\"status\":{\"phase\":\"Pending\"}}]}";

static const struct fake_api_route routes[] = {
	{ "GET", FAKE_API_PREFIX, "/api/v1/nodes?limit=", "200 OK", nodes, NULL },
	{ "GET", FAKE_API_PREFIX, "/api/v1/pods?limit=", "200 OK", pods, NULL },
	{ "GET", FAKE_API_PREFIX, "/api/v1/namespaces/ml/pods/amd", "200 OK", "{\"metadata\":{\"uid\":\"u-1\"}}", NULL },
	{ "GET", FAKE_API_EXACT, "/apis/wgpolicyk8s.io/v1alpha2", "404 Not Found",
	  "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}", NULL },
	{ "POST", FAKE_API_EXACT, "/api/v1/namespaces/ml/events", "201 Created", "{}", NULL },
	{ "GET", FAKE_API_CONTAINS, "watch=1", NULL, NULL, fake_api_hold },
	{ NULL, FAKE_API_EXACT, NULL, NULL, NULL, NULL },
};

/* Whether text has the sample line "name value" with a value >= 1. */
static int at_least_one(const char *text, const char *name)
{
	size_t n = strlen(name);
	const char *at;

	for (at = text; (at = strstr(at, name)) != NULL; at += n)
		if ((at == text || at[-1] == '\n') && at[n] == ' ')
			return atof(at + n + 1) >= 1;
	return 0;
}

int main(void)
{
	struct fake_api f;
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_publish_options po = { 1, 1, 0, 0, 0, 0, 0 };
	struct report_watch_options o = { 0 };
	struct report_watch *w = NULL;
	char kc[512], path[] = "/tmp/watch_metrics.XXXXXX", *text = NULL;
	size_t len;
	int fd = -1, tries, rc = 1;
	FILE *fp;

	log_set_level(LOG_LEVEL_ERROR);
	if (cfg == NULL || kube_global_init(&err) != 0 || fake_api_start(&f, routes, NULL) != 0) {
		fprintf(stderr, "watch_metrics: set-up: %s\n", err.msg);
		config_free(cfg);
		return 1;
	}
	if (fake_api_kubeconfig(&f, kc, sizeof kc) != 0 || (fd = mkstemp(path)) < 0 || (fp = fdopen(fd, "w")) == NULL ||
	    fputs(kc, fp) < 0 || fclose(fp) != 0) {
		fprintf(stderr, "watch_metrics: the kubeconfig\n");
		goto out;
	}
	o.cfg = cfg;
	o.kubeconfig = path;
	o.interval_s = 1;
	o.backoff_max_ms = 200;
	o.publish = &po;
	if ((w = report_watch_start(&o, &err)) == NULL) {
		fprintf(stderr, "watch_metrics: %s\n", err.msg);
		goto out;
	}
	for (tries = 0; tries < WAIT_TRIES; tries++) {
		free(text);
		text = NULL;
		if (report_watch_metrics(w, &text, &len, &err) != 0) {
			fprintf(stderr, "watch_metrics: %s\n", err.msg);
			goto out;
		}
		if (at_least_one(text, "gpu_admission_watch_ready") &&
		    at_least_one(text, "gpu_admission_watch_publish_runs_total")) {
			fputs(text, stdout);
			rc = 0;
			goto out;
		}
		usleep(20000);
	}
	fprintf(stderr, "watch_metrics: the watch was not ready and published within the deadline; last:\n%s",
		text ? text : "");
out:
	free(text);
	report_watch_free(w);
	fake_api_stop(&f);
	if (fd >= 0)
		unlink(path);
	config_free(cfg);
	return rc;
}
