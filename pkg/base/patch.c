#include "base/patch.h"

#include <stdlib.h>
#include <string.h>

#include "base/limit.h"

#define PATCH_PATH_MAX 1024
/* The longest path made: a pool's nodeSelector key under /spec/nodeSelector, every character escaped. */
_Static_assert(PATCH_PATH_MAX > sizeof "/spec/nodeSelector/" + 2 * LIMIT_POLICY_STRING_MAX,
	       "a policy's label key fits a patch path");

long patch_escape(const char *token, char *out, size_t outsz)
{
	size_t o = 0;
	const char *p;

	if (outsz == 0)
		return -1;
	for (p = token; *p != '\0'; p++) {
		const char *rep = *p == '~' ? "~0" : *p == '/' ? "~1" : NULL;
		size_t need = rep ? 2 : 1;

		if (o + need >= outsz) {
			out[0] = '\0';
			return -1;
		}
		if (rep) {
			out[o++] = rep[0];
			out[o++] = rep[1];
		} else {
			out[o++] = *p;
		}
	}
	out[o] = '\0';
	return (long)o;
}

/* base[/escaped token] into path (PATCH_PATH_MAX bytes); -1 with ERROR_INTERNAL when too long. */
static int build_path(char *path, const char *base, const char *token, struct error *err)
{
	size_t blen = strlen(base);

	if (blen + 1 >= PATCH_PATH_MAX)
		goto long_path;
	memcpy(path, base, blen + 1);
	if (token != NULL) {
		path[blen] = '/';
		if (patch_escape(token, path + blen + 1, PATCH_PATH_MAX - blen - 1) < 0)
			goto long_path;
	}
	return 0;
long_path:
	error_set(err, ERROR_INTERNAL, "patch path too long");
	return -1;
}

int patch_add(json_t *patch, const char *base, const char *token, json_t *value,
	      struct error *err)
{
	char path[PATCH_PATH_MAX];
	json_t *op = NULL;
	int rc = -1;

	if (value == NULL) {
		error_set(err, ERROR_NOMEM, "out of memory building a patch");
		goto out;
	}
	if (build_path(path, base, token, err) != 0)
		goto out;
	op = json_pack("{s:s, s:s, s:O}", "op", "add", "path", path, "value", value);
	if (op == NULL || json_array_append_new(patch, op) != 0) {
		op = NULL;
		error_set(err, ERROR_NOMEM, "out of memory building a patch");
		goto out;
	}
	rc = 0;
out:
	json_decref(value);
	return rc;
}

int patch_remove(json_t *patch, const char *base, const char *token, struct error *err)
{
	char path[PATCH_PATH_MAX];
	json_t *op;

	if (build_path(path, base, token, err) != 0)
		return -1;
	op = json_pack("{s:s, s:s}", "op", "remove", "path", path);
	if (op == NULL || json_array_append_new(patch, op) != 0) {
		error_set(err, ERROR_NOMEM, "out of memory building a patch");
		return -1;
	}
	return 0;
}

/*
 * Decodes one reference token (p[0..len)) into out: "~1" -> "/", "~0" -> "~".
 * Any other "~" sequence is invalid per RFC 6901.
 */
static int unescape_token(const char *p, size_t len, char *out, size_t outsz)
{
	size_t i, o = 0;

	for (i = 0; i < len; i++) {
		char c = p[i];

		if (c == '~') {
			if (i + 1 >= len || (p[i + 1] != '0' && p[i + 1] != '1'))
				return -1;
			c = p[++i] == '0' ? '~' : '/';
		}
		if (o + 1 >= outsz)
			return -1;
		out[o++] = c;
	}
	out[o] = '\0';
	return 0;
}

/* Parses an array index token: "-" (append) or a decimal without leading zeros. */
static int parse_index(const char *tok, size_t size, size_t *idx)
{
	char *end;
	unsigned long v;

	if (strcmp(tok, "-") == 0) {
		*idx = size;
		return 0;
	}
	if (tok[0] == '\0' || (tok[0] == '0' && tok[1] != '\0') || tok[0] < '0' || tok[0] > '9')
		return -1;
	v = strtoul(tok, &end, 10);
	if (*end != '\0' || v > size)
		return -1;
	*idx = (size_t)v;
	return 0;
}

/* The member or element tok names in an intermediate path step, or NULL. */
static json_t *child(json_t *parent, const char *tok)
{
	size_t idx;

	if (json_is_object(parent))
		return json_object_get(parent, tok);
	if (json_is_array(parent) && parse_index(tok, json_array_size(parent), &idx) == 0)
		return json_array_get(parent, idx); /* NULL for "-": nothing to descend into */
	return NULL;
}

json_t *patch_pointer_get(json_t *doc, const char *ptr)
{
	char tok[PATCH_PATH_MAX];

	while (doc != NULL && *ptr == '/') {
		const char *start = ptr + 1, *end = strchr(start, '/');
		size_t len = end ? (size_t)(end - start) : strlen(start);

		if (unescape_token(start, len, tok, sizeof tok) != 0)
			return NULL;
		doc = child(doc, tok);
		ptr = start + len;
	}
	return *ptr == '\0' ? doc : NULL;
}

/*
 * Adds value (borrowed) at path in doc, or with value NULL removes what path
 * names (RFC 6902: it must exist).
 */
static int apply_op(json_t *doc, const char *path, json_t *value, struct error *err)
{
	char tok[PATCH_PATH_MAX];
	json_t *parent = doc;
	const char *p = path;

	if (*p == '\0') {
		error_set(err, ERROR_INPUT, "patch: replacing the whole document is not supported");
		return -1;
	}
	if (*p != '/') {
		error_set(err, ERROR_INPUT, "patch: path \"%s\" does not start with /", path);
		return -1;
	}
	for (;;) {
		const char *start = p + 1, *end = strchr(start, '/');
		size_t len = end ? (size_t)(end - start) : strlen(start);

		if (unescape_token(start, len, tok, sizeof tok) != 0) {
			error_set(err, ERROR_INPUT, "patch: bad token in path \"%s\"", path);
			return -1;
		}
		if (end == NULL)
			break;
		parent = child(parent, tok);
		if (parent == NULL) {
			error_set(err, ERROR_INPUT, "patch: path \"%s\" does not exist", path);
			return -1;
		}
		p = end;
	}
	if (json_is_object(parent)) {
		if (value == NULL) {
			if (json_object_del(parent, tok) != 0)
				goto missing;
			return 0;
		}
		if (json_object_set(parent, tok, value) != 0)
			goto nomem;
		return 0;
	}
	if (json_is_array(parent)) {
		size_t idx;

		if (parse_index(tok, json_array_size(parent), &idx) != 0) {
			error_set(err, ERROR_INPUT, "patch: bad array index in \"%s\"", path);
			return -1;
		}
		if (value == NULL) {
			if (json_array_remove(parent, idx) != 0)
				goto missing;
			return 0;
		}
		if (json_array_insert(parent, idx, value) != 0)
			goto nomem;
		return 0;
	}
	error_set(err, ERROR_INPUT, "patch: parent of \"%s\" is not a container", path);
	return -1;
missing:
	error_set(err, ERROR_INPUT, "patch: \"%s\" does not exist to remove", path);
	return -1;
nomem:
	error_set(err, ERROR_NOMEM, "patch: out of memory");
	return -1;
}

int patch_apply(json_t *doc, const json_t *patch, struct error *err)
{
	size_t i;
	json_t *op;

	if (!json_is_array(patch)) {
		error_set(err, ERROR_INPUT, "patch: not an array");
		return -1;
	}
	json_array_foreach(patch, i, op) {
		const char *kind = json_string_value(json_object_get(op, "op"));
		const char *path = json_string_value(json_object_get(op, "path"));
		json_t *value = json_object_get(op, "value");
		json_t *copy;
		int rc;

		if (kind != NULL && path != NULL && strcmp(kind, "remove") == 0) {
			if (apply_op(doc, path, NULL, err) != 0)
				return -1;
			continue;
		}
		if (kind == NULL || path == NULL || value == NULL || strcmp(kind, "add") != 0) {
			error_set(err, ERROR_INPUT, "patch: operation %zu is not a well-formed add or remove", i);
			return -1;
		}
		/* A deep copy keeps doc independent of the patch's lifetime. */
		copy = json_deep_copy(value);
		if (copy == NULL) {
			error_set(err, ERROR_NOMEM, "patch: out of memory");
			return -1;
		}
		rc = apply_op(doc, path, copy, err);
		json_decref(copy);
		if (rc != 0)
			return -1;
	}
	return 0;
}
