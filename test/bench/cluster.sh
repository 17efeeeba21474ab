#!/bin/sh
# The bench-cluster rounds (inside the namespace test/bench/cluster makes): what an
# admission webhook costs a pod creation on the real control plane, gpu-admission beside
# the alternatives, in one run. Figures only, never an assertion.
#
# Variants (one row each; test/bench/README.md says how to read them):
#   none          no webhook, no admission policy
#   chart         gpu-admission as the chart installs it: its mutating and validating
#                 configurations, the replica webhook.lib starts
#   mutate-only   the same with the validating configuration removed
#   mutate-nomc   mutate-only without its matchConditions: what evaluating them costs
#                 kube-apiserver for a pod they let through
#   go-trivial    a Go webhook allowing everything, same uid, no patch (tools/webhook
#                 -mode trivial): the transport's floor
#   go-trivial-x2 the same called twice a pod, from a mutating and a validating
#                 configuration as the chart's: the floor of the chart's shape
#   go-trivial-h2 the same offering HTTP/2 (ALPN h2, net/http's default over TLS): whether
#                 the protocol kube-apiserver speaks to a webhook moves the floor
#   go-policy     a Go webhook giving this benchmark's pod the patch gpu-admission gives
#                 it (tools/webhook -mode policy)
#   in-process    `gpu-admission print-admission-policies`: MutatingAdmissionPolicy and
#                 ValidatingAdmissionPolicy, evaluated by kube-apiserver itself
#   kyverno       Kyverno v1.19.1 out of cluster with the hand-written equivalent
#                 ClusterPolicy (test/cluster/kyverno.lib, as scenario 86 runs it): its
#                 mutating and validating webhooks for pods, its own configurations
# The Go webhooks are configured as the chart's mutating webhook is (rules, selectors,
# matchConditions, failurePolicy, timeout: only the name and the service differ) and
# reached as the replica is: a Service whose EndpointSlice points at the webhook address
# on the namespace's loopback (wh_service), a certificate signed by the cluster CA
# (cp_leaf, as scenario 85 does for Kueue).
#
# Each round takes every variant in turn (the order rotated each round, so that no
# variant always follows the same one) and creates BENCH_PODS 1-GPU pods twice:
#   seq  one `kubectl create -f LIST` (one client, one connection, one pod after
#        another); its latencies from kubectl's -v=7 log (the Request and Response lines'
#        microsecond timestamps of each POST), pods/s from the first POST to the last answer
#   par  `loadgen bench`: BENCH_WORKERS (default 8) clients, each with a connection of
#        its own, in a closed loop; latencies and wall time measured by the client
# Between two runs the namespace is deleted and gone, so no deletion overlaps a run.
# The pods name a scheduler that does not run (schedulerName bench-none): 300 pods
# Pending on six fake nodes would keep kube-scheduler retrying them through the next
# runs, on the same two cores; what is measured is admission, not placement.
# Per run: kube-apiserver's histograms (_sum/_count deltas: the mean of each webhook's
# calls; the MutatingAdmissionPolicy's _sum per pod), the CPU time (utime + stime,
# /proc/PID/stat) of kube-apiserver and of the webhook process. The table pools the rounds: pods/s median
# and range of the rounds; p50/p99 exact (nearest rank) over every round's samples;
# means and CPU per pod over every round's totals.
set -u
ROOT=$(pwd)
BIN=${BIN:-bin/gpu-admission}
B=$ROOT/$BIN
N=${BENCH_PODS:-300}
ROUNDS=${BENCH_ROUNDS:-6}
WORKERS=${BENCH_WORKERS:-8}
# BENCH_VARIANTS: some of the rows only (a harness check, a before/after of one change).
VARIANTS=${BENCH_VARIANTS:-none chart mutate-only mutate-nomc go-trivial go-trivial-x2 go-trivial-h2 go-policy in-process kyverno}
. "$ROOT/test/cluster/cluster.lib"
. "$ROOT/test/cluster/nodes.sh"
. "$ROOT/test/cluster/webhook.lib"
. "$ROOT/test/cluster/kyverno.lib"
TOOLS=$ROOT/build/cluster/bin
PATH=$CP_BIN:$HELM_DIR:$PATH
T=$(mktemp -d)
trap 'cp_down; rm -rf "$T"' EXIT
# MutatingAdmissionPolicy: GA and on from 1.36; on 1.34 and 1.35 as suite.sh asks for it.
case $CP_MINOR in
1.3[45]) CP_APISERVER_FLAGS="--feature-gates=MutatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true" ;;
esac
cp_netns && cp_up "$T/cp" && cp_nodes || exit 1
helm install gpu-admission "$ROOT/charts/gpu-admission" -n gpu-admission --create-namespace -f "$ROOT/test/cluster/values/image.yaml" >/dev/null || exit 1
wh_up gpu-admission gpu-admission "$T/wh" || exit 1
CLK=$(getconf CLK_TCK)
V=$T/variants
mkdir -p "$V" "$T/samples" "$T/own"

# --- the variants' objects ----------------------------------------------------------------
# Each variant is the objects $V/NAME.json lists (none: nothing), created to turn it on
# and deleted to turn it off; $V/NAME.pid the webhook process whose CPU is counted;
# $V/NAME.stats what to read from /metrics: "label metric filter per" a line, per "call"
# (the table shows _sum/_count: the mean of a call) or "pod" (_sum over the pods created).
clean='del(.metadata.resourceVersion, .metadata.uid, .metadata.creationTimestamp, .metadata.generation, .metadata.managedFields)'
kubectl get mutatingwebhookconfiguration gpu-admission -o json | jq "$clean" >"$T/mutating.json" || exit 1
kubectl get validatingwebhookconfiguration gpu-admission -o json | jq "$clean" >"$T/validating.json" || exit 1
WH=apiserver_admission_webhook_admission_duration_seconds
jq -s '{apiVersion: "v1", kind: "List", items: .}' "$T/mutating.json" "$T/validating.json" >"$V/chart.json"
jq -s '{apiVersion: "v1", kind: "List", items: .}' "$T/mutating.json" >"$V/mutate-only.json"
echo "$WH_PID" >"$V/chart.pid"
echo "$WH_PID" >"$V/mutate-only.pid"
echo "$WH_PID" >"$V/mutate-nomc.pid"
# kube-apiserver times matchConditions only when one is false or fails (k8s.io/apiserver
# pkg/admission/plugin/webhook/matchconditions/matcher.go Match: no observation when all
# are true), so for the GPU pods here their cost shows only beside a run without them.
jq '{apiVersion: "v1", kind: "List", items: [del(.webhooks[].matchConditions)]}' "$T/mutating.json" >"$V/mutate-nomc.json"
printf 'mutate %s name="mutate.gpu-admission.azure.io" call\nvalidate %s name="validate.gpu-admission.azure.io" call\n' "$WH" "$WH" >"$V/chart.stats"
printf 'mutate %s name="mutate.gpu-admission.azure.io" call\n' "$WH" >"$V/mutate-only.stats"
cp "$V/mutate-only.stats" "$V/mutate-nomc.stats"

# The Go webhooks: a certificate for both Services, one process each.
GNS=bench-webhooks
kubectl create namespace "$GNS" >/dev/null || exit 1
cp_leaf "$T/cp/pki" go-webhook "/CN=go-webhook.$GNS.svc" \
	"subjectAltName=DNS:go-trivial.$GNS.svc,DNS:go-policy.$GNS.svc,DNS:go-trivial-h2.$GNS.svc" || { echo "bench-cluster: Go webhook certificate" >&2; exit 1; }
CA=$(base64 -w0 "$T/cp/pki/ca.crt")
port=9441
for mode in trivial policy trivial-h2; do
	svc=go-$mode h2=
	[ "$mode" = trivial-h2 ] && h2=-http2
	"$TOOLS/webhook" -mode "${mode%-h2}" $h2 -cert "$T/cp/pki/go-webhook.crt" -key "$T/cp/pki/go-webhook.key" \
		-addr "$CP_WEBHOOK_IP:$port" >"$T/$svc.log" 2>&1 &
	echo $! >"$V/$svc.pid"
	CP_PIDS="$CP_PIDS $!"
	wh_service "$GNS" "$svc" "$port" || exit 1
	# The chart's mutating webhook, every field kept but its name and where it calls.
	jq --arg name "$mode.bench.gpu-admission.test" --arg svc "$svc" --arg ns "$GNS" --arg ca "$CA" '
		{apiVersion: "v1", kind: "List", items: [.metadata = {name: ("bench-" + $svc)}
		| .webhooks = [.webhooks[0] | .name = $name
			| .clientConfig = {service: {name: $svc, namespace: $ns, path: "/mutate", port: 443}, caBundle: $ca}]]}' \
		"$T/mutating.json" >"$V/$svc.json"
	printf 'mutate %s name="%s" call\n' "$WH" "$mode.bench.gpu-admission.test" >"$V/$svc.stats"
	if ! cp_wait 30 curl -sf --cacert "$T/cp/pki/ca.crt" --resolve "$svc.$GNS.svc:$port:$CP_WEBHOOK_IP" "https://$svc.$GNS.svc:$port/readyz"; then
		echo "bench-cluster: the Go webhook ($mode) never became ready" >&2
		cat "$T/$svc.log" >&2
		exit 1
	fi
	port=$((port + 1))
done
# go-trivial-x2: the trivial webhook called twice a pod, from the chart's mutating and
# validating configurations for pods (the validating one's fields kept but its name and
# service): the floor of the chart's shape, two calls and no patch.
jq --arg ns "$GNS" --arg ca "$CA" '{apiVersion: "v1", kind: "List", items: [.metadata = {name: "bench-go-trivial-x2"}
	| .webhooks = [.webhooks[0] | .name = "trivial-x2.bench.gpu-admission.test"
		| .clientConfig = {service: {name: "go-trivial", namespace: $ns, path: "/validate", port: 443}, caBundle: $ca}]]}' \
	"$T/validating.json" >"$T/go-trivial-x2.validating.json" || exit 1
jq -s '{apiVersion: "v1", kind: "List", items: (.[0].items + .[1].items)}' "$V/go-trivial.json" "$T/go-trivial-x2.validating.json" >"$V/go-trivial-x2.json"
cp "$V/go-trivial.pid" "$V/go-trivial-x2.pid"
printf 'mutate %s name="trivial.bench.gpu-admission.test" call\nvalidate %s name="trivial-x2.bench.gpu-admission.test" call\n' "$WH" "$WH" >"$V/go-trivial-x2.stats"

# The in-process policies: kube-apiserver evaluates them; no process of ours. Its
# histogram of MutatingAdmissionPolicy times each mutation of a policy (the pod's four
# here), so the table shows their sum per pod. ValidatingAdmissionPolicy's records only
# refusals, warnings, audits and errors (k8s.io/apiserver pkg/admission/plugin/policy/
# validating/dispatcher.go: an admitted decision is observed only on an evaluation
# error): nothing for these pods.
"$B" print-admission-policies --kubernetes-version "$CP_MINOR" -o json >"$V/in-process.json" || exit 1
printf 'MAP/pod %s policy="gpu-admission-pods" pod\n' apiserver_mutating_admission_policy_check_duration_seconds >"$V/in-process.stats"

# Kyverno: its CRDs, ConfigMap, Secrets (its CA and serving pair, which it writes on its
# first start and reads on the next) and the ClusterPolicy stay for the whole run; what
# turns it on and off is its process. Its webhook configurations are its webhook
# controller's: while it runs, one deleted is created again within a second (kyverno.lib
# NOTES, from pkg/controllers/webhook/controller.go), so they cannot be saved and
# deleted between rounds as the chart's are. variant_on starts it (it registers them
# again, built for the ClusterPolicy); variant_off stops it and removes them with the
# Leases its own cleanup removes (ky_unhook: out of cluster it never does). So when
# another variant runs no Kyverno process and no configuration of its is there, as for
# the Go webhooks; gpu-admission's configurations are off too, as in every variant but
# chart and mutate-only. Here once, to create the policy and learn its webhooks' names.
in_variants() { case " $VARIANTS " in *" $1 "*) return 0 ;; esac; return 1; }
if in_variants kyverno; then
ky_crds "$T/kyverno" && ky_config && ky_start || { echo "bench-cluster: Kyverno never became ready" >&2; exit 1; }
ky_policy_create && ky_policy_ready || { echo "bench-cluster: Kyverno's ClusterPolicy is not Ready" >&2; exit 1; }
kubectl get mutatingwebhookconfiguration kyverno-resource-mutating-webhook-cfg -o json >"$T/kyverno/mwc.json" &&
	kubectl get validatingwebhookconfiguration kyverno-resource-validating-webhook-cfg -o json >"$T/kyverno/vwc.json" || exit 1
for w in "$KY_MUTATE:$T/kyverno/mwc.json" "$KY_VALIDATE:$T/kyverno/vwc.json"; do
	jq -e --arg n "${w%%:*}" 'any(.webhooks[]; .name == $n and any(.rules[]; .resources | index("pods")))' "${w#*:}" >/dev/null ||
		{ echo "bench-cluster: Kyverno registered no webhook ${w%%:*} for pods" >&2; exit 1; }
done
echo "bench-cluster: $(ky_version) ready in $KY_READY_S s; stopped between its runs"
ky_stop
ky_unhook || exit 1
printf 'mutate %s name="%s" call\nvalidate %s name="%s" call\n' "$WH" "$KY_MUTATE" "$WH" "$KY_VALIDATE" >"$V/kyverno.stats"
fi

# A variant is: its objects in $V/NAME.json (or, as Kyverno, its own step in variant_on
# and variant_off), its webhook process's PID in $V/NAME.pid, its histograms in
# $V/NAME.stats, its name here and its expected placement in variant_mutates.

# variant_mutates NAME: the variant gives the benchmark pod the GPU toleration.
variant_mutates() {
	case $1 in none | go-trivial*) return 1 ;; esac
	return 0
}

# The benchmark pod: what kubectl's List holds and loadgen bench creates.
pod() {
	jq -n --arg ns "$1" --arg name "$2" '{apiVersion: "v1", kind: "Pod", metadata: {name: $name, namespace: $ns},
		spec: {schedulerName: "bench-none", containers: [{name: "c", image: "registry.example/c:1",
		resources: {limits: {"nvidia.com/gpu": "1"}}}]}}'
}
pods() {
	jq -n --argjson n "$N" --arg ns "$1" '{apiVersion: "v1", kind: "List", items: [range($n) | {apiVersion: "v1", kind: "Pod",
		metadata: {name: "b-\(.)", namespace: $ns}, spec: {schedulerName: "bench-none", containers: [{name: "c",
		image: "registry.example/c:1", resources: {limits: {"nvidia.com/gpu": "1"}}}]}}]}'
}

# stats NAME: "label:count:sum ..." of the variant's histograms, from one read of /metrics.
stats() {
	[ -f "$V/$1.stats" ] || { echo; return; }
	kubectl get --raw /metrics >"$T/metrics" || return 1
	while read -r label metric filter per; do
		awk -v m="$metric" -v f="$filter" -v l="$label" -v per="$per" '
			index($0, m "_sum{") == 1 && index($0, f) { s += $NF }
			index($0, m "_count{") == 1 && index($0, f) { c += $NF }
			END { printf "%s:%s:%d:%.9f ", l, per, c, s }' "$T/metrics"
	done <"$V/$1.stats"
	echo
}
# ticks PID: its utime + stime, in clock ticks (0 without a PID).
ticks() {
	if [ -n "$1" ] && [ -r "/proc/$1/stat" ]; then
		# The fields after the command's ")" : utime and stime are the 12th and 13th.
		sed 's/.*) //' "/proc/$1/stat" | awk '{ print $12 + $13 }'
	else
		echo 0
	fi
}

# variant_on NAME / variant_off NAME: create or delete its objects. variant_on waits
# until the API server admits as the variant does: a dry-run pod placed (or not) as
# expected, and for a webhook a call counted in its histogram.
variant_off() {
	if [ "$1" = kyverno ]; then
		ps -o rss= -p "$KY_PID" >"$V/kyverno.rss"
		ky_stop
		ky_unhook
		return
	fi
	[ -f "$V/$1.json" ] || return 0
	kubectl delete -f "$V/$1.json" --wait=true >/dev/null
}
variant_on() {
	local v=$1 ns=$2 i=0 before after
	if [ "$v" = kyverno ]; then
		ky_start || return 1
		echo "$KY_PID" >"$V/kyverno.pid"
	fi
	[ ! -f "$V/$1.json" ] || kubectl create -f "$V/$1.json" >/dev/null || return 1
	pod "$ns" probe >"$T/probe.json"
	while [ "$i" -lt 150 ]; do
		i=$((i + 1))
		before=$(stats "$v" | awk '{ split($1, a, ":"); print a[3] + 0 }')
		kubectl create --dry-run=server -o json -f "$T/probe.json" >"$V/$v.probe" 2>"$T/probe.err" || { sleep 0.2; continue; }
		after=$(stats "$v" | awk '{ split($1, a, ":"); print a[3] + 0 }')
		if variant_mutates "$v"; then
			jq -e '[.spec.tolerations[]? | select(.key == "sku")] | length == 1' "$V/$v.probe" >/dev/null || { sleep 0.2; continue; }
		else
			jq -e '[.spec.tolerations[]? | select(.key == "sku")] | length == 0' "$V/$v.probe" >/dev/null || { sleep 0.2; continue; }
		fi
		case $v in none | in-process) return 0 ;; esac
		[ "$after" -gt "$before" ] && return 0
		sleep 0.2
	done
	echo "bench-cluster: $v never admitted the probe as expected" >&2
	cat "$T/probe.err" >&2
	jq -c '.spec.tolerations' "$V/$v.probe" >&2
	return 1
}

# ns_fresh NS: a new namespace with its default ServiceAccount (pods need it).
ns_fresh() {
	kubectl create namespace "$1" >/dev/null || return 1
	cp_wait 30 kubectl get serviceaccount default -n "$1"
}

# BENCH_PERF=1: each par run of a variant with a webhook process is profiled with perf
# (cpu-clock sampling of kube-apiserver and that process together, self time only: no
# call graphs, which the C build's omitted frame pointers would cut short); the end of
# the run prints where each spent its samples. Sampling costs CPU on the same cores: a
# profiled run's figures are not for the table.
PERF_PID=
perf_start() {
	[ -n "${BENCH_PERF:-}" ] && [ -n "$2" ] || return 0
	mkdir -p "$T/perf"
	perf record -q -F 499 -o "$T/perf/$1.$(ls "$T/perf" | grep -c "^$1\.").data" \
		-p "$CP_APISERVER_PID,$2" >/dev/null 2>"$T/perf.err" &
	PERF_PID=$!
	sleep 1 # perf attaches to every thread first
}
perf_stop() {
	[ -n "$PERF_PID" ] || return 0
	kill -INT "$PERF_PID" 2>/dev/null
	wait "$PERF_PID" 2>/dev/null
	PERF_PID=
}

# run VARIANT MODE ROUND NS: one run; appends its line to $T/runs, its latencies
# (ms, one a line) to $T/samples/VARIANT.MODE.
run() {
	local v=$1 mode=$2 r=$3 ns=$4 pid="" s0 s1 a0 a1 w0 w1 line
	[ ! -f "$V/$v.pid" ] || pid=$(cat "$V/$v.pid")
	ns_fresh "$ns" || return 1
	[ "$mode" = seq ] && pods "$ns" >"$T/pods.json"
	s0=$(stats "$v")
	l0=$(wc -c <"$WH_DIR/serve.log")
	a0=$(ticks "$CP_APISERVER_PID"); w0=$(ticks "$pid")
	if [ "$mode" = seq ]; then
		kubectl create -v=7 -f "$T/pods.json" >/dev/null 2>"$T/kubectl.log"
		a1=$(ticks "$CP_APISERVER_PID"); w1=$(ticks "$pid")
		# Each POST's Request line, then its Response line (one at a time: kubectl
		# sends the next after the answer), klog's "I1129 08:12:21.958373" stamps.
		line=$(awk -v samples="$T/samples/$v.$mode" '
			function t(s,  a) { split(s, a, ":"); return a[1] * 3600 + a[2] * 60 + a[3] }
			/round_trippers.go:[0-9]+\] "Request" verb="POST"/ { t0 = t($2); if (first == "") first = t0; open = 1; next }
			open && /round_trippers.go:[0-9]+\] "Response"/ {
				t1 = t($2); d = t1 - t0; if (d < 0) d += 86400
				printf "%.3f\n", d * 1000 >>samples
				n++; if ($0 !~ /status="201 Created"/) e++; last = t1; open = 0 }
			END { w = last - first; if (w < 0) w += 86400; printf "%d %d %.6f", n, e, w }' "$T/kubectl.log")
		set -- $line
		[ "$1" -eq "$N" ] || echo "bench-cluster: round $r $v seq: $1 POSTs logged of $N" >&2
		line="$v $mode $r $(awk -v n="$1" -v w="$3" 'BEGIN { printf "%.1f", (w > 0 ? n / w : 0) }') $1 $2"
	else
		perf_start "$v" "$pid"
		"$TOOLS/loadgen" bench -ns "$ns" -count "$N" -workers "$WORKERS" -scheduler bench-none -samples >"$T/bench.json" 2>"$T/bench.err"
		a1=$(ticks "$CP_APISERVER_PID"); w1=$(ticks "$pid")
		perf_stop
		jq -r '.samplesMs[]' "$T/bench.json" >>"$T/samples/$v.$mode" 2>/dev/null ||
			{ echo "bench-cluster: round $r $v par: loadgen failed" >&2; cat "$T/bench.err" >&2; }
		line="$v $mode $r $(jq -r '"\(.podsPerSec * 10 | round / 10) \(.pods) \(.errors)"' "$T/bench.json" 2>/dev/null || echo "0 0 $N")"
		[ "$(jq -r .errors "$T/bench.json" 2>/dev/null)" = 0 ] || echo "bench-cluster: round $r $v par: $(jq -r .firstError "$T/bench.json" 2>/dev/null)" >&2
	fi
	s1=$(stats "$v")
	# gpu-admission's own latency, as its log has it, per endpoint (the replica serves only
	# this run): latency_us, from the request's headers to its answer queued, and that less
	# upload_us, the wait for the body after the headers (the client's sending, not the server).
	case $v in chart | mutate-only | mutate-nomc)
		tail -c +"$((l0 + 1))" "$WH_DIR/serve.log" | jq -Rr 'fromjson? | select(.msg == "admission")
			| "\(.endpoint) \(.latency_us) \(.latency_us - (.upload_us // 0))"' |
			while read -r ep us own; do
				echo "$us" >>"$T/own/$v.$mode.$ep"
				echo "$own" >>"$T/own/$v.$mode.$ep.after-body"
			done ;;
	esac
	echo "$line $((a1 - a0)) $((w1 - w0)) $(echo "$s0|$s1" | awk -F'|' '{
		n = split($1, a, " "); split($2, b, " ")
		for (i = 1; i <= n; i++) { split(a[i], x, ":"); split(b[i], y, ":"); printf "%s:%s:%d:%.9f ", x[1], x[2], y[3] - x[3], y[4] - x[4] } }')" >>"$T/runs"
	kubectl delete namespace "$ns" --wait=true --timeout=180s >/dev/null 2>&1 ||
		echo "bench-cluster: namespace $ns not gone after 180 s" >&2
}

# A warm-up, not counted: one run of each mode as the chart stands before the rounds. With
# Kyverno's CRDs created, the first seq run cost kube-apiserver about 2 s of CPU more than
# the next ones in five harness checks out of five (29-31 ms a pod over 60 pods, 3.5 without
# them), whatever waited before it (40 s, kube-apiserver quiet for 2 s). Why is not known.
for mode in seq par; do
	run warm-up "$mode" 0 "bench-warm-up-$mode"
	tail -n 1 "$T/runs" | awk -v clk="$CLK" '{ printf "bench-cluster: warm-up %s, not counted: %.1f pods/s, %.1f ms of kube-apiserver CPU a pod\n", $2, $4, $7 / clk / ($5 > 0 ? $5 : 1) * 1000 }'
done
echo "bench-cluster: Kubernetes $(kubectl version -o json | jq -r .serverVersion.gitVersion), $ROUNDS rounds, $N 1-GPU pods per run; seq: one kubectl create, par: $WORKERS clients"
: >"$T/runs"
cur=chart # helm installed it
r=1
while [ "$r" -le "$ROUNDS" ]; do
	# This round's order: VARIANTS rotated by r - 1.
	order=$(echo $VARIANTS | awk -v r="$r" '{ for (i = 0; i < NF; i++) printf "%s ", $((i + r - 1) % NF + 1) }')
	for v in $order; do
		variant_off "$cur" || exit 1
		cur=none
		ns_fresh "bench-probe-$r-$v" || exit 1
		variant_on "$v" "bench-probe-$r-$v" || exit 1
		cur=$v
		kubectl delete namespace "bench-probe-$r-$v" --wait=true >/dev/null 2>&1
		for mode in seq par; do
			run "$v" "$mode" "$r" "bench-$r-$v-$mode"
			tail -n 1 "$T/runs" | awk '{ printf "bench-cluster: round %s %-12s %s %7.1f pods/s%s\n", $3, $1, $2, $4, ($6 > 0 ? " (" $6 " failed)" : "") }'
		done
	done
	r=$((r + 1))
done
variant_off "$cur"

# --- the table -------------------------------------------------------------------------
# $T/runs: VARIANT MODE ROUND PODS/S PODS ERRORS API-TICKS WH-TICKS label:per:count:sum...
summary() {
	local v=$1 mode=$2 f=$T/samples/$1.$2
	sort -n "$f" >"$f.sorted" 2>/dev/null
	awk -v v="$v" -v m="$mode" -v clk="$CLK" -v sorted="$f.sorted" '
		function q(p,  i) { i = int(ns * p + 0.999999); if (i < 1) i = 1; if (i > ns) i = ns; return s[i] }
		BEGIN { while ((getline x <sorted) > 0) s[++ns] = x + 0 }
		$1 == v && $2 == m {
			rate[++k] = $4; pods += $5; errs += $6; api += $7; wh += $8
			for (i = 9; i <= NF; i++) { split($i, a, ":"); if (!(a[1] in cnt)) lab[++nl] = a[1]; cnt[a[1]] += (a[2] == "pod" ? $5 : a[3]); sum[a[1]] += a[4] }
		}
		END {
			if (k == 0) exit
			for (i = 1; i <= k; i++) for (j = i + 1; j <= k; j++) if (rate[j] < rate[i]) { t = rate[i]; rate[i] = rate[j]; rate[j] = t }
			med = (k % 2) ? rate[(k + 1) / 2] : (rate[k / 2] + rate[k / 2 + 1]) / 2
			means = ""
			for (i = 1; i <= nl; i++) means = means (i > 1 ? " " : "") lab[i] " " (cnt[lab[i]] > 0 ? sprintf("%.2f", sum[lab[i]] / cnt[lab[i]] * 1000) : "-")
			if (means == "") means = "-"
			whcpu = (v == "none" || v == "in-process") ? "-" : sprintf("%.3f", wh / clk / pods * 1000)
			printf "%s|%s|%.1f|%.1f-%.1f|%.2f|%.2f|%s|%.3f|%s|%d\n", v, m, med, rate[1], rate[k], q(0.5), q(0.99), means, api / clk / pods * 1000, whcpu, errs
		}' "$T/runs"
}
for mode in seq par; do
	for v in $VARIANTS; do summary "$v" "$mode"; done
done >"$T/table"
echo
echo "bench-cluster: $ROUNDS rounds of $N pods; pods/s median (range of the rounds); client latency exact over all samples;"
echo "kube-apiserver's mean per webhook call (MAP/pod: the MutatingAdmissionPolicy's evaluations per pod) and CPU per pod over all rounds"
printf '%-12s %-4s %8s %13s %8s %8s %-26s %9s %9s %6s\n' variant mode pods/s "(range)" "p50 ms" "p99 ms" "apiserver mean ms" "api cpu" "wh cpu" failed
printf '%-12s %-4s %8s %13s %8s %8s %-26s %9s %9s %6s\n' "" "" "" "" client client "" "ms/pod" "ms/pod" ""
awk -F'|' '{ printf "%-12s %-4s %8s %13s %8s %8s %-26s %9s %9s %6s\n", $1, $2, $3, "(" $4 ")", $5, $6, $7, $8, $9, $10 }' "$T/table"
echo
echo "bench-cluster: ratios of medians (pods/s: above 1 is faster; p50 latency: above 1 is slower)"
for mode in seq par; do
	awk -F'|' -v m="$mode" '
		$2 == m { rate[$1] = $3; p50[$1] = $5 }
		function ratio(a, b, what) { if (!(a in rate) || !(b in rate) || rate[b] == 0 || p50[b] == 0) return; printf "  %s %-32s pods/s %.2f  p50 %.2f\n", m, what, rate[a] / rate[b], p50[a] / p50[b] }
		END {
			ratio("mutate-only", "go-policy", "ours (mutate-only) / Go policy")
			ratio("mutate-only", "go-trivial", "ours (mutate-only) / Go trivial")
			ratio("go-trivial-h2", "go-trivial", "Go trivial, HTTP/2 / HTTP/1.1")
			ratio("mutate-only", "mutate-nomc", "ours / ours without matchConditions")
			ratio("chart", "none", "chart / no webhook")
			ratio("chart", "go-trivial-x2", "chart / Go trivial twice")
			ratio("go-trivial-x2", "none", "Go trivial twice / no webhook")
			ratio("chart", "in-process", "chart / in-process policies")
			ratio("chart", "kyverno", "chart / Kyverno")
			ratio("mutate-only", "kyverno", "ours (mutate-only) / Kyverno")
		}' "$T/table"
done
echo
echo "bench-cluster: gpu-admission's own latency, exact over every round, ms (its log: from the request's headers,"
echo "and .after-body: from the last of its body, to the answer queued)"
for f in "$T"/own/*; do
	[ -f "$f" ] || continue
	sort -n "$f" | awk -v n="${f##*/}" '{ s[++k] = $1 }
		function q(p,  i) { i = int(k * p + 0.999999); if (i < 1) i = 1; return s[i] / 1000 }
		END { if (k) printf "  %-34s %6d calls  p50 %.3f  p90 %.3f  p99 %.3f  max %.3f\n", n, k, q(0.5), q(0.9), q(0.99), s[k] / 1000 }'
done
if [ -d "$T/perf" ]; then
	echo
	# Per run: the samples' split by process and by object (the kernel: syscalls, TCP on
	# loopback, scheduling), then the webhook process's own symbols. kube-apiserver's are
	# not named: test/cluster/build.sh links the control plane stripped (-s -w).
	echo "bench-cluster: where the time went in the par runs (perf, cpu-clock samples, self time)"
	for f in "$T"/perf/*.data; do
		echo "  ${f##*/}: $(perf report -i "$f" --stdio --no-children --sort comm 2>/dev/null |
			awk '/^ +[0-9.]+%/ { printf "%s %s  ", $2, $1 }')"
		perf report -i "$f" --stdio --no-children --sort comm,dso --percent-limit 2 2>/dev/null |
			awk '/^ +[0-9.]+%/ { printf "    %-8s %-18s %s\n", $1, $2, $3 }'
		perf report -i "$f" --stdio --no-children --comms MHD-worker,gpu-admission --sort sym --percent-limit 0.3 2>/dev/null |
			awk '/^ +[0-9.]+%/ { printf "      gpu-admission %-7s %s\n", $1, $3 }' | head -n 12
	done
fi
# The placements, as the probe found them: the Go policy must place as gpu-admission does.
for v in go-policy in-process kyverno; do
	in_variants "$v" && in_variants mutate-only || continue
	a=$(jq -c '[.spec.tolerations, .spec.nodeSelector]' "$V/mutate-only.probe" 2>/dev/null)
	b=$(jq -c '[.spec.tolerations, .spec.nodeSelector]' "$V/$v.probe" 2>/dev/null)
	[ "$a" = "$b" ] || echo "bench-cluster: $v places the pod otherwise than gpu-admission: $b, not $a"
done
for svc in go-trivial go-trivial-h2; do
	in_variants "$svc" || continue
	echo "bench-cluster: $svc served kube-apiserver over $(sed -n 's/.*first request over //p' "$T/$svc.log" | sort -u | tr '\n' ' ')"
done
echo "bench-cluster: webhook replica RSS $(ps -o rss= -p "$WH_PID" | awk '{printf "%.1f MB", $1 / 1024}'), Go policy webhook $(ps -o rss= -p "$(cat "$V/go-policy.pid")" | awk '{printf "%.1f MB", $1 / 1024}'), Kyverno $(awk '{printf "%.1f MB", $1 / 1024}' "$V/kyverno.rss" 2>/dev/null) (at the end of its last round), kube-apiserver $(ps -o rss= -p "$CP_APISERVER_PID" | awk '{printf "%.0f MB", $1 / 1024}')"
