#!/bin/sh
# Every policy example the project shows is executed: the ```yaml blocks of
# README.md and the pages it links ($DOCS, test/e2e/docs.lib), the chart's
# values.yaml policy (and the examples commented in it),
# print-default-config (and the examples commented in it). test/examples/
# extract.js finds them (and says how); each must pass check-config, and
#   - the representative pods of test/examples/pods.yaml are audited against it:
#     a MIG pod and an AMD pod are never sent to a T4 pool (one named t4, or
#     selecting nodes whose label says t4): its GPUs can run neither;
#   - an example with pools t4, a100 and h100 (the AKS decision matrix the README
#     describes) does what the README says of it: a 1-GPU pod goes to t4, a
#     4-GPU pod to a100, a MIG slice to a100, a pod labelled
#     gpu-admission/pool: h100 to h100, and a 16-GPU pod is rejected naming a100;
#   - every placement its marker promises (policy-example / "# example:",
#     "1 nvidia.com/mig-1g.10gb -> a100") holds: a pod with those GPUs, labels and
#     namespace, reviewed against the example, goes to those pools, in that
#     order, or is rejected. An example with pools and no marker fails.
# The pages' ```yaml blocks that are manifests are audited: no input errors.
. test/e2e/check.lib
. test/e2e/docs.lib

TOOLBIN=$(sh .ci/helm 2>"$tmp/tools.log") || { cat "$tmp/tools.log"; bad "install the YAML parser (.ci/helm)"; echo "examples: $pass passed, $fail failed"; exit 1; }
export TOOLS="${TOOLBIN%/bin}"
"$B" print-default-config >"$tmp/default.yaml"
mkdir "$tmp/ex"
if node test/examples/extract.js "$tmp/ex" charts/gpu-admission/values.yaml "$tmp/default.yaml" $DOCS >"$tmp/extract.log" 2>&1; then ok
else bad "extracting the examples"; cat "$tmp/extract.log"; fi
# The pages' policies, values.yaml's own and its example, the default: at least these.
count=$(ls "$tmp/ex" | grep -c '\.yaml$')
if [ "$count" -ge 8 ]; then ok; else bad "only $count policy examples found"; cat "$tmp/extract.log"; fi
# Marked examples in each of the three places.
for where in "^README.md" values.yaml print-default-config; do
	if grep -l "$where" "$tmp"/ex/*.src 2>/dev/null | sed 's/\.src$/.expect/' | xargs ls 2>/dev/null | grep -q .; then ok
	else bad "no marked policy example found in $where"; fi
done

# what FINDINGS NAME FIELD: the field of pod NAME's finding.
what() { jq -r --arg n "$2" ".findings[] | select(.name == \$n) | .$3 // \"-\"" "$1"; }

# place POLICY NS RESOURCE COUNT LABELS-JSON: where review sends the pod ("t4", "t4-spot,t4", "rejected").
place() {
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"example","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"%s","operation":"CREATE","userInfo":{"username":"example"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"%s","labels":{%s}},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"%s":"%s"}}}]}}}}' \
		"$2" "$2" "$5" "$3" "$4" | "$B" review --config "$1" |
		jq -r '.response | if .allowed then (.auditAnnotations.pool // .auditAnnotations.pools // "(no pool)") else "rejected" end'
}

# check_expect POLICY EXPECT-FILE SRC: every placement the marker promises.
check_expect() {
	ce_policy=$1 ce_src=$3
	while IFS= read -r e; do
		[ -n "$e" ] || continue
		want=$(echo "${e#*->}" | tr -d ' ')
		set -- ${e%%->*}
		if [ $# -lt 2 ] || [ "$e" = "${e#*->}" ]; then bad "$ce_src: cannot read \"$e\""; continue; fi
		count=$1 res=$2 ns=default labels=""
		shift 2
		while [ $# -gt 0 ]; do
			case $1 in
			in) ns=${2:-}; shift; [ $# -gt 0 ] && shift ;;
			*=*) labels="$labels${labels:+,}\"${1%%=*}\":\"${1#*=}\""; shift ;;
			*) bad "$ce_src: cannot read \"$e\""; shift ;;
			esac
		done
		got=$(place "$ce_policy" "$ns" "$res" "$count" "$labels")
		if [ "$got" = "$want" ]; then ok; else bad "$ce_src: $e: got $got"; fi
	done <"$2"
}

for f in "$tmp"/ex/*.yaml; do
	n=${f%.yaml}
	src=$(cat "$n.src")
	# Valid: "configuration OK" on stdout (notes and warnings on stderr are advice).
	if "$B" check-config "$f" >"$tmp/check" 2>"$tmp/check.err" && head -n 1 "$tmp/check" | grep -qx 'configuration OK'; then ok
	else bad "$src: check-config"; cat "$tmp/check" "$tmp/check.err"; continue; fi
	"$B" audit --config "$f" -o json test/examples/pods.yaml >"$tmp/r.json" 2>"$tmp/r.err"
	rc=$?
	if [ $rc -le 1 ]; then ok; else bad "$src: auditing the pods: exit $rc"; cat "$tmp/r.err"; continue; fi
	for pod in mig amd; do
		pool=$(what "$tmp/r.json" "$pod" pool)
		pools=$(jq -r --arg n "$pod" '.findings[] | select(.name == $n) | (.pools // [])[]' "$tmp/r.json")
		for p in $pool $pools; do
			if [ "$p" != - ] && grep -qx "$p" "$n.t4"; then
				bad "$src: the $pod pod goes to the T4 pool \"$p\" (list resources for each pool)"
			else
				ok
			fi
		done
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
	[ -f "$n.expect" ] && check_expect "$f" "$n.expect" "$src"
done

# The pages' manifests: audited without input errors; objects audit does not read (a
# Karpenter NodePool) are well-formed YAML objects, which the extractor checked.
for f in "$tmp"/ex/*.manifest; do
	[ -f "$f" ] || continue
	"$B" audit "$f" >"$tmp/m.out" 2>&1
	if [ $? -le 1 ]; then ok; else bad "$(cat "${f%.manifest}.src"): the manifest does not audit"; cat "$tmp/m.out"; fi
done

# ==== The checks must be able to fail (a test that cannot fail is no test) ====
# Unknown YAML blocks in a page, unmarked pool examples, stray markers: the extractor refuses them.
for bad_readme in '```yaml\nnot: a policy\n```\n' \
	'```yaml\npools: [{name: a, nodeSelector: {k: v}}]\n```\n' \
	'<!-- policy-example: 1 nvidia.com/gpu -> a -->\n\n```yaml\npools: [{name: a, nodeSelector: {k: v}}]\n```\n'; do
	printf "$bad_readme" >"$tmp/bad-readme.md"
	mkdir -p "$tmp/bad-ex"
	if node test/examples/extract.js "$tmp/bad-ex" charts/gpu-admission/values.yaml "$tmp/default.yaml" "$tmp/bad-readme.md" >/dev/null 2>&1; then
		bad "the extractor passed: $(cat "$tmp/bad-readme.md")"
	else
		ok
	fi
done
for stray in '# example: 1 nvidia.com/gpu -> a\n# prose\n' '# prose\n#   pools: [{name: a, nodeSelector: {k: v}}]\n'; do
	{ cat "$tmp/default.yaml"; printf "$stray"; } >"$tmp/stray.yaml"
	if node test/examples/extract.js "$tmp/bad-ex" charts/gpu-admission/values.yaml "$tmp/stray.yaml" $DOCS >/dev/null 2>&1; then
		bad "the extractor passed a commented example: $stray"
	else
		ok
	fi
done
# ... a marker's promise that does not hold fails, and one that holds passes.
printf 'pools:\n  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}\n' >"$tmp/one.yaml"
printf '1 nvidia.com/gpu -> rejected\n2 nvidia.com/gpu -> t4\n1 amd.com/gpu -> t4\n' >"$tmp/wrong.expect"
printf '1 nvidia.com/gpu -> t4\n2 nvidia.com/gpu -> rejected\n1 nvidia.com/gpu team=a in ml -> t4\n' >"$tmp/right.expect"
before=$fail
check_expect "$tmp/one.yaml" "$tmp/wrong.expect" "self-test" >/dev/null
caught=$((fail - before))
fail=$before
if [ "$caught" -eq 3 ]; then ok; else bad "a wrong placement promise went unnoticed ($caught of 3 caught)"; fi
check_expect "$tmp/one.yaml" "$tmp/right.expect" "self-test: a placement that holds"
# ... and the pods must catch the example issue 16 found: pools without resources.
printf 'pools:\n  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}, maxGPUsPerPod: 1}\n  - {name: a100, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}, maxGPUsPerPod: 8}\n' >"$tmp/lying.yaml"
"$B" audit --config "$tmp/lying.yaml" -o json test/examples/pods.yaml >"$tmp/lie.json" 2>/dev/null
if [ "$(what "$tmp/lie.json" mig pool)" = t4 ] && [ "$(what "$tmp/lie.json" amd pool)" = t4 ]; then ok
else bad "the pods no longer show what a pool without resources does"; fi

echo "examples: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
