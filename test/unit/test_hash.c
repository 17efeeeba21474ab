/*
 * hash: FNV-1a's published 64-bit vectors, and that hashing in pieces
 * continues as one hash over the whole does (the callers key tables by
 * several strings hashed one after another).
 */
#include <string.h>

#include "base/hash.h"
#include "check.h"

static void test_vectors(void)
{
	CHECK(hash_fnv1a(HASH_FNV1A_BASIS, "", 0) == 0xcbf29ce484222325ULL);
	CHECK(hash_fnv1a(HASH_FNV1A_BASIS, "a", 1) == 0xaf63dc4c8601ec8cULL);
	CHECK(hash_fnv1a(HASH_FNV1A_BASIS, "foobar", 6) == 0x85944171f73967e8ULL);
	CHECK(hash_fnv1a_str(HASH_FNV1A_BASIS, "foobar") == 0x85944171f73967e8ULL);
	/* Bytes are unsigned: the high bit hashes as itself. */
	CHECK(hash_fnv1a(HASH_FNV1A_BASIS, "\xff", 1) == ((HASH_FNV1A_BASIS ^ 0xffu) * 1099511628211ULL));
}

static void test_pieces(void)
{
	CHECK(hash_fnv1a_str(hash_fnv1a_str(HASH_FNV1A_BASIS, "foo"), "bar") ==
	      hash_fnv1a(HASH_FNV1A_BASIS, "foobar", 6));
	/* A separator keeps ("ab", "c") and ("a", "bc") apart. */
	CHECK(hash_fnv1a_str(hash_fnv1a(hash_fnv1a_str(HASH_FNV1A_BASIS, "ab"), "/", 1), "c") !=
	      hash_fnv1a_str(hash_fnv1a(hash_fnv1a_str(HASH_FNV1A_BASIS, "a"), "/", 1), "bc"));
}

int main(void)
{
	RUN(test_vectors);
	RUN(test_pieces);
	return check_done("test_hash");
}
