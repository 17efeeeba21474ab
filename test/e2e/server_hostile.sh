#!/bin/sh
# Hostile clients on the TLS port: plain HTTP gets a fixed 400 saying to use
# https, then the close; random bytes and a garbage or truncated ClientHello are
# closed at once; clients that vanish right after the
# handshake, mid-headers or mid-body (hundreds of them) leave nothing behind (the
# in-flight gauge, the server's open descriptors and its RSS come back); all the
# while other clients are served. A flood of 200 connections against
# --max-connections 8 waits its turn; kill -9 and a restart on the same port; a
# stalled ClientHello is cut at --timeout; every server exits 0 on SIGTERM (so a
# valgrind or ASan finding fails the suite). Last, tenants: every way issue 13 found
# to put a CPU pod on a GPU node (forged DaemonSet owners, UPDATE, node names,
# self-service exemptions, upstream matching rules), sent as the tenant sends it
# to /mutate and /validate, is refused; the genuine DaemonSet pods and updates pass.
. test/e2e/server.lib

certs "$TMP/c"
CA=$TMP/c/ca.crt
LOG=$TMP/server.log
# A review padded with spaces to just under the default 3 MiB --max-body.
cp "$SAMPLE_GPU" "$TMP/big.json"
head -c $((3145728 - 64 - $(wc -c <"$SAMPLE_GPU"))) /dev/zero | tr '\0' ' ' >>"$TMP/big.json"

# "Closed at once" means: before PROMPT seconds, while the server's --timeout is
# 60 s, so only a close on the protocol error passes, never the idle cut. Generous
# (a garbage record is refused in well under a second, valgrind included).
PROMPT=15
start_server "$LOG" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --metrics-addr 127.0.0.1:0 \
	--threads 2 --timeout 60 || { bad "server did not start"; finish; }

# settle: waits (bounded) until no descriptor or request is left over from the clients.
settled() { [ "$(fds)" -le "$FDS0" ] && [ "$(in_flight)" = "$IN0" ]; }
settle() { eventually $((60 * SLOW)) settled; }
# together N CLIENT-ARGS...: N OpenSSL clients at once; fails if any of them does.
together() {
	n=$1; shift
	ps=""
	for k in $(seq "$n"); do
		client "$CA" "$@" >"$TMP/together$k.out" 2>&1 &
		ps="$ps $!"
	done
	r=0
	for p in $ps; do wait "$p" || r=1; done
	[ $r = 0 ] || cat "$TMP"/together*.out
	return $r
}
# closed_at_once FILE: FILE on a bare TCP connection to the TLS port, then read until
# the server closes it (end of file or reset); fails if it is still open after PROMPT.
closed_at_once() {
	timeout $((PROMPT + 5)) bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 2
		cat "$2" >&3 2>/dev/null
		timeout "$3" cat <&3 >/dev/null 2>&1
		[ $? != 124 ]' closed "$PORT" "$1" "$PROMPT"
}
# send_close FILE: FILE on a bare TCP connection, which is then closed by the client.
send_close() { bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" && cat "$2" >&3' send "$PORT" "$1" 2>/dev/null; }
# sc: openssl s_client to the server; it sends its stdin and closes (close_notify) at its end.
sc() {
	timeout $((10 * SLOW)) openssl s_client -connect "127.0.0.1:$PORT" -servername "$HOST" -CAfile "$CA" \
		-verify_return_error "$@" >/dev/null 2>&1
}
# repeat N WHAT COMMAND...: runs COMMAND N times; passes when it succeeded every time.
repeat() {
	n=$1; what=$2; shift 2
	good=0
	for k in $(seq "$n"); do "$@" && good=$((good + 1)); done
	equals "$good" "$n" "$what"
}

# ---- warm-up and baseline ----
check "warm-up: 200 mutations over keep-alive" \
	client "$CA" --body "$SAMPLE_GPU" --count 200 --expect-body '"patchType":"JSONPatch"'
check "warm-up: near-3 MiB reviews on two connections at once" \
	together 2 --body "$TMP/big.json" --count 2 --expect-body '"patchType":"JSONPatch"'
sleep 1
# The warm-up's clients have their answers, but the server counts a request out only
# after it has sent the answer (its completed callback): a worker thread that got no
# CPU since is still counted. Wait (bounded) for the gauge before taking the baseline.
in_flight_is() { [ "$(in_flight)" = "$1" ]; }
eventually $((30 * SLOW)) in_flight_is 1
FDS0=$(fds)
IN0=$(in_flight)
equals "$IN0" 1 "idle: the only request in flight is the /metrics scrape itself"
RSS0=$(rss_kb)

# Other clients are served all through the barrage: one keep-alive connection and
# one that opens a new connection per request.
rm -f "$TMP/stop"
client "$CA" --body "$SAMPLE_GPU" --count 100000000 --until "$TMP/stop" \
	--expect-body '"patchType":"JSONPatch"' >"$TMP/keep.out" 2>&1 &
KEEP=$!
client "$CA" --body "$SAMPLE_GPU" --count 100000000 --until "$TMP/stop" --new-conn \
	--expect-body '"patchType":"JSONPatch"' >"$TMP/new.out" 2>&1 &
NEWC=$!
PIDS="$PIDS $KEEP $NEWC"

# ---- not TLS at all ----
# Plain HTTP gets one fixed answer, 400 saying to use https, then the close.
codes=""
for k in $(seq 20); do
	code=$(curl -sS --max-time "$PROMPT" "http://127.0.0.1:$PORT/healthz" -o "$TMP/plain" -w '%{http_code}' 2>/dev/null)
	codes="$codes $?:$code"
done
# curl exit:code; 0:400 is the hint, 52 an empty reply, 28 a timeout.
equals "$(echo $codes | tr ' ' '\n' | grep -cvE '^0:400$')" 0 "plain HTTP GET to the TLS port: 400 (curl exit:code$codes)"
has "$TMP/plain" "use https://" "plain HTTP GET to the TLS port: the answer says to use https"
printf 'GET /healthz HTTP/1.0\r\n\r\n' | timeout "$PROMPT" bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 2
	cat >&3; cat <&3' plain "$PORT" >"$TMP/plain.raw" 2>/dev/null
has "$TMP/plain.raw" "HTTP/1.1 400 Bad Request" "plain HTTP/1.0 without Host on a bare socket: 400"
has "$TMP/plain.raw" "Connection: close" "plain HTTP on a bare socket: the 400 closes"
# A body too: the answer comes without reading it (a reset may cut it short: 55, 56).
curl -sS --max-time "$PROMPT" "http://127.0.0.1:$PORT/mutate" -H 'Content-Type: application/json' \
	--data-binary "@$TMP/big.json" -o /dev/null 2>/dev/null
rc=$?
check "plain HTTP POST of 3 MiB to the TLS port: closed at once (curl exit $rc)" \
	sh -c "[ $rc = 0 ] || [ $rc = 52 ] || [ $rc = 55 ] || [ $rc = 56 ]"
printf 'GET /healthz HTTP/1.0\r\n\r\n' >"$TMP/get"
check "plain HTTP on a bare socket: closed at once" closed_at_once "$TMP/get"

# Random bytes: 64 KiB each, more than any record or SSLv2 hello length the first
# bytes can announce, so the server always has a whole (garbage) record to refuse.
noise() { head -c 65536 /dev/urandom >"$TMP/noise" && closed_at_once "$TMP/noise"; }
repeat 10 "64 KiB of random bytes instead of a ClientHello: closed at once" noise
# A well-framed handshake record (type 22, TLS 1.0, 4091 bytes) holding a ClientHello
# header (type 1, 4087 bytes) whose contents are random.
garbage_hello() {
	printf '\026\003\001\017\373\001\000\017\367' >"$TMP/ghello"
	head -c 4087 /dev/urandom >>"$TMP/ghello"
	closed_at_once "$TMP/ghello"
}
repeat 20 "a ClientHello of random contents: closed at once" garbage_hello

# A real ClientHello (as openssl s_client sends it: record header, then the handshake
# message), cut in half.
client_hello "$TMP/hello"
HELLO_LEN=$(wc -c <"$TMP/hello")
check "captured a real ClientHello (record type 22, $HELLO_LEN bytes)" \
	sh -c "[ $HELLO_LEN -gt 100 ] && [ \"\$(head -c 1 $TMP/hello | od -An -tu1 | tr -d ' ')\" = 22 ]"
head -c $((HELLO_LEN / 2)) "$TMP/hello" >"$TMP/half-hello"
head -c $((HELLO_LEN - 1)) "$TMP/hello" >"$TMP/cut-hello"
repeat 50 "half a real ClientHello, then the client closes: sent" send_close "$TMP/half-hello"
repeat 50 "a real ClientHello but its last byte, then the client closes: sent" send_close "$TMP/cut-hello"
check "alive after the garbage" client "$CA" --body "$SAMPLE_GPU" --count 3

# ---- clients that vanish ----
H="POST /mutate HTTP/1.1\r\nHost: $HOST\r\nContent-Type: application/json\r\n"
LEN=$(wc -c <"$SAMPLE_GPU")
repeat 100 "TLS handshake, then closed (close_notify)" sc </dev/null
mid_headers() { printf "${H}Content-Len" | sc; }
repeat 100 "TLS handshake and half the headers, then closed" mid_headers
mid_body() { { printf "${H}Content-Length: $LEN\r\n\r\n"; head -c $((LEN / 2)) "$SAMPLE_GPU"; } | sc; }
repeat 100 "TLS handshake, headers and half the body, then closed" mid_body

# Abrupt: ten clients at a time send the headers and half the body (of the sample,
# or of the 3 MiB review: 1.5 MiB), are seen in flight on the server, then killed
# (no close_notify, maybe a reset). Twenty rounds: 200 requests cut mid-body.
# (Under valgrind only every fifth round sends 1.5 MiB: decrypting them is slow there.)
# all_ten_in_flight: the round's ten clients are ready and the server counts their requests.
all_ten_in_flight() { [ "$(ls "$TMP"/ready* 2>/dev/null | wc -l)" = 10 ] && [ "$(in_flight)" -ge $((IN0 + 10)) ]; }
aborted=0
for round in $(seq 20); do
	body=$SAMPLE_GPU
	[ $((round % (SLOW > 1 ? 5 : 2))) = 0 ] && body=$TMP/big.json
	ps=""
	for k in $(seq 10); do
		rm -f "$TMP/ready$k"
		"$CLIENT_BIN" --port "$PORT" --cafile "$CA" --servername "$HOST" --body "$body" --hold 600000 \
			--ready-file "$TMP/ready$k" >/dev/null 2>&1 &
		ps="$ps $!"
	done
	PIDS="$PIDS $ps"
	eventually $((30 * SLOW)) all_ten_in_flight
	[ "$(in_flight)" -ge $((IN0 + 10)) ] && aborted=$((aborted + 10))
	for p in $ps; do kill -9 "$p" 2>/dev/null; done
	for p in $ps; do wait "$p" 2>/dev/null; done
done
equals "$aborted" 200 "200 requests seen in flight mid-body, then their clients killed"
# Until the server has dropped them (the two clients serving along may be in flight).
in_flight_at_most() { [ "$(in_flight)" -le "$1" ]; }
eventually $((60 * SLOW)) in_flight_at_most $((IN0 + 2))

# ---- large bodies ----
check "50 near-3 MiB reviews (two connections at once) are answered" \
	together 2 --body "$TMP/big.json" --count 25 --expect-body '"patchType":"JSONPatch"'

# ---- the clients served all along ----
touch "$TMP/stop"
wait_exit "$KEEP" $((30 * SLOW))
equals "$RC" 0 "keep-alive client during the barrage: no failed request"
wait_exit "$NEWC" $((30 * SLOW))
equals "$RC" 0 "new-connection client during the barrage: no failed request"
sed 's/^/    keep-alive: /' "$TMP/keep.out"
sed 's/^/    new-conn:   /' "$TMP/new.out"
check "the keep-alive client kept its one connection" grep -q 'failed=0 closes=0 ' "$TMP/keep.out"
check "the clients really ran during the barrage" \
	sh -c "cat $TMP/keep.out $TMP/new.out | awk -F'[ =]' '\$1 == \"sent\" { if (\$2 < 10) exit 1; n++ } END { exit n != 2 }'"
check "still alive and serving after it all" client "$CA" --body "$SAMPLE_GPU" --count 5 \
	--expect-body '"patchType":"JSONPatch"'

# ---- nothing left behind ----
settle
equals "$(in_flight)" "$IN0" "in-flight gauge back to idle"
check "open descriptors back to the baseline of $FDS0 (now $(fds))" sh -c "[ $(fds) -le $FDS0 ]"
rss_settled 8192
echo "    RSS: ${RSS0} kB after warm-up, ${RSS1} kB after the barrage (change: $((RSS1 - RSS0)) kB)"
# Margin: 8 MB. The warm-up already took two 3 MiB bodies at once, so the allocator's
# arenas (one per worker thread) and glibc's raised mmap/trim thresholds are part
# of the baseline; what may legitimately stay is free memory glibc keeps in those
# arenas (a 3 MiB body buffer in one arena plus fragmentation). A leak of the bodies
# alone would be hundreds of MB (50 x 3 MiB answered, 100 x 1.5 MiB cut off).
if [ "$MEASURE_RSS" = 0 ]; then
	echo "    (RSS not checked under valgrind or ASan)"
else
	check "RSS back within 8 MB of the baseline" sh -c "[ $((RSS1 - RSS0)) -le 8192 ]"
fi
stop_server "the hostile-input server"
lacks "$LOG" "grace period over with requests in flight" "no request left in flight at shutdown"

# ---- a keep-alive connection given away just as its client sends on it ----
# A newcomer waiting for a slot takes that of a connection idle for over a second
# (EVICT_MIN_IDLE_MS), and a keep-alive client may send on it just as the server closes
# it: a race of HTTP/1.1 itself (RFC 9112 section 9.3.1), which the server narrows (it
# spares a connection with unread bytes) but cannot close. The request gets no byte
# back and was never read; a client may send it again, a review being idempotent
# (sideEffects: None). Made certain here: --max-connections 1, and the client sends its
# second request only after a newcomer was served in its slot.
start_server "$TMP/evict.log" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --max-connections 1 \
	--log-level debug || { bad "eviction server did not start"; finish; }
rm -f "$TMP/between" "$TMP/idle"
client "$CA" --body "$SAMPLE_GPU" --count 2 --expect-body '"patchType":"JSONPatch"' --ready-file "$TMP/idle" \
	--between "$TMP/between" --idle-close-retry >"$TMP/evicted.out" 2>&1 &
EVICTED=$!
PIDS="$PIDS $EVICTED"
eventually $((30 * SLOW)) test -e "$TMP/idle" || bad "the keep-alive client's first review"
# The newcomer waits over a second for the slot: its reads wait longer than the default 10 s.
check "a newcomer is served in the slot of a keep-alive connection idle for a second (--max-connections 1)" \
	client "$CA" --body "$SAMPLE_GPU" --count 1 --expect-body '"patchType":"JSONPatch"' --io-timeout $((30 * SLOW))
has "$TMP/evict.log" "closing the longest idle connection" "... the server logged the cut"
touch "$TMP/between"
wait_exit "$EVICTED" $((30 * SLOW))
equals "$RC" 0 "the client whose connection was given away sends its next review again on a new one: none failed"
has "$TMP/evicted.out" "sent=3 ok=2 failed=0 closes=0 retries=1 " "... counted as one retry"
stop_server "the eviction server"

# ---- a flood against --max-connections 8 ----
# serve --help: "open connections at most ... more wait in the listen queue". So 200
# clients at once are all served in turn, none refused, while the server never holds
# more than 8 connections and the one connection open before the flood is served on.
FLOOD=200
[ "$SLOW" -gt 1 ] && FLOOD=60 # valgrind: a smaller flood, for the suite's time
# A client waits in the queue for its turn, and the queue drains at the server's pace:
# 200 x 3 reviews and 200 handshakes took over tls_client's 10 s under ASan on a machine
# at load 50 (160 clients gave up, 5 were cut). A client that gives up in the queue is
# not one the server refused, so the flood's clients wait as long as the suite may take.
FLOOD_WAIT=$((120 * SLOW))
# What is tested is the queue; the server's cuts of slow connections are
# server_resilience's. The header and body timeouts are generous here.
# But while clients wait, the server gives the slot of a connection idle for a
# second (EVICT_MIN_IDLE_MS: never asked, or between two requests), or of a request
# whose body is still missing after a second (issue 24), to a waiting one: on a quiet machine no flood client is ever that slow, but under ASan on a
# loaded one a starved client is, and is cut by design ("received handshake
# message out of context" in the server's debug log). So every failed client must
# be one the server cut that way (its debug log counts them): on a quiet machine,
# none.
start_server "$TMP/flood.log" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --threads 2 \
	--max-connections 8 --timeout 60 --header-timeout 60 --body-timeout 60 --log-level debug ||
	{ bad "flood server did not start"; finish; }
FDS0=$(fds)
rm -f "$TMP/stop" "$TMP/flooded"
# Its resend reconnects at the back of the flood's queue: it waits as long as a flood client.
client "$CA" --body "$SAMPLE_GPU" --count 100000000 --until "$TMP/stop" --idle-close-retry --io-timeout "$FLOOD_WAIT" \
	--expect-body '"patchType":"JSONPatch"' >"$TMP/before.out" 2>&1 &
BEFORE=$!
PIDS="$PIDS $BEFORE"
more_fds() { [ "$(fds)" -gt "$FDS0" ]; }
eventually $((5 * SLOW)) more_fds
(
	max=0
	while [ ! -e "$TMP/flooded" ]; do
		n=$(ls "/proc/$SERVER_PID/fd" 2>/dev/null | wc -l)
		[ "$n" -gt "$max" ] && max=$n
		sleep 0.02
	done
	echo "$max" >"$TMP/maxfds"
) &
SAMPLER=$!
ps=""
for k in $(seq "$FLOOD"); do
	client "$CA" --body "$SAMPLE_GPU" --count 3 --expect-body '"patchType":"JSONPatch"' --io-timeout "$FLOOD_WAIT" \
		>"$TMP/flood$k.out" 2>&1 &
	ps="$ps $!"
done
PIDS="$PIDS $ps"
failed=0
for p in $ps; do wait "$p" || failed=$((failed + 1)); done
touch "$TMP/flooded"
wait "$SAMPLER"
# cuts: the connections the flood server gave to a waiting client so far (its debug log).
cuts() { grep -c -e '"closing the longest idle connection' -e '"closing the oldest partial body' "$TMP/flood.log"; }
evicted=$(cuts)
echo "    flood: $failed of $FLOOD clients failed, $evicted connections given to a waiting client after a second idle"
check "a flood of $FLOOD connections against --max-connections 8: each served in turn, none refused but for the idle cut" \
	[ "$failed" -le "$evicted" ]
lacks "$TMP/flood.log" "sent no request header in time" "... and no client cut by the header timeout"
[ "$failed" = 0 ] || cat "$TMP"/flood*.out | sort | uniq -c | sort -rn | head -n 5
most=$(($(cat "$TMP/maxfds") - FDS0))
echo "    flood: at most $most client connections open in the server at once"
# A slot is free when libmicrohttpd says the connection closed, a moment before it
# closes the socket (daemon.c MHD_cleanup_connections: the NOTIFY_CLOSED callback,
# then MHD_socket_close_chk_), in the worker's own thread: a worker preempted in
# between (seen at load 70 under ASan: 9 descriptors) holds one socket past its
# slot, so the descriptors may exceed the limit by one per worker (--threads 2).
check "... never more than 8 connections open in the server at once (+1 closing per worker)" \
	sh -c "[ $most -gt 0 ] && [ $most -le $((8 + 2)) ]"
touch "$TMP/stop"
wait_exit "$BEFORE" $((30 * SLOW))
equals "$RC" 0 "the connection open before the flood: no failed request"
# That connection is a keep-alive client between two requests most of the time: a
# second without CPU for it (a loaded machine) makes it the longest idle connection,
# which the server gives away by design, as it does a flood client's. So it may have
# reconnected (or sent a review again, above) as often as the server logged such a
# cut, never more; on a quiet machine, never.
before_closes=$(sed -n 's/.* closes=\([0-9]*\) retries=\([0-9]*\) .*/\1 \2/p' "$TMP/before.out" | tail -n 1 | awk '{ print $1 + $2 }')
evicted=$(cuts)
check "... and served on that same connection throughout, but for the idle cut ($before_closes reconnects, $evicted cuts)" \
	sh -c "grep -q 'failed=0 ' '$TMP/before.out' && [ '${before_closes:-x}' -le '$evicted' ]"
check "after the flood, new clients are served" client "$CA" --body "$SAMPLE_GPU" --count 5 --new-conn
stop_server "the flooded server"

# ---- kill -9, then a restart on the same port ----
start_server "$TMP/killed.log" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --threads 2 ||
	{ bad "server to kill did not start"; finish; }
KPORT=$PORT
rm -f "$TMP/stop"
client "$CA" --body "$SAMPLE_GPU" --count 100000000 --until "$TMP/stop" >/dev/null 2>&1 &
L1=$!
client "$CA" --body "$SAMPLE_GPU" --count 100000000 --until "$TMP/stop" --new-conn >/dev/null 2>&1 &
L2=$!
PIDS="$PIDS $L1 $L2"
check "serving before the kill" client "$CA" --body "$SAMPLE_GPU" --count 3
kill -9 "$SERVER_PID"
wait_exit "$SERVER_PID" 10
equals "$RC" 137 "kill -9 under load: killed"
# Started by hand (not start_server) to time it: from the exec to the first 200 on /readyz.
t0=$(date +%s%N)
$WRAP "$BIN" serve --addr "127.0.0.1:$KPORT" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
	--threads 2 --timeout 3 --log-level debug 2>"$TMP/restart.log" &
SERVER_PID=$!
SERVER_LOG=$TMP/restart.log
PIDS="$PIDS $SERVER_PID"
code=""
i=0
while [ "$code" != 200 ] && [ $i -lt $((1500 * SLOW)) ] && kill -0 "$SERVER_PID" 2>/dev/null; do
	code=$(curl -sS --max-time 2 --cacert "$CA" --resolve "$HOST:$KPORT:127.0.0.1" \
		"https://$HOST:$KPORT/readyz" -o /dev/null -w '%{http_code}' 2>/dev/null)
	[ "$code" = 200 ] || sleep 0.02
	i=$((i + 1))
done
t1=$(date +%s%N)
equals "$code" 200 "restarted on the same port $KPORT after kill -9: /readyz 200"
echo "    restart: exec to ready in $(((t1 - t0) / 1000000)) ms"
touch "$TMP/stop"
wait_exit "$L1" $((30 * SLOW)) || kill -9 "$L1"
wait_exit "$L2" $((30 * SLOW)) || kill -9 "$L2"
PORT=$KPORT
check "the restarted server serves" client "$CA" --body "$SAMPLE_GPU" --count 5 --expect-body '"patchType":"JSONPatch"'

# A ClientHello that stops half-way and is held open: cut at --timeout (3 s here;
# by libmicrohttpd's idle timeout or the request watchdog, whichever comes first).
t0=$(date +%s%N)
timeout $((30 * SLOW)) bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$1" || exit 2
	cat "$2" >&3
	timeout "$3" cat <&3 >/dev/null 2>&1
	[ $? != 124 ]' held "$PORT" "$TMP/half-hello" $((20 * SLOW))
equals "$?" 0 "half a ClientHello, held open: the server closes it"
echo "    stalled handshake closed after $((($(date +%s%N) - t0) / 1000000)) ms (--timeout 3)"
check "serving after the stalled handshake" client "$CA" --body "$SAMPLE_GPU" --count 3
stop_server "the restarted server"

# ---- tenants ----
# The golden cases' requests (test/golden/<case>/request.json), under one policy that
# serves them all: the three AKS agent-pool pools (GPU node names derived from them) and
# a spot pool selected by label (so some node names cannot be told), GPU Feature
# Discovery's count and memory labels, a pod selector scoped to namespaces, and DaemonSet pods
# exempt where the corpus's node agents are installed (monitoring, nvidia-gpu-operator too).
cat >"$TMP/tenancy.yaml" <<'EOF'
gpuNodeLabels: [kubernetes.azure.com/accelerator, accelerator, nvidia.com/gpu.present,
                nvidia.com/gpu.product, nvidia.com/gpu.count, nvidia.com/gpu.memory]
pools:
  - {name: t4, resources: [nvidia.com/gpu], maxGPUsPerPod: 1, nodeSelector: {kubernetes.azure.com/agentpool: gput4}}
  - {name: a100, resources: [nvidia.com/gpu, nvidia.com/mig-*], maxGPUsPerPod: 8, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}}
  - {name: h100, resources: [nvidia.com/gpu], maxGPUsPerPod: 8, nodeSelector: {kubernetes.azure.com/agentpool: gpuh100}}
  - {name: spot, resources: [nvidia.com/gpu], maxGPUsPerPod: 8,
     nodeSelector: {kubernetes.azure.com/accelerator: nvidia, kubernetes.azure.com/scalesetpriority: spot}}
exempt:
  daemonSetNamespaces: [kube-system, gpu-operator, gpu-resources, monitoring, nvidia-gpu-operator]
  podSelectors:
    - {namespaces: [monitoring, "node-*"], matchLabels: {app: node-agent}}
EOF
check "the tenants' policy is valid" "$BIN" check-config "$TMP/tenancy.yaml"
start_server "$TMP/tenancy.log" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --threads 2 \
	--config "$TMP/tenancy.yaml" || { bad "tenancy server did not start"; finish; }
# ask PATH CASE: the answer of PATH to the golden case's request, into $TMP/answer.
ask() {
	hcurl "$CA" "$1" -H 'Content-Type: application/json' --data-binary "@test/golden/$2/request.json" \
		>"$TMP/answer" 2>&1
}
for c in tenant-ds-forged-foreign-group tenant-ds-forged-not-controller tenant-ds-forged-device-plugin \
	tenant-ds-forged-16-gpus tenant-ds-forged-amd-gpu tenant-ds-no-userinfo \
	tenant-update-adds-toleration tenant-update-gated-adds-selector tenant-update-gated-adds-affinity \
	tenant-nodename-derived tenant-matchfields-derived tenant-hostname-selector-derived \
	tenant-pod-selector-other-namespace \
	upstream-empty-term-gpu-only upstream-gt-gpu-label upstream-lt-gpu-label upstream-empty-operator; do
	for p in /mutate /validate; do
		ask "$p" "$c"
		check "tenant bypass $c on $p: refused (403)" grep -q '"allowed":false,"status":{"code":403,' "$TMP/answer"
	done
done
# Pinned by name to a node the policy cannot tell from a GPU node: admitted, with the warning, which
# /mutate gives (it sees every pod first) and /validate does not repeat.
for c in tenant-nodename-undecidable tenant-matchfields-gpunodenames; do
	ask /mutate "$c"
	check "tenant pin by name $c on /mutate: admitted with a warning naming gpuNodeNames" \
		sh -c "grep -q '\"allowed\":true' '$TMP/answer' && grep -q 'set gpuNodeNames in the policy' '$TMP/answer'"
	ask /validate "$c"
	check "tenant pin by name $c on /validate: admitted, /mutate's warning not repeated" \
		sh -c "grep -q '\"allowed\":true' '$TMP/answer' && ! grep -q 'gpuNodeNames' '$TMP/answer'"
done
for c in corpus-ds-nvidia-device-plugin-aks corpus-ds-dcgm-exporter corpus-ds-gpu-operator-device-plugin \
	update-labels-gpu-pod update-labels-tolerating-cpu-pod exempt-pod-selector-namespace-glob; do
	for p in /mutate /validate; do
		ask "$p" "$c"
		check "genuine $c on $p: admitted, no patch" \
			sh -c "grep -q '\"allowed\":true' '$TMP/answer' && ! grep -q patchType '$TMP/answer'"
	done
done
lacks "$TMP/tenancy.log" '"level":"error"' "no errors logged while judging tenants"
stop_server "the tenancy server"
finish
