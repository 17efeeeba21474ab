#!/bin/sh
# TLS policy as an outside scanner sees it: runs testssl.sh (Debian testssl.sh
# 3.0.8, installed by `.ci/deps test`) against the real `serve` on loopback and
# turns its JSON report into assertions, so the issue's requirements — "no
# SSLv2/3, TLS 1.0 or 1.1; no weak or non-AEAD ciphers; forward secrecy; no known
# vulnerabilities flagged" — are checked by a tool that does not share our TLS
# stack (it speaks raw sockets and OpenSSL; the server is GnuTLS).
#
# Asserted, each on its own:
#   - the scan really ran: exit 0, a JSON report for this host and port, a
#     numeric scanTime, every vulnerability test present, no testing problem
#     (WARN/DEBUG/FATAL); TLS 1.2 and 1.3 offered and AEAD ciphers offered
#     (controls, so nothing below passes vacuously);
#   - SSLv2, SSLv3, TLS 1.0, TLS 1.1 not offered;
#   - cipher categories NULL, aNULL, EXPORT, LOW, 3DES/IDEA and obsolete CBC
#     (cipherlist_AVERAGE in 3.0.8) not offered;
#   - every cipher the server accepts (-E, per protocol) is AEAD (GCM, CCM,
#     ChaCha20-Poly1305) and uses ephemeral key exchange, and none is below 1.2;
#   - forward secrecy offered;
#   - no vulnerability finding at MEDIUM, HIGH or CRITICAL (offending ids listed);
#   - nothing else at MEDIUM+ (protocols, ciphers, FS, certificate), except
#     cert_revocation: the serving certificate comes from the cluster-internal CA
#     that the API server pins through caBundle; there is no CRL or OCSP for it.
# testssl connects to 127.0.0.1 but sends the service name as SNI and trusts the
# `certs` CA (--add-ca), as the API server does, so name and chain are checked
# for real rather than reported as mismatches.
#
# Known false positive: 3.0.8's "Secure Client-Initiated Renegotiation" check
# races (`echo R | openssl s_client`: s_client may quit on end of input before
# the server's close_notify arrives, and the 4-try retry then reads exit 0 as
# "VULNERABLE, DoS threat"). The server refuses renegotiation, which a direct
# probe here asserts (no ServerHello after the renegotiation ClientHello; the
# probe itself is shown to catch an `openssl s_server -client_renegotiation`).
# That testssl finding is excused only when it is exactly that text and the
# direct probe passes.
#
# Offline and bounded: --nodns none with --ip, NXCONNECT=127.0.0.1:0 (testssl's
# own OpenSSL capability probes otherwise resolve "invalid."), no --phone-out,
# and the whole scan under `timeout`. The bounds only catch a hang, never time
# the server: the scan forks some thousand openssl processes, ~2 min on an idle
# 2-core machine and over 5 min with both cores busy (a 300 s bound failed a
# loaded make test), so the scan gets 25 min and each connection or openssl
# call 60 s.
. test/e2e/server.lib

TESTSSL=$(command -v testssl || command -v testssl.sh || true)
if [ -z "$TESTSSL" ]; then
	bad "testssl not found (Debian package testssl.sh): run .ci/deps test"
	finish
fi
command -v jq >/dev/null 2>&1 || { bad "jq not found: run .ci/deps test"; finish; }

certs "$TMP/c"
CA=$TMP/c/ca.crt
start_server "$TMP/log" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --service-name "$SVC" ||
	{ bad "server did not start"; finish; }

# ---- client-initiated renegotiation, probed directly ----
# renego_probe PORT: TLS 1.2 handshake, then "R" (renegotiate) and wait so the
# server's answer arrives; prints the s_client trace.
renego_probe() {
	(echo R; sleep 2) | timeout 10 openssl s_client -msg -tls1_2 -connect "127.0.0.1:$1" -servername "$HOST" 2>&1
}
# renego_refused FILE: the handshake completed, the renegotiation ClientHello
# went out, and the server answered it without a ServerHello (alert or close).
renego_refused() {
	grep -q '^New, TLSv1.2' "$1" || { echo "no TLS 1.2 handshake"; cat "$1"; return 1; }
	sed -n '/^RENEGOTIATING/,$p' "$1" >"$1.after"
	grep -q 'ClientHello' "$1.after" || { echo "no renegotiation ClientHello sent"; cat "$1"; return 1; }
	if grep -q '^<<<.*ServerHello' "$1.after"; then echo "server answered with a ServerHello:"; cat "$1.after"; return 1; fi
	grep -Eq '^<<<.*Alert|^closed' "$1.after" || { echo "no alert or close from the server"; cat "$1.after"; return 1; }
}
renego_probe "$PORT" >"$TMP/renego.txt"
RENEGO_REFUSED=0
if renego_refused "$TMP/renego.txt" >"$TMP/renego.why" 2>&1; then RENEGO_REFUSED=1; ok
else bad "client-initiated renegotiation refused (direct probe)"; indent "$TMP/renego.why" | tail -n 30; fi
# Control: the probe does see a renegotiation a server accepts.
SPORT=$("$CLIENT_BIN" --free-port)
openssl s_server -accept "127.0.0.1:$SPORT" -cert "$TMP/c/tls.crt" -key "$TMP/c/tls.key" \
	-client_renegotiation -www >"$TMP/s_server.log" 2>&1 &
SSRV=$!
PIDS="$PIDS $SSRV"
wait_for "$TMP/s_server.log" ACCEPT 60
renego_probe "$SPORT" >"$TMP/renego_ctl.txt"
check "renegotiation probe control: s_server -client_renegotiation is caught" sh -c \
	"grep -q '^RENEGOTIATING' $TMP/renego_ctl.txt && sed -n '/^RENEGOTIATING/,\$p' $TMP/renego_ctl.txt | grep -q '^<<<.*ServerHello'"
kill "$SSRV" 2>/dev/null; wait "$SSRV" 2>/dev/null

# ---- the scan ----
J=$TMP/testssl.json
start=$(date +%s)
NXCONNECT=127.0.0.1:0 timeout -k 10 1500 "$TESTSSL" --quiet --color 0 --warnings off --nodns none \
	--ip 127.0.0.1 --add-ca "$CA" --connect-timeout 60 --openssl-timeout 60 --jsonfile-pretty "$J" \
	-p -s -f -E -U -S "$HOST:$PORT" >"$TMP/testssl.out" 2>&1
RC=$?
echo "testssl: exit $RC after $(($(date +%s) - start))s"
if [ "$RC" -eq 0 ]; then ok; else bad "testssl exited $RC (124: timed out)"; tail -n 40 "$TMP/testssl.out"; fi
if ! jq -e --arg port "$PORT" --arg host "$HOST" \
	'.scanResult[0].targetHost == $host and .scanResult[0].port == $port and (.scanResult[0] | length) > 5' \
	"$J" >/dev/null 2>&1; then
	bad "testssl wrote no JSON report for $HOST:$PORT"
	tail -n 40 "$TMP/testssl.out"
	finish
fi
ok
check "scan finished (numeric scanTime)" jq -e '.scanTime | type == "number"' "$J"

# All findings, flattened: one object per finding with its section.
jq -c '.scanResult[0] | to_entries[] | select(.value | type == "array") | .key as $s | .value[] | . + {section: $s}' \
	"$J" >"$TMP/findings"
finding() { jq -r --arg id "$1" 'select(.id == $id) | .finding' "$TMP/findings" | head -n 1; }
severity() { jq -r --arg id "$1" 'select(.id == $id) | .severity' "$TMP/findings" | head -n 1; }
# is ID PATTERN DESCRIPTION: the finding for ID matches the shell PATTERN.
is() {
	got=$(finding "$1")
	# shellcheck disable=SC2254
	case $got in $2) ok ;; *) bad "$3: $1 is '${got:-(missing)}', want '$2'" ;; esac
}
# none DESCRIPTION JQ-FILTER: no finding selected by the filter (listed if any).
none() {
	jq -r "select($2) | \"\(.section)/\(.id) [\(.severity)] \(.finding)\"" "$TMP/findings" >"$TMP/none.out"
	if [ -s "$TMP/none.out" ]; then bad "$1:"; indent "$TMP/none.out"; else ok; fi
}

none "testssl reported no testing problem (WARN/DEBUG/FATAL, scanProblem)" \
	'.severity == "WARN" or .severity == "DEBUG" or .severity == "FATAL" or .id == "scanProblem"'

# ---- protocols ----
is SSLv2 "not offered" "SSLv2 not offered"
is SSLv3 "not offered" "SSLv3 not offered"
is TLS1 "not offered" "TLS 1.0 not offered"
is TLS1_1 "not offered" "TLS 1.1 not offered"
is TLS1_2 "offered" "TLS 1.2 offered (control)"
is TLS1_3 "offered*" "TLS 1.3 offered (control)"

# ---- cipher categories ----
is cipherlist_NULL "not offered" "NULL ciphers not offered"
is cipherlist_aNULL "not offered" "anonymous (aNULL) ciphers not offered"
is cipherlist_EXPORT "not offered" "EXPORT ciphers not offered"
is cipherlist_LOW "not offered" "LOW (64-bit, DES, RC2, RC4) ciphers not offered"
is cipherlist_3DES_IDEA "not offered" "3DES and IDEA ciphers not offered"
is cipherlist_AVERAGE "not offered" "obsolete CBC ciphers not offered"
is cipherlist_STRONG "offered" "AEAD ciphers offered (control)"

# ---- every cipher accepted, per protocol (-E): ids cipher-<proto>_x<hex>, the
# finding ends with the IANA name ----
jq -r 'select(.id | test("^cipher-(ssl|tls)")) | "\(.id) \([.finding | splits("\\s+") | select(length > 0)] | last)"' \
	"$TMP/findings" >"$TMP/ciphers"
indent "$TMP/ciphers"
check "TLS 1.2 ciphers listed (control)" grep -q '^cipher-tls1_2_x' "$TMP/ciphers"
check "TLS 1.3 ciphers listed (control)" grep -q '^cipher-tls1_3_x' "$TMP/ciphers"
check "no cipher accepted below TLS 1.2" sh -c "! grep -v '^cipher-tls1_[23]_x' $TMP/ciphers"
check "every accepted cipher is AEAD (GCM, CCM, ChaCha20-Poly1305)" sh -c \
	"! grep -Ev ' TLS_(.*_)?(GCM_SHA[0-9]+|CCM(_8)?(_SHA[0-9]+)?|CHACHA20_POLY1305_SHA256)\$' $TMP/ciphers"
check "every accepted cipher has ephemeral key exchange" sh -c \
	"! grep -Ev '^cipher-tls1_3_x[0-9a-f]+ TLS_|^cipher-tls1_2_x[0-9a-f]+ TLS_(ECDHE|DHE)_' $TMP/ciphers"

# ---- forward secrecy ----
is PFS "offered" "forward secrecy offered"
equals "$(severity PFS)" OK "forward secrecy rated OK"

# ---- certificate, as the API server sees it (SNI = service name, caBundle CA) ----
equals "$(severity cert_trust)" OK "certificate matches the service name ($(finding cert_trust))"
equals "$(severity cert_chain_of_trust)" OK "certificate chains to the certs CA ($(finding cert_chain_of_trust))"

# ---- vulnerabilities ----
missing=""
for id in heartbleed CCS ticketbleed ROBOT secure_renego secure_client_renego CRIME_TLS BREACH POODLE_SSL \
	fallback_SCSV SWEET32 FREAK DROWN LOGJAM BEAST LUCKY13 RC4; do
	[ -n "$(severity "$id")" ] || missing="$missing $id"
done
equals "${missing:-none}" none "every vulnerability test ran (missing ids)"
# The renegotiation race (see the header): excused only when the direct probe passed.
EXCUSE='false'
if [ "$RENEGO_REFUSED" = 1 ] && [ "$(finding secure_client_renego)" = "VULNERABLE, DoS threat" ]; then
	echo "note: testssl's secure_client_renego 'VULNERABLE, DoS threat' is its known race; the direct probe shows refusal"
	EXCUSE='(.id == "secure_client_renego" and .finding == "VULNERABLE, DoS threat")'
fi
none "no vulnerability flagged at MEDIUM, HIGH or CRITICAL" \
	".section == \"vulnerabilities\" and (.severity == \"MEDIUM\" or .severity == \"HIGH\" or .severity == \"CRITICAL\") and ($EXCUSE | not)"
none "nothing else flagged at MEDIUM+ (cert_revocation excepted: cluster-internal CA)" \
	'.section != "vulnerabilities" and (.severity == "MEDIUM" or .severity == "HIGH" or .severity == "CRITICAL") and .id != "cert_revocation"'
jq -r 'select(.severity == "LOW") | "note: testssl LOW: \(.section)/\(.id): \(.finding)"' "$TMP/findings"

# ---- the server took the scan ----
check "server still running after the scan" kill -0 "$SERVER_PID"
CODE=$(hcurl "$CA" /healthz -o /dev/null -w '%{http_code}')
equals "$CODE" 200 "server still answers after the scan"
stop_server "the scanned server"
finish
