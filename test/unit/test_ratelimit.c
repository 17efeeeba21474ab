/* ratelimit: the token bucket, per-key intervals, a full table, a clock going back. */
#include <stdlib.h>

#include "check.h"
#include "base/ratelimit.h"

static void test_bucket(void)
{
	struct ratelimit rl;
	struct error err = { 0 };
	uint64_t k;

	CHECK_INT(ratelimit_init(&rl, 3, 10, 0, 100, &err), 0);
	/* A burst of 3 distinct keys, then nothing until a token has refilled. */
	for (k = 1; k <= 3; k++)
		CHECK_INT(ratelimit_allow(&rl, k, 1000), 1);
	CHECK_INT(ratelimit_allow(&rl, 4, 1000), 0);
	CHECK_INT(ratelimit_allow(&rl, 4, 1009), 0);
	CHECK_INT(ratelimit_allow(&rl, 4, 1010), 1);
	CHECK_INT(ratelimit_allow(&rl, 5, 1010), 0);
	/* A long pause refills the burst, never more. */
	for (k = 10; k < 13; k++)
		CHECK_INT(ratelimit_allow(&rl, k, 100000), 1);
	CHECK_INT(ratelimit_allow(&rl, 13, 100000), 0);
	CHECK_INT(rl.denied_global, 4);
	CHECK_INT(rl.denied_key, 0);
	ratelimit_free(&rl);
}

static void test_per_key(void)
{
	struct ratelimit rl;
	struct error err = { 0 };
	uint64_t a = ratelimit_key("ns\0a", 4), b = ratelimit_key("ns\0b", 4);

	CHECK(a != b);
	CHECK_INT(ratelimit_init(&rl, 100, 1, 600, 100, &err), 0);
	CHECK_INT(ratelimit_allow(&rl, a, 0), 1);
	CHECK_INT(ratelimit_allow(&rl, a, 1), 0);
	CHECK_INT(ratelimit_allow(&rl, b, 1), 1);
	CHECK_INT(ratelimit_allow(&rl, a, 599), 0);
	CHECK_INT(ratelimit_allow(&rl, a, 600), 1);
	CHECK_INT(ratelimit_allow(&rl, a, 601), 0);
	/* A denial by key takes no token; one by the bucket sets no key time. */
	CHECK_INT(rl.denied_key, 3);
	/* The clock goes back: the key stays limited, the bucket stands still. */
	CHECK_INT(ratelimit_allow(&rl, a, 10), 0);
	CHECK_INT(ratelimit_allow(&rl, a, 1199), 0);
	CHECK_INT(ratelimit_allow(&rl, a, 1200), 1);
	ratelimit_free(&rl);
}

static void test_bucket_denial_keeps_key_free(void)
{
	struct ratelimit rl;
	struct error err = { 0 };

	CHECK_INT(ratelimit_init(&rl, 1, 100, 600, 10, &err), 0);
	CHECK_INT(ratelimit_allow(&rl, 1, 0), 1);
	CHECK_INT(ratelimit_allow(&rl, 2, 0), 0);   /* no token */
	CHECK_INT(ratelimit_allow(&rl, 2, 100), 1); /* a token: key 2 was never counted as sent */
	ratelimit_free(&rl);
}

static void test_full_table(void)
{
	struct ratelimit rl;
	struct error err = { 0 };
	uint64_t k;

	CHECK_INT(ratelimit_init(&rl, 1000000, 1, 100, 50, &err), 0);
	for (k = 1; k <= 50; k++)
		CHECK_INT(ratelimit_allow(&rl, k * 7919, (time_t)k), 1);
	/* Full of keys in their interval: a new key is denied, the old ones still limited. */
	CHECK_INT(ratelimit_allow(&rl, 999, 60), 0);
	CHECK_INT(ratelimit_allow(&rl, 1000, 61), 0);
	CHECK_INT(rl.denied_full, 2);
	CHECK_INT(ratelimit_allow(&rl, 7919, 61), 0);
	/* At 105 keys 1..5 have expired: room for five new keys, and the rest still remembered. */
	for (k = 1; k <= 5; k++)
		CHECK_INT(ratelimit_allow(&rl, 100000 + k, 105), 1);
	CHECK_INT(ratelimit_allow(&rl, 100006, 105), 0);
	for (k = 6; k <= 50; k++)
		CHECK_INT(ratelimit_allow(&rl, k * 7919, 105), 0);
	CHECK_INT(rl.used, 50);
	ratelimit_free(&rl);
}

static void test_bad_arguments(void)
{
	struct ratelimit rl;
	struct error err = { 0 };

	CHECK_INT(ratelimit_init(&rl, 0, 1, 1, 1, &err), -1);
	CHECK_INT(err.kind, ERROR_INPUT);
	ratelimit_free(&rl);
	CHECK_INT(ratelimit_init(&rl, 1, 1, 1, 0, &err), -1);
	ratelimit_free(&rl);
	ratelimit_free(NULL);
}

int main(void)
{
	RUN(test_bucket);
	RUN(test_per_key);
	RUN(test_bucket_denial_keeps_key_free);
	RUN(test_full_table);
	RUN(test_bad_arguments);
	return check_done("ratelimit");
}
