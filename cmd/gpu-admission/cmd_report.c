/* gpu-admission report: the GPU cost report from a kubectl snapshot of nodes and pods. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "commands.h"
#include "report.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission report [OPTIONS] FILE... | -\n\n"
		"What the GPU pools are doing and what it costs, from a snapshot of the cluster:\n"
		"per pool, GPU nodes, GPUs allocatable and requested, idle nodes and their cost\n"
		"(pools[].pricePerNodeHour); CPU pods on GPU nodes; GPU pods Pending and why; pool\n"
		"misconfiguration; and the policy's verdicts on workloads in the input.\n\n"
		"  -c, --config FILE       policy file (default: the embedded policy)\n"
		"  -o, --output text|json|prometheus\n"
		"                          report format (default text)\n"
		"      --fail-on LIST      what makes the exit code 1, comma-separated: reject\n"
		"                          (default: a workload or CPU pod on a GPU node the policy\n"
		"                          rejects), mutate, leak, pending, idle, misconfig, none\n"
		"      --no-color          no colour even on a terminal (NO_COLOR is honoured too)\n"
		"  -h, --help              this help\n\n"
		"Input: kubectl get nodes,pods -A -o json (a List, read as a stream), or nodes and\n"
		"pods in two files, or -o yaml output (read whole, at most 256 MiB); '-' is stdin.\n\n"
		"Example: kubectl get nodes,pods -A -o json | gpu-admission report --config policy.yaml -\n\n"
		"Exit: 0 nothing in --fail-on found, 1 found, 2 usage or input errors.\n");
}

int cmd_report(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "no-color", no_argument, NULL, 'N' },
		{ "no-colour", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *output = "text";
	unsigned fail_on = REPORT_FAIL_REJECT;
	struct config *cfg = NULL;
	struct error err = { 0 };
	struct report r;
	int c, i, no_color = 0, rc = EXIT_USAGE, wrote, code;

	memset(&r, 0, sizeof r);
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'o': output = optarg; break;
		case 'N': no_color = 1; break;
		case 'f':
			if (report_fail_on_parse(optarg, &fail_on) != 0)
				return cli_fail("report: --fail-on takes a list of reject, mutate, leak, pending, "
						"idle, misconfig, none");
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (strcmp(output, "text") != 0 && strcmp(output, "json") != 0 && strcmp(output, "prometheus") != 0)
		return cli_fail("report: -o takes text, json or prometheus");
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cfg = cli_load_config(config_path, &err);
	if (cfg == NULL || report_init(&r, cfg, &err) != 0)
		goto fail;
	for (i = optind; i < argc; i++)
		if (report_input_path(&r, argv[i], &err) != 0)
			goto fail;
	if (report_finish(&r, &err) != 0)
		goto fail;
	code = report_exit_code(&r, fail_on);
	if (strcmp(output, "json") == 0)
		wrote = report_json_write(&r, stdout, code);
	else if (strcmp(output, "prometheus") == 0)
		wrote = report_prom_write(&r, stdout);
	else
		wrote = report_text_write(&r, stdout, !no_color && getenv("NO_COLOR") == NULL && isatty(STDOUT_FILENO));
	if (wrote != 0 || fflush(stdout) != 0) {
		error_set(&err, ERROR_SYSTEM, "writing the report failed");
		goto fail;
	}
	rc = code;
	goto out;
fail:
	cli_fail(err.msg);
	rc = EXIT_USAGE;
out:
	report_free(&r);
	config_free(cfg);
	return rc;
}
