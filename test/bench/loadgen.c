/*
 * loadgen: the two measurements wrk cannot make, on OpenSSL.
 *
 *   loadgen open  --port P --body FILE --rate R --seconds S --conns C [--path /mutate]
 *       Open loop at a fixed rate, HTTP/1.1 keep-alive. Request i is due at
 *       start + i/R; its latency runs from when it was due, not from when it
 *       was sent, so a stall is charged to every request it delayed (no
 *       coordinated omission, as wrk2 measures). C connections, one thread
 *       each, share the schedule round-robin.
 *       Prints one JSON object: sent, errors, p50/p90/p99/p99.9/max in us.
 *
 *   loadgen ready --port P --since NS
 *       Polls GET /readyz with a new TLS connection every 0.5 ms until it
 *       answers 200; prints ms elapsed since NS (CLOCK_REALTIME nanoseconds,
 *       taken just before the server was exec'd). Gives up after 10 s.
 *
 * Loopback only; certificates are not verified (the server is our own,
 * self-signed, on 127.0.0.1).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <openssl/ssl.h>

struct conn {
	int fd;
	SSL *ssl;
};

struct worker {
	int index, port, conns;
	double rate, seconds;
	const char *req;      /* the whole HTTP request */
	size_t req_len;
	double start;         /* monotonic seconds */
	double *lat;          /* latencies of this worker's requests, us */
	long n, errors;
};

static SSL_CTX *ctx;

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int dial(int port, struct conn *c)
{
	struct sockaddr_in sa;
	struct timeval tv = { 10, 0 };
	int one = 1;

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	c->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (c->fd < 0)
		return -1;
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	setsockopt(c->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) != 0)
		goto bad;
	c->ssl = SSL_new(ctx);
	if (c->ssl == NULL || SSL_set_fd(c->ssl, c->fd) != 1 || SSL_connect(c->ssl) != 1)
		goto bad;
	return 0;
bad:
	if (c->ssl)
		SSL_free(c->ssl);
	c->ssl = NULL;
	close(c->fd);
	return -1;
}

static void hangup(struct conn *c)
{
	if (c->ssl) {
		SSL_shutdown(c->ssl);
		SSL_free(c->ssl);
	}
	c->ssl = NULL;
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
}

/*
 * Sends req and reads one response (Content-Length framed). Returns the
 * HTTP status, or -1 on a transport error. *close_after is set when the
 * server asks to close.
 */
static int exchange(struct conn *c, const char *req, size_t len, int *close_after)
{
	char buf[65536];
	size_t have = 0, need = 0;
	char *hdr_end = NULL;
	int status = -1;

	*close_after = 0;
	if (SSL_write(c->ssl, req, (int)len) != (int)len)
		return -1;
	for (;;) {
		int n = SSL_read(c->ssl, buf + have, (int)(sizeof buf - 1 - have));

		if (n <= 0)
			return -1;
		have += (size_t)n;
		buf[have] = '\0';
		if (hdr_end == NULL && (hdr_end = strstr(buf, "\r\n\r\n")) != NULL) {
			char *cl = strcasestr(buf, "\r\ncontent-length:");

			status = atoi(buf + 9);
			need = (size_t)(hdr_end + 4 - buf) + (cl ? strtoul(cl + 17, NULL, 10) : 0);
			*close_after = strcasestr(buf, "\r\nconnection: close") != NULL;
		}
		if (hdr_end != NULL && have >= need)
			return status;
		if (have >= sizeof buf - 1)
			return -1;
	}
}

static void *run_worker(void *arg)
{
	struct worker *w = arg;
	struct conn c = { -1, NULL };
	long total = (long)(w->rate * w->seconds), i;
	double interval = 1.0 / w->rate;

	for (i = w->index; i < total; i += w->conns) {
		double due = w->start + (double)i * interval, now;
		int close_after, status;

		while ((now = mono()) < due) {
			double wait = due - now;
			struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
			nanosleep(&ts, NULL);
		}
		if (c.ssl == NULL && dial(w->port, &c) != 0) {
			w->errors++;
			continue;
		}
		status = exchange(&c, w->req, w->req_len, &close_after);
		w->lat[w->n++] = (mono() - due) * 1e6;
		if (status != 200)
			w->errors++;
		if (status < 0 || close_after)
			hangup(&c);
	}
	hangup(&c);
	return NULL;
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double pct(const double *v, long n, double p)
{
	long i = (long)(p / 100.0 * (double)(n - 1) + 0.5);
	return n ? v[i < n ? i : n - 1] : 0;
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *b = NULL;
	long n;

	if (f && fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (b = malloc((size_t)n + 1)) != NULL)
		*len = fread(b, 1, (size_t)n, f);
	if (f)
		fclose(f);
	return b;
}

static int open_loop(int port, const char *path, const char *body_file, double rate, double seconds,
		     int conns)
{
	struct worker *w = calloc((size_t)conns, sizeof *w);
	pthread_t *th = calloc((size_t)conns, sizeof *th);
	size_t blen = 0, rlen;
	char *body = slurp(body_file, &blen), *req;
	double *all;
	long n = 0, errors = 0, per = (long)(rate * seconds) / conns + 2;
	int i;

	if (w == NULL || th == NULL || body == NULL) {
		fprintf(stderr, "loadgen: cannot read %s\n", body_file);
		return 2;
	}
	rlen = blen + 256;
	req = malloc(rlen);
	rlen = (size_t)snprintf(req, rlen, "POST %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: "
				"application/json\r\nContent-Length: %zu\r\n\r\n", path, blen);
	req = realloc(req, rlen + blen);
	memcpy(req + rlen, body, blen);
	rlen += blen;
	for (i = 0; i < conns; i++) {
		w[i] = (struct worker){ .index = i, .port = port, .conns = conns, .rate = rate,
					.seconds = seconds, .req = req, .req_len = rlen };
		w[i].lat = calloc((size_t)per, sizeof *w[i].lat);
	}
	{
		double start = mono() + 0.05;
		for (i = 0; i < conns; i++) {
			w[i].start = start;
			pthread_create(&th[i], NULL, run_worker, &w[i]);
		}
	}
	for (i = 0; i < conns; i++) {
		pthread_join(th[i], NULL);
		n += w[i].n;
		errors += w[i].errors;
	}
	all = malloc((size_t)(n ? n : 1) * sizeof *all);
	for (n = 0, i = 0; i < conns; i++) {
		memcpy(all + n, w[i].lat, (size_t)w[i].n * sizeof *all);
		n += w[i].n;
		free(w[i].lat);
	}
	qsort(all, (size_t)n, sizeof *all, cmp);
	printf("{\"rate\": %.0f, \"seconds\": %.0f, \"connections\": %d, \"sent\": %ld, \"errors\": %ld, "
	       "\"p50_us\": %.0f, \"p90_us\": %.0f, \"p99_us\": %.0f, \"p999_us\": %.0f, \"max_us\": %.0f}\n",
	       rate, seconds, conns, n, errors, pct(all, n, 50), pct(all, n, 90), pct(all, n, 99),
	       pct(all, n, 99.9), n ? all[n - 1] : 0);
	free(all);
	free(req);
	free(body);
	free(w);
	free(th);
	return errors ? 1 : 0;
}

static int wait_ready(int port, long long since_ns)
{
	static const char req[] = "GET /readyz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
	double deadline = mono() + 10;

	while (mono() < deadline) {
		struct conn c = { -1, NULL };
		int close_after;

		if (dial(port, &c) == 0) {
			int status = exchange(&c, req, sizeof req - 1, &close_after);
			hangup(&c);
			if (status == 200) {
				struct timespec ts;
				clock_gettime(CLOCK_REALTIME, &ts);
				printf("%.1f\n", ((double)ts.tv_sec * 1e9 + (double)ts.tv_nsec - (double)since_ns) / 1e6);
				return 0;
			}
		}
		{
			struct timespec ts = { 0, 500000 };
			nanosleep(&ts, NULL);
		}
	}
	fprintf(stderr, "loadgen: not ready within 10 s\n");
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "", *path = "/mutate", *body = NULL;
	double rate = 1000, seconds = 10;
	long long since = 0;
	int port = 0, conns = 8, i;

	for (i = 2; i + 1 < argc; i += 2) {
		if (strcmp(argv[i], "--port") == 0) port = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--path") == 0) path = argv[i + 1];
		else if (strcmp(argv[i], "--body") == 0) body = argv[i + 1];
		else if (strcmp(argv[i], "--rate") == 0) rate = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--seconds") == 0) seconds = atof(argv[i + 1]);
		else if (strcmp(argv[i], "--conns") == 0) conns = atoi(argv[i + 1]);
		else if (strcmp(argv[i], "--since") == 0) since = atoll(argv[i + 1]);
	}
	ctx = SSL_CTX_new(TLS_client_method());
	if (ctx == NULL || port <= 0 || conns <= 0 || rate <= 0) {
		fprintf(stderr, "usage: loadgen open --port P --body FILE [--rate R --seconds S --conns C --path P]\n"
				"       loadgen ready --port P --since NS\n");
		return 2;
	}
	SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	if (strcmp(mode, "open") == 0 && body != NULL)
		return open_loop(port, path, body, rate, seconds, conns);
	if (strcmp(mode, "ready") == 0)
		return wait_ready(port, since);
	fprintf(stderr, "loadgen: unknown mode\n");
	return 2;
}
