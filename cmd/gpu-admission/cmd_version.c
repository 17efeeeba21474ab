/*
 * cmd_version: `gpu-admission version`, and the one place the build's version
 * and revision (made by the Makefile from VERSION and git) are read.
 */
#include <stdio.h>

#include "commands.h"

#ifndef GPU_ADMISSION_VERSION
#define GPU_ADMISSION_VERSION "0.0.0"
#endif
#ifndef GPU_ADMISSION_REVISION
#define GPU_ADMISSION_REVISION "unknown"
#endif

const char *cli_version_number(void)
{
	return GPU_ADMISSION_VERSION;
}

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
