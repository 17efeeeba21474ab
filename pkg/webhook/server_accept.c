/*
 * server_accept: the listeners' own accept loops.
 *
 * libmicrohttpd's thread pool lets every worker poll the listening socket and
 * accept up to ten connections in a row, so a burst of new connections (a
 * kube-apiserver restart, a load generator) tends to land on one worker and
 * one core while the others idle: measured here, 4 keep-alive connections all
 * on one of two workers served 16.8k req/s against 21k when split. Accepting
 * in one thread and handing each socket over with MHD_add_connection() lets
 * libmicrohttpd place it by descriptor number (fd % workers), which spreads
 * connections opened one after another evenly.
 *
 * The connection limit keeps its meaning: at the limit nothing is accepted,
 * so the next client waits in the listen queue instead of being closed. A
 * worker starts a handed-over connection a moment later, so until then it is
 * counted in l->handed; without that a burst would be accepted past the
 * limit and libmicrohttpd would close the excess. The memory budget is a
 * limit too: each TLS connection is charged to it (SERVER_CONN_MEMORY), so
 * nothing is accepted while it has no room for one more and a whole body.
 * But a client waiting at the limit is not left there while connections sit
 * idle: the one idle the longest is closed for it (idle keep-alive, or one
 * that never sent a whole request), as nginx reuses its keep-alive
 * connections, else the oldest partial body, so 1024 idle connections or
 * stalled bodies cannot lock new clients out until their timeout.
 *
 * The plain metrics listener is accepted here too: libmicrohttpd's own accept
 * busy-waits when it runs out of descriptors with no connection open (100 %
 * CPU), where this loop backs off.
 *
 * Plain HTTP sent to the TLS port (curl http://, a probe with the wrong
 * scheme) used to get an empty reply: GnuTLS refuses the first record and
 * says nothing the client can read. So a new TLS connection waits here for
 * its first byte, up to ACCEPT_SNIFF_MS, before it is handed over: a TLS
 * record starts with a content type (20 to 24) and an SSLv2 hello with a
 * byte >= 0x80, never with a capital letter, which every HTTP method is. A
 * capital letter gets one fixed 400 saying to use https, and the close:
 * nothing of the request is parsed or echoed, so it adds no surface. The
 * wait is bounded (ACCEPT_SNIFF_MAX connections at once, each counted as
 * handed over, so the limits hold); past either bound a connection is
 * handed over untested, as before.
 */
#define _GNU_SOURCE /* accept4 */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/log.h"
#include "webhook/server_int.h"

#define ACCEPT_BACKLOG 511   /* the kernel caps it at net.core.somaxconn */
#define ACCEPT_POLL_MS 50    /* how soon a stop request is noticed */
#define ACCEPT_BACKOFF_MS 10 /* at the connection limit, or out of descriptors */
#define ACCEPT_WARN_EVERY_MS 10000 /* out of descriptors: at most one warning this often */
/*
 * Handed over and not started after this long: libmicrohttpd dropped it before
 * it began (out of memory). Generous, because a busy worker starts new
 * connections only between the handshakes it is already doing (under valgrind
 * that took over a second and let a 9th connection in past a limit of 8).
 */
#define ACCEPT_STALE_MS 30000
#define ACCEPT_SNIFF_MAX 64       /* TLS connections waiting here for their first byte at once */
#define ACCEPT_SNIFF_MS 100       /* a first byte later than this is left to the TLS handshake */
#define ACCEPT_SNIFF_TICK_MS 10   /* how often waiting connections are looked at for their time */
#define ACCEPT_SNIFF_DRAIN 16384  /* bytes of a plain HTTP request read before the answer: unread
                                     bytes at the close make a reset, which can lose the answer */
#define ACCEPT_PLAIN_ANSWER_MAX 512

int server_accept_open(const struct sockaddr_storage *ss, struct error *err)
{
	socklen_t len = ss->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
	/* Non-blocking: a client that resets between poll() and accept() must not stall the loop. */
	int fd = socket(ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;

	if (fd < 0) {
		error_set(err, ERROR_SYSTEM, "socket: %s", strerror(errno));
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (ss->ss_family == AF_INET6) {
		int v6only = !server_addr_dual_stack(ss);

		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only, sizeof v6only);
	}
	if (bind(fd, (const struct sockaddr *)ss, len) != 0 || listen(fd, ACCEPT_BACKLOG) != 0) {
		error_set(err, ERROR_SYSTEM, "%s", strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

unsigned server_accept_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;

	if (getsockname(fd, (struct sockaddr *)&ss, &len) != 0)
		return 0;
	if (ss.ss_family == AF_INET6)
		return ntohs(((struct sockaddr_in6 *)&ss)->sin6_port);
	return ntohs(((struct sockaddr_in *)&ss)->sin_port);
}

static void pause_ms(long ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

void server_accept_started(struct listener *l)
{
	int n = atomic_load(&l->handed);

	/* Never below zero: a connection dropped as stale may still start. */
	while (n > 0 && !atomic_compare_exchange_weak(&l->handed, &n, n - 1))
		;
}

/* Whether a client waits in the listen queue. */
static int client_waiting(int listen_fd)
{
	struct pollfd p = { .fd = listen_fd, .events = POLLIN };

	return poll(&p, 1, 0) > 0;
}

/* A TLS connection accepted and waiting for its first byte. */
struct sniff {
	int fd;
	struct sockaddr_storage peer;
	socklen_t len;
	long long since_ms;
};

struct sniffer {
	struct sniff v[ACCEPT_SNIFF_MAX];
	size_t n;
};

/* fd (counted in l->handed) to libmicrohttpd, which owns it from here, closing it itself if it cannot take it. */
static void hand_over(struct listener *l, int fd, struct sockaddr_storage *peer, socklen_t len)
{
	if (MHD_add_connection(l->d, fd, (struct sockaddr *)peer, len) != MHD_YES) {
		server_accept_started(l); /* not coming: give the slot back */
		log_msg(LOG_LEVEL_DEBUG, "connection refused by libmicrohttpd", "error", strerror(errno), LOG_END);
	}
}

/* The fixed answer to plain HTTP on the TLS port, then the close. */
static void answer_plain_http(int fd)
{
	static const char body[] = "This port speaks HTTPS only: use https:// instead of http://\n";
	char buf[ACCEPT_PLAIN_ANSWER_MAX], drain[1024];
	size_t read_bytes = 0;
	ssize_t n;
	int len;

	while (read_bytes < ACCEPT_SNIFF_DRAIN && (n = recv(fd, drain, sizeof drain, MSG_DONTWAIT)) > 0)
		read_bytes += (size_t)n;
	len = snprintf(buf, sizeof buf,
		       "HTTP/1.1 400 Bad Request\r\nContent-Type: text/plain; charset=utf-8\r\n"
		       "Content-Length: %zu\r\nConnection: close\r\n\r\n%s", sizeof body - 1, body);
	/* One non-blocking write into an empty send buffer: it fits, or the client is not reading. */
	if (len > 0 && (size_t)len < sizeof buf)
		(void)!send(fd, buf, (size_t)len, MSG_NOSIGNAL | MSG_DONTWAIT);
	shutdown(fd, SHUT_WR);
	close(fd);
	log_msg(LOG_LEVEL_DEBUG, "plain HTTP on the TLS port: answered 400", LOG_END);
}

/* A waiting connection whose first byte came, or whose time is up: answered, closed or handed over. */
static void sniff_settle(struct listener *l, struct sniff *w)
{
	unsigned char b;
	ssize_t n = recv(w->fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);

	if (n == 1 && b >= 'A' && b <= 'Z') {
		answer_plain_http(w->fd);
		server_accept_started(l);
	} else if (n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
		close(w->fd); /* gone without a byte: nothing to hand over */
		server_accept_started(l);
	} else {
		hand_over(l, w->fd, &w->peer, w->len);
	}
	w->fd = -1;
}

/*
 * Waits up to ms for a client on the listening socket (when listen is set)
 * and for the first bytes of the connections in sn, settling those whose
 * byte came or whose time is up. Whether a client waits to be accepted.
 */
static int accept_wait(struct listener *l, struct sniffer *sn, int ms, int listen)
{
	struct pollfd p[1 + ACCEPT_SNIFF_MAX];
	long long now;
	size_t i, kept = 0;
	int ready;

	p[0].fd = listen ? l->listen_fd : -1;
	p[0].events = POLLIN;
	p[0].revents = 0;
	for (i = 0; i < sn->n; i++) {
		p[1 + i].fd = sn->v[i].fd;
		p[1 + i].events = POLLIN;
		p[1 + i].revents = 0;
	}
	if (sn->n > 0 && ms > ACCEPT_SNIFF_TICK_MS)
		ms = ACCEPT_SNIFF_TICK_MS;
	ready = poll(p, 1 + sn->n, ms);
	now = server_now_ms();
	for (i = 0; i < sn->n; i++) {
		if ((ready > 0 && p[1 + i].revents != 0) || now - sn->v[i].since_ms >= ACCEPT_SNIFF_MS)
			sniff_settle(l, &sn->v[i]);
		else
			sn->v[kept++] = sn->v[i];
	}
	sn->n = kept;
	return ready > 0 && (p[0].revents & POLLIN);
}

static void *accept_loop(void *arg)
{
	struct listener *l = arg;
	struct sniffer sn; /* on this thread's stack: 64 waiting connections, 10 KiB */
	int waited_ms = 0, quiet_ms = 0;
	size_t i;

	sn.n = 0;

	while (!atomic_load(&l->stop_accept)) {
		struct sockaddr_storage peer;
		socklen_t len = sizeof peer;
		int fd, one = 1;

		if (atomic_load(&l->conns) + atomic_load(&l->handed) >= (int)l->max || !server_conn_fits(l)) {
			/*
			 * At the limit, of connections or of memory. A client waiting
			 * for a slot gets the one of the connection idle the longest,
			 * or of the oldest partial body, once it has closed (the limit
			 * holds: a few milliseconds); with none it waits in the listen
			 * queue. A handed-over connection starts within
			 * milliseconds; one that has not after ACCEPT_STALE_MS was
			 * dropped by libmicrohttpd before it began (out of memory)
			 * and must not hold a slot forever.
			 */
			if (atomic_load(&l->leaving) == 0 && client_waiting(l->listen_fd))
				server_evict(l);
			if (sn.n > 0)
				accept_wait(l, &sn, ACCEPT_BACKOFF_MS, 0);
			else
				pause_ms(ACCEPT_BACKOFF_MS);
			waited_ms += ACCEPT_BACKOFF_MS;
			if (waited_ms >= ACCEPT_STALE_MS && atomic_load(&l->handed) > 0)
				atomic_store(&l->handed, 0);
			continue;
		}
		waited_ms = 0;
		if (!accept_wait(l, &sn, ACCEPT_POLL_MS, 1))
			continue;
		fd = accept4(l->listen_fd, (struct sockaddr *)&peer, &len, SOCK_CLOEXEC | SOCK_NONBLOCK);
		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
				/* The client stays queued and poll() wakes at once: one warning a while, not a flood. */
				if (quiet_ms <= 0) {
					log_msg(LOG_LEVEL_WARN, "accept failed", "error", strerror(errno), LOG_END);
					quiet_ms = ACCEPT_WARN_EVERY_MS;
				}
				pause_ms(ACCEPT_BACKOFF_MS);
				quiet_ms -= ACCEPT_BACKOFF_MS;
			}
			continue; /* EINTR, ECONNABORTED, EAGAIN: the client went away first */
		}
		quiet_ms = 0;
		/* Answers are small and come in one write: send them now, not after Nagle's delay. */
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		atomic_fetch_add(&l->handed, 1);
		if (!l->plain && sn.n < ACCEPT_SNIFF_MAX) {
			struct sniff *w = &sn.v[sn.n++];

			w->fd = fd;
			w->peer = peer;
			w->len = len;
			w->since_ms = server_now_ms();
			continue;
		}
		hand_over(l, fd, &peer, len);
	}
	/* Stopping: the connections still waiting for a byte are closed, as the queue's are. */
	for (i = 0; i < sn.n; i++) {
		close(sn.v[i].fd);
		server_accept_started(l);
	}
	sn.n = 0;
	return NULL;
}

int server_accept_start(struct listener *l, struct error *err)
{
	int rc;

	atomic_store(&l->stop_accept, 0);
	rc = pthread_create(&l->acceptor, NULL, accept_loop, l);
	if (rc != 0) {
		error_set(err, ERROR_SYSTEM, "cannot start the accept thread: %s", strerror(rc));
		return -1;
	}
	l->accepting = 1;
	return 0;
}

void server_accept_stop(struct listener *l)
{
	if (l->accepting) {
		atomic_store(&l->stop_accept, 1);
		pthread_join(l->acceptor, NULL);
		l->accepting = 0;
	}
	if (l->listen_fd >= 0) {
		close(l->listen_fd);
		l->listen_fd = -1;
	}
}
