/* metrics: counting, bucketing and the Prometheus text. */
#include <pthread.h>
#include <stdlib.h>

#include "check.h"
#include "webhook/metrics.h"

static char *render(struct metrics *m)
{
	struct error err = { 0 };
	size_t len = 0;
	char *text = metrics_render(m, &len, &err);

	CHECK(text != NULL);
	CHECK(text == NULL || strlen(text) == len);
	return text;
}

static int has(const char *text, const char *line)
{
	return text != NULL && strstr(text, line) != NULL;
}

static void test_empty(void)
{
	struct metrics *m = metrics_new("v1.2.3", NULL);
	char *text = render(m);

	CHECK(has(text, "gpu_admission_build_info{version=\"v1.2.3\"} 1\n"));
	CHECK(has(text, "# TYPE gpu_admission_requests_total counter\n"));
	CHECK(!has(text, "gpu_admission_requests_total{"));
	CHECK(has(text, "gpu_admission_in_flight_requests 0\n"));
	CHECK(has(text, "gpu_admission_request_duration_seconds_count{endpoint=\"mutate\"} 0\n"));
	CHECK(has(text, "gpu_admission_config_reloads_total 0\n"));
	CHECK(has(text, "gpu_admission_cert_expiry_timestamp_seconds 0\n"));
	free(text);
	metrics_free(m);
}

static void test_request_and_buckets(void)
{
	struct metrics *m = metrics_new("dev", NULL);
	char *text;

	metrics_request(m, METRICS_EP_MUTATE, METRICS_DEC_MUTATE, 200, 100);   /* on the 100 µs bound */
	metrics_request(m, METRICS_EP_MUTATE, METRICS_DEC_MUTATE, 200, 101);   /* just over */
	metrics_request(m, METRICS_EP_MUTATE, METRICS_DEC_REJECT, 200, 2000000); /* past 1 s */
	metrics_request(m, METRICS_EP_OTHER, METRICS_DEC_NONE, 404, 5);
	metrics_request(m, METRICS_EP_HEALTHZ, METRICS_DEC_NONE, 418, 5);
	metrics_request(m, METRICS_EP_VALIDATE_POLICY, METRICS_DEC_REJECT, 200, 700); /* a policy edit refused */
	text = render(m);
	CHECK(has(text, "gpu_admission_requests_total{endpoint=\"mutate\",decision=\"mutate\",code=\"200\"} 2\n"));
	CHECK(has(text, "gpu_admission_requests_total{endpoint=\"mutate\",decision=\"reject\",code=\"200\"} 1\n"));
	CHECK(has(text, "gpu_admission_requests_total{endpoint=\"other\",decision=\"none\",code=\"404\"} 1\n"));
	CHECK(has(text, "gpu_admission_requests_total{endpoint=\"healthz\",decision=\"none\",code=\"other\"} 1\n"));
	CHECK(has(text, "_bucket{endpoint=\"mutate\",le=\"0.0001\"} 1\n"));
	CHECK(has(text, "_bucket{endpoint=\"mutate\",le=\"0.00025\"} 2\n"));
	CHECK(has(text, "_bucket{endpoint=\"mutate\",le=\"1\"} 2\n"));
	CHECK(has(text, "_bucket{endpoint=\"mutate\",le=\"+Inf\"} 3\n"));
	CHECK(has(text, "_sum{endpoint=\"mutate\"} 2.000201\n"));
	CHECK(has(text, "_count{endpoint=\"mutate\"} 3\n"));
	/* Only admission endpoints have a histogram observation. */
	CHECK(has(text, "_count{endpoint=\"validate\"} 0\n"));
	CHECK(has(text, "gpu_admission_requests_total{endpoint=\"validate-policy\",decision=\"reject\",code=\"200\"} 1\n"));
	CHECK(has(text, "_bucket{endpoint=\"validate-policy\",le=\"0.0005\"} 0\n"));
	CHECK(has(text, "_bucket{endpoint=\"validate-policy\",le=\"0.001\"} 1\n"));
	CHECK(has(text, "_count{endpoint=\"validate-policy\"} 1\n"));
	CHECK(!has(text, "endpoint=\"healthz\",le="));
	free(text);
	metrics_free(m);
}

static void test_gauges_and_reloads(void)
{
	struct metrics *m = metrics_new("a\"b\\c", NULL);
	char *text;

	metrics_in_flight(m, 1);
	metrics_in_flight(m, 1);
	metrics_in_flight(m, -1);
	metrics_reload(m, METRICS_RELOAD_CONFIG, 1);
	metrics_reload(m, METRICS_RELOAD_CONFIG, 0);
	metrics_reload(m, METRICS_RELOAD_CERT, 0);
	metrics_reload(m, METRICS_RELOAD_CERT, 0);
	metrics_cert_expiry(m, 1893456000);
	text = render(m);
	CHECK(has(text, "gpu_admission_in_flight_requests 1\n"));
	CHECK(has(text, "gpu_admission_config_reloads_total 1\n"));
	CHECK(has(text, "gpu_admission_config_reload_failures_total 1\n"));
	CHECK(has(text, "gpu_admission_cert_reloads_total 0\n"));
	CHECK(has(text, "gpu_admission_cert_reload_failures_total 2\n"));
	CHECK(has(text, "gpu_admission_cert_expiry_timestamp_seconds 1893456000\n"));
	CHECK(has(text, "gpu_admission_build_info{version=\"a_b_c\"} 1\n")); /* a label stays well-formed */
	free(text);
	metrics_free(m);
}

#define THREADS 4
#define PER_THREAD 100000

static void *hammer(void *arg)
{
	struct metrics *m = arg;
	int i;

	for (i = 0; i < PER_THREAD; i++)
		metrics_request(m, METRICS_EP_VALIDATE, METRICS_DEC_ALLOW, 200, (uint64_t)i % 3000);
	return NULL;
}

static void test_concurrent_updates_are_exact(void)
{
	struct metrics *m = metrics_new("dev", NULL);
	pthread_t t[THREADS];
	char want[160], *text;
	int i;

	for (i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, hammer, m);
	for (i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	text = render(m);
	snprintf(want, sizeof want, "gpu_admission_requests_total{endpoint=\"validate\",decision=\"allow\",code=\"200\"} %d\n",
		 THREADS * PER_THREAD);
	CHECK(has(text, want));
	snprintf(want, sizeof want, "_count{endpoint=\"validate\"} %d\n", THREADS * PER_THREAD);
	CHECK(has(text, want));
	free(text);
	metrics_free(m);
}

static void test_names(void)
{
	CHECK_STR(metrics_endpoint_name(METRICS_EP_VALIDATE), "validate");
	CHECK_STR(metrics_endpoint_name(METRICS_EP_VALIDATE_POLICY), "validate-policy");
	CHECK_STR(metrics_endpoint_name((enum metrics_endpoint)99), "other");
	CHECK_STR(metrics_decision_name(METRICS_DEC_ERROR), "error");
	metrics_free(NULL);
}

/* Every status error.c can map a failure to has its own label: none falls into "other". */
static void test_every_error_status_is_labelled(void)
{
	struct metrics *m = metrics_new("v", NULL);
	enum error_kind k;
	char *text, want[128];

	for (k = ERROR_NONE; k <= ERROR_KIND_LAST; k++)
		metrics_request(m, METRICS_EP_MUTATE, METRICS_DEC_ERROR, error_http_status(k), 1);
	metrics_request(m, METRICS_EP_MUTATE, METRICS_DEC_ERROR, 418, 1); /* none of ours */
	text = render(m);
	for (k = ERROR_NONE; k <= ERROR_KIND_LAST; k++) {
		snprintf(want, sizeof want, "endpoint=\"mutate\",decision=\"error\",code=\"%d\"}",
			 error_http_status(k));
		CHECK(has(text, want));
	}
	CHECK(has(text, "code=\"other\"} 1\n"));
	free(text);
	metrics_free(m);
}

/* What enforce mode would answer, by the mode in force: what a dryrun rollout watches. */
static void test_verdicts(void)
{
	struct metrics *m = metrics_new("v", NULL);
	char *text = render(m);

	CHECK(has(text, "# TYPE gpu_admission_policy_verdicts_total counter\n"));
	CHECK(!has(text, "gpu_admission_policy_verdicts_total{"));
	free(text);
	metrics_verdict(m, METRICS_EP_MUTATE, "Pod", CONFIG_MODE_DRYRUN, POLICY_REJECT);
	metrics_verdict(m, METRICS_EP_MUTATE, "Pod", CONFIG_MODE_DRYRUN, POLICY_REJECT);
	metrics_verdict(m, METRICS_EP_VALIDATE, "Pod", CONFIG_MODE_ENFORCE, POLICY_MUTATE);
	metrics_verdict(m, METRICS_EP_HEALTHZ, "Pod", CONFIG_MODE_ENFORCE, POLICY_ALLOW);  /* not a review: ignored */
	metrics_verdict(m, METRICS_EP_MUTATE, "Pod", (enum config_mode)7, POLICY_ALLOW);   /* out of range: ignored */
	/* The kind label is bounded: a built-in kind by name, anything else "custom". */
	metrics_verdict(m, METRICS_EP_VALIDATE, "Deployment", CONFIG_MODE_ENFORCE, POLICY_REJECT);
	metrics_verdict(m, METRICS_EP_VALIDATE, "PyTorchJob", CONFIG_MODE_WARN, POLICY_ALLOW);
	metrics_verdict(m, METRICS_EP_VALIDATE, NULL, CONFIG_MODE_WARN, POLICY_ALLOW);
	text = render(m);
	CHECK(has(text, "gpu_admission_policy_verdicts_total{endpoint=\"mutate\",kind=\"Pod\",mode=\"dryrun\",verdict=\"reject\"} 2\n"));
	CHECK(has(text, "gpu_admission_policy_verdicts_total{endpoint=\"validate\",kind=\"Pod\",mode=\"enforce\",verdict=\"mutate\"} 1\n"));
	CHECK(has(text, "gpu_admission_policy_verdicts_total{endpoint=\"validate\",kind=\"Deployment\",mode=\"enforce\",verdict=\"reject\"} 1\n"));
	CHECK(has(text, "gpu_admission_policy_verdicts_total{endpoint=\"validate\",kind=\"custom\",mode=\"warn\",verdict=\"allow\"} 2\n"));
	CHECK(!has(text, "kind=\"Pod\",mode=\"enforce\",verdict=\"allow\""));  /* the ignored ones */
	CHECK(!has(text, "kind=\"PyTorchJob\""));
	free(text);
	metrics_free(m);
}

int main(void)
{
	RUN(test_empty);
	RUN(test_request_and_buckets);
	RUN(test_gauges_and_reloads);
	RUN(test_concurrent_updates_are_exact);
	RUN(test_names);
	RUN(test_every_error_status_is_labelled);
	RUN(test_verdicts);
	return check_done("metrics");
}
