/*
 * The report's model applied event by event equals the report of the final
 * state read from scratch (differential, randomized with fixed seeds): random
 * Node, Pod, ResourceSlice and ResourceClaim ADDED / MODIFIED / DELETED events
 * on a small cluster (DRA pods whose claims are allocated, reserved for them
 * or not, of served, unserved and non-GPU classes), and at checkpoints the
 * model's JSON report compared with `report` over a List of the same objects
 * (nodes in the order first added, then the slices and claims, pods in the
 * order last added, as report_model.h promises), and the same for the what-if
 * (`report --what-if` by another policy, which refuses running GPU pods: the
 * model must name them as the report does). A relist (report_model_list_begin /
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
#define CLAIMS 12     /* claim-NN, in namespace ml when NN is odd (as pod-NNN) */
#define EVENTS 4000
#define CHECKPOINT 250
#define SHARED_PODS 900  /* test_judged_shared: GPU pods ... */
#define TEXTS 400        /* ... of this many distinct texts at most */

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
	"     nodeSelector: {agentpool: t4}, deviceClasses: [gpu.nvidia.com]}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], pricePerNodeHour: 27.197, gpusPerNode: 8,\n"
	"     nodeSelector: {agentpool: a100}, deviceClasses: [gpu.nvidia.com, mig.nvidia.com]}\n";

/*
 * The what-if policy: the same pools, the t4 pool kept for namespace web and the A100 pool's pods
 * held to 1 GPU, so that running GPU pods of ml on t4 nodes, and of 2 GPUs on A100 nodes, are refused.
 */
static const char whatif_policy[] =
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, pricePerNodeHour: 0.526, gpusPerNode: 1,\n"
	"     namespaces: [web], nodeSelector: {agentpool: t4}, deviceClasses: [gpu.nvidia.com]}\n"
	"  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 1, pricePerNodeHour: 27.197,\n"
	"     gpusPerNode: 8, nodeSelector: {agentpool: a100}, deviceClasses: [gpu.nvidia.com, mig.nvidia.com]}\n";

static const char *const classes[] = { "gpu.nvidia.com", "gpu.amd.com", "example.com.fpga" };  /* served, unserved, no GPU */

/* Node i's ResourceSlice: a GPU driver's or another's, with 0-2 devices. */
static json_t *make_slice(int i)
{
	char name[32], node[32];
	json_t *devices = json_array();
	int n = (int)rnd(3), d;

	snprintf(name, sizeof name, "slice-%02d", i);
	snprintf(node, sizeof node, "node-%02d", i);
	for (d = 0; d < n; d++)
		json_array_append_new(devices, json_pack("{s:s}", "name", d ? "gpu-1" : "gpu-0"));
	return json_pack("{s:s, s:{s:s}, s:{s:s, s:s, s:o}}", "kind", "ResourceSlice", "metadata", "name", name,
			 "spec", "driver", rnd(3) ? "gpu.nvidia.com" : "example.com.nic", "nodeName", node,
			 "devices", devices);
}

/* Claim k: a class, allocated or not on a node, reserved for a pod of its namespace or not. */
static json_t *make_claim(int k)
{
	char name[32], node[32], pod[32];
	const char *cls = classes[rnd(3)];
	json_t *claim, *results = json_array();
	int count = 1 + (int)rnd(2), d;

	snprintf(name, sizeof name, "claim-%02d", k);
	snprintf(node, sizeof node, "node-%02d", (int)rnd(NODES + 1));
	snprintf(pod, sizeof pod, "pod-%03d", 2 * (int)rnd(PODS / 2) + k % 2);
	claim = json_pack("{s:s, s:{s:s, s:s}, s:{s:{s:[{s:s, s:{s:s, s:i}}]}}}", "kind", "ResourceClaim",
			  "metadata", "name", name, "namespace", k % 2 ? "ml" : "web", "spec", "devices", "requests",
			  "name", "gpu", "exactly", "deviceClassName", cls, "count", count);
	if (rnd(3) == 0) {
		json_decref(results);
		return claim;
	}
	for (d = 0; d < count; d++)
		json_array_append_new(results, json_pack("{s:s, s:s, s:s, s:s}", "request", "gpu", "driver", cls,
							 "pool", node, "device", d ? "gpu-1" : "gpu-0"));
	json_object_set_new(claim, "status", json_pack("{s:{s:{s:o}, s:{s:[{s:[{s:s, s:s, s:[s]}]}]}}}",
		"allocation", "devices", "results", results, "nodeSelector", "nodeSelectorTerms", "matchFields",
		"key", "metadata.name", "operator", "In", "values", node));
	if (rnd(4) != 0)
		json_object_set_new(json_object_get(claim, "status"), "reservedFor",
				    json_pack("[{s:s, s:s, s:s}]", "resource", "pods", "name", pod, "uid", "u"));
	return claim;
}

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
	if (rnd(4) == 0) {  /* a DRA pod: a claim of its namespace, used by its container */
		char claim[32];
		json_t *c = json_array_get(json_object_get(spec, "containers"), 0);

		snprintf(claim, sizeof claim, "claim-%02d", 2 * (int)rnd(CLAIMS / 2) + j % 2);
		json_object_set_new(spec, "resourceClaims", json_pack("[{s:s, s:s}]", "name", "gpu", "resourceClaimName", claim));
		if (json_object_get(c, "resources") == NULL)
			json_object_set_new(c, "resources", json_object());
		json_object_set_new(json_object_get(c, "resources"), "claims", json_pack("[{s:s}]", "name", "gpu"));
		if (shape == 2 && rnd(2))  /* Pending, its claim its only GPU */
			json_object_del(json_object_get(c, "resources"), "limits");
	}
	pod = json_pack("{s:s, s:o, s:o, s:{s:s}}", "kind", "Pod", "metadata", meta, "spec", spec, "status", "phase",
			shape == 2 ? "Pending" : phases[rnd(6)]);
	return pod;
}

struct tracked {
	json_t *obj;               /* NULL when deleted (or never added) */
	unsigned long order;       /* pods: when last added; nodes: when first added */
	int seen;                  /* nodes: added once */
};

/* The JSON report of text (a List) read from scratch, judged also by whatif (NULL: none) as `report --what-if`. */
static char *from_scratch_whatif(const struct config *cfg, const struct config *whatif, const char *text)
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
	if (report_init(&r, cfg, &err) == 0 && (whatif == NULL || (report_whatif_set(&r, whatif, "what-if"), 1)) &&
	    report_input(&r, "list", fd, &err) == 0 &&
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

static char *from_scratch(const struct config *cfg, const char *text)
{
	return from_scratch_whatif(cfg, NULL, text);
}

/*
 * The model's JSON report, judged also by whatif (NULL: none); *gpu_refused (may be NULL) = the running
 * pods the what-if refuses that request GPUs (pods, the tracked state, names them).
 */
static char *of_model_whatif(const struct report_model *m, const struct config *whatif, const struct tracked *pods,
			     int *gpu_refused)
{
	struct report r;
	struct error err = { 0 };
	char *buf = NULL;
	size_t len = 0, i;
	FILE *out = open_memstream(&buf, &len);

	memset(&r, 0, sizeof r);
	if (out == NULL || report_model_whatif(m, whatif, "what-if", &r, &err) != 0 ||
	    report_json_write(&r, out, report_exit_code(&r, 0), 'j') != 0) {
		fprintf(stderr, "  model report: %s\n", err.msg);
	}
	if (out != NULL)
		fclose(out);
	for (i = 0; gpu_refused != NULL && i < r.whatif.refused.n; i++) {
		const struct report_wi_refused *f = REPORT_AT(r.whatif.refused, struct report_wi_refused, i);
		int j = atoi(f->name + strlen("pod-"));
		const json_t *c = json_array_get(json_object_get(json_object_get(pods[j].obj, "spec"), "containers"), 0);

		*gpu_refused += json_object_size(json_object_get(json_object_get(c, "resources"), "limits")) > 0;
	}
	report_free(&r);
	return buf;
}

static char *of_model(const struct report_model *m)
{
	return of_model_whatif(m, NULL, NULL, NULL);
}

/* The List of the tracked state: nodes by slot, then slices and claims (dra, may be NULL), pods by when last added. */
static char *final_list(struct tracked *nodes, struct tracked *dra, struct tracked *pods)
{
	json_t *items = json_array(), *list;
	unsigned long next = 0, best;
	char *text;
	int i, pick;

	for (next = 0; next < NODES; next++)  /* nodes by when first added */
		for (i = 0; i < NODES; i++)
			if (nodes[i].obj != NULL && nodes[i].order == next)
				json_array_append(items, nodes[i].obj);
	for (i = 0; dra != NULL && i < NODES + CLAIMS; i++)
		if (dra[i].obj != NULL)
			json_array_append(items, dra[i].obj);
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

/* Are want and got (JSON reports, NULL when not made) the same? If not, where they part, on stderr. */
static int same_report(unsigned long long seed, int event, const char *what, const char *want, const char *got)
{
	size_t at = 0;

	if (want != NULL && got != NULL && strcmp(want, got) == 0)
		return 1;
	while (want && got && want[at] && want[at] == got[at])
		at++;
	fprintf(stderr, "  seed %llu, event %d: the model's %s differs at byte %zu:\n    got:  %.200s\n"
		"    want: %.200s\n", seed, event, what, at, got ? got + (at > 80 ? at - 80 : 0) : "(none)",
		want ? want + (at > 80 ? at - 80 : 0) : "(none)");
	return 0;
}

static void differential(unsigned long long seed)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct config *wcfg = config_load_buffer(whatif_policy, sizeof whatif_policy - 1, "what-if.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct tracked nodes[NODES], pods[PODS], dra[NODES + CLAIMS];  /* dra: the slices, then the claims */
	unsigned long order = 0, node_order = 0;
	int e, same = 0, same_wi = 0, checks = 0, unallocated = 0, unserved = 0, gpu_refused = 0;

	rng = seed;
	memset(nodes, 0, sizeof nodes);
	memset(pods, 0, sizeof pods);
	memset(dra, 0, sizeof dra);
	CHECK(m != NULL && wcfg != NULL);
	for (e = 0; m != NULL && wcfg != NULL && e < EVENTS; e++) {
		int kind = (int)rnd(6), is_node = kind == 0, is_dra = kind == 1;
		int i = (int)rnd(is_node ? NODES : is_dra ? NODES + CLAIMS : PODS), del = rnd(4) == 0;
		struct tracked *t = is_node ? &nodes[i] : is_dra ? &dra[i] : &pods[i];

		if (del && t->obj != NULL) {
			CHECK_INT(apply(m, REPORT_EVENT_DELETED, t->obj), 0);
			json_decref(t->obj);
			t->obj = NULL;
		} else if (!del) {
			json_t *obj = is_node ? make_node(i) : !is_dra ? make_pod(i) :
				      i < NODES ? make_slice(i) : make_claim(i - NODES);

			CHECK_INT(apply(m, t->obj ? REPORT_EVENT_MODIFIED : REPORT_EVENT_ADDED, obj), 0);
			if (!is_node && !is_dra && t->obj == NULL)
				t->order = order++;
			if (is_node && !t->seen)
				t->order = node_order++;
			t->seen = 1;
			json_decref(t->obj);
			t->obj = obj;
		}
		if ((e + 1) % CHECKPOINT == 0) {
			char *text = final_list(nodes, dra, pods), *want = text ? from_scratch(cfg, text) : NULL;
			char *got = of_model(m);
			char *want_wi = text ? from_scratch_whatif(cfg, wcfg, text) : NULL;
			char *got_wi = of_model_whatif(m, wcfg, pods, &gpu_refused);

			checks++;
			unallocated += got != NULL && strstr(got, "claim not allocated") != NULL;
			unserved += got != NULL && strstr(got, "DeviceClass no pool serves") != NULL;
			same += same_report(seed, e + 1, "report", want, got);
			same_wi += same_report(seed, e + 1, "what-if", want_wi, got_wi);
			free(text);
			free(want);
			free(got);
			free(want_wi);
			free(got_wi);
		}
	}
	CHECK_INT(same, EVENTS / CHECKPOINT);
	CHECK_INT(same_wi, EVENTS / CHECKPOINT);
	CHECK(checks == EVENTS / CHECKPOINT);
	/* The what-if refuses running GPU pods, which the model must name as the report does. */
	CHECK(gpu_refused > 0);
	/* The streams reach the DRA judgements, not only the resources' (report_dra.c). */
	CHECK(unallocated > 0 && unserved > 0);
	for (e = 0; e < NODES; e++)
		json_decref(nodes[e].obj);
	for (e = 0; e < PODS; e++)
		json_decref(pods[e].obj);
	for (e = 0; e < NODES + CLAIMS; e++)
		json_decref(dra[e].obj);
	report_model_free(m);
	config_free(wcfg);
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
	text = final_list(nodes, NULL, pods);
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
	text = final_list(nodes, NULL, pods);
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

/* A running GPU pod of label v=value on node-00, named p-NNN. */
static json_t *labelled_gpu_pod(int i, int value)
{
	char name[32], v[16];

	snprintf(name, sizeof name, "p-%03d", i);
	snprintf(v, sizeof v, "%d", value);
	return json_pack("{s:s, s:{s:s, s:s, s:{s:s}}, s:{s:s, s:[o]}, s:{s:s}}", "kind", "Pod", "metadata", "name",
			 name, "namespace", "ml", "labels", "v", v, "spec", "nodeName", "node-00", "containers",
			 container("nvidia.com/gpu", 1), "status", "phase", "Running");
}

/* The distinct values of value[0..n) that live[] marks. */
static unsigned long distinct(const int *value, const int *live, int n)
{
	static char seen[TEXTS];
	unsigned long count = 0;
	int i;

	memset(seen, 0, sizeof seen);
	for (i = 0; i < n; i++)
		if (live[i] && !seen[value[i]]) {
			seen[value[i]] = 1;
			count++;
		}
	return count;
}

/*
 * The running GPU pods' texts are shared by equal content and freed with
 * their last pod: across the index's growth and many removals (which move
 * entries back in their runs), the model holds exactly one text per distinct
 * content among the living pods.
 */
static void test_judged_shared(void)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct report_model_stats st;
	int value[SHARED_PODS], live[SHARED_PODS], i, round;
	json_t *obj;

	CHECK(m != NULL);
	rng = 31337;
	for (i = 0; m != NULL && i < SHARED_PODS; i++) {
		value[i] = (int)rnd(TEXTS);
		live[i] = 1;
		obj = labelled_gpu_pod(i, value[i]);
		CHECK_INT(apply(m, REPORT_EVENT_ADDED, obj), 0);
		json_decref(obj);
	}
	if (m != NULL) {
		report_model_stats(m, &st);
		CHECK_INT((int)st.judged, (int)distinct(value, live, SHARED_PODS));
	}
	for (round = 0; m != NULL && round < 3 * SHARED_PODS; round++) {
		i = (int)rnd(SHARED_PODS);
		if (live[i] && rnd(2)) {
			obj = labelled_gpu_pod(i, value[i]);
			CHECK_INT(apply(m, REPORT_EVENT_DELETED, obj), 0);
			live[i] = 0;
		} else {
			value[i] = (int)rnd(TEXTS);
			obj = labelled_gpu_pod(i, value[i]);
			CHECK_INT(apply(m, live[i] ? REPORT_EVENT_MODIFIED : REPORT_EVENT_ADDED, obj), 0);
			live[i] = 1;
		}
		json_decref(obj);
		report_model_stats(m, &st);
		if ((int)st.judged != (int)distinct(value, live, SHARED_PODS)) {
			CHECK_INT((int)st.judged, (int)distinct(value, live, SHARED_PODS));
			break;
		}
	}
	for (i = 0; m != NULL && i < SHARED_PODS; i++)
		live[i] = 0;
	report_model_list_begin(m, "Pod");
	report_model_list_end(m, "Pod");  /* an empty list: every pod goes, and every text with it */
	if (m != NULL) {
		report_model_stats(m, &st);
		CHECK_INT((int)st.judged, 0);
		CHECK_INT((int)st.judged_bytes, 0);
	}
	report_model_free(m);
	config_free(cfg);
}

static void test_differential(void)
{
	differential(88172645463325252ULL);
	differential(20261126ULL);
	differential(4242ULL);
}

/*
 * DRA relists: a complete list of claims forgets the claims it did not hand
 * over (deleted during an outage) and leaves the slices alone; a list that
 * failed (no end) forgets nothing; a slice is kept without its devices'
 * attributes, and the claims are bounded as the pods are.
 */
static void test_dra_relist(void)
{
	struct error err = { 0 };
	struct config *cfg = config_load_buffer(policy, sizeof policy - 1, "policy.yaml", &err);
	struct report_model *m = cfg ? report_model_new(cfg, &err) : NULL;
	struct report_model_stats st;
	json_t *slice, *c0, *c1, *c2;

	rng = 11;
	slice = make_slice(0);
	c0 = make_claim(0);
	c1 = make_claim(1);
	c2 = make_claim(2);
	CHECK(m != NULL);
	if (m == NULL)
		goto out;
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, slice), 0);
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, c0), 0);
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, c1), 0);
	report_model_stats(m, &st);
	CHECK(st.slices == 1 && st.claims == 2);
	report_model_list_begin(m, "ResourceClaim");  /* fails after c1: no end */
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, c1), 0);
	report_model_list_begin(m, "ResourceClaim");  /* c0 was deleted, c2 added, unseen */
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, c1), 0);
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, c2), 0);
	report_model_stats(m, &st);
	CHECK(st.slices == 1 && st.claims == 3);
	report_model_list_end(m, "ResourceClaim");
	report_model_stats(m, &st);
	CHECK(st.slices == 1 && st.claims == 2);
	CHECK_INT(apply(m, REPORT_EVENT_DELETED, c0), 0);  /* gone already: nothing to count down */
	report_model_stats(m, &st);
	CHECK(st.claims == 2);
	report_model_list_begin(m, "ResourceSlice");
	report_model_list_end(m, "ResourceSlice");
	report_model_stats(m, &st);
	CHECK(st.slices == 0 && st.claims == 2);
	report_model_limit(m, 2);
	CHECK_INT(apply(m, REPORT_EVENT_ADDED, c0), 0);
	report_model_stats(m, &st);
	CHECK(st.claims == 2 && st.refused == 1);
out:
	json_decref(slice);
	json_decref(c0);
	json_decref(c1);
	json_decref(c2);
	report_model_free(m);
	config_free(cfg);
}

int main(void)
{
	RUN(test_differential);
	RUN(test_blind);
	RUN(test_relist);
	RUN(test_limit);
	RUN(test_judged_shared);
	RUN(test_dra_relist);
	return check_done("report_model");
}
