/*
 * freeze_threads: stops some threads of a process, and only those, for a while:
 * a busy or starved worker, made certain, while the process's other threads
 * (the server's watchdog) run on.
 *
 *   freeze_threads --pid P --comm NAME --until FILE [--seconds S] [--ready-file F]
 *
 * Stops every thread of P whose name (/proc/P/task/TID/comm) is NAME, with
 * ptrace (PTRACE_SEIZE, then PTRACE_INTERRUPT: no signal reaches the process,
 * so its other threads never see a stop). Writes the count to --ready-file
 * once all are stopped, holds them until FILE exists or S seconds pass
 * (default 60), then lets them go (PTRACE_DETACH). If this tool dies, the
 * kernel lets them go too. Needs ptrace rights over P (root, or yama's
 * ptrace_scope 0). Last line: "frozen=N"; exit 0 when N > 0.
 */
#define _GNU_SOURCE /* __WALL */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256
#define POLL_MS 20

static int exists(const char *path)
{
	struct stat st;

	return path != NULL && stat(path, &st) == 0;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The name of thread tid of pid in name[size]; 0, or -1 when it is gone. */
static int comm_of(int pid, int tid, char *name, size_t size)
{
	char path[64];
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
	if ((f = fopen(path, "r")) == NULL)
		return -1;
	n = fread(name, 1, size - 1, f);
	fclose(f);
	name[n] = '\0';
	name[strcspn(name, "\n")] = '\0';
	return 0;
}

int main(int argc, char **argv)
{
	const char *comm = NULL, *until = NULL, *ready = NULL;
	int pid = 0, tids[MAX_THREADS], n = 0, frozen = 0, i;
	double seconds = 60, end;
	char path[64];
	struct dirent *e;
	DIR *d;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--pid") == 0 && v) pid = atoi(argv[++i]);
		else if (strcmp(a, "--comm") == 0 && v) comm = argv[++i];
		else if (strcmp(a, "--until") == 0 && v) until = argv[++i];
		else if (strcmp(a, "--seconds") == 0 && v) seconds = atof(argv[++i]);
		else if (strcmp(a, "--ready-file") == 0 && v) ready = argv[++i];
		else {
			fprintf(stderr, "usage: freeze_threads --pid P --comm NAME --until FILE [--seconds S] "
				"[--ready-file F]\n");
			return 2;
		}
	}
	if (pid <= 0 || comm == NULL || until == NULL) {
		fprintf(stderr, "freeze_threads: --pid, --comm and --until are required\n");
		return 2;
	}
	snprintf(path, sizeof path, "/proc/%d/task", pid);
	if ((d = opendir(path)) == NULL) {
		fprintf(stderr, "freeze_threads: %s: %s\n", path, strerror(errno));
		return 2;
	}
	while ((e = readdir(d)) != NULL && n < MAX_THREADS) {
		char name[32];
		int tid = atoi(e->d_name);

		if (tid > 0 && comm_of(pid, tid, name, sizeof name) == 0 && strcmp(name, comm) == 0)
			tids[n++] = tid;
	}
	closedir(d);
	for (i = 0; i < n; i++) {
		int status;

		if (ptrace(PTRACE_SEIZE, tids[i], NULL, NULL) != 0) {
			fprintf(stderr, "freeze_threads: seize %d: %s\n", tids[i], strerror(errno));
			tids[i] = 0;
			continue;
		}
		/* The stop is reported to waitpid(); until then the thread may still run. */
		if (ptrace(PTRACE_INTERRUPT, tids[i], NULL, NULL) != 0 || waitpid(tids[i], &status, __WALL) != tids[i]) {
			fprintf(stderr, "freeze_threads: interrupt %d: %s\n", tids[i], strerror(errno));
			ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
			tids[i] = 0;
			continue;
		}
		frozen++;
	}
	if (ready != NULL) {
		FILE *f = fopen(ready, "w");

		if (f != NULL) {
			fprintf(f, "%d\n", frozen);
			fclose(f);
		}
	}
	end = now_s() + seconds;
	while (frozen > 0 && !exists(until) && now_s() < end) {
		struct timespec ts = { 0, POLL_MS * 1000000L };

		nanosleep(&ts, NULL);
	}
	for (i = 0; i < n; i++)
		if (tids[i] != 0)
			ptrace(PTRACE_DETACH, tids[i], NULL, NULL);
	printf("frozen=%d\n", frozen);
	return frozen > 0 ? 0 : 1;
}
