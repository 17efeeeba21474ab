/*
 * report_watch: the cost report kept live from the API server (`gpu-admission
 * watch`): Nodes, Pods, and when the server serves DRA (resource.k8s.io)
 * ResourceSlices and ResourceClaims, listed and watched
 * (pkg/k8s/watchcache.h, with a sink: no store of objects) into one report
 * model (report_model.h), event by event, and a report of the current state
 * built from the model once per interval, for /metrics (report_serve.h).
 * The figures are those of `report` over `kubectl get
 * nodes,pods,resourceslices,resourceclaims -A -o json` of the same state.
 *
 * Each cache's thread feeds the model under one mutex: the cache decodes an
 * object with only the fields the report reads (its sink's shape,
 * report_item_shape(): no jansson value is built for the rest), then it is
 * applied. A list
 * (the first, or a relist after 410 Gone or an outage) is bracketed by
 * report_model_list_begin/_end, so objects deleted meanwhile disappear when
 * it completes. While a relist runs, the model holds old and new objects of
 * that kind together; the figures are right again when it ends.
 *
 * DRA: the interval's thread asks the server (GET /apis/resource.k8s.io/V
 * for V = v1, v1beta2, v1beta1: v1 from Kubernetes 1.34, the betas before)
 * for the first version serving both resources, and watches them there. A
 * server that serves none (404) is no error: the watch runs on nodes and
 * pods, logs it once, gpu_admission_watch_served{resource="resourceslices"}
 * says 0, and it asks again every REPORT_WATCH_DRA_RECHECK_S. Readiness
 * waits for that answer, then for every resource served to be listed.
 *
 * Memory: the model's (about 9 KB per node and 200 B per pod, more for the
 * pods the report names, plus per ResourceSlice and ResourceClaim what
 * cmd/gpu-admission/README.md states), bounded by REPORT_NODES_MAX nodes,
 * REPORT_MODEL_SLICES_MAX slices and max_pods pods and as many claims
 * (beyond: refused, counted), plus one report and its Prometheus text,
 * rebuilt each interval.
 */
#ifndef GPU_ADMISSION_REPORT_WATCH_H
#define GPU_ADMISSION_REPORT_WATCH_H

#include <stddef.h>

#include "base/error.h"
#include "policy/config.h"
#include "report/report.h"
#include "report/report_publish.h"

#define REPORT_WATCH_PODS_MAX 1000000u      /* default max_pods: ~200 MB of model at worst */
#define REPORT_WATCH_INTERVAL_S 30u         /* default interval */
#define REPORT_WATCH_INTERVAL_MAX_S 3600u
#define REPORT_WATCH_TYPES 4                /* nodes, pods, resourceslices, resourceclaims */
#define REPORT_WATCH_DRA_RECHECK_S 300u     /* a server without DRA asked again this often */

struct report_watch_options {
	const struct config *cfg;   /* borrowed: the policy the report judges by; must outlive the watch */
	const char *kubeconfig;     /* a kubeconfig file; NULL: found as kube_config_find() does */
	const char *sa_dir;         /* in-cluster: the service account's directory (NULL: KUBE_SA_DIR) */
	size_t max_pods;            /* 0: REPORT_WATCH_PODS_MAX */
	unsigned interval_s;        /* how often the report is rebuilt; 0: REPORT_WATCH_INTERVAL_S */
	unsigned backoff_max_ms;    /* the caches' longest backoff; 0: WATCHCACHE_BACKOFF_MAX_MS */
	/*
	 * Borrowed (copied at start); NULL, or neither policy_reports nor events:
	 * nothing is written. Otherwise each report built is published
	 * (report_publish.h) from the interval's thread, after /metrics has it.
	 */
	const struct report_publish_options *publish;
};

struct report_watch;

/*
 * New: the API configuration loaded (ERROR_CONFIG when it cannot be), the
 * caches' threads and the interval's thread started. An unreachable API
 * server is no error: the caches retry, and the watch is not ready.
 */
struct report_watch *report_watch_start(const struct report_watch_options *o, struct error *err);

/* Stops every thread and frees w. Accepts NULL. */
void report_watch_free(struct report_watch *w);

/* Every type served has been listed once and a report of it built: /readyz. */
int report_watch_ready(const struct report_watch *w);

/*
 * The latest report's Prometheus text (report_prom_write(); empty before
 * the first), then the watch's own gauges (gpu_admission_watch_*), into
 * *text (malloc'd, *len bytes, NUL-terminated). 0, or -1 with ERROR_NOMEM.
 */
int report_watch_metrics(struct report_watch *w, char **text, size_t *len, struct error *err);

/*
 * r = the report of the current state judged also by whatif (borrowed;
 * must outlive r; named name) as `report --what-if` does; r is caller
 * storage, report_free() it either way. The model is held meanwhile (events
 * wait). 0, or -1 with err (ERROR_UNAVAILABLE before the watch is ready).
 */
int report_watch_whatif(struct report_watch *w, const struct config *whatif, const char *name, struct report *r,
			struct error *err);

#endif
