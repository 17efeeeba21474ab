/*
 * fake_apiserver: the two collections `gpu-admission watch` reads (nodes,
 * pods), served from a gen_events stream as kube-apiserver serves them, for
 * test/bench/watch.sh (issue 25: the watch's list and watch paths at 150,000
 * pods, through libcurl and the decoder, not the model alone).
 *
 *   fake_apiserver EVENTS.jsonl PORTFILE [GOFILE]
 *
 * The stream's leading ADDED events are the cluster at resourceVersion 1: a
 * LIST of /api/v1/nodes or /api/v1/pods is paged from them with limit and
 * continue (the token is the next item's index, as opaque to the client as
 * the API server's), compact JSON. Items keep the kind and apiVersion
 * gen_events wrote (the API server leaves them out of a List's items; the
 * client sets them anyway). A WATCH from resourceVersion 1 streams the rest
 * of the stream's events of that kind, then stays open (no more events)
 * until the client leaves; a watch from any other version is held open the
 * same way, so a resumed watch sees nothing twice. With GOFILE, a watch
 * sends its events only once that file exists (the benchmark times the lists
 * and the watch apart).
 *
 * Every object gets a managedFields block (as a pod made by a Deployment and
 * run by the kubelet carries: ~3 KB of fieldsV1) inserted at the start of its
 * metadata: gen_snapshot's pods have none, and a real list carries them.
 *
 * HTTP/1.1 with keep-alive on loopback, a thread per connection. The port it
 * bound is written to PORTFILE. A benchmark tool: it trusts its input.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#define REQ_MAX 8192
#define OUT_CHUNK (1024 * 1024)

/*
 * A Deployment's pod as kube-controller-manager creates it and the kubelet
 * updates its status: the two managers' fieldsV1, shortened from a real
 * `kubectl get pod -o json --show-managed-fields` of a two-container pod.
 */
static const char managed[] =
	"\"managedFields\":[{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:metadata\":"
	"{\"f:generateName\":{},\"f:labels\":{\".\":{},\"f:app\":{},\"f:pod-template-hash\":{},\"f:team\":{}},"
	"\"f:ownerReferences\":{\".\":{},\"k:{\\\"uid\\\":\\\"3b7c1f2e-8d4a-4c9b-a1e2-5f6d7c8b9a0e\\\"}\":{}}},"
	"\"f:spec\":{\"f:affinity\":{\".\":{},\"f:nodeAffinity\":{\".\":{},\"f:requiredDuringSchedulingIgnoredDuringExecution\":{}}},"
	"\"f:containers\":{\"k:{\\\"name\\\":\\\"app\\\"}\":{\".\":{},\"f:env\":{\".\":{},\"k:{\\\"name\\\":\\\"LOG_LEVEL\\\"}\":"
	"{\".\":{},\"f:name\":{},\"f:value\":{}},\"k:{\\\"name\\\":\\\"POD_NAME\\\"}\":{\".\":{},\"f:name\":{},\"f:valueFrom\":"
	"{\".\":{},\"f:fieldRef\":{}}},\"k:{\\\"name\\\":\\\"POD_NAMESPACE\\\"}\":{\".\":{},\"f:name\":{},\"f:valueFrom\":{\".\":{},"
	"\"f:fieldRef\":{}}}},\"f:image\":{},\"f:imagePullPolicy\":{},\"f:livenessProbe\":{\".\":{},\"f:failureThreshold\":{},"
	"\"f:httpGet\":{\".\":{},\"f:path\":{},\"f:port\":{},\"f:scheme\":{}},\"f:periodSeconds\":{},\"f:successThreshold\":{},"
	"\"f:timeoutSeconds\":{}},\"f:name\":{},\"f:ports\":{\".\":{},\"k:{\\\"containerPort\\\":8080,\\\"protocol\\\":\\\"TCP\\\"}\":"
	"{\".\":{},\"f:containerPort\":{},\"f:name\":{},\"f:protocol\":{}}},\"f:readinessProbe\":{\".\":{},\"f:failureThreshold\":{},"
	"\"f:httpGet\":{\".\":{},\"f:path\":{},\"f:port\":{},\"f:scheme\":{}},\"f:periodSeconds\":{},\"f:successThreshold\":{},"
	"\"f:timeoutSeconds\":{}},\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},\"f:memory\":{},\"f:nvidia.com/gpu\":{}},"
	"\"f:requests\":{\".\":{},\"f:cpu\":{},\"f:memory\":{},\"f:nvidia.com/gpu\":{}}},\"f:securityContext\":{\".\":{},"
	"\"f:allowPrivilegeEscalation\":{},\"f:readOnlyRootFilesystem\":{},\"f:runAsNonRoot\":{}},\"f:terminationMessagePath\":{},"
	"\"f:terminationMessagePolicy\":{},\"f:volumeMounts\":{\".\":{},\"k:{\\\"mountPath\\\":\\\"/data\\\"}\":{\".\":{},"
	"\"f:mountPath\":{},\"f:name\":{}}}},\"k:{\\\"name\\\":\\\"sidecar\\\"}\":{\".\":{},\"f:image\":{},\"f:imagePullPolicy\":{},"
	"\"f:name\":{},\"f:resources\":{\".\":{},\"f:limits\":{\".\":{},\"f:memory\":{}},\"f:requests\":{\".\":{},\"f:cpu\":{},"
	"\"f:memory\":{}}},\"f:terminationMessagePath\":{},\"f:terminationMessagePolicy\":{}}},\"f:dnsPolicy\":{},"
	"\"f:enableServiceLinks\":{},\"f:priorityClassName\":{},\"f:restartPolicy\":{},\"f:schedulerName\":{},"
	"\"f:securityContext\":{},\"f:serviceAccount\":{},\"f:serviceAccountName\":{},\"f:terminationGracePeriodSeconds\":{},"
	"\"f:tolerations\":{},\"f:volumes\":{\".\":{},\"k:{\\\"name\\\":\\\"data\\\"}\":{\".\":{},\"f:emptyDir\":{},\"f:name\":{}}}}},"
	"\"manager\":\"kube-controller-manager\",\"operation\":\"Update\",\"time\":\"2026-11-02T07:00:00Z\"},"
	"{\"apiVersion\":\"v1\",\"fieldsType\":\"FieldsV1\",\"fieldsV1\":{\"f:status\":{\"f:conditions\":{"
	"\"k:{\\\"type\\\":\\\"ContainersReady\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},\"f:status\":{},"
	"\"f:type\":{}},\"k:{\\\"type\\\":\\\"Initialized\\\"}\":{\".\":{},\"f:lastProbeTime\":{},\"f:lastTransitionTime\":{},"
	"\"f:status\":{},\"f:type\":{}},\"k:{\\\"type\\\":\\\"PodReadyToStartContainers\\\"}\":{\".\":{},\"f:lastProbeTime\":{},"
	"\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}},\"k:{\\\"type\\\":\\\"Ready\\\"}\":{\".\":{},\"f:lastProbeTime\":{},"
	"\"f:lastTransitionTime\":{},\"f:status\":{},\"f:type\":{}}},\"f:containerStatuses\":{},\"f:hostIP\":{},\"f:hostIPs\":{},"
	"\"f:phase\":{},\"f:podIP\":{},\"f:podIPs\":{\".\":{},\"k:{\\\"ip\\\":\\\"10.244.1.17\\\"}\":{\".\":{},\"f:ip\":{}}},"
	"\"f:startTime\":{}}},\"manager\":\"kubelet\",\"operation\":\"Update\",\"subresource\":\"status\","
	"\"time\":\"2026-11-02T07:00:09Z\"}],";

/* One object of the stream: its bytes (in the mapped file) and where its metadata opens. */
struct obj {
	const char *p;
	size_t len, meta;   /* meta: the offset just after "metadata":{ (0: none) */
};

struct coll {
	const char *name;   /* "nodes", "pods" */
	const char *list_kind;
	struct obj *list;
	size_t nlist;
	const char **lines; /* the watch's events: whole lines */
	size_t *lens;
	size_t nlines;
};

static const char *gofile;

static struct coll colls[2] = { { "nodes", "NodeList", 0, 0, 0, 0, 0 }, { "pods", "PodList", 0, 0, 0, 0, 0 } };

static void die(const char *what)
{
	perror(what);
	exit(1);
}

static void *grow(void *p, size_t n, size_t size)
{
	void *q = realloc(p, n * size);

	if (q == NULL)
		die("realloc");
	return q;
}

/* The object of one event line: from "object": to the last '}' before the line's end. */
static void add_line(const char *line, size_t len, int *listing)
{
	static const char type_added[] = "{\"type\":\"ADDED\",\"object\":";
	const char *o = strstr(line, "\"object\":"), *k, *m;
	struct coll *c;
	size_t olen;

	if (o == NULL || len < 2)
		return;
	o += 9;
	olen = (size_t)(line + len - 1 - o);  /* the event's closing '}' excluded */
	k = memmem(o, olen < 200 ? olen : 200, "\"kind\":\"Node\"", 13);
	c = &colls[k != NULL ? 0 : 1];
	if (*listing && strncmp(line, type_added, sizeof type_added - 1) != 0)
		*listing = 0;
	if (*listing) {
		struct obj *ob;

		if ((c->nlist & (c->nlist - 1)) == 0)
			c->list = grow(c->list, c->nlist ? c->nlist * 2 : 1, sizeof *c->list);
		ob = &c->list[c->nlist++];
		ob->p = o;
		ob->len = olen;
		m = memmem(o, olen, "\"metadata\":{", 12);
		ob->meta = m ? (size_t)(m + 12 - o) : 0;
		return;
	}
	if ((c->nlines & (c->nlines - 1)) == 0) {
		c->lines = grow(c->lines, c->nlines ? c->nlines * 2 : 1, sizeof *c->lines);
		c->lens = grow(c->lens, c->nlines ? c->nlines * 2 : 1, sizeof *c->lens);
	}
	c->lines[c->nlines] = line;
	c->lens[c->nlines++] = len;
}

/* A buffered writer on a socket. */
struct out {
	int fd;
	char *buf;
	size_t len;
	int failed;
};

static void flush_out(struct out *o)
{
	size_t off = 0;

	while (!o->failed && off < o->len) {
		ssize_t w = write(o->fd, o->buf + off, o->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			o->failed = 1;
		else
			off += (size_t)w;
	}
	o->len = 0;
}

static void put(struct out *o, const char *p, size_t n)
{
	while (n > 0 && !o->failed) {
		size_t room = OUT_CHUNK - o->len, take = n < room ? n : room;

		memcpy(o->buf + o->len, p, take);
		o->len += take;
		p += take;
		n -= take;
		if (o->len == OUT_CHUNK)
			flush_out(o);
	}
}

static void puts_out(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* An object as listed: with managedFields, without its kind and apiVersion (a List's items carry neither). */
static size_t obj_size(const struct obj *ob)
{
	return ob->len + (ob->meta ? sizeof managed - 1 : 0);
}

static void put_obj(struct out *o, const struct obj *ob)
{
	if (ob->meta == 0) {
		put(o, ob->p, ob->len);
		return;
	}
	put(o, ob->p, ob->meta);
	put(o, managed, sizeof managed - 1);
	put(o, ob->p + ob->meta, ob->len - ob->meta);
}

/* A query parameter's value (up to '&' or the end) into out[cap]; 0 when absent. */
static int param(const char *query, const char *name, char *out, size_t cap)
{
	size_t n = strlen(name);
	const char *p = query;

	while (p != NULL && *p) {
		if (strncmp(p, name, n) == 0 && p[n] == '=') {
			size_t i = 0;

			p += n + 1;
			while (p[i] && p[i] != '&' && i + 1 < cap) {
				out[i] = p[i];
				i++;
			}
			out[i] = '\0';
			return 1;
		}
		p = strchr(p, '&');
		if (p)
			p++;
	}
	return 0;
}

static void list(struct out *o, const struct coll *c, const char *query)
{
	char v[64], head[512], hdr[256];
	size_t from = 0, limit = 500, to, i, body;
	int n;

	if (param(query, "continue", v, sizeof v))
		from = strtoul(v, NULL, 10);
	if (param(query, "limit", v, sizeof v) && strtoul(v, NULL, 10) > 0)
		limit = strtoul(v, NULL, 10);
	if (from > c->nlist)
		from = c->nlist;
	to = c->nlist - from > limit ? from + limit : c->nlist;
	if (to < c->nlist)
		snprintf(v, sizeof v, "%zu", to);
	else
		v[0] = '\0';
	n = snprintf(head, sizeof head, "{\"kind\":\"%s\",\"apiVersion\":\"v1\",\"metadata\":{\"resourceVersion\":\"1\"%s%s%s},"
		     "\"items\":[", c->list_kind, v[0] ? ",\"continue\":\"" : "", v, v[0] ? "\"" : "");
	body = (size_t)n + 2;
	for (i = from; i < to; i++)
		body += obj_size(&c->list[i]) + (i > from);
	snprintf(hdr, sizeof hdr, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n\r\n", body);
	puts_out(o, hdr);
	puts_out(o, head);
	for (i = from; i < to; i++) {
		if (i > from)
			put(o, ",", 1);
		put_obj(o, &c->list[i]);
	}
	put(o, "]}", 2);
	flush_out(o);
}

/* Waits until the client closes the connection. */
static void hold(int fd)
{
	char b[256];
	struct pollfd p = { fd, POLLIN, 0 };

	while (poll(&p, 1, -1) >= 0)
		if (read(fd, b, sizeof b) <= 0)
			return;
}

/* The watch: chunked, each event a chunk with managedFields inserted into its object. */
static void watch(struct out *o, const struct coll *c, const char *query)
{
	char v[64], size[32];
	size_t i;

	puts_out(o, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n");
	flush_out(o);
	while (gofile != NULL && access(gofile, F_OK) != 0)
		usleep(20000);
	if (param(query, "resourceVersion", v, sizeof v) && strcmp(v, "1") == 0) {
		for (i = 0; i < c->nlines && !o->failed; i++) {
			const char *line = c->lines[i], *m = memmem(line, c->lens[i], "\"metadata\":{", 12);
			size_t len = c->lens[i], cut = m ? (size_t)(m + 12 - line) : len;

			snprintf(size, sizeof size, "%zx\r\n", len + 1 + (m ? sizeof managed - 1 : 0));
			puts_out(o, size);
			put(o, line, cut);
			if (m)
				put(o, managed, sizeof managed - 1);
			put(o, line + cut, len - cut);
			put(o, "\n\r\n", 3);
		}
		flush_out(o);
	}
	hold(o->fd);
}

static void *serve(void *arg)
{
	int fd = (int)(long)arg;
	char req[REQ_MAX];
	size_t have = 0;
	struct out o = { fd, malloc(OUT_CHUNK), 0, 0 };

	if (o.buf == NULL)
		die("malloc");
	for (;;) {
		char *end, *path, *q, *sp;
		const struct coll *c = NULL;
		ssize_t r;

		while ((end = memmem(req, have, "\r\n\r\n", 4)) == NULL) {
			if (have == sizeof req - 1 || (r = read(fd, req + have, sizeof req - 1 - have)) <= 0)
				goto done;
			have += (size_t)r;
		}
		*end = '\0';
		path = strchr(req, ' ');
		if (path == NULL)
			goto done;
		path++;
		if ((sp = strchr(path, ' ')) != NULL)
			*sp = '\0';
		q = strchr(path, '?');
		if (q != NULL)
			*q++ = '\0';
		if (strcmp(path, "/api/v1/nodes") == 0)
			c = &colls[0];
		else if (strcmp(path, "/api/v1/pods") == 0)
			c = &colls[1];
		if (c == NULL) {
			puts_out(&o, "HTTP/1.1 404 Not Found\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}");
			flush_out(&o);
		} else if (q != NULL && strstr(q, "watch=1") != NULL) {
			watch(&o, c, q);
			goto done;
		} else {
			list(&o, c, q);
		}
		if (o.failed)
			goto done;
		have -= (size_t)(end + 4 - req);
		memmove(req, end + 4, have);
	}
done:
	free(o.buf);
	close(fd);
	return NULL;
}

int main(int argc, char **argv)
{
	struct sockaddr_in a = { 0 };
	socklen_t alen = sizeof a;
	struct stat st;
	const char *p, *e, *nl;
	int fd, s, one = 1, listing = 1;
	FILE *pf;

	if (argc != 3 && argc != 4) {
		fprintf(stderr, "usage: fake_apiserver EVENTS.jsonl PORTFILE [GOFILE]\n");
		return 2;
	}
	gofile = argc == 4 ? argv[3] : NULL;
	signal(SIGPIPE, SIG_IGN);
	if ((fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &st) != 0)
		die(argv[1]);
	p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		die("mmap");
	for (e = p + st.st_size; p < e; p = nl + 1) {
		if ((nl = memchr(p, '\n', (size_t)(e - p))) == NULL)
			nl = e;
		add_line(p, (size_t)(nl - p), &listing);
	}
	{
		size_t i, bytes = 0;

		for (i = 0; i < colls[1].nlist; i++)
			bytes += obj_size(&colls[1].list[i]);
		fprintf(stderr, "fake_apiserver: %zu nodes, %zu pods listed; %zu node and %zu pod events to watch; "
			"%zu bytes a listed pod\n", colls[0].nlist, colls[1].nlist, colls[0].nlines, colls[1].nlines,
			colls[1].nlist ? bytes / colls[1].nlist : 0);
	}
	if ((s = socket(AF_INET, SOCK_STREAM, 0)) < 0)
		die("socket");
	setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(s, (struct sockaddr *)&a, sizeof a) != 0 || listen(s, 64) != 0 ||
	    getsockname(s, (struct sockaddr *)&a, &alen) != 0)
		die("bind");
	if ((pf = fopen(argv[2], "w")) == NULL)
		die(argv[2]);
	fprintf(pf, "%d\n", ntohs(a.sin_port));
	fclose(pf);
	for (;;) {
		int c = accept(s, NULL, NULL);
		pthread_t t;

		if (c < 0)
			continue;
		setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (pthread_create(&t, NULL, serve, (void *)(long)c) != 0)
			close(c);
		else
			pthread_detach(t);
	}
}
