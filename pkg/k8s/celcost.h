/*
 * celcost: cel-go's runtime cost model (interpreter/runtimecost.go) as the
 * API server charges it against a CEL expression's PerCallLimit, in
 * upper bounds, for the two writers of CEL (policy/matchcond.c's match
 * conditions, policy/admpolicy_cel.c's admission policies): one model, so
 * the two cannot count the same expression differently. Pure.
 *
 * Units as PerCallLimit counts them: each identifier and field selection
 * costs 1 (SelectAndIdentCost), an operator or a function on fixed-size
 * values 1, a list literal 10 (ListCreateBaseCost), a string comparison a
 * tenth of the string's length (StringTraversalCostFactor), and a macro
 * (exists) its set-up and, per element, its loop step plus its body.
 */
#ifndef GPU_ADMISSION_CELCOST_H
#define GPU_ADMISSION_CELCOST_H

#include <stddef.h>

/* A cost; sums and products saturate at ULLONG_MAX (over any budget: refused, never wrapped). */
typedef unsigned long long celcost_t;

#define CELCOST_SELECT 1ULL        /* an identifier or a field selection */
#define CELCOST_CALL 1ULL          /* an operator or a function on fixed-size values */
#define CELCOST_LIST_LITERAL 10ULL /* ListCreateBaseCost */
#define CELCOST_ITERATION 5ULL     /* exists' step: @not_strictly_false(!acc) and acc || body: 3 calls, 2 idents */
#define CELCOST_FOLD 3ULL          /* exists' accumulator init, result, the range's own ident */

/* a + b, ULLONG_MAX when it would pass it. */
celcost_t celcost_add(celcost_t a, celcost_t b);

/* a * b, ULLONG_MAX when it would pass it. */
celcost_t celcost_mul(celcost_t a, celcost_t b);

/*
 * A string of len bytes traversed (==, startsWith, endsWith): a tenth of
 * it, rounded up (StringTraversalCostFactor 0.1); an empty one costs a call.
 */
celcost_t celcost_string(size_t len);

#endif
