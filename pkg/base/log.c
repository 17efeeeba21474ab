#include "base/log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/utf8.h"

#define LOG_LINE_MAX 4096

static atomic_int log_min_level = LOG_LEVEL_INFO;
static atomic_int log_format = LOG_FORMAT_JSON;

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

int log_format_parse(const char *s, enum log_format *out)
{
	if (s != NULL && strcmp(s, "json") == 0)
		*out = LOG_FORMAT_JSON;
	else if (s != NULL && strcmp(s, "text") == 0)
		*out = LOG_FORMAT_TEXT;
	else
		return -1;
	return 0;
}

void log_set_format(enum log_format format)
{
	atomic_store_explicit(&log_format, (int)format, memory_order_relaxed);
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
	int text; /* LOG_FORMAT_TEXT: key=value, not JSON */
};

/* The text format's tail for a cut line; shorter than LOG_TAIL_TEXT, so the same reserve serves. */
#define LOG_TAIL_PLAIN " (truncated)\n"

static void line_add(struct line *l, const char *s, size_t n)
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
	line_add(l, s, strlen(s));
}

/*
 * Appends s escaped: as a JSON string (json set), or for a person: as it is
 * when it is one plain word, else in double quotes. '"', '\\' and control
 * characters are escaped either way, and invalid UTF-8 becomes U+FFFD, so
 * every line parses (JSON) or stays on one line (text).
 */
static void put_string_as(struct line *l, const char *s, int json)
{
	const unsigned char *p = (const unsigned char *)s;
	int quote = json || *p == '\0' || strpbrk(s, " \"=\\") != NULL;
	char esc[8];

	for (; *p != '\0' && !quote; p++)
		quote = *p < 0x20 || *p == 0x7f;
	p = (const unsigned char *)s;
	if (quote)
		line_add(l, "\"", 1);
	while (*p != '\0' && !l->full) {
		/* NUL-terminated: a sequence cut short fails on the NUL, never reads past it. */
		size_t n = *p < 0x80 ? 1 : utf8_sequence(p, p + 4);

		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			line_add(l, esc, 2);
		} else if (*p < 0x20 || (!json && *p == 0x7f)) {
			if (json)
				snprintf(esc, sizeof esc, "\\u%04x", *p);
			else
				snprintf(esc, sizeof esc, *p == '\n' ? "\\n" : *p == '\t' ? "\\t" : "\\x%02x", *p);
			puts_raw(l, esc);
		} else if (n == 0) {
			puts_raw(l, json ? "\\ufffd" : "\xef\xbf\xbd");
		} else {
			line_add(l, (const char *)p, n);
			p += n;
			continue;
		}
		p++;
	}
	if (!quote)
		return;
	/* A string that fits ends like any piece; a cut one may use the reserve for its quote. */
	line_add(l, "\"", 1);
	if (l->full)
		l->buf[l->len++] = '"';
}

static void put_string(struct line *l, const char *s)
{
	put_string_as(l, s, 1);
}

static void put_field(struct line *l, const char *key, const char *value)
{
	size_t start = l->len;

	if (value == NULL || l->full)
		return;
	if (l->text) {
		line_add(l, " ", 1);
		put_string_as(l, key, 0);
		line_add(l, "=", 1);
		if (l->full) {
			l->len = start;
			return;
		}
		put_string_as(l, value, 0);
		return;
	}
	line_add(l, ",", 1);
	put_string(l, key);
	line_add(l, ":\"", 2);
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
	l->len = 0;
	l->full = 0;
	l->text = atomic_load_explicit(&log_format, memory_order_relaxed) == LOG_FORMAT_TEXT;
	snprintf(t, sizeof t, l->text ? "%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ %-5s "
		 : "{\"time\":\"%04d-%02d-%02dT%02d:%02d:%02d.%03ldZ\",\"level\":\"%s\",\"msg\":",
		 tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
		 ts.tv_nsec / 1000000, level_names[level]);
	puts_raw(l, t);
	if (l->text) {
		/* The message as it is, but one line. */
		const char *p;

		for (p = msg; *p != '\0' && !l->full; p++)
			line_add(l, *p == '\n' || *p == '\r' ? " " : p, 1);
	} else {
		put_string(l, msg);
	}
}

static void finish(struct line *l)
{
	size_t off = 0;

	if (l->full) {
		const char *tail = l->text ? LOG_TAIL_PLAIN : LOG_TAIL_TEXT;

		memcpy(l->buf + l->len, tail, strlen(tail));
		l->len += strlen(tail);
	} else {
		if (!l->text)
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
	if (nonempty(d->kind) != NULL) {
		put_field(&l, "kind", d->kind);
		put_field(&l, "name", nonempty(d->pod));
	} else {
		put_field(&l, "pod", nonempty(d->pod));
	}
	put_field(&l, "decision", nonempty(d->decision));
	put_field(&l, "reason", nonempty(d->reason));
	put_field(&l, "mode", nonempty(d->mode));
	put_field(&l, "pool", nonempty(d->pool));
	put_field(&l, "pools", nonempty(d->pools));
	snprintf(num, sizeof num, l.text ? " status=%d latency_us=%llu upload_us=%llu"
				       : ",\"status\":%d,\"latency_us\":%llu,\"upload_us\":%llu",
		 d->status, (unsigned long long)d->latency_us, (unsigned long long)d->upload_us);
	puts_raw(&l, num);
	finish(&l);
}
