/*
 * strbuf: one growable string buffer, for every text this program builds a
 * piece at a time (metrics, answers, CEL expressions, ConfigMaps, rewritten
 * manifests). Modelled on git's strbuf.h and curl's dynbuf: appends never
 * report; a failure sticks, and the caller looks once, at the end.
 *
 * Invariants:
 *  - buf is NULL (nothing added yet) or an allocation of alloc bytes holding
 *    len bytes of text and a NUL at buf[len]: buf is always a C string once
 *    not NULL, and len < alloc.
 *  - max, when not 0, bounds the text as curl's dynbuf does: len + 1 (the
 *    text and its NUL) never exceeds it. 0: no bound but memory.
 *  - failed is sticky: once an append fails (STRBUF_NOMEM: an allocation or
 *    the size overflowed; STRBUF_TOOLONG: max, or a format vsnprintf refused)
 *    every later append does nothing, and the text stays what it was before
 *    the append that failed (that one added nothing).
 *  - The buffer owns buf: strbuf_release() frees it, strbuf_detach() hands it
 *    over. A struct strbuf is reset (STRBUF_INIT, max kept) by both.
 */
#ifndef GPU_ADMISSION_STRBUF_H
#define GPU_ADMISSION_STRBUF_H

#include <stdarg.h>
#include <stddef.h>

#define STRBUF_FIRST 256  /* bytes the first allocation holds at least */

enum strbuf_failure {
	STRBUF_OK = 0,
	STRBUF_NOMEM,    /* memory ran out (or a size would overflow) */
	STRBUF_TOOLONG   /* the text would pass max (or vsnprintf refused the format) */
};

struct strbuf {
	char *buf;
	size_t len, alloc;
	size_t max;                  /* 0: unbounded; else len + 1 <= max */
	enum strbuf_failure failed;  /* sticky */
};

#define STRBUF_INIT { NULL, 0, 0, 0, STRBUF_OK }
/* A bound of max bytes, its NUL included (see above). */
#define STRBUF_INIT_MAX(max) { NULL, 0, 0, (max), STRBUF_OK }

/*
 * Room for extra more bytes and the NUL, at least (buf then not NULL);
 * grows by doubling, from STRBUF_FIRST or extra. 0, or -1 once failed.
 * For callers that write into buf + len themselves, then strbuf_setlen().
 */
int strbuf_grow(struct strbuf *sb, size_t extra);
/* Sets len (at most what strbuf_grow() made room for) and the NUL after it. */
void strbuf_setlen(struct strbuf *sb, size_t len);

/* Appends; each 0, or -1 once failed. */
int strbuf_add(struct strbuf *sb, const void *p, size_t n);
int strbuf_addstr(struct strbuf *sb, const char *s);
int strbuf_addch(struct strbuf *sb, char c);
/* n copies of c. */
int strbuf_addchars(struct strbuf *sb, char c, size_t n);
int strbuf_addf(struct strbuf *sb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap) __attribute__((format(printf, 2, 0)));

/* Marks sb failed (kind: STRBUF_NOMEM or STRBUF_TOOLONG) for a failure found outside it. */
void strbuf_fail(struct strbuf *sb, enum strbuf_failure kind);

/*
 * Takes the text: new (free()), NUL-terminated, "" when nothing was added;
 * its length in *len when len is not NULL. NULL when sb failed (the text is
 * freed) or memory ran out making "". sb is reset either way.
 */
char *strbuf_detach(struct strbuf *sb, size_t *len);
/* Frees the text and resets sb (max kept). */
void strbuf_release(struct strbuf *sb);

#endif
