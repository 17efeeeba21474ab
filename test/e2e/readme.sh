#!/bin/sh
# README.md's command examples, run: every ```sh block, in a scratch directory
# holding what they name (test/readme/: deploy/, charts/rendered.yaml, logshipper.yaml; policy.yaml
# is README's own first policy example; bin/gpu-admission and test/ point at the
# build and the repository's test data; gpu-admission is on PATH). Blocks run in
# README order, so one may use what an earlier one wrote (certs/).
#
# - A plain command line (a trailing \ continues it) must exit 0 or 1: it ran, and
#   1 is a finding (audit's would-be rejection). Comment lines are skipped.
# - A "$ command" line shows output: the lines after it, up to the next "$", are
#   compared with what it prints (stdout and stderr) line by line; at a line with
#   "…" only what precedes the "…" is compared, and the comparison stops there.
# - An example that needs a cluster, serves until stopped or installs into the
#   system is marked by an HTML comment on the line just before its block:
#       <!-- not run by make test: needs a cluster -->
#   Everything after the colon is the reason, shown with VERBOSE=1.
# Also: every --option a README line gives to a gpu-admission COMMAND is one that
# `gpu-admission COMMAND --help` lists.
. test/e2e/check.lib

box=$tmp/box
mkdir -p "$box/bin"
cp -R test/readme/deploy test/readme/charts test/readme/logshipper.yaml "$box/"
ln -s "$B" "$box/bin/gpu-admission"
ln -s "$ROOT/test" "$box/test"
# policy.yaml: the README's first ```yaml block that is a policy file (not Helm values).
awk '/^```ya?ml$/ { on = 1; next } on && /^```$/ { exit } on' README.md >"$box/policy.yaml"
if "$B" check-config "$box/policy.yaml" >/dev/null 2>&1; then ok; else bad "README's first policy example"; fi

# The examples, as records: "B<TAB>line<TAB>reason" a block skipped; "C<TAB>line<TAB>command"
# a command; "O<TAB>-<TAB>text" a line of output shown for the command before it.
awk '
	function flush() { if (cmd != "") { printf "C\t%d\t%s\n", cmdline, cmd; cmd = "" } }
	/^[ \t]*<!-- not run by make test:/ { reason = $0; sub(/.*not run by make test: */, "", reason); sub(/ *-->.*/, "", reason); marked = NR; next }
	/^[ \t]*```sh[ \t]*$/ { inblock = 1; skip = (marked == NR - 1); if (skip) printf "B\t%d\t%s\n", NR, reason; dollar = 0; cont = 0; next }
	inblock && /^[ \t]*```[ \t]*$/ { flush(); inblock = 0; next }
	!inblock || skip { next }
	{
		line = $0; sub(/^[ \t]+/, "", line)
		if (cont) { sub(/\\$/, "", cmd); cmd = cmd " " line; cont = (line ~ /\\$/); next }
		if (line ~ /^\$ /) { flush(); dollar = 1; cmd = substr(line, 3); cmdline = NR; cont = (line ~ /\\$/); next }
		if (dollar) { flush(); printf "O\t-\t%s\n", $0; next }
		if (line == "" || line ~ /^#/) next
		flush(); cmd = line; cmdline = NR; cont = (line ~ /\\$/)
	}
	END { flush() }
' README.md >"$tmp/examples"
n_cmd=$(grep -c '^C' "$tmp/examples")
n_skip=$(grep -c '^B' "$tmp/examples")
if [ "$n_cmd" -ge 15 ]; then ok; else bad "only $n_cmd README commands found"; fi

# check_output LINE: compares the output shown for the command at README line LINE.
check_output() {
	if [ ! -s "$tmp/want" ]; then
		return
	fi
	i=0
	while IFS= read -r want; do
		i=$((i + 1))
		got=$(sed -n "${i}p" "$tmp/got")
		case $want in
		*…*)
			prefix=${want%%…*}
			case $got in "$prefix"*) ok ;; *) bad "README.md:$1: output line $i: got '$got', README shows '$want'" ;; esac
			return ;;
		esac
		if [ "$got" = "$want" ]; then ok; else bad "README.md:$1: output line $i: got '$got', README shows '$want'"; return; fi
	done <"$tmp/want"
}

run_pending() {
	[ -n "${pending_cmd:-}" ] || return 0
	(cd "$box" && PATH="$box/bin:$PATH" timeout 60 sh -c "$pending_cmd") >"$tmp/got" 2>&1 </dev/null
	rc=$?
	if [ "$pending_dollar" = 1 ]; then
		check_output "$pending_line"
		if [ $rc -le 2 ]; then ok; else bad "README.md:$pending_line: exit $rc: $pending_cmd"; head -5 "$tmp/got"; fi
	elif [ $rc -le 1 ]; then
		ok
	else
		bad "README.md:$pending_line: exit $rc: $pending_cmd"; head -5 "$tmp/got"
	fi
	[ "${VERBOSE:-}" = 1 ] && echo "ran README.md:$pending_line (exit $rc): $pending_cmd"
	pending_cmd=""
}

pending_cmd=""
: >"$tmp/want"
while IFS="	" read -r kind line text; do
	case $kind in
	B) [ "${VERBOSE:-}" = 1 ] && echo "not run: README.md:$line: $text" ;;
	C)
		run_pending
		: >"$tmp/want"
		pending_cmd=$text
		pending_line=$line
		# A command whose README line starts with "$ " shows output.
		if sed -n "${line}p" README.md | grep -q '^[ \t]*\$ '; then pending_dollar=1; else pending_dollar=0; fi
		;;
	O) printf '%s\n' "$text" >>"$tmp/want" ;;
	esac
done <"$tmp/examples"
run_pending

# Every --option given to a gpu-admission COMMAND in README exists for that command
# (but the ones README shows being refused: "unknown option --foo").
grep -o 'unknown option --[a-z-]*' README.md | sed 's/.* //' | sort -u >"$tmp/refused"
grep -o 'gpu-admission [a-z-][a-z-]*[^`|]*' README.md | while read -r _ cmd rest; do
	"$B" "$cmd" --help >"$tmp/help" 2>/dev/null || continue
	for o in $(printf '%s\n' "$rest" | grep -oE '(^| )--[a-z][a-z-]*' | sed 's/^ //' | grep -vxF -f "$tmp/refused"); do
		if grep -qE -- "(^|[ ,])$o( |$|=)" "$tmp/help"; then echo ok; else echo "bad gpu-admission $cmd $o: not in its --help"; fi
	done
done >"$tmp/opts"
pass=$((pass + $(grep -c '^ok' "$tmp/opts")))
if grep -q '^bad' "$tmp/opts"; then
	fail=$((fail + $(grep -c '^bad' "$tmp/opts")))
	grep '^bad' "$tmp/opts" | sed 's/^bad /FAIL: README: /'
fi

# The output check must fail on output README does not show (a test that cannot fail is no test).
before=$fail
echo right >"$tmp/got"
echo wrong >"$tmp/want"
check_output 0 >/dev/null
echo "right now" >"$tmp/got"
echo "right…" >"$tmp/want"
check_output 0 >/dev/null
if [ $fail -eq $((before + 1)) ]; then fail=$before; ok; else fail=$((before + 1)); echo "FAIL: the output check is blind"; fi

echo "readme: $pass passed, $fail failed ($n_cmd commands run, $n_skip blocks not run)"
[ "$fail" -eq 0 ]
