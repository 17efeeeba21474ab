/*
 * bench_review: in-process cost of one AdmissionReview — decode, policy,
 * encode — as review_handle() does it for the server: inside the worker's
 * per-request arena (pkg/base/arena.c), which jansson allocates from while a
 * request runs. The same reviews with jansson on malloc (as `review` and
 * `audit` run them) are reported beside, for comparison.
 *
 * For each file: 7 runs of enough iterations to take ~0.2 s each; reports the
 * median CPU time per review (thread CPU clock, so a busy machine inflates
 * nothing but wall time) and the reviews/s one core sustains.
 *
 * usage: bench_review [--json OUT] FILE...
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "policy/config.h"
#include "base/file.h"
#include "webhook/review.h"
#include "base/arena.h"
#include "webhook/server.h"

#define RUNS 7
#define BODY_MAX (64u << 20)  /* a review file, at most */

static double cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

/* The server's budget, at its default size (serve --memory-budget). */
static struct arena_budget budget;

/* One review, in the server's arena when arena is set; -1 when it fails. */
static int one_review(const struct config *cfg, const char *body, size_t len, int arena)
{
	struct review_response res;
	struct error err;
	int rc;

	if (arena && arena_begin(&budget) != 0)
		return -1;
	rc = review_handle(cfg, body, len, 0, &res, &err);
	review_response_free(&res);
	if (arena && (arena_end() & ARENA_REFUSED))
		rc = -1;
	return rc;
}

/* Median seconds per review of body over RUNS runs; -1 when a review fails. */
static double measure(const struct config *cfg, const char *body, size_t len, int arena)
{
	double samples[RUNS], t0, per;
	long iters = 1, i;
	int r;

	/* Calibrate: grow iterations until one run takes ~0.2 s. */
	for (;;) {
		t0 = cpu_now();
		for (i = 0; i < iters; i++)
			if (one_review(cfg, body, len, arena) != 0)
				return -1;
		if (cpu_now() - t0 > 0.05 || iters > 10000000)
			break;
		iters *= 4;
	}
	iters = (long)((double)iters * 0.2 / (cpu_now() - t0 > 0 ? cpu_now() - t0 : 1e-3)) + 1;
	for (r = 0; r < RUNS; r++) {
		t0 = cpu_now();
		for (i = 0; i < iters; i++)
			(void)one_review(cfg, body, len, arena);
		samples[r] = (cpu_now() - t0) / (double)iters;
	}
	qsort(samples, RUNS, sizeof samples[0], cmp_double);
	per = samples[RUNS / 2];
	return per;
}

int main(int argc, char **argv)
{
	struct error err = { 0 };
	struct config *cfg = config_default(&err);
	struct server_options defaults;
	const char *json_out = NULL;
	FILE *jf = NULL;
	int i, first = 1, rc = 0;

	if (argc > 2 && strcmp(argv[1], "--json") == 0) {
		json_out = argv[2];
		argv += 2;
		argc -= 2;
	}
	if (cfg == NULL || argc < 2) {
		fprintf(stderr, "usage: bench_review [--json OUT] FILE...\n");
		return 2;
	}
	if (json_out && (jf = fopen(json_out, "w")) == NULL) {
		perror(json_out);
		return 2;
	}
	server_options_default(&defaults);
	arena_budget_init(&budget, defaults.memory_budget);
	arena_install();
	printf("%-36s %9s %12s %12s %14s\n", "in-process review", "bytes", "us/review", "reviews/s",
	       "us on malloc");
	if (jf)
		fprintf(jf, "{\"in_process\": [");
	for (i = 1; i < argc; i++) {
		size_t len = 0;
		char *body = file_read(argv[i], BODY_MAX, &len, &err);
		double per = body ? measure(cfg, body, len, 1) : -1;
		double per_malloc = body ? measure(cfg, body, len, 0) : -1;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];

		if (per < 0 || per_malloc < 0) {
			fprintf(stderr, "%s: review failed%s%s\n", argv[i], body ? "" : ": ", body ? "" : err.msg);
			rc = 1;
		} else {
			printf("%-36s %9zu %12.1f %12.0f %14.1f\n", name, len, per * 1e6, 1.0 / per, per_malloc * 1e6);
			if (jf)
				fprintf(jf, "%s\n  {\"file\": \"%s\", \"bytes\": %zu, \"us_per_review\": %.2f, "
					"\"reviews_per_second\": %.0f, \"us_per_review_malloc\": %.2f}", first ? "" : ",",
					name, len, per * 1e6, 1.0 / per, per_malloc * 1e6);
			first = 0;
		}
		free(body);
	}
	arena_uninstall();
	if (jf) {
		fprintf(jf, "\n]}\n");
		fclose(jf);
	}
	config_free(cfg);
	return rc;
}
