/* gpu-admission print-autoscaler-config: the priority-expander ConfigMap for the policy's pools. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>

#include "autoscaler.h"
#include "commands.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: gpu-admission print-autoscaler-config [--config FILE]\n\n"
		"Prints the cluster-autoscaler priority-expander ConfigMap\n"
		"(kube-system/cluster-autoscaler-priority-expander) that scales the AKS node pools\n"
		"the policy's pools select by kubernetes.azure.com/agentpool in the policy's order:\n"
		"the first (cheapest) pool highest, every other node group lowest. Apply it and\n"
		"switch the expander:\n\n"
		"  gpu-admission print-autoscaler-config --config policy.yaml | kubectl apply -f -\n"
		"  az aks update -g RESOURCE_GROUP -n CLUSTER --cluster-autoscaler-profile expander=priority\n\n"
		"  -c, --config FILE   policy file (default: the embedded policy)\n"
		"  -h, --help          this help\n\n"
		"Pools that select otherwise are left out, with a warning on stderr.\n"
		"Exit: 0 printed, 1 no pool selects by kubernetes.azure.com/agentpool or the policy\n"
		"is invalid, 2 usage error.\n");
}

int cmd_print_autoscaler_config(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "config", required_argument, NULL, 'c' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	const char *config_path = NULL;
	struct error err = { 0 };
	struct config *cfg;
	char skipped[1024], *text;  /* pool names left out, cut quietly */
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "c:h", opts, NULL)) != -1) {
		switch (c) {
		case 'c': config_path = optarg; break;
		case 'h': usage(stdout); return EXIT_OK;
		default: usage(stderr); return EXIT_USAGE;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return EXIT_USAGE;
	}
	cfg = cli_load_config(config_path, &err);
	text = cfg ? autoscaler_priority_configmap(cfg, skipped, sizeof skipped, &err) : NULL;
	config_free(cfg);
	if (text == NULL) {
		fprintf(stderr, "gpu-admission: %s\n", err.msg);
		return err.kind == ERROR_NOMEM ? EXIT_USAGE : EXIT_FINDING;
	}
	if (skipped[0] != '\0')
		fprintf(stderr, "gpu-admission: warning: pools %s do not select by " AUTOSCALER_POOL_KEY
			" and are left out\n", skipped);
	fputs(text, stdout);
	free(text);
	return EXIT_OK;
}
