/* claims: the webhook's DRA claim lookups over watch caches of the API. See claims.h. */
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "webhook/claims.h"

#include "base/array.h"

/* The collections watched, in the metrics' order. */
static const struct {
	const char *resource, *kind;
} claims_kinds[CLAIMS_CACHES] = {
	{ "resourceclaimtemplates", "ResourceClaimTemplate" },
	{ "resourceclaims", "ResourceClaim" },
	{ "deviceclasses", "DeviceClass" },
};
enum { C_TEMPLATES = 0, C_CLAIMS, C_CLASSES };

/* What a lookup found, as the metric's result label. */
static const char *const claims_results[3] = { "cold", "not_found", "found" };

/* A rendering of every metric: a few lines per cache; bounded so it is one allocation. */
#define CLAIMS_METRICS_MAX 8192

struct claims {
	struct kube_config kc;
	struct watchcache *w[CLAIMS_CACHES];
	atomic_ullong lookups[3];   /* by WATCHCACHE_* + 1 */
};

void claims_free(struct claims *c)
{
	size_t i;

	if (c == NULL)
		return;
	for (i = 0; i < CLAIMS_CACHES; i++)
		watchcache_free(c->w[i]);
	kube_config_free(&c->kc);
	free(c);
}

struct claims *claims_start(const struct claims_options *o, struct error *err)
{
	struct claims *c = calloc(1, sizeof *c);
	char path[KUBE_PATH_MAX];
	size_t i;

	if (c == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	if ((o->kubeconfig != NULL ? kube_config_load(&c->kc, o->kubeconfig, err)
				   : kube_config_in_cluster(&c->kc, o->sa_dir, err)) != 0 ||
	    kube_global_init(err) != 0) {
		free(c);
		return NULL;
	}
	for (i = 0; i < CLAIMS_CACHES; i++) {
		struct watchcache_options wo = { 0 };

		snprintf(path, sizeof path, "/apis/%s/%s", CLAIMS_API_VERSION, claims_kinds[i].resource);
		wo.name = claims_kinds[i].resource;
		wo.path = path;
		wo.api_version = CLAIMS_API_VERSION;
		wo.kind = claims_kinds[i].kind;
		wo.max_objects = o->max_objects;
		wo.max_object_bytes = o->max_object_bytes;
		if ((c->w[i] = watchcache_new(&c->kc, &wo, err)) == NULL || watchcache_start(c->w[i], err) != 0) {
			claims_free(c);
			return NULL;
		}
	}
	return c;
}

static enum policy_claim_state find(void *ctx, const char *ns, enum policy_claim_source src, const char *name,
				    const json_t **obj)
{
	struct claims_review *cr = ctx;
	struct watchcache *w = cr->c->w[src == POLICY_CLAIM_FROM_CLAIM ? C_CLAIMS : C_TEMPLATES];
	json_t *o = NULL;
	enum watchcache_found f = watchcache_get(w, ns, name, &o);

	atomic_fetch_add(&cr->c->lookups[f + 1], 1);
	*obj = NULL;
	if (f == WATCHCACHE_MISSING)
		return POLICY_CLAIM_UNKNOWN_NOT_FOUND;
	/* Cold because the API server answers 404: say so, for waiting will not sync it. */
	if (f == WATCHCACHE_COLD && watchcache_not_served(w))
		return POLICY_CLAIM_UNKNOWN_NOT_SERVED;
	/* Cold; or found but out of memory to parse or hold it: cannot tell either way. */
	if (f == WATCHCACHE_COLD || o == NULL || (cr->held == NULL && (cr->held = json_array()) == NULL) ||
	    json_array_append_new(cr->held, o) != 0) {
		if (cr->held == NULL)
			json_decref(o);
		return POLICY_CLAIM_UNKNOWN_COLD;
	}
	*obj = o;
	return POLICY_CLAIM_RESOLVED;
}

void claims_review_begin(struct claims *c, struct claims_review *cr, struct policy_claim_lookup *lk)
{
	cr->c = c;
	cr->held = NULL;
	lk->fn = find;
	lk->ctx = cr;
}

void claims_review_end(struct claims_review *cr)
{
	json_decref(cr->held);
	cr->held = NULL;
}

int claims_synced(const struct claims *c)
{
	size_t i;

	for (i = 0; i < CLAIMS_CACHES; i++)
		if (!watchcache_synced(c->w[i]))
			return 0;
	return 1;
}

/* A cache's stats as counters of one width, so that family() reads any of them by offset. */
struct claims_row {
	unsigned long long synced, watching, objects, lists, relists, errors, refused, events;
};

/* One family: its HELP and TYPE, then a line per cache with the field at offset field of its row. */
static size_t family(char *buf, size_t cap, const struct claims_row *rows, const char *name, const char *type,
		     const char *help, size_t field)
{
	size_t n = (size_t)snprintf(buf, cap, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type), i;

	for (i = 0; i < CLAIMS_CACHES && n < cap; i++) {
		unsigned long long v;

		memcpy(&v, (const char *)&rows[i] + field, sizeof v);
		n += (size_t)snprintf(buf + n, cap - n, "%s{resource=\"%s\"} %llu\n", name, claims_kinds[i].resource, v);
	}
	return n < cap ? n : cap;
}

int claims_metrics(const struct claims *c, char **text, size_t *len, struct error *err)
{
	struct claims_row rows[CLAIMS_CACHES];
	struct watchcache_stats st;
	char *buf = malloc(CLAIMS_METRICS_MAX), *t;
	size_t n = 0, i, cap;  /* array_resize()'s count: the text is sized exactly, its caller keeps none */

	if (buf == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory rendering metrics");
		return -1;
	}
	for (i = 0; i < CLAIMS_CACHES; i++) {
		watchcache_stats(c->w[i], &st);
		rows[i] = (struct claims_row){ (unsigned long long)st.synced, (unsigned long long)st.watching, st.objects,
					       st.lists, st.relists, st.errors, st.refused, st.events };
	}
#define FAMILY(f, name, type, help) \
	n += family(buf + n, CLAIMS_METRICS_MAX - n, rows, \
		    "gpu_admission_claim_cache_" name, type, help, offsetof(struct claims_row, f))
	FAMILY(synced, "synced", "gauge", "1 once the cache of the DRA objects listed has synced (claim lookups answer)");
	FAMILY(watching, "watching", "gauge", "1 while the cache's watch of the API server is open");
	FAMILY(objects, "objects", "gauge", "objects the cache holds");
	FAMILY(lists, "lists_total", "counter", "complete lists of the collection");
	FAMILY(relists, "relists_total", "counter", "lists again after 410 Gone (the watch's resourceVersion expired)");
	FAMILY(errors, "errors_total", "counter", "failed lists and watches, each followed by a backoff");
	FAMILY(refused, "refused_total", "counter", "objects over the cache's limits, not kept");
	FAMILY(events, "events_total", "counter", "watch events applied");
#undef FAMILY
	n += (size_t)snprintf(buf + n, CLAIMS_METRICS_MAX - n,
			      "# HELP gpu_admission_claim_lookups_total lookups of a pod's DRA claims by result "
			      "(cold: the cache had not synced, the claim was judged unknown)\n"
			      "# TYPE gpu_admission_claim_lookups_total counter\n");
	for (i = 0; i < 3 && n < CLAIMS_METRICS_MAX; i++)
		n += (size_t)snprintf(buf + n, CLAIMS_METRICS_MAX - n, "gpu_admission_claim_lookups_total{result=\"%s\"} %llu\n",
				      claims_results[i], (unsigned long long)atomic_load(&c->lookups[i]));
	if (n >= CLAIMS_METRICS_MAX)
		n = CLAIMS_METRICS_MAX - 1;
	if ((t = array_resize(*text, &cap, *len + n + 1, 1)) == NULL) {
		free(buf);
		error_set(err, ERROR_NOMEM, "out of memory rendering metrics");
		return -1;
	}
	memcpy(t + *len, buf, n);
	*len += n;
	t[*len] = '\0';
	*text = t;
	free(buf);
	return 0;
}
