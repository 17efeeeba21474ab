/*
 * gpu-admission: GPU admission webhook and offline auditor for AKS.
 * main() only dispatches to a command of the table below.
 */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef GPU_ADMISSION_VERSION
#define GPU_ADMISSION_VERSION "0.0.0"
#endif
#ifndef GPU_ADMISSION_REVISION
#define GPU_ADMISSION_REVISION "unknown"
#endif

/* Every command; help, the man page and the completions follow this table. */
const struct cli_command *const cli_commands[] = {
	&cmd_review, &cmd_audit, &cmd_report, &cmd_serve, &cmd_certs, &cmd_check_config,
	&cmd_print_default_config, &cmd_print_autoscaler_config, &cmd_print_match_conditions,
	&cmd_completion, &cmd_version, &cmd_help,
};
const size_t cli_n_commands = sizeof cli_commands / sizeof cli_commands[0];

const char *cli_version(void)
{
	return GPU_ADMISSION_VERSION " (" GPU_ADMISSION_REVISION ")";
}

static const struct cli_option version_options[] = {
	{ "output", 'o', "text|json|yaml", "text (default), or {version, revision} as JSON or YAML", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

static int run_version(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	struct error err = { 0 };
	int c, out = 0;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		if (c == CLI_OPERAND)
			return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		if (c != 'o' || (out = cli_choice(&p)) < 0)
			return cli_stop(&p);
	}
	/* Both strings are made by the Makefile from VERSION and git: nothing to quote. */
	if (out == 1)
		printf("{\n  \"version\": \"%s\",\n  \"revision\": \"%s\"\n}\n", GPU_ADMISSION_VERSION,
		       GPU_ADMISSION_REVISION);
	else if (out == 2)
		printf("version: \"%s\"\nrevision: \"%s\"\n", GPU_ADMISSION_VERSION, GPU_ADMISSION_REVISION);
	else
		printf("gpu-admission %s\n", cli_version());
	return cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
}

const struct cli_command cmd_version = {
	.name = "version",
	.summary = "print the version and the git revision",
	.usage = "[-o text|json|yaml]",
	.description = "Prints \"gpu-admission VERSION (REVISION)\": a semantic version and the git\n"
		       "revision of the build (the Helm chart's appVersion is the same VERSION).\n"
		       "-o json and -o yaml print {version, revision} for scripts.",
	.options = version_options,
	.exits = (const struct cli_exit[]){ { EXIT_OK, "version printed" }, { EXIT_USAGE, "usage error" },
					    { 0, NULL } },
	.run = run_version,
};

int main(int argc, char **argv)
{
	const struct cli_command *cmd;

	if (argc < 2) {
		cli_write_overview(stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		argv[1] = (char *)"help";
	else if (strcmp(argv[1], "--version") == 0)
		argv[1] = (char *)"version";
	cmd = cli_find(argv[1]);
	if (cmd == NULL)
		return cli_unknown_command(argv[1]);
	return cmd->run(cmd, argc - 1, argv + 1);
}
