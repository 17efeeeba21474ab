#!/bin/sh
# The webhooks' CEL matchConditions (issue 14, item 1), per webhook entry (pods,
# the built-in workloads, the policy's custom resources), end to end:
#  - superset: evaluated with a real CEL implementation (@bufbuild/cel) on every
#    golden case and every pod template and workload document of the corpus
#    (CORPUS, default test/audit/corpus: the shared corpus, copied byte for
#    byte; workloads as CREATE and as UPDATEs), under the embedded policy and
#    each of test/matchcond/cases/<case>/policy.yaml, they send every request the webhook would
#    mutate, warn about or reject, and never fail to evaluate
#    (test/matchcond/superset.js; its output has, per entry, the share of
#    CPU-only pods and workloads they filter out);
#  - the superset test can fail: with the toleration test of gpu-relevant broken,
#    or the workload UPDATE condition's comparison of tolerations, it reports the
#    requests the broken expression would no longer send;
#  - the chart renders the binary's expressions, byte for byte, for every entry,
#    for the default policy, every test/helm/cases/ configuration, the policies of
#    test/matchcond/cases/ (pools with their own labels and taints, extra GPU
#    resource globs, node names, custom resources) and every policy example of
#    README.md and the pages it links, the chart's values.yaml and print-default-config
#    (test/matchcond/chart.js);
#  - print-match-conditions on the command line: YAML and JSON agree for each
#    entry, costs, errors.
# The suite e2e/matchcond: this driver, beside its cases. A case is a directory,
# test/matchcond/cases/<case>/, holding policy.yaml (a policy file).
# Needs the chart test tools (.ci/helm: helm, yaml, @bufbuild/cel).
# Run from the repository root; BIN is the binary under test. Last line:
# "N passed, M failed".
set -u
BIN=${BIN:-bin/gpu-admission}
CORPUS=${CORPUS:-test/audit/corpus}
. test/check.lib
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
# count LOG: adds the ok/not ok lines of a node check's log, showing the failures.
count() {
	p=$(grep -c '^ok - ' "$1")
	f=$(grep -c '^not ok - ' "$1")
	grep -v '^ok - ' "$1" | grep -v ': [0-9]* passed, [0-9]* failed$' | indent
	pass=$((pass + p)); fail=$((fail + f))
	[ "$p" -gt 0 ] || notok "$2 ran no check"
}

TOOLBIN=$(sh .ci/helm 2>"$T/tools.log") || { cat "$T/tools.log"; notok "install the test tools (.ci/helm)"; echo "$pass passed, $fail failed"; exit 1; }
export TOOLS="${TOOLBIN%/bin}"

# ---- superset: golden cases and corpus ---------------------------------------
set --
for f in test/matchcond/cases/*/policy.yaml; do set -- "$@" --corpus-policy "$f"; done
node test/matchcond/superset.js "$BIN" test/golden "$CORPUS" "$@" >"$T/superset.log" 2>&1
rc=$?
count "$T/superset.log" superset.js
if [ "$rc" -eq 0 ]; then ok "superset.js: every request the webhook acts on is sent"; else notok "superset.js exit $rc"; fi

# ---- and it can fail ------------------------------------------------------------
# gpu-relevant with its toleration test made false: a CPU pod that tolerates the GPU
# taint, and is rejected for it, is then not sent; the test must say so.
node test/matchcond/superset.js "$BIN" test/golden "$CORPUS" \
	--break "|| t.key in ['', 'nvidia.com/gpu', 'sku']=>&& false" >"$T/broken.log" 2>&1
rc=$?
caught=$(grep -c '^not ok - .*is false: the API server would not send it' "$T/broken.log")
if [ "$rc" -ne 0 ] && [ "$caught" -gt 0 ] && grep -q '^not ok - golden cpu-toleration-sku-exists:' "$T/broken.log" &&
	grep -q '^not ok - golden workload-deployment-cpu-gpu-toleration:' "$T/broken.log"; then
	ok "superset.js fails with a broken expression ($caught requests caught, cpu-toleration-sku-exists and workload-deployment-cpu-gpu-toleration among them)"
else
	notok "superset.js did not fail with a broken expression (exit $rc, $caught caught)"; tail -n 5 "$T/broken.log"
fi
# The workload UPDATE condition without its comparison of a Deployment template's tolerations: an UPDATE
# that newly gives a CPU template a GPU toleration, which the webhook denies, is then not sent.
s=object.spec.template.spec.tolerations
node test/matchcond/superset.js "$BIN" test/golden "$CORPUS" \
	--break "|| has($s) != has(old$(echo "$s" | sed 's/^o/O/')) || has($s) && $s != old$(echo "$s" | sed 's/^o/O/')=>" >"$T/broken.log" 2>&1
rc=$?
caught=$(grep -c '^not ok - .*is false: the API server would not send it' "$T/broken.log")
if [ "$rc" -ne 0 ] && grep -q '^not ok - golden workload-deployment-update-adds-toleration: .*update-changes-what-policy-reads is false' "$T/broken.log" &&
	grep -q '^not ok - corpus .*Deployment/nginx UPDATE adding a toleration of every taint: .*is false' "$T/broken.log"; then
	ok "superset.js fails with the workload UPDATE condition broken ($caught requests caught)"
else
	notok "superset.js did not fail with the workload UPDATE condition broken (exit $rc, $caught caught)"; tail -n 5 "$T/broken.log"
fi

# ---- the chart renders the binary's expressions -----------------------------
"$BIN" print-default-config >"$T/default.yaml"
mkdir "$T/ex" "$T/values" "$T/work"
. test/e2e/docs.lib
node test/examples/extract.js "$T/ex" charts/gpu-admission/values.yaml "$T/default.yaml" $DOCS >"$T/extract.log" 2>&1 ||
	{ notok "extracting the policy examples"; cat "$T/extract.log"; }
set --
# (Not the in-process policy cases: their policy is the chart's default, their manifest
# is made by test/helm/helm.sh from policies.args.)
for v in test/helm/cases/*/values.yaml; do
	[ -f "$(dirname "$v")/policies.args" ] || set -- "$@" "helm-case-$(basename "$(dirname "$v")")=$v"
done
# A policy file as chart values: {policy: ...}, as test/examples/extract.js reads them back.
as_values() { # NAME POLICY-FILE
	node -e '
		const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs");
		const p = Y.parse(fs.readFileSync(process.argv[1], "utf8"), { version: "1.1" }) || {};
		fs.writeFileSync(process.argv[2], JSON.stringify({ policy: p }));
	' "$2" "$T/values/$1.json"
}
for f in test/matchcond/cases/*/policy.yaml; do
	n=policy-$(basename "$(dirname "$f")")
	as_values "$n" "$f" && set -- "$@" "$n=$T/values/$n.json"
done
for f in "$T"/ex/*.yaml; do
	n=example-$(basename "$f" .yaml)
	as_values "$n" "$f" && set -- "$@" "$n=$T/values/$n.json"
done
printf 'webhook:\n  policyMatchConditions: false\n  matchConditions:\n    - {name: mine, expression: "true"}\n' >"$T/values/off.yaml"
set -- "$@" "policy-conditions-off=$T/values/off.yaml"
node test/matchcond/chart.js "$TOOLBIN/helm" charts/gpu-admission "$BIN" "$T/work" "$@" >"$T/chart.log" 2>&1
count "$T/chart.log" chart.js
n_custom=$(grep -c "^ok - .*: validate-custom.gpu-admission.azure.io matchConditions are the binary's --for custom" "$T/chart.log")
n_workloads=$(grep -c "^ok - .*: validate-workloads.gpu-admission.azure.io matchConditions are the binary's --for workloads" "$T/chart.log")
if [ "$n_custom" -ge 3 ] && [ "$n_workloads" -ge 10 ]; then ok "chart compared the workload entry on $n_workloads policies, the custom one on $n_custom"
else notok "chart compared the workload entry on $n_workloads policies, the custom one on only $n_custom"; fi
n_examples=$(ls "$T"/ex/*.yaml 2>/dev/null | wc -l)
if [ "$n_examples" -ge 8 ]; then ok "chart compared on $n_examples policy examples"; else notok "only $n_examples policy examples"; fi

# ---- the command line -------------------------------------------------------------
for entry in "" pods workloads custom; do
	n=2; [ "$entry" = custom ] && n=1
	desc="print-match-conditions${entry:+ --for $entry}: YAML and -o json give the same $n conditions"
	if "$BIN" print-match-conditions ${entry:+--for $entry} >"$T/mc$entry.yaml" &&
		"$BIN" print-match-conditions ${entry:+--for $entry} -o json >"$T/mc$entry.json" &&
		node -e '
			const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs");
			const a = Y.parse(fs.readFileSync(process.argv[1], "utf8")), b = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
			process.exit(JSON.stringify(a) === JSON.stringify(b) && a.matchConditions.length === +process.argv[3] ? 0 : 1);
		' "$T/mc$entry.yaml" "$T/mc$entry.json" "$n"; then ok "$desc"; else notok "$desc"; fi
	desc="print-match-conditions${entry:+ --for $entry}: the worst-case cost, within the API server's limits, heads the YAML"
	if head -n 1 "$T/mc$entry.yaml" | grep -qE '^# Worst-case CEL cost per request .*update-changes-what-policy-reads [0-9]+, of 1000000 per expression'; then
		ok "$desc"; else notok "$desc"; head -n 2 "$T/mc$entry.yaml"; fi
done
desc="print-match-conditions: pods is the default"
if cmp -s "$T/mc.yaml" "$T/mcpods.yaml"; then ok "$desc"; else notok "$desc"; fi
# A policy whose node-name tests cost too much: 40 pools named by agent pool.
{ echo "pools:"; i=0; while [ $i -lt 40 ]; do i=$((i + 1)); echo "  - {name: p$i, nodeSelector: {kubernetes.azure.com/agentpool: gpupool$i}}"; done; } >"$T/many.yaml"
desc="print-match-conditions: a policy over the CEL cost limit is refused (exit 2), saying what to do"
"$BIN" print-match-conditions --config "$T/many.yaml" >"$T/out" 2>&1; rc=$?
if [ "$rc" -eq 2 ] && grep -q 'over the API server.s limit of 1000000 per expression: set gpuNodeNames' "$T/out"; then ok "$desc"; else notok "$desc (exit $rc)"; cat "$T/out"; fi
desc="print-match-conditions: the same pools with gpuNodeNames fit"
printf 'gpuNodeNames: ["aks-gpupool*"]\n' >>"$T/many.yaml"
if "$BIN" print-match-conditions --config "$T/many.yaml" >/dev/null 2>&1; then ok "$desc"; else notok "$desc"; fi
desc="print-match-conditions: -o xml, an operand and an invalid policy are usage errors (exit 2)"
printf 'gpuResources: []\n' >"$T/bad.yaml"
"$BIN" print-match-conditions -o xml >/dev/null 2>&1; r1=$?
"$BIN" print-match-conditions extra >/dev/null 2>&1; r2=$?
"$BIN" print-match-conditions --config "$T/bad.yaml" >/dev/null 2>&1; r3=$?
if [ "$r1$r2$r3" = 222 ]; then ok "$desc"; else notok "$desc ($r1 $r2 $r3)"; fi
desc="print-match-conditions: --for deployments is a usage error (exit 2) naming the entries"
"$BIN" print-match-conditions --for deployments >"$T/out" 2>&1; rc=$?
if [ "$rc" -eq 2 ] && grep -q 'pods, workloads or custom' "$T/out"; then ok "$desc"; else notok "$desc (exit $rc)"; cat "$T/out"; fi

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
