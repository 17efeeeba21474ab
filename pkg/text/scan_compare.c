/*
 * scan_compare: kept trees compared through a shape, as the differential
 * tests compare what the scanner keeps with what a full parse gives. Apart
 * from the scanner because nothing on the request path calls it.
 */
#include "text/scan_int.h"

#include "base/iterable.h"

/* ==== Comparing kept trees (the differential tests) ==== */

/* scan_shape_equal() for one member: kept as kind and children say. */
static int kept_equal(const json_t *a, const json_t *b, enum scan_kind kind, const struct scan_shape *children)
{
	size_t i;

	if (kind == SCAN_OBJECT && children != NULL && json_is_object(a) && json_is_object(b))
		return scan_shape_equal(a, b, children);
	if (kind == SCAN_ARRAY_OF_OBJECTS && children != NULL && json_is_array(a) && json_is_array(b)) {
		if (json_array_size(a) != json_array_size(b))
			return 0;
		for (i = 0; i < json_array_size(a); i++)
			if (!kept_equal(json_array_get(a, i), json_array_get(b, i), SCAN_OBJECT, children))
				return 0;
		return 1;
	}
	return json_equal(a, b);
}

/* Every member of a that shape names is in b, alike. */
static int kept_in(const json_t *a, const json_t *b, const struct scan_shape *shape)
{
	const char *key;
	const json_t *v;
	void *it;

	for (it = json_object_iter(iterable(a)); it != NULL;
	     it = json_object_iter_next(iterable(a), it)) {
		const struct scan_shape *member;
		const json_t *other;

		key = json_object_iter_key(it);
		v = json_object_iter_value(it);
		member = find_bytes(shape, key, json_object_iter_key_len(it));
		if (member == NULL)
			continue;
		other = json_object_getn(b, key, json_object_iter_key_len(it));
		if (other == NULL || !kept_equal(v, other, member->kind, member->children))
			return 0;
	}
	return 1;
}

int scan_shape_equal(const json_t *a, const json_t *b, const struct scan_shape *shape)
{
	if (!json_is_object(a) || !json_is_object(b) || shape == NULL)
		return json_equal(a, b);
	return kept_in(a, b, shape) && kept_in(b, a, shape);
}
