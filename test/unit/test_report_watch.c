/*
 * gpu-admission watch's parts together (report_watch.h, report_serve.h),
 * against a fake API server on loopback: the lists feed the model, a 410 on
 * the pods' watch makes a relist that forgets the pod deleted meanwhile, a
 * server that 404s resource.k8s.io is watched on nodes and pods alone, one
 * that serves it has its ResourceSlices and ResourceClaims (and a claim's
 * DELETED event) change the figures, and the HTTP endpoints answer: /metrics with the report's gauges and the
 * watch's own, /readyz, /healthz, POST /what-if (json, a bad policy, too
 * large), an unknown path. Waits poll over a generous deadline: never a
 * timing assertion.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "check.h"
#include "fake_api.h"
#include "base/log.h"
#include "policy/config.h"
#include "report/report_serve.h"
#include "report/report_watch.h"

static const char policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], pricePerNodeHour: 0.5, gpusPerNode: 1,\n"
	"     nodeSelector: {agentpool: t4}}\n";

/* ==== The fake API server's routes (fake_api.h) ==== */

#define NODE(name, pool, gpu) \
	"{\"metadata\":{\"name\":\"" name "\",\"labels\":{\"agentpool\":\"" pool "\"}}," \
	"\"spec\":{\"taints\":[{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]}," \
	"\"status\":{\"allocatable\":{\"cpu\":\"8\",\"nvidia.com/gpu\":\"" gpu "\"}}}"
#define POD(name, node) \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ml\"},\"spec\":{" node \
	"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"1\"}}}]}," \
	"\"status\":{\"phase\":\"Pending\"}}"

static const char nodes_list[] = "{\"kind\":\"NodeList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
	NODE("t4-a", "t4", "1") "," NODE("t4-b", "t4", "1") "]}";
/* First: p1 runs on t4-a. After the 410: p1 is gone, p2 waits unbound. */
static const char pods_list1[] = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"10\"},\"items\":["
	POD("p1", "\"nodeName\":\"t4-a\",") "]}";
static const char pods_list2[] = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"20\"},\"items\":["
	POD("p2", "") "]}";

/* The first pod list, then (after the 410) the second; ctx counts them (an atomic_int). */
static void pods_list(struct fake_api *f, int c, const struct fake_api_request *req)
{
	fake_api_reply(c, "200 OK", atomic_fetch_add((atomic_int *)f->ctx, 1) == 0 ? pods_list1 : pods_list2);
}

#define NOT_FOUND "{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\"," \
	"\"message\":\"the server could not find the requested resource\"}"

/* A server without DRA: resource.k8s.io 404s. */
static const struct fake_api_route routes[] = {
	{ "GET", FAKE_API_PREFIX, "/apis/resource.k8s.io/", "404 Not Found", NOT_FOUND, NULL },
	{ "GET", FAKE_API_PREFIX, "/api/v1/nodes?limit=", "200 OK", nodes_list, NULL },
	{ "GET", FAKE_API_PREFIX, "/api/v1/pods?limit=", NULL, NULL, pods_list },
	/* The pods' first watch: its version is gone. */
	{ "GET", FAKE_API_PREFIX, "/api/v1/pods?watch=1&allowWatchBookmarks=true&resourceVersion=10&", "200 OK",
	  FAKE_API_WATCH_GONE, NULL },
	/* Every other watch: held open until the test ends. */
	{ "GET", FAKE_API_PREFIX, "/", NULL, NULL, fake_api_hold },
	{ NULL, FAKE_API_EXACT, NULL, NULL, NULL, NULL },
};

/*
 * With DRA (resourceVersion 11: no 410): d1 runs on t4-a with claim c1,
 * allocated there and reserved for it; d2 waits for claim c2, not allocated.
 * t4-a's ResourceSlice publishes its GPU. The claims' watch then deletes c1.
 */
#define DRA_POD(name, node, claim, phase) \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ml\"},\"spec\":{" node \
	"\"resourceClaims\":[{\"name\":\"gpu\",\"resourceClaimName\":\"" claim "\"}]," \
	"\"containers\":[{\"name\":\"c\",\"resources\":{\"claims\":[{\"name\":\"gpu\"}]}}]}," \
	"\"status\":{\"phase\":\"" phase "\"}}"
#define CLAIM(name, rv, status) \
	"{\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ml\",\"resourceVersion\":\"" rv "\"}," \
	"\"spec\":{\"devices\":{\"requests\":[{\"name\":\"gpu\",\"exactly\":{\"deviceClassName\":\"gpu.nvidia.com\"}}]}}" \
	status "}"
#define C1_STATUS ",\"status\":{\"allocation\":{\"devices\":{\"results\":[{\"request\":\"gpu\",\"driver\":" \
	"\"gpu.nvidia.com\",\"pool\":\"t4-a\",\"device\":\"gpu-0\"}]},\"nodeSelector\":{\"nodeSelectorTerms\":" \
	"[{\"matchFields\":[{\"key\":\"metadata.name\",\"operator\":\"In\",\"values\":[\"t4-a\"]}]}]}}," \
	"\"reservedFor\":[{\"resource\":\"pods\",\"name\":\"d1\",\"uid\":\"u1\"}]}"

static const char dra_pods[] = "{\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"11\"},\"items\":["
	DRA_POD("d1", "\"nodeName\":\"t4-a\",", "c1", "Running") "," DRA_POD("d2", "", "c2", "Pending") "]}";
static const char dra_slices[] = "{\"kind\":\"ResourceSliceList\",\"metadata\":{\"resourceVersion\":\"11\"},"
	"\"items\":[{\"metadata\":{\"name\":\"t4-a-gpu\"},\"spec\":{\"driver\":\"gpu.nvidia.com\",\"nodeName\":"
	"\"t4-a\",\"pool\":{\"name\":\"t4-a\",\"generation\":1,\"resourceSliceCount\":1},"
	"\"devices\":[{\"name\":\"gpu-0\",\"attributes\":{\"productName\":{\"string\":\"Tesla T4\"}}}]}}]}";
static const char dra_claims[] = "{\"kind\":\"ResourceClaimList\",\"metadata\":{\"resourceVersion\":\"11\"},"
	"\"items\":[" CLAIM("c1", "11", C1_STATUS) "," CLAIM("c2", "11", "") "]}";
static const char dra_resources[] = "{\"kind\":\"APIResourceList\",\"groupVersion\":\"resource.k8s.io/v1\","
	"\"resources\":[{\"name\":\"deviceclasses\"},{\"name\":\"resourceclaims\"},{\"name\":\"resourceslices\"}]}";

/* The claims' watch from the list's version: c1's DELETED once ctx (an atomic_int) is set; others held. */
static void claims_watch(struct fake_api *f, int c, const struct fake_api_request *req)
{
	if (strstr(req->path, "resourceVersion=11&") == NULL) {
		fake_api_hold(f, c, req);
		return;
	}
	while (!atomic_load(&f->stop) && !atomic_load((atomic_int *)f->ctx))
		usleep(20000);
	fake_api_reply(c, "200 OK", "{\"type\":\"DELETED\",\"object\":" CLAIM("c1", "12", C1_STATUS) "}\n");
}

/* A server with resource.k8s.io/v1. */
static const struct fake_api_route dra_routes[] = {
	{ "GET", FAKE_API_EXACT, "/apis/resource.k8s.io/v1", "200 OK", dra_resources, NULL },
	{ "GET", FAKE_API_PREFIX, "/api/v1/nodes?limit=", "200 OK", nodes_list, NULL },
	{ "GET", FAKE_API_PREFIX, "/api/v1/pods?limit=", "200 OK", dra_pods, NULL },
	{ "GET", FAKE_API_PREFIX, "/apis/resource.k8s.io/v1/resourceslices?limit=", "200 OK", dra_slices, NULL },
	{ "GET", FAKE_API_PREFIX, "/apis/resource.k8s.io/v1/resourceclaims?limit=", "200 OK", dra_claims, NULL },
	{ "GET", FAKE_API_PREFIX, "/apis/resource.k8s.io/v1/resourceclaims?watch=1", NULL, NULL, claims_watch },
	{ "GET", FAKE_API_PREFIX, "/apis/resource.k8s.io/", "404 Not Found", NOT_FOUND, NULL },
	{ "GET", FAKE_API_PREFIX, "/", NULL, NULL, fake_api_hold },
	{ NULL, FAKE_API_EXACT, NULL, NULL, NULL, NULL },
};

/* ==== A minimal HTTP client ==== */

/*
 * One request to the watch's port: method, path, body (len bytes, may be
 * NULL); the whole answer into a new string (NULL on failure), *status its code.
 */
static char *http(unsigned port, const char *method, const char *path, const char *body, size_t len, int *status)
{
	struct sockaddr_in a;
	char head[256], *out = NULL;
	size_t have = 0, cap = 0;
	ssize_t got;
	int c = socket(AF_INET, SOCK_STREAM, 0), n;

	*status = 0;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_port = htons((uint16_t)port);
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (c < 0 || connect(c, (struct sockaddr *)&a, sizeof a) != 0)
		goto done;
	n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: %zu\r\n\r\n",
		     method, path, len);
	if (write(c, head, (size_t)n) != n)
		goto done;
	/* The server may answer (413) before it has read everything: a short write is fine then. */
	for (size_t off = 0; body != NULL && off < len; off += (size_t)got)
		if ((got = write(c, body + off, len - off)) <= 0)
			break;
	for (;;) {
		if (have + 4096 + 1 > cap) {
			char *grown = realloc(out, cap = (cap ? cap * 2 : 8192));

			if (grown == NULL)
				break;
			out = grown;
		}
		if ((got = read(c, out + have, cap - have - 1)) <= 0)
			break;
		have += (size_t)got;
	}
	if (out != NULL) {
		out[have] = '\0';
		sscanf(out, "HTTP/1.%*d %d", status);
	}
done:
	if (c >= 0)
		close(c);
	return out;
}

/* The value of one sample of /metrics, as printed, or "" (static storage). */
static const char *metric(unsigned port, const char *sample)
{
	static char value[64];
	int status;
	char *text = http(port, "GET", "/metrics", NULL, 0, &status), *at;
	size_t n = strlen(sample);

	value[0] = '\0';
	for (at = text; at != NULL && (at = strstr(at, sample)) != NULL; at += n)
		if ((at == text || at[-1] == '\n') && at[n] == ' ') {
			sscanf(at + n + 1, "%63s", value);
			break;
		}
	free(text);
	return value;
}

static int is(unsigned port, const char *sample, const char *want)
{
	return strcmp(metric(port, sample), want) == 0;
}

/* ==== The test ==== */

/* A watch and its HTTP endpoints on a fake API server: what each test sets up. */
struct bench {
	struct fake_api f;
	struct config *cfg;
	struct report_watch *w;
	struct report_serve *s;
	char dir[sizeof "/tmp/test_report_watch.XXXXXX"], path[300];
	unsigned port;
	int started;  /* the fake runs */
};

/* Starts b's fake on table (ctx for their functions) and the watch against it; 0, or -1 (b->port 0). */
static int bench_start(struct bench *b, const struct fake_api_route *table, void *ctx)
{
	struct error err = { 0 };
	struct report_watch_options o = { 0 };
	char kc[256];
	FILE *fp;

	memset(b, 0, sizeof *b);
	snprintf(b->dir, sizeof b->dir, "/tmp/test_report_watch.XXXXXX");
	b->cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	CHECK(b->cfg != NULL);
	if (b->cfg == NULL || (b->started = fake_api_start(&b->f, table, ctx) == 0) == 0 || mkdtemp(b->dir) == NULL) {
		CHECK(!"set-up");
		return -1;
	}
	snprintf(b->path, sizeof b->path, "%s/kubeconfig", b->dir);
	if (fake_api_kubeconfig(&b->f, kc, sizeof kc) == 0 && (fp = fopen(b->path, "w")) != NULL) {
		fputs(kc, fp);
		fclose(fp);
	}
	o.cfg = b->cfg;
	o.kubeconfig = b->path;
	o.interval_s = 1;
	o.backoff_max_ms = 200;
	CHECK((b->w = report_watch_start(&o, &err)) != NULL);
	CHECK(b->w == NULL || (b->s = report_serve_start(b->w, "127.0.0.1:0", &err)) != NULL);
	if (b->s == NULL) {
		fprintf(stderr, "  %s\n", err.msg);
		return -1;
	}
	b->port = report_serve_port(b->s);
	return 0;
}

static void bench_stop(struct bench *b)
{
	report_serve_free(b->s);
	report_watch_free(b->w);
	if (b->started)
		fake_api_stop(&b->f);
	unlink(b->path);
	rmdir(b->dir);
	config_free(b->cfg);
}

static void test_watch_against_fake_api(void)
{
	struct bench b;
	atomic_int pod_lists = 0;
	char *text, *big;
	unsigned port;
	int status;

	if (bench_start(&b, routes, &pod_lists) != 0)
		goto out;
	port = b.port;
	/* The relist after the 410 forgot p1 (so t4-a is idle again) and added p2 (Pending). */
	EVENTUALLY(is(port, "gpu_admission_watch_relists_total{resource=\"pods\"}", "1") &&
		   is(port, "gpu_admission_report_idle_gpu_nodes{pool=\"t4\"}", "2") &&
		   is(port, "gpu_admission_report_pending_gpu_pods{reason=\"missing-toleration\"}", "1"));
	CHECK_STR(metric(port, "gpu_admission_report_idle_node_cost_per_hour{pool=\"t4\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"pods\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_synced{resource=\"nodes\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_ready"), "1");
	/* The server 404s resource.k8s.io: nodes and pods are watched all the same, DRA said absent. */
	CHECK_STR(metric(port, "gpu_admission_watch_served{resource=\"resourceslices\"}"), "0");
	CHECK_STR(metric(port, "gpu_admission_watch_served{resource=\"pods\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_synced{resource=\"resourceclaims\"}"), "0");
	CHECK_STR(metric(port, "gpu_admission_watch_errors_total{resource=\"resourceclaims\"}"), "0");
	free(http(port, "GET", "/readyz", NULL, 0, &status));
	CHECK_INT(status, 200);
	free(http(port, "GET", "/healthz", NULL, 0, &status));
	CHECK_INT(status, 200);
	free(http(port, "GET", "/nope", NULL, 0, &status));
	CHECK_INT(status, 404);
	/*
	 * What if the pool were priced at 2 and gave its pods the GPU toleration (the
	 * default gpuTaint): p2 is placed on t4-a, one node stays idle, at $2/h.
	 */
	text = http(port, "POST", "/what-if", "pools:\n  - {name: t4, pricePerNodeHour: 2, nodeSelector: {agentpool: t4}}\n",
		    sizeof "pools:\n  - {name: t4, pricePerNodeHour: 2, nodeSelector: {agentpool: t4}}\n" - 1, &status);
	CHECK_INT(status, 200);
	CHECK(text != NULL && strstr(text, "\"whatIf\"") != NULL && strstr(text, "\"name\": \"p2\",\n        \"pool\": \"t4\",\n        \"node\": \"t4-a\"") != NULL &&
	      strstr(text, "\"before\": 1.0,\n      \"after\": 2.0,") != NULL);
	if (check_current_failed && text != NULL)
		fprintf(stderr, "  what-if: %s\n", strstr(text, "\"whatIf\"") ? strstr(text, "\"whatIf\"") : text);
	free(text);
	text = http(port, "POST", "/what-if", "pools: 3\n", 9, &status);
	CHECK_INT(status, 400);
	CHECK(text != NULL && strstr(text, "what-if:1:8: pools") != NULL);
	free(text);
	free(http(port, "POST", "/what-if?output=xml", "pools: []\n", 10, &status));
	CHECK_INT(status, 400);
	if ((big = malloc(CONFIG_FILE_MAX + 2)) != NULL) {
		memset(big, '#', CONFIG_FILE_MAX + 1);
		free(http(port, "POST", "/what-if", big, CONFIG_FILE_MAX + 1, &status));
		CHECK_INT(status, 413);
		free(big);
	}
out:
	bench_stop(&b);
}

/*
 * With resource.k8s.io/v1 served: the slices and claims feed the model, so
 * t4-a, whose GPU claim c1 holds, is not idle and d2 waits for its
 * unallocated claim; c1's DELETED event makes t4-a idle again and d1 a CPU
 * pod on a GPU node.
 */
static void test_watch_dra(void)
{
	struct bench b;
	atomic_int release = 0;
	unsigned port;

	if (bench_start(&b, dra_routes, &release) != 0)
		goto out;
	port = b.port;
	EVENTUALLY(is(port, "gpu_admission_watch_ready", "1"));
	CHECK_STR(metric(port, "gpu_admission_watch_served{resource=\"resourceclaims\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_synced{resource=\"resourceslices\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"resourceslices\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"resourceclaims\"}"), "2");
	CHECK_STR(metric(port, "gpu_admission_report_idle_gpu_nodes{pool=\"t4\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_pending_gpu_pods{reason=\"claim-unallocated\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_cpu_pods_on_gpu_nodes{pool=\"t4\",owner=\"other\"}"), "0");
	atomic_store(&release, 1);
	EVENTUALLY(is(port, "gpu_admission_report_idle_gpu_nodes{pool=\"t4\"}", "2"));
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"resourceclaims\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_cpu_pods_on_gpu_nodes{pool=\"t4\",owner=\"other\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_pending_gpu_pods{reason=\"claim-unallocated\"}"), "1");
out:
	bench_stop(&b);
}

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);  /* the watch's info lines are not the test's output */
	RUN(test_watch_against_fake_api);
	RUN(test_watch_dra);
	return check_done("report_watch");
}
