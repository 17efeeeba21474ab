#!/bin/sh
# The live watch's benchmark (issue 25): `gpu-admission watch` itself, through libcurl, the
# list pages and the watch stream, against test/bench/fake_apiserver serving a 3,000-node /
# 150,000-pod cluster (gen_snapshot's pods, compact, with a managedFields block added: ~8 KB
# each on the wire), then every churn event of gen_events (~200,000). Reports the list's objects/s
# and the watch's events/s in CPU time of the watch process (pinned to one core with taskset
# when there are two), time to ready, peak RSS (VmHWM) and RSS at the end; never asserts
# (goal: <= 256 MB, >= 10,000 events/s on one core).
#
#   sh test/bench/watch.sh [NODES PODS]     (or: make bench-watch; make bench runs it)
# Environment: BUILD, BIN; EVENTS an existing gen_events stream to use instead of making one.
# Last line: one JSON object with the figures, for test/bench/run.sh.
set -eu
BUILD=${BUILD:-build}
BIN=${BIN:-bin/gpu-admission}
NODES=${1:-3000}
PODS=${2:-150000}
events=${EVENTS:-$BUILD/bench/events-$NODES-$PODS.jsonl}
if [ -z "${EVENTS:-}" ]; then
	. test/bench/streams.lib
	bench_streams "$NODES" "$PODS"
fi
tmp=$(mktemp -d)
srv=
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null || true
	[ -n "$srv" ] && kill "$srv" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

# The server on the second core, the watch on the first (when there are two).
pin_srv= pin_watch=
if [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null 2>&1; then
	pin_srv="taskset -c 1" pin_watch="taskset -c 0"
fi
$pin_srv "$BUILD/bench/fake_apiserver" "$events" "$tmp/port" "$tmp/go" 2>"$tmp/srv.log" &
srv=$!
while [ ! -s "$tmp/port" ]; do
	kill -0 "$srv" 2>/dev/null || { cat "$tmp/srv.log" >&2; exit 1; }
	sleep 0.2
done
port=$(cat "$tmp/port")
node_events=$(sed -n 's/.* \([0-9]*\) node and \([0-9]*\) pod events.*/\1/p' "$tmp/srv.log")
pod_events=$(sed -n 's/.* \([0-9]*\) node and \([0-9]*\) pod events.*/\2/p' "$tmp/srv.log")
pod_bytes=$(sed -n 's/.*; \([0-9]*\) bytes a listed pod.*/\1/p' "$tmp/srv.log")
listed=$(sed -n 's/.*: \([0-9]*\) nodes, \([0-9]*\) pods listed.*/\1 \2/p' "$tmp/srv.log")
cat >"$tmp/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: bench, cluster: {server: "http://127.0.0.1:$port"}}]
users: [{name: bench, user: {token: bench}}]
contexts: [{name: bench, context: {cluster: bench, user: bench}}]
current-context: bench
EOF

# A free port for the watch's HTTP server.
addr=127.0.0.1:$(( 20000 + $$ % 20000 ))
tck=$(getconf CLK_TCK)
cpu() { awk -v t="$tck" '{ printf "%.3f", ($14 + $15) / t }' "/proc/$pid/stat"; }
now() { date +%s.%N; }
counter() {  # counter NAME RESOURCE: a per-resource counter of /metrics
	curl -s "http://$addr/metrics" | awk -v m="gpu_admission_watch_$1{resource=\"$2\"}" '$1 == m { print $2 }'
}
t0=$(now)
$pin_watch "$BIN" watch -c test/bench/report-policy.yaml --kubeconfig "$tmp/kubeconfig" --addr "$addr" \
	--interval 3600 2>"$tmp/watch.log" &
pid=$!
# Ready: both lists done and the first report built (the server holds the watches' events until then).
until [ "$(curl -s -o /dev/null -w '%{http_code}' "http://$addr/readyz")" = 200 ]; do
	kill -0 "$pid" 2>/dev/null || { tail -5 "$tmp/watch.log" >&2; exit 1; }
	sleep 0.1
done
t_ready=$(now)
cpu_ready=$(cpu)
hwm_ready=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
: >"$tmp/go"  # the watches' events now
# Done: every churn event of both kinds applied.
while :; do
	n=$(counter events_total nodes)
	p=$(counter events_total pods)
	[ "${n:-0}" -ge "$node_events" ] && [ "${p:-0}" -ge "$pod_events" ] && break
	kill -0 "$pid" 2>/dev/null || { tail -5 "$tmp/watch.log" >&2; exit 1; }
	sleep 0.2
done
t_done=$(now)
cpu_done=$(cpu)
hwm=$(awk '/VmHWM/ { print $2 }' "/proc/$pid/status")
rss=$(awk '/VmRSS/ { print $2 }' "/proc/$pid/status")
refused=$(curl -s "http://$addr/metrics" | awk '/^gpu_admission_watch_refused_total/ { s += $2 } END { print s + 0 }')
set -- $listed
awk -v nodes="$1" -v pods="$2" -v nev="$node_events" -v pev="$pod_events" -v t0="$t0" -v tr="$t_ready" \
    -v td="$t_done" -v cr="$cpu_ready" -v cd="$cpu_done" -v hr="$hwm_ready" -v h="$hwm" -v r="$rss" \
    -v refused="$refused" -v pb="$pod_bytes" 'BEGIN {
	objs = nodes + pods; ev = nev + pev
	printf "watch (fake API server, %d nodes / %d pods of %d bytes listed, then %d watch events):\n", nodes, pods, pb, ev
	printf "  ready in %.1f s (%.1f s CPU): list %.0f objects/s of CPU\n", tr - t0, cr, objs / cr
	printf "  watch: %.1f s, %.1f s CPU: %.0f events/s of CPU; refused %d\n", td - tr, cd - cr, ev / (cd - cr), refused
	printf "  peak RSS %.1f MB at ready, %.1f MB in all; RSS at the end %.1f MB\n", hr / 1024, h / 1024, r / 1024
	printf "{\"nodes\": %d, \"pods\": %d, \"pod_bytes\": %d, \"watch_events\": %d, \"ready_s\": %.2f, \"ready_cpu_s\": %.2f, " \
	       "\"list_objects_per_cpu_s\": %.0f, \"watch_cpu_s\": %.2f, \"watch_events_per_cpu_s\": %.0f, " \
	       "\"peak_rss_mb\": %.1f, \"rss_end_mb\": %.1f, \"refused\": %d}\n", nodes, pods, pb, ev, tr - t0, cr,
	       objs / cr, cd - cr, ev / (cd - cr), h / 1024, r / 1024, refused
}'
