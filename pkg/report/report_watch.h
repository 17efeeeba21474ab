/*
 * report_watch: the cost report kept live from the API server (`gpu-admission
 * watch`): Nodes and Pods listed and watched (pkg/k8s/watchcache.h, with a
 * sink: no store of objects) into one report model (report_model.h), event by
 * event, and a report of the current state built from the model once per
 * interval, for /metrics (report_serve.h).
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
 * Memory: the model's (about 9 KB per node and 200 B per pod, more for the
 * pods the report names: cmd/gpu-admission/README.md), bounded by
 * REPORT_NODES_MAX nodes and max_pods pods (beyond: refused, counted), plus
 * one report and its Prometheus text, rebuilt each interval.
 *
 * ResourceClaims are not watched: the report reads no DRA claim yet (a pod's
 * GPUs are its extended resources), so they would cost memory for no figure.
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
#define REPORT_WATCH_TYPES 2                /* nodes, pods */

struct report_watch_options {
	const struct config *cfg;   /* borrowed: the policy the report judges by; must outlive the watch */
	const char *kubeconfig;     /* a kubeconfig file; NULL: the in-cluster service account */
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

/* Every type has been listed once and a report of it built: /readyz. */
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
