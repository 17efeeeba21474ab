#!/bin/sh
# realloc() is called in pkg/base/ only (issue 41): every growing buffer is a
# strbuf (base/strbuf.h) and every growing array goes through base/array.h
# (array_grow, or array_cap and array_resize where a bound or a budget comes
# first), so that the doubling, its limit and the overflow checks are
# written once. A realloc( anywhere else in pkg/ or cmd/ is a hand-written
# growth loop coming back. A call is realloc, its parenthesis and a comma
# before the line ends (realloc(p, n)): a comment naming realloc passes.
#
# Usage: sh test/lint/realloc.sh [ROOT]     (ROOT defaults to .)
# Prints "N passed, N failed". It checks itself first: a tree with a call
# outside pkg/base/ must be refused, one with a call inside accepted.
set -u
ROOT=${1:-.}

# check DIR: prints one line per call outside pkg/base/, nothing when there is none.
check() {
	(cd "$1" && grep -n 'realloc[[:space:]]*([^)]*,' $(ls pkg/*/*.[ch] cmd/*/*.[ch] 2>/dev/null) /dev/null) |
		grep -v '^pkg/base/' | sed 's/$/  (realloc outside pkg\/base\/: use strbuf or base\/array.h)/'
}

pass=0 fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The check refuses a call in pkg/policy/ and one in cmd/, and accepts pkg/base/'s.
mkdir -p "$tmp/pkg/base" "$tmp/pkg/policy" "$tmp/cmd/tool"
printf 'void *f(void *p) { return realloc(p, 8); }\n' >"$tmp/pkg/base/a.c"
printf '/* the arena has no realloc (its frees cost nothing) */\n' >"$tmp/pkg/policy/d.c"
printf 'void *g(void *p) { return realloc (p, 8); }\n' >"$tmp/pkg/policy/b.c"
printf 'void *h(void *p) { return realloc(p, 8); }\n' >"$tmp/cmd/tool/c.c"
out=$(check "$tmp")
if [ "$(printf '%s\n' "$out" | grep -c .)" -eq 2 ] && printf '%s\n' "$out" | grep -q '^pkg/policy/b.c:1:' &&
   printf '%s\n' "$out" | grep -q '^cmd/tool/c.c:1:'; then
	pass=$((pass + 1))
else
	fail=$((fail + 1)); echo "realloc: the check does not refuse realloc outside pkg/base/ alone: $out"
fi

out=$(check "$ROOT")
if [ -z "$out" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); printf '%s\n' "$out"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
