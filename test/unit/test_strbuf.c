/*
 * strbuf and array_grow: the text built, the invariants kept after every
 * append, the bound (max) refused, and every allocation failed in turn:
 * realloc is wrapped (-Wl,--wrap=realloc, see the Makefile), so the N-th
 * call fails, N = 1, 2, ... until a run makes fewer than N. A failed run
 * must stick (every later append refused), keep the text it had, hand back
 * NULL and leak nothing.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/array.h"
#include "base/strbuf.h"
#include "check.h"

void *__real_realloc(void *p, size_t n);
void *__wrap_realloc(void *p, size_t n);
void __real_free(void *p);
void __wrap_free(void *p);

static unsigned long calls, fail_at;  /* fail_at: the realloc to fail (1-based); 0: none */
static long live;                     /* blocks from realloc(NULL, ...) not yet freed */

void *__wrap_realloc(void *p, size_t n)
{
	void *q;

	if (fail_at != 0 && ++calls == fail_at)
		return NULL;
	q = __real_realloc(p, n);
	if (q != NULL && p == NULL)
		live++;
	return q;
}

void __wrap_free(void *p)
{
	if (p != NULL)
		live--;
	__real_free(p);
}

/* The invariants at the top of strbuf.h. */
static int invariants(const struct strbuf *sb)
{
	if (sb->buf == NULL)
		return sb->len == 0 && sb->alloc == 0;
	return sb->len < sb->alloc && sb->buf[sb->len] == '\0' && strlen(sb->buf) == sb->len &&
	       (sb->max == 0 || sb->len + 1 <= sb->max);
}

static void test_empty(void)
{
	struct strbuf sb = STRBUF_INIT;
	size_t len = 99;
	char *s;

	CHECK(invariants(&sb));
	s = strbuf_detach(&sb, &len);
	CHECK_STR(s, "");
	CHECK_INT(len, 0);
	CHECK(sb.buf == NULL && sb.len == 0 && sb.alloc == 0);
	free(s);
}

/* Builds the same text through every kind of append; the expected text is written out whole. */
static void build(struct strbuf *sb)
{
	char big[1500];

	memset(big, 'x', sizeof big - 1);
	big[sizeof big - 1] = '\0';
	strbuf_addstr(sb, "a");
	strbuf_addch(sb, 'b');
	strbuf_add(sb, "cdef", 2);
	strbuf_addchars(sb, ' ', 3);
	strbuf_addf(sb, "%d-%s", 42, "x");
	strbuf_addf(sb, "[%s]", big);  /* past STRBUF_FIRST: grows while formatting */
	strbuf_addstr(sb, "z");
}

static void test_appends(void)
{
	struct strbuf sb = STRBUF_INIT;
	char want[1600], *s;
	size_t len;

	memset(want, 0, sizeof want);
	strcpy(want, "abcd   42-x[");
	memset(want + strlen(want), 'x', 1499);
	strcat(want, "]z");
	build(&sb);
	CHECK(invariants(&sb));
	CHECK_INT(sb.failed, STRBUF_OK);
	s = strbuf_detach(&sb, &len);
	CHECK_STR(s, want);
	CHECK_INT(len, strlen(want));
	free(s);
}

static void test_grow_then_setlen(void)
{
	struct strbuf sb = STRBUF_INIT;

	strbuf_addstr(&sb, "ab");
	CHECK(strbuf_grow(&sb, 3) == 0);
	CHECK(sb.alloc >= sb.len + 3 + 1);
	memcpy(sb.buf + sb.len, "cde", 3);
	strbuf_setlen(&sb, sb.len + 3);
	CHECK_STR(sb.buf, "abcde");
	CHECK(invariants(&sb));
	strbuf_release(&sb);
	CHECK(sb.buf == NULL && sb.len == 0);
}

static void test_max(void)
{
	struct strbuf sb = STRBUF_INIT_MAX(8);

	CHECK(strbuf_addstr(&sb, "1234567") == 0);  /* 7 bytes and the NUL: exactly max */
	CHECK(sb.alloc <= 8);
	CHECK(strbuf_addch(&sb, '8') == -1);
	CHECK_INT(sb.failed, STRBUF_TOOLONG);
	CHECK_STR(sb.buf, "1234567");  /* the append that failed added nothing */
	CHECK(strbuf_addstr(&sb, "") == -1);  /* sticky, even for nothing */
	CHECK(strbuf_addf(&sb, "%d", 1) == -1);
	CHECK(invariants(&sb));
	CHECK(strbuf_detach(&sb, NULL) == NULL);
	CHECK_INT(sb.max, 8);  /* reset, the bound kept */
	CHECK(strbuf_addf(&sb, "%s", "123456789") == -1);  /* a format that does not fit */
	CHECK_INT(sb.failed, STRBUF_TOOLONG);
	CHECK(sb.buf == NULL || sb.buf[0] == '\0');
	strbuf_release(&sb);
}

static void test_overflow(void)
{
	struct strbuf sb = STRBUF_INIT;
	long before = live;

	strbuf_addstr(&sb, "a");
	CHECK(strbuf_grow(&sb, SIZE_MAX) == -1);
	CHECK_INT(sb.failed, STRBUF_NOMEM);
	CHECK_STR(sb.buf, "a");
	strbuf_release(&sb);
	CHECK_INT(live, before);
}

/* Every realloc of build() failed in turn. */
static void test_failure_injection(void)
{
	unsigned long n, runs = 0;

	for (n = 1;; n++) {
		struct strbuf sb = STRBUF_INIT;
		long before = live;
		char *s;

		calls = 0;
		fail_at = n;
		build(&sb);
		fail_at = 0;
		if (calls < n) {  /* nothing failed: every allocation has had its turn */
			CHECK_INT(sb.failed, STRBUF_OK);
			strbuf_release(&sb);
			break;
		}
		runs++;
		CHECK_INT(sb.failed, STRBUF_NOMEM);
		CHECK(invariants(&sb));
		CHECK(strbuf_addstr(&sb, "more") == -1);
		s = strbuf_detach(&sb, NULL);
		CHECK(s == NULL);
		CHECK_INT(live, before);
	}
	CHECK(runs >= 2);  /* the first allocation and a growth, at least */
}

static void test_array(void)
{
	int *v = NULL, *g;
	size_t cap = 0, i;
	long before = live;

	g = array_grow(v, &cap, 1, sizeof *v, 4);
	CHECK(g != NULL && cap == 4);
	v = g;
	for (i = 0; i < 4; i++)
		v[i] = (int)i;
	CHECK(array_grow(v, &cap, 4, sizeof *v, 4) == v);  /* room already */
	g = array_grow(v, &cap, 9, sizeof *v, 4);
	CHECK(g != NULL && cap == 16);
	v = g;
	CHECK(v[3] == 3);
	/* Too large to count in bytes: refused, nothing changed. */
	CHECK(array_grow(v, &cap, SIZE_MAX / 2, 16, 4) == NULL);
	CHECK_INT(cap, 16);
	/* Out of memory: refused, v and cap as they were. */
	calls = 0;
	fail_at = 1;
	CHECK(array_grow(v, &cap, 17, sizeof *v, 4) == NULL);
	fail_at = 0;
	CHECK_INT(cap, 16);
	CHECK(v[3] == 3);
	free(v);
	CHECK_INT(live, before);
}

/* array_cap(): doubling from cap (or first), cut to max, 0 past max or on overflow. */
static void test_array_cap(void)
{
	CHECK_INT(array_cap(0, 1, 4, 0), 4);
	CHECK_INT(array_cap(0, 5, 4, 0), 8);
	CHECK_INT(array_cap(8, 8, 4, 0), 8);     /* room already: cap itself */
	CHECK_INT(array_cap(8, 9, 4, 0), 16);    /* from cap, not first */
	CHECK_INT(array_cap(0, 3, 0, 0), 4);     /* first 0: from 1 */
	CHECK_INT(array_cap(8, 9, 4, 12), 12);   /* cut to max */
	CHECK_INT(array_cap(8, 12, 4, 12), 12);
	CHECK_INT(array_cap(8, 13, 4, 12), 0);   /* past max */
	CHECK_INT(array_cap(SIZE_MAX / 2 + 1, SIZE_MAX, 4, 0), 0);  /* doubling overflows */
}

/* array_resize(): exactly n elements; refused (nothing changed) on overflow, 0 or no memory. */
static void test_array_resize(void)
{
	int *v = NULL, *g;
	size_t cap = 0;
	long before = live;

	g = array_resize(v, &cap, 3, sizeof *v);
	CHECK(g != NULL && cap == 3);
	v = g;
	v[2] = 7;
	CHECK(array_resize(v, &cap, SIZE_MAX / 2, 4) == NULL);
	CHECK(array_resize(v, &cap, 0, sizeof *v) == NULL);
	calls = 0;
	fail_at = 1;
	CHECK(array_resize(v, &cap, 5, sizeof *v) == NULL);
	fail_at = 0;
	CHECK_INT(cap, 3);
	g = array_resize(v, &cap, 5, sizeof *v);
	CHECK(g != NULL && cap == 5 && g[2] == 7);
	free(g);
	CHECK_INT(live, before);
}

int main(void)
{
	RUN(test_empty);
	RUN(test_appends);
	RUN(test_grow_then_setlen);
	RUN(test_max);
	RUN(test_overflow);
	RUN(test_failure_injection);
	RUN(test_array);
	RUN(test_array_cap);
	RUN(test_array_resize);
	return check_done("test_strbuf");
}
