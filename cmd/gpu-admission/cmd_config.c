/* gpu-admission check-config / print-default-config. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "policy.h"

static int run_check_config(const struct cli_command *cmd, int argc, char **argv)
{
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	struct config *cfg;
	char warnings[4096];  /* a few lines per misordered pool; cut quietly beyond */
	char names[1024];
	const char *path;
	size_t i;
	int rc = EXIT_USAGE;

	if ((path = cli_one_operand(cmd, argc, argv, "FILE", &rc)) == NULL)
		return rc;
	cfg = config_load_file_all(path, &errs, &err);
	if (cfg != NULL) {
		/* Advice, not errors: on stderr, and the policy stays valid (exit 0). */
		if (config_warnings(cfg, warnings, sizeof warnings) > 0) {
			const char *line = warnings, *nl;

			for (; line != NULL; line = nl ? nl + 1 : NULL) {
				nl = strchr(line, '\n');
				fprintf(stderr, "%s: warning: %.*s\n", path,
					nl ? (int)(nl - line) : (int)strlen(line), line);
			}
		}
		policy_describe_node_names(cfg, names, sizeof names);
		config_free(cfg);
		printf("configuration OK\n%s\n", names);
		return cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
	}
	if (err.kind != ERROR_CONFIG)  /* the file could not be read: an input error */
		return cli_fail(cmd, &err);
	/* An invalid policy is what check-config finds: every error, then how many. */
	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "%s\n", errs.v[i].text);
	if (errs.total > errs.n)
		fprintf(stderr, "%s: %zu more errors not listed\n", path, errs.total - errs.n);
	fprintf(stderr, "%zu error%s\n", errs.total, errs.total == 1 ? "" : "s");
	config_errors_free(&errs);
	return EXIT_FINDING;
}

const struct cli_command cmd_check_config = {
	.name = "check-config",
	.summary = "validate a policy file: \"configuration OK\" or errors",
	.usage = "FILE",
	.description =
		"Loads FILE over the embedded default policy, as serve --config would, and\n"
		"prints \"configuration OK\", or every error on stderr, one a line, as\n"
		"FILE:LINE:COLUMN: FIELD: PROBLEM, then how many (\"3 errors\"). Unknown fields,\n"
		"duplicate keys, wrong types (a quoted \"true\" where a boolean goes) and\n"
		"invalid values are errors.\n"
		"\n"
		"A valid policy is followed by how it tells GPU nodes by name: gpuNodeNames,\n"
		"or the globs derived from the pools when it is not set. Advice that is not\n"
		"an error (priced pools not listed cheapest per GPU first) is printed on\n"
		"stderr as \"FILE: warning: ...\" and keeps exit 0.",
	.operands = "FILE",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the policy is valid" },
		{ EXIT_FINDING, "the policy has errors (listed on stderr)" },
		{ EXIT_USAGE, "usage error, or FILE cannot be read" },
		{ 0, NULL },
	},
	.examples = "gpu-admission check-config policy.yaml",
	.run = run_check_config,
};

static int run_print_default_config(const struct cli_command *cmd, int argc, char **argv)
{
	struct error err = { 0 };
	int rc = cli_no_operands(cmd, argc, argv);

	if (rc >= 0)
		return rc;
	fputs(config_default_yaml(), stdout);
	return cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
}

const struct cli_command cmd_print_default_config = {
	.name = "print-default-config",
	.summary = "print the embedded default policy, commented",
	.usage = "",
	.description =
		"Prints the embedded default policy as commented YAML: a starting point for a\n"
		"policy file, and exactly what applies when serve, review or audit get no\n"
		"--config. A policy file needs only the fields it changes.",
	.exits = (const struct cli_exit[]){ { EXIT_OK, "printed" }, { EXIT_USAGE, "usage error" }, { 0, NULL } },
	.examples = "gpu-admission print-default-config > policy.yaml",
	.run = run_print_default_config,
};
