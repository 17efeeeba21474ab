#!/bin/sh
# Smoke run of every libFuzzer target (a few seconds each): keeps them
# building and running in CI, replays every regression input, and catches
# shallow crashes. The long run is `make fuzz`.
set -u
BUILD_FUZZ=build/fuzz
pass=0
fail=0
for bin in "$BUILD_FUZZ"/fuzz_*; do
	[ -x "$bin" ] || continue
	t=$(basename "$bin")
	seeds=$BUILD_FUZZ/seeds/$t
	rm -rf "$seeds"
	sh test/fuzz/seeds.sh "$t" "$seeds"
	out=$BUILD_FUZZ/$t.smoke.log
	if "$bin" -max_total_time="${FUZZ_SMOKE_SECONDS:-4}" -timeout=10 -rss_limit_mb=1024 \
		-max_len=200000 -artifact_prefix="$BUILD_FUZZ/smoke-" "$seeds" >"$out" 2>&1; then
		pass=$((pass + 1))
	else
		fail=$((fail + 1))
		echo "FAIL $t"
		tail -n 40 "$out"
	fi
done
if [ $((pass + fail)) -eq 0 ]; then
	echo "no fuzz targets built"
	fail=1
fi
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
