/*
 * manifest: Kubernetes manifests (YAML or JSON streams) as jansson values,
 * with line numbers. What the values hold (pod templates) is pkg/policy/template.c's
 * to find; manifest_line() says where a value found sits.
 *
 * A stream is split lexically into documents at "---" / "..." marker lines
 * (column 0, as the YAML spec defines them) and each document is parsed on
 * its own with libyaml. libyaml gives up at the first syntax error of a
 * stream; splitting first means one broken document (an unrendered Helm
 * template, say) is reported with its line and the others are still read.
 * JSON is parsed by the same code: it is YAML flow style, and this keeps line
 * numbers for JSON input (kubectl get -o json) too.
 *
 * Scalars get JSON types the way Kubernetes' YAML decoder (go-yaml v2 via
 * sigs.k8s.io/yaml) gives them: plain 1 is an integer, "1" a string, yes/no/
 * on/off/true/false booleans, ~/null null, 1.5 and 1e3 reals, 0x1f/0777/0b1
 * integers. Mapping keys keep their text. Anchors and aliases are expanded
 * by copying, within a budget (MANIFEST_ALIAS_BUDGET nodes per document) so
 * an alias bomb fails cleanly; nesting is capped at MANIFEST_DEPTH_MAX.
 * Merge keys (<<) are honoured; explicit keys win. A document that is an
 * array (`kubectl get -o json | jq .items`) is read as a list of objects, as
 * the items of a kind: List are.
 */
#ifndef GPU_ADMISSION_MANIFEST_H
#define GPU_ADMISSION_MANIFEST_H

#include <stddef.h>

#include <jansson.h>

#include "base/error.h"

#define MANIFEST_DEPTH_MAX 256          /* nested collections per document */
#define MANIFEST_ALIAS_BUDGET 100000    /* values copied by aliases per document */
#define MANIFEST_ERROR_MAX 256

struct manifest_pos;      /* private: where each collection sits in the text */

struct manifest_doc {
	json_t *root;         /* owned; NULL for an empty or failed document */
	size_t off, len;      /* the document's bytes in the stream, marker line included */
	unsigned long line;   /* 1-based first line of the document's bytes */
	unsigned long content_line; /* first line of the root value (0: none) */
	int failed;           /* not valid YAML / JSON: error and error_line say why */
	unsigned long error_line;
	char error[MANIFEST_ERROR_MAX];
	int null_root;        /* root is NULL because the document says null (null, ~), not because it is empty */
	int json;             /* the root is written in flow (JSON) style */
	int aliases;          /* the document uses aliases or merge keys */
	struct manifest_pos *pos;            /* owned, n_pos, sorted by node */
	size_t n_pos;
};

/* Private to pkg/text/manifest.c: where manifest_next() resumes in the stream. */
struct manifest_cursor {
	size_t p, start, dir;             /* next line; current document; a directive before a marker */
	unsigned long line, start_line, dir_line;
	int in_dir, done;
	size_t n;                         /* documents found so far */
};

struct manifest {
	const char *buf;      /* borrowed: the caller keeps the text alive */
	size_t len;
	struct manifest_doc *docs; /* owned; filled by manifest_load() only */
	size_t n_docs;
	int crlf;             /* the stream's line breaks are CRLF */
	struct manifest_cursor cur;
};

/*
 * Splits buf[0..len) (borrowed; must outlive m) into documents and parses
 * each, into m->docs. A document that does not parse is kept with failed
 * set; that is not an error of the call. Returns 0, or -1 only when memory
 * runs out (ERROR_NOMEM). m must be released with manifest_free() whatever
 * the return value. For small inputs (a review, a test): memory grows with
 * the number of documents.
 */
int manifest_load(const char *buf, size_t len, struct manifest *m, struct error *err);

/*
 * One document at a time, for streams of any length (audit, report): memory
 * is one document's, however many documents the stream holds.
 * manifest_open() prepares m to read buf[0..len) (borrowed; must outlive m;
 * m owns nothing until manifest_load(), so it needs no freeing).
 * manifest_next() frees what d (caller-owned, zeroed before the first call)
 * held, then finds and parses the next document into d. Returns 1 (a
 * document in d, perhaps failed or empty), 0 (no more documents: d is
 * empty), or -1 with ERROR_NOMEM. manifest_doc_free() releases d's values.
 */
void manifest_open(const char *buf, size_t len, struct manifest *m);
int manifest_next(struct manifest *m, struct manifest_doc *d, struct error *err);
void manifest_doc_free(struct manifest_doc *d);

/* Releases what m owns and zeroes it. Accepts NULL. */
void manifest_free(struct manifest *m);

/*
 * The 1-based line where node (a collection in document d's values,
 * borrowed) sits: its key's line ("template:"), or its own for an item; the
 * document's first content line when node is not one of d's collections.
 */
unsigned long manifest_line(const struct manifest_doc *d, const json_t *node);

/*
 * Renders document d (of m's stream) with patch (a JSON Patch of "add" operations whose
 * paths start at the document root; borrowed) applied. The result, a new
 * malloc'd buffer in *out (length *outlen, NUL-terminated), replaces the
 * document's bytes: the marker line and leading comments are kept, and where
 * possible the additions are inserted as text so the rest of the document is
 * untouched (see manifest.c). *how is set to "inserted" or "re-emitted".
 * Returns 0, or -1 with ERROR_INPUT (the patch does not apply) or ERROR_NOMEM.
 */
int manifest_render_patched(const struct manifest *m, const struct manifest_doc *d, const json_t *patch,
			    char **out, size_t *outlen, const char **how, struct error *err);

/*
 * New: v (borrowed) as one YAML document (block style, 2-space indent,
 * strings quoted where they would read back as another type), NUL-terminated,
 * length in *len. NULL with err (ERROR_NOMEM, or ERROR_INPUT for a value
 * nested deeper than MANIFEST_DEPTH_MAX).
 */
char *manifest_to_yaml(const json_t *v, size_t *len, struct error *err);

/*
 * New reference: the JSON value of one YAML scalar s[0..len) with the
 * resolution rules above. plain: the scalar was unquoted; tag: its resolved
 * tag or NULL. Strings that are not valid UTF-8 are rejected (NULL), as is
 * memory exhaustion. Also how pkg/config types a policy's scalars, so a
 * policy file and a manifest agree on what "true" and "1" are.
 */
json_t *manifest_scalar(const char *s, size_t len, int plain, const char *tag);

#endif
