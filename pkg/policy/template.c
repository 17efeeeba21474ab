/* template: the pod templates inside Kubernetes objects, found and judged (see template.h). */
#include "policy/template.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/iterable.h"
#include "base/patch.h"

/*
 * The kinds Kubernetes defines, where each keeps its pod template, and the
 * API groups that served them (extensions: manifests older than apps/v1,
 * still audited). Another group's kind of the same name (Volcano's
 * batch.volcano.sh Job) is searched like any custom resource.
 */
static const struct {
	const char *kind;
	const char *groups[2];    /* "" is the core group */
	const char *path[TEMPLATE_PATH_DEPTH];
} builtin[] = {
	{ "Pod", { "", NULL }, { NULL } },
	{ "Deployment", { "apps", "extensions" }, { "spec", "template" } },
	{ "ReplicaSet", { "apps", "extensions" }, { "spec", "template" } },
	{ "DaemonSet", { "apps", "extensions" }, { "spec", "template" } },
	{ "StatefulSet", { "apps", NULL }, { "spec", "template" } },
	{ "Job", { "batch", NULL }, { "spec", "template" } },
	{ "CronJob", { "batch", NULL }, { "spec", "jobTemplate", "spec", "template" } },
	{ "ReplicationController", { "", NULL }, { "spec", "template" } },
	{ "PodTemplate", { "", NULL }, { "template" } },
};

#define N_BUILTIN (sizeof builtin / sizeof builtin[0])
_Static_assert(N_BUILTIN == TEMPLATE_KINDS, "TEMPLATE_KINDS counts the built-in kinds");

/* The built-in entry for group/kind (group NULL: any group, a manifest without apiVersion), or -1. */
static long builtin_index(const char *group, const char *kind)
{
	size_t i, g;

	for (i = 0; kind != NULL && i < N_BUILTIN; i++) {
		if (strcmp(kind, builtin[i].kind) != 0)
			continue;
		for (g = 0; g < 2 && builtin[i].groups[g] != NULL; g++)
			if (group == NULL || strcmp(group, builtin[i].groups[g]) == 0)
				return (long)i;
		return -1;
	}
	return -1;
}

int template_builtin(const char *group, const char *kind)
{
	return group != NULL && builtin_index(group, kind) >= 0;
}

const char *template_kind(size_t i)
{
	return i < N_BUILTIN ? builtin[i].kind : NULL;
}

const char *template_kind_step(size_t i, size_t j)
{
	return i < N_BUILTIN && j < TEMPLATE_PATH_DEPTH ? builtin[i].path[j] : NULL;
}

const char *template_kind_label(const char *group, const char *kind)
{
	long b = group != NULL ? builtin_index(group, kind) : -1;

	return b >= 0 ? builtin[b].kind : "custom";
}

/* ==== Memory ==== */

void *template_mem_alloc(size_t n)
{
	json_malloc_t jmalloc;
	json_free_t jfree;

	json_get_alloc_funcs(&jmalloc, &jfree);
	return jmalloc(n);
}

void template_mem_free(void *p)
{
	json_malloc_t jmalloc;
	json_free_t jfree;

	if (p == NULL)
		return;
	json_get_alloc_funcs(&jmalloc, &jfree);
	jfree(p);
}

static char *mem_strdup(const char *s)
{
	size_t n = strlen(s) + 1;
	char *p = template_mem_alloc(n);

	if (p != NULL)
		memcpy(p, s, n);
	return p;
}

/* ==== The walk ==== */

struct walk {
	struct template_list *out;
	char ptr[LIMIT_TEMPLATE_POINTER_MAX], path[LIMIT_TEMPLATE_POINTER_MAX];
	size_t ptr_len, path_len;
	const json_t *metadata;   /* the object's */
	const char *kind, *name, *ns;
	int daemonset;
	struct error *err;
};

/* Appends "/token" and ".token" (or "[i]") to the walk's paths; 0 when too long. */
static int walk_push(struct walk *w, const char *key, size_t index, int is_index)
{
	char tok[1024], shown[1040];
	size_t tl, sl;

	if (is_index) {
		snprintf(tok, sizeof tok, "%zu", index);
		snprintf(shown, sizeof shown, "[%zu]", index);
	} else {
		if (patch_escape(key, tok, sizeof tok) < 0)
			return 0;
		snprintf(shown, sizeof shown, "%s%s", w->path_len ? "." : "", key);
	}
	tl = strlen(tok);
	sl = strlen(shown);
	if (w->ptr_len + tl + 2 > sizeof w->ptr || w->path_len + sl + 1 > sizeof w->path)
		return 0;
	w->ptr[w->ptr_len++] = '/';
	memcpy(w->ptr + w->ptr_len, tok, tl + 1);
	w->ptr_len += tl;
	memcpy(w->path + w->path_len, shown, sl + 1);
	w->path_len += sl;
	return 1;
}

static void walk_pop(struct walk *w, size_t ptr_len, size_t path_len)
{
	w->ptr_len = ptr_len;
	w->ptr[ptr_len] = '\0';
	w->path_len = path_len;
	w->path[path_len] = '\0';
}

static int nomem(struct walk *w)
{
	error_set(w->err, ERROR_NOMEM, "out of memory finding pod templates");
	return -1;
}

/*
 * Records the template at the walk's place: node is its value; spec_direct
 * says it is a PodSpec held directly, judged as {metadata: the object's,
 * spec: node}.
 */
static int add_template(struct walk *w, const json_t *node, int spec_direct, int pod_itself)
{
	struct template_list *l = w->out;
	struct template_item *t;

	if (l->max > 0 && l->n == l->max) {
		error_set(w->err, ERROR_INPUT, "more than %zu pod templates", l->max);
		return -1;
	}
	if (l->n == l->cap) {
		/* Grown by copying: the allocator has no realloc (an arena's frees cost nothing). */
		size_t cap = array_cap(l->cap, l->n + 1, 4, 0);
		struct template_item *grown = cap != 0 && cap <= SIZE_MAX / sizeof *grown ?
					      template_mem_alloc(cap * sizeof *grown) : NULL;

		if (grown == NULL)
			return nomem(w);
		if (l->n > 0)
			memcpy(grown, l->v, l->n * sizeof *grown);
		template_mem_free(l->v);
		l->v = grown;
		l->cap = cap;
	}
	t = &l->v[l->n];
	memset(t, 0, sizeof *t);
	t->pointer = mem_strdup(w->ptr);
	t->path = mem_strdup(w->path_len ? w->path : ".");
	if (spec_direct && (t->own = json_object()) != NULL &&
	    ((w->metadata != NULL &&
	      json_object_set(t->own, "metadata", (json_t *)(uintptr_t)w->metadata) != 0) ||
	     json_object_set(t->own, "spec", (json_t *)(uintptr_t)node) != 0)) {
		json_decref(t->own);
		t->own = NULL;
	}
	if (t->pointer == NULL || t->path == NULL || (spec_direct && t->own == NULL)) {
		template_mem_free(t->pointer);
		template_mem_free(t->path);
		json_decref(t->own);
		return nomem(w);
	}
	t->pod = spec_direct ? t->own : node;
	t->node = node;
	t->kind = w->kind;
	t->name = w->name;
	t->ns = w->ns;
	t->pod_itself = pod_itself;
	t->daemonset = w->daemonset;
	l->n++;
	return 0;
}

/* A pod template: {metadata, spec} whose spec has a containers array. */
static int is_pod_template(const json_t *v)
{
	return json_is_object(v) && json_is_array(json_object_get(json_object_get(v, "spec"), "containers"));
}

/* A PodSpec held directly: {containers: [...], ...}. */
static int is_pod_spec(const json_t *v)
{
	return json_is_object(v) && json_is_array(json_object_get(v, "containers"));
}

/* "template", or a "...Template" (LeaderWorkerSet's leaderTemplate / workerTemplate). */
static int template_key(const char *key)
{
	size_t n = strlen(key), m = strlen(TEMPLATE_KEY_SUFFIX);

	return strcmp(key, TEMPLATE_KEY) == 0 || (n > m && strcmp(key + n - m, TEMPLATE_KEY_SUFFIX) == 0);
}

/*
 * Custom resources: any template-looking member holding a pod template or a
 * PodSpec, not descending into one found. At depth 0, the object's own
 * metadata is left out.
 */
static int walk_generic(struct walk *w, const json_t *v, int depth)
{
	size_t pl = w->ptr_len, hl = w->path_len, i;
	const char *key;
	json_t *child;

	if (depth > TEMPLATE_DEPTH_MAX)
		return 0;
	if (json_is_object(v)) {
		json_object_foreach(iterable(v), key, child) {
			int found = 0;

			if (!json_is_object(child) && !json_is_array(child))
				continue;
			if (depth == 0 && strcmp(key, "metadata") == 0)
				continue;
			if (!walk_push(w, key, 0, 0))
				continue;
			if (template_key(key)) {
				found = is_pod_template(child) ? 1 : is_pod_spec(child) ? 2 : 0;
				if (found && add_template(w, child, found == 2, 0) != 0)
					return -1;
			}
			if (!found && walk_generic(w, child, depth + 1) != 0)
				return -1;
			walk_pop(w, pl, hl);
		}
	} else if (json_is_array(v)) {
		json_array_foreach(v, i, child) {
			if (!json_is_object(child) && !json_is_array(child))
				continue;
			if (!walk_push(w, NULL, i, 1))
				continue;
			if (walk_generic(w, child, depth + 1) != 0)
				return -1;
			walk_pop(w, pl, hl);
		}
	}
	return 0;
}

static const char *meta_str(const json_t *obj, const char *key)
{
	const char *s = json_string_value(json_object_get(json_object_get(obj, "metadata"), key));

	return s != NULL && s[0] != '\0' ? s : NULL;
}

/* The templates of obj, a group/kind object (group NULL: any). */
static int walk_object(struct walk *w, const json_t *obj, const char *group, const char *kind)
{
	size_t pl = w->ptr_len, hl = w->path_len, j;
	long b = builtin_index(group, kind);
	const json_t *meta = json_object_get(obj, "metadata"), *v = obj;

	w->kind = kind;
	w->metadata = meta;
	w->name = meta_str(obj, "name");
	if (w->name == NULL)
		w->name = meta_str(obj, "generateName");
	if (w->name == NULL)
		w->name = "(unnamed)";
	w->ns = meta_str(obj, "namespace");
	if (w->ns == NULL)
		w->ns = "default";
	w->daemonset = b >= 0 && strcmp(kind, "DaemonSet") == 0;
	if (b < 0)
		return walk_generic(w, obj, 0);
	if (strcmp(kind, "Pod") == 0)
		return json_is_object(json_object_get(obj, "spec")) ? add_template(w, obj, 0, 1) : 0;
	for (j = 0; j < TEMPLATE_PATH_DEPTH && builtin[b].path[j] != NULL && v != NULL; j++) {
		v = json_object_get(v, builtin[b].path[j]);
		if (!walk_push(w, builtin[b].path[j], 0, 0))
			v = NULL;
	}
	if (json_is_object(v) && add_template(w, v, 0, 0) != 0)
		return -1;
	walk_pop(w, pl, hl);
	return 0;
}

static int discover(struct walk *w, const json_t *obj, int list_depth);

/*
 * The objects of a list: items of a kind: List (key "items"), or a document
 * that is itself an array (key NULL: `kubectl get -o json | jq .items`).
 */
static int discover_items(struct walk *w, const json_t *items, const char *key, int list_depth)
{
	size_t pl = w->ptr_len, hl = w->path_len, i;
	const json_t *item;

	if (list_depth >= TEMPLATE_LIST_DEPTH_MAX)
		return 0;
	json_array_foreach(items, i, item) {
		if (!json_is_object(item))
			continue;
		if (key != NULL && !walk_push(w, key, 0, 0))
			continue;
		if (walk_push(w, NULL, i, 1) && discover(w, item, list_depth + 1) != 0)
			return -1;
		walk_pop(w, pl, hl);
	}
	return 0;
}

/* An object of a manifest: its group from its apiVersion ("apps/v1": apps, "v1": the core group). */
static int discover(struct walk *w, const json_t *obj, int list_depth)
{
	const char *kind = json_string_value(json_object_get(obj, "kind"));
	const char *api = json_string_value(json_object_get(obj, "apiVersion"));
	const json_t *items = json_object_get(obj, "items");
	char group[256];
	const char *slash;

	if (kind == NULL)
		return 0;  /* not a Kubernetes object: nothing to audit */
	if (strlen(kind) >= 4 && strcmp(kind + strlen(kind) - 4, "List") == 0 && json_is_array(items))
		return discover_items(w, items, "items", list_depth);
	if (api == NULL)
		return walk_object(w, obj, NULL, kind);
	slash = strchr(api, '/');
	snprintf(group, sizeof group, "%.*s", slash ? (int)(slash - api) : 0, api);
	return walk_object(w, obj, group, kind);
}

/*
 * A walk appending to out (its paths are 8 KiB: not on the stack, and not
 * zeroed either, as a webhook finds templates on every workload review);
 * NULL with err.
 */
static struct walk *walk_new(struct template_list *out, struct error *err)
{
	struct walk *w = template_mem_alloc(sizeof *w);

	if (w == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory finding pod templates");
		return NULL;
	}
	w->out = out;
	w->ptr[0] = w->path[0] = '\0';
	w->ptr_len = w->path_len = 0;
	w->metadata = NULL;
	w->kind = w->name = w->ns = NULL;
	w->daemonset = 0;
	w->err = err;
	return w;
}

int template_find(const json_t *root, struct template_list *out, struct error *err)
{
	struct walk *w = walk_new(out, err);
	int rc;

	if (w == NULL)
		return -1;
	rc = json_is_object(root) ? discover(w, root, 0) : json_is_array(root) ? discover_items(w, root, NULL, 0) : 0;
	template_mem_free(w);
	return rc;
}

int template_find_object(const json_t *obj, const char *group, const char *kind, struct template_list *out,
			 struct error *err)
{
	struct walk *w = walk_new(out, err);
	int rc;

	if (w == NULL)
		return -1;
	rc = json_is_object(obj) && kind != NULL ? walk_object(w, obj, group ? group : "", kind) : 0;
	template_mem_free(w);
	return rc;
}

static int by_pointer(const void *a, const void *b)
{
	return strcmp(((const struct template_item *)a)->pointer, ((const struct template_item *)b)->pointer);
}

void template_list_index(struct template_list *l)
{
	if (l->n > 1)
		qsort(l->v, l->n, sizeof *l->v, by_pointer);
	l->indexed = 1;
}

const struct template_item *template_at(const struct template_list *l, const char *pointer)
{
	struct template_item key = { 0 };
	size_t i;

	if (l->indexed) {
		key.pointer = (char *)(uintptr_t)pointer;
		return l->n > 0 ? bsearch(&key, l->v, l->n, sizeof *l->v, by_pointer) : NULL;
	}
	for (i = 0; i < l->n; i++)
		if (strcmp(l->v[i].pointer, pointer) == 0)
			return &l->v[i];
	return NULL;
}

void template_list_free(struct template_list *l)
{
	size_t i;

	if (l == NULL)
		return;
	for (i = 0; i < l->n; i++) {
		template_mem_free(l->v[i].pointer);
		template_mem_free(l->v[i].path);
		json_decref(l->v[i].own);
	}
	template_mem_free(l->v);
	memset(l, 0, sizeof *l);
}

/* ==== Judging ==== */

int template_judge(const struct config *cfg, const struct template_item *t, const struct template_item *old,
		   enum policy_operation op, struct policy_result *res, struct error *err)
{
	return template_judge_claims(cfg, t, old, op, NULL, res, err);
}

int template_judge_claims(const struct config *cfg, const struct template_item *t, const struct template_item *old,
			  enum policy_operation op, const struct policy_claim_lookup *lk,
			  struct policy_result *res, struct error *err)
{
	struct policy_request req = { 0 };
	struct policy_claims claims = { 0 };
	int rc;

	req.pod = t->pod;
	req.old_pod = old != NULL ? old->pod : NULL;
	req.ns = t->ns;
	req.operation = op;
	req.daemonset = t->daemonset;
	req.template = !t->pod_itself;
	/* Offline trust of a stored Pod's owner references; a template's are not consulted at all. */
	req.username = NULL;
	req.validate = 0;
	req.full_warnings = 1;
	if (lk != NULL && policy_claims_resolve_pod(t->pod, t->ns, lk, &claims, err) != 0) {
		memset(res, 0, sizeof *res);
		return -1;
	}
	req.claims = lk != NULL ? &claims : NULL;
	rc = policy_evaluate(cfg, &req, res, err);
	policy_claims_free(&claims);
	return rc;
}

int template_same(const struct template_item *a, const struct template_item *b)
{
	return scan_shape_equal(a->pod, b->pod, policy_pod_fields);
}

int template_rebase(const struct template_item *t, const json_t *patch, json_t *doc_patch, struct error *err)
{
	size_t i;
	const json_t *op;

	json_array_foreach(patch, i, op) {
		const char *path = json_string_value(json_object_get(op, "path")), *key;
		json_t *copy = NULL, *v;
		char *full = NULL;
		size_t n;

		/* A PodSpec held directly is the judged pod's spec: /spec/x is the PodSpec's x. */
		if (path != NULL && t->own != NULL) {
			path = strncmp(path, "/spec", 5) == 0 && (path[5] == '/' || path[5] == '\0') ? path + 5 : NULL;
		}
		if (path == NULL) {
			error_set(err, ERROR_INTERNAL, "a patch operation the template cannot hold");
			return -1;
		}
		n = strlen(t->pointer) + strlen(path) + 1;
		/* Member by member: json_copy() drops a member it cannot store, and says nothing. */
		if ((copy = json_object()) == NULL)
			goto nomem;
		json_object_foreach(iterable(op), key, v)
			if (strcmp(key, "path") != 0 && json_object_set(copy, key, v) != 0)
				goto nomem;
		if ((full = malloc(n)) == NULL)
			goto nomem;
		snprintf(full, n, "%s%s", t->pointer, path);
		if (json_object_set_new(copy, "path", json_string(full)) != 0)
			goto nomem;
		if (json_array_append_new(doc_patch, copy) != 0) {
			copy = NULL;  /* taken, and released, by the failed append */
			goto nomem;
		}
		free(full);
		continue;
nomem:
		json_decref(copy);
		free(full);
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	return 0;
}
