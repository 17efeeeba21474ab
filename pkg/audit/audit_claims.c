/*
 * audit_claims: the DRA claim objects of the audit's input, and the lookup
 * the templates' claims resolve through (policy_claims.h).
 */
#include "audit/audit.h"

#include <string.h>

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
