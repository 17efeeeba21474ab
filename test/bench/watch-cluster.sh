#!/bin/sh
# The watch-cluster benchmark (inside the namespace test/bench/watch-cluster makes): BENCH_PODS
# pods created bound to the fake nodes (spec.nodeName: no scheduler, no kubelet; the API
# server adds their managedFields), four `kubectl create -f LIST` at a time, then
# `gpu-admission watch` started against kube-apiserver over TLS, pinned to one core: time to
# ready (both lists, 25 objects a page, and the first report), its CPU time then, VmHWM.
# Pods alternate GPU and CPU over the six fake nodes, so every CPU pod (half of them) lands on
# a GPU node: the report names each, and the model keeps their fields, more memory per pod than
# a cluster where those are few.
set -u
ROOT=$(pwd)
BIN=${BIN:-bin/gpu-admission}
B=$ROOT/$BIN
N=${BENCH_PODS:-20000}
. "$ROOT/test/cluster/cluster.lib"
. "$ROOT/test/cluster/nodes.sh"
PATH=$CP_BIN:$PATH
T=$(mktemp -d)
pid=
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; cp_down; rm -rf "$T"' EXIT
cp_netns && cp_up "$T/cp" && cp_nodes || exit 1
kubectl create namespace bench >/dev/null || exit 1
nodes=$(echo "$CP_NODES" | awk 'NF { print $1 }' | jq -R . | jq -sc .)
# pods FROM TO: a List of pods FROM..TO-1, every other one asking for a GPU, spread over the nodes.
pods() {
	jq -n --argjson from "$1" --argjson to "$2" --argjson nodes "$nodes" '{apiVersion: "v1", kind: "List",
		items: [range($from; $to) | {apiVersion: "v1", kind: "Pod",
		metadata: {name: "w-\(.)", namespace: "bench", labels: {app: "bench", shard: "\(. % 16)"}},
		spec: {nodeName: $nodes[. % ($nodes | length)], tolerations: [{operator: "Exists"}],
			containers: [{name: "c", image: "registry.example/c:1", resources: (if . % 2 == 0
			then {limits: {"nvidia.com/gpu": "1"}} else {requests: {cpu: "100m", memory: "128Mi"}} end)}]}}]}'
}
t0=$(date +%s.%N)
q=$((N / 4))
creates=
for i in 0 1 2 3; do
	to=$(( i == 3 ? N : (i + 1) * q ))
	pods $((i * q)) "$to" >"$T/pods-$i.json"
	kubectl create -f "$T/pods-$i.json" >/dev/null 2>"$T/create-$i.err" &
	creates="$creates $!"
done
wait $creates  # these only: the control plane's processes are children too
t1=$(date +%s.%N)
made=$(kubectl get pods -n bench --no-headers 2>/dev/null | wc -l)
echo "bench-watch-cluster: Kubernetes $(kubectl version -o json | jq -r .serverVersion.gitVersion), $made pods created in $(echo "$t0 $t1" | awk '{ printf "%.0f", $2 - $1 }') s"
bytes=$(kubectl get --raw "/api/v1/pods?limit=500" | jq -c '.items[]' | awk '{ s += length($0) + 1 } END { printf "%.0f", s / NR }')
pin=
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then pin="taskset -c 0"; fi
addr=127.0.0.1:19191
tck=$(getconf CLK_TCK)
objs=$((made + $(echo "$CP_NODES" | awk 'NF' | wc -l)))
# watch_run BINARY: one watch from start to ready, its figures, then stopped.
watch_run() {
	t0=$(date +%s.%N)
	$pin "$1" watch -c "$ROOT/test/bench/report-policy.yaml" --kubeconfig "$KUBECONFIG" --addr "$addr" \
		--interval 3600 2>"$T/watch.log" &
	pid=$!
	until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ]; do
		kill -0 "$pid" 2>/dev/null || { tail -5 "$T/watch.log" >&2; return 1; }
		sleep 0.1
	done
	t1=$(date +%s.%N)
	cpu=$(awk -v t="$tck" '{ printf "%.2f", ($14 + $15) / t }' "/proc/$pid/stat")
	hwm=$(awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$pid/status")
	kill "$pid"
	wait "$pid" 2>/dev/null
	pid=
	echo "$t0 $t1 $cpu $objs $bytes $hwm $1" | awk '{ printf "bench-watch-cluster: %s: %d objects (pods of ~%d bytes as listed) ready in %.1f s, %.2f s CPU (%.0f objects/s of CPU), peak RSS %s MB\n", $7, $4, $5, $2 - $1, $3, $4 / $3, $6 }'
}
# BENCH_BASE: another binary run the same way after BIN (a before/after on the same cluster).
for b in "$B" ${BENCH_BASE:-}; do
	watch_run "$b" || exit 1
done
echo "bench-watch-cluster: kube-apiserver RSS $(ps -o rss= -p "$CP_APISERVER_PID" | awk '{printf "%.0f MB", $1 / 1024}')"
