/* gpu-admission report: the GPU cost report from a kubectl snapshot of nodes and pods. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "report/report.h"

enum { OPT_FAIL_ON = CLI_LONG_ONLY, OPT_NO_COLOR, OPT_WHAT_IF };
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
	{ "no-color", OPT_NO_COLOR, NULL, "no colour even on a terminal (NO_COLOR is honoured too)", 0 },
	{ "no-colour", OPT_NO_COLOR, NULL, "", CLI_HIDDEN },
	{ NULL, 0, NULL, NULL, 0 },
};

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
	int c, no_color = 0, rc = EXIT_USAGE, wrote, code;

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
	if (n_paths == 0) {
		rc = cli_usage(cmd, "no FILE given (kubectl get nodes,pods -A -o json output, or - for stdin)");
		goto out;
	}
	if ((cfg = cli_load_config(config_path, &err)) == NULL || report_init(&r, cfg, &err) != 0)
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
	code = report_exit_code(&r, fail_on);
	/* Input errors on stderr, as every command words them; the report counts them. */
	report_write_problems(&r, stderr, "gpu-admission report");
	if (out == OUT_JSON || out == OUT_YAML)
		wrote = report_json_write(&r, stdout, code, out == OUT_JSON ? 'j' : 'y');
	else if (out == OUT_PROMETHEUS)
		wrote = report_prom_write(&r, stdout);
	else
		wrote = report_text_write(&r, stdout, !no_color && getenv("NO_COLOR") == NULL && isatty(STDOUT_FILENO));
	if (wrote != 0 || cli_flush_stdout(&err) != 0) {
		error_set(&err, ERROR_SYSTEM, "writing the report failed");
		goto fail;
	}
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
	.usage = "[OPTIONS] FILE...",
	.description =
		"What the GPU pools are doing and what it costs, from a snapshot of the\n"
		"cluster: per pool, GPU nodes, GPUs allocatable and requested, idle nodes and\n"
		"their cost (pools[].pricePerNodeHour); CPU pods on GPU nodes; GPU pods\n"
		"Pending and why; pool misconfiguration; and the policy's verdicts on\n"
		"workloads in the input.\n"
		"\n"
		"FILE: kubectl get nodes,pods -A -o json (a List, read as a stream), or nodes\n"
		"and pods in two files, or -o yaml output (read whole, at most 256 MiB); - is\n"
		"stdin. Input errors go to stderr; the report counts them.",
	.options = report_options,
	.operands = "FILE",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "nothing --fail-on names was found" },
		{ EXIT_FINDING, "something --fail-on names was found (by default: a would-be rejection)" },
		{ EXIT_USAGE, "usage or input errors (unreadable files, input that is not nodes and pods: "
			      "no Node at all, a field of the wrong type, a bad GPU count; an invalid --config)" },
		{ 0, NULL },
	},
	.examples =
		"kubectl get nodes,pods -A -o json | gpu-admission report -c policy.yaml -\n"
		"gpu-admission report -o prometheus --fail-on none nodes.json pods.json",
	.run = run_report,
};
