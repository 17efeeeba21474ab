#!/bin/sh
# Every policy example the project shows is executed: the ```yaml blocks of
# README.md, the chart's values.yaml policy (and the examples commented in it),
# print-default-config (and the examples commented in it). test/examples/
# extract.js finds them (and says how); each must pass check-config, and the
# representative pods of test/examples/pods.yaml are audited against it:
#   - a MIG pod and an AMD pod are never sent to a T4 pool (one named t4, or
#     selecting nodes whose label says t4): its GPUs can run neither;
#   - an example with pools t4, a100 and h100 (the AKS decision matrix the README
#     describes) does what the README says of it: a 1-GPU pod goes to t4, a
#     4-GPU pod to a100, a MIG slice to a100, a pod labelled
#     gpu-admission/pool: h100 to h100, and a 16-GPU pod is rejected naming a100.
# README ```yaml blocks that are manifests are audited: no input errors.
set -u
ROOT=$(pwd)
BIN=${BIN:-bin/gpu-admission}
B="$ROOT/$BIN"
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

TOOLBIN=$(sh .ci/helm 2>"$tmp/tools.log") || { cat "$tmp/tools.log"; bad "install the YAML parser (.ci/helm)"; echo "examples: $pass passed, $fail failed"; exit 1; }
export TOOLS="${TOOLBIN%/bin}"
"$B" print-default-config >"$tmp/default.yaml"
mkdir "$tmp/ex"
if node test/examples/extract.js "$tmp/ex" README.md charts/gpu-admission/values.yaml "$tmp/default.yaml" >"$tmp/extract.log" 2>&1; then ok
else bad "extracting the examples"; cat "$tmp/extract.log"; fi
# README's two policies, values.yaml's own and its example, the default: at least these.
count=$(ls "$tmp/ex" | grep -c '\.yaml$')
if [ "$count" -ge 5 ]; then ok; else bad "only $count policy examples found"; cat "$tmp/extract.log"; fi

# what FINDINGS NAME FIELD: the field of pod NAME's finding.
what() { jq -r --arg n "$2" ".findings[] | select(.name == \$n) | .$3 // \"-\"" "$1"; }

for f in "$tmp"/ex/*.yaml; do
	n=${f%.yaml}
	src=$(cat "$n.src")
	if "$B" check-config "$f" >"$tmp/check" 2>&1; then ok; else bad "$src: check-config"; cat "$tmp/check"; continue; fi
	"$B" audit --config "$f" -o json test/examples/pods.yaml >"$tmp/r.json" 2>"$tmp/r.err"
	rc=$?
	if [ $rc -le 1 ]; then ok; else bad "$src: auditing the pods: exit $rc"; cat "$tmp/r.err"; continue; fi
	for pod in mig amd; do
		pool=$(what "$tmp/r.json" "$pod" pool)
		if [ "$pool" != - ] && grep -qx "$pool" "$n.t4"; then
			bad "$src: the $pod pod goes to the T4 pool \"$pool\" (list resources for each pool)"
		else
			ok
		fi
	done
	# The AKS decision matrix: t4, a100 and h100 pools.
	pools=$(node -e 'const Y = require(process.env.TOOLS + "/node_modules/yaml");
		console.log(((Y.parse(require("fs").readFileSync(process.argv[1], "utf8")) || {}).pools || [])
			.map(p => p.name).sort().join(" "))' "$f")
	case " $pools " in
	*" a100 "*" h100 "*" t4 "*)
		for want in "gpu-1 t4" "gpu-4 a100" "mig a100" "labelled-h100 h100"; do
			set -- $want
			got=$(what "$tmp/r.json" "$1" pool)
			if [ "$got" = "$2" ]; then ok; else bad "$src: pod $1 goes to $got, the README says $2"; fi
		done
		if [ "$(what "$tmp/r.json" gpu-16 verdict)" = reject ] && what "$tmp/r.json" gpu-16 message | grep -q a100; then ok
		else bad "$src: a 16-GPU pod is not rejected naming a100"; what "$tmp/r.json" gpu-16 message; fi
		;;
	esac
done

# README manifests: audited without input errors.
for f in "$tmp"/ex/*.manifest; do
	[ -f "$f" ] || continue
	"$B" audit "$f" >"$tmp/m.out" 2>&1
	if [ $? -le 1 ]; then ok; else bad "$(cat "${f%.manifest}.src"): the manifest does not audit"; cat "$tmp/m.out"; fi
done

# The extractor must fail on what it cannot check (a test that cannot fail is no test).
printf '```yaml\nnot: a policy\n```\n' >"$tmp/bad-readme.md"
if node test/examples/extract.js "$tmp/ex" "$tmp/bad-readme.md" charts/gpu-admission/values.yaml "$tmp/default.yaml" >/dev/null 2>&1; then
	bad "an unknown README YAML block passed"
else
	ok
fi
# ... and the checks must catch the example issue 16 found: pools without resources.
printf 'pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}, maxGPUsPerPod: 1}\n  - {name: a100, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}, maxGPUsPerPod: 8}\n' >"$tmp/lying.yaml"
"$B" audit --config "$tmp/lying.yaml" -o json test/examples/pods.yaml >"$tmp/lie.json" 2>/dev/null
if [ "$(what "$tmp/lie.json" mig pool)" = t4 ] && [ "$(what "$tmp/lie.json" amd pool)" = t4 ]; then ok
else bad "the pods no longer show what a pool without resources does"; fi

echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
