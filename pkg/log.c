#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "utf8.h"

#define LOG_LINE_MAX 4096

static atomic_int log_min_level = LOG_LEVEL_INFO;

static const char *const level_names[] = { "debug", "info", "warn", "error" };

int log_level_parse(const char *s, enum log_level *out)
{
	int i;

	for (i = 0; s != NULL && i < (int)(sizeof level_names / sizeof level_names[0]); i++) {
		if (strcmp(s, level_names[i]) == 0) {
			*out = (enum log_level)i;
			return 0;
		}
	}
	return -1;
}

void log_set_level(enum log_level level)
{
	atomic_store_explicit(&log_min_level, (int)level, memory_order_relaxed);
}

int log_enabled(enum log_level level)
{
	return (int)level >= atomic_load_explicit(&log_min_level, memory_order_relaxed);
}

/* ==== Line buffer: appends that truncate instead of overflowing ==== */

/*
 * A cut line must still be one JSON object: pieces (an escape, a UTF-8
 * character, a punctuation mark) go in whole or not at all, a string that is
 * cut still gets its closing quote, a field that does not fit is left out,
 * and the line ends with "truncated":true. LOG_TAIL keeps room for all that.
 */
#define LOG_TAIL_TEXT ",\"truncated\":true}\n"
#define LOG_TAIL (1 + sizeof LOG_TAIL_TEXT) /* a closing quote, then the tail */

struct line {
	char buf[LOG_LINE_MAX];
	size_t len;
	int full; /* something did not fit: nothing more is added */
};

static void put(struct line *l, const char *s, size_t n)
{
	/* Written so that it cannot wrap: l->len may already use the reserve (see put_string). */
	if (l->full || l->len + n > sizeof l->buf - LOG_TAIL) {
		l->full = 1;
		return;
	}
	memcpy(l->buf + l->len, s, n);
	l->len += n;
}

static void puts_raw(struct line *l, const char *s)
{
	put(l, s, strlen(s));
}

/* Appends s as a JSON string; invalid UTF-8 becomes U+FFFD so every line parses. */
static void put_string(struct line *l, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;
	char esc[8];

	put(l, "\"", 1);
	while (*p != '\0' && !l->full) {
		/* NUL-terminated: a sequence cut short fails on the NUL, never reads past it. */
		size_t n = *p < 0x80 ? 1 : utf8_sequence(p, p + 4);

		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put(l, esc, 2);
		} else if (*p < 0x20) {
			snprintf(esc, sizeof esc, "\\u%04x", *p);
			put(l, esc, 6);
		} else if (n == 0) {
			puts_raw(l, "\\ufffd");
			n = 1;
		} else {
			put(l, (const char *)p, n);
			p += n;
			continue;
		}
		p++;
	}
	/* A string that fits ends like any piece; a cut one may use the reserve for its quote. */
	put(l, "\"", 1);
	if (l->full)
		l->buf[l->len++] = '"';
}

static void put_field(struct line *l, const char *key, const char *value)
{
	size_t start = l->len;

	if (value == NULL || l->full)
		return;
	put(l, ",", 1);
	put_string(l, key);
	put(l, ":\"", 2);
	if (l->full) { /* not even the key fits: leave the field out */
		l->len = start;
		return;
	}
	l->len--; /* put_string writes the opening quote itself */
	put_string(l, value);
}

static void begin(struct line *l, enum log_level level, const char *msg)
{
	struct timespec ts;
	struct tm tm;
	char t[64];

	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(t, sizeof t, "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"msg\":",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 ts.tv_nsec / 1000000, level_names[level]);
	l->len = 0;
	l->full = 0;
	puts_raw(l, t);
	put_string(l, msg);
}

static void finish(struct line *l)
{
	size_t off = 0;

	if (l->full) {
		memcpy(l->buf + l->len, LOG_TAIL_TEXT, sizeof LOG_TAIL_TEXT - 1);
		l->len += sizeof LOG_TAIL_TEXT - 1;
	} else {
		l->buf[l->len++] = '}';
		l->buf[l->len++] = '\n';
	}
	while (off < l->len) {
		ssize_t w = write(STDERR_FILENO, l->buf + off, l->len - off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return; /* nowhere left to report it */
		off += (size_t)w;
	}
}

void log_msg(enum log_level level, const char *msg, ...)
{
	struct line l;
	const char *key, *value;
	va_list ap;

	if (!log_enabled(level))
		return;
	begin(&l, level, msg);
	va_start(ap, msg);
	while ((key = va_arg(ap, const char *)) != NULL) {
		value = va_arg(ap, const char *);
		put_field(&l, key, value);
	}
	va_end(ap);
	finish(&l);
}

static const char *nonempty(const char *s)
{
	return s != NULL && s[0] != '\0' ? s : NULL;
}

void log_decision(const struct log_decision *d)
{
	struct line l;
	char num[64];

	if (!log_enabled(LOG_LEVEL_INFO))
		return;
	begin(&l, LOG_LEVEL_INFO, "admission");
	put_field(&l, "endpoint", nonempty(d->endpoint));
	put_field(&l, "uid", nonempty(d->uid));
	put_field(&l, "namespace", nonempty(d->ns));
	put_field(&l, "pod", nonempty(d->pod));
	put_field(&l, "decision", nonempty(d->decision));
	put_field(&l, "reason", nonempty(d->reason));
	put_field(&l, "mode", nonempty(d->mode));
	put_field(&l, "pool", nonempty(d->pool));
	put_field(&l, "pools", nonempty(d->pools));
	snprintf(num, sizeof num, ",\"status\":%d,\"latency_us\":%llu", d->status,
		 (unsigned long long)d->latency_us);
	puts_raw(&l, num);
	finish(&l);
}
