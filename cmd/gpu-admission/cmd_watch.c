/* gpu-admission watch: the cost report kept live from the API server. Parses flags, wires pkg/report. */
#include <signal.h>
#include <stdio.h>
#include <unistd.h>

#include "commands.h"
#include "base/log.h"
#include "report/report_serve.h"
#include "report/report_watch.h"

enum { OPT_ADDR = CLI_LONG_ONLY, OPT_KUBECONFIG, OPT_INTERVAL, OPT_MAX_PODS, OPT_LOG, OPT_LOG_FORMAT,
       OPT_POLICY_REPORTS, OPT_EVENTS, OPT_MAX_RESULTS };

#define WATCH_DEFAULT_ADDR ":9090"

/* The defaults the help states, held to the watch's own (pkg/report/report_watch.h). */
_Static_assert(REPORT_WATCH_INTERVAL_S == 30, "watch --help: --interval default 30");
_Static_assert(REPORT_WATCH_INTERVAL_MAX_S == 3600, "watch --help: --interval at most 3600");
_Static_assert(REPORT_WATCH_PODS_MAX == 1000000, "watch --help: --max-pods default 1000000");

static const struct cli_option watch_options[] = {
	CLI_OPTION_CONFIG,
	{ "kubeconfig", OPT_KUBECONFIG, "FILE", "the API server and identity: the current context (client\n"
						"certificate or token); default: the first file of\n"
						"$KUBECONFIG that exists, else the pod's service account,\n"
						"else ~/.kube/config", 0 },
	{ "addr", OPT_ADDR, "HOST:PORT", "listen address, plain HTTP (default " WATCH_DEFAULT_ADDR "; port 0: any free\n"
					 "port, logged)", 0 },
	{ "interval", OPT_INTERVAL, "SECONDS", "rebuild the report from the model this often (default 30,\n"
					      "at most 3600): /metrics follows the cluster within it", 0 },
	{ "max-pods", OPT_MAX_PODS, "N", "pods held at most; more are refused and counted (default\n"
					 "1000000)", 0 },
	{ "policy-reports", OPT_POLICY_REPORTS, NULL, "each interval, a PolicyReport (wgpolicyk8s.io/v1alpha2) per\n"
	  "namespace with CPU pods on GPU nodes or Pending GPU pods, as report\n"
	  "--publish writes it (needs write access: the chart's\n"
	  "watch.policyReports.enabled)", 0 },
	{ "events", OPT_EVENTS, NULL, "each interval, a Warning Event on GPU pods Pending for a reason\n"
	  "the report knows, rate-limited (watch.events.enabled)", 0 },
	{ "max-results", OPT_MAX_RESULTS, "N", "results in one PolicyReport, 1 to 300 (default 100)", 0 },
	{ "log-level", OPT_LOG, "debug|info|warn|error", "the least important lines logged (default info)", 0 },
	{ "log-format", OPT_LOG_FORMAT, "text|json", "log lines as text or JSON (default: text when stderr is\n"
						   "a terminal, JSON otherwise)", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

/* Waits for SIGTERM or SIGINT (blocked before any thread starts, so that only this thread takes them). */
static void wait_for_stop(const sigset_t *sigs)
{
	int sig;

	while (sigwait(sigs, &sig) != 0)
		;
	log_msg(LOG_LEVEL_INFO, "stopping", "signal", sig == SIGTERM ? "SIGTERM" : "SIGINT", LOG_END);
}

static int run_watch(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	struct report_watch_options o = { 0 };
	struct report_publish_options po = { 0 };
	struct report_watch *w = NULL;
	struct report_serve *s = NULL;
	struct config *cfg = NULL;
	const char *config_path = NULL, *addr = WATCH_DEFAULT_ADDR;
	struct error err = { 0 };
	enum log_level level = LOG_LEVEL_INFO;
	enum log_format format = isatty(STDERR_FILENO) ? LOG_FORMAT_TEXT : LOG_FORMAT_JSON;
	unsigned long long n;
	sigset_t sigs;
	int c, rc = EXIT_OK;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': config_path = p.value; break;
		case OPT_KUBECONFIG: o.kubeconfig = p.value; break;
		case OPT_ADDR: addr = p.value; break;
		case OPT_INTERVAL:
			if (cli_number(&p, 1, REPORT_WATCH_INTERVAL_MAX_S, &n) != 0)
				return cli_stop(&p);
			o.interval_s = (unsigned)n;
			break;
		case OPT_MAX_PODS:
			if (cli_number(&p, 1, 100000000, &n) != 0)
				return cli_stop(&p);
			o.max_pods = (size_t)n;
			break;
		case OPT_POLICY_REPORTS: po.policy_reports = 1; break;
		case OPT_EVENTS: po.events = 1; break;
		case OPT_MAX_RESULTS:
			if (cli_number(&p, 1, REPORT_PUBLISH_RESULTS_LIMIT, &n) != 0)
				return cli_stop(&p);
			po.results_max = (size_t)n;
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
	log_set_format(format);
	log_set_level(level);
	if ((cfg = cli_load_config(config_path, &err)) == NULL)
		return cli_fail(cmd, &err);
	o.cfg = cfg;
	o.publish = &po;
	sigemptyset(&sigs);
	sigaddset(&sigs, SIGTERM);
	sigaddset(&sigs, SIGINT);
	pthread_sigmask(SIG_BLOCK, &sigs, NULL);
	/* A configuration that cannot work is a start-up error; an unreachable API server is not. */
	if ((w = report_watch_start(&o, &err)) == NULL || (s = report_serve_start(w, addr, &err)) == NULL) {
		log_msg(LOG_LEVEL_ERROR, "cannot start the watch", "error", err.msg, LOG_END);
		rc = cli_exit_code(&err);
	} else {
		wait_for_stop(&sigs);
	}
	report_serve_free(s);
	report_watch_free(w);
	config_free(cfg);
	return rc;
}

const struct cli_command cmd_watch = {
	.name = "watch",
	.summary = "the cost report kept live from the API, on /metrics",
	.usage = "[OPTIONS]",
	.description =
		"Lists and watches the cluster's Nodes and Pods, and its ResourceSlices and\n"
		"ResourceClaims when the API server serves DRA (resource.k8s.io v1, v1beta2 or\n"
		"v1beta1; without it, nodes and pods only), read-only (get, list, watch), and\n"
		"keeps the cost report's model up to date event by event; a relist after\n"
		"an outage forgets what was deleted meanwhile. Each --interval the report is\n"
		"rebuilt from the model: the figures of report over kubectl get\n"
		"nodes,pods,resourceslices,resourceclaims -A -o json. Serves over plain HTTP:\n"
		"GET /metrics (the gauges of report -o prometheus, gpu_admission_report_*, and\n"
		"the watch's own, gpu_admission_watch_*), /healthz, /readyz (once every\n"
		"resource served is listed and a report built), and POST /what-if with a\n"
		"policy file as the body (at most 1 MiB): report --what-if of the live state,\n"
		"?output=json (default), text or prometheus; of the running pods it judges\n"
		"those the model keeps the policy's fields of, GPU pods and CPU pods on GPU\n"
		"nodes (not CPU-only DaemonSet pods and CPU pods on CPU nodes: report\n"
		"--what-if over a snapshot judges those too). With --policy-reports or\n"
		"--events it also writes each report as report --publish does\n"
		"(PolicyReports, Events). SIGTERM or SIGINT stops it.",
	.options = watch_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "stopped cleanly after SIGTERM or SIGINT" },
		{ EXIT_USAGE, "usage error, or it cannot start: an invalid --config, a kubeconfig it cannot use, "
			      "no API server configuration (--kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config), the address in use" },
		{ 0, NULL },
	},
	.examples =
		"gpu-admission watch -c policy.yaml --kubeconfig ~/.kube/config --addr :9090\n"
		"curl -s 127.0.0.1:9090/metrics | grep gpu_admission_report_idle\n"
		"curl -s --data-binary @new-policy.yaml '127.0.0.1:9090/what-if?output=text'",
	.run = run_watch,
};
