/*
 * fake_api.c: the unit tests' fake Kubernetes API server (see fake_api.h).
 * A request is read whole (headers, then Content-Length bytes of body) up to
 * FAKE_API_REQUEST_MAX; anything longer is cut, which the tests never send.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>

#include "fake_api.h"

void fake_api_reply(int c, const char *status, const char *body)
{
	char head[256];
	int n = snprintf(head, sizeof head, "HTTP/1.1 %s\r\nContent-Type: application/json\r\nContent-Length: %zu\r\n"
			 "Connection: close\r\n\r\n", status, strlen(body));

	if (write(c, head, (size_t)n) < 0 || write(c, body, strlen(body)) < 0)
		return;
}

void fake_api_hold(struct fake_api *f, int c, const struct fake_api_request *req)
{
	while (!atomic_load(&f->stop))
		usleep(20000);
}

void fake_api_clear(struct fake_api *f)
{
	pthread_mutex_lock(&f->lock);
	f->log[0] = '\0';
	pthread_mutex_unlock(&f->lock);
}

int fake_api_logged(struct fake_api *f, const char *text)
{
	int found;

	pthread_mutex_lock(&f->lock);
	found = strstr(f->log, text) != NULL;
	pthread_mutex_unlock(&f->lock);
	return found;
}

int fake_api_kubeconfig(const struct fake_api *f, char *out, size_t size)
{
	int n = snprintf(out, size, "clusters:\n- name: c\n  cluster: {server: \"http://127.0.0.1:%d\"}\n"
			 "users:\n- name: u\n  user: {token: t0k}\ncontexts:\n- name: x\n  context: {cluster: c, user: u}\n"
			 "current-context: x\n", f->port);

	return n > 0 && (size_t)n < size ? 0 : -1;
}

static int route_matches(const struct fake_api_route *r, const struct fake_api_request *req)
{
	if (r->method != NULL && strcmp(r->method, req->method) != 0)
		return 0;
	if (r->path == NULL)
		return 1;
	switch (r->match) {
	case FAKE_API_EXACT:
		return strcmp(req->path, r->path) == 0;
	case FAKE_API_PREFIX:
		return strncmp(req->path, r->path, strlen(r->path)) == 0;
	case FAKE_API_CONTAINS:
		return strstr(req->path, r->path) != NULL;
	}
	return 0;
}

static void answer(struct fake_api *f, int c, const struct fake_api_request *req)
{
	const struct fake_api_route *r;

	for (r = f->routes; r->status != NULL || r->fn != NULL; r++)
		if (route_matches(r, req)) {
			if (r->fn != NULL)
				r->fn(f, c, req);
			else
				fake_api_reply(c, r->status, r->body != NULL ? r->body : "{}");
			return;
		}
	fake_api_reply(c, "404 Not Found", "{\"kind\":\"Status\",\"code\":404,\"message\":\"no route\"}");
}

static void record(struct fake_api *f, const struct fake_api_request *req)
{
	size_t n;

	pthread_mutex_lock(&f->lock);
	n = strlen(f->log);
	snprintf(f->log + n, sizeof f->log - n, "%s %s%s%s\n", req->method, req->path, req->type[0] ? " " : "",
		 req->type);
	if (req->body[0] != '\0')
		snprintf(f->body, sizeof f->body, "%s", req->body);
	pthread_mutex_unlock(&f->lock);
}

struct conn {
	struct fake_api *f;
	int c;
};

static void *serve_conn(void *arg)
{
	struct conn *k = arg;
	struct timeval patient = { 30, 0 };
	char *req = malloc(FAKE_API_REQUEST_MAX), method[16], path[1024], type[64] = "";
	const char *end = NULL, *cl, *ct;
	size_t have = 0, want = 0;
	ssize_t got;

	/* The listening socket's short timeout is for accept() only. */
	setsockopt(k->c, SOL_SOCKET, SO_RCVTIMEO, &patient, sizeof patient);
	while (req != NULL && have < FAKE_API_REQUEST_MAX - 1 &&
	       (got = read(k->c, req + have, FAKE_API_REQUEST_MAX - 1 - have)) > 0) {
		have += (size_t)got;
		req[have] = '\0';
		if ((end = strstr(req, "\r\n\r\n")) != NULL) {
			cl = strstr(req, "Content-Length: ");
			want = (size_t)(end + 4 - req) + (cl != NULL && cl < end ? strtoul(cl + 16, NULL, 10) : 0);
			if (have >= want)
				break;
		}
	}
	if (req != NULL) {
		req[have] = '\0';
		end = strstr(req, "\r\n\r\n");
	}
	if (end != NULL && sscanf(req, "%15s %1023s", method, path) == 2) {
		struct fake_api_request r = { method, path, type, end + 4 };

		if ((ct = strstr(req, "Content-Type: ")) != NULL && ct < end)
			sscanf(ct + 14, "%63[^\r]", type);
		record(k->f, &r);
		answer(k->f, k->c, &r);
	}
	free(req);
	close(k->c);
	atomic_fetch_sub(&k->f->active, 1);
	free(k);
	return NULL;
}

static void *serve(void *arg)
{
	struct fake_api *f = arg;

	while (!atomic_load(&f->stop)) {
		struct conn *k;
		pthread_t t;
		int c = accept(f->fd, NULL, NULL);

		if (c < 0)
			continue;
		if ((k = malloc(sizeof *k)) == NULL) {
			close(c);
			continue;
		}
		k->f = f;
		k->c = c;
		atomic_fetch_add(&f->active, 1);
		if (pthread_create(&t, NULL, serve_conn, k) != 0) {
			atomic_fetch_sub(&f->active, 1);
			close(c);
			free(k);
			continue;
		}
		pthread_detach(t);
	}
	return NULL;
}

int fake_api_start(struct fake_api *f, const struct fake_api_route *routes, void *ctx)
{
	struct sockaddr_in a;
	socklen_t len = sizeof a;
	struct timeval tv = { 0, 100000 };

	memset(f, 0, sizeof *f);
	f->routes = routes;
	f->ctx = ctx;
	memset(&a, 0, sizeof a);
	a.sin_family = AF_INET;
	a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if ((f->fd = socket(AF_INET, SOCK_STREAM, 0)) < 0 || bind(f->fd, (struct sockaddr *)&a, sizeof a) != 0 ||
	    listen(f->fd, 16) != 0 || getsockname(f->fd, (struct sockaddr *)&a, &len) != 0 ||
	    pthread_mutex_init(&f->lock, NULL) != 0) {
		if (f->fd >= 0)
			close(f->fd);
		return -1;
	}
	/* accept() wakes up to see the stop flag. */
	setsockopt(f->fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
	f->port = ntohs(a.sin_port);
	if (pthread_create(&f->thread, NULL, serve, f) != 0) {
		close(f->fd);
		pthread_mutex_destroy(&f->lock);
		return -1;
	}
	return 0;
}

void fake_api_stop(struct fake_api *f)
{
	atomic_store(&f->stop, 1);
	pthread_join(f->thread, NULL);
	while (atomic_load(&f->active) > 0)  /* held watches see the stop within 20 ms */
		usleep(10000);
	close(f->fd);
	pthread_mutex_destroy(&f->lock);
}
