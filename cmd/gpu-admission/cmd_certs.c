/* gpu-admission certs: a CA and a serving certificate for the webhook Service. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "commands.h"
#include "file.h"
#include "tls.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission certs --service NAME --namespace NS --out DIR [--days N]\n\n"
		"Writes a CA and a serving certificate signed by it (ECDSA P-256) into DIR:\n"
		"  ca.crt ca.key     the CA (keep ca.key secret, or delete it)\n"
		"  tls.crt tls.key   the serving pair for serve --tls-cert/--tls-key; SANs NAME,\n"
		"                    NAME.NS, NAME.NS.svc, NAME.NS.svc.cluster.local\n"
		"  caBundle          base64 of ca.crt on one line, for the webhook configuration\n\n"
		"  --service NAME     the webhook's Service name\n"
		"  --namespace NS     its namespace\n"
		"  --out DIR          output directory (created if missing; files are replaced)\n"
		"  --days N           validity in days, 1..3650 (default 365)\n"
		"  -h, --help         this help\n");
}

/* Writes text to dir/name with mode, replacing it atomically; -1 with a message on stderr. */
static int write_file(const char *dir, const char *name, const char *text, mode_t mode)
{
	struct error err = { 0 };
	char path[4096];

	if ((size_t)snprintf(path, sizeof path, "%s/%s", dir, name) >= sizeof path) {
		fprintf(stderr, "gpu-admission certs: %s: path too long\n", dir);
		return -1;
	}
	if (file_write_atomic(path, text, strlen(text), mode, &err) != 0) {
		fprintf(stderr, "gpu-admission certs: %s\n", err.msg);
		return -1;
	}
	return 0;
}

int cmd_certs(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "service", required_argument, NULL, 's' },
		{ "namespace", required_argument, NULL, 'n' },
		{ "out", required_argument, NULL, 'o' },
		{ "days", required_argument, NULL, 'd' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *service = NULL, *ns = NULL, *out = NULL;
	struct tls_bundle b = { 0 };
	struct error err = { 0 };
	char line[4096], *end;
	long days = 365;
	int c, rc = EXIT_USAGE;

	optind = 1;
	while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case 's': service = optarg; break;
		case 'n': ns = optarg; break;
		case 'o': out = optarg; break;
		case 'd':
			errno = 0;
			days = strtol(optarg, &end, 10);
			if (end == optarg || *end != '\0' || errno != 0 || days < 1 || days > 3650)
				return cli_fail("certs: --days must be a number from 1 to 3650");
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (service == NULL || ns == NULL || out == NULL || optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (mkdir(out, 0755) != 0 && errno != EEXIST) {
		snprintf(line, sizeof line, "certs: %s: %s", out, strerror(errno));
		return cli_fail(line);
	}
	if (tls_bundle_generate(service, ns, (int)days, &b, &err) != 0) {
		snprintf(line, sizeof line, "certs: %s", err.msg);
		return cli_fail(line);
	}
	if (write_file(out, "ca.crt", b.ca_cert, 0644) != 0 ||
	    write_file(out, "ca.key", b.ca_key, 0600) != 0 ||
	    write_file(out, "tls.crt", b.cert, 0644) != 0 ||
	    write_file(out, "tls.key", b.key, 0600) != 0)
		goto out;
	snprintf(line, sizeof line, "%s\n", b.ca_bundle);
	if (write_file(out, "caBundle", line, 0644) != 0)
		goto out;
	printf("wrote %s/{ca.crt,ca.key,tls.crt,tls.key,caBundle} for %s.%s.svc, valid %ld days\n",
	       out, service, ns, days);
	rc = EXIT_OK;
out:
	tls_bundle_free(&b);
	return rc;
}
