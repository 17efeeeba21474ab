/*
 * audit_claims: the DRA claim objects of the audit's input, and the lookup
 * the templates' claims resolve through (policy_claims.h).
 */
#include "audit/audit.h"

#include <stdio.h>
#include <string.h>

#include "base/iterable.h"
#include "policy/policy.h"
#include "text/manifest.h"

/* Keeps obj (borrowed from a document about to be released) when it is a claim object. */
static int keep(struct audit *a, json_t *obj, struct error *err)
{
	int added;

	if (a->claim_keep == NULL && (a->claim_keep = json_array()) == NULL)
		goto nomem;
	added = policy_claim_objects_add(&a->claims, obj, err);
	if (added <= 0)
		return added;
	/* The index borrows obj: the reference here keeps it once its document is gone. */
	if (json_array_append(a->claim_keep, obj) != 0)
		goto nomem;
	return 0;
nomem:
	error_set(err, ERROR_NOMEM, "out of memory");
	return -1;
}

int audit_collect(struct audit *a, const char *buf, size_t len, struct error *err)
{
	struct manifest m;
	struct manifest_doc doc;
	int more, rc = -1;

	memset(&doc, 0, sizeof doc);
	manifest_open(buf, len, &m);
	while ((more = manifest_next(&m, &doc, err)) > 0) {
		const char *kind = json_string_value(json_object_get(doc.root, "kind"));
		json_t *item;
		size_t i;

		if (doc.root == NULL)
			continue;
		if (kind != NULL && strcmp(kind, "List") == 0) {
			json_array_foreach(json_object_get(doc.root, "items"), i, item)
				if (keep(a, item, err) != 0)
					goto out;
		} else if (keep(a, doc.root, err) != 0) {
			goto out;
		}
	}
	rc = more < 0 ? -1 : 0;
out:
	manifest_doc_free(&doc);
	manifest_free(&m);
	return rc;
}

/* ==== Custom resources that ask for GPUs with no pod template ==== */

#define INTENT_DEPTH_MAX 64   /* nesting searched: far beyond any custom resource's */
#define INTENT_PATH_MAX 256

/*
 * Where v (an object's member, at path) says GPU: a key or a string value
 * that is a gpuResources name (KServe's resources.limits, SparkApplication's
 * gpu.name), or an Azure GPU VM size (Standard_N*: NC, ND, NV; KAITO's
 * resource.instanceType). 1 with what and path filled; 0 when none.
 */
static int find_intent(const struct config *cfg, const json_t *v, char *path, size_t cap, int depth,
		       const char **what)
{
	const char *key;
	const json_t *x;
	size_t len = strlen(path), i;

	if (depth > INTENT_DEPTH_MAX)
		return 0;
	if (json_is_string(v)) {
		const char *s = json_string_value(v);

		for (i = 0; i < cfg->gpu_resources.n; i++)
			if (policy_glob_match(cfg->gpu_resources.v[i], s)) {
				*what = s;
				return 1;
			}
		if (strncmp(s, "Standard_N", 10) == 0) {
			*what = s;
			return 1;
		}
		return 0;
	}
	json_object_foreach(iterable(v), key, x) {
		snprintf(path + len, cap - len, "%s%s", len ? "." : "", key);
		for (i = 0; i < cfg->gpu_resources.n; i++)
			if (policy_glob_match(cfg->gpu_resources.v[i], key)) {
				*what = key;
				return 1;
			}
		if (find_intent(cfg, x, path, cap, depth + 1, what))
			return 1;
	}
	json_array_foreach(v, i, x) {
		snprintf(path + len, cap - len, "[%zu]", i);
		if (find_intent(cfg, x, path, cap, depth + 1, what))
			return 1;
	}
	path[len] = '\0';
	return 0;
}

int audit_note_intent(struct audit *a, const char *name, unsigned long line, const json_t *obj,
		      struct error *err)
{
	const json_t *md = json_object_get(obj, "metadata"), *x;
	const char *kind = json_string_value(json_object_get(obj, "kind")), *what = NULL, *key;
	const char *oname = json_string_value(json_object_get(md, "name"));
	char path[INTENT_PATH_MAX] = "", msg[INTENT_PATH_MAX + 512];
	int found = 0;

	if (kind == NULL || strcmp(kind, "List") == 0 || !json_is_object(obj))
		return 0;
	/* Anywhere but what every object has: KAITO's Workspace keeps its resource at the top. */
	json_object_foreach(iterable(obj), key, x) {
		if (strcmp(key, "metadata") == 0 || strcmp(key, "status") == 0 || !json_is_object(x))
			continue;
		snprintf(path, sizeof path, "%s", key);
		if ((found = find_intent(a->cfg, x, path, sizeof path, 0, &what)) != 0)
			break;
	}
	if (!found)
		return 0;
	snprintf(msg, sizeof msg, "%s %s asks for GPUs (%s at %s) but holds no pod template gpu-admission "
		 "can judge here: its pods are judged when its controller creates them (with the webhook "
		 "installed), not by this audit", kind, oname ? oname : "(unnamed)", what, path);
	return audit_add_note(a, name, line, msg, err);
}
