#!/bin/sh
# make bench: figures, never assertions. Prints a table and writes the same
# figures as JSON to the path given as the first argument, or $BENCH_OUT
# (make bench BENCH_OUT=...), default build/bench/results.json.
#
# Load generator and server share this machine's cores, as they would in a
# quick check anywhere; the server runs with its defaults (threads = cores,
# log level info: one JSON line per decision, to a file).
set -u
BIN=${BIN:-bin/gpu-admission}
B=${BUILD:-build}/bench
OUT=${1:-${BENCH_OUT:-$B/results.json}}
SECS=${BENCH_SECONDS:-10}
mkdir -p "$B" "$(dirname "$OUT")"
tmp=$(mktemp -d)
pid=""
cleanup() { [ -n "$pid" ] && kill "$pid" 2>/dev/null; wait 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT INT TERM

free_port() { # a port nobody listens on, in the ephemeral range
	while :; do
		p=$(( (($(od -An -N2 -tu2 /dev/urandom) % 20000) + 20000) ))
		ss -ltn 2>/dev/null | grep -q ":$p " || { echo "$p"; return; }
	done
}
rss_kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }

echo "gpu-admission $($BIN version | cut -d' ' -f2) on $(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//')"
echo

# 1. In-process: decode + policy + encode. Pods, and a realistic 20 KB Deployment
#    (kubectl client-side apply: managedFields and last-applied-configuration),
#    judged by its template on /validate's path.
"$B/bench_review" --json "$tmp/inproc.json" test/bench/review-1k.json test/bench/review-6k.json \
	test/bench/review-100k.json test/bench/review-deployment-20k.json
echo

# 2. Start the server; time from exec to /readyz 200.
port=$(free_port)
since=$(date +%s%N)
"$BIN" serve --self-signed --addr "127.0.0.1:$port" 2>"$tmp/serve.log" &
pid=$!
ready_ms=$("$B/loadgen" ready --port "$port" --since "$since") || { cat "$tmp/serve.log"; exit 1; }
sleep 1
idle_kb=$(rss_kb "$pid" VmRSS)
printf '%-44s %10s ms\n' "exec to /readyz 200" "$ready_ms"
printf '%-44s %10s MB\n' "RSS idle" "$(echo "$idle_kb" | awk '{printf "%.1f", $1/1024}')"

# 3. Closed loop over TLS keep-alive, 6.7 KB review, wrk.
echo
printf '%-28s %12s %10s %10s %8s\n' "wrk /mutate (6.7 KB), $SECS s" "requests/s" "p50" "p99" "errors"
wrk_json=""
for c in 1 4 16; do
	t=$c; [ "$t" -gt 2 ] && t=2
	BENCH_BODY=test/bench/review-6k.json wrk -t"$t" -c"$c" -d"${SECS}s" --latency \
		-s test/bench/post.lua "https://127.0.0.1:$port/mutate" >"$tmp/wrk$c" 2>&1
	rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk$c")
	p50=$(awk '$1 == "50%" {print $2}' "$tmp/wrk$c")
	p99=$(awk '$1 == "99%" {print $2}' "$tmp/wrk$c")
	errs=$(awk '/Non-2xx/ {n += $NF} /Socket errors/ {gsub(",", ""); n += $4 + $6 + $8 + $10} END {print n + 0}' "$tmp/wrk$c")
	printf '%-28s %12s %10s %10s %8s\n' "  $c connection(s)" "$rps" "$p50" "$p99" "$errs"
	wrk_json="$wrk_json${wrk_json:+, }{\"connections\": $c, \"requests_per_second\": $rps, \"p50\": \"$p50\", \"p99\": \"$p99\", \"errors\": $errs}"
done

# 4. Open loop at a fixed rate, latency from each request's due time.
echo
open_json=$("$B/loadgen" open --port "$port" --body test/bench/review-6k.json --rate 1000 \
	--seconds "$SECS" --conns 8)
echo "$open_json" | awk -F'[:,} ]+' '{
	for (i = 1; i < NF; i++) v[$i] = $(i + 1)
	printf "open loop 1,000 req/s for %s s, 8 conns:  p50 %s us  p90 %s us  p99 %s us  p99.9 %s us  max %s us  errors %s\n",
		v["\"seconds\""], v["\"p50_us\""], v["\"p90_us\""], v["\"p99_us\""], v["\"p999_us\""], v["\"max_us\""], v["\"errors\""] }'
peak_kb=$(rss_kb "$pid" VmHWM)
printf '%-44s %10s MB\n' "RSS peak (after all load above)" "$(echo "$peak_kb" | awk '{printf "%.1f", $1/1024}')"

# 5. New connections: full TLS handshakes per second (ECDSA P-256, no resumption).
hs=$(openssl s_time -connect "127.0.0.1:$port" -new -time 5 2>/dev/null |
	awk '/connections in [0-9.]+ real seconds/ {print $1 / $4; exit}')
printf '%-44s %10.0f /s\n' "full TLS handshakes (openssl s_time -new)" "${hs:-0}"
kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=""

# 6. Audit throughput on 10,000 generated templates.
audit_line=$(BUILD=${BUILD:-build} BIN=$BIN sh test/audit/bench.sh 2>/dev/null | tail -n 1)
echo
echo "audit: $audit_line"
audit_tps=$(echo "$audit_line" | grep -oE '[0-9]+ templates/s' | grep -oE '[0-9]+' | head -n 1)

# 7. Cost report over a 5,000-node / 150,000-pod snapshot (about 1.9 GB, generated once).
echo
report_out=$(BUILD=${BUILD:-build} BIN=$BIN sh test/report/bench.sh)
echo "$report_out" | head -n 1
report_json=$(echo "$report_out" | tail -n 1)

cat >"$OUT" <<JSON
{
  "machine": {"cores": $(nproc), "cpu": "$(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//')"},
  "in_process": $(sed -n 's/^{"in_process": //p; /^  {/p; /^\]}/p' "$tmp/inproc.json" | tr -d '\n' | sed 's/]}$/]/'),
  "ready_ms": $ready_ms,
  "rss_idle_kb": $idle_kb,
  "rss_peak_kb": $peak_kb,
  "wrk_closed_loop_6k": [$wrk_json],
  "open_loop_6k": $open_json,
  "tls_full_handshakes_per_second": ${hs:-0},
  "audit_templates_per_second": ${audit_tps:-0},
  "report_5000_nodes_150000_pods": ${report_json:-null}
}
JSON
echo
echo "figures written to $OUT"
