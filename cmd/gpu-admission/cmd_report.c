/*
 * gpu-admission report: the GPU cost report from a kubectl snapshot of nodes
 * and pods, or (--publish) from the API server, published once as
 * PolicyReports and Events (pkg/report/report_publish.h).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "commands.h"
#include "k8s/kubeclient.h"
#include "report/report.h"
#include "report/report_model.h"
#include "report/report_publish.h"

enum { OPT_FAIL_ON = CLI_LONG_ONLY, OPT_NO_COLOR, OPT_WHAT_IF, OPT_PUBLISH, OPT_KUBECONFIG, OPT_POLICY_REPORTS,
       OPT_EVENTS, OPT_MAX_RESULTS };
enum output { OUT_TEXT, OUT_JSON, OUT_PROMETHEUS, OUT_YAML };

static const struct cli_option report_options[] = {
	CLI_OPTION_CONFIG,
	{ "output", 'o', "text|json|prometheus|yaml", "report format (default text; yaml is the json document)", 0 },
	{ "fail-on", OPT_FAIL_ON, "LIST",
	  "what makes the exit code 1, comma-separated: reject (default: a\n"
	  "workload or CPU pod on a GPU node the policy rejects), mutate, leak,\n"
	  "pending, idle, misconfig, none", 0 },
	{ "what-if", OPT_WHAT_IF, "FILE",
	  "also judge the snapshot by the policy in FILE: the Pending GPU pods it\n"
	  "would place and where, the running pods it would now refuse, the idle\n"
	  "GPU cost once those pods run", 0 },
	{ "publish", OPT_PUBLISH, NULL, "read nodes and pods from the API server instead of FILEs, and\n"
	  "publish the report once: --policy-reports, --events or both", 0 },
	{ "kubeconfig", OPT_KUBECONFIG, "FILE", "the API server and identity for --publish (default: the first\n"
	  "file of $KUBECONFIG that exists, else the pod's service account,\n"
	  "else ~/.kube/config)", 0 },
	{ "policy-reports", OPT_POLICY_REPORTS, NULL, "with --publish: a PolicyReport (wgpolicyk8s.io/v1alpha2) per\n"
	  "namespace with CPU pods on GPU nodes or Pending GPU pods; deleted\n"
	  "when it has none. Skipped when the CRD is not installed", 0 },
	{ "events", OPT_EVENTS, NULL, "with --publish: a Warning Event on each GPU pod Pending for a\n"
	  "reason the report knows (rate-limited)", 0 },
	{ "max-results", OPT_MAX_RESULTS, "N", "results in one PolicyReport, 1 to 300 (default 100); the rest\n"
	  "are counted", 0 },
	{ "no-color", OPT_NO_COLOR, NULL, "no colour even on a terminal (NO_COLOR is honoured too)", 0 },
	{ "no-colour", OPT_NO_COLOR, NULL, "", CLI_HIDDEN },
	{ NULL, 0, NULL, NULL, 0 },
};

/* --publish's rules: no FILE, something to publish, no --what-if; the publish options only with it. 0 or EXIT_USAGE. */
static int publish_usage(const struct cli_command *cmd, int publish, size_t n_paths,
			 const struct report_publish_options *po, const char *kubeconfig, const char *whatif)
{
	if (!publish && (po->policy_reports || po->events || po->results_max || kubeconfig))
		return cli_usage(cmd, "--policy-reports, --events, --max-results and --kubeconfig go with --publish");
	if (!publish && n_paths == 0)
		return cli_usage(cmd, "no FILE given (kubectl get nodes,pods -A -o json output, or - for stdin)");
	if (publish && n_paths > 0)
		return cli_usage(cmd, "--publish reads the cluster from the API server: no FILE");
	if (publish && !po->policy_reports && !po->events)
		return cli_usage(cmd, "--publish needs --policy-reports, --events or both");
	if (publish && whatif != NULL)
		return cli_usage(cmd, "--publish does not take --what-if");
	return 0;
}

/* A listed Node or Pod (a LIST's items carry no kind) applied to the model. */
struct listed {
	struct report_model *m;
	const char *kind;
	struct error *err;
};

static int listed_item(void *ctx, json_t *item)
{
	struct listed *l = ctx;

	if (json_object_set_new(item, "kind", json_string(l->kind)) != 0) {
		error_set(l->err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return report_model_apply(l->m, REPORT_EVENT_ADDED, item, l->err);
}

/* r = the report of the cluster's nodes and pods as listed now through k. */
static int read_cluster(const struct config *cfg, struct kube_client *k, struct report *r, struct error *err)
{
	struct report_model *m = report_model_new(cfg, err);
	struct listed l = { m, "Node", err };
	char rv[KUBE_RV_MAX];
	long status = 0;
	int rc = -1;

	if (m == NULL)
		return -1;
	if (kube_list(k, "/api/v1/nodes", listed_item, &l, rv, sizeof rv, &status, err) == 0 &&
	    (l.kind = "Pod", kube_list(k, "/api/v1/pods", listed_item, &l, rv, sizeof rv, &status, err)) == 0)
		rc = report_model_report(m, r, err);
	report_model_free(m);
	return rc;
}

/* --publish: the cluster read, its report published once; what was written on stderr. */
static int publish_cluster(const struct config *cfg, const char *kubeconfig, const struct report_publish_options *po,
			   struct report *r, struct error *err)
{
	struct kube_config kc;
	struct kube_client *k = NULL;
	struct report_publisher *pub = NULL;
	struct report_publish_stats st;
	char from[KUBE_FILE_PATH_MAX + 128];
	int rc = -1;

	if (kube_config_find(&kc, kubeconfig, NULL, from, sizeof from, err) != 0 ||
	    kube_global_init(err) != 0 || (k = kube_client_new(&kc, NULL, err)) == NULL)
		goto out;
	if (kubeconfig == NULL)
		fprintf(stderr, "gpu-admission report: API server %s, from %s\n", kc.server, from);
	if (read_cluster(cfg, k, r, err) != 0 || (pub = report_publisher_new(po, err)) == NULL)
		goto out;
	rc = report_publisher_run(pub, k, r, time(NULL), err);
	report_publisher_stats(pub, &st);
	fprintf(stderr, "gpu-admission report: published: %lu PolicyReports applied, %lu unchanged, %lu deleted%s; "
		"%lu Events created, %lu updated, %lu rate-limited, %lu for pods gone; %lu failed\n", st.reports_applied,
		st.reports_unchanged, st.reports_deleted, st.reports_skipped_no_crd ? " (PolicyReport CRD absent: skipped)" : "",
		st.events_created, st.events_updated, st.events_limited, st.events_pod_gone, st.errors);
out:
	report_publisher_free(pub);
	kube_client_free(k);
	kube_config_free(&kc);
	return rc;
}

/* r in the chosen output on stdout, its input errors on stderr. 0, or -1 with err. */
static int write_report(const struct report *r, enum output out, int code, int no_color, struct error *err)
{
	int wrote;

	/* Input errors on stderr, as every command words them; the report counts them. */
	report_write_problems(r, stderr, "gpu-admission report");
	if (out == OUT_JSON || out == OUT_YAML)
		wrote = report_json_write(r, stdout, code, out == OUT_JSON ? 'j' : 'y');
	else if (out == OUT_PROMETHEUS)
		wrote = report_prom_write(r, stdout);
	else
		wrote = report_text_write_fitted(r, stdout, !no_color && getenv("NO_COLOR") == NULL && isatty(STDOUT_FILENO),
						 cli_text_columns(stdout, SIZE_MAX));
	if (wrote != 0 || cli_flush_stdout(err) != 0) {
		error_set(err, ERROR_SYSTEM, "writing the report failed");
		return -1;
	}
	return 0;
}

static int run_report(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	const char *config_path = NULL, *whatif_path = NULL;
	const char **paths = calloc((size_t)argc + 1, sizeof *paths);
	size_t n_paths = 0, i;
	enum output out = OUT_TEXT;
	unsigned fail_on = REPORT_FAIL_REJECT;
	struct config *cfg = NULL, *whatif = NULL;
	struct error err = { 0 };
	struct report r;
	struct report_publish_options po = { 0 };
	const char *kubeconfig = NULL;
	unsigned long long n;
	int c, no_color = 0, rc = EXIT_USAGE, code, publish = 0;

	memset(&r, 0, sizeof r);
	if (paths == NULL) {
		error_set(&err, ERROR_NOMEM, "out of memory");
		return cli_fail(cmd, &err);
	}
	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': config_path = p.value; break;
		case OPT_NO_COLOR: no_color = 1; break;
		case OPT_WHAT_IF: whatif_path = p.value; break;
		case OPT_PUBLISH: publish = 1; break;
		case OPT_KUBECONFIG: kubeconfig = p.value; break;
		case OPT_POLICY_REPORTS: po.policy_reports = 1; break;
		case OPT_EVENTS: po.events = 1; break;
		case OPT_MAX_RESULTS:
			if (cli_number(&p, 1, REPORT_PUBLISH_RESULTS_LIMIT, &n) != 0)
				goto stop;
			po.results_max = (size_t)n;
			break;
		case 'o':
			if ((c = cli_choice(&p)) < 0)
				goto stop;
			out = (enum output)c;
			break;
		case OPT_FAIL_ON:
			if (report_fail_on_parse(p.value, &fail_on) != 0) {
				rc = cli_usage(cmd, "--fail-on takes a comma-separated list of reject, mutate, leak, "
					       "pending, idle, misconfig or none, not \"%s\"", p.value);
				goto out;
			}
			break;
		case CLI_OPERAND: paths[n_paths++] = p.value; break;
		default: goto stop;
		}
	}
	if ((rc = publish_usage(cmd, publish, n_paths, &po, kubeconfig, whatif_path)) != 0)
		goto out;
	rc = EXIT_USAGE;
	if (cli_inputs_readable(paths, n_paths, &err) != 0 || (cfg = cli_load_config(config_path, &err)) == NULL)
		goto fail;
	if (publish) {
		if (publish_cluster(cfg, kubeconfig, &po, &r, &err) != 0)
			goto fail;
	} else {
		if (report_init(&r, cfg, &err) != 0)
			goto fail;
		if (whatif_path != NULL) {
			if ((whatif = cli_load_config(whatif_path, &err)) == NULL)
				goto fail;
			report_whatif_set(&r, whatif, whatif_path);
		}
		for (i = 0; i < n_paths; i++)
			if (report_input_path(&r, paths[i], &err) != 0)
				goto fail;
		if (report_finish(&r, &err) != 0)
			goto fail;
	}
	code = report_exit_code(&r, fail_on);
	if (write_report(&r, out, code, no_color, &err) != 0)
		goto fail;
	rc = code;
	goto out;
stop:
	rc = cli_stop(&p);
	goto out;
fail:
	rc = cli_fail(cmd, &err);
out:
	free(paths);
	report_free(&r);
	config_free(whatif);
	config_free(cfg);
	return rc;
}

const struct cli_command cmd_report = {
	.name = "report",
	.summary = "GPU cost report of a cluster: idle, leaks, Pending",
	.usage = "[OPTIONS] (FILE... | --publish)",
	.description =
		"What the GPU pools are doing and what it costs, from a snapshot of the\n"
		"cluster: per pool, GPU nodes, GPUs allocatable and requested, idle nodes and\n"
		"their cost (pools[].pricePerNodeHour); CPU pods on GPU nodes; GPU pods\n"
		"Pending and why; pool misconfiguration; and the policy's verdicts on\n"
		"workloads in the input.\n"
		"\n"
		"FILE: kubectl get nodes,pods -A -o json (a List, read as a stream), or nodes\n"
		"and pods in two files, or -o yaml output (read whole, at most 256 MiB); - is\n"
		"stdin. Input errors go to stderr; the report counts them.\n"
		"\n"
		"--publish reads nodes and pods from the API server instead, prints the report\n"
		"as usual, and writes it once where people already look: PolicyReports\n"
		"(--policy-reports; when the wgpolicyk8s.io CRD is installed) and Events on\n"
		"Pending GPU pods (--events). What it wrote goes to stderr.",
	.options = report_options,
	.operands = "FILE",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "nothing --fail-on names was found" },
		{ EXIT_FINDING, "something --fail-on names was found (by default: a would-be rejection)" },
		{ EXIT_USAGE, "usage or input errors (unreadable files, input that is not nodes and pods: "
			      "no Node at all, a field of the wrong type, a bad GPU count; an invalid --config); "
			      "with --publish, the API server refused or could not be reached" },
		{ 0, NULL },
	},
	.examples =
		"kubectl get nodes,pods -A -o json | gpu-admission report -c policy.yaml -\n"
		"gpu-admission report -o prometheus --fail-on none nodes.json pods.json\n"
		"gpu-admission report --publish --kubeconfig kubeconfig --events",
	.run = run_report,
};
