/*
 * report_publish: PolicyReports and Events from the report (report_publish.h).
 *
 * The builders are pure; the publisher's run asks discovery whether the CRD
 * is served, lists the reports it wrote (once, then every
 * REPORT_PUBLISH_RELIST_S: another replica or an earlier run may have
 * written some), applies each namespace's report when its body changed
 * since it last applied it, deletes those of namespaces with nothing left,
 * then writes the Events the limiter lets through.
 */
#include "report/report_publish.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"
#include "base/ratelimit.h"

#define PR_API "wgpolicyk8s.io/v1alpha2"
#define PR_GROUP_PATH "/apis/wgpolicyk8s.io/v1alpha2"
#define PR_POLICY "gpu-admission"          /* results' policy: what Policy Reporter groups by */
#define PR_CATEGORY "GPU cost"
#define PR_OMITTED_ANNOTATION "gpu-admission/omitted-results"
#define PR_NAME_MAX 253                    /* a pod's name: a DNS subdomain */
#define PR_NS_MAX 63                       /* a namespace: a DNS label */
/* An Event's name: the pod's (cut to this) '.' and 16 hex digits of its key, at most a DNS subdomain's 253. */
#define EVENT_NAME_POD_MAX (REPORT_PUBLISH_EVENT_NAME_MAX - 17)

/*
 * An Event this publisher wrote, by its key (event_key()): the count it last
 * gave it. client-go's eventLogger keeps the same (count, name) in an LRU;
 * here a direct-mapped table of event_pods_max entries, a colliding key
 * overwriting: a forgotten Event is created again, found to exist (409) and
 * its count read back, so forgetting costs a request, never a second Event.
 */
struct event_seen {
	uint64_t key;   /* 0: empty */
	long count;
};

struct report_publisher {
	struct report_publish_options o;
	struct ratelimit rl;
	struct event_seen *seen;   /* owned: event_pods_max entries when events are on */
	int crd;                   /* -1 not asked yet, 0 absent, 1 served */
	time_t crd_asked;
	json_t *written;           /* {namespace: hash of the body applied, or "" unknown}; NULL: not listed */
	time_t listed;
	struct report_publish_stats st;
};

static void *nomem(struct error *err)
{
	error_set(err, ERROR_NOMEM, "out of memory");
	return NULL;
}

/* ==== The PolicyReports (pure) ==== */

/* Per namespace while building: the report, and the counts the summary gives. */
struct ns_acc {
	json_t *report, *results;
	unsigned long fail, warn, omitted;
};

/* The namespace's report being built in all (made on first use); NULL on ENOMEM. */
static json_t *ns_report(json_t *all, const char *ns)
{
	json_t *rep = json_object_get(all, ns);

	if (rep != NULL)
		return rep;
	rep = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:[]}", "apiVersion", PR_API, "kind", "PolicyReport",
			"metadata", "name", REPORT_PUBLISH_NAME, "namespace", ns, "labels",
			"app.kubernetes.io/managed-by", REPORT_PUBLISH_MANAGED_BY, "results");
	if (rep == NULL || json_object_set_new(all, ns, rep) != 0)
		return NULL;
	return rep;
}

/*
 * Appends result to ns's report in all (stealing it), or counts it as
 * omitted beyond max; fail or warn counted either way. -1 on ENOMEM.
 */
static int add_result(json_t *all, const char *ns, json_t *result, int fail, size_t max)
{
	json_t *rep, *results, *count;
	const char *key = fail ? "fail" : "warn";

	if (result == NULL || (rep = ns_report(all, ns)) == NULL) {
		json_decref(result);
		return -1;
	}
	results = json_object_get(rep, "results");
	/* The counts ride in a scratch member, turned into the summary at the end. */
	if ((count = json_object_get(rep, "_counts")) == NULL) {
		count = json_pack("{s:I,s:I,s:I}", "fail", (json_int_t)0, "warn", (json_int_t)0, "omitted", (json_int_t)0);
		if (count == NULL || json_object_set_new(rep, "_counts", count) != 0) {
			json_decref(result);
			return -1;
		}
	}
	json_object_set_new(count, key, json_integer(json_integer_value(json_object_get(count, key)) + 1));
	if (json_array_size(results) >= max) {
		json_object_set_new(count, "omitted",
				    json_integer(json_integer_value(json_object_get(count, "omitted")) + 1));
		json_decref(result);
		return 0;
	}
	return json_array_append_new(results, result);
}

/* "toleration+nodeSelector", the routes as the text report writes them. */
static void routes_text(unsigned routes, char *buf, size_t cap)
{
	unsigned bit;
	size_t n = 0;

	buf[0] = '\0';
	for (bit = 1; bit < (1u << REPORT_NROUTES); bit <<= 1)
		if ((routes & bit) && n < cap)
			n += (size_t)snprintf(buf + n, cap - n, "%s%s", n ? "+" : "", report_route_name(bit));
	if (buf[0] == '\0')
		snprintf(buf, cap, "unknown");
}

static json_t *pod_ref(const char *ns, const char *name)
{
	return json_pack("[{s:s,s:s,s:s,s:s}]", "apiVersion", "v1", "kind", "Pod", "namespace", ns, "name", name);
}

static json_t *cpu_result(const struct report *r, const struct report_cpu_pod *c)
{
	char routes[256], msg[1024];
	const char *verdict = c->policy.would_reject ? "reject" : c->policy.exempt ? "exempt" : "admit";
	json_t *props;

	routes_text(c->routes, routes, sizeof routes);
	/* The route, then the policy's message: what to change so that the pod leaves the GPU node. */
	snprintf(msg, sizeof msg, "CPU-only pod on GPU node %s via %s%s%s%s%s%s", c->node, routes,
		 c->taint ? " (untolerated taint " : "", c->taint ? c->taint : "", c->taint ? ")" : "",
		 c->policy.message && c->policy.message[0] ? ": " : "", c->policy.message ? c->policy.message : "");
	props = json_pack("{s:s,s:s,s:s,s:s,s:s}", "node", c->node,
			  "pool", c->pool >= 0 ? r->pools[c->pool].name : "-", "routes", routes, "verdict", verdict,
			  "verdictReason", c->policy.reason ? c->policy.reason : "");
	if (props != NULL && c->owner && c->owner[0])
		json_object_set_new(props, "owner", json_string(c->owner));
	if (props != NULL && c->taint)
		json_object_set_new(props, "untoleratedTaint", json_string(c->taint));
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:s,s:o,s:o}", "policy", PR_POLICY, "rule", "cpu-pod-on-gpu-node",
			 "category", PR_CATEGORY, "severity", "medium", "result", "fail", "scored", 1, "message", msg,
			 "resources", pod_ref(c->ns, c->name), "properties", props);
}

static json_t *pending_result(const struct report_pending *p)
{
	char gpus[512];
	size_t k, n = 0;

	gpus[0] = '\0';
	for (k = 0; k < p->n_gpus && n < sizeof gpus; k++)
		n += (size_t)snprintf(gpus + n, sizeof gpus - n, "%s%s=%lld", k ? "," : "", p->gpus[k].resource,
				      p->gpus[k].count);
	return json_pack("{s:s,s:s,s:s,s:s,s:s,s:b,s:s,s:o,s:{s:s,s:s}}", "policy", PR_POLICY, "rule",
			 "gpu-pod-pending", "category", PR_CATEGORY, "severity", "low", "result", "warn", "scored", 0,
			 "message", p->message ? p->message : report_pending_name(p->reason),
			 "resources", pod_ref(p->ns, p->name), "properties", "reason", report_pending_name(p->reason),
			 "gpus", gpus);
}

/* The summary, the omitted count's result and annotation, from the scratch counts. */
static int finish_report(json_t *rep, size_t max)
{
	json_t *c = json_object_get(rep, "_counts");
	json_int_t fail = json_integer_value(json_object_get(c, "fail"));
	json_int_t warn = json_integer_value(json_object_get(c, "warn"));
	json_int_t omitted = json_integer_value(json_object_get(c, "omitted"));
	char msg[256], n[32];

	if (json_object_set_new(rep, "summary", json_pack("{s:I,s:I,s:I,s:I,s:I}", "pass", (json_int_t)0, "fail", fail,
							  "warn", warn, "error", (json_int_t)0, "skip",
							  (json_int_t)(omitted > 0))) != 0)
		return -1;
	json_object_del(rep, "_counts");
	if (omitted == 0)
		return 0;
	snprintf(msg, sizeof msg, "%lld more finding%s in this namespace not listed (at most %zu results a report)",
		 (long long)omitted, omitted == 1 ? "" : "s", max);
	snprintf(n, sizeof n, "%lld", (long long)omitted);
	if (json_object_set_new(json_object_get(rep, "metadata"), "annotations",
				json_pack("{s:s}", PR_OMITTED_ANNOTATION, n)) != 0)
		return -1;
	return json_array_append_new(json_object_get(rep, "results"),
				     json_pack("{s:s,s:s,s:s,s:s,s:s,s:{s:s}}", "policy", PR_POLICY, "rule", "results-omitted",
					       "category", PR_CATEGORY, "result", "skip", "message", msg,
					       "properties", "omitted", n));
}

json_t *report_publish_reports(const struct report *r, size_t results_max, struct error *err)
{
	json_t *all = json_object(), *rep;
	const char *ns;
	size_t i;

	if (all == NULL)
		return nomem(err);
	if (results_max == 0)
		results_max = 1;
	for (i = 0; i < r->cpu_pods.n; i++) {
		const struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);

		if (add_result(all, c->ns, cpu_result(r, c), 1, results_max) != 0)
			goto fail;
	}
	for (i = 0; i < r->pending.n; i++) {
		const struct report_pending *p = REPORT_AT(r->pending, struct report_pending, i);

		if (add_result(all, p->ns, pending_result(p), 0, results_max) != 0)
			goto fail;
	}
	json_object_foreach(all, ns, rep)
		if (finish_report(rep, results_max) != 0)
			goto fail;
	return all;
fail:
	json_decref(all);
	return nomem(err);
}

/* ==== The Events (pure) ==== */

const char *report_publish_event_reason(enum report_pending_reason reason)
{
	switch (reason) {
	case REPORT_PENDING_UNSERVED:   return "GPUResourceUnserved";
	case REPORT_PENDING_TOO_MANY:   return "GPURequestTooLarge";
	case REPORT_PENDING_SELECTOR:   return "GPUSelectorMismatch";
	case REPORT_PENDING_TOLERATION: return "GPUTolerationMissing";
	case REPORT_PENDING_FULL:       return "GPUPoolFull";
	default:                        return NULL;  /* gated on purpose, or a cause the report cannot name */
	}
}

/* s cut to at most max bytes, not inside a UTF-8 sequence, into buf[max + 1]. */
static void cut_utf8(char *buf, const char *s, size_t max)
{
	size_t n = strlen(s);

	if (n > max) {
		n = max;
		while (n > 0 && ((unsigned char)s[n] & 0xC0) == 0x80)
			n--;
	}
	memcpy(buf, s, n);
	buf[n] = '\0';
}

/* The Event's message for p into buf[REPORT_PUBLISH_MESSAGE_MAX + 1]. */
static void event_message(char *buf, const struct report_pending *p)
{
	cut_utf8(buf, p->message ? p->message : report_pending_name(p->reason), REPORT_PUBLISH_MESSAGE_MAX);
}

/* now as an RFC 3339 time in UTC into ts[cap]. */
static void rfc3339(char *ts, size_t cap, time_t now)
{
	struct tm tm;

	if (gmtime_r(&now, &tm) == NULL || strftime(ts, cap, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(ts, cap, "1970-01-01T00:00:00Z");
}

/*
 * What makes two Events one (client-go's getEventKey, tools/record/events_cache.go:
 * source, involvedObject, type, reason, message; ours has one source and one type).
 */
static uint64_t event_key(const struct report_pending *p, const char *uid, const char *reason)
{
	char msg[REPORT_PUBLISH_MESSAGE_MAX + 1], key[PR_NS_MAX + PR_NAME_MAX + 128 + 64 + sizeof msg];
	int n;

	event_message(msg, p);
	n = snprintf(key, sizeof key, "%.*s%c%.*s%c%.127s%c%s%c%s", PR_NS_MAX, p->ns, 0, PR_NAME_MAX, p->name, 0,
		     uid ? uid : "", 0, reason, 0, msg);
	return ratelimit_key(key, n > 0 && (size_t)n < sizeof key ? (size_t)n : sizeof key - 1);
}

int report_publish_event_name(const struct report_pending *p, const char *uid, char *out, size_t cap)
{
	const char *reason = report_publish_event_reason(p->reason);
	size_t keep = strlen(p->name);
	int n;

	if (reason == NULL)
		return -1;
	if (keep > EVENT_NAME_POD_MAX)
		keep = EVENT_NAME_POD_MAX;
	/* A cut name must still be a DNS subdomain: no '.' or '-' before ours. */
	while (keep > 0 && (p->name[keep - 1] == '.' || p->name[keep - 1] == '-'))
		keep--;
	n = snprintf(out, cap, "%.*s.%016llx", (int)keep, p->name, (unsigned long long)event_key(p, uid, reason));
	return n > 0 && (size_t)n < cap ? 0 : -1;
}

json_t *report_publish_event(const struct report_pending *p, const char *uid, time_t now, struct error *err)
{
	const char *reason = report_publish_event_reason(p->reason);
	char msg[REPORT_PUBLISH_MESSAGE_MAX + 1], name[REPORT_PUBLISH_EVENT_NAME_MAX + 1], ts[32];
	json_t *ev;

	if (reason == NULL || report_publish_event_name(p, uid, name, sizeof name) != 0) {
		error_set(err, ERROR_INPUT, "no Event for a pod Pending as %s", report_pending_name(p->reason));
		return NULL;
	}
	event_message(msg, p);
	rfc3339(ts, sizeof ts, now);
	ev = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:s}},s:{s:s,s:s,s:s,s:s},s:s,s:s,s:s,s:{s:s},s:s,s:s,s:i,s:s}",
		       "apiVersion", "v1", "kind", "Event",
		       "metadata", "name", name, "namespace", p->ns, "labels", "app.kubernetes.io/managed-by",
		       REPORT_PUBLISH_MANAGED_BY,
		       "involvedObject", "apiVersion", "v1", "kind", "Pod", "namespace", p->ns, "name", p->name,
		       "reason", reason, "message", msg, "type", "Warning", "source", "component", REPORT_PUBLISH_NAME,
		       "firstTimestamp", ts, "lastTimestamp", ts, "count", 1, "reportingComponent", REPORT_PUBLISH_NAME);
	if (ev == NULL)
		return nomem(err);
	if (uid != NULL && uid[0] && json_object_set_new(json_object_get(ev, "involvedObject"), "uid", json_string(uid)) != 0) {
		json_decref(ev);
		return nomem(err);
	}
	return ev;
}

/* ==== The publisher ==== */

struct report_publisher *report_publisher_new(const struct report_publish_options *o, struct error *err)
{
	struct report_publisher *p = calloc(1, sizeof *p);

	if (p == NULL)
		return nomem(err);
	p->o = *o;
	if (p->o.results_max == 0)
		p->o.results_max = REPORT_PUBLISH_RESULTS_MAX;
	if (p->o.results_max > REPORT_PUBLISH_RESULTS_LIMIT)
		p->o.results_max = REPORT_PUBLISH_RESULTS_LIMIT;
	if (p->o.event_burst == 0)
		p->o.event_burst = REPORT_PUBLISH_EVENT_BURST;
	if (p->o.event_refill_s == 0)
		p->o.event_refill_s = REPORT_PUBLISH_EVENT_REFILL_S;
	if (p->o.event_pod_s == 0)
		p->o.event_pod_s = REPORT_PUBLISH_EVENT_POD_S;
	if (p->o.event_pods_max == 0)
		p->o.event_pods_max = REPORT_PUBLISH_EVENT_PODS_MAX;
	p->crd = -1;
	if (p->o.events && ratelimit_init(&p->rl, p->o.event_burst, p->o.event_refill_s, p->o.event_pod_s,
					  p->o.event_pods_max, err) != 0) {
		ratelimit_free(&p->rl);
		free(p);
		return NULL;
	}
	if (p->o.events && (p->seen = calloc(p->o.event_pods_max, sizeof *p->seen)) == NULL) {
		ratelimit_free(&p->rl);
		free(p);
		return nomem(err);
	}
	return p;
}

void report_publisher_free(struct report_publisher *p)
{
	if (p == NULL)
		return;
	ratelimit_free(&p->rl);
	free(p->seen);
	json_decref(p->written);
	free(p);
}

void report_publisher_stats(const struct report_publisher *p, struct report_publish_stats *s)
{
	*s = p->st;
}

/* A name that can stand in an API path as it is: lower-case letters, digits, '-' and '.', 1 to max bytes. */
static int path_safe(const char *s, size_t max)
{
	size_t n = strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789-.");

	return n > 0 && n <= max && s[n] == '\0';
}

/*
 * A failed write: counted, and kept in err when it is the run's first (the
 * caller logs it). One refusal (a missing grant) would otherwise be one line
 * per namespace and interval.
 */
static void failed(struct report_publisher *p, const struct error *e, struct error *err, int *rc)
{
	p->st.errors++;
	if (*rc == 0)
		*err = *e;
	*rc = -1;
}

/* Is the PolicyReport CRD served? Asked on the first run and every REPORT_PUBLISH_DISCOVERY_S. */
static int crd_check(struct report_publisher *p, struct kube_client *k, time_t now, struct error *err)
{
	json_t *group = NULL, *res;
	long status = 0;
	int served = 0;
	size_t i;

	if (p->crd >= 0 && now >= p->crd_asked && now - p->crd_asked < REPORT_PUBLISH_DISCOVERY_S)
		return 0;
	if (kube_get(k, PR_GROUP_PATH, &group, &status, err) != 0 && status != 404)
		return -1;
	json_array_foreach(json_object_get(group, "resources"), i, res)
		if (json_is_string(json_object_get(res, "name")) &&
		    strcmp(json_string_value(json_object_get(res, "name")), "policyreports") == 0)
			served = 1;
	json_decref(group);
	if (served != p->crd)
		log_msg(served ? LOG_LEVEL_INFO : LOG_LEVEL_WARN,
			served ? "PolicyReport CRD served: writing PolicyReports"
			       : "PolicyReport CRD (wgpolicyk8s.io/v1alpha2) not served: not writing PolicyReports",
			LOG_END);
	if (!served) {
		json_decref(p->written);  /* listed again when it comes back */
		p->written = NULL;
	}
	p->crd = served;
	p->crd_asked = now;
	return 0;
}

/* A report we wrote, as listed: kept as "" (its body unknown: applied again) unless already known. */
static int listed_one(void *ctx, json_t *item)
{
	json_t *seen = ctx;
	const json_t *md = json_object_get(item, "metadata");
	const char *ns = json_string_value(json_object_get(md, "namespace"));
	const char *name = json_string_value(json_object_get(md, "name"));

	if (ns == NULL || name == NULL || strcmp(name, REPORT_PUBLISH_NAME) != 0)
		return 0;
	return json_object_set_new(seen, ns, json_string("")) == 0 ? 0 : -1;
}

/*
 * The reports with our label, listed: those we know keep their hash, those
 * we did not know are added ("" : applied again), those gone are dropped.
 */
static int list_written(struct report_publisher *p, struct kube_client *k, time_t now, struct error *err)
{
	char rv[KUBE_RV_MAX];
	json_t *seen = json_object(), *v;
	const char *ns;
	long status = 0;

	if (seen == NULL)
		return nomem(err), -1;
	if (kube_list(k, "/apis/wgpolicyk8s.io/v1alpha2/policyreports?labelSelector=app.kubernetes.io%2Fmanaged-by%3D"
		      REPORT_PUBLISH_MANAGED_BY, listed_one, seen, rv, sizeof rv, &status, err) != 0) {
		json_decref(seen);
		return -1;
	}
	json_object_foreach(seen, ns, v) {
		json_t *known = p->written ? json_object_get(p->written, ns) : NULL;

		if (known != NULL)
			json_object_set(seen, ns, known);
	}
	json_decref(p->written);
	p->written = seen;
	p->listed = now;
	return 0;
}

/* "ns" report's body hash (FNV-1a of its compact, sorted JSON) into out[17]. -1 on ENOMEM. */
static int body_hash(const json_t *rep, char out[17])
{
	char *s = json_dumps(rep, JSON_COMPACT | JSON_SORT_KEYS);

	if (s == NULL)
		return -1;
	snprintf(out, 17, "%016llx", (unsigned long long)ratelimit_key(s, strlen(s)));
	free(s);
	return 0;
}

static void report_path(char *buf, size_t cap, const char *ns)
{
	snprintf(buf, cap, PR_GROUP_PATH "/namespaces/%s/policyreports/" REPORT_PUBLISH_NAME, ns);
}

/* Applies each namespace's report whose body changed since it was last applied. */
static int apply_reports(struct report_publisher *p, struct kube_client *k, json_t *reports, struct error *err)
{
	struct error e = { 0 };
	char path[KUBE_PATH_MAX], hash[17];
	const char *ns;
	json_t *rep;
	long status;
	int rc = 0;

	json_object_foreach(reports, ns, rep) {
		const char *had = json_string_value(json_object_get(p->written, ns));

		if (!path_safe(ns, PR_NS_MAX))
			continue;
		if (body_hash(rep, hash) != 0)
			return nomem(err), -1;
		if (had != NULL && strcmp(had, hash) == 0) {
			p->st.reports_unchanged++;
			continue;
		}
		report_path(path, sizeof path, ns);
		if (kube_apply(k, path, REPORT_PUBLISH_NAME, rep, &status, &e) != 0) {
			failed(p, &e, err, &rc);
			continue;
		}
		if (json_object_set_new(p->written, ns, json_string(hash)) != 0)
			return nomem(err), -1;
		p->st.reports_applied++;
	}
	return rc;
}

/* Deletes the reports of namespaces with nothing left to report. */
static int delete_stale(struct report_publisher *p, struct kube_client *k, const json_t *reports, struct error *err)
{
	struct error e = { 0 };
	char path[KUBE_PATH_MAX];
	const char *ns;
	json_t *v;
	void *tmp;
	long status;
	int rc = 0;

	json_object_foreach_safe(p->written, tmp, ns, v) {
		if (json_object_get(reports, ns) != NULL)
			continue;
		if (path_safe(ns, PR_NS_MAX)) {
			report_path(path, sizeof path, ns);
			if (kube_delete(k, path, &status, &e) != 0 && status != 404) {
				failed(p, &e, err, &rc);
				continue;
			}
			p->st.reports_deleted++;
		}
		json_object_del(p->written, ns);
	}
	return rc;
}

static int publish_reports(struct report_publisher *p, struct kube_client *k, const struct report *r, time_t now,
			   struct error *err)
{
	json_t *reports;
	int rc;

	if (crd_check(p, k, now, err) != 0)
		return -1;
	if (!p->crd) {
		p->st.reports_skipped_no_crd++;
		return 0;
	}
	if ((p->written == NULL || now < p->listed || now - p->listed >= REPORT_PUBLISH_RELIST_S) &&
	    list_written(p, k, now, err) != 0)
		return -1;
	if ((reports = report_publish_reports(r, p->o.results_max, err)) == NULL)
		return -1;
	rc = apply_reports(p, k, reports, err);
	if (delete_stale(p, k, reports, rc == 0 ? err : &(struct error){ 0 }) != 0)
		rc = -1;
	json_decref(reports);
	return rc;
}

/* The pod's uid (for kubectl describe, which finds Events by it) into uid[cap]; 1 when the pod is gone. */
static int pod_uid(struct kube_client *k, const struct report_pending *pd, char *uid, size_t cap, struct error *err)
{
	char path[KUBE_PATH_MAX];
	json_t *pod = NULL;
	long status = 0;
	const char *u;

	snprintf(path, sizeof path, "/api/v1/namespaces/%s/pods/%s", pd->ns, pd->name);
	if (kube_get(k, path, &pod, &status, err) != 0)
		return status == 404 ? 1 : -1;
	u = json_string_value(json_object_get(json_object_get(pod, "metadata"), "uid"));
	snprintf(uid, cap, "%s", u ? u : "");
	json_decref(pod);
	return 0;
}

/* PATCH the Event name in ns to count, seen again at now (client-go's eventObserve patch: count, lastTimestamp). */
static int event_bump(struct kube_client *k, const char *ns, const char *name, long count, time_t now, long *status,
		      struct error *err)
{
	char path[KUBE_PATH_MAX], ts[32];
	json_t *patch;
	int rc;

	rfc3339(ts, sizeof ts, now);
	snprintf(path, sizeof path, "/api/v1/namespaces/%s/events/%s", ns, name);
	if ((patch = json_pack("{s:I,s:s}", "count", (json_int_t)count, "lastTimestamp", ts)) == NULL) {
		*status = 0;
		nomem(err);
		return -1;
	}
	rc = kube_patch(k, path, patch, NULL, status, err);
	json_decref(patch);
	return rc;
}

/* The count of the Event name in ns as the API server has it, or -1 with err. */
static long event_count(struct kube_client *k, const char *ns, const char *name, struct error *err)
{
	char path[KUBE_PATH_MAX];
	json_t *ev = NULL;
	long status = 0, n;

	snprintf(path, sizeof path, "/api/v1/namespaces/%s/events/%s", ns, name);
	if (kube_get(k, path, &ev, &status, err) != 0)
		return -1;
	n = (long)json_integer_value(json_object_get(ev, "count"));
	json_decref(ev);
	return n > 0 ? n : 1;  /* an Event without a count happened once */
}

/*
 * Writes ev (borrowed), named name, as client-go's recorder does (tools/record
 * event.go recordEvent): an Event this publisher already made has its count
 * and lastTimestamp PATCHed; when that one is gone (404: expired by the API
 * server's --event-ttl, or deleted), or was never seen, it is created; when
 * the create finds it made by an earlier run (409), its count is read back
 * and PATCHed. 0, or -1 with err.
 */
static int event_write(struct report_publisher *p, struct kube_client *k, const json_t *ev, const char *ns,
		       const char *name, uint64_t key, time_t now, struct error *err)
{
	struct event_seen *seen;
	char path[KUBE_PATH_MAX];
	long status = 0, count;

	key = key ? key : 1;
	seen = &p->seen[key % p->o.event_pods_max];
	if (seen->key == key && seen->count > 0) {
		if (event_bump(k, ns, name, seen->count + 1, now, &status, err) == 0) {
			seen->count++;
			p->st.events_updated++;
			return 0;
		}
		if (status != 404)
			return -1;
	}
	snprintf(path, sizeof path, "/api/v1/namespaces/%s/events", ns);
	if (kube_create(k, path, ev, NULL, &status, err) == 0) {
		seen->key = key;
		seen->count = 1;
		p->st.events_created++;
		return 0;
	}
	if (status != 409 || (count = event_count(k, ns, name, err)) < 0 ||
	    event_bump(k, ns, name, count + 1, now, &status, err) != 0)
		return -1;
	seen->key = key;
	seen->count = count + 1;
	p->st.events_updated++;
	return 0;
}

static int publish_events(struct report_publisher *p, struct kube_client *k, const struct report *r, time_t now,
			  struct error *err)
{
	char key[PR_NS_MAX + PR_NAME_MAX + 64], uid[128], name[REPORT_PUBLISH_EVENT_NAME_MAX + 1];
	struct error e = { 0 };
	size_t i;
	int rc = 0, gone;

	for (i = 0; i < r->pending.n; i++) {
		const struct report_pending *pd = REPORT_AT(r->pending, struct report_pending, i);
		const char *reason = report_publish_event_reason(pd->reason);
		json_t *ev;
		int n;

		if (reason == NULL || !path_safe(pd->ns, PR_NS_MAX) || !path_safe(pd->name, PR_NAME_MAX))
			continue;
		n = snprintf(key, sizeof key, "%s%c%s%c%s", pd->ns, 0, pd->name, 0, reason);
		if (!ratelimit_allow(&p->rl, ratelimit_key(key, (size_t)n), now)) {
			p->st.events_limited++;
			continue;
		}
		if ((gone = pod_uid(k, pd, uid, sizeof uid, &e)) != 0) {
			if (gone > 0)
				p->st.events_pod_gone++;
			else
				failed(p, &e, err, &rc);
			continue;
		}
		if ((ev = report_publish_event(pd, uid, now, &e)) == NULL) {
			failed(p, &e, err, &rc);
			continue;
		}
		report_publish_event_name(pd, uid, name, sizeof name);
		if (event_write(p, k, ev, pd->ns, name, event_key(pd, uid, reason), now, &e) != 0)
			failed(p, &e, err, &rc);
		json_decref(ev);
	}
	return rc;
}

int report_publisher_run(struct report_publisher *p, struct kube_client *k, const struct report *r, time_t now,
			 struct error *err)
{
	struct error e2 = { 0 };
	int rc = 0;

	p->st.runs++;
	if (p->o.policy_reports && publish_reports(p, k, r, now, err) != 0)
		rc = -1;
	if (p->o.events && publish_events(p, k, r, now, rc == 0 ? err : &e2) != 0)
		rc = -1;
	return rc;
}
