/*
 * gpu-admission: GPU admission webhook and offline auditor for AKS.
 * main() only dispatches to a subcommand.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "commands.h"

#ifndef GPU_ADMISSION_VERSION
#define GPU_ADMISSION_VERSION "dev"
#endif

static int cmd_help(int argc, char **argv);
static int cmd_version(int argc, char **argv);

static const struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
} commands[] = {
	{ "review", cmd_review, "answer one AdmissionReview (stdin or FILE) on stdout" },
	{ "audit", cmd_audit, "dry-run the policy over manifests (files, dirs, -): ok/mutate/reject" },
	{ "report", cmd_report, "GPU cost report from kubectl get nodes,pods -o json: idle, leaks, Pending" },
	{ "serve", cmd_serve, "run the HTTPS admission webhook (/mutate, /validate, /metrics)" },
	{ "certs", cmd_certs, "write a CA, a serving certificate and the caBundle for a Service" },
	{ "check-config", cmd_check_config, "validate a policy file: \"configuration OK\" or the errors" },
	{ "print-default-config", cmd_print_default_config, "print the embedded default policy, commented" },
	{ "print-autoscaler-config", cmd_print_autoscaler_config,
	  "cluster-autoscaler priority-expander ConfigMap: scale pools cheapest first" },
	{ "version", cmd_version, "print the version" },
	{ "help", cmd_help, "show this help" },
};

static int cmd_help(int argc, char **argv)
{
	size_t i;

	(void)argc;
	(void)argv;
	printf("usage: gpu-admission COMMAND [ARGS]\n\n"
	       "Kubernetes admission webhook that keeps GPU workloads and GPU node pools honest on AKS:\n"
	       "GPU pods get the GPU pool's toleration and node selector; CPU pods aimed at GPU pools\n"
	       "are rejected.\n\ncommands:\n");
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		printf("  %-22s %s\n", commands[i].name, commands[i].summary);
	printf("\nRun 'gpu-admission COMMAND --help' for a command's options.\n"
	       "Exit codes: 0 done, 1 policy rejection found, 2 usage or input error.\n");
	return EXIT_OK;
}

static int cmd_version(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	printf("gpu-admission %s\n", GPU_ADMISSION_VERSION);
	return EXIT_OK;
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		cmd_help(0, NULL);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)
		return cmd_help(0, NULL);
	if (strcmp(argv[1], "--version") == 0)
		return cmd_version(0, NULL);
	for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (strcmp(argv[1], commands[i].name) == 0)
			return commands[i].fn(argc - 1, argv + 1);
	fprintf(stderr, "gpu-admission: unknown command \"%s\"; try 'gpu-admission help'\n", argv[1]);
	return EXIT_USAGE;
}
