#include "base/strbuf.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int strbuf_grow(struct strbuf *sb, size_t extra)
{
	size_t need, alloc;
	char *grown;

	if (sb->failed)
		return -1;
	if (extra > SIZE_MAX - sb->len - 1) {
		sb->failed = STRBUF_NOMEM;
		return -1;
	}
	need = sb->len + extra + 1;
	if (sb->max != 0 && need > sb->max) {
		sb->failed = STRBUF_TOOLONG;
		return -1;
	}
	if (sb->buf != NULL && need <= sb->alloc)
		return 0;
	alloc = sb->alloc ? sb->alloc : STRBUF_FIRST;
	while (alloc < need)
		alloc = alloc > SIZE_MAX / 2 ? need : alloc * 2;
	/* Never more than the bound allows: a bounded buffer stays within it. */
	if (sb->max != 0 && alloc > sb->max)
		alloc = sb->max;
	grown = realloc(sb->buf, alloc);
	if (grown == NULL) {
		sb->failed = STRBUF_NOMEM;
		return -1;
	}
	if (sb->buf == NULL)
		grown[0] = '\0';
	sb->buf = grown;
	sb->alloc = alloc;
	return 0;
}

void strbuf_setlen(struct strbuf *sb, size_t len)
{
	if (sb->buf == NULL || len >= sb->alloc)
		return;
	sb->len = len;
	sb->buf[len] = '\0';
}

int strbuf_add(struct strbuf *sb, const void *p, size_t n)
{
	if (strbuf_grow(sb, n) != 0)
		return -1;
	if (n > 0)
		memcpy(sb->buf + sb->len, p, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_addstr(struct strbuf *sb, const char *s)
{
	return strbuf_add(sb, s, strlen(s));
}

int strbuf_addch(struct strbuf *sb, char c)
{
	return strbuf_add(sb, &c, 1);
}

int strbuf_addchars(struct strbuf *sb, char c, size_t n)
{
	if (strbuf_grow(sb, n) != 0)
		return -1;
	memset(sb->buf + sb->len, c, n);
	sb->len += n;
	sb->buf[sb->len] = '\0';
	return 0;
}

int strbuf_vaddf(struct strbuf *sb, const char *fmt, va_list ap)
{
	va_list aq;
	int n;

	if (sb->failed)
		return -1;
	/* Straight into the room there is; measured and written again only when it did not fit. */
	va_copy(aq, ap);
	n = vsnprintf(sb->buf ? sb->buf + sb->len : NULL, sb->buf ? sb->alloc - sb->len : 0, fmt, aq);
	va_end(aq);
	if (n < 0) {
		if (sb->buf != NULL)
			sb->buf[sb->len] = '\0';
		sb->failed = STRBUF_TOOLONG;
		return -1;
	}
	if (sb->buf == NULL || (size_t)n >= sb->alloc - sb->len) {
		if (sb->buf != NULL)
			sb->buf[sb->len] = '\0';  /* what did not fit is not text */
		if (strbuf_grow(sb, (size_t)n) != 0)
			return -1;
		vsnprintf(sb->buf + sb->len, sb->alloc - sb->len, fmt, ap);
	}
	sb->len += (size_t)n;
	return 0;
}

int strbuf_addf(struct strbuf *sb, const char *fmt, ...)
{
	va_list ap;
	int rc;

	va_start(ap, fmt);
	rc = strbuf_vaddf(sb, fmt, ap);
	va_end(ap);
	return rc;
}

void strbuf_fail(struct strbuf *sb, enum strbuf_failure kind)
{
	if (!sb->failed)
		sb->failed = kind;
}

char *strbuf_detach(struct strbuf *sb, size_t *len)
{
	char *text = NULL;

	if (!sb->failed && sb->buf == NULL)
		strbuf_grow(sb, 0);
	if (!sb->failed) {
		text = sb->buf;
		if (len != NULL)
			*len = sb->len;
	} else {
		free(sb->buf);
	}
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	sb->failed = STRBUF_OK;
	return text;
}

void strbuf_release(struct strbuf *sb)
{
	free(sb->buf);
	sb->buf = NULL;
	sb->len = sb->alloc = 0;
	sb->failed = STRBUF_OK;
}
