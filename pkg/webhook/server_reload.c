/*
 * The policy and the certificate in service, and their hot reload. Both are
 * reference counted: a reload builds a new one and swaps a pointer under
 * server.lock; whoever holds the old one (a request, a TLS session) keeps it
 * alive until done.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/log.h"
#include "webhook/server_int.h"
#include "webhook/tls.h"

/* ==== Reference counting: a reload swaps the pointer, users keep theirs alive ==== */

struct srv_config *server_config_acquire(struct server *s)
{
	struct srv_config *c;

	pthread_mutex_lock(&s->lock);
	c = s->cfg;
	if (c != NULL)
		atomic_fetch_add(&c->refs, 1);
	pthread_mutex_unlock(&s->lock);
	return c;
}

void server_config_release(struct srv_config *c)
{
	if (c != NULL && atomic_fetch_sub(&c->refs, 1) == 1) {
		config_free(c->cfg);
		free(c);
	}
}

void server_cert_release(struct srv_cert *c)
{
	unsigned i;

	if (c == NULL || atomic_fetch_sub(&c->refs, 1) != 1)
		return;
	for (i = 0; i < c->n; i++)
		gnutls_pcert_deinit(&c->pcert[i]);
	gnutls_privkey_deinit(c->key);
	free(c);
}

/* New (one reference): p's PEM imported into GnuTLS. */
static struct srv_cert *cert_new(const struct tls_pair *p, struct error *err)
{
	struct srv_cert *c = calloc(1, sizeof *c);
	gnutls_datum_t d;
	int rc;

	if (c == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory importing the certificate");
		return NULL;
	}
	atomic_init(&c->refs, 1);
	c->not_after = p->not_after;
	c->n = TLS_CHAIN_MAX;
	d.data = (unsigned char *)p->cert_pem;
	d.size = (unsigned)p->cert_len;
	rc = gnutls_pcert_list_import_x509_raw(c->pcert, &c->n, &d, GNUTLS_X509_FMT_PEM, 0);
	if (rc < 0) {
		c->n = 0;
		goto fail;
	}
	rc = gnutls_privkey_init(&c->key);
	if (rc < 0)
		goto fail;
	d.data = (unsigned char *)p->key_pem;
	d.size = (unsigned)p->key_len;
	rc = gnutls_privkey_import_x509_raw(c->key, &d, GNUTLS_X509_FMT_PEM, NULL, 0);
	if (rc < 0)
		goto fail;
	return c;
fail:
	error_set(err, ERROR_INPUT, "GnuTLS cannot use the certificate: %s", gnutls_strerror(rc));
	server_cert_release(c);
	return NULL;
}

/*
 * GnuTLS asks for the certificate in every handshake. Choosing it here,
 * instead of handing libmicrohttpd a fixed PEM (MHD_OPTION_HTTPS_MEM_CERT),
 * is what makes rotation lossless: a reload only swaps server.cert, every new
 * handshake picks the new pair, and no listener is restarted, so no
 * connection is refused or cut. GnuTLS keeps pointers to what we return for
 * the life of the session, so the connection holds a reference until
 * libmicrohttpd reports it closed. libmicrohttpd stores its connection as
 * the session's pointer; our per-connection state is its socket_context.
 */
int server_cert_callback(gnutls_session_t session, const gnutls_datum_t *req_ca_dn, int nreqs,
			 const gnutls_pk_algorithm_t *pk_algos, int pk_algos_length,
			 gnutls_pcert_st **pcert, unsigned int *pcert_length, gnutls_privkey_t *pkey)
{
	struct MHD_Connection *c = gnutls_session_get_ptr(session);
	const union MHD_ConnectionInfo *ci;
	struct srv_conn *conn;

	(void)req_ca_dn; (void)nreqs; (void)pk_algos; (void)pk_algos_length;
	ci = c ? MHD_get_connection_info(c, MHD_CONNECTION_INFO_SOCKET_CONTEXT) : NULL;
	conn = ci ? ci->socket_context : NULL;
	if (conn == NULL)
		return -1;
	if (conn->cert == NULL) {
		pthread_mutex_lock(&conn->srv->lock);
		conn->cert = conn->srv->cert;
		atomic_fetch_add(&conn->cert->refs, 1);
		pthread_mutex_unlock(&conn->srv->lock);
	}
	*pcert = conn->cert->pcert;
	*pcert_length = conn->cert->n;
	*pkey = conn->cert->key;
	return 0;
}

/* ==== Loading and reloading ==== */

int server_load_config(struct server *s, int initial, struct error *err)
{
	struct srv_config *c = calloc(1, sizeof *c), *old;

	if (c == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory loading the policy");
		goto fail;
	}
	atomic_init(&c->refs, 1);
	if (s->o->config_path != NULL) {
		struct config_errors errs = { 0 };
		size_t i;

		c->cfg = config_load_file_all(s->o->config_path, &errs, err);
		/* One line per error, so a log search finds each (err then says how many). */
		for (i = 0; c->cfg == NULL && errs.total > 1 && i < errs.n; i++)
			log_msg(LOG_LEVEL_ERROR, "policy error", "error", errs.v[i].text, LOG_END);
		config_errors_free(&errs);
	} else {
		c->cfg = config_default(err);
	}
	if (c->cfg == NULL)
		goto fail;
	pthread_mutex_lock(&s->lock);
	old = s->cfg;
	s->cfg = c;
	pthread_mutex_unlock(&s->lock);
	server_config_release(old);
	if (!initial)
		metrics_reload(s->metrics, METRICS_RELOAD_CONFIG, 1);
	log_msg(LOG_LEVEL_INFO, initial ? "policy loaded" : "policy reloaded",
		"config", s->o->config_path ? s->o->config_path : "(embedded default)",
		"mode", config_mode_name(c->cfg->mode), LOG_END);
	return 0;
fail:
	free(c);
	pthread_mutex_lock(&s->lock);
	old = s->cfg;
	pthread_mutex_unlock(&s->lock);
	if (!initial)
		metrics_reload(s->metrics, METRICS_RELOAD_CONFIG, 0);
	if (old != NULL)
		log_msg(LOG_LEVEL_ERROR, "policy reload failed; the previous policy stays in service, retrying",
			"error", err->msg, LOG_END);
	else
		log_msg(LOG_LEVEL_ERROR, "policy did not load; not ready until it does, retrying",
			"config", s->o->config_path ? s->o->config_path : "(embedded default)",
			"error", err->msg, LOG_END);
	return -1;
}

int server_load_cert(struct server *s, int initial, struct error *err)
{
	struct tls_pair *p;
	struct srv_cert *c = NULL, *old;
	char expiry[32];
	struct tm tm;

	p = s->o->self_signed ? tls_self_signed(s->o->service_name, 365, err)
	    : tls_pair_load(s->o->tls_cert, s->o->tls_key, s->o->service_name, err);
	if (p == NULL)
		goto fail;
	/*
	 * A pair whose SANs do not name the Service is one kube-apiserver
	 * refuses: every admission call would fail while /readyz said ok. A new
	 * one is refused like an expired one (the old pair serves on); at start,
	 * with nothing else to serve, it serves and the server is not ready.
	 */
	if (p->unnamed && !initial) {
		error_set(err, ERROR_INPUT, "%s", p->warning);
		goto fail;
	}
	if ((c = cert_new(p, err)) == NULL)
		goto fail;
	if (p->warning[0] != '\0')
		log_msg(LOG_LEVEL_WARN, "certificate warning", "warning", p->warning, LOG_END);
	atomic_store(&s->cert_unnamed, p->unnamed);
	pthread_mutex_lock(&s->lock);
	old = s->cert;
	s->cert = c;
	pthread_mutex_unlock(&s->lock);
	server_cert_release(old);
	atomic_store(&s->not_after, (long long)c->not_after);
	metrics_cert_expiry(s->metrics, (int64_t)c->not_after);
	if (!initial)
		metrics_reload(s->metrics, METRICS_RELOAD_CERT, 1);
	gmtime_r(&c->not_after, &tm);
	strftime(expiry, sizeof expiry, "%Y-%m-%dT%H:%M:%SZ", &tm);
	log_msg(LOG_LEVEL_INFO, initial ? "certificate loaded" : "certificate reloaded",
		"cert", s->o->self_signed ? "(self-signed)" : s->o->tls_cert,
		"key_type", p->key_type, "sans", p->sans, "not_after", expiry, LOG_END);
	tls_pair_free(p);
	return 0;
fail:
	tls_pair_free(p);
	if (!initial) {
		metrics_reload(s->metrics, METRICS_RELOAD_CERT, 0);
		log_msg(LOG_LEVEL_ERROR, "certificate reload failed; the previous certificate stays in service, "
			"retrying", "error", err->msg, LOG_END);
	}
	return -1;
}

static void file_sig(const char *path, struct file_sig *sig)
{
	struct stat st;

	memset(sig, 0, sizeof *sig);
	if (path == NULL || stat(path, &st) != 0)
		return;
	sig->exists = 1;
	sig->dev = st.st_dev;
	sig->ino = st.st_ino;
	sig->size = st.st_size;
	sig->mtime = st.st_mtim;
	sig->ctime = st.st_ctim;
}

static int sig_equal(const struct file_sig *a, const struct file_sig *b)
{
	return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
	       a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

/*
 * Polls paths (kubelet swaps a mounted Secret or ConfigMap through a symlink,
 * which stat() follows). Returns 1 when they changed since the last load (or
 * retry is set: the last load failed and is to be tried again) and have held
 * still since the previous poll: a cert and key written one after the other
 * are read as a pair, not half-way.
 */
int server_watch_due(struct watch *w, const char *a, const char *b, int retry)
{
	struct file_sig now[2];
	int changed, stable;

	file_sig(a, &now[0]);
	file_sig(b, &now[1]);
	changed = !sig_equal(&now[0], &w->loaded[0]) || !sig_equal(&now[1], &w->loaded[1]);
	stable = sig_equal(&now[0], &w->seen[0]) && sig_equal(&now[1], &w->seen[1]);
	w->seen[0] = now[0];
	w->seen[1] = now[1];
	if (!(changed || retry) || !stable)
		return 0;
	w->loaded[0] = now[0];
	w->loaded[1] = now[1];
	return 1;
}

void server_watch_init(struct watch *w, const char *a, const char *b)
{
	file_sig(a, &w->loaded[0]);
	file_sig(b, &w->loaded[1]);
	w->seen[0] = w->loaded[0];
	w->seen[1] = w->loaded[1];
}
