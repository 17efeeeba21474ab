/*
 * server_mem: the server's memory budget and its per-request arenas.
 *
 * The budget: every request body buffered and every parse result being built
 * is charged to one counter shared by all workers (server.mem_used, at most
 * o->memory_budget). What would go over is refused, and the request is
 * answered 503 with Retry-After: memory stays bounded however many large
 * requests arrive at once, and never reaches an OOM kill.
 *
 * The arena: while a worker runs review_handle() for a request, jansson
 * allocates from a bump arena owned by the worker thread (jansson's allocator
 * is pointed here with json_set_alloc_funcs()). Freeing inside it costs
 * nothing; everything goes at once when the request ends. The first chunk is
 * kept by the thread (a small review never calls malloc for its values);
 * larger chunks are charged to the budget and mapped straight from the
 * kernel, so a large request's memory is returned the moment it ends.
 */
#define _GNU_SOURCE /* MAP_ANONYMOUS */
#include <malloc.h>
#include <pthread.h>
#include <stdalign.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include <jansson.h>

#include "server_int.h"

#define ARENA_FIRST (64u * 1024)      /* kept per worker thread: a 6.7 KB review needs ~20 KB */
#define ARENA_CHUNK_MAX (1024u * 1024) /* chunks double up to this: at most 1 MiB charged unused */
#define ARENA_ALIGN alignof(max_align_t)
/*
 * glibc raises its mmap threshold each time a mapped block is freed (up to
 * 32 MiB), after which large blocks come from the heap and stay with the
 * process once freed. A fixed threshold keeps every block of this size or
 * more mapped, so request bodies are returned to the kernel when freed.
 */
#define MEM_MMAP_THRESHOLD (128 * 1024)
/* After a request that held this much, free heap pages go back to the kernel (malloc_trim). */
#define MEM_TRIM_AFTER (1024u * 1024)

struct arena_chunk {
	struct arena_chunk *next;
	size_t size, used;         /* of data[] */
	alignas(max_align_t) unsigned char data[];
};

/* One per worker thread; active between server_arena_begin() and server_arena_end(). */
struct arena {
	struct server *s;          /* non-NULL while active */
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

int server_budget_take(struct server *s, size_t n)
{
	size_t used = atomic_load(&s->mem_used);

	do {
		if (n > s->o->memory_budget || used > s->o->memory_budget - n)
			return -1;
	} while (!atomic_compare_exchange_weak(&s->mem_used, &used, used + n));
	return 0;
}

void server_budget_give(struct server *s, size_t n)
{
	atomic_fetch_sub(&s->mem_used, n);
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

	if (a->s == NULL)
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
	if (server_budget_take(a->s, size) != 0) {
		a->refused = 1;
		return NULL;
	}
	if ((c = chunk_map(size)) == NULL) {
		/* Out of memory for real: flagged too, since jansson's parser does not report it reliably. */
		server_budget_give(a->s, size);
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

static void arena_free(void *p)
{
	struct arena *a = &arena;
	const struct arena_chunk *c;

	if (p == NULL)
		return;
	if (a->s != NULL) {
		if (in_chunk(a->first, p))
			return;
		for (c = a->more; c != NULL; c = c->next)
			if (in_chunk(c, p))
				return;
	}
	free(p);  /* allocated outside a request: a policy loaded by a reload, say */
}

int server_arena_begin(struct server *s)
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
	a->s = s;
	return 0;
}

size_t server_arena_end(void)
{
	struct arena *a = &arena;
	struct arena_chunk *c, *next;
	size_t charged = a->charged;

	if (a->s == NULL)
		return 0;
	for (c = a->more; c != NULL; c = next) {
		next = c->next;
		chunk_unmap(c);
	}
	server_budget_give(a->s, charged);
	if (a->refused)
		charged |= SERVER_ARENA_REFUSED;
	a->more = NULL;
	a->charged = 0;
	a->refused = 0;
	a->s = NULL;
	return charged;
}

int server_arena_owns(const void *p)
{
	const struct arena *a = &arena;
	const struct arena_chunk *c;

	if (a->s == NULL || p == NULL)
		return 0;
	if (in_chunk(a->first, p))
		return 1;
	for (c = a->more; c != NULL; c = c->next)
		if (in_chunk(c, p))
			return 1;
	return 0;
}

void server_mem_start(void)
{
	mallopt(M_MMAP_THRESHOLD, MEM_MMAP_THRESHOLD);
	json_set_alloc_funcs(arena_malloc, arena_free);
}

void server_mem_stop(void)
{
	json_set_alloc_funcs(malloc, free);
}

void server_mem_after_request(size_t held)
{
	if (held >= MEM_TRIM_AFTER)
		malloc_trim(0);
}
