/* tls: generating, loading and validating certificate pairs with OpenSSL. */
#include <openssl/evp.h>
#include <stdlib.h>
#include <time.h>

#include "check.h"
#include "tls.h"

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
	tls_pair_free(p);
	/* "web" is a prefix of "webhook" but not a name: it must warn too. */
	p = tls_pair_from_pem(bundle.cert, strlen(bundle.cert), bundle.key, strlen(bundle.key), "web", &err);
	CHECK(p != NULL && p->warning[0] != '\0');
	tls_pair_free(p);
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
	RUN(test_mismatched_key_refused);
	RUN(test_garbage_refused);
	RUN(test_ca_bundle_is_base64_of_ca);
	RUN(test_self_signed);
	RUN(test_bundle_argument_checks);
	tls_bundle_free(&bundle);
	return check_done("tls");
}
