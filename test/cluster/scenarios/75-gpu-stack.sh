# Sourced by suite.sh (full mode): issue 28 finding 5, the GPU stack kept off the GPU
# nodes, and policy.gpuInfraNamespaces. The DaemonSet is NVIDIA's device-plugin chart's
# (0.20.0, default values) as test/golden/stack-device-plugin-chart-warned holds it: helm
# cannot fetch the chart on the test machine, so the case was written from the chart's
# values.yaml (a required affinity of three terms, Node Feature Discovery's
# feature.node.kubernetes.io/pci-10de.present=true, cpu-model.vendor_id=NVIDIA, or
# nvidia.com/gpu.present=true; tolerations CriticalAddonsOnly and nvidia.com/gpu only).
# The DaemonSet controller builds each pod from the template (NewPod) and creates none
# for a node whose NoSchedule taint the template does not tolerate (k8s.io/kubernetes
# pkg/controller/daemon/daemon_controller.go NodeShouldRunDaemonPod -> predicates ->
# v1helper.FindMatchingUntoleratedTaint): the template is the only place the toleration
# can go. The fake GPU nodes get the label NFD puts on a node with an NVIDIA PCI device.
clean
upgrade gpu-infra.yaml
equals "$(kubectl get mutatingwebhookconfiguration "$REL" -o json | jq -c '[.webhooks[] | select(.name == "mutate-daemonsets.gpu-admission.azure.io")
	| [.failurePolicy, .namespaceSelector.matchExpressions[0].values]]')" '[["Ignore",["gpu-operator"]]]' \
	"the chart registers daemonsets on /mutate for gpu-operator only, failurePolicy Ignore"
ns gpu-operator
ns team-stack
GPU_NODES=$(echo "$CP_NODES" | awk '$4 != "-" && $1 != "" { print $1 }' | sort)
# The spot node carries kubernetes.azure.com/scalesetpriority=spot:NoSchedule too, which the
# chart does not tolerate either: the controller skips it, as it would on AKS.
WANT=$(echo "$CP_NODES" | awk '$4 != "-" && $1 != "" && $5 !~ /spot/ { print $1 }' | sort)
for n in $GPU_NODES; do
	kubectl label node "$n" feature.node.kubernetes.io/pci-10de.present=true --overwrite >/dev/null || bad "NFD label on $n"
done
jq '.request.object | .metadata = {name: "nvdp-nvidia-device-plugin"}' \
	"$ROOT/test/golden/stack-device-plugin-chart-warned/request.json" >"$T/nvdp.in"

# ds_pods NS: the nodes the DaemonSet's pods are bound to, one a line, sorted.
ds_pods() {
	kubectl get pods -n "$1" -l app.kubernetes.io/name=nvidia-device-plugin -o json |
		jq -r '.items[] | .spec.nodeName // "(unbound)"' | sort
}
# ds_settled NS N: the controller has judged every node for the DaemonSet, wanting N pods.
ds_settled() {
	kubectl get daemonset -n "$1" nvdp-nvidia-device-plugin -o json |
		jq -e --argjson n "$2" '.status.observedGeneration >= 1 and .status.desiredNumberScheduled == $n' >/dev/null
}

# In gpu-operator (listed): the template gets the toleration, the controller a pod per GPU node.
created gpu-operator nvdp "gpuInfraNamespaces: the device plugin's DaemonSet is created"
has "$T/nvdp.err" "gpuInfraNamespaces" "gpuInfraNamespaces: kubectl shows the warning that the toleration was added"
jq '.spec.template' "$T/nvdp.out" >"$T/nvdp.tmpl"
gpu_tolerated "$T/nvdp.tmpl" && ok || bad "gpuInfraNamespaces: the stored template tolerates sku=gpu:NoSchedule"
equals "$(jq -c '[.spec.template.spec.tolerations[].key]' "$T/nvdp.out")" '["CriticalAddonsOnly","nvidia.com/gpu","sku"]' \
	"gpuInfraNamespaces: the chart's tolerations kept, the GPU taint's appended"
cp_wait 90 ds_settled gpu-operator "$(echo "$WANT" | wc -l)" && ok ||
	bad "gpuInfraNamespaces: the DaemonSet controller wants a pod on each tainted GPU node it tolerates"
cp_wait 90 sh -c "[ \"\$(kubectl get pods -n gpu-operator -o json | jq '[.items[] | select(.spec.nodeName != null)] | length')\" -eq $(echo "$WANT" | wc -l) ]" ||
	bad "gpuInfraNamespaces: the DaemonSet's pods were not all bound"
equals "$(ds_pods gpu-operator | tr '\n' ' ')" "$(echo "$WANT" | tr '\n' ' ')" \
	"gpuInfraNamespaces: one pod on each fake GPU node (t4 x2, a100, h100), none on the CPU node"
echo "cluster: gpuInfraNamespaces: the device plugin's pods are on $(ds_pods gpu-operator | tr '\n' ' ')"

# In team-stack (not listed): warned only; the controller creates no pod on a tainted GPU node.
created team-stack nvdp "elsewhere: the DaemonSet is created"
has "$T/nvdp.err" "does not tolerate the GPU taint" "elsewhere: kubectl shows the warning naming the toleration to add"
lacks "$T/nvdp.err" "gpuInfraNamespaces" "elsewhere: no toleration added"
equals "$(jq -c '[.spec.template.spec.tolerations[].key]' "$T/nvdp.out")" '["CriticalAddonsOnly","nvidia.com/gpu"]' \
	"elsewhere: the stored template is as applied"
cp_wait 90 ds_settled team-stack 0 && ok || bad "elsewhere: the DaemonSet controller wants no pod (every GPU node is tainted)"
equals "$(ds_pods team-stack | wc -l)" 0 "elsewhere: no pod on any GPU node"
echo "cluster: elsewhere: the device plugin has $(ds_pods team-stack | wc -l) pods"

kubectl delete daemonset nvdp-nvidia-device-plugin -n gpu-operator --wait=false >/dev/null 2>&1
cp_wait 60 sh -c 'kubectl delete pods --all -n gpu-operator --force --grace-period=0 >/dev/null 2>&1;
	[ "$(kubectl get pods -n gpu-operator -o name | wc -l)" -eq 0 ]' || bad "the device plugin's pods could not be removed"
for n in $GPU_NODES; do kubectl label node "$n" feature.node.kubernetes.io/pci-10de.present- >/dev/null 2>&1; done
clean
