/* gpu-admission print-autoscaler-config: the priority-expander ConfigMap for the policy's pools. */
#include <stdio.h>
#include <stdlib.h>

#include "render/autoscaler.h"
#include "commands.h"

#define SKIPPED_NAMES_MAX 1024  /* bytes of pool names named in the warning; cut quietly beyond */

static const struct cli_option autoscaler_options[] = {
	CLI_OPTION_CONFIG,
	{ NULL, 0, NULL, NULL, 0 },
};

static int run_print_autoscaler_config(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	const char *config_path = NULL;
	struct error err = { 0 };
	struct config *cfg = NULL;
	char skipped[SKIPPED_NAMES_MAX], *text = NULL;
	int c, rc;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': config_path = p.value; break;
		case CLI_OPERAND: return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		default: return cli_stop(&p);
		}
	}
	if ((cfg = cli_load_config(config_path, &err)) == NULL ||
	    (text = autoscaler_priority_configmap(cfg, skipped, sizeof skipped, &err)) == NULL) {
		rc = cli_fail(cmd, &err);
		goto out;
	}
	if (skipped[0] != '\0')
		cli_say(cmd, "warning: pools %s do not select by " CONFIG_AKS_POOL_LABEL " and are left out", skipped);
	fputs(text, stdout);
	rc = cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
out:
	free(text);
	config_free(cfg);
	return rc;
}

const struct cli_command cmd_print_autoscaler_config = {
	.name = "print-autoscaler-config",
	.summary = "cluster-autoscaler priority expander: cheapest first",
	.usage = "[--config FILE]",
	.description =
		"Prints the cluster-autoscaler priority-expander ConfigMap\n"
		"(kube-system/cluster-autoscaler-priority-expander) that scales the AKS node\n"
		"pools the policy's pools select by kubernetes.azure.com/agentpool in the\n"
		"policy's order: the first (cheapest) pool highest, every other node group\n"
		"lowest. Apply it and switch the expander (see Examples).\n"
		"\n"
		"Pools that select otherwise are left out, with a warning on stderr. With node\n"
		"auto-provisioning (karpenter.sh/nodepool pools) give the NodePools\n"
		"spec.weight instead.",
	.options = autoscaler_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the ConfigMap was printed" },
		{ EXIT_USAGE, "usage or input error: an invalid --config, or no pool selects by "
			      "kubernetes.azure.com/agentpool (the ConfigMap would give no pool a priority)" },
		{ 0, NULL },
	},
	.examples = "gpu-admission print-autoscaler-config -c policy.yaml | kubectl apply -f -\n"
		    "az aks update -g RESOURCE_GROUP -n CLUSTER \\\n"
		    "    --cluster-autoscaler-profile expander=priority",
	.run = run_print_autoscaler_config,
};
