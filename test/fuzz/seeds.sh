#!/bin/sh
# Assembles the seed corpus of one fuzz target into DIR from what the repo
# already has: golden requests, policy files, manifests, quantities.
# usage: seeds.sh TARGET DIR
set -eu
target=$1; dir=$2
mkdir -p "$dir"
n=0
add() { n=$((n + 1)); cp "$1" "$dir/seed-$n"; }
case $target in
fuzz_review|fuzz_differential)
	for f in test/golden/*/request.json test/bench/*.json; do add "$f"; done ;;
fuzz_config)
	for f in test/golden/*/config.yaml; do add "$f"; done
	bin/gpu-admission print-default-config >"$dir/seed-default" 2>/dev/null || true ;;
fuzz_manifest)
	for f in test/audit/corpus/* test/audit/cases/*/*.yaml test/audit/cases/*/*.json; do
		[ -f "$f" ] && add "$f"
	done ;;
fuzz_report)
	for f in test/report/cases/*/*.json test/report/cases/*/stdin; do
		[ -f "$f" ] && add "$f"
	done ;;
fuzz_quantity)
	for q in 1 0 500m 1.5 2Ki 1e3 1E -1 +8 0.0001Ki 99999999999999999999 1k 10e-1; do
		n=$((n + 1)); printf '%s' "$q" >"$dir/seed-$n"
	done ;;
fuzz_pointer)
	for k in kubernetes.azure.com/accelerator 'a~b/c' '~1' '' 'x/y~0z'; do
		n=$((n + 1)); printf '%s' "$k" >"$dir/seed-$n"
	done ;;
esac
# Every crash ever found stays a regression input.
if [ -d "test/fuzz/regressions/$target" ]; then
	cp test/fuzz/regressions/"$target"/* "$dir"/ 2>/dev/null || true
fi
