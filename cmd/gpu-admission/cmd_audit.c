/* gpu-admission audit: the policy's dry run over manifest files, directories or stdin. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit.h"
#include "commands.h"


static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission audit [OPTIONS] PATH...\n\n"
		"Dry-runs the admission policy over Kubernetes manifests: every pod template in\n"
		"PATH (files; directories, recursively: *.yaml *.yml *.json; '-' for stdin) is\n"
		"reported as ok, mutate, reject, exempt or warn, as enforce mode would decide.\n\n"
		"  -c, --config FILE       policy file (default: the embedded policy)\n"
		"  -o, --output text|json  report format (default text)\n"
		"      --fix               write the manifests with the mutations applied to stdout\n"
		"                          (the report then goes to stderr)\n"
		"      --in-place          with --fix: rewrite the changed files instead\n"
		"      --fail-on reject|mutate\n"
		"                          exit 1 on would-be rejections (default), or on mutations too\n"
		"      --no-color          no colour even on a terminal (NO_COLOR is honoured too)\n"
		"  -h, --help              this help\n\n"
		"Example: kubectl get pods,deploy,sts,ds,job,cronjob -A -o json | gpu-admission audit -\n\n"
		"Exit: 0 nothing would be rejected, 1 something would be rejected (or mutated, with\n"
		"      --fail-on mutate), 2 usage or input errors (unreadable files, invalid YAML).\n");
}

int cmd_audit(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "output", required_argument, NULL, 'o' },
		{ "fix", no_argument, NULL, 'F' },
		{ "in-place", no_argument, NULL, 'I' },
		{ "fail-on", required_argument, NULL, 'f' },
		{ "no-color", no_argument, NULL, 'N' },
		{ "no-colour", no_argument, NULL, 'N' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL, *output = "text";
	struct config *cfg = NULL;
	struct error err = { 0 };
	struct audit a;
	struct audit_walk w;
	FILE *report;
	int c, i, no_color = 0, fail_on_mutate = 0, rc = EXIT_USAGE, json, color;

	memset(&a, 0, sizeof a);
	memset(&w, 0, sizeof w);
	optind = 1;
	while ((c = getopt_long(argc, argv, "c:o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'o': output = optarg; break;
		case 'F': w.fix = 1; break;
		case 'I': w.in_place = 1; break;
		case 'N': no_color = 1; break;
		case 'f':
			if (strcmp(optarg, "reject") == 0)
				fail_on_mutate = 0;
			else if (strcmp(optarg, "mutate") == 0)
				fail_on_mutate = 1;
			else
				return cli_fail("audit: --fail-on takes reject or mutate");
			break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (strcmp(output, "text") != 0 && strcmp(output, "json") != 0)
		return cli_fail("audit: -o takes text or json");
	json = strcmp(output, "json") == 0;
	if (optind >= argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if (w.in_place && !w.fix)
		return cli_fail("audit: --in-place needs --fix");
	for (i = optind; i < argc; i++)
		if (w.in_place && strcmp(argv[i], "-") == 0)
			return cli_fail("audit: --in-place cannot rewrite stdin; use --fix alone");

	cfg = cli_load_config(config_path, &err);
	if (cfg == NULL)
		goto fail;
	if (audit_init(&a, cfg, &err) != 0)
		goto fail;
	a.fail_on_mutate = fail_on_mutate;
	w.a = &a;
	w.out = stdout;
	/* The report goes to stdout, or to stderr when stdout carries the --fix output. */
	report = w.fix && !w.in_place ? stderr : stdout;
	for (i = optind; i < argc; i++)
		if (audit_path(&w, argv[i], &err) != 0)
			goto fail;
	color = !json && !no_color && getenv("NO_COLOR") == NULL && isatty(fileno(report));
	if ((json ? audit_write_json(&a, report) : audit_write_text(&a, report, color)) != 0 ||
	    fflush(stdout) != 0) {
		error_set(&err, ERROR_SYSTEM, "writing the report failed");
		goto fail;
	}
	rc = audit_exit_code(&a);
	goto out;
fail:
	cli_fail(err.msg);
	rc = EXIT_USAGE;
out:
	audit_free(&a);
	config_free(cfg);
	return rc;
}
