#!/bin/sh
# Audit benchmark: times `gpu-admission audit` over N generated pod templates
# (default 10000; the target is under 2 s). Reports, never asserts: timing in
# a test would fail on a loaded CI machine without telling us anything.
#
#   sh test/bench/audit.sh [N]        (or: make bench-audit)
# Environment: BUILD (for build/test/gen_manifests), BIN (binary under test).
set -eu
BUILD=${BUILD:-build}
BIN=${BIN:-bin/gpu-admission}
N=${1:-10000}
gen="$BUILD/test/gen_manifests"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$gen" "$N" yaml >"$tmp/stream.yaml"
"$gen" "$N" json >"$tmp/list.json"

now() { date +%s%N; }

# best of three wall-clock runs of: audit ARGS >/dev/null
best() {
	b=""
	for _ in 1 2 3; do
		t0=$(now)
		"$BIN" audit "$@" >/dev/null 2>&1 || true
		t=$(( $(now) - t0 ))
		if [ -z "$b" ] || [ "$t" -lt "$b" ]; then b=$t; fi
	done
	echo "$b"
}

# report NANOSECONDS FILE LABEL
report() {
	printf 'audit %-28s %6d templates %6d KiB  %d.%03d s\n' "$3" "$N" \
		$(( $(wc -c <"$2") / 1024 )) $(($1 / 1000000000)) $(( ($1 / 1000000) % 1000 ))
}

report "$(best "$tmp/stream.yaml")" "$tmp/stream.yaml" "stream.yaml"
report "$(best -o json "$tmp/stream.yaml")" "$tmp/stream.yaml" "-o json stream.yaml"
report "$(best --fix "$tmp/stream.yaml")" "$tmp/stream.yaml" "--fix stream.yaml"
report "$(best "$tmp/list.json")" "$tmp/list.json" "list.json (kind: List)"

# 100,000 small documents (nine ConfigMaps for every Pod): time and peak RSS, which must not
# grow with the number of documents (issue 24: 340 bytes were kept per document).
awk 'BEGIN { for (i = 0; i < 100000; i++)
	if (i % 10 == 9) printf "---\napiVersion: v1\nkind: Pod\nmetadata: {name: p%d}\nspec:\n  containers: [{name: c, image: x}]\n", i
	else printf "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c%d}\ndata: {k: v}\n", i }' >"$tmp/small.yaml"
t0=$(now)
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f '%M' -o "$tmp/small.kb" "$BIN" audit "$tmp/small.yaml" >/dev/null 2>&1 || true
	kb=$(tail -n 1 "$tmp/small.kb")
else
	"$BIN" audit "$tmp/small.yaml" >/dev/null 2>&1 || true
	kb=0
fi
t=$(( $(now) - t0 ))
printf 'audit %-28s %6d documents %6d KiB  %d.%03d s  peak RSS %d KiB\n' "small.yaml (100,000 docs)" 100000 \
	$(( $(wc -c <"$tmp/small.yaml") / 1024 )) $((t / 1000000000)) $(( (t / 1000000) % 1000 )) "$kb"
