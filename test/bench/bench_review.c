/*
 * bench_review: in-process cost of one AdmissionReview — decode, policy,
 * encode — as review_handle() does it for the server.
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

#include "config.h"
#include "review.h"

#define RUNS 7

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

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	if (f == NULL || fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		if (f)
			fclose(f);
		return NULL;
	}
	buf = malloc((size_t)n + 1);
	if (buf != NULL)
		*len = fread(buf, 1, (size_t)n, f);
	fclose(f);
	return buf;
}

/* Median seconds per review of body over RUNS runs; -1 when a review fails. */
static double measure(const struct config *cfg, const char *body, size_t len)
{
	double samples[RUNS], t0, per;
	long iters = 1, i;
	int r;

	/* Calibrate: grow iterations until one run takes ~0.2 s. */
	for (;;) {
		t0 = cpu_now();
		for (i = 0; i < iters; i++) {
			struct review_response res;
			struct error err;

			if (review_handle(cfg, body, len, 0, &res, &err) != 0)
				return -1;
			review_response_free(&res);
		}
		if (cpu_now() - t0 > 0.05 || iters > 10000000)
			break;
		iters *= 4;
	}
	iters = (long)((double)iters * 0.2 / (cpu_now() - t0 > 0 ? cpu_now() - t0 : 1e-3)) + 1;
	for (r = 0; r < RUNS; r++) {
		t0 = cpu_now();
		for (i = 0; i < iters; i++) {
			struct review_response res;
			struct error err;

			review_handle(cfg, body, len, 0, &res, &err);
			review_response_free(&res);
		}
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
	printf("%-36s %9s %12s %12s\n", "in-process review", "bytes", "us/review", "reviews/s");
	if (jf)
		fprintf(jf, "{\"in_process\": [");
	for (i = 1; i < argc; i++) {
		size_t len = 0;
		char *body = slurp(argv[i], &len);
		double per = body ? measure(cfg, body, len) : -1;
		const char *name = strrchr(argv[i], '/') ? strrchr(argv[i], '/') + 1 : argv[i];

		if (per < 0) {
			fprintf(stderr, "%s: review failed\n", argv[i]);
			rc = 1;
		} else {
			printf("%-36s %9zu %12.1f %12.0f\n", name, len, per * 1e6, 1.0 / per);
			if (jf)
				fprintf(jf, "%s\n  {\"file\": \"%s\", \"bytes\": %zu, \"us_per_review\": %.2f, "
					"\"reviews_per_second\": %.0f}", first ? "" : ",", name, len, per * 1e6, 1.0 / per);
			first = 0;
		}
		free(body);
	}
	if (jf) {
		fprintf(jf, "\n]}\n");
		fclose(jf);
	}
	config_free(cfg);
	return rc;
}
