/* The cost report's pure pieces: --fail-on words, money, and judging a tiny snapshot end to end. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "report_fixture.h"
#include "report/report.h"

static void test_fail_on(void)
{
	unsigned bits = 99;

	CHECK_INT(report_fail_on_parse("reject", &bits), 0);
	CHECK_INT(bits, REPORT_FAIL_REJECT);
	CHECK_INT(report_fail_on_parse("pending,idle,misconfig", &bits), 0);
	CHECK_INT(bits, REPORT_FAIL_PENDING | REPORT_FAIL_IDLE | REPORT_FAIL_MISCONF);
	CHECK_INT(report_fail_on_parse("mutate", &bits), 0);
	CHECK_INT(bits, REPORT_FAIL_MUTATE | REPORT_FAIL_REJECT);
	CHECK_INT(report_fail_on_parse("none", &bits), 0);
	CHECK_INT(bits, 0);
	CHECK_INT(report_fail_on_parse("leak,", &bits), 0);
	CHECK_INT(bits, REPORT_FAIL_LEAK);
	CHECK_INT(report_fail_on_parse("leaks", &bits), -1);
	CHECK_INT(report_fail_on_parse("idle,,x", &bits), -1);
}

static void test_money(void)
{
	char buf[32];

	report_money(294.96, buf, sizeof buf);
	CHECK_STR(buf, "$295/h");
	report_money(0.526, buf, sizeof buf);
	CHECK_STR(buf, "$0.53/h");
	report_money(99.999, buf, sizeof buf);
	CHECK_STR(buf, "$100/h");
}

#define NODE(name, pool, taint, gpus) \
	"{\"kind\":\"Node\",\"metadata\":{\"name\":\"" name "\",\"labels\":{\"agentpool\":\"" pool "\"}}," \
	"\"spec\":{" taint "},\"status\":{\"allocatable\":{\"nvidia.com/gpu\":\"" gpus "\"}}}"
#define SKU "\"taints\":[{\"key\":\"sku\",\"value\":\"gpu\",\"effect\":\"NoSchedule\"}]"
#define POD(name, node, extra, gpus) \
	"{\"kind\":\"Pod\",\"metadata\":{\"name\":\"" name "\",\"namespace\":\"ml\"},\"spec\":{" node extra \
	"\"containers\":[{\"name\":\"c\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":\"" gpus "\"}}}]}," \
	"\"status\":{\"phase\":\"%s\"}}"

static void test_tiny_cluster(void)
{
	static const char policy[] =
		"pools:\n"
		"  - {name: a, nodeSelector: {agentpool: a}, pricePerNodeHour: 10, gpusPerNode: 4}\n";
	char text[4096];
	struct config *cfg = NULL;
	struct report r;
	struct report_totals t;

	/* Pods first: their nodes are judged when they come. An init peak of 3 beats the app's 1. */
	snprintf(text, sizeof text,
		 "{\"items\":["
		 POD("busy", "\"nodeName\":\"n1\",", "\"initContainers\":[{\"name\":\"i\",\"resources\":{\"limits\":{\"nvidia.com/gpu\":3}}}],", "1") ","
		 POD("done", "\"nodeName\":\"n2\",", "", "4") ","
		 POD("wait", "", "\"tolerations\":[{\"key\":\"sku\",\"operator\":\"Exists\"}],", "4") ","
		 NODE("n1", "a", SKU, "4") "," NODE("n2", "a", SKU, "4") "," NODE("n3", "a", "", "0")
		 "]}", "Running", "Succeeded", "Pending");
	CHECK_INT(report_fixture_judge(policy, text, &cfg, &r), 0);
	report_totals(&r, &t);
	CHECK_INT(t.nodes, 3);
	CHECK_INT(t.idle_nodes, 2);                 /* n2 ran only a terminated pod; n3 has nothing */
	CHECK_INT(t.gpus_allocatable, 8);
	CHECK_INT(t.gpus_requested, 3);             /* the init peak */
	CHECK(t.idle_cost > 19.99 && t.idle_cost < 20.01);
	CHECK(t.unrequested_cost > 12.49 && t.unrequested_cost < 12.51); /* (1 + 4) GPUs at 10/4 */
	CHECK_INT(r.terminated_pods, 1);
	CHECK_INT(r.pending.total, 1);
	/* n2 has 4 free GPUs and wait tolerates sku: the cause is elsewhere. */
	CHECK_INT(REPORT_AT(r.pending, struct report_pending, 0)->reason, REPORT_PENDING_OTHER);
	CHECK_INT(r.misconfigs.total, 2);           /* n3: untainted, and taints differ from n1's */
	CHECK_INT(report_exit_code(&r, REPORT_FAIL_REJECT), 0);
	CHECK_INT(report_exit_code(&r, REPORT_FAIL_PENDING), 1);
	report_free(&r);
	config_free(cfg);
}

int main(void)
{
	RUN(test_fail_on);
	RUN(test_money);
	RUN(test_tiny_cluster);
	return check_done("report");
}
