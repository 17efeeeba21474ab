/*
 * server: the HTTPS admission webhook (libmicrohttpd).
 *
 *   POST /mutate, /validate   AdmissionReview in, AdmissionReview out (pkg/review)
 *   POST /validate-policy     the policy ConfigMap's CREATE and UPDATE, judged as check-config
 *                             judges a file (pkg/review: review_policy_handle())
 *   GET  /healthz             the process is alive
 *   GET  /readyz              config loaded, certificate valid, not draining
 *   GET  /metrics             Prometheus text (also on the optional plain-HTTP listener)
 *
 * server_run() owns the process while it serves: it blocks SIGTERM, SIGINT
 * and SIGHUP in every thread and waits for them itself. SIGHUP reloads the
 * policy and the certificate; SIGTERM / SIGINT drain and return. The policy
 * file and the certificate files are also polled and reloaded when they change
 * (a bad new file is logged and counted; the old one stays in service, and
 * the load is retried with backoff, as it is when it failed for want of
 * descriptors). A policy file that does not load at start leaves the server
 * running but not ready, retrying, rather than exiting.
 */
#ifndef GPU_ADMISSION_SERVER_H
#define GPU_ADMISSION_SERVER_H

#include <stddef.h>

#include "base/error.h"
#include "base/limit.h"

#define SERVER_DEFAULT_ADDR "0.0.0.0:8443"
#define SERVER_DEFAULT_MAX_BODY LIMIT_KUBE_REQUEST_MAX
#define SERVER_DEFAULT_MAX_CONNECTIONS 1024u
#define SERVER_DEFAULT_MAX_PER_IP 256u
#define SERVER_DEFAULT_TIMEOUT 30u
#define SERVER_DEFAULT_HEADER_TIMEOUT 5u  /* seconds from accept to a whole first request header */
/*
 * Seconds from a request's headers to the end of its body. kube-apiserver
 * writes a review in one go (milliseconds); a body still missing after this
 * holds a slot and memory for nothing.
 */
#define SERVER_DEFAULT_BODY_TIMEOUT 10u
/*
 * Bytes for everything a client can make the server hold, together: every
 * open TLS connection (SERVER_CONN_MEMORY each), every request body as far as
 * it has arrived, every parse result being built. Under the chart's 64 Mi
 * limit with the ~10 MB the process needs besides and room to spare (pkg/webhook/README.md,
 * Security). Over it: 503 for a body, the listen queue for a connection.
 */
#define SERVER_DEFAULT_MEMORY_BUDGET (32u * 1024 * 1024)
/*
 * What one open TLS connection is charged to the memory budget: its GnuTLS
 * session and record buffers and libmicrohttpd's connection memory, ~38 kB
 * measured per idle connection (1,000 of them: +38 MB RSS), with a margin.
 */
#define SERVER_CONN_MEMORY (48u * 1024)
#define SERVER_DEFAULT_GRACE 10u

struct claims;
struct events;

struct server_options {
	const char *addr;           /* "HOST:PORT"; port 0 picks a free one (logged) */
	const char *metrics_addr;   /* plain-HTTP /metrics, /healthz, /readyz; NULL: none */
	const char *tls_cert;       /* PEM files, watched; both NULL with self_signed */
	const char *tls_key;
	int self_signed;            /* generate an in-memory certificate */
	const char *config_path;    /* policy file, watched; NULL: the embedded default */
	const char *policy_key;     /* the policy ConfigMap's data key /validate-policy reads
	                               (REVIEW_POLICY_KEY when NULL) */
	const char *service_name;   /* warn when the certificate's SANs miss it; may be NULL */
	const char *version;        /* for gpu_admission_build_info */
	size_t max_body;            /* bytes; larger bodies get 413 */
	unsigned threads;           /* worker threads (0: one per core) */
	unsigned max_connections;
	unsigned max_per_ip;        /* 0: no per-IP limit */
	unsigned timeout;           /* seconds a request may take to arrive, and idle keep-alive */
	unsigned header_timeout;    /* seconds from accept to the first whole request header */
	unsigned body_timeout;      /* seconds from a request's headers to the end of its body */
	size_t memory_budget;       /* bytes: TLS connections, bodies and parse results; over it, 503 */
	unsigned grace;             /* seconds from SIGTERM to exit */
	unsigned watch_ms;          /* file poll period (0: 1000) */
	struct claims *claims;      /* DRA claim lookups (pkg/webhook/claims.h), borrowed; NULL: none.
	                               Never part of readiness: a cold cache must not block pods */
	struct events *events;      /* refusal Events (pkg/webhook/events.h), borrowed; NULL: none */
};

#define SERVER_THREADS_MAX 64u
#define SERVER_CGROUP_CPU_MAX "/sys/fs/cgroup/cpu.max"

/*
 * The default worker thread count, "one per core" as this process sees it:
 * the CPUs it may run on (its affinity mask), capped by a cgroup v2 CPU
 * quota (a pod's limits.cpu, rounded up) read from cpu_max (borrowed; NULL
 * or unreadable: no quota), between 1 and SERVER_THREADS_MAX. A 64-core node
 * running the pod with limits.cpu 500m gets 1 thread, not 64.
 */
unsigned server_default_threads(const char *cpu_max);

/*
 * Resolves "HOST:PORT" or "[V6]:PORT" (numeric port; empty or "*" host:
 * any) into *ss: the one spelling of a listen address (serve, watch).
 * 0, or -1 with ERROR_INPUT.
 */
struct sockaddr_storage;
int server_parse_addr(const char *addr, struct sockaddr_storage *ss, struct error *err);

/* Fills o with the defaults above (no files, no metrics listener). */
void server_options_default(struct server_options *o);

/*
 * Serves until SIGTERM or SIGINT, then drains: /readyz answers 503, every
 * answer carries "Connection: close", in-flight and queued requests finish,
 * and the call returns 0 within o->grace seconds. Returns -1 with err when
 * it cannot start (bad address, port in use, invalid certificate, or an
 * embedded policy that cannot be built). A policy file that does not load
 * is not fatal: /readyz answers 503 and admission requests 503 until it does.
 * o and its strings are borrowed for the duration of the call.
 */
int server_run(const struct server_options *o, struct error *err);

#endif
