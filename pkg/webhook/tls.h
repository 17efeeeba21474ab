/*
 * tls: certificate work with OpenSSL.
 *
 * Loads and validates a serving certificate and key (PEM), and generates the
 * certificates the webhook needs: a CA plus a serving certificate for
 * `gpu-admission certs`, or one self-signed certificate for local use.
 * The TLS protocol itself is spoken by libmicrohttpd (GnuTLS); this module
 * hands it normalized PEM.
 */
#ifndef GPU_ADMISSION_TLS_H
#define GPU_ADMISSION_TLS_H

#include <stddef.h>
#include <time.h>

#include "base/error.h"

#define TLS_MAX_FILE (1024 * 1024) /* a PEM file larger than this is refused */
#define TLS_CHAIN_MAX 8            /* certificates in tls.crt (leaf + intermediates) at most */

struct tls_pair {
	char *cert_pem;     /* owned: the leaf certificate, then any chain, as PEM */
	size_t cert_len;
	char *key_pem;      /* owned: the private key as unencrypted PKCS#8 PEM; wiped on free */
	size_t key_len;
	time_t not_after;   /* the leaf's expiry */
	char key_type[16];  /* "ECDSA P-256", "RSA 2048", ... */
	char sans[256];     /* the leaf's DNS/IP SANs, comma separated (cut when long) */
	char warning[256];  /* non-empty: worth logging, not fatal (e.g. SANs miss the service) */
	int unnamed;        /* a service was given and no DNS SAN names it: kube-apiserver refuses the pair */
};

/*
 * New: the pair from PEM text cert[0..cert_len) and key[0..key_len)
 * (borrowed). Fails (ERROR_INPUT) when either does not parse, the key is
 * encrypted or does not match the certificate, the certificate has expired
 * or has no subjectAltName. When service is non-NULL and no DNS SAN is
 * service or starts with "service.", warning says so.
 */
struct tls_pair *tls_pair_from_pem(const char *cert, size_t cert_len, const char *key,
				   size_t key_len, const char *service, struct error *err);

/* New: as tls_pair_from_pem, reading cert_path and key_path. */
struct tls_pair *tls_pair_load(const char *cert_path, const char *key_path, const char *service,
			       struct error *err);

/* Frees p, wiping the key. Accepts NULL. */
void tls_pair_free(struct tls_pair *p);

/*
 * New: a self-signed ECDSA P-256 serving certificate valid for days, with
 * SANs localhost, 127.0.0.1, ::1 and, when service is non-NULL, service.
 */
struct tls_pair *tls_self_signed(const char *service, int days, struct error *err);

/* What `gpu-admission certs` writes; every member owned PEM / text. */
struct tls_bundle {
	char *ca_cert;
	char *ca_key;     /* NULL when an existing CA signed the certificate */
	char *cert;
	char *key;
	char *ca_bundle;  /* base64 of ca_cert on one line, no newline */
	time_t not_after; /* the serving certificate's expiry */
	int clamped;      /* the CA expires first: not_after is the CA's, not days away */
};

#define TLS_SANS_MAX 32  /* extra SANs (certs --san) at most */

/* What tls_bundle_generate_ex() makes; every pointer borrowed. */
struct tls_bundle_request {
	const char *service, *ns;  /* DNS labels: the SANs service, service.ns, ... */
	int days;                  /* 1..3650 */
	const char *const *sans;   /* n_sans more SANs: IP addresses or DNS names */
	size_t n_sans;
	const char *ca_cert_path;  /* both set: sign with this CA (PEM files) instead of */
	const char *ca_key_path;   /* making a new one; neither set: a new CA */
};

/*
 * Generates a CA and a serving certificate signed by it, both ECDSA P-256 and
 * valid for days, with SANs service, service.ns, service.ns.svc and
 * service.ns.svc.cluster.local. Fills out (zeroed first); on failure out
 * holds nothing. Release with tls_bundle_free().
 */
int tls_bundle_generate(const char *service, const char *ns, int days, struct tls_bundle *out,
			struct error *err);

/*
 * As tls_bundle_generate, with extra SANs and optionally an existing CA
 * (renewal: the webhooks' caBundle stays valid). The CA must be a CA
 * certificate, unexpired, with the matching unencrypted key; a serving
 * certificate never outlives it (out->clamped says when days was cut).
 * Messages name the option at fault (--san, --ca-cert, --ca-key).
 */
int tls_bundle_generate_ex(const struct tls_bundle_request *req, struct tls_bundle *out,
			   struct error *err);

/* Frees what b owns, wiping keys, and zeroes it. Accepts NULL. */
void tls_bundle_free(struct tls_bundle *b);

/*
 * Whether the PEM texts a[0..alen) and b[0..blen) (borrowed) begin with the
 * same certificate (compared as DER, so layout does not matter): 1, 0 (they
 * differ, or either holds no certificate), or -1 with ERROR_NOMEM.
 */
int tls_same_cert(const char *a, size_t alen, const char *b, size_t blen, struct error *err);

#endif
