/*
 * ratelimit: a token bucket overall and a fixed open-addressing table of
 * keys' last times (ratelimit.h). Linear probing without tombstones: an
 * entry is never removed alone; when the table holds keys_max entries, a
 * sweep rebuilds it (into a spare table of the same size, allocated once)
 * with the keys still in their interval, so a lookup stays short. A full
 * table sweeps again only once one of its kept keys can have expired: a
 * stream of new keys against a full table costs O(1) each, not a sweep each.
 */
#include "base/ratelimit.h"

#include "base/hash.h"

#include <stdlib.h>
#include <string.h>

uint64_t ratelimit_key(const void *s, size_t len)
{
	uint64_t h = hash_fnv1a(HASH_FNV1A_BASIS, s, len);

	return h ? h : 1;
}

int ratelimit_init(struct ratelimit *rl, unsigned burst, unsigned refill_s, unsigned key_interval_s,
		   size_t keys_max, struct error *err)
{
	size_t cap = 2;

	memset(rl, 0, sizeof *rl);
	if (burst == 0 || refill_s == 0 || keys_max == 0 || keys_max > SIZE_MAX / 4 / sizeof *rl->keys) {
		error_set(err, ERROR_INPUT, "rate limit: burst, refill and keys must be at least 1");
		return -1;
	}
	while (cap < keys_max * 2)
		cap *= 2;
	if ((rl->keys = calloc(cap, sizeof *rl->keys)) == NULL || (rl->spare = calloc(cap, sizeof *rl->keys)) == NULL) {
		free(rl->keys);
		rl->keys = NULL;
		error_set(err, ERROR_NOMEM, "out of memory");
		return -1;
	}
	rl->cap = cap;
	rl->keys_max = keys_max;
	rl->burst = burst;
	rl->refill_s = refill_s;
	rl->key_interval_s = key_interval_s;
	rl->tokens = burst;
	return 0;
}

void ratelimit_free(struct ratelimit *rl)
{
	if (rl == NULL)
		return;
	free(rl->keys);
	free(rl->spare);
	memset(rl, 0, sizeof *rl);
}

/* A time from the future (the clock went back) has not expired. */
static int expired(const struct ratelimit *rl, const struct ratelimit_entry *e, time_t now)
{
	return now >= e->at && now - e->at >= (time_t)rl->key_interval_s;
}

/* The slot of key: its entry, or the empty slot that ends its probe. */
static struct ratelimit_entry *slot(struct ratelimit_entry *keys, size_t cap, uint64_t key)
{
	size_t i = (size_t)key & (cap - 1);

	while (keys[i].key != 0 && keys[i].key != key)
		i = (i + 1) & (cap - 1);
	return &keys[i];
}

/* Rebuilds the table with the keys still in their interval, through the spare table (no allocation). */
static void sweep(struct ratelimit *rl, time_t now)
{
	struct ratelimit_entry *t = rl->spare;
	size_t i;

	memset(t, 0, rl->cap * sizeof *t);
	rl->used = 0;
	rl->next_sweep = now + (time_t)rl->key_interval_s;
	for (i = 0; i < rl->cap; i++)
		if (rl->keys[i].key != 0 && !expired(rl, &rl->keys[i], now)) {
			time_t free_at = rl->keys[i].at + (time_t)rl->key_interval_s;

			*slot(t, rl->cap, rl->keys[i].key) = rl->keys[i];
			rl->used++;
			if (free_at < rl->next_sweep && free_at > now)
				rl->next_sweep = free_at;
		}
	rl->spare = rl->keys;
	rl->keys = t;
}

static void refill(struct ratelimit *rl, time_t now)
{
	if (!rl->started || now < rl->refilled) {
		rl->started = 1;
		rl->refilled = now;
		return;
	}
	rl->tokens += (double)(now - rl->refilled) / rl->refill_s;
	if (rl->tokens > rl->burst)
		rl->tokens = rl->burst;
	rl->refilled = now;
}

int ratelimit_allow(struct ratelimit *rl, uint64_t key, time_t now)
{
	struct ratelimit_entry *e;

	if (key == 0)
		key = 1;
	refill(rl, now);
	e = slot(rl->keys, rl->cap, key);
	if (e->key == key && !expired(rl, e, now)) {
		rl->denied_key++;
		return 0;
	}
	if (rl->tokens < 1) {
		rl->denied_global++;
		return 0;
	}
	if (e->key == 0 && rl->used >= rl->keys_max) {
		/* Until the first kept key expires, a sweep would free nothing. */
		if (now >= rl->next_sweep || now < rl->swept) {
			sweep(rl, now);
			rl->swept = now;
			e = slot(rl->keys, rl->cap, key);
		}
		if (rl->used >= rl->keys_max) {
			rl->denied_full++;
			return 0;
		}
	}
	if (e->key == 0)
		rl->used++;
	e->key = key;
	e->at = now;
	rl->tokens -= 1;
	return 1;
}
