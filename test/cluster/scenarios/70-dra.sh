# Sourced by suite.sh (full mode): issue 28 item 1, DRA claim lookups. The replica
# resolves pods' claims from watch caches of resource.k8s.io/v1 (GA and served by
# default from 1.34: k8s.io/kubernetes pkg/features/kube_features.go
# DynamicResourceAllocation GA 1.34; pkg/controlplane/instance.go lists
# resourcev1.SchemeGroupVersion in stableAPIGroupVersionsEnabledByDefault), read as
# the chart's ServiceAccount with the chart's ClusterRole and nothing else.
# DRA as upstream runs it, with no driver: the resourceclaim controller makes each
# pod's claim from its template and records it in the pod's
# status.resourceClaimStatuses (k8s.io/kubernetes pkg/controller/resourceclaim/
# controller.go syncPod, handleClaim); the scheduler's DynamicResources plugin
# allocates devices from the ResourceSlices published for a node (Filter, Reserve)
# and writes the allocation into the claim's status before binding (PreBind ->
# bindClaim: pkg/scheduler/framework/plugins/dynamicresources/dynamicresources.go).
# Taints are another plugin's (pkg/scheduler/framework/plugins/tainttoleration
# Filter): a claim does not make a pod tolerate the GPU nodes' sku=gpu taint.
clean
cp_clear_pods
ns team-dra

# wh_metric SAMPLE: the value of one sample (name and labels as printed) of the replica's /metrics.
wh_metric() {
	curl -sf --cacert "$WH_DIR/caBundle.pem" --resolve "$WH_HOST:$WH_PORT:$CP_WEBHOOK_IP" "https://$WH_HOST:$WH_PORT/metrics" |
		awk -v m="$1" '$1 == m { print $2 }'
}
# metric_is SAMPLE VALUE, metric_above SAMPLE N: for cp_wait.
metric_is() { [ "$(wh_metric "$1")" = "$2" ]; }
metric_above() { [ "$(wh_metric "$1")" -gt "$2" ]; }
# lookup_counted TEMPLATE RESULT N: a dry-run pod of TEMPLATE reviewed, and the lookups
# counted with RESULT above N (for cp_wait).
lookup_counted() {
	dra_pod probe "$1"
	kubectl create --dry-run=server -n team-dra -f "$T/probe.in" >/dev/null 2>&1
	[ "$(wh_metric "gpu_admission_claim_lookups_total{result=\"$2\"}")" -gt "$3" ]
}
TMPL='{apiVersion: "resource.k8s.io/v1", kind: "ResourceClaimTemplate", metadata: {name: $n},
	spec: {spec: {devices: {requests: [{name: "gpu", exactly: {deviceClassName: "gpu.nvidia.com", count: 1}}]}}}}'
# dra_pod NAME TEMPLATE: a pod whose only GPU is a claim from TEMPLATE, used by its container.
dra_pod() {
	pod "$1" ".spec.resourceClaims = [{name: \"gpu\", resourceClaimTemplateName: \"$2\"}]
		| .spec.containers[0].resources.claims = [{name: \"gpu\"}]" >"$T/$1.in"
}

# The template of the unjudged pod below, made now, before the API server restarts: the
# resourceclaim controller has no event handler for templates (only a lister), so a
# pod whose template its informer has not seen yet fails its sync and is retried on
# the workqueue's per-item backoff, 5 ms doubling up to 1000 s (k8s.io/kubernetes
# pkg/controller/resourceclaim/controller.go NewController, syncPod "resource claim
# template ... not found", processNextWorkItem AddRateLimited; client-go
# DefaultTypedControllerRateLimiter). A template made right after a restart, while that
# informer still backs off, can hold the pod's claim back for minutes.
kubectl create -n kube-system -f - >/dev/null <<EOF2 || bad "the ResourceClaimTemplate gpu-1 in kube-system"
$(jq -n --arg n gpu-1 "$TMPL")
EOF2

# No claimLookups value: the chart's default, auto, turns the lookups on because this API
# server serves resource.k8s.io/v1 (helm asks it), and webhook.lib gives the replica the
# ServiceAccount's token because the rendered args say --claim-lookups.
HELM_VALUES_DRA="-f $ROOT/test/cluster/values/three-pools.yaml"
# shellcheck disable=SC2086
if helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reset-values -f "$ROOT/test/cluster/values/image.yaml" \
	$HELM_VALUES_DRA >"$T/upgrade.out" 2>&1; then ok; else bad "helm upgrade, claim lookups by default"; cat "$T/upgrade.out"; fi
kubectl get deployment -n "$RNS" "$REL" -o json | jq -e '.spec.template.spec.containers[0].args | index("--claim-lookups")' \
	>/dev/null && ok || bad "claimLookups.enabled auto on an API server serving resource.k8s.io/v1: serve --claim-lookups"

# The chart's identity reads exactly the DRA claim objects, and writes nothing.
SA=system:serviceaccount:$RNS:$REL
for v in get list watch; do
	for r in resourceclaimtemplates resourceclaims deviceclasses; do
		equals "$(kubectl auth can-i "$v" "$r.resource.k8s.io" --all-namespaces --as "$SA")" yes "the ServiceAccount may $v $r"
	done
done
equals "$(kubectl auth can-i create resourceclaims.resource.k8s.io -n team-dra --as "$SA")" no "the ServiceAccount may not create claims"
equals "$(kubectl auth can-i list pods --all-namespaces --as "$SA")" no "the ServiceAccount may not list pods"
equals "$(kubectl auth can-i list secrets -n "$RNS" --as "$SA")" no "the ServiceAccount may not list secrets"

# Cold: the replica cannot reach its API server (nothing listens on that port). It is
# ready all the same, and a DRA pod is admitted as if its claim were unknown, with a
# warning saying why, and counted.
WH_API_SERVER="https://$CP_API_IP:1"
wh_restart && ok || bad "the replica is ready with its API server unreachable (lookups never gate readiness)"
kubectl create -n team-dra -f - >/dev/null <<EOF2 || bad "the ResourceClaimTemplate gpu-1"
$(jq -n --arg n gpu-1 "$TMPL")
EOF2
dra_pod dra-cold gpu-1
created team-dra dra-cold "cold cache: the DRA pod is admitted, never refused for want of the API"
has "$T/dra-cold.err" "cache not synced" "cold cache: kubectl shows the warning"
jq -e '.spec.tolerations // [] | map(select(.key == "sku")) | length == 0' "$T/dra-cold.out" >/dev/null && ok ||
	bad "cold cache: the claim is unknown, so no GPU toleration"
# Counted per review: the mutating and the validating webhook each look the claim up.
[ "$(wh_metric 'gpu_admission_claim_lookups_total{result="cold"}')" -ge 1 ] && ok || bad "cold cache: the lookup is counted as cold"
equals "$(wh_metric 'gpu_admission_claim_cache_synced{resource="resourceclaimtemplates"}')" 0 "cold cache: not synced"
[ "$(wh_metric 'gpu_admission_claim_cache_errors_total{resource="resourceclaims"}')" -ge 1 ] && ok || bad "cold cache: the failed lists are counted"

# Warm: the real API server. The caches list and watch; a template is found.
WH_API_SERVER=""
wh_restart || bad "the replica with claim lookups"
for r in resourceclaimtemplates resourceclaims deviceclasses; do
	cp_wait 30 metric_is "gpu_admission_claim_cache_synced{resource=\"$r\"}" 1 && ok || bad "the $r cache synced"
done
# Two templates named gpu-1: team-dra's, and kube-system's for the unjudged pod (made at the top).
equals "$(wh_metric 'gpu_admission_claim_cache_objects{resource="resourceclaimtemplates"}')" 2 \
	"the template cache holds both templates (gpu-1 in team-dra and in kube-system)"
found0=$(wh_metric 'gpu_admission_claim_lookups_total{result="found"}')
dra_pod dra-warm gpu-1
created team-dra dra-warm "warm cache: the DRA pod is created"
lacks "$T/dra-warm.err" "cache not synced" "warm cache: no cold warning"
[ "$(wh_metric 'gpu_admission_claim_lookups_total{result="found"}')" -gt "$found0" ] && ok || bad "warm cache: the template was found"

# kube-apiserver restarts. The caches lose their watch, back off, and come back on
# their own: a template deleted and one created right after the restart (while the
# caches are still reconnecting) are seen, with no restart of the replica.
# Gone, not only not ready: it fails /readyz as soon as its graceful shutdown starts
# (a zombie until this shell reaps it counts as gone).
kill "$CP_APISERVER_PID"
cp_wait 90 sh -c "! kill -0 $CP_APISERVER_PID 2>/dev/null || grep -q '^State:.*Z' /proc/$CP_APISERVER_PID/status" && ok ||
	bad "kube-apiserver stopped"
cp_wait 30 metric_is 'gpu_admission_claim_cache_watching{resource="resourceclaimtemplates"}' 0 && ok ||
	bad "the template cache saw its watch end"
equals "$(wh_metric 'gpu_admission_claim_cache_synced{resource="resourceclaimtemplates"}')" 1 \
	"API server down: the caches stay synced, answering from what they last saw"
cp_apiserver "$T/cp" && ok || bad "kube-apiserver restarted"
kubectl delete resourceclaimtemplate gpu-1 -n team-dra >/dev/null || bad "deleting gpu-1"
kubectl create -n team-dra -f - >/dev/null <<EOF2 || bad "the ResourceClaimTemplate gpu-late"
$(jq -n --arg n gpu-late "$TMPL")
EOF2
cp_wait 60 metric_is 'gpu_admission_claim_cache_watching{resource="resourceclaimtemplates"}' 1 && ok ||
	bad "the template cache watches again"
# Seen: gpu-late found, gpu-1 gone. A dry-run pod of each is reviewed until the
# lookup counters say so (the caches catch up on their own, after their backoff).
found0=$(wh_metric 'gpu_admission_claim_lookups_total{result="found"}')
missing0=$(wh_metric 'gpu_admission_claim_lookups_total{result="not_found"}')
cp_wait 60 lookup_counted gpu-late found "$found0" && ok || bad "after the restart: the template created after it is found"
cp_wait 60 lookup_counted gpu-1 not_found "$missing0" && ok || bad "after the restart: the template deleted after it is gone"
dra_pod dra-late gpu-late
created team-dra dra-late "after the restart: a pod of the new template is created"
lacks "$T/dra-late.err" "cache not synced" "after the restart: no cold warning"

# 410 Gone, from the real API server. A restarted kube-apiserver's watch cache starts from
# a list at etcd's current revision, and a watch from a resourceVersion before that list is
# refused "too old resource version" (ResourceExpired, 410: k8s.io/apiserver
# pkg/storage/cacher watch_cache.go getAllEventsSinceLocked, oldest = listResourceVersion+1
# while no event was dropped since the list, then resourceVersion < oldest-1). So while the
# API server is down a ResourceClaimTemplate is written into etcd itself, through its HTTP
# gateway (as JSON, which the storage's recognizing decoder reads beside protobuf): etcd's
# revision moves past every resourceVersion the caches hold, and the object exists without a
# watch event any cache could resume to. Only a relist can find it.
relists0=$(wh_metric 'gpu_admission_claim_cache_relists_total{resource="resourceclaimtemplates"}')
found0=$(wh_metric 'gpu_admission_claim_lookups_total{result="found"}')
kill "$CP_APISERVER_PID"
cp_wait 90 sh -c "! kill -0 $CP_APISERVER_PID 2>/dev/null || grep -q '^State:.*Z' /proc/$CP_APISERVER_PID/status" && ok ||
	bad "kube-apiserver stopped (for the 410)"
b64() { printf '%s' "$1" | base64 -w0; }
outage_obj=$(jq -nc --arg n gpu-outage "$TMPL | .metadata += {namespace: \"team-dra\", uid: \"5f0c1d2e-0000-4000-8000-000000000410\",
	creationTimestamp: \"2026-01-01T00:00:00Z\"}")
curl -sf -X POST http://127.0.0.1:2379/v3/kv/put \
	-d "{\"key\": \"$(b64 /registry/resourceclaimtemplates/team-dra/gpu-outage)\", \"value\": \"$(b64 "$outage_obj")\"}" \
	>"$T/etcd-put.out" && ok || bad "etcd took the template written while the API server was down"
cp_apiserver "$T/cp" && ok || bad "kube-apiserver restarted (for the 410)"
equals "$(kubectl get resourceclaimtemplate gpu-outage -n team-dra -o jsonpath='{.metadata.name}' 2>&1)" gpu-outage \
	"the API server serves the template written into etcd"
cp_wait 120 metric_above 'gpu_admission_claim_cache_relists_total{resource="resourceclaimtemplates"}' "$relists0" &&
	ok || bad "410 Gone: the template cache relisted (gpu_admission_claim_cache_relists_total)"
[ "$(wh_count 'cache relist: resourceVersion too old')" -ge 1 ] && ok || bad "410 Gone: the replica logged the relist"
echo "cluster: 410 Gone: the template cache relisted $(( $(wh_metric 'gpu_admission_claim_cache_relists_total{resource="resourceclaimtemplates"}') - relists0 )) time(s)"
cp_wait 60 metric_is 'gpu_admission_claim_cache_watching{resource="resourceclaimtemplates"}' 1 && ok ||
	bad "after the relist: the template cache watches again"
cp_wait 60 lookup_counted gpu-outage found "$found0" && ok ||
	bad "after the relist: the template written during the outage is found"
dra_pod dra-outage gpu-outage
created team-dra dra-outage "after the relist: a pod of that template is created"
gpu_tolerated "$T/dra-outage.out" && ok || bad "after the relist: its claim counts as a GPU: the pod tolerates sku=gpu"
lacks "$T/dra-outage.err" "not found" "after the relist: no not-found warning"

# The scheduler's side, on the fake GPU nodes: a DeviceClass and a ResourceSlice per
# GPU node (one device per GPU, driver gpu.nvidia.com, the node's own pool). The
# pods above go first, so that they take no device.
clean
kubectl apply -f - >/dev/null <<EOF2 || bad "the DeviceClass gpu.nvidia.com"
{"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": "gpu.nvidia.com"},
 "spec": {"selectors": [{"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}}]}}
EOF2
echo "$CP_NODES" | while read -r name pool size gpus rest; do
	case $gpus in nvidia.com/gpu=*) ;; *) continue ;; esac
	n=$(echo "$gpus" | sed 's/^nvidia.com\/gpu=\([0-9]*\).*/\1/')
	jq -n --arg node "$name" --argjson n "$n" '{apiVersion: "resource.k8s.io/v1", kind: "ResourceSlice",
		metadata: {name: ("gpu-" + $node)}, spec: {driver: "gpu.nvidia.com", nodeName: $node,
		pool: {name: $node, generation: 1, resourceSliceCount: 1},
		devices: [range(0; $n) | {name: ("gpu-\(.)"), attributes: {type: {string: "gpu"}}}]}}' |
		kubectl apply -f - >/dev/null || echo "$name" >>"$T/slices.failed"
done
equals "$(cat "$T/slices.failed" 2>/dev/null | wc -l)" 0 "a ResourceSlice for every fake GPU node"
cp_wait 30 metric_is 'gpu_admission_claim_cache_objects{resource="deviceclasses"}' 1 && ok ||
	bad "the DeviceClass cache holds gpu.nvidia.com"

# Without the webhook (kube-system, which it never judges), a DRA pod stays
# unscheduled: the GPU nodes' taint repels it (the devices are there) and the CPU
# node publishes none. This is the issue's first finding, as upstream behaves.
dra_pod dra-plain gpu-1
created kube-system dra-plain "unjudged: a DRA pod without the GPU toleration is created"
# The API server restarted twice above, and the scheduler's and the controller
# manager's informers lost their watches with it. A reflector retries on its own
# backoff: 800 ms doubling up to 30 s, each wait jittered by up to as much again, reset
# only after 2 min without a failure (k8s.io/client-go tools/cache/reflector.go
# NewReflectorWithOptions: NewExponentialBackoffManager(800ms, 30s, 2min, 2.0, 1.0)).
# So each may watch again up to a minute after the API server is back, and this pod
# needs both: the resourceclaim controller must see it to make its claim (from a
# template it knew before the restarts: see the top), the scheduler must see the
# claim (the DynamicResources PreEnqueue holds the pod back until then, with no
# condition written). Hence two waits, each past that minute.
t0=$(date +%s)
dra_plain_claim() {
	[ -n "$(kubectl get pod -n kube-system dra-plain -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')" ]
}
# cp_logs_of WORD: the control plane's last log lines about WORD, for a failure's details.
cp_logs_of() {
	for c in controller-manager scheduler; do grep -h "$1" "$T/cp/$c.log" | tail -n 5 | sed "s/^/$c: /"; done | indent
}
cp_wait 150 dra_plain_claim && ok || { bad "unjudged: the resourceclaim controller made the DRA pod's claim"; cp_logs_of dra-plain; }
t1=$(date +%s)
# The condition's message is the last attempt's: an attempt made before the
# scheduler's informers saw the DeviceClass or the claim fails in PreFilter ("device
# class ... does not exist", "resourceclaim ... not found": dynamicresources.go
# PreFilter, podResourceClaims) and the pod is retried when they arrive
# (EventsToRegister), so wait for the attempt that reached the nodes' filters.
dra_plain_why() {
	kubectl get pod -n kube-system dra-plain -o json |
		jq -r '.status.conditions[]? | select(.type == "PodScheduled" and .reason == "Unschedulable") | .message' >"$T/dra-plain.why"
	grep -q "untolerated taint" "$T/dra-plain.why"
}
cp_wait 150 dra_plain_why && ok ||
	{ bad "unjudged: the DRA pod is unschedulable for the GPU nodes' taint (last message: '$(cat "$T/dra-plain.why")')"; cp_logs_of dra-plain; }
echo "cluster: unjudged DRA pod after the restarts: its claim made in $((t1 - t0)) s, its verdict $(($(date +%s) - t1)) s later"

# With the webhook: the same pod, no hand-written toleration. Its claim, looked up in
# the cache, asks for one gpu.nvidia.com device (a default gpuDeviceClasses class):
# the pod gets the GPU toleration and the cheapest pool that serves it (t4), the
# scheduler allocates it a device of a t4 node's ResourceSlice and binds it there.
dra_pod dra-gpu gpu-late
created team-dra dra-gpu "a DRA GPU pod is created"
gpu_tolerated "$T/dra-gpu.out" && ok || bad "the DRA GPU pod is mutated: it tolerates sku=gpu:NoSchedule"
equals "$(jq -r '.spec.nodeSelector["kubernetes.azure.com/agentpool"] // "none"' "$T/dra-gpu.out")" gput4 \
	"the DRA GPU pod is pinned to the cheapest pool serving its class (t4)"
# Bound within the same bound as dra-plain above, and for the same reasons: its claim comes
# from gpu-late, a template made between the two restarts, which the controller manager's
# template informer may list only after its reflector's backoff; until then syncPod fails
# and the pod's key goes back on the workqueue with exponential back-off (5 ms doubling up
# to 1000 s: client-go util/workqueue DefaultTypedControllerRateLimiter), and the scheduler
# retries the pod when the claim or the slices arrive (EventsToRegister), after its own
# back-off (1 s doubling up to 10 s: pkg/scheduler/backend/queue). 30 s was seen to be short.
dra_gpu_bound() { [ -n "$(kubectl get pod -n team-dra dra-gpu -o jsonpath='{.spec.nodeName}')" ]; }
cp_wait 150 dra_gpu_bound && ok || {
	bad "the scheduler binds the DRA GPU pod (status: $(kubectl get pod -n team-dra dra-gpu -o json |
		jq -c '[.status.resourceClaimStatuses, (.status.conditions[]? | select(.type == "PodScheduled") | .message)]'))"
	cp_logs_of dra-gpu
}
equals "$(pool_of team-dra dra-gpu)" gput4 "the scheduler binds the DRA GPU pod to a t4 node"
node=$(node_of team-dra dra-gpu)
claim=$(kubectl get pod -n team-dra dra-gpu -o jsonpath='{.status.resourceClaimStatuses[0].resourceClaimName}')
equals "$(kubectl get resourceclaim -n team-dra "$claim" -o jsonpath='{.status.allocation.devices.results[0].pool}')" \
	"$node" "its claim is allocated a device of that node's ResourceSlice"
equals "$(wh_count '"level":"error"')" 0 "the replica logged no error"

# audit and report over this state as kubectl gets it (issue 28): dra-gpu bound to $node with
# its claim allocated there and reserved for it; dra-plain (kube-system) Pending, its claim
# made from its template but not allocated. Every GPU node offers nvidia.com/gpu and has a
# ResourceSlice; no other pod runs on a GPU node (clean).
kubectl get configmap -n "$RNS" "$REL-policy" -o jsonpath='{.data.policy\.yaml}' >"$T/dra-policy.yaml"
cp_wait 30 sh -c "kubectl get resourceclaim -n kube-system -o json | jq -e '.items | length == 1'" && ok ||
	bad "the resourceclaim controller made dra-plain's claim"
# The pods clean removed above (dra-warm, dra-late, dra-outage) leave their claims to the
# garbage collector: a claim made from a template is owned by its pod (ownerReferences,
# controller: true: pkg/controller/resourceclaim/controller.go handleClaim), and the
# collector deletes a dependent whose owner is gone (pkg/controller/garbagecollector/
# garbagecollector.go attemptToDeleteItem), when a loaded control plane gets to it. Until
# then a snapshot holds claims that the watch, listing a few seconds later, no longer
# sees: wait until every claim's owning pod exists.
owned_claims_live() {
	kubectl get pods,resourceclaims -A -o json | jq -e '
		[.items[] | select(.kind == "Pod") | "\(.metadata.namespace)/\(.metadata.name)"] as $pods
		| [.items[] | select(.kind == "ResourceClaim") | .metadata as $m
			| ($m.ownerReferences // [])[] | select(.kind == "Pod") | "\($m.namespace)/\(.name)"]
		| all(.[]; . as $o | $pods | index($o) != null)' >/dev/null
}
cp_wait 120 owned_claims_live && ok || { bad "the claims of the pods clean removed are collected";
	kubectl get resourceclaims -A -o wide 2>&1 | indent; }
kubectl get nodes,pods,resourceslices,resourceclaims -A -o json >"$T/dra-state.json"
"$B" report -c "$T/dra-policy.yaml" -o json --fail-on none "$T/dra-state.json" >"$T/dra-report.json" 2>"$T/dra-report.err"
equals "$?" 0 "report over kubectl get nodes,pods,resourceslices,resourceclaims -A -o json"
equals "$(jq -c '.summary | [.gpuNodes, .idleNodes, .cpuPodsOnGpuNodes, .pendingGpuPods, .misconfigurations, .errors]' "$T/dra-report.json")" \
	'[5,4,0,1,0,0]' "report: 5 GPU nodes, 4 idle (not dra-gpu's), no CPU pod on a GPU node, 1 Pending DRA pod, no misconfiguration, no error"
equals "$(jq -r --arg n "$node" '[.pools[] | .idleNodeNames[] | select(. == $n)] | length' "$T/dra-report.json")" 0 \
	"report: the node whose GPU dra-gpu's claim holds is busy"
equals "$(jq -r '[.pendingGpuPods[] | "\(.namespace)/\(.name) \(.reason)"] | join(",")' "$T/dra-report.json")" \
	"kube-system/dra-plain claim-unallocated" "report: the Pending DRA pod's reason is its unallocated claim"
[ -s "$T/dra-report.err" ] && { bad "report wrote to stderr"; head -n 5 "$T/dra-report.err"; } || ok

kubectl get pods,resourceclaimtemplates,resourceclaims -A -o json >"$T/dra-live.json"
"$B" audit -c "$T/dra-policy.yaml" -o json "$T/dra-live.json" >"$T/dra-audit.json" 2>"$T/dra-audit.err"
equals "$(jq '.errors | length' "$T/dra-audit.json")" 0 "audit of the live DRA objects: no input error"
equals "$(jq -r '[.findings[] | select(.name == "dra-gpu" or .name == "dra-plain") | "\(.name) \(.verdict) \(.reason)"] | sort | join(",")' "$T/dra-audit.json")" \
	"dra-gpu ok gpu-pod-ok,dra-plain exempt exempt-namespace" \
	"audit: dra-gpu, its claim looked up in the input, is a placed GPU pod; dra-plain is kube-system's"

# The live watch over the same state (issue 25): `gpu-admission watch` lists and watches
# ResourceSlices and ResourceClaims beside nodes and pods, so its /metrics must give the
# figures `report -o prometheus` gives over `kubectl get nodes,pods,resourceslices,
# resourceclaims -A -o json` of this state, and follow a claim allocated then deleted.
# Which resource.k8s.io version to read it asks discovery: GET /apis/resource.k8s.io/v1
# (an APIResourceList; k8s.io/apiserver pkg/endpoints/discovery/version.go), open to every
# authenticated user, so the watch needs no grant for it (the system:discovery ClusterRole,
# "/apis/*", bound to system:authenticated: k8s.io/kubernetes
# plugin/pkg/auth/authorizer/rbac/bootstrappolicy/policy.go).
DW_ADDR=127.0.0.1:19091
"$B" watch -c "$T/dra-policy.yaml" --kubeconfig "$KUBECONFIG" --addr "$DW_ADDR" --interval 2 --log-format json \
	>>"$T/dra-watch.log" 2>&1 &
DW_PID=$!
CP_PIDS="$CP_PIDS $DW_PID"
CP_WAIT_PID=$DW_PID cp_wait 60 curl -sf "http://$DW_ADDR/readyz" && ok ||
	{ bad "gpu-admission watch is ready against the API server with DRA"; tail -n 20 "$T/dra-watch.log"; }
# dw_metric SAMPLE: one sample of the watch's /metrics; dw_report: its report figures, sorted;
# snap_report FILE: report -o prometheus's over FILE, sorted; dw_same FILE: for cp_wait.
dw_metric() { curl -sf "http://$DW_ADDR/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
dw_report() { curl -sf "http://$DW_ADDR/metrics" | grep '^gpu_admission_report_' | sort; }
snap_report() {
	"$B" report -c "$T/dra-policy.yaml" -o prometheus --fail-on none "$1" 2>/dev/null | grep '^gpu_admission_report_' | sort
}
dw_is() { [ "$(dw_metric "$1")" = "$2" ]; }
dw_same() { [ "$(dw_report)" = "$(snap_report "$1")" ]; }
# idle_sum: idle GPU nodes over every pool, from the watch.
idle_sum() { dw_report | awk '/^gpu_admission_report_idle_gpu_nodes\{/ { n += $2 } END { print n + 0 }'; }
equals "$(for r in resourceslices resourceclaims; do dw_metric "gpu_admission_watch_served{resource=\"$r\"}"; \
	dw_metric "gpu_admission_watch_synced{resource=\"$r\"}"; done | tr '\n' ' ')" "1 1 1 1 " \
	"the watch found resource.k8s.io served and listed ResourceSlices and ResourceClaims"
grep -q 'watching ResourceSlices and ResourceClaims.*"apiVersion":"v1"' "$T/dra-watch.log" && ok ||
	bad "the watch reads resource.k8s.io/v1 (GA on 1.34)"
cp_wait 60 dw_same "$T/dra-state.json" || true
equals "$(dw_report)" "$(snap_report "$T/dra-state.json")" \
	"the watch's figures are report -o prometheus's over kubectl get nodes,pods,resourceslices,resourceclaims"
# kinds FILE KIND: how many objects of KIND the snapshot FILE holds.
kinds() { jq --arg k "$2" '[.items[] | select(.kind == $k)] | length' "$1"; }
equals "$(dw_metric 'gpu_admission_watch_objects{resource="resourceslices"}') $(dw_metric 'gpu_admission_watch_objects{resource="resourceclaims"}')" \
	"5 $(kinds "$T/dra-state.json" ResourceClaim)" "the watch holds the five ResourceSlices and the snapshot's claims"
equals "$(idle_sum) $(dw_metric 'gpu_admission_report_pending_gpu_pods{reason="claim-unallocated"}')" "4 1" \
	"the watch: 4 idle GPU nodes (dra-gpu's claim holds its node's GPU), dra-plain Pending on its unallocated claim"

# The claim allocated, then deleted: dra-gpu goes (no kubelet: forced). The resourceclaim
# controller sees the claim reserved for a pod that no longer exists, clears reservedFor and
# the allocation and drops its finalizer; the claim, generated for the pod (its owner), is
# then deleted by the garbage collector (k8s.io/kubernetes pkg/controller/resourceclaim/
# controller.go syncClaim: "deallocates a claim as soon as the last consumer stops using
# it", and "let the garbage collector handle the case that the pod is truly gone").
kubectl delete pod -n team-dra dra-gpu --force --grace-period=0 >/dev/null 2>&1
cp_wait 90 sh -c "! kubectl get resourceclaim -n team-dra '$claim' >/dev/null 2>&1" && ok ||
	bad "dra-gpu's claim is deallocated and deleted with its pod"
kubectl get nodes,pods,resourceslices,resourceclaims -A -o json >"$T/dra-state2.json"
cp_wait 60 dw_is 'gpu_admission_watch_objects{resource="resourceclaims"}' "$(kinds "$T/dra-state2.json" ResourceClaim)" && ok ||
	bad "the watch saw the claim's deletion"
"$B" report -c "$T/dra-policy.yaml" -o json --fail-on none "$T/dra-state2.json" >"$T/dra-report2.json" 2>/dev/null
equals "$(jq -c '.summary | [.gpuNodes, .idleNodes, .pendingGpuPods]' "$T/dra-report2.json")" '[5,5,1]' \
	"report after the claim's deletion: its node idle again (5 of 5)"
cp_wait 60 dw_same "$T/dra-state2.json" || true
equals "$(dw_report)" "$(snap_report "$T/dra-state2.json")" \
	"after the claim's deletion: the watch's figures are again report -o prometheus's over kubectl get"
equals "$(idle_sum)" 5 "the watch: the node whose claim was deleted is idle again"
equals "$(grep -c '"level":"error"' "$T/dra-watch.log")" 0 "the watch logged no error"
kill "$DW_PID" 2>/dev/null
wait "$DW_PID" 2>/dev/null

# Off only by the admin's word (claimLookups.enabled=false): no --claim-lookups, no token, no
# ClusterRole, and a DRA pod's warning names the setting that turns the lookups on.
# shellcheck disable=SC2086
helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reset-values -f "$ROOT/test/cluster/values/image.yaml" \
	$HELM_VALUES_DRA --set claimLookups.enabled=false >"$T/upgrade.out" 2>&1 && ok || { bad "helm upgrade, claim lookups off"; cat "$T/upgrade.out"; }
wh_restart && ok || bad "the replica without claim lookups"
if grep -qx -- --claim-lookups "$WH_DIR/args"; then bad "claimLookups.enabled=false: serve still has --claim-lookups"; else ok; fi
equals "$(kubectl get clusterrole -l "app.kubernetes.io/instance=$REL" -o name | grep -c claim-lookups)" 0 \
	"claimLookups.enabled=false: no ClusterRole for the lookups"
dra_pod dra-off gpu-late
kubectl create --dry-run=server -n team-dra -f "$T/dra-off.in" -o json >"$T/dra-off.out" 2>"$T/dra-off.err" && ok ||
	bad "lookups off: a DRA pod is admitted (never refused for it)"
has "$T/dra-off.err" "claimLookups.enabled" "lookups off: the warning names claimLookups.enabled"
if gpu_tolerated "$T/dra-off.out"; then bad "lookups off: the unresolved claim gave the pod the GPU toleration"; else ok; fi
# Back to the defaults the next scenarios start from: lookups on, the replica restarted.
# shellcheck disable=SC2086
helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reset-values -f "$ROOT/test/cluster/values/image.yaml" \
	$HELM_VALUES_DRA >"$T/upgrade.out" 2>&1 && wh_restart && ok || bad "back to claim lookups by default"

kubectl delete pod -n kube-system dra-plain --force --grace-period=0 >/dev/null 2>&1
kubectl delete resourceclaimtemplate gpu-1 -n kube-system >/dev/null 2>&1
clean
kubectl delete resourceclaimtemplate --all -n team-dra >/dev/null 2>&1
kubectl delete resourceslice --all >/dev/null 2>&1
kubectl delete deviceclass gpu.nvidia.com >/dev/null 2>&1
