/*
 * report_publish: the report written where people already look, once per
 * interval of the watch (or once, `report --publish`).
 *
 *  - A PolicyReport (wgpolicyk8s.io/v1alpha2, the format Kyverno and Policy
 *    Reporter read; CRD and field meanings in kubernetes-sigs/wg-policy-prototypes,
 *    policy-report/crd/wgpolicyk8s.io_policyreports.yaml and
 *    policy-report/api/v1alpha2/policyreport_types.go) per namespace with
 *    something to report, named REPORT_PUBLISH_NAME: its CPU pods on GPU nodes
 *    (result fail: with the route and the policy's message, the fix) and its
 *    Pending GPU pods (result warn: the reason and its message). Owned by
 *    nothing, labelled app.kubernetes.io/managed-by=gpu-admission. Capped at
 *    results_max results; the summary counts every finding of the namespace and
 *    one last result (rule "results-omitted", skip) says how many were left out.
 *    A namespace with nothing left to report has its report deleted. Written
 *    only when the API server serves the CRD (discovery, checked again every
 *    REPORT_PUBLISH_DISCOVERY_S); otherwise skipped, one log line when that
 *    changes and a counter each run.
 *  - A core/v1 Event on a GPU pod Pending for a reason the report knows
 *    (report_publish_event_reason()), aggregated as Kubernetes' own recorder
 *    does (client-go tools/record/events_cache.go, EventCorrelator's
 *    eventLogger): the same pod (uid), reason and message is one Event, named
 *    after them (report_publish_event_name()), whose count and lastTimestamp
 *    are PATCHed each time it is seen again; created when it is not there.
 *    The limiter (pkg/base/ratelimit.h) bounds the writes, creates and
 *    updates alike: one per pod and reason per event_pod_s (so count grows
 *    by at most one per event_pod_s: client-go's spam filter allows one per
 *    object per 5 minutes after its burst), event_burst at once overall, then
 *    one every event_refill_s.
 *
 * The objects are built by pure functions (no I/O); the publisher holds what
 * must last across runs (the CRD's presence, what it wrote, the limiter) and
 * borrows the report and the client for one run.
 */
#ifndef GPU_ADMISSION_REPORT_PUBLISH_H
#define GPU_ADMISSION_REPORT_PUBLISH_H

#include <time.h>

#include <jansson.h>

#include "base/error.h"
#include "k8s/kubeclient.h"
#include "report/report.h"

#define REPORT_PUBLISH_NAME "gpu-admission"        /* each namespace's PolicyReport; fieldManager; source */
#define REPORT_PUBLISH_MANAGED_BY "gpu-admission"  /* app.kubernetes.io/managed-by on what it writes */
#define REPORT_PUBLISH_RESULTS_MAX 100             /* results in one PolicyReport (then "results-omitted") */
/*
 * The most results_max may be: a result is at most ~2.8 KiB (its message cut
 * at 1 KiB, names at their API limits), so a report of this many stays under
 * KUBE_WRITE_BODY_MAX (test_report_publish.c builds the worst case).
 */
#define REPORT_PUBLISH_RESULTS_LIMIT 300
#define REPORT_PUBLISH_DISCOVERY_S 300             /* the CRD's presence is asked again after this long */
#define REPORT_PUBLISH_RELIST_S 3600               /* its reports are listed again after this long */
#define REPORT_PUBLISH_EVENT_BURST 20              /* Events at once, overall ... */
#define REPORT_PUBLISH_EVENT_REFILL_S 6            /* ... then one every 6 s (10 a minute) */
#define REPORT_PUBLISH_EVENT_POD_S 300             /* one write per pod and reason per 5 minutes */
#define REPORT_PUBLISH_EVENT_PODS_MAX 10000        /* pods (and reasons) the limiter remembers */
#define REPORT_PUBLISH_MESSAGE_MAX 1024            /* an Event's message (events.k8s.io's note limit) */
#define REPORT_PUBLISH_EVENT_NAME_MAX 253          /* an Event's name: a DNS subdomain */

struct report_publish_options {
	int policy_reports;          /* write the PolicyReports */
	int events;                  /* write the Events */
	size_t results_max;          /* results per PolicyReport; 0: REPORT_PUBLISH_RESULTS_MAX;
	                                at most REPORT_PUBLISH_RESULTS_LIMIT */
	unsigned event_burst, event_refill_s, event_pod_s;  /* 0: REPORT_PUBLISH_EVENT_* */
	size_t event_pods_max;       /* 0: REPORT_PUBLISH_EVENT_PODS_MAX */
};

/* Counts since the publisher was made. */
struct report_publish_stats {
	unsigned long runs;
	unsigned long reports_applied, reports_unchanged, reports_deleted;
	unsigned long reports_skipped_no_crd;  /* runs that wrote none: the CRD is absent */
	unsigned long events_created, events_updated, events_limited, events_pod_gone;
	unsigned long errors;                  /* writes that failed */
};

/* ==== The objects (pure) ==== */

/*
 * New: {namespace: PolicyReport} for every namespace of r (borrowed,
 * finished) with a CPU pod on a GPU node or a Pending GPU pod, at most
 * results_max (>= 1) results each. NULL with ERROR_NOMEM.
 */
json_t *report_publish_reports(const struct report *r, size_t results_max, struct error *err);

/* The Event reason for a Pending reason ("GPUPoolFull", ...; static), or NULL when none is written. */
const char *report_publish_event_reason(enum report_pending_reason reason);

/*
 * The name of the Event on Pending pod p of uid ("": unknown) into out[cap]
 * (REPORT_PUBLISH_EVENT_NAME_MAX + 1 is enough): the pod's name (cut to fit),
 * '.', and 16 hex digits of a hash of namespace, pod, uid, reason and
 * message. The same for the same Event in any run, so a later run finds the
 * one an earlier made. 0, or -1 when p's reason has no Event or out is short.
 */
int report_publish_event_name(const struct report_pending *p, const char *uid, char *out, size_t cap);

/*
 * New: the core/v1 Event on Pending pod p (borrowed) of uid (borrowed; "":
 * unknown) at now, count 1, named report_publish_event_name(), or NULL with
 * ERROR_NOMEM, or ERROR_INPUT when p's reason has no Event.
 */
json_t *report_publish_event(const struct report_pending *p, const char *uid, time_t now, struct error *err);

/* ==== The publisher ==== */

struct report_publisher;

/* New: a publisher with o (copied). NULL with err (ERROR_NOMEM). */
struct report_publisher *report_publisher_new(const struct report_publish_options *o, struct error *err);

/*
 * Publishes r (borrowed, finished) through k (borrowed) at now: the
 * PolicyReports and Events the options ask for. Every write is tried; 0 when
 * all succeeded, else -1 with the first failure in err, for the caller to log
 * once (the stats count them all; the next run tries again). An absent CRD
 * is not a failure.
 */
int report_publisher_run(struct report_publisher *p, struct kube_client *k, const struct report *r, time_t now,
			 struct error *err);

void report_publisher_stats(const struct report_publisher *p, struct report_publish_stats *s);

/* Accepts NULL. */
void report_publisher_free(struct report_publisher *p);

#endif
