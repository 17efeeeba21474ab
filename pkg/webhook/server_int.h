/*
 * server_int: what pkg/webhook/server.c (connections, listeners, lifecycle),
 * pkg/webhook/server_http.c (one HTTP request: framing, body, routing, answer),
 * pkg/webhook/server_reload.c (policy and certificate in service, hot reload),
 * pkg/webhook/server_accept.c (the listeners' accept loops) and pkg/webhook/server_mem.c (the
 * allocator's set-up around pkg/base/arena.c's budget and arenas) share.
 * Private to the server module; nothing outside pkg/server*.c includes it.
 */
#ifndef GPU_ADMISSION_SERVER_INT_H
#define GPU_ADMISSION_SERVER_INT_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <time.h>

#include <gnutls/abstract.h>
#include <gnutls/gnutls.h>
#include <microhttpd.h>

#include "base/arena.h"
#include "policy/config.h"
#include "base/error.h"
#include "webhook/metrics.h"
#include "webhook/server.h"
#include "webhook/tls.h"

/* A policy configuration in service, shared by the requests using it. */
struct srv_config {
	atomic_int refs;
	struct config *cfg;
};

/* A certificate in service as GnuTLS wants it, shared by the connections whose handshake used it. */
struct srv_cert {
	atomic_int refs;
	gnutls_pcert_st pcert[TLS_CHAIN_MAX];
	unsigned n;
	gnutls_privkey_t key;
	time_t not_after;
};

struct server;
struct listener;

/* Per connection (libmicrohttpd's socket_context), from accept to close. */
struct srv_conn {
	struct srv_conn *prev, *next;  /* server.conns, under server.conns_lock */
	struct server *srv;
	struct listener *l;
	MHD_socket fd;
	int plain;                     /* on the plain-HTTP metrics listener */
	int cut;                       /* shut down by the watchdog or evicted; under conns_lock */
	struct srv_cert *cert;         /* a reference, taken in the handshake */
	size_t charged;                /* SERVER_CONN_MEMORY taken from the memory budget (0: none) */
	long long accepted_ms;         /* when it was opened */
	atomic_llong phase_ms;         /* when the connection began waiting for a request */
	atomic_llong body_ms;          /* when the current request's headers were in: its body phase began */
	atomic_llong byte_ms;          /* when the current request's last body bytes (or headers) came */
	atomic_int arrived;            /* the current request is fully read */
	atomic_int busy;               /* a request's headers are in: from the first callback to completion */
	atomic_int served;             /* requests completed on it */
};

/* Per request (libmicrohttpd's req_cls), from the first callback to NOTIFY_COMPLETED. */
struct srv_req {
	struct srv_conn *conn;         /* borrowed; may be NULL */
	enum metrics_endpoint ep;
	enum error_kind early;         /* refused from the headers alone; the body is dropped */
	char *body;
	size_t len, cap, dropped;
	size_t declared;               /* its Content-Length (0: none, chunked): the buffer grows no further */
	size_t reserved;               /* bytes of the memory budget held for the body: its buffer, grown as it arrives */
	size_t held;                   /* the most memory it held (body and parse): trim after a large one */
	uint64_t start_us;             /* its headers were read */
	uint64_t body_us;              /* the last of its body was read (0: not yet) */
};

struct file_sig {
	int exists;
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime, ctime;
};

/* A watched file set: reloaded once its signature changed and then held still for one poll. */
struct watch {
	struct file_sig seen[2], loaded[2];
	long long retry_ms;            /* the last load failed: try again at this time (0: not pending) */
	long long backoff_ms;          /* the wait before the next retry */
};

/*
 * One listening socket, TLS or plain: pkg/webhook/server_accept.c accepts on it and
 * hands the connections to its libmicrohttpd daemon.
 */
struct listener {
	struct server *srv;
	int plain;
	struct MHD_Daemon *d;
	int listen_fd;
	unsigned max;                  /* open connections at most; the next client waits in the queue */
	pthread_t acceptor;
	int accepting;                 /* acceptor is running */
	atomic_int stop_accept;
	atomic_int conns;              /* open connections */
	atomic_int handed;             /* given to libmicrohttpd, not yet started (counted as open) */
	atomic_int leaving;            /* shut down by us (watchdog, eviction), not yet closed */
};

struct server {
	const struct server_options *o;
	struct metrics *metrics;
	struct listener tls_l, plain_l;
	pthread_mutex_t lock;          /* guards cfg and cert: taken once per request, briefly */
	struct srv_config *cfg;        /* NULL until a valid policy has loaded (not ready) */
	struct srv_cert *cert;
	char cfg_error[256];           /* why there is no policy in service (under lock) */
	/* The watchdog walks every connection under conns_lock: requests never wait for it. */
	pthread_mutex_t conns_lock;
	struct srv_conn *conns;
	atomic_int draining;
	atomic_int in_flight;
	struct arena_budget budget;    /* the memory budget: TLS connections, bodies, parse arenas (o->memory_budget) */
	atomic_llong not_after;        /* of the certificate in service */
	atomic_int cert_unnamed;       /* the certificate in service does not name --service-name: not ready */
	struct watch cfg_watch, cert_watch;
};

/* Whether ss is "[::]": every address, IPv4 included (dual stack), as it is for Go servers. */
static inline int server_addr_dual_stack(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
}

/* ==== pkg/webhook/server_accept.c ==== */

/* A new listening socket bound to ss (borrowed); -1 with err. */
int server_accept_open(const struct sockaddr_storage *ss, struct error *err);

/* The port fd is bound to (0 when unknown): what "port 0" turned into. */
unsigned server_accept_port(int fd);

/*
 * Starts the thread that accepts on l->listen_fd and hands each connection
 * to l->d, holding off while l->max are open or the memory budget has no room
 * for one more (server_conn_fits()); when a client is waiting then, a
 * connection is closed for it (server_evict()). -1 with err.
 */
int server_accept_start(struct listener *l, struct error *err);

/* libmicrohttpd started a connection the accept thread handed over: it now counts in l->conns. */
void server_accept_started(struct listener *l);

/* Stops accepting (waits for the thread) and closes l->listen_fd. Safe to call twice. */
void server_accept_stop(struct listener *l);

/* ==== pkg/webhook/server.c ==== */

/*
 * Frees a slot of l (and its memory) for a waiting client: shuts down a
 * connection with no request in progress and no bytes waiting to be read,
 * idle for a second at least: one that never sent a whole request header
 * first (what a slot-holding attack looks like), else an idle keep-alive one;
 * the longest idle of them. With none idle, the oldest partial body: a request
 * whose headers came over a second ago and whose body has not all arrived
 * (kube-apiserver writes a review in one go). 1 when one was cut, 0 when none
 * qualifies. The slot is free once libmicrohttpd has closed it (l->leaving
 * counts it until then).
 */
int server_evict(struct listener *l);

/*
 * Whether the memory budget has room for one more TLS connection of l (and
 * those handed over, not yet started and charged) while keeping one whole
 * --max-body free: connections alone never lock bodies out.
 */
int server_conn_fits(struct listener *l);

/*
 * The memory budget refused a request (on rq_conn, which may be NULL): the
 * oldest stalled partial body of another connection is cut to make room.
 */
void server_evict_for_memory(struct server *s, const struct srv_conn *rq_conn);

/* CLOCK_MONOTONIC, in microseconds and in milliseconds. */
uint64_t server_now_us(void);
long long server_now_ms(void);

/* ==== pkg/webhook/server_http.c ==== */

/*
 * libmicrohttpd's access handler (cls: the struct listener): checks the
 * headers, takes the body within --max-body and the memory budget, and
 * answers: an admission review, /healthz, /readyz, /metrics, or an error.
 */
enum MHD_Result server_http_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				    const char *version, const char *upload, size_t *upload_size, void **req_cls);

/* libmicrohttpd's completion callback: the request's body and its charge released. */
void server_http_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			   enum MHD_RequestTerminationCode toe);

/* ==== pkg/webhook/server_mem.c ==== */

/*
 * Points jansson's allocator at the per-request arenas (outside a request it
 * is malloc) and fixes glibc's mmap threshold. Call before the workers start;
 * server_mem_stop() undoes it after they stopped.
 */
void server_mem_start(void);
void server_mem_stop(void);

/* After a request that held `held` bytes: returns free heap memory to the kernel when it was large. */
void server_mem_after_request(size_t held);

/* ==== pkg/webhook/server_reload.c ==== */

/*
 * Borrowed until server_config_release(): the policy in service now (one
 * reference taken), or NULL while no valid policy has loaded.
 */
struct srv_config *server_config_acquire(struct server *s);

/* Drops a reference; the last one frees. Accepts NULL. */
void server_config_release(struct srv_config *c);

/* Drops a reference; the last one frees. Accepts NULL. */
void server_cert_release(struct srv_cert *c);

/* GnuTLS's certificate retrieve function (gnutls_certificate_retrieve_function2). */
int server_cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			 gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey);

/*
 * Loads the policy / the certificate named in s->o and puts it in service.
 * initial: at start (failures are not counted). A failure is logged (and
 * later counted) and the previous one stays; the caller schedules a retry.
 */
int server_load_config(struct server *s, int initial, struct error *err);
int server_load_cert(struct server *s, int initial, struct error *err);

/* Records the current signature of files a and b (either may be NULL). */
void server_watch_init(struct watch *w, const char *a, const char *b);

/*
 * 1 when a or b changed since the last load (or retry: a failed load is due
 * for another try) and held still since the previous poll.
 */
int server_watch_due(struct watch *w, const char *a, const char *b, int retry);

#endif
