/*
 * fake_api.h: one fake Kubernetes API server for the unit tests, plain HTTP
 * on loopback, each connection on a thread of its own (a held watch must not
 * stop the others). A test gives it a route table: the first route whose
 * method and path match answers, with its canned status and body or through
 * its function (fake_api_reply, fake_api_hold). Every request is recorded in order in log, one line each:
 * "METHOD path" and, when the request has one, " Content-Type"; the last
 * request with a body keeps it in body.
 */
#ifndef GPU_ADMISSION_FAKE_API_H
#define GPU_ADMISSION_FAKE_API_H

#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <unistd.h>

#define FAKE_API_LOG_MAX 8192
#define FAKE_API_BODY_MAX 16384
#define FAKE_API_REQUEST_MAX 65536

struct fake_api;

/* One request, as the route's function sees it (borrowed for the call). */
struct fake_api_request {
	const char *method, *path, *type, *body;
};

/* How a route compares its path with the request's. */
enum fake_api_match {
	FAKE_API_EXACT,
	FAKE_API_PREFIX,
	FAKE_API_CONTAINS,
};

/*
 * A route: method NULL matches any; path NULL matches any path. fn, when set,
 * answers (with fake_api_reply or fake_api_hold); otherwise status and body do.
 * A table ends with a route whose status and fn are both NULL.
 */
struct fake_api_route {
	const char *method;
	enum fake_api_match match;
	const char *path;
	const char *status;
	const char *body;
	void (*fn)(struct fake_api *f, int c, const struct fake_api_request *req);
};

struct fake_api {
	int fd, port;
	pthread_t thread;
	atomic_int stop;
	atomic_int active;  /* connections being answered */
	const struct fake_api_route *routes;
	void *ctx;          /* the test's own state, for its route functions */
	pthread_mutex_t lock;  /* log and body: connections are answered concurrently */
	char log[FAKE_API_LOG_MAX];
	char body[FAKE_API_BODY_MAX];
};

/* Starts f on a free loopback port with routes (borrowed for f's life); 0 or -1. */
int fake_api_start(struct fake_api *f, const struct fake_api_route *routes, void *ctx);
/* Stops accepting, ends held watches and waits for every connection to close. */
void fake_api_stop(struct fake_api *f);
/* One answer on connection c: status line ("200 OK"), JSON headers, body; the connection closes after it. */
void fake_api_reply(int c, const char *status, const char *body);
/* A route's fn: holds the connection open without answering until the fake stops (a watch that sees nothing). */
void fake_api_hold(struct fake_api *f, int c, const struct fake_api_request *req);
/* Empties the request log. */
void fake_api_clear(struct fake_api *f);
/* Whether the request log so far holds text. */
int fake_api_logged(struct fake_api *f, const char *text);
/* A kubeconfig for f (a bearer token, plain http) into out; 0, or -1 when it does not fit. */
int fake_api_kubeconfig(const struct fake_api *f, char *out, size_t size);

/* A watch's ERROR event for a version the server no longer has (410 Gone): the cache lists again. */
#define FAKE_API_WATCH_GONE "{\"type\":\"ERROR\",\"object\":{\"kind\":\"Status\",\"code\":410," \
	"\"reason\":\"Expired\",\"message\":\"too old resource version\"}}\n"

/* Polls cond (CHECK, from check.h) over a generous deadline (the machine may be loaded): never a timing assertion. */
#define EVENTUALLY(cond) do { \
	int tries_ = 0; \
	while (!(cond) && tries_++ < 1500) \
		usleep(20000); \
	CHECK(cond); \
} while (0)

#endif
