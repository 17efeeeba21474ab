/*
 * audit: the offline dry run of the policy over manifests.
 *
 * For every pod template that manifest finds, audit asks policy_evaluate()
 * what enforce mode would do (it never re-decides anything itself) and
 * records a finding: ok, mutate, reject, exempt or warn. Findings and input
 * errors accumulate in a struct audit across any number of inputs; the
 * report is written once at the end, as text or as one JSON document.
 *
 * Stable JSON (see README "Auditing manifests"):
 *   {"findings": [{file, line, document, kind, namespace, name, path, pointer,
 *                  verdict, reason, message, changes, pool, mode, decision,
 *                  warnings, patch}],
 *    "errors":   [{file, line, message}],
 *    "summary":  {files, documents, templates, ok, mutate, reject, exempt, warn,
 *                 errors, exitCode}}
 */
#ifndef GPU_ADMISSION_AUDIT_H
#define GPU_ADMISSION_AUDIT_H

#include <stdio.h>

#include <jansson.h>

#include "config.h"
#include "error.h"

enum audit_verdict {
	AUDIT_OK = 0,  /* admitted unchanged, nothing to say */
	AUDIT_MUTATE,  /* enforce mode would add tolerations / node selectors */
	AUDIT_REJECT,  /* enforce mode would reject it */
	AUDIT_EXEMPT,  /* an exemption applied (namespace, DaemonSet, pod selector) */
	AUDIT_WARN,    /* admitted unchanged, with warnings */
	AUDIT_NVERDICTS
};

struct audit {
	const struct config *cfg;   /* borrowed */
	int fail_on_mutate;         /* mutations fail the run too (exit 1) */
	json_t *findings;           /* owned: array of finding objects */
	json_t *errors;             /* owned: array of {file, line, message} */
	unsigned long files, documents, templates;
	unsigned long count[AUDIT_NVERDICTS];
	unsigned char *order;       /* owned: 0 finding / 1 error, in the order they were met */
	size_t n_order, cap_order;
};

/* The verdict's name ("ok", "mutate", ...). Static storage. */
const char *audit_verdict_name(enum audit_verdict v);

/*
 * Prepares a (caller-owned storage) to audit with cfg (borrowed; must outlive
 * a). Returns 0, or -1 with ERROR_NOMEM; audit_free() is safe either way.
 */
int audit_init(struct audit *a, const struct config *cfg, struct error *err);

/* Releases what a owns. Accepts NULL. */
void audit_free(struct audit *a);

/*
 * Audits one input: name (borrowed) is how the report names it, buf[0..len)
 * its bytes (borrowed). Documents that do not parse and templates the policy
 * cannot read become input errors in a; that is not a failure of the call.
 * With fixed != NULL, *fixed receives a new malloc'd copy of the input with
 * every would-be mutation applied (documents without one byte-identical),
 * *fixed_len its length and *changed whether any document changed.
 * Returns 0, or -1 on ERROR_NOMEM / ERROR_INTERNAL (the run cannot go on).
 */
int audit_input(struct audit *a, const char *name, const char *buf, size_t len,
		char **fixed, size_t *fixed_len, int *changed, struct error *err);

/* Records an input error for a whole input (unreadable file, ...). msg is copied. */
int audit_add_error(struct audit *a, const char *name, unsigned long line, const char *msg,
		    struct error *err);

/*
 * The exit code the findings call for: 2 when there were input errors,
 * else 1 when something would be rejected (or mutated, with fail_on_mutate),
 * else 0.
 */
int audit_exit_code(const struct audit *a);

/* A walk over paths for audit_path(): where findings go and what --fix does. */
struct audit_walk {
	struct audit *a;   /* borrowed: collects findings and input errors */
	int fix;           /* apply the would-be mutations ... */
	int in_place;      /* ... rewriting changed files (atomically), or else writing to out */
	FILE *out;         /* borrowed: --fix output without in_place, inputs joined by "---" */
	int wrote_any;     /* state: something went to out already */
	int last_newline;  /* ... and it ended with a line break */
};

/*
 * Audits path (borrowed): a file, a directory (its *.yaml, *.yml and *.json,
 * recursively, in name order; dot-files and symlinked directories skipped) or
 * "-" for stdin. Unreadable files and directories become input errors in
 * w->a. Returns 0, or -1 when the run cannot go on (ERROR_NOMEM, ...).
 */
int audit_path(struct audit_walk *w, const char *path, struct error *err);

/* Writes the text report (one line per template, then a summary) to out. */
int audit_write_text(const struct audit *a, FILE *out, int color);

/* Writes the report as one JSON document to out. */
int audit_write_json(const struct audit *a, FILE *out);

#endif
