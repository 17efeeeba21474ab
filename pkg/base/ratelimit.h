/*
 * ratelimit: how often something may happen, per key and overall. Pure:
 * the time is passed in (seconds), nothing is read from a clock, so tests
 * drive it with any sequence of times.
 *
 * Overall, a token bucket: burst tokens at first, one more every refill_s
 * seconds, up to burst. Per key (a 64-bit hash of what is limited, e.g. a
 * pod and a reason): at most one allowed per key_interval_s seconds. Keys
 * live in a fixed table of keys_max entries (allocated once); an entry
 * whose interval has passed is free again. When the table is full of keys
 * still in their interval, a new key is denied (counted): memory never grows
 * with what is limited. Two keys whose hashes collide share a limit.
 */
#ifndef GPU_ADMISSION_RATELIMIT_H
#define GPU_ADMISSION_RATELIMIT_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"

struct ratelimit_entry {
	uint64_t key;          /* 0: empty (a key of 0 is taken as 1) */
	time_t at;             /* when it was last allowed */
};

struct ratelimit {
	unsigned burst, refill_s;
	unsigned key_interval_s;
	double tokens;
	time_t refilled;       /* when tokens were last counted */
	int started;
	struct ratelimit_entry *keys;  /* owned: cap entries, a power of two >= 2 keys_max */
	struct ratelimit_entry *spare; /* owned: cap entries, where a sweep rebuilds the table */
	size_t cap, keys_max, used;
	time_t swept, next_sweep;      /* the last sweep; when the next can free a key */
	unsigned long denied_global, denied_key, denied_full;
};

/*
 * Prepares rl (caller storage): burst (>= 1) tokens, one more every
 * refill_s (>= 1) seconds; one per key per key_interval_s seconds, at most
 * keys_max (>= 1) keys remembered. 0, or -1 with ERROR_NOMEM or ERROR_INPUT
 * (a zero). ratelimit_free() is safe either way.
 */
int ratelimit_init(struct ratelimit *rl, unsigned burst, unsigned refill_s, unsigned key_interval_s,
		   size_t keys_max, struct error *err);

/*
 * Whether key may happen at now: 1 (and it is counted: a token taken, the
 * key's time set), or 0 (nothing taken; the reason counted in denied_*).
 * A clock that goes back is taken as standing still.
 */
int ratelimit_allow(struct ratelimit *rl, uint64_t key, time_t now);

/* A key for a string of len bytes (FNV-1a): ratelimit_key("ns\0pod\0reason", n). */
uint64_t ratelimit_key(const void *s, size_t len);

void ratelimit_free(struct ratelimit *rl);

#endif
