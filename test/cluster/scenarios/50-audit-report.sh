# Sourced by suite.sh (full mode), after 40-policy-edit.sh (the spot-fallback policy,
# team-s in warn mode): audit and report over this cluster's own `kubectl get -o json`
# output (defaulted fields, managedFields, status as the API server writes them), their
# figures checked against the state built here:
#   t4 (2 nodes, 1 GPU each): two 1-GPU pods; t4-spot (1): one interruptible pod;
#   h100 (8 GPUs): one 8-GPU pod of training-1, and a CPU pod pinned to it by nodeName
#   (admitted: team-s is in warn mode); a100 (8 GPUs, no pool of this policy): no pod;
#   one more 1-GPU pod, Pending: the t4 pool is full.
clean
ns team-s
ns training-1
for p in r-t4a r-t4b r-pending; do
	pod "$p" "$GPU1" >"$T/$p.in"
	create team-s "$p"
	[ "$p" = r-pending ] || node_of team-s "$p" >/dev/null
done
pod r-spot "$GPU1 | .metadata.labels[\"gpu-admission/interruptible\"] = \"true\"" >"$T/r-spot.in"
create team-s r-spot
pod r-h100 '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "8"' >"$T/r-h100.in"
create training-1 r-h100
pod r-cpu '.spec.nodeName = "aks-gpuh100-50000000-vmss000000"' >"$T/r-cpu.in"
created team-s r-cpu "warn mode: a CPU pod pinned to the h100 node is admitted"
equals "$(pool_of team-s r-t4a) $(pool_of team-s r-t4b) $(pool_of team-s r-spot) $(pool_of training-1 r-h100)" \
	"gput4 gput4 gput4spot gpuh100" "the report's state: pods on their pools"
# The scheduler has tried the Pending pod and said why (PodScheduled False).
cp_wait 30 sh -c "kubectl get pod -n team-s r-pending -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -q Unschedulable" &&
	ok || bad "the scheduler marked r-pending Unschedulable"
kubectl get configmap -n "$RNS" "$REL-policy" -o jsonpath='{.data.policy\.yaml}' >"$T/live-policy.yaml"
kubectl get nodes,pods -A -o json >"$T/cluster.json"
"$B" report -c "$T/live-policy.yaml" -o json --fail-on none "$T/cluster.json" >"$T/report.json" 2>"$T/report.err"
equals "$?" 0 "report over kubectl get nodes,pods -A -o json"
equals "$(jq -c '.summary | [.gpuNodes, .idleNodes, .gpusRequested, .cpuPodsOnGpuNodes, .pendingGpuPods, .errors]' "$T/report.json")" \
	'[5,1,11,1,1,0]' "report: 5 GPU nodes, 1 idle, 11 GPUs requested, 1 CPU pod on a GPU node, 1 Pending GPU pod, no input error"
equals "$(jq -r '[.pools[] | .idleNodeNames[]] | join(" ")' "$T/report.json")" "aks-gpua100-40000000-vmss000000" "report: the idle node is the a100"
[ -s "$T/report.err" ] && { bad "report wrote to stderr"; head -n 5 "$T/report.err"; } || ok
"$B" report -c "$T/live-policy.yaml" "$T/cluster.json" >"$T/report.txt" 2>&1
has "$T/report.txt" "r-cpu" "report's text names the CPU pod on a GPU node"
# audit over the live objects: every pod and workload read, none an input error.
kubectl get pods,deployments,daemonsets,jobs -A -o json >"$T/live.json"
"$B" audit -c "$T/live-policy.yaml" -o json "$T/live.json" >"$T/audit.json" 2>"$T/audit.err"
equals "$(jq '.errors | length' "$T/audit.json")" 0 "audit of live objects: no input error"
equals "$(jq -r '[.findings[] | select(.name == "r-cpu") | .verdict] | join(" ")' "$T/audit.json")" reject \
	"audit: the CPU pod pinned to a GPU node would be rejected in enforce mode"
equals "$(jq -r '[.findings[] | select(.name == "r-t4a") | .verdict] | join(" ")' "$T/audit.json")" ok \
	"audit: a placed GPU pod is ok as stored"
