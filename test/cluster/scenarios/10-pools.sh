# Sourced by suite.sh (full mode): the README's three pools by helm upgrade; each
# pod's pool as the real scheduler bound it; the name route; warn and dryrun.

clean
upgrade three-pools.yaml
ns team-b
pod p-t4 "$GPU1" >"$T/p-t4.in"
create team-b p-t4
equals "$RC/$(pool_of team-b p-t4)" 0/gput4 "three pools: a 1-GPU pod lands on t4"
pod p-a100 '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "4"' >"$T/p-a100.in"
create team-b p-a100
equals "$RC/$(pool_of team-b p-a100)" 0/gpua100 "three pools: a 4-GPU pod lands on a100"
pod p-mig '.spec.containers[0].resources.limits["nvidia.com/mig-1g.10gb"] = "1"' >"$T/p-mig.in"
create team-b p-mig
equals "$RC/$(pool_of team-b p-mig)" 0/gpua100 "three pools: a MIG slice lands on a100"
pod p-h100 "$GPU1 | .metadata.labels[\"gpu-admission/pool\"] = \"h100\"" >"$T/p-h100.in"
create team-b p-h100
equals "$RC/$(pool_of team-b p-h100)" 0/gpuh100 "three pools: a pod labelled gpu-admission/pool=h100 lands on h100"
pod p-16 '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "16"' >"$T/p-16.in"
create team-b p-16
equals "$RC" 1 "three pools: a 16-GPU pod is refused"
has "$T/p-16.err" "a100" "three pools: the 16-GPU refusal names the largest pool"
pod p-amd '.spec.containers[0].resources.limits["amd.com/gpu"] = "1"' >"$T/p-amd.in"
create team-b p-amd
equals "$RC" 1 "three pools: an AMD pod is refused (no pool serves it)"
# The name route: pools selected by agent pool give node-name globs aks-<pool>-*.
pod cpu-name '.spec.nodeName = "aks-gput4-20000000-vmss000001"' >"$T/cpu-name.in"
create team-b cpu-name
equals "$RC" 1 "a CPU pod pinned by spec.nodeName to a GPU node is refused"
has "$T/cpu-name.err" "aks-gput4-20000000-vmss000001" "the name-route refusal names the node"
pod cpu-mf '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms = [{matchFields: [{key: "metadata.name", operator: "In", values: ["aks-gpuh100-50000000-vmss000000"]}]}]' >"$T/cpu-mf.in"
create team-b cpu-mf
equals "$RC" 1 "a CPU pod pinned by matchFields metadata.name to a GPU node is refused"
# Kueue's defer label: the GPU toleration only; placement is the queue's.
pod p-kueue "$GPU1 | .metadata.labels[\"kueue.x-k8s.io/queue-name\"] = \"q\"" >"$T/p-kueue.in"
created team-b p-kueue "a GPU pod with Kueue's queue label is created"
gpu_tolerated "$T/p-kueue.out" && ok || bad "the deferred pod tolerates the GPU taint"
jq -e '.spec.nodeSelector["kubernetes.azure.com/agentpool"] == null' "$T/p-kueue.out" >/dev/null && ok ||
	bad "the deferred pod gets no pool selector"
# warn and dryrun: admitted, with kubectl's Warning: lines.
for m in warn dry; do
	ns "team-$m"
	pod "cpu-$m" "$SKU_TOL" >"$T/cpu-$m.in"
	created "team-$m" "cpu-$m" "$m mode: a CPU pod tolerating the GPU taint is admitted"
	has "$T/cpu-$m.err" "Warning:" "$m mode: kubectl prints the warning"
	has "$T/cpu-$m.err" "CPU-only pod aimed at GPU nodes" "$m mode: the warning says what enforce would refuse"
done
pod gpu-dry "$GPU1" >"$T/gpu-dry.in"
create team-dry gpu-dry
jq -e '.spec.nodeSelector == null' "$T/gpu-dry.out" >/dev/null && ok || bad "dryrun mode: a GPU pod is not patched"
has "$T/gpu-dry.err" "Warning:" "dryrun mode: the GPU pod's warning"
# What dryrun announces is what enforce does: the GPU pod /mutate would place reaches the validating
# webhook unpatched, which judges it as patched and announces no rejection.
has "$T/gpu-dry.err" "would add (dryrun mode)" "dryrun mode: the mutating webhook says what it would add"
lacks "$T/gpu-dry.err" "would be rejected" "dryrun mode: the GPU pod is not announced as a rejection"
