#!/bin/sh
# make bench: figures, never assertions. Prints a table and writes the same
# figures as JSON to the path given as the first argument, or $BENCH_OUT
# (make bench BENCH_OUT=...), default build/bench/results.json.
#
# Load generator and server share this machine's cores, as they would in a
# quick check anywhere; the server runs with its defaults (threads = cores,
# log level info: one JSON line per decision, to a file).
#
# Also: the same wrk run against Debian's nginx answering a fixed reply (our
# answer's bytes) over TLS with the same certificate, HTTP/1.1, 16
# connections: the limit of TLS serving on this machine, and our throughput as
# a fraction of it. And RSS around issue 14's memory attacks (a review of a
# million empty affinity terms, 24 concurrent 3 MiB uploads).
set -u
BIN=${BIN:-bin/gpu-admission}
B=${BUILD:-build}/bench
OUT=${1:-${BENCH_OUT:-$B/results.json}}
SECS=${BENCH_SECONDS:-10}
mkdir -p "$B" "$(dirname "$OUT")"
tmp=$(mktemp -d)
pid=""
npid=""
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	[ -n "$npid" ] && kill "$npid" 2>/dev/null
	wait 2>/dev/null
	rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() { # a port nobody listens on, in the ephemeral range
	while :; do
		p=$(( (($(od -An -N2 -tu2 /dev/urandom) % 20000) + 20000) ))
		ss -ltn 2>/dev/null | grep -q ":$p " || { echo "$p"; return; }
	done
}
rss_kb() { awk -v k="$2" '$1 == k":" { print $2 }' "/proc/$1/status"; }
mb() { echo "$1" | awk '{printf "%.1f", $1/1024}'; }
# One certificate (ECDSA P-256, as `certs` makes) for our server and for nginx.
"$BIN" certs --service bench --namespace bench --out "$tmp/certs" >/dev/null

echo "gpu-admission $($BIN version | cut -d' ' -f2) on $(nproc) cores, $(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//')"
echo

# 1. In-process: decode + policy + encode, inside a worker's per-request arena as
#    the server runs it (and, for comparison, with jansson on malloc, as `review`
#    runs it). Pods, and a realistic 20 KB Deployment (kubectl client-side apply:
#    managedFields and last-applied-configuration), judged by its template on
#    /validate's path.
"$B/bench_review" --json "$tmp/inproc.json" test/bench/review-1k.json test/bench/review-6k.json \
	test/bench/review-100k.json test/bench/review-deployment-20k.json
echo

# 2. Start the server; time from exec to /readyz 200.
port=$(free_port)
since=$(date +%s%N)
"$BIN" serve --tls-cert "$tmp/certs/tls.crt" --tls-key "$tmp/certs/tls.key" --addr "127.0.0.1:$port" \
	2>"$tmp/serve.log" &
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

# 6. The same closed loop against nginx: a fixed reply (our answer to the 6.7 KB
# review) over TLS, same certificate, same client, HTTP/1.1, 16 connections.
nginx_rps=0; nginx_p50=""; nginx_p99=""; ratio=0
ours16=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk16")
if command -v nginx >/dev/null 2>&1; then
	nport=$(free_port)
	mkdir -p "$tmp/nginx"
	reply=$(curl -sk "https://127.0.0.1:$port/mutate" -H 'Content-Type: application/json' \
		--data-binary @test/bench/review-6k.json 2>/dev/null)
	# nginx's return text expands $variables and ends at a quote: our answer has neither.
	case $reply in *"'"*|*'$'*|'') reply='{"fixed":"reply"}' ;; esac
	cat >"$tmp/nginx/nginx.conf" <<NGINX
worker_processes $(nproc);
daemon off;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx/body;
	proxy_temp_path $tmp/nginx/proxy;
	fastcgi_temp_path $tmp/nginx/fastcgi;
	uwsgi_temp_path $tmp/nginx/uwsgi;
	scgi_temp_path $tmp/nginx/scgi;
	keepalive_requests 1000000;
	keepalive_timeout 30s;
	client_body_buffer_size 16k;
	server {
		listen 127.0.0.1:$nport ssl;
		ssl_certificate $tmp/certs/tls.crt;
		ssl_certificate_key $tmp/certs/tls.key;
		ssl_protocols TLSv1.2 TLSv1.3;
		default_type application/json;
		location / { return 200 '$reply'; }
	}
}
NGINX
	nginx -c "$tmp/nginx/nginx.conf" -p "$tmp/nginx" 2>"$tmp/nginx/start.log" &
	npid=$!
	"$B/loadgen" ready --port "$nport" --since "$(date +%s%N)" >/dev/null 2>&1 || sleep 1
	BENCH_BODY=test/bench/review-6k.json wrk -t2 -c16 -d"${SECS}s" --latency \
		-s test/bench/post.lua "https://127.0.0.1:$nport/" >"$tmp/wrk-nginx" 2>&1
	kill -TERM "$npid" 2>/dev/null; wait "$npid" 2>/dev/null; npid=""
	nginx_rps=$(awk '/^Requests\/sec/ {print $2}' "$tmp/wrk-nginx")
	nginx_p50=$(awk '$1 == "50%" {print $2}' "$tmp/wrk-nginx")
	nginx_p99=$(awk '$1 == "99%" {print $2}' "$tmp/wrk-nginx")
	ratio=$(echo "$ours16 ${nginx_rps:-0}" | awk '{ printf "%.2f", ($2 > 0 ? $1 / $2 : 0) }')
	echo
	printf '%-28s %12s %10s %10s\n' "nginx fixed reply, TLS" "requests/s" "p50" "p99"
	printf '%-28s %12s %10s %10s\n' "  16 connections" "${nginx_rps:-0}" "$nginx_p50" "$nginx_p99"
	printf '%-44s %10s\n' "our throughput / nginx's (16 connections)" "$ratio"
else
	echo
	echo "nginx not installed (.ci/deps bench): no side-by-side line"
fi

# 7. RSS around the memory attacks, on a fresh server with its defaults.
port=$(free_port)
"$BIN" serve --tls-cert "$tmp/certs/tls.crt" --tls-key "$tmp/certs/tls.key" --addr "127.0.0.1:$port" \
	2>"$tmp/serve-mem.log" &
pid=$!
"$B/loadgen" ready --port "$port" --since "$(date +%s%N)" >/dev/null || { cat "$tmp/serve-mem.log"; exit 1; }
"${BUILD:-build}/test/gen_review" empty-terms 1000000 >"$tmp/terms.json"
cp test/e2e/sample-gpu-pod.json "$tmp/big.json"
head -c $((3145728 - 64 - $(wc -c <test/e2e/sample-gpu-pod.json))) /dev/zero | tr '\0' ' ' >>"$tmp/big.json"
mpost() { curl -sk --max-time 60 "https://127.0.0.1:$port/mutate" -H 'Content-Type: application/json' \
	--data-binary "@$1" -o /dev/null -w '%{http_code}\n'; }
mpost test/bench/review-6k.json >/dev/null
sleep 0.5
base_kb=$(rss_kb "$pid" VmRSS)
echo 5 >"/proc/$pid/clear_refs" 2>/dev/null
terms_code=$(mpost "$tmp/terms.json")
terms_peak_kb=$(rss_kb "$pid" VmHWM)
sleep 0.5
terms_after_kb=$(rss_kb "$pid" VmRSS)
echo 5 >"/proc/$pid/clear_refs" 2>/dev/null
ups=""
for k in $(seq 24); do mpost "$tmp/big.json" >"$tmp/up$k" & ups="$ups $!"; done
for k in $ups; do wait "$k"; done
uploads_peak_kb=$(rss_kb "$pid" VmHWM)
uploads_200=$(cat "$tmp"/up[0-9]* | grep -c '^200$')
uploads_503=$(cat "$tmp"/up[0-9]* | grep -c '^503$')
sleep 0.5
uploads_after_kb=$(rss_kb "$pid" VmRSS)
kill -TERM "$pid"; wait "$pid" 2>/dev/null; pid=""
echo
printf '%-44s %10s MB\n' "RSS before the memory attacks" "$(mb "$base_kb")"
printf '%-44s %10s MB  (answer %s)\n' "... 1M empty terms (3 MiB): peak / after" \
	"$(mb "$terms_peak_kb") / $(mb "$terms_after_kb")" "$terms_code"
printf '%-44s %10s MB  (%s x 200, %s x 503)\n' "... 24 x 3 MiB at once: peak / after" \
	"$(mb "$uploads_peak_kb") / $(mb "$uploads_after_kb")" "$uploads_200" "$uploads_503"

# 8. Audit throughput on 10,000 generated templates; time and peak RSS over 100,000 small
#    documents (memory must not grow with the number of documents).
audit_out=$(BUILD=${BUILD:-build} BIN=$BIN sh test/bench/audit.sh 2>/dev/null)
audit_line=$(echo "$audit_out" | grep 'list.json' | tail -n 1)
small_line=$(echo "$audit_out" | grep '100,000 docs' | tail -n 1)
echo
echo "audit: $audit_line"
echo "audit: $small_line"
audit_tps=$(echo "$audit_line" | grep -oE '[0-9]+ templates/s' | grep -oE '[0-9]+' | head -n 1)
small_kb=$(echo "$small_line" | sed -n 's/.*peak RSS \([0-9]*\) KiB.*/\1/p')

# 9. Cost report over a 5,000-node / 150,000-pod snapshot (about 1.9 GB, generated once).
echo
report_out=$(BUILD=${BUILD:-build} BIN=$BIN sh test/bench/report.sh)
echo "$report_out" | head -n 1
report_json=$(echo "$report_out" | tail -n 1)

# 10. The report's model fed the watch events of 3,000 nodes / 150,000 pods.
echo
model_out=$(BUILD=${BUILD:-build} sh test/bench/model.sh)
echo "$model_out" | sed -n '2,4p'
model_json=$(echo "$model_out" | tail -n 1)

# 11. `gpu-admission watch` itself, the same cluster served by a fake API server (lists, then a watch).
echo
watch_out=$(BUILD=${BUILD:-build} BIN=$BIN sh test/bench/watch.sh)
echo "$watch_out" | sed -n '1,4p'
watch_json=$(echo "$watch_out" | tail -n 1)

cat >"$OUT" <<JSON
{
  "machine": {"cores": $(nproc), "cpu": "$(awk '/model name/ {$1=$2=$3=""; print; exit}' /proc/cpuinfo | sed 's/^ *//')"},
  "in_process": $(sed -n 's/^{"in_process": //p; /^  {/p; /^\]}/p' "$tmp/inproc.json" | tr -d '\n' | sed 's/]}$/]/'),
  "ready_ms": $ready_ms,
  "rss_idle_kb": $idle_kb,
  "rss_peak_kb": $peak_kb,
  "wrk_closed_loop_6k": [$wrk_json],
  "nginx_fixed_reply_16": {"requests_per_second": ${nginx_rps:-0}, "p50": "$nginx_p50", "p99": "$nginx_p99"},
  "throughput_fraction_of_nginx_16": $ratio,
  "open_loop_6k": $open_json,
  "tls_full_handshakes_per_second": ${hs:-0},
  "rss_memory_attacks_kb": {"before": $base_kb, "empty_terms_peak": $terms_peak_kb, "empty_terms_after": $terms_after_kb,
    "uploads_24x3MiB_peak": $uploads_peak_kb, "uploads_after": $uploads_after_kb,
    "uploads_200": $uploads_200, "uploads_503": $uploads_503},
  "audit_templates_per_second": ${audit_tps:-0},
  "audit_100000_small_documents_peak_rss_kb": ${small_kb:-0},
  "report_5000_nodes_150000_pods": ${report_json:-null},
  "report_model_3000_nodes_150000_pods": ${model_json:-null},
  "watch_3000_nodes_150000_pods": ${watch_json:-null}
}
JSON
echo
echo "figures written to $OUT"
