/*
 * kubeclient: configuration (kubeconfig, in-cluster), framing of the watch
 * stream, GET / LIST / WATCH and the few writes (apply, create, delete) over
 * libcurl. See kubeclient.h.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/stat.h>

#include <curl/curl.h>

#include "base/array.h"
#include "base/base64.h"
#include "base/file.h"
#include "base/strbuf.h"
#include "k8s/kubeclient.h"
#include "text/manifest.h"

/* ==== Configuration ==== */

/* Zeroes n bytes at p in a way the compiler keeps (a key, a token). */
static void wipe(void *p, size_t n)
{
	volatile unsigned char *v = p;

	while (n-- > 0)
		*v++ = 0;
}

void kube_config_free(struct kube_config *c)
{
	if (c == NULL)
		return;
	if (c->key != NULL)
		wipe(c->key, c->key_len);
	if (c->token != NULL)
		wipe(c->token, strlen(c->token));
	free(c->ca);
	free(c->cert);
	free(c->key);
	free(c->token);
	memset(c, 0, sizeof *c);
}

/* New: base64 text s decoded (loose: a kubeconfig as people paste it), NUL-terminated; *len its length. */
static char *b64_decode(const char *s, size_t *len, const char *what, struct error *err)
{
	size_t n = strlen(s);
	int nomem;
	char *out;

	if (n > KUBE_CRED_MAX * 2) {
		error_set(err, ERROR_TOO_LARGE, "%s: over %u bytes", what, KUBE_CRED_MAX);
		return NULL;
	}
	if ((out = base64_decode(s, n, BASE64_LOOSE, len, &nomem)) == NULL) {
		if (nomem)
			error_set(err, ERROR_NOMEM, "out of memory");
		else
			error_set(err, ERROR_CONFIG, "%s: not base64", what);
	}
	return out;
}

/* New: the file name (relative to dir unless absolute) read whole, at most KUBE_CRED_MAX bytes. */
static char *read_rel(const char *dir, const char *name, size_t *len, struct error *err)
{
	char path[KUBE_FILE_PATH_MAX];
	int n = name[0] == '/' || dir == NULL ? snprintf(path, sizeof path, "%s", name)
					      : snprintf(path, sizeof path, "%s/%s", dir, name);

	if (n < 0 || (size_t)n >= sizeof path) {
		error_set(err, ERROR_CONFIG, "file name too long: %.64s...", name);
		return NULL;
	}
	return file_read(path, KUBE_CRED_MAX, len, err);
}

/* A string member of o, or NULL. */
static const char *str_of(const json_t *o, const char *key)
{
	return json_string_value(json_object_get(o, key));
}

/* Member "what" of the entry named name in array list (kubeconfig's clusters/users/contexts). */
static const json_t *named(const json_t *root, const char *list, const char *what, const char *name)
{
	size_t i;
	const json_t *e;

	json_array_foreach(json_object_get(root, list), i, e) {
		const char *n = str_of(e, "name");

		if (n != NULL && strcmp(n, name) == 0)
			return json_object_get(e, what);
	}
	return NULL;
}

/*
 * One credential from a kubeconfig: KEY-data (base64) or KEY (a file).
 * *out NULL when neither is set.
 */
static int cred_of(const json_t *o, const char *key, const char *dir, char **out, size_t *len, struct error *err)
{
	char data_key[64];
	const char *v;

	snprintf(data_key, sizeof data_key, "%s-data", key);
	*out = NULL;
	*len = 0;
	if ((v = str_of(o, data_key)) != NULL)
		*out = b64_decode(v, len, data_key, err);
	else if ((v = str_of(o, key)) != NULL)
		*out = read_rel(dir, v, len, err);
	else
		return 0;
	return *out != NULL ? 0 : -1;
}

/* The text of s without surrounding white space, copied into a new string (a token file's). */
static char *trimmed(const char *s, size_t len)
{
	char *t;

	while (len > 0 && isspace((unsigned char)s[len - 1]))
		len--;
	while (len > 0 && isspace((unsigned char)*s)) {
		s++;
		len--;
	}
	if ((t = malloc(len + 1)) == NULL)
		return NULL;
	memcpy(t, s, len);
	t[len] = '\0';
	return t;
}

static int set_server(struct kube_config *c, const char *server, struct error *err)
{
	size_t n;

	if (server == NULL || (strncmp(server, "https://", 8) != 0 && strncmp(server, "http://", 7) != 0)) {
		error_set(err, ERROR_CONFIG, "the cluster's server is not an http(s) URL");
		return -1;
	}
	n = strlen(server);
	while (n > 0 && server[n - 1] == '/')
		n--;
	if (n >= sizeof c->server) {
		error_set(err, ERROR_CONFIG, "the cluster's server URL is too long");
		return -1;
	}
	memcpy(c->server, server, n);
	c->server[n] = '\0';
	return 0;
}

static int user_of(struct kube_config *c, const json_t *user, const char *dir, struct error *err)
{
	const char *v;

	if (json_object_get(user, "exec") != NULL || json_object_get(user, "auth-provider") != NULL ||
	    json_object_get(user, "username") != NULL) {
		error_set(err, ERROR_CONFIG, "the user's credentials are a plugin or a password: give a client "
			  "certificate or a token");
		return -1;
	}
	if (cred_of(user, "client-certificate", dir, &c->cert, &c->cert_len, err) != 0 ||
	    cred_of(user, "client-key", dir, &c->key, &c->key_len, err) != 0)
		return -1;
	if ((c->cert == NULL) != (c->key == NULL)) {
		error_set(err, ERROR_CONFIG, "the user has a client certificate or key, not both");
		return -1;
	}
	if ((v = str_of(user, "token")) != NULL && (c->token = trimmed(v, strlen(v))) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	if ((v = str_of(user, "tokenFile")) != NULL) {
		int n = v[0] == '/' || dir == NULL ? snprintf(c->token_file, sizeof c->token_file, "%s", v)
						   : snprintf(c->token_file, sizeof c->token_file, "%s/%s", dir, v);

		if (n < 0 || (size_t)n >= sizeof c->token_file) {
			error_set(err, ERROR_CONFIG, "tokenFile: name too long");
			return -1;
		}
	}
	return 0;
}

/* The current context's cluster and user out of root (the kubeconfig, parsed). */
static int config_of(struct kube_config *c, const json_t *root, const char *dir, struct error *err)
{
	const char *cur = str_of(root, "current-context"), *cl, *us, *ns;
	const json_t *ctx, *cluster, *user;

	if (cur == NULL || (ctx = named(root, "contexts", "context", cur)) == NULL) {
		error_set(err, ERROR_CONFIG, "no current-context, or no context named \"%s\"", cur ? cur : "");
		return -1;
	}
	cl = str_of(ctx, "cluster");
	us = str_of(ctx, "user");
	if (cl == NULL || (cluster = named(root, "clusters", "cluster", cl)) == NULL) {
		error_set(err, ERROR_CONFIG, "context \"%s\": no cluster named \"%s\"", cur, cl ? cl : "");
		return -1;
	}
	if (set_server(c, str_of(cluster, "server"), err) != 0)
		return -1;
	c->insecure = json_is_true(json_object_get(cluster, "insecure-skip-tls-verify"));
	if (cred_of(cluster, "certificate-authority", dir, &c->ca, &c->ca_len, err) != 0)
		return -1;
	if ((ns = str_of(ctx, "namespace")) != NULL)
		snprintf(c->ns, sizeof c->ns, "%s", ns);
	if (us == NULL)
		return 0;  /* no user: anonymous, as kubectl */
	if ((user = named(root, "users", "user", us)) == NULL) {
		error_set(err, ERROR_CONFIG, "context \"%s\": no user named \"%s\"", cur, us);
		return -1;
	}
	return user_of(c, user, dir, err);
}

int kube_config_parse(struct kube_config *c, const char *name, const char *text, size_t len, const char *dir,
		      struct error *err)
{
	struct manifest m;
	int rc = -1;

	memset(c, 0, sizeof *c);
	if (manifest_load(text, len, &m, err) != 0)
		goto out;
	if (m.n_docs < 1 || m.docs[0].failed || !json_is_object(m.docs[0].root)) {
		error_set(err, ERROR_CONFIG, "not a kubeconfig (a YAML map)%s%s",
			  m.n_docs > 0 && m.docs[0].failed ? ": " : "", m.n_docs > 0 ? m.docs[0].error : "");
		goto out;
	}
	rc = config_of(c, m.docs[0].root, dir, err);
out:
	manifest_free(&m);
	if (rc != 0)
		error_prefix(err, "%s: ", name);
	return rc;
}

int kube_config_load(struct kube_config *c, const char *path, struct error *err)
{
	char dir[KUBE_FILE_PATH_MAX], *text, *slash;
	size_t len;
	int rc;

	memset(c, 0, sizeof *c);
	if ((text = file_read(path, KUBE_KUBECONFIG_MAX, &len, err)) == NULL)
		return -1;
	snprintf(dir, sizeof dir, "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL)
		*slash = '\0';
	rc = kube_config_parse(c, path, text, len, slash != NULL ? (dir[0] ? dir : "/") : NULL, err);
	free(text);
	return rc;
}

int kube_config_in_cluster(struct kube_config *c, const char *sa_dir, struct error *err)
{
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	char url[KUBE_SERVER_MAX], *ns;
	size_t len;
	int n;

	memset(c, 0, sizeof *c);
	if (sa_dir == NULL)
		sa_dir = KUBE_SA_DIR;
	if (host == NULL || port == NULL || !*host || !*port) {
		error_set(err, ERROR_CONFIG, "not in a cluster: KUBERNETES_SERVICE_HOST and _PORT are not set");
		return -1;
	}
	n = snprintf(url, sizeof url, strchr(host, ':') ? "https://[%s]:%s" : "https://%s:%s", host, port);
	if (n < 0 || (size_t)n >= sizeof url || set_server(c, url, err) != 0) {
		error_set(err, ERROR_CONFIG, "KUBERNETES_SERVICE_HOST too long");
		return -1;
	}
	if ((c->ca = read_rel(sa_dir, "ca.crt", &c->ca_len, err)) == NULL)
		goto fail;
	n = snprintf(c->token_file, sizeof c->token_file, "%s/token", sa_dir);
	if (n < 0 || (size_t)n >= sizeof c->token_file) {
		error_set(err, ERROR_CONFIG, "service account directory name too long");
		goto fail;
	}
	if ((ns = read_rel(sa_dir, "namespace", &len, NULL)) != NULL) {
		char *t = trimmed(ns, len);

		if (t != NULL)
			snprintf(c->ns, sizeof c->ns, "%s", t);
		free(t);
		free(ns);
	}
	return 0;
fail:
	kube_config_free(c);
	return -1;
}

/* Does a file (or anything) exist at path? */
static int exists(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0;
}

/*
 * file = the first entry of the colon-separated list that exists; *others =
 * whether a later one exists too (it is not merged). 1 found, 0 none, -1 an
 * entry too long for file (err). Empty entries are skipped, as client-go does.
 */
static int first_existing(const char *list, char *file, size_t cap, int *others, struct error *err)
{
	const char *p = list, *end;
	int found = 0;

	*others = 0;
	for (; *p != '\0'; p = *end ? end + 1 : end) {
		size_t n;

		end = strchr(p, ':');
		if (end == NULL)
			end = p + strlen(p);
		n = (size_t)(end - p);
		if (n == 0)
			continue;
		if (n >= cap) {
			error_set(err, ERROR_CONFIG, "$KUBECONFIG: a file name longer than %zu bytes", cap - 1);
			return -1;
		}
		if (found) {
			char other[KUBE_FILE_PATH_MAX];

			memcpy(other, p, n);
			other[n] = '\0';
			/* client-go drops a file named twice (loader.go deduplicate) */
			if (strcmp(other, file) != 0 && exists(other)) {
				*others = 1;
				break;
			}
			continue;
		}
		memcpy(file, p, n);
		file[n] = '\0';
		found = exists(file);
	}
	return found;
}

/* Step 2 of kube_config_find(): $KUBECONFIG, set and not empty. */
static int from_env_list(struct kube_config *c, const char *list, char *from, size_t cap, struct error *err)
{
	char file[KUBE_FILE_PATH_MAX];
	int others;

	switch (first_existing(list, file, sizeof file, &others, err)) {
	case -1:
		return -1;
	case 0:
		error_set(err, ERROR_CONFIG, "$KUBECONFIG=%s: none of its files exists (pass --kubeconfig FILE, or "
			  "unset KUBECONFIG to use the pod's service account or ~/.kube/config)", list);
		return -1;
	}
	snprintf(from, cap, "$KUBECONFIG %s%s", file, others ? " (the first of its files that exists: the others "
			       "are not merged, as kubectl would merge them)" : "");
	return kube_config_load(c, file, err);
}

int kube_config_find(struct kube_config *c, const char *path, const char *sa_dir, char *from, size_t cap,
		     struct error *err)
{
	const char *list = getenv("KUBECONFIG"), *home = getenv("HOME");
	const char *host = getenv("KUBERNETES_SERVICE_HOST"), *port = getenv("KUBERNETES_SERVICE_PORT");
	char none[1], file[KUBE_FILE_PATH_MAX];
	int n;

	memset(c, 0, sizeof *c);
	if (from == NULL || cap == 0) {
		from = none;
		cap = sizeof none;
	}
	from[0] = '\0';
	if (path != NULL) {
		snprintf(from, cap, "--kubeconfig %s", path);
		return kube_config_load(c, path, err);
	}
	if (list != NULL && list[0] != '\0')
		return from_env_list(c, list, from, cap, err);
	if (host != NULL && port != NULL && host[0] != '\0' && port[0] != '\0') {
		snprintf(from, cap, "the pod's service account (in-cluster)");
		return kube_config_in_cluster(c, sa_dir, err);
	}
	n = home != NULL && home[0] != '\0' ? snprintf(file, sizeof file, "%s/.kube/config", home) : -1;
	if (n > 0 && (size_t)n < sizeof file && exists(file)) {
		snprintf(from, cap, "~/.kube/config (%s)", file);
		return kube_config_load(c, file, err);
	}
	error_set(err, ERROR_CONFIG, "no API server to talk to: pass --kubeconfig FILE, or set $KUBECONFIG, or run in "
		  "a cluster (KUBERNETES_SERVICE_HOST and _PORT are not set), or create ~/.kube/config (%s%s)",
		  n > 0 ? file : "$HOME is not set", n > 0 ? " does not exist" : "");
	return -1;
}

/* ==== Lines ==== */

void kube_lines_init(struct kube_lines *l, size_t max)
{
	memset(l, 0, sizeof *l);
	l->max = max;
}

void kube_lines_free(struct kube_lines *l)
{
	free(l->buf);
	memset(l, 0, sizeof *l);
}

size_t kube_lines_pending(const struct kube_lines *l)
{
	return l->skipping ? l->skipping : l->len;
}

/* Appends data[0..n) to the line being held, growing the buffer up to max. */
static int lines_hold(struct kube_lines *l, const char *data, size_t n, struct error *err)
{
	if (l->len + n > l->cap) {
		/* Doubling from 4 KiB up to max (the caller keeps a line within it). */
		size_t cap = array_cap(l->cap, l->len + n, 4096, l->max);
		char *b = cap != 0 ? array_resize(l->buf, &l->cap, cap, 1) : NULL;

		if (b == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory reading a watch event");
			return -1;
		}
		l->buf = b;
	}
	memcpy(l->buf + l->len, data, n);
	l->len += n;
	return 0;
}

int kube_lines_feed(struct kube_lines *l, const char *data, size_t n, kube_line_fn fn, void *ctx,
		    struct error *err)
{
	while (n > 0) {
		const char *nl = memchr(data, '\n', n);
		size_t take = nl ? (size_t)(nl - data) : n;
		int rc;

		if (l->skipping) {
			l->skipping += take;
		} else if (l->len + take > l->max) {
			/* Too long: dropped as it comes, reported once, at its end or now. */
			l->skipping = l->len + take;
			l->len = 0;
			if ((rc = fn(ctx, NULL, l->skipping)) != 0)
				return rc;
		} else if (lines_hold(l, data, take, err) != 0) {
			return -1;
		}
		if (nl == NULL)
			return 0;
		if (!l->skipping && (rc = fn(ctx, l->buf ? l->buf : "", l->len)) != 0) {
			l->len = 0;
			return rc;
		}
		l->len = 0;
		l->skipping = 0;
		data = nl + 1;
		n -= take + 1;
	}
	return 0;
}

/* ==== Requests ==== */

struct kube_client {
	const struct kube_config *c;
	const atomic_int *stop;
	CURL *h;
	char errbuf[CURL_ERROR_SIZE];
};

/* One transfer: a whole body (GET, LIST) or a stream of events (WATCH). */
struct xfer {
	CURL *h;
	const char *method;         /* for messages: "GET", "PATCH", ... */
	long status;
	struct strbuf body;         /* owned: the whole body (body mode), bounded by max + 1 (its NUL) */
	size_t max;
	int too_large;
	struct kube_lines *lines;   /* stream mode when set */
	const struct scan_shape *shape; /* the members of an event's object decoded; NULL: all */
	kube_event_fn fn;
	void *ctx;
	int fn_rc;
	struct error *err;
	char refusal[KUBE_ERROR_BODY_MAX]; /* the start of a non-200 answer */
	size_t refusal_len;
};

int kube_global_init(struct error *err)
{
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
		error_set(err, ERROR_SYSTEM, "libcurl failed to initialise");
		return -1;
	}
	return 0;
}

struct kube_client *kube_client_new(const struct kube_config *c, const atomic_int *stop, struct error *err)
{
	struct kube_client *k = calloc(1, sizeof *k);

	if (k == NULL || (k->h = curl_easy_init()) == NULL) {
		free(k);
		error_set(err, ERROR_NOMEM, "out of memory making an API client");
		return NULL;
	}
	k->c = c;
	k->stop = stop;
	return k;
}

void kube_client_free(struct kube_client *k)
{
	if (k == NULL)
		return;
	curl_easy_cleanup(k->h);
	free(k);
}

/*
 * One watch event decoded: with a shape, only its type and the members the
 * shape keeps of its object (jansson when the scanner is unsure); NULL when
 * it is not JSON.
 */
static json_t *decode_event(const char *line, size_t len, const struct scan_shape *shape)
{
	const struct scan_shape event[] = {
		{ "type", SCAN_WHOLE, NULL },
		{ "object", SCAN_OBJECT, shape },
		{ NULL, SCAN_WHOLE, NULL },
	};
	json_t *ev = shape != NULL ? scan_extract(line, len, event, KUBE_OBJECT_DEPTH_MAX + 1) : NULL;

	return ev != NULL ? ev : json_loadb(line, len, JSON_REJECT_DUPLICATES, NULL);
}

/* An event line: decoded and handed to the caller. Lines that are not events are skipped. */
static int on_line(void *ctx, const char *line, size_t len)
{
	struct xfer *x = ctx;
	json_t *ev;
	int rc;

	if (line == NULL)
		return x->fn(x->ctx, NULL, NULL, len);
	if (len == 0)
		return 0;
	if ((ev = decode_event(line, len, x->shape)) == NULL)
		return x->fn(x->ctx, "", NULL, len);  /* not JSON: the caller counts it */
	rc = x->fn(x->ctx, json_string_value(json_object_get(ev, "type")) ? json_string_value(json_object_get(ev, "type")) : "",
		   json_object_get(ev, "object"), len);
	json_decref(ev);
	return rc;
}

static size_t on_data(char *data, size_t size, size_t nmemb, void *ud)
{
	struct xfer *x = ud;
	size_t n = size * nmemb;

	if (x->status == 0)
		curl_easy_getinfo(x->h, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->status < 200 || x->status > 299) {
		size_t room = sizeof x->refusal - 1 - x->refusal_len;

		memcpy(x->refusal + x->refusal_len, data, n < room ? n : room);
		x->refusal_len += n < room ? n : room;
		x->refusal[x->refusal_len] = '\0';
		return n;
	}
	if (x->lines != NULL) {
		x->fn_rc = kube_lines_feed(x->lines, data, n, on_line, x, x->err);
		return x->fn_rc == 0 ? n : 0;
	}
	/* Doubling up to the limit (the strbuf's bound): a small answer never costs the limit. */
	if (strbuf_add(&x->body, data, n) != 0) {
		x->too_large = x->body.failed == STRBUF_NOMEM ? -1 : 1;
		return 0;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
	const struct kube_client *k = ud;

	return k->stop != NULL && atomic_load(k->stop) ? 1 : 0;
}

/* The request's headers: JSON, and the bearer token (read again from its file: it rotates). */
static struct curl_slist *headers(const struct kube_client *k, struct error *err)
{
	struct curl_slist *h = curl_slist_append(NULL, "Accept: application/json"), *h2;
	char *file = NULL, *tok = k->c->token, *line;
	size_t len;

	if (h == NULL)
		goto nomem;
	if (k->c->token_file[0]) {
		if ((file = file_read(k->c->token_file, KUBE_CRED_MAX, &len, err)) == NULL) {
			curl_slist_free_all(h);
			return NULL;
		}
		tok = trimmed(file, len);
		wipe(file, len);
		free(file);
		if (tok == NULL)
			goto nomem;
	}
	if (tok != NULL) {
		len = strlen(tok) + sizeof "Authorization: Bearer ";
		if ((line = malloc(len)) != NULL) {
			snprintf(line, len, "Authorization: Bearer %s", tok);
			h2 = curl_slist_append(h, line);
			wipe(line, len);
			free(line);
		} else {
			h2 = NULL;
		}
		if (tok != k->c->token) {
			wipe(tok, strlen(tok));
			free(tok);
		}
		if (h2 == NULL) {
			curl_slist_free_all(h);
			goto nomem;
		}
		h = h2;
	}
	return h;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return NULL;
}

static void tls_options(struct kube_client *k)
{
	const struct kube_config *c = k->c;
	struct curl_blob b;

	b.flags = CURL_BLOB_NOCOPY;
	if (c->ca != NULL) {
		b.data = c->ca;
		b.len = c->ca_len;
		curl_easy_setopt(k->h, CURLOPT_CAINFO_BLOB, &b);
	}
	if (c->cert != NULL) {
		b.data = c->cert;
		b.len = c->cert_len;
		curl_easy_setopt(k->h, CURLOPT_SSLCERT_BLOB, &b);
		curl_easy_setopt(k->h, CURLOPT_SSLCERTTYPE, "PEM");
		b.data = c->key;
		b.len = c->key_len;
		curl_easy_setopt(k->h, CURLOPT_SSLKEY_BLOB, &b);
		curl_easy_setopt(k->h, CURLOPT_SSLKEYTYPE, "PEM");
	}
	curl_easy_setopt(k->h, CURLOPT_SSL_VERIFYPEER, c->insecure ? 0L : 1L);
	curl_easy_setopt(k->h, CURLOPT_SSL_VERIFYHOST, c->insecure ? 0L : 2L);
}

/* The message of a refusal's Status (or its text), into err with kind by status. */
static void refused(struct xfer *x, const char *path, struct error *err)
{
	json_t *st = json_loads(x->refusal, 0, NULL);
	const char *msg = json_string_value(json_object_get(st, "message"));
	enum error_kind kind = x->status == 404 ? ERROR_NOT_FOUND
			     : x->status >= 500 || x->status == 429 ? ERROR_UNAVAILABLE : ERROR_INPUT;

	error_set(err, kind, "%s %s: HTTP %ld: %s", x->method ? x->method : "GET", path, x->status,
		  msg ? msg : x->refusal);
	json_decref(st);
}

/* A write's body: its bytes (borrowed) and media type; NULL for GET, LIST and WATCH. */
struct send {
	const char *method, *type;
	const char *body;
	size_t len;
};

/* The headers of a write: its media type, and no "Expect: 100-continue" round trip. */
static int send_options(struct kube_client *k, const struct send *s, struct curl_slist **hdrs, struct error *err)
{
	char line[128];
	struct curl_slist *h;

	curl_easy_setopt(k->h, CURLOPT_CUSTOMREQUEST, s->method);
	if (s->type == NULL)
		return 0;
	snprintf(line, sizeof line, "Content-Type: %s", s->type);
	if ((h = curl_slist_append(*hdrs, line)) == NULL || (*hdrs = h, h = curl_slist_append(*hdrs, "Expect:")) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	*hdrs = h;
	curl_easy_setopt(k->h, CURLOPT_POSTFIELDS, s->body);
	curl_easy_setopt(k->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)s->len);
	return 0;
}

/*
 * Runs one request of x on path (with its query) within timeout_s; s NULL: a GET.
 * 0, x's fn's answer, or -1 with err.
 */
static int perform_send(struct kube_client *k, const char *path, const struct send *s, struct xfer *x,
			long timeout_s, struct error *err)
{
	char url[KUBE_SERVER_MAX + KUBE_PATH_MAX];
	struct curl_slist *hdrs;
	CURLcode rc;

	x->h = k->h;
	x->err = err;
	x->method = s ? s->method : "GET";
	snprintf(url, sizeof url, "%s%s", k->c->server, path);
	if ((hdrs = headers(k, err)) == NULL)
		return -1;
	curl_easy_reset(k->h);
	if (s != NULL && send_options(k, s, &hdrs, err) != 0) {
		curl_slist_free_all(hdrs);
		return -1;
	}
	curl_easy_setopt(k->h, CURLOPT_URL, url);
	curl_easy_setopt(k->h, CURLOPT_HTTPHEADER, hdrs);
	curl_easy_setopt(k->h, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(k->h, CURLOPT_CONNECTTIMEOUT, (long)KUBE_CONNECT_TIMEOUT_S);
	curl_easy_setopt(k->h, CURLOPT_TIMEOUT, timeout_s);
	curl_easy_setopt(k->h, CURLOPT_WRITEFUNCTION, on_data);
	curl_easy_setopt(k->h, CURLOPT_WRITEDATA, x);
	curl_easy_setopt(k->h, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(k->h, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(k->h, CURLOPT_XFERINFODATA, k);
	curl_easy_setopt(k->h, CURLOPT_ERRORBUFFER, k->errbuf);
	curl_easy_setopt(k->h, CURLOPT_PROTOCOLS_STR, "https,http");
	tls_options(k);
	k->errbuf[0] = '\0';
	rc = curl_easy_perform(k->h);
	curl_slist_free_all(hdrs);
	if (x->status == 0)
		curl_easy_getinfo(k->h, CURLINFO_RESPONSE_CODE, &x->status);
	if (x->fn_rc != 0)
		return x->fn_rc;  /* the caller's stop, or its error already in err */
	if (rc == CURLE_ABORTED_BY_CALLBACK) {
		error_set(err, ERROR_UNAVAILABLE, "stopped");
		return -1;
	}
	if (x->too_large) {
		error_set(err, x->too_large < 0 ? ERROR_NOMEM : ERROR_TOO_LARGE, "%s %s: answer over %zu bytes",
			  x->method, path, x->max);
		return -1;
	}
	if (rc != CURLE_OK) {
		error_set(err, ERROR_UNAVAILABLE, "%s: %s", k->c->server, k->errbuf[0] ? k->errbuf : curl_easy_strerror(rc));
		return -1;
	}
	if (x->status < 200 || x->status > 299) {
		refused(x, path, err);
		return -1;
	}
	return 0;
}

static int perform(struct kube_client *k, const char *path, struct xfer *x, long timeout_s, struct error *err)
{
	return perform_send(k, path, NULL, x, timeout_s, err);
}

/* A whole body of at most max bytes: the limit refused() names, and the body's bound (its NUL too). */
static void xfer_bound(struct xfer *x, size_t max)
{
	x->max = max;
	x->body.max = max + 1;
}

/* GET path's body, whole (x->body.buf, owned by the caller, may stay NULL when empty), within KUBE_BODY_MAX. */
static int get_body(struct kube_client *k, const char *path, struct xfer *x, long *status, struct error *err)
{
	int rc;

	xfer_bound(x, KUBE_BODY_MAX);
	rc = perform(k, path, x, KUBE_REQUEST_TIMEOUT_S, err);
	*status = x->status;
	return rc;
}

int kube_get(struct kube_client *k, const char *path, json_t **obj, long *status, struct error *err)
{
	struct xfer x = { 0 };
	json_error_t je;
	int rc;

	*obj = NULL;
	rc = get_body(k, path, &x, status, err);
	if (rc == 0 && (*obj = json_loadb(x.body.buf ? x.body.buf : "", x.body.len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		error_set(err, ERROR_INPUT, "GET %s: not JSON: %s", path, je.text);
		rc = -1;
	}
	strbuf_release(&x.body);
	return rc;
}

/* path?limit=N[&continue=TOKEN] into out[KUBE_PATH_MAX]; -1 when it does not fit. */
static int page_path(struct kube_client *k, char *out, const char *path, const char *cont, struct error *err)
{
	char *esc = NULL;
	int n;

	if (cont != NULL && (esc = curl_easy_escape(k->h, cont, 0)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	n = snprintf(out, KUBE_PATH_MAX, "%s%climit=%d%s%s", path, strchr(path, '?') ? '&' : '?', KUBE_LIST_PAGE,
		     esc ? "&continue=" : "", esc ? esc : "");
	curl_free(esc);
	if (n < 0 || n >= KUBE_PATH_MAX) {
		error_set(err, ERROR_TOO_LARGE, "LIST %s: path and continue token over %d bytes", path, KUBE_PATH_MAX);
		return -1;
	}
	return 0;
}

/* What a page's own metadata says: where the list stands, and where it goes on. */
static const struct scan_shape page_metadata[] = {
	{ "resourceVersion", SCAN_WHOLE, NULL },
	{ "continue", SCAN_WHOLE, NULL },
	{ NULL, SCAN_WHOLE, NULL },
};

/* GET one page of a LIST, decoded as kube_list_shaped() says: *page a new reference, or -1 with err. */
static int get_page(struct kube_client *k, const char *path, const struct scan_shape *shape, json_t **page,
		    long *status, struct error *err)
{
	const struct scan_shape shaped[] = {
		{ "metadata", SCAN_OBJECT, page_metadata },
		{ "items", SCAN_ARRAY_OF_OBJECTS, shape },
		{ NULL, SCAN_WHOLE, NULL },
	};
	struct xfer x = { 0 };
	json_error_t je;
	int rc = get_body(k, path, &x, status, err);

	*page = NULL;
	if (rc == 0 && shape != NULL)
		*page = scan_extract(x.body.buf ? x.body.buf : "", x.body.len, shaped, KUBE_OBJECT_DEPTH_MAX + 2);
	if (rc == 0 && *page == NULL &&
	    (*page = json_loadb(x.body.buf ? x.body.buf : "", x.body.len, JSON_REJECT_DUPLICATES, &je)) == NULL) {
		error_set(err, ERROR_INPUT, "GET %s: not JSON: %s", path, je.text);
		rc = -1;
	}
	strbuf_release(&x.body);
	return rc;
}

int kube_list_shaped(struct kube_client *k, const char *path, const struct scan_shape *shape, kube_item_fn fn,
		     void *ctx, char *rv, size_t cap, long *status, struct error *err)
{
	char p[KUBE_PATH_MAX], cont[KUBE_PATH_MAX];
	int first = 1, rc;

	cont[0] = '\0';
	rv[0] = '\0';
	do {
		json_t *page, *item;
		const char *c, *v;
		size_t i;

		if (page_path(k, p, path, cont[0] ? cont : NULL, err) != 0 || get_page(k, p, shape, &page, status, err) != 0)
			return -1;
		v = json_string_value(json_object_get(json_object_get(page, "metadata"), "resourceVersion"));
		if (first && (v == NULL || strlen(v) >= cap)) {
			json_decref(page);
			error_set(err, ERROR_INPUT, "LIST %s: no resourceVersion, or one too long", path);
			return -1;
		}
		if (first)
			snprintf(rv, cap, "%s", v);
		first = 0;
		rc = 0;
		json_array_foreach(json_object_get(page, "items"), i, item)
			if ((rc = fn(ctx, item)) != 0)
				break;
		c = json_string_value(json_object_get(json_object_get(page, "metadata"), "continue"));
		snprintf(cont, sizeof cont, "%s", c ? c : "");
		json_decref(page);
		if (rc != 0)
			return rc;
	} while (cont[0]);
	return 0;
}

int kube_list(struct kube_client *k, const char *path, kube_item_fn fn, void *ctx, char *rv, size_t cap,
	      long *status, struct error *err)
{
	return kube_list_shaped(k, path, NULL, fn, ctx, rv, cap, status, err);
}

int kube_watch(struct kube_client *k, const char *path, const char *rv, unsigned timeout_s, size_t line_max,
	       kube_event_fn fn, void *ctx, long *status, struct error *err)
{
	return kube_watch_shaped(k, path, rv, timeout_s, line_max, NULL, fn, ctx, status, err);
}

int kube_watch_shaped(struct kube_client *k, const char *path, const char *rv, unsigned timeout_s,
		      size_t line_max, const struct scan_shape *shape, kube_event_fn fn, void *ctx, long *status,
		      struct error *err)
{
	char p[KUBE_PATH_MAX], *esc;
	struct kube_lines lines;
	struct xfer x = { 0 };
	int n, rc;

	if ((esc = curl_easy_escape(k->h, rv, 0)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	n = snprintf(p, sizeof p, "%s?watch=1&allowWatchBookmarks=true&resourceVersion=%s&timeoutSeconds=%u",
		     path, esc, timeout_s);
	curl_free(esc);
	if (n < 0 || (size_t)n >= sizeof p) {
		error_set(err, ERROR_TOO_LARGE, "WATCH %s: path over %d bytes", path, KUBE_PATH_MAX);
		return -1;
	}
	if (line_max > LIMIT_KUBE_WATCH_LINE_MAX)
		line_max = LIMIT_KUBE_WATCH_LINE_MAX;
	kube_lines_init(&lines, line_max);
	x.lines = &lines;
	x.shape = shape;
	x.fn = fn;
	x.ctx = ctx;
	rc = perform(k, p, &x, (long)timeout_s + KUBE_WATCH_GRACE_S, err);
	*status = x.status;
	kube_lines_free(&lines);
	return rc;
}

/* ==== Writes ==== */

int kube_write_path(char *out, size_t cap, const char *path, const char *query)
{
	int n = snprintf(out, cap, "%s%c%s", path, strchr(path, '?') ? '&' : '?', query);

	return n >= 0 && (size_t)n < cap ? 0 : -1;
}

/*
 * One write: method on path (with its query) with obj (borrowed; NULL: no
 * body) as JSON of media type type; *out (NULL: not wanted) the answer.
 */
static int write_req(struct kube_client *k, const char *method, const char *path, const char *type,
		     const json_t *obj, json_t **out, long *status, struct error *err)
{
	struct send s = { method, type, NULL, 0 };
	struct xfer x = { 0 };
	char *body = NULL;
	json_error_t je;
	int rc;

	*status = 0;
	if (out != NULL)
		*out = NULL;
	if (obj != NULL) {
		if ((body = json_dumps(obj, JSON_COMPACT)) == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		s.body = body;
		s.len = strlen(body);
		if (s.len > KUBE_WRITE_BODY_MAX) {
			error_set(err, ERROR_TOO_LARGE, "%s %s: body of %zu bytes, over %u", method, path, s.len,
				  KUBE_WRITE_BODY_MAX);
			free(body);
			return -1;
		}
	}
	xfer_bound(&x, KUBE_BODY_MAX);
	rc = perform_send(k, path, &s, &x, KUBE_REQUEST_TIMEOUT_S, err);
	*status = x.status;
	if (rc == 0 && out != NULL && (*out = json_loadb(x.body.buf ? x.body.buf : "", x.body.len, 0, &je)) == NULL) {
		error_set(err, ERROR_INPUT, "%s %s: not JSON: %s", method, path, je.text);
		rc = -1;
	}
	free(body);
	strbuf_release(&x.body);
	return rc;
}

int kube_apply(struct kube_client *k, const char *path, const char *manager, const json_t *obj, long *status,
	       struct error *err)
{
	char p[KUBE_PATH_MAX], q[128];
	int n = snprintf(q, sizeof q, "fieldManager=%s&force=true", manager);

	if (n < 0 || (size_t)n >= sizeof q || kube_write_path(p, sizeof p, path, q) != 0) {
		*status = 0;
		error_set(err, ERROR_TOO_LARGE, "PATCH %s: path over %d bytes", path, KUBE_PATH_MAX);
		return -1;
	}
	/* JSON is YAML: the apply media type takes either. */
	return write_req(k, "PATCH", p, "application/apply-patch+yaml", obj, NULL, status, err);
}

int kube_create(struct kube_client *k, const char *path, const json_t *obj, json_t **out, long *status,
		struct error *err)
{
	return write_req(k, "POST", path, "application/json", obj, out, status, err);
}

int kube_patch(struct kube_client *k, const char *path, const json_t *patch, json_t **out, long *status,
	       struct error *err)
{
	return write_req(k, "PATCH", path, "application/merge-patch+json", patch, out, status, err);
}

int kube_delete(struct kube_client *k, const char *path, long *status, struct error *err)
{
	return write_req(k, "DELETE", path, NULL, NULL, NULL, status, err);
}
