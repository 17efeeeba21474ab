/* gpu-admission check-config / print-default-config. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "policy.h"

int cmd_check_config(int argc, char **argv)
{
	struct error err = { 0 };
	struct config *cfg;
	char warnings[4096];  /* a few lines per misordered pool; cut quietly beyond */
	char names[1024];

	if (argc != 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: gpu-admission check-config FILE\n\n"
			"Loads FILE over the embedded default policy and prints \"configuration OK\",\n"
			"or every error with file:line:column. Exit 0 when valid, 1 when not.\n"
			"A valid policy is followed by how it tells GPU nodes by name: gpuNodeNames,\n"
			"or the globs derived from the pools when it is not set.\n"
			"Advice that is not an error (priced pools not listed cheapest per GPU\n"
			"first) is printed to stderr as \"FILE: warning: ...\" and keeps exit 0.\n");
		return argc == 2 ? EXIT_OK : EXIT_USAGE;
	}
	cfg = config_load_file(argv[1], &err);
	if (cfg == NULL) {
		fprintf(stderr, "%s\n", err.msg);
		return EXIT_FINDING;
	}
	if (config_warnings(cfg, warnings, sizeof warnings) > 0) {
		const char *line = warnings, *nl;

		for (; line != NULL; line = nl ? nl + 1 : NULL) {
			nl = strchr(line, '\n');
			fprintf(stderr, "%s: warning: %.*s\n", argv[1], nl ? (int)(nl - line) : (int)strlen(line), line);
		}
	}
	policy_describe_node_names(cfg, names, sizeof names);
	config_free(cfg);
	printf("configuration OK\n%s\n", names);
	return EXIT_OK;
}

int cmd_print_default_config(int argc, char **argv)
{
	(void)argv;
	if (argc > 1) {
		printf("usage: gpu-admission print-default-config\n\n"
		       "Prints the embedded default policy as commented YAML: a starting point for a\n"
		       "policy file, and exactly what applies when serve or review get no --config.\n");
		return EXIT_OK;
	}
	fputs(config_default_yaml(), stdout);
	return EXIT_OK;
}
