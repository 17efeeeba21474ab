/* tls: generating, loading and validating certificate pairs with OpenSSL. */
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "webhook/tls.h"

static struct tls_bundle bundle; /* one generation shared by the tests (key generation is the slow part) */

static void test_bundle_pair_loads(void)
{
	struct error err = { 0 };
	struct tls_pair *p = tls_pair_from_pem(bundle.cert, strlen(bundle.cert), bundle.key,
					       strlen(bundle.key), "webhook", &err);
	time_t now = time(NULL);

	CHECK(p != NULL);
	if (p == NULL) {
		fprintf(stderr, "    %s\n", err.msg);
		return;
	}
	CHECK_STR(p->key_type, "ECDSA P-256");
	CHECK_STR(p->sans, "webhook,webhook.gpu,webhook.gpu.svc,webhook.gpu.svc.cluster.local");
	CHECK_STR(p->warning, "");
	CHECK_INT(p->unnamed, 0);
	CHECK(p->not_after > now + 29 * 86400 && p->not_after <= now + 30 * 86400 + 60);
	CHECK(strstr(p->key_pem, "-----BEGIN PRIVATE KEY-----") != NULL); /* normalized to PKCS#8 */
	CHECK(strstr(p->cert_pem, "-----BEGIN CERTIFICATE-----") == p->cert_pem);
	tls_pair_free(p);
}

static void test_service_not_covered_warns(void)
{
	struct error err = { 0 };
	struct tls_pair *p = tls_pair_from_pem(bundle.cert, strlen(bundle.cert), bundle.key,
					       strlen(bundle.key), "webhook-other", &err);

	CHECK(p != NULL);
	CHECK(p != NULL && strstr(p->warning, "do not cover service \"webhook-other\"") != NULL);
	/* Flagged apart from other warnings: serve refuses such a pair on reload (issue 24). */
	CHECK(p != NULL && p->unnamed == 1);
	tls_pair_free(p);
	/* "web" is a prefix of "webhook" but not a name: it must warn too. */
	p = tls_pair_from_pem(bundle.cert, strlen(bundle.cert), bundle.key, strlen(bundle.key), "web", &err);
	CHECK(p != NULL && p->warning[0] != '\0' && p->unnamed == 1);
	tls_pair_free(p);
	/* No service to name: nothing to miss. */
	p = tls_pair_from_pem(bundle.cert, strlen(bundle.cert), bundle.key, strlen(bundle.key), NULL, &err);
	CHECK(p != NULL && p->unnamed == 0);
	tls_pair_free(p);
}

/*
 * A certificate (self-signed with the bundle's key) whose only SAN is an
 * iPAddress of ip_len bytes: a well-formed name has 4 or 16, a hostile one
 * anything. Returns it as PEM (new; free()), NULL on failure.
 */
static char *cert_with_ip_san(const unsigned char *ip, int ip_len)
{
	BIO *kb = BIO_new_mem_buf(bundle.key, -1), *out = BIO_new(BIO_s_mem());
	EVP_PKEY *key = kb ? PEM_read_bio_PrivateKey(kb, NULL, NULL, NULL) : NULL;
	X509 *x = X509_new();
	GENERAL_NAMES *names = sk_GENERAL_NAME_new_null();
	GENERAL_NAME *gn = GENERAL_NAME_new();
	ASN1_OCTET_STRING *oct = ASN1_OCTET_STRING_new();
	char *pem = NULL, *data;
	long n;

	if (key == NULL || x == NULL || names == NULL || gn == NULL || oct == NULL || out == NULL ||
	    !ASN1_OCTET_STRING_set(oct, ip, ip_len))
		goto done;
	GENERAL_NAME_set0_value(gn, GEN_IPADD, oct);
	oct = NULL;
	if (!sk_GENERAL_NAME_push(names, gn))
		goto done;
	gn = NULL;
	X509_set_version(x, 2);
	ASN1_INTEGER_set(X509_get_serialNumber(x), 7);
	X509_gmtime_adj(X509_getm_notBefore(x), 0);
	X509_gmtime_adj(X509_getm_notAfter(x), 86400);
	X509_NAME_add_entry_by_txt(X509_get_subject_name(x), "CN", MBSTRING_ASC,
				   (const unsigned char *)"ip-san", -1, -1, 0);
	X509_set_issuer_name(x, X509_get_subject_name(x));
	if (!X509_set_pubkey(x, key) || !X509_add1_ext_i2d(x, NID_subject_alt_name, names, 0, 0) ||
	    !X509_sign(x, key, EVP_sha256()) || !PEM_write_bio_X509(out, x))
		goto done;
	n = BIO_get_mem_data(out, &data);
	if (n > 0 && (pem = malloc((size_t)n + 1)) != NULL) {
		memcpy(pem, data, (size_t)n);
		pem[n] = '\0';
	}
done:
	ASN1_OCTET_STRING_free(oct);
	GENERAL_NAME_free(gn);
	GENERAL_NAMES_free(names);
	X509_free(x);
	EVP_PKEY_free(key);
	BIO_free(kb);
	BIO_free(out);
	return pem;
}

/* An iPAddress SAN of the wrong length is shown as such, never read past its end. */
static void test_ip_san_of_odd_length(void)
{
	static const unsigned char v4[4] = { 10, 0, 0, 7 }, odd[1] = { 10 };
	struct error err = { 0 };
	char *pem = cert_with_ip_san(v4, 4);
	struct tls_pair *p = pem ? tls_pair_from_pem(pem, strlen(pem), bundle.key, strlen(bundle.key),
						     NULL, &err) : NULL;

	CHECK(p != NULL && strcmp(p->sans, "10.0.0.7") == 0);
	tls_pair_free(p);
	free(pem);
	pem = cert_with_ip_san(odd, 1);
	p = pem ? tls_pair_from_pem(pem, strlen(pem), bundle.key, strlen(bundle.key), NULL, &err) : NULL;
	CHECK(p != NULL && strcmp(p->sans, "(bad IP)") == 0);
	tls_pair_free(p);
	free(pem);
}

static void test_mismatched_key_refused(void)
{
	struct error err = { 0 };
	struct tls_pair *p = tls_pair_from_pem(bundle.cert, strlen(bundle.cert), bundle.ca_key,
					       strlen(bundle.ca_key), NULL, &err);

	CHECK(p == NULL);
	CHECK_INT(err.kind, ERROR_INPUT);
	CHECK(strstr(err.msg, "does not match") != NULL);
}

static void test_garbage_refused(void)
{
	struct error err = { 0 };

	CHECK(tls_pair_from_pem("nope", 4, bundle.key, strlen(bundle.key), NULL, &err) == NULL);
	CHECK(strstr(err.msg, "no PEM certificate") != NULL);
	CHECK(tls_pair_from_pem(bundle.cert, strlen(bundle.cert), "nope", 4, NULL, &err) == NULL);
	CHECK(strstr(err.msg, "private key") != NULL);
	CHECK(tls_pair_load("/nonexistent.crt", "/nonexistent.key", NULL, &err) == NULL);
	CHECK_INT(err.kind, ERROR_NOT_FOUND);
}

static void test_ca_bundle_is_base64_of_ca(void)
{
	size_t n = strlen(bundle.ca_bundle);
	unsigned char *raw = malloc(n);
	int len = EVP_DecodeBlock(raw, (const unsigned char *)bundle.ca_bundle, (int)n);

	CHECK(strchr(bundle.ca_bundle, '\n') == NULL);
	/* EVP_DecodeBlock counts padding bytes as output: trim them. */
	while (len > 0 && n > 0 && bundle.ca_bundle[n - 1] == '=') {
		len--;
		n--;
	}
	CHECK_INT(len, strlen(bundle.ca_cert));
	CHECK(memcmp(raw, bundle.ca_cert, strlen(bundle.ca_cert)) == 0);
	free(raw);
}

static void test_self_signed(void)
{
	struct error err = { 0 };
	struct tls_pair *p = tls_self_signed("my-svc", 1, &err);

	CHECK(p != NULL);
	CHECK(p != NULL && strcmp(p->sans, "localhost,127.0.0.1,::1,my-svc") == 0);
	CHECK(p != NULL && p->warning[0] == '\0');
	tls_pair_free(p);
	CHECK(tls_self_signed("bad,name", 1, &err) == NULL);
	CHECK(tls_self_signed(NULL, 0, &err) == NULL);
	tls_pair_free(NULL);
}

static void test_bundle_argument_checks(void)
{
	struct tls_bundle b;
	struct error err = { 0 };

	CHECK_INT(tls_bundle_generate("Bad_Name", "ns", 10, &b, &err), -1);
	CHECK(b.cert == NULL);
	CHECK_INT(tls_bundle_generate("ok", "", 10, &b, &err), -1);
	CHECK_INT(tls_bundle_generate("ok", "ns", 3651, &b, &err), -1);
	CHECK(strstr(err.msg, "days") != NULL);
	tls_bundle_free(NULL);
}

/* Writes text to a new temporary file; its path goes to path[cap]. */
static void temp_file(const char *text, char *path, size_t cap)
{
	int fd;

	snprintf(path, cap, "/tmp/test_tls-XXXXXX");
	fd = mkstemp(path);
	CHECK(fd >= 0);
	if (fd >= 0) {
		CHECK(write(fd, text, strlen(text)) == (ssize_t)strlen(text));
		close(fd);
	}
}

static X509 *read_cert(const char *pem)
{
	BIO *b = BIO_new_mem_buf(pem, -1);
	X509 *x = PEM_read_bio_X509(b, NULL, NULL, NULL);

	BIO_free(b);
	return x;
}

/* certs --san and --ca-cert/--ca-key: extra SANs, and renewal signed by the CA already trusted. */
static void test_bundle_with_sans_and_existing_ca(void)
{
	static const char *const sans[] = { "127.0.0.1", "localhost", "::1", "*.gpu.example.com" };
	struct tls_bundle_request req = { .service = "webhook", .ns = "gpu", .days = 3650, .sans = sans, .n_sans = 4 };
	struct tls_bundle b;
	struct error err = { 0 };
	struct tls_pair *p;
	char ca_cert[64], ca_key[64], other_key[64], leaf_cert[64] = "";
	X509 *ca = read_cert(bundle.ca_cert), *leaf;
	time_t ca_end = time(NULL) + 30 * 86400;

	temp_file(bundle.ca_cert, ca_cert, sizeof ca_cert);
	temp_file(bundle.ca_key, ca_key, sizeof ca_key);
	temp_file(bundle.key, other_key, sizeof other_key);
	req.ca_cert_path = ca_cert;
	req.ca_key_path = ca_key;
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), 0);
	if (b.cert == NULL) {
		fprintf(stderr, "    %s\n", err.msg);
		goto out;
	}
	CHECK(b.ca_key == NULL);                       /* the CA's key is never written out again */
	CHECK_STR(b.ca_cert, bundle.ca_cert);
	CHECK_STR(b.ca_bundle, bundle.ca_bundle);      /* the webhooks' caBundle stays valid */
	CHECK(b.clamped);                              /* 3650 days asked; the CA has 30 */
	CHECK(b.not_after <= ca_end + 60 && b.not_after > ca_end - 3600);
	leaf = read_cert(b.cert);
	CHECK(leaf != NULL && ca != NULL && X509_verify(leaf, X509_get0_pubkey(ca)) == 1);
	X509_free(leaf);
	p = tls_pair_from_pem(b.cert, strlen(b.cert), b.key, strlen(b.key), "webhook", &err);
	CHECK(p != NULL);
	if (p != NULL)
		CHECK_STR(p->sans, "webhook,webhook.gpu,webhook.gpu.svc,webhook.gpu.svc.cluster.local,"
			  "127.0.0.1,localhost,::1,*.gpu.example.com");
	tls_pair_free(p);
	tls_bundle_free(&b);

	/* Errors name the option at fault. */
	req.n_sans = 1;
	req.sans = (const char *const[]){ "not a name" };
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), -1);
	CHECK(strstr(err.msg, "--san \"not a name\"") != NULL);
	req.n_sans = 0;
	req.ca_key_path = other_key;
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), -1);
	CHECK(strstr(err.msg, "does not match --ca-cert") != NULL);
	req.ca_cert_path = other_key;                  /* a key where a certificate goes */
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), -1);
	CHECK(strstr(err.msg, "--ca-cert") != NULL);
	req.ca_cert_path = "/nonexistent/ca.crt";
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), -1);
	CHECK(strstr(err.msg, "--ca-cert /nonexistent/ca.crt") != NULL);
	req.ca_key_path = NULL;
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), -1);
	CHECK(b.cert == NULL);
	/* The serving certificate is not a CA: it cannot sign another. */
	temp_file(bundle.cert, leaf_cert, sizeof leaf_cert);
	req.ca_cert_path = leaf_cert;
	req.ca_key_path = other_key;
	CHECK_INT(tls_bundle_generate_ex(&req, &b, &err), -1);
	CHECK(strstr(err.msg, "not a CA certificate") != NULL);
out:
	X509_free(ca);
	unlink(ca_cert);
	unlink(ca_key);
	unlink(other_key);
	if (leaf_cert[0] != '\0')
		unlink(leaf_cert);
}

int main(void)
{
	struct error err = { 0 };

	if (tls_bundle_generate("webhook", "gpu", 30, &bundle, &err) != 0) {
		fprintf(stderr, "cannot generate: %s\n", err.msg);
		printf("tls: 0 passed, 1 failed\n");
		return 1;
	}
	RUN(test_bundle_pair_loads);
	RUN(test_service_not_covered_warns);
	RUN(test_ip_san_of_odd_length);
	RUN(test_mismatched_key_refused);
	RUN(test_garbage_refused);
	RUN(test_ca_bundle_is_base64_of_ca);
	RUN(test_self_signed);
	RUN(test_bundle_argument_checks);
	RUN(test_bundle_with_sans_and_existing_ca);
	tls_bundle_free(&bundle);
	return check_done("tls");
}
