/* gpu-admission check-config / print-default-config. */
#include <stdio.h>
#include <string.h>

#include "commands.h"
#include "policy.h"

int cmd_check_config(int argc, char **argv)
{
	struct error err = { 0 };
	struct config *cfg;
	char names[1024];

	if (argc != 2 || strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		fprintf(argc == 2 ? stdout : stderr,
			"usage: gpu-admission check-config FILE\n\n"
			"Loads FILE over the embedded default policy and prints \"configuration OK\",\n"
			"or every error with file:line:column. Exit 0 when valid, 1 when not.\n"
			"A valid policy is followed by how it tells GPU nodes by name: gpuNodeNames,\n"
			"or the globs derived from the pools when it is not set.\n");
		return argc == 2 ? EXIT_OK : EXIT_USAGE;
	}
	cfg = config_load_file(argv[1], &err);
	if (cfg == NULL) {
		fprintf(stderr, "%s\n", err.msg);
		return EXIT_FINDING;
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
