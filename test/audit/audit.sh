#!/bin/sh
# gpu-admission audit: golden cases, one directory each, no C needed to add one.
#
# test/audit/cases/<name>/
#   args          the arguments after "audit" (shell words; paths relative to the case dir)
#   stdin         optional: fed to the command's stdin (default: /dev/null)
#   stdin.from    optional: a path (relative to the case dir) fed to stdin instead
#   expect.txt    the text report (stdout)
#   expect.json   optional: the report of the same run with "-o json"
#   expect.rc     the exit code (of both runs)
#   expect.err    stderr of the text run (input errors, notes); absent: stderr is empty
#   expect.fixed  optional: stdout of the same run with "--fix"
#   nofix         optional (empty file): skip the --fix round trip
#   policy.yaml   by convention the case's --config; the re-audit of --fix output uses it too
#
# For every case without nofix the --fix output is audited again and must
# report no mutation; when the case has one input and no mutation, the --fix
# output must be that input byte for byte.
#
# The suite e2e/audit: this driver, beside its cases. Shared helpers: test/check.lib.
# Run from the repository root (test/run does). BIN = binary, relative to it.
# UPDATE=1 rewrites the expect files from the current output: review the diff.
. test/e2e/check.lib
CASES=${CASES:-test/audit/cases}

for dir in "$CASES"/*/; do
	dir=${dir%/}
	name=$(basename "$dir")
	[ -f "$dir/args" ] || continue
	args=$(cat "$dir/args")

	case_run "$dir" "$tmp/out" audit
	compare "$name: text" "$dir/expect.txt" "$tmp/out"
	compare "$name: exit code" "$dir/expect.rc" "$tmp/out.rc"
	case_stderr "$name" "$dir" "$tmp/out.err"
	if [ -f "$dir/expect.json" ]; then
		case_run "$dir" "$tmp/json" audit -o json
		compare "$name: json" "$dir/expect.json" "$tmp/json"
		if cmp -s "$tmp/out.rc" "$tmp/json.rc"; then ok; else bad "$name: json exit code differs"; fi
	fi

	[ -f "$dir/nofix" ] && continue
	case_run "$dir" "$tmp/fixed" audit --fix
	if [ -f "$dir/expect.fixed" ] || { [ "${UPDATE:-}" = 1 ] && grep -q ' [1-9][0-9]* mutate' "$tmp/out"; }; then
		compare "$name: --fix output" "$dir/expect.fixed" "$tmp/fixed"
	fi
	cfg=""
	[ -f "$dir/policy.yaml" ] && cfg="--config $dir/policy.yaml"
	"$B" audit $cfg -o json - <"$tmp/fixed" >"$tmp/again" 2>&1
	if grep -q '"mutate": 0,' "$tmp/again"; then
		ok
	else
		bad "$name: --fix output re-audited still mutates"; grep -A3 '"summary"' "$tmp/again"
	fi
	# The exit code of --fix is what its output still holds: the code of auditing it again
	# (input errors aside, which the output does not carry).
	if [ "$(cat "$tmp/out.rc")" != 2 ]; then
		"$B" audit $cfg - <"$tmp/fixed" >/dev/null 2>&1
		again_rc=$?
		if [ "$(cat "$tmp/fixed.rc")" = "$again_rc" ]; then
			ok
		else
			bad "$name: audit --fix exits $(cat "$tmp/fixed.rc"), its output re-audited $again_rc"
		fi
	fi
	# What --fix removes (a CPU-only template's routes to GPU nodes) is gone too.
	"$B" audit $cfg -o json - <"$tmp/fixed" >"$tmp/again.json" 2>/dev/null
	if jq -e '[.findings[] | select(.verdict == "reject" and (.reason | startswith("cpu-pod-gpu-")))] | length == 0' \
		"$tmp/again.json" >/dev/null 2>&1; then
		ok
	else
		bad "$name: --fix output re-audited is still rejected for a route to GPU nodes"
	fi
	# One input and nothing to mutate: --fix must give it back unchanged.
	set -- $args
	single=""
	if [ $# -eq 1 ] && [ "$1" = - ]; then single="$dir/stdin"
	elif [ $# -eq 1 ] && [ -f "$dir/$1" ]; then single="$dir/$1"
	fi
	# (A case with expect.fixed has its --fix output compared above: a rejection's fix changes it.)
	if [ -n "$single" ] && [ ! -f "$dir/expect.fixed" ] && grep -q ' 0 mutate' "$tmp/out"; then
		if cmp -s "$single" "$tmp/fixed"; then ok; else bad "$name: --fix changed an input with nothing to fix"; fi
	fi
done

# --in-place: only files with mutations are rewritten, mode kept; the rest untouched.
mkdir -p "$tmp/tree/sub" "$tmp/tree/.hidden"
cp test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$tmp/tree/gpu.yaml"
cp test/audit/corpus/feiskyer__kubernetes-handbook__examples__nginx-ha__nginx-deploy.yaml "$tmp/tree/sub/cpu.yml"
cp test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$tmp/tree/.hidden/skipped.yaml"
cp test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$tmp/tree/notes.txt"
chmod 640 "$tmp/tree/gpu.yaml"
cp -p "$tmp/tree/sub/cpu.yml" "$tmp/cpu.orig"
"$B" audit --fix --in-place "$tmp/tree" >"$tmp/ip.out" 2>"$tmp/ip.err"
rc=$?
if [ $rc -eq 0 ] && grep -q '2 pod templates in 2 documents, 2 files' "$tmp/ip.out"; then ok; else bad "in-place: rc $rc"; cat "$tmp/ip.out"; fi
# It ends with what it rewrote; what it skipped is said on stderr.
if [ "$(tail -n 1 "$tmp/ip.out")" = "rewrote 1 file: $tmp/tree/gpu.yaml" ]; then ok; else bad "in-place: no 'rewrote' line"; cat "$tmp/ip.out"; fi
if grep -q "note: $tmp/tree/.hidden: skipped (a dot-file)" "$tmp/ip.err" &&
   grep -q "note: $tmp/tree/notes.txt: skipped (not \*.yaml, \*.yml or \*.json)" "$tmp/ip.err"; then ok
else bad "in-place: skipped files not reported"; cat "$tmp/ip.err"; fi
if grep -q 'key: sku' "$tmp/tree/gpu.yaml" && [ "$(stat -c %a "$tmp/tree/gpu.yaml")" = 640 ]; then ok
else bad "in-place: gpu.yaml not fixed or mode lost"; fi
if cmp -s "$tmp/cpu.orig" "$tmp/tree/sub/cpu.yml"; then ok; else bad "in-place: cpu.yml changed"; fi
if cmp -s test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$tmp/tree/.hidden/skipped.yaml" &&
   cmp -s test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$tmp/tree/notes.txt"; then ok
else bad "in-place: touched a dot-directory or a non-manifest file"; fi
"$B" audit "$tmp/tree" >"$tmp/ip2.out" 2>&1
if grep -q ' 0 mutate' "$tmp/ip2.out"; then ok; else bad "in-place: re-audit still mutates"; cat "$tmp/ip2.out"; fi
if [ -z "$(find "$tmp/tree" -name '*.tmp-*')" ]; then ok; else bad "in-place: left a temporary file"; fi

"$B" audit --fix --in-place "$tmp/tree" >"$tmp/ip3.out" 2>&1
if grep -qx "rewrote 0 files" "$tmp/ip3.out"; then ok; else bad "in-place again: not 'rewrote 0 files'"; cat "$tmp/ip3.out"; fi

# --fix says when a document was re-emitted from its value (its comments lost).
flow=test/audit/cases/fix-flow-and-json
"$B" audit --fix "$flow/flow.yaml" "$flow/list.json" >/dev/null 2>"$tmp/flow.err"
if grep -q "note: $flow/flow.yaml:[0-9]*: --fix re-emitted this document from its value, as what it extends is in flow style" "$tmp/flow.err" &&
   grep -q "note: $flow/list.json:[0-9]*: --fix rewrote this JSON document indented" "$tmp/flow.err"; then ok
else bad "--fix: re-emitted documents not said"; cat "$tmp/flow.err"; fi
printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  # a comment\n  containers:\n  - &c\n    name: c\n    image: x\n    resources: {limits: {nvidia.com/gpu: 1}}\n  initContainers: [*c]\n' >"$tmp/alias.yaml"
"$B" audit --fix "$tmp/alias.yaml" >/dev/null 2>"$tmp/alias.err"
if grep -q "note: $tmp/alias.yaml:1: --fix re-emitted this document from its value, as it uses anchors and aliases: comments inside it were lost" "$tmp/alias.err"; then ok
else bad "--fix: aliases re-emission not said"; cat "$tmp/alias.err"; fi

# An empty directory, an unreadable file, a symlinked directory: never silent.
mkdir -p "$tmp/empty" "$tmp/odd/real"
ln -s /nonexistent/pod.yaml "$tmp/odd/broken.yaml"
ln -s "$tmp/odd/real" "$tmp/odd/linked"
cp test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$tmp/odd/real/pod.yaml"
"$B" audit "$tmp/empty" >"$tmp/empty.out" 2>"$tmp/empty.err"; rc=$?
if [ $rc -eq 2 ] && grep -qx "gpu-admission audit: note: $tmp/empty: an empty directory" "$tmp/empty.err" &&
   grep -qx "gpu-admission audit: no pod template found in any input (a Pod, or an object with a pod template: Deployment, Job, CronJob, ...)" "$tmp/empty.err"; then ok
else bad "empty directory: rc $rc"; cat "$tmp/empty.err"; fi
"$B" audit "$tmp/odd" >"$tmp/odd.out" 2>"$tmp/odd.err"; rc=$?
if [ $rc -eq 2 ] && grep -qx "gpu-admission audit: $tmp/odd/broken.yaml: cannot open: No such file or directory" "$tmp/odd.err" &&
   grep -qx "gpu-admission audit: note: $tmp/odd/linked: skipped (a symbolic link to a directory)" "$tmp/odd.err" &&
   grep -q "1 pod template in 1 document, 1 file:" "$tmp/odd.out"; then ok
else bad "unreadable file and symlinked directory: rc $rc"; cat "$tmp/odd.out" "$tmp/odd.err"; fi
# Findings on stdout, errors on stderr: never one in the other.
if grep -q "cannot open" "$tmp/odd.out" || grep -q "mutate" "$tmp/odd.err"; then bad "stdout and stderr mixed"; else ok; fi

# The text report's columns: the verdict at column 1, the object from column 9, file:line in one
# column after it (all of test/readme/deploy's objects are narrower than the cap), the reason and
# warnings on lines indented by 8; at 100 columns every line fits but a word longer than a line.
"$B" audit test/readme/deploy >"$tmp/cols" 2>/dev/null
awk '
	/^[a-z]+ +[A-Za-z]+\// { n++; if (match($0, /  [^ ]+:[0-9]+$/) == 0) { print "no file:line: " $0; bad = 1 }
		if (col && RSTART != col) { print "file:line moved: " $0; bad = 1 } col = RSTART
		if (substr($0, 9, 1) == " " || substr($0, 8, 1) != " ") { print "object not at column 9: " $0; bad = 1 } next }
	/^        [^ ]/ || /^          [^ ]/ { reasons++; next }
	/pod templates? in/ || /^[0-9]+ ok, / { next }
	{ print "unexpected line: " $0; bad = 1 }
	length($0) > 100 { print "wider than 100: " $0; bad = 1 }
	END { if (n < 2 || reasons < n) { print n " findings, " reasons " reason lines"; bad = 1 } exit bad }' "$tmp/cols"
if [ $? -eq 0 ]; then ok; else bad "text report: columns"; cat "$tmp/cols"; fi
if awk 'length($0) > 100' "$tmp/cols" | grep -q .; then bad "text report: wider than 100 columns"; else ok; fi
# A file is named as the user would type it, the directory given and below (DIR/app.yaml, never
# app.yaml alone, which names another file); with -o wide, one line per finding.
if grep -q '  test/readme/deploy/app.yaml:[0-9]*$' "$tmp/cols" && ! grep -q '  app.yaml:' "$tmp/cols"; then ok
else bad "text report: file not named from the working directory"; cat "$tmp/cols"; fi
"$B" audit -o wide test/readme/deploy >"$tmp/wide" 2>/dev/null
if grep -q '^test/readme/deploy/app.yaml:[0-9]*  Deployment [a-z-]*/[a-z-]*  \[spec.template\]  mutate  +toleration .* (pool gpu)$' "$tmp/wide" &&
   [ "$(grep -c '^test/readme/deploy/' "$tmp/wide")" -eq "$(grep -c '^[a-z]' "$tmp/cols")" ]; then ok
else bad "-o wide: not one whole line per finding"; cat "$tmp/wide"; fi
# On a terminal narrower than 100 columns (or with COLUMNS), the reasons wrap to its width; a
# pipe stays at 100 whatever COLUMNS says, so that what scripts read never changes.
if command -v script >/dev/null 2>&1; then
	script -qec "stty cols 80; $B audit --no-color test/audit/corpus 2>/dev/null" /dev/null | tr -d '\r' >"$tmp/tty80"
	script -qec "stty cols 200; COLUMNS=72 $B audit --no-color test/audit/corpus 2>/dev/null" /dev/null | tr -d '\r' >"$tmp/tty72"
	COLUMNS=60 "$B" audit test/audit/corpus >"$tmp/pipe60" 2>/dev/null
	for w in 80 72; do
		if grep -q '^        [^ ]' "$tmp/tty$w" && ! grep '^ ' "$tmp/tty$w" | awk -v w=$w 'length($0) > w && NF > 1' | grep -q .; then ok
		else bad "text report on a $w-column terminal: a reason line wider"; grep '^ ' "$tmp/tty$w" | awk -v w=$w 'length($0) > w' | head -3; fi
	done
	if grep '^ ' "$tmp/pipe60" | awk 'length($0) > 80' | grep -q .; then ok; else bad "text report on a pipe: wrapped to COLUMNS"; fi
fi
# The real corpus: every reason and warning line within 100 columns, whatever the file names.
"$B" audit test/audit/corpus >"$tmp/corpus.txt" 2>/dev/null
if grep '^ ' "$tmp/corpus.txt" | awk 'length($0) > 100 && NF > 1' | grep -q .; then
	bad "text report: a reason line wider than 100 columns"; grep '^ ' "$tmp/corpus.txt" | awk 'length($0) > 100'
else ok; fi

# Messages a newcomer meets (issue 27): a tab says "tab"; a top-level array's item is [0], not [[0]];
# a file --in-place cannot rewrite is named once.
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n\tname: x\n' >"$tmp/tab.yaml"
"$B" audit "$tmp/tab.yaml" >/dev/null 2>"$tmp/tab.err"
if grep -qx "gpu-admission audit: $tmp/tab.yaml:4: unreadable document: a tab character: YAML indents with spaces only" "$tmp/tab.err"; then ok
else bad "a YAML tab: not said"; cat "$tmp/tab.err"; fi
printf '[{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x"}]}}]\n' |
	"$B" audit -o wide - >"$tmp/arr.out" 2>&1
if grep -q '^<stdin>:1  Pod default/p  \[0\]  ok  no-gpu$' "$tmp/arr.out"; then ok; else bad "a top-level array item's path"; cat "$tmp/arr.out"; fi
mkdir -p "$tmp/long"
long="$tmp/long/$(printf 'a%.0s' $(seq 1 248)).yaml"   # no room for the temporary file's suffix, even for root
cp test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$long"
"$B" audit --fix --in-place "$tmp/long" >/dev/null 2>"$tmp/long.err"; rc=$?
if [ $rc -eq 2 ] && [ "$(grep -o "$(basename "$long")" "$tmp/long.err" | wc -l)" -eq 1 ] &&
   grep -q ": cannot create a file next to it: " "$tmp/long.err"; then ok
else bad "--in-place that cannot write: rc $rc, the file not named once"; cat "$tmp/long.err"; fi

# A Helm chart (or its templates/) is one error saying to render it, not one per template file;
# a quoted "{{ .Values.gpus }}" is an unrendered template (an input error), not a policy rejection.
for d in charts/gpu-admission charts/gpu-admission/templates/; do
	"$B" audit "$d" >/dev/null 2>"$tmp/chart.err"; rc=$?
	if [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/chart.err")" -eq 1 ] &&
	   grep -qx "gpu-admission audit: $d: a Helm chart's templates are manifests only once rendered; run: helm template charts/gpu-admission | gpu-admission audit -" "$tmp/chart.err"; then ok
	else bad "audit $d: rc $rc, not one error with the helm template hint"; head -3 "$tmp/chart.err"; fi
done
printf 'apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\nspec:\n  containers:\n  - name: c\n    image: x\n    resources:\n      limits:\n        nvidia.com/gpu: "{{ .Values.gpus }}"\n' >"$tmp/quoted.yaml"
"$B" audit "$tmp/quoted.yaml" >"$tmp/quoted.out" 2>"$tmp/quoted.err"; rc=$?
if [ $rc -eq 2 ] && grep -q ' 0 reject' "$tmp/quoted.out" &&
   grep -qx "gpu-admission audit: $tmp/quoted.yaml:1: Pod default/p \[.\]: an unrendered template (\"{{ .Values.gpus }}\"): render the chart first: helm template CHART | gpu-admission audit -" "$tmp/quoted.err"; then ok
else bad "a quoted {{ .Values.gpus }}: rc $rc, not an unrendered template"; cat "$tmp/quoted.out" "$tmp/quoted.err"; fi

# --fix says what it cannot keep: a UTF-16 file becomes UTF-8; live Pods (kubectl get) are not
# where a fix helps.
mkdir -p "$tmp/u16"
iconv -f UTF-8 -t UTF-16 test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml >"$tmp/u16/pod.yaml"
"$B" audit --fix --in-place "$tmp/u16/pod.yaml" >/dev/null 2>"$tmp/u16.err"; rc=$?
if [ $rc -eq 0 ] && grep -q "note: $tmp/u16/pod.yaml:1: --fix wrote this UTF-16 file as UTF-8" "$tmp/u16.err" &&
   [ "$(head -c 10 "$tmp/u16/pod.yaml")" = "apiVersion" ]; then ok
else bad "--fix --in-place of a UTF-16 file: no note"; cat "$tmp/u16.err"; fi
"$B" audit --fix - <test/audit/cases/kubectl-pods-grouped/stdin >/dev/null 2>"$tmp/live.err"
if grep -q "note: <stdin>:1: --fix changed 3 live Pods (kubectl get output, or owned by a controller): applying this will not place them" "$tmp/live.err"; then ok
else bad "--fix over live Pods: no note"; cat "$tmp/live.err"; fi
"$B" audit --fix test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml >/dev/null 2>"$tmp/notlive.err"
if grep -q "live Pod" "$tmp/notlive.err"; then bad "--fix of a Pod manifest called live"; cat "$tmp/notlive.err"; else ok; fi

# -o yaml is the JSON report, as YAML.
corpus1=test/audit/cases/kubectl-pods-grouped/stdin
"$B" audit -o json - <"$corpus1" >"$tmp/r.json" 2>/dev/null
"$B" audit -o yaml - <"$corpus1" >"$tmp/r.yaml" 2>/dev/null; rc=$?
if [ $rc -eq 1 ] && head -n 1 "$tmp/r.yaml" | grep -qx "findings:"; then ok; else bad "-o yaml: rc $rc"; head -3 "$tmp/r.yaml"; fi
if TOOLBIN=$(sh .ci/helm 2>/dev/null); then
	if TOOLS=${TOOLBIN%/bin} node -e '
		const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs"), assert = require("assert");
		assert.deepStrictEqual(Y.parse(fs.readFileSync(process.argv[1], "utf8")),
				       JSON.parse(fs.readFileSync(process.argv[2], "utf8")));' "$tmp/r.yaml" "$tmp/r.json"; then ok
	else bad "-o yaml does not read back as the -o json report"; fi
else
	bad "-o yaml: no YAML parser (.ci/helm)"
fi
if jq -e '.summary.grouped == 4 and ([.findings[] | select(.groupedUnder != null)] | length) == 4 and .findings[0].groupedUnder == 6' "$tmp/r.json" >/dev/null; then ok
else bad "-o json: grouping fields"; jq .summary "$tmp/r.json"; fi

# Memory does not grow with the number of documents (issue 24): 6 MB of empty "---" documents
# (1.5 million) and one pod after them took 516 MB when every document's place was kept for the
# whole file. The bound is generous (a few MB are the input and the policy) and far from that;
# RSS means nothing under valgrind or ASan, which keep their own books.
if ldd "$B" 2>/dev/null | grep -q libasan || [ ! -x /usr/bin/time ]; then
	echo "skip: audit memory over 1.5 million documents (ASan build, or no GNU time)"
else
	yes -- --- | head -c 6000000 >"$tmp/many.yaml"
	printf 'apiVersion: v1\nkind: Pod\nmetadata: {name: last}\nspec:\n  containers: [{name: c, image: x}]\n' >>"$tmp/many.yaml"
	/usr/bin/time -f '%M' -o "$tmp/many.kb" "$B" audit "$tmp/many.yaml" >"$tmp/many.out" 2>"$tmp/many.err"
	rc=$?
	kb=$(tail -n 1 "$tmp/many.kb")
	echo "    audit of 1.5 million empty documents: peak RSS $kb kB"
	if [ $rc -eq 0 ] && grep -q '^1 pod template in 1 document, 1 file:$' "$tmp/many.out" && grep -q '^1 ok, ' "$tmp/many.out"; then ok
	else bad "1.5 million documents: rc $rc"; cat "$tmp/many.out" "$tmp/many.err" | head -5; fi
	if [ "$kb" -le $((64 * 1024)) ]; then ok; else bad "1.5 million documents: peak RSS $kb kB, over 64 MiB"; fi
fi

# A file name that is not UTF-8 is reported with '?' (JSON strings are UTF-8), not a failure.
bad_name="$tmp/$(printf 'x\377.yaml')"
cp test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml "$bad_name"
"$B" audit -o json "$bad_name" >"$tmp/badname" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q '"file": ".*/x?.yaml"' "$tmp/badname"; then ok; else bad "non-UTF-8 file name: rc $rc"; head -5 "$tmp/badname"; fi

# Colour only on a terminal (script(1) gives the command a pty), never with --no-color / NO_COLOR.
esc=$(printf '\033')
rocm=test/audit/corpus/ROCm__k8s-device-plugin__example__pod__pytorch.yaml
if command -v script >/dev/null 2>&1; then
	script -qec "$B audit $rocm" /dev/null >"$tmp/tty" 2>&1
	if grep -q "${esc}\[1;31mreject${esc}\[0m" "$tmp/tty"; then ok; else bad "tty: no colour"; cat -v "$tmp/tty"; fi
	script -qec "$B audit --no-color $rocm" /dev/null >"$tmp/tty" 2>&1
	if grep -q "$esc" "$tmp/tty"; then bad "tty: colour despite --no-color"; else ok; fi
	script -qec "env NO_COLOR=1 $B audit $rocm" /dev/null >"$tmp/tty" 2>&1
	if grep -q "$esc" "$tmp/tty"; then bad "tty: colour despite NO_COLOR"; else ok; fi
fi
"$B" audit "$rocm" >"$tmp/pipe" 2>&1
if grep -q "$esc" "$tmp/pipe"; then bad "pipe: colour when not a terminal"; else ok; fi

echo "audit: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
