/*
 * audit: the offline dry run of the policy over manifests.
 *
 * For every pod template that manifest finds, audit asks policy_evaluate()
 * what enforce mode would do (it never re-decides anything itself) and
 * records a finding: ok, mutate, reject, exempt or warn. Findings and input
 * errors accumulate in a struct audit across any number of inputs; the
 * report is written once at the end, as text or as one JSON document.
 *
 * Stable JSON (see cmd/gpu-admission/README.md "Auditing manifests"):
 *   {"findings": [{file, line, document, kind, namespace, name, path, pointer,
 *                  verdict, reason, message, changes, pool, mode, decision,
 *                  warnings, patch, groupedUnder}],
 *    "errors":   [{file, line, message}],
 *    "notes":    [{file, line, message}],
 *    "rewritten": [file, ...],
 *    "summary":  {files, documents, templates, grouped, ok, mutate, reject,
 *                 exempt, warn, errors, exitCode}}
 *
 * Errors are input problems (exit 2); notes are what a reader should know but
 * that fails nothing (a file skipped, a document re-emitted by --fix).
 */
#ifndef GPU_ADMISSION_AUDIT_H
#define GPU_ADMISSION_AUDIT_H

#include <stdio.h>

#include <jansson.h>

#include "policy/config.h"
#include "policy/policy_claims.h"
#include "base/error.h"

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
	int drop_patches;           /* findings keep no "patch" (null): a text report never shows it,
	                               and it is a third of a finding's memory */
	json_t *findings;           /* owned: array of finding objects */
	json_t *errors;             /* owned: array of {file, line, message} */
	json_t *notes;              /* owned: array of {file, line, message} */
	json_t *rewritten;          /* owned: array of the file names --fix --in-place replaced */
	json_t *owners;             /* owned: per finding, a Pod's controller [kind, name, pod-template-hash] or null */
	json_t *groups;             /* owned, set by audit_finish(): controller index -> [pod indexes] */
	json_t *claim_keep;         /* owned: the ResourceClaimTemplates and ResourceClaims of the
	                               input, kept past their documents for claims (audit_claims.c) */
	struct policy_claim_objects claims; /* owned index over claim_keep: where pod templates'
	                               DRA claims are looked up, when the input holds any */
	const char *claims_off;     /* why nothing is looked up when the input holds no claim
	                               object (NULL: POLICY_CLAIMS_NONE_IN_INPUT); static text */
	int claims_collected;       /* audit_collect_path() read every input first: audit_input()
	                               need not collect from its own */
	unsigned long files, documents, templates;
	unsigned long count[AUDIT_NVERDICTS];   /* findings reported on their own line */
	unsigned long grouped[AUDIT_NVERDICTS]; /* pods reported under their controller */
	unsigned long fixed[AUDIT_NVERDICTS];   /* --fix: findings whose fix was written, which
	                                           audit_exit_code() no longer counts */
};

/*
 * The brackets a template path is shown in, "[spec.template]", or none
 * when the path starts with one itself: a top-level array's item is "[0]",
 * not "[[0]]". Static storage.
 */
const char *audit_path_open(const char *path);
const char *audit_path_close(const char *path);

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

/*
 * Keeps the ResourceClaimTemplates and ResourceClaims of buf[0..len) (also
 * inside a List) in a, to resolve the DRA claims of the templates audited
 * after (audit_input() collects from its own input first, so one file or
 * stdin holding both works). Documents that do not parse are left to
 * audit_input() to report. 0, or -1 on ERROR_NOMEM.
 */
int audit_collect(struct audit *a, const char *buf, size_t len, struct error *err);

/*
 * A note for obj (a document's object with no pod template, borrowed) when
 * it asks for GPUs all the same: a gpuResources name as a key or value, or
 * an Azure GPU VM size, anywhere but its metadata and status (KServe InferenceService,
 * KAITO Workspace, SparkApplication). 0, or -1 on ERROR_NOMEM.
 */
int audit_note_intent(struct audit *a, const char *name, unsigned long line, const json_t *obj,
		      struct error *err);

/* Records an input error for a whole input (unreadable file, ...). msg is copied. */
int audit_add_error(struct audit *a, const char *name, unsigned long line, const char *msg,
		    struct error *err);

/* Records a note (a file skipped, ...): reported on stderr, fails nothing. msg is copied. */
int audit_add_note(struct audit *a, const char *name, unsigned long line, const char *msg,
		   struct error *err);

/*
 * After the last input: groups every Pod whose controller is also in the
 * input under it (kubectl get pods,deploy,...: a Deployment's pods through
 * their ReplicaSet's pod-template-hash, a CronJob's through their Job's name),
 * so a workload is reported once; and makes "no pod template found in any
 * input" an input error. Returns 0, or -1 on ERROR_NOMEM.
 */
int audit_finish(struct audit *a, struct error *err);

/*
 * The exit code the findings call for: 2 when there were input errors,
 * else 1 when something would be rejected (or mutated, with fail_on_mutate),
 * else 0. After --fix, only what its output still holds counts: the
 * findings it fixed do not, so auditing that output gives the same code.
 */
int audit_exit_code(const struct audit *a);

/* A walk over paths for audit_path(): where findings go and what --fix does. */
struct audit_walk {
	struct audit *a;   /* borrowed: collects findings, input errors and notes */
	int fix;           /* apply the would-be mutations ... */
	int in_place;      /* ... rewriting changed files (atomically), or else writing to out */
	FILE *out;         /* borrowed: --fix output without in_place, inputs joined by "---" */
	int wrote_any;     /* state: something went to out already */
	int last_newline;  /* ... and it ended with a line break */
	unsigned long files_seen; /* state: files read or tried */
	int collect;       /* audit_collect_path(): only keep claim objects, report nothing */
};

/*
 * Audits path (borrowed): a file, a directory (its *.yaml, *.yml and *.json,
 * recursively, in name order, as kubectl apply -f DIR reads one) or "-" for
 * stdin. Unreadable files and directories become input errors in w->a; what
 * a directory holds but is not read (dot-files, other extensions, symlinked
 * directories), an empty directory and one without a pod template become
 * notes. Returns 0, or -1 when the run cannot go on (ERROR_NOMEM, ...).
 */
int audit_path(struct audit_walk *w, const char *path, struct error *err);

/*
 * Reads path as audit_path() does, only collecting its claim objects
 * (audit_collect()): a directory's templates then resolve against a
 * ResourceClaimTemplate in any of its files. Reports nothing (audit_path()
 * does, after); stdin ("-") is skipped, as it can be read only once (its
 * own claims are collected by audit_input()). The caller sets
 * a->claims_collected once every input but stdin went through it.
 */
int audit_collect_path(struct audit_walk *w, const char *path, struct error *err);

/* How the text report is written. */
#define AUDIT_TEXT_COLOR 1u  /* ANSI colours for the verdicts */
#define AUDIT_TEXT_QUIET 2u  /* only findings that need action (mutate, reject, warn), no summary */
#define AUDIT_TEXT_REWRITE 4u /* end with "rewrote N files: ..." (--fix --in-place) */
#define AUDIT_TEXT_WIDE 8u    /* -o wide: each finding whole on one line, full file names */

/* The text report's layout: it reads at AUDIT_TEXT_WIDTH columns unless told fewer (-o wide is not wrapped). */
#define AUDIT_TEXT_WIDTH 100
#define AUDIT_TEXT_VERDICT_COLUMN 8 /* the verdict ("mutate"), then the object from this column */
#define AUDIT_TEXT_INDENT 8         /* reasons, warnings and grouped pods, under the object */
#define AUDIT_TEXT_OBJECT_MAX 40    /* the object column's widest; a longer object overflows it */
#define AUDIT_REASON_MAX 4096       /* a finding's reason line, as built for the text report */

/*
 * Writes the text report to out. Each template shown has a line of columns
 * (verdict, the object as kubectl names it "Kind/name -n namespace", file:line,
 * the file as the user would type it: a directory operand's files are
 * DIR/sub/file.yaml), then its reason and every further warning on indented
 * lines wrapped at cols (0: AUDIT_TEXT_WIDTH; a terminal's width is fewer),
 * and pods grouped under their controller on one more; then a summary and
 * "rewrote N files: ..." after --fix --in-place. With
 * AUDIT_TEXT_WIDE a finding is one line (file:line, kind namespace/name, the
 * template path, the verdict, the reason), file names whole. Errors and notes
 * are not in it: see audit_write_problems().
 */
int audit_write_text(const struct audit *a, FILE *out, unsigned flags, size_t cols);

/* Writes the report as one JSON document (fmt 'j') or one YAML document (fmt 'y') to out. */
int audit_write_doc(const struct audit *a, FILE *out, char fmt);

/*
 * Writes the input errors, then (with notes) the notes, one a line, as
 * "PREFIX: FILE:LINE: message" ("PREFIX: note: ..." for a note), to out.
 */
int audit_write_problems(const struct audit *a, FILE *out, const char *prefix, int notes);

#endif
