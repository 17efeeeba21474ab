/*
 * watchcache: one resource type of the API kept in memory, namespace/name
 * -> object, by LIST then WATCH in a thread of its own, as client-go's
 * reflector keeps an informer's store.
 *
 * The thread lists the collection (paged), then watches it from the list's
 * resourceVersion with bookmarks, applying each event; a watch the server
 * ends is resumed from the last resourceVersion seen; 410 Gone (that
 * version is no longer in etcd's window) means listing again ("relist");
 * any other failure waits an exponential backoff with jitter, then resumes.
 *
 * Objects are kept without metadata.managedFields (client-go's
 * TransformStripManagedFields does the same for informers): nobody here
 * reads it, and it is often most of an object.
 *
 * Each object is kept as its compact JSON text (about its size on the
 * wire; as jansson values it would take ten times that) and parsed again
 * for each lookup.
 *
 * With a sink (struct watchcache_sink) the cache keeps no store: each
 * object is handed to the sink as it arrives, a list between list_begin and
 * list_end, so that a consumer with its own, smaller state (the live cost
 * report's model) is fed by this one list + watch loop. Lookups then find
 * nothing; the thread, its relists and backoff and the stats are the same.
 *
 * Memory is bounded: at most max_objects objects of at most
 * max_object_bytes each (as their watch event line). Beyond either, an
 * object is refused and counted, never kept, and an object whose new
 * version is refused is forgotten rather than kept stale: the cache may say
 * "unknown", never something outdated. While a relist runs, the old store
 * stays in service, so the bound is twice the above for that time.
 *
 * "Synced" is set by the first complete list and then stays: after it, the
 * store answers from what it last saw (client-go's HasSynced works the same
 * way) while the thread reconnects; "watching" says whether a watch stream
 * is open now. Lookups take a read lock and one hash lookup (jansson's
 * seeded hash: the keys come from the cluster's users).
 */
#ifndef GPU_ADMISSION_WATCHCACHE_H
#define GPU_ADMISSION_WATCHCACHE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "base/error.h"
#include "base/limit.h"
#include "k8s/kubeclient.h"

#define WATCHCACHE_MAX_OBJECTS 100000u          /* default max_objects */
#define WATCHCACHE_MAX_OBJECT_BYTES (64u * 1024) /* default max_object_bytes */
#define WATCHCACHE_BACKOFF_MIN_MS 500u
#define WATCHCACHE_BACKOFF_MAX_MS 30000u
/*
 * The timeoutSeconds a watch asks for. client-go picks 5 to 10 minutes at
 * random (reflector.go, minWatchTimeout) so that watches do not all end at
 * once; one cache per type here, so a fixed value does.
 */
#define WATCHCACHE_WATCH_TIMEOUT_S 300u
/* "namespace/name": a DNS label, '/', a DNS subdomain. */
#define WATCHCACHE_KEY_MAX (KUBE_NAMESPACE_MAX + 1 + 253 + 1)
#define WATCHCACHE_NAME_MAX 64          /* a cache's name, an apiVersion, a kind */

/*
 * Where a storeless cache's objects go (all called on the cache's thread;
 * obj borrowed for the call, without apiVersion and kind when it came from a
 * list). list_begin: a list starts; list_end(complete): it ended, and when
 * complete every object it did not hand over is gone (a relist after 410
 * must forget what was deleted meanwhile). event: type "ADDED" (each list
 * item too), "MODIFIED" or "DELETED"; an object over max_object_bytes comes
 * as "DELETED" (forgotten rather than kept stale) and is counted refused.
 * Each returns 0, 1 when it refused the object (counted), or -1 to fail
 * the list or watch (retried after a backoff; a failed list ends with
 * list_end(0)).
 *
 * shape (NULL: whole objects): the members event reads. Objects are then
 * decoded by the scanner with only these members (kube_list_shaped(),
 * kube_watch_shaped()): at 150,000 pods, building every value of every pod
 * (managedFields, env, probes) to read a few dozen of them was most of the
 * watch's CPU. It must keep metadata.resourceVersion (a resumed watch starts
 * from it); the cache adds code and message (a watch's ERROR). A list item
 * then comes with bytes 0 and is never refused for its size (its page was
 * bounded by KUBE_BODY_MAX), and, where the scanner is unsure of a page or
 * an event, whole.
 */
struct watchcache_sink {
	void *ctx;
	int (*list_begin)(void *ctx);
	int (*list_end)(void *ctx, int complete);
	int (*event)(void *ctx, const char *type, json_t *obj, size_t bytes);
	const struct scan_shape *shape;
};

struct watchcache_options {
	const char *name;           /* for logs: "resourceclaims" */
	const char *path;           /* the collection: "/apis/resource.k8s.io/v1/resourceclaims" */
	const char *api_version;    /* "resource.k8s.io/v1": set on every object kept (a LIST's */
	const char *kind;           /* items carry neither), so a lookup gets a whole object */
	size_t max_objects;         /* 0: WATCHCACHE_MAX_OBJECTS (the store's; a sink bounds its own) */
	size_t max_object_bytes;    /* 0: WATCHCACHE_MAX_OBJECT_BYTES; at most LIMIT_KUBE_WATCH_LINE_MAX */
	unsigned backoff_min_ms;    /* 0: WATCHCACHE_BACKOFF_MIN_MS */
	unsigned backoff_max_ms;    /* 0: WATCHCACHE_BACKOFF_MAX_MS */
	unsigned watch_timeout_s;   /* 0: WATCHCACHE_WATCH_TIMEOUT_S */
	const struct watchcache_sink *sink; /* borrowed (must outlive the cache); NULL: keep a store */
};

struct watchcache_stats {
	int synced;                 /* a first list completed */
	int watching;               /* a watch stream is open */
	size_t objects;
	unsigned long long lists;   /* complete lists (the first included) */
	unsigned long long relists; /* lists after 410 Gone */
	unsigned long long errors;  /* failed lists and watches, each followed by a backoff */
	unsigned long long refused; /* objects over a limit, not kept */
	unsigned long long events;  /* watch events applied */
	int not_served;             /* the last list was answered 404 Not Found */
};

struct watchcache;

/*
 * New: an empty, cold cache of o's collection (o and its strings are
 * copied), reading through kc (borrowed: must outlive the cache; NULL for a
 * cache fed only by watchcache_apply(), in tests). Nothing runs until
 * watchcache_start(). NULL with err.
 */
struct watchcache *watchcache_new(const struct kube_config *kc, const struct watchcache_options *o,
				  struct error *err);

/* Starts the list-and-watch thread. 0, or -1 with err. */
int watchcache_start(struct watchcache *w, struct error *err);

/* Stops the thread (within about a second) and frees w. Accepts NULL. */
void watchcache_free(struct watchcache *w);

void watchcache_stats(const struct watchcache *w, struct watchcache_stats *s);
int watchcache_synced(const struct watchcache *w);

/*
 * Whether the last list was answered 404 Not Found: the API server does not
 * serve the collection (its group or version is not enabled), as opposed to
 * one it cannot reach. Cleared by a list that succeeds; the cache keeps
 * retrying, after its backoff, in case the API is enabled later.
 */
int watchcache_not_served(const struct watchcache *w);
const char *watchcache_name(const struct watchcache *w);

/* What a lookup found. */
enum watchcache_found {
	WATCHCACHE_COLD = -1,       /* never synced: the cache knows nothing yet */
	WATCHCACHE_MISSING = 0,
	WATCHCACHE_FOUND = 1
};

/*
 * Looks ns/name up (ns "" for a cluster-scoped object): *obj gets the
 * object (new reference, parsed with jansson's allocator of the calling thread)
 * when found, else NULL. Returns what it found; WATCHCACHE_FOUND with *obj
 * NULL means the parse ran out of memory.
 */
enum watchcache_found watchcache_get(struct watchcache *w, const char *ns, const char *name, json_t **obj);

/*
 * Applies one watch event (type "ADDED", "MODIFIED", "DELETED",
 * "BOOKMARK"; obj borrowed; bytes its size as the event line) as the thread
 * does, and marks the cache synced: the store's semantics without a server,
 * for tests. 0, or -1 with err (ERROR_INPUT: not an object with a name).
 */
int watchcache_apply(struct watchcache *w, const char *type, json_t *obj, size_t bytes, struct error *err);

/*
 * The wait before retry number attempt (0 for the first) after a failure:
 * min_ms doubled per attempt, capped at max_ms, then "equal jitter": a
 * value in [half, whole] of it, chosen by rnd. Pure.
 */
unsigned watchcache_backoff_ms(unsigned attempt, unsigned min_ms, unsigned max_ms, uint32_t rnd);

#endif
