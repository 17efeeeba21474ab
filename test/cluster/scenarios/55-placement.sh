# Sourced by suite.sh (full mode): issue 23's placement rules as the real API server
# and scheduler take them (the validating webhook sees the final, mutated object).
clean
upgrade three-pools.yaml
ns team-p
# Item 2: a GPU pod pinned to a node by name gets that node's pool, and is bound there.
H100=aks-gpuh100-50000000-vmss000000
pod pin-host "$GPU1 | .spec.nodeSelector = {\"kubernetes.io/hostname\": \"$H100\"}" >"$T/pin-host.in"
create team-p pin-host
equals "$RC/$(jq -r '.spec.nodeSelector["kubernetes.azure.com/agentpool"]' "$T/pin-host.out")" 0/gpuh100 \
	"a GPU pod pinned by hostname gets its node's pool, not the cheapest"
equals "$(node_of team-p pin-host)" "$H100" "the pinned GPU pod is bound to its node"
pod pin-name "$GPU1 | .spec.nodeName = \"$H100\"" >"$T/pin-name.in"
create team-p pin-name
equals "$RC/$(jq -r '.spec.nodeSelector["kubernetes.azure.com/agentpool"] // "none"' "$T/pin-name.out")" 0/gpuh100 \
	"a GPU pod with spec.nodeName gets its node's pool (the kubelet's NodeAffinity check would refuse another)"

upgrade fallback-three.yaml
ns team-f
ns train-x
# Item 1: the issue's own pod. team-f may use t4 only; its required terms name h100 and
# a zone. The patch ANDs t4 into each term and /validate, seeing the patched pod,
# admits it: it is created and bound to the t4 node of that zone.
pod own-terms "$GPU1 | .spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms =
	[{matchExpressions: [{key: \"kubernetes.azure.com/agentpool\", operator: \"In\", values: [\"gpuh100\"]}]},
	 {matchExpressions: [{key: \"topology.kubernetes.io/zone\", operator: \"In\", values: [\"eastus-1\"]}]}]" >"$T/own-terms.in"
created team-f own-terms "fallback: a pod with its own required terms is created (the webhook recognises its own patch)"
[ "$RC" -eq 0 ] || indent "$T/own-terms.err" | head -n 3
equals "$(node_of team-f own-terms)" aks-gput4-20000000-vmss000000 "fallback: bound to the t4 node of eastus-1"
# "First contact that holds", item 7: a pod's own preferred term must not send a 1-GPU pod
# to the 8-GPU pool. The t4 node of eastus-1 is own-terms'; a 1-GPU pod in train-x (t4,
# a100, h100) preferring eastus-1 had t4 100, a100 67, h100 34 added, and the scheduler,
# summing every matching term (NodeAffinity Score, k8s.io/kubernetes
# pkg/scheduler/framework/plugins/nodeaffinity), scored the a100 node of eastus-1 117
# against 100 for the free t4 node of eastus-2 and bound it there. Cost order dominates
# (pkg/policy/README.md): t4 300, a100 167, h100 34 at weight 50 (t4 500, a100 267 at
# 100), so it is bound to the t4 node of eastus-2, and a warning says the pool order
# outweighs its preference. The fake nodes' CPU and memory are alike: NodeResourcesFit and
# BalancedAllocation score them alike, NodeAffinity (weighed 2) decides. Each pod is removed after, leaving that t4 node and the a100
# free for the next (and for two-pools below).
for w in 50 100; do
	pod "zone-$w" "$GPU1 | .spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution =
		[{weight: $w, preference: {matchExpressions: [{key: \"topology.kubernetes.io/zone\", operator: \"In\", values: [\"eastus-1\"]}]}}]" >"$T/zone-$w.in"
	created train-x "zone-$w" "fallback: a 1-GPU pod preferring a zone at weight $w is created"
	has "$T/zone-$w.err" "outweighs the pod's own preferred node affinity (weight $w)" \
		"fallback: a warning says the pool order outweighs the pod's preference (weight $w)"
	equals "$(node_of train-x "zone-$w")" aks-gput4-20000000-vmss000001 \
		"fallback: a zone preferred at weight $w does not take the 1-GPU pod to the a100 of that zone"
	kubectl delete pod -n train-x "zone-$w" --force --grace-period=0 >/dev/null 2>&1
	cp_wait 30 sh -c "! kubectl get pod -n train-x zone-$w >/dev/null 2>&1" || bad "fallback: zone-$w could not be removed"
done
# Item 3: a pod whose own affinity allows a100 and h100 gets preferred terms cheapest
# first, and the scheduler takes the a100.
pod two-pools '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "8" | .spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms =
	[{matchExpressions: [{key: "kubernetes.azure.com/agentpool", operator: "In", values: ["gpua100", "gpuh100"]}]}]' >"$T/two-pools.in"
created train-x two-pools "fallback: an 8-GPU pod allowed on a100 and h100 is created"
equals "$(jq -c '[.spec.affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution[]? | .preference.matchExpressions[0].values[0]]' "$T/two-pools.out")" \
	'["gpua100","gpuh100"]' "fallback: preferred terms cheapest first over the pools the pod allows"
equals "$(pool_of train-x two-pools)" gpua100 "fallback: the scheduler takes the cheaper a100"

# Item 8: a policy check-config refuses is refused by helm before anything changes.
printf 'policy:\n  pools:\n    - {name: a, nodeSelector: {kubernetes.azure.com/agentpool: x}}\n    - {name: a, nodeSelector: {kubernetes.azure.com/agentpool: y}}\n' >"$T/dup-pools.yaml"
rev=$(helm history "$REL" -n "$RNS" -o json | jq 'length')
helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reset-values -f "$ROOT/test/cluster/values/image.yaml" -f "$T/dup-pools.yaml" >"$T/dup.out" 2>&1
equals "$?" 1 "helm upgrade to two pools of one name is refused"
has "$T/dup.out" "pools" "the refusal names the pools"
equals "$(helm history "$REL" -n "$RNS" -o json | jq 'length')" "$rev" "the refused upgrade made no release"
