/*
 * report_serve: /metrics, /healthz, /readyz and /what-if of the live watch
 * (report_serve.h), on libmicrohttpd's own thread.
 */
#include "report/report_serve.h"

#include <netinet/in.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <microhttpd.h>

#include "base/log.h"
#include "base/strbuf.h"
#include "policy/config.h"
#include "webhook/server.h"

#define PROM_TYPE "text/plain; version=0.0.4; charset=utf-8"
#define TEXT_TYPE "text/plain; charset=utf-8"
#define WHATIF_NAME "what-if"    /* the policy's name in the what-if's output and its errors */

struct report_serve {
	struct report_watch *w;
	struct MHD_Daemon *d;
	unsigned port;
};

/* A POST's body as it arrives, capped: per request, freed when it completes. */
struct req {
	struct strbuf body;  /* bounded by the policy file's limit: past it, failed (sticky) */
};

/* Answers with body (copied), of type, with status. */
static enum MHD_Result answer(struct MHD_Connection *c, unsigned status, const char *type, const char *body,
			      size_t len)
{
	struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)(uintptr_t)body,
								 MHD_RESPMEM_MUST_COPY);
	enum MHD_Result ok;

	if (r == NULL)
		return MHD_NO;
	MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
	ok = MHD_queue_response(c, status, r);
	MHD_destroy_response(r);
	return ok;
}

static enum MHD_Result answer_text(struct MHD_Connection *c, unsigned status, const char *text)
{
	return answer(c, status, TEXT_TYPE, text, strlen(text));
}

static enum MHD_Result answer_metrics(struct report_serve *s, struct MHD_Connection *c)
{
	struct error err = { 0 };
	char *text = NULL;
	size_t len = 0;
	enum MHD_Result ok;

	if (report_watch_metrics(s->w, &text, &len, &err) != 0)
		return answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
	ok = answer(c, MHD_HTTP_OK, PROM_TYPE, text, len);
	free(text);
	return ok;
}

/* The what-if's report written as output asks ("json", "text", "prometheus"); NULL when unknown. */
static const char *write_report(const struct report *r, const char *output, FILE *out, int *failed)
{
	if (output == NULL || strcmp(output, "json") == 0) {
		*failed = report_json_write(r, out, report_exit_code(r, 0), 'j');
		return "application/json";
	}
	if (strcmp(output, "text") == 0) {
		*failed = report_text_write(r, out, 0);
		return TEXT_TYPE;
	}
	if (strcmp(output, "prometheus") == 0) {
		*failed = report_prom_write(r, out);
		return PROM_TYPE;
	}
	return NULL;
}

static enum MHD_Result answer_whatif(struct report_serve *s, struct MHD_Connection *c, const struct req *rq)
{
	const char *output = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "output"), *type;
	struct error err = { 0 };
	struct config *cfg;
	struct report r;
	char *text = NULL, msg[ERROR_MSG_MAX + 2];
	size_t len = 0;
	FILE *out;
	int failed = 0;
	enum MHD_Result ok;

	if (rq->body.failed)  /* past CONFIG_FILE_MAX, or out of memory (as big to this server) */
		return answer_text(c, MHD_HTTP_CONTENT_TOO_LARGE, "the policy is larger than 1 MiB\n");
	if (output != NULL && strcmp(output, "json") != 0 && strcmp(output, "text") != 0 &&
	    strcmp(output, "prometheus") != 0)
		return answer_text(c, MHD_HTTP_BAD_REQUEST, "output takes json, text or prometheus\n");
	if ((cfg = config_load_buffer(rq->body.buf ? rq->body.buf : "", rq->body.len, WHATIF_NAME, &err)) == NULL) {
		snprintf(msg, sizeof msg, "%s\n", err.msg);
		return answer_text(c, err.kind == ERROR_NOMEM ? MHD_HTTP_INTERNAL_SERVER_ERROR : MHD_HTTP_BAD_REQUEST,
				   msg);
	}
	if (report_watch_whatif(s->w, cfg, WHATIF_NAME, &r, &err) != 0) {
		report_free(&r);
		config_free(cfg);
		snprintf(msg, sizeof msg, "%s\n", err.msg);
		return answer_text(c, err.kind == ERROR_UNAVAILABLE ? MHD_HTTP_SERVICE_UNAVAILABLE :
				   MHD_HTTP_INTERNAL_SERVER_ERROR, msg);
	}
	if ((out = open_memstream(&text, &len)) == NULL) {
		failed = 1;
		type = TEXT_TYPE;
	} else {
		type = write_report(&r, output, out, &failed);
		failed |= fclose(out) != 0;
	}
	report_free(&r);
	config_free(cfg);
	ok = failed ? answer_text(c, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n") :
		answer(c, MHD_HTTP_OK, type, text, len);
	free(text);
	return ok;
}


static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
				  const char *version, const char *data, size_t *data_size, void **req_cls)
{
	struct report_serve *s = cls;
	struct req *rq = *req_cls;

	if (strcmp(url, "/what-if") == 0 && strcmp(method, "POST") == 0) {
		if (rq == NULL) {  /* the first call: headers only */
			if ((rq = malloc(sizeof *rq)) == NULL)
				return MHD_NO;
			rq->body = (struct strbuf)STRBUF_INIT_MAX(CONFIG_FILE_MAX + 1);
			*req_cls = rq;
			return MHD_YES;
		}
		if (*data_size > 0) {
			strbuf_add(&rq->body, data, *data_size);  /* beyond the limit, only noted */
			*data_size = 0;
			return MHD_YES;
		}
		return answer_whatif(s, c, rq);
	}
	if (strcmp(method, "GET") != 0 && strcmp(method, "HEAD") != 0)
		return answer_text(c, MHD_HTTP_METHOD_NOT_ALLOWED, "GET /metrics, /healthz, /readyz; POST /what-if\n");
	if (strcmp(url, "/metrics") == 0)
		return answer_metrics(s, c);
	if (strcmp(url, "/healthz") == 0)
		return answer_text(c, MHD_HTTP_OK, "ok\n");
	if (strcmp(url, "/readyz") == 0)
		return report_watch_ready(s->w) ? answer_text(c, MHD_HTTP_OK, "ok\n") :
			answer_text(c, MHD_HTTP_SERVICE_UNAVAILABLE, "not synced yet\n");
	return answer_text(c, MHD_HTTP_NOT_FOUND, "not found\n");
}

static void on_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode code)
{
	struct req *rq = *req_cls;

	if (rq != NULL) {
		strbuf_release(&rq->body);
		free(rq);
		*req_cls = NULL;
	}
}

struct report_serve *report_serve_start(struct report_watch *w, const char *addr, struct error *err)
{
	struct report_serve *s;
	struct sockaddr_storage ss;
	const union MHD_DaemonInfo *info;
	unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ITC;
	char port[16];

	if (server_parse_addr(addr, &ss, err) != 0)
		return NULL;
	if ((s = calloc(1, sizeof *s)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	s->w = w;
	if (ss.ss_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	s->d = MHD_start_daemon(flags, 0, NULL, NULL, on_request, s,
				MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss,
				MHD_OPTION_CONNECTION_LIMIT, REPORT_SERVE_CONNECTIONS_MAX,
				MHD_OPTION_CONNECTION_TIMEOUT, REPORT_SERVE_TIMEOUT_S,
				MHD_OPTION_NOTIFY_COMPLETED, on_completed, s,
				MHD_OPTION_END);
	if (s->d == NULL) {
		free(s);
		error_set(err, ERROR_SYSTEM, "cannot listen on %s (in use, or not an address of this host)", addr);
		return NULL;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info != NULL ? info->port : 0;
	snprintf(port, sizeof port, "%u", s->port);
	log_msg(LOG_LEVEL_INFO, "listening", "addr", addr, "port", port, "scheme", "http", LOG_END);
	return s;
}

unsigned report_serve_port(const struct report_serve *s)
{
	return s->port;
}

void report_serve_free(struct report_serve *s)
{
	if (s == NULL)
		return;
	MHD_stop_daemon(s->d);
	free(s);
}
