#include "webhook/server_int.h"

#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <microhttpd.h>

#include "base/array.h"
#include "base/log.h"
#include "webhook/claims.h"
#include "webhook/metrics.h"
#include "webhook/review.h"

/*
 * A body's buffer starts this large (or at its Content-Length, when smaller)
 * and doubles as bytes arrive: what a body holds of the memory budget is at
 * most twice what it sent, never what its headers merely declared.
 */
#define BODY_FIRST_CAP (16u * 1024)
/*
 * Seconds, on every 503. kube-apiserver calls webhooks with client-go's rest
 * client, which resends a 429 or 5xx answer that carries Retry-After after
 * that many seconds (k8s.io/client-go/rest/request.go, checkWait), within the
 * webhook's timeoutSeconds.
 */
#define RETRY_AFTER "1"

static enum metrics_endpoint route(const char *url, int plain)
{
	if (!plain && strcmp(url, "/mutate") == 0)
		return METRICS_EP_MUTATE;
	if (!plain && strcmp(url, "/validate") == 0)
		return METRICS_EP_VALIDATE;
	if (!plain && strcmp(url, "/validate-policy") == 0)
		return METRICS_EP_VALIDATE_POLICY;
	if (strcmp(url, "/healthz") == 0)
		return METRICS_EP_HEALTHZ;
	if (strcmp(url, "/readyz") == 0)
		return METRICS_EP_READYZ;
	if (strcmp(url, "/metrics") == 0)
		return METRICS_EP_METRICS;
	return METRICS_EP_OTHER;
}

/* The part of a request's latency spent waiting for its body (0: answered before it). */
static uint64_t upload_us(const struct srv_req *rq)
{
	return rq->body_us != 0 ? rq->body_us - rq->start_us : 0;
}

static int is_admission(enum metrics_endpoint ep)
{
	return ep == METRICS_EP_MUTATE || ep == METRICS_EP_VALIDATE || ep == METRICS_EP_VALIDATE_POLICY;
}

/* One answer to queue (answer()): what goes out, and how the metrics count it. */
struct reply {
	int status;
	const char *type;           /* Content-Type */
	char *body;                 /* stolen when must_free (libmicrohttpd frees it after sending), else static */
	size_t len;
	int must_free;
	enum metrics_decision dec;
	const char *allow;          /* the Allow header's value, or NULL */
};

/* Queues one answer, and counts it in the metrics. */
static enum MHD_Result answer(struct server *s, struct MHD_Connection *c, struct srv_req *rq, const struct reply *a)
{
	struct MHD_Response *r;
	enum MHD_Result ok;

	r = MHD_create_response_from_buffer(a->len, a->body,
					    a->must_free ? MHD_RESPMEM_MUST_FREE : MHD_RESPMEM_PERSISTENT);
	if (r == NULL) {
		if (a->must_free)
			free(a->body);
		return MHD_NO;
	}
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, a->type);
	if (a->allow != NULL)
		MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, a->allow);
	if (atomic_load(&s->draining))
		MHD_add_response_header(r, MHD_HTTP_HEADER_CONNECTION, "close");
	if (a->status == error_http_status(ERROR_UNAVAILABLE))
		MHD_add_response_header(r, MHD_HTTP_HEADER_RETRY_AFTER, RETRY_AFTER);
	ok = MHD_queue_response(c, (unsigned)a->status, r);
	MHD_destroy_response(r);
	metrics_request(s->metrics, rq->ep, a->dec, a->status, server_now_us() - rq->start_us);
	return ok;
}

/* A plain-text error: "message\n" with the status of kind. */
static enum MHD_Result answer_error(struct server *s, struct MHD_Connection *c, struct srv_req *rq,
				    enum error_kind kind, const char *msg)
{
	size_t n = strlen(msg);
	char *body = malloc(n + 2);

	if (body == NULL)
		return MHD_NO;
	memcpy(body, msg, n);
	body[n] = '\n';
	body[n + 1] = '\0';
	if (is_admission(rq->ep) && log_enabled(LOG_LEVEL_INFO)) {
		struct log_decision d = {
			.endpoint = metrics_endpoint_name(rq->ep),
			.decision = "error",
			.reason = error_kind_name(kind),
			.status = error_http_status(kind),
			.latency_us = server_now_us() - rq->start_us,
			.upload_us = upload_us(rq),
		};

		log_decision(&d);
	}
	return answer(s, c, rq, &(struct reply){
		.status = error_http_status(kind), .type = "text/plain; charset=utf-8",
		.body = body, .len = n + 1, .must_free = 1,
		.dec = is_admission(rq->ep) ? METRICS_DEC_ERROR : METRICS_DEC_NONE,
		.allow = kind != ERROR_METHOD ? NULL : is_admission(rq->ep) ? "POST" : "GET, HEAD",
	});
}

static int ready(struct server *s, const char **why)
{
	struct srv_config *cfg;

	if (atomic_load(&s->draining)) {
		*why = "draining\n";
		return 0;
	}
	if ((cfg = server_config_acquire(s)) == NULL) {
		*why = "no valid policy loaded (see the log; retrying)\n";
		return 0;
	}
	server_config_release(cfg);
	if ((long long)time(NULL) >= atomic_load(&s->not_after)) {
		*why = "certificate expired\n";
		return 0;
	}
	if (atomic_load(&s->cert_unnamed)) {
		*why = "certificate does not name the Service (--service-name): kube-apiserver refuses it\n";
		return 0;
	}
	*why = "ok\n";
	return 1;
}

static enum MHD_Result answer_get(struct server *s, struct MHD_Connection *c, struct srv_req *rq)
{
	struct error err = { 0 };
	const char *why;
	char *text;
	size_t len;

	/* Static texts go out as MHD_RESPMEM_PERSISTENT, which never writes: the casts only drop const. */
	switch (rq->ep) {
	case METRICS_EP_HEALTHZ:
		return answer(s, c, rq, &(struct reply){ .status = MHD_HTTP_OK, .type = "text/plain",
							 .body = (char *)(uintptr_t)"ok\n", .len = 3 });
	case METRICS_EP_READYZ: {
		int ok = ready(s, &why);

		return answer(s, c, rq, &(struct reply){
			.status = ok ? MHD_HTTP_OK : error_http_status(ERROR_UNAVAILABLE), .type = "text/plain",
			.body = (char *)(uintptr_t)why, .len = strlen(why),
		});
	}
	default:
		text = metrics_render(s->metrics, &len, &err);
		if (text != NULL && ((s->o->claims != NULL && claims_metrics(s->o->claims, &text, &len, &err) != 0) ||
				     (s->o->events != NULL && events_metrics(s->o->events, &text, &len, &err) != 0))) {
			free(text);
			text = NULL;
		}
		if (text == NULL)
			return answer_error(s, c, rq, err.kind, err.msg);
		return answer(s, c, rq, &(struct reply){ .status = MHD_HTTP_OK,
							 .type = "text/plain; version=0.0.4; charset=utf-8",
							 .body = text, .len = len, .must_free = 1 });
	}
}

static enum metrics_decision decision_of(const struct review_response *res)
{
	if (res->status != error_http_status(ERROR_NONE) && res->status != error_http_status(ERROR_POLICY))
		return METRICS_DEC_ERROR; /* a malformed request answered with its uid */
	if (res->decision == POLICY_REJECT)
		return METRICS_DEC_REJECT;
	return res->patched ? METRICS_DEC_MUTATE : METRICS_DEC_ALLOW;
}

/*
 * A policy ConfigMap review (/validate-policy): judged without the policy in
 * service (a replica without one can still judge the edit that fixes it).
 * The policy load allocates outside the arena: its bound is charged to the
 * budget for as long as it runs (in *charged).
 */
static int review_policy(struct server *s, struct srv_req *rq, struct review_response *res, size_t *charged,
			 struct error *err)
{
	struct review_policy_options po = { s->o->policy_key ? s->o->policy_key : REVIEW_POLICY_KEY, s->o->version };
	size_t need = config_load_memory(rq->len);

	if (arena_budget_take(&s->budget, need) != 0) {
		server_evict_for_memory(s, rq->conn);
		memset(res, 0, sizeof *res);
		error_set(err, ERROR_UNAVAILABLE, "server busy: the requests in flight hold the memory budget; retry");
		return -1;
	}
	*charged = need;
	return review_policy_handle(&po, rq->body ? rq->body : "", rq->len, 0, res, err);
}

/* An admission review, with the claim lookups when they are on. */
static int review_pod(struct server *s, struct srv_config *cfg, struct srv_req *rq, struct review_response *res,
		      struct error *err)
{
	struct policy_claim_lookup lk;
	struct claims_review cr;
	int rc;

	if (s->o->claims != NULL)
		claims_review_begin(s->o->claims, &cr, &lk);
	rc = review_handle_claims(cfg->cfg, rq->body ? rq->body : "", rq->len,
				  rq->ep == METRICS_EP_VALIDATE ? REVIEW_VALIDATE : 0, s->o->claims ? &lk : NULL, res, err);
	if (s->o->claims != NULL)
		claims_review_end(&cr);
	return rc;
}

static enum MHD_Result answer_review(struct server *s, struct MHD_Connection *c, struct srv_req *rq)
{
	struct review_response res;
	struct srv_config *cfg = NULL;
	struct error err = { 0 };
	enum MHD_Result ok;
	enum metrics_decision dec;
	size_t arena, charged = 0;
	char *body;
	size_t len;
	int rc;

	if (rq->ep != METRICS_EP_VALIDATE_POLICY && (cfg = server_config_acquire(s)) == NULL)
		return answer_error(s, c, rq, ERROR_UNAVAILABLE, "no valid policy loaded: not ready");
	if (arena_begin(&s->budget) != 0) {
		server_config_release(cfg);
		return answer_error(s, c, rq, ERROR_UNAVAILABLE, "out of memory: retry");
	}
	if (rq->ep == METRICS_EP_VALIDATE_POLICY)
		rc = review_policy(s, rq, &res, &charged, &err);
	else
		rc = review_pod(s, cfg, rq, &res, &err);
	server_config_release(cfg);
	arena_budget_give(&s->budget, charged);
	/* The answer outlives the arena: anything it owns must not live there (it never does, but check). */
	if (res.body != NULL && arena_owns(res.body)) {
		body = malloc(res.len + 1);
		if (body != NULL)
			memcpy(body, res.body, res.len + 1);
		res.body = body;
		if (body == NULL && rc == 0) {
			rc = -1;
			error_set(&err, ERROR_NOMEM, "out of memory copying the answer");
		}
	}
	arena = arena_end();
	if (rq->reserved + charged + (arena & ~ARENA_REFUSED) > rq->held)
		rq->held = rq->reserved + charged + (arena & ~ARENA_REFUSED);
	if (arena & ARENA_REFUSED) {
		server_evict_for_memory(s, rq->conn);
		review_response_free(&res);
		return answer_error(s, c, rq, ERROR_UNAVAILABLE,
				    "server busy: the requests in flight hold the memory budget; retry");
	}
	if (rc != 0) {
		review_response_free(&res);
		return answer_error(s, c, rq, err.kind, err.msg);
	}
	dec = decision_of(&res);
	if (res.refused && dec == METRICS_DEC_REJECT && s->o->events != NULL)
		events_refused(s->o->events, &res.refused_object, res.refused_message);
	/* A pod only /mutate judges in enforce is counted there alone (review_response.unreached). */
	if (res.evaluated && !res.unreached)
		metrics_verdict(s->metrics, rq->ep, res.kind, res.mode, res.verdict);
	if (log_enabled(LOG_LEVEL_INFO)) {
		struct log_decision d = {
			.endpoint = metrics_endpoint_name(rq->ep),
			.uid = res.uid,
			.ns = res.ns,
			.pod = res.name,
			.decision = dec == METRICS_DEC_ERROR ? "error" : policy_decision_name(res.decision),
			.reason = res.reason,
			.mode = dec == METRICS_DEC_ERROR || rq->ep == METRICS_EP_VALIDATE_POLICY ? NULL
			      : config_mode_name(res.mode),
			.status = 200,
			.latency_us = server_now_us() - rq->start_us,
			.upload_us = upload_us(rq),
			.kind = rq->ep == METRICS_EP_VALIDATE_POLICY ? "ConfigMap"
			      : res.object_kind[0] && strcmp(res.object_kind, "Pod") != 0 ? res.object_kind : NULL,
		};

		if (res.n_pools == 1)
			d.pool = res.pools;
		else
			d.pools = res.pools;
		log_decision(&d);
	}
	body = res.body;
	len = res.len;
	res.body = NULL;
	review_response_free(&res);
	/* An AdmissionReview always travels with 200: its verdict and code are inside. */
	ok = answer(s, c, rq, &(struct reply){ .status = MHD_HTTP_OK, .type = "application/json",
					       .body = body, .len = len, .must_free = 1, .dec = dec });
	return ok;
}

static int is_json_media_type(const char *v)
{
	static const char want[] = "application/json";
	size_t n = sizeof want - 1;

	if (v == NULL || strncasecmp(v, want, n) != 0)
		return 0;
	return v[n] == '\0' || v[n] == ';' || v[n] == ' ' || v[n] == '\t';
}

/* Counts the Content-Length headers and whether they differ (MHD_get_connection_values' iterator). */
struct clen_seen {
	unsigned n;
	int differ;
	const char *first;
};

static enum MHD_Result count_clen(void *cls, enum MHD_ValueKind kind, const char *key, const char *value)
{
	struct clen_seen *seen = cls;

	(void)kind;
	if (key == NULL || strcasecmp(key, MHD_HTTP_HEADER_CONTENT_LENGTH) != 0)
		return MHD_YES;
	if (seen->n++ == 0)
		seen->first = value;
	else if (value == NULL || seen->first == NULL || strcmp(value, seen->first) != 0)
		seen->differ = 1;
	return MHD_YES;
}

/*
 * Strict framing (RFC 9112 section 6): a body framed two ways at once is the
 * stuff of request smuggling, and is refused before it is read. Differing
 * Content-Length headers (libmicrohttpd would take the first), or
 * Content-Length with Transfer-Encoding: 400. A Transfer-Encoding other than
 * chunked, which libmicrohttpd would read until the connection closes: 501.
 */
static enum error_kind check_framing(struct MHD_Connection *c, const char **why)
{
	struct clen_seen seen = { 0, 0, NULL };
	const char *te = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_TRANSFER_ENCODING);

	MHD_get_connection_values(c, MHD_HEADER_KIND, count_clen, &seen);
	if (seen.differ) {
		*why = "conflicting Content-Length headers";
		return ERROR_INPUT;
	}
	if (te != NULL && strcasecmp(te, "chunked") != 0) {
		*why = "Transfer-Encoding not implemented: only chunked is";
		return ERROR_UNSUPPORTED;
	}
	if (te != NULL && seen.n > 0) {
		*why = "both Content-Length and Transfer-Encoding";
		return ERROR_INPUT;
	}
	return ERROR_NONE;
}

/*
 * Decides from the headers alone what can be. Nothing is reserved for the
 * body yet: headers cost nothing to send, so what they declare is only
 * remembered (the buffer never grows past it), and the budget is charged as
 * bytes arrive (take_body()).
 */
static void check_headers(struct server *s, struct MHD_Connection *c, struct srv_req *rq,
			  const char *method, const char **why)
{
	int post = strcmp(method, MHD_HTTP_METHOD_POST) == 0;
	int get = strcmp(method, MHD_HTTP_METHOD_GET) == 0 || strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
	const char *clen;
	unsigned long long n;
	char *end;

	if ((rq->early = check_framing(c, why)) != ERROR_NONE)
		return;
	*why = NULL;
	if (rq->ep == METRICS_EP_OTHER) {
		rq->early = ERROR_NOT_FOUND;
		return;
	}
	if (is_admission(rq->ep) ? !post : !get) {
		rq->early = ERROR_METHOD;
		return;
	}
	if (!is_admission(rq->ep))
		return;
	if (!is_json_media_type(MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_TYPE))) {
		rq->early = ERROR_MEDIA_TYPE;
		return;
	}
	clen = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
	if (clen == NULL)
		return; /* chunked: capped, and charged to the budget, as it arrives */
	errno = 0;
	n = strtoull(clen, &end, 10);
	if (errno != 0 || end == clen || n > s->o->max_body) {
		rq->early = ERROR_TOO_LARGE;
		return;
	}
	rq->declared = (size_t)n;
}

/* Drops the body taken so far: from now on it is only counted (refused, answered at its end). */
static void drop_body(struct server *s, struct srv_req *rq, enum error_kind why)
{
	rq->early = why;
	rq->dropped = rq->len;
	free(rq->body);
	rq->body = NULL;
	rq->len = rq->cap = 0;
	arena_budget_give(&s->budget, rq->reserved);
	rq->reserved = 0;
}

/*
 * Takes a chunk of the body, capping it at max_body and within the memory
 * budget: past either it is counted and dropped. The buffer (and its charge)
 * doubles from BODY_FIRST_CAP as bytes arrive, up to the declared length.
 */
static void take_body(struct server *s, struct srv_req *rq, const char *data, size_t n)
{
	size_t max = s->o->max_body;

	if (rq->early == ERROR_NONE && n > max - rq->len)
		drop_body(s, rq, ERROR_TOO_LARGE);
	if (rq->early != ERROR_NONE) {
		rq->dropped += n;
		return;
	}
	if (rq->len + n > rq->cap) {
		size_t cap = array_cap(rq->cap, rq->len + n, BODY_FIRST_CAP, max), got;
		char *p;

		/* libmicrohttpd never passes more than Content-Length: the declared length bounds the buffer. */
		if (rq->declared >= rq->len + n && cap > rq->declared)
			cap = rq->declared;
		if (cap + 1 > rq->reserved) {
			if (arena_budget_take(&s->budget, cap + 1 - rq->reserved) != 0) {
				drop_body(s, rq, ERROR_UNAVAILABLE);
				rq->dropped += n;
				server_evict_for_memory(s, rq->conn);
				return;
			}
			rq->reserved = cap + 1;
			if (rq->reserved > rq->held)
				rq->held = rq->reserved;
		}
		p = array_resize(rq->body, &got, cap + 1, 1);  /* + 1: the NUL after the body */
		if (p == NULL) {
			drop_body(s, rq, ERROR_NOMEM);
			rq->dropped += n;
			return;
		}
		rq->body = p;
		rq->cap = cap;
	}
	memcpy(rq->body + rq->len, data, n);
	rq->len += n;
}

static const char *early_message(enum error_kind kind, size_t max)
{
	static _Thread_local char msg[96];

	switch (kind) {
	case ERROR_NOT_FOUND:  return "not found: the endpoints are /mutate, /validate, /validate-policy, /healthz, "
				      "/readyz, /metrics";
	case ERROR_METHOD:     return "method not allowed";
	case ERROR_MEDIA_TYPE: return "Content-Type must be application/json";
	case ERROR_NOMEM:      return "out of memory";
	case ERROR_UNAVAILABLE: return "server busy: the requests in flight hold the memory budget; retry";
	case ERROR_TOO_LARGE:
		snprintf(msg, sizeof msg, "request body larger than %zu bytes", max);
		return msg;
	default:               return "internal error";
	}
}

enum MHD_Result server_http_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				    const char *version, const char *upload, size_t *upload_size, void **req_cls)
{
	struct listener *l = cls;
	struct server *s = l->srv;
	struct srv_req *rq = *req_cls;

	(void)version;
	if (rq == NULL) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
		const char *why = NULL;

		rq = calloc(1, sizeof *rq);
		if (rq == NULL)
			return MHD_NO;
		rq->start_us = server_now_us();
		rq->conn = ci ? ci->socket_context : NULL;
		rq->ep = route(url, l->plain);
		*req_cls = rq;
		if (rq->conn != NULL) {
			atomic_store(&rq->conn->body_ms, server_now_ms());
			atomic_store(&rq->conn->byte_ms, atomic_load(&rq->conn->body_ms));
			atomic_store(&rq->conn->busy, 1);
		}
		atomic_fetch_add(&s->in_flight, 1);
		metrics_in_flight(s->metrics, 1);
		check_headers(s, c, rq, method, &why);
		/*
		 * What the headers alone settle and a body would only prolong is
		 * answered now, before the body is read (libmicrohttpd then closes
		 * the connection rather than read it): a body declared too large,
		 * and broken framing. Everything else is answered on the last
		 * call, after any body was read (or dropped), so the connection
		 * stays usable. A body beyond the memory budget is found as it
		 * arrives: the budget is charged for bytes received.
		 */
		if (rq->early == ERROR_TOO_LARGE || why != NULL) {
			if (rq->conn != NULL)
				atomic_store(&rq->conn->arrived, 1);
			return answer_error(s, c, rq, rq->early, why ? why : early_message(rq->early, s->o->max_body));
		}
		return MHD_YES;
	}
	if (*upload_size != 0) {
		if (rq->conn != NULL)
			atomic_store(&rq->conn->byte_ms, server_now_ms());
		take_body(s, rq, upload, *upload_size);
		*upload_size = 0;
		/*
		 * A refused body is dropped as it arrives (memory stays bounded);
		 * one that goes on past twice the cap is cut off, not read forever.
		 */
		return rq->dropped / 2 > s->o->max_body ? MHD_NO : MHD_YES;
	}
	if (rq->conn != NULL)
		atomic_store(&rq->conn->arrived, 1);
	rq->body_us = server_now_us();
	if (rq->early != ERROR_NONE)
		return answer_error(s, c, rq, rq->early, early_message(rq->early, s->o->max_body));
	if (!is_admission(rq->ep))
		return answer_get(s, c, rq);
	return answer_review(s, c, rq);
}

void server_http_completed(void *cls, struct MHD_Connection *c, void **req_cls,
			   enum MHD_RequestTerminationCode toe)
{
	struct listener *l = cls;
	struct server *s = l->srv;
	struct srv_req *rq = *req_cls;

	(void)c; (void)toe;
	if (rq == NULL)
		return;
	if (rq->conn != NULL) {
		atomic_store(&rq->conn->phase_ms, server_now_ms());
		atomic_store(&rq->conn->arrived, 0);
		atomic_fetch_add(&rq->conn->served, 1);
		atomic_store(&rq->conn->busy, 0);
	}
	atomic_fetch_sub(&s->in_flight, 1);
	metrics_in_flight(s->metrics, -1);
	free(rq->body);
	arena_budget_give(&s->budget, rq->reserved);
	server_mem_after_request(rq->held);
	free(rq);
	*req_cls = NULL;
}
