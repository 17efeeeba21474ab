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

static void *accept_loop(void *arg)
{
	struct listener *l = arg;
	struct pollfd p = { .fd = l->listen_fd, .events = POLLIN };
	int waited_ms = 0, quiet_ms = 0;

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
			pause_ms(ACCEPT_BACKOFF_MS);
			waited_ms += ACCEPT_BACKOFF_MS;
			if (waited_ms >= ACCEPT_STALE_MS && atomic_load(&l->handed) > 0)
				atomic_store(&l->handed, 0);
			continue;
		}
		waited_ms = 0;
		if (poll(&p, 1, ACCEPT_POLL_MS) <= 0)
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
		/* libmicrohttpd owns fd from here, closing it itself if it cannot take it. */
		atomic_fetch_add(&l->handed, 1);
		if (MHD_add_connection(l->d, fd, (struct sockaddr *)&peer, len) != MHD_YES) {
			server_accept_started(l); /* not coming: give the slot back */
			log_msg(LOG_LEVEL_DEBUG, "connection refused by libmicrohttpd", "error", strerror(errno), LOG_END);
		}
	}
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
