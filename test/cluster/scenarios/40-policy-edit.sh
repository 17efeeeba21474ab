# Sourced by suite.sh (full mode): the policy ConfigMap edited with kubectl, as an
# admin would: a bad edit is refused with check-config's errors, a good one is
# picked up by the replica (the kubelet's sync of the volume, then its reload).
CM=$REL-policy
ns team-s
kubectl get configmap -n "$RNS" "$CM" -o json >"$T/cm.json"
good=$(jq -r '.data["policy.yaml"]' "$T/cm.json")
# A bad edit: check-config's errors, as kubectl shows them.
jq '.data["policy.yaml"] = "mode: strict\nexempt: {daemonSets: \"true\"}\n"' "$T/cm.json" |
	kubectl replace -f - >"$T/cm-bad.out" 2>"$T/cm-bad.err"
equals "$?" 1 "a bad edit of the policy ConfigMap is refused"
printf 'mode: strict\nexempt: {daemonSets: "true"}\n' >"$T/bad-policy.yaml"
"$B" check-config "$T/bad-policy.yaml" 2>&1 | grep -v '^[0-9]* errors' | sed 's|.*bad-policy.yaml:||' >"$T/cc.txt"
while read -r line; do has "$T/cm-bad.err" "$line" "the refusal carries check-config's error"; done <"$T/cc.txt"
equals "$(kubectl get configmap -n "$RNS" "$CM" -o jsonpath='{.data.policy\.yaml}')" "$good" "the refused edit left the policy as it was"
# A good edit: warn for team-s, picked up without a restart.
# The chart renders every field; namespaceModes is one line, "namespaceModes: {}".
printf '%s\n' "$good" | sed 's/^namespaceModes: {}$/namespaceModes: {team-s: warn}/' >"$T/good-policy.yaml"
grep -q '^namespaceModes: {team-s: warn}$' "$T/good-policy.yaml" && ok || bad "the rendered policy has its namespaceModes line"
"$B" check-config "$T/good-policy.yaml" >/dev/null 2>&1 && ok || bad "the good edit passes check-config"
jq --rawfile p "$T/good-policy.yaml" '.data["policy.yaml"] = $p' "$T/cm.json" | kubectl replace -f - >"$T/cm-good.out" 2>&1
equals "$?" 0 "a good edit of the policy ConfigMap is accepted"
wh_reload policy && ok || bad "the replica reloaded the edited policy"
pod warned "$SKU_TOL" >"$T/warned.in"
created team-s warned "after the edit, team-s is in warn mode: a CPU pod tolerating the GPU taint is admitted"
has "$T/warned.err" "Warning:" "after the edit, kubectl shows the warning"
# kubectl is now a field manager of data["policy.yaml"]: Helm 4 upgrades by server-side
# apply, which refuses to take a field another manager set (charts/gpu-admission/README.md says so, and
# that --force-conflicts takes it back; the values should carry the change).
helm upgrade "$REL" "$CHART" -n "$RNS" --reuse-values >"$T/conflict.out" 2>&1
equals "$?" 1 "helm upgrade after a kubectl edit of the policy stops"
has "$T/conflict.out" 'conflict with "kubectl-replace"' "the upgrade names kubectl as the conflicting manager"
HELM_FORCE=--force-conflicts
