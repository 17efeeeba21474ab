/*
 * hash: FNV-1a over 64 bits, the one hash of this program's in-memory tables
 * and keys (rate-limit keys, the report model's node and pod index, the
 * refusal Events' repeat table, a published report's body). Pure. Fast and
 * well spread on short keys, but not keyed: keys an attacker may choose in
 * numbers to collide are hashed with a keyed hash instead (scan_keys.c's
 * SipHash for a document's object keys).
 */
#ifndef GPU_ADMISSION_HASH_H
#define GPU_ADMISSION_HASH_H

#include <stddef.h>
#include <stdint.h>

/* FNV-1a's 64-bit offset basis: the h to start a hash from. */
#define HASH_FNV1A_BASIS 14695981039346656037ULL

/* h continued over the len bytes at p (len 0: h). Hashing in pieces equals hashing the whole. */
uint64_t hash_fnv1a(uint64_t h, const void *p, size_t len);

/* h continued over the bytes of the NUL-terminated s, its NUL not included. */
uint64_t hash_fnv1a_str(uint64_t h, const char *s);

#endif
