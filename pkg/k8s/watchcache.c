/*
 * watchcache: list + watch of one resource type into a store. See watchcache.h.
 */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/log.h"
#include "base/stopper.h"
#include "k8s/watchcache.h"

struct watchcache {
	char name[WATCHCACHE_NAME_MAX], api_version[WATCHCACHE_NAME_MAX], kind[WATCHCACHE_NAME_MAX];
	char path[KUBE_PATH_MAX];
	size_t max_objects, max_object_bytes;
	unsigned backoff_min_ms, backoff_max_ms, watch_timeout_s;
	const struct kube_config *kc;
	struct watchcache_sink sink; /* sink.event NULL: keep a store */
	struct scan_shape event_object[3]; /* a shaped sink's members of a watch event's object */

	pthread_rwlock_t lock;      /* guards store */
	json_t *store;              /* "ns/name" -> object */

	/* The thread's own. */
	char rv[KUBE_RV_MAX];
	json_t *next;               /* the store a list is building */
	uint32_t rnd;
	struct error err;           /* a callback's error */

	atomic_int synced, watching;
	atomic_int not_served;      /* the last list was answered 404: the API serves no such collection */
	struct stopper stopper;     /* the thread's stop, and its backoff's sleeps */
	atomic_size_t objects;
	atomic_ullong lists, relists, errors, refused, events;

	pthread_t thread;
	int started;
};

/* What a watch callback answers besides 0 (go on). */
#define WC_GONE 2               /* 410: list again */
/* A watch that ends sooner than this without an event is counted as a failure (no tight loop). */
#define WATCHCACHE_QUICK_END_S 2

unsigned watchcache_backoff_ms(unsigned attempt, unsigned min_ms, unsigned max_ms, uint32_t rnd)
{
	unsigned long long base = min_ms ? min_ms : 1;
	unsigned half;

	while (attempt-- > 0 && base < max_ms)
		base *= 2;
	if (base > max_ms)
		base = max_ms;
	half = (unsigned)(base / 2);
	return half + (unsigned)(rnd % ((unsigned)base - half + 1));
}

/* xorshift32: the jitter's randomness (not a secret; seeded per cache). */
static uint32_t next_rnd(struct watchcache *w)
{
	uint32_t x = w->rnd;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return w->rnd = x ? x : 0x9e3779b9u;
}

struct watchcache *watchcache_new(const struct kube_config *kc, const struct watchcache_options *o,
				  struct error *err)
{
	struct watchcache *w = calloc(1, sizeof *w);

	if (w == NULL || (w->store = json_object()) == NULL) {
		free(w);
		error_set(err, ERROR_NOMEM, "out of memory making a cache");
		return NULL;
	}
	snprintf(w->name, sizeof w->name, "%s", o->name ? o->name : "");
	snprintf(w->path, sizeof w->path, "%s", o->path ? o->path : "");
	snprintf(w->api_version, sizeof w->api_version, "%s", o->api_version ? o->api_version : "");
	snprintf(w->kind, sizeof w->kind, "%s", o->kind ? o->kind : "");
	w->max_objects = o->max_objects ? o->max_objects : WATCHCACHE_MAX_OBJECTS;
	w->max_object_bytes = o->max_object_bytes ? o->max_object_bytes : WATCHCACHE_MAX_OBJECT_BYTES;
	if (w->max_object_bytes > LIMIT_KUBE_WATCH_LINE_MAX)
		w->max_object_bytes = LIMIT_KUBE_WATCH_LINE_MAX;
	w->backoff_min_ms = o->backoff_min_ms ? o->backoff_min_ms : WATCHCACHE_BACKOFF_MIN_MS;
	w->backoff_max_ms = o->backoff_max_ms ? o->backoff_max_ms : WATCHCACHE_BACKOFF_MAX_MS;
	w->watch_timeout_s = o->watch_timeout_s ? o->watch_timeout_s : WATCHCACHE_WATCH_TIMEOUT_S;
	w->kc = kc;
	if (o->sink != NULL)
		w->sink = *o->sink;
	if (w->sink.event != NULL && w->sink.shape != NULL) {
		/* A watch's ERROR is a Status: its code (410: list again) and message, beside the sink's members. */
		w->event_object[0] = (struct scan_shape){ "code", SCAN_WHOLE, NULL };
		w->event_object[1] = (struct scan_shape){ "message", SCAN_WHOLE, NULL };
		w->event_object[2] = (struct scan_shape){ NULL, SCAN_ALSO, w->sink.shape };
	}
	w->rnd = (uint32_t)time(NULL) ^ (uint32_t)getpid() ^ (uint32_t)(uintptr_t)w;
	pthread_rwlock_init(&w->lock, NULL);
	stopper_init(&w->stopper);
	return w;
}

void watchcache_free(struct watchcache *w)
{
	if (w == NULL)
		return;
	if (w->started) {
		stopper_stop(&w->stopper);
		pthread_join(w->thread, NULL);
	}
	json_decref(w->store);
	json_decref(w->next);
	pthread_rwlock_destroy(&w->lock);
	stopper_destroy(&w->stopper);
	free(w);
}

void watchcache_stats(const struct watchcache *w, struct watchcache_stats *s)
{
	s->synced = atomic_load(&w->synced);
	s->watching = atomic_load(&w->watching);
	s->objects = atomic_load(&w->objects);
	s->lists = atomic_load(&w->lists);
	s->relists = atomic_load(&w->relists);
	s->errors = atomic_load(&w->errors);
	s->refused = atomic_load(&w->refused);
	s->events = atomic_load(&w->events);
	s->not_served = atomic_load(&w->not_served);
}

int watchcache_synced(const struct watchcache *w)
{
	return atomic_load(&w->synced);
}

int watchcache_not_served(const struct watchcache *w)
{
	return atomic_load(&w->not_served);
}

const char *watchcache_name(const struct watchcache *w)
{
	return w->name;
}

/* "ns/name" of ns and name into key[WATCHCACHE_KEY_MAX]; -1 when it does not fit. */
static int make_key(char *key, const char *ns, const char *name)
{
	int n = snprintf(key, WATCHCACHE_KEY_MAX, "%s/%s", ns ? ns : "", name);

	return n < 0 || n >= WATCHCACHE_KEY_MAX ? -1 : 0;
}

/* The key of obj (borrowed) from its metadata; -1 when it has no name or the key does not fit. */
static int key_of(const json_t *obj, char *key)
{
	const json_t *md = json_object_get(obj, "metadata");
	const char *name = json_string_value(json_object_get(md, "name"));

	if (name == NULL)
		return -1;
	return make_key(key, json_string_value(json_object_get(md, "namespace")), name);
}

enum watchcache_found watchcache_get(struct watchcache *w, const char *ns, const char *name, json_t **obj)
{
	char key[WATCHCACHE_KEY_MAX];
	json_t *text;

	*obj = NULL;
	if (!atomic_load(&w->synced))
		return WATCHCACHE_COLD;
	if (make_key(key, ns, name) != 0)
		return WATCHCACHE_MISSING;
	pthread_rwlock_rdlock(&w->lock);
	text = json_object_get(w->store, key);
	if (text != NULL)
		*obj = json_loadb(json_string_value(text), json_string_length(text), 0, NULL);
	pthread_rwlock_unlock(&w->lock);
	return text != NULL ? WATCHCACHE_FOUND : WATCHCACHE_MISSING;
}

/*
 * Puts obj (borrowed) into store under its key, within the limits: 0 kept,
 * 1 refused (counted; an older version under the key is dropped), -1 no memory.
 * Kept as its compact JSON text, parsed again on each lookup: a ResourceClaim of
 * 1 KiB costs ~10 KiB as jansson values and ~1.2 KiB as text, and a lookup
 * parses a few hundred bytes where it would have deep-copied as many values.
 */
static int put(struct watchcache *w, json_t *store, json_t *obj, size_t bytes, int locked)
{
	char key[WATCHCACHE_KEY_MAX], *text = NULL;
	int rc = 0, have;

	if (key_of(obj, key) != 0) {
		atomic_fetch_add(&w->refused, 1);
		return 1;
	}
	/* Nobody reads who wrote which field, and it is often most of an object (client-go's informers strip it too). */
	json_object_del(json_object_get(obj, "metadata"), "managedFields");
	if ((w->api_version[0] && json_object_get(obj, "apiVersion") == NULL &&
	     json_object_set_new(obj, "apiVersion", json_string(w->api_version)) != 0) ||
	    (w->kind[0] && json_object_get(obj, "kind") == NULL && json_object_set_new(obj, "kind", json_string(w->kind)) != 0))
		return -1;
	if (bytes <= w->max_object_bytes && (text = json_dumps(obj, JSON_COMPACT)) == NULL)
		return -1;
	if (locked)
		pthread_rwlock_wrlock(&w->lock);
	have = json_object_get(store, key) != NULL;
	if (bytes > w->max_object_bytes || (!have && json_object_size(store) >= w->max_objects)) {
		if (have)
			json_object_del(store, key);
		atomic_fetch_add(&w->refused, 1);
		rc = 1;
	} else if (json_object_set_new(store, key, json_stringn_nocheck(text, strlen(text))) != 0) {
		rc = -1;
	}
	free(text);
	if (locked) {
		atomic_store(&w->objects, json_object_size(store));
		pthread_rwlock_unlock(&w->lock);
	}
	return rc;
}

static void note_rv(struct watchcache *w, const json_t *obj)
{
	const char *rv = json_string_value(json_object_get(json_object_get(obj, "metadata"), "resourceVersion"));

	if (rv != NULL && strlen(rv) < sizeof w->rv)
		snprintf(w->rv, sizeof w->rv, "%s", rv);
}

/* One object to the sink (a bigger one as "DELETED"): 0, or -1 with w->err. */
static int to_sink(struct watchcache *w, const char *type, json_t *obj, size_t bytes)
{
	int rc, over = bytes > w->max_object_bytes && strcmp(type, "DELETED") != 0;

	rc = w->sink.event(w->sink.ctx, over ? "DELETED" : type, obj, bytes);
	if (rc < 0) {
		if (w->err.kind == ERROR_NONE)
			error_set(&w->err, ERROR_NOMEM, "%s: the sink failed", w->name);
		return -1;
	}
	if (rc > 0 || over)
		atomic_fetch_add(&w->refused, 1);
	return 0;
}

/* One event into the store (or the sink): 0, WC_GONE, or -1 with w->err. */
static int apply(struct watchcache *w, const char *type, json_t *obj, size_t bytes)
{
	char key[WATCHCACHE_KEY_MAX];

	if (type == NULL) {
		/* An event over the line limit: which object it was is unknown (see the header). */
		atomic_fetch_add(&w->refused, 1);
		return 0;
	}
	if (strcmp(type, "ERROR") == 0) {
		json_int_t code = json_integer_value(json_object_get(obj, "code"));
		const char *msg = json_string_value(json_object_get(obj, "message"));

		if (code == 410)
			return WC_GONE;
		error_set(&w->err, ERROR_UNAVAILABLE, "%s: watch error %lld: %s", w->name, (long long)code,
			  msg ? msg : "(no message)");
		return -1;
	}
	if (!json_is_object(obj)) {
		error_set(&w->err, ERROR_INPUT, "%s: a watch event without an object", w->name);
		return -1;
	}
	note_rv(w, obj);
	atomic_fetch_add(&w->events, 1);
	if (strcmp(type, "BOOKMARK") == 0)
		return 0;
	if (w->sink.event != NULL)
		return strcmp(type, "ADDED") == 0 || strcmp(type, "MODIFIED") == 0 || strcmp(type, "DELETED") == 0 ?
			to_sink(w, type, obj, bytes) : 0;
	if (strcmp(type, "DELETED") == 0) {
		if (key_of(obj, key) == 0) {
			pthread_rwlock_wrlock(&w->lock);
			json_object_del(w->store, key);
			atomic_store(&w->objects, json_object_size(w->store));
			pthread_rwlock_unlock(&w->lock);
		}
		return 0;
	}
	if (strcmp(type, "ADDED") != 0 && strcmp(type, "MODIFIED") != 0)
		return 0;  /* a type this version does not know: skipped, as client-go logs and skips */
	if (put(w, w->store, obj, bytes, 1) < 0) {
		error_set(&w->err, ERROR_NOMEM, "%s: out of memory", w->name);
		return -1;
	}
	return 0;
}

int watchcache_apply(struct watchcache *w, const char *type, json_t *obj, size_t bytes, struct error *err)
{
	int rc;

	error_clear(&w->err);
	if (type != NULL && strcmp(type, "BOOKMARK") != 0 && strcmp(type, "ERROR") != 0 && json_is_object(obj)) {
		char key[WATCHCACHE_KEY_MAX];

		if (key_of(obj, key) != 0) {
			error_set(err, ERROR_INPUT, "%s: an object without a name", w->name);
			return -1;
		}
	}
	rc = apply(w, type, obj, bytes);
	atomic_store(&w->synced, 1);
	if (rc < 0) {
		*err = w->err;
		return -1;
	}
	return 0;
}

/* ==== The thread ==== */

static int on_item(void *ctx, json_t *item)
{
	struct watchcache *w = ctx;
	size_t bytes;

	if (w->sink.event != NULL && w->sink.shape != NULL)
		return to_sink(w, "ADDED", item, 0);  /* its size unknown: see the header */
	bytes = json_dumpb(item, NULL, 0, JSON_COMPACT);
	if (w->sink.event != NULL)
		return to_sink(w, "ADDED", item, bytes);
	if (put(w, w->next, item, bytes, 0) < 0) {
		error_set(&w->err, ERROR_NOMEM, "%s: out of memory", w->name);
		return -1;
	}
	return 0;
}

/* A list done: its resourceVersion is where the watch starts. */
static int listed(struct watchcache *w, const char *rv)
{
	snprintf(w->rv, sizeof w->rv, "%s", rv);
	atomic_fetch_add(&w->lists, 1);
	if (!atomic_exchange(&w->synced, 1))
		log_msg(LOG_LEVEL_INFO, "cache synced", "cache", w->name, "resourceVersion", w->rv, LOG_END);
	return 0;
}

/* A whole list to the sink, between list_begin and list_end. */
static int list_to_sink(struct watchcache *w, struct kube_client *k, struct error *err)
{
	char rv[KUBE_RV_MAX];
	long status;
	int rc;

	error_clear(&w->err);
	if (w->sink.list_begin != NULL && w->sink.list_begin(w->sink.ctx) != 0) {
		error_set(err, ERROR_NOMEM, "%s: the sink cannot start a list", w->name);
		return -1;
	}
	rc = kube_list_shaped(k, w->path, w->sink.shape, on_item, w, rv, sizeof rv, &status, err);
	atomic_store(&w->not_served, rc != 0 && status == 404);
	if (rc != 0 && w->err.kind != ERROR_NONE)
		*err = w->err;
	if (w->sink.list_end != NULL && w->sink.list_end(w->sink.ctx, rc == 0) != 0 && rc == 0) {
		error_set(err, ERROR_NOMEM, "%s: the sink cannot end a list", w->name);
		rc = -1;
	}
	return rc != 0 ? -1 : listed(w, rv);
}

/* A whole list into a new store, then swapped in: lookups see the old one until then. */
static int list_all(struct watchcache *w, struct kube_client *k, struct error *err)
{
	char rv[KUBE_RV_MAX];
	json_t *old;
	long status;
	int rc;

	if (w->sink.event != NULL)
		return list_to_sink(w, k, err);
	json_decref(w->next);
	if ((w->next = json_object()) == NULL) {
		error_set(err, ERROR_NOMEM, "%s: out of memory", w->name);
		return -1;
	}
	error_clear(&w->err);
	rc = kube_list(k, w->path, on_item, w, rv, sizeof rv, &status, err);
	atomic_store(&w->not_served, rc != 0 && status == 404);
	if (rc != 0) {
		if (w->err.kind != ERROR_NONE)
			*err = w->err;
		json_decref(w->next);
		w->next = NULL;
		return -1;
	}
	pthread_rwlock_wrlock(&w->lock);
	old = w->store;
	w->store = w->next;
	atomic_store(&w->objects, json_object_size(w->store));
	pthread_rwlock_unlock(&w->lock);
	w->next = NULL;
	json_decref(old);
	return listed(w, rv);
}

static int on_event(void *ctx, const char *type, json_t *object, size_t bytes)
{
	struct watchcache *w = ctx;

	if (type != NULL && type[0] == '\0') {
		error_set(&w->err, ERROR_INPUT, "%s: a watch event that is not JSON", w->name);
		return -1;
	}
	return apply(w, type, object, bytes);
}

/* One watch from w->rv: 0 (the server ended it), WC_GONE, or -1 with err. *got: events came. */
static int watch_once(struct watchcache *w, struct kube_client *k, unsigned long long *got, struct error *err)
{
	unsigned long long before = atomic_load(&w->events);
	long status = 0;
	int rc;

	error_clear(&w->err);
	atomic_store(&w->watching, 1);
	rc = kube_watch_shaped(k, w->path, w->rv, w->watch_timeout_s, w->max_object_bytes + KUBE_ERROR_BODY_MAX,
			       w->event_object[2].children != NULL ? w->event_object : NULL, on_event, w, &status, err);
	atomic_store(&w->watching, 0);
	*got = atomic_load(&w->events) - before;
	if (rc == -1 && status == 410)
		return WC_GONE;
	if (rc == -1 && w->err.kind != ERROR_NONE)
		*err = w->err;
	return rc;
}

/* A failure: counted, logged, then the backoff. */
static void failed(struct watchcache *w, unsigned *attempt, const char *what, const struct error *err)
{
	unsigned ms;
	char wait[32];

	if (stopper_stopped(&w->stopper))
		return;
	atomic_fetch_add(&w->errors, 1);
	ms = watchcache_backoff_ms(*attempt, w->backoff_min_ms, w->backoff_max_ms, next_rnd(w));
	if (*attempt < 32)
		(*attempt)++;
	snprintf(wait, sizeof wait, "%u", ms);
	log_msg(LOG_LEVEL_WARN, what, "cache", w->name, "error", err->msg, "retry_ms", wait, LOG_END);
	stopper_nap(&w->stopper, ms);
}

static void *run(void *arg)
{
	struct watchcache *w = arg;
	struct error err = { 0 };
	struct kube_client *k = kube_client_new(w->kc, &w->stopper.stop, &err);
	unsigned attempt = 0;
	unsigned long long got;
	struct timespec t0, t1;
	int need_list = 1, rc;

	while (k != NULL && !stopper_stopped(&w->stopper)) {
		error_clear(&err);
		if (need_list) {
			if (list_all(w, k, &err) != 0) {
				failed(w, &attempt, "cache list failed", &err);
				continue;
			}
			need_list = 0;
		}
		clock_gettime(CLOCK_MONOTONIC, &t0);
		rc = watch_once(w, k, &got, &err);
		clock_gettime(CLOCK_MONOTONIC, &t1);
		if (rc == WC_GONE) {
			atomic_fetch_add(&w->relists, 1);
			log_msg(LOG_LEVEL_INFO, "cache relist: resourceVersion too old", "cache", w->name, LOG_END);
			need_list = 1;
		} else if (rc != 0) {
			failed(w, &attempt, "cache watch failed", &err);
		} else if (got == 0 && t1.tv_sec - t0.tv_sec < WATCHCACHE_QUICK_END_S) {
			/* Ended at once with nothing: not a healthy watch (a server going down). Wait as after a failure. */
			error_set(&err, ERROR_UNAVAILABLE, "the watch ended without an event");
			failed(w, &attempt, "cache watch ended", &err);
		} else {
			attempt = 0;
		}
	}
	if (k == NULL)
		log_msg(LOG_LEVEL_ERROR, "cache cannot start", "cache", w->name, "error", err.msg, LOG_END);
	kube_client_free(k);
	return NULL;
}

int watchcache_start(struct watchcache *w, struct error *err)
{
	sigset_t all, old;
	int rc;

	if (w->kc == NULL || w->started) {
		error_set(err, ERROR_INTERNAL, "%s: no API configuration, or started already", w->name);
		return -1;
	}
	/*
	 * The thread takes no signals: a process-directed SIGTERM must reach the
	 * thread that waits for it (serve's drain), never end the process here.
	 */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	rc = pthread_create(&w->thread, NULL, run, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0) {
		error_set(err, ERROR_SYSTEM, "%s: cannot start its thread", w->name);
		return -1;
	}
	w->started = 1;
	return 0;
}
