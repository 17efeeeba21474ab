#!/bin/sh
# gpu-admission report: golden cases, one directory each, no C needed to add one.
#
# test/report/cases/<name>/
#   args          the arguments after "report" (shell words; paths relative to the case dir;
#                 other cases' inputs may be named as ../<case>/<file>)
#   stdin         optional: fed to the command's stdin (default: /dev/null)
#   stdin.from    optional: a path (relative to the case dir) fed to stdin instead
#   expect.txt    the text report (stdout)
#   expect.json   the report of the same run with "-o json" (not for usage errors)
#   expect.prom   the same run with "-o prometheus"; checked with `promtool check metrics` too
#   expect.rc     the exit code (of all three runs)
#   expect.err    optional: stderr of the text run (usage errors)
#
# Then: the "Cost report" example of cmd/gpu-admission/README.md is the aks-snapshot case's output, byte
# for byte; colour only on a terminal; JSON from a pipe is read as a stream.
#
# The suite e2e/report: this driver, beside its cases. Shared helpers: test/check.lib.
# Run from the repository root (test/run does). BIN = binary, relative to it.
# UPDATE=1 rewrites the expect files from the current output: review the diff.
. test/e2e/check.lib
CASES=${CASES:-test/report/cases}

command -v promtool >/dev/null 2>&1 || { bad "promtool missing (sh .ci/deps test installs the prometheus package)"; }

for dir in "$CASES"/*/; do
	dir=${dir%/}
	name=$(basename "$dir")
	[ -f "$dir/args" ] || continue

	case_run "$dir" "$tmp/out" report
	compare "$name: text" "$dir/expect.txt" "$tmp/out"
	compare "$name: exit code" "$dir/expect.rc" "$tmp/out.rc"
	case_stderr "$name" "$dir" "$tmp/out.err"
	case $name in usage-*) continue ;; esac
	for fmt in json prometheus; do
		ext=$fmt; [ "$fmt" = prometheus ] && ext=prom
		case_run "$dir" "$tmp/$ext" report -o "$fmt"
		compare "$name: $fmt" "$dir/expect.$ext" "$tmp/$ext"
		if cmp -s "$tmp/out.rc" "$tmp/$ext.rc"; then ok; else bad "$name: $fmt exit code differs"; fi
	done
	if jq -e . "$tmp/json" >/dev/null 2>&1; then ok; else bad "$name: -o json is not one JSON document"; fi
	if [ "$(jq -r .summary.exitCode "$tmp/json")" = "$(cat "$tmp/out.rc")" ]; then ok; else bad "$name: summary.exitCode is not the exit code"; fi
	if promtool check metrics <"$tmp/prom" >"$tmp/lint" 2>&1; then ok; else bad "$name: promtool check metrics"; cat "$tmp/lint"; fi
done

# ---- on a terminal the text report fits its width; a pipe is the same whatever COLUMNS says ----
snap=$CASES/aks-snapshot
if command -v script >/dev/null 2>&1; then
	for w in 80 60; do
		script -qec "stty cols $w; $B report --no-color --config $snap/policy.yaml $snap/cluster.json" /dev/null |
			tr -d '\r' >"$tmp/tty$w"
		if grep -q '^POOL ' "$tmp/tty$w" && ! awk -v w=$w 'length($0) > w && NF > 1' "$tmp/tty$w" | grep -q .; then ok
		else bad "report on a $w-column terminal: a line wider"; awk -v w=$w 'length($0) > w' "$tmp/tty$w" | head -3; fi
	done
	if [ "$(grep -c '^POOL ' "$tmp/tty80")" = 2 ]; then ok; else bad "report on an 80-column terminal: the pools' table not in two"; fi
	script -qec "stty cols 200; $B report --no-color --config $snap/policy.yaml $snap/cluster.json" /dev/null |
		tr -d '\r' >"$tmp/tty200"
	if grep -q '^POOL .*UNREQ \$/H  DS PODS' "$tmp/tty200"; then ok; else bad "report on a wide terminal: the table not whole"; fi
fi
COLUMNS=60 "$B" report --config "$snap/policy.yaml" "$snap/cluster.json" >"$tmp/pipe60" 2>/dev/null
if cmp -s "$tmp/pipe60" "$snap/expect.txt"; then ok; else bad "report on a pipe: changed by COLUMNS"; fi

# ---- the command guide's example is the aks-snapshot case's text report ---------
# The block after the marker line, between its ``` fences, minus the command line.
awk '/^<!-- report-example: test\/report\/cases\/aks-snapshot -->$/ { m = 1; next }
	m == 1 && /^```/ { m = 2; next }
	m == 2 && /^```$/ { exit }
	m == 2 && !/^\$ / { print }' cmd/gpu-admission/README.md >"$tmp/readme"
if [ ! -s "$tmp/readme" ]; then
	bad "cmd/gpu-admission/README.md: no report example after <!-- report-example: test/report/cases/aks-snapshot -->"
elif cmp -s "$tmp/readme" "$CASES/aks-snapshot/expect.txt"; then
	ok
else
	bad "cmd/gpu-admission/README.md: the Cost report example differs from $CASES/aks-snapshot/expect.txt (paste it in)"
	diff -u "$CASES/aks-snapshot/expect.txt" "$tmp/readme" | head -20
fi

# ---- JSON arrives through a pipe, in pieces: the same report as from the file ----
snap=$CASES/aks-snapshot
(cd "$snap" && "$B" report -o json --config policy.yaml cluster.json >"$tmp/file.json" 2>&1)
(cd "$snap" && while IFS= read -r line; do printf '%s\n' "$line"; done <cluster.json |
	"$B" report -o json --config policy.yaml - >"$tmp/pipe.json" 2>&1)
if cmp -s "$tmp/file.json" "$tmp/pipe.json"; then ok; else bad "pipe: report differs from the file's"; diff "$tmp/file.json" "$tmp/pipe.json" | head; fi

# ---- nodes and pods in two files, in either order: the same pools and findings -----
two=$CASES/aks-two-files-pods-first
(cd "$two" && "$B" report -o json --config policy.yaml nodes.json pods.json | jq -S 'del(.summary.line)' >"$tmp/nf.json")
(cd "$two" && "$B" report -o json --config policy.yaml pods.json nodes.json | jq -S 'del(.summary.line)' >"$tmp/pf.json")
if [ -s "$tmp/nf.json" ] && cmp -s "$tmp/nf.json" "$tmp/pf.json"; then ok; else bad "order: nodes first and pods first differ"; diff "$tmp/nf.json" "$tmp/pf.json" | head -20; fi

# ---- colour only on a terminal, never with --no-color / NO_COLOR -------------------
esc=$(printf '\033')
if command -v script >/dev/null 2>&1; then
	script -qec "$B report --config $snap/policy.yaml $snap/cluster.json" /dev/null >"$tmp/tty" 2>&1
	if grep -q "${esc}\[1;31mwould reject${esc}\[0m" "$tmp/tty"; then ok; else bad "tty: no colour"; head -5 "$tmp/tty" | cat -v; fi
	script -qec "$B report --no-color --config $snap/policy.yaml $snap/cluster.json" /dev/null >"$tmp/tty" 2>&1
	if grep -q "$esc" "$tmp/tty"; then bad "tty: colour despite --no-color"; else ok; fi
	script -qec "env NO_COLOR=1 $B report --config $snap/policy.yaml $snap/cluster.json" /dev/null >"$tmp/tty" 2>&1
	if grep -q "$esc" "$tmp/tty"; then bad "tty: colour despite NO_COLOR"; else ok; fi
fi
if grep -q "$esc" "$snap/expect.txt"; then bad "pipe: colour when not a terminal"; else ok; fi

# ---- YAML input: memory does not grow with the number of documents (issue 24) ----------
# 1.5 million empty documents after one Node: each document's place was kept for the whole
# input (about 340 bytes each, 516 MB here). RSS means nothing under ASan, which keeps its own.
if ldd "$B" 2>/dev/null | grep -q libasan || [ ! -x /usr/bin/time ]; then
	echo "skip: report memory over 1.5 million documents (ASan build, or no GNU time)"
else
	printf 'apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n' >"$tmp/many.yaml"
	yes -- --- | head -c 6000000 >>"$tmp/many.yaml"
	/usr/bin/time -f '%M' -o "$tmp/many.kb" "$B" report "$tmp/many.yaml" >"$tmp/many.out" 2>"$tmp/many.err"
	rc=$?
	kb=$(tail -n 1 "$tmp/many.kb")
	echo "    report of 1.5 million empty YAML documents: peak RSS $kb kB"
	if [ $rc -eq 0 ] && [ ! -s "$tmp/many.err" ]; then ok; else bad "1.5 million documents: rc $rc"; head -3 "$tmp/many.err"; fi
	if [ "$kb" -le $((64 * 1024)) ]; then ok; else bad "1.5 million documents: peak RSS $kb kB, over 64 MiB"; fi
fi

# ---- check-config warns when priced pools are not cheapest per GPU first -----------
sed -n '/^pools:/,$p' "$snap/policy.yaml" >"$tmp/pools.yaml"
{ echo "pools:"; sed -n '/- name: h100/,$p' "$tmp/pools.yaml"; sed -n '/- name: t4-spot/,/- name: h100/p' "$tmp/pools.yaml" | sed '$d'; } >"$tmp/misordered.yaml"
"$B" check-config "$tmp/misordered.yaml" >"$tmp/cc.out" 2>"$tmp/cc.err"
rc=$?
if [ $rc -eq 0 ] && grep -qx 'configuration OK' "$tmp/cc.out" &&
	grep -q 'warning: pools\[1\] ("t4-spot", 0.158 per GPU-hour) is cheaper per GPU than pools\[0\] ("h100"' "$tmp/cc.err"; then ok
else bad "check-config: no warning for pools out of price order (rc $rc)"; cat "$tmp/cc.out" "$tmp/cc.err"; fi
"$B" check-config "$snap/policy.yaml" >"$tmp/cc.out" 2>"$tmp/cc.err"
if [ $? -eq 0 ] && ! grep -q ': warning: ' "$tmp/cc.err"; then ok; else bad "check-config: warned about pools in order"; cat "$tmp/cc.err"; fi

echo "report: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
