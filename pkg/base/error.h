/*
 * error: the one error convention of gpu-admission.
 *
 * Every fallible function returns 0 / -1 (or a pointer / NULL) and fills a
 * caller-owned struct error. Reporting an error never allocates, so it works
 * when memory is exhausted. The kind says which class of failure it was; the
 * mapping from kind to an HTTP / AdmissionReview status code lives in exactly
 * one place, error_http_status().
 */
#ifndef GPU_ADMISSION_ERROR_H
#define GPU_ADMISSION_ERROR_H

#include <stddef.h>

enum error_kind {
	ERROR_NONE = 0,
	ERROR_INPUT,      /* malformed request, manifest or argument */
	ERROR_POLICY,     /* the policy rejects the object */
	ERROR_CONFIG,     /* invalid policy configuration */
	ERROR_TOO_LARGE,  /* input over a configured limit */
	ERROR_NOT_FOUND,  /* no such endpoint or file */
	ERROR_METHOD,     /* wrong HTTP method */
	ERROR_MEDIA_TYPE, /* wrong Content-Type */
	ERROR_UNAVAILABLE,/* draining or not ready */
	ERROR_SYSTEM,     /* an OS call failed (errno text in the message) */
	ERROR_NOMEM,      /* allocation failed */
	ERROR_INTERNAL,   /* a bug: an invariant did not hold */
	ERROR_UNSUPPORTED /* a protocol feature not implemented (a Transfer-Encoding) */
};
/* The last kind: what walks every kind (the status and label tables' tests) ends here. */
#define ERROR_KIND_LAST ERROR_UNSUPPORTED

#define ERROR_MSG_MAX 512

struct error {
	enum error_kind kind;
	char msg[ERROR_MSG_MAX];
};

/* Sets kind and a printf-formatted message, truncating silently. e may be NULL. */
void error_set(struct error *e, enum error_kind kind, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/*
 * Prepends context ("file.yaml: ") to the message already in e, keeping its kind.
 * Used while an error travels up through layers that know more about where it
 * happened. e may be NULL.
 */
void error_prefix(struct error *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Resets e to ERROR_NONE with an empty message. e may be NULL. */
void error_clear(struct error *e);

/*
 * Drops a UTF-8 sequence left incomplete at the end of buf (NUL-terminated,
 * modified in place) by a cut into a fixed buffer. Every message may quote
 * pod or file text, and a split character would make the JSON that carries
 * it invalid. error_set() and error_prefix() apply it themselves.
 */
void error_trim_utf8(char *buf);

/*
 * A size as people read it in a message: "256 MiB", "64 KiB", else "1000
 * bytes" (a limit that is not a whole number of KiB). Returns buf.
 */
const char *error_size_text(char *buf, size_t cap, size_t bytes);

/*
 * libyaml's account of where it stopped (problem, context: either may be
 * NULL), as one message into msg[cap]. When the byte it stopped at,
 * input[index] (of len), is a tab, it says so: libyaml's "found character
 * that cannot start any token" does not.
 */
void error_yaml_problem(char *msg, size_t cap, const char *problem, const char *context,
			const char *input, size_t len, size_t index);

/* The HTTP status (and AdmissionReview status.code) for a kind: 400, 403, 413, ... */
int error_http_status(enum error_kind kind);

/*
 * The metav1.Status reason for a kind ("BadRequest", "Forbidden", ...), as
 * an AdmissionReview refusal carries it next to the code. Static storage.
 */
const char *error_status_reason(enum error_kind kind);

/* A short stable name for a kind ("input", "policy", ...) for logs and metrics. */
const char *error_kind_name(enum error_kind kind);

#endif
