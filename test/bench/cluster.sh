#!/bin/sh
# The bench-cluster rounds (inside the namespace test/bench/cluster makes). Each round
# creates BENCH_PODS 1-GPU pods with one `kubectl create -f LIST` (one client, one
# connection, pods created one after another, as a controller does), alternately with
# the webhook installed and with its two configurations removed, twice each. The
# webhook's latency is kube-apiserver's own figure: the histogram
# apiserver_admission_webhook_admission_duration_seconds of each webhook (its mean
# from _sum/_count, exact; p50/p99 interpolated in its buckets, 5 ms the first, as
# Prometheus's histogram_quantile does), read from /metrics before and after.
set -u
ROOT=$(pwd)
BIN=${BIN:-bin/gpu-admission}
B=$ROOT/$BIN
N=${BENCH_PODS:-300}
. "$ROOT/test/cluster/cluster.lib"
. "$ROOT/test/cluster/nodes.sh"
. "$ROOT/test/cluster/webhook.lib"
PATH=$CP_BIN:$HELM_DIR:$PATH
T=$(mktemp -d)
trap 'cp_down; rm -rf "$T"' EXIT
cp_netns && cp_up "$T/cp" && cp_nodes || exit 1
helm install gpu-admission "$ROOT/charts/gpu-admission" -n gpu-admission --create-namespace -f "$ROOT/test/cluster/values/image.yaml" >/dev/null || exit 1
wh_up gpu-admission gpu-admission "$T/wh" || exit 1
kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration gpu-admission -o json >"$T/configs.json"

# pods NS: a List of N 1-GPU pods.
pods() {
	jq -n --argjson n "$N" --arg ns "$1" '{apiVersion: "v1", kind: "List", items: [range($n) | {apiVersion: "v1", kind: "Pod",
		metadata: {name: "b-\(.)", namespace: $ns}, spec: {containers: [{name: "c", image: "registry.example/c:1",
		resources: {limits: {"nvidia.com/gpu": "1"}}}]}}]}'
}
# hist NAME: "count sum le1:c1 le2:c2 ..." of the webhook NAME's histogram (all operations).
hist() {
	kubectl get --raw /metrics | awk -v n="$1" '
		index($0, "apiserver_admission_webhook_admission_duration_seconds") == 1 && index($0, "name=\"" n "\"") {
			v = $NF
			if ($0 ~ /_bucket/) { match($0, /le="[^"]*"/); le = substr($0, RSTART + 4, RLENGTH - 5); b[le] += v; if (!(le in seen)) { seen[le] = 1; order[++k] = le } }
			else if ($0 ~ /_sum/) s += v
			else if ($0 ~ /_count/) c += v
		}
		END { printf "%d %.9f", c, s; for (i = 1; i <= k; i++) printf " %s:%d", order[i], b[order[i]]; print "" }'
}
# delta BEFORE AFTER: "count mean-ms p50-ms p99-ms" over the requests between the two.
delta() {
	echo "$1|$2" | awk -F'|' '{
		split($1, a, " "); split($2, b, " "); c = b[1] - a[1]; s = b[2] - a[2]
		if (c <= 0) { print "0 - - -"; exit }
		nb = 0; prev = 0
		for (i = 3; i in b; i++) { split(a[i], x, ":"); split(b[i], y, ":"); le[++nb] = y[1]; cum[nb] = y[2] - x[2] }
		out = sprintf("%d %.2f", c, s / c * 1000)
		split("0.5 0.99", qs, " ")
		for (q = 1; q <= 2; q++) {
			r = qs[q] * c; lo = 0; lc = 0; v = "-"
			for (i = 1; i <= nb; i++) {
				if (cum[i] >= r) {
					if (le[i] == "+Inf") { v = ">" lo * 1000 } else { v = sprintf("%.2f", (lo + (le[i] - lo) * (r - lc) / (cum[i] - lc)) * 1000) }
					break
				}
				lo = le[i]; lc = cum[i]
			}
			out = out " " v
		}
		print out }'
}

echo "bench-cluster: Kubernetes $(kubectl version -o json | jq -r .serverVersion.gitVersion), $N 1-GPU pods per round, one kubectl create"
printf '%-10s %-16s %9s %10s %26s\n' round webhook pods/s "mean ms" "mutate p50/p99 ms (count)"
for r in 1 2; do
	for with in yes no; do
		ns=bench-$r-$with
		kubectl create namespace "$ns" >/dev/null
		kubectl wait --for=jsonpath='{.metadata.name}'=default -n "$ns" serviceaccount/default --timeout=30s >/dev/null 2>&1 ||
			cp_wait 30 kubectl get serviceaccount default -n "$ns"
		if [ "$with" = no ]; then
			kubectl delete mutatingwebhookconfiguration,validatingwebhookconfiguration gpu-admission >/dev/null
			sleep 1
		fi
		pods "$ns" >"$T/pods.json"
		m0=$(hist mutate.gpu-admission.azure.io)
		t0=$(date +%s.%N)
		kubectl create -f "$T/pods.json" >/dev/null || echo "bench-cluster: round $r ($with) had failures"
		t1=$(date +%s.%N)
		m1=$(hist mutate.gpu-admission.azure.io)
		if [ "$with" = no ]; then
			jq '.items[] | del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields)' "$T/configs.json" |
				kubectl create -f - >/dev/null
			sleep 1
		fi
		set -- $(delta "$m0" "$m1")
		rate=$(echo "$t0 $t1" | awk -v n="$N" '{ printf "%.0f", n / ($2 - $1) }')
		if [ "$with" = yes ]; then
			printf '%-10s %-16s %9s %10s %26s\n' "$r" installed "$rate" "$2" "$3 / $4 ($1)"
		else
			printf '%-10s %-16s %9s %10s %26s\n' "$r" "not installed" "$rate" - -
		fi
		kubectl delete namespace "$ns" --wait=false >/dev/null
	done
done
echo "bench-cluster: webhook replica RSS $(ps -o rss= -p "$WH_PID" | awk '{printf "%.1f MB", $1 / 1024}'), kube-apiserver RSS $(ps -o rss= -p "$CP_APISERVER_PID" | awk '{printf "%.0f MB", $1 / 1024}')"
