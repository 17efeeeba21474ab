/*
 * report_serve: the live watch's HTTP endpoints (`gpu-admission watch
 * --addr`), over plain HTTP:
 *
 *   GET  /metrics   the report's gauges of the current state (the names of
 *                   `report -o prometheus`) and the watch's own (gpu_admission_watch_*)
 *   GET  /healthz   200 while the process serves
 *   GET  /readyz    200 once every type is synced and a report built, else 503
 *   POST /what-if   a policy YAML body (at most CONFIG_FILE_MAX): `report
 *                   --what-if` of the live state, ?output=json (default),
 *                   text or prometheus; 400 for a policy that does not load
 *
 * Plain HTTP, not TLS: what it serves is what Prometheus scrapes (the
 * report names namespaces and pods, no secret), and a what-if only reads; the
 * chart limits who reaches the port with a NetworkPolicy. One thread answers
 * requests one at a time: a what-if holds the model while it is judged, so
 * requests never judge two at once.
 */
#ifndef GPU_ADMISSION_REPORT_SERVE_H
#define GPU_ADMISSION_REPORT_SERVE_H

#include "base/error.h"
#include "report/report_watch.h"

#define REPORT_SERVE_CONNECTIONS_MAX 32u    /* connections at once; more are refused */
#define REPORT_SERVE_TIMEOUT_S 30u          /* an idle or slow connection is closed after this */

struct report_serve;

/*
 * New: listening on addr ("HOST:PORT", as serve's --addr; port 0 picks one,
 * logged) and answering from w (borrowed: must outlive the server).
 * NULL with err (the address in use, not an address).
 */
struct report_serve *report_serve_start(struct report_watch *w, const char *addr, struct error *err);

/* The port listened on. */
unsigned report_serve_port(const struct report_serve *s);

/* Stops answering (in-flight requests end) and frees s. Accepts NULL. */
void report_serve_free(struct report_serve *s);

#endif
