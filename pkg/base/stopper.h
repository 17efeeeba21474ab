/*
 * stopper: a stop flag and the sleeps it cuts short. A background thread
 * (a watch cache's, the watch's report builder) waits between attempts with
 * stopper_nap(); stopper_stop() from another thread sets the flag and wakes
 * every nap at once, so a shutdown never waits out a backoff or an interval.
 * The flag itself is an atomic_int other code may poll (kube_client_new()
 * takes &s->stop to abort a transfer).
 */
#ifndef GPU_ADMISSION_STOPPER_H
#define GPU_ADMISSION_STOPPER_H

#include <pthread.h>
#include <stdatomic.h>

struct stopper {
	atomic_int stop;        /* set once, never cleared */
	pthread_mutex_t lock;   /* with wake: a stop is never missed between a check and a wait */
	pthread_cond_t wake;    /* on CLOCK_MONOTONIC: a clock step never stretches a nap */
};

/* Initialises s, not stopped. Pair with stopper_destroy(). */
void stopper_init(struct stopper *s);

/* Releases what stopper_init() made. s must have no nap in progress. */
void stopper_destroy(struct stopper *s);

/* Waits ms milliseconds, or until s is stopped, whichever comes first. */
void stopper_nap(struct stopper *s, unsigned ms);

/* Stops s: sets the flag and wakes every nap. Safe from any thread, more than once. */
void stopper_stop(struct stopper *s);

/* Whether s has been stopped. */
int stopper_stopped(struct stopper *s);

#endif
