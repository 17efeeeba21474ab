/*
 * arena: per-request bump arenas for jansson, charged to a byte budget (see
 * arena.h). jansson's allocator is pointed here with json_set_alloc_funcs();
 * a thread's arena is found through a thread-local, so the allocator needs
 * no argument and costs a pointer bump while a request runs.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include "base/arena.h"

#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>

#include <jansson.h>

#define ARENA_FIRST (64u * 1024)      /* kept per worker thread: a 6.7 KB review needs ~20 KB */
#define ARENA_CHUNK_MAX (1024u * 1024) /* chunks double up to this: at most 1 MiB charged unused */
#define ARENA_ALIGN alignof(max_align_t)

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;         /* of data[] */
	alignas(max_align_t) unsigned char data[];
};

/* One per thread; open between arena_begin() and arena_end(). */
struct arena {
	struct arena_budget *b;    /* non-NULL while open */
	struct arena_chunk *first; /* kept across requests */
	struct arena_chunk *more;  /* this request's extra chunks, charged to the budget */
	size_t charged;
	int refused;               /* an allocation was refused for the budget */
};

static _Thread_local struct arena arena;

/* The kept first chunks are freed when their worker thread ends. */
static pthread_key_t first_key;
static pthread_once_t first_once = PTHREAD_ONCE_INIT;
static int first_key_ok;

static void first_key_init(void)
{
	first_key_ok = pthread_key_create(&first_key, free) == 0;
}

void arena_budget_init(struct arena_budget *b, size_t limit)
{
	atomic_init(&b->used, 0);
	b->limit = limit;
}

int arena_budget_take(struct arena_budget *b, size_t n)
{
	size_t used = atomic_load(&b->used);

	do {
		if (n > b->limit || used > b->limit - n)
			return -1;
	} while (!atomic_compare_exchange_weak(&b->used, &used, used + n));
	return 0;
}

void arena_budget_give(struct arena_budget *b, size_t n)
{
	atomic_fetch_sub(&b->used, n);
}

static struct arena_chunk *chunk_map(size_t size)
{
	size_t total = offsetof(struct arena_chunk, data) + size;
	struct arena_chunk *c = mmap(NULL, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (c == MAP_FAILED)
		return NULL;
	c->next = NULL;
	c->size = size;
	c->used = 0;
	return c;
}

static void chunk_unmap(struct arena_chunk *c)
{
	munmap(c, offsetof(struct arena_chunk, data) + c->size);
}

static void *chunk_take(struct arena_chunk *c, size_t n)
{
	void *p;

	if (c == NULL || c->size - c->used < n)
		return NULL;
	p = c->data + c->used;
	c->used += n;
	return p;
}

/* jansson's allocator: from the thread's arena while a request runs, else malloc. */
static void *arena_malloc(size_t n)
{
	struct arena *a = &arena;
	struct arena_chunk *c;
	size_t size;
	void *p;

	if (a->b == NULL)
		return malloc(n);
	/*
	 * Refused once, refused until the request ends (it is answered 503
	 * anyway): jansson's lexer goes on after failing to save a byte of a
	 * token and writes a string past the next allocation it gets
	 * (lex_save(), lex_scan_string() in its src/load.c); it stops cleanly
	 * when that one fails too.
	 */
	if (a->refused || n > SIZE_MAX / 2)
		return NULL;
	n = (n + ARENA_ALIGN - 1) & ~(size_t)(ARENA_ALIGN - 1);
	if ((p = chunk_take(a->more, n)) != NULL || (p = chunk_take(a->first, n)) != NULL)
		return p;
	/* A new chunk, twice the last one up to ARENA_CHUNK_MAX (few chunks, little waste), at least n. */
	size = a->more ? a->more->size * 2 : 2 * ARENA_FIRST;
	if (size > ARENA_CHUNK_MAX)
		size = ARENA_CHUNK_MAX;
	if (size < n)
		size = n;
	if (arena_budget_take(a->b, size) != 0) {
		a->refused = 1;
		return NULL;
	}
	if ((c = chunk_map(size)) == NULL) {
		/* Out of memory for real: flagged too, since jansson's parser does not report it reliably. */
		arena_budget_give(a->b, size);
		a->refused = 1;
		return NULL;
	}
	a->charged += size;
	c->next = a->more;
	a->more = c;
	return chunk_take(c, n);
}

static int in_chunk(const struct arena_chunk *c, const void *p)
{
	return c != NULL && (const unsigned char *)p >= c->data && (const unsigned char *)p < c->data + c->size;
}

/* Whether p lies in one of a's chunks while a is open. */
static int holds(const struct arena *a, const void *p)
{
	const struct arena_chunk *c;

	if (a->b == NULL || p == NULL)
		return 0;
	if (in_chunk(a->first, p))
		return 1;
	for (c = a->more; c != NULL; c = c->next)
		if (in_chunk(c, p))
			return 1;
	return 0;
}

static void arena_free(void *p)
{
	if (!holds(&arena, p))
		free(p);  /* allocated outside a request (a policy loaded by a reload, say), or NULL */
}

int arena_begin(struct arena_budget *b)
{
	struct arena *a = &arena;

	if (a->first == NULL) {
		pthread_once(&first_once, first_key_init);
		if (!first_key_ok)
			return -1;
		a->first = malloc(offsetof(struct arena_chunk, data) + ARENA_FIRST);
		if (a->first == NULL)
			return -1;
		if (pthread_setspecific(first_key, a->first) != 0) {
			free(a->first);
			a->first = NULL;
			return -1;
		}
		a->first->next = NULL;
		a->first->size = ARENA_FIRST;
	}
	a->first->used = 0;
	a->more = NULL;
	a->charged = 0;
	a->refused = 0;
	a->b = b;
	return 0;
}

size_t arena_end(void)
{
	struct arena *a = &arena;
	struct arena_chunk *c, *next;
	size_t charged = a->charged;

	if (a->b == NULL)
		return 0;
	for (c = a->more; c != NULL; c = next) {
		next = c->next;
		chunk_unmap(c);
	}
	arena_budget_give(a->b, charged);
	if (a->refused)
		charged |= ARENA_REFUSED;
	a->more = NULL;
	a->charged = 0;
	a->refused = 0;
	a->b = NULL;
	return charged;
}

int arena_owns(const void *p)
{
	return holds(&arena, p);
}

void arena_install(void)
{
	json_set_alloc_funcs(arena_malloc, arena_free);
}

void arena_uninstall(void)
{
	json_set_alloc_funcs(malloc, free);
}
