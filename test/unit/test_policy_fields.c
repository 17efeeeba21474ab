/*
 * The fields of a pod the policy reads are declared once, next to its reads
 * (policy_pod_fields in pkg/policy/policy_pod.c), and every fast path keeps only
 * those (review's AdmissionReview scan, report's item scan). This test fails
 * when the policy reads a field the declaration does not keep. How:
 *
 *  - The reads are instrumented. This binary is linked with
 *    -Wl,--wrap=json_object_get -Wl,--wrap=json_object_iter (Makefile): every
 *    lookup of a member the policy makes, present or not, and every walk over
 *    an object's members is recorded, on the objects it is made on.
 *  - The pod is maximal: test/policy/maximal-pod.json holds every field of
 *    the Kubernetes Pod schema (PodSpec, ObjectMeta, Container and what they
 *    reach; generated from the OpenAPI definitions by
 *    test/policy/gen-maximal-pod.py), and variants of it (a GPU pod, a
 *    sidecar's GPUs, a CPU pod on each route to GPU nodes, a DaemonSet's, a
 *    queued one, with and without DRA claims) are judged under three policies
 *    (the default; pinned pools with namespaces, podSelector, tolerations and
 *    derivable node names; fallback placement), on CREATE, on /validate and
 *    on UPDATE against the plain pod: the policy's code paths run.
 *  - Each object of the pod is mapped to what the declaration does with it:
 *    shaped (kept with only the members its entries name), kept whole, or
 *    dropped. A read on a shaped object must name a member the declaration
 *    keeps; a walk over its members is a read of all of them; nothing may be
 *    read inside a dropped one.
 *  - And the pod pruned as the fast paths prune it (scan_extract() with
 *    policy_pod_fields) must get the same verdict, reason, message, patch,
 *    fix, warnings and annotations as the whole one.
 * A check of the checker runs first: a read of a field nobody declared must
 * be caught.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "policy/config.h"
#include "policy/policy.h"
#include "text/scan.h"

/* ==== The instrumented reads ==== */

json_t *__real_json_object_get(const json_t *object, const char *key);
json_t *__wrap_json_object_get(const json_t *object, const char *key);
void *__real_json_object_iter(json_t *object);
void *__wrap_json_object_iter(json_t *object);

#define READS_MAX 200000

struct read {
	const json_t *object;
	char key[64];   /* "" for a walk over every member */
};

static struct read reads[READS_MAX];
static size_t n_reads;
static int recording;

json_t *__wrap_json_object_get(const json_t *object, const char *key)
{
	if (recording && n_reads < READS_MAX && key != NULL) {
		reads[n_reads].object = object;
		snprintf(reads[n_reads].key, sizeof reads[n_reads].key, "%s", key);
		n_reads++;
	}
	return __real_json_object_get(object, key);
}

void *__wrap_json_object_iter(json_t *object)
{
	if (recording && n_reads < READS_MAX) {
		reads[n_reads].object = object;
		reads[n_reads].key[0] = '\0';
		n_reads++;
	}
	return __real_json_object_iter(object);
}

/* ==== What the declaration does with each object of a pod ==== */

enum kept { SHAPED, WHOLE, DROPPED };

struct mapped {
	const json_t *object;
	enum kept kept;
	const struct scan_shape *shape;  /* SHAPED: the members kept */
	char path[256];
};

#define MAPPED_MAX 8192

static struct mapped map[MAPPED_MAX];
static size_t n_map;

/* The entry of shape (through SCAN_ALSO tables) naming key, or NULL. */
static const struct scan_shape *entry(const struct scan_shape *shape, const char *key)
{
	while (shape != NULL) {
		for (; shape->key != NULL; shape++)
			if (strcmp(shape->key, key) == 0)
				return shape;
		shape = shape->kind == SCAN_ALSO ? shape->children : NULL;
	}
	return NULL;
}

static void map_value(const json_t *v, enum kept kept, const struct scan_shape *shape, enum scan_kind kind,
		      const char *path);

static void map_object(const json_t *obj, enum kept kept, const struct scan_shape *shape, const char *path)
{
	const char *key;
	json_t *child;
	char sub[256];

	if (n_map < MAPPED_MAX) {
		map[n_map].object = obj;
		map[n_map].kept = kept;
		map[n_map].shape = shape;
		snprintf(map[n_map].path, sizeof map[n_map].path, "%s", path);
		n_map++;
	}
	json_object_foreach((json_t *)(uintptr_t)obj, key, child) {
		const struct scan_shape *e = kept == SHAPED ? entry(shape, key) : NULL;

		snprintf(sub, sizeof sub, "%s.%s", path, key);
		if (kept != SHAPED)
			map_value(child, kept, NULL, SCAN_WHOLE, sub);
		else if (e == NULL)
			map_value(child, DROPPED, NULL, SCAN_WHOLE, sub);
		else
			map_value(child, SHAPED, e->children, e->kind, sub);
	}
}

/* A member kept as kind says (SHAPED only: a container of the expected type is shaped, else whole). */
static void map_value(const json_t *v, enum kept kept, const struct scan_shape *shape, enum scan_kind kind,
		      const char *path)
{
	size_t i;
	char sub[256];

	if (kept == SHAPED && !(kind == SCAN_OBJECT && json_is_object(v)) &&
	    !(kind == SCAN_ARRAY_OF_OBJECTS && json_is_array(v)))
		kept = WHOLE;
	if (json_is_object(v)) {
		map_object(v, kept, shape, path);
	} else if (json_is_array(v)) {
		for (i = 0; i < json_array_size(v); i++) {
			snprintf(sub, sizeof sub, "%s[%zu]", path, i);
			if (kept == SHAPED && json_is_object(json_array_get(v, i)))
				map_object(json_array_get(v, i), SHAPED, shape, sub);
			else
				map_value(json_array_get(v, i), kept == SHAPED ? WHOLE : kept, NULL, SCAN_WHOLE, sub);
		}
	}
}

static const struct mapped *mapped(const json_t *object)
{
	size_t i;

	for (i = 0; i < n_map; i++)
		if (map[i].object == object)
			return &map[i];
	return NULL;
}

/* The reads recorded that the declaration does not cover (reported, counted); reads cleared. */
static int undeclared_reads(const char *what)
{
	size_t i;
	int bad = 0;

	for (i = 0; i < n_reads; i++) {
		const struct mapped *m = mapped(reads[i].object);

		if (m == NULL || m->kept == WHOLE)
			continue;  /* not the pod's, or kept whole */
		if (m->kept == DROPPED) {
			if (bad++ < 5)
				fprintf(stderr, "  %s: reads %s%s%s, which the fast paths drop\n", what, m->path,
					reads[i].key[0] ? "." : "", reads[i].key);
		} else if (reads[i].key[0] == '\0') {
			if (bad++ < 5)
				fprintf(stderr, "  %s: walks every member of %s, whose members the fast paths prune\n",
					what, m->path);
		} else if (entry(m->shape, reads[i].key) == NULL) {
			if (bad++ < 5)
				fprintf(stderr, "  %s: reads %s.%s, which policy_pod_fields does not declare\n", what,
					m->path, reads[i].key);
		}
	}
	n_reads = 0;
	return bad;
}

/* ==== The pods and the policies ==== */

static json_t *load_pod(void)
{
	json_error_t jerr;
	json_t *pod = json_load_file("test/policy/maximal-pod.json", 0, &jerr);

	if (pod == NULL)
		fprintf(stderr, "  test/policy/maximal-pod.json: %s\n", jerr.text);
	return pod;
}

static json_t *spec_of(json_t *pod)
{
	return json_object_get(pod, "spec");
}

static json_t *container(json_t *pod, const char *list)
{
	return json_array_get(json_object_get(spec_of(pod), list), 0);
}

/* The pod without DRA claims (the maximal pod has them): a plain CPU or GPU pod's paths. */
static void no_claims(json_t *pod)
{
	json_object_del(spec_of(pod), "resourceClaims");
	json_object_del(json_object_get(container(pod, "containers"), "resources"), "claims");
	json_object_del(json_object_get(container(pod, "initContainers"), "resources"), "claims");
}

static void set_gpu(json_t *c, int n)
{
	json_t *res = json_object_get(c, "resources");

	json_object_set_new(json_object_get(res, "limits"), "nvidia.com/gpu", json_integer(n));
	json_object_set_new(json_object_get(res, "requests"), "nvidia.com/gpu", json_integer(n));
}

#define N_VARIANTS 10

/* Variant i of the maximal pod base (new): each takes another of the policy's paths. */
static json_t *variant(const json_t *base, int i)
{
	json_t *p = json_deep_copy(base), *spec = spec_of(p), *meta = json_object_get(p, "metadata");

	switch (i) {
	case 0: break;                                       /* as generated: DRA claims, no GPU */
	case 1: no_claims(p); break;                         /* a CPU pod aiming nowhere */
	case 2: no_claims(p); set_gpu(container(p, "containers"), 1); break;   /* a GPU pod */
	case 3:                                              /* GPUs in a sidecar and an init container */
		no_claims(p);
		set_gpu(container(p, "initContainers"), 2);
		json_object_set_new(container(p, "initContainers"), "restartPolicy", json_string("Always"));
		json_object_set_new(json_object_get(meta, "labels"), "gpu-admission/pool", json_string("t4"));
		break;
	case 4:                                              /* CPU, tolerating the GPU taint */
		no_claims(p);
		json_array_append_new(json_object_get(spec, "tolerations"),
				      json_pack("{s:s, s:s, s:s, s:s}", "key", "sku", "operator", "Equal", "value",
						"gpu", "effect", "NoSchedule"));
		break;
	case 5:                                              /* CPU, selecting GPU nodes */
		no_claims(p);
		json_object_set_new(json_object_get(spec, "nodeSelector"), "kubernetes.azure.com/accelerator",
				    json_string("nvidia"));
		break;
	case 6:                                              /* CPU, GPU-only required affinity, a GPU node name */
		no_claims(p);
		json_object_set_new(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
				    "requiredDuringSchedulingIgnoredDuringExecution",
				    json_pack("{s:[{s:[{s:s, s:s, s:[s]}]}]}", "nodeSelectorTerms", "matchExpressions",
					      "key", "kubernetes.azure.com/accelerator", "operator", "In", "values",
					      "nvidia"));
		json_object_set_new(spec, "nodeName", json_string("aks-gput4-12345678-vmss000000"));
		break;
	case 7:                                              /* a DaemonSet's, tolerating the GPU taint */
		no_claims(p);
		json_object_set_new(meta, "ownerReferences",
				    json_pack("[{s:s, s:s, s:s, s:b}]", "apiVersion", "apps/v1", "kind", "DaemonSet",
					      "name", "agent", "controller", 1));
		json_array_append_new(json_object_get(spec, "tolerations"),
				      json_pack("{s:s, s:s}", "key", "sku", "operator", "Exists"));
		break;
	case 8:                                              /* a queued GPU pod */
		no_claims(p);
		set_gpu(container(p, "containers"), 1);
		json_object_set_new(json_object_get(meta, "labels"), "kueue.x-k8s.io/queue-name", json_string("q"));
		break;
	default:                                             /* GPU and DRA at once */
		set_gpu(container(p, "containers"), 8);
		break;
	}
	return p;
}

static const char *const policies[] = {
	"",
	"gpuNodeNames: []\n"
	"pools:\n"
	"  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, nodeSelector: {kubernetes.azure.com/agentpool: gput4},\n"
	"     tolerations: [{key: kubernetes.azure.com/scalesetpriority, value: spot, effect: NoSchedule}],\n"
	"     namespaces: [\"x*\", default], podSelector: {matchExpressions: [{key: x, operator: Exists}]}}\n"
	"  - {name: a100, resources: [nvidia.com/gpu], maxGPUsPerPod: 8, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}\n"
	"exempt:\n"
	"  namespaces: []\n"
	"  podSelectors: [{namespaces: [other], matchLabels: {x: x}}]\n",
	"placement: fallback\n"
	"pools:\n"
	"  - {name: a, nodeSelector: {kubernetes.azure.com/agentpool: gpua}}\n"
	"  - {name: b, nodeSelector: {kubernetes.azure.com/agentpool: gpub}}\n",
};

#define N_POLICIES (sizeof policies / sizeof policies[0])

/* Whether two results say the same. */
static int same_result(const struct policy_result *a, const struct policy_result *b)
{
	return a->decision == b->decision && a->verdict == b->verdict && a->exempt == b->exempt &&
	       strcmp(a->reason ? a->reason : "", b->reason ? b->reason : "") == 0 &&
	       strcmp(a->message, b->message) == 0 && strcmp(a->changes, b->changes) == 0 &&
	       json_equal(a->warnings, b->warnings) && json_equal(a->annotations, b->annotations) &&
	       (a->patch == b->patch || json_equal(a->patch, b->patch)) &&
	       (a->fix == b->fix || json_equal(a->fix, b->fix));
}

/* The pod as the fast paths hand it to the policy. New. */
static json_t *pruned(const json_t *pod)
{
	char *text = json_dumps(pod, JSON_COMPACT);
	json_t *p = text ? scan_extract(text, strlen(text), policy_pod_fields, 100) : NULL;

	free(text);
	return p;
}

/* ==== The tests ==== */

/* A read as the policy makes one: the result is used, as jansson insists. */
static int touch(const json_t *object, const char *key)
{
	return json_object_get(object, key) != NULL;
}

/* A check that can fail: a read nobody declared is caught, and so is a walk over a pruned object. */
static void test_undeclared_read_is_caught(void)
{
	json_t *pod = load_pod();
	int seen = 0;

	CHECK(pod != NULL);
	if (pod == NULL)
		return;
	{
		/* Found before recording: only the reads under test are recorded. */
		json_t *spec = spec_of(pod), *volumes = json_object_get(spec, "volumes");
		json_t *volume = json_array_get(volumes, 0), *affinity = json_object_get(spec, "affinity");

		n_map = 0;
		map_object(pod, SHAPED, policy_pod_fields, "pod");
		recording = 1;
		seen += touch(spec, "runtimeClassName");
		recording = 0;
		CHECK(undeclared_reads("self-check (expected)") == 1);
		recording = 1;
		seen += json_object_iter(spec) != NULL;
		seen += touch(volume, "name");
		recording = 0;
		CHECK(undeclared_reads("self-check (expected)") == 2);
		recording = 1;
		seen += touch(spec, "tolerations");
		seen += touch(affinity, "podAffinity");  /* kept whole */
		recording = 0;
		CHECK(undeclared_reads("self-check") == 0);
	}
	CHECK(seen >= 5);
	json_decref(pod);
}

/* Every read the policy makes of every variant, under every policy and operation, is declared. */
static void test_policy_reads_only_declared_fields(void)
{
	json_t *base = load_pod(), *old;
	struct config *cfg[N_POLICIES];
	struct error err = { 0 };
	size_t c;
	int v, op, bad = 0, evaluated = 0;

	CHECK(base != NULL);
	if (base == NULL)
		return;
	old = variant(base, 1);
	for (c = 0; c < N_POLICIES; c++) {
		cfg[c] = config_load_buffer(policies[c], strlen(policies[c]), "policy", &err);
		CHECK(cfg[c] != NULL);
		if (cfg[c] == NULL) {
			fprintf(stderr, "  %s\n", err.msg);
			return;
		}
	}
	for (v = 0; v < N_VARIANTS; v++) {
		json_t *pod = variant(base, v), *small = pruned(pod), *small_old = pruned(old);

		CHECK(small != NULL && small_old != NULL);
		for (c = 0; c < N_POLICIES && small != NULL; c++) {
			for (op = 0; op < 4; op++) {
				struct policy_request req = { 0 };
				struct policy_result full, part;
				char what[96];
				int rf, rp;

				req.pod = pod;
				req.ns = NULL;
				req.operation = op == 3 ? POLICY_OP_UPDATE : POLICY_OP_CREATE;
				req.old_pod = op == 3 ? old : NULL;
				req.validate = op == 1;
				req.username = op == 2 ? NULL : "system:serviceaccount:kube-system:daemon-set-controller";
				req.template = op == 2 && v % 2 == 0;
				req.daemonset = op == 2 && v == 7;
				n_map = 0;
				map_object(pod, SHAPED, policy_pod_fields, "pod");
				map_object(old, SHAPED, policy_pod_fields, "oldObject");
				recording = 1;
				rf = policy_evaluate(cfg[c], &req, &full, &err);
				recording = 0;
				snprintf(what, sizeof what, "variant %d, policy %zu, case %d", v, c, op);
				bad += undeclared_reads(what);
				req.pod = small;
				req.old_pod = op == 3 ? small_old : NULL;
				rp = policy_evaluate(cfg[c], &req, &part, &err);
				if (rf != rp || (rf == 0 && !same_result(&full, &part))) {
					fprintf(stderr, "  %s: the pruned pod is judged otherwise (%s / %s)\n", what,
						full.reason ? full.reason : "error", part.reason ? part.reason : "error");
					bad++;
				}
				evaluated += rf == 0;
				policy_result_free(&full);
				policy_result_free(&part);
			}
		}
		json_decref(small);
		json_decref(small_old);
		json_decref(pod);
	}
	CHECK_INT(bad, 0);
	CHECK(evaluated > N_VARIANTS * 3);  /* the pods are judged, not refused as unreadable */
	for (c = 0; c < N_POLICIES; c++)
		config_free(cfg[c]);
	json_decref(old);
	json_decref(base);
}

int main(void)
{
	RUN(test_undeclared_read_is_caught);
	RUN(test_policy_reads_only_declared_fields);
	return check_done("policy_fields");
}
