/* gpu-admission print-admission-policies: the policy as CEL admission policies the API server runs itself. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "commands.h"
#include "render/admpolicy.h"
#include "text/manifest.h"

enum { OPT_KUBE = CLI_LONG_ONLY };

#define DEFAULT_MINOR 34  /* the oldest minor the cluster suite proves both kinds on */

static const struct cli_option admpolicy_options[] = {
	CLI_OPTION_CONFIG,
	{ "kubernetes-version", OPT_KUBE, "1.N", "the cluster's minor: which APIs to emit (default 1.34; below\n"
	  "1.34 no MutatingAdmissionPolicy, 1.34 and 1.35 its v1beta1, 1.36 and later v1)", 0 },
	{ "output", 'o', "yaml|json", "YAML documents (default), or one JSON List", 0 },
	{ NULL, 0, NULL, NULL, 0 },
};

/* "1.N" (or "v1.N", with a patch level or not) to N; -1 when it is not one. */
static int parse_minor(const char *s)
{
	char *end;
	long n;

	if (*s == 'v')
		s++;
	if (s[0] != '1' || s[1] != '.')
		return -1;
	n = strtol(s + 2, &end, 10);
	if (end == s + 2 || (*end != '\0' && *end != '.') || n < 0 || n > 999)
		return -1;
	return (int)n;
}

/* Each item of the List as a YAML document. */
static int print_yaml(const void *out, struct error *err)
{
	const json_t *item;
	size_t i, len;
	char *text;

	json_array_foreach(json_object_get(out, "items"), i, item) {
		if ((text = manifest_to_yaml(item, &len, err)) == NULL)
			return -1;
		fputs("---\n", stdout);
		fwrite(text, 1, len, stdout);
		free(text);
	}
	return 0;
}

static int option_minor(const struct cli_command *cmd, struct cli_parser *p, int *minor)
{
	if ((*minor = parse_minor(p->value)) < 0)
		return cli_usage(cmd, "--kubernetes-version: \"%s\" is not a minor such as 1.34", p->value);
	return 0;
}

static void *build(const struct config *cfg, int minor, struct error *err)
{
	return admpolicy_build(cfg, minor, err);
}

static json_t *as_json(const void *out, struct error *err)
{
	return json_incref((json_t *)(uintptr_t)out);
}

static void list_free(void *out)
{
	json_decref(out);
}

static const struct cli_printer printer = {
	.opt = OPT_KUBE, .option = option_minor, .build = build, .json = as_json, .yaml = print_yaml, .free = list_free,
};

static int run_print_admission_policies(const struct cli_command *cmd, int argc, char **argv)
{
	return cli_run_printer(cmd, argc, argv, &printer, DEFAULT_MINOR);
}

const struct cli_command cmd_print_admission_policies = {
	.name = "print-admission-policies",
	.summary = "CEL admission policies: the guarantees, no webhook",
	.usage = "[-c FILE] [--kubernetes-version 1.N] [-o yaml|json]",
	.description =
		"Prints the policy as CEL admission policies kube-apiserver evaluates itself, so\n"
		"its two guarantees hold with no webhook process (or while it is down):\n"
		"\n"
		"ValidatingAdmissionPolicy gpu-admission-pods refuses a CPU-only pod that\n"
		"tolerates the GPU taint, selects GPU nodes (nodeSelector, required node\n"
		"affinity) or is pinned by name to one, with the webhook's message, and a GPU\n"
		"pod no pool may take; gpu-admission-workloads does the same for the pod\n"
		"template of Deployments, ReplicaSets, DaemonSets, StatefulSets, Jobs,\n"
		"CronJobs, ReplicationControllers and PodTemplates at apply. One binding per\n"
		"mode: enforce Deny, warn Warn, dryrun Warn and Audit; exempt namespaces are\n"
		"left out, exempt podSelectors and DaemonSet pods are judged in CEL.\n"
		"\n"
		"MutatingAdmissionPolicy gpu-admission-pods (Kubernetes 1.34 and later; on\n"
		"1.34 and 1.35 a beta API behind the MutatingAdmissionPolicy feature gate and\n"
		"--runtime-config admissionregistration.k8s.io/v1beta1=true) adds the GPU\n"
		"toleration to a GPU pod, and under placement pinned the chosen pool's\n"
		"nodeSelector and tolerations, each only when missing, so the webhook and the\n"
		"policy never add the same thing twice.\n"
		"\n"
		"What CEL does not do as the webhook does: pools for pods pinned by name or\n"
		"with a required node affinity, placement fallback's affinity, custom\n"
		"resources (workloads:), warnings, and the refusals' pool lists; the README\n"
		"(In-process admission policies) lists them. Every list a pod holds is\n"
		"bounded (32 containers, 16 resources, 32 tolerations, ...): a pod past a\n"
		"bound is refused. Each policy carries the worst-case CEL cost of its\n"
		"expressions; a policy over the API server's limits is refused here.",
	.options = admpolicy_options,
	.exits = (const struct cli_exit[]){
		{ EXIT_OK, "the policies were printed" },
		{ EXIT_USAGE, "usage or input error: an invalid --config, a minor without these APIs, or a policy "
			      "whose expressions would cost more than the API server allows" },
		{ 0, NULL },
	},
	.examples = "gpu-admission print-admission-policies -c policy.yaml | kubectl apply -f -\n"
		    "gpu-admission print-admission-policies --kubernetes-version 1.36 -o json",
	.run = run_print_admission_policies,
};
