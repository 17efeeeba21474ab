/*
 * report_publish's pure builders: the PolicyReports of a small snapshot
 * (per namespace, capped, the summary and the omitted count), the Events
 * (reason, message bound, the pod referred to), and which reasons have one.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "fake_api.h"
#include "report_fixture.h"
#include "base/log.h"
#include "report/report_publish.h"

static const char policy[] = "pools:\n  - {name: a, nodeSelector: {agentpool: a}}\n";

#define NODE(name) \
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\",\"labels\":{\"agentpool\":\"a\"}}," \
	"\"spec\":{\"taints\":[{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]}," \
	"\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"1\"}}}"
/* A CPU pod bound to g1 without tolerating its taint. */
#define CPU(ns, name) \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\"},\"spec\":{\"nodeName\":\"g1\"," \
	"\"containers\":[{\"name\":\"c\"}]},\"status\":{\"phase\":\"Running\"}}"
#define GPU(ns, name, node, n, phase) \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"" ns "\"},\"spec\":{" node \
	"\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Exists\"}]," \
	"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"" n "\"}}}]}," \
	"\"status\":{\"phase\":\"" phase "\"}}"

static const char snapshot[] =
	"{\"items\":[" NODE("g1") ","
	CPU("web", "w1") "," CPU("web", "w2") "," CPU("web", "w3") "," CPU("web", "w4") "," CPU("web", "w5") ","
	GPU("ml", "train", "\"nodeName\":\"g1\",", "1", "Running") ","
	GPU("ml", "wait", "", "1", "Pending") ","
	GPU("ml", "huge", "", "8", "Pending") "]}";

static const json_t *result(const json_t *rep, size_t i)
{
	return json_array_get(json_object_get(rep, "results"), i);
}

static const char *str(const json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

static void test_reports(void)
{
	struct config *cfg = NULL;
	struct report r;
	struct error err = { 0 };
	json_t *all, *web, *ml;
	const json_t *res;

	memset(&r, 0, sizeof r);
	CHECK_INT(report_fixture_judge(policy, snapshot, &cfg, &r), 0);
	CHECK_INT(r.cpu_pods.total, 5);
	CHECK_INT(r.pending.total, 2);
	all = report_publish_reports(&r, 3, &err);
	CHECK(all != NULL);
	CHECK_INT(json_object_size(all), 2);   /* web and ml; no namespace without findings */
	web = json_object_get(all, "web");
	ml = json_object_get(all, "ml");
	CHECK_STR(str(web, "apiVersion"), "wgpolicyk8s.io/v1alpha2");
	CHECK_STR(str(web, "kind"), "PolicyReport");
	CHECK_STR(str(json_object_get(web, "metadata"), "name"), "gpu-admission");
	CHECK_STR(str(json_object_get(web, "metadata"), "namespace"), "web");
	CHECK(json_object_get(json_object_get(web, "metadata"), "ownerReferences") == NULL);
	CHECK_STR(str(json_object_get(json_object_get(web, "metadata"), "labels"), "app.kubernetes.io/managed-by"),
		  "gpu-admission");
	/* Capped at 3 results, plus the one that says 2 were left out; the summary counts all 5. */
	CHECK_INT(json_array_size(json_object_get(web, "results")), 4);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(web, "summary"), "fail")), 5);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(web, "summary"), "skip")), 1);
	CHECK_STR(str(json_object_get(json_object_get(web, "metadata"), "annotations"), "gpu-admission/omitted-results"),
		  "2");
	res = result(web, 0);
	CHECK_STR(str(res, "result"), "fail");
	CHECK_STR(str(res, "rule"), "cpu-pod-on-gpu-node");
	CHECK_STR(str(res, "policy"), "gpu-admission");
	CHECK_STR(str(json_array_get(json_object_get(res, "resources"), 0), "name"), "w1");
	CHECK_STR(str(json_array_get(json_object_get(res, "resources"), 0), "kind"), "Pod");
	CHECK_STR(str(json_object_get(res, "properties"), "routes"), "untolerated-taint");
	CHECK_STR(str(json_object_get(res, "properties"), "node"), "g1");
	CHECK_STR(str(json_object_get(res, "properties"), "pool"), "a");
	CHECK(strstr(str(res, "message"), "CPU-only pod on GPU node g1 via untolerated-taint (untolerated taint sku") != NULL);
	res = result(web, 3);
	CHECK_STR(str(res, "rule"), "results-omitted");
	CHECK_STR(str(res, "result"), "skip");
	CHECK_STR(str(json_object_get(res, "properties"), "omitted"), "2");
	/* ml: two Pending pods, as warnings with the report's reasons and messages; nothing omitted. */
	CHECK_INT(json_array_size(json_object_get(ml, "results")), 2);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(ml, "summary"), "warn")), 2);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(ml, "summary"), "fail")), 0);
	CHECK_INT(json_integer_value(json_object_get(json_object_get(ml, "summary"), "skip")), 0);
	CHECK(json_object_get(json_object_get(ml, "metadata"), "annotations") == NULL);
	res = result(ml, 0);
	CHECK_STR(str(res, "result"), "warn");
	CHECK_STR(str(res, "rule"), "gpu-pod-pending");
	CHECK_STR(str(json_object_get(res, "properties"), "reason"), "gpus-in-use");
	CHECK_STR(str(json_object_get(res, "properties"), "gpus"), "nvidia.com/gpu=1");
	CHECK_STR(str(res, "message"), REPORT_AT(r.pending, struct report_pending, 0)->message);
	CHECK_STR(str(json_object_get(result(ml, 1), "properties"), "reason"), "too-many-gpus");
	json_decref(all);
	/* Large enough: every finding listed, nothing omitted. */
	all = report_publish_reports(&r, 100, &err);
	CHECK_INT(json_array_size(json_object_get(json_object_get(all, "web"), "results")), 5);
	CHECK(json_object_get(json_object_get(json_object_get(all, "web"), "metadata"), "annotations") == NULL);
	json_decref(all);
	report_free(&r);
	config_free(cfg);
}

/* The largest report the limit allows: every name at its API limit, the longest message. Under the write bound. */
static void test_worst_case_fits(void)
{
	static struct report_cpu_pod pods[REPORT_PUBLISH_RESULTS_LIMIT + 1];
	char ns[64], name[254], node[254], owner[320], taint[340], msg[4096];
	struct report r;
	struct error err = { 0 };
	json_t *all;
	char *body;
	size_t i;

	memset(&r, 0, sizeof r);
	memset(ns, 'n', 63);
	ns[63] = '\0';
	memset(name, 'p', 253);
	name[253] = '\0';
	memset(node, 'd', 253);
	node[253] = '\0';
	snprintf(owner, sizeof owner, "ReplicaSet/%s", name);
	snprintf(taint, sizeof taint, "%.253s=%.63s:NoSchedule", node, ns);
	memset(msg, 'm', sizeof msg - 1);
	msg[sizeof msg - 1] = '\0';
	for (i = 0; i <= REPORT_PUBLISH_RESULTS_LIMIT; i++) {
		pods[i].ns = ns;
		pods[i].name = name;
		pods[i].node = node;
		pods[i].owner = owner;
		pods[i].taint = taint;
		pods[i].pool = -1;
		pods[i].routes = (1u << REPORT_NROUTES) - 1;
		pods[i].policy.reason = name;
		pods[i].policy.message = msg;
		pods[i].policy.would_reject = 1;
	}
	r.cpu_pods.v = pods;
	r.cpu_pods.n = r.cpu_pods.total = REPORT_PUBLISH_RESULTS_LIMIT + 1;
	all = report_publish_reports(&r, REPORT_PUBLISH_RESULTS_LIMIT, &err);
	CHECK(all != NULL);
	body = json_dumps(json_object_get(all, ns), JSON_COMPACT);
	CHECK(body != NULL);
	CHECK_INT(json_array_size(json_object_get(json_object_get(all, ns), "results")), REPORT_PUBLISH_RESULTS_LIMIT + 1);
	CHECK(body != NULL && strlen(body) <= KUBE_WRITE_BODY_MAX);
	if (body != NULL && strlen(body) > KUBE_WRITE_BODY_MAX)
		fprintf(stderr, "  worst case: %zu bytes\n", strlen(body));
	free(body);
	json_decref(all);
}

static void test_nothing_to_report(void)
{
	struct config *cfg = NULL;
	struct report r;
	struct error err = { 0 };
	json_t *all;

	memset(&r, 0, sizeof r);
	CHECK_INT(report_fixture_judge(policy, "{\"items\":[" NODE("g1") "," GPU("ml", "train", "\"nodeName\":\"g1\",", "1", "Running") "]}",
			&cfg, &r), 0);
	all = report_publish_reports(&r, 100, &err);
	CHECK(all != NULL);
	CHECK_INT(json_object_size(all), 0);
	json_decref(all);
	report_free(&r);
	config_free(cfg);
}

static void test_event_reasons(void)
{
	CHECK_STR(report_publish_event_reason(REPORT_PENDING_UNSERVED), "GPUResourceUnserved");
	CHECK_STR(report_publish_event_reason(REPORT_PENDING_FULL), "GPUPoolFull");
	CHECK_STR(report_publish_event_reason(REPORT_PENDING_TOO_MANY), "GPURequestTooLarge");
	CHECK(report_publish_event_reason(REPORT_PENDING_GATED) == NULL);
	CHECK(report_publish_event_reason(REPORT_PENDING_OTHER) == NULL);
}

static void test_event(void)
{
	struct report_pending p;
	struct error err = { 0 };
	char name[] = "wait", ns[] = "ml", *msg = malloc(3000);
	const json_t *io;
	json_t *ev;
	size_t i;

	memset(&p, 0, sizeof p);
	p.ns = ns;
	p.name = name;
	p.reason = REPORT_PENDING_FULL;
	/* A message over the bound, with a 2-byte character across it: cut before the character. */
	for (i = 0; i < 1023; i++)
		msg[i] = 'x';
	snprintf(msg + 1023, 3000 - 1023, "\xc3\xa9 and more");
	p.message = msg;
	ev = report_publish_event(&p, "u-1", 86400 * 365, &err);
	CHECK(ev != NULL);
	CHECK_STR(str(ev, "apiVersion"), "v1");
	CHECK_STR(str(ev, "kind"), "Event");
	CHECK_STR(str(ev, "reason"), "GPUPoolFull");
	CHECK_STR(str(ev, "type"), "Warning");
	CHECK_INT(strlen(str(ev, "message")), 1023);
	CHECK(strncmp(str(json_object_get(ev, "metadata"), "name"), "wait.", 5) == 0);
	CHECK_INT(strlen(str(json_object_get(ev, "metadata"), "name")), 5 + 16);
	CHECK_INT(json_integer_value(json_object_get(ev, "count")), 1);
	CHECK_STR(str(json_object_get(ev, "metadata"), "namespace"), "ml");
	CHECK_STR(str(ev, "firstTimestamp"), "1971-01-01T00:00:00Z");
	CHECK_STR(str(json_object_get(ev, "source"), "component"), "gpu-admission");
	io = json_object_get(ev, "involvedObject");
	CHECK_STR(str(io, "kind"), "Pod");
	CHECK_STR(str(io, "namespace"), "ml");
	CHECK_STR(str(io, "name"), "wait");
	CHECK_STR(str(io, "uid"), "u-1");
	json_decref(ev);
	/* No Event for a gated pod. */
	p.reason = REPORT_PENDING_GATED;
	CHECK(report_publish_event(&p, "", 0, &err) == NULL);
	CHECK_INT(err.kind, ERROR_INPUT);
	free(msg);
}

/* One Event per pod (uid), reason and message, as client-go's getEventKey: its name says which. */
static void test_event_name(void)
{
	struct report_pending p;
	char a[REPORT_PUBLISH_EVENT_NAME_MAX + 1], b[REPORT_PUBLISH_EVENT_NAME_MAX + 1], ns[] = "ml", name[300];

	memset(&p, 0, sizeof p);
	p.ns = ns;
	p.name = name;
	p.reason = REPORT_PENDING_UNSERVED;
	p.message = "no pool serves amd.com/gpu";
	snprintf(name, sizeof name, "wait");
	CHECK_INT(report_publish_event_name(&p, "u-1", a, sizeof a), 0);
	CHECK_INT(report_publish_event_name(&p, "u-1", b, sizeof b), 0);
	CHECK_STR(a, b);
	CHECK_INT(report_publish_event_name(&p, "u-2", b, sizeof b), 0);   /* the pod made again */
	CHECK(strcmp(a, b) != 0);
	p.reason = REPORT_PENDING_FULL;
	CHECK_INT(report_publish_event_name(&p, "u-1", b, sizeof b), 0);
	CHECK(strcmp(a, b) != 0);
	p.reason = REPORT_PENDING_UNSERVED;
	p.message = "another message";
	CHECK_INT(report_publish_event_name(&p, "u-1", b, sizeof b), 0);
	CHECK(strcmp(a, b) != 0);
	/* A pod name at its limit: cut, never before a '.' or '-' of its own. */
	memset(name, 'p', 253);
	name[235] = '-';
	name[253] = '\0';
	CHECK_INT(report_publish_event_name(&p, "u-1", a, sizeof a), 0);
	CHECK_INT(strlen(a), 235 + 17);
	CHECK(strncmp(a + 233, "pp.", 3) == 0);
	CHECK_INT(report_publish_event_name(&p, "u-1", a, 20), -1);
	p.reason = REPORT_PENDING_GATED;
	CHECK_INT(report_publish_event_name(&p, "u-1", a, sizeof a), -1);
}

/* ==== The publisher against the fake API server (fake_api.h) ==== */

/* The fake's state: whether the CRD is served; the one Event it holds (count 0: none). */
struct fake_state {
	atomic_int crd;
	atomic_int event_count;
	char event_name[REPORT_PUBLISH_EVENT_NAME_MAX + 1];
};

#define EVENTS_PATH "/api/v1/namespaces/ml/events"

static int event_named(struct fake_state *st, const char *path)
{
	return atomic_load(&st->event_count) > 0 && strcmp(path + sizeof EVENTS_PATH, st->event_name) == 0;
}

/* POST: made, or 409 when it exists (the API server's AlreadyExists). */
static void fake_event_create(struct fake_api *f, int c, const struct fake_api_request *req)
{
	struct fake_state *st = f->ctx;
	json_t *ev = json_loads(req->body, 0, NULL);
	const char *name = json_string_value(json_object_get(json_object_get(ev, "metadata"), "name"));

	if (atomic_load(&st->event_count) > 0) {
		fake_api_reply(c, "409 Conflict", "{\"kind\":\"Status\",\"code\":409,\"reason\":\"AlreadyExists\"}");
	} else {
		snprintf(st->event_name, sizeof st->event_name, "%s", name ? name : "");
		atomic_store(&st->event_count, (int)json_integer_value(json_object_get(ev, "count")));
		fake_api_reply(c, "201 Created", req->body);
	}
	json_decref(ev);
}

/* PATCH (a merge patch of count): 404 when the Event is not there. */
static void fake_event_patch(struct fake_api *f, int c, const struct fake_api_request *req)
{
	struct fake_state *st = f->ctx;
	json_t *patch = json_loads(req->body, 0, NULL);

	if (!event_named(st, req->path)) {
		fake_api_reply(c, "404 Not Found", "{\"kind\":\"Status\",\"code\":404,\"message\":\"gone\"}");
	} else {
		atomic_store(&st->event_count, (int)json_integer_value(json_object_get(patch, "count")));
		fake_api_reply(c, "200 OK", "{}");
	}
	json_decref(patch);
}

static void fake_event_get(struct fake_api *f, int c, const struct fake_api_request *req)
{
	struct fake_state *st = f->ctx;
	char body[128];

	if (!event_named(st, req->path)) {
		fake_api_reply(c, "404 Not Found", "{\"kind\":\"Status\",\"code\":404,\"message\":\"gone\"}");
		return;
	}
	snprintf(body, sizeof body, "{\"kind\":\"Event\",\"count\":%d}", atomic_load(&st->event_count));
	fake_api_reply(c, "200 OK", body);
}

/* Discovery: the CRD served once the test says so. */
static void fake_discovery(struct fake_api *f, int c, const struct fake_api_request *req)
{
	if (atomic_load(&((struct fake_state *)f->ctx)->crd))
		fake_api_reply(c, "200 OK", "{\"kind\":\"APIResourceList\",\"resources\":[{\"name\":\"policyreports\"}]}");
	else
		fake_api_reply(c, "404 Not Found", "{\"kind\":\"Status\",\"code\":404,\"message\":\"not found\"}");
}

static const struct fake_api_route fake_routes[] = {
	{ "GET", FAKE_API_EXACT, "/apis/wgpolicyk8s.io/v1alpha2", NULL, NULL, fake_discovery },
	/* An earlier run's report in a namespace that has nothing to report now. */
	{ "GET", FAKE_API_PREFIX, "/apis/wgpolicyk8s.io/v1alpha2/policyreports?", "200 OK",
	  "{\"metadata\":{\"resourceVersion\":\"7\"},\"items\":[{\"metadata\":"
	  "{\"namespace\":\"old\",\"name\":\"gpu-admission\"}},{\"metadata\":{\"namespace\":\"old\",\"name\":\"other\"}}]}",
	  NULL },
	{ "GET", FAKE_API_EXACT, "/api/v1/namespaces/ml/pods/wait", "200 OK",
	  "{\"metadata\":{\"name\":\"wait\",\"uid\":\"u-wait\"}}", NULL },
	{ "GET", FAKE_API_PREFIX, EVENTS_PATH "/", NULL, NULL, fake_event_get },
	{ "GET", FAKE_API_PREFIX, "/", "404 Not Found", "{\"kind\":\"Status\",\"code\":404,\"message\":\"gone\"}", NULL },
	{ "POST", FAKE_API_EXACT, EVENTS_PATH, NULL, NULL, fake_event_create },
	{ "PATCH", FAKE_API_PREFIX, EVENTS_PATH "/", NULL, NULL, fake_event_patch },
	{ NULL, FAKE_API_PREFIX, "/", "200 OK", "{}", NULL },
	{ NULL, FAKE_API_EXACT, NULL, NULL, NULL, NULL },
};

/* Runs p on r at now and returns the requests it made (the log since the last call). */
static const char *run_at(struct fake_api *f, struct report_publisher *p, struct kube_client *k, const struct report *r,
			  time_t now, int *rc)
{
	static char got[FAKE_API_LOG_MAX];
	struct error err = { 0 };

	fake_api_clear(f);
	*rc = report_publisher_run(p, k, r, now, &err);
	if (*rc != 0)
		fprintf(stderr, "  run: %s\n", err.msg);
	pthread_mutex_lock(&f->lock);
	snprintf(got, sizeof got, "%s", f->log);
	pthread_mutex_unlock(&f->lock);
	return got;
}

/* The fake (its state in fs), the snapshot judged into r, a client of the fake: what a publisher test runs on. */
struct bench {
	struct fake_api f;
	struct fake_state fs;
	struct kube_config kc;
	struct kube_client *k;
	struct config *cfg;
	struct report r;
};

static int bench_start(struct bench *b)
{
	struct error err = { 0 };
	char text[512];

	memset(b, 0, sizeof *b);
	if (fake_api_start(&b->f, fake_routes, &b->fs) != 0)
		return -1;
	if (report_fixture_judge(policy, snapshot, &b->cfg, &b->r) != 0 || fake_api_kubeconfig(&b->f, text, sizeof text) != 0 ||
	    kube_config_parse(&b->kc, "kc", text, strlen(text), NULL, &err) != 0) {
		fake_api_stop(&b->f);
		report_free(&b->r);
		config_free(b->cfg);
		return -1;
	}
	b->k = kube_client_new(&b->kc, NULL, &err);
	return 0;
}

static void bench_stop(struct bench *b)
{
	kube_client_free(b->k);
	kube_config_free(&b->kc);
	fake_api_stop(&b->f);
	report_free(&b->r);
	config_free(b->cfg);
}

static void test_publisher(void)
{
	static struct bench b;
	struct error err = { 0 };
	struct report_publish_options o = { 1, 1, 3, 0, 0, 3600, 0 };
	struct report_publisher *p;
	struct report_publish_stats st;
	int rc;

	if (bench_start(&b) != 0) {
		CHECK(!"fake API server and snapshot");
		return;
	}
	p = report_publisher_new(&o, &err);
	/* No CRD: discovery asked, nothing written; the Event of wait (by uid), huge's pod gone. */
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1000, &rc),
		  "GET /apis/wgpolicyk8s.io/v1alpha2\n"
		  "GET /api/v1/namespaces/ml/pods/wait\n"
		  "POST /api/v1/namespaces/ml/events application/json\n"
		  "GET /api/v1/namespaces/ml/pods/huge\n");
	CHECK_INT(rc, 0);
	CHECK(strstr(b.f.body, "\"reason\":\"GPUPoolFull\"") != NULL);
	CHECK(strstr(b.f.body, "\"uid\":\"u-wait\"") != NULL);
	/* 10 s later: discovery's answer still holds; both pods within their hour (event_pod_s): nothing at all. */
	atomic_store(&b.fs.crd, 1);
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1010, &rc), "");
	report_publisher_stats(p, &st);
	CHECK_INT(st.reports_skipped_no_crd, 2);
	CHECK_INT(st.events_created, 1);
	CHECK_INT(st.events_pod_gone, 1);
	CHECK_INT(st.events_limited, 2);
	/* Past the discovery interval: the CRD is served; the earlier run's reports listed, both namespaces
	 * applied, the stale one deleted (only the report named ours). */
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1000 + REPORT_PUBLISH_DISCOVERY_S, &rc),
		  "GET /apis/wgpolicyk8s.io/v1alpha2\n"
		  "GET /apis/wgpolicyk8s.io/v1alpha2/policyreports?labelSelector=app.kubernetes.io%2Fmanaged-by%3Dgpu-admission&limit=25\n"
		  "PATCH /apis/wgpolicyk8s.io/v1alpha2/namespaces/web/policyreports/gpu-admission?fieldManager=gpu-admission&force=true "
		  "application/apply-patch+yaml\n"
		  "PATCH /apis/wgpolicyk8s.io/v1alpha2/namespaces/ml/policyreports/gpu-admission?fieldManager=gpu-admission&force=true "
		  "application/apply-patch+yaml\n"
		  "DELETE /apis/wgpolicyk8s.io/v1alpha2/namespaces/old/policyreports/gpu-admission\n");
	CHECK_INT(rc, 0);
	/* Unchanged: nothing sent. */
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1000 + REPORT_PUBLISH_DISCOVERY_S + 10, &rc), "");
	report_publisher_stats(p, &st);
	CHECK_INT(st.reports_applied, 2);
	CHECK_INT(st.reports_unchanged, 2);
	CHECK_INT(st.reports_deleted, 1);
	CHECK_INT(st.errors, 0);
	CHECK_INT(st.runs, 4);
	report_publisher_free(p);
	bench_stop(&b);
}

/*
 * The same Pending pod across runs: ONE Event whose count grows (client-go's
 * EventCorrelator), each write let through by the per-pod limit: created,
 * PATCHed (count 2), created again once gone (the API server's --event-ttl),
 * and found by a new publisher (a restart: 409) and PATCHed on from its count.
 */
static void test_publisher_aggregates_events(void)
{
	static struct bench b;
	struct error err = { 0 };
	struct report_publish_options o = { 0, 1, 0, 0, 0, 60, 0 };
	struct report_publisher *p;
	struct report_publish_stats st;
	char name[REPORT_PUBLISH_EVENT_NAME_MAX + 1], want[1024];
	int rc;

	if (bench_start(&b) != 0) {
		CHECK(!"fake API server and snapshot");
		return;
	}
	CHECK_INT(report_publish_event_name(REPORT_AT(b.r.pending, struct report_pending, 0), "u-wait", name, sizeof name), 0);
	p = report_publisher_new(&o, &err);
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1000, &rc),
		  "GET /api/v1/namespaces/ml/pods/wait\n"
		  "POST " EVENTS_PATH " application/json\n"
		  "GET /api/v1/namespaces/ml/pods/huge\n");
	CHECK_STR(b.fs.event_name, name);
	CHECK_INT(atomic_load(&b.fs.event_count), 1);
	/* Within the pod's minute: nothing. Past it: the same Event, its count and lastTimestamp patched. */
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1030, &rc), "");
	snprintf(want, sizeof want, "GET /api/v1/namespaces/ml/pods/wait\n"
		 "PATCH " EVENTS_PATH "/%s application/merge-patch+json\n"
		 "GET /api/v1/namespaces/ml/pods/huge\n", name);
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1061, &rc), want);
	CHECK_INT(rc, 0);
	CHECK_INT(atomic_load(&b.fs.event_count), 2);
	CHECK_STR(b.f.body, "{\"count\":2,\"lastTimestamp\":\"1970-01-01T00:17:41Z\"}");
	/* Gone (expired): the PATCH's 404, then made again. */
	atomic_store(&b.fs.event_count, 0);
	snprintf(want, sizeof want, "GET /api/v1/namespaces/ml/pods/wait\n"
		 "PATCH " EVENTS_PATH "/%s application/merge-patch+json\n"
		 "POST " EVENTS_PATH " application/json\n"
		 "GET /api/v1/namespaces/ml/pods/huge\n", name);
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1122, &rc), want);
	CHECK_INT(rc, 0);
	CHECK_INT(atomic_load(&b.fs.event_count), 1);
	report_publisher_stats(p, &st);
	CHECK_INT(st.events_created, 2);
	CHECK_INT(st.events_updated, 1);
	CHECK_INT(st.errors, 0);
	report_publisher_free(p);
	/* A new publisher (the watch restarted, or the next report --publish): it exists, so read and bumped. */
	atomic_store(&b.fs.event_count, 4);
	p = report_publisher_new(&o, &err);
	snprintf(want, sizeof want, "GET /api/v1/namespaces/ml/pods/wait\n"
		 "POST " EVENTS_PATH " application/json\n"
		 "GET " EVENTS_PATH "/%s\n"
		 "PATCH " EVENTS_PATH "/%s application/merge-patch+json\n"
		 "GET /api/v1/namespaces/ml/pods/huge\n", name, name);
	CHECK_STR(run_at(&b.f, p, b.k, &b.r, 1200, &rc), want);
	CHECK_INT(rc, 0);
	CHECK_INT(atomic_load(&b.fs.event_count), 5);
	report_publisher_stats(p, &st);
	CHECK_INT(st.events_created, 0);
	CHECK_INT(st.events_updated, 1);
	CHECK_INT(st.errors, 0);
	report_publisher_free(p);
	bench_stop(&b);
}

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);  /* the CRD's absence is logged on purpose here */
	RUN(test_reports);
	RUN(test_worst_case_fits);
	RUN(test_nothing_to_report);
	RUN(test_event_reasons);
	RUN(test_event);
	RUN(test_event_name);
	RUN(test_publisher);
	RUN(test_publisher_aggregates_events);
	return check_done("report_publish");
}
