/* policy_notes(): what check-config says about a valid policy besides "configuration OK". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "policy/config.h"
#include "policy/policy.h"

static struct config *load(const char *yaml)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(yaml, strlen(yaml), "policy.yaml", &err);

	if (cfg == NULL)
		fprintf(stderr, "  load: %s\n", err.msg);
	return cfg;
}

static int starts_with(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* The notes on yaml (under the embedded default), into buf; -1 when it does not load. */
static long notes(const char *yaml, char *buf, size_t cap)
{
	struct error err = { 0 };
	struct config *cfg = load(yaml), *defaults = config_default(&err);
	long n = -1;

	if (cfg != NULL && defaults != NULL)
		n = (long)policy_notes(cfg, defaults, buf, cap);
	config_free(cfg);
	config_free(defaults);
	return n;
}

static void test_daemonset_namespaces(void)
{
	char buf[2048];

	/* The default keeps DaemonSet pods exempt where admins install node agents: nothing to say. */
	CHECK_INT(notes("", buf, sizeof buf), 0);
	CHECK_STR(buf, "");
	/* Every namespace is its one note. */
	CHECK_INT(notes("exempt: {daemonSetNamespaces: [\"*\"]}\n", buf, sizeof buf), 1);
	CHECK(starts_with(buf, "exempt.daemonSetNamespaces: \"*\" exempts DaemonSet pods in every namespace:"));
	/* Off, or kept to named namespaces: nothing to say. */
	CHECK_INT(notes("exempt: {daemonSets: false}\n", buf, sizeof buf), 0);
	CHECK_STR(buf, "");
	CHECK_INT(notes("exempt: {daemonSetNamespaces: [kube-system, \"gpu-*\"]}\n", buf, sizeof buf), 0);
	CHECK_INT(notes("exempt: {daemonSetNamespaces: [kube-system, \"**\"]}\n", buf, sizeof buf), 1);
}

static void test_exempt_namespaces_replace(void)
{
	char buf[2048];

	CHECK_INT(notes("exempt: {namespaces: [monitoring], daemonSetNamespaces: [kube-system]}\n", buf, sizeof buf), 1);
	CHECK_STR(buf, "exempt.namespaces: kube-system, gpu-operator are no longer exempt: the list replaces the "
		       "default one, it does not add to it (list them too to keep them exempt)");
	CHECK_INT(notes("exempt: {namespaces: [monitoring, kube-system], daemonSetNamespaces: [kube-system]}\n",
			buf, sizeof buf), 1);
	CHECK(starts_with(buf, "exempt.namespaces: gpu-operator is no longer exempt:"));
	/* Both kept, in any order, with more: nothing to say. */
	CHECK_INT(notes("exempt: {namespaces: [gpu-operator, monitoring, kube-system], "
			"daemonSetNamespaces: [kube-system]}\n", buf, sizeof buf), 0);
}

static void test_pool_resources(void)
{
	char buf[2048];

	CHECK_INT(notes("exempt: {daemonSetNamespaces: [kube-system]}\n"
			"pools:\n"
			"  - {name: tpu, resources: [google.com/tpu], nodeSelector: {a: b}}\n"
			"  - {name: mig, resources: [\"nvidia.com/mig-1g.*\", \"nvidia.com/*\", \"*\"], nodeSelector: {a: c}}\n",
			buf, sizeof buf), 1);
	CHECK_STR(buf, "pools[0].resources[0]: \"google.com/tpu\" is not a GPU resource (gpuResources): a pod "
		       "asking for it is not judged as a GPU pod, so pool \"tpu\" never serves it; add it to "
		       "gpuResources or remove it");
	/* Counted into no buffer, and cut to a small one, still terminated. */
	CHECK_INT(notes("exempt: {daemonSetNamespaces: [\"*\"]}\n"
			"pools:\n  - {name: tpu, resources: [google.com/tpu], nodeSelector: {a: b}}\n", NULL, 0), 2);
	CHECK_INT(notes("exempt: {daemonSetNamespaces: [\"*\"]}\n"
			"pools:\n  - {name: tpu, resources: [google.com/tpu], nodeSelector: {a: b}}\n", buf, 8), 2);
	CHECK_INT(strlen(buf), 7);
}

/* Two long lists that never overlap: the comparisons stop at a fixed budget, not at their product. */
static void test_resource_budget(void)
{
	const size_t n = 1024;
	size_t cap = 64 * n + 256, i;
	char *yaml = malloc(cap), *buf = malloc(256 * 1024);
	long got;

	CHECK(yaml != NULL && buf != NULL);
	if (yaml == NULL || buf == NULL)
		goto out;
	strcpy(yaml, "exempt: {daemonSetNamespaces: [kube-system]}\ngpuResources:\n");
	for (i = 0; i < n; i++)
		snprintf(yaml + strlen(yaml), cap - strlen(yaml), "  - g%zu.example.com/gpu\n", i);
	snprintf(yaml + strlen(yaml), cap - strlen(yaml), "pools:\n  - name: p\n    nodeSelector: {a: b}\n"
		 "    resources:\n");
	for (i = 0; i < n; i++)
		snprintf(yaml + strlen(yaml), cap - strlen(yaml), "      - t%zu.example.com/tpu\n", i);
	got = notes(yaml, buf, 256 * 1024);
	CHECK(got > 0);
	CHECK(got < (long)n);  /* 1,048,576 comparisons would note all 1024 */
out:
	free(yaml);
	free(buf);
}

int main(void)
{
	RUN(test_daemonset_namespaces);
	RUN(test_exempt_namespaces_replace);
	RUN(test_pool_resources);
	RUN(test_resource_budget);
	return check_done("policy_notes");
}
