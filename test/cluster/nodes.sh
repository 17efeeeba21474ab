# Fake AKS nodes (sourced by the cluster suites): Node objects labelled and tainted
# as AKS labels and taints a pool's nodes, with allocatable GPUs, kept Ready (see
# cluster.lib: no kubelet and no node lifecycle controller, so nothing changes the
# status set here). One entry a line:
#   NAME POOL VM-SIZE GPU-RESOURCES(res=n,...) TAINTS(key=value:effect,...) SPOT(yes|no) ZONE
# AKS names a node aks-<pool>-<8 digits>-vmss<6 digits>; a GPU pool carries the
# sku=gpu:NoSchedule taint it was created with, a spot pool also the
# kubernetes.azure.com/scalesetpriority=spot:NoSchedule taint and label AKS sets.
CP_NODES='
aks-system-10000000-vmss000000 system Standard_D4s_v5 - - no eastus-1
aks-gput4-20000000-vmss000000 gput4 Standard_NC4as_T4_v3 nvidia.com/gpu=1 sku=gpu:NoSchedule no eastus-1
aks-gput4-20000000-vmss000001 gput4 Standard_NC4as_T4_v3 nvidia.com/gpu=1 sku=gpu:NoSchedule no eastus-2
aks-gput4spot-30000000-vmss000000 gput4spot Standard_NC4as_T4_v3 nvidia.com/gpu=1 sku=gpu:NoSchedule,kubernetes.azure.com/scalesetpriority=spot:NoSchedule yes eastus-1
aks-gpua100-40000000-vmss000000 gpua100 Standard_ND96asr_v4 nvidia.com/gpu=8,nvidia.com/mig-1g.10gb=56 sku=gpu:NoSchedule no eastus-1
aks-gpuh100-50000000-vmss000000 gpuh100 Standard_ND96isr_H100_v5 nvidia.com/gpu=8 sku=gpu:NoSchedule no eastus-2
'

# cp_node_json NAME POOL SIZE GPUS TAINTS SPOT ZONE: the Node object, as JSON.
cp_node_json() {
	jq -n --arg name "$1" --arg pool "$2" --arg size "$3" --arg gpus "$4" --arg taints "$5" \
		--arg spot "$6" --arg zone "$7" '
	{apiVersion: "v1", kind: "Node", metadata: {name: $name, labels: ({
		"kubernetes.io/hostname": $name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node.kubernetes.io/instance-type": $size, "topology.kubernetes.io/zone": $zone,
		"topology.kubernetes.io/region": "eastus",
		"agentpool": $pool, "kubernetes.azure.com/agentpool": $pool,
		"kubernetes.azure.com/mode": (if $pool == "system" then "system" else "user" end)}
		+ (if $gpus == "-" then {} else {"kubernetes.azure.com/accelerator": "nvidia"} end)
		+ (if $spot == "yes" then {"kubernetes.azure.com/scalesetpriority": "spot"} else {} end))},
	 spec: {providerID: ("azure:///subscriptions/0/resourceGroups/mc/providers/Microsoft.Compute/virtualMachineScaleSets/" + $name),
		taints: (if $taints == "-" then [] else [$taints | split(",")[] | capture("(?<key>[^=]+)=(?<value>[^:]+):(?<effect>.+)")] end)}}'
}

# cp_node_status GPUS: the status patch that makes a node Ready with its allocatable.
cp_node_status() {
	jq -n --arg gpus "$1" '
	({cpu: "16", memory: "64Gi", pods: "110", "ephemeral-storage": "100Gi"}
	 + (if $gpus == "-" then {} else [$gpus | split(",")[] | split("=") | {(.[0]): .[1]}] | add end)) as $r
	| {status: {capacity: $r, allocatable: $r,
		conditions: [{type: "Ready", status: "True", reason: "KubeletReady", message: "fake node",
			lastHeartbeatTime: (now | todate), lastTransitionTime: (now | todate)}]}}'
}

# cp_node_up NAME POOL SIZE GPUS TAINTS SPOT ZONE: creates one node and makes it Ready.
cp_node_up() {
	cp_node_json "$@" | kubectl create -f - >/dev/null || return 1
	kubectl patch node "$1" --subresource=status --type=merge -p "$(cp_node_status "$4")" >/dev/null || return 1
	# The TaintNodesByCondition admission plugin gave the new node
	# node.kubernetes.io/not-ready:NoSchedule (plugin/pkg/admission/nodetaint); the
	# node lifecycle controller, off here, removes it once the node is Ready.
	kubectl taint node "$1" node.kubernetes.io/not-ready:NoSchedule- >/dev/null 2>&1
	kubectl get node "$1" -o json | jq -e '[.spec.taints[]? | select(.key == "node.kubernetes.io/not-ready")] | length == 0' >/dev/null
}

# cp_nodes: creates every node of CP_NODES and makes it Ready.
cp_nodes() {
	echo "$CP_NODES" | while read -r name pool size gpus taints spot zone; do
		[ -n "$name" ] || continue
		cp_node_up "$name" "$pool" "$size" "$gpus" "$taints" "$spot" "$zone" || return 1
	done
}

# cp_reap NS: the kubelet's last step of a graceful deletion, for the pods of NS that
# are terminating: with no kubelet to confirm that their containers stopped, a
# bound pod's deletion would wait forever (pkg/registry/core/pod/strategy.go:
# CheckGracefulDelete keeps a bound pod until its kubelet deletes it with grace 0).
cp_reap() {
	kubectl get pods -n "$1" -o json |
		jq -r '.items[] | select(.metadata.deletionTimestamp != null) | .metadata.name' |
		xargs -r kubectl delete pod -n "$1" --force --grace-period=0 >/dev/null 2>&1
	return 0
}
