#include "base/stopper.h"

#include <time.h>

void stopper_init(struct stopper *s)
{
	pthread_condattr_t ca;

	atomic_init(&s->stop, 0);
	pthread_mutex_init(&s->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&s->wake, &ca);
	pthread_condattr_destroy(&ca);
}

void stopper_destroy(struct stopper *s)
{
	pthread_mutex_destroy(&s->lock);
	pthread_cond_destroy(&s->wake);
}

void stopper_nap(struct stopper *s, unsigned ms)
{
	struct timespec until;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (long)(ms % 1000) * 1000000L;
	if (until.tv_nsec >= 1000000000L) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000L;
	}
	pthread_mutex_lock(&s->lock);
	/* 0: woken (a stop, or spuriously: look again); ETIMEDOUT: the nap is over. */
	while (!atomic_load(&s->stop) && pthread_cond_timedwait(&s->wake, &s->lock, &until) == 0)
		;
	pthread_mutex_unlock(&s->lock);
}

void stopper_stop(struct stopper *s)
{
	pthread_mutex_lock(&s->lock);
	atomic_store(&s->stop, 1);
	pthread_cond_broadcast(&s->wake);
	pthread_mutex_unlock(&s->lock);
}

int stopper_stopped(struct stopper *s)
{
	return atomic_load(&s->stop);
}
