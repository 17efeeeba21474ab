/* gpu-admission certs: a CA and a serving certificate for the webhook Service. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "commands.h"
#include "base/file.h"
#include "webhook/tls.h"

enum { OPT_SERVICE = CLI_LONG_ONLY, OPT_NAMESPACE, OPT_OUT, OPT_DAYS, OPT_SAN, OPT_CA_CERT, OPT_CA_KEY, OPT_FORCE };

static const struct cli_option certs_options[] = {
	{ "service", OPT_SERVICE, "NAME", "the webhook's Service name (required)", 0 },
	{ "namespace", OPT_NAMESPACE, "NS", "its namespace (required)", 0 },
	{ "out", OPT_OUT, "DIR", "output directory (required; created if missing; a CA already\n"
				 "in it signs the new certificate: see --force)", 0 },
	{ "days", OPT_DAYS, "N", "validity in days, 1..3650 (default 365)", 0 },
	{ "san", OPT_SAN, "NAME", "one more subjectAltName, an IP address or a DNS name\n"
				  "(repeatable: --san 127.0.0.1 --san localhost)", 0 },
	{ "ca-cert", OPT_CA_CERT, "FILE", "renew: sign with this existing CA (PEM) instead of a new\n"
					  "one, so the webhooks' caBundle stays valid; needs --ca-key", 0 },
	{ "ca-key", OPT_CA_KEY, "FILE", "the existing CA's private key (PEM, unencrypted)", 0 },
	{ "force", OPT_FORCE, NULL, "replace the CA in DIR with a new one (or with --ca-cert's);\n"
				    "the webhooks' caBundle must then be updated", 0 },
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

/* dir/name into path (cap bytes); -1 with an error when it does not fit. */
static int join(char *path, size_t cap, const char *dir, const char *name, struct error *err)
{
	if ((size_t)snprintf(path, cap, "%s/%s", dir, name) >= cap) {
		error_set(err, ERROR_INPUT, "%s: path too long", dir);
		return -1;
	}
	return 0;
}

/* Whether path names something (a file we would replace); unreadable counts as there. */
static int exists(const char *path)
{
	struct stat st;

	return lstat(path, &st) == 0 || (errno != ENOENT && errno != ENOTDIR);
}

/* Whether the CA certificate at path is the one the bundle was signed with: 1, 0, or -1 (error). */
static int same_ca(const char *path, const struct tls_bundle *b, struct error *err)
{
	size_t len = 0;
	char *text = file_read(path, TLS_MAX_FILE, &len, err);
	int same;

	if (text == NULL)
		return -1;
	same = tls_same_cert(text, len, b->ca_cert, strlen(b->ca_cert), err);
	free(text);
	return same;
}

/*
 * The flags into req (its SANs into sans, TLS_SANS_MAX + 1 of them), *out and
 * *force: 0, or -1 with *code the exit code of a usage error.
 */
static int certs_parse(const struct cli_command *cmd, int argc, char **argv, struct tls_bundle_request *req,
		       const char **sans, const char **out, int *force, int *code)
{
	struct cli_parser p;
	unsigned long long days;
	int c;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case OPT_SERVICE: req->service = p.value; break;
		case OPT_NAMESPACE: req->ns = p.value; break;
		case OPT_OUT: *out = p.value; break;
		case OPT_CA_CERT: req->ca_cert_path = p.value; break;
		case OPT_CA_KEY: req->ca_key_path = p.value; break;
		case OPT_FORCE: *force = 1; break;
		case OPT_DAYS:
			if (cli_number(&p, 1, 3650, &days) != 0)
				goto stop;
			req->days = (int)days;
			break;
		case OPT_SAN:
			if (req->n_sans == TLS_SANS_MAX) {
				*code = cli_usage(cmd, "at most %d --san", TLS_SANS_MAX);
				return -1;
			}
			sans[req->n_sans++] = p.value;
			break;
		case CLI_OPERAND:
			*code = cli_usage(cmd, "unexpected argument \"%s\"", p.value);
			return -1;
		default:
			goto stop;
		}
	}
	req->sans = sans;
	if (req->service == NULL || req->ns == NULL || *out == NULL) {
		*code = cli_usage(cmd, "--service, --namespace and --out are required");
		return -1;
	}
	if ((req->ca_cert_path == NULL) != (req->ca_key_path == NULL)) {
		*code = cli_usage(cmd, "--ca-cert and --ca-key go together");
		return -1;
	}
	return 0;
stop:
	*code = cli_stop(&p);
	return -1;
}

static int run_certs(const struct cli_command *cmd, int argc, char **argv)
{
	struct tls_bundle_request req = { .days = 365 };
	const char *sans[TLS_SANS_MAX + 1];
	const char *out = NULL;
	struct tls_bundle b = { 0 };
	struct error err = { 0 };
	char line[4096], until[32], dir_crt[4096], dir_key[4096];
	struct tm tm;
	int c, rc = EXIT_USAGE, force = 0, reuse = 0, same = 1, had_ca, new_ca;

	if (certs_parse(cmd, argc, argv, &req, sans, &out, &force, &rc) != 0)
		return rc;
	if (mkdir(out, 0755) != 0 && errno != EEXIST) {
		error_set(&err, ERROR_SYSTEM, "%s: %s", out, strerror(errno));
		return cli_fail(cmd, &err);
	}
	if (join(dir_crt, sizeof dir_crt, out, "ca.crt", &err) != 0 ||
	    join(dir_key, sizeof dir_key, out, "ca.key", &err) != 0)
		return cli_fail(cmd, &err);
	/*
	 * A CA already in DIR is what the webhooks' caBundle trusts: replacing it
	 * breaks every webhook call until the caBundle is updated. So, as kubeadm
	 * does with its PKI directory, a CA found there signs the new certificate,
	 * and only --force makes a new one. A certificate without its key (the key
	 * kept offline, as the help advises) cannot sign and is not replaced either.
	 */
	had_ca = exists(dir_crt) || exists(dir_key);
	if (req.ca_cert_path == NULL && had_ca && !force) {
		if (!exists(dir_crt) || !exists(dir_key)) {
			error_set(&err, ERROR_INPUT, "%s holds %s without %s: to renew, pass --ca-cert and --ca-key "
				  "(where the CA's key is kept); --force makes a new CA (then update caBundle)",
				  out, exists(dir_crt) ? "ca.crt" : "ca.key", exists(dir_crt) ? "ca.key" : "ca.crt");
			return cli_fail(cmd, &err);
		}
		req.ca_cert_path = dir_crt;
		req.ca_key_path = dir_key;
		reuse = 1;
	}
	if (tls_bundle_generate_ex(&req, &b, &err) != 0) {
		if (reuse && err.kind != ERROR_NOMEM)
			error_prefix(&err, "the CA in %s cannot sign (--force makes a new one; then update caBundle): ", out);
		return cli_fail(cmd, &err);
	}
	/* Another CA given (--ca-cert) must not silently take the place of the one in DIR either. */
	if (req.ca_cert_path != NULL && !reuse && had_ca) {
		if ((same = exists(dir_crt) ? same_ca(dir_crt, &b, &err) : 0) < 0)
			goto fail;
		if (same == 0 && !force) {
			error_set(&err, ERROR_INPUT, "%s holds another CA than --ca-cert %s: --force replaces it "
				  "(then update caBundle)", out, req.ca_cert_path);
			goto fail;
		}
	}
	new_ca = had_ca && (req.ca_cert_path == NULL || same == 0);
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
	printf("%s, valid until %s%s%s\n", req.n_sans ? ")" : "", until,
	       req.ca_cert_path ? ", signed by the existing CA" : "", reuse ? " in it (caBundle unchanged)" : "");
	if (new_ca)
		cli_say(cmd, "new CA: update caBundle in the webhook configurations (%s/caBundle): "
			"the old CA no longer verifies tls.crt", out);
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
		"CA (ECDSA P-256), or by an existing one: the CA already in DIR (ca.crt and\n"
		"ca.key), or --ca-cert and --ca-key. The CA in DIR is never replaced without\n"
		"--force, which says \"new CA: update caBundle\"; a ca.crt there without its\n"
		"ca.key is refused.\n"
		"  ca.crt ca.key     the CA (keep ca.key offline; not written when renewing)\n"
		"  tls.crt tls.key   the serving pair for serve --tls-cert/--tls-key; SANs NAME,\n"
		"                    NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local and --san\n"
		"  caBundle          base64 of ca.crt on one line, for the webhook configurations\n"
		"Files are replaced atomically, keys with mode 0600 from the first byte.\n"
		"Re-running the first example renews tls.crt with the CA it made.",
	.options = certs_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the files were written (a new CA, or tls.crt renewed with the existing one)" },
		{ EXIT_USAGE, "usage error; a CA in DIR it may not replace without --force, or a "
			      "ca.crt there without its ca.key; a CA that cannot be read or does not "
			      "sign; DIR or a file that cannot be written" },
		{ 0, NULL },
	},
	.examples =
		"gpu-admission certs --service gpu-admission --namespace gpu-admission \\\n"
		"    --out certs\n"
		"gpu-admission certs --service gpu-admission --namespace gpu-admission \\\n"
		"    --out certs --ca-cert certs/ca.crt --ca-key certs/ca.key\n"
		"gpu-admission certs --service gpu-admission --namespace e2e --out /tmp/c \\\n"
		"    --san 127.0.0.1\n"
		"gpu-admission certs --service gpu-admission --namespace gpu-admission \\\n"
		"    --out certs --force",
	.run = run_certs,
};
