/*
 * The report's model applied event by event equals the report of the final
 * state read from scratch (differential, randomized with fixed seeds): random
 * Node and Pod ADDED / MODIFIED / DELETED events on a small cluster, and at
 * checkpoints the model's JSON report compared with `report` over a List of
 * the same objects (nodes in the order first added, pods in the order last
 * added, as report_model.h promises). A relist (report_model_list_begin /
 * _end) after an outage in which objects were added, changed and deleted
 * unseen gives the report of the state listed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "report/report.h"
#include "report/report_model.h"

#define NODES 14
#define PODS 90
#define EVENTS 4000
#define CHECKPOINT 250

static unsigned long long rng;

static unsigned rnd(unsigned n)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (unsigned)(rng % n);
}

static const char policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, pricePerNodeHour: 0.526, gpusPerNode: 1,\n"
	"     nodeSelector: {agentpool: t4}}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], pricePerNodeHour: 27.197, gpusPerNode: 8,\n"
	"     nodeSelector: {agentpool: a100}}\n";

/* Node i: 0-3 t4, 4-7 a100, 8-9 unpooled GPU (accelerator label), the rest CPU. Kinds never change. */
static json_t *make_node(int i)
{
	char name[32];
	const char *pool = i < 4 ? "t4" : i < 8 ? "a100" : i < 10 ? "gpuv100" : "cpu";
	int gpu = i < 10;
	json_t *labels = json_pack("{s:s}", "agentpool", pool), *alloc = json_pack("{s:s}", "cpu", "8");
	json_t *taints = json_array();

	snprintf(name, sizeof name, "node-%02d", i);
	if (gpu) {
		json_object_set_new(labels, "kubernetes.azure.com/accelerator", json_string("nvidia"));
		if (rnd(4) != 0)  /* some lose their taint: misconfiguration */
			json_array_append_new(taints, json_pack("{s:s, s:s, s:s}", "key", "sku", "value", "gpu",
								"effect", "NoSchedule"));
		if (rnd(5) == 0)
			json_array_append_new(taints, json_pack("{s:s, s:s}", "key", "team", "effect", "NoSchedule"));
		if (i >= 4 && i < 8 && rnd(3) == 0)
			json_object_set_new(alloc, "nvidia.com/mig-1g.5gb", json_string("56"));
		else
			json_object_set_new(alloc, "nvidia.com/gpu", json_string(i < 4 || i >= 8 ? "1" : rnd(5) ? "8" : "0"));
	}
	return json_pack("{s:s, s:{s:s, s:o}, s:{s:o}, s:{s:o}}", "kind", "Node", "metadata", "name", name,
			 "labels", labels, "spec", "taints", taints, "status", "allocatable", alloc);
}

static json_t *container(const char *resource, int gpus)
{
	json_t *c = json_pack("{s:s, s:s}", "name", "c", "image", "x");

	if (gpus > 0) {
		char n[16];

		snprintf(n, sizeof n, "%d", gpus);
		json_object_set_new(c, "resources", json_pack("{s:{s:s}}", "limits", resource, n));
	}
	return c;
}

/* Pod j in one of the shapes the report tells apart, at random. */
static json_t *make_pod(int j)
{
	static const char *const phases[] = { "Running", "Running", "Running", "Pending", "Succeeded", "Failed" };
	char name[32], node[32];
	int shape = (int)rnd(6), gpus = (int)rnd(3);
	const char *resource = rnd(4) == 0 ? "nvidia.com/mig-1g.5gb" : "nvidia.com/gpu";
	json_t *meta, *spec, *pod;

	snprintf(name, sizeof name, "pod-%03d", j);
	snprintf(node, sizeof node, "node-%02d", (int)rnd(NODES + 1));  /* node-14 is never listed */
	meta = json_pack("{s:s, s:s}", "name", name, "namespace", j % 2 ? "ml" : "web");  /* a pod keeps its namespace */
	spec = json_pack("{s:[o]}", "containers", container(resource, shape <= 2 ? gpus + 1 : 0));
	if (shape != 2)  /* shape 2: Pending, not bound */
		json_object_set_new(spec, "nodeName", json_string(node));
	if (shape == 3)  /* a DaemonSet pod */
		json_object_set_new(meta, "ownerReferences", json_pack("[{s:s, s:s, s:s, s:s, s:b}]", "apiVersion",
			"apps/v1", "kind", "DaemonSet", "name", rnd(2) ? "dcgm" : "kube-proxy", "uid", "u", "controller", 1));
	if (rnd(2))
		json_object_set_new(spec, "tolerations", json_pack("[{s:s, s:s, s:s, s:s}]", "key", "sku", "operator",
								     "Equal", "value", "gpu", "effect", "NoSchedule"));
	if (rnd(3) == 0)
		json_object_set_new(spec, "nodeSelector", json_pack("{s:s}", "agentpool", rnd(2) ? "t4" : "a100"));
	if (rnd(8) == 0)
		json_object_set_new(spec, "schedulingGates", json_pack("[{s:s}]", "name", "kueue"));
	pod = json_pack("{s:s, s:o, s:o, s:{s:s}}", "kind", "Pod", "metadata", meta, "spec", spec, "status", "phase",
			shape == 2 ? "Pending" : phases[rnd(6)]);
	return pod;
}

struct tracked {
	json_t *obj;               /* NULL when deleted (or never added) */
	unsigned long order;       /* pods: when last added; nodes: when first added */
	int seen;                  /* nodes: added once */
};

/* The JSON report of text (a List) read from scratch. */
static char *from_scratch(const struct config *cfg, const char *text)
{
	struct report r;
	struct error err = { 0 };
	FILE *f = tmpfile(), *out = tmpfile();
	char *buf = NULL;
	long len;
	int fd;

	memset(&r, 0, sizeof r);
	if (f == NULL || out == NULL || fputs(text, f) < 0 || fflush(f) != 0)
		goto done;
	fd = dup(fileno(f));
	lseek(fd, 0, SEEK_SET);
	if (report_init(&r, cfg, &err) == 0 && report_input(&r, "list", fd, &err) == 0 &&
	    report_finish(&r, &err) == 0 && report_json_write(&r, out, report_exit_code(&r, 0), 'j') == 0 &&
	    (len = ftell(out)) > 0 && (buf = calloc(1, (size_t)len + 1)) != NULL) {
		rewind(out);
		if (fread(buf, 1, (size_t)len, out) != (size_t)len)
			buf[0] = '\0';
	}
	close(fd);
done:
	report_free(&r);
	if (f != NULL)
		fclose(f);
	if (out != NULL)
		fclose(out);
	return buf;
}

static char *of_model(const struct report_model *m)
{
	struct report r;
	struct error err = { 0 };
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	memset(&r, 0, sizeof r);
	if (out == NULL || report_model_report(m, &r, &err) != 0 ||
	    report_json_write(&r, out, report_exit_code(&r, 0), 'j') != 0) {
		fprintf(stderr, "  model report: %s\n", err.msg);
	}
	if (out != NULL)
		fclose(out);
	report_free(&r);
	return buf;
}

/* The List of the tracked state: nodes by slot, pods by when last added. */
static char *final_list(struct tracked *nodes, struct tracked *pods)
{
	json_t *items = json_array(), *list;
	unsigned long next = 0, best;
	char *text;
	int i, pick;

	for (next = 0; next < NODES; next++)  /* nodes by when first added */
		for (i = 0; i < NODES; i++)
			if (nodes[i].obj != NULL && nodes[i].order == next)
				json_array_append(items, nodes[i].obj);
	next = 0;
	for (;;) {  /* PODS is small: selection by order */
		pick = -1;
		best = (unsigned long)-1;
		for (i = 0; i < PODS; i++)
			if (pods[i].obj != NULL && pods[i].order >= next && pods[i].order < best) {
				best = pods[i].order;
				pick = i;
			}
		if (pick < 0)
			break;
		json_array_append(items, pods[pick].obj);
		next = best + 1;
	}
	list = json_pack("{s:s, s:o}", "kind", "List", "items", items);
	text = json_dumps(list, JSON_COMPACT);
	json_decref(list);
	return text;
}

/* One event: the object dumped and read back as the watch would hand it over. */
static int apply(struct report_model *m, enum report_event_type ev, const json_t *obj)
{
	char *text = json_dumps(obj, JSON_COMPACT);
	json_error_t jerr;
	json_t *item = text ? report_item_parse(text, strlen(text), &jerr) : NULL;
	struct error err = { 0 };
	int rc = item ? report_model_apply(m, ev, item, &err) : -1;

	json_decref(item);
	free(text);
	return rc;
}

static void differential(unsigned long long seed)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct tracked nodes[NODES], pods[PODS];
	unsigned long order = 0, node_order = 0;
	int e, same = 0, checks = 0;

	rng = seed;
	memset(nodes, 0, sizeof nodes);
	memset(pods, 0, sizeof pods);
	CHECK(m != NULL);
	for (e = 0; m != NULL && e < EVENTS; e++) {
		int is_node = rnd(6) == 0, i = (int)rnd(is_node ? NODES : PODS), del = rnd(4) == 0;
		struct tracked *t = is_node ? &nodes[i] : &pods[i];

		if (del && t->obj != NULL) {
			CHECK_INT(apply(m, REPORT_EVENT_DELETED, t->obj), 0);
			json_decref(t->obj);
			t->obj = NULL;
		} else if (!del) {
			json_t *obj = is_node ? make_node(i) : make_pod(i);

			CHECK_INT(apply(m, t->obj ? REPORT_EVENT_MODIFIED : REPORT_EVENT_ADDED, obj), 0);
			if (!is_node && t->obj == NULL)
				t->order = order++;
			if (is_node && !t->seen)
				t->order = node_order++;
			t->seen = 1;
			json_decref(t->obj);
			t->obj = obj;
		}
		if ((e + 1) % CHECKPOINT == 0) {
			char *text = final_list(nodes, pods), *want = text ? from_scratch(cfg, text) : NULL;
			char *got = of_model(m);

			checks++;
			if (want != NULL && got != NULL && strcmp(want, got) == 0) {
				same++;
			} else {
				size_t at = 0;

				while (want && got && want[at] && want[at] == got[at])
					at++;
				fprintf(stderr, "  seed %llu, event %d: the model differs at byte %zu:\n    got:  %.200s\n"
					"    want: %.200s\n", seed, e + 1, at, got ? got + (at > 80 ? at - 80 : 0) : "(none)",
					want ? want + (at > 80 ? at - 80 : 0) : "(none)");
			}
			free(text);
			free(want);
			free(got);
		}
	}
	CHECK_INT(same, EVENTS / CHECKPOINT);
	CHECK(checks == EVENTS / CHECKPOINT);
	for (e = 0; e < NODES; e++)
		json_decref(nodes[e].obj);
	for (e = 0; e < PODS; e++)
		json_decref(pods[e].obj);
	report_model_free(m);
	config_free(cfg);
}

/* The comparison can fail: a model that missed one event differs from the List. */
static void test_blind(void)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct tracked nodes[NODES], pods[PODS];
	char *text, *want, *got;

	rng = 7;
	memset(nodes, 0, sizeof nodes);
	memset(pods, 0, sizeof pods);
	nodes[0].obj = make_node(0);
	pods[0].obj = make_pod(0);
	json_object_set_new(json_object_get(pods[0].obj, "spec"), "nodeName", json_string("node-00"));
	json_object_set_new(json_object_get(pods[0].obj, "status"), "phase", json_string("Running"));
	CHECK(m != NULL && apply(m, REPORT_EVENT_ADDED, nodes[0].obj) == 0);  /* the pod's event is missed */
	text = final_list(nodes, pods);
	want = text ? from_scratch(cfg, text) : NULL;
	got = m ? of_model(m) : NULL;
	CHECK(want != NULL && got != NULL && strcmp(want, got) != 0);
	free(text);
	free(want);
	free(got);
	json_decref(nodes[0].obj);
	json_decref(pods[0].obj);
	report_model_free(m);
	config_free(cfg);
}

/*
 * An outage: the truth moves on unseen (changes, deletions, new objects),
 * then both kinds are listed again. With end 0 the lists never end (failed):
 * what the outage deleted is still there, so the model must differ.
 */
static int relist(unsigned long long seed, int end)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct tracked nodes[NODES], pods[PODS];
	int live_pod[PODS];
	unsigned long order = 0, node_order = 0;
	char *text, *want, *got;
	int i, e, same;

	rng = seed;
	memset(nodes, 0, sizeof nodes);
	memset(pods, 0, sizeof pods);
	CHECK(m != NULL);
	for (e = 0; m != NULL && e < 600; e++) {  /* the state before the outage, seen */
		int is_node = rnd(6) == 0, j = (int)rnd(is_node ? NODES : PODS);
		struct tracked *t = is_node ? &nodes[j] : &pods[j];
		json_t *obj = is_node ? make_node(j) : make_pod(j);

		CHECK_INT(apply(m, REPORT_EVENT_ADDED, obj), 0);
		if (!is_node && t->obj == NULL)
			t->order = order++;
		if (is_node && !t->seen)
			t->order = node_order++;
		t->seen = 1;
		json_decref(t->obj);
		t->obj = obj;
	}
	for (i = 0; i < PODS; i++)
		live_pod[i] = pods[i].obj != NULL;
	for (e = 0; e < 300; e++) {  /* the outage: nothing reaches the model */
		int is_node = rnd(6) == 0, j = (int)rnd(is_node ? NODES : PODS);
		struct tracked *t = is_node ? &nodes[j] : &pods[j];

		json_decref(t->obj);
		t->obj = rnd(3) == 0 ? NULL : is_node ? make_node(j) : make_pod(j);
	}
	/* The lists, in slot order: what was not held is added at the end, in that order. */
	report_model_list_begin(m, "Node");
	for (i = 0; i < NODES; i++) {
		if (nodes[i].obj == NULL)
			continue;
		if (!nodes[i].seen)
			nodes[i].order = node_order++;
		nodes[i].seen = 1;
		CHECK_INT(apply(m, REPORT_EVENT_ADDED, nodes[i].obj), 0);
	}
	if (end)
		report_model_list_end(m, "Node");
	report_model_list_begin(m, "Pod");
	for (i = 0; i < PODS; i++) {
		if (pods[i].obj == NULL)
			continue;
		if (!live_pod[i])
			pods[i].order = order++;
		CHECK_INT(apply(m, REPORT_EVENT_ADDED, pods[i].obj), 0);
	}
	if (end)
		report_model_list_end(m, "Pod");
	text = final_list(nodes, pods);
	want = text ? from_scratch(cfg, text) : NULL;
	got = m ? of_model(m) : NULL;
	same = want != NULL && got != NULL && strcmp(want, got) == 0;
	if (!same && end)
		fprintf(stderr, "  seed %llu: the relisted model differs:\n    got:  %.300s\n    want: %.300s\n", seed,
			got ? got : "(none)", want ? want : "(none)");
	free(text);
	free(want);
	free(got);
	for (i = 0; i < NODES; i++)
		json_decref(nodes[i].obj);
	for (i = 0; i < PODS; i++)
		json_decref(pods[i].obj);
	report_model_free(m);
	config_free(cfg);
	return same;
}

static void test_relist(void)
{
	CHECK(relist(1234567ULL, 1));
	CHECK(relist(99991ULL, 1));
	CHECK(relist(20261127ULL, 1));
	CHECK(!relist(1234567ULL, 0));  /* without the sweep, the outage's deletions linger */
}

/* A bound on pods: the one beyond it is refused and counted, the model unchanged. */
static void test_limit(void)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct report_model_stats st;
	json_t *a, *b;

	CHECK(m != NULL);
	report_model_limit(m, 1);
	rng = 5;
	a = make_pod(1);
	b = make_pod(2);
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, a), 0);
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, b), 0);
	CHECK_INT(apply(m, REPORT_EVENT_MODIFIED, a), 0);  /* a pod held may change */
	report_model_stats(m, &st);
	CHECK_INT((int)st.pods, 1);
	CHECK_INT((int)st.refused, 1);
	json_decref(a);
	json_decref(b);
	report_model_free(m);
	config_free(cfg);
}

static void test_differential(void)
{
	differential(88172645463325252ULL);
	differential(20261126ULL);
	differential(4242ULL);
}

int main(void)
{
	RUN(test_differential);
	RUN(test_blind);
	RUN(test_relist);
	RUN(test_limit);
	return check_done("report_model");
}
