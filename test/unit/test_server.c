/* server: the pieces of the server that are plain functions (thread count, the request arena). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include <jansson.h>

#include "check.h"
#include "server.h"
#include "server_int.h"

static char path[] = "/tmp/test_server_cpu_max.XXXXXX";

static unsigned with_cpu_max(const char *text)
{
	FILE *f = fopen(path, "w");

	if (f == NULL)
		return 0;
	fputs(text, f);
	fclose(f);
	return server_default_threads(path);
}

static void test_default_threads(void)
{
	cpu_set_t set;
	unsigned cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? (unsigned)CPU_COUNT(&set) : 1;

	if (cpus > SERVER_THREADS_MAX)
		cpus = SERVER_THREADS_MAX;
	CHECK_INT(server_default_threads(NULL), cpus);
	CHECK_INT(server_default_threads("/nonexistent/cpu.max"), cpus);
	CHECK_INT(with_cpu_max("max 100000\n"), cpus);
	CHECK_INT(with_cpu_max("50000 100000\n"), 1);           /* limits.cpu 500m */
	CHECK_INT(with_cpu_max("100000 100000\n"), 1);          /* exactly one CPU */
	CHECK_INT(with_cpu_max("100001 100000\n"), cpus < 2 ? cpus : 2); /* just over: rounds up */
	CHECK_INT(with_cpu_max("99900000 100000\n"), cpus);     /* a quota above the CPUs: the CPUs */
	CHECK_INT(with_cpu_max("garbage\n"), cpus);
	CHECK_INT(with_cpu_max("-5 100000\n"), cpus);
	CHECK_INT(with_cpu_max("50000 0\n"), cpus);
}

/*
 * Once the arena has refused an allocation for the budget, it refuses every
 * one until the request ends, even one its chunks still have room for:
 * jansson's lexer carries on after failing to save a byte of a token, and a
 * later allocation that succeeds is then written past its end (lex_save() and
 * lex_scan_string() in jansson's src/load.c). The request is answered 503
 * whatever happens after the first refusal.
 */
static void test_arena_refusal_sticks(void)
{
	enum { BIG = 512 * 1024 };  /* past the thread's first chunk and past the budget below */
	struct server_options o;
	struct server s;
	char *text = malloc(BIG);
	json_t *small, *big, *after;
	size_t charged;

	CHECK(text != NULL);
	if (text == NULL)
		return;
	memset(text, 'a', BIG);
	memset(&s, 0, sizeof s);
	server_options_default(&o);
	o.memory_budget = 128 * 1024;
	s.o = &o;
	atomic_init(&s.mem_used, 0);
	server_mem_start();
	CHECK(server_arena_begin(&s) == 0);
	small = json_string("from the thread's first chunk");
	big = json_stringn(text, BIG);
	after = json_string("x");
	CHECK(small != NULL);
	CHECK(big == NULL);
	CHECK(after == NULL);
	charged = server_arena_end();
	CHECK(charged & SERVER_ARENA_REFUSED);
	CHECK_INT(atomic_load(&s.mem_used), 0);
	/* The next request starts afresh. */
	CHECK(server_arena_begin(&s) == 0);
	after = json_string("x");
	CHECK(after != NULL);
	CHECK(!(server_arena_end() & SERVER_ARENA_REFUSED));
	server_mem_stop();
	free(text);
}

int main(void)
{
	int fd = mkstemp(path);

	if (fd < 0) {
		perror("mkstemp");
		printf("server: 0 passed, 1 failed\n");
		return 1;
	}
	close(fd);
	RUN(test_default_threads);
	RUN(test_arena_refusal_sticks);
	unlink(path);
	return check_done("server");
}
