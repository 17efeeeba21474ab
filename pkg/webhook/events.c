/* events: Warning Events on objects whose UPDATE the webhook refused. See events.h. */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "base/hash.h"
#include "base/log.h"
#include "base/strbuf.h"
#include "k8s/kubeclient.h"
#include "k8s/names.h"
#include "webhook/events.h"

/* Where Kueue serves its Workloads: v1beta2 from v0.15 on, v1beta1 before (and still beside it). */
static const char *const events_kueue_versions[] = { "kueue.x-k8s.io/v1beta2", "kueue.x-k8s.io/v1beta1" };

_Static_assert(EVENTS_REPEAT_S == 600, "gpu_admission_refusal_events_total's HELP says 10 minutes");

enum events_result { EV_PUBLISHED = 0, EV_REPEAT, EV_DROPPED, EV_FAILED, EV_RESULTS };
static const char *const events_result_names[EV_RESULTS] = { "published", "repeat", "dropped", "failed" };

struct events_item {
	struct events_object obj;
	char message[EVENTS_MESSAGE_MAX];
};

/* A refusal published lately: the hash of (uid, message), and when. */
struct events_recent {
	uint64_t key;
	time_t at;
};

struct events {
	struct kube_config kc;
	pthread_t thread;
	int started;
	atomic_int stop;
	pthread_mutex_t mu;        /* guards the queue and recent[] */
	pthread_cond_t cv;
	struct events_item queue[EVENTS_QUEUE_MAX];
	size_t head, n;
	struct events_recent recent[EVENTS_RECENT_MAX];
	atomic_ullong counts[EV_RESULTS];
};

/* h continued over s and its NUL, so that ("ab", "c") and ("a", "bc") differ. */
static uint64_t fnv(uint64_t h, const char *s)
{
	return hash_fnv1a(h, s, strlen(s) + 1);
}

/*
 * Whether (key) was published within EVENTS_REPEAT_S; if not, it is
 * remembered now in the oldest slot. A bounded table, scanned whole: 256
 * compares beside a network round trip.
 */
static int seen_lately(struct events *e, uint64_t key, time_t now)
{
	size_t i, oldest = 0;

	for (i = 0; i < EVENTS_RECENT_MAX; i++) {
		if (e->recent[i].key == key && e->recent[i].at != 0 && now - e->recent[i].at < EVENTS_REPEAT_S)
			return 1;
		if (e->recent[i].at < e->recent[oldest].at)
			oldest = i;
	}
	e->recent[oldest] = (struct events_recent){ key, now };
	return 0;
}

int events_refused(struct events *e, const struct events_object *obj, const char *message)
{
	struct events_item *it;
	uint64_t key;
	int queued = 0;

	if (e == NULL || obj->name[0] == '\0' || obj->uid[0] == '\0' || obj->kind[0] == '\0')
		return 0;
	key = fnv(fnv(HASH_FNV1A_BASIS, obj->uid), message != NULL ? message : "");
	pthread_mutex_lock(&e->mu);
	if (seen_lately(e, key, time(NULL))) {
		atomic_fetch_add(&e->counts[EV_REPEAT], 1);
	} else if (e->n == EVENTS_QUEUE_MAX) {
		atomic_fetch_add(&e->counts[EV_DROPPED], 1);
	} else {
		it = &e->queue[(e->head + e->n) % EVENTS_QUEUE_MAX];
		it->obj = *obj;
		snprintf(it->message, sizeof it->message, "%s", message != NULL ? message : "");
		e->n++;
		queued = 1;
		pthread_cond_signal(&e->cv);
	}
	pthread_mutex_unlock(&e->mu);
	return queued;
}

/*
 * The Event, core/v1 as kubectl describe lists it: involvedObject the
 * refused object (or its Workload), Warning, a name the server generates
 * from the object's. NULL when memory ran out.
 */
static json_t *event_json(const struct events_item *it, const char *api_version, const char *kind,
			  const char *name, const char *uid, const char *ts)
{
	char prefix[64];

	/* generateName: the server keeps at most 58 bytes of it and adds 5. */
	snprintf(prefix, sizeof prefix, "%.56s.", name);
	return json_pack("{s:s, s:s, s:{s:s, s:s}, s:{s:s, s:s, s:s, s:s, s:s}, s:s, s:s, s:s, s:{s:s}, "
			 "s:s, s:s, s:i, s:s, s:s}",
			 "apiVersion", "v1", "kind", "Event",
			 "metadata", "generateName", prefix, "namespace", it->obj.ns,
			 "involvedObject", "apiVersion", api_version, "kind", kind, "namespace", it->obj.ns,
			 "name", name, "uid", uid,
			 "type", "Warning", "reason", EVENTS_REASON, "message", it->message,
			 "source", "component", EVENTS_COMPONENT,
			 "firstTimestamp", ts, "lastTimestamp", ts, "count", 1,
			 "reportingComponent", EVENTS_COMPONENT, "action", "Admit");
}

/* POSTs one Event; 0, or -1 logged. */
static int post(struct kube_client *k, const struct events_item *it, const char *api_version, const char *kind,
		const char *name, const char *uid, const char *ts)
{
	char path[KUBE_PATH_MAX];
	json_t *ev = event_json(it, api_version, kind, name, uid, ts);
	struct error err = { 0 };
	long status = 0;
	int rc = -1;

	if (ev == NULL) {
		error_set(&err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", it->obj.ns);
	rc = kube_create(k, path, ev, NULL, &status, &err);
out:
	if (rc != 0)
		log_msg(LOG_LEVEL_WARN, "cannot publish the refusal's Event", "kind", kind, "namespace", it->obj.ns,
			"name", name, "error", err.msg, LOG_END);
	json_decref(ev);
	return rc;
}

/* The Workloads Kueue made for a refused object, as kube_list() gives them. */
struct workloads {
	const struct events_item *it;
	struct kube_client *k;
	const char *api_version, *ts;
	size_t n;
	int failed;
};

static int on_workload(void *ctx, json_t *item)
{
	struct workloads *w = ctx;
	const json_t *meta = json_object_get(item, "metadata");
	const char *name = json_string_value(json_object_get(meta, "name"));
	const char *uid = json_string_value(json_object_get(meta, "uid"));

	if (name == NULL || uid == NULL || w->n >= EVENTS_WORKLOADS_MAX)
		return 0;
	w->n++;
	if (post(w->k, w->it, w->api_version, "Workload", name, uid, w->ts) != 0)
		w->failed = 1;
	return 0;
}

/* The Event on the object's Workloads: each served version of Kueue's tried until one answers. */
static int post_workloads(struct kube_client *k, const struct events_item *it, const char *ts)
{
	struct workloads w = { .it = it, .k = k, .ts = ts };
	char path[KUBE_PATH_MAX], rv[64];
	struct error err = { 0 };
	long status = 0;
	size_t i;

	for (i = 0; i < sizeof events_kueue_versions / sizeof events_kueue_versions[0]; i++) {
		w.api_version = events_kueue_versions[i];
		snprintf(path, sizeof path, "/apis/%s/namespaces/%s/workloads?labelSelector=%s%%3D%s",
			 w.api_version, it->obj.ns, "kueue.x-k8s.io%2Fjob-uid", it->obj.uid);
		if (kube_list(k, path, on_workload, &w, rv, sizeof rv, &status, &err) == 0)
			return w.failed ? -1 : 0;
		if (status != 404)
			break;
	}
	log_msg(LOG_LEVEL_WARN, "cannot find the refused object's Kueue Workload", "namespace", it->obj.ns,
		"name", it->obj.name, "error", err.msg, LOG_END);
	return -1;
}

/* Whether the object's namespace and uid may go into a path and a label selector as they are. */
static int safe_for_paths(const struct events_object *o)
{
	const char *c;

	if (k8s_name_label(o->ns, strlen(o->ns), 0) != NULL)
		return 0;
	for (c = o->uid; *c != '\0'; c++)
		if (!((*c >= '0' && *c <= '9') || (*c >= 'a' && *c <= 'f') || *c == '-'))
			return 0;
	return 1;
}

static void publish(struct kube_client *k, struct events *e, const struct events_item *it)
{
	char ts[32];
	time_t now = time(NULL);
	struct tm tm;
	int rc;

	if (!safe_for_paths(&it->obj)) {
		atomic_fetch_add(&e->counts[EV_FAILED], 1);
		return;
	}
	if (gmtime_r(&now, &tm) == NULL || strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(ts, sizeof ts, "%s", "1970-01-01T00:00:00Z");
	rc = post(k, it, it->obj.api_version, it->obj.kind, it->obj.name, it->obj.uid, ts);
	if (it->obj.queued && post_workloads(k, it, ts) != 0)
		rc = -1;
	atomic_fetch_add(&e->counts[rc == 0 ? EV_PUBLISHED : EV_FAILED], 1);
}

static void *run(void *arg)
{
	struct events *e = arg;
	struct error err = { 0 };
	struct kube_client *k = kube_client_new(&e->kc, &e->stop, &err);
	struct events_item it;

	if (k == NULL)
		log_msg(LOG_LEVEL_ERROR, "refusal events cannot start", "error", err.msg, LOG_END);
	for (;;) {
		pthread_mutex_lock(&e->mu);
		while (e->n == 0 && !atomic_load(&e->stop))
			pthread_cond_wait(&e->cv, &e->mu);
		if (atomic_load(&e->stop)) {
			pthread_mutex_unlock(&e->mu);
			break;
		}
		it = e->queue[e->head];
		e->head = (e->head + 1) % EVENTS_QUEUE_MAX;
		e->n--;
		pthread_mutex_unlock(&e->mu);
		if (k != NULL)
			publish(k, e, &it);
		else
			atomic_fetch_add(&e->counts[EV_FAILED], 1);
	}
	kube_client_free(k);
	return NULL;
}

void events_free(struct events *e)
{
	if (e == NULL)
		return;
	if (e->started) {
		pthread_mutex_lock(&e->mu);
		atomic_store(&e->stop, 1);
		pthread_cond_signal(&e->cv);
		pthread_mutex_unlock(&e->mu);
		pthread_join(e->thread, NULL);
	}
	pthread_cond_destroy(&e->cv);
	pthread_mutex_destroy(&e->mu);
	kube_config_free(&e->kc);
	free(e);
}

struct events *events_start(const struct events_options *o, struct error *err)
{
	struct events *e = calloc(1, sizeof *e);
	sigset_t all, old;
	int rc;

	if (e == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	pthread_mutex_init(&e->mu, NULL);
	pthread_cond_init(&e->cv, NULL);
	if ((o->kubeconfig != NULL ? kube_config_load(&e->kc, o->kubeconfig, err)
				   : kube_config_in_cluster(&e->kc, o->sa_dir, err)) != 0 ||
	    kube_global_init(err) != 0)
		goto fail;
	/* The thread takes no signals: SIGTERM must reach the thread that drains (watchcache.c says why). */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&e->thread, NULL, run, e);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		error_set(err, ERROR_SYSTEM, "refusal events: cannot start their thread");
		goto fail;
	}
	e->started = 1;
	return e;
fail:
	events_free(e);
	return NULL;
}

int events_metrics(const struct events *e, char **text, size_t *len, struct error *err)
{
	/* *text is malloc'd with room for its NUL: a strbuf may own it while it grows. */
	struct strbuf sb = { *text, *len, *len + 1, 0, STRBUF_OK };
	size_t i;

	strbuf_addstr(&sb, "# HELP gpu_admission_refusal_events_total refusals of an UPDATE published as a Warning "
			   "Event (serve --refusal-events), by result (repeat: the same message on the same object "
			   "within 10 minutes; dropped: the queue was full; failed: the API server refused it)\n"
			   "# TYPE gpu_admission_refusal_events_total counter\n");
	for (i = 0; i < EV_RESULTS; i++)
		strbuf_addf(&sb, "gpu_admission_refusal_events_total{result=\"%s\"} %llu\n", events_result_names[i],
			    (unsigned long long)atomic_load(&e->counts[i]));
	if (sb.failed != STRBUF_OK) {
		/* Nothing was added past the first failure, and the buffer may have moved: keep what it holds. */
		sb.buf[*len] = '\0';
		*text = sb.buf;
		error_set(err, ERROR_NOMEM, "out of memory rendering metrics");
		return -1;
	}
	*text = strbuf_detach(&sb, len);
	return 0;
}
