#!/bin/sh
# The command examples of README.md and the pages it links ($DOCS, test/e2e/docs.lib),
# run: every ```sh block of every page, in page order, in one scratch directory
# holding what they name (test/readme/: deploy/, charts/rendered.yaml, logshipper.yaml; policy.yaml
# is README's own first policy example; bin/gpu-admission and test/ point at the
# build and the repository's test data; gpu-admission is on PATH). Blocks run in
# page order, so one may use what an earlier one wrote (certs/).
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
# Also: every --option a page gives to a gpu-admission COMMAND is one that
# `gpu-admission COMMAND --help` lists; every relative link of the pages (and of
# $DOCS_LINKED) names a file that exists and, after a #, one of its headings, and
# every path they cite in backquotes is in the repository; and README.md links every page.
. test/e2e/check.lib
. test/e2e/docs.lib

box=$tmp/box
mkdir -p "$box/bin"
cp -R test/readme/deploy test/readme/charts test/readme/logshipper.yaml "$box/"
ln -s "$B" "$box/bin/gpu-admission"
# helm, for the chart README's helm template example, and the chart it renders.
if TOOLBIN=$(sh .ci/helm 2>/dev/null); then ln -s "$TOOLBIN/helm" "$box/bin/helm"; else bad "helm (.ci/helm)"; fi
ln -s "$ROOT/charts/gpu-admission" "$box/charts/gpu-admission"
ln -s "$ROOT/test" "$box/test"
# policy.yaml: the README's first ```yaml block that is a policy file (not Helm values).
awk '/^```ya?ml$/ { on = 1; next } on && /^```$/ { exit } on' README.md >"$box/policy.yaml"
if "$B" check-config "$box/policy.yaml" >/dev/null 2>&1; then ok; else bad "README's first policy example"; fi

# The examples, as records: "B<TAB>page:line<TAB>reason" a block skipped; "C<TAB>page:line<TAB>command"
# a command, "D<TAB>..." one shown with its output ("$ command"); "O<TAB>-<TAB>text" a line of
# output shown for the command before it.
awk '
	function flush() { if (cmd != "") { printf "%s\t%s:%d\t%s\n", (dollar ? "D" : "C"), FILENAME, cmdline, cmd; cmd = "" } }
	FNR == 1 { flush(); inblock = 0; marked = 0 }
	/^[ \t]*<!-- not run by make test:/ { reason = $0; sub(/.*not run by make test: */, "", reason); sub(/ *-->.*/, "", reason); marked = FNR; next }
	/^[ \t]*```sh[ \t]*$/ { inblock = 1; skip = (marked == FNR - 1); if (skip) printf "B\t%s:%d\t%s\n", FILENAME, FNR, reason; dollar = 0; cont = 0; next }
	inblock && /^[ \t]*```[ \t]*$/ { flush(); inblock = 0; next }
	!inblock || skip { next }
	{
		line = $0; sub(/^[ \t]+/, "", line)
		if (cont) { sub(/\\$/, "", cmd); cmd = cmd " " line; cont = (line ~ /\\$/); next }
		if (line ~ /^\$ /) { flush(); dollar = 1; cmd = substr(line, 3); cmdline = FNR; cont = (line ~ /\\$/); next }
		if (dollar) { flush(); printf "O\t-\t%s\n", $0; next }
		if (line == "" || line ~ /^#/) next
		flush(); cmd = line; cmdline = FNR; cont = (line ~ /\\$/)
	}
	END { flush() }
' $DOCS >"$tmp/examples"
n_cmd=$(grep -c '^[CD]' "$tmp/examples")
n_skip=$(grep -c '^B' "$tmp/examples")
if [ "$n_cmd" -ge 15 ]; then ok; else bad "only $n_cmd commands found in the pages"; fi

# check_output PAGE:LINE: compares the output shown for the command at that line.
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
			case $got in "$prefix"*) ok ;; *) bad "$1: output line $i: got '$got', the page shows '$want'" ;; esac
			return ;;
		esac
		if [ "$got" = "$want" ]; then ok; else bad "$1: output line $i: got '$got', the page shows '$want'"; return; fi
	done <"$tmp/want"
}

run_pending() {
	[ -n "${pending_cmd:-}" ] || return 0
	(cd "$box" && PATH="$box/bin:$PATH" timeout 60 sh -c "$pending_cmd") >"$tmp/got" 2>&1 </dev/null
	rc=$?
	if [ "$pending_dollar" = 1 ]; then
		check_output "$pending_line"
		if [ $rc -le 2 ]; then ok; else bad "$pending_line: exit $rc: $pending_cmd"; head -5 "$tmp/got"; fi
	elif [ $rc -le 1 ]; then
		ok
	else
		bad "$pending_line: exit $rc: $pending_cmd"; head -5 "$tmp/got"
	fi
	[ "${VERBOSE:-}" = 1 ] && echo "ran $pending_line (exit $rc): $pending_cmd"
	pending_cmd=""
}

pending_cmd=""
: >"$tmp/want"
while IFS="	" read -r kind line text; do
	case $kind in
	B) [ "${VERBOSE:-}" = 1 ] && echo "not run: $line: $text" ;;
	C | D)
		run_pending
		: >"$tmp/want"
		pending_cmd=$text
		pending_line=$line
		# A "$ command" line shows output.
		if [ "$kind" = D ]; then pending_dollar=1; else pending_dollar=0; fi
		;;
	O) printf '%s\n' "$text" >>"$tmp/want" ;;
	esac
done <"$tmp/examples"
run_pending

# Every --option given to a gpu-admission COMMAND in a page exists for that command
# (but the ones a page shows being refused: "unknown option --foo").
cat $DOCS | grep -o 'unknown option --[a-z-]*' | sed 's/.* //' | sort -u >"$tmp/refused"
cat $DOCS | grep -o 'gpu-admission [a-z-][a-z-]*[^`|]*' | while read -r _ cmd rest; do
	"$B" "$cmd" --help >"$tmp/help" 2>/dev/null || continue
	for o in $(printf '%s\n' "$rest" | grep -oE '(^| )--[a-z][a-z-]*' | sed 's/^ //' | grep -vxF -f "$tmp/refused"); do
		if grep -qE -- "(^|[ ,])$o( |$|=)" "$tmp/help"; then echo ok; else echo "bad gpu-admission $cmd $o: not in its --help"; fi
	done
done >"$tmp/opts"
pass=$((pass + $(grep -c '^ok' "$tmp/opts")))
if grep -q '^bad' "$tmp/opts"; then
	fail=$((fail + $(grep -c '^bad' "$tmp/opts")))
	grep '^bad' "$tmp/opts" | sed 's/^bad /FAIL: docs: /'
fi

# ==== Links: every relative link of the pages names a file, and a #heading in it ====
# anchors FILE: the GitHub anchors of FILE's headings (lower case, punctuation but - and _
# dropped, spaces to -), one a line.
anchors() {
	sed -n 's/^#\{1,6\} //p' "$1" | tr 'A-Z' 'a-z' | sed 's/[^a-z0-9 _-]//g; s/ /-/g'
}
# links FILE: "FILE<TAB>target" for each [text](target) that is no URL.
links() {
	grep -o '\]([^)[:space:]]*)' "$1" | sed 's/^](//; s/)$//' | grep -v '^[a-z][a-z]*:' |
		sed "s|^|$1	|"
}
check_links() {
	for page in "$@"; do links "$page"; done | while IFS="	" read -r page target; do
		file=${target%%#*}
		dir=$(dirname "$page")
		if [ -z "$file" ]; then path=$page; else path=$dir/$file; fi
		if [ ! -e "$path" ]; then echo "bad $page: link ($target): no $path"; continue; fi
		case $target in
		*#*) if anchors "$path" | grep -qxF -- "${target#*#}"; then echo ok; else echo "bad $page: link ($target): no such heading in $path"; fi ;;
		*) echo ok ;;
		esac
	done
}
# tally FILE: the "ok" and "bad WHY" lines of a check into the counts, each bad one said.
tally() {
	pass=$((pass + $(grep -c '^ok' "$1")))
	if grep -q '^bad' "$1"; then
		fail=$((fail + $(grep -c '^bad' "$1")))
		grep '^bad' "$1" | sed 's/^bad /FAIL: /'
	fi
}
check_links $DOCS $DOCS_LINKED >"$tmp/links"
tally "$tmp/links"
# README.md links every page, so that no fact a page holds is out of a reader's reach.
for page in $DOCS $DOCS_LINKED; do
	[ "$page" = README.md ] && continue
	if links README.md | cut -f2 | sed 's/#.*//' | grep -qxF "$page"; then ok; else bad "README.md does not link $page"; fi
done
# A path the pages cite in backquotes, under a top-level directory of this repository (or
# shared/, the corpus beside it, which a reader of the repository does not have), names
# something in it: a file, a directory, or a program built from NAME.c. pkg/ is left out:
# the pages also cite Kubernetes' own pkg/ sources; a placeholder in capitals is skipped.
cited() {
	grep -oHE '`(test|cmd|charts|manifests|shared)/[A-Za-z0-9_./-]*`' "$@" | tr -d '`' | sort -u |
		while IFS=: read -r page path; do
			case $path in *[A-Z][A-Z]*) continue ;; esac
			if [ -e "$path" ] || [ -e "$path.c" ]; then echo ok; else echo "bad $page cites $path, which is not in the repository"; fi
		done
}
cited $DOCS $DOCS_LINKED >"$tmp/cited"
tally "$tmp/cited"
printf 'see `shared/corpus` and `test/README.md`\n' >"$tmp/cited.md"
if [ "$(cited "$tmp/cited.md" | grep -c '^bad')" -eq 1 ]; then ok; else bad "the cited-path check is blind"; fi
# ... and the link check can fail: a link to a missing heading, and one to a missing file.
printf '# Title\n[a](#title) [b](#nowhere) [c](no-such-file.md)\n' >"$tmp/links.md"
if [ "$(check_links "$tmp/links.md" | grep -c '^bad')" -eq 2 ]; then ok; else bad "the link check is blind"; fi

# The output check must fail on output a page does not show (a test that cannot fail is no test).
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
