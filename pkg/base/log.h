/*
 * log: structured logs, one line per event on stderr: a JSON object (for log
 * collectors; the default), or the same fields as text for a person at a
 * terminal ("2026-01-02T03:04:05.678Z info  listening addr=... port=8443").
 *
 * Every line carries "time" (RFC 3339, UTC, milliseconds), "level" and "msg";
 * a decision line adds uid, namespace, pod, decision, reason, pool (or pools)
 * and latency_us.
 * Lines are formatted into a stack buffer and written with one write(2), so
 * lines from different threads never interleave and logging never allocates.
 * Only names and identifiers are logged, never pod spec content.
 */
#ifndef GPU_ADMISSION_LOG_H
#define GPU_ADMISSION_LOG_H

#include <stdint.h>

enum log_level {
	LOG_LEVEL_DEBUG = 0,
	LOG_LEVEL_INFO,
	LOG_LEVEL_WARN,
	LOG_LEVEL_ERROR
};

/* Parses "debug", "info", "warn" or "error" into *out. 0, or -1 when unknown. */
int log_level_parse(const char *s, enum log_level *out);

/* Sets the lowest level written (default LOG_LEVEL_INFO). Thread-safe. */
void log_set_level(enum log_level level);

/* Whether a line at level would be written: test it before formatting costly fields. */
int log_enabled(enum log_level level);

enum log_format {
	LOG_FORMAT_JSON = 0, /* {"time":...,"level":...,"msg":...,"key":"value"} */
	LOG_FORMAT_TEXT      /* time level msg key=value key="value with spaces" */
};

/* Parses "json" or "text" into *out. 0, or -1 when unknown. */
int log_format_parse(const char *s, enum log_format *out);

/* Sets how lines are written (default LOG_FORMAT_JSON). Call before logging starts. */
void log_set_format(enum log_format format);

/* Ends log_msg()'s pairs: a null pointer of the type va_arg reads (a bare NULL may be an int). */
#define LOG_END ((const char *)0)

/*
 * Writes one line {"time","level","msg", k1: v1, ...}. The variadic part is
 * pairs of strings (key, value), ended by LOG_END as the key; a NULL value
 * (cast to const char *) is skipped. Values are escaped; all arguments are
 * borrowed.
 */
void log_msg(enum log_level level, const char *msg, ...) __attribute__((sentinel));

/* The one line written per admission decision (at LOG_LEVEL_INFO). Borrowed fields; NULL or "" are omitted. */
struct log_decision {
	const char *endpoint;   /* "mutate" or "validate" */
	const char *uid;
	const char *ns;
	const char *pod;
	const char *decision;   /* "allow", "mutate", "reject", "error" */
	const char *reason;     /* short code */
	const char *mode;       /* "enforce", "warn", "dryrun" or NULL */
	int status;             /* HTTP status sent */
	uint64_t latency_us;
	const char *pool;       /* the pool the pod goes to */
	const char *pools;      /* or the pools it may go to, cheapest first, comma-separated */
	const char *kind;       /* the object's kind when it is not a Pod (a workload judged by its
	                           templates: "Deployment", "PyTorchJob"); pod then names it */
	uint64_t upload_us;     /* of latency_us, the wait for the body after its headers: the
	                           client's sending and the network's, not the server's work */
};

void log_decision(const struct log_decision *d);

#endif
