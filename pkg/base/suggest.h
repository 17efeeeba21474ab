/*
 * suggest: "did you mean" — the known word closest to a mistyped one, for
 * the command line (commands, options) and the policy file (field names).
 * Pure: no I/O, no allocation.
 */
#ifndef GPU_ADMISSION_SUGGEST_H
#define GPU_ADMISSION_SUGGEST_H

#include <stddef.h>

#define SUGGEST_LEN_MAX 64 /* longer words are not compared (the work is quadratic in it) */

/*
 * How far typed[0..len) is from name[0..name_len), as a suggestion: their
 * distance (edits, adjacent swaps included) when close enough to be a typo
 * (1 edit for words of up to 4 letters, 2 beyond), 1 when typed starts name
 * ("conf" for config), else SIZE_MAX. Smaller is closer.
 */
size_t suggest_closeness(const char *typed, size_t len, const char *name, size_t name_len);

/*
 * The word of list (words separated by ", ": "mode, pools, placement")
 * closest to typed, as suggest_closeness() judges: its start in list, its
 * length in *len; NULL when none is close. The first of equals wins.
 */
const char *suggest_from_list(const char *typed, const char *list, size_t *len);

#endif
