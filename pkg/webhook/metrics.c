#include "webhook/metrics.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/strbuf.h"
#include "policy/template.h"

/*
 * The status codes the server answers: 200 and every one error_http_status()
 * maps a failure to (a unit test holds the two in step). Anything else is
 * counted under "other".
 */
static const int codes[] = { 200, 400, 403, 404, 405, 413, 415, 500, 501, 503 };
#define N_CODES (sizeof codes / sizeof codes[0] + 1)

static const uint64_t bucket_us[METRICS_BUCKETS] = {
	100, 250, 500, 1000, 2500, 5000, 10000, 25000, 50000, 100000, 250000, 500000, 1000000
};
static const char *const bucket_le[METRICS_BUCKETS] = {
	"0.0001", "0.00025", "0.0005", "0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
	"0.1", "0.25", "0.5", "1"
};

/* Histograms exist for the admission endpoints only, the first of enum metrics_endpoint. */
#define N_HIST 3
#define METRICS_TEXT_FIRST 8192  /* bytes: the whole exposition at once, as a rule */
_Static_assert(METRICS_EP_VALIDATE_POLICY + 1 == N_HIST, "the admission endpoints come first");
#define N_MODES 3     /* enum config_mode: enforce, warn, dryrun */
#define N_VERDICTS 3  /* enum policy_decision: allow, mutate, reject */
#define N_KINDS (TEMPLATE_KINDS + 1)  /* the kind label: a built-in kind's name, or "custom" */

struct histogram {
	atomic_ullong bucket[METRICS_BUCKETS + 1]; /* non-cumulative; last is +Inf */
	atomic_ullong sum_us;
};

struct metrics {
	atomic_ullong requests[METRICS_EP_COUNT][METRICS_DEC_COUNT][N_CODES];
	struct histogram latency[N_HIST];
	atomic_ullong verdicts[N_HIST][N_KINDS][N_MODES][N_VERDICTS]; /* [endpoint][kind][mode][verdict] */
	atomic_llong in_flight;
	atomic_ullong reloads[METRICS_RELOAD_COUNT][2]; /* [kind][ok] */
	atomic_llong cert_expiry;
	char version[128];
};

static const char *const ep_names[METRICS_EP_COUNT] = {
	"mutate", "validate", "validate-policy", "healthz", "readyz", "metrics", "other"
};
static const char *const dec_names[METRICS_DEC_COUNT] = {
	"none", "allow", "mutate", "reject", "error"
};

const char *metrics_endpoint_name(enum metrics_endpoint ep)
{
	return (unsigned)ep < METRICS_EP_COUNT ? ep_names[ep] : "other";
}

const char *metrics_decision_name(enum metrics_decision dec)
{
	return (unsigned)dec < METRICS_DEC_COUNT ? dec_names[dec] : "none";
}

struct metrics *metrics_new(const char *version, struct error *err)
{
	struct metrics *m = calloc(1, sizeof *m);
	char *p;

	if (m == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory allocating metrics");
		return NULL;
	}
	/* calloc's zero bytes are valid zero atomics on every platform we build for. */
	snprintf(m->version, sizeof m->version, "%s", version ? version : "dev");
	for (p = m->version; *p != '\0'; p++)
		if (*p == '"' || *p == '\\' || *p == '\n')
			*p = '_'; /* a label value stays well-formed */
	return m;
}

void metrics_free(struct metrics *m)
{
	free(m);
}

static size_t code_index(int code)
{
	size_t i;

	for (i = 0; i < N_CODES - 1; i++)
		if (codes[i] == code)
			return i;
	return N_CODES - 1;
}

void metrics_request(struct metrics *m, enum metrics_endpoint ep, enum metrics_decision dec,
		     int code, uint64_t latency_us)
{
	struct histogram *h;
	size_t b;

	if ((unsigned)ep >= METRICS_EP_COUNT)
		ep = METRICS_EP_OTHER;
	if ((unsigned)dec >= METRICS_DEC_COUNT)
		dec = METRICS_DEC_NONE;
	atomic_fetch_add_explicit(&m->requests[ep][dec][code_index(code)], 1, memory_order_relaxed);
	if ((unsigned)ep >= N_HIST)
		return;
	h = &m->latency[ep];
	for (b = 0; b < METRICS_BUCKETS && latency_us > bucket_us[b]; b++)
		;
	atomic_fetch_add_explicit(&h->bucket[b], 1, memory_order_relaxed);
	atomic_fetch_add_explicit(&h->sum_us, latency_us, memory_order_relaxed);
}

/* The kind label's index: a built-in kind (template_kind()), else the last, "custom". */
static size_t kind_index(const char *kind)
{
	size_t k;

	for (k = 0; kind != NULL && k < TEMPLATE_KINDS; k++)
		if (strcmp(kind, template_kind(k)) == 0)
			return k;
	return TEMPLATE_KINDS;
}

static const char *kind_name(size_t k)
{
	return k < TEMPLATE_KINDS ? template_kind(k) : "custom";
}

void metrics_verdict(struct metrics *m, enum metrics_endpoint ep, const char *kind, enum config_mode mode,
		     enum policy_decision verdict)
{
	if ((unsigned)ep < N_HIST && (unsigned)mode < N_MODES && (unsigned)verdict < N_VERDICTS)
		atomic_fetch_add_explicit(&m->verdicts[ep][kind_index(kind)][mode][verdict], 1, memory_order_relaxed);
}

void metrics_in_flight(struct metrics *m, int delta)
{
	atomic_fetch_add_explicit(&m->in_flight, delta, memory_order_relaxed);
}

void metrics_reload(struct metrics *m, enum metrics_reload kind, int ok)
{
	if ((unsigned)kind < METRICS_RELOAD_COUNT)
		atomic_fetch_add_explicit(&m->reloads[kind][ok != 0], 1, memory_order_relaxed);
}

void metrics_cert_expiry(struct metrics *m, int64_t unix_seconds)
{
	atomic_store_explicit(&m->cert_expiry, unix_seconds, memory_order_relaxed);
}

/* ==== Rendering ==== */

static unsigned long long load(const atomic_ullong *a)
{
	return atomic_load_explicit(a, memory_order_relaxed);
}

static void render_requests(struct strbuf *b, const struct metrics *m)
{
	size_t ep, dec, c;

	strbuf_addf(b, "# HELP gpu_admission_requests_total HTTP requests answered, by endpoint, admission decision and status code.\n"
		"# TYPE gpu_admission_requests_total counter\n");
	for (ep = 0; ep < METRICS_EP_COUNT; ep++)
		for (dec = 0; dec < METRICS_DEC_COUNT; dec++)
			for (c = 0; c < N_CODES; c++) {
				unsigned long long v = load(&m->requests[ep][dec][c]);
				char code[16];

				if (v == 0)
					continue;
				if (c < N_CODES - 1)
					snprintf(code, sizeof code, "%d", codes[c]);
				else
					snprintf(code, sizeof code, "other");
				strbuf_addf(b, "gpu_admission_requests_total{endpoint=\"%s\",decision=\"%s\",code=\"%s\"} %llu\n",
				     ep_names[ep], dec_names[dec], code, v);
			}
}

static void render_verdicts(struct strbuf *b, const struct metrics *m)
{
	size_t ep, kind, mode, v;

	strbuf_addf(b, "# HELP gpu_admission_policy_verdicts_total Reviews the policy evaluated, by the kind of object "
		"(Pod, a built-in workload kind, or custom), what enforce mode answers and the mode in force (in "
		"dryrun and warn: what enforcing would change; a pod enforce refuses at mutate is counted there "
		"alone).\n"
		"# TYPE gpu_admission_policy_verdicts_total counter\n");
	for (ep = 0; ep < N_HIST; ep++)
		for (kind = 0; kind < N_KINDS; kind++)
			for (mode = 0; mode < N_MODES; mode++)
				for (v = 0; v < N_VERDICTS; v++) {
					unsigned long long n = load(&m->verdicts[ep][kind][mode][v]);

					if (n > 0)
						strbuf_addf(b, "gpu_admission_policy_verdicts_total{endpoint=\"%s\",kind=\"%s\","
						     "mode=\"%s\",verdict=\"%s\"} %llu\n", ep_names[ep], kind_name(kind),
						     config_mode_name((enum config_mode)mode),
						     policy_decision_name((enum policy_decision)v), n);
				}
}

static void render_latency(struct strbuf *b, const struct metrics *m)
{
	size_t ep, i;

	strbuf_addf(b, "# HELP gpu_admission_request_duration_seconds Time from request headers to queued answer on /mutate, "
		"/validate and /validate-policy.\n"
		"# TYPE gpu_admission_request_duration_seconds histogram\n");
	for (ep = 0; ep < N_HIST; ep++) {
		const struct histogram *h = &m->latency[ep];
		unsigned long long cum = 0, sum = load(&h->sum_us);

		for (i = 0; i < METRICS_BUCKETS; i++) {
			cum += load(&h->bucket[i]);
			strbuf_addf(b, "gpu_admission_request_duration_seconds_bucket{endpoint=\"%s\",le=\"%s\"} %llu\n",
			     ep_names[ep], bucket_le[i], cum);
		}
		cum += load(&h->bucket[METRICS_BUCKETS]);
		strbuf_addf(b, "gpu_admission_request_duration_seconds_bucket{endpoint=\"%s\",le=\"+Inf\"} %llu\n",
		     ep_names[ep], cum);
		strbuf_addf(b, "gpu_admission_request_duration_seconds_sum{endpoint=\"%s\"} %llu.%06llu\n",
		     ep_names[ep], sum / 1000000, sum % 1000000);
		/* count is the buckets' total, so the histogram is always self-consistent. */
		strbuf_addf(b, "gpu_admission_request_duration_seconds_count{endpoint=\"%s\"} %llu\n", ep_names[ep], cum);
	}
}

char *metrics_render(const struct metrics *m, size_t *len, struct error *err)
{
	static const char *const kinds[METRICS_RELOAD_COUNT] = { "config", "cert" };
	struct strbuf b = STRBUF_INIT;
	size_t k;
	char *text;

	strbuf_grow(&b, METRICS_TEXT_FIRST);
	render_requests(&b, m);
	render_verdicts(&b, m);
	render_latency(&b, m);
	strbuf_addf(&b, "# HELP gpu_admission_in_flight_requests Requests being read or answered.\n"
		 "# TYPE gpu_admission_in_flight_requests gauge\n"
		 "gpu_admission_in_flight_requests %lld\n",
	     (long long)atomic_load_explicit(&m->in_flight, memory_order_relaxed));
	for (k = 0; k < METRICS_RELOAD_COUNT; k++) {
		unsigned long long ok = load(&m->reloads[k][1]), bad = load(&m->reloads[k][0]);

		strbuf_addf(&b, "# HELP gpu_admission_%s_reloads_total Reloads of the %s taken into service.\n"
			 "# TYPE gpu_admission_%s_reloads_total counter\n"
			 "gpu_admission_%s_reloads_total %llu\n"
			 "# HELP gpu_admission_%s_reload_failures_total Reloads rejected; the previous %s stayed in service.\n"
			 "# TYPE gpu_admission_%s_reload_failures_total counter\n"
			 "gpu_admission_%s_reload_failures_total %llu\n",
		     kinds[k], k == METRICS_RELOAD_CONFIG ? "policy configuration" : "serving certificate",
		     kinds[k], kinds[k], ok,
		     kinds[k], k == METRICS_RELOAD_CONFIG ? "configuration" : "certificate",
		     kinds[k], kinds[k], bad);
	}
	strbuf_addf(&b, "# HELP gpu_admission_cert_expiry_timestamp_seconds notAfter of the serving certificate in use.\n"
		 "# TYPE gpu_admission_cert_expiry_timestamp_seconds gauge\n"
		 "gpu_admission_cert_expiry_timestamp_seconds %lld\n"
		 "# HELP gpu_admission_build_info Build of the running binary.\n"
		 "# TYPE gpu_admission_build_info gauge\n"
		 "gpu_admission_build_info{version=\"%s\"} 1\n",
	     (long long)atomic_load_explicit(&m->cert_expiry, memory_order_relaxed), m->version);
	if ((text = strbuf_detach(&b, len)) == NULL)
		error_set(err, ERROR_NOMEM, "out of memory rendering metrics");
	return text;
}
