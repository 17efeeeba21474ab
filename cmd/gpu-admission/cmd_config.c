/* gpu-admission check-config / print-default-config. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"
#include "base/file.h"
#include "render/matchcond.h"
#include "policy/policy.h"

/*
 * The chart turns the policy into CEL matchConditions (webhook.policyMatchConditions,
 * on by default) that the API server refuses over its cost limits: said here, where
 * the policy is checked, rather than at helm install. A note, not an error: the
 * server itself runs the policy, and the conditions can be turned off. (Warnings
 * are config_warnings(), which /validate-policy also sends to kubectl.)
 */
static int note_match_conditions(const char *name, const struct config *cfg, struct error *err)
{
	const char *entry = MATCHCOND_ENTRY_CHOICES;  /* "pods|workloads|custom", in enum order */
	struct matchcond_set set;
	int e;

	for (e = 0; e < MATCHCOND_ENTRIES; e++) {
		struct error why = { 0 };

		memset(&set, 0, sizeof set);
		if (matchcond_build(cfg, (enum matchcond_entry)e, &set, &why) == 0) {
			matchcond_set_free(&set);
			entry += strcspn(entry, "|") + 1;
			continue;
		}
		matchcond_set_free(&set);
		if (why.kind != ERROR_CONFIG) {
			*err = why;
			return -1;
		}
		fprintf(stderr, "%s: note: print-match-conditions --for %.*s: %s (the chart's "
			"webhook.policyMatchConditions would be refused by the API server at install)\n",
			name, (int)strcspn(entry, "|"), entry, why.msg);
		return 0;  /* one entry says it: the others share the expressions' parts */
	}
	return 0;
}

/* Each line of text (lines joined by '\n') on stderr as "NAME: KIND: LINE". */
static void print_lines(const char *name, const char *kind, const char *text)
{
	const char *line = text, *nl;

	for (; line != NULL; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		fprintf(stderr, "%s: %s: %.*s\n", name, kind, nl ? (int)(nl - line) : (int)strlen(line), line);
	}
}

static int run_check_config(const struct cli_command *cmd, int argc, char **argv)
{
	struct config_errors errs = { 0 };
	struct error err = { 0 };
	struct config *cfg, *defaults;
	char advice[8192];  /* a few lines per misordered pool or note; cut quietly beyond */
	char names[1024];
	const char *path, *name;
	size_t i;
	int rc = EXIT_USAGE;

	if ((path = cli_one_operand(cmd, argc, argv, "FILE", &rc)) == NULL)
		return rc;
	if (strcmp(path, "-") == 0) {
		size_t len;
		char *buf = file_read_stream(stdin, CONFIG_FILE_MAX, &len, &err);

		name = FILE_STDIN_NAME;
		cfg = buf ? config_load_buffer_all(buf, len, name, &errs, &err) : NULL;
		free(buf);
	} else {
		name = path;
		cfg = config_load_file_all(path, &errs, &err);
	}
	if (cfg != NULL) {
		/* Advice, not errors: on stderr, and the policy stays valid (exit 0). */
		if (config_warnings(cfg, advice, sizeof advice) > 0)
			print_lines(name, "warning", advice);
		if ((defaults = config_default(&err)) == NULL) {
			config_free(cfg);
			return cli_fail(cmd, &err);
		}
		if (policy_notes(cfg, defaults, advice, sizeof advice) > 0)
			print_lines(name, "note", advice);
		config_free(defaults);
		if (note_match_conditions(name, cfg, &err) != 0) {
			config_free(cfg);
			return cli_fail(cmd, &err);
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
		fprintf(stderr, "%s: %zu more errors not listed\n", name, errs.total - errs.n);
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
		"stderr as \"FILE: warning: ...\" (the policy webhook sends the same to\n"
		"kubectl), and what a valid policy does that its text does not say as\n"
		"\"FILE: note: ...\": an exempt.namespaces list that drops a namespace the\n"
		"default exempts (a list replaces the default, it does not add to it), the\n"
		"DaemonSet exemption in every namespace (\"*\", the default), a pool resource\n"
		"that gpuResources does not count as a GPU, match conditions over the API\n"
		"server's CEL cost limits (print-match-conditions refuses them, and the\n"
		"chart's would not install). Both keep exit 0.\n"
		"FILE - reads the policy from standard input (messages name it <stdin>).",
	.operands = "FILE",
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the policy is valid" },
		{ EXIT_FINDING, "the policy has errors (listed on stderr)" },
		{ EXIT_USAGE, "usage error, or FILE cannot be read" },
		{ 0, NULL },
	},
	.examples = "gpu-admission check-config policy.yaml\n"
		    "kubectl get configmap gpu-admission-policy \\\n"
		    "    -o jsonpath='{.data.policy\\.yaml}' | gpu-admission check-config -",
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
