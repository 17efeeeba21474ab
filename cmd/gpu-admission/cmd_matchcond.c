/* gpu-admission print-match-conditions: the CEL matchConditions of a webhook entry for the policy. */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "render/matchcond.h"

/* No -f: kubectl users read -f as a file. */
enum { OPT_FOR = CLI_LONG_ONLY };

static const struct cli_option matchcond_options[] = {
	CLI_OPTION_CONFIG,
	{ "for", OPT_FOR, MATCHCOND_ENTRY_CHOICES, "the webhook entry: pods (default: both pod webhooks), workloads (the\n"
	  "built-in workload kinds) or custom (the policy's workloads)", 0 },
	{ "output", 'o', "yaml|json", "YAML to paste under a webhook (default), or one JSON document", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

static int option_for(const struct cli_command *cmd, struct cli_parser *p, int *entry)
{
	return (*entry = cli_choice(p)) < 0 ? cli_stop(p) : 0;
}

static void *build(const struct config *cfg, int entry, struct error *err)
{
	struct matchcond_set *set = calloc(1, sizeof *set);

	if (set == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return NULL;
	}
	if (matchcond_build(cfg, (enum matchcond_entry)entry, set, err) != 0) {
		matchcond_set_free(set);
		free(set);
		return NULL;
	}
	return set;
}

static json_t *as_json(const void *out, struct error *err)
{
	return matchcond_json(out, err);
}

static int print_yaml(const void *out, struct error *err)
{
	char *text = matchcond_yaml(out, err);

	if (text == NULL)
		return -1;
	fputs(text, stdout);
	free(text);
	return 0;
}

static void set_free(void *out)
{
	matchcond_set_free(out);
	free(out);
}

static const struct cli_printer printer = {
	.opt = OPT_FOR, .option = option_for, .build = build, .json = as_json, .yaml = print_yaml, .free = set_free,
};

static int run_print_match_conditions(const struct cli_command *cmd, int argc, char **argv)
{
	return cli_run_printer(cmd, argc, argv, &printer, MATCHCOND_PODS);
}

const struct cli_command cmd_print_match_conditions = {
	.name = "print-match-conditions",
	.summary = "CEL matchConditions: only what the policy acts on",
	.usage = "[-c FILE] [--for ENTRY] [-o yaml|json]",
	.description =
		"Prints the matchConditions of one webhook entry, made from the policy, so that\n"
		"kube-apiserver calls gpu-admission only for what it may act on:\n"
		"\n"
		"pods (both pod webhooks, mutate.gpu-admission.azure.io and\n"
		"validate.gpu-admission.azure.io): a pod that names a GPU resource of the\n"
		"policy, has resource claims, tolerates the GPU taint (or every taint),\n"
		"selects or prefers a GPU node label or a pool's label, or is pinned by name\n"
		"to a node that could be a GPU node; and for an UPDATE, only when a field of\n"
		"the pod spec the policy reads changed.\n"
		"\n"
		"workloads (validate-workloads.gpu-admission.azure.io: Deployments,\n"
		"StatefulSets, DaemonSets, ReplicaSets, Jobs, CronJobs, ReplicationControllers,\n"
		"PodTemplates): the same over the pod template of the object's kind; an\n"
		"UPDATE only when the template changed in what the policy reads.\n"
		"\n"
		"custom (validate-custom.gpu-admission.azure.io: the policy's workloads): CEL\n"
		"cannot search a custom resource for pod templates at any depth, so every\n"
		"CREATE is sent, and an UPDATE unless it changes only metadata the policy does\n"
		"not read (annotations, finalizers, ...).\n"
		"\n"
		"Every other request is admitted without a call, so a webhook outage under\n"
		"failurePolicy Fail cannot block it. The conditions send at least everything\n"
		"the webhook would mutate, warn about or reject (a superset: a long list is\n"
		"sent rather than looked at), never fail to evaluate, and stay within the API\n"
		"server's CEL cost limits: the worst-case cost is printed above them. The Helm\n"
		"chart renders the same expressions from its policy values\n"
		"(webhook.policyMatchConditions).",
	.options = matchcond_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the conditions were printed" },
		{ EXIT_USAGE, "usage or input error: an invalid --config, or a policy whose conditions would "
			      "cost more than the API server allows" },
		{ 0, NULL },
	},
	.examples = "gpu-admission print-match-conditions --config policy.yaml\n"
		    "gpu-admission print-match-conditions --config policy.yaml --for workloads\n"
		    "gpu-admission print-match-conditions -o json |\n"
		    "    jq -r '.matchConditions[0].expression'",
	.run = run_print_match_conditions,
};
