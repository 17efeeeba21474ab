/*
 * JSON Pointer escaping: any key escaped by patch_add and applied by
 * patch_apply lands under exactly that key.
 */
#include <stdlib.h>
#include <string.h>

#include "base/patch.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size);

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
	char key[600];
	struct error err;
	json_t *patch, *doc;


	if (size >= sizeof key)
		return 0;
	memcpy(key, data, size);
	key[size] = '\0';
	patch = json_array();
	doc = json_pack("{s:{}}", "spec");
	if (patch == NULL || doc == NULL)
		abort();
	/* jansson refuses keys that are not UTF-8; so does the pointer then. */
	if (patch_add(patch, "/spec", key, json_string("v"), &err) == 0 &&
	    json_array_size(patch) == 1) {
		if (patch_apply(doc, patch, &err) != 0)
			abort();
		if (!json_is_string(json_object_get(json_object_get(doc, "spec"), key)) ||
		    json_object_size(json_object_get(doc, "spec")) != 1)
			abort();
	}
	json_decref(patch);
	json_decref(doc);
	return 0;
}
