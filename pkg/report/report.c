/*
 * report: the cost report's model. Each item read (report_input.c) is folded
 * into it: nodes with their pools, GPUs and taints, GPU pods on them, CPU
 * pods on GPU nodes, Pending GPU pods; what needs every input is judged
 * later (report_judge.c).
 */
#include "report/report.h"
#include "report/report_int.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/hash.h"
#include "base/iterable.h"
#include "k8s/nodematch.h"
#include "policy/policy.h"
#include "base/quantity.h"

#define TAINTS_MAX 64           /* taints per node that make its signature */
#define TAINT_SIG_MAX 4096      /* bytes of one node's taint signature */

/* ==== Lists and indexes ==== */

/* A new zeroed element of l in *out; *out NULL when l holds REPORT_FINDINGS_MAX already. */
int report_list_push(struct report_list *l, size_t size, void **out, struct error *err)
{
	*out = NULL;
	l->total++;
	if (l->n == REPORT_FINDINGS_MAX)
		return 0;
	if (l->n == l->cap) {
		void *grown = array_grow(l->v, &l->cap, l->n + 1, size, 16);

		if (grown == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		l->v = grown;
	}
	*out = (char *)l->v + l->n++ * size;
	memset(*out, 0, size);
	return 0;
}

/* FNV-1a over a, then '/' and b when b is given. */
static uint64_t hash2(const char *a, const char *b)
{
	uint64_t h = hash_fnv1a_str(HASH_FNV1A_BASIS, a);

	return b != NULL ? hash_fnv1a_str(hash_fnv1a(h, "/", 1), b) : h;
}

static int same_node(const struct report *r, size_t i, const char *a, const char *b)
{
	(void)b;
	return strcmp(r->nodes[i].name, a) == 0;
}

static int same_ds(const struct report *r, size_t i, const char *a, const char *b)
{
	const struct report_daemonset *d = REPORT_AT(r->daemonsets, struct report_daemonset, i);

	return strcmp(d->ns, a) == 0 && strcmp(d->name, b) == 0;
}

/*
 * Open addressing: slots hold 1 + an index, 0 is empty. Returns the slot of
 * key (a, b), or the empty slot where it would go.
 */
static size_t *index_slot(const struct report *r, size_t *slots, size_t cap, const char *a, const char *b,
			  int (*same)(const struct report *, size_t, const char *, const char *))
{
	size_t i = (size_t)hash2(a, b) & (cap - 1);

	while (slots[i] != 0 && !same(r, slots[i] - 1, a, b))
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* Doubles an index (kept under half full) and re-inserts n entries named by key(). */
static int index_grow(struct report *r, size_t **slots, size_t *cap, size_t n,
		      void (*key)(const struct report *, size_t, const char **, const char **),
		      int (*same)(const struct report *, size_t, const char *, const char *), struct error *err)
{
	size_t ncap = array_cap(*cap, (n + 1) * 2, 256, 0), i;
	size_t *ns = ncap != 0 ? calloc(ncap, sizeof *ns) : NULL;

	if (ns == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	for (i = 0; i < n; i++) {
		const char *a, *b;

		key(r, i, &a, &b);
		*index_slot(r, ns, ncap, a, b, same) = i + 1;
	}
	free(*slots);
	*slots = ns;
	*cap = ncap;
	return 0;
}

static void node_key(const struct report *r, size_t i, const char **a, const char **b)
{
	*a = r->nodes[i].name;
	*b = NULL;
}

static void ds_key(const struct report *r, size_t i, const char **a, const char **b)
{
	const struct report_daemonset *d = REPORT_AT(r->daemonsets, struct report_daemonset, i);

	*a = d->ns;
	*b = d->name;
}

/* The node named name, made on first mention. -1: out of memory or over REPORT_NODES_MAX. */
static int node_get(struct report *r, const char *name, size_t *idx, struct error *err)
{
	size_t *slot;
	struct report_node *n;

	if ((r->n_nodes + 1) * 2 > r->cap_node_index &&
	    index_grow(r, &r->node_index, &r->cap_node_index, r->n_nodes, node_key, same_node, err) != 0)
		return -1;
	slot = index_slot(r, r->node_index, r->cap_node_index, name, NULL, same_node);
	if (*slot != 0) {
		*idx = *slot - 1;
		return 0;
	}
	if (r->n_nodes == REPORT_NODES_MAX) {
		error_set(err, ERROR_TOO_LARGE, "more than %d nodes (REPORT_NODES_MAX)", REPORT_NODES_MAX);
		return -1;
	}
	if (r->n_nodes == r->cap_nodes) {
		struct report_node *grown = array_grow(r->nodes, &r->cap_nodes, r->n_nodes + 1, sizeof *grown, 64);

		if (grown == NULL)
			goto nomem;
		r->nodes = grown;
	}
	n = &r->nodes[r->n_nodes];
	memset(n, 0, sizeof *n);
	n->pool = -1;
	if ((n->name = strdup(name)) == NULL)
		goto nomem;
	*slot = r->n_nodes + 1;
	*idx = r->n_nodes++;
	return 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

/* The DaemonSet group ns/name: its index, or SIZE_MAX beyond the list's limit. -1 on ENOMEM. */
static int ds_get(struct report *r, const char *ns, const char *name, size_t *idx, struct error *err)
{
	struct report_daemonset *d;
	size_t *slot;

	*idx = SIZE_MAX;
	if ((r->daemonsets.n + 1) * 2 > r->cap_ds_index &&
	    index_grow(r, &r->ds_index, &r->cap_ds_index, r->daemonsets.n, ds_key, same_ds, err) != 0)
		return -1;
	slot = index_slot(r, r->ds_index, r->cap_ds_index, ns, name, same_ds);
	if (*slot != 0) {
		*idx = *slot - 1;
		return 0;
	}
	if (report_list_push(&r->daemonsets, sizeof *d, (void **)&d, err) != 0)
		return -1;
	if (d == NULL)
		return 0;
	d->ns = strdup(ns);
	d->name = strdup(name);
	if (d->ns == NULL || d->name == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	*idx = r->daemonsets.n - 1;
	*slot = *idx + 1;
	return 0;
}

/* ==== Setup ==== */

int report_init(struct report *r, const struct config *cfg, struct error *err)
{
	size_t i;

	memset(r, 0, sizeof *r);
	r->cfg = cfg;
	r->n_pools = cfg->n_pools + 1;
	r->pools = calloc(r->n_pools, sizeof *r->pools);
	r->errors = json_array();
	if (r->pools == NULL || r->errors == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	for (i = 0; i < cfg->n_pools; i++) {
		r->pools[i].name = cfg->pools[i].name;
		r->pools[i].cfg = &cfg->pools[i];
	}
	r->pools[cfg->n_pools].name = "unpooled";
	if (audit_init(&r->audit, cfg, err) != 0)
		return -1;
	r->audit.drop_patches = 1;  /* the report lists workloads without their patches */
	return 0;
}

void report_verdict_free(struct report_verdict *v)
{
	free(v->reason);
	free(v->message);
	memset(v, 0, sizeof *v);
}

void report_cpu_pod_free(struct report_cpu_pod *c)
{
	free(c->ns);
	free(c->name);
	free(c->node);
	free(c->owner);
	free(c->taint);
	report_verdict_free(&c->policy);
	report_verdict_free(&c->pinned);
	json_decref(c->tolerations);
}

void report_free(struct report *r)
{
	size_t i, j;

	if (r == NULL)
		return;
	for (i = 0; i < r->n_nodes; i++) {
		struct report_node *n = &r->nodes[i];

		free(n->name);
		json_decref(n->labels);
		json_decref(n->taints);
		free(n->taint_sig);
		for (j = 0; j < n->n_alloc; j++)
			free(n->alloc[j].resource);
	}
	free(r->nodes);
	free(r->node_index);
	free(r->ds_index);
	for (i = 0; i < r->cpu_pods.n; i++) {
		struct report_cpu_pod *c = REPORT_AT(r->cpu_pods, struct report_cpu_pod, i);

		report_cpu_pod_free(c);
	}
	free(r->cpu_pods.v);
	for (i = 0; i < r->daemonsets.n; i++) {
		free(REPORT_AT(r->daemonsets, struct report_daemonset, i)->ns);
		free(REPORT_AT(r->daemonsets, struct report_daemonset, i)->name);
	}
	free(r->daemonsets.v);
	for (i = 0; i < r->pending.n; i++) {
		struct report_pending *p = REPORT_AT(r->pending, struct report_pending, i);

		free(p->ns);
		free(p->name);
		free(p->message);
		json_decref(p->spec);
		json_decref(p->wi_spec);
		for (j = 0; j < p->n_gpus; j++)
			free(p->gpus[j].resource);
	}
	free(r->pending.v);
	for (i = 0; i < r->misconfigs.n; i++) {
		free(REPORT_AT(r->misconfigs, struct report_misconfig, i)->node);
		free(REPORT_AT(r->misconfigs, struct report_misconfig, i)->message);
	}
	free(r->misconfigs.v);
	report_whatif_free(&r->whatif);
	report_dra_free(&r->dra);
	free(r->deferred);
	free(r->pools);
	audit_free(&r->audit);
	json_decref(r->errors);
	memset(r, 0, sizeof *r);
}

/* ==== Small readers ==== */

const char *report_str_at(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(obj, key));

	return s ? s : "";
}

/* metadata.name, else generateName, else "(unnamed)". */
static const char *name_of(const json_t *meta)
{
	const char *n = report_str_at(meta, "name");

	if (n[0] == '\0')
		n = report_str_at(meta, "generateName");
	return n[0] ? n : "(unnamed)";
}

static const char *ns_of(const json_t *meta)
{
	const char *ns = report_str_at(meta, "namespace");

	return ns[0] ? ns : "default";
}

static int is_gpu_resource(const struct config *cfg, const char *name)
{
	size_t i;

	for (i = 0; i < cfg->gpu_resources.n; i++)
		if (policy_glob_match(cfg->gpu_resources.v[i], name))
			return 1;
	return 0;
}

/* Does a configured pool serve resource? (A pool without resources serves every GPU resource.) */
int report_pool_serves(const struct config *cfg, const struct config_pool *p, const char *resource)
{
	size_t i;

	if (p->resources.n == 0)
		return is_gpu_resource(cfg, resource);
	for (i = 0; i < p->resources.n; i++)
		if (policy_glob_match(p->resources.v[i], resource))
			return 1;
	return 0;
}

/* A label key that marks GPU nodes: one of gpuNodeLabels, or a key a pool selects by (or an alias of either). */
static int gpu_key(const struct config *cfg, const char *key)
{
	size_t i, j;

	for (i = 0; i < cfg->gpu_node_labels.n; i++)
		if (config_label_same(cfg->gpu_node_labels.v[i], key))
			return 1;
	for (i = 0; i < cfg->n_pools; i++)
		for (j = 0; j < cfg->pools[i].node_selector.n; j++)
			if (config_label_same(cfg->pools[i].node_selector.v[j].key, key))
				return 1;
	return 0;
}

/*
 * The node's entry for resource, added (allocatable 0) when missing and there
 * is room; NULL when the node has LIMIT_GPU_KINDS_MAX kinds already, or
 * memory ran out (then *nomem is set).
 */
static struct report_gpu *node_gpu(struct report_node *n, const char *resource, long long **used, int *nomem)
{
	size_t i;

	*nomem = 0;
	for (i = 0; i < n->n_alloc; i++)
		if (strcmp(n->alloc[i].resource, resource) == 0)
			break;
	if (i == n->n_alloc) {
		if (n->n_alloc == LIMIT_GPU_KINDS_MAX)
			return NULL;
		if ((n->alloc[i].resource = strdup(resource)) == NULL) {
			*nomem = 1;
			return NULL;
		}
		n->alloc[i].count = 0;
		n->used[i] = 0;
		n->n_alloc++;
	}
	*used = &n->used[i];
	return &n->alloc[i];
}

/* ==== Errors ==== */

int report_add_error(struct report *r, const char *input, const char *msg, struct error *err)
{
	json_t *e;

	r->n_errors++;
	if (json_array_size(r->errors) >= REPORT_FINDINGS_MAX)
		return 0;
	e = json_pack("{s:s, s:s}", "input", input, "message", msg);
	if (e == NULL)  /* a file name or quoted text that is not UTF-8 */
		e = json_pack("{s:s, s:s}", "input", "(name not valid UTF-8)", "message", msg);
	if (e == NULL)
		e = json_pack("{s:s, s:s}", "input", "(name not valid UTF-8)", "message",
			      "(message not valid UTF-8)");
	if (e == NULL || json_array_append_new(r->errors, e) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* ==== Nodes ==== */

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/*
 * The taints that say what a node is for, sorted and joined: the transient
 * ones the control plane and the autoscaler set (node.kubernetes.io/..., 
 * node.cloudprovider.kubernetes.io/..., ToBeDeletedByClusterAutoscaler,
 * DeletionCandidateOfClusterAutoscaler) are left out.
 */
static char *taint_signature(const json_t *taints)
{
	char text[TAINT_SIG_MAX], *parts[TAINTS_MAX], out[TAINT_SIG_MAX];
	size_t i, n = 0, used = 0, o = 0;
	const json_t *t;

	json_array_foreach(iterable(taints), i, t) {
		const char *k = report_str_at(t, "key");
		int w;

		if (n == TAINTS_MAX || strncmp(k, "node.kubernetes.io/", 19) == 0 ||
		    strncmp(k, "node.cloudprovider.kubernetes.io/", 33) == 0 ||
		    strcmp(k, "ToBeDeletedByClusterAutoscaler") == 0 ||
		    strcmp(k, "DeletionCandidateOfClusterAutoscaler") == 0)
			continue;
		w = snprintf(text + used, sizeof text - used, "%s%s%s:%s", k, report_str_at(t, "value")[0] ? "=" : "",
			     report_str_at(t, "value"), report_str_at(t, "effect"));
		if (w < 0 || (size_t)w >= sizeof text - used)
			break;
		parts[n++] = text + used;
		used += (size_t)w + 1;
	}
	if (n > 1) /* one part or none is sorted already (and cppcheck then sees parts as unset) */
		qsort(parts, n, sizeof parts[0], cmp_str);
	out[0] = '\0';
	for (i = 0; i < n; i++) {
		int w = snprintf(out + o, sizeof out - o, "%s%s", i ? "," : "", parts[i]);

		if (w < 0 || (size_t)w >= sizeof out - o)
			break;
		o += (size_t)w;
	}
	return strdup(out);
}

/* Does the node carry the policy's GPU taint (key, value when the policy names one, effect)? */
static int has_gpu_taint(const struct config *cfg, const json_t *taints)
{
	const json_t *t;
	size_t i;

	json_array_foreach(iterable(taints), i, t)
		if (strcmp(report_str_at(t, "key"), cfg->taint_key) == 0 &&
		    (cfg->taint_value[0] == '\0' || strcmp(report_str_at(t, "value"), cfg->taint_value) == 0) &&
		    strcmp(report_str_at(t, "effect"), cfg->taint_effect) == 0)
			return 1;
	return 0;
}

int report_labels_match(const struct config_labels *sel, const json_t *labels)
{
	size_t i;

	for (i = 0; i < sel->n; i++) {
		const char *v = json_string_value(json_object_get(labels, sel->v[i].key));
		const char *alias = config_label_alias(sel->v[i].key);

		if (v == NULL && alias != NULL)
			v = json_string_value(json_object_get(labels, alias));
		if (v == NULL || strcmp(v, sel->v[i].value) != 0)
			return 0;
	}
	return sel->n > 0;
}

/* Every GPU resource in a Node's allocatable is a GPU count, as in a pod's limits (pods refuse the rest). */
static int alloc_valid(const struct config *cfg, const json_t *alloc, char *msg, size_t cap)
{
	const char *key, *why;
	const json_t *v;
	struct error qerr;
	long long count;

	json_object_foreach(iterable(alloc), key, v)
		if (is_gpu_resource(cfg, key) && report_gpu_count(v, &count, &why, &qerr) != 0) {
			snprintf(msg, cap, "status.allocatable %s is not a valid GPU count: %s", key, why);
			return -1;
		}
	return 0;
}

int report_node_item(struct report *r, const char *input, const json_t *node, unsigned long long off,
		     struct error *err)
{
	const struct config *cfg = r->cfg;
	const json_t *meta = json_object_get(node, "metadata");
	const json_t *labels = json_object_get(meta, "labels");
	const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
	const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable"), *v;
	const char *name = report_str_at(meta, "name"), *key;
	char msg[REPORT_ITEM_MSG_MAX];
	struct report_node *n;
	size_t idx, i;
	int gpu_label = 0;

	r->node_items++;
	if (report_node_valid(node, msg, sizeof msg) != 0 || alloc_valid(cfg, alloc, msg, sizeof msg) != 0) {
		char line[REPORT_ITEM_MSG_MAX];

		snprintf(line, sizeof line, "byte %llu: Node %s: %s", off, name[0] ? name : "(unnamed)", msg);
		return report_add_error(r, input, line, err);
	}
	if (name[0] == '\0') {
		snprintf(msg, sizeof msg, "byte %llu: a Node without metadata.name", off);
		return report_add_error(r, input, msg, err);
	}
	if (node_get(r, name, &idx, err) != 0)
		return -1;
	n = &r->nodes[idx];
	if (n->seen) {
		snprintf(msg, sizeof msg, "byte %llu: Node %s listed twice; the first one counts", off, name);
		return report_add_error(r, input, msg, err);
	}
	n->seen = 1;
	if (!json_is_object(labels))
		labels = NULL;
	if (!json_is_array(taints))
		taints = NULL;
	json_object_foreach(iterable(json_is_object(alloc) ? alloc : NULL), key, v) {
		struct quantity q;
		struct error qerr;
		struct report_gpu *g;
		long long *used;
		int nomem;

		if (!is_gpu_resource(cfg, key) || quantity_from_json(v, &q, &qerr) != 0 || q.value == 0)
			continue;  /* alloc_valid() refused what is not a GPU count */
		if ((g = node_gpu(n, key, &used, &nomem)) == NULL && nomem) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		if (g == NULL) {
			snprintf(msg, sizeof msg, "Node %s: more than %d GPU resources", name, LIMIT_GPU_KINDS_MAX);
			return report_add_error(r, input, msg, err);
		}
		g->count = q.value;
		n->gpus_allocatable = quantity_add(n->gpus_allocatable, q.value);
	}
	for (i = 0; i < cfg->n_pools && n->pool < 0; i++)
		if (report_labels_match(&cfg->pools[i].node_selector, labels))
			n->pool = (int)i;
	for (i = 0; i < cfg->gpu_node_labels.n && labels != NULL; i++)
		if (json_object_get(labels, cfg->gpu_node_labels.v[i]) != NULL)
			gpu_label = 1;
	n->tainted = has_gpu_taint(cfg, taints);
	n->gpu = n->pool >= 0 || gpu_label || n->tainted || n->gpus_allocatable > 0;
	if (!n->gpu)
		return 0;
	r->gpu_nodes++;
	if (n->pool < 0)
		n->pool = (int)r->n_pools - 1;
	n->labels = json_incref(iterable(labels));
	n->taints = json_incref(iterable(taints));
	if ((n->taint_sig = taint_signature(taints)) == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}

/* ==== Pods ==== */

/*
 * "Kind/name" of the controlling owner (or the first one), or "". The
 * controller is the reference with controller: true, as client-go finds it
 * (k8s.io/apimachinery pkg/apis/meta/v1/controller_ref.go, GetControllerOf:
 * the first with Controller true, else none; report_pod_valid() refuses a second).
 * A DaemonSet pod is one the policy calls so: its controller is an apps/v1
 * DaemonSet. An owner reference without controller: true makes no
 * DaemonSet pod, though it is the owner shown when there is no controller.
 */
static void owner_of(const json_t *meta, char *buf, size_t cap, int *daemonset)
{
	const json_t *refs = json_object_get(meta, "ownerReferences"), *ref, *pick = NULL;
	struct error ignored;
	size_t i;

	*daemonset = policy_controlled_by_daemonset(meta, &ignored) == 1;
	json_array_foreach(iterable(refs), i, ref) {
		if (!json_is_object(ref))
			continue;
		if (json_is_true(json_object_get(ref, "controller"))) {
			pick = ref;
			break;
		}
		if (pick == NULL)
			pick = ref;
	}
	if (pick != NULL)
		snprintf(buf, cap, "%s/%s", report_str_at(pick, "kind"), report_str_at(pick, "name"));
	else if (cap > 0)
		buf[0] = '\0';
}

/* The routes a pod's own spec takes to GPU nodes; the node's part is added by report_finish(). */
static unsigned pod_routes(const struct config *cfg, const json_t *spec)
{
	const json_t *t, *v, *terms, *term, *e;
	const char *key;
	unsigned routes = 0;
	size_t i, j;

	json_array_foreach(iterable(json_object_get(spec, "tolerations")), i, t)
		if (nodematch_tolerates(t, cfg->taint_key, cfg->taint_value, cfg->taint_effect))
			routes |= report_str_at(t, "key")[0] ? REPORT_ROUTE_TOLERATION : REPORT_ROUTE_WILDCARD;
	json_object_foreach(iterable(json_object_get(spec, "nodeSelector")), key, v)
		if (gpu_key(cfg, key))
			routes |= REPORT_ROUTE_SELECTOR;
	terms = json_object_get(json_object_get(json_object_get(json_object_get(spec, "affinity"), "nodeAffinity"),
						"requiredDuringSchedulingIgnoredDuringExecution"), "nodeSelectorTerms");
	json_array_foreach(iterable(terms), i, term) {
		json_array_foreach(iterable(json_object_get(term, "matchExpressions")), j, e) {
			if (gpu_key(cfg, report_str_at(e, "key")))
				routes |= REPORT_ROUTE_AFFINITY;
		}
	}
	return routes;
}

/* v = the policy's verdict on pod as a CREATE. 0, or -1 with ERROR_NOMEM. */
int report_judge_pod(const struct config *cfg, const json_t *pod, struct report_verdict *v, struct error *err)
{
	struct policy_request req = { .pod = pod, .operation = POLICY_OP_CREATE };
	struct policy_result res;
	struct error perr = { 0 };
	const char *message;
	int rc = -1;

	if (policy_evaluate(cfg, &req, &res, &perr) != 0) {
		if (perr.kind == ERROR_NOMEM) {
			*err = perr;
			goto out;
		}
		res.reason = "unreadable";
		snprintf(res.message, sizeof res.message, "%s", perr.msg);
	}
	message = res.message;
	if (message[0] == '\0' && json_array_size(res.warnings) > 0)
		message = json_string_value(json_array_get(res.warnings, 0));
	v->would_reject = res.verdict == POLICY_REJECT;
	v->exempt = res.exempt;
	v->reason = strdup(res.reason ? res.reason : "");
	v->message = strdup(message ? message : "");
	if (v->reason == NULL || v->message == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory");
		goto out;
	}
	rc = 0;
out:
	policy_result_free(&res);
	return rc;
}

/* New: pod without spec.nodeName (shallow copies; the rest shared), or NULL. */
json_t *report_unbound(const json_t *pod)
{
	json_t *copy = json_copy(iterable(pod)), *spec = json_copy(json_object_get(pod, "spec"));

	/* jansson's json_copy() drops a member it has no memory for, silently: a copy must be whole. */
	if (copy == NULL || spec == NULL || json_object_size(copy) != json_object_size(pod) ||
	    json_object_size(spec) != json_object_size(json_object_get(pod, "spec")) ||
	    json_object_del(spec, "nodeName") != 0) {
		json_decref(copy);
		json_decref(spec);
		return NULL;
	}
	if (json_object_set_new(copy, "spec", spec) != 0) {  /* steals spec, set or not */
		json_decref(copy);
		return NULL;
	}
	return copy;
}

static int cpu_pod(struct report *r, const json_t *pod, size_t node, const char *owner, struct error *err)
{
	const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
	struct report_cpu_pod *c;
	json_t *as_created = NULL;

	if (report_list_push(&r->cpu_pods, sizeof *c, (void **)&c, err) != 0)
		return -1;
	if (c == NULL)
		return 0;  /* counted on its node, not named */
	c->node_index = node;
	c->pool = -1;
	c->routes = pod_routes(r->cfg, spec);
	c->ns = strdup(ns_of(meta));
	c->name = strdup(name_of(meta));
	c->node = strdup(r->nodes[node].name);
	c->owner = strdup(owner);
	c->tolerations = json_incref(iterable(json_object_get(spec, "tolerations")));
	if (c->ns == NULL || c->name == NULL || c->node == NULL || c->owner == NULL)
		goto nomem;
	if (json_object_get(spec, "nodeName") == NULL)
		return report_judge_pod(r->cfg, pod, &c->policy, err);
	if ((as_created = report_unbound(pod)) == NULL)
		goto nomem;
	if (report_judge_pod(r->cfg, as_created, &c->policy, err) != 0 ||
	    report_judge_pod(r->cfg, pod, &c->pinned, err) != 0) {
		json_decref(as_created);
		return -1;
	}
	json_decref(as_created);
	return 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

static int pending_pod(struct report *r, const json_t *pod, const struct policy_gpu_request *req, size_t n,
		       struct error *err)
{
	const json_t *meta = json_object_get(pod, "metadata");
	struct report_pending *p;
	size_t i;

	if (report_list_push(&r->pending, sizeof *p, (void **)&p, err) != 0)
		return -1;
	if (p == NULL)
		return 0;  /* counted, not judged */
	p->ns = strdup(ns_of(meta));
	p->name = strdup(name_of(meta));
	p->spec = json_incref(json_object_get(pod, "spec"));
	if (p->ns == NULL || p->name == NULL)
		goto nomem;
	for (i = 0; i < n && i < LIMIT_GPU_KINDS_MAX; i++) {
		if ((p->gpus[i].resource = strdup(req[i].resource)) == NULL)
			goto nomem;
		p->gpus[i].count = req[i].count;
		p->n_gpus++;
	}
	return r->whatif.cfg != NULL ? report_whatif_pending(r, pod, p, err) : 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

static int defer_ds(struct report *r, size_t node, size_t ds, struct error *err)
{
	if (r->n_deferred + 2 > r->cap_deferred) {
		size_t *grown = array_grow(r->deferred, &r->cap_deferred, r->n_deferred + 2, sizeof *grown, 256);

		if (grown == NULL) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		r->deferred = grown;
	}
	r->deferred[r->n_deferred++] = node;
	r->deferred[r->n_deferred++] = ds;
	return 0;
}

int report_pod_item(struct report *r, const char *input, const json_t *pod, unsigned long long off,
		    struct error *err)
{
	const json_t *meta = json_object_get(pod, "metadata"), *spec = json_object_get(pod, "spec");
	const char *phase = report_str_at(json_object_get(pod, "status"), "phase");
	const char *node_name = report_str_at(spec, "nodeName");
	struct policy_gpu_request req[LIMIT_GPU_KINDS_MAX];
	struct error perr = { 0 };
	struct report_node *n;
	char owner[600], msg[REPORT_ITEM_MSG_MAX];
	size_t count, i, idx;
	int daemonset;

	r->pod_items++;
	if (report_pod_valid(pod, msg, sizeof msg) != 0) {
		char line[REPORT_ITEM_MSG_MAX];

		snprintf(line, sizeof line, "byte %llu: Pod %s/%s: %s", off, ns_of(meta), name_of(meta), msg);
		return report_add_error(r, input, line, err);
	}
	/* Terminated pods hold nothing: the scheduler's and kubelet's accounting skips them (cmd/gpu-admission/README.md). */
	if (strcmp(phase, "Succeeded") == 0 || strcmp(phase, "Failed") == 0) {
		r->terminated_pods++;
		return 0;
	}
	if (policy_gpu_requests(r->cfg, pod, req, LIMIT_GPU_KINDS_MAX, &count, &perr) != 0) {
		snprintf(msg, sizeof msg, "byte %llu: Pod %s/%s: %s", off, ns_of(meta), name_of(meta), perr.msg);
		return report_add_error(r, input, msg, err);
	}
	for (i = 0; i < count; i++)
		if (req[i].count >= QUANTITY_MAX) {
			snprintf(msg, sizeof msg, "byte %llu: Pod %s/%s: %s is not a valid GPU count: it is 10^18 or more",
				 off, ns_of(meta), name_of(meta), req[i].resource);
			return report_add_error(r, input, msg, err);
		}
	if (node_name[0] == '\0')
		return count > 0 ? pending_pod(r, pod, req, count, err) : report_dra_pending_pod(r, pod, err);
	if (node_get(r, node_name, &idx, err) != 0)
		return -1;
	if (r->whatif.cfg != NULL && report_whatif_running(r, pod, idx, err) != 0)
		return -1;
	if (count > 0)
		return report_gpu_pod_on(r, idx, req, count, err);
	n = &r->nodes[idx];
	if (n->seen && !n->gpu)
		return 0;  /* a CPU pod on a CPU node: nothing to say */
	owner_of(meta, owner, sizeof owner, &daemonset);
	if (daemonset)
		return report_ds_pod_on(r, idx, ns_of(meta), strchr(owner, '/') ? strchr(owner, '/') + 1 : owner, err);
	n->cpu_pods++;
	return cpu_pod(r, pod, idx, owner, err);
}

int report_node_facts(const struct config *cfg, const json_t *node, int *gpu, char *msg, size_t cap)
{
	const json_t *labels = json_object_get(json_object_get(node, "metadata"), "labels");
	const json_t *taints = json_object_get(json_object_get(node, "spec"), "taints");
	const json_t *alloc = json_object_get(json_object_get(node, "status"), "allocatable"), *v;
	const char *key;
	struct error qerr;
	struct quantity q;
	size_t i;

	*gpu = 0;
	if (report_node_valid(node, msg, cap) != 0 || alloc_valid(cfg, alloc, msg, cap) != 0)
		return -1;
	if (report_str_at(json_object_get(node, "metadata"), "name")[0] == '\0') {
		snprintf(msg, cap, "a Node without metadata.name");
		return -1;
	}
	if (!json_is_object(labels))
		labels = NULL;
	/* node_item()'s rule: in a pool, a GPU label, the GPU taint, or GPUs allocatable. */
	for (i = 0; i < cfg->n_pools; i++)
		if (report_labels_match(&cfg->pools[i].node_selector, labels))
			*gpu = 1;
	for (i = 0; i < cfg->gpu_node_labels.n && labels != NULL; i++)
		if (json_object_get(labels, cfg->gpu_node_labels.v[i]) != NULL)
			*gpu = 1;
	if (has_gpu_taint(cfg, json_is_array(taints) ? taints : NULL))
		*gpu = 1;
	json_object_foreach(iterable(json_is_object(alloc) ? alloc : NULL), key, v)
		if (is_gpu_resource(cfg, key) && quantity_from_json(v, &q, &qerr) == 0 && q.value > 0)
			*gpu = 1;
	return 0;
}

int report_node_index(struct report *r, const char *name, size_t *idx, struct error *err)
{
	return node_get(r, name, idx, err);
}

int report_node_find(const struct report *r, const char *name, size_t *idx)
{
	size_t *slot;

	if (r->cap_node_index == 0)
		return 0;
	slot = index_slot(r, r->node_index, r->cap_node_index, name, NULL, same_node);
	if (*slot == 0)
		return 0;
	*idx = *slot - 1;
	return 1;
}

int report_node_busy(const struct report_node *n)
{
	return n->gpu_pods > 0 || n->dra_held > 0;
}

int report_gpu_pod_on(struct report *r, size_t idx, const struct policy_gpu_request *req, size_t count,
		      struct error *err)
{
	struct report_node *n = &r->nodes[idx];
	size_t i;

	for (i = 0; i < count; i++) {
		long long *used;
		int nomem;

		if (node_gpu(n, req[i].resource, &used, &nomem) != NULL) {
			*used = quantity_add(*used, req[i].count);
		} else if (nomem) {
			error_set(err, ERROR_NOMEM, "out of memory");
			return -1;
		}
		n->gpus_requested = quantity_add(n->gpus_requested, req[i].count);
	}
	n->gpu_pods++;
	return 0;
}

int report_ds_pod_on(struct report *r, size_t idx, const char *ns, const char *ds_name, struct error *err)
{
	size_t ds;

	if (r->nodes[idx].seen && !r->nodes[idx].gpu)
		return 0;  /* on a CPU node: nothing to say */
	r->nodes[idx].ds_pods++;
	if (ds_get(r, ns, ds_name, &ds, err) != 0)
		return -1;
	if (ds == SIZE_MAX)
		return 0;
	if (r->nodes[idx].seen) {
		REPORT_AT(r->daemonsets, struct report_daemonset, ds)->pods++;
		return 0;
	}
	return defer_ds(r, idx, ds, err);
}

int report_pod_facts(const struct config *cfg, const json_t *pod, struct report_pod_facts *f, char *msg,
		     size_t cap)
{
	const json_t *meta = json_object_get(pod, "metadata");
	struct error perr = { 0 };
	char owner[600];
	size_t i;

	memset(f, 0, sizeof *f);
	f->ns = ns_of(meta);
	f->name = name_of(meta);
	f->node = report_str_at(json_object_get(pod, "spec"), "nodeName");
	if (report_pod_valid(pod, msg, cap) != 0)
		return -1;
	f->phase = report_str_at(json_object_get(pod, "status"), "phase");
	f->terminated = strcmp(f->phase, "Succeeded") == 0 || strcmp(f->phase, "Failed") == 0;
	if (f->terminated)
		return 0;
	if (policy_gpu_requests(cfg, pod, f->req, LIMIT_GPU_KINDS_MAX, &f->count, &perr) != 0) {
		snprintf(msg, cap, "%s", perr.msg);
		return -1;
	}
	for (i = 0; i < f->count; i++)
		if (f->req[i].count >= QUANTITY_MAX) {
			snprintf(msg, cap, "%s is not a valid GPU count: it is 10^18 or more", f->req[i].resource);
			return -1;
		}
	f->claims = json_array_size(json_object_get(json_object_get(pod, "spec"), "resourceClaims")) > 0;
	owner_of(meta, owner, sizeof owner, &f->daemonset);
	if (f->daemonset)
		snprintf(f->ds_name, sizeof f->ds_name, "%s", strchr(owner, '/') ? strchr(owner, '/') + 1 : owner);
	return 0;
}
