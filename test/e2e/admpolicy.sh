#!/bin/sh
# gpu-admission print-admission-policies (issue 26) on the command line: the objects
# per Kubernetes minor, their bindings per namespace mode, YAML and JSON agreeing,
# the CEL cost check refusing a policy over the API server's limits, and the chart's
# guard. What the objects do is proven on the real API server
# (test/cluster/scenarios/65-admission-policies.sh).
# Run from the repository root; BIN is the binary under test. Last line:
# "admpolicy: N passed, N failed".
. test/e2e/check.lib

kinds() { jq -r '[.items[] | .apiVersion + " " + .kind + " " + .metadata.name] | join(",")' "$1"; }

"$B" print-admission-policies -o json >"$tmp/default.json"
if [ $? -eq 0 ]; then ok; else bad "print-admission-policies (default policy)"; fi
V=admissionregistration.k8s.io
want="$V/v1 ValidatingAdmissionPolicy gpu-admission-pods,$V/v1 ValidatingAdmissionPolicyBinding gpu-admission-pods-enforce,$V/v1 ValidatingAdmissionPolicy gpu-admission-workloads,$V/v1 ValidatingAdmissionPolicyBinding gpu-admission-workloads-enforce,$V/v1beta1 MutatingAdmissionPolicy gpu-admission-pods,$V/v1beta1 MutatingAdmissionPolicyBinding gpu-admission-pods-mutate"
if [ "$(kinds "$tmp/default.json")" = "$want" ]; then ok; else bad "default (1.34): got $(kinds "$tmp/default.json")"; fi

# The minors: v1 from 1.36, none below 1.34, nothing below 1.30.
"$B" print-admission-policies --kubernetes-version 1.36 -o json | jq -r '.items[] | select(.kind | startswith("Mutating")) | .apiVersion' | sort -u >"$tmp/v"
if [ "$(cat "$tmp/v")" = "$V/v1" ]; then ok; else bad "1.36: MutatingAdmissionPolicy v1, got $(cat "$tmp/v")"; fi
"$B" print-admission-policies --kubernetes-version v1.33.2 -o json | jq -r '[.items[] | select(.kind | startswith("Mutating"))] | length' >"$tmp/v"
if [ "$(cat "$tmp/v")" = 0 ]; then ok; else bad "1.33: no MutatingAdmissionPolicy, got $(cat "$tmp/v")"; fi
"$B" print-admission-policies --kubernetes-version 1.29 >/dev/null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q 'no ValidatingAdmissionPolicy v1' "$tmp/err"; then ok; else bad "1.29 is refused"; cat "$tmp/err"; fi
"$B" print-admission-policies --kubernetes-version 2 >/dev/null 2>&1
if [ $? -eq 2 ]; then ok; else bad "--kubernetes-version 2 is a usage error"; fi

# YAML and JSON: the same objects.
"$B" print-admission-policies >"$tmp/default.yaml"
node -e '
const Y = require(process.argv[1]); const fs = require("fs");
const docs = Y.parseAllDocuments(fs.readFileSync(process.argv[2], "utf8")).map((d) => d.toJS()).filter((d) => d);
const json = JSON.parse(fs.readFileSync(process.argv[3], "utf8")).items;
process.exit(JSON.stringify(docs) === JSON.stringify(json) ? 0 : 1);
' "$ROOT/build/tools/node_modules/yaml" "$tmp/default.yaml" "$tmp/default.json" 2>"$tmp/err"
if [ $? -eq 0 ]; then ok; else bad "the YAML documents are not the JSON List's items"; cat "$tmp/err"; fi

# Each policy says its worst-case cost, within the limits.
jq -r '.items[] | select(.kind | endswith("Policy")) | .metadata.annotations["gpu-admission.azure.io/worst-case-cel-cost"]' "$tmp/default.json" >"$tmp/costs"
if [ "$(wc -l <"$tmp/costs")" -eq 3 ] && awk '{ if ($1 + 0 <= 0 || $1 + 0 > 10000000) exit 1 }' "$tmp/costs"; then ok; else bad "cost annotations"; cat "$tmp/costs"; fi

# Namespace modes: a binding per mode; exempt and other modes' namespaces left out of the default's.
printf 'namespaceModes: {team-w: warn, team-d: dryrun}\nexempt: {namespaces: [kube-system, ops]}\n' >"$tmp/modes.yaml"
"$B" print-admission-policies -c "$tmp/modes.yaml" -o json >"$tmp/modes.json"
jq -c '[.items[] | select(.metadata.name | startswith("gpu-admission-pods-")) | [.metadata.name, (.spec.validationActions // []),
	(.spec.matchResources.namespaceSelector.matchExpressions[0] | [.operator, .values])]]' "$tmp/modes.json" >"$tmp/b"
want='[["gpu-admission-pods-enforce",["Deny"],["NotIn",["kube-system","ops","team-w","team-d"]]],["gpu-admission-pods-warn",["Warn"],["In",["team-w"]]],["gpu-admission-pods-dryrun",["Warn","Audit"],["In",["team-d"]]],["gpu-admission-pods-mutate",[],["NotIn",["kube-system","ops","team-d"]]]]'
if [ "$(cat "$tmp/b")" = "$want" ]; then ok; else bad "bindings per mode: got $(cat "$tmp/b")"; fi

# The cost check can fail: node names the policy can only test one by one, in every
# expression that reads a name, are refused with the limit named.
{
	echo "gpuNodeNames:"
	i=0
	while [ $i -lt 200 ]; do echo "  - \"aks-gpu$i-*-vmss*\""; i=$((i + 1)); done
} >"$tmp/names.yaml"
"$B" check-config "$tmp/names.yaml" >/dev/null 2>&1 || bad "the many-names policy is a valid policy"
"$B" print-admission-policies -c "$tmp/names.yaml" >/dev/null 2>"$tmp/err"
if [ $? -eq 2 ] && grep -q "over the API server's limit of 1000000 per expression" "$tmp/err"; then ok; else bad "a policy over the cost limit is refused"; cat "$tmp/err"; fi

# The chart's guard: no manifest, an old cluster, an API the cluster does not serve.
H=$ROOT/build/tools/bin/helm
if [ -x "$H" ]; then
	set -- template x charts/gpu-admission --set image.repository=r/x --set inProcessPolicies.enabled=true
	"$H" "$@" --kube-version 1.34.0 >/dev/null 2>"$tmp/err"
	if [ $? -ne 0 ] && grep -q 'needs inProcessPolicies.manifest' "$tmp/err"; then ok; else bad "chart: enabled without a manifest"; fi
	"$H" "$@" --set-file inProcessPolicies.manifest="$tmp/default.yaml" --kube-version 1.29.0 >/dev/null 2>"$tmp/err"
	if [ $? -ne 0 ] && grep -q 'has no ValidatingAdmissionPolicy v1' "$tmp/err"; then ok; else bad "chart: 1.29 refused"; fi
	"$H" "$@" --set-file inProcessPolicies.manifest="$tmp/default.yaml" --kube-version 1.34.0 >/dev/null 2>"$tmp/err"
	if [ $? -ne 0 ] && grep -q 'does not serve admissionregistration.k8s.io/v1beta1 MutatingAdmissionPolicy' "$tmp/err"; then ok; else bad "chart: MAP API not served"; fi
	"$H" "$@" --set-file inProcessPolicies.manifest="$tmp/default.yaml" --kube-version 1.34.0 \
		--api-versions $V/v1beta1/MutatingAdmissionPolicy --api-versions $V/v1beta1/MutatingAdmissionPolicyBinding >"$tmp/r.yaml" 2>"$tmp/err"
	if [ $? -eq 0 ] && [ "$(grep -c '^kind: .*AdmissionPolicy' "$tmp/r.yaml")" -eq 6 ]; then ok; else bad "chart: the six objects rendered"; cat "$tmp/err"; fi
else
	bad "helm not installed (sh .ci/helm)"
fi

echo "admpolicy: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
