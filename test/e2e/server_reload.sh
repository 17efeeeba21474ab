#!/bin/sh
# Hot reload: the certificate rotates (kubelet-style symlink swap of a mounted
# Secret) under continuous new-connection requests with zero failures; a bad new
# pair is refused and the old one keeps serving; the policy file reloads, a bad
# one is refused; SIGHUP reloads both; /metrics counts all of it.
. test/e2e/server.lib

certs "$TMP/a"
certs "$TMP/b"
certs "$TMP/c"
cat "$TMP/a/ca.crt" "$TMP/b/ca.crt" "$TMP/c/ca.crt" >"$TMP/cas.crt"
CA=$TMP/cas.crt

# A mounted Secret as kubelet lays it out: tls.crt -> ..data/tls.crt, ..data -> ..v1.
S=$TMP/secret
mkdir -p "$S/..v1"
cp "$TMP/a/tls.crt" "$TMP/a/tls.key" "$S/..v1/"
ln -s ..v1 "$S/..data"
ln -s ..data/tls.crt "$S/tls.crt"
ln -s ..data/tls.key "$S/tls.key"
swap() { # swap VERSION CERT KEY: the Secret now holds CERT and KEY, switched atomically
	mkdir "$S/..$1"
	cp "$2" "$S/..$1/tls.crt"
	cp "$3" "$S/..$1/tls.key"
	ln -s "..$1" "$S/..data_tmp"
	mv -T "$S/..data_tmp" "$S/..data"
}
fingerprint() { # fingerprint: SHA-256 of the certificate the server presents now
	echo | openssl s_client -connect "127.0.0.1:$PORT" -servername "$HOST" 2>/dev/null |
		openssl x509 -noout -fingerprint -sha256
}
want_fp() { openssl x509 -in "$1" -noout -fingerprint -sha256; }

"$BIN" print-default-config >"$TMP/policy.yaml"
LOG=$TMP/server.log
start_server "$LOG" --tls-cert "$S/tls.crt" --tls-key "$S/tls.key" --config "$TMP/policy.yaml" \
	--service-name "$SVC" --threads 2 || { bad "server did not start"; finish; }
ok
metric() { # metric NAME: its value on /metrics
	hcurl "$CA" /metrics | awk -v n="$1" '$1 == n { print $2 }'
}
# A refused load is retried (1 s after, then doubling) until the files change, and every try is
# logged and counted: how many tries a busy machine fits in before the test moves on is not the
# test's to assume. What is asserted is that each one was counted: the counter equals the log's
# refusals, read when both have settled (the counter moves first, the log line follows it).
failures_settled() { # failures_settled METRIC LOG-TEXT: prints "COUNTED LOGGED" once they agree
	j=0
	while :; do
		m=$(metric "$1")
		l=$(grep -cF -- "$2" "$LOG")
		{ [ "$m" = "$l" ] || [ $j -ge $((100 * SLOW)) ]; } && break
		sleep 0.1
		j=$((j + 1))
	done
	echo "$m $l"
}
# counted_failures METRIC LOG-TEXT WHAT: at least one refusal, and each one counted
counted_failures() {
	set -- "$1" "$2" "$3" $(failures_settled "$1" "$2")
	if [ "$5" -ge 1 ] 2>/dev/null && [ "$4" = "$5" ]; then ok
	else bad "$3: $4 counted, $5 logged (want the same, at least 1)"; fi
}

# ---- certificate rotation under load ----
"$CLIENT_BIN" --port "$PORT" --cafile "$CA" --servername "$HOST" --body "$SAMPLE_GPU" --new-conn \
	--count 100000 --until "$TMP/stop" --certs-file "$TMP/load.certs" --expect-body '"patchType":"JSONPatch"' \
	>"$TMP/load.out" 2>&1 &
LOAD=$!
PIDS="$PIDS $LOAD"
"$CLIENT_BIN" --port "$PORT" --cafile "$CA" --servername "$HOST" --body "$SAMPLE_GPU" \
	--count 100000 --until "$TMP/stop" >"$TMP/keepalive.out" 2>&1 &
KEEP=$!
PIDS="$PIDS $KEEP"
equals "$(fingerprint)" "$(want_fp "$TMP/a/tls.crt")" "serving the first certificate"
# load_saw N: waits (bounded) until the new-connection load has shaken hands with N
# certificates. "The load saw every certificate" needs a handshake of the load in each
# one's time in service: one in the time it takes the test to check the fingerprint and
# move on is what a starved load process may not get.
load_has_seen() { [ "$(cat "$TMP/load.certs" 2>/dev/null)" = "$1" ]; }
load_saw() { eventually $((60 * SLOW)) load_has_seen "$1"; }
load_saw 1

swap v2 "$TMP/b/tls.crt" "$TMP/b/tls.key"
check "rotation noticed without a restart" wait_for "$LOG" '"msg":"certificate reloaded"' $((60 * SLOW))
equals "$(fingerprint)" "$(want_fp "$TMP/b/tls.crt")" "new handshakes get the new certificate"

swap v3 "$TMP/c/tls.crt" "$TMP/b/tls.key"
check "a mismatched new pair is refused" wait_for "$LOG" '"msg":"certificate reload failed' $((60 * SLOW))
has "$LOG" "does not match" "the refusal says why"
equals "$(fingerprint)" "$(want_fp "$TMP/b/tls.crt")" "the old certificate stays in service"
equals "$(hcurl "$CA" /readyz -o /dev/null -w '%{http_code}')" 200 "/readyz stays 200 after the refused rotation"
# The promise of cmd/gpu-admission/README.md (Hot reload), and what made an exact count flaky: a refused load is tried again.
retried() { [ "$(grep -cF -- '"msg":"certificate reload failed' "$LOG")" -ge 2 ]; }
eventually $((15 * SLOW)) retried
check "the refused pair is tried again (1 s later, then doubling)" retried
counted_failures gpu_admission_cert_reload_failures_total '"msg":"certificate reload failed' \
	"the refused rotation is counted, each try"

load_saw 2
swap v4 "$TMP/c/tls.crt" "$TMP/c/tls.key"
metric_is() { [ "$(metric "$1")" = "$2" ]; }
eventually $((60 * SLOW)) metric_is gpu_admission_cert_reloads_total 2
equals "$(fingerprint)" "$(want_fp "$TMP/c/tls.crt")" "a good pair after a bad one is taken"

load_saw 3
touch "$TMP/stop"
wait_exit "$LOAD" 30
equals "$RC" 0 "new-connection load across three certificates: no failed request"
check "the load saw every certificate" grep -q 'failed=0 .*certs=3$' "$TMP/load.out"
check "the load really ran" sh -c "awk -F'[ =]' '{ if (\$2 < 20) exit 1 }' $TMP/load.out"
wait_exit "$KEEP" 30
equals "$RC" 0 "keep-alive load across rotations: no failed request"
cat "$TMP/load.out" "$TMP/keepalive.out" | indent
equals "$(metric gpu_admission_cert_reloads_total)" 2 "cert reloads counted"
# The good pair ended the retries: the refusals counted are those logged, no more come.
counted_failures gpu_admission_cert_reload_failures_total '"msg":"certificate reload failed' \
	"cert reload failures counted"
want=$(date -u -d "$(openssl x509 -enddate -noout -in "$TMP/c/tls.crt" | cut -d= -f2)" +%s)
equals "$(metric gpu_admission_cert_expiry_timestamp_seconds)" "$want" "expiry metric follows the new certificate"

# ---- policy reload ----
post() { hcurl "$CA" /mutate -H 'Content-Type: application/json' --data-binary "@$SAMPLE_GPU" -o "$TMP/out"; }
printf 'mode: strict\n' >"$TMP/policy.new" && mv "$TMP/policy.new" "$TMP/policy.yaml"
check "an invalid policy is refused" wait_for "$LOG" '"msg":"policy reload failed' $((60 * SLOW))
post
check "the old policy stays in service (still patching)" jq -e '.response.patchType == "JSONPatch"' "$TMP/out"
counted_failures gpu_admission_config_reload_failures_total '"msg":"policy reload failed' \
	"config reload failures counted"

printf 'mode: dryrun\n' >"$TMP/policy.new" && mv "$TMP/policy.new" "$TMP/policy.yaml"
check "a valid new policy is loaded" wait_for "$LOG" '"msg":"policy reloaded"' $((60 * SLOW))
post
check "the new policy answers (dryrun: warning, no patch)" \
	jq -e '(.response | has("patch") | not) and (.response.warnings[0] | test("dryrun"))' "$TMP/out"
equals "$(metric gpu_admission_config_reloads_total)" 1 "config reload counted"

# ---- SIGHUP ----
kill -HUP "$SERVER_PID"
check "SIGHUP reloads" wait_for "$LOG" '"msg":"SIGHUP received' $((60 * SLOW))
# The policy is reloaded first, then the certificate: the second count is waited for too.
both_reloaded() { metric_is gpu_admission_config_reloads_total 2 && metric_is gpu_admission_cert_reloads_total 3; }
eventually $((30 * SLOW)) both_reloaded
equals "$(metric gpu_admission_config_reloads_total)" 2 "SIGHUP reloaded the policy"
equals "$(metric gpu_admission_cert_reloads_total)" 3 "SIGHUP reloaded the certificate"
check "still alive" kill -0 "$SERVER_PID"
stop_server "after the reloads"
finish
