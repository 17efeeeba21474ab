/* gpu-admission print-match-conditions: the CEL matchConditions of a webhook entry for the policy. */
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "policy/matchcond.h"

/* No -f: kubectl users read -f as a file. */
enum { OPT_FOR = CLI_LONG_ONLY };

static const struct cli_option matchcond_options[] = {
	CLI_OPTION_CONFIG,
	{ "for", OPT_FOR, MATCHCOND_ENTRY_CHOICES, "the webhook entry: pods (default: both pod webhooks), workloads (the\n"
	  "built-in workload kinds) or custom (the policy's workloads)", 0 },
	{ "output", 'o', "yaml|json", "YAML to paste under a webhook (default), or one JSON document", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

static int run_print_match_conditions(const struct cli_command *cmd, int argc, char **argv)
{
	struct cli_parser p;
	const char *config_path = NULL;
	struct error err = { 0 };
	struct config *cfg = NULL;
	struct matchcond_set set = { 0 };
	json_t *doc = NULL;
	char *text = NULL;
	int c, json = 0, entry = MATCHCOND_PODS, rc;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': config_path = p.value; break;
		case OPT_FOR:
			if ((entry = cli_choice(&p)) < 0)
				return cli_stop(&p);
			break;
		case 'o':
			if ((json = cli_choice(&p)) < 0)
				return cli_stop(&p);
			break;
		case CLI_OPERAND: return cli_usage(cmd, "unexpected argument \"%s\"", p.value);
		default: return cli_stop(&p);
		}
	}
	if ((cfg = cli_load_config(config_path, &err)) == NULL ||
	    matchcond_build(cfg, (enum matchcond_entry)entry, &set, &err) != 0)
		goto fail;
	if (json) {
		if ((doc = matchcond_json(&set, &err)) == NULL)
			goto fail;
		if (json_dumpf(doc, stdout, JSON_INDENT(2)) != 0 || fputc('\n', stdout) == EOF)
			error_set(&err, ERROR_SYSTEM, "writing the output failed");
	} else {
		if ((text = matchcond_yaml(&set, &err)) == NULL)
			goto fail;
		fputs(text, stdout);
	}
	if (err.kind != ERROR_NONE || cli_flush_stdout(&err) != 0)
		goto fail;
	rc = EXIT_OK;
	goto out;
fail:
	rc = cli_fail(cmd, &err);
out:
	json_decref(doc);
	free(text);
	matchcond_set_free(&set);
	config_free(cfg);
	return rc;
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
