/*
 * server_int: what pkg/server.c (HTTP, connections, lifecycle),
 * pkg/server_reload.c (policy and certificate in service, hot reload) and
 * pkg/server_accept.c (the TLS listener's accept loop) share.
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

#include "config.h"
#include "error.h"
#include "metrics.h"
#include "server.h"
#include "tls.h"

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

/* Per connection (libmicrohttpd's socket_context), from accept to close. */
struct srv_conn {
	struct srv_conn *prev, *next;  /* server.conns, under server.conns_lock */
	struct server *srv;
	MHD_socket fd;
	int plain;                     /* on the plain-HTTP metrics listener */
	int cut;                       /* the watchdog shut it down */
	struct srv_cert *cert;         /* a reference, taken in the handshake */
	atomic_llong phase_ms;         /* when the connection began waiting for a request */
	atomic_int arrived;            /* the current request is fully read */
};

/* Per request (libmicrohttpd's req_cls), from the first callback to NOTIFY_COMPLETED. */
struct srv_req {
	struct srv_conn *conn;         /* borrowed; may be NULL */
	enum metrics_endpoint ep;
	enum error_kind early;         /* refused from the headers alone; the body is dropped */
	char *body;
	size_t len, cap, dropped;
	uint64_t start_us;
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
};

struct listener {
	struct server *srv;
	int plain;
};

struct server {
	const struct server_options *o;
	struct metrics *metrics;
	struct MHD_Daemon *tls_d, *plain_d;
	struct listener tls_l, plain_l;
	pthread_mutex_t lock;          /* guards cfg and cert: taken once per request, briefly */
	struct srv_config *cfg;
	struct srv_cert *cert;
	/* The watchdog walks every connection under conns_lock: requests never wait for it. */
	pthread_mutex_t conns_lock;
	struct srv_conn *conns;
	atomic_int draining;
	atomic_int tls_conns;          /* open connections on the TLS listener */
	atomic_int in_flight;
	atomic_llong not_after;        /* of the certificate in service */
	struct watch cfg_watch, cert_watch;
	int listen_fd;                 /* the TLS listener's socket, accepted by pkg/server_accept.c */
	pthread_t acceptor;
	int accepting;                 /* acceptor is running */
	atomic_int stop_accept;
	atomic_int handed;             /* given to libmicrohttpd, not yet started (counted as open) */
};

/* Whether ss is "[::]": every address, IPv4 included (dual stack), as it is for Go servers. */
static inline int server_addr_dual_stack(const struct sockaddr_storage *ss)
{
	return ss->ss_family == AF_INET6 &&
	       IN6_IS_ADDR_UNSPECIFIED(&((const struct sockaddr_in6 *)(const void *)ss)->sin6_addr);
}

/* ==== pkg/server_accept.c ==== */

/* A new listening socket bound to ss (borrowed); -1 with err. */
int server_accept_open(const struct sockaddr_storage *ss, struct error *err);

/* The port fd is bound to (0 when unknown): what "port 0" turned into. */
unsigned server_accept_port(int fd);

/*
 * Starts the thread that accepts on s->listen_fd and hands each connection
 * to s->tls_d, holding off while s->o->max_connections are open. -1 with err.
 */
int server_accept_start(struct server *s, struct error *err);

/* libmicrohttpd started a connection the accept thread handed over: it now counts in tls_conns. */
void server_accept_started(struct server *s);

/* Stops accepting (waits for the thread) and closes s->listen_fd. Safe to call twice. */
void server_accept_stop(struct server *s);

/* ==== pkg/server_reload.c ==== */

/* Borrowed until server_config_release(): the policy in service now (one reference taken). */
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
 * initial: at start (failures are returned, not counted). Later, a failure is
 * logged and counted and the previous one stays.
 */
int server_load_config(struct server *s, int initial, struct error *err);
int server_load_cert(struct server *s, int initial, struct error *err);

/* Reloads the policy and/or the certificate (not a self-signed one). */
void server_reload(struct server *s, int config, int cert);

/* Records the current signature of files a and b (either may be NULL). */
void server_watch_init(struct watch *w, const char *a, const char *b);

/* 1 when a or b changed since the last load and held still since the previous poll. */
int server_watch_due(struct watch *w, const char *a, const char *b);

#endif
