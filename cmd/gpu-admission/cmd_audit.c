/* gpu-admission audit: the policy's dry run over manifest files, directories or stdin. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "audit/audit.h"
#include "commands.h"

enum { OPT_FIX = CLI_LONG_ONLY, OPT_IN_PLACE, OPT_FAIL_ON, OPT_NO_COLOR };
enum output { OUT_TEXT, OUT_JSON, OUT_YAML, OUT_WIDE };

static const struct cli_option audit_options[] = {
	CLI_OPTION_CONFIG,
	{ "output", 'o', "text|json|yaml|wide", "report format (default text: columns, each reason on an\n"
						 "indented line, read at 100 columns, or the terminal's width\n"
						 "when narrower); wide: each finding on one line, files named\n"
						 "whole; json, yaml: one document", 0 },
	{ "quiet", 'q', NULL, "only the findings that need action (mutate, reject, warn):\n"
			      "no summary, no notes; errors are still reported", 0 },
	{ "fix", OPT_FIX, NULL, "write the manifests with the mutations applied, and CPU-only\n"
				"templates rejected for their routes to GPU nodes without\n"
				"them, to stdout (the report then goes to stderr)", 0 },
	{ "in-place", OPT_IN_PLACE, NULL, "with --fix: rewrite the changed files instead", 0 },
	{ "fail-on", OPT_FAIL_ON, "reject|mutate", "exit 1 on would-be rejections (default), or on mutations too", 0 },
	{ "no-color", OPT_NO_COLOR, NULL, "no colour even on a terminal (NO_COLOR is honoured too)", 0 },
	{ "no-colour", OPT_NO_COLOR, NULL, "", CLI_HIDDEN },
	{ NULL, 0, NULL, NULL, 0 },
};

/* What audit's command line asks for. */
struct audit_args {
	const char *config_path;
	const char **paths;  /* the operands: argc + 1 of them (new: free()) */
	size_t n_paths;
	enum output out;
	int no_color, quiet, fail_on_mutate;
};

/*
 * The options and operands into *args and w's --fix/--in-place: 1 when the
 * command goes on, 0 when it stops here with *rc (usage, --help).
 */
static int parse_audit(const struct cli_command *cmd, int argc, char **argv, struct audit_args *args,
		       struct audit_walk *w, int *rc)
{
	struct cli_parser p;
	size_t i;
	int c;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': args->config_path = p.value; break;
		case 'q': args->quiet = 1; break;
		case OPT_FIX: w->fix = 1; break;
		case OPT_IN_PLACE: w->in_place = 1; break;
		case OPT_NO_COLOR: args->no_color = 1; break;
		case 'o':
			if ((c = cli_choice(&p)) < 0)
				goto stop;
			args->out = (enum output)c;
			break;
		case OPT_FAIL_ON:
			if ((c = cli_choice(&p)) < 0)
				goto stop;
			args->fail_on_mutate = c == 1;
			break;
		case CLI_OPERAND: args->paths[args->n_paths++] = p.value; break;
		default: goto stop;
		}
	}
	if (args->n_paths == 0) {
		*rc = cli_usage(cmd, "no PATH given (a file, a directory, or - for stdin)");
		return 0;
	}
	if (w->in_place && !w->fix) {
		*rc = cli_usage(cmd, "--in-place needs --fix");
		return 0;
	}
	for (i = 0; i < args->n_paths; i++) {
		if (w->in_place && strcmp(args->paths[i], "-") == 0) {
			*rc = cli_usage(cmd, "--in-place cannot rewrite stdin; use --fix alone");
			return 0;
		}
	}
	return 1;
stop:
	*rc = cli_stop(&p);
	return 0;
}

/* The report in the format asked for. */
static int write_report(struct audit *a, const struct audit_args *args, const struct audit_walk *w, FILE *report,
			struct error *err)
{
	unsigned flags = 0;

	if (args->out == OUT_TEXT || args->out == OUT_WIDE) {
		if (args->out == OUT_WIDE)
			flags |= AUDIT_TEXT_WIDE;
		if (!args->no_color && getenv("NO_COLOR") == NULL && isatty(fileno(report)))
			flags |= AUDIT_TEXT_COLOR;
		if (args->quiet)
			flags |= AUDIT_TEXT_QUIET;
		if (w->in_place)
			flags |= AUDIT_TEXT_REWRITE;
	}
	if ((args->out == OUT_TEXT || args->out == OUT_WIDE ? audit_write_text(a, report, flags, cli_text_columns(report, AUDIT_TEXT_WIDTH))
	     : audit_write_doc(a, report, args->out == OUT_JSON ? 'j' : 'y')) != 0 ||
	    fflush(report) != 0 || cli_flush_stdout(err) != 0) {
		error_set(err, ERROR_SYSTEM, "writing the report failed");
		return -1;
	}
	return 0;
}

static int run_audit(const struct cli_command *cmd, int argc, char **argv)
{
	struct audit_args args = { .out = OUT_TEXT };
	struct config *cfg = NULL;
	struct error err = { 0 };
	struct audit a;
	struct audit_walk w;
	FILE *report;
	size_t i;
	int rc = EXIT_USAGE;

	memset(&a, 0, sizeof a);
	memset(&w, 0, sizeof w);
	if ((args.paths = calloc((size_t)argc + 1, sizeof *args.paths)) == NULL) {
		error_set(&err, ERROR_NOMEM, "out of memory");
		return cli_fail(cmd, &err);
	}
	if (!parse_audit(cmd, argc, argv, &args, &w, &rc))
		goto out;
	if (cli_inputs_readable(args.paths, args.n_paths, &err) != 0)
		goto fail;
	if ((cfg = cli_load_config(args.config_path, &err)) == NULL || audit_init(&a, cfg, &err) != 0)
		goto fail;
	a.fail_on_mutate = args.fail_on_mutate;
	a.drop_patches = args.out == OUT_TEXT;
	w.a = &a;
	w.out = stdout;
	/* The report goes to stdout, or to stderr when stdout carries the --fix output. */
	report = w.fix && !w.in_place ? stderr : stdout;
	/*
	 * DRA claims resolve against the ResourceClaimTemplates and ResourceClaims of every
	 * input, read first; stdin can be read once, so audit_input() collects its own.
	 */
	a.claims_collected = 1;
	for (i = 0; i < args.n_paths; i++) {
		if (strcmp(args.paths[i], "-") == 0)
			a.claims_collected = 0;
		else if (audit_collect_path(&w, args.paths[i], &err) != 0)
			goto fail;
	}
	for (i = 0; i < args.n_paths; i++)
		if (audit_path(&w, args.paths[i], &err) != 0)
			goto fail;
	if (audit_finish(&a, &err) != 0)
		goto fail;
	/* Errors (and notes) on stderr before the report, findings in the report. */
	fflush(stdout);
	audit_write_problems(&a, stderr, "gpu-admission audit", !args.quiet);
	if (write_report(&a, &args, &w, report, &err) != 0)
		goto fail;
	rc = audit_exit_code(&a);
	goto out;
fail:
	rc = cli_fail(cmd, &err);
out:
	free(args.paths);
	audit_free(&a);
	config_free(cfg);
	return rc;
}

const struct cli_command cmd_audit = {
	.name = "audit",
	.summary = "dry-run the policy over manifests: ok/mutate/reject",
	.usage = "[OPTIONS] PATH...",
	.description =
		"Dry-runs the admission policy over Kubernetes manifests: every pod template in\n"
		"PATH (files; directories, recursively: *.yaml *.yml *.json; - for stdin) is\n"
		"reported as ok, mutate, reject, exempt or warn, as enforce mode would decide.\n"
		"Findings go to stdout; input errors and notes (files skipped, documents --fix\n"
		"re-emitted) to stderr. Pods whose controller is also in the input are shown\n"
		"under it. DRA claims resolve against the ResourceClaimTemplates and\n"
		"ResourceClaims of every input. Input without any pod template is an input error.",
	.options = audit_options,
	.operands = "PATH",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "nothing would be rejected" },
		{ EXIT_FINDING, "something would be rejected (or mutated, with --fail-on mutate); with --fix, "
				"only what its output still holds counts" },
		{ EXIT_USAGE, "usage or input errors (unreadable files, invalid YAML, no pod template at all), "
			      "even when findings were reported" },
		{ 0, NULL },
	},
	.examples =
		"gpu-admission audit deploy/\n"
		"kubectl get pods,deploy,sts,ds,job,cronjob -A -o json | gpu-admission audit -\n"
		"gpu-admission audit --config policy.yaml -o json deploy/\n"
		"gpu-admission audit --fix --in-place deploy/",
	.run = run_audit,
};
