/*
 * check.h: the unit tests' whole framework. A test file defines test
 * functions, calls them from main through RUN(), and returns check_done(),
 * which prints "N passed, N failed" for the suite runner to add up.
 */
#ifndef GPU_ADMISSION_CHECK_H
#define GPU_ADMISSION_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_passed, check_failed, check_current_failed;

#define CHECK(cond) do { \
	if (!(cond)) { \
		fprintf(stderr, "  FAIL %s:%d: %s\n", __FILE__, __LINE__, #cond); \
		check_current_failed = 1; \
	} \
} while (0)

#define CHECK_STR(got, want) do { \
	const char *check_g_ = (got), *check_w_ = (want); \
	if (check_g_ == NULL || check_w_ == NULL ? check_g_ != check_w_ : strcmp(check_g_, check_w_) != 0) { \
		fprintf(stderr, "  FAIL %s:%d: %s\n    got:  %s\n    want: %s\n", __FILE__, __LINE__, \
			#got, check_g_ ? check_g_ : "(null)", check_w_ ? check_w_ : "(null)"); \
		check_current_failed = 1; \
	} \
} while (0)

#define CHECK_INT(got, want) do { \
	long long check_g_ = (long long)(got), check_w_ = (long long)(want); \
	if (check_g_ != check_w_) { \
		fprintf(stderr, "  FAIL %s:%d: %s: got %lld, want %lld\n", __FILE__, __LINE__, \
			#got, check_g_, check_w_); \
		check_current_failed = 1; \
	} \
} while (0)

#define RUN(fn) do { \
	check_current_failed = 0; \
	fn(); \
	if (check_current_failed) { check_failed++; fprintf(stderr, "not ok %s\n", #fn); } \
	else { check_passed++; } \
} while (0)

static inline int check_done(const char *suite)
{
	printf("%s: %d passed, %d failed\n", suite, check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
