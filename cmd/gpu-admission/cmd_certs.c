/* gpu-admission certs: a CA and a serving certificate for the webhook Service. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "file.h"
#include "tls.h"

enum { OPT_SERVICE = CLI_LONG_ONLY, OPT_NAMESPACE, OPT_OUT, OPT_DAYS, OPT_SAN, OPT_CA_CERT, OPT_CA_KEY };

static const struct cli_option certs_options[] = {
	{ "service", OPT_SERVICE, "NAME", "the webhook's Service name (required)", 0 },
	{ "namespace", OPT_NAMESPACE, "NS", "its namespace (required)", 0 },
	{ "out", OPT_OUT, "DIR", "output directory (required; created if missing, files replaced)", 0 },
	{ "days", OPT_DAYS, "N", "validity in days, 1..3650 (default 365)", 0 },
	{ "san", OPT_SAN, "NAME", "one more subjectAltName, an IP address or a DNS name\n"
				  "(repeatable: --san 127.0.0.1 --san localhost)", 0 },
	{ "ca-cert", OPT_CA_CERT, "FILE", "renew: sign with this existing CA (PEM) instead of a new\n"
					  "one, so the webhooks' caBundle stays valid; needs --ca-key", 0 },
	{ "ca-key", OPT_CA_KEY, "FILE", "the existing CA's private key (PEM, unencrypted)", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

/* Writes text to dir/name with mode, replacing it atomically. */
static int write_file(const char *dir, const char *name, const char *text, mode_t mode, struct error *err)
{
	char path[4096];

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
		error_set(err, ERROR_INPUT, "%s: path too long", dir);
		return -1;
	}
	return file_write_atomic(path, text, strlen(text), mode, err);
}

static int run_certs(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	struct tls_bundle_request req = { .days = 365 };
	const char *sans[TLS_SANS_MAX + 1];
	const char *out = NULL;
	struct tls_bundle b = { 0 };
	struct error err = { 0 };
	char line[4096], until[32];
	unsigned long long days;
	struct tm tm;
	int c, rc = EXIT_USAGE;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case OPT_SERVICE: req.service = p.value; break;
		case OPT_NAMESPACE: req.ns = p.value; break;
		case OPT_OUT: out = p.value; break;
		case OPT_CA_CERT: req.ca_cert_path = p.value; break;
		case OPT_CA_KEY: req.ca_key_path = p.value; break;
		case OPT_DAYS:
			if (cli_number(&p, 1, 3650, &days) != 0)
				return cli_stop(&p);
			req.days = (int)days;
			break;
		case OPT_SAN:
			if (req.n_sans == TLS_SANS_MAX)
				return cli_usage(cmd, "at most %d --san", TLS_SANS_MAX);
			sans[req.n_sans++] = p.value;
			break;
		case CLI_OPERAND: return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		default: return cli_stop(&p);
		}
	}
	req.sans = sans;
	if (req.service == NULL || req.ns == NULL || out == NULL)
		return cli_usage(cmd, "--service, --namespace and --out are required");
	if ((req.ca_cert_path == NULL) != (req.ca_key_path == NULL))
		return cli_usage(cmd, "--ca-cert and --ca-key go together");
	if (mkdir(out, 0755) != 0 && errno != EEXIST) {
		error_set(&err, ERROR_SYSTEM, "%s: %s", out, strerror(errno));
		return cli_fail(cmd, &err);
	}
	if (tls_bundle_generate_ex(&req, &b, &err) != 0)
		return cli_fail(cmd, &err);
	/* Renewing with an existing CA never writes its key: it stays where it is kept. */
	if ((b.ca_key != NULL && write_file(out, "ca.key", b.ca_key, 0600, &err) != 0) ||
	    write_file(out, "ca.crt", b.ca_cert, 0644, &err) != 0 ||
	    write_file(out, "tls.crt", b.cert, 0644, &err) != 0 ||
	    write_file(out, "tls.key", b.key, 0600, &err) != 0)
		goto fail;
	snprintf(line, sizeof line, "%s\n", b.ca_bundle);
	if (write_file(out, "caBundle", line, 0644, &err) != 0)
		goto fail;
	gmtime_r(&b.not_after, &tm);
	strftime(until, sizeof until, "%Y-%m-%d", &tm);
	printf("wrote %s/{%sca.crt,tls.crt,tls.key,caBundle} for %s.%s.svc", out, b.ca_key ? "ca.key," : "",
	       req.service, req.ns);
	for (c = 0; c < (int)req.n_sans; c++)
		printf("%s%s", c ? ", " : " (and ", sans[c]);
	printf("%s, valid until %s%s\n", req.n_sans ? ")" : "", until,
	       req.ca_cert_path ? ", signed by the existing CA" : "");
	if (b.clamped)
		cli_say(cmd, "note: the CA expires on %s, before --days %d: the certificate ends with it",
			until, req.days);
	rc = cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
	goto out;
fail:
	rc = cli_fail(cmd, &err);
out:
	tls_bundle_free(&b);
	return rc;
}

const struct cli_command cmd_certs = {
	.name = "certs",
	.summary = "write a CA, a serving certificate and its caBundle",
	.usage = "--service NAME --namespace NS --out DIR [OPTIONS]",
	.description =
		"Writes into DIR a serving certificate for the webhook's Service, signed by a new\n"
		"CA (ECDSA P-256), or by an existing one with --ca-cert and --ca-key:\n"
		"  ca.crt ca.key     the CA (keep ca.key offline; not written when renewing)\n"
		"  tls.crt tls.key   the serving pair for serve --tls-cert/--tls-key; SANs NAME,\n"
		"                    NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and --san\n"
		"  caBundle          base64 of ca.crt on one line, for the webhook configurations\n"
		"Files are replaced atomically, keys with mode 0600 from the first byte.",
	.options = certs_options,
	.examples =
		"gpu-admission certs --service gpu-admission --namespace gpu-admission \\\n"
		"    --out certs\n"
		"gpu-admission certs --service gpu-admission --namespace gpu-admission \\\n"
		"    --out certs --ca-cert certs/ca.crt --ca-key certs/ca.key\n"
		"gpu-admission certs --service gpu-admission --namespace e2e --out /tmp/c \\\n"
		"    --san 127.0.0.1",
	.run = run_certs,
};
