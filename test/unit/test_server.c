/* server: the pieces of the server that are plain functions (the thread count). */
#define _GNU_SOURCE
#include <sched.h>
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "webhook/server.h"

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
	unlink(path);
	return check_done("server");
}
