#!/bin/sh
# The reporting of test/check.lib itself: every suite's failures are found by the
# lines that start with "FAIL:" (test/cluster/run greps them into make test's output),
# so a failure's line must start a line whatever was shown before it. has and lacks
# show the file they read, and a file without a final newline (kubectl's jsonpath
# output, for one) once swallowed the next "FAIL:" into its last line: CI then printed
# one failure of two.
. test/check.lib

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

# report SCRIPT: what a suite prints, running SCRIPT after sourcing check.lib, in a
# shell of its own so that its counts do not mix with these.
report() {
	sh -c ". test/check.lib; $1; finish" >"$T/out" 2>&1
}

printf 'no newline at the end' >"$T/nonl"
report "has '$T/nonl' 'absent' first; bad second"
equals "$(grep -c '^FAIL:' "$T/out")" 2 "has on a file without a final newline: both failures start a line"
grep -q '^FAIL: second$' "$T/out" && ok || bad "the failure after has's file starts its own line"
equals "$(tail -n 1 "$T/out")" "0 passed, 2 failed" "the closing line counts both"

report "lacks '$T/nonl' 'newline' first; bad second"
grep -q '^FAIL: second$' "$T/out" && ok || bad "the failure after lacks's file starts its own line"

printf 'a\nb' | indent >"$T/ind"
equals "$(tail -c 1 "$T/ind" | od -An -c | tr -d ' ')" '\n' "indent ends its last line"
equals "$(sed -n 2p "$T/ind")" "    b" "indent: four spaces before each line"

# Every test shows a file with indent, so the rule above holds everywhere.
grep -rnE "sed 's/\^/ {4}/'" test/ --include='*.sh' --include='*.lib' --include=run >"$T/sed" || true
equals "$(wc -l <"$T/sed")" 0 "no test indents with sed (indent ends every line)"
[ -s "$T/sed" ] && indent "$T/sed"

# eventually: the waits of the e2e suites. A command that succeeds at once, or at its
# third try, ends the wait with 0; one that never does ends it with 1 when the time is
# up; what a shell function sets stays set (a wait that reads a value keeps it).
if eventually 5 true; then ok; else bad "eventually: a command that succeeds at once"; fi
tries=0
third() { tries=$((tries + 1)); [ "$tries" -ge 3 ]; }
if eventually 5 third; then ok; else bad "eventually: a command that succeeds at its third try"; fi
equals "$tries" 3 "eventually: stops trying once the command succeeded"
if eventually 1 false; then bad "eventually: a command that never succeeds ended the wait with 0"; else ok; fi
said=$(eventually 1 sh -c 'echo noise; echo more >&2; exit 1' 2>&1)
equals "$said" "" "eventually: the command's output is dropped"
finish
