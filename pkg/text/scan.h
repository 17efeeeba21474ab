/*
 * scan: a strict, validating skip-scan of a JSON document that materialises
 * only the members a caller names.
 *
 * Parsing a whole AdmissionReview into jansson values costs ~20 instructions
 * a byte, most of it on managedFields, annotations and env the policy never
 * reads. The scanner walks every byte once with a table-driven lexer,
 * validating as strictly as jansson does (grammar, UTF-8, escapes, surrogate
 * pairs, no NUL, no duplicate keys, nesting), and builds jansson values only
 * for the members a shape selects, straight from the bytes it has validated
 * (jansson's own lexer reads a byte at a time through a stream, and costs a
 * setup per call).
 *
 * The contract that keeps it safe: scan_extract() never accepts a document
 * jansson would reject, and every value it keeps is the one jansson would
 * have parsed. Wherever it is unsure (a number that might overflow, a long
 * real, anything malformed) it returns NULL and the caller parses the whole
 * body with jansson, which then produces the exact error it always did. The
 * differential fuzz target checks both: whole documents against json_loadb(),
 * and both paths' answers to an AdmissionReview.
 */
#ifndef GPU_ADMISSION_SCAN_H
#define GPU_ADMISSION_SCAN_H

#include <stddef.h>

#include <jansson.h>

enum scan_kind {
	SCAN_WHOLE = 0,        /* keep the member's value as jansson parses it */
	SCAN_OBJECT,           /* an object: keep only the members of .children */
	SCAN_ARRAY_OF_OBJECTS, /* an array whose object elements keep only .children */
	/* In the terminating entry (key NULL) only: */
	SCAN_ALSO,             /* the shape goes on with the entries of .children: a table
	                          declared once (the fields the policy reads) extended by
	                          one of its users */
	SCAN_DESCEND           /* members no entry names are searched, through objects and
	                          arrays at any depth, for members .children names, which
	                          are kept as their entries say; only the way to them is
	                          built, and an array element on the way that holds
	                          nothing is kept as null, so indices stay as they were */
};

/*
 * One member to keep. A shape is an array of these ended by a NULL key, whose
 * kind says what happens to the members no entry names: skipped (SCAN_WHOLE),
 * looked up in another table (SCAN_ALSO), or searched (SCAN_DESCEND). When a
 * member's value is not of the expected container type it is kept whole, so
 * the caller sees the same wrong type a full parse would show.
 *
 * A key starting with '*' names every key that ends with the rest of it and
 * is longer: "*Template" is leaderTemplate and workerTemplate, not Template.
 */
struct scan_shape {
	const char *key;
	enum scan_kind kind;
	const struct scan_shape *children;
};

/*
 * Validates body[0..len) (borrowed) as one JSON object, nesting at most
 * max_depth, and returns a new object holding only the members shape
 * (borrowed) selects; shape NULL keeps every member, i.e. the document as
 * json_loadb() parses it. NULL when the document is invalid, deeper than
 * max_depth, or outside what the scanner decides with certainty; the caller
 * then falls back to a full parse. Never NULL for a reason other than these
 * and memory exhaustion.
 */
json_t *scan_extract(const char *body, size_t len, const struct scan_shape *shape,
		     size_t max_depth);

/* What one scan_extract_ex() call did, for tests of its cost. */
struct scan_stats {
	size_t values;    /* JSON values met (1 + every member and element), up to where it stopped */
	size_t compares;  /* slots probed by the duplicate-key check: linear in the keys, whatever they are */
};

/*
 * As scan_extract(), and NULL as soon as the document holds more than
 * max_values values (counted as scan_stats.values: the root plus every
 * member and element), which bounds the work and memory spent before the
 * caller refuses it. stats (may be NULL) receives the counters.
 */
json_t *scan_extract_ex(const char *body, size_t len, const struct scan_shape *shape,
			size_t max_depth, size_t max_values, struct scan_stats *stats);

/*
 * Whether a and b (borrowed) agree on every member shape (borrowed) keeps of
 * an object, as scan_extract() would keep them: what a pruned tree and the
 * whole document both hold. Members no entry names are not compared (a
 * SCAN_DESCEND terminator's search included). 1 or 0; allocates nothing.
 */
int scan_shape_equal(const json_t *a, const json_t *b, const struct scan_shape *shape);

#endif
