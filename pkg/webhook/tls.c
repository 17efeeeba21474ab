#include "webhook/tls.h"

#include <arpa/inet.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "base/base64.h"
#include "base/file.h"

/* Appends OpenSSL's most recent error to err's message and clears its queue. */
static void ossl_error(struct error *err, enum error_kind kind, const char *what)
{
	unsigned long e = ERR_peek_last_error();
	char text[256] = "";

	if (e != 0)
		ERR_error_string_n(e, text, sizeof text);
	ERR_clear_error();
	error_set(err, kind, "%s%s%s", what, text[0] ? ": " : "", text);
}

/* A password callback that refuses: an encrypted key must never prompt. */
static int no_password(char *buf, int size, int rwflag, void *u)
{
	(void)buf; (void)size; (void)rwflag; (void)u;
	return -1;
}

/* New NUL-terminated copy of a memory BIO's contents, or NULL. */
static char *bio_text(BIO *bio, size_t *len)
{
	char *data, *out;
	long n = BIO_get_mem_data(bio, &data);

	if (n < 0 || (out = malloc((size_t)n + 1)) == NULL)
		return NULL;
	memcpy(out, data, (size_t)n);
	out[n] = '\0';
	if (len != NULL)
		*len = (size_t)n;
	return out;
}

void tls_pair_free(struct tls_pair *p)
{
	if (p == NULL)
		return;
	free(p->cert_pem);
	file_free_secret(p->key_pem, p->key_len);
	free(p);
}

static int asn1_to_time(const ASN1_TIME *t, time_t *out)
{
	struct tm tm;

	memset(&tm, 0, sizeof tm);
	if (ASN1_TIME_to_tm(t, &tm) != 1)
		return -1;
	*out = timegm(&tm);
	return 0;
}

static void describe_key(EVP_PKEY *pkey, char *out, size_t cap)
{
	char group[64] = "";
	size_t glen = 0;

	switch (EVP_PKEY_get_base_id(pkey)) {
	case EVP_PKEY_EC:
		EVP_PKEY_get_utf8_string_param(pkey, "group", group, sizeof group, &glen);
		snprintf(out, cap, "ECDSA %s", strcmp(group, "prime256v1") == 0 ? "P-256"
			 : strcmp(group, "secp384r1") == 0 ? "P-384" : group);
		break;
	case EVP_PKEY_RSA:
		snprintf(out, cap, "RSA %d", EVP_PKEY_get_bits(pkey));
		break;
	default:
		snprintf(out, cap, "%s", OBJ_nid2sn(EVP_PKEY_get_base_id(pkey)));
	}
}

/*
 * Collects the leaf's SANs into p->sans and checks service coverage. Returns
 * the number of DNS and IP SANs.
 */
static int check_sans(X509 *leaf, const char *service, struct tls_pair *p)
{
	GENERAL_NAMES *names = X509_get_ext_d2i(leaf, NID_subject_alt_name, NULL, NULL);
	size_t used = 0, slen = service ? strlen(service) : 0;
	int i, n = 0, covered = 0;

	for (i = 0; names != NULL && i < sk_GENERAL_NAME_num(names); i++) {
		const GENERAL_NAME *gn = sk_GENERAL_NAME_value(names, i);
		char text[256] = "";

		if (gn->type == GEN_DNS) {
			const char *dns = (const char *)ASN1_STRING_get0_data(gn->d.dNSName);
			size_t dlen = (size_t)ASN1_STRING_length(gn->d.dNSName);

			snprintf(text, sizeof text, "%.*s", (int)dlen, dns);
			if (service != NULL && dlen >= slen && strncmp(dns, service, slen) == 0 &&
			    (dlen == slen || dns[slen] == '.'))
				covered = 1;
		} else if (gn->type == GEN_IPADD) {
			const unsigned char *ip = ASN1_STRING_get0_data(gn->d.iPAddress);
			int len = ASN1_STRING_length(gn->d.iPAddress);

			/* The length comes from the certificate: check it before inet_ntop reads 4 or 16 bytes. */
			if ((len != 4 && len != 16) ||
			    inet_ntop(len == 4 ? AF_INET : AF_INET6, ip, text, sizeof text) == NULL)
				snprintf(text, sizeof text, "(bad IP)");
		} else {
			continue;
		}
		n++;
		if (used < sizeof p->sans - 1) {
			int w = snprintf(p->sans + used, sizeof p->sans - used, "%s%s", used ? "," : "", text);

			used += w > 0 ? (size_t)w : 0;
			if (used >= sizeof p->sans)
				used = sizeof p->sans - 1;
		}
	}
	GENERAL_NAMES_free(names);
	p->unnamed = n > 0 && service != NULL && service[0] != '\0' && !covered;
	if (p->unnamed)
		snprintf(p->warning, sizeof p->warning,
			 "certificate SANs (%s) do not cover service \"%s\": kube-apiserver will refuse it",
			 p->sans, service);
	return n;
}

struct tls_pair *tls_pair_from_pem(const char *cert, size_t cert_len, const char *key,
				   size_t key_len, const char *service, struct error *err)
{
	X509 *chain[TLS_CHAIN_MAX] = { NULL };
	EVP_PKEY *pkey = NULL;
	BIO *in = NULL, *out = NULL;
	struct tls_pair *p = NULL;
	size_t n = 0, i;

	ERR_clear_error();
	if (cert_len > INT_MAX || key_len > INT_MAX) {
		error_set(err, ERROR_TOO_LARGE, "certificate or key too large");
		goto fail;
	}
	p = calloc(1, sizeof *p);
	if (p == NULL || (in = BIO_new_mem_buf(cert, (int)cert_len)) == NULL)
		goto nomem;
	while (n < TLS_CHAIN_MAX && (chain[n] = PEM_read_bio_X509(in, NULL, no_password, NULL)) != NULL)
		n++;
	ERR_clear_error(); /* the loop ends on "no start line" */
	if (n == 0) {
		error_set(err, ERROR_INPUT, "certificate: no PEM certificate found");
		goto fail;
	}
	BIO_free(in);
	if ((in = BIO_new_mem_buf(key, (int)key_len)) == NULL)
		goto nomem;
	pkey = PEM_read_bio_PrivateKey(in, NULL, no_password, NULL);
	if (pkey == NULL) {
		ossl_error(err, ERROR_INPUT, "key: no unencrypted PEM private key found");
		goto fail;
	}
	if (X509_check_private_key(chain[0], pkey) != 1) {
		ERR_clear_error();
		error_set(err, ERROR_INPUT, "key does not match the certificate");
		goto fail;
	}
	if (asn1_to_time(X509_get0_notAfter(chain[0]), &p->not_after) != 0) {
		error_set(err, ERROR_INPUT, "certificate: unreadable notAfter");
		goto fail;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(chain[0])) <= 0) {
		error_set(err, ERROR_INPUT, "certificate expired");
		goto fail;
	}
	if (check_sans(chain[0], service, p) == 0) {
		error_set(err, ERROR_INPUT, "certificate has no DNS or IP subjectAltName "
			  "(clients ignore the common name)");
		goto fail;
	}
	if (p->warning[0] == '\0' && X509_cmp_current_time(X509_get0_notBefore(chain[0])) > 0)
		snprintf(p->warning, sizeof p->warning, "certificate is not valid yet (notBefore in the future)");
	describe_key(pkey, p->key_type, sizeof p->key_type);

	/* Normalized PEM for GnuTLS: certificates as read, the key as PKCS#8. */
	if ((out = BIO_new(BIO_s_mem())) == NULL)
		goto nomem;
	for (i = 0; i < n; i++)
		if (PEM_write_bio_X509(out, chain[i]) != 1)
			goto nomem;
	if ((p->cert_pem = bio_text(out, &p->cert_len)) == NULL)
		goto nomem;
	BIO_free(out);
	if ((out = BIO_new(BIO_s_secmem())) == NULL)
		goto nomem;
	if (PEM_write_bio_PrivateKey(out, pkey, NULL, NULL, 0, NULL, NULL) != 1 ||
	    (p->key_pem = bio_text(out, &p->key_len)) == NULL)
		goto nomem;
	goto out;
nomem:
	ossl_error(err, ERROR_NOMEM, "out of memory loading the certificate");
fail:
	tls_pair_free(p);
	p = NULL;
out:
	for (i = 0; i < n; i++)
		X509_free(chain[i]);
	EVP_PKEY_free(pkey);
	BIO_free(in);
	BIO_free(out);
	return p;
}

struct tls_pair *tls_pair_load(const char *cert_path, const char *key_path, const char *service,
			       struct error *err)
{
	char *cert = NULL, *key = NULL;
	size_t cert_len = 0, key_len = 0;
	struct tls_pair *p = NULL;

	cert = file_read(cert_path, TLS_MAX_FILE, &cert_len, err);
	if (cert == NULL)
		goto out;
	key = file_read(key_path, TLS_MAX_FILE, &key_len, err);
	if (key == NULL)
		goto out;
	p = tls_pair_from_pem(cert, cert_len, key, key_len, service, err);
	if (p == NULL)
		error_prefix(err, "%s, %s: ", cert_path, key_path);
out:
	free(cert);
	file_free_secret(key, key_len);
	return p;
}

/* ==== Generation ==== */

static EVP_PKEY *new_p256(void)
{
	return EVP_EC_gen("P-256");
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ext;
	int ok;

	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ext = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (ext == NULL)
		return -1;
	ok = X509_add_ext(cert, ext, -1);
	X509_EXTENSION_free(ext);
	return ok == 1 ? 0 : -1;
}

/*
 * New: a certificate for key with subject cn, signed by issuer_key (issuer
 * NULL: self-signed), valid for seconds from now. exts are (nid, value) pairs
 * ending with nid 0.
 */
static X509 *make_cert(EVP_PKEY *key, const char *cn, X509 *issuer, EVP_PKEY *issuer_key, long seconds,
		       const int *nids, const char *const *values)
{
	unsigned char serial[16];
	X509 *cert = X509_new();
	X509_NAME *name = X509_NAME_new();
	BIGNUM *bn = NULL;
	size_t i;

	if (cert == NULL || name == NULL || RAND_bytes(serial, sizeof serial) != 1)
		goto fail;
	serial[0] &= 0x7f; /* positive */
	serial[0] |= 0x01; /* and not starting with a zero byte */
	if ((bn = BN_bin2bn(serial, sizeof serial, NULL)) == NULL ||
	    BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(cert)) == NULL ||
	    X509_set_version(cert, 2) != 1 ||
	    X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)cn, -1, -1, 0) != 1 ||
	    X509_set_subject_name(cert, name) != 1 ||
	    X509_set_issuer_name(cert, issuer ? X509_get_subject_name(issuer) : name) != 1 ||
	    X509_gmtime_adj(X509_getm_notBefore(cert), -300) == NULL || /* tolerate clock skew */
	    X509_time_adj_ex(X509_getm_notAfter(cert), 0, seconds, NULL) == NULL ||
	    X509_set_pubkey(cert, key) != 1)
		goto fail;
	for (i = 0; nids[i] != 0; i++)
		if (add_ext(cert, issuer ? issuer : cert, nids[i], values[i]) != 0)
			goto fail;
	if (X509_sign(cert, issuer_key, EVP_sha256()) <= 0)
		goto fail;
	BN_free(bn);
	X509_NAME_free(name);
	return cert;
fail:
	BN_free(bn);
	X509_NAME_free(name);
	X509_free(cert);
	return NULL;
}

static char *cert_pem(X509 *cert, size_t *len)
{
	BIO *b = BIO_new(BIO_s_mem());
	char *s = NULL;

	if (b != NULL && PEM_write_bio_X509(b, cert) == 1)
		s = bio_text(b, len);
	BIO_free(b);
	return s;
}

static char *key_pem(EVP_PKEY *key, size_t *len)
{
	BIO *b = BIO_new(BIO_s_secmem());
	char *s = NULL;

	if (b != NULL && PEM_write_bio_PrivateKey(b, key, NULL, NULL, 0, NULL, NULL) == 1)
		s = bio_text(b, len);
	BIO_free(b);
	return s;
}

static int valid_days(int days, struct error *err)
{
	if (days < 1 || days > 3650) {
		error_set(err, ERROR_INPUT, "days must be 1..3650, not %d", days);
		return -1;
	}
	return 0;
}

struct tls_pair *tls_self_signed(const char *service, int days, struct error *err)
{
	static const int nids[] = { NID_basic_constraints, NID_key_usage, NID_ext_key_usage,
				    NID_subject_alt_name, NID_subject_key_identifier, 0 };
	char san[512];
	const char *values[] = { "critical,CA:FALSE", "critical,digitalSignature", "serverAuth", san, "hash" };
	EVP_PKEY *key = NULL;
	X509 *cert = NULL;
	char *c = NULL, *k = NULL;
	size_t clen = 0, klen = 0;
	struct tls_pair *p = NULL;

	if (valid_days(days, err) != 0)
		return NULL;
	if (service != NULL && (service[0] == '\0' || strpbrk(service, ",:= ") != NULL)) {
		error_set(err, ERROR_INPUT, "service name \"%s\" is not a DNS name", service);
		return NULL;
	}
	snprintf(san, sizeof san, "DNS:localhost,IP:127.0.0.1,IP:::1%s%s", service ? ",DNS:" : "",
		 service ? service : "");
	if ((key = new_p256()) == NULL ||
	    (cert = make_cert(key, "gpu-admission self-signed", NULL, key, days * 86400L, nids, values)) == NULL ||
	    (c = cert_pem(cert, &clen)) == NULL || (k = key_pem(key, &klen)) == NULL) {
		ossl_error(err, ERROR_NOMEM, "generating a self-signed certificate");
		goto out;
	}
	p = tls_pair_from_pem(c, clen, k, klen, service, err);
out:
	free(c);
	file_free_secret(k, klen);
	X509_free(cert);
	EVP_PKEY_free(key);
	return p;
}

static int dns_label_ok(const char *s)
{
	size_t i, n = strlen(s);

	if (n == 0 || n > 63)
		return 0;
	for (i = 0; i < n; i++)
		if (!((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= '0' && s[i] <= '9') || s[i] == '-'))
			return 0;
	return s[0] != '-' && s[n - 1] != '-';
}

/* A DNS name for a SAN: labels of letters, digits and '-', a leading "*." allowed. */
static int dns_name_ok(const char *s)
{
	size_t n = strlen(s), label = 0, i;

	if (n == 0 || n > 253)
		return 0;
	if (strncmp(s, "*.", 2) == 0)
		s += 2;
	for (i = 0; ; i++) {
		char c = s[i];

		if (c == '.' || c == '\0') {
			if (label == 0 || label > 63 || s[i - 1] == '-' || s[i - label] == '-')
				return 0;
			if (c == '\0')
				return 1;
			label = 0;
		} else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-') {
			label++;
		} else {
			return 0;
		}
	}
}

/* Appends ",IP:addr" or ",DNS:name" for one --san to san[cap]; -1 with err when it is neither. */
static int add_san(char *san, size_t cap, const char *s, struct error *err)
{
	unsigned char addr[16];
	size_t used = strlen(san);
	int ip = inet_pton(AF_INET, s, addr) == 1 || inet_pton(AF_INET6, s, addr) == 1;

	if (!ip && !dns_name_ok(s)) {
		error_set(err, ERROR_INPUT, "--san \"%s\" is neither an IP address nor a DNS name", s);
		return -1;
	}
	if ((size_t)snprintf(san + used, cap - used, ",%s:%s", ip ? "IP" : "DNS", s) >= cap - used) {
		error_set(err, ERROR_INPUT, "--san: too many names");
		return -1;
	}
	return 0;
}

/*
 * An existing CA for renewal: the certificate (a CA, not expired) and its
 * key (unencrypted, matching). *pem gets the certificate as PEM. 0, or -1
 * with a message naming the file at fault.
 */
static int load_ca(const char *cert_path, const char *key_path, X509 **ca, EVP_PKEY **key, char **pem,
		   struct error *err)
{
	char *cert_text = NULL, *key_text = NULL;
	size_t cert_len = 0, key_len = 0;
	BIO *in = NULL;
	int rc = -1;

	ERR_clear_error();
	if ((cert_text = file_read(cert_path, TLS_MAX_FILE, &cert_len, err)) == NULL) {
		error_prefix(err, "--ca-cert ");
		goto out;
	}
	if ((in = BIO_new_mem_buf(cert_text, (int)cert_len)) == NULL ||
	    (*ca = PEM_read_bio_X509(in, NULL, no_password, NULL)) == NULL) {
		ossl_error(err, ERROR_INPUT, "--ca-cert: no PEM certificate found");
		error_prefix(err, "%s: ", cert_path);
		goto out;
	}
	if (X509_check_ca(*ca) < 1) {
		error_set(err, ERROR_INPUT, "--ca-cert %s is not a CA certificate (no basicConstraints CA:TRUE)",
			  cert_path);
		goto out;
	}
	if (X509_cmp_current_time(X509_get0_notAfter(*ca)) <= 0) {
		error_set(err, ERROR_INPUT, "--ca-cert %s has expired: make a new CA (leave out --ca-cert and "
			  "--ca-key) and update the webhooks' caBundle", cert_path);
		goto out;
	}
	BIO_free(in);
	if ((key_text = file_read(key_path, TLS_MAX_FILE, &key_len, err)) == NULL) {
		error_prefix(err, "--ca-key ");
		in = NULL;
		goto out;
	}
	if ((in = BIO_new_mem_buf(key_text, (int)key_len)) == NULL ||
	    (*key = PEM_read_bio_PrivateKey(in, NULL, no_password, NULL)) == NULL) {
		ossl_error(err, ERROR_INPUT, "--ca-key: no unencrypted PEM private key found");
		error_prefix(err, "%s: ", key_path);
		goto out;
	}
	if (X509_check_private_key(*ca, *key) != 1) {
		ERR_clear_error();
		error_set(err, ERROR_INPUT, "--ca-key %s does not match --ca-cert %s", key_path, cert_path);
		goto out;
	}
	if ((*pem = cert_pem(*ca, NULL)) == NULL) {
		ossl_error(err, ERROR_NOMEM, "reading the CA");
		goto out;
	}
	rc = 0;
out:
	BIO_free(in);
	free(cert_text);
	file_free_secret(key_text, key_len);
	return rc;
}

int tls_bundle_generate(const char *service, const char *ns, int days, struct tls_bundle *out,
			struct error *err)
{
	struct tls_bundle_request req = { .service = service, .ns = ns, .days = days };

	return tls_bundle_generate_ex(&req, out, err);
}

int tls_bundle_generate_ex(const struct tls_bundle_request *req, struct tls_bundle *out,
			   struct error *err)
{
	static const int ca_nids[] = { NID_basic_constraints, NID_key_usage, NID_subject_key_identifier, 0 };
	static const char *const ca_values[] = { "critical,CA:TRUE,pathlen:0", "critical,keyCertSign,cRLSign", "hash" };
	static const int leaf_nids[] = { NID_basic_constraints, NID_key_usage, NID_ext_key_usage,
					 NID_subject_alt_name, NID_subject_key_identifier,
					 NID_authority_key_identifier, 0 };
	const char *service = req->service, *ns = req->ns;
	char san[1024 + TLS_SANS_MAX * 260], cn[256];
	const char *leaf_values[] = { "critical,CA:FALSE", "critical,digitalSignature", "serverAuth", san,
				      "hash", "keyid:always" };
	int leaf_ext_nids[sizeof leaf_nids / sizeof leaf_nids[0]];
	EVP_PKEY *ca_key = NULL, *key = NULL;
	X509 *ca = NULL, *leaf = NULL;
	size_t len = 0, klen = 0, caklen = 0, i;
	long seconds = req->days * 86400L;
	time_t ca_end;
	int rc = -1;

	memset(out, 0, sizeof *out);
	if (valid_days(req->days, err) != 0)
		return -1;
	if (!dns_label_ok(service) || !dns_label_ok(ns)) {
		error_set(err, ERROR_INPUT, "service and namespace must be DNS labels "
			  "(lowercase letters, digits, '-', at most 63)");
		return -1;
	}
	if (req->n_sans > TLS_SANS_MAX) {
		error_set(err, ERROR_INPUT, "--san: at most %d extra names", TLS_SANS_MAX);
		return -1;
	}
	if ((req->ca_cert_path == NULL) != (req->ca_key_path == NULL)) {
		error_set(err, ERROR_INPUT, "--ca-cert and --ca-key go together");
		return -1;
	}
	snprintf(san, sizeof san, "DNS:%s,DNS:%s.%s,DNS:%s.%s.svc,DNS:%s.%s.svc.cluster.local",
		 service, service, ns, service, ns, service, ns);
	for (i = 0; i < req->n_sans; i++)
		if (add_san(san, sizeof san, req->sans[i], err) != 0)
			return -1;
	snprintf(cn, sizeof cn, "%s.%s.svc", service, ns);
	memcpy(leaf_ext_nids, leaf_nids, sizeof leaf_nids);
	if (req->ca_cert_path != NULL) {
		if (load_ca(req->ca_cert_path, req->ca_key_path, &ca, &ca_key, &out->ca_cert, err) != 0)
			goto fail;
		/* A serving certificate signed by a CA must not outlive it. */
		if (asn1_to_time(X509_get0_notAfter(ca), &ca_end) == 0 && ca_end - time(NULL) < seconds) {
			seconds = (long)(ca_end - time(NULL));
			out->clamped = 1;
		}
		/* A CA without a subject key identifier: no authority key identifier to point at it. */
		if (X509_get0_subject_key_id(ca) == NULL)
			leaf_ext_nids[5] = 0;
	} else if ((ca_key = new_p256()) == NULL ||
		   (ca = make_cert(ca_key, "gpu-admission CA", NULL, ca_key, seconds, ca_nids, ca_values)) == NULL ||
		   (out->ca_cert = cert_pem(ca, NULL)) == NULL ||
		   (out->ca_key = key_pem(ca_key, &caklen)) == NULL) {
		goto nomem;
	}
	len = strlen(out->ca_cert);
	if ((key = new_p256()) == NULL ||
	    (leaf = make_cert(key, cn, ca, ca_key, seconds, leaf_ext_nids, leaf_values)) == NULL ||
	    (out->ca_bundle = base64_encode(out->ca_cert, len)) == NULL ||
	    (out->cert = cert_pem(leaf, NULL)) == NULL ||
	    (out->key = key_pem(key, &klen)) == NULL ||
	    asn1_to_time(X509_get0_notAfter(leaf), &out->not_after) != 0)
		goto nomem;
	rc = 0;
	goto out;
nomem:
	ossl_error(err, ERROR_NOMEM, "generating certificates");
fail:
	tls_bundle_free(out);
out:
	X509_free(ca);
	X509_free(leaf);
	EVP_PKEY_free(ca_key);
	EVP_PKEY_free(key);
	return rc;
}

void tls_bundle_free(struct tls_bundle *b)
{
	if (b == NULL)
		return;
	free(b->ca_cert);
	free(b->cert);
	free(b->ca_bundle);
	if (b->ca_key != NULL)
		file_free_secret(b->ca_key, strlen(b->ca_key));
	if (b->key != NULL)
		file_free_secret(b->key, strlen(b->key));
	memset(b, 0, sizeof *b);
}

/* The first certificate of PEM text s[0..len), or NULL (*nomem says whether memory ran out). */
static X509 *first_cert(const char *s, size_t len, int *nomem)
{
	BIO *in = len <= INT_MAX ? BIO_new_mem_buf(s, (int)len) : NULL;
	X509 *x = in != NULL ? PEM_read_bio_X509(in, NULL, no_password, NULL) : NULL;

	*nomem = len <= INT_MAX && in == NULL;
	BIO_free(in);
	ERR_clear_error();
	return x;
}

int tls_same_cert(const char *a, size_t alen, const char *b, size_t blen, struct error *err)
{
	int nomem_a = 0, nomem_b = 0, same;
	X509 *x = first_cert(a, alen, &nomem_a), *y = first_cert(b, blen, &nomem_b);

	same = x != NULL && y != NULL && X509_cmp(x, y) == 0;
	X509_free(x);
	X509_free(y);
	if (nomem_a || nomem_b) {
		error_set(err, ERROR_NOMEM, "out of memory comparing certificates");
		return -1;
	}
	return same;
}
