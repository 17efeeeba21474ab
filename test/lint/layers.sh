#!/bin/sh
# The layering rule of pkg/ (pkg/README.md): a file includes headers of its own
# folder and of the layers below it, never of a layer above or beside it, and
# names every project header by its folder ("base/error.h"), so the rule can
# be read off each #include. cmd/ and test/ sit above everything.
#
# Usage: sh test/lint/layers.sh [ROOT]     (ROOT defaults to .)
# Prints "N passed, N failed". It checks itself first: a tree with a file
# that breaks the rule must be refused, or the check proves nothing.
set -u
ROOT=${1:-.}

# Bottom to top; folders on one line are siblings: neither may include the other.
# render (the generators) sits beside webhook and audit: it reads only the policy
# and what is below it, and neither the server nor the auditor needs what it writes.
LAYERS='base
text
k8s
policy
webhook audit render
report'

rank() {
	printf '%s\n' "$LAYERS" | awk -v d="$1" '{ for (i = 1; i <= NF; i++) if ($i == d) { print NR; exit } }'
}

# check DIR: prints one line per breach, nothing when the tree keeps the rule.
check() {
	for dir in "$1"/pkg/*/; do
		layer=$(basename "$dir")
		mine=$(rank "$layer")
		if [ -z "$mine" ]; then
			echo "pkg/$layer/: a folder that is not a layer (add it to test/lint/layers.sh and pkg/README.md)"
			continue
		fi
		for f in "$dir"*.[ch]; do
			[ -f "$f" ] || continue
			grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$f" | while IFS= read -r line; do
				inc=$(printf '%s\n' "$line" | sed 's/.*include[[:space:]]*"\([^"]*\)".*/\1/')
				where="pkg/$layer/$(basename "$f"):${line%%:*}"
				case $inc in
				*/*) ;;
				*) echo "$where: \"$inc\" without its folder"; continue ;;
				esac
				to=${inc%%/*}
				[ "$to" = "$layer" ] && continue
				theirs=$(rank "$to")
				if [ -z "$theirs" ]; then
					echo "$where: \"$inc\" is in no layer"
				elif [ "$theirs" -ge "$mine" ]; then
					echo "$where: $layer includes $inc, a layer above or beside it"
				fi
			done
		done
	done
}

pass=0 fail=0
tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# The check refuses a breach: base including policy.
mkdir -p "$tmp/pkg/base" "$tmp/pkg/policy"
printf '#include "policy/policy.h"\n' >"$tmp/pkg/base/a.c"
printf '#include "base/error.h"\n' >"$tmp/pkg/policy/b.c"
if [ "$(check "$tmp" | wc -l)" -eq 1 ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "layers: the check does not see base including policy"; fi

# ... and a sibling's include, either way (webhook and render), while render may include policy:
# the rank of a folder that is not first on its line must be read too.
rm -rf "$tmp/pkg"
mkdir -p "$tmp/pkg/webhook" "$tmp/pkg/render"
printf '#include "render/matchcond.h"\n' >"$tmp/pkg/webhook/a.c"
printf '#include "webhook/review.h"\n#include "policy/policy.h"\n' >"$tmp/pkg/render/b.c"
if [ "$(check "$tmp" | wc -l)" -eq 2 ]; then pass=$((pass + 1)); else
	fail=$((fail + 1)); echo "layers: the check does not see webhook and render including each other"; fi

out=$(check "$ROOT")
if [ -z "$out" ]; then pass=$((pass + 1)); else fail=$((fail + 1)); printf '%s\n' "$out"; fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
