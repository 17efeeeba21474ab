/*
 * repeat.h: hostile texts made of one unit repeated (a flow list of a
 * million scalars, 88,000 anchors, 40,000 directives), for the tests of the
 * policy loader's bounds (test_config.c) and of what a load holds at most
 * (test_oom.c).
 */
#ifndef GPU_ADMISSION_TEST_REPEAT_H
#define GPU_ADMISSION_TEST_REPEAT_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * New (malloc): head, then unit n times, then tail, with *len its length. A
 * '#' in unit is the copy's number (0, 1, ...: anchors and directives that
 * differ). Copies stop before the text would pass max bytes. NULL when out of
 * memory.
 */
static inline char *repeat_text(const char *head, const char *unit, size_t n, const char *tail, size_t max,
				size_t *len)
{
	size_t h = strlen(head), u = strlen(unit) + 20, t = strlen(tail), i, o;
	char *buf = malloc(h + u * n + t + 1);
	const char *c;

	if (buf == NULL)
		return NULL;
	memcpy(buf, head, h);
	for (i = 0, o = h; i < n && o + u + t < max; i++)
		for (c = unit; *c != '\0'; c++)
			if (*c == '#')
				o += (size_t)sprintf(buf + o, "%zu", i);
			else
				buf[o++] = *c;
	memcpy(buf + o, tail, t + 1);
	*len = o + t;
	return buf;
}

#endif
