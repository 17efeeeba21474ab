/* gpu-admission serve: the HTTPS webhook. Parses flags, hands them to pkg/server. */
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "base/log.h"
#include "base/limit.h"
#include "k8s/watchcache.h"
#include "webhook/claims.h"
#include "webhook/events.h"
#include "webhook/review.h"
#include "webhook/server.h"

enum {
	OPT_ADDR = CLI_LONG_ONLY, OPT_CERT, OPT_KEY, OPT_SELF, OPT_METRICS, OPT_BODY, OPT_THREADS,
	OPT_MAXCONN, OPT_PERIP, OPT_TIMEOUT, OPT_GRACE, OPT_SERVICE, OPT_LOG, OPT_LOG_FORMAT,
	OPT_HEADER_TIMEOUT, OPT_BODY_TIMEOUT, OPT_BUDGET, OPT_POLICY_KEY, OPT_LOOKUPS, OPT_KUBECONFIG,
	OPT_CACHE_OBJECTS, OPT_CACHE_OBJECT_BYTES, OPT_EVENTS
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
							   "this, TLS handshake included (default 5; not counting time\n"
							   "its bytes wait unread for a busy worker). At the connection\n"
							   "limit, the connection idle the longest makes room for a new one", 0 },
	{ "body-timeout", OPT_BODY_TIMEOUT, "SECONDS", "a request's body must follow its headers within this\n"
						       "(default 10; not counting time its bytes wait unread for a\n"
						       "busy worker). At the connection or memory limit, the oldest\n"
						       "partial body makes room for a new client", 0 },
	{ "memory-budget", OPT_BUDGET, "BYTES", "TLS connections (48 KiB each), request bodies as they arrive\n"
						"and parse results, together, at most (default 33554432,\n"
						"32 MiB); beyond it: 503 with Retry-After for a body, the\n"
						"listen queue for a connection", 0 },
	{ "claim-lookups", OPT_LOOKUPS, NULL, "resolve pods' DRA claims (ResourceClaimTemplates, ResourceClaims;\n"
					     "DeviceClasses too) from a read-only watch of the API server\n"
					     "(resource.k8s.io/v1), as the pod's service account unless\n"
					     "--kubeconfig. Until the caches sync, or where the API server\n"
					     "does not serve resource.k8s.io/v1, a pod's claims are judged\n"
					     "unknown, with a warning saying which; readiness never waits\n"
					     "for them. The chart's claimLookups.enabled (auto: on where\n"
					     "resource.k8s.io/v1 is served) sets it", 0 },
	{ "refusal-events", OPT_EVENTS, NULL, "publish a Warning Event (reason " EVENTS_REASON ") on an\n"
					      "object whose UPDATE is refused, and on its Kueue Workload:\n"
					      "a controller's refused write (Kueue admitting a Job onto a\n"
					      "flavor) is otherwise read by nobody. Needs create on events;\n"
					      "list on Workloads. The chart's refusalEvents.enabled sets it", 0 },
	{ "kubeconfig", OPT_KUBECONFIG, "FILE", "the API server and identity for --claim-lookups and\n"
						"--refusal-events (alone, it implies --claim-lookups): the\n"
						"current context; client certificate or token", 0 },
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

/* What the flags say: the server's options, the claim caches', and the log's. */
struct serve_args {
	struct server_options o;
	struct claims_options co;
	int lookups;
	int events;
	enum log_level level;
	enum log_format format;
};

/*
 * A numeric option c into a, within its bounds: 1 when c is one, 0 when it is
 * not, -1 when its value is refused (cli_number() said why).
 */
static int serve_number(struct cli_parser *p, int c, struct serve_args *a)
{
	static const struct {
		int opt;
		unsigned long long min, max;
	} bounds[] = {
		{ OPT_CACHE_OBJECTS, 1, 10000000 }, { OPT_CACHE_OBJECT_BYTES, 1024, LIMIT_KUBE_WATCH_LINE_MAX },
		{ OPT_BODY, 1, 64ull << 20 }, { OPT_THREADS, 1, 256 }, { OPT_MAXCONN, 1, 1000000 },
		{ OPT_PERIP, 0, 1000000 }, { OPT_TIMEOUT, 1, 3600 }, { OPT_HEADER_TIMEOUT, 1, 3600 },
		{ OPT_BODY_TIMEOUT, 1, 3600 }, { OPT_BUDGET, 1, 1ull << 40 }, { OPT_GRACE, 1, 3600 },
	};
	unsigned long long n;
	size_t i;

	for (i = 0; i < sizeof bounds / sizeof bounds[0] && bounds[i].opt != c; i++)
		;
	if (i == sizeof bounds / sizeof bounds[0])
		return 0;
	if (cli_number(p, bounds[i].min, bounds[i].max, &n) != 0)
		return -1;
	switch (c) {
	case OPT_CACHE_OBJECTS: a->co.max_objects = (size_t)n; break;
	case OPT_CACHE_OBJECT_BYTES: a->co.max_object_bytes = (size_t)n; break;
	case OPT_BODY: a->o.max_body = (size_t)n; break;
	case OPT_THREADS: a->o.threads = (unsigned)n; break;
	case OPT_MAXCONN: a->o.max_connections = (unsigned)n; break;
	case OPT_PERIP: a->o.max_per_ip = (unsigned)n; break;
	case OPT_TIMEOUT: a->o.timeout = (unsigned)n; break;
	case OPT_HEADER_TIMEOUT: a->o.header_timeout = (unsigned)n; break;
	case OPT_BODY_TIMEOUT: a->o.body_timeout = (unsigned)n; break;
	case OPT_BUDGET: a->o.memory_budget = (size_t)n; break;
	case OPT_GRACE: a->o.grace = (unsigned)n; break;
	}
	return 1;
}

/*
 * The flags into a (its defaults set first): 0, or -1 with *code the exit
 * code of a usage error, said as every command says one.
 */
static int serve_parse(const struct cli_command *cmd, int argc, char **argv, struct serve_args *a, int *code)
{
	struct cli_parser p;
	int c, num;

	server_options_default(&a->o);
	a->o.version = cli_version_number();
	a->level = LOG_LEVEL_INFO;
	a->format = isatty(STDERR_FILENO) ? LOG_FORMAT_TEXT : LOG_FORMAT_JSON;
	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		if ((num = serve_number(&p, c, a)) != 0) {
			if (num < 0)
				goto stop;
			continue;
		}
		switch (c) {
		case OPT_ADDR: a->o.addr = p.value; break;
		case OPT_CERT: a->o.tls_cert = p.value; break;
		case OPT_KEY: a->o.tls_key = p.value; break;
		case OPT_SELF: a->o.self_signed = 1; break;
		case 'c': a->o.config_path = p.value; break;
		case OPT_POLICY_KEY: a->o.policy_key = p.value; break;
		case OPT_METRICS: a->o.metrics_addr = p.value; break;
		case OPT_SERVICE: a->o.service_name = p.value; break;
		case OPT_LOOKUPS: a->lookups = 1; break;
		case OPT_EVENTS: a->events = 1; break;
		case OPT_KUBECONFIG: a->co.kubeconfig = p.value; break;
		case OPT_LOG:
			if (cli_choice(&p) < 0 || log_level_parse(p.value, &a->level) != 0)
				goto stop;
			break;
		case OPT_LOG_FORMAT:
			if (cli_choice(&p) < 0 || log_format_parse(p.value, &a->format) != 0)
				goto stop;
			break;
		case CLI_OPERAND:
			*code = cli_usage(cmd, "unexpected argument \"%s\"", p.value);
			return -1;
		default:
			goto stop;
		}
	}
	/* --kubeconfig alone asks for what it first served: the claim lookups. */
	if (a->co.kubeconfig != NULL && !a->events)
		a->lookups = 1;
	/* A usage error, worded as every command's, before anything is logged. */
	if (a->o.self_signed ? (a->o.tls_cert != NULL || a->o.tls_key != NULL)
			     : (a->o.tls_cert == NULL || a->o.tls_key == NULL)) {
		*code = cli_usage(cmd, a->o.self_signed ? "--self-signed takes no --tls-cert or --tls-key"
				  : "give --tls-cert and --tls-key, or --self-signed");
		return -1;
	}
	return 0;
stop:
	*code = cli_stop(&p);
	return -1;
}

/* Wiring only: the flags, the log, the claim caches and the Event publisher, then the server until it stops. */
static int run_serve(const struct cli_command *cmd, int argc, char **argv)
{
	struct serve_args a = { .lookups = 0 };
	struct claims *claims = NULL;
	struct events *events = NULL;
	struct error err = { 0 };
	int rc;

	if (serve_parse(cmd, argc, argv, &a, &rc) != 0)
		return rc;
	log_set_format(a.format);
	log_set_level(a.level);
	/* A lookup configuration that cannot work is a start-up error; an unreachable API server is not. */
	if (a.lookups && (claims = claims_start(&a.co, &err)) == NULL) {
		log_msg(LOG_LEVEL_ERROR, "cannot start claim lookups", "error", err.msg, LOG_END);
		return cli_exit_code(&err);
	}
	if (a.events && (events = events_start(&(struct events_options){ a.co.kubeconfig, a.co.sa_dir }, &err)) == NULL) {
		log_msg(LOG_LEVEL_ERROR, "cannot start refusal events", "error", err.msg, LOG_END);
		claims_free(claims);
		return cli_exit_code(&err);
	}
	a.o.claims = claims;
	a.o.events = events;
	rc = server_run(&a.o, &err);
	events_free(events);
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
