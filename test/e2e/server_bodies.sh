#!/bin/sh
# Issue 24's attacks on request bodies and connection memory, each from one pod's
# worth of access on loopback, against the real server over TLS:
#  1. headers alone: 22 connections declaring bodies that together fill the memory
#     budget, and sending none, must not lock valid reviews out (the budget is charged
#     for body bytes as they arrive, not for the declared Content-Length);
#  2. a connection in the middle of its body: cut at --body-timeout, long before
#     --timeout; at the connection limit, a new client takes the slot of the oldest
#     partial body; partial bodies holding the memory budget give way to new reviews;
#  3. connection memory: ten held 3 MiB bodies and 1,000 TLS connections stay under
#     the chart's 64 Mi limit with room (each connection is charged to the budget).
# Timings are never asserted but as generous bounds far from what is measured: a
# client gets up to three tries a second apart, as client-go resends a 503 that
# carries Retry-After: 1 within the webhook's timeout.
. test/e2e/server.lib

HOLD_BIN=$BUILD/test/hold_conns
certs "$TMP/c"
CA=$TMP/c/ca.crt
CERT="--tls-cert $TMP/c/tls.crt --tls-key $TMP/c/tls.key"
BUDGET=33554432                  # --memory-budget's default, 32 MiB
# --body-timeout 60 where the binary has it (an older one, run to see these tests fail,
# does not), so that only the fix under test can free what the attack holds.
BT60=""
"$BIN" serve --help 2>/dev/null | grep -q -- --body-timeout && BT60="--body-timeout 60"

ms() { echo $(($(date +%s%N) / 1000000)); }
# wait_in_flight N: until N requests (besides the /metrics one asking) are in flight, bounded.
wait_in_flight() { eventually $((30 * SLOW)) in_flight_at_least "$1"; }
# hold N FILE OUT [ARGS...]: N TLS connections that each send FILE and hold; waits
# (bounded) until all are open; the holder runs until $TMP/release exists.
hold() {
	n=$1; f=$2; out=$3; shift 3
	rm -f "$out.ready"
	"$HOLD_BIN" --port "$PORT" --tls --count "$n" --send "$f" --ready-file "$out.ready" \
		--until "$TMP/release" --seconds $((240 * SLOW)) "$@" >"$out" 2>&1 &
	PIDS="$PIDS $!"
	HOLDER=$!
	eventually $((120 * SLOW)) test -s "$out.ready"
}
release() { touch "$TMP/release"; wait_exit "$HOLDER" 30; echo "    holder: $(tail -n 1 "$1")"; rm -f "$TMP/release"; }
# all_read: waits (bounded) until the server has read every byte sent to it. A holder is
# ready once the kernel took its bytes; the server may read them seconds later on a busy
# machine, and a body is not stalled (the server's floor before it gives way) until a
# second after its last byte was read.
all_read() { eventually $((60 * SLOW)) none_unread || { echo "$(unread) bytes unread"; return 1; }; }
# review_now: one valid review, answered 200 with its patch at the first try.
review_now() { client "$CA" --body "$SAMPLE_GPU" --count 1 --expect-body '"patchType":"JSONPatch"'; }
# review_soon: the same within three tries a second apart (a 503 says Retry-After: 1).
review_soon() {
	for k in 1 2 3; do
		review_now >"$TMP/review.out" 2>&1 && return 0
		sleep 1
	done
	cat "$TMP/review.out"
	return 1
}
# head_of LENGTH [PAD]: a /mutate request's headers declaring LENGTH body bytes, padded
# with an X-Pad header of PAD bytes (the issue's headers were 2,574 bytes).
head_of() {
	printf 'POST /mutate HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %s\r\n' "$HOST" "$1"
	printf 'X-Pad: %s\r\n\r\n' "$(head -c "${2:-1}" /dev/zero | tr '\0' a)"
}

# ---- 1. headers alone do not hold the budget ----
# 22 declared bodies of budget/22 - 1 bytes: reserved at header time, they held all of the
# 32 MiB budget but 10 bytes, and every valid review got 503 until --timeout (60 s here).
N=22
head_of $((BUDGET / N - 1)) 2400 >"$TMP/headers"
start_server "$TMP/s1.log" $CERT --threads 2 --timeout 60 --header-timeout 60 $BT60 --metrics-addr 127.0.0.1:0 ||
	{ bad "server did not start"; finish; }
check "warm-up" review_now
check "$N connections send $(wc -c <"$TMP/headers") bytes of headers declaring $((BUDGET / N - 1))-byte bodies" \
	hold "$N" "$TMP/headers" "$TMP/h1.out"
check "... and are in flight, waiting for their bodies" wait_in_flight "$N"
check "a valid review is answered 200 at once while they hold" review_now
check "... and ten in a row" client "$CA" --body "$SAMPLE_GPU" --count 10 --expect-body '"patchType":"JSONPatch"'
equals "$(hcurl "$CA" /readyz -o /dev/null -w '%{http_code}')" 200 "/readyz 200 (and it is true)"
release "$TMP/h1.out"
stop_server "the headers-only server"

# ---- 2. partial bodies: a timeout of their own, and evicted for new clients ----
# Headers and one body byte of a 1,000-byte body, then nothing.
{ head_of 1000; printf '{'; } >"$TMP/partial"
start_server "$TMP/s2.log" $CERT --threads 2 --timeout 60 --header-timeout 60 --body-timeout 2 ||
	start_server "$TMP/s2.log" $CERT --threads 2 --timeout 60 --header-timeout 60 ||
	{ bad "server did not start"; finish; }
t0=$(ms)
"$HOLD_BIN" --port "$PORT" --tls --count 1 --send "$TMP/partial" --until-closed --seconds 45 >"$TMP/bt.out" 2>&1
t1=$(ms)
echo "    a body stalled after one byte: $(tail -n 1 "$TMP/bt.out") after $((t1 - t0)) ms (--body-timeout 2, --timeout 60)"
check "a body stalled after one byte is cut by --body-timeout (2 s), well before --timeout (60 s)" \
	sh -c "grep -q 'closed_by_server=1' $TMP/bt.out && [ $((t1 - t0)) -lt 30000 ]"
check "a review in time is served" review_now
stop_server "the body-timeout server"

# At the connection limit (8), eight connections each in the middle of a body: a new
# client gets the slot of the oldest (all were at their first byte for over a second).
start_server "$TMP/s3.log" $CERT --threads 2 --timeout 60 --header-timeout 60 $BT60 --max-connections 8 \
	--metrics-addr 127.0.0.1:0 || { bad "server did not start"; finish; }
check "8 connections stall in their bodies (--max-connections 8)" hold 8 "$TMP/partial" "$TMP/h3.out"
check "... all in flight" wait_in_flight 8
sleep 1.5  # in their bodies for over a second: the floor before one gives its slot away
check "a new client is served while 8 partial bodies hold every slot" review_now
check "... and the next one" review_now
lacks "$TMP/h3.out" "opened=0" "the holder ran"
release "$TMP/h3.out"
# The limit held: the slot was one of the eight, given up by the server's close.
check "... each in the slot of a partial body the server closed" grep -q 'closed_by_server=[1-9]' "$TMP/h3.out"
stop_server "the slot server"

# The memory budget held by partial bodies (1 MiB - 1 byte of 1 MiB each): pre-issue, six
# reserved all of it but 100 bytes and a valid review got 503 until --timeout.
MB=1048576
B=$((6 * (MB + 1) + 100))
{ head_of "$MB"; head -c $((MB - 1)) /dev/zero | tr '\0' ' '; } >"$TMP/mib"
start_server "$TMP/s4.log" $CERT --threads 2 --timeout 60 --header-timeout 60 $BT60 --max-body "$MB" \
	--memory-budget "$B" --metrics-addr 127.0.0.1:0 || { bad "server did not start"; finish; }
check "warm-up" review_now
check "six connections stall 1 byte short of 1 MiB bodies (--memory-budget $B)" hold 6 "$TMP/mib" "$TMP/h4.out"
check "... and the server has read what they sent" all_read
sleep 1.5  # stalled for over a second: the floor before one gives way for a review
check "a valid review is answered 200 (within three tries a second apart)" review_soon
check "... and again" review_soon
release "$TMP/h4.out"
check "... in room a stalled partial body the server closed gave up" grep -q 'closed_by_server=[1-9]' "$TMP/h4.out"
stop_server "the budget server"

# ---- 3. memory per connection ----
# Ten held 3 MiB bodies (1 byte short), then 1,000 TLS connections from four addresses
# (250 each, under the per-address 256): pre-issue, RSS went from ~10 MB to ~80 MB.
{ head_of 3145728; head -c 3145727 /dev/zero | tr '\0' ' '; } >"$TMP/big"
start_server "$TMP/s5.log" $CERT --threads 2 --timeout 60 --header-timeout 60 $BT60 ||
	{ bad "server did not start"; finish; }
client "$CA" --body "$SAMPLE_GPU" --count 50 >/dev/null 2>&1
RSS0=$(rss_kb)
check "ten connections hold 3 MiB bodies, 1 byte short" hold 10 "$TMP/big" "$TMP/h5.out"
HOLD10=$HOLDER
"$HOLD_BIN" --port "$PORT" --tls --count 1000 --from 127.0.0.2,127.0.0.3,127.0.0.4,127.0.0.5 \
	--ready-file "$TMP/k.ready" --until "$TMP/release" --seconds $((240 * SLOW)) >"$TMP/k.out" 2>&1 &
HOLDER=$!
PIDS="$PIDS $HOLDER"
eventually $((120 * SLOW)) test -s "$TMP/k.ready"
equals "$(cat "$TMP/k.ready" 2>/dev/null)" 1000 "1,000 TLS connections opened"
PEAK=$(peak_kb)
echo "    RSS ${RSS0} kB before, peak ${PEAK} kB with them (the chart's limit: $CHART_LIMIT_KB kB)"
if [ "$MEASURE_RSS" = 1 ]; then
	check "peak RSS under $((ROOM_KB / 1024)) MiB (the chart's limit is $((CHART_LIMIT_KB / 1024)) Mi)" \
		sh -c "[ $PEAK -le $ROOM_KB ]"
fi
check "a valid review is answered 200 meanwhile (within three tries a second apart)" review_soon
release "$TMP/k.out"
HOLDER=$HOLD10
release "$TMP/h5.out"
check "served after it all" review_now
stop_server "the connection-memory server"

finish
