#define _GNU_SOURCE /* sched_getaffinity, CPU_COUNT */
#include "webhook/server.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h>
#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "policy/config.h"
#include "base/log.h"
#include "webhook/metrics.h"
#include "webhook/review.h"
#include "webhook/server_int.h"
#include "webhook/tls.h"

#define TICK_MS 100          /* signal wait / watchdog period */
#define DRAIN_QUIET_MS 500   /* no TLS connection for this long while draining: done */
#define PLAIN_MAX_CONNECTIONS 64
/*
 * At the connection limit a waiting client takes the slot of an idle
 * connection, one idle at least this long: a client between two requests of
 * a burst is not cut under its next request (its request would fail, and
 * kube-apiserver does not resend a POST that was written).
 */
#define EVICT_MIN_IDLE_MS 1000
#define RELOAD_RETRY_FIRST_MS 1000   /* a failed load is tried again after this, */
#define RELOAD_RETRY_MAX_MS 30000    /* doubling up to this */

/*
 * TLS 1.3 and 1.2 only; AEAD ciphers only; ECDHE key exchange only (forward
 * secrecy, X25519 or NIST curves), with ECDSA or RSA certificates.
 * %SERVER_PRECEDENCE picks our order (TLS 1.3 first, AES-GCM, then ChaCha20).
 */
#define SRV_TLS_PRIORITIES \
	"SECURE128:-VERS-ALL:+VERS-TLS1.3:+VERS-TLS1.2:" \
	"-CIPHER-ALL:+AES-128-GCM:+AES-256-GCM:+CHACHA20-POLY1305:" \
	"-MAC-ALL:+AEAD:-KX-ALL:+ECDHE-ECDSA:+ECDHE-RSA:" \
	"-GROUP-ALL:+GROUP-X25519:+GROUP-SECP256R1:+GROUP-SECP384R1:%SERVER_PRECEDENCE"

uint64_t server_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

long long server_now_ms(void)
{
	return (long long)(server_now_us() / 1000u);
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* ==== Connections ==== */

static void cut(struct srv_conn *conn, const char *why);

static void on_connection(void *cls, struct MHD_Connection *c, void **socket_context,
			  enum MHD_ConnectionNotificationCode toe)
{
	struct listener *l = cls;
	struct server *s = l->srv;
	struct srv_conn *conn = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		/* Counted as open before it stops counting as handed, so the accept thread never sees a gap. */
		atomic_fetch_add(&l->conns, 1);
		server_accept_started(l);
		conn = calloc(1, sizeof *conn);
		*socket_context = conn;
		if (conn == NULL)
			return; /* the handshake fails for want of state; nothing else breaks */
		conn->srv = s;
		conn->l = l;
		conn->plain = l->plain;
		conn->fd = ci ? ci->connect_fd : MHD_INVALID_SOCKET;
		conn->accepted_ms = server_now_ms();
		atomic_init(&conn->phase_ms, conn->accepted_ms);
		atomic_init(&conn->body_ms, 0);
		atomic_init(&conn->byte_ms, 0);
		atomic_init(&conn->arrived, 0);
		atomic_init(&conn->busy, 0);
		atomic_init(&conn->served, 0);
		/*
		 * A TLS connection's memory is charged to the budget (the plain
		 * listener's few are not: probes and scrapes must not wait on it).
		 * The accept thread let it in only with room to spare; a body
		 * that took the room meanwhile closes it at once instead.
		 */
		if (!conn->plain && arena_budget_take(&s->budget, SERVER_CONN_MEMORY) == 0)
			conn->charged = SERVER_CONN_MEMORY;
		pthread_mutex_lock(&s->conns_lock);
		conn->next = s->conns;
		if (s->conns != NULL)
			s->conns->prev = conn;
		s->conns = conn;
		if (!conn->plain && conn->charged == 0)
			cut(conn, "closing a new connection: the memory budget has no room for it");
		pthread_mutex_unlock(&s->conns_lock);
		return;
	}
	atomic_fetch_sub(&l->conns, 1);
	if (conn == NULL)
		return;
	/* libmicrohttpd closes the socket after this returns: unlinked here, the watchdog never touches it again. */
	pthread_mutex_lock(&s->conns_lock);
	if (conn->prev != NULL)
		conn->prev->next = conn->next;
	else
		s->conns = conn->next;
	if (conn->next != NULL)
		conn->next->prev = conn->prev;
	if (conn->cut)
		atomic_fetch_sub(&l->leaving, 1);
	pthread_mutex_unlock(&s->conns_lock);
	arena_budget_give(&s->budget, conn->charged);
	server_cert_release(conn->cert);
	free(conn);
	*socket_context = NULL;
}

/* Shuts conn down (under conns_lock): libmicrohttpd sees it and closes it in its own thread. */
static void cut(struct srv_conn *conn, const char *why)
{
	conn->cut = 1;
	atomic_fetch_add(&conn->l->leaving, 1);
	if (conn->fd != MHD_INVALID_SOCKET)
		shutdown(conn->fd, SHUT_RDWR);
	log_msg(LOG_LEVEL_DEBUG, why, LOG_END);
}

/*
 * conn's client waits for us, not we for it: bytes it sent sit unread in its
 * socket while nothing we wrote waits to go out. A busy or starved worker
 * looks like that (the kernel keeps what the client sent until the worker
 * comes back to it), and the client is not to blame for the time it takes. A
 * client that stops reading can leave its bytes unread too, by stalling our
 * writes (answers to pipelined requests fill the send buffer, and
 * libmicrohttpd reads no more until its answer is out), but then our own
 * bytes wait, unsent, for its window: no grace. Under conns_lock.
 */
static int waits_for_server(const struct srv_conn *conn)
{
	int unread = 0, unsent = 0;

	return conn->fd != MHD_INVALID_SOCKET && ioctl(conn->fd, FIONREAD, &unread) == 0 && unread > 0 &&
	       ioctl(conn->fd, SIOCOUTQNSD, &unsent) == 0 && unsent == 0;
}

/*
 * libmicrohttpd's timeout is an idle timeout: a client sending one byte every
 * few seconds never trips it. The watchdog gives each request a deadline
 * instead: from the moment a connection starts waiting for a request, the
 * whole request (headers and body) must arrive within o->timeout seconds, or
 * the socket is shut down, which libmicrohttpd then sees and closes in its own
 * thread. Idle keep-alive connections end the same way. A new connection must
 * have sent its first whole request header (TLS handshake included) within
 * o->header_timeout: one that holds a slot without asking anything goes soon.
 * And a request's body must follow its headers within o->body_timeout: one
 * that stalls in its body goes soon too, whatever --timeout allows. Those two
 * measure the client: while its bytes wait for a busy worker they do not run
 * out (a worker parsing a 1 MiB policy on a loaded machine held connections
 * past both); o->timeout measures the whole request, and bounds that grace.
 */
static void watchdog(struct server *s)
{
	long long now = server_now_ms(), limit = (long long)s->o->timeout * 1000;
	long long header_limit = (long long)s->o->header_timeout * 1000;
	long long body_limit = (long long)s->o->body_timeout * 1000;
	struct srv_conn *conn;

	pthread_mutex_lock(&s->conns_lock);
	for (conn = s->conns; conn != NULL; conn = conn->next) {
		if (conn->cut)
			continue;
		if (!atomic_load(&conn->busy) && atomic_load(&conn->served) == 0 &&
		    now - conn->accepted_ms > header_limit && !waits_for_server(conn))
			cut(conn, "closing a connection that sent no request header in time");
		else if (atomic_load(&conn->busy) && !atomic_load(&conn->arrived) &&
			 now - atomic_load(&conn->body_ms) > body_limit && !waits_for_server(conn))
			cut(conn, "closing a connection whose request body did not arrive in time");
		else if (!atomic_load(&conn->arrived) && now - atomic_load(&conn->phase_ms) > limit)
			cut(conn, "closing a connection whose request did not arrive in time");
	}
	pthread_mutex_unlock(&s->conns_lock);
}

/*
 * The oldest partial body: of the connections of listener l (NULL: any) but
 * except whose request has been in its body phase for over EVICT_MIN_IDLE_MS,
 * the one whose body phase began first, preferring one stalled (no byte for
 * EVICT_MIN_IDLE_MS) to one still receiving; stalled only: none else. One
 * that waits for the server (waits_for_server) is never picked. NULL when
 * none. Under conns_lock.
 */
static struct srv_conn *oldest_partial(struct server *s, const struct listener *l, const struct srv_conn *except,
				       int stalled_only, long long now)
{
	struct srv_conn *conn, *victim = NULL;
	long long oldest = 0;
	int victim_stalled = 0;

	for (conn = s->conns; conn != NULL; conn = conn->next) {
		long long since = atomic_load(&conn->body_ms);
		int stalled = now - atomic_load(&conn->byte_ms) >= EVICT_MIN_IDLE_MS;

		if ((l != NULL && conn->l != l) || conn == except || conn->cut || conn->plain ||
		    conn->fd == MHD_INVALID_SOCKET || !atomic_load(&conn->busy) || atomic_load(&conn->arrived) ||
		    now - since < EVICT_MIN_IDLE_MS || (stalled_only && !stalled) || waits_for_server(conn))
			continue;
		if (victim == NULL || stalled > victim_stalled || (stalled == victim_stalled && since < oldest)) {
			victim = conn;
			oldest = since;
			victim_stalled = stalled;
		}
	}
	return victim;
}

int server_evict(struct listener *l)
{
	struct server *s = l->srv;
	struct srv_conn *conn, *victim = NULL;
	long long now = server_now_ms(), oldest = 0;
	int victim_served = 0;

	pthread_mutex_lock(&s->conns_lock);
	for (conn = s->conns; conn != NULL; conn = conn->next) {
		long long since = atomic_load(&conn->phase_ms);
		int served = atomic_load(&conn->served) > 0;

		/* waits_for_server: a handshake in a busy worker, say. */
		if (conn->l != l || conn->cut || atomic_load(&conn->busy) || conn->fd == MHD_INVALID_SOCKET ||
		    now - since < EVICT_MIN_IDLE_MS || waits_for_server(conn))
			continue;
		/* Never-asked first, then keep-alive; within each, the longest idle. */
		if (victim == NULL || served < victim_served || (served == victim_served && since < oldest)) {
			victim = conn;
			oldest = since;
			victim_served = served;
		}
	}
	if (victim != NULL)
		cut(victim, "closing the longest idle connection: a new client waits for its slot");
	else if ((victim = oldest_partial(s, l, NULL, 0, now)) != NULL)
		cut(victim, "closing the oldest partial body: a new client waits for its slot");
	pthread_mutex_unlock(&s->conns_lock);
	return victim != NULL;
}

/*
 * The memory budget refused a request (on rq's connection, which may be
 * NULL): the oldest stalled partial body of another connection makes room
 * for the next try (the refused request is answered 503 with Retry-After).
 * A body still arriving is left to finish: it is soon done, or cut at
 * --body-timeout.
 */
void server_evict_for_memory(struct server *s, const struct srv_conn *rq_conn)
{
	struct srv_conn *victim;

	pthread_mutex_lock(&s->conns_lock);
	if ((victim = oldest_partial(s, NULL, rq_conn, 1, server_now_ms())) != NULL)
		cut(victim, "closing the oldest partial body: the memory budget is spent");
	pthread_mutex_unlock(&s->conns_lock);
}

int server_conn_fits(struct listener *l)
{
	struct server *s = l->srv;
	size_t used = atomic_load(&s->budget.used), limit = s->budget.limit;
	size_t need = ((size_t)atomic_load(&l->handed) + 1) * SERVER_CONN_MEMORY + s->o->max_body + 1;

	return l->plain || (used <= limit && need <= limit - used);
}

/* ==== Listeners ==== */

static void __attribute__((format(printf, 2, 0))) mhd_log(void *cls, const char *fmt, va_list ap)
{
	char text[512];
	size_t n;

	(void)cls;
	if (!log_enabled(LOG_LEVEL_DEBUG))
		return;
	vsnprintf(text, sizeof text, fmt, ap);
	n = strlen(text);
	while (n > 0 && (text[n - 1] == '\n' || text[n - 1] == '\r'))
		text[--n] = '\0';
	log_msg(LOG_LEVEL_DEBUG, "libmicrohttpd", "detail", text, LOG_END);
}

int server_parse_addr(const char *addr, struct sockaddr_storage *ss, struct error *err)
{
	struct addrinfo hints, *res = NULL;
	char host[256];
	const char *colon = strrchr(addr, ':'), *port;
	size_t hlen;
	int rc;

	if (colon == NULL || colon[1] == '\0') {
		error_set(err, ERROR_INPUT, "address \"%s\" is not HOST:PORT", addr);
		return -1;
	}
	port = colon + 1;
	/* getaddrinfo takes "70000" and wraps it to 4464: check the range here. */
	if (strspn(port, "0123456789") != strlen(port) || strlen(port) > 5 || atoi(port) > 65535) {
		error_set(err, ERROR_INPUT, "address \"%s\": port must be a number from 0 to 65535", addr);
		return -1;
	}
	hlen = (size_t)(colon - addr);
	if (hlen >= 2 && addr[0] == '[' && addr[hlen - 1] == ']') {
		addr++;
		hlen -= 2;
	}
	if (hlen >= sizeof host) {
		error_set(err, ERROR_INPUT, "address \"%s\": host too long", addr);
		return -1;
	}
	memcpy(host, addr, hlen);
	host[hlen] = '\0';
	memset(&hints, 0, sizeof hints);
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
	rc = getaddrinfo(hlen == 0 || strcmp(host, "*") == 0 ? NULL : host, port, &hints, &res);
	if (rc != 0) {
		error_set(err, ERROR_INPUT, "address \"%s\": %s", addr, gai_strerror(rc));
		return -1;
	}
	memset(ss, 0, sizeof *ss);
	memcpy(ss, res->ai_addr, res->ai_addrlen);
	freeaddrinfo(res);
	return 0;
}

/* Starts the TLS listener (s->tls_l) or the plain one (s->plain_l) on addr. 0, or -1 with err. */
static int start_listener(struct server *s, const char *addr, int plain, struct error *err)
{
	struct listener *l = plain ? &s->plain_l : &s->tls_l;
	struct sockaddr_storage ss;
	struct MHD_Daemon *d;
	/* The listening sockets are ours: pkg/webhook/server_accept.c accepts and spreads their connections. */
	unsigned flags = MHD_USE_EPOLL_INTERNAL_THREAD | MHD_USE_ITC | MHD_USE_NO_LISTEN_SOCKET;
	unsigned threads = plain ? 1 : s->o->threads;
	/*
	 * libmicrohttpd splits its limit evenly across workers and refuses a
	 * handed-over connection whose worker (fd % workers) is at its share, and
	 * that refusal path can wedge the worker. The accept thread enforces the
	 * limit over all workers, so each worker's share is made the whole
	 * limit (twice over, for safety: a connection handed over after a stale
	 * one was given up for lost may still find it starting): libmicrohttpd's
	 * own check can then never trip.
	 */
	unsigned max = plain ? PLAIN_MAX_CONNECTIONS : s->o->max_connections;
	char port[16];

	if (server_parse_addr(addr, &ss, err) != 0)
		return -1;
	if ((l->listen_fd = server_accept_open(&ss, err)) < 0) {
		error_prefix(err, "cannot listen on %s: ", addr);
		return -1;
	}
	if (!plain)
		flags |= MHD_USE_TLS;
	if (log_enabled(LOG_LEVEL_DEBUG))
		flags |= MHD_USE_ERROR_LOG; /* handshake failures and the like, for debugging */
	l->srv = s;
	l->plain = plain;
	l->max = max;
	/* The logger goes first: libmicrohttpd reports on the options that follow as it reads them. */
	d = MHD_start_daemon(flags, 0, NULL, NULL, server_http_request, l,
			     MHD_OPTION_EXTERNAL_LOGGER, mhd_log, NULL,
			     MHD_OPTION_THREAD_POOL_SIZE, threads > 1 ? threads : 0u,
			     MHD_OPTION_CONNECTION_LIMIT, 2 * max * threads,
			     MHD_OPTION_PER_IP_CONNECTION_LIMIT, plain ? 0u : s->o->max_per_ip,
			     MHD_OPTION_CONNECTION_TIMEOUT, s->o->timeout,
			     MHD_OPTION_NOTIFY_COMPLETED, server_http_completed, l,
			     MHD_OPTION_NOTIFY_CONNECTION, on_connection, l,
			     plain ? MHD_OPTION_END : MHD_OPTION_HTTPS_CERT_CALLBACK, server_cert_callback,
			     MHD_OPTION_HTTPS_PRIORITIES, SRV_TLS_PRIORITIES,
			     MHD_OPTION_END);
	if (d == NULL) {
		error_set(err, ERROR_SYSTEM, "cannot listen on %s (libmicrohttpd did not start)", addr);
		return -1;
	}
	l->d = d; /* the accept thread hands connections to it from now on */
	if (server_accept_start(l, err) != 0) {
		MHD_stop_daemon(d);
		l->d = NULL;
		return -1;
	}
	snprintf(port, sizeof port, "%u", server_accept_port(l->listen_fd));
	log_msg(LOG_LEVEL_INFO, "listening", "addr", addr, "port", port,
		"scheme", plain ? "http" : "https", LOG_END);
	return 0;
}

/* Stops accepting on l, then its daemon (which closes every connection). Safe to call twice. */
static void stop_listener(struct listener *l)
{
	server_accept_stop(l);
	if (l->d != NULL)
		MHD_stop_daemon(l->d);
	l->d = NULL;
}

/* ==== Lifecycle ==== */

void server_options_default(struct server_options *o)
{
	memset(o, 0, sizeof *o);
	o->addr = SERVER_DEFAULT_ADDR;
	o->max_body = SERVER_DEFAULT_MAX_BODY;
	o->max_connections = SERVER_DEFAULT_MAX_CONNECTIONS;
	o->max_per_ip = SERVER_DEFAULT_MAX_PER_IP;
	o->timeout = SERVER_DEFAULT_TIMEOUT;
	o->header_timeout = SERVER_DEFAULT_HEADER_TIMEOUT;
	o->body_timeout = SERVER_DEFAULT_BODY_TIMEOUT;
	o->grace = SERVER_DEFAULT_GRACE;
	o->memory_budget = SERVER_DEFAULT_MEMORY_BUDGET;
}

/*
 * SIGTERM: readiness goes false and every answer says "Connection: close".
 * New connections are still accepted (kube-apiserver may not have seen the
 * endpoint go yet) until no TLS connection has been open for DRAIN_QUIET_MS,
 * or until shortly before the grace period ends. Then the listener stops
 * accepting, requests in flight get the rest of the grace period, and the
 * daemons stop.
 */
static void drain(struct server *s)
{
	long long start = server_now_ms(), deadline = start + (long long)s->o->grace * 1000;
	long long margin = (long long)s->o->grace * 250 < 1000 ? (long long)s->o->grace * 250 : 1000;
	long long quiet = -1, now;

	atomic_store(&s->draining, 1);
	log_msg(LOG_LEVEL_INFO, "draining", LOG_END);
	while ((now = server_now_ms()) < deadline - margin) {
		if (atomic_load(&s->tls_l.conns) + atomic_load(&s->tls_l.handed) > 0)
			quiet = -1;
		else if (quiet < 0)
			quiet = now;
		else if (now - quiet >= DRAIN_QUIET_MS)
			break;
		watchdog(s);
		sleep_ms(20);
	}
	server_accept_stop(&s->tls_l);
	while (atomic_load(&s->in_flight) > 0 && server_now_ms() < deadline - 50)
		sleep_ms(10);
	if (atomic_load(&s->in_flight) > 0)
		log_msg(LOG_LEVEL_WARN, "grace period over with requests in flight", LOG_END);
	stop_listener(&s->tls_l);
	stop_listener(&s->plain_l);
	log_msg(LOG_LEVEL_INFO, "stopped", LOG_END);
}

/*
 * Loads what w watches when its files changed, or when a failed load is due
 * for another try (and the files hold still): a reload that failed for want
 * of descriptors or memory, or a policy that was invalid and may be fixed,
 * is retried with backoff rather than left until the files change again.
 * force: SIGHUP, load now.
 */
static void reload_due(struct server *s, struct watch *w, int config, int force, long long now)
{
	const char *a = config ? s->o->config_path : s->o->tls_cert, *b = config ? NULL : s->o->tls_key;
	int retry = w->retry_ms != 0 && now >= w->retry_ms;
	struct error err = { 0 };
	int rc;

	if (a == NULL && !force)
		return;  /* the embedded policy: nothing to watch */
	if (!server_watch_due(w, a, b, retry) && !force)
		return;
	rc = config ? server_load_config(s, 0, &err) : server_load_cert(s, 0, &err);
	if (rc == 0) {
		w->retry_ms = 0;
		w->backoff_ms = RELOAD_RETRY_FIRST_MS;
		return;
	}
	if (!retry || w->backoff_ms < RELOAD_RETRY_FIRST_MS)
		w->backoff_ms = RELOAD_RETRY_FIRST_MS;  /* a new failure starts the backoff again */
	w->retry_ms = now + w->backoff_ms;
	w->backoff_ms = w->backoff_ms * 2 < RELOAD_RETRY_MAX_MS ? w->backoff_ms * 2 : RELOAD_RETRY_MAX_MS;
}

static void serve_loop(struct server *s, const sigset_t *sigs)
{
	const struct timespec tick = { 0, TICK_MS * 1000000L };
	long long last_watch = server_now_ms();
	long watch_ms = s->o->watch_ms ? (long)s->o->watch_ms : 1000;

	for (;;) {
		int sig = sigtimedwait(sigs, NULL, &tick), hup = 0;
		long long now;

		if (sig == SIGTERM || sig == SIGINT) {
			log_msg(LOG_LEVEL_INFO, sig == SIGTERM ? "SIGTERM received" : "SIGINT received", LOG_END);
			return;
		}
		if (sig == SIGHUP) {
			log_msg(LOG_LEVEL_INFO, "SIGHUP received: reloading policy and certificate", LOG_END);
			hup = 1;
		}
		watchdog(s);
		now = server_now_ms();
		if (hup || now - last_watch >= watch_ms) {
			last_watch = now;
			reload_due(s, &s->cfg_watch, 1, hup, now);
			if (!s->o->self_signed)
				reload_due(s, &s->cert_watch, 0, hup, now);
		}
	}
}

/* Lets the process open as many descriptors as its hard limit allows: one per connection, and more. */
static void raise_fd_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_NOFILE, &rl);
	}
}

static int check_options(const struct server_options *o, struct error *err)
{
	if (o->self_signed ? (o->tls_cert || o->tls_key) : (!o->tls_cert || !o->tls_key)) {
		error_set(err, ERROR_INPUT, "give --tls-cert and --tls-key, or --self-signed");
		return -1;
	}
	if (o->max_body == 0 || o->timeout == 0 || o->grace == 0 || o->max_connections == 0 ||
	    o->header_timeout == 0 || o->body_timeout == 0) {
		error_set(err, ERROR_INPUT, "--max-body, --timeout, --header-timeout, --body-timeout, "
			  "--shutdown-grace and --max-connections must be positive");
		return -1;
	}
	if (o->policy_key != NULL && review_policy_key_check(o->policy_key, err) != 0) {
		error_prefix(err, "--policy-key: ");
		return -1;
	}
	if (o->memory_budget < o->max_body + 1 + SERVER_CONN_MEMORY) {
		error_set(err, ERROR_INPUT, "--memory-budget (%zu) must hold at least one --max-body (%zu) "
			  "and one connection (%u)", o->memory_budget, o->max_body, SERVER_CONN_MEMORY);
		return -1;
	}
	return 0;
}

unsigned server_default_threads(const char *cpu_max)
{
	cpu_set_t set;
	long n = 0;
	FILE *f = cpu_max ? fopen(cpu_max, "r") : NULL;

	if (sched_getaffinity(0, sizeof set, &set) == 0)
		n = CPU_COUNT(&set);
	if (n <= 0)
		n = sysconf(_SC_NPROCESSORS_ONLN);
	if (f != NULL) {
		char quota[32];
		long long period = 0;

		/* "max 100000" (no quota) or "150000 100000": 1.5 CPUs, so 2 threads. */
		if (fscanf(f, "%31s %lld", quota, &period) == 2 && strcmp(quota, "max") != 0 && period > 0) {
			long long q = atoll(quota), cpus = (q + period - 1) / period;

			if (q > 0 && cpus < n)
				n = (long)cpus;
		}
		fclose(f);
	}
	if (n < 1)
		n = 1;
	return n > (long)SERVER_THREADS_MAX ? SERVER_THREADS_MAX : (unsigned)n;
}

int server_run(const struct server_options *opts, struct error *err)
{
	struct server_options o = *opts;
	struct server s;
	sigset_t sigs, old;
	int rc = -1, masked = 0, mem = 0;

	memset(&s, 0, sizeof s);
	s.tls_l.listen_fd = s.plain_l.listen_fd = -1;
	if (check_options(&o, err) != 0)
		return -1;
	if (o.threads == 0)
		o.threads = server_default_threads(SERVER_CGROUP_CPU_MAX);
	s.o = &o;
	pthread_mutex_init(&s.lock, NULL);
	pthread_mutex_init(&s.conns_lock, NULL);
	atomic_init(&s.draining, 0);
	atomic_init(&s.in_flight, 0);
	arena_budget_init(&s.budget, o.memory_budget);
	atomic_init(&s.not_after, 0);
	raise_fd_limit();
	if ((s.metrics = metrics_new(o.version, err)) == NULL)
		goto out;
	server_watch_init(&s.cfg_watch, o.config_path, NULL);
	server_watch_init(&s.cert_watch, o.tls_cert, o.tls_key);
	/*
	 * A policy file that does not load is no reason to exit: a crash loop
	 * would take every replica down with it at the next restart, and a
	 * rolling update would replace good replicas. The server runs not ready
	 * (/readyz 503) and keeps trying until the file is fixed.
	 */
	if (server_load_config(&s, 1, err) != 0) {
		if (o.config_path == NULL)
			goto out;
		s.cfg_watch.retry_ms = server_now_ms() + RELOAD_RETRY_FIRST_MS;
		s.cfg_watch.backoff_ms = RELOAD_RETRY_FIRST_MS * 2;
		error_clear(err);
	}
	if (server_load_cert(&s, 1, err) != 0)
		goto out;

	/* Signals are taken by sigtimedwait() in this thread; the daemons' threads inherit the mask. */
	signal(SIGPIPE, SIG_IGN);
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	sigaddset(&sigs, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &sigs, &old);
	masked = 1;
	server_mem_start();
	mem = 1;
	if (start_listener(&s, o.addr, 0, err) != 0)
		goto out;
	if (o.metrics_addr != NULL && start_listener(&s, o.metrics_addr, 1, err) != 0)
		goto out;
	serve_loop(&s, &sigs);
	drain(&s);
	rc = 0;
out:
	stop_listener(&s.plain_l);
	stop_listener(&s.tls_l);
	if (mem)
		server_mem_stop();
	if (masked) {
		/*
		 * A SIGTERM or SIGHUP that came during the drain is still pending:
		 * unmasked, its default action would end the process with 143 or 129
		 * after a clean shutdown. Take them first.
		 */
		const struct timespec zero = { 0, 0 };

		while (sigtimedwait(&sigs, NULL, &zero) > 0)
			;
		pthread_sigmask(SIG_SETMASK, &old, NULL);
	}
	server_config_release(s.cfg);
	server_cert_release(s.cert);
	metrics_free(s.metrics);
	pthread_mutex_destroy(&s.lock);
	pthread_mutex_destroy(&s.conns_lock);
	return rc;
}
