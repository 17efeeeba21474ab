/* gpu-admission serve: the HTTPS webhook. Parses flags, hands them to pkg/server. */
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "base/log.h"
#include "base/limit.h"
#include "k8s/watchcache.h"
#include "webhook/claims.h"
#include "webhook/review.h"
#include "webhook/server.h"

enum {
	OPT_ADDR = CLI_LONG_ONLY, OPT_CERT, OPT_KEY, OPT_SELF, OPT_METRICS, OPT_BODY, OPT_THREADS,
	OPT_MAXCONN, OPT_PERIP, OPT_TIMEOUT, OPT_GRACE, OPT_SERVICE, OPT_LOG, OPT_LOG_FORMAT,
	OPT_HEADER_TIMEOUT, OPT_BODY_TIMEOUT, OPT_BUDGET, OPT_POLICY_KEY, OPT_LOOKUPS, OPT_KUBECONFIG,
	OPT_CACHE_OBJECTS, OPT_CACHE_OBJECT_BYTES
};

/* The defaults the help states, held to the server's own (pkg/webhook/server.h). */
_Static_assert(SERVER_DEFAULT_MAX_BODY == 3u * 1024 * 1024, "serve --help: --max-body default 3 MiB");
_Static_assert(SERVER_DEFAULT_MAX_CONNECTIONS == 1024, "serve --help: --max-connections default 1024");
_Static_assert(SERVER_DEFAULT_MAX_PER_IP == 256, "serve --help: --max-connections-per-ip default 256");
_Static_assert(SERVER_DEFAULT_TIMEOUT == 30, "serve --help: --timeout default 30");
_Static_assert(SERVER_DEFAULT_GRACE == 10, "serve --help: --shutdown-grace default 10");
_Static_assert(SERVER_DEFAULT_HEADER_TIMEOUT == 5, "serve --help: --header-timeout default 5");
_Static_assert(SERVER_DEFAULT_BODY_TIMEOUT == 10, "serve --help: --body-timeout default 10");
_Static_assert(SERVER_CONN_MEMORY == 48u * 1024, "serve --help: --memory-budget, 48 KiB a connection");
_Static_assert(SERVER_DEFAULT_MEMORY_BUDGET == 32u * 1024 * 1024, "serve --help: --memory-budget default 32 MiB");
_Static_assert(WATCHCACHE_MAX_OBJECTS == 100000, "serve --help: --claim-cache-max-objects default 100000");
_Static_assert(WATCHCACHE_MAX_OBJECT_BYTES == 65536, "serve --help: --claim-cache-max-object-bytes default 65536");
_Static_assert(LIMIT_KUBE_WATCH_LINE_MAX == 262144, "serve --help: --claim-cache-max-object-bytes at most 262144");

static const struct cli_option serve_options[] = {
	{ "addr", OPT_ADDR, "HOST:PORT", "listen address (default " SERVER_DEFAULT_ADDR "; [::]:PORT listens\n"
					 "on IPv6 and IPv4; port 0: any free port)", 0 },
	{ "tls-cert", OPT_CERT, "FILE", "serving certificate (PEM, leaf first); watched and reloaded", 0 },
	{ "tls-key", OPT_KEY, "FILE", "its private key (PEM, ECDSA or RSA); watched and reloaded", 0 },
	{ "self-signed", OPT_SELF, NULL, "generate an in-memory certificate (local use only)", 0 },
	{ "config", 'c', "FILE", "policy file (default: the embedded policy); watched and reloaded;\n"
					"an invalid one is logged, one line per error", 0 },
	{ "policy-key", OPT_POLICY_KEY, "KEY", "the data key of the policy ConfigMap that POST /validate-policy\n"
					       "judges (default " REVIEW_POLICY_KEY ", the chart's)", 0 },
	{ "metrics-addr", OPT_METRICS, "HOST:PORT", "also serve /metrics, /healthz, /readyz over plain HTTP", 0 },
	{ "max-body", OPT_BODY, "BYTES", "largest request body (default 3145728, 3 MiB); larger: 413", 0 },
	{ "threads", OPT_THREADS, "N", "worker threads (default: one per CPU the process may use,\n"
				       "capped by its cgroup CPU limit, at most 64)", 0 },
	{ "max-connections", OPT_MAXCONN, "N", "open connections at most, over all threads; more wait\n"
					       "in the listen queue (default 1024)", 0 },
	{ "max-connections-per-ip", OPT_PERIP, "N", "per client address, more are closed (default 256; 0: no limit)", 0 },
	{ "timeout", OPT_TIMEOUT, "SECONDS", "a request must arrive within this, idle connections close\n"
					     "after it (default 30)", 0 },
	{ "header-timeout", OPT_HEADER_TIMEOUT, "SECONDS", "a new connection must send a whole request header within\n"
							   "this, TLS handshake included (default 5). At the connection\n"
							   "limit, the connection idle the longest makes room for a new one", 0 },
	{ "body-timeout", OPT_BODY_TIMEOUT, "SECONDS", "a request's body must follow its headers within this\n"
						       "(default 10). At the connection or memory limit, the oldest\n"
						       "partial body makes room for a new client", 0 },
	{ "memory-budget", OPT_BUDGET, "BYTES", "TLS connections (48 KiB each), request bodies as they arrive\n"
						"and parse results, together, at most (default 33554432,\n"
						"32 MiB); beyond it: 503 with Retry-After for a body, the\n"
						"listen queue for a connection", 0 },
	{ "claim-lookups", OPT_LOOKUPS, NULL, "resolve pods' DRA claims (ResourceClaimTemplates, ResourceClaims;\n"
					     "DeviceClasses too) from a read-only watch of the API server\n"
					     "(resource.k8s.io/v1), as the pod's service account unless\n"
					     "--kubeconfig. Until the caches sync a pod's claims are judged\n"
					     "unknown, with a warning; readiness never waits for them", 0 },
	{ "kubeconfig", OPT_KUBECONFIG, "FILE", "the API server and identity for --claim-lookups (implies it):\n"
						"the current context; client certificate or token", 0 },
	{ "claim-cache-max-objects", OPT_CACHE_OBJECTS, "N", "objects each claim cache keeps at most; more are\n"
							    "refused and counted (default 100000)", 0 },
	{ "claim-cache-max-object-bytes", OPT_CACHE_OBJECT_BYTES, "BYTES", "largest object a claim cache keeps (default\n"
									  "65536, at most 262144); larger: refused, counted", 0 },
	{ "shutdown-grace", OPT_GRACE, "SECONDS", "SIGTERM to exit at most (default 10)", 0 },
	{ "service-name", OPT_SERVICE, "NAME", "warn when the certificate's SANs do not cover NAME", 0 },
	{ "log-level", OPT_LOG, "debug|info|warn|error", "the least important lines logged (default info)", 0 },
	{ "log-format", OPT_LOG_FORMAT, "text|json", "log lines as text or JSON (default: text when stderr is\n"
						   "a terminal, JSON otherwise)", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

static int run_serve(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	struct server_options o;
	struct claims_options co = { 0 };
	struct claims *claims = NULL;
	int lookups = 0, rc;
	struct error err = { 0 };
	enum log_level level = LOG_LEVEL_INFO;
	enum log_format format = isatty(STDERR_FILENO) ? LOG_FORMAT_TEXT : LOG_FORMAT_JSON;
	unsigned long long n;
	int c;

	server_options_default(&o);
	o.version = cli_version_number();
	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case OPT_ADDR: o.addr = p.value; break;
		case OPT_CERT: o.tls_cert = p.value; break;
		case OPT_KEY: o.tls_key = p.value; break;
		case OPT_SELF: o.self_signed = 1; break;
		case 'c': o.config_path = p.value; break;
		case OPT_POLICY_KEY: o.policy_key = p.value; break;
		case OPT_METRICS: o.metrics_addr = p.value; break;
		case OPT_SERVICE: o.service_name = p.value; break;
		case OPT_LOOKUPS: lookups = 1; break;
		case OPT_KUBECONFIG: co.kubeconfig = p.value; lookups = 1; break;
		case OPT_CACHE_OBJECTS:
			if (cli_number(&p, 1, 10000000, &n) != 0)
				return cli_stop(&p);
			co.max_objects = (size_t)n;
			break;
		case OPT_CACHE_OBJECT_BYTES:
			if (cli_number(&p, 1024, LIMIT_KUBE_WATCH_LINE_MAX, &n) != 0)
				return cli_stop(&p);
			co.max_object_bytes = (size_t)n;
			break;
		case OPT_BODY:
			if (cli_number(&p, 1, 64ull << 20, &n) != 0)
				return cli_stop(&p);
			o.max_body = (size_t)n;
			break;
		case OPT_THREADS:
			if (cli_number(&p, 1, 256, &n) != 0)
				return cli_stop(&p);
			o.threads = (unsigned)n;
			break;
		case OPT_MAXCONN:
			if (cli_number(&p, 1, 1000000, &n) != 0)
				return cli_stop(&p);
			o.max_connections = (unsigned)n;
			break;
		case OPT_PERIP:
			if (cli_number(&p, 0, 1000000, &n) != 0)
				return cli_stop(&p);
			o.max_per_ip = (unsigned)n;
			break;
		case OPT_TIMEOUT:
			if (cli_number(&p, 1, 3600, &n) != 0)
				return cli_stop(&p);
			o.timeout = (unsigned)n;
			break;
		case OPT_HEADER_TIMEOUT:
			if (cli_number(&p, 1, 3600, &n) != 0)
				return cli_stop(&p);
			o.header_timeout = (unsigned)n;
			break;
		case OPT_BODY_TIMEOUT:
			if (cli_number(&p, 1, 3600, &n) != 0)
				return cli_stop(&p);
			o.body_timeout = (unsigned)n;
			break;
		case OPT_BUDGET:
			if (cli_number(&p, 1, 1ull << 40, &n) != 0)
				return cli_stop(&p);
			o.memory_budget = (size_t)n;
			break;
		case OPT_GRACE:
			if (cli_number(&p, 1, 3600, &n) != 0)
				return cli_stop(&p);
			o.grace = (unsigned)n;
			break;
		case OPT_LOG:
			if ((c = cli_choice(&p)) < 0 || log_level_parse(p.value, &level) != 0)
				return cli_stop(&p);
			break;
		case OPT_LOG_FORMAT:
			if ((c = cli_choice(&p)) < 0 || log_format_parse(p.value, &format) != 0)
				return cli_stop(&p);
			break;
		case CLI_OPERAND: return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		default: return cli_stop(&p);
		}
	}
	/* A usage error, worded as every command's, before anything is logged. */
	if (o.self_signed ? (o.tls_cert != NULL || o.tls_key != NULL) : (o.tls_cert == NULL || o.tls_key == NULL))
		return cli_usage(cmd, o.self_signed ? "--self-signed takes no --tls-cert or --tls-key"
				 : "give --tls-cert and --tls-key, or --self-signed");
	log_set_format(format);
	log_set_level(level);
	/* A lookup configuration that cannot work is a start-up error; an unreachable API server is not. */
	if (lookups && (claims = claims_start(&co, &err)) == NULL) {
		log_msg(LOG_LEVEL_ERROR, "cannot start claim lookups", "error", err.msg, LOG_END);
		return cli_exit_code(&err);
	}
	o.claims = claims;
	rc = server_run(&o, &err);
	claims_free(claims);
	if (rc != 0) {
		log_msg(LOG_LEVEL_ERROR, "cannot serve", "error", err.msg, LOG_END);
		return cli_exit_code(&err);
	}
	return EXIT_OK;
}

const struct cli_command cmd_serve = {
	.name = "serve",
	.summary = "run the HTTPS admission webhook",
	.usage = "(--tls-cert FILE --tls-key FILE | --self-signed) [OPTIONS]",
	.description =
		"Serves the admission webhook over HTTPS: POST /mutate, POST /validate,\n"
		"POST /validate-policy (an edit of the policy ConfigMap, judged as check-config\n"
		"judges a file: a bad one is denied with its errors), GET /healthz, /readyz,\n"
		"/metrics. SIGTERM drains and exits 0; SIGHUP reloads the policy and the\n"
		"certificate, which are also reloaded when their files change. A policy that\n"
		"does not load leaves it running, not ready, retrying. Logs go to stderr, one\n"
		"line per admission decision at level info.",
	.options = serve_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "stopped cleanly after SIGTERM or SIGINT" },
		{ EXIT_USAGE, "usage error, or it cannot start: a bad certificate, the address in use" },
		{ 0, NULL },
	},
	.examples =
		"gpu-admission serve --self-signed --addr 127.0.0.1:8443\n"
		"gpu-admission serve --tls-cert certs/tls.crt --tls-key certs/tls.key \\\n"
		"    --config policy.yaml\n"
		"gpu-admission serve --self-signed --claim-lookups --kubeconfig ~/.kube/config",
	.run = run_serve,
};
