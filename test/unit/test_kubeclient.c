/*
 * test_kubeclient: the pure parts of the API client and the watch cache:
 * kubeconfig and in-cluster configuration, the watch stream's line framing,
 * the backoff, and the store's semantics (limits, deletes, lookups).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "fake_api.h"
#include "base/log.h"
#include "k8s/kubeclient.h"
#include "k8s/watchcache.h"

static char dir[] = "/tmp/test_kubeclient.XXXXXX";

static void put_file(const char *name, const char *text)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f == NULL)
		abort();
	fputs(text, f);
	fclose(f);
}

/* kubectl's shape, as test/cluster/cluster.lib writes it: files, relative ones resolved against the kubeconfig's folder. */
static void test_kubeconfig_files(void)
{
	struct kube_config c;
	struct error err = { 0 };
	char path[512];
	static const char kc[] =
		"apiVersion: v1\nkind: Config\n"
		"clusters:\n- name: other\n  cluster: {server: \"https://10.0.0.1\"}\n"
		"- name: test\n  cluster: {server: \"https://192.0.2.1:6443/\", certificate-authority: ca.crt}\n"
		"users:\n- name: u\n  user: {client-certificate: u.crt, client-key: u.key}\n"
		"contexts:\n- name: test\n  context: {cluster: test, user: u, namespace: team-a}\n"
		"current-context: test\n";

	put_file("ca.crt", "CA PEM\n");
	put_file("u.crt", "CERT PEM\n");
	put_file("u.key", "KEY PEM\n");
	put_file("config", kc);
	snprintf(path, sizeof path, "%s/config", dir);
	CHECK_INT(kube_config_load(&c, path, &err), 0);
	CHECK_STR(c.server, "https://192.0.2.1:6443");
	CHECK_STR(c.ca, "CA PEM\n");
	CHECK_INT(c.ca_len, 7);
	CHECK_STR(c.cert, "CERT PEM\n");
	CHECK_STR(c.key, "KEY PEM\n");
	CHECK_STR(c.ns, "team-a");
	CHECK(c.token == NULL);
	CHECK_INT(c.insecure, 0);
	kube_config_free(&c);
}

/* Embedded credentials (kind's and AKS's kubeconfigs), a token, insecure-skip-tls-verify. */
static void test_kubeconfig_data(void)
{
	struct kube_config c;
	struct error err = { 0 };
	static const char kc[] =
		"clusters:\n- name: c\n  cluster:\n    server: https://k\n    insecure-skip-tls-verify: true\n"
		"    certificate-authority-data: Q0EgUEVNCg==\n"
		"users:\n- name: u\n  user:\n    client-certificate-data: Q0VSVA==\n    client-key-data: S0VZ\n"
		"    token: \" abc \"\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n";

	CHECK_INT(kube_config_parse(&c, "kc", kc, strlen(kc), NULL, &err), 0);
	CHECK_STR(c.server, "https://k");
	CHECK_STR(c.ca, "CA PEM\n");
	CHECK_STR(c.cert, "CERT");
	CHECK_STR(c.key, "KEY");
	CHECK_STR(c.token, "abc");
	CHECK_INT(c.insecure, 1);
	CHECK_STR(c.ns, "");
	kube_config_free(&c);
}

static void refused(const char *kc, const char *want)
{
	struct kube_config c;
	struct error err = { 0 };

	CHECK_INT(kube_config_parse(&c, "kc", kc, strlen(kc), dir, &err), -1);
	CHECK_INT(err.kind, ERROR_CONFIG);
	if (strstr(err.msg, want) == NULL)
		fprintf(stderr, "  message: %s\n", err.msg);
	CHECK(strstr(err.msg, want) != NULL);
	kube_config_free(&c);
}

static void test_kubeconfig_refused(void)
{
	refused("current-context: x\n", "no context named \"x\"");
	refused("contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", "no cluster named \"c\"");
	refused("clusters:\n- name: c\n  cluster: {server: \"ftp://k\"}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", "not an http(s) URL");
	refused("clusters:\n- name: c\n  cluster: {server: \"https://k\"}\n"
		"users:\n- name: u\n  user: {exec: {command: az}}\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n", "a plugin");
	refused("clusters:\n- name: c\n  cluster: {server: \"https://k\", certificate-authority-data: \"!!\"}\n"
		"contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n", "not base64");
	refused("clusters:\n- name: c\n  cluster: {server: \"https://k\"}\n"
		"users:\n- name: u\n  user: {client-certificate-data: Q0VSVA==}\n"
		"contexts:\n- name: x\n  context: {cluster: c, user: u}\ncurrent-context: x\n", "not both");
	refused("- just a list\n", "not a kubeconfig");
}

static void test_in_cluster(void)
{
	struct kube_config c;
	struct error err = { 0 };

	unsetenv("KUBERNETES_SERVICE_HOST");
	CHECK_INT(kube_config_in_cluster(&c, dir, &err), -1);
	CHECK_INT(err.kind, ERROR_CONFIG);
	setenv("KUBERNETES_SERVICE_HOST", "fd00::1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);
	put_file("namespace", "gpu-admission\n");
	CHECK_INT(kube_config_in_cluster(&c, dir, &err), 0);
	CHECK_STR(c.server, "https://[fd00::1]:443");
	CHECK_STR(c.ca, "CA PEM\n");
	CHECK_STR(c.ns, "gpu-admission");
	CHECK(strstr(c.token_file, "/token") != NULL);
	CHECK(c.token == NULL);  /* read before each request, never kept */
	kube_config_free(&c);
}

/*
 * Which configuration without --kubeconfig: controller-runtime's GetConfig
 * order over client-go's loading rules (kubeclient.h cites both):
 * $KUBECONFIG's first existing file, the service account, ~/.kube/config.
 */
static void test_config_find(void)
{
	static const char kc[] = "clusters:\n- name: c\n  cluster: {server: \"https://%s\"}\n"
				 "contexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n";
	struct kube_config c;
	struct error err = { 0 };
	char text[512], list[1024], home[512], from[1200];

	snprintf(text, sizeof text, kc, "from-env");
	put_file("env.yaml", text);
	snprintf(text, sizeof text, kc, "from-env-2");
	put_file("env2.yaml", text);
	snprintf(home, sizeof home, "%s/home", dir);
	snprintf(list, sizeof list, "%s/.kube", home);
	CHECK_INT(mkdir(home, 0700), 0);
	CHECK_INT(mkdir(list, 0700), 0);
	snprintf(text, sizeof text, kc, "from-home");
	put_file("home/.kube/config", text);
	setenv("HOME", home, 1);
	setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1", 1);
	setenv("KUBERNETES_SERVICE_PORT", "443", 1);

	/* --kubeconfig first, whatever else is set. */
	snprintf(list, sizeof list, "%s/env2.yaml", dir);
	setenv("KUBECONFIG", list, 1);
	snprintf(text, sizeof text, "%s/env.yaml", dir);
	CHECK_INT(kube_config_find(&c, text, dir, from, sizeof from, &err), 0);
	CHECK_STR(c.server, "https://from-env");
	CHECK(strncmp(from, "--kubeconfig ", 13) == 0);
	kube_config_free(&c);

	/* $KUBECONFIG before the service account: its first file that exists, duplicates dropped; others said. */
	snprintf(list, sizeof list, ":%s/missing:%s/env.yaml:%s/env.yaml", dir, dir, dir);
	setenv("KUBECONFIG", list, 1);
	CHECK_INT(kube_config_find(&c, NULL, dir, from, sizeof from, &err), 0);
	CHECK_STR(c.server, "https://from-env");
	CHECK(strstr(from, "$KUBECONFIG ") == from && strstr(from, "not merged") == NULL);
	kube_config_free(&c);
	snprintf(list, sizeof list, "%s/env.yaml:%s/env2.yaml", dir, dir);
	setenv("KUBECONFIG", list, 1);
	CHECK_INT(kube_config_find(&c, NULL, dir, from, sizeof from, &err), 0);
	CHECK_STR(c.server, "https://from-env");
	CHECK(strstr(from, "the others are not merged") != NULL);
	kube_config_free(&c);
	/* Set but naming nothing that exists: an error, not the next source (client-go reads only the list). */
	snprintf(list, sizeof list, "%s/missing", dir);
	setenv("KUBECONFIG", list, 1);
	CHECK_INT(kube_config_find(&c, NULL, dir, from, sizeof from, &err), -1);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "none of its files exists") != NULL);
	kube_config_free(&c);

	/* Unset or empty: in a cluster, the service account before ~/.kube/config. */
	setenv("KUBECONFIG", "", 1);
	CHECK_INT(kube_config_find(&c, NULL, dir, from, sizeof from, &err), 0);
	CHECK_STR(c.server, "https://10.0.0.1:443");
	CHECK(strstr(from, "service account") != NULL);
	kube_config_free(&c);
	unsetenv("KUBECONFIG");
	unsetenv("KUBERNETES_SERVICE_HOST");
	CHECK_INT(kube_config_find(&c, NULL, dir, from, sizeof from, &err), 0);
	CHECK_STR(c.server, "https://from-home");
	CHECK(strncmp(from, "~/.kube/config", 14) == 0);
	kube_config_free(&c);

	/* None: the message names every way to give one. */
	snprintf(text, sizeof text, "%s/home/.kube/config", dir);
	CHECK_INT(unlink(text), 0);
	CHECK_INT(kube_config_find(&c, NULL, dir, from, sizeof from, &err), -1);
	CHECK_INT(err.kind, ERROR_CONFIG);
	CHECK(strstr(err.msg, "--kubeconfig") != NULL);
	CHECK(strstr(err.msg, "$KUBECONFIG") != NULL);
	CHECK(strstr(err.msg, "~/.kube/config") != NULL);
	CHECK(strstr(err.msg, text) != NULL);
	kube_config_free(&c);
}

/* ==== Line framing ==== */

struct got {
	char text[1024];
	int n, over;
};

static int collect(void *ctx, const char *line, size_t len)
{
	struct got *g = ctx;
	size_t have = strlen(g->text);

	if (line == NULL) {
		g->over++;
		strcat(g->text, "<over>|");
		return 0;
	}
	g->n++;
	snprintf(g->text + have, sizeof g->text - have, "%.*s|", (int)len, line);
	return 0;
}

static void test_lines_split_anywhere(void)
{
	static const char s[] = "{\"a\":1}\n\n{\"b\":2}\n{\"c\"";
	struct kube_lines l;
	struct error err = { 0 };
	size_t cut;

	/* However the stream is cut into reads, the same lines come out. */
	for (cut = 0; cut <= sizeof s - 1; cut++) {
		struct got g = { { 0 }, 0, 0 };

		kube_lines_init(&l, 16);
		CHECK_INT(kube_lines_feed(&l, s, cut, collect, &g, &err), 0);
		CHECK_INT(kube_lines_feed(&l, s + cut, sizeof s - 1 - cut, collect, &g, &err), 0);
		CHECK_STR(g.text, "{\"a\":1}||{\"b\":2}|");
		CHECK_INT(kube_lines_pending(&l), 4);
		kube_lines_free(&l);
	}
}

static void test_lines_bounded(void)
{
	struct kube_lines l;
	struct error err = { 0 };
	struct got g = { { 0 }, 0, 0 };
	int i;

	kube_lines_init(&l, 8);
	CHECK_INT(kube_lines_feed(&l, "12345678\n", 9, collect, &g, &err), 0);  /* exactly the limit: kept */
	/* An over-long line, fed in pieces, is reported once and never held. */
	for (i = 0; i < 100; i++)
		CHECK_INT(kube_lines_feed(&l, "abcdefgh", 8, collect, &g, &err), 0);
	CHECK(l.cap <= 8);
	CHECK_INT(kube_lines_feed(&l, "x\nok\n", 5, collect, &g, &err), 0);
	CHECK_STR(g.text, "12345678|<over>|ok|");
	CHECK_INT(g.over, 1);
	kube_lines_free(&l);
}

static int stop_at_b(void *ctx, const char *line, size_t len)
{
	return len > 0 && line != NULL && line[0] == 'b' ? 7 : 0;
}

static void test_lines_stop(void)
{
	struct kube_lines l;
	struct error err = { 0 };

	kube_lines_init(&l, 64);
	CHECK_INT(kube_lines_feed(&l, "a\nb\nc\n", 6, stop_at_b, NULL, &err), 7);
	kube_lines_free(&l);
}

/* ==== Backoff ==== */

static void test_backoff(void)
{
	unsigned a, r;

	for (a = 0; a < 40; a++) {
		unsigned long long base = a < 10 ? 500ull << a : 30000;
		unsigned lo = ~0u, hi = 0;

		if (base > 30000)
			base = 30000;
		for (r = 0; r < 2000; r += 7) {
			unsigned ms = watchcache_backoff_ms(a, 500, 30000, r * 2654435761u);

			lo = ms < lo ? ms : lo;
			hi = ms > hi ? ms : hi;
		}
		/* Doubling from the minimum, capped; each wait in [half, whole] of it, and spread. */
		CHECK(lo >= base / 2);
		CHECK(hi <= base);
		CHECK(lo < hi);
	}
	CHECK_INT(watchcache_backoff_ms(0, 500, 30000, 0), 250);
	CHECK_INT(watchcache_backoff_ms(0, 500, 30000, 250), 500);
	CHECK_INT(watchcache_backoff_ms(3, 500, 30000, 0), 2000);
	CHECK_INT(watchcache_backoff_ms(100, 500, 30000, 0), 15000);
	CHECK_INT(watchcache_backoff_ms(100, 500, 30000, 15000), 30000);
	CHECK_INT(watchcache_backoff_ms(~0u, 500, 30000, ~0u) <= 30000, 1);
}

/* ==== The store ==== */

static json_t *obj(const char *ns, const char *name, const char *rv, const char *cls)
{
	return json_pack("{s:s, s:{s:s, s:s, s:s}, s:{s:s}}", "kind", "ResourceClaim", "metadata", "namespace", ns,
			 "name", name, "resourceVersion", rv, "spec", "class", cls);
}

static void test_store(void)
{
	struct watchcache_options o = { "claims", "/x", "resource.k8s.io/v1", "ResourceClaim", 2, 100, 0, 0, 0, NULL };
	struct error err = { 0 };
	struct watchcache *w = watchcache_new(NULL, &o, &err);
	struct watchcache_stats st;
	json_t *t = json_pack("{s:{s:s, s:s, s:[{s:s}]}}", "metadata", "name", "t", "namespace", "ns", "managedFields",
			      "manager", "kubectl"),
	       *a = obj("ns", "a", "1", "gpu"), *a2 = obj("ns", "a", "5", "cpu"), *b = obj("ns", "b", "2", "gpu"),
	       *c = obj("ns", "c", "3", "gpu"), *got;

	CHECK(w != NULL);
	CHECK_INT(watchcache_get(w, "ns", "a", &got), WATCHCACHE_COLD);
	CHECK_INT(watchcache_apply(w, "ADDED", a, 50, &err), 0);
	CHECK_INT(watchcache_apply(w, "ADDED", b, 50, &err), 0);
	CHECK_INT(watchcache_apply(w, "ADDED", c, 50, &err), 0);   /* over max_objects: refused */
	CHECK_INT(watchcache_get(w, "ns", "c", &got), WATCHCACHE_MISSING);
	CHECK_INT(watchcache_get(w, "ns", "a", &got), WATCHCACHE_FOUND);
	CHECK_STR(json_string_value(json_object_get(json_object_get(got, "spec"), "class")), "gpu");
	CHECK(got != a);  /* a copy: the store's own object never leaves the lock */
	json_decref(got);
	CHECK_INT(watchcache_get(w, "other", "a", &got), WATCHCACHE_MISSING);
	/* A new version over the size limit: refused, and the old one forgotten rather than kept stale. */
	CHECK_INT(watchcache_apply(w, "MODIFIED", a2, 101, &err), 0);
	CHECK_INT(watchcache_get(w, "ns", "a", &got), WATCHCACHE_MISSING);
	CHECK_INT(watchcache_apply(w, "MODIFIED", a2, 100, &err), 0);
	CHECK_INT(watchcache_get(w, "ns", "a", &got), WATCHCACHE_FOUND);
	CHECK_STR(json_string_value(json_object_get(json_object_get(got, "spec"), "class")), "cpu");
	json_decref(got);
	CHECK_INT(watchcache_apply(w, "DELETED", b, 50, &err), 0);
	CHECK_INT(watchcache_get(w, "ns", "b", &got), WATCHCACHE_MISSING);
	CHECK_INT(watchcache_apply(w, "BOOKMARK", c, 50, &err), 0);  /* moves the version only */
	CHECK_INT(watchcache_get(w, "ns", "c", &got), WATCHCACHE_MISSING);
	CHECK_INT(watchcache_apply(w, NULL, NULL, 1000000, &err), 0); /* an over-long line: counted */
	watchcache_stats(w, &st);
	CHECK_INT(st.objects, 1);
	CHECK_INT(st.refused, 3);
	CHECK_INT(st.events, 7);
	CHECK_INT(st.synced, 1);
	/* A LIST's items carry no apiVersion or kind: the cache's own are set. */
	CHECK_INT(watchcache_apply(w, "ADDED", t, 50, &err), 0);
	CHECK_INT(watchcache_get(w, "ns", "t", &got), WATCHCACHE_FOUND);
	CHECK_STR(json_string_value(json_object_get(got, "apiVersion")), "resource.k8s.io/v1");
	CHECK_STR(json_string_value(json_object_get(got, "kind")), "ResourceClaim");
	CHECK(json_object_get(json_object_get(got, "metadata"), "managedFields") == NULL);
	CHECK_STR(json_string_value(json_object_get(json_object_get(got, "metadata"), "name")), "t");
	json_decref(got);
	json_decref(t);
	t = json_object();
	CHECK_INT(watchcache_apply(w, "ADDED", t, 5, &err), -1);
	CHECK_INT(err.kind, ERROR_INPUT);
	json_decref(t);
	watchcache_free(w);
	json_decref(a);
	json_decref(a2);
	json_decref(b);
	json_decref(c);
}


/* ==== Against the fake API server (fake_api.h) ==== */

static const char fake_page1[] =
	"{\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"10\",\"continue\":\"c 1\"},"
	"\"items\":[{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"5\"}}]}";
static const char fake_page2[] =
	"{\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"10\"},"
	"\"items\":[{\"metadata\":{\"namespace\":\"ns\",\"name\":\"b\",\"resourceVersion\":\"6\"}}]}";
static const char fake_relist[] =
	"{\"kind\":\"ThingList\",\"metadata\":{\"resourceVersion\":\"20\"},"
	"\"items\":[{\"metadata\":{\"namespace\":\"ns\",\"name\":\"z\",\"resourceVersion\":\"19\"}}]}";
static const char fake_missing[] = "{\"kind\":\"Status\",\"code\":404,\"message\":\"things \\\"missing\\\" not found\"}";

/* The first watch: an add, a delete, an event over the line limit, a bookmark; then the server ends it. */
static void fake_watch1(struct fake_api *f, int c, const struct fake_api_request *req)
{
	static char big[6000];
	char *body = malloc(sizeof big + 1024);

	if (body == NULL)
		return;
	memset(big, 'x', sizeof big - 1);
	snprintf(body, sizeof big + 1024,
		 "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"c\",\"resourceVersion\":\"12\"}}}\n"
		 "{\"type\":\"DELETED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"a\",\"resourceVersion\":\"13\"}}}\n"
		 "{\"type\":\"ADDED\",\"object\":{\"metadata\":{\"namespace\":\"ns\",\"name\":\"big\"},\"x\":\"%s\"}}\n"
		 "{\"type\":\"BOOKMARK\",\"object\":{\"metadata\":{\"resourceVersion\":\"14\"}}}\n", big);
	fake_api_reply(c, "200 OK", body);
	free(body);
}

/* The first list's pages; after the bookmark's version has been watched, the relist. */
static void fake_list(struct fake_api *f, int c, const struct fake_api_request *req)
{
	fake_api_reply(c, "200 OK", fake_api_logged(f, "resourceVersion=14") ? fake_relist : fake_page1);
}

static const struct fake_api_route fake_routes[] = {
	{ NULL, FAKE_API_CONTAINS, "/missing", "404 Not Found", fake_missing, NULL },
	{ "PATCH", FAKE_API_CONTAINS, "/forbidden", "403 Forbidden",
	  "{\"kind\":\"Status\",\"code\":403,\"message\":\"cannot patch\"}", NULL },
	{ "POST", FAKE_API_PREFIX, "/", "201 Created", "{\"metadata\":{\"name\":\"made-x1\"}}", NULL },
	{ "PATCH", FAKE_API_PREFIX, "/", "200 OK", "{\"kind\":\"Status\",\"status\":\"Success\"}", NULL },
	{ "DELETE", FAKE_API_PREFIX, "/", "200 OK", "{\"kind\":\"Status\",\"status\":\"Success\"}", NULL },
	{ "GET", FAKE_API_CONTAINS, "continue=c%201", "200 OK", fake_page2, NULL },
	{ "GET", FAKE_API_CONTAINS, "?limit=", NULL, NULL, fake_list },
	{ "GET", FAKE_API_CONTAINS, "resourceVersion=10&", NULL, NULL, fake_watch1 },
	/* The bookmark's version: gone. */
	{ "GET", FAKE_API_CONTAINS, "resourceVersion=14&", "200 OK", FAKE_API_WATCH_GONE, NULL },
	/* The watch after the relist: held open until the test ends. */
	{ "GET", FAKE_API_PREFIX, "/", NULL, NULL, fake_api_hold },
	{ NULL, FAKE_API_EXACT, NULL, NULL, NULL, NULL },
};

/* Starts the fake with fake_routes and parses a kubeconfig for it into kc; 0 or -1. */
static int fake_with_config(struct fake_api *f, struct kube_config *kc)
{
	struct error err = { 0 };
	char text[512];

	if (fake_api_start(f, fake_routes, NULL) != 0)
		return -1;
	if (fake_api_kubeconfig(f, text, sizeof text) != 0 || kube_config_parse(kc, "kc", text, strlen(text), NULL, &err) != 0) {
		fake_api_stop(f);
		return -1;
	}
	return 0;
}

static void test_against_fake_api(void)
{
	struct fake_api f;
	struct kube_config kc;
	struct error err = { 0 };
	struct watchcache_options o = { "things", "/apis/x/v1/things", "x/v1", "Thing", 0, 2048, 10, 20, 300, NULL };
	struct watchcache *w;
	struct watchcache_stats st;
	struct kube_client *k;
	json_t *got = NULL;
	long status = 0;

	if (fake_with_config(&f, &kc) != 0) {
		CHECK(!"fake API server");
		return;
	}
	/* GET: a refusal's Status message and kind. */
	k = kube_client_new(&kc, NULL, &err);
	CHECK_INT(kube_get(k, "/apis/x/v1/namespaces/ns/things/missing", &got, &status, &err), -1);
	CHECK_INT(status, 404);
	CHECK_INT(err.kind, ERROR_NOT_FOUND);
	CHECK(strstr(err.msg, "things \"missing\" not found") != NULL);
	kube_client_free(k);
	/* The cache: two pages, a watch (add, delete, an over-long event, a bookmark), 410 at the bookmark's version, a relist. */
	w = watchcache_new(&kc, &o, &err);
	CHECK_INT(watchcache_start(w, &err), 0);
	EVENTUALLY((watchcache_stats(w, &st), st.relists == 1 && st.lists == 2 && fake_api_logged(&f, "resourceVersion=20")));
	watchcache_stats(w, &st);
	CHECK_INT(st.synced, 1);
	CHECK_INT(st.objects, 1);
	CHECK_INT(st.refused, 1);
	CHECK_INT(watchcache_get(w, "ns", "z", &got), WATCHCACHE_FOUND);
	CHECK_STR(json_string_value(json_object_get(got, "kind")), "Thing");
	json_decref(got);
	CHECK_INT(watchcache_get(w, "ns", "b", &got), WATCHCACHE_MISSING);  /* the relist replaced the store */
	watchcache_free(w);
	fake_api_stop(&f);
	/* In order: both pages (the token sent, the continue token escaped), the watch from the list's version, the
	 * next from the bookmark's, the relist, the watch from its version. */
	CHECK(strstr(f.log, "GET /apis/x/v1/things?limit=25\nGET /apis/x/v1/things?limit=25&continue=c%201\n"
			    "GET /apis/x/v1/things?watch=1&allowWatchBookmarks=true&resourceVersion=10&timeoutSeconds=300\n"
			    "GET /apis/x/v1/things?watch=1&allowWatchBookmarks=true&resourceVersion=14&timeoutSeconds=300\n"
			    "GET /apis/x/v1/things?limit=25\n"
			    "GET /apis/x/v1/things?watch=1&allowWatchBookmarks=true&resourceVersion=20&timeoutSeconds=300\n") != NULL);
	if (check_current_failed)
		fprintf(stderr, "  requests:\n%s", f.log);
	kube_config_free(&kc);
}

/* A storeless cache: what its sink was handed, one call a line. */
struct sink_log {
	char text[1024];
};

static void sink_say(struct sink_log *l, const char *what)
{
	size_t n = strlen(l->text);

	snprintf(l->text + n, sizeof l->text - n, "%s\n", what);
}

static int sink_begin(void *ctx)
{
	sink_say(ctx, "begin");
	return 0;
}

static int sink_end(void *ctx, int complete)
{
	sink_say(ctx, complete ? "end" : "failed");
	return 0;
}

static int sink_event(void *ctx, const char *type, json_t *o, size_t bytes)
{
	char line[128];
	const json_t *md = json_object_get(o, "metadata");

	const char *ns = json_string_value(json_object_get(md, "namespace"));

	snprintf(line, sizeof line, "%s %s%s%s", type, ns ? ns : "", ns ? "/" : "",
		 json_string_value(json_object_get(md, "name")));
	sink_say(ctx, line);
	return 0;
}

/*
 * The same list, watch and relist handed to a sink: a relist between begin
 * and end, nothing stored. With a shape, only its members (no namespace
 * here), and still the ERROR's code (the relist) and the bookmark's version.
 */
static void sink_against_fake_api(const struct scan_shape *shape, const char *want)
{
	struct fake_api f;
	struct kube_config kc;
	struct error err = { 0 };
	struct sink_log log = { "" };
	struct watchcache_sink sink = { &log, sink_begin, sink_end, sink_event, shape };
	struct watchcache_options o = { "things", "/apis/x/v1/things", "x/v1", "Thing", 0, 2048, 10, 20, 300, &sink };
	struct watchcache *w;
	struct watchcache_stats st;
	json_t *got = NULL;

	if (fake_with_config(&f, &kc) != 0) {
		CHECK(!"fake API server");
		return;
	}
	w = watchcache_new(&kc, &o, &err);
	CHECK_INT(watchcache_start(w, &err), 0);
	EVENTUALLY((watchcache_stats(w, &st), st.relists == 1 && st.lists == 2 && fake_api_logged(&f, "resourceVersion=20")));
	watchcache_stats(w, &st);
	CHECK_INT(st.objects, 0);
	CHECK_INT(st.refused, 1);  /* the over-long event */
	CHECK_INT(watchcache_get(w, "ns", "z", &got), WATCHCACHE_MISSING);
	watchcache_free(w);
	fake_api_stop(&f);
	CHECK_STR(log.text, want);
	kube_config_free(&kc);
}

static void test_sink_against_fake_api(void)
{
	static const struct scan_shape metadata[] = {
		{ "name", SCAN_WHOLE, NULL },
		{ "resourceVersion", SCAN_WHOLE, NULL },
		{ NULL, SCAN_WHOLE, NULL },
	};
	static const struct scan_shape shape[] = {
		{ "metadata", SCAN_OBJECT, metadata },
		{ NULL, SCAN_WHOLE, NULL },
	};

	sink_against_fake_api(NULL, "begin\nADDED ns/a\nADDED ns/b\nend\nADDED ns/c\nDELETED ns/a\nbegin\nADDED ns/z\nend\n");
	sink_against_fake_api(shape, "begin\nADDED a\nADDED b\nend\nADDED c\nDELETED a\nbegin\nADDED z\nend\n");
}

static void test_write_path(void)
{
	char p[32];

	CHECK_INT(kube_write_path(p, sizeof p, "/api/v1/x", "a=1"), 0);
	CHECK_STR(p, "/api/v1/x?a=1");
	CHECK_INT(kube_write_path(p, sizeof p, "/api/v1/x?l=m", "a=1"), 0);
	CHECK_STR(p, "/api/v1/x?l=m&a=1");
	CHECK_INT(kube_write_path(p, sizeof p, "/api/v1/namespaces/a-rather-long-path", "a=1"), -1);
}

/* Apply, create, merge patch and delete against the fake: methods, media types, fieldManager, bodies, refusals, the bound. */
static void test_writes_against_fake_api(void)
{
	struct fake_api f;
	struct kube_config kc;
	struct error err = { 0 };
	struct kube_client *k;
	char *big;
	json_t *o = json_pack("{s:s,s:{s:s}}", "kind", "Thing", "metadata", "name", "a"), *got = NULL, *huge;
	long status = 0;

	if (fake_with_config(&f, &kc) != 0) {
		CHECK(!"fake API server");
		json_decref(o);
		return;
	}
	k = kube_client_new(&kc, NULL, &err);
	CHECK_INT(kube_apply(k, "/apis/x/v1/namespaces/ns/things/a", "gpu-admission", o, &status, &err), 0);
	CHECK_INT(status, 200);
	CHECK_STR(f.body, "{\"kind\":\"Thing\",\"metadata\":{\"name\":\"a\"}}");
	CHECK_INT(kube_create(k, "/api/v1/namespaces/ns/events", o, &got, &status, &err), 0);
	CHECK_INT(status, 201);
	CHECK_STR(json_string_value(json_object_get(json_object_get(got, "metadata"), "name")), "made-x1");
	json_decref(got);
	CHECK_INT(kube_patch(k, "/api/v1/namespaces/ns/events/e1", o, &got, &status, &err), 0);
	CHECK_INT(status, 200);
	CHECK_STR(f.body, "{\"kind\":\"Thing\",\"metadata\":{\"name\":\"a\"}}");
	CHECK_STR(json_string_value(json_object_get(got, "status")), "Success");
	json_decref(got);
	CHECK_INT(kube_patch(k, "/api/v1/namespaces/ns/events/missing", o, NULL, &status, &err), -1);
	CHECK_INT(status, 404);
	CHECK_INT(err.kind, ERROR_NOT_FOUND);
	CHECK_INT(kube_delete(k, "/apis/x/v1/namespaces/ns/things/a", &status, &err), 0);
	CHECK_INT(kube_delete(k, "/apis/x/v1/namespaces/ns/things/missing", &status, &err), -1);
	CHECK_INT(status, 404);
	CHECK_INT(err.kind, ERROR_NOT_FOUND);
	CHECK_INT(kube_apply(k, "/apis/x/v1/namespaces/ns/things/forbidden", "gpu-admission", o, &status, &err), -1);
	CHECK_INT(status, 403);
	CHECK_INT(err.kind, ERROR_INPUT);
	CHECK(strstr(err.msg, "PATCH /apis/x/v1/namespaces/ns/things/forbidden?fieldManager=gpu-admission&force=true: "
			      "HTTP 403: cannot patch") != NULL);
	/* Over the bound: refused before anything is sent. */
	big = calloc(1, KUBE_WRITE_BODY_MAX + 1);
	memset(big, 'x', KUBE_WRITE_BODY_MAX);
	huge = json_pack("{s:s}", "x", big);
	CHECK_INT(kube_apply(k, "/apis/x/v1/namespaces/ns/things/big", "gpu-admission", huge, &status, &err), -1);
	CHECK_INT(err.kind, ERROR_TOO_LARGE);
	CHECK_INT(status, 0);
	json_decref(huge);
	free(big);
	kube_client_free(k);
	fake_api_stop(&f);
	CHECK_STR(f.log, "PATCH /apis/x/v1/namespaces/ns/things/a?fieldManager=gpu-admission&force=true "
			 "application/apply-patch+yaml\n"
			 "POST /api/v1/namespaces/ns/events application/json\n"
			 "PATCH /api/v1/namespaces/ns/events/e1 application/merge-patch+json\n"
			 "PATCH /api/v1/namespaces/ns/events/missing application/merge-patch+json\n"
			 "DELETE /apis/x/v1/namespaces/ns/things/a\n"
			 "DELETE /apis/x/v1/namespaces/ns/things/missing\n"
			 "PATCH /apis/x/v1/namespaces/ns/things/forbidden?fieldManager=gpu-admission&force=true "
			 "application/apply-patch+yaml\n");
	kube_config_free(&kc);
	json_decref(o);
}

int main(void)
{
	char cmd[128];

	if (mkdtemp(dir) == NULL)
		return 1;
	log_set_level(LOG_LEVEL_ERROR);  /* the caches' info and warn lines are expected here */
	RUN(test_kubeconfig_files);
	RUN(test_kubeconfig_data);
	RUN(test_kubeconfig_refused);
	RUN(test_in_cluster);
	RUN(test_config_find);
	RUN(test_lines_split_anywhere);
	RUN(test_lines_bounded);
	RUN(test_lines_stop);
	RUN(test_backoff);
	RUN(test_store);
	RUN(test_against_fake_api);
	RUN(test_sink_against_fake_api);
	RUN(test_write_path);
	RUN(test_writes_against_fake_api);
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	if (system(cmd) != 0)
		return 1;
	return check_done("kubeclient");
}
