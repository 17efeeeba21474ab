#!/bin/sh
# The test layout (test/README.md): a suite with cases keeps them as directories,
# test/<suite>/cases/<case>/, with its driver beside them, test/<suite>/<suite>.sh,
# whose header (the comment lines at its top) writes the case format down, naming
# test/<suite>/cases/. test/run runs each such driver as e2e/<suite>; a driver
# missing would leave its cases unrun, silently. (golden keeps its cases one level
# up, test/golden/<case>/, driven by test/tools/golden.c: test/README.md says why.)
. test/check.lib

# layout ROOT: "ok" or "bad WHY" for every rule, under ROOT/test.
layout() {
	for c in "$1"/test/*/cases; do
		[ -d "$c" ] || continue
		s=$(basename "$(dirname "$c")")
		d=$1/test/$s/$s.sh
		if [ ! -f "$d" ]; then echo "bad test/$s/cases: no driver test/$s/$s.sh beside it"; continue; fi
		echo ok
		if awk 'NR > 1 && !/^#/ { exit } index($0, "test/" s "/cases/") { found = 1 } END { exit !found }' s="$s" "$d"; then echo ok
		else echo "bad test/$s/$s.sh: the case format is not at its top (a header comment naming test/$s/cases/)"; fi
		for k in "$c"/*; do
			if [ -d "$k" ]; then echo ok; else echo "bad test/$s/cases/$(basename "$k"): a case is a directory"; fi
		done
	done
}

layout . >"${TMPDIR:-/tmp}/layout.$$"
pass=$((pass + $(grep -c '^ok' "${TMPDIR:-/tmp}/layout.$$")))
fail=$((fail + $(grep -c '^bad' "${TMPDIR:-/tmp}/layout.$$")))
grep '^bad' "${TMPDIR:-/tmp}/layout.$$" | sed 's/^bad /FAIL: /'
rm -f "${TMPDIR:-/tmp}/layout.$$"

# ... and the check can fail: a suite without a driver, a driver without the format, a file as a case.
fake=$(mktemp -d)
mkdir -p "$fake/test/a/cases/one" "$fake/test/b/cases"
printf '#!/bin/sh\n# no format here\n' >"$fake/test/b/b.sh"
: >"$fake/test/b/cases/loose.yaml"
if [ "$(layout "$fake" | grep -c '^bad')" -eq 3 ]; then ok; else bad "the layout check is blind"; fi
rm -rf "$fake"

echo "layout: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
