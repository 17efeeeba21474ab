/* gpu-admission serve: the HTTPS webhook. Parses flags, hands them to pkg/server. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "log.h"
#include "server.h"

#ifndef GPU_ADMISSION_VERSION
#define GPU_ADMISSION_VERSION "dev"
#endif

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission serve (--tls-cert FILE --tls-key FILE | --self-signed) [options]\n\n"
		"Serves the admission webhook over HTTPS: POST /mutate, POST /validate,\n"
		"GET /healthz, /readyz, /metrics. SIGTERM drains and exits 0; SIGHUP reloads.\n\n"
		"  --addr HOST:PORT             listen address (default %s; [::]:PORT listens\n"
		"                               on IPv6 and IPv4; port 0: any free port)\n"
		"  --tls-cert FILE              serving certificate (PEM, leaf first); watched and reloaded\n"
		"  --tls-key FILE               its private key (PEM, ECDSA or RSA); watched and reloaded\n"
		"  --self-signed                generate an in-memory certificate (local use only)\n"
		"  --config FILE                policy file (default: embedded policy); watched and reloaded\n"
		"  --metrics-addr HOST:PORT     also serve /metrics, /healthz, /readyz over plain HTTP\n"
		"  --max-body BYTES             largest request body (default %u); larger: 413\n"
		"  --threads N                  worker threads (default: one per CPU the process may use,\n"
		"                               capped by its cgroup CPU limit, at most 64)\n"
		"  --max-connections N          open connections at most, over all threads; more wait\n"
		"                               in the listen queue (default %u)\n"
		"  --max-connections-per-ip N   per client address, more are closed (default %u; 0: no limit)\n"
		"  --timeout SECONDS            a request must arrive within this, idle connections close\n"
		"                               after it (default %u)\n"
		"  --header-timeout SECONDS     a new connection must send a whole request header within\n"
		"                               this, TLS handshake included (default %u). At the connection\n"
		"                               limit, the connection idle the longest makes room for a new one\n"
		"  --memory-budget BYTES        request bodies and parse results in flight, together, at\n"
		"                               most (default %u); beyond it: 503 with Retry-After\n"
		"  --shutdown-grace SECONDS     SIGTERM to exit at most (default %u)\n"
		"  --service-name NAME          warn when the certificate's SANs do not cover NAME\n"
		"  --log-level LEVEL            debug, info, warn or error (default info)\n"
		"  -h, --help                   this help\n\n"
		"Logs are JSON lines on stderr, one per admission decision at level info.\n"
		"Exit: 0 after a clean shutdown, 2 when it cannot start.\n",
		SERVER_DEFAULT_ADDR, SERVER_DEFAULT_MAX_BODY, SERVER_DEFAULT_MAX_CONNECTIONS,
		SERVER_DEFAULT_MAX_PER_IP, SERVER_DEFAULT_TIMEOUT, SERVER_DEFAULT_HEADER_TIMEOUT,
		SERVER_DEFAULT_MEMORY_BUDGET, SERVER_DEFAULT_GRACE);
}

/* Parses a decimal in [min, max] for flag; -1 with a message otherwise. */
static int number(const char *flag, const char *s, unsigned long long min, unsigned long long max,
		  unsigned long long *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	if (s[0] == '-' || end == s || *end != '\0' || errno != 0 || *out < min || *out > max) {
		fprintf(stderr, "gpu-admission serve: %s must be a number from %llu to %llu, not \"%s\"\n",
			flag, min, max, s);
		return -1;
	}
	return 0;
}

enum {
	OPT_ADDR = 256, OPT_CERT, OPT_KEY, OPT_SELF, OPT_CONFIG, OPT_METRICS, OPT_BODY, OPT_THREADS,
	OPT_MAXCONN, OPT_PERIP, OPT_TIMEOUT, OPT_GRACE, OPT_SERVICE, OPT_LOG, OPT_HEADER_TIMEOUT, OPT_BUDGET
};

int cmd_serve(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "addr", required_argument, NULL, OPT_ADDR },
		{ "tls-cert", required_argument, NULL, OPT_CERT },
		{ "tls-key", required_argument, NULL, OPT_KEY },
		{ "self-signed", no_argument, NULL, OPT_SELF },
		{ "config", required_argument, NULL, OPT_CONFIG },
		{ "metrics-addr", required_argument, NULL, OPT_METRICS },
		{ "max-body", required_argument, NULL, OPT_BODY },
		{ "threads", required_argument, NULL, OPT_THREADS },
		{ "max-connections", required_argument, NULL, OPT_MAXCONN },
		{ "max-connections-per-ip", required_argument, NULL, OPT_PERIP },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "header-timeout", required_argument, NULL, OPT_HEADER_TIMEOUT },
		{ "memory-budget", required_argument, NULL, OPT_BUDGET },
		{ "shutdown-grace", required_argument, NULL, OPT_GRACE },
		{ "service-name", required_argument, NULL, OPT_SERVICE },
		{ "log-level", required_argument, NULL, OPT_LOG },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct server_options o;
	struct error err = { 0 };
	enum log_level level = LOG_LEVEL_INFO;
	unsigned long long n;
	int c, bad = 0;

	server_options_default(&o);
	o.version = GPU_ADMISSION_VERSION;
	optind = 1;
	while (!bad && (c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
		switch (c) {
		case OPT_ADDR: o.addr = optarg; break;
		case OPT_CERT: o.tls_cert = optarg; break;
		case OPT_KEY: o.tls_key = optarg; break;
		case OPT_SELF: o.self_signed = 1; break;
		case OPT_CONFIG: o.config_path = optarg; break;
		case OPT_METRICS: o.metrics_addr = optarg; break;
		case OPT_SERVICE: o.service_name = optarg; break;
		case OPT_BODY:
			bad = number("--max-body", optarg, 1, 64ull << 20, &n);
			o.max_body = (size_t)n;
			break;
		case OPT_THREADS:
			bad = number("--threads", optarg, 1, 256, &n);
			o.threads = (unsigned)n;
			break;
		case OPT_MAXCONN:
			bad = number("--max-connections", optarg, 1, 1000000, &n);
			o.max_connections = (unsigned)n;
			break;
		case OPT_PERIP:
			bad = number("--max-connections-per-ip", optarg, 0, 1000000, &n);
			o.max_per_ip = (unsigned)n;
			break;
		case OPT_TIMEOUT:
			bad = number("--timeout", optarg, 1, 3600, &n);
			o.timeout = (unsigned)n;
			break;
		case OPT_HEADER_TIMEOUT:
			bad = number("--header-timeout", optarg, 1, 3600, &n);
			o.header_timeout = (unsigned)n;
			break;
		case OPT_BUDGET:
			bad = number("--memory-budget", optarg, 1, 1ull << 40, &n);
			o.memory_budget = (size_t)n;
			break;
		case OPT_GRACE:
			bad = number("--shutdown-grace", optarg, 1, 3600, &n);
			o.grace = (unsigned)n;
			break;
		case OPT_LOG:
			if (log_level_parse(optarg, &level) != 0) {
				fprintf(stderr, "gpu-admission serve: --log-level must be debug, info, warn or error\n");
				bad = 1;
			}
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (bad)
		return EXIT_USAGE;
	if (optind != argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	log_set_level(level);
	if (server_run(&o, &err) != 0) {
		log_msg(LOG_LEVEL_ERROR, "cannot serve", "error", err.msg, LOG_END);
		return EXIT_USAGE;
	}
	return EXIT_OK;
}
