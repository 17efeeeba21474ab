/*
 * metrics: the server's counters and their Prometheus text rendering.
 *
 * Updates are C11 atomics with relaxed ordering: the hot path never takes a
 * lock, and a scrape reads each counter once (a scrape racing an update may
 * see a histogram whose count is one ahead of a bucket; Prometheus tolerates
 * that). Series with a fixed label set are preallocated, so recording never
 * allocates.
 */
#ifndef GPU_ADMISSION_METRICS_H
#define GPU_ADMISSION_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "policy/config.h"
#include "base/error.h"
#include "policy/policy.h"

/* The admission endpoints first: they alone have a latency histogram. */
enum metrics_endpoint {
	METRICS_EP_MUTATE = 0,
	METRICS_EP_VALIDATE,
	METRICS_EP_VALIDATE_POLICY,  /* the policy ConfigMap's edits */
	METRICS_EP_HEALTHZ,
	METRICS_EP_READYZ,
	METRICS_EP_METRICS,
	METRICS_EP_OTHER,
	METRICS_EP_COUNT
};

enum metrics_decision {
	METRICS_DEC_NONE = 0, /* not an admission request (health, metrics, 404, ...) */
	METRICS_DEC_ALLOW,
	METRICS_DEC_MUTATE,
	METRICS_DEC_REJECT,
	METRICS_DEC_ERROR,    /* no decision: malformed request, limits, internal error */
	METRICS_DEC_COUNT
};

enum metrics_reload {
	METRICS_RELOAD_CONFIG = 0,
	METRICS_RELOAD_CERT,
	METRICS_RELOAD_COUNT
};

/* The latency histogram's upper bounds in microseconds: 100 µs .. 1 s, then +Inf. */
#define METRICS_BUCKETS 13

struct metrics;

/* New: zeroed counters. version is copied into gpu_admission_build_info. NULL on allocation failure. */
struct metrics *metrics_new(const char *version, struct error *err);

/* Frees m. Accepts NULL. */
void metrics_free(struct metrics *m);

/*
 * Counts one answered request. code is the HTTP status sent; latency_us is
 * observed in the histogram for the admission endpoints only (mutate,
 * validate, validate-policy).
 */
void metrics_request(struct metrics *m, enum metrics_endpoint ep, enum metrics_decision dec,
		     int code, uint64_t latency_us);

/*
 * Counts one admission review the policy evaluated on ep (mutate or
 * validate): kind is what it judged (review_response.kind: "Pod", a
 * built-in workload kind; anything else, NULL included, counts as
 * "custom", so the label stays bounded), verdict what enforce mode answers,
 * mode the mode in force. In dryrun and warn this is what enforcing would
 * change. The caller does not count a /validate review enforce never makes
 * (review_response.unreached).
 */
void metrics_verdict(struct metrics *m, enum metrics_endpoint ep, const char *kind, enum config_mode mode,
		     enum policy_decision verdict);

/* Adds delta (+1 / -1) to the in-flight gauge. */
void metrics_in_flight(struct metrics *m, int delta);

/* Counts one reload attempt of kind; ok says whether it was taken into service. */
void metrics_reload(struct metrics *m, enum metrics_reload kind, int ok);

/* Sets the serving certificate's notAfter as a unix timestamp. */
void metrics_cert_expiry(struct metrics *m, int64_t unix_seconds);

/* New: the Prometheus text exposition (format 0.0.4); *len gets its length. NULL on allocation failure. */
char *metrics_render(const struct metrics *m, size_t *len, struct error *err);

/* Borrowed, static: the label value of ep / dec ("mutate", "allow", ...). */
const char *metrics_endpoint_name(enum metrics_endpoint ep);
const char *metrics_decision_name(enum metrics_decision dec);

#endif
