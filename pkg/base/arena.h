/*
 * arena: per-request bump arenas for jansson, charged to a byte budget.
 *
 * While a thread has an arena open (arena_begin() .. arena_end()), every
 * jansson allocation it makes comes from that arena: freeing inside it costs
 * nothing, and everything goes at once when the request ends. The thread
 * keeps its first chunk across requests (a small review never calls malloc
 * for its values); larger chunks are charged to the budget given to
 * arena_begin() and mapped straight from the kernel, so a large request's
 * memory is returned the moment it ends. An allocation the budget refuses
 * fails, and so do all later ones until arena_end() reports it.
 *
 * Outside an open arena, jansson allocates with malloc as usual.
 */
#ifndef GPU_ADMISSION_ARENA_H
#define GPU_ADMISSION_ARENA_H

#include <stdatomic.h>
#include <stddef.h>

/* Bytes in use out of a limit, shared by threads (the server's memory budget). */
struct arena_budget {
	atomic_size_t used;
	size_t limit;
};

/* An empty budget of limit bytes. */
void arena_budget_init(struct arena_budget *b, size_t limit);

/* Charges n bytes to b: 0, or -1 (nothing charged) when it would go over the limit. */
int arena_budget_take(struct arena_budget *b, size_t n);

/* Returns n bytes taken with arena_budget_take(). */
void arena_budget_give(struct arena_budget *b, size_t n);

/*
 * Points jansson's allocator at the arenas (json_set_alloc_funcs()): outside
 * an open arena it is malloc, and values made before stay valid (an arena
 * frees what it does not own with free()). Call before any thread opens an
 * arena; arena_uninstall() restores malloc once every arena is closed.
 */
void arena_install(void);
void arena_uninstall(void);

/*
 * Opens this thread's arena for one request, charging chunks beyond the
 * thread's first to b (borrowed; it must outlive arena_end()). -1 when the
 * first chunk cannot be allocated. The first chunk is freed when the thread
 * ends.
 */
int arena_begin(struct arena_budget *b);

/* Whether p lies in this thread's open arena (and so dies with it). */
int arena_owns(const void *p);

/*
 * Frees everything allocated from this thread's arena and closes it, giving
 * its chunks' charge back to the budget. Returns the bytes it had charged,
 * with ARENA_REFUSED set when an allocation was refused for the budget; 0
 * when no arena was open.
 */
#define ARENA_REFUSED ((size_t)1 << (sizeof(size_t) * 8 - 1))
size_t arena_end(void);

#endif
