#!/bin/sh
# Audit benchmark: times `gpu-admission audit` over N generated pod templates
# (default 10000; the target is under 2 s). Reports, never asserts: timing in
# a test would fail on a loaded CI machine without telling us anything.
#
#   sh test/audit/bench.sh [N]        (or: make bench-audit)
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
