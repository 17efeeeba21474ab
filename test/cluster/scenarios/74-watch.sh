# Sourced by suite.sh (full mode): issue 25 items 1 and 6, the live waste watch.
# `gpu-admission watch` lists and watches this control plane's Nodes and Pods (and its
# ResourceSlices and ResourceClaims: 70-dra.sh checks those figures) and
# keeps the report's model event by event; its /metrics must show the exact figures
# of the state built here, follow each change (a GPU node added and deleted, GPU pods
# placed, Pending, deleted) within its interval, survive a kube-apiserver restart with
# changes made around it, and answer POST /what-if as `report --what-if` answers over
# `kubectl get` of the same state, a running GPU pod the what-if refuses named by both. The watch judges by the report's example policy
# (test/report/cases/aks-snapshot/policy.yaml: t4-spot, t4, a100, h100, priced), whose
# pools select the fake nodes' agentpool labels; the webhook keeps three-pools.yaml.
# Pods stay Pending once bound (no kubelet): the report counts a bound pod's GPUs as
# requested on its node, and only an unbound GPU pod as Pending.
clean
# The figures are of the whole cluster: pods earlier scenarios left outside team-*/training-*
# (55-placement.sh's train-x/two-pools on the a100 node) go first.
cp_clear_pods
upgrade three-pools.yaml
ns team-w8
ns team-warn
WATCH_POLICY=$ROOT/test/report/cases/aks-snapshot/policy.yaml
WATCH_WHATIF=$ROOT/test/report/cases/what-if/new-policy.yaml
WATCH_ADDR=127.0.0.1:19090
WATCH_PID=""

# watch_start KUBECONFIG: the watch under test, as the chart's Deployment runs it (every 2 s here).
watch_start() {
	"$B" watch -c "$WATCH_POLICY" --kubeconfig "$1" --addr "$WATCH_ADDR" --interval 2 --log-format json \
		>>"$T/watch.log" 2>&1 &
	WATCH_PID=$!
	CP_PIDS="$CP_PIDS $WATCH_PID"
	CP_WAIT_PID=$WATCH_PID cp_wait 60 curl -sf "http://$WATCH_ADDR/readyz"
}
watch_stop() {
	[ -n "$WATCH_PID" ] || return 0
	kill "$WATCH_PID" 2>/dev/null
	wait "$WATCH_PID" 2>/dev/null
	WATCH_RC=$?
	WATCH_PID=""
}
# w_metric SAMPLE: one sample's value (name and labels as printed) of the watch's /metrics.
w_metric() { curl -sf "http://$WATCH_ADDR/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
w_is() { [ "$(w_metric "$1")" = "$2" ]; }
# w_figures: the figures this scenario checks, one line: idle GPU nodes and idle $/h by pool
# (t4-spot t4 a100 h100), CPU pods on GPU nodes by route in team-warn, Pending GPU pods by reason.
w_figures() {
	curl -sf "http://$WATCH_ADDR/metrics" | awk '
		/^gpu_admission_report_idle_gpu_nodes\{/ { idle[$1] = $2 }
		/^gpu_admission_report_idle_node_cost_per_hour\{/ { cost[$1] = $2 }
		/^gpu_admission_report_cpu_pods_on_gpu_nodes_by_route\{pod_namespace="team-warn"/ { route = route " " $1 "=" $2 }
		/^gpu_admission_report_pending_gpu_pods\{/ { if ($2 != 0) pend = pend " " $1 "=" $2 }
		END {
			n = split("t4-spot t4 a100 h100", p, " ")
			for (i = 1; i <= n; i++) {
				k = "{pool=\"" p[i] "\"}"
				printf "%s:%s/%s ", p[i], idle["gpu_admission_report_idle_gpu_nodes" k], cost["gpu_admission_report_idle_node_cost_per_hour" k]
			}
			printf "|%s |%s\n", route, pend
		}' | sed 's/gpu_admission_report_[a-z_]*//g'
}
# figures_are WANT: for cp_wait (the watch rebuilds its report every 2 s, then /metrics shows it).
figures_are() { [ "$(w_figures)" = "$1" ]; }
# expect_figures WANT WHAT: waits for the figures (generously: the machine may be loaded), then checks them.
expect_figures() {
	cp_wait 60 figures_are "$1"
	equals "$(w_figures)" "$1" "$2"
}

# --- the known state: the six fake nodes, no pod ---------------------------------------
watch_start "$KUBECONFIG" && ok || { bad "gpu-admission watch is ready against the API server"; tail -n 20 "$T/watch.log"; }
equals "$(w_metric 'gpu_admission_watch_synced{resource="nodes"}') $(w_metric 'gpu_admission_watch_synced{resource="pods"}')" \
	"1 1" "the watch has listed Nodes and Pods"
equals "$(w_metric 'gpu_admission_watch_objects{resource="nodes"}')" 6 "the watch holds the six fake nodes"
equals "$(w_metric 'gpu_admission_watch_served{resource="resourceslices"}') $(w_metric 'gpu_admission_watch_synced{resource="resourceclaims"}')" \
	"1 1" "the watch found DRA served (resource.k8s.io/v1, 1.34) and listed its objects too"
expect_figures "t4-spot:1/0.158 t4:2/1.052 a100:1/27.197 h100:1/98.32 | |" \
	"no pod: every GPU node idle, at its pool's price"

# --- a GPU node joins, then leaves ------------------------------------------------------
H2=aks-gpuh100-50000000-vmss000001
cp_node_json "$H2" gpuh100 Standard_ND96isr_H100_v5 nvidia.com/gpu=8 sku=gpu:NoSchedule no eastus-3 | kubectl create -f - >/dev/null &&
	kubectl patch node "$H2" --subresource=status --type=merge -p "$(cp_node_status nvidia.com/gpu=8)" >/dev/null ||
	bad "a second h100 node"
expect_figures "t4-spot:1/0.158 t4:2/1.052 a100:1/27.197 h100:2/196.64 | |" "a new h100 node: two idle h100 nodes"
kubectl delete node "$H2" >/dev/null || bad "deleting the second h100 node"
expect_figures "t4-spot:1/0.158 t4:2/1.052 a100:1/27.197 h100:1/98.32 | |" "the node deleted: one idle h100 node again"

# --- pods: two on the t4 nodes, one more Pending (the pool full), one gated, a CPU pod pinned to the h100 node
for p in w-t4a w-t4b; do
	pod "$p" "$GPU1" >"$T/$p.in"
	create team-w8 "$p"
	node_of team-w8 "$p" >/dev/null
done
equals "$(pool_of team-w8 w-t4a) $(pool_of team-w8 w-t4b)" "gput4 gput4" "the webhook sent both GPU pods to the t4 nodes"
pod w-full "$GPU1" >"$T/w-full.in"
create team-w8 w-full
cp_wait 30 sh -c "kubectl get pod -n team-w8 w-full -o jsonpath='{.status.conditions[?(@.type==\"PodScheduled\")].reason}' | grep -q Unschedulable" &&
	ok || bad "the scheduler marked w-full Unschedulable"
pod w-gated "$GPU1 | .spec.schedulingGates = [{name: \"example.com/hold\"}]" >"$T/w-gated.in"
create team-w8 w-gated
pod w-cpu '.spec.nodeName = "aks-gpuh100-50000000-vmss000000"' >"$T/w-cpu.in"
created team-warn w-cpu "warn mode: a CPU pod pinned to the h100 node is admitted"
expect_figures "t4-spot:1/0.158 t4:0/0 a100:1/27.197 h100:1/98.32 | {pod_namespace=\"team-warn\",route=\"untolerated-taint\"}=1 | {reason=\"scheduling-gated\"}=1 {reason=\"gpus-in-use\"}=1" \
	"pods: t4 busy, a CPU pod on the h100 node by nodeName, one GPU pod gated and one waiting for a t4 GPU"

# --- a running GPU pod the what-if refuses: 2 GPUs in team-w8, which the webhook's policy sends to
# the a100 pool (t4 takes 1) and the what-if's keeps for training (its h100 pool for training and research)
pod w-a100 '.spec.containers[0].resources.limits["nvidia.com/gpu"] = "2"' >"$T/w-a100.in"
create team-w8 w-a100
equals "$(pool_of team-w8 w-a100)" gpua100 "the webhook sent the 2-GPU pod to the a100 node"
expect_figures "t4-spot:1/0.158 t4:0/0 a100:0/0 h100:1/98.32 | {pod_namespace=\"team-warn\",route=\"untolerated-taint\"}=1 | {reason=\"scheduling-gated\"}=1 {reason=\"gpus-in-use\"}=1" \
	"a 2-GPU pod runs on the a100 node: it is no longer idle"

# --- the what-if on the README's example policy, over the live state ---------------------
kubectl get nodes,pods -A -o json >"$T/w-cluster.json"
"$B" report -c "$WATCH_POLICY" --what-if "$WATCH_WHATIF" -o json --fail-on none "$T/w-cluster.json" >"$T/w-offline.json" 2>/dev/null
curl -sf --data-binary "@$WATCH_WHATIF" "http://$WATCH_ADDR/what-if" >"$T/w-live.json" && ok || bad "POST /what-if answers"
# The same judgement, whatever the order of the lists and the policy's name.
norm='.whatIf | del(.policy) | (.placed, .refused) |= sort_by(.namespace, .name)'
equals "$(jq -cS "$norm" "$T/w-live.json")" "$(jq -cS "$norm" "$T/w-offline.json")" \
	"POST /what-if answers as report --what-if over kubectl get of the same state"
# The running GPU pod is judged live as offline: from what the watch's model keeps of it.
refused_a100='[.whatIf.refused[] | select(.namespace == "team-w8" and .name == "w-a100") | .node] | join(",")'
equals "$(jq -r "$refused_a100" "$T/w-offline.json")" aks-gpua100-40000000-vmss000000 \
	"report --what-if names the running GPU pod w-a100 the what-if policy refuses"
equals "$(jq -r "$refused_a100" "$T/w-live.json")" aks-gpua100-40000000-vmss000000 \
	"POST /what-if names the running GPU pod w-a100 the what-if policy refuses"
equals "$(jq -r '.summary.pendingGpuPods' "$T/w-live.json")" 2 "what-if: its report is of the live state (2 Pending GPU pods)"
curl -sf --data-binary "@$WATCH_WHATIF" "http://$WATCH_ADDR/what-if?output=prometheus" | grep -q '^gpu_admission_report_whatif_' &&
	ok || bad "POST /what-if?output=prometheus gives the what-if gauges"
curl -sf --data-binary "@$WATCH_WHATIF" "http://$WATCH_ADDR/what-if?output=text" | grep -q '^What if the policy were what-if' &&
	ok || bad "POST /what-if?output=text gives the text report's what-if"
equals "$(curl -s -o /dev/null -w '%{http_code}' --data-binary 'pools: 3' "http://$WATCH_ADDR/what-if")" 400 \
	"POST /what-if with a policy that does not load: 400"
kubectl delete pod -n team-w8 w-a100 --force --grace-period=0 >/dev/null 2>&1 || bad "deleting w-a100"
expect_figures "t4-spot:1/0.158 t4:0/0 a100:1/27.197 h100:1/98.32 | {pod_namespace=\"team-warn\",route=\"untolerated-taint\"}=1 | {reason=\"scheduling-gated\"}=1 {reason=\"gpus-in-use\"}=1" \
	"w-a100 deleted: the a100 node idle again"

# --- kube-apiserver restarts; changes made while the watch reconnects ---------------------
kill "$CP_APISERVER_PID"
cp_wait 90 sh -c "! kill -0 $CP_APISERVER_PID 2>/dev/null || grep -q '^State:.*Z' /proc/$CP_APISERVER_PID/status" && ok ||
	bad "kube-apiserver stopped"
cp_wait 30 w_is 'gpu_admission_watch_watching{resource="pods"}' 0 && ok || bad "the watch saw its pod watch end"
equals "$(curl -s -o /dev/null -w '%{http_code}' "http://$WATCH_ADDR/readyz")" 200 \
	"API server down: the watch stays ready, serving what it last saw"
cp_apiserver "$T/cp" && ok || bad "kube-apiserver restarted"
kubectl delete pod -n team-w8 w-gated --force --grace-period=0 >/dev/null 2>&1 || bad "deleting w-gated"
cp_node_json "$H2" gpuh100 Standard_ND96isr_H100_v5 nvidia.com/gpu=8 sku=gpu:NoSchedule no eastus-3 | kubectl create -f - >/dev/null &&
	kubectl patch node "$H2" --subresource=status --type=merge -p "$(cp_node_status nvidia.com/gpu=8)" >/dev/null ||
	bad "a second h100 node after the restart"
cp_wait 90 w_is 'gpu_admission_watch_watching{resource="pods"}' 1 && ok || bad "the watch watches pods again"
expect_figures "t4-spot:1/0.158 t4:0/0 a100:1/27.197 h100:2/196.64 | {pod_namespace=\"team-warn\",route=\"untolerated-taint\"}=1 | {reason=\"gpus-in-use\"}=1" \
	"after the restart: the gated pod deleted and the node added around it are seen"
kubectl delete node "$H2" >/dev/null || bad "deleting the second h100 node"
kubectl delete pod -n team-warn w-cpu --force --grace-period=0 >/dev/null 2>&1
expect_figures "t4-spot:1/0.158 t4:0/0 a100:1/27.197 h100:1/98.32 | | {reason=\"gpus-in-use\"}=1" \
	"after the restart: later changes still followed"
[ "$(w_metric 'gpu_admission_watch_errors_total{resource="pods"}')" -ge 1 ] && ok || bad "the watch counted its failed watches"
equals "$(grep -c '"level":"error"' "$T/watch.log")" 0 "the watch logged no error"
echo "cluster: watch: $(w_figures); RSS $(awk '/^VmRSS/ { print $2, $3 }' "/proc/$WATCH_PID/status")"
watch_stop
equals "$WATCH_RC" 0 "SIGTERM: the watch exits 0"

# --- the chart's identity for the watch suffices: its rendered ServiceAccount, ClusterRole and
# binding applied, the watch run with a token of that ServiceAccount only.
WSA=$REL-watch
helm template "$REL" "$CHART" -n "$RNS" -f "$ROOT/test/cluster/values/image.yaml" --set watch.enabled=true \
	--show-only templates/watch.yaml >"$T/watch-chart.yaml" || bad "helm template of the watch"
kubectl create --dry-run=client -o json -f "$T/watch-chart.yaml" |
	jq '{apiVersion: "v1", kind: "List", items: [(if .kind == "List" then .items[] else . end)
		| select(.kind == "ServiceAccount" or .kind == "ClusterRole" or .kind == "ClusterRoleBinding")]}' |
	kubectl apply -f - >/dev/null && ok || bad "the chart's watch ServiceAccount, ClusterRole and binding applied"
for v in get list watch; do
	equals "$(kubectl auth can-i "$v" nodes --as "system:serviceaccount:$RNS:$WSA")" yes "the watch may $v nodes"
	equals "$(kubectl auth can-i "$v" pods --all-namespaces --as "system:serviceaccount:$RNS:$WSA")" yes "the watch may $v pods"
	equals "$(kubectl auth can-i "$v" resourceslices.resource.k8s.io --as "system:serviceaccount:$RNS:$WSA")" yes \
		"the watch may $v resourceslices"
	equals "$(kubectl auth can-i "$v" resourceclaims.resource.k8s.io --all-namespaces --as "system:serviceaccount:$RNS:$WSA")" yes \
		"the watch may $v resourceclaims"
done
for a in "create pods -n team-w8" "delete nodes" "patch pods -n team-w8" "list secrets -n $RNS" \
	"list resourceclaimtemplates.resource.k8s.io -A" "create resourceclaims.resource.k8s.io -n team-w8" \
	"patch resourceslices.resource.k8s.io"; do
	# shellcheck disable=SC2086
	equals "$(kubectl auth can-i $a --as "system:serviceaccount:$RNS:$WSA")" no "the watch may not $a"
done
cp_sa_kubeconfig "$WSA" "https://$CP_API_ADDR" "$T/watch-sa.kubeconfig" || bad "a token for the watch's ServiceAccount"
watch_start "$T/watch-sa.kubeconfig" && ok || { bad "the watch is ready as the chart's ServiceAccount"; tail -n 20 "$T/watch.log"; }
expect_figures "t4-spot:1/0.158 t4:0/0 a100:1/27.197 h100:1/98.32 | | {reason=\"gpus-in-use\"}=1" \
	"as the chart's ServiceAccount: the same figures (its get, list, watch suffice)"
equals "$(for r in pods nodes resourceslices resourceclaims; do w_metric "gpu_admission_watch_errors_total{resource=\"$r\"}"; done | tr '\n' ' ')" \
	"0 0 0 0 " "as the chart's ServiceAccount: no list or watch refused (DRA's included)"
equals "$(w_metric 'gpu_admission_watch_synced{resource="resourceclaims"}')" 1 "as the chart's ServiceAccount: claims listed"
watch_stop
kubectl delete -f "$T/watch-chart.yaml" --ignore-not-found >/dev/null 2>&1
clean
