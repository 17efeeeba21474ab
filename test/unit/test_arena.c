/* arena: jansson's per-request allocator and the budget it charges. */
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "base/arena.h"
#include "check.h"

enum { BIG = 512 * 1024 };  /* past a thread's first chunk (64 KiB) */

/*
 * Once the arena has refused an allocation for the budget, it refuses every
 * one until the request ends, even one its chunks still have room for:
 * jansson's lexer carries on after failing to save a byte of a token, and a
 * later allocation that succeeds is then written past its end (lex_save() and
 * lex_scan_string() in jansson's src/load.c). The request is answered 503
 * whatever happens after the first refusal.
 */
static void test_refusal_sticks(void)
{
	struct arena_budget b;
	char *text = malloc(BIG);
	json_t *small, *big, *after;
	size_t charged;

	CHECK(text != NULL);
	if (text == NULL)
		return;
	memset(text, 'a', BIG);
	arena_budget_init(&b, 128 * 1024);
	arena_install();
	CHECK(arena_begin(&b) == 0);
	small = json_string("from the thread's first chunk");
	big = json_stringn(text, BIG);
	after = json_string("x");
	CHECK(small != NULL);
	CHECK(big == NULL);
	CHECK(after == NULL);
	charged = arena_end();
	CHECK(charged & ARENA_REFUSED);
	CHECK_INT(atomic_load(&b.used), 0);
	/* The next request starts afresh. */
	CHECK(arena_begin(&b) == 0);
	after = json_string("x");
	CHECK(after != NULL);
	CHECK(!(arena_end() & ARENA_REFUSED));
	arena_uninstall();
	free(text);
}

/*
 * What a request allocates past its first chunk is charged to the budget
 * while it runs and given back when it ends; values made before the arena
 * opened are not the arena's, and are freed normally inside it.
 */
static void test_charged_while_open(void)
{
	struct arena_budget b;
	char *text = malloc(BIG);
	json_t *before, *big;
	size_t charged;

	CHECK(text != NULL);
	if (text == NULL)
		return;
	memset(text, 'b', BIG);
	arena_budget_init(&b, 64u << 20);
	arena_install();
	before = json_string("made on malloc");
	CHECK(before != NULL);
	CHECK(arena_begin(&b) == 0);
	CHECK(!arena_owns(before));
	big = json_stringn(text, BIG);
	CHECK(big != NULL);
	CHECK(arena_owns(big));
	CHECK(atomic_load(&b.used) >= BIG);
	json_decref(big);    /* free inside the arena: nothing until it ends */
	json_decref(before); /* not the arena's: freed with free() */
	charged = arena_end();
	CHECK(!(charged & ARENA_REFUSED));
	CHECK(charged >= BIG);
	CHECK_INT(atomic_load(&b.used), 0);
	CHECK_INT(arena_end(), 0);  /* none open */
	/* The budget itself: all or nothing, never past the limit. */
	arena_budget_init(&b, 100);
	CHECK(arena_budget_take(&b, 60) == 0);
	CHECK(arena_budget_take(&b, 41) != 0);
	CHECK(arena_budget_take(&b, 40) == 0);
	CHECK_INT(atomic_load(&b.used), 100);
	arena_budget_give(&b, 100);
	CHECK(arena_budget_take(&b, (size_t)-1) != 0);
	CHECK_INT(atomic_load(&b.used), 0);
	arena_uninstall();
	free(text);
}

int main(void)
{
	RUN(test_refusal_sticks);
	RUN(test_charged_while_open);
	return check_done("arena");
}
