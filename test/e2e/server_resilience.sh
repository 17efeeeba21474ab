#!/bin/sh
# Issue 14's attacks, each from one pod's worth of access on loopback, against the
# real server: the webhook must neither stall nor fall over.
#  1. hash flooding: ~70,000 annotation keys colliding under the duplicate check's
#     old public hash cost what ordinary keys cost, and never hold the workers;
#  2. memory: a review of a million empty affinity terms and 24 concurrent 3 MiB
#     uploads stay under the chart's 64 Mi limit (the budget answers 503 with
#     Retry-After), and RSS comes back near its baseline;
#  3. connection slots: 1024 idle connections from five addresses do not lock a new
#     client out; a connection that sends no request header is closed soon;
#  4. stuck reloads: a policy and certificate reload that failed for want of file
#     descriptors is retried; descriptor exhaustion does not spin the metrics listener;
#  5. HTTP framing: conflicting Content-Length is 400, an unknown Transfer-Encoding 501,
#     both at once;
#  6. a server started with a bad policy stays up, not ready, and serves once it is fixed;
#  7. workloads (issue 11): a custom resource of 32,000 pod templates, each at a 3 KB
#     path, stays under the chart's limit and within the memory budget; an UPDATE of
#     16,000 templates on each side does not hold the workers (no work quadratic in them).
# Timings are reported, never asserted, except as generous ratios or bounds far from
# what the attack took (each noted where it is made).
. test/e2e/server.lib

GEN=$BUILD/test/gen_review
HOLD_BIN=$BUILD/test/hold_conns
certs "$TMP/c"
CA=$TMP/c/ca.crt
CERT="--tls-cert $TMP/c/tls.crt --tls-key $TMP/c/tls.key"

ms() { echo $(($(date +%s%N) / 1000000)); }
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$SERVER_PID/stat"; }
# --header-timeout 60 where the binary has it (an older one, run with ONLY=..., does not),
# so that in the slot and descriptor tests only the fix can free a slot.
HT60=""
"$BIN" serve --help 2>/dev/null | grep -q -- --header-timeout && HT60="--header-timeout 60"
# memory_checks WHAT: after an attack (RSS0 before it, PEAK its peak), RSS stayed well
# under the chart's limit and came back near RSS0.
memory_checks() {
	rss_settled 4096
	echo "    $1: RSS ${RSS0} kB before, peak ${PEAK} kB, ${RSS1} kB after (limit ${CHART_LIMIT_KB} kB)"
	[ "$MEASURE_RSS" = 1 ] || return 0
	check "$1: peak RSS under $((ROOM_KB / 1024)) MiB (the chart's limit is $((CHART_LIMIT_KB / 1024)) Mi)" \
		sh -c "[ $PEAK -le $ROOM_KB ]"
	check "$1: RSS back within 4 MB of its baseline" sh -c "[ $((RSS1 - RSS0)) -le 4096 ]"
}
# post FILE [CURL ARGS]: POSTs FILE to /mutate; prints the HTTP status.
post() {
	f=$1; shift
	hcurl "$CA" /mutate --max-time $((60 * SLOW)) -H 'Content-Type: application/json' \
		--data-binary "@$f" -o "$TMP/post.out" -w '%{http_code}' "$@" 2>/dev/null
}

# ---- 1. hash flooding ----
section1() {
KEYS=70000
[ "$SLOW" -gt 1 ] && KEYS=7000
"$GEN" collide "$KEYS" >"$TMP/collide.json"
"$GEN" ordinary "$KEYS" >"$TMP/ordinary.json"
start_server "$TMP/hash.log" $CERT --threads 2 || { bad "server did not start"; return; }
post "$TMP/ordinary.json" >/dev/null # warm-up
# The cost of each review is the server's CPU time while it is answered (all its threads;
# nothing else runs meanwhile), which other processes on a loaded machine do not inflate
# as they do the wall-clock time: two wall-clock times taken a second apart compared a
# quiet moment with a busy one. The wall-clock times are printed too.
hz=$(getconf CLK_TCK)
t0=$(ms); c0=$(cpu_ticks); code_o=$(post "$TMP/ordinary.json"); c1=$(cpu_ticks); t1=$(ms)
t_ord=$((t1 - t0)); cpu_ord=$(((c1 - c0) * 1000 / hz))
t0=$(ms); c0=$(cpu_ticks); code_c=$(post "$TMP/collide.json"); c1=$(cpu_ticks); t1=$(ms)
t_col=$((t1 - t0)); cpu_col=$(((c1 - c0) * 1000 / hz))
equals "$code_o" 200 "$KEYS ordinary annotation keys: answered"
equals "$code_c" 200 "$KEYS colliding annotation keys: answered"
has "$TMP/post.out" '"uid":"gen"' "... with an AdmissionReview"
echo "    $KEYS keys: ordinary ${t_ord} ms (${cpu_ord} ms of CPU), colliding ${t_col} ms (${cpu_col} ms of CPU) (the old hash: ~15 s here, ~100 s loaded)"
# A generous ratio, not a timing: quadratic work is thousands of times the ordinary.
check "colliding keys cost at most 10x the CPU of ordinary ones, plus 1 s" sh -c "[ $cpu_col -le $((10 * cpu_ord + 1000)) ]"
# Two colliding reviews hold both workers at once; a valid review sent meanwhile is
# answered within the client's 10 s timeout (the API server's is 5 s).
ps=""
for k in 1 2; do post "$TMP/collide.json" >/dev/null & ps="$ps $!"; done
sleep 0.2
check "a valid review while two colliding ones are in flight: answered" \
	client "$CA" --body "$SAMPLE_GPU" --expect-body '"patchType":"JSONPatch"'
for p in $ps; do wait "$p"; done
stop_server "the hash-flood server"

}

# ---- 2. memory ----
section2() {
"$GEN" empty-terms 1000000 >"$TMP/terms.json"
cp "$SAMPLE_GPU" "$TMP/big.json"
head -c $((3145728 - 64 - $(wc -c <"$SAMPLE_GPU"))) /dev/zero | tr '\0' ' ' >>"$TMP/big.json"
start_server "$TMP/mem.log" $CERT --threads 2 || { bad "server did not start"; return; }
client "$CA" --body "$SAMPLE_GPU" --count 50 >/dev/null 2>&1
sleep 0.5
RSS0=$(rss_kb)
reset_peak
code=$(post "$TMP/terms.json")
equals "$code" 400 "a review of 1,000,000 empty affinity terms (3 MB): refused"
has "$TMP/post.out" "more than 100000 JSON values" "... for its value count"
PEAK=$(peak_kb)
memory_checks "1M empty terms"

# 24 uploads of 3 MiB at once: the budget (32 MiB) holds about ten bodies; the others
# are answered 503 with Retry-After once their bodies are in (the budget is charged as
# bytes arrive: issue 24), their bytes dropped as they come. (Under valgrind 12,
# still past the budget: decrypting 3 MiB is slow there.)
UPLOADS=24
[ "$SLOW" -gt 1 ] && UPLOADS=12
RSS0=$(rss_kb)
reset_peak
ps=""
for k in $(seq "$UPLOADS"); do
	{ hcurl "$CA" /mutate --max-time $((60 * SLOW)) -H 'Content-Type: application/json' \
		--data-binary "@$TMP/big.json" -D "$TMP/up$k.head" -o /dev/null -w '%{http_code}\n' \
		>"$TMP/up$k.code" 2>"$TMP/up$k.err"; echo "$?" >"$TMP/up$k.rc"; } &
	ps="$ps $!"
done
for p in $ps; do wait "$p"; done
PEAK=$(peak_kb)
ok200=$(cat "$TMP"/up*.code | grep -c '^200$')
ok503=$(cat "$TMP"/up*.code | grep -c '^503$')
echo "    $UPLOADS x 3 MiB at once: $ok200 answered 200, $ok503 answered 503; peak RSS ${PEAK} kB"
equals "$((ok200 + ok503))" "$UPLOADS" "$UPLOADS concurrent 3 MiB uploads: each answered 200 or 503"
for k in $(seq "$UPLOADS"); do  # what any other got, for a failure's reader
	grep -qx '200\|503' "$TMP/up$k.code" ||
		echo "    upload $k: code $(cat "$TMP/up$k.code"), curl exit $(cat "$TMP/up$k.rc"): $(tr '\n' ' ' <"$TMP/up$k.err")"
done
check "... at least one served" sh -c "[ $ok200 -ge 1 ]"
if [ "$ok503" -gt 0 ]; then
	check "... a 503 says when to retry (Retry-After)" sh -c "grep -il '^retry-after: 1' $TMP/up*.head | grep -q ."
fi
memory_checks "$UPLOADS x 3 MiB"
check "still serving after the memory attacks" client "$CA" --body "$SAMPLE_GPU" --count 5 \
	--expect-body '"patchType":"JSONPatch"'
stop_server "the memory-attack server"

}

# ---- 3. connection slots ----
section3() {
# --timeout and --header-timeout 60: only making room for the waiting client can serve it
# before a minute is up; the client gives up after 20 s.
start_server "$TMP/slots.log" $CERT --threads 2 --timeout 60 $HT60 ||
	{ bad "server did not start"; return; }
rm -f "$TMP/held" "$TMP/release"
"$HOLD_BIN" --port "$PORT" --count 1024 --from 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5,127.0.0.6 \
	--ready-file "$TMP/held" --until "$TMP/release" --seconds $((120 * SLOW)) >"$TMP/hold.out" 2>&1 &
HOLDER=$!
PIDS="$PIDS $HOLDER"
eventually $((60 * SLOW)) test -s "$TMP/held"
equals "$(cat "$TMP/held" 2>/dev/null)" 1024 "1024 idle connections from five addresses (205 each, under the per-address 256)"
sleep 1.5  # idle for over a second: the server's floor before it closes one for a newcomer
t0=$(ms)
code=$(hcurl "$CA" /healthz --max-time 20 -o /dev/null -w '%{http_code}' 2>/dev/null)
t1=$(ms)
equals "$code" 200 "a new client is served while 1024 idle connections are held (--timeout 60)"
echo "    new client answered in $((t1 - t0)) ms with 1024 idle connections held"
check "five new clients in a row are served too" sh -c \
	"for k in 1 2 3 4 5; do c=\$(curl -sS --max-time 20 --cacert $CA --resolve $HOST:$PORT:127.0.0.1 https://$HOST:$PORT/healthz -o /dev/null -w '%{http_code}'); [ \"\$c\" = 200 ] || exit 1; done"
touch "$TMP/release"
wait_exit "$HOLDER" 30
echo "    holder: $(tail -n 1 "$TMP/hold.out")"
stop_server "the slot-attack server"

# A connection that never sends a whole request header is closed after --header-timeout
# (2 s here), long before --timeout (60 s); one that asks in time is served.
start_server "$TMP/header.log" $CERT --threads 2 --timeout 60 --header-timeout 2 ||
	{ bad "server did not start"; return; }
t0=$(ms)
timeout $((30 * SLOW)) bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 2
	timeout 40 cat <&3 >/dev/null 2>&1
	[ $? != 124 ]' silent "$PORT"
equals "$?" 0 "a silent connection is closed by the server before --timeout (60 s)"
echo "    silent connection closed after $(($(ms) - t0)) ms (--header-timeout 2)"
check "a TLS client that asks in time is served" client "$CA" --body "$SAMPLE_GPU" --count 3
stop_server "the header-timeout server"

}

# ---- 4. descriptor exhaustion: reloads retried, no spin ----
section4() {
if [ "$SLOW" -gt 1 ]; then
	echo "    (descriptor exhaustion not run under valgrind: it keeps descriptors of its own)"
	return
fi
printf 'mode: enforce\n' >"$TMP/policy.yaml"
mkdir -p "$TMP/live"
cp "$TMP/c/tls.crt" "$TMP/c/tls.key" "$TMP/live/"
certs "$TMP/c2"
prlimit --nofile=96:96 "$BIN" serve --addr 127.0.0.1:0 --tls-cert "$TMP/live/tls.crt" \
	--tls-key "$TMP/live/tls.key" --config "$TMP/policy.yaml" --metrics-addr 127.0.0.1:0 --threads 2 \
	--timeout 60 $HT60 2>"$TMP/fd.log" &
SERVER_PID=$!
SERVER_LOG=$TMP/fd.log
PIDS="$PIDS $SERVER_PID"
wait_for "$TMP/fd.log" '"scheme":"http"' $((60 * SLOW)) || { bad "fd server did not start"; cat "$TMP/fd.log"; return; }
PORT=$(sed -n 's/.*"msg":"listening".*"port":"\([0-9]*\)","scheme":"https".*/\1/p' "$TMP/fd.log")
MPORT=$(sed -n 's/.*"msg":"listening".*"port":"\([0-9]*\)","scheme":"http".*/\1/p' "$TMP/fd.log")
rm -f "$TMP/held" "$TMP/release"
"$HOLD_BIN" --port "$PORT" --count 150 --ready-file "$TMP/held" --until "$TMP/release" \
	--seconds $((120 * SLOW)) >"$TMP/hold2.out" 2>&1 &
HOLDER=$!
PIDS="$PIDS $HOLDER"
eventually $((30 * SLOW)) test -s "$TMP/held"
fds_at_least() { [ "$(fds)" -ge "$1" ]; }
eventually $((60 * SLOW)) fds_at_least 96
check "the server's descriptors are exhausted (96 of 96)" sh -c "[ $(fds) -ge 96 ]"
# The metrics listener gets a client it cannot accept; a spinning accept loop would
# burn a core. Measured over 3 s: a generous bound, a third of one core.
curl -sS --max-time 8 "http://127.0.0.1:$MPORT/metrics" -o /dev/null 2>/dev/null &
CURL=$!
sleep 0.5
c0=$(cpu_ticks); t0=$(ms)
sleep 3
c1=$(cpu_ticks); t1=$(ms)
hz=$(getconf CLK_TCK)
cpu_ms=$(((c1 - c0) * 1000 / hz))
echo "    out of descriptors, a metrics client waiting: ${cpu_ms} ms of CPU in $((t1 - t0)) ms"
check "out of descriptors, the metrics listener does not spin (< 1/3 of a core)" \
	sh -c "[ $((cpu_ms * 3)) -le $((t1 - t0)) ]"
# Rotate the policy and the certificate while no file can be opened.
printf 'mode: warn\n' >"$TMP/policy.yaml.new" && mv "$TMP/policy.yaml.new" "$TMP/policy.yaml"
cp "$TMP/c2/tls.crt" "$TMP/live/tls.crt.new" && cp "$TMP/c2/tls.key" "$TMP/live/tls.key.new"
mv "$TMP/live/tls.crt.new" "$TMP/live/tls.crt" && mv "$TMP/live/tls.key.new" "$TMP/live/tls.key"
check "the policy reload fails for want of descriptors" wait_for "$TMP/fd.log" '"msg":"policy reload failed' $((15 * SLOW))
check "the certificate reload fails for want of descriptors" wait_for "$TMP/fd.log" '"msg":"certificate reload failed' $((15 * SLOW))
touch "$TMP/release"
wait_exit "$HOLDER" 30
wait "$CURL" 2>/dev/null
# Retried with backoff (at most 30 s apart) once descriptors are free again: the files
# never change after the failure.
check "the policy reload is retried and succeeds" wait_for "$TMP/fd.log" '"msg":"policy reloaded","config"' $((45 * SLOW))
has "$TMP/fd.log" '"mode":"warn"' "... the new policy (mode warn) is in service"
check "the certificate reload is retried and succeeds" wait_for "$TMP/fd.log" '"msg":"certificate reloaded"' $((45 * SLOW))
check "the new certificate serves" sh -c "echo | openssl s_client -connect 127.0.0.1:$PORT -servername $HOST \
	-CAfile $TMP/c2/ca.crt -verify_return_error >/dev/null 2>&1"
stop_server "the descriptor-exhaustion server"

}

# ---- 5. HTTP framing ----
section5() {
start_server "$TMP/frame.log" $CERT --threads 2 --timeout 60 || { bad "server did not start"; return; }
BODY=$(tr -d '\n' <"$SAMPLE_GPU")
LEN=$(printf '%s' "$BODY" | wc -c)
# framed NAME: sends $TMP/NAME over TLS and keeps the connection open from our side
# (s_client -quiet does not close at the end of its input); what comes back until the
# server closes goes to $TMP/NAME.out (15 s at most, while --timeout is 60 s: only an
# answer on the spot passes).
framed() {
	timeout $((15 * SLOW)) openssl s_client -quiet -connect "127.0.0.1:$PORT" -servername "$HOST" \
		-CAfile "$CA" <"$TMP/$1" >"$TMP/$1.out" 2>/dev/null
}
printf 'POST /mutate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nContent-Length: 5\r\n\r\n%s' \
	"$HOST" "$LEN" "$BODY" >"$TMP/twolen"
framed twolen
equals "$(head -n 1 "$TMP/twolen.out" | tr -d '\r')" "HTTP/1.1 400 Bad Request" "two different Content-Length headers: 400 at once"
has "$TMP/twolen.out" "conflicting Content-Length" "... saying why"
printf 'POST /mutate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip\r\n\r\n%s' \
	"$HOST" "$BODY" >"$TMP/gzip"
framed gzip
equals "$(head -n 1 "$TMP/gzip.out" | tr -d '\r')" "HTTP/1.1 501 Not Implemented" "Transfer-Encoding: gzip: 501 at once"
printf 'POST /mutate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n' \
	"$HOST" "$LEN" >"$TMP/both"
framed both
equals "$(head -n 1 "$TMP/both.out" | tr -d '\r')" "HTTP/1.1 400 Bad Request" "Content-Length with Transfer-Encoding: 400 at once"
printf 'POST /mutate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\nContent-Length: %s\r\nConnection: close\r\n\r\n%s' \
	"$HOST" "$LEN" "$LEN" "$BODY" >"$TMP/samelen"
framed samelen
equals "$(head -n 1 "$TMP/samelen.out" | tr -d '\r')" "HTTP/1.1 200 OK" "two equal Content-Length headers: one length, served"
check "chunked requests are still served" client "$CA" --body "$SAMPLE_GPU" --chunked --count 3 \
	--expect-body '"patchType":"JSONPatch"'
stop_server "the framing server"

}

# ---- 6. a bad policy at start: up, not ready, retrying ----
section6() {
printf 'mode: enforce\npools: 12\n' >"$TMP/bad.yaml"
start_server "$TMP/bad.log" $CERT --threads 2 --config "$TMP/bad.yaml" --metrics-addr 127.0.0.1:0 ||
	{ bad "a server with a bad policy exits instead of waiting for a good one"; return; }
sleep 1
check "with a bad policy the server keeps running (no crash loop)" kill -0 "$SERVER_PID"
equals "$(hcurl "$CA" /healthz -o /dev/null -w '%{http_code}')" 200 "... alive: /healthz 200 (no liveness restart)"
equals "$(hcurl "$CA" /readyz -o "$TMP/ready.out" -w '%{http_code}')" 503 "... not ready: /readyz 503 (a rollout waits)"
has "$TMP/ready.out" "no valid policy" "... saying why"
code=$(hcurl "$CA" /mutate -H 'Content-Type: application/json' --data-binary "@$SAMPLE_GPU" \
	-D "$TMP/m.head" -o /dev/null -w '%{http_code}')
equals "$code" 503 "... a review sent anyway: 503"
check "... with Retry-After" grep -qi '^retry-after: 1' "$TMP/m.head"
has "$TMP/bad.log" '"msg":"policy did not load; not ready until it does, retrying"' "the log says why it is not ready"
printf 'mode: enforce\n' >"$TMP/bad.yaml.new" && mv "$TMP/bad.yaml.new" "$TMP/bad.yaml"
readyz_is() { [ "$(hcurl "$CA" /readyz -o /dev/null -w '%{http_code}')" = "$1" ]; }
eventually $((60 * SLOW)) readyz_is 200
equals "$(hcurl "$CA" /readyz -o /dev/null -w '%{http_code}')" 200 "the policy fixed: ready without a restart"
check "... and it serves reviews" client "$CA" --body "$SAMPLE_GPU" --expect-body '"patchType":"JSONPatch"'
stop_server "the bad-policy server"
}

# ---- 7. workloads: many pod templates in one custom resource ----
section7() {
N=32000
[ "$SLOW" -gt 1 ] && N=3200
"$GEN" templates "$N" >"$TMP/templates.json"
"$GEN" templates-update "$((N / 2))" >"$TMP/templates-update.json"
printf 'workloads: [{group: kubeflow.org, kind: PyTorchJob}]\n' >"$TMP/workloads.yaml"
start_server "$TMP/workloads.log" $CERT --threads 2 --config "$TMP/workloads.yaml" ||
	{ bad "server did not start"; return; }
client "$CA" --body "$SAMPLE_GPU" --count 50 >/dev/null 2>&1
sleep 0.5
RSS0=$(rss_kb)
reset_peak
code=$(hcurl "$CA" /validate --max-time $((60 * SLOW)) -H 'Content-Type: application/json' \
	--data-binary "@$TMP/templates.json" -o "$TMP/post.out" -w '%{http_code}' 2>/dev/null)
equals "$code" 200 "a PyTorchJob of $N pod templates at 3 KB paths ($(($(wc -c <"$TMP/templates.json") / 1024)) KB): answered"
has "$TMP/post.out" 'holds more than 256 pod templates, the most the webhook judges in one object' \
	"... refused for holding more templates than the webhook judges"
PEAK=$(peak_kb)
memory_checks "$N pod templates"
stop_server "the workloads server"

# The work: with memory no limit (a budget of 1 GiB), two UPDATEs that compare N/2
# templates with N/2 old ones hold both workers; a valid review sent meanwhile is
# answered within the client's 10 s (the API server waits 5 s).
start_server "$TMP/workloads2.log" $CERT --threads 2 --config "$TMP/workloads.yaml" --memory-budget 1073741824 ||
	{ bad "server did not start"; return; }
ps=""
for k in 1 2; do
	hcurl "$CA" /validate --max-time $((120 * SLOW)) -H 'Content-Type: application/json' \
		--data-binary "@$TMP/templates-update.json" -o "$TMP/update$k.out" 2>/dev/null &
	ps="$ps $!"
done
sleep 0.5
check "a valid review while two UPDATEs of $((N / 2)) templates are in flight: answered" \
	client "$CA" --body "$SAMPLE_GPU" --expect-body '"patchType":"JSONPatch"'
for p in $ps; do wait "$p"; done
has "$TMP/update1.out" '"uid":"gen"' "... and the UPDATEs too"
stop_server "the workloads server (1 GiB budget)"
}

# ONLY=N (or "N M ...") runs those sections alone, e.g. against an older binary.
for n in ${ONLY:-1 2 3 4 5 6 7}; do "section$n"; done
finish
