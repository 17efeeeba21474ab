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
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "check.h"
#include "base/log.h"
#include "policy/config.h"
#include "report/report_serve.h"
#include "report/report_watch.h"

static const char policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], pricePerNodeHour: 0.5, gpusPerNode: 1,\n"
	"     nodeSelector: {agentpool: t4}}\n";

/* ==== The fake API server ==== */

struct fake {
	int fd, port;
	pthread_t thread;
	atomic_int stop;
	atomic_int pod_lists;   /* pod lists answered */
	atomic_int active;      /* connections being answered */
	int dra;                /* serves resource.k8s.io/v1 (the DRA lists); 0: 404s the group */
	atomic_int release;     /* the claims' watch sends its DELETED event once set */
};

static void reply(int c, const char *body)
{
	char head[160];
	int n = snprintf(head, sizeof head, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
			 "Connection: close\r\n\r\n");

	if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
		return;
}

static void reply_404(int c)
{
	static const char msg[] = "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
		"{\"kind\":\"Status\",\"code\":404,\"reason\":\"NotFound\",\"message\":\"the server could not find "
		"the requested resource\"}";

	if (write(c, msg, sizeof msg - 1) < 0)
		return;
}

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

static void hold(struct fake *f)
{
	while (!atomic_load(&f->stop))
		usleep(20000);
}

/* The DRA routes, when f serves them: 1 when path was one. */
static int answer_dra(struct fake *f, int c, const char *path)
{
	if (!f->dra)
		return 0;
	if (strcmp(path, "/apis/resource.k8s.io/v1") == 0) {
		reply(c, dra_resources);
	} else if (strncmp(path, "/api/v1/pods?limit=", 19) == 0) {
		reply(c, dra_pods);
	} else if (strncmp(path, "/apis/resource.k8s.io/v1/resourceslices?limit=", 46) == 0) {
		reply(c, dra_slices);
	} else if (strncmp(path, "/apis/resource.k8s.io/v1/resourceclaims?limit=", 46) == 0) {
		reply(c, dra_claims);
	} else if (strstr(path, "/apis/resource.k8s.io/v1/resourceclaims?watch=1") != NULL &&
		   strstr(path, "resourceVersion=11&") != NULL) {
		while (!atomic_load(&f->stop) && !atomic_load(&f->release))
			usleep(20000);
		reply(c, "{\"type\":\"DELETED\",\"object\":" CLAIM("c1", "12", C1_STATUS) "}\n");
	} else {
		return 0;
	}
	return 1;
}

static void answer(struct fake *f, int c, const char *path)
{
	if (answer_dra(f, c, path))
		return;
	if (strncmp(path, "/apis/resource.k8s.io/", 22) == 0 && strstr(path, "watch=1") == NULL) {
		reply_404(c);
	} else if (strncmp(path, "/api/v1/nodes?limit=", 20) == 0) {
		reply(c, nodes_list);
	} else if (strncmp(path, "/api/v1/pods?limit=", 19) == 0) {
		reply(c, atomic_fetch_add(&f->pod_lists, 1) == 0 ? pods_list1 : pods_list2);
	} else if (strstr(path, "/api/v1/pods?watch=1") != NULL && strstr(path, "resourceVersion=10&") != NULL) {
		reply(c, "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410,\"reason\":\"Expired\","
		      "\"message\":\"too old resource version\"}}\n");
	} else {  /* every other watch: held open until the test ends */
		hold(f);
	}
}

/* One connection, on a thread of its own: a held watch must not stop the others. */
struct conn {
	struct fake *f;
	int c;
};

static void *serve_conn(void *arg)
{
	struct conn *k = arg;
	struct timeval patient = { 30, 0 };
	char req[2048], path[1024];
	size_t have = 0;
	ssize_t got;

	setsockopt(k->c, SOL_SOCKET, SO_RCVTIMEO, &patient, sizeof patient);
	while (have < sizeof req - 1 && (got = read(k->c, req + have, sizeof req - 1 - have)) > 0) {
		have += (size_t)got;
		req[have] = '\0';
		if (strstr(req, "\r\n\r\n") != NULL)
			break;
	}
	req[have] = '\0';
	if (sscanf(req, "GET %1023s", path) == 1)
		answer(k->f, k->c, path);
	close(k->c);
	atomic_fetch_sub(&k->f->active, 1);
	free(k);
	return NULL;
}

static void *serve_fake(void *arg)
{
	struct fake *f = arg;

	while (!atomic_load(&f->stop)) {
		struct conn *k;
		pthread_t t;
		int c = accept(f->fd, NULL, NULL);

		if (c < 0)
			continue;
		if ((k = malloc(sizeof *k)) == NULL) {
			close(c);
			continue;
		}
		k->f = f;
		k->c = c;
		atomic_fetch_add(&f->active, 1);
		if (pthread_create(&t, NULL, serve_conn, k) != 0) {
			atomic_fetch_sub(&f->active, 1);
			close(c);
			free(k);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

static int fake_start(struct fake *f, int dra)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	struct timeval tv = { 0, 100000 };

	memset(f, 0, sizeof *f);
	f->dra = dra;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((f->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(f->fd, 16) != 0 || getsockname(f->fd, (struct sockaddr *)&a, &len) != 0)
		return -1;
	setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	f->port = ntohs(a.sin_port);
	return pthread_create(&f->thread, NULL, serve_fake, f) == 0 ? 0 : -1;
}

static void fake_stop(struct fake *f)
{
	atomic_store(&f->stop, 1);
	pthread_join(f->thread, NULL);
	while (atomic_load(&f->active) > 0)  /* held watches see the stop within 20 ms */
		usleep(10000);
	close(f->fd);
}

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

#define EVENTUALLY(cond) do { \
	int tries_ = 0; \
	while (!(cond) && tries_++ < 1500) \
		usleep(20000); \
	CHECK(cond); \
} while (0)

static int is(unsigned port, const char *sample, const char *want)
{
	return strcmp(metric(port, sample), want) == 0;
}

/* ==== The test ==== */

/* path[cap] = dir/kubeconfig, written: the fake server on port, a token. */
static void write_kubeconfig(char *path, size_t cap, const char *dir, int port)
{
	char kc[256];
	FILE *fp;

	snprintf(path, cap, "%s/kubeconfig", dir);
	snprintf(kc, sizeof kc, "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\nusers:\n- name: u\n"
		 "  user: {token: t}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n", port);
	if ((fp = fopen(path, "w")) != NULL) {
		fputs(kc, fp);
		fclose(fp);
	}
}

static void test_watch_against_fake_api(void)
{
	struct fake f;
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_watch_options o = { 0 };
	struct report_watch *w = NULL;
	struct report_serve *s = NULL;
	char dir[] = "/tmp/test_report_watch.XXXXXX", path[300], *text, *big;
	unsigned port;
	int status;

	CHECK(cfg != NULL);
	if (cfg == NULL || fake_start(&f, 0) != 0 || mkdtemp(dir) == NULL) {
		CHECK(!"set-up");
		config_free(cfg);
		return;
	}
	write_kubeconfig(path, sizeof path, dir, f.port);
	o.cfg = cfg;
	o.kubeconfig = path;
	o.interval_s = 1;
	o.backoff_max_ms = 200;
	CHECK((w = report_watch_start(&o, &err)) != NULL);
	CHECK(w == NULL || (s = report_serve_start(w, "127.0.0.1:0", &err)) != NULL);
	if (s == NULL) {
		fprintf(stderr, "  %s\n", err.msg);
		goto out;
	}
	port = report_serve_port(s);
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
	report_serve_free(s);
	report_watch_free(w);
	fake_stop(&f);
	unlink(path);
	rmdir(dir);
	config_free(cfg);
}

/*
 * With resource.k8s.io/v1 served: the slices and claims feed the model, so
 * t4-a, whose GPU claim c1 holds, is not idle and d2 waits for its
 * unallocated claim; c1's DELETED event makes t4-a idle again and d1 a CPU
 * pod on a GPU node.
 */
static void test_watch_dra(void)
{
	struct fake f;
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_watch_options o = { 0 };
	struct report_watch *w = NULL;
	struct report_serve *s = NULL;
	char dir[] = "/tmp/test_report_watch.XXXXXX", path[300];
	unsigned port;

	CHECK(cfg != NULL);
	if (cfg == NULL || fake_start(&f, 1) != 0 || mkdtemp(dir) == NULL) {
		CHECK(!"set-up");
		config_free(cfg);
		return;
	}
	write_kubeconfig(path, sizeof path, dir, f.port);
	o.cfg = cfg;
	o.kubeconfig = path;
	o.interval_s = 1;
	o.backoff_max_ms = 200;
	CHECK((w = report_watch_start(&o, &err)) != NULL);
	CHECK(w == NULL || (s = report_serve_start(w, "127.0.0.1:0", &err)) != NULL);
	if (s == NULL) {
		fprintf(stderr, "  %s\n", err.msg);
		goto out;
	}
	port = report_serve_port(s);
	EVENTUALLY(is(port, "gpu_admission_watch_ready", "1"));
	CHECK_STR(metric(port, "gpu_admission_watch_served{resource=\"resourceclaims\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_synced{resource=\"resourceslices\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"resourceslices\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"resourceclaims\"}"), "2");
	CHECK_STR(metric(port, "gpu_admission_report_idle_gpu_nodes{pool=\"t4\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_pending_gpu_pods{reason=\"claim-unallocated\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_cpu_pods_on_gpu_nodes{pool=\"t4\",owner=\"other\"}"), "0");
	atomic_store(&f.release, 1);
	EVENTUALLY(is(port, "gpu_admission_report_idle_gpu_nodes{pool=\"t4\"}", "2"));
	CHECK_STR(metric(port, "gpu_admission_watch_objects{resource=\"resourceclaims\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_cpu_pods_on_gpu_nodes{pool=\"t4\",owner=\"other\"}"), "1");
	CHECK_STR(metric(port, "gpu_admission_report_pending_gpu_pods{reason=\"claim-unallocated\"}"), "1");
out:
	report_serve_free(s);
	report_watch_free(w);
	fake_stop(&f);
	unlink(path);
	rmdir(dir);
	config_free(cfg);
}

int main(void)
{
	log_set_level(LOG_LEVEL_ERROR);  /* the watch's info lines are not the test's output */
	RUN(test_watch_against_fake_api);
	RUN(test_watch_dra);
	return check_done("report_watch");
}
