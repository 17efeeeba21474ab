/*
 * report_watch: the report's model fed by watch caches with a sink, and the
 * report rebuilt each interval (report_watch.h).
 */
#include "report/report_watch.h"
#include "report/report_model.h"

#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/log.h"
#include "base/stopper.h"
#include "k8s/kubeclient.h"
#include "k8s/watchcache.h"

/* Until every type has synced, the interval's thread looks this often whether it may build the first report. */
#define WATCH_FIRST_POLL_MS 200u
/* The types: nodes and pods always, the DRA ones once discovered (report_watch.h). */
enum { T_NODES = 0, T_PODS, T_SLICES, T_CLAIMS };
#define WATCH_DRA_GROUP "resource.k8s.io"
#define WATCH_DRA_VERSION_MAX 16
#define WATCH_DRA_ATTEMPTS_MAX 32  /* failed discoveries counted for the backoff: long past its cap */

/* What discovery found of resource.k8s.io. */
enum dra_state { DRA_UNKNOWN = 0, DRA_SERVED, DRA_ABSENT };

/* One watched type: its cache and what the metrics say of it. */
struct wtype {
	struct report_watch *w;
	const char *kind;              /* the model's kind: "Node", "Pod" */
	const char *resource;          /* the metrics' label: "nodes", "pods" */
	char path[KUBE_PATH_MAX];      /* the collection ("" for a DRA type not discovered) */
	struct watchcache_sink sink;
	struct watchcache *cache;      /* NULL until started: a DRA type's once discovered; read after w->dra */
	atomic_llong last_event;       /* unix seconds of the last object handed over; 0: none */
};

struct report_watch {
	struct kube_config kc;
	const struct config *cfg;
	unsigned interval_s;
	long long started;

	pthread_mutex_t lock;          /* guards model */
	struct report_model *model;
	struct wtype types[REPORT_WATCH_TYPES];
	struct watchcache_options wopts;      /* the caches' options but for the type's own */

	/*
	 * resource.k8s.io: the interval's thread alone asks and starts the DRA
	 * caches; others read dra (DRA_SERVED is stored once both caches are).
	 */
	atomic_int dra;                       /* enum dra_state */
	char dra_version[WATCH_DRA_VERSION_MAX];
	time_t dra_asked;                     /* monotonic seconds of the last answer (DRA_ABSENT: ask again) */
	unsigned dra_attempt;                 /* failed discoveries in a row: the backoff's */

	pthread_mutex_t out_lock;      /* guards prom */
	char *prom;                    /* owned: the latest report's metrics; NULL before the first */
	atomic_llong built_at;         /* unix seconds of the latest report; 0: none */
	atomic_ullong builds, build_errors;
	atomic_int ready;

	/* Publishing: only the interval's thread writes; out_lock guards pub_stats for /metrics. */
	struct report_publisher *publisher;   /* NULL: nothing to publish */
	struct kube_client *client;           /* the interval's thread's only: discovery, the publisher's writes */
	struct report_publish_stats pub_stats;

	pthread_t thread;
	int started_thread;
	struct stopper stopper;        /* the builder's stop, and its intervals' naps */
};

/* ==== The sink: events into the model ==== */

static int sink_list_begin(void *ctx)
{
	struct wtype *t = ctx;

	pthread_mutex_lock(&t->w->lock);
	report_model_list_begin(t->w->model, t->kind);
	pthread_mutex_unlock(&t->w->lock);
	return 0;
}

static int sink_list_end(void *ctx, int complete)
{
	struct wtype *t = ctx;

	if (!complete)
		return 0;
	pthread_mutex_lock(&t->w->lock);
	report_model_list_end(t->w->model, t->kind);
	pthread_mutex_unlock(&t->w->lock);
	return 0;
}

/*
 * One object into the model. The cache decodes it with report_item_shape()
 * (what the report reads: the model keeps the item of a pod it names, and a
 * whole Pod is ten times that), or whole where its scanner was unsure. List
 * items come without their kind: the type says it.
 */
static int sink_event(void *ctx, const char *type, json_t *item, size_t bytes)
{
	struct wtype *t = ctx;
	enum report_event_type ev = strcmp(type, "DELETED") == 0 ? REPORT_EVENT_DELETED :
				    strcmp(type, "ADDED") == 0 ? REPORT_EVENT_ADDED : REPORT_EVENT_MODIFIED;
	struct error err = { 0 };
	int rc;

	(void)bytes;
	if (json_object_set_new(item, "kind", json_string(t->kind)) != 0)
		return -1;
	pthread_mutex_lock(&t->w->lock);
	rc = report_model_apply(t->w->model, ev, item, &err);
	pthread_mutex_unlock(&t->w->lock);
	atomic_store(&t->last_event, (long long)time(NULL));
	if (rc != 0 && err.kind == ERROR_TOO_LARGE)
		return 1;  /* beyond REPORT_NODES_MAX: refused, counted, the rest goes on */
	if (rc != 0)
		log_msg(LOG_LEVEL_ERROR, "watch: cannot apply an event", "resource", t->resource, "error", err.msg, LOG_END);
	return rc;
}

/* ==== The interval: the report rebuilt ==== */

/* Every type the server serves has been listed once (DRA's: discovery has answered, and they are). */
static int all_synced(const struct report_watch *w)
{
	int dra = atomic_load(&w->dra);
	size_t i;

	if (dra == DRA_UNKNOWN)
		return 0;
	for (i = 0; i < REPORT_WATCH_TYPES; i++)
		if ((i < T_SLICES || dra == DRA_SERVED) && !watchcache_synced(w->types[i].cache))
			return 0;
	return 1;
}

/*
 * Writes r where the options ask (PolicyReports, Events). A failed write is
 * logged and counted, and the next interval tries again: the report's
 * metrics do not wait on the API server's writes.
 */
static void publish(struct report_watch *w, const struct report *r)
{
	struct error err = { 0 };
	struct report_publish_stats st;
	int rc;

	if (w->publisher == NULL)
		return;
	rc = report_publisher_run(w->publisher, w->client, r, time(NULL), &err);
	report_publisher_stats(w->publisher, &st);
	pthread_mutex_lock(&w->out_lock);
	w->pub_stats = st;
	pthread_mutex_unlock(&w->out_lock);
	if (rc != 0)
		log_msg(LOG_LEVEL_WARN, "watch: publishing failed; tried again next interval", "error", err.msg, LOG_END);
}

/* The report of the model now, and its metrics swapped in. */
static void build(struct report_watch *w)
{
	struct report r;
	struct error err = { 0 };
	char *buf = NULL, *old;
	size_t len = 0;
	FILE *out;
	int rc;

	memset(&r, 0, sizeof r);
	pthread_mutex_lock(&w->lock);
	rc = report_model_report(w->model, &r, &err);
	pthread_mutex_unlock(&w->lock);
	if (rc == 0) {
		if ((out = open_memstream(&buf, &len)) == NULL ||
		    report_prom_write(&r, out) != 0 || fclose(out) != 0) {
			error_set(&err, ERROR_NOMEM, "out of memory writing the report's metrics");
			rc = -1;
		}
	}
	if (rc == 0)
		publish(w, &r);
	report_free(&r);
	if (rc != 0) {
		free(buf);
		atomic_fetch_add(&w->build_errors, 1);
		log_msg(LOG_LEVEL_ERROR, "watch: cannot build the report", "error", err.msg, LOG_END);
		return;
	}
	pthread_mutex_lock(&w->out_lock);
	old = w->prom;
	w->prom = buf;
	pthread_mutex_unlock(&w->out_lock);
	free(old);
	atomic_store(&w->built_at, (long long)time(NULL));
	atomic_fetch_add(&w->builds, 1);
	if (!atomic_exchange(&w->ready, 1))
		log_msg(LOG_LEVEL_INFO, "watch: synced, first report built", LOG_END);
}

/*
 * Asks which version of resource.k8s.io the server serves with both
 * resources, in the order of preference (GA first); starts their caches on
 * the first it does. 404 for every version: the server has no DRA (before
 * 1.32 by default, or disabled); the watch goes on with nodes and pods, says
 * so once, and asks again every REPORT_WATCH_DRA_RECHECK_S (an upgrade
 * brings it). Any other failure: asked again after a backoff, the watch not
 * ready meanwhile (the caches of nodes and pods retry their own way).
 */
static int start_dra(struct report_watch *w, const char *version, struct error *err);

static void discover(struct report_watch *w)
{
	static const char *const versions[] = { "v1", "v1beta2", "v1beta1" };
	struct timespec now;
	struct error err = { 0 };
	size_t i, j;
	int state = DRA_ABSENT;

	clock_gettime(CLOCK_MONOTONIC, &now);
	if (atomic_load(&w->dra) == DRA_SERVED ||
	    (atomic_load(&w->dra) == DRA_ABSENT && now.tv_sec - w->dra_asked < REPORT_WATCH_DRA_RECHECK_S))
		return;
	for (i = 0; i < sizeof versions / sizeof versions[0] && state == DRA_ABSENT; i++) {
		char path[KUBE_PATH_MAX];
		json_t *list = NULL, *res;
		long status = 0;
		int have = 0;

		snprintf(path, sizeof path, "/apis/%s/%s", WATCH_DRA_GROUP, versions[i]);
		if (kube_get(w->client, path, &list, &status, &err) != 0) {
			if (status == 404)
				continue;
			state = DRA_UNKNOWN;
			break;
		}
		json_array_foreach(json_object_get(list, "resources"), j, res) {
			const char *name = json_string_value(json_object_get(res, "name"));

			have |= name == NULL ? 0 : strcmp(name, "resourceslices") == 0 ? 1 :
						   strcmp(name, "resourceclaims") == 0 ? 2 : 0;
		}
		json_decref(list);
		if (have == 3 && start_dra(w, versions[i], &err) != 0)
			state = DRA_UNKNOWN;
		else if (have == 3)
			state = DRA_SERVED;
	}
	if (state == DRA_UNKNOWN) {
		char wait[32];
		unsigned ms = watchcache_backoff_ms(w->dra_attempt, WATCHCACHE_BACKOFF_MIN_MS, w->wopts.backoff_max_ms,
						    (uint32_t)now.tv_nsec);

		if (w->dra_attempt < WATCH_DRA_ATTEMPTS_MAX)
			w->dra_attempt++;
		snprintf(wait, sizeof wait, "%u", ms);
		log_msg(LOG_LEVEL_WARN, "watch: cannot tell whether the API server serves " WATCH_DRA_GROUP,
			"error", err.msg, "retry_ms", wait, LOG_END);
		stopper_nap(&w->stopper, ms);
		return;
	}
	w->dra_attempt = 0;
	w->dra_asked = now.tv_sec;
	if (state == DRA_SERVED)
		log_msg(LOG_LEVEL_INFO, "watch: watching ResourceSlices and ResourceClaims", "apiVersion",
			w->dra_version, LOG_END);
	else if (atomic_exchange(&w->dra, DRA_ABSENT) != DRA_ABSENT)
		log_msg(LOG_LEVEL_WARN, "watch: the API server serves no " WATCH_DRA_GROUP " (v1, v1beta2 or v1beta1) "
			"with resourceslices and resourceclaims: watching nodes and pods only, the report without DRA",
			LOG_END);
}

static void *run(void *arg)
{
	struct report_watch *w = arg;

	while (!stopper_stopped(&w->stopper) && !all_synced(w)) {
		discover(w);
		stopper_nap(&w->stopper, WATCH_FIRST_POLL_MS);
	}
	while (!stopper_stopped(&w->stopper)) {
		build(w);
		stopper_nap(&w->stopper, w->interval_s * 1000u);
		discover(w);
	}
	return NULL;
}

/* ==== Life ==== */

static const struct {
	const char *kind, *resource, *path;
} watched[REPORT_WATCH_TYPES] = {
	{ "Node", "nodes", "/api/v1/nodes" },
	{ "Pod", "pods", "/api/v1/pods" },
	{ "ResourceSlice", "resourceslices", NULL },   /* the path: discovered */
	{ "ResourceClaim", "resourceclaims", NULL },
};

/* Type i's cache of w->types[i].path, api_version, made and started. */
static int start_cache(struct report_watch *w, size_t i, const char *api_version, struct error *err)
{
	struct wtype *t = &w->types[i];
	struct watchcache_options wo = w->wopts;
	struct watchcache *c;

	wo.name = t->resource;
	wo.path = t->path;
	wo.api_version = api_version;
	wo.kind = t->kind;
	wo.sink = &t->sink;
	if ((c = watchcache_new(&w->kc, &wo, err)) == NULL)
		return -1;
	if (watchcache_start(c, err) != 0) {
		watchcache_free(c);
		return -1;
	}
	t->cache = c;
	return 0;
}

/* The DRA types' caches, of resource.k8s.io/version: started, then w->dra says so. */
static int start_dra(struct report_watch *w, const char *version, struct error *err)
{
	char api_version[WATCHCACHE_NAME_MAX];
	size_t i;

	snprintf(w->dra_version, sizeof w->dra_version, "%s", version);
	snprintf(api_version, sizeof api_version, "%s/%s", WATCH_DRA_GROUP, version);
	for (i = T_SLICES; i < REPORT_WATCH_TYPES; i++) {
		snprintf(w->types[i].path, sizeof w->types[i].path, "/apis/%s/%s", api_version, w->types[i].resource);
		if (w->types[i].cache == NULL && start_cache(w, i, api_version, err) != 0)
			return -1;
	}
	atomic_store(&w->dra, DRA_SERVED);
	return 0;
}

static int start_caches(struct report_watch *w, const struct report_watch_options *o, struct error *err)
{
	size_t i;

	/* A Node or Pod event up to the line limit: a Pod of 200 containers is still judged; a slice of many devices. */
	w->wopts.max_object_bytes = LIMIT_KUBE_WATCH_LINE_MAX;
	w->wopts.backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : WATCHCACHE_BACKOFF_MAX_MS;
	for (i = 0; i < REPORT_WATCH_TYPES; i++) {
		struct wtype *t = &w->types[i];

		t->w = w;
		t->kind = watched[i].kind;
		t->resource = watched[i].resource;
		if (watched[i].path != NULL)
			snprintf(t->path, sizeof t->path, "%s", watched[i].path);
		t->sink = (struct watchcache_sink){ t, sink_list_begin, sink_list_end, sink_event, report_item_shape() };
	}
	for (i = T_NODES; i < T_SLICES; i++)
		if (start_cache(w, i, "v1", err) != 0)
			return -1;
	return 0;
}

static int start_thread(struct report_watch *w, struct error *err)
{
	sigset_t all, old;
	int rc;

	/* As the caches' threads: signals are for the thread that waits for them. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&w->thread, NULL, run, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		error_set(err, ERROR_SYSTEM, "cannot start the watch's thread");
		return -1;
	}
	w->started_thread = 1;
	return 0;
}

struct report_watch *report_watch_start(const struct report_watch_options *o, struct error *err)
{
	struct report_watch *w = calloc(1, sizeof *w);
	char from[KUBE_FILE_PATH_MAX + 128];
	int rc;

	if (w == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	w->cfg = o->cfg;
	w->interval_s = o->interval_s ? o->interval_s : REPORT_WATCH_INTERVAL_S;
	w->started = (long long)time(NULL);
	pthread_mutex_init(&w->lock, NULL);
	pthread_mutex_init(&w->out_lock, NULL);
	stopper_init(&w->stopper);
	rc = kube_config_find(&w->kc, o->kubeconfig, o->sa_dir, from, sizeof from, err);
	if (rc == 0)
		log_msg(LOG_LEVEL_INFO, "watch: API server configuration", "from", from, "server", w->kc.server, LOG_END);
	if (rc != 0 || kube_global_init(err) != 0 || (w->model = report_model_new(o->cfg, err)) == NULL) {
		report_watch_free(w);
		return NULL;
	}
	report_model_limit(w->model, o->max_pods ? o->max_pods : REPORT_WATCH_PODS_MAX);
	if ((w->client = kube_client_new(&w->kc, &w->stopper.stop, err)) == NULL ||
	    (o->publish != NULL && (o->publish->policy_reports || o->publish->events) &&
	     (w->publisher = report_publisher_new(o->publish, err)) == NULL)) {
		report_watch_free(w);
		return NULL;
	}
	if (start_caches(w, o, err) != 0 || start_thread(w, err) != 0) {
		report_watch_free(w);
		return NULL;
	}
	return w;
}

void report_watch_free(struct report_watch *w)
{
	size_t i;

	if (w == NULL)
		return;
	if (w->started_thread) {
		stopper_stop(&w->stopper);
		pthread_join(w->thread, NULL);
	}
	for (i = 0; i < REPORT_WATCH_TYPES; i++)
		watchcache_free(w->types[i].cache);
	report_model_free(w->model);
	kube_client_free(w->client);
	report_publisher_free(w->publisher);
	kube_config_free(&w->kc);
	free(w->prom);
	pthread_mutex_destroy(&w->lock);
	pthread_mutex_destroy(&w->out_lock);
	stopper_destroy(&w->stopper);
	free(w);
}

int report_watch_ready(const struct report_watch *w)
{
	return atomic_load(&w->ready);
}

/* ==== Metrics and the what-if ==== */

/* One gauge or counter family per watched type. */
static void per_type(const struct report_watch *w, FILE *out, const char *name, const char *type, const char *help,
		     unsigned long long (*get)(const struct wtype *t, const struct watchcache_stats *s, long long now))
{
	long long now = (long long)time(NULL);
	size_t i;

	fprintf(out, "# HELP gpu_admission_watch_%s %s\n# TYPE gpu_admission_watch_%s %s\n", name, help, name, type);
	for (i = 0; i < REPORT_WATCH_TYPES; i++) {
		struct watchcache_stats s;

		memset(&s, 0, sizeof s);
		if (i < T_SLICES || atomic_load(&w->dra) == DRA_SERVED)  /* a DRA cache: NULL before */
			watchcache_stats(w->types[i].cache, &s);
		fprintf(out, "gpu_admission_watch_%s{resource=\"%s\"} %llu\n", name, w->types[i].resource,
			get(&w->types[i], &s, now));
	}
}

static unsigned long long g_served(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return t - t->w->types < T_SLICES || atomic_load(&t->w->dra) == DRA_SERVED;
}
static unsigned long long g_synced(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return (unsigned long long)s->synced;
}
static unsigned long long g_watching(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return (unsigned long long)s->watching;
}
static unsigned long long g_events(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return s->events;
}
static unsigned long long g_lists(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return s->lists;
}
static unsigned long long g_relists(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return s->relists;
}
static unsigned long long g_errors(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return s->errors;
}
static unsigned long long g_refused(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	return s->refused;
}
/* Since the last object handed over, or since the start when none was. */
static unsigned long long g_age(const struct wtype *t, const struct watchcache_stats *s, long long now)
{
	long long last = atomic_load(&t->last_event);

	if (last == 0)
		last = t->w->started;
	return now > last ? (unsigned long long)(now - last) : 0;
}

/* The publisher's counts (report_publish.h), when it runs. */
static void publish_metrics(struct report_watch *w, FILE *out)
{
	struct report_publish_stats st;

	pthread_mutex_lock(&w->out_lock);
	st = w->pub_stats;
	pthread_mutex_unlock(&w->out_lock);
	fprintf(out, "# HELP gpu_admission_watch_publish_runs_total Reports published (one per interval)\n"
		"# TYPE gpu_admission_watch_publish_runs_total counter\ngpu_admission_watch_publish_runs_total %lu\n"
		"# HELP gpu_admission_watch_policyreports_total PolicyReports by what was done to them\n"
		"# TYPE gpu_admission_watch_policyreports_total counter\n"
		"gpu_admission_watch_policyreports_total{result=\"applied\"} %lu\n"
		"gpu_admission_watch_policyreports_total{result=\"unchanged\"} %lu\n"
		"gpu_admission_watch_policyreports_total{result=\"deleted\"} %lu\n"
		"# HELP gpu_admission_watch_policyreports_skipped_total Runs that wrote no PolicyReport: the CRD is absent\n"
		"# TYPE gpu_admission_watch_policyreports_skipped_total counter\n"
		"gpu_admission_watch_policyreports_skipped_total %lu\n"
		"# HELP gpu_admission_watch_pod_events_total Kubernetes Events on Pending GPU pods by what was done\n"
		"# TYPE gpu_admission_watch_pod_events_total counter\n"
		"gpu_admission_watch_pod_events_total{result=\"created\"} %lu\n"
		"gpu_admission_watch_pod_events_total{result=\"updated\"} %lu\n"
		"gpu_admission_watch_pod_events_total{result=\"rate_limited\"} %lu\n"
		"gpu_admission_watch_pod_events_total{result=\"pod_gone\"} %lu\n"
		"# HELP gpu_admission_watch_publish_errors_total Writes to the API server that failed\n"
		"# TYPE gpu_admission_watch_publish_errors_total counter\ngpu_admission_watch_publish_errors_total %lu\n",
		st.runs, st.reports_applied, st.reports_unchanged, st.reports_deleted, st.reports_skipped_no_crd,
		st.events_created, st.events_updated, st.events_limited, st.events_pod_gone, st.errors);
}

static void watch_metrics(struct report_watch *w, FILE *out)
{
	struct report_model_stats ms;
	long long built = atomic_load(&w->built_at), now = (long long)time(NULL);

	per_type(w, out, "served", "gauge", "1 when the API server serves the resource (DRA's: resource.k8s.io "
		 "discovered), so that it is watched", g_served);
	per_type(w, out, "synced", "gauge", "1 once the resource has been listed completely", g_synced);
	per_type(w, out, "watching", "gauge", "1 while a watch stream of the resource is open", g_watching);
	per_type(w, out, "events_total", "counter", "Watch events received (bookmarks included)", g_events);
	per_type(w, out, "lists_total", "counter", "Complete lists of the resource (the first included)", g_lists);
	per_type(w, out, "relists_total", "counter", "Lists again after 410 Gone (resourceVersion too old)", g_relists);
	per_type(w, out, "errors_total", "counter", "Failed lists and watches, each followed by a backoff", g_errors);
	per_type(w, out, "refused_total", "counter", "Objects over a limit, not kept", g_refused);
	per_type(w, out, "last_event_age_seconds", "gauge", "Seconds since the last object of the resource arrived "
		 "(since the start when none has)", g_age);
	pthread_mutex_lock(&w->lock);
	report_model_stats(w->model, &ms);
	pthread_mutex_unlock(&w->lock);
	fprintf(out, "# HELP gpu_admission_watch_objects Objects the report's model holds\n"
		"# TYPE gpu_admission_watch_objects gauge\n"
		"gpu_admission_watch_objects{resource=\"nodes\"} %lu\ngpu_admission_watch_objects{resource=\"pods\"} %lu\n"
		"gpu_admission_watch_objects{resource=\"resourceslices\"} %lu\n"
		"gpu_admission_watch_objects{resource=\"resourceclaims\"} %lu\n"
		"# HELP gpu_admission_watch_model_refused_total Objects the report's model refused (bad fields, "
		"over its bounds)\n# TYPE gpu_admission_watch_model_refused_total counter\n"
		"gpu_admission_watch_model_refused_total %lu\n", ms.nodes, ms.pods, ms.slices, ms.claims, ms.refused);
	fprintf(out, "# HELP gpu_admission_watch_ready 1 once every resource is synced and a report built\n"
		"# TYPE gpu_admission_watch_ready gauge\ngpu_admission_watch_ready %d\n"
		"# HELP gpu_admission_watch_report_age_seconds Seconds since the report was last built (-1: never)\n"
		"# TYPE gpu_admission_watch_report_age_seconds gauge\ngpu_admission_watch_report_age_seconds %lld\n"
		"# HELP gpu_admission_watch_report_errors_total Reports that could not be built\n"
		"# TYPE gpu_admission_watch_report_errors_total counter\ngpu_admission_watch_report_errors_total %llu\n",
		atomic_load(&w->ready), built == 0 ? -1 : now - built, atomic_load(&w->build_errors));
	if (w->publisher != NULL)
		publish_metrics(w, out);
}

int report_watch_metrics(struct report_watch *w, char **text, size_t *len, struct error *err)
{
	FILE *out = open_memstream(text, len);

	if (out == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory rendering metrics");
		return -1;
	}
	pthread_mutex_lock(&w->out_lock);
	if (w->prom != NULL)
		fputs(w->prom, out);
	pthread_mutex_unlock(&w->out_lock);
	watch_metrics(w, out);
	if (fclose(out) != 0) {
		free(*text);
		*text = NULL;
		error_set(err, ERROR_NOMEM, "out of memory rendering metrics");
		return -1;
	}
	return 0;
}

int report_watch_whatif(struct report_watch *w, const struct config *whatif, const char *name, struct report *r,
			struct error *err)
{
	int rc;

	memset(r, 0, sizeof *r);
	if (!report_watch_ready(w)) {
		error_set(err, ERROR_UNAVAILABLE, "the watch has not synced yet");
		return -1;
	}
	pthread_mutex_lock(&w->lock);
	rc = report_model_whatif(w->model, whatif, name, r, err);
	pthread_mutex_unlock(&w->lock);
	return rc;
}
