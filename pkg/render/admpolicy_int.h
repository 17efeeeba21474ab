/* admpolicy_int: what admpolicy.c and admpolicy_cel.c share (not part of the library's interface). */
#ifndef GPU_ADMISSION_ADMPOLICY_INT_H
#define GPU_ADMISSION_ADMPOLICY_INT_H

#include <stddef.h>

#include "base/strbuf.h"
#include "k8s/celcost.h"
#include "render/admpolicy.h"

#define CEL_GLOBS_MAX 256  /* exact names among one glob list: a policy list's bound (config_schema.c) */

#define CEL_EXPRESSION_MAX 100000  /* cel-go's parser refuses more than 100,000 code points */

/*
 * CEL text being written, and the worst-case cost of what was written. The
 * text is a strbuf bounded by what CEL parses (its NUL counted: fewer than
 * CEL_EXPRESSION_MAX bytes): past it the text fails STRBUF_TOOLONG, out of
 * memory STRBUF_NOMEM, and either sticks. Start from CEL_INIT.
 */
struct cel {
	struct strbuf sb;
	int uncharged;  /* text whose cost the writer charges itself */
	celcost_t cost;
	celcost_t mult;  /* iterations of the comprehensions around the text being written; 0: 1 */
};

#define CEL_INIT { STRBUF_INIT_MAX(CEL_EXPRESSION_MAX), 0, 0, 0 }

/* What the expressions test, read once from the policy. */
struct cel_view {
	const struct config *cfg;
	struct config_strings labels;   /* gpuNodeLabels and their aliases; borrowed strings */
	struct policy_pool_key *pool_keys;  /* policy_pool_keys(), none skipped */
	size_t n_pool_keys;
	char taint[160];                /* key=value:effect, as the webhook's messages say it */
};

void cel_put(struct cel *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cel_charge(struct cel *b, celcost_t units);
/* Enters a comprehension of at most n iterations; returns the multiplier to restore after it. */
celcost_t cel_loop(struct cel *b, size_t n);
void cel_lit(struct cel *b, const char *s);
/* `v in [l...]`. */
void cel_in(struct cel *b, const char *v, const struct config_strings *l);
/* (v matches one of globs): exact names by `in`, the others by an anchored regex. */
void cel_glob(struct cel *b, const char *v, const struct config_strings *globs);

void cel_node_gpu(struct cel *b, const struct cel_view *w, const char *v);
void cel_tolerates(struct cel *b, const struct cel_view *w, const char *t, int hard);
void cel_selects_gpu(struct cel *b, const struct cel_view *w, const char *k, const char *v);
void cel_required_terms(struct cel *b, const char *s);
void cel_route_toleration(struct cel *b, const struct cel_view *w, const char *s);
void cel_route_selector(struct cel *b, const struct cel_view *w, const char *s);
void cel_route_affinity(struct cel *b, const struct cel_view *w, const char *s);
void cel_route_node_name(struct cel *b, const struct cel_view *w, const char *s);
void cel_containers(struct cel *b, const char *s);
void cel_gpu(struct cel *b, const struct cel_view *w, const char *containers);
void cel_demand(struct cel *b, const struct cel_view *w, const char *s);

#endif
