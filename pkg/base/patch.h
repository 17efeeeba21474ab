/*
 * patch: RFC 6901 JSON Pointers and RFC 6902 JSON Patch documents.
 *
 * The policy engine's patches for pods are "add" operations only; its fixes
 * for manifests (audit --fix of a rejected template) "remove" ones.
 * patch_apply() exists so the auditor and the tests can apply them.
 */
#ifndef GPU_ADMISSION_PATCH_H
#define GPU_ADMISSION_PATCH_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"

/*
 * Writes token escaped as one JSON Pointer reference token ("~" -> "~0",
 * "/" -> "~1") into out, NUL-terminated. Returns the length written, or -1
 * when out (of size outsz) is too small; out is then an empty string.
 */
long patch_escape(const char *token, char *out, size_t outsz);

/*
 * Appends {"op":"add","path":base[/escaped token],"value":value} to the array
 * patch. token may be NULL (path is base itself). value is stolen, even on
 * failure. Returns 0, or -1 (ERROR_NOMEM, or ERROR_INTERNAL if the path would
 * exceed 1 KiB).
 */
int patch_add(json_t *patch, const char *base, const char *token, json_t *value,
	      struct error *err);

/*
 * Appends {"op":"remove","path":base[/escaped token]} to the array patch.
 * Returns 0, or -1 (ERROR_NOMEM, or ERROR_INTERNAL for a path over 1 KiB).
 */
int patch_remove(json_t *patch, const char *base, const char *token, struct error *err);

/*
 * Applies the "add" and "remove" operations of patch (an array, borrowed) to
 * doc in place. Any other op, a path that does not resolve (or, to remove,
 * names nothing), or a malformed operation is ERROR_INPUT; doc may then be
 * partly modified. Returns 0 or -1.
 */
int patch_apply(json_t *doc, const json_t *patch, struct error *err);

/*
 * The value a JSON Pointer (RFC 6901, ptr borrowed) names in doc (borrowed),
 * or NULL when it names nothing or is malformed. Borrowed reference.
 */
json_t *patch_pointer_get(json_t *doc, const char *ptr);

#endif
