/*
 * hold_conns: opens many idle connections to a local server and holds them,
 * for the connection-slot tests (issue 14: 1024 idle connections from five
 * addresses, each under the per-address limit, must not lock new clients out).
 *
 *   hold_conns --port P --count N [--from 127.0.0.2,127.0.0.3,...] [--tls]
 *              [--send FILE] [--ready-file F] [--until FILE] [--seconds S] [--until-closed]
 *              [--rcvbuf BYTES] [--then FILE --then-when F]
 *
 * Opens N TCP connections to 127.0.0.1:P, binding them in turn to the --from
 * addresses (loopback only), optionally completing a TLS handshake on each
 * (certificates not checked), sends FILE's bytes on each when given (request
 * headers and part of a body, say: issue 24's attacks), and sends nothing
 * more. A connection the server closes while FILE is sent counts as closed. When all are open it
 * writes the count to --ready-file, then holds them until FILE exists or S
 * seconds pass (default 60), or until the server closed them all with
 * --until-closed, noting every connection the server closes. It never reads:
 * with --rcvbuf (SO_RCVBUF, which the kernel raises to its floor) the server's
 * own bytes soon wait for room, as from a client that stopped reading. With
 * --then, once F (--then-when) exists, it sends that file's bytes on each
 * connection still open, once: more bytes, at a moment the test chooses.
 * Last line: "opened=N closed_by_server=M".
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#define MAX_CONNS 8192
#define MAX_FROM 16
#define POLL_MS 100
#define SEND_MAX (64u << 20)

struct held {
	int fd;
	SSL *ssl;
	int closed;
};

/* sweep: marks the connections of h[0..n) the server has closed since; returns how many. */
static int sweep(struct held *h, int n)
{
	int i, closed = 0;

	for (i = 0; i < n; i++) {
		struct pollfd p = { h[i].fd, POLLIN, 0 };
		char byte;

		if (h[i].closed || poll(&p, 1, 0) <= 0)
			continue;
		/* Readable: an end of file or a reset is the server's close (it sends nothing else unasked). */
		if (recv(h[i].fd, &byte, 1, MSG_PEEK | MSG_DONTWAIT) <= 0 || (p.revents & (POLLHUP | POLLERR))) {
			h[i].closed = 1;
			closed++;
		}
	}
	return closed;
}

static double mono(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The whole of path in *data (malloc'd), at most SEND_MAX bytes; -1 on failure. */
static int slurp(const char *path, char **data, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t n;

	*data = NULL;
	*len = 0;
	if (f == NULL || (*data = malloc(SEND_MAX)) == NULL) {
		if (f != NULL)
			fclose(f);
		return -1;
	}
	n = fread(*data, 1, SEND_MAX, f);
	fclose(f);
	*len = n;
	return n < SEND_MAX ? 0 : -1;
}

/* Writes data on h (TLS or not); -1 when the server closed the connection first. */
static int send_all(struct held *h, const char *data, size_t len)
{
	while (len > 0) {
		int chunk = len > 65536 ? 65536 : (int)len;
		long n = h->ssl ? SSL_write(h->ssl, data, chunk) : send(h->fd, data, (size_t)chunk, MSG_NOSIGNAL);

		if (n <= 0)
			return -1;
		data += n;
		len -= (size_t)n;
	}
	return 0;
}

static int dial(int port, const char *from, int rcvbuf)
{
	struct sockaddr_in a;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0)
		return -1;
	/* Before connect(): the window scale is settled in the handshake. */
	if (rcvbuf > 0 && setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf) != 0) {
		close(fd);
		return -1;
	}
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	if (from != NULL) {
		inet_pton(AF_INET, from, &a.sin_addr);
		if (bind(fd, (struct sockaddr *)&a, sizeof a) != 0) {
			close(fd);
			return -1;
		}
	}
	a.sin_port = htons((unsigned short)port);
	inet_pton(AF_INET, "127.0.0.1", &a.sin_addr);
	if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) {
		close(fd);
		return -1;
	}
	return fd;
}

int main(int argc, char **argv)
{
	const char *ready = NULL, *until = NULL, *from[MAX_FROM], *send_path = NULL, *then_path = NULL;
	const char *then_when = NULL;
	char *data = NULL, *then = NULL;
	size_t data_len = 0, then_len = 0;
	char fromlist[512] = "";
	int port = 0, count = 0, tls = 0, until_closed = 0, n_from = 0, i, opened = 0, closed = 0, rcvbuf = 0;
	double seconds = 60, end;
	static struct held h[MAX_CONNS];
	struct rlimit rl;
	SSL_CTX *ctx = NULL;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--port") == 0 && v) port = atoi(argv[++i]);
		else if (strcmp(a, "--count") == 0 && v) count = atoi(argv[++i]);
		else if (strcmp(a, "--from") == 0 && v) snprintf(fromlist, sizeof fromlist, "%s", argv[++i]);
		else if (strcmp(a, "--tls") == 0) tls = 1;
		else if (strcmp(a, "--send") == 0 && v) send_path = argv[++i];
		else if (strcmp(a, "--until-closed") == 0) until_closed = 1;
		else if (strcmp(a, "--ready-file") == 0 && v) ready = argv[++i];
		else if (strcmp(a, "--until") == 0 && v) until = argv[++i];
		else if (strcmp(a, "--seconds") == 0 && v) seconds = atof(argv[++i]);
		else if (strcmp(a, "--rcvbuf") == 0 && v) rcvbuf = atoi(argv[++i]);
		else if (strcmp(a, "--then") == 0 && v) then_path = argv[++i];
		else if (strcmp(a, "--then-when") == 0 && v) then_when = argv[++i];
		else {
			fprintf(stderr, "usage: hold_conns --port P --count N [--from A,B] [--tls] "
				"[--send FILE] [--ready-file F] [--until F] [--seconds S] [--until-closed] [--rcvbuf BYTES]\n"
				"       [--then FILE --then-when F]\n");
			return 2;
		}
	}
	if (port <= 0 || count <= 0 || count > MAX_CONNS || (then_path == NULL) != (then_when == NULL)) {
		fprintf(stderr, "hold_conns: --port and --count (1..%d) are required; --then and --then-when "
			"go together\n", MAX_CONNS);
		return 2;
	}
	signal(SIGPIPE, SIG_IGN); /* a write to a connection the server closed fails instead */
	if (send_path != NULL && slurp(send_path, &data, &data_len) != 0) {
		fprintf(stderr, "hold_conns: cannot read %s (at most %u bytes)\n", send_path, SEND_MAX);
		free(data);
		return 2;
	}
	if (then_path != NULL && slurp(then_path, &then, &then_len) != 0) {
		fprintf(stderr, "hold_conns: cannot read %s (at most %u bytes)\n", then_path, SEND_MAX);
		free(data);
		free(then);
		return 2;
	}
	for (char *t = strtok(fromlist, ","); t != NULL && n_from < MAX_FROM; t = strtok(NULL, ","))
		from[n_from++] = t;
	/* One descriptor per connection: take the hard limit. */
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (tls) {
		ctx = SSL_CTX_new(TLS_client_method());
		if (ctx == NULL)
			return 2;
		SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL);
	}
	for (i = 0; i < count; i++) {
		h[i].fd = dial(port, n_from ? from[i % n_from] : NULL, rcvbuf);
		if (h[i].fd < 0) {
			fprintf(stderr, "hold_conns: connection %d: %s\n", i, strerror(errno));
			break;
		}
		if (tls) {
			h[i].ssl = SSL_new(ctx);
			if (h[i].ssl == NULL || SSL_set_fd(h[i].ssl, h[i].fd) != 1 || SSL_connect(h[i].ssl) != 1) {
				fprintf(stderr, "hold_conns: TLS handshake %d failed\n", i);
				close(h[i].fd);
				break;
			}
		}
		opened++;
		if (data != NULL && send_all(&h[i], data, data_len) != 0 && !h[i].closed) {
			h[i].closed = 1;
			closed++;
			ERR_clear_error();
		}
	}
	if (ready != NULL) {
		FILE *f = fopen(ready, "w");

		if (f != NULL) {
			fprintf(f, "%d\n", opened);
			fclose(f);
		}
	}
	end = mono() + seconds;
	while (mono() < end) {
		struct stat st;

		if (until != NULL && stat(until, &st) == 0) {
			/*
			 * A close that came since the last sweep counts too: a starved
			 * holder may not have swept between the server's close and
			 * the test's release, which must not hide that close.
			 */
			closed += sweep(h, opened);
			break;
		}
		closed += sweep(h, opened);
		if (until_closed && closed == opened)
			break;
		if (then != NULL && stat(then_when, &st) == 0) {
			for (i = 0; i < opened; i++)
				if (!h[i].closed && send_all(&h[i], then, then_len) != 0) {
					h[i].closed = 1;
					closed++;
					ERR_clear_error();
				}
			free(then);
			then = NULL;
		}
		usleep(POLL_MS * 1000);
	}
	for (i = 0; i < opened; i++) {
		if (h[i].ssl != NULL)
			SSL_free(h[i].ssl);
		close(h[i].fd);
	}
	SSL_CTX_free(ctx);
	free(data);
	free(then);
	printf("opened=%d closed_by_server=%d\n", opened, closed);
	return opened == count ? 0 : 1;
}
