/*
 * report_model: the report's model applied event by event (report_model.h).
 *
 * Nodes live in a table in the order first named, by a pod or as a Node (a
 * deleted node keeps its slot, empty, as pods may still name it); the report
 * reads them in the order first listed as Nodes. Pods live in a table in the order
 * last added; a deleted pod leaves a hole until holes outnumber the living,
 * when the table is compacted (order kept) and its index rebuilt. Both are
 * found by name through open-addressing indexes kept under half full.
 */
#include "report/report_model.h"
#include "report/report_int.h"
#include "base/array.h"
#include "base/hash.h"
#include "base/iterable.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MODEL_RESOURCES_MAX 256    /* distinct GPU resource names a model holds */
#define MODEL_INPUT "watch"        /* the input name the model's report gives its items */
#define MODEL_JUDGED_INDEX_MIN 256  /* the judged texts' first index size (a power of two) */

#define MODEL_DRA_KEY_MAX 600      /* "Kind\tnamespace/name": 13 + 1 + 63 + 1 + 253, with room */

enum dra_kind { DRA_SLICE = 0, DRA_CLAIM, DRA_KINDS };
static const char *const dra_kinds[DRA_KINDS] = { "ResourceSlice", "ResourceClaim" };

enum pod_class { POD_NOTHING = 0, POD_TERMINATED, POD_GPU, POD_DS, POD_KEPT };

struct mgpu {
	unsigned res;                  /* index into the model's resource names */
	long long count;
};

/*
 * What the policy reads of a running GPU pod (policy_pod_fields) but its
 * name and node, as compact JSON: what --what-if judges it by. One text per
 * distinct content, shared by the pods that read the same (a ReplicaSet's
 * replicas often do), counted, freed with its last pod.
 */
struct mjudged {
	uint64_t hash;
	size_t refs;
	size_t len;
	char text[];                   /* len bytes and a NUL */
};

struct mpod {
	char *key;                     /* owned: namespace, NUL, name, NUL */
	size_t node;                   /* 1 + index into nodes; 0 when not bound */
	unsigned char cls;             /* enum pod_class */
	unsigned char n_gpus;
	unsigned char live;
	uint32_t mark;                 /* the pods' list epoch it was last applied in */
	struct mgpu *gpus;             /* owned: POD_GPU */
	union {                        /* by cls; none for the others */
		char *ds;              /* owned: POD_DS, the DaemonSet's name */
		char *kept;            /* owned: POD_KEPT, the fields the report reads as compact
		                          JSON text: a jansson tree of the same pod costs about ten
		                          times the bytes, and a cluster may hold tens of thousands
		                          of such pods (CPU pods on GPU nodes, Pending GPU pods) */
		struct mjudged *judged;/* a reference: POD_GPU, what the policy reads */
	} u;
};

struct mnode {
	char *name;                    /* owned */
	json_t *item;                  /* owned; NULL when not (or no longer) listed */
	int gpu;
	int listed_once;               /* in order[] */
	uint32_t mark;                 /* the nodes' list epoch it was last applied in */
};

struct report_model {
	const struct config *cfg;
	struct mnode *nodes;
	size_t n_nodes, cap_nodes, listed_nodes;
	size_t *order, n_order, cap_order;     /* nodes by when first listed: the report's node order */
	size_t *node_index, cap_node_index;   /* 1 + index into nodes; 0 empty */
	struct mpod *pods;
	size_t n_pods, cap_pods, live_pods, kept_pods, kept_bytes;
	size_t *pod_index, cap_pod_index, used_pod_index;
	char *res[MODEL_RESOURCES_MAX];
	size_t n_res;
	struct mjudged **judged;               /* the GPU pods' texts, by hash (linear probing) */
	size_t cap_judged, n_judged, judged_bytes;
	json_t *dra;                           /* ResourceSlices and ResourceClaims by kind, namespace
	                                          and name: the items as the report reads them */
	size_t n_dra[DRA_KINDS];               /* held of each kind */
	json_t *dra_seen[DRA_KINDS];           /* while a list of the kind runs: the keys it handed over */
	unsigned long refused;
	size_t max_pods;                       /* living pods held at most (0: no bound) */
	uint32_t node_epoch, pod_epoch;        /* bumped as a list of each kind begins */
};

/* ns, then a byte no name holds (0xff), then name: ("a", "bc") and ("ab", "c") differ. */
static uint64_t hash_key(const char *ns, const char *name)
{
	uint64_t h = hash_fnv1a(hash_fnv1a_str(HASH_FNV1A_BASIS, ns), "\xff", 1);

	return name != NULL ? hash_fnv1a_str(h, name) : h;
}

static void *nomem(struct error *err)
{
	error_set(err, ERROR_NOMEM, "out of memory");
	return NULL;
}

/* ==== Nodes ==== */

static size_t *node_slot(const struct report_model *m, size_t *index, size_t cap, const char *name)
{
	size_t i = (size_t)hash_key(name, NULL) & (cap - 1);

	while (index[i] != 0 && strcmp(m->nodes[index[i] - 1].name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &index[i];
}

/* The node named name, made (not listed) on first mention. -1 on ENOMEM or beyond REPORT_NODES_MAX. */
static int node_at(struct report_model *m, const char *name, size_t *idx, struct error *err)
{
	size_t *slot, i;

	if ((m->n_nodes + 1) * 2 > m->cap_node_index) {
		size_t cap = array_cap(m->cap_node_index, (m->n_nodes + 1) * 2, 256, 0);
		size_t *index = cap != 0 ? calloc(cap, sizeof *index) : NULL;

		if (index == NULL)
			return nomem(err), -1;
		for (i = 0; i < m->n_nodes; i++)
			*node_slot(m, index, cap, m->nodes[i].name) = i + 1;
		free(m->node_index);
		m->node_index = index;
		m->cap_node_index = cap;
	}
	slot = node_slot(m, m->node_index, m->cap_node_index, name);
	if (*slot != 0) {
		*idx = *slot - 1;
		return 0;
	}
	if (m->n_nodes == REPORT_NODES_MAX) {
		error_set(err, ERROR_TOO_LARGE, "more than %d nodes (REPORT_NODES_MAX)", REPORT_NODES_MAX);
		return -1;
	}
	if (m->n_nodes == m->cap_nodes) {
		struct mnode *grown = array_grow(m->nodes, &m->cap_nodes, m->n_nodes + 1, sizeof *grown, 64);

		if (grown == NULL)
			return nomem(err), -1;
		m->nodes = grown;
	}
	memset(&m->nodes[m->n_nodes], 0, sizeof m->nodes[0]);
	if ((m->nodes[m->n_nodes].name = strdup(name)) == NULL)
		return nomem(err), -1;
	*slot = m->n_nodes + 1;
	*idx = m->n_nodes++;
	return 0;
}

static int apply_node(struct report_model *m, enum report_event_type ev, const json_t *obj, struct error *err)
{
	const char *name = report_str_at(json_object_get(obj, "metadata"), "name");
	char msg[ERROR_MSG_MAX];
	size_t idx;
	int gpu;

	if (report_node_facts(m->cfg, obj, &gpu, msg, sizeof msg) != 0) {
		m->refused++;
		return 0;
	}
	if (node_at(m, name, &idx, err) != 0)
		return -1;
	if (m->nodes[idx].item != NULL)
		m->listed_nodes--;
	json_decref(m->nodes[idx].item);
	m->nodes[idx].item = NULL;
	m->nodes[idx].gpu = 0;
	if (ev == REPORT_EVENT_DELETED)
		return 0;
	if (!m->nodes[idx].listed_once) {
		/* order[] never outgrows nodes[]: each node enters it once */
		size_t *grown = array_grow(m->order, &m->cap_order, m->n_order + 1, sizeof *grown, 64);

		if (grown == NULL)
			return nomem(err), -1;
		m->order = grown;
		m->order[m->n_order++] = idx;
		m->nodes[idx].listed_once = 1;
	}
	m->nodes[idx].item = json_incref((json_t *)(uintptr_t)obj);
	m->nodes[idx].gpu = gpu;
	m->nodes[idx].mark = m->node_epoch;
	m->listed_nodes++;
	return 0;
}

/* ==== Pods ==== */

static size_t *pod_slot(const struct report_model *m, size_t *index, size_t cap, const char *ns, const char *name)
{
	size_t i = (size_t)hash_key(ns, name) & (cap - 1);

	while (index[i] != 0) {
		const char *k = m->pods[index[i] - 1].key;

		if (strcmp(k, ns) == 0 && strcmp(k + strlen(k) + 1, name) == 0)
			break;
		i = (i + 1) & (cap - 1);
	}
	return &index[i];
}

static void judged_release(struct report_model *m, struct mjudged *j);

static void pod_clear(struct report_model *m, struct mpod *p)
{
	if (p->cls == POD_KEPT) {
		m->kept_pods--;
		m->kept_bytes -= strlen(p->u.kept) + 1;
		free(p->u.kept);
	} else if (p->cls == POD_DS) {
		free(p->u.ds);
	} else if (p->cls == POD_GPU) {
		judged_release(m, p->u.judged);
	}
	free(p->gpus);
	p->gpus = NULL;
	memset(&p->u, 0, sizeof p->u);
	p->cls = POD_NOTHING;
	p->n_gpus = 0;
	p->node = 0;
}

/*
 * Drops the holes (order kept) and rebuilds the index at a size for the
 * living pods plus one. Called when the index would pass half full.
 */
static int pods_compact(struct report_model *m, struct error *err)
{
	size_t i, kept = 0, cap = array_cap(0, (m->live_pods + 1) * 4, 256, 0);
	size_t *index;

	if (cap == 0 || (index = calloc(cap, sizeof *index)) == NULL)
		return nomem(err), -1;
	for (i = 0; i < m->n_pods; i++) {
		if (!m->pods[i].live) {
			free(m->pods[i].key);
			continue;
		}
		m->pods[kept] = m->pods[i];
		kept++;
	}
	m->n_pods = kept;
	free(m->pod_index);
	m->pod_index = index;
	m->cap_pod_index = cap;
	for (i = 0; i < m->n_pods; i++) {
		const char *k = m->pods[i].key;

		*pod_slot(m, index, cap, k, k + strlen(k) + 1) = i + 1;
	}
	m->used_pod_index = m->n_pods;
	return 0;
}

/* A new living slot at the end of the pod table for ns/name. */
static struct mpod *pod_new(struct report_model *m, const char *ns, const char *name, struct error *err)
{
	size_t lns = strlen(ns), lname = strlen(name);
	struct mpod *p;

	if (m->n_pods == m->cap_pods) {
		struct mpod *grown = array_grow(m->pods, &m->cap_pods, m->n_pods + 1, sizeof *grown, 1024);

		if (grown == NULL)
			return nomem(err);
		m->pods = grown;
	}
	p = &m->pods[m->n_pods];
	memset(p, 0, sizeof *p);
	if ((p->key = malloc(lns + lname + 2)) == NULL)
		return nomem(err);
	memcpy(p->key, ns, lns + 1);
	memcpy(p->key + lns + 1, name, lname + 1);
	p->live = 1;
	m->n_pods++;
	m->live_pods++;
	return p;
}

static int res_id(struct report_model *m, const char *resource, unsigned *id, struct error *err)
{
	size_t i;

	for (i = 0; i < m->n_res; i++)
		if (strcmp(m->res[i], resource) == 0)
			break;
	if (i == MODEL_RESOURCES_MAX) {
		error_set(err, ERROR_TOO_LARGE, "more than %d GPU resource names", MODEL_RESOURCES_MAX);
		return -1;
	}
	if (i == m->n_res) {
		if ((m->res[i] = strdup(resource)) == NULL)
			return nomem(err), -1;
		m->n_res++;
	}
	*id = (unsigned)i;
	return 0;
}

/* ==== What the policy reads of a running GPU pod ==== */


static size_t judged_slot(struct mjudged *const *index, size_t cap, uint64_t hash, const char *text, size_t len)
{
	size_t i = (size_t)hash & (cap - 1);

	while (index[i] != NULL && (index[i]->hash != hash || index[i]->len != len ||
				    memcmp(index[i]->text, text, len) != 0))
		i = (i + 1) & (cap - 1);
	return i;
}

/* The shared text equal to text[0..len) (made on first use), one more reference to it; NULL on ENOMEM. */
static struct mjudged *judged_get(struct report_model *m, const char *text, size_t len, struct error *err)
{
	uint64_t hash = hash_fnv1a(HASH_FNV1A_BASIS, text, len);
	struct mjudged *j;
	size_t i;

	if ((m->n_judged + 1) * 2 > m->cap_judged) {
		size_t cap = array_cap(m->cap_judged, (m->n_judged + 1) * 2, MODEL_JUDGED_INDEX_MIN, 0);
		struct mjudged **index = cap != 0 ? calloc(cap, sizeof *index) : NULL;

		if (index == NULL)
			return nomem(err);
		for (i = 0; i < m->cap_judged; i++)
			if (m->judged[i] != NULL)
				index[judged_slot(index, cap, m->judged[i]->hash, m->judged[i]->text,
						  m->judged[i]->len)] = m->judged[i];
		free(m->judged);
		m->judged = index;
		m->cap_judged = cap;
	}
	i = judged_slot(m->judged, m->cap_judged, hash, text, len);
	if ((j = m->judged[i]) != NULL) {
		j->refs++;
		return j;
	}
	if ((j = malloc(sizeof *j + len + 1)) == NULL)
		return nomem(err);
	j->hash = hash;
	j->refs = 1;
	j->len = len;
	memcpy(j->text, text, len);
	j->text[len] = '\0';
	m->judged[i] = j;
	m->n_judged++;
	m->judged_bytes += sizeof *j + len + 1;
	return j;
}

/* One reference fewer to j (may be NULL); with the last, j leaves the index (backward-shift deletion). */
static void judged_release(struct report_model *m, struct mjudged *j)
{
	size_t i, next, home;

	if (j == NULL || --j->refs > 0)
		return;
	i = judged_slot(m->judged, m->cap_judged, j->hash, j->text, j->len);
	m->judged[i] = NULL;
	/* Later entries of the run move back into the hole when their home is not between it and them. */
	for (next = (i + 1) & (m->cap_judged - 1); m->judged[next] != NULL; next = (next + 1) & (m->cap_judged - 1)) {
		home = (size_t)m->judged[next]->hash & (m->cap_judged - 1);
		if (((next - home) & (m->cap_judged - 1)) >= ((next - i) & (m->cap_judged - 1))) {
			m->judged[i] = m->judged[next];
			m->judged[next] = NULL;
			i = next;
		}
	}
	m->n_judged--;
	m->judged_bytes -= sizeof *j + j->len + 1;
	free(j);
}

/* New: the members of obj (an object, else nothing) that shape names, in obj's order, but skip; NULL on ENOMEM. */
static json_t *members_of(const json_t *obj, const struct scan_shape *shape, const char *skip)
{
	json_t *out = json_object(), *v;
	const char *key;
	size_t i;

	json_object_foreach(iterable(obj), key, v) {
		for (i = 0; shape[i].key != NULL && strcmp(shape[i].key, key) != 0; i++)
			;
		if (out != NULL && shape[i].key != NULL && strcmp(key, skip) != 0 && json_object_set(out, key, v) != 0) {
			json_decref(out);
			out = NULL;
		}
	}
	return out;
}

/*
 * The text --what-if judges a running GPU pod by: its metadata and spec as
 * the policy reads them (policy_pod_fields), without spec.nodeName (the pod
 * is judged as its creator wrote it, report_whatif.c) and metadata.name (its
 * key holds it; the policy does not read it), so that replicas share it.
 */
static struct mjudged *judged_of(struct report_model *m, const json_t *pod, struct error *err)
{
	json_t *meta = members_of(json_object_get(pod, "metadata"), policy_pod_metadata_fields, "name");
	json_t *spec = members_of(json_object_get(pod, "spec"), policy_pod_spec_fields, "nodeName");
	json_t *doc = meta && spec ? json_pack("{s:O, s:O}", "metadata", meta, "spec", spec) : NULL;
	char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
	struct mjudged *j = text ? judged_get(m, text, strlen(text), err) : nomem(err);

	free(text);
	json_decref(doc);
	json_decref(meta);
	json_decref(spec);
	return j;
}

/* p = what the pod of facts f contributes (p cleared). */
static int pod_fill(struct report_model *m, struct mpod *p, const json_t *obj, const struct report_pod_facts *f,
		    struct error *err)
{
	size_t i, node;

	if (f->terminated) {
		p->cls = POD_TERMINATED;
		return 0;
	}
	if (f->node[0] == '\0') {
		/* Pending: a GPU pod, or one whose DRA claims may ask for GPUs (report_dra.c), is judged. */
		p->cls = f->count > 0 || f->claims ? POD_KEPT : POD_NOTHING;
	} else {
		if (node_at(m, f->node, &node, err) != 0)
			return -1;
		p->node = node + 1;
		if (f->count > 0)
			p->cls = POD_GPU;
		else if (f->daemonset)
			p->cls = POD_DS;
		else  /* a CPU pod on a CPU node has nothing to say; elsewhere it is judged */
			p->cls = m->nodes[node].item != NULL && !m->nodes[node].gpu ? POD_NOTHING : POD_KEPT;
	}
	if (p->cls == POD_KEPT) {
		/* JSON_ENCODE_ANY is not needed: obj is an object (apply_pod read its metadata). */
		if ((p->u.kept = json_dumps(obj, JSON_COMPACT)) == NULL) {
			p->cls = POD_NOTHING;  /* pod_clear() has no text to free */
			return nomem(err), -1;
		}
		m->kept_pods++;
		m->kept_bytes += strlen(p->u.kept) + 1;
	} else if (p->cls == POD_DS && (p->u.ds = strdup(f->ds_name)) == NULL) {
		return nomem(err), -1;
	} else if (p->cls == POD_GPU) {
		if ((p->u.judged = judged_of(m, obj, err)) == NULL)
			return -1;
		if ((p->gpus = calloc(f->count, sizeof *p->gpus)) == NULL)
			return nomem(err), -1;
		for (i = 0; i < f->count; i++) {
			if (res_id(m, f->req[i].resource, &p->gpus[i].res, err) != 0)
				return -1;
			p->gpus[i].count = f->req[i].count;
		}
		p->n_gpus = (unsigned char)f->count;
	}
	return 0;
}

static int apply_pod(struct report_model *m, enum report_event_type ev, const json_t *obj, struct error *err)
{
	struct report_pod_facts f;
	char msg[ERROR_MSG_MAX];
	size_t *slot;
	struct mpod *p = NULL;

	if (report_pod_facts(m->cfg, obj, &f, msg, sizeof msg) != 0 && ev != REPORT_EVENT_DELETED) {
		m->refused++;
		return 0;
	}
	if ((m->used_pod_index + 1) * 2 > m->cap_pod_index && pods_compact(m, err) != 0)
		return -1;
	slot = pod_slot(m, m->pod_index, m->cap_pod_index, f.ns, f.name);
	if (*slot != 0 && m->pods[*slot - 1].live)
		p = &m->pods[*slot - 1];
	if (ev == REPORT_EVENT_DELETED) {
		if (p != NULL) {
			pod_clear(m, p);
			p->live = 0;
			m->live_pods--;
		}
		return 0;
	}
	if (p == NULL) {  /* new, or again after its deletion: at the end */
		if (m->max_pods != 0 && m->live_pods >= m->max_pods) {
			m->refused++;
			return 0;
		}
		if ((p = pod_new(m, f.ns, f.name, err)) == NULL)
			return -1;
		if (*slot == 0)
			m->used_pod_index++;
		*slot = (size_t)(p - m->pods) + 1;
	} else {
		pod_clear(m, p);
	}
	p->mark = m->pod_epoch;
	return pod_fill(m, p, obj, &f, err);
}

/* ==== DRA objects ==== */

/*
 * A ResourceSlice or ResourceClaim, by kind and name, boiled down to what
 * the report reads (report_dra_slim_slice(), _claim(): a slice's devices'
 * attributes, a claim's metadata and allocation results are most of them)
 * and kept as its compact JSON text, parsed again as each report is built:
 * as jansson values a claim takes ten times its text. Claims
 * are bounded as pods are (max_pods: about one claim per DRA pod), slices
 * by REPORT_MODEL_SLICES_MAX; beyond, a new one is refused (counted).
 */
static int apply_dra(struct report_model *m, enum report_event_type ev, const json_t *obj, enum dra_kind k,
		     struct error *err)
{
	const json_t *meta = json_object_get(obj, "metadata");
	char key[MODEL_DRA_KEY_MAX], *text;
	int known;
	json_t *slim, *kept;

	snprintf(key, sizeof key, "%s\t%s/%s", dra_kinds[k], report_str_at(meta, "namespace"),
		 report_str_at(meta, "name"));
	known = json_object_get(m->dra, key) != NULL;
	if (ev == REPORT_EVENT_DELETED) {
		if (known && json_object_del(m->dra, key) == 0)
			m->n_dra[k]--;
		return 0;
	}
	if (!known && ((k == DRA_CLAIM && m->max_pods != 0 && m->n_dra[k] >= m->max_pods) ||
		       (k == DRA_SLICE && m->n_dra[k] >= REPORT_MODEL_SLICES_MAX))) {
		m->refused++;
		return 0;
	}
	slim = k == DRA_SLICE ? report_dra_slim_slice(obj) : report_dra_slim_claim(obj);
	text = slim != NULL ? json_dumps(slim, JSON_COMPACT) : NULL;
	json_decref(slim);
	kept = text != NULL ? json_string_nocheck(text) : NULL;
	free(text);
	if (kept == NULL || json_object_set_new(m->dra, key, kept) != 0)
		return nomem(err), -1;
	if (!known)
		m->n_dra[k]++;
	if (m->dra_seen[k] != NULL && json_object_set_new(m->dra_seen[k], key, json_null()) != 0)
		return nomem(err), -1;
	return 0;
}

static int dra_kind_of(const char *kind)
{
	int k;

	for (k = 0; k < DRA_KINDS; k++)
		if (strcmp(kind, dra_kinds[k]) == 0)
			return k;
	return -1;
}

/* A list of kind k begins: the keys it hands over are noted, for its end's sweep. */
static void dra_list_begin(struct report_model *m, enum dra_kind k)
{
	json_decref(m->dra_seen[k]);  /* a list that failed had no end */
	m->dra_seen[k] = json_object();
}

/* A complete list of kind k: what it did not hand over is gone. */
static void dra_list_end(struct report_model *m, enum dra_kind k)
{
	size_t plen = strlen(dra_kinds[k]);
	const char *key;
	json_t *item;
	void *tmp;

	/* Out of memory at the list's start: nothing is known to be gone, so nothing is swept. */
	if (m->dra_seen[k] == NULL)
		return;
	json_object_foreach_safe(m->dra, tmp, key, item)
		if (strncmp(key, dra_kinds[k], plen) == 0 && key[plen] == '\t' &&
		    json_object_get(m->dra_seen[k], key) == NULL && json_object_del(m->dra, key) == 0)
			m->n_dra[k]--;
	json_decref(m->dra_seen[k]);
	m->dra_seen[k] = NULL;
}

/* ==== The model ==== */

struct report_model *report_model_new(const struct config *cfg, struct error *err)
{
	struct report_model *m = calloc(1, sizeof *m);

	if (m == NULL)
		return nomem(err);
	m->cfg = cfg;
	if ((m->dra = json_object()) == NULL) {
		free(m);
		return nomem(err);
	}
	return m;
}

void report_model_free(struct report_model *m)
{
	size_t i;

	if (m == NULL)
		return;
	for (i = 0; i < m->n_nodes; i++) {
		free(m->nodes[i].name);
		json_decref(m->nodes[i].item);
	}
	for (i = 0; i < m->n_pods; i++) {
		pod_clear(m, &m->pods[i]);
		free(m->pods[i].key);
	}
	for (i = 0; i < m->n_res; i++)
		free(m->res[i]);
	free(m->judged);  /* empty: each text went with its last pod */
	free(m->nodes);
	free(m->order);
	free(m->node_index);
	free(m->pods);
	free(m->pod_index);
	json_decref(m->dra);
	json_decref(m->dra_seen[DRA_SLICE]);
	json_decref(m->dra_seen[DRA_CLAIM]);
	free(m);
}

int report_model_apply(struct report_model *m, enum report_event_type ev, const json_t *obj, struct error *err)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	int k = kind != NULL ? dra_kind_of(kind) : -1;

	if (ev == REPORT_EVENT_OTHER)
		return 0;
	if (kind != NULL && strcmp(kind, "Node") == 0)
		return apply_node(m, ev, obj, err);
	if (kind != NULL && strcmp(kind, "Pod") == 0)
		return apply_pod(m, ev, obj, err);
	if (k >= 0)
		return apply_dra(m, ev, obj, (enum dra_kind)k, err);
	m->refused++;
	return 0;
}

void report_model_limit(struct report_model *m, size_t max_pods)
{
	m->max_pods = max_pods;
}

void report_model_list_begin(struct report_model *m, const char *kind)
{
	int k = dra_kind_of(kind);

	if (strcmp(kind, "Node") == 0)
		m->node_epoch++;
	else if (strcmp(kind, "Pod") == 0)
		m->pod_epoch++;
	else if (k >= 0)
		dra_list_begin(m, (enum dra_kind)k);
}

void report_model_list_end(struct report_model *m, const char *kind)
{
	int k = dra_kind_of(kind);
	size_t i;

	if (k >= 0) {
		dra_list_end(m, (enum dra_kind)k);
		return;
	}
	if (strcmp(kind, "Node") == 0) {
		for (i = 0; i < m->n_nodes; i++) {
			struct mnode *n = &m->nodes[i];

			if (n->item != NULL && n->mark != m->node_epoch) {
				json_decref(n->item);
				n->item = NULL;
				n->gpu = 0;
				m->listed_nodes--;
			}
		}
	} else if (strcmp(kind, "Pod") == 0) {
		for (i = 0; i < m->n_pods; i++) {
			struct mpod *p = &m->pods[i];

			if (p->live && p->mark != m->pod_epoch) {
				pod_clear(m, p);
				p->live = 0;
				m->live_pods--;
			}
		}
	}
}

void report_model_stats(const struct report_model *m, struct report_model_stats *s)
{
	s->nodes = m->listed_nodes;
	s->pods = m->live_pods;
	s->kept_pods = m->kept_pods;
	s->kept_bytes = m->kept_bytes;
	s->refused = m->refused;
	s->judged = m->n_judged;
	s->judged_bytes = m->judged_bytes;
	s->slices = m->n_dra[DRA_SLICE];
	s->claims = m->n_dra[DRA_CLAIM];
}

/* A running GPU pod on node idx judged by r's what-if, from what the model kept of it. */
static int whatif_gpu_pod(const struct mpod *p, struct report *r, size_t idx, struct error *err)
{
	json_error_t jerr;
	json_t *pod = json_loadb(p->u.judged->text, p->u.judged->len, JSON_ALLOW_NUL, &jerr);
	int rc;

	if (pod == NULL)  /* the model wrote it: only memory can fail */
		return nomem(err), -1;
	rc = report_whatif_running_as(r, pod, p->key, p->key + strlen(p->key) + 1, idx, err);
	json_decref(pod);
	return rc;
}

/* A kept pod folded into r as the item it was applied as. */
static int report_kept(const struct mpod *p, struct report *r, struct error *err)
{
	json_error_t jerr;
	json_t *pod = json_loadb(p->u.kept, strlen(p->u.kept), JSON_ALLOW_NUL, &jerr);
	int rc;

	if (pod == NULL)  /* the model wrote it: only memory can fail */
		return nomem(err), -1;
	rc = report_take_item(r, MODEL_INPUT, pod, err);
	json_decref(pod);
	return rc;
}

/* One pod's contribution to r, as pod_item() would fold the pod in. */
static int report_pod(const struct report_model *m, const struct mpod *p, struct report *r, struct error *err)
{
	struct policy_gpu_request req[LIMIT_GPU_KINDS_MAX];
	size_t idx, i;

	if (p->cls == POD_KEPT)
		return report_kept(p, r, err);
	r->items++;
	r->pod_items++;
	if (p->cls == POD_TERMINATED)
		r->terminated_pods++;
	if (p->cls != POD_GPU && p->cls != POD_DS)
		return 0;
	if (report_node_index(r, m->nodes[p->node - 1].name, &idx, err) != 0)
		return -1;
	if (p->cls == POD_DS)
		return report_ds_pod_on(r, idx, p->key, p->u.ds, err);
	if (r->whatif.cfg != NULL && whatif_gpu_pod(p, r, idx, err) != 0)
		return -1;
	for (i = 0; i < p->n_gpus; i++) {
		req[i].resource = m->res[p->gpus[i].res];
		req[i].count = p->gpus[i].count;
	}
	return report_gpu_pod_on(r, idx, req, p->n_gpus, err);
}

int report_model_report(const struct report_model *m, struct report *r, struct error *err)
{
	return report_model_whatif(m, NULL, NULL, r, err);
}

int report_model_whatif(const struct report_model *m, const struct config *whatif, const char *name,
			struct report *r, struct error *err)
{
	const char *key;
	json_t *text;
	size_t i;

	if (report_init(r, m->cfg, err) != 0)
		return -1;
	if (whatif != NULL)
		report_whatif_set(r, whatif, name);
	for (i = 0; i < m->n_order; i++)
		if (m->nodes[m->order[i]].item != NULL &&
		    report_take_item(r, MODEL_INPUT, m->nodes[m->order[i]].item, err) != 0)
			return -1;
	json_object_foreach(m->dra, key, text) {
		json_error_t jerr;
		/* Our own dump: fails only on ENOMEM. json_loadb, as every parse here: test_oom interposes it. */
		json_t *item = json_loadb(json_string_value(text), json_string_length(text), 0, &jerr);

		int rc = item == NULL ? (nomem(err), -1) : report_take_item(r, MODEL_INPUT, item, err);

		json_decref(item);
		if (rc != 0)
			return -1;
	}
	for (i = 0; i < m->n_pods; i++)
		if (m->pods[i].live && report_pod(m, &m->pods[i], r, err) != 0)
			return -1;
	return report_finish(r, err);
}
