/*
 * stopper: a stop wakes a nap in progress (a thread napping an hour is joined
 * once stopped: were the wake lost, the test would never end), and every nap
 * after the stop returns at once. No timing is asserted.
 */
#include <pthread.h>

#include "check.h"
#include "base/stopper.h"

#define HOUR_MS 3600000u

static void *nap_hour(void *arg)
{
	struct stopper *s = arg;

	stopper_nap(s, HOUR_MS);
	return s;
}

static void test_stop_wakes_nap(void)
{
	struct stopper s;
	pthread_t t;
	void *ret = NULL;

	stopper_init(&s);
	CHECK_INT(stopper_stopped(&s), 0);
	stopper_nap(&s, 1);  /* a short nap ends by itself */
	CHECK_INT(stopper_stopped(&s), 0);
	CHECK_INT(pthread_create(&t, NULL, nap_hour, &s), 0);
	stopper_stop(&s);
	CHECK_INT(pthread_join(t, &ret), 0);
	CHECK(ret == &s);
	CHECK_INT(stopper_stopped(&s), 1);
	stopper_nap(&s, HOUR_MS);  /* stopped: returns at once */
	stopper_stop(&s);          /* twice is harmless */
	CHECK_INT(atomic_load(&s.stop), 1);
	stopper_destroy(&s);
}

int main(void)
{
	RUN(test_stop_wakes_nap);
	return check_done("stopper");
}
