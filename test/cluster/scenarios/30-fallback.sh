# Sourced by suite.sh (full mode): spot first with fallback, per-namespace access.
# Fresh nodes: the earlier scenarios' pods and workloads are removed first.
clean
upgrade spot-fallback.yaml

ns team-s
SPOT='.metadata.labels["gpu-admission/interruptible"] = "true"'
pod s1 "$GPU1 | $SPOT" >"$T/s1.in"
created team-s s1 "fallback: an interruptible 1-GPU pod is created"
jq -e '[.spec.tolerations[] | select(.key == "kubernetes.azure.com/scalesetpriority")] | length == 1' "$T/s1.out" >/dev/null && ok ||
	bad "fallback: the pod tolerates the spot taint"
equals "$(jq -c '[.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[].matchExpressions[] | select(.key == "kubernetes.azure.com/agentpool") | .values]' "$T/s1.out")" \
	'[["gput4spot","gput4"]]' "fallback: required affinity over both pools"
equals "$(jq -c '[.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[] | [.weight, .preference.matchExpressions[0].values[0]]]' "$T/s1.out")" \
	'[[100,"gput4spot"],[50,"gput4"]]' "fallback: preferred terms cheapest first"
equals "$(pool_of team-s s1)" gput4spot "fallback: the first interruptible pod runs on spot"
# The spot pool's one GPU is taken: the next one falls back to on-demand.
pod s2 "$GPU1 | $SPOT" >"$T/s2.in"
create team-s s2
equals "$RC/$(pool_of team-s s2)" 0/gput4 "fallback: spot full, the second interruptible pod lands on on-demand t4"
pod s3 "$GPU1" >"$T/s3.in"
create team-s s3
equals "$RC/$(pool_of team-s s3)" 0/gput4 "fallback: a pod that is not interruptible goes to on-demand t4"
jq -e '[.spec.tolerations[] | select(.key == "kubernetes.azure.com/scalesetpriority")] | length == 0' "$T/s3.out" >/dev/null && ok ||
	bad "fallback: a pod that may not use spot gets no spot toleration"
# Per-namespace access: h100 serves training-* namespaces only.
pod s-h100 '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "8"' >"$T/s-h100.in"
create team-s s-h100
equals "$RC" 1 "namespaces: an 8-GPU pod in team-s is refused (h100 is for training-*)"
ns training-1
pod t-h100 '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "8"' >"$T/t-h100.in"
create training-1 t-h100
equals "$RC/$(pool_of training-1 t-h100)" 0/gpuh100 "namespaces: an 8-GPU pod in training-1 lands on h100"
