#!/bin/sh
# Runs each fuzz target given for FUZZ_SECONDS (default 60) on its seeds.
# Crashes are kept in build/fuzz/crashes/<target>/; copy each into
# test/fuzz/regressions/<target>/ with the fix, so it is replayed forever.
set -u
secs=${FUZZ_SECONDS:-60}
status=0
for bin in "$@"; do
	t=$(basename "$bin")
	work=build/fuzz/corpus/$t
	crashes=build/fuzz/crashes/$t
	mkdir -p "$work" "$crashes"
	sh test/fuzz/seeds.sh "$t" build/fuzz/seeds/"$t"
	# The JSON readers get a token dictionary: without it they rarely build a valid review.
	dict=""
	case $t in fuzz_review|fuzz_differential) dict=-dict=test/fuzz/json.dict ;; esac
	echo "== $t: ${secs}s"
	if ! "$bin" $dict -max_total_time="$secs" -timeout=10 -rss_limit_mb=1024 -max_len=200000 \
		-artifact_prefix="$crashes/" -print_final_stats=1 "$work" build/fuzz/seeds/"$t" \
		>build/fuzz/"$t".log 2>&1; then
		echo "$t: FAILED (see build/fuzz/$t.log, inputs in $crashes)"
		tail -n 30 build/fuzz/"$t".log
		status=1
	else
		grep -E "stat::number_of_executed_units|cov:" build/fuzz/"$t".log | tail -n 2
	fi
done
exit $status
