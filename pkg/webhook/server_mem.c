/*
 * server_mem: the server's memory, around the budget and the per-request
 * arenas of pkg/base/arena.c. jansson allocates from the arenas while the
 * server runs, and glibc's allocator is tuned so that what a large request
 * held goes back to the kernel when it ends.
 */
#include <malloc.h>

#include "base/arena.h"
#include "webhook/server_int.h"

/*
 * glibc raises its mmap threshold each time a mapped block is freed (up to
 * 32 MiB), after which large blocks come from the heap and stay with the
 * process once freed. A fixed threshold keeps every block of this size or
 * more mapped, so request bodies are returned to the kernel when freed.
 */
#define MEM_MMAP_THRESHOLD (128 * 1024)
/* After a request that held this much, free heap pages go back to the kernel (malloc_trim). */
#define MEM_TRIM_AFTER (1024u * 1024)


void server_mem_start(void)
{
	mallopt(M_MMAP_THRESHOLD, MEM_MMAP_THRESHOLD);
	arena_install();
}

void server_mem_stop(void)
{
	arena_uninstall();
}

void server_mem_after_request(size_t held)
{
	if (held >= MEM_TRIM_AFTER)
		malloc_trim(0);
}
