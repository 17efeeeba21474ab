/* gpu-admission print-kueue-config: Kueue's ResourceFlavors and a ClusterQueue from the policy's pools. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "render/kueue.h"
#include "commands.h"

#define NOTES_MAX 4096        /* bytes of notes printed on stderr; a note that does not fit is left out */
#define LOCAL_QUEUES_MAX 64   /* --local-queue namespaces */

enum { OPT_QUEUE = CLI_LONG_ONLY, OPT_POOL, OPT_RESOURCE, OPT_QUOTA, OPT_LOCAL_QUEUE };

static const struct cli_option kueue_options[] = {
	CLI_OPTION_CONFIG,
	{ "queue", OPT_QUEUE, "NAME", "the ClusterQueue's name (default " KUEUE_QUEUE_DEFAULT ")", 0 },
	{ "pool", OPT_POOL, "NAME", "a pool the ClusterQueue uses as a flavor (repeatable; default:\n"
				    "every pool), always in the policy's order", 0 },
	{ "resource", OPT_RESOURCE, "RES", "a GPU resource to cover besides the pools' exact ones\n"
					  "(repeatable: --resource nvidia.com/mig-1g.10gb)", 0 },
	{ "quota", OPT_QUOTA, "RES=N", "nominalQuota N of RES on every flavor whose pool serves it\n"
				       "(repeatable; default 0: nothing admitted until filled in)", 0 },
	{ "local-queue", OPT_LOCAL_QUEUE, "NS", "a LocalQueue named as the ClusterQueue in namespace NS\n"
						"(repeatable)", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

/* The command line into o (its lists in the arrays given, each of its *_MAX): 0, or -1 with *code set. */
static int kueue_parse(const struct cli_command *cmd, int argc, char **argv, struct kueue_options *o,
		       const char **config_path, const char **pools, const char **resources,
		       struct kueue_quota *quotas, const char **local_queues, int *code)
{
	struct cli_parser p;
	char *eq;
	int c;

	cli_parse(&p, cmd, argc, argv);
	while ((c = cli_next(&p)) != CLI_END) {
		switch (c) {
		case 'c': *config_path = p.value; break;
		case OPT_QUEUE: o->queue = p.value; break;
		case OPT_POOL:
			if (o->n_pools == CONFIG_POOLS_MAX)
				goto many;
			pools[o->n_pools++] = p.value;
			break;
		case OPT_RESOURCE:
			if (o->n_resources == KUEUE_RESOURCES_MAX)
				goto many;
			resources[o->n_resources++] = p.value;
			break;
		case OPT_QUOTA:
			if ((eq = strchr(p.value, '=')) == NULL || eq == p.value || eq[1] == '\0') {
				*code = cli_usage(cmd, "--quota %s: want RES=N (nvidia.com/gpu=8)", p.value);
				return -1;
			}
			if (o->n_quotas == KUEUE_RESOURCES_MAX)
				goto many;
			*eq = '\0';  /* argv is the program's to change */
			quotas[o->n_quotas++] = (struct kueue_quota){ p.value, eq + 1 };
			break;
		case OPT_LOCAL_QUEUE:
			if (o->n_local_queues == LOCAL_QUEUES_MAX)
				goto many;
			local_queues[o->n_local_queues++] = p.value;
			break;
		case CLI_OPERAND:
			*code = cli_usage(cmd, "unexpected argument \"%s\"", p.value);
			return -1;
		default:
			*code = cli_stop(&p);
			return -1;
		}
	}
	return 0;
many:
	*code = cli_usage(cmd, "too many --%s options", p.opt != NULL ? p.opt->name : "?");
	return -1;
}

static int run_print_kueue_config(const struct cli_command *cmd, int argc, char **argv)
{
	struct kueue_options o = { 0 };
	const char *config_path = NULL, *pools[CONFIG_POOLS_MAX], *resources[KUEUE_RESOURCES_MAX];
	const char *local_queues[LOCAL_QUEUES_MAX];
	struct kueue_quota quotas[KUEUE_RESOURCES_MAX];
	struct error err = { 0 };
	struct config *cfg = NULL;
	char notes[NOTES_MAX], *text = NULL, *line, *nl;
	int rc;

	if (kueue_parse(cmd, argc, argv, &o, &config_path, pools, resources, quotas, local_queues, &rc) != 0)
		return rc;
	o.pools = pools;
	o.resources = resources;
	o.quotas = quotas;
	o.local_queues = local_queues;
	if ((cfg = cli_load_config(config_path, &err)) == NULL ||
	    (text = kueue_config(cfg, &o, notes, sizeof notes, &err)) == NULL) {
		rc = cli_fail(cmd, &err);
		goto out;
	}
	for (line = notes; *line != '\0'; line = nl + 1) {
		nl = strchr(line, '\n');
		cli_say(cmd, "note: %.*s", (int)(nl - line), line);
	}
	fputs(text, stdout);
	rc = cli_flush_stdout(&err) == 0 ? EXIT_OK : cli_fail(cmd, &err);
out:
	free(text);
	config_free(cfg);
	return rc;
}

const struct cli_command cmd_print_kueue_config = {
	.name = "print-kueue-config",
	.summary = "Kueue flavors, one per pool, and a ClusterQueue",
	.usage = "[--config FILE] [--queue NAME] [--pool NAME]... [--quota RES=N]...",
	.description =
		"Prints Kueue objects (kueue.x-k8s.io/v1beta2, Kueue v0.17's stored version)\n"
		"under which Kueue's flavors and the policy's pools agree: a ResourceFlavor per\n"
		"pool, named as the pool, its nodeLabels the pool's nodeSelector and its\n"
		"tolerations the GPU taint's plus the pool's own; then a ClusterQueue whose\n"
		"flavors are the pools in the policy's order (Kueue tries them in that order),\n"
		"covering cpu, memory and the GPU resources the pools serve by exact name. A\n"
		"flavor's quota of a resource its pool does not serve is 0; every other quota\n"
		"is 0 until --quota sets it. Pools that admit only some namespaces, by exact\n"
		"name, restrict the queue's namespaceSelector to the namespaces they share.\n"
		"\n"
		"What Kueue cannot be told is printed as notes, on stderr and in the YAML: a\n"
		"pool's maxGPUsPerPod, podSelector or namespace globs, resources served by glob.\n"
		"A Job Kueue starts on such a flavor for a pod the pool refuses is refused by\n"
		"the validating webhook when Kueue writes the flavor's nodeSelector into it.",
	.options = kueue_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the objects were printed" },
		{ EXIT_USAGE, "usage or input error: an invalid --config, an unknown --pool, a --resource\n"
			      "that is no GPU resource, a --quota of a resource not covered, a pool that\n"
			      "cannot be a flavor, or pools that share no namespace" },
		{ 0, NULL },
	},
	.examples = "gpu-admission print-kueue-config -c policy.yaml --quota nvidia.com/gpu=8 \\\n"
		    "    --quota cpu=64 --quota memory=256Gi --local-queue team-a \\\n"
		    "    | kubectl apply -f -\n"
		    "gpu-admission print-kueue-config -c policy.yaml --queue research --pool h100",
	.run = run_print_kueue_config,
};
