/*
 * tls_client: a small HTTPS client on OpenSSL for the server's e2e tests.
 *
 * Posts (or gets) one request N times over keep-alive, reconnecting when the
 * server says "Connection: close", and counts answers that are not the
 * expected status as failures. Also: a new connection per request (to see
 * certificate rotation), TLS version pinning, chunked bodies, a request held
 * half-sent (drain), and a slowloris mode. Loopback only; every wait is bounded.
 *
 * With --idle-close-retry, a request on a reused keep-alive connection that gets
 * no byte back (the server closed the connection as the request went out: it
 * gives an idle connection's slot to a newcomer) is sent once more on a new
 * connection. RFC 9112 section 9.3.1 lets a client resend a request it knows to
 * be idempotent, and a review is (the webhooks declare sideEffects: None). The
 * server cannot tell a request that reached it that way from one that did not,
 * so the tests compare retries with the cuts the server logged. --between F
 * holds every request after the first until F exists (touching --ready-file as
 * it starts to wait): the test acts while the connection idles.
 *
 * Last line: "sent=N ok=N failed=N closes=N retries=N refused=N certs=N"; exit 0 when
 * nothing failed (slowloris: when the server closed the connection).
 * --certs-file F holds the certs figure as it grows, so that a test can wait
 * until a rotation has been seen instead of guessing how long that takes.
 */
#define _GNU_SOURCE  /* POLLRDHUP: the server closed its side while a request is held */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>

#define MAX_CERTS 16
#define IO_TIMEOUT_S 10
#define BETWEEN_MAX_S 120 /* --between: the longest pause between two requests */

struct opts {
	const char *host, *servername, *cafile, *method, *path, *ctype, *body_file, *until, *ready_file;
	const char *expect_body, *release, *certs_file, *between;
	int port, count, new_conn, expect, chunked, stop_on_close, tls_min, tls_max, slowloris;
	int hold_ms, verbose, idle_close_retry;
	int io_timeout_s; /* a read or write that waits longer fails */
};

struct stats {
	int sent, ok, failed, closes, retries, refused;
	unsigned char certs[MAX_CERTS][32];
	int n_certs;
};

static int tls_version(const char *v)
{
	if (strcmp(v, "1.1") == 0) return TLS1_1_VERSION;
	if (strcmp(v, "1.2") == 0) return TLS1_2_VERSION;
	if (strcmp(v, "1.3") == 0) return TLS1_3_VERSION;
	fprintf(stderr, "tls_client: TLS version must be 1.1, 1.2 or 1.3\n");
	exit(2);
}

static void usage(void)
{
	fprintf(stderr,
		"usage: tls_client --port P [--host 127.0.0.1] [--cafile F | --insecure] [--servername N]\n"
		"         [--method POST] [--path /mutate] [--content-type application/json] [--body FILE]\n"
		"         [--count N] [--new-conn] [--until FILE] [--stop-on-close] [--expect CODE]\n"
		"         [--expect-body TEXT] [--chunked] [--tls-min V] [--tls-max V] [--hold MS]\n"
		"         [--release F] [--ready-file F] [--certs-file F] [--slowloris SECONDS]\n"
		"         [--io-timeout SECONDS (10)] [--between F] [--idle-close-retry] [--verbose]\n"
		"       tls_client --free-port\n");
	exit(2);
}

static char *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fprintf(stderr, "tls_client: %s: %s\n", path, strerror(errno));
		exit(2);
	}
	buf = malloc((size_t)n + 1);
	if (buf == NULL || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "tls_client: cannot read %s\n", path);
		exit(2);
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static int exists(const char *path)
{
	struct stat st;

	return path != NULL && stat(path, &st) == 0;
}

static void touch(const char *path)
{
	FILE *f = path ? fopen(path, "w") : NULL;

	if (f != NULL)
		fclose(f);
}

/* Writes n to path (when given) as a whole: a reader sees the old count or the new one. */
static void write_count(const char *path, int n)
{
	char tmp[4096];
	FILE *f;

	if (path == NULL || snprintf(tmp, sizeof tmp, "%s.tmp", path) >= (int)sizeof tmp || (f = fopen(tmp, "w")) == NULL)
		return;
	fprintf(f, "%d\n", n);
	if (fclose(f) == 0)
		rename(tmp, path);
}

static void ssl_errors(const char *what)
{
	unsigned long e;
	char text[256];

	fprintf(stderr, "tls_client: %s", what);
	while ((e = ERR_get_error()) != 0) {
		ERR_error_string_n(e, text, sizeof text);
		fprintf(stderr, ": %s", text);
	}
	fprintf(stderr, "\n");
}

/*
 * A failed read or write that waited for its socket (SO_RCVTIMEO/SO_SNDTIMEO):
 * --io-timeout ran out, or a signal cut the wait short. The connection may
 * still be open.
 */
static int timed_out(SSL *ssl, int ret)
{
	int e = SSL_get_error(ssl, ret);

	return e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE;
}

/*
 * A read or write that a stop and continue (SIGSTOP, a debugger, a test that
 * stops a process to play a starved one) cut short: with SO_RCVTIMEO set the
 * kernel does not restart it (signal(7)) and OpenSSL reports a retry; the
 * data is still to come, so it is tried again. A real timeout stays an error.
 */
static int interrupted(SSL *ssl, int ret)
{
	return timed_out(ssl, ret) && errno == EINTR;
}

/* SSL_read and SSL_write, tried again while a stop and continue cut them short. */
static int ssl_read(SSL *ssl, void *buf, int n)
{
	int got;

	do {
		errno = 0;
		got = SSL_read(ssl, buf, n);
	} while (got <= 0 && interrupted(ssl, got));
	return got;
}

static int ssl_write(SSL *ssl, const void *buf, int n)
{
	int w;

	do {
		errno = 0;
		w = SSL_write(ssl, buf, n);
	} while (w <= 0 && interrupted(ssl, w));
	return w;
}

static SSL_CTX *make_ctx(const struct opts *o)
{
	SSL_CTX *ctx = SSL_CTX_new(TLS_client_method());

	if (ctx == NULL)
		exit(2);
	/* Security level 0 so an old protocol is really offered: the server must refuse it. */
	SSL_CTX_set_security_level(ctx, 0);
	SSL_CTX_set_cipher_list(ctx, "DEFAULT:@SECLEVEL=0");
	if (o->tls_min)
		SSL_CTX_set_min_proto_version(ctx, o->tls_min);
	if (o->tls_max)
		SSL_CTX_set_max_proto_version(ctx, o->tls_max);
	if (o->cafile != NULL) {
		if (SSL_CTX_load_verify_locations(ctx, o->cafile, NULL) != 1) {
			ssl_errors("loading --cafile");
			exit(2);
		}
		SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	}
	return ctx;
}

/* Returns a connected TCP socket, or -1 (refused sets *refused). */
static int tcp_connect(const struct opts *o, int *refused)
{
	struct sockaddr_in sa;
	struct timeval tv = { o->io_timeout_s, 0 };
	int fd = socket(AF_INET, SOCK_STREAM, 0), one = 1;

	*refused = 0;
	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_port = htons((unsigned short)o->port);
	if (fd < 0 || inet_pton(AF_INET, o->host, &sa.sin_addr) != 1)
		exit(2);
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
		*refused = errno == ECONNREFUSED;
		if (o->verbose)
			fprintf(stderr, "tls_client: connect: %s\n", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

static SSL *tls_connect(SSL_CTX *ctx, const struct opts *o, struct stats *st, int *refused)
{
	int fd = tcp_connect(o, refused), rc;
	SSL *ssl;
	X509 *peer;

	if (fd < 0)
		return NULL;
	ssl = SSL_new(ctx);
	SSL_set_fd(ssl, fd);
	if (o->servername != NULL) {
		SSL_set_tlsext_host_name(ssl, o->servername);
		SSL_set1_host(ssl, o->servername);
	}
	errno = 0;
	while ((rc = SSL_connect(ssl)) != 1 && interrupted(ssl, rc))
		errno = 0;
	if (rc != 1) {
		ssl_errors("handshake failed");
		SSL_free(ssl);
		close(fd);
		return NULL;
	}
	peer = SSL_get1_peer_certificate(ssl);
	if (peer != NULL) {
		unsigned char md[32];
		unsigned len = sizeof md;
		int i;

		X509_digest(peer, EVP_sha256(), md, &len);
		for (i = 0; i < st->n_certs && memcmp(st->certs[i], md, 32) != 0; i++)
			;
		if (i == st->n_certs && st->n_certs < MAX_CERTS) {
			memcpy(st->certs[st->n_certs++], md, 32);
			write_count(o->certs_file, st->n_certs);
		}
		X509_free(peer);
	}
	if (o->verbose)
		fprintf(stderr, "tls_client: connected with %s %s\n", SSL_get_version(ssl),
			SSL_get_cipher_name(ssl));
	return ssl;
}

static void tls_close(SSL **ssl)
{
	int fd;

	if (*ssl == NULL)
		return;
	fd = SSL_get_fd(*ssl);
	SSL_free(*ssl);
	close(fd);
	*ssl = NULL;
}

/* 0 when all of it went out; -1 when a write timed out, -2 when the connection was closed. */
static int write_all(SSL *ssl, const char *p, size_t n)
{
	while (n > 0) {
		int w;

		w = ssl_write(ssl, p, n > 65536 ? 65536 : (int)n);
		if (w <= 0)
			return timed_out(ssl, w) ? -1 : -2;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

struct reply {
	int status, close;
	char body[4096];
	size_t body_len;
};

/*
 * Reads one response; -1 when the connection broke or a read timed out first,
 * -2 when the connection was closed before the response's first byte.
 */
static int read_reply(SSL *ssl, struct reply *r)
{
	char buf[16384];
	size_t n = 0, want = 0, have;
	char *end = NULL, *cl, *p;
	int got;

	memset(r, 0, sizeof *r);
	while (end == NULL) {
		if (n >= sizeof buf - 1)
			return -1;
		got = ssl_read(ssl, buf + n, (int)(sizeof buf - 1 - n));
		if (got <= 0)
			return n == 0 && !timed_out(ssl, got) ? -2 : -1;
		n += (size_t)got;
		buf[n] = '\0';
		end = strstr(buf, "\r\n\r\n");
	}
	*end = '\0';
	if (sscanf(buf, "HTTP/1.%*d %d", &r->status) != 1)
		return -1;
	for (p = buf; (p = strchr(p, '\n')) != NULL; p++) {
		if (strncasecmp(p + 1, "Content-Length:", 15) == 0)
			want = strtoul(p + 16, NULL, 10);
		if (strncasecmp(p + 1, "Connection:", 11) == 0 && strstr(p + 12, "close") != NULL &&
		    (strchr(p + 1, '\r') == NULL || strstr(p + 12, "close") < strchr(p + 1, '\r')))
			r->close = 1;
	}
	cl = end + 4;
	have = n - (size_t)(cl - buf);
	r->body_len = have < sizeof r->body - 1 ? have : sizeof r->body - 1;
	memcpy(r->body, cl, r->body_len);
	while (have < want) {
		char more[16384];
		size_t room = sizeof r->body - 1 - r->body_len;

		got = ssl_read(ssl, more, sizeof more);
		if (got <= 0)
			return -1;
		if (room > (size_t)got)
			room = (size_t)got;
		memcpy(r->body + r->body_len, more, room);
		r->body_len += room;
		have += (size_t)got;
	}
	r->body[r->body_len] = '\0';
	return 0;
}

/* 0 when the request went out; else write_all's -1 or -2 (a chunked or held one: -1). */
static int send_request(SSL *ssl, const struct opts *o, const char *body, size_t len)
{
	char head[1024];
	size_t half = len / 2;
	int n, rc;

	if (o->chunked)
		n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\nContent-Type: %s\r\n"
			     "Transfer-Encoding: chunked\r\n\r\n", o->method, o->path,
			     o->servername ? o->servername : o->host, o->ctype);
	else
		n = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: %s\r\n%s%s%sContent-Length: %zu\r\n\r\n",
			     o->method, o->path, o->servername ? o->servername : o->host,
			     o->ctype[0] ? "Content-Type: " : "", o->ctype, o->ctype[0] ? "\r\n" : "", len);
	if ((rc = write_all(ssl, head, (size_t)n)) != 0)
		return rc;
	if (o->chunked) {
		size_t off = 0;

		while (off < len) {
			size_t c = len - off > 65536 ? 65536 : len - off;

			n = snprintf(head, sizeof head, "%zx\r\n", c);
			if (write_all(ssl, head, (size_t)n) != 0 || write_all(ssl, body + off, c) != 0 ||
			    write_all(ssl, "\r\n", 2) != 0)
				return -1;
			off += c;
		}
		return write_all(ssl, "0\r\n\r\n", 5);
	}
	if (o->hold_ms > 0) {
		/*
		 * Half the body now, the rest after a pause: a request in flight across a
		 * signal. With --release, the pause ends when that file appears (the test
		 * says when it is done), hold_ms being only the bound.
		 */
		struct pollfd pfd = { SSL_get_fd(ssl), POLLRDHUP, 0 };
		int waited;

		if (write_all(ssl, body, half) != 0)
			return -1;
		touch(o->ready_file);
		/* A server that closes the connection ends the pause too: the bound costs nothing then. */
		for (waited = 0; waited < o->hold_ms && !exists(o->release); waited += 50)
			if (poll(&pfd, 1, 50) > 0 && (pfd.revents & (POLLRDHUP | POLLHUP | POLLERR)))
				return -1;
		return write_all(ssl, body + half, len - half);
	}
	return write_all(ssl, body, len);
}

/* Sends a request prefix one byte a second; 0 when the server closes the connection in time. */
static int slowloris(SSL_CTX *ctx, const struct opts *o, struct stats *st)
{
	static const char drip[] = "POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
				   "X-Slow: aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa";
	int refused, i;
	SSL *ssl = tls_connect(ctx, o, st, &refused);

	if (ssl == NULL)
		return 1;
	touch(o->ready_file);
	for (i = 0; i < o->slowloris; i++) {
		struct timespec ts = { 1, 0 };

		if (SSL_write(ssl, drip + (size_t)i % (sizeof drip - 1), 1) <= 0) {
			printf("slowloris: closed by the server after %d bytes\n", i);
			tls_close(&ssl);
			return 0;
		}
		nanosleep(&ts, NULL);
	}
	/* A closed connection may only show on read. */
	{
		struct timeval tv = { 1, 0 };
		char c;

		setsockopt(SSL_get_fd(ssl), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
		if (SSL_read(ssl, &c, 1) <= 0 && SSL_get_error(ssl, 0) != SSL_ERROR_WANT_READ &&
		    errno != EAGAIN && errno != EWOULDBLOCK) {
			printf("slowloris: closed by the server after %d bytes\n", i);
			tls_close(&ssl);
			return 0;
		}
	}
	printf("slowloris: still open after %d seconds\n", o->slowloris);
	tls_close(&ssl);
	return 1;
}

/* Prints a loopback port that was free a moment ago (for a server that will not log its port). */
static int free_port(void)
{
	struct sockaddr_in sa;
	socklen_t len = sizeof sa;
	int fd = socket(AF_INET, SOCK_STREAM, 0);

	memset(&sa, 0, sizeof sa);
	sa.sin_family = AF_INET;
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
	    getsockname(fd, (struct sockaddr *)&sa, &len) != 0)
		return 2;
	printf("%u\n", (unsigned)ntohs(sa.sin_port));
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = { "127.0.0.1", NULL, NULL, "POST", "/mutate", "application/json", NULL, NULL, NULL,
			  NULL, NULL, NULL, NULL, 0, 1, 0, 200, 0, 0, 0, 0, 0, 0, 0, 0, IO_TIMEOUT_S };
	struct stats st;
	struct reply r;
	SSL_CTX *ctx;
	SSL *ssl = NULL;
	char *body = NULL;
	size_t len = 0;
	int i, refused, insecure = 0, reused = 0, resent = 0, got;

	memset(&st, 0, sizeof st);
	if (argc == 2 && strcmp(argv[1], "--free-port") == 0)
		return free_port();
	signal(SIGPIPE, SIG_IGN); /* a closed connection is an error return, not a death */
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

#define ARG(name) (strcmp(a, name) == 0 && v != NULL && ++i)
		if (ARG("--host")) o.host = v;
		else if (ARG("--port")) o.port = atoi(v);
		else if (ARG("--servername")) o.servername = v;
		else if (ARG("--cafile")) o.cafile = v;
		else if (ARG("--method")) o.method = v;
		else if (ARG("--path")) o.path = v;
		else if (ARG("--content-type")) o.ctype = v;
		else if (ARG("--body")) o.body_file = v;
		else if (ARG("--count")) o.count = atoi(v);
		else if (ARG("--until")) o.until = v;
		else if (ARG("--ready-file")) o.ready_file = v;
		else if (ARG("--certs-file")) o.certs_file = v;
		else if (ARG("--expect")) o.expect = atoi(v);
		else if (ARG("--expect-body")) o.expect_body = v;
		else if (ARG("--tls-min")) o.tls_min = tls_version(v);
		else if (ARG("--tls-max")) o.tls_max = tls_version(v);
		else if (ARG("--hold")) o.hold_ms = atoi(v);
		else if (ARG("--release")) o.release = v;
		else if (ARG("--slowloris")) o.slowloris = atoi(v);
		else if (ARG("--io-timeout")) o.io_timeout_s = atoi(v) > 0 ? atoi(v) : IO_TIMEOUT_S;
		else if (ARG("--between")) o.between = v;
		else if (strcmp(a, "--idle-close-retry") == 0) o.idle_close_retry = 1;
		else if (strcmp(a, "--new-conn") == 0) o.new_conn = 1;
		else if (strcmp(a, "--chunked") == 0) o.chunked = 1;
		else if (strcmp(a, "--stop-on-close") == 0) o.stop_on_close = 1;
		else if (strcmp(a, "--insecure") == 0) insecure = 1;
		else if (strcmp(a, "--verbose") == 0) o.verbose = 1;
		else usage();
#undef ARG
	}
	if (o.port <= 0 || (o.cafile == NULL && !insecure) || o.count < 1)
		usage();
	ctx = make_ctx(&o);
	if (o.slowloris > 0) {
		i = slowloris(ctx, &o, &st);
		SSL_CTX_free(ctx);
		fflush(stdout);
		return i;
	}
	if (o.body_file != NULL)
		body = read_file(o.body_file, &len);

	/* A review to send again is sent even when --until has appeared meanwhile. */
	for (i = 0; i < o.count && !(o.until != NULL && !resent && exists(o.until)); i++) {
		if (i > 0 && o.between != NULL && !resent) {
			/* The test acts between two requests (the connection idles meanwhile). */
			int waited;

			touch(o.ready_file);
			for (waited = 0; waited < BETWEEN_MAX_S * 20 && !exists(o.between); waited++)
				poll(NULL, 0, 50);
		}
		if (ssl == NULL) {
			reused = 0;
			ssl = tls_connect(ctx, &o, &st, &refused);
		}
		if (ssl == NULL) {
			if (refused && o.stop_on_close) {
				st.refused++; /* the server is gone: nothing was sent, nothing lost */
				break;
			}
			st.failed++;
			resent = 0;
			continue;
		}
		st.sent++;
		got = send_request(ssl, &o, body ? body : "", len);
		if (got == 0)
			got = read_reply(ssl, &r);
		if (got == -2 && o.idle_close_retry && reused && !resent) {
			fprintf(stderr, "tls_client: request %d: connection closed before any answer: sent again\n", i + 1);
			st.retries++;
			tls_close(&ssl);
			resent = 1;
			i--;
			continue;
		}
		resent = 0;
		reused = 1;
		if (got != 0) {
			fprintf(stderr, "tls_client: request %d: no answer\n", i + 1);
			st.failed++;
			tls_close(&ssl);
			continue;
		}
		if (r.status == o.expect && (o.expect_body == NULL || strstr(r.body, o.expect_body) != NULL)) {
			st.ok++;
		} else {
			fprintf(stderr, "tls_client: request %d: status %d: %.200s\n", i + 1, r.status, r.body);
			st.failed++;
		}
		if (o.verbose)
			printf("%d %s\n", r.status, r.body);
		if (r.close) {
			st.closes++;
			tls_close(&ssl);
			if (o.stop_on_close)
				break;
		} else if (o.new_conn) {
			tls_close(&ssl);
		}
	}
	tls_close(&ssl);
	SSL_CTX_free(ctx);
	free(body);
	printf("sent=%d ok=%d failed=%d closes=%d retries=%d refused=%d certs=%d\n", st.sent, st.ok, st.failed,
	       st.closes, st.retries, st.refused, st.n_certs);
	return st.failed == 0 && st.sent > 0 ? 0 : 1;
}
