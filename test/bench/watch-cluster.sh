#!/bin/sh
# The watch-cluster benchmark (inside the namespace test/bench/watch-cluster makes): a cluster
# at the scale of issue 40 served by the test kube-apiserver, then the two processes that list
# and watch it timed against it. Figures only, never assertions.
#
# The cluster: BENCH_NODES (default 5,000) fake AKS nodes beside the six of nodes.sh, four in
# five GPU nodes spread over the pools of report-policy.yaml, and BENCH_PODS (default 150,000)
# pods bound to them (spec.nodeName: no scheduler, no kubelet; the API server adds their
# managedFields): even ones ask for a GPU and sit on GPU nodes, odd ones are CPU pods on any
# node, so most CPU pods land on a GPU node: the report names each, and the model keeps their
# fields, more memory per pod than a cluster where those are few (the worst case; with
# BENCH_CPU_PODS=cpu they sit on CPU nodes only, where the webhook keeps them). Everything is
# created by loadgen create (test/cluster/tools/loadgen/create.go: BENCH_WORKERS clients, no
# client-side rate limit, which would hold kubectl to 5 requests a second); no webhook is
# registered, so the API server runs none of ours while it fills.
#
# 1. `gpu-admission watch` against kube-apiserver over TLS, pinned to one core: time to ready
#    (both lists, 25 objects a page, and the first report), its CPU time then, VmHWM.
# 2. Then watch events: a known number of pods deleted (DeleteCollection by label, four at a
#    time, grace 0), the time until the watch's model holds that many fewer pods (its
#    gpu_admission_watch_objects gauge), the watch's CPU time over it, VmHWM at the end.
# 3. `gpu-admission serve --claim-lookups` out of cluster with BENCH_CLAIMS (default 50,000)
#    ResourceClaims over ten namespaces: time until its three claim caches say synced, CPU,
#    VmHWM, then BENCH_REVIEWS (default 300) POSTs to /mutate of a pod whose claim is one of
#    them, over one kept-alive TLS connection: exact percentiles (nearest rank), and whether
#    the claim was found (gpu_admission_claim_lookups_total).
set -u
ROOT=$(pwd)
BIN=${BIN:-bin/gpu-admission}
B=$ROOT/$BIN
N=${BENCH_PODS:-150000}
NN=${BENCH_NODES:-5000}
NC=${BENCH_CLAIMS:-50000}
NR=${BENCH_REVIEWS:-300}
WORKERS=${BENCH_WORKERS:-8}
CPU_PODS=${BENCH_CPU_PODS:-all}
CHUNK=25000
. "$ROOT/test/cluster/cluster.lib"
. "$ROOT/test/cluster/nodes.sh"
PATH=$CP_BIN:$PATH
LOADGEN=$ROOT/build/cluster/bin/loadgen
T=$(mktemp -d)
pid=
tb0=$(date +%s.%N)
load0=$(cut -d' ' -f1-3 /proc/loadavg)
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; cp_down; rm -rf "$T"' EXIT
cp_netns && cp_up "$T/cp" && cp_nodes || exit 1
say() { echo "bench-watch-cluster: $*"; }
now() { date +%s.%N; }
# cpu_of PID: its user + system CPU seconds; hwm_of PID: its VmHWM in MB.
tck=$(getconf CLK_TCK)
cpu_of() { awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$1/stat"; }
hwm_of() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
# metric ADDR SAMPLE: a sample's value from a /metrics over plain HTTP (empty when absent).
metric() { curl -s "http://$1/metrics" | awk -v s="$2" '$1 == s { print $2; exit }'; }
# count PATH: how many objects a collection holds, from one item's page (the API server says
# how many remain: metadata.remainingItemCount), rather than listing 150,000 pods into kubectl.
count() { kubectl get --raw "$1?limit=1" | jq '(.items | length) + (.metadata.remainingItemCount // 0)'; }
# create WHAT FILE: loadgen create's figures, said; non-zero when an object failed.
create() {
	"$LOADGEN" create -f "$2" -workers "$WORKERS" >"$T/create.json" || return 1
	jq -r --arg w "$1" '"bench-watch-cluster: \($w): \(.objects) created in \(.seconds * 10 | round / 10) s (\(.perSec | round)/s, \(.workers) clients)" +
		(if .errors > 0 then ", \(.errors) failed: \(.firstError)" else "" end)' "$T/create.json"
	jq -e '.errors == 0' "$T/create.json" >/dev/null
}
# chunks WHAT TOTAL JQ-PROGRAM: the objects FROM..TO-1 the program makes ($from, $to), created
# CHUNK at a time (jq holds one chunk, not 150,000 pods).
chunks() {
	local what=$1 total=$2 prog=$3 from=0 to
	while [ "$from" -lt "$total" ]; do
		to=$((from + CHUNK < total ? from + CHUNK : total))
		jq -n --argjson from "$from" --argjson to "$to" --slurpfile gpu "$T/gpu-nodes.json" --slurpfile cpu "$T/cpu-nodes.json" \
			"\$gpu[0] as \$gpu | \$cpu[0] as \$cpu | {apiVersion: \"v1\", kind: \"List\", items: [range(\$from; \$to) | $prog]}" >"$T/list.json" || return 1
		create "$what $from..$((to - 1))" "$T/list.json" || return 1
		from=$to
	done
}
kv=$(kubectl version -o json | jq -r .serverVersion.gitVersion)

# ---- The nodes: one create each, status included ----
# A Node is created with its status (capacity, allocatable, Ready): "Nodes allow *all*
# fields, including status, to be set on create" (k8s.io/kubernetes
# pkg/registry/core/node/strategy.go, dropDisabledFields), as the kubelet registers one.
# The TaintNodesByCondition admission plugin still adds node.kubernetes.io/not-ready:
# NoSchedule (plugin/pkg/admission/nodetaint, addNotReadyTaint), which only the node
# lifecycle controller, off here (cluster.lib), removes: these nodes keep it, one taint more
# for the model to hold, nothing the report reads. Pools: i % 5 is a CPU pool (cpu), T4,
# T4 spot, A100 (8 GPUs) or H100 (8 GPUs); AKS names a node aks-POOL-ID-vmssNNNNNN.
pools='[{p: "cpu", s: "Standard_D16s_v5", g: 0}, {p: "gput4", s: "Standard_NC4as_T4_v3", g: 1},
	{p: "gput4spot", s: "Standard_NC4as_T4_v3", g: 1, spot: true}, {p: "gpua100", s: "Standard_ND96asr_v4", g: 8},
	{p: "gpuh100", s: "Standard_ND96isr_H100_v5", g: 8}]'
jq -n --argjson n "$NN" --arg hb "$(date -u +%Y-%m-%dT%H:%M:%SZ)" "$pools"' as $pools
	| {apiVersion: "v1", kind: "List", items: [range($n) as $i | $pools[$i % 5] as $q
	| ("aks-\($q.p)-6\($i % 5)000000-vmss\("000000\($i / 5 | floor)" | .[-6:])") as $name
	| ({cpu: "16", memory: "64Gi", pods: "110", "ephemeral-storage": "100Gi"}
	   + (if $q.g > 0 then {"nvidia.com/gpu": "\($q.g)"} else {} end)) as $r
	| {apiVersion: "v1", kind: "Node", metadata: {name: $name, labels: ({
		"kubernetes.io/hostname": $name, "kubernetes.io/os": "linux", "kubernetes.io/arch": "amd64",
		"node.kubernetes.io/instance-type": $q.s, "topology.kubernetes.io/zone": "eastus-\($i % 3 + 1)",
		"topology.kubernetes.io/region": "eastus", "agentpool": $q.p, "kubernetes.azure.com/agentpool": $q.p,
		"kubernetes.azure.com/mode": "user"}
		+ (if $q.g > 0 then {"kubernetes.azure.com/accelerator": "nvidia"} else {} end)
		+ (if $q.spot then {"kubernetes.azure.com/scalesetpriority": "spot"} else {} end))},
	  spec: {providerID: "azure:///subscriptions/0/resourceGroups/mc/providers/Microsoft.Compute/virtualMachineScaleSets/\($name)",
		taints: ((if $q.g > 0 then [{key: "sku", value: "gpu", effect: "NoSchedule"}] else [] end)
			+ (if $q.spot then [{key: "kubernetes.azure.com/scalesetpriority", value: "spot", effect: "NoSchedule"}] else [] end))},
	  status: {capacity: $r, allocatable: $r, conditions: [{type: "Ready", status: "True", reason: "KubeletReady",
		message: "fake node", lastHeartbeatTime: $hb, lastTransitionTime: $hb}]}}]}' >"$T/nodes.json" || exit 1
say "Kubernetes $kv, CPU pods on $CPU_PODS nodes, load average $load0 at the start"
create "$NN nodes" "$T/nodes.json" || exit 1
kubectl get nodes -o json >"$T/nodes-all.json" || exit 1
# The node names as files: 5,000 of them are more than one argument may hold (MAX_ARG_STRLEN).
jq -c '[.items[] | select(.status.allocatable["nvidia.com/gpu"] != null) | .metadata.name]' "$T/nodes-all.json" >"$T/gpu-nodes.json" &&
jq -c --arg on "$CPU_PODS" '[.items[] | select($on == "all" or .status.allocatable["nvidia.com/gpu"] == null) | .metadata.name]' \
	"$T/nodes-all.json" >"$T/cpu-nodes.json" || exit 1

# ---- The pods ----
kubectl create namespace bench >/dev/null || exit 1
# The ServiceAccount admission plugin refuses a pod whose ServiceAccount does not exist yet
# (plugin/pkg/admission/serviceaccount, Admit: "error looking up service account"), and the
# namespace's default one is the controller manager's work: waited for.
cp_wait 60 kubectl get serviceaccount default -n bench || { say "no default ServiceAccount in bench"; exit 1; }
# Labels: shard (16) and slice (256), the handles step 2 deletes by.
t0=$(now)
chunks pods "$N" '{apiVersion: "v1", kind: "Pod",
	metadata: {name: "w-\(.)", namespace: "bench", labels: {app: "bench", shard: "\(. % 16)", slice: "\(. % 256)"}},
	spec: {nodeName: (if . % 2 == 0 then $gpu[(. / 2 | floor) % ($gpu | length)] else $cpu[(. / 2 | floor) % ($cpu | length)] end),
		tolerations: [{operator: "Exists"}],
		containers: [{name: "c", image: "registry.example/c:1", resources: (if . % 2 == 0
		then {limits: {"nvidia.com/gpu": "1"}} else {requests: {cpu: "100m", memory: "128Mi"}} end)}]}}' || exit 1
t1=$(now)
made=$(count /api/v1/pods)
nodes=$(count /api/v1/nodes)
say "$made pods and $nodes nodes in the cluster, the pods created in $(echo "$t0 $t1" | awk '{ printf "%.0f", $2 - $1 }') s"
bytes=$(kubectl get --raw "/api/v1/pods?limit=500" | jq -c '.items[]' | awk '{ s += length($0) + 1 } END { printf "%.0f", s / NR }')
pin=
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then pin="taskset -c 0"; fi
addr=127.0.0.1:19191
objs=$((made + nodes))

# watch_start BINARY: one watch from start to ready, its figures said; left running ($pid).
watch_start() {
	local t0 t1
	t0=$(now)
	$pin "$1" watch -c "$ROOT/test/bench/report-policy.yaml" --kubeconfig "$KUBECONFIG" --addr "$addr" \
		--interval 3600 2>"$T/watch.log" &
	pid=$!
	until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ]; do
		kill -0 "$pid" 2>/dev/null || { tail -5 "$T/watch.log" >&2; return 1; }
		sleep 0.1
	done
	t1=$(now)
	echo "$t0 $t1 $(cpu_of "$pid") $objs $bytes $(hwm_of "$pid") $1 $(metric "$addr" 'gpu_admission_watch_objects{resource="pods"}')" |
		awk '{ printf "bench-watch-cluster: %s: %d objects (pods of ~%d bytes as listed) ready in %.1f s, %.2f s CPU (%.0f objects/s of CPU, %.0f/s of wall time), peak RSS %s MB; its model holds %s pods\n", $7, $4, $5, $2 - $1, $3, $4 / $3, $4 / ($2 - $1), $6, $8 }'
}
watch_stop() { kill "$pid"; wait "$pid" 2>/dev/null; pid=; }
# BENCH_BASE: other binaries listed the same way before BIN (a before/after on the same
# cluster); only BIN goes on to the events, which delete pods.
for b in ${BENCH_BASE:-}; do
	watch_start "$b" || exit 1
	watch_stop
done
watch_start "$B" || exit 1

# ---- Watch events: the pods of slices 0..31 (an eighth) deleted ----
# DeleteCollection with gracePeriodSeconds=0: a bound pod deleted gracefully would wait for
# its kubelet (pkg/registry/core/pod/strategy.go, CheckGracefulDelete), and there is none.
# The API server deletes a collection's items one by one (--delete-collection-workers,
# default 1: k8s.io/apiserver pkg/registry/generic/registry/store.go DeleteCollection), and a
# call must end within its 60 s request timeout: slices of ~600 pods, four calls at a time.
# Each pod makes two events: MODIFIED, its deletionTimestamp set (the pod strategy's
# CheckGracefulDelete says graceful, with the period 0 asked: k8s.io/apiserver
# pkg/registry/rest/delete.go BeforeDelete), then DELETED, the store deleting it at once
# (pkg/registry/generic/registry/store.go updateForGracefulDeletionAndFinalizers); each
# carries the whole pod. The watch's events_total counts both.
gone=$(awk -v n="$N" 'BEGIN { for (i = 0; i < n; i++) if (i % 256 < 32) k++; print k + 0 }')
p0=$(metric "$addr" 'gpu_admission_watch_objects{resource="pods"}')
ev0=$(metric "$addr" 'gpu_admission_watch_events_total{resource="pods"}')
c0=$(cpu_of "$pid")
t0=$(now)
seq 0 31 | xargs -P 4 -I '{}' kubectl delete --raw "/api/v1/namespaces/bench/pods?labelSelector=slice%3D{}&gracePeriodSeconds=0" >/dev/null ||
	say "a DeleteCollection failed"
t1=$(now)
want=$((p0 - gone))
pods_are() { [ "$(metric "$addr" 'gpu_admission_watch_objects{resource="pods"}')" = "$1" ]; }
CP_WAIT_PID=$pid cp_wait 600 pods_are "$want" ||
	say "the watch's model never came down to $want pods (now $(metric "$addr" 'gpu_admission_watch_objects{resource="pods"}'))"
t2=$(now)
c1=$(cpu_of "$pid")
ev1=$(metric "$addr" 'gpu_admission_watch_events_total{resource="pods"}')
echo "$t0 $t1 $t2 $c0 $c1 $gone $ev0 $ev1 $(hwm_of "$pid")" | awk '{ e = $8 - $7; printf "bench-watch-cluster: events: %d pods deleted in %.1f s by the API server, %d pod watch events (bookmarks included) applied by the watch %.1f s after the first deletion (%.0f events/s of wall time), %.2f s CPU (%.0f events/s of CPU); peak RSS %s MB\n", $6, $2 - $1, e, $3 - $1, e / ($3 - $1), $5 - $4, e / ($5 - $4 > 0 ? $5 - $4 : 0.01), $9 }'
watch_stop

# ---- The webhook's claim cache ----
# resource.k8s.io/v1 is served by default from Kubernetes 1.34 (DRA GA). One DeviceClass,
# a ResourceClaimTemplate in each of ten namespaces, BENCH_CLAIMS claims over them (no
# driver allocates them: the webhook reads a claim's requests, not its allocation).
kubectl create -f - >/dev/null <<EOF || exit 1
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
 "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}
EOF
jq -n '{apiVersion: "v1", kind: "List", items: ([range(10) | {apiVersion: "v1", kind: "Namespace", metadata: {name: "claims-\(.)"}}]
	+ [range(10) | {apiVersion: "resource.k8s.io/v1", kind: "ResourceClaimTemplate", metadata: {name: "gpu-1", namespace: "claims-\(.)"},
		spec: {spec: {devices: {requests: [{name: "gpu", exactly: {deviceClassName: "gpu.nvidia.com", count: 1}}]}}}}])}' >"$T/ns.json"
"$LOADGEN" create -f "$T/ns.json" -workers 1 >/dev/null || exit 1
chunks claims "$NC" '{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaim", metadata: {name: "c-\(.)", namespace: "claims-\(. % 10)"},
	spec: {devices: {requests: [{name: "gpu", exactly: {deviceClassName: "gpu.nvidia.com", count: (. % 2 + 1)}}]}}}' || exit 1
claims=$(count /apis/resource.k8s.io/v1/resourceclaims)
"$B" certs --service gpu-admission --namespace bench --out "$T/certs" --san 127.0.0.1 >/dev/null || exit 1
maddr=127.0.0.1:19192
t0=$(now)
$pin "$B" serve --tls-cert "$T/certs/tls.crt" --tls-key "$T/certs/tls.key" --addr 127.0.0.1:18443 \
	--metrics-addr "$maddr" --claim-lookups --kubeconfig "$KUBECONFIG" --log-level warn 2>"$T/serve.log" &
pid=$!
synced() {
	curl -s "http://$maddr/metrics" | awk '$1 ~ /^gpu_admission_claim_cache_synced\{/ { n++; s += $2 } END { exit !(n == 3 && s == 3) }'
}
CP_WAIT_PID=$pid cp_wait 600 synced || { say "the claim caches never synced"; tail -5 "$T/serve.log" >&2; exit 1; }
t1=$(now)
echo "$t0 $t1 $(cpu_of "$pid") $claims $(metric "$maddr" 'gpu_admission_claim_cache_objects{resource="resourceclaims"}') $(hwm_of "$pid")" |
	awk '{ printf "bench-watch-cluster: serve --claim-lookups: %d ResourceClaims, caches synced in %.1f s (from the start), %.2f s CPU (%.0f claims/s of CPU, %.0f/s of wall time), the cache holds %s; peak RSS %s MB\n", $4, $2 - $1, $3, $4 / ($3 > 0 ? $3 : 0.01), $4 / ($2 - $1), $5, $6 }'
# The review: a pod of claims-3 whose GPU is the claim c-3 (one of the 50,000, in claims-3).
jq -n '{apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: {uid: "bench-claim",
	kind: {group: "", version: "v1", kind: "Pod"}, resource: {group: "", version: "v1", resource: "pods"},
	name: "p", namespace: "claims-3", operation: "CREATE", userInfo: {username: "bench", groups: ["system:authenticated"]},
	object: {apiVersion: "v1", kind: "Pod", metadata: {name: "p", namespace: "claims-3"},
		spec: {resourceClaims: [{name: "gpu", resourceClaimName: "c-3"}],
			containers: [{name: "c", image: "registry.example/c:1", resources: {claims: [{name: "gpu"}]}}]}}}}' >"$T/review.json"
found0=$(metric "$maddr" 'gpu_admission_claim_lookups_total{result="found"}')
# One curl, NR + 1 requests on one connection kept alive; the first (with the TLS handshake)
# is not counted.
i=0
while [ "$i" -le "$NR" ]; do
	[ "$i" -eq 0 ] || echo next
	printf 'url = "https://127.0.0.1:18443/mutate"\ncacert = "%s"\nheader = "Content-Type: application/json"\ndata-binary = "@%s"\noutput = "%s"\nwrite-out = "%%{http_code} %%{time_total}\\n"\n' \
		"$T/certs/ca.crt" "$T/review.json" "$T/review.out"
	i=$((i + 1))
done >"$T/curl.cfg"
curl -s -K "$T/curl.cfg" >"$T/lat" || say "curl failed"
found=$(( $(metric "$maddr" 'gpu_admission_claim_lookups_total{result="found"}') - found0 ))
allowed=$(jq -r .response.allowed "$T/review.out")
sed 1d "$T/lat" | awk '{ print $2 * 1000, $1 }' | sort -n | awk -v found="$found" -v allowed="$allowed" -v hwm="$(hwm_of "$pid")" '
	{ v[NR] = $1; if ($2 != 200) bad++ }
	function rank(p) { i = int(NR * p + 0.999999); return v[i < 1 ? 1 : i] }
	END { printf "bench-watch-cluster: review of a pod whose claim is among them, %d POSTs to /mutate on one connection: p50 %.2f ms, p90 %.2f, p99 %.2f, max %.2f; %d not 200; allowed %s; claim lookups found %d; peak RSS %s MB\n", NR, rank(0.5), rank(0.9), rank(0.99), v[NR], bad, allowed, found, hwm }'
watch_stop
echo "bench-watch-cluster: kube-apiserver RSS $(ps -o rss= -p "$CP_APISERVER_PID" | awk '{printf "%.0f MB", $1 / 1024}') (peak $(hwm_of "$CP_APISERVER_PID") MB); load average $(cut -d' ' -f1-3 /proc/loadavg) at the end; the whole bench $(echo "$tb0 $(now)" | awk '{ printf "%.0f", $2 - $1 }') s"
