#!/bin/sh
# Certificates and TLS: `certs` output, protocol and cipher policy (TLS 1.1 and
# CBC refused, 1.2 and 1.3 served), ECDSA and RSA keys, start-up validation of
# the pair (mismatch, expiry, no SAN, encrypted key, SAN warning), --self-signed,
# --log-level, and flag errors.
. test/e2e/server.lib

# ---- certs ----
check "certs writes the bundle" "$BIN" certs --service "$SVC" --namespace "$NS" --out "$TMP/c" --days 30
for f in ca.crt ca.key tls.crt tls.key caBundle; do
	check "certs wrote $f" test -s "$TMP/c/$f"
done
equals "$(stat -c %a "$TMP/c/tls.key")" 600 "tls.key is private"
equals "$(stat -c %a "$TMP/c/ca.key")" 600 "ca.key is private"
check "tls.crt chains to ca.crt" openssl verify -CAfile "$TMP/c/ca.crt" "$TMP/c/tls.crt"
openssl x509 -in "$TMP/c/tls.crt" -noout -text >"$TMP/text"
has "$TMP/text" "DNS:$SVC, DNS:$SVC.$NS, DNS:$SVC.$NS.svc, DNS:$SVC.$NS.svc.cluster.local" "serving SANs"
has "$TMP/text" "NIST CURVE: P-256" "ECDSA P-256 key"
has "$TMP/text" "TLS Web Server Authentication" "serverAuth usage"
check "ca.crt is a CA" sh -c "openssl x509 -in $TMP/c/ca.crt -noout -text | grep -q 'CA:TRUE'"
check "--days 30: valid for 29 more days" openssl x509 -in "$TMP/c/tls.crt" -noout -checkend $((29 * 86400))
check "--days 30: not for 31" sh -c "! openssl x509 -in $TMP/c/tls.crt -noout -checkend $((31 * 86400))"
equals "$(wc -l <"$TMP/c/caBundle")" 1 "caBundle is one line"
check "caBundle is base64 of ca.crt" sh -c "base64 -d $TMP/c/caBundle | cmp - $TMP/c/ca.crt"
check "certs without --out: usage error" sh -c "! $BIN certs --service a --namespace b 2>/dev/null"
check "certs --days 0: usage error" sh -c "! $BIN certs --service a --namespace b --out $TMP/x --days 0 2>/dev/null"
check "certs with a service that is not a DNS label: error" sh -c "! $BIN certs --service Bad_Name --namespace b --out $TMP/x 2>/dev/null"
# A temporary-file name planted as a symlink must not redirect the private key.
mkdir -p "$TMP/plant" && printf 'victim\n' >"$TMP/victim" && chmod 644 "$TMP/victim"
for f in ca.key tls.key ca.crt tls.crt caBundle; do ln -s "$TMP/victim" "$TMP/plant/$f.tmp"; done
check "certs beside planted .tmp symlinks" "$BIN" certs --service "$SVC" --namespace "$NS" --out "$TMP/plant"
equals "$(cat "$TMP/victim")" victim "a planted symlink's target is left alone"
equals "$(stat -c %a "$TMP/plant/tls.key")" 600 "tls.key is private beside planted symlinks"
check "no temporary files left" sh -c "! ls $TMP/plant | grep -v -e '\.tmp\$' | grep -q tmp"
CA=$TMP/c/ca.crt

# ---- protocol policy ----
start_server "$TMP/log" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --service-name "$SVC" \
	--log-level debug --metrics-addr 127.0.0.1:0 || { bad "server did not start"; finish; }
check "TLS 1.1 refused" sh -c "! $CLIENT_BIN --port $PORT --cafile $CA --servername $HOST --tls-max 1.1 --body $SAMPLE_GPU"
check "TLS 1.2 served" client "$CA" --tls-min 1.2 --tls-max 1.2 --body "$SAMPLE_GPU" --count 3
check "TLS 1.3 served" client "$CA" --tls-min 1.3 --body "$SAMPLE_GPU" --count 3
check "TLS 1.3 preferred" sh -c "$CLIENT_BIN --port $PORT --cafile $CA --servername $HOST --verbose --body $SAMPLE_GPU 2>&1 | grep -q 'connected with TLSv1.3'"
sc() { echo | openssl s_client -connect "127.0.0.1:$PORT" -servername "$HOST" -CAfile "$CA" "$@" 2>&1; }
check "TLS 1.2 CBC cipher refused" sh -c "$(command -v openssl) s_client -connect 127.0.0.1:$PORT -tls1_2 -cipher ECDHE-ECDSA-AES128-SHA:@SECLEVEL=0 </dev/null 2>&1 | grep -q 'Cipher is (NONE)'"
check "TLS 1.2 ECDHE-ECDSA-AES128-GCM served" sh -c "$(command -v openssl) s_client -connect 127.0.0.1:$PORT -tls1_2 -cipher ECDHE-ECDSA-AES128-GCM-SHA256 </dev/null 2>&1 | grep -q 'Cipher is ECDHE-ECDSA-AES128-GCM-SHA256'"
check "debug level logs libmicrohttpd detail" grep -q '"level":"debug"' "$TMP/log"
check "at debug level too, every log line is one JSON object" sh -c "jq -c . <$TMP/log >/dev/null"
stop_server "the protocol-policy server"

# ---- RSA ----
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/rsa.key" -out "$TMP/rsa.crt" -days 2 \
	-subj "/CN=$HOST" -addext "subjectAltName=DNS:$HOST" 2>/dev/null
start_server "$TMP/rsa.log" --tls-cert "$TMP/rsa.crt" --tls-key "$TMP/rsa.key" || bad "server with an RSA key did not start"
has "$TMP/rsa.log" '"key_type":"RSA 2048"' "RSA key recognised"
CODE=$(hcurl "$TMP/rsa.crt" /mutate -H 'Content-Type: application/json' --data-binary "@$SAMPLE_GPU" -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 200 "RSA certificate: curl --cacert answered"
check "RSA certificate over TLS 1.2 (ECDHE-RSA)" client "$TMP/rsa.crt" --tls-max 1.2 --body "$SAMPLE_GPU"
check "TLS 1.2 static-RSA key exchange (no forward secrecy) refused" sh -c \
	"$(command -v openssl) s_client -connect 127.0.0.1:$PORT -tls1_2 -cipher AES128-GCM-SHA256 </dev/null 2>&1 | grep -q 'Cipher is (NONE)'"
check "TLS 1.2 ECDHE-RSA-AES128-GCM served (control for the refusal above)" sh -c \
	"$(command -v openssl) s_client -connect 127.0.0.1:$PORT -tls1_2 -cipher ECDHE-RSA-AES128-GCM-SHA256 </dev/null 2>&1 | grep -q 'Cipher is ECDHE-RSA-AES128-GCM-SHA256'"
stop_server "the RSA server"

# ---- a chain: leaf + intermediate in tls.crt, clients trust only the root ----
# (Its own root: the `certs` CA has pathlen:0 and rightly refuses to vouch for an intermediate.)
K="-newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes"
openssl req -x509 $K -keyout "$TMP/root.key" -out "$TMP/root.crt" -subj "/CN=root" -days 2 \
	-addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign" 2>/dev/null
printf 'basicConstraints=critical,CA:TRUE\nkeyUsage=critical,keyCertSign\n' >"$TMP/int.ext"
printf 'basicConstraints=CA:FALSE\nsubjectAltName=DNS:%s\nextendedKeyUsage=serverAuth\n' "$HOST" >"$TMP/leaf.ext"
openssl req $K -keyout "$TMP/int.key" -out "$TMP/int.csr" -subj "/CN=intermediate" 2>/dev/null
openssl x509 -req -in "$TMP/int.csr" -CA "$TMP/root.crt" -CAkey "$TMP/root.key" -CAcreateserial -days 2 \
	-extfile "$TMP/int.ext" -out "$TMP/int.crt" 2>/dev/null
openssl req $K -keyout "$TMP/leaf.key" -out "$TMP/leaf.csr" -subj "/CN=$HOST" 2>/dev/null
openssl x509 -req -in "$TMP/leaf.csr" -CA "$TMP/int.crt" -CAkey "$TMP/int.key" -CAcreateserial -days 2 \
	-extfile "$TMP/leaf.ext" -out "$TMP/leaf.crt" 2>/dev/null
cat "$TMP/leaf.crt" "$TMP/int.crt" >"$TMP/chain.crt"
if start_server "$TMP/chain.log" --tls-cert "$TMP/chain.crt" --tls-key "$TMP/leaf.key"; then
	check "a chained certificate verifies against the root alone" client "$TMP/root.crt" --body "$SAMPLE_GPU" --count 2
	stop_server "the chain server"
else
	bad "server with a chained certificate did not start"
fi

# ---- start-up validation ----
"$BIN" certs --service "$SVC" --namespace "$NS" --out "$TMP/other" >/dev/null
refuse() { # refuse DESCRIPTION TEXT serve-args...: serve exits 2 and logs TEXT
	what=$1; text=$2; shift 2
	"$BIN" serve --addr 127.0.0.1:0 "$@" </dev/null 2>"$TMP/refuse.log" &
	p=$!; PIDS="$PIDS $p"
	if wait_exit "$p" $((60 * SLOW)) && [ "$RC" = 2 ] && grep -qF -- "$text" "$TMP/refuse.log"; then ok
	else bad "$what (exit $RC)"; cat "$TMP/refuse.log"; kill -9 "$p" 2>/dev/null; fi
}
refuse "key of another certificate" "does not match" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/other/tls.key"
refuse "missing certificate file" "No such file" --tls-cert "$TMP/nope.crt" --tls-key "$TMP/c/tls.key"
refuse "neither files nor --self-signed" "--self-signed" --config /dev/null
refuse "a port above 65535 (it would wrap)" "port must be a number from 0 to 65535" --self-signed --addr 127.0.0.1:70000
refuse "a port that is not a number" "port must be a number from 0 to 65535" --self-signed --addr 127.0.0.1:https
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$TMP/nosan.key" \
	-out "$TMP/nosan.crt" -days 2 -subj "/CN=$HOST" 2>/dev/null
refuse "certificate without SAN" "subjectAltName" --tls-cert "$TMP/nosan.crt" --tls-key "$TMP/nosan.key"
openssl pkey -in "$TMP/c/tls.key" -aes256 -passout pass:secret -out "$TMP/enc.key" 2>/dev/null
refuse "encrypted key (never prompts)" "private key" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/enc.key"
mkdir "$TMP/exp" && (
	cd "$TMP/exp" &&
	openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout k.pem -out r.csr -subj "/CN=$HOST" \
		-addext "subjectAltName=DNS:$HOST" 2>/dev/null &&
	printf '[ca]\ndefault_ca=d\n[d]\ndatabase=index.txt\nunique_subject=no\nnew_certs_dir=.\nserial=serial\ndefault_md=sha256\npolicy=p\ncopy_extensions=copy\n[p]\ncommonName=supplied\n' >ca.conf &&
	touch index.txt && echo 01 >serial &&
	openssl ca -batch -config ca.conf -selfsign -keyfile k.pem -in r.csr -startdate 20200101000000Z \
		-enddate 20200102000000Z -out exp.pem >/dev/null 2>&1
)
refuse "expired certificate" "expired" --tls-cert "$TMP/exp/exp.pem" --tls-key "$TMP/exp/k.pem"
# A certificate that expires while serving: /readyz turns 503. It lives LIFE seconds (4,
# 20 under valgrind, where the server takes seconds to start). A try proves the 200 only
# when /readyz answered before the end: a loaded machine can take longer than that to
# make the certificate, start the server and ask it (it then says 503, or refuses the
# expired pair at start), so such a try is made again with twice the life, up to 64 s.
LIFE=$((SLOW > 1 ? 20 : 4))
# readyz_is CODE: /readyz answers CODE (its body kept in $TMP/ready).
readyz_is() { [ "$(curl -sS -k --max-time 10 "https://127.0.0.1:$PORT/readyz" -o "$TMP/ready" -w '%{http_code}')" = "$1" ]; }
while :; do
	end=$(($(date +%s) + LIFE))
	(cd "$TMP/exp" && openssl ca -batch -config ca.conf -selfsign -keyfile k.pem -in r.csr \
		-startdate "$(date -u -d '-1 hour' +%Y%m%d%H%M%SZ)" -enddate "$(date -u -d "@$end" +%Y%m%d%H%M%SZ)" \
		-out soon.pem >/dev/null 2>&1)
	last=0
	[ "$LIFE" -ge 64 ] && last=1
	if start_server "$TMP/soon.log" --tls-cert "$TMP/exp/soon.pem" --tls-key "$TMP/exp/k.pem"; then
		CODE=$(curl -sS -k --max-time 10 "https://127.0.0.1:$PORT/readyz" -o /dev/null -w '%{http_code}')
		asked=$(date +%s)
		if [ "$CODE" = 200 ] || [ "$asked" -lt "$end" ] || [ "$last" = 1 ]; then
			equals "$CODE" 200 "/readyz: 200 while the certificate is valid"
			eventually $((LIFE + 60)) readyz_is 503
			has "$TMP/ready" "certificate expired" "/readyz: 503 once the certificate has expired"
			stop_server "the short-lived certificate server"
			break
		fi
		echo "    short-lived certificate: /readyz asked $((asked - end)) s after its end; again with $((LIFE * 2)) s"
		kill -TERM "$SERVER_PID"
		wait_exit "$SERVER_PID" $((20 * SLOW)) || kill -9 "$SERVER_PID"
	elif [ "$(date +%s)" -lt "$end" ] || [ "$last" = 1 ]; then
		bad "server with a short-lived certificate did not start"
		break
	else
		echo "    short-lived certificate: expired before the server started; again with $((LIFE * 2)) s"
	fi
	LIFE=$((LIFE * 2))
done
# An invalid policy file is no longer a reason to exit (a crash loop at the next restart):
# serve runs not ready and retries; server_resilience.sh section 6 tests it.
refuse "--threads 0" "--threads" --self-signed --threads 0
refuse "unknown --log-level" "--log-level" --self-signed --log-level loud
refuse "bad --addr" "address" --self-signed --addr nonsense
check "serve --help documents every flag" sh -c "$BIN serve --help | grep -q -- '--max-connections-per-ip' && $BIN serve --help | grep -q -- '--shutdown-grace'"

# ---- SAN warning, --self-signed, --log-level ----
# At --log-level warn the "listening" line is not written: the test picks the port.
PORT=$("$CLIENT_BIN" --free-port)
$WRAP "$BIN" serve --addr "127.0.0.1:$PORT" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" \
	--service-name other-svc --log-level warn 2>"$TMP/warn.log" &
SERVER_PID=$!; PIDS="$PIDS $SERVER_PID"; SERVER_LOG=$TMP/warn.log
eventually $((60 * SLOW)) client "$CA" --body "$SAMPLE_GPU" --count 5
check "--log-level warn server answers" client "$CA" --body "$SAMPLE_GPU" --count 5
has "$TMP/warn.log" 'do not cover service \"other-svc\"' "SANs missing --service-name: warned"
equals "$(hcurl "$CA" /readyz -o "$TMP/ready.out" -w '%{http_code}')" 503 \
	"SANs missing --service-name at start: not ready (kube-apiserver would refuse every call)"
has "$TMP/ready.out" "does not name the Service" "... and /readyz says why"
lacks "$TMP/warn.log" '"msg":"admission"' "--log-level warn: no decision lines"
refuse "port already in use" "cannot listen" --self-signed --addr "127.0.0.1:$PORT"
stop_server "the --log-level warn server"

# ---- a reloaded pair whose SANs miss --service-name (issue 24) ----
# kube-apiserver refuses a certificate that does not name the Service it calls: such a
# pair is not taken into service on reload (the old one serves on, as for an expired
# pair), the refusal is logged and counted, and readiness stays true for the good pair.
mkdir -p "$TMP/w"
cp "$TMP/c/tls.crt" "$TMP/c/tls.key" "$TMP/w/"
"$BIN" certs --service other-svc --namespace "$NS" --out "$TMP/other" >/dev/null
start_server "$TMP/rl.log" --tls-cert "$TMP/w/tls.crt" --tls-key "$TMP/w/tls.key" --service-name "$SVC" \
	--metrics-addr 127.0.0.1:0 || { bad "server did not start"; finish; }
fp() { echo | openssl s_client -connect "127.0.0.1:$PORT" -servername "$HOST" 2>/dev/null |
	openssl x509 -noout -fingerprint -sha256; }
FP0=$(fp)
equals "$FP0" "$(openssl x509 -in "$TMP/c/tls.crt" -noout -fingerprint -sha256)" "serving the pair that names the Service"
cp "$TMP/other/tls.key" "$TMP/w/tls.key.new" && cp "$TMP/other/tls.crt" "$TMP/w/tls.crt.new"
mv "$TMP/w/tls.key.new" "$TMP/w/tls.key" && mv "$TMP/w/tls.crt.new" "$TMP/w/tls.crt"
check "a new pair for another service is refused" wait_for "$TMP/rl.log" '"msg":"certificate reload failed' $((15 * SLOW))
has "$TMP/rl.log" 'do not cover service \"'"$SVC"'\"' "... saying its SANs miss the Service"
equals "$(fp)" "$FP0" "... and the old pair stays in service"
equals "$(hcurl "$CA" /readyz -o /dev/null -w '%{http_code}')" 200 "... and /readyz stays 200 (the old pair is good)"
check "... and reviews are served with it" client "$CA" --body "$SAMPLE_GPU" --count 3
check "... and the refusal is counted" sh -c \
	"curl -sS http://127.0.0.1:$MPORT/metrics | grep -q '^gpu_admission_cert_reload_failures_total [1-9]'"
stop_server "the reload-with-another-service server"

start_server "$TMP/self.log" --self-signed || bad "--self-signed did not start"
CODE=$(curl -sS -k --max-time 10 "https://127.0.0.1:$PORT/mutate" -H 'Content-Type: application/json' \
	--data-binary "@$SAMPLE_GPU" -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 200 "--self-signed answers"
check "--self-signed answer is a mutation" jq -e '.response.patchType == "JSONPatch"' "$TMP/out"
check "--self-signed certificate names 127.0.0.1" sh -c \
	"echo | openssl s_client -connect 127.0.0.1:$PORT 2>/dev/null | openssl x509 -noout -ext subjectAltName | grep -q 127.0.0.1"
stop_server "the --self-signed server"

# ---- --max-body, IPv6 ----
start_server "$TMP/small.log" --self-signed --max-body 512 || bad "--max-body 512 did not start"
CODE=$(curl -sS -k --max-time 10 "https://127.0.0.1:$PORT/mutate" -H 'Content-Type: application/json' \
	--data-binary "@$SAMPLE_GPU" -o /dev/null -w '%{http_code}')
equals "$CODE" 413 "--max-body 512: a larger review gets 413"
stop_server "the --max-body server"
if [ -e /proc/net/if_inet6 ]; then
	start_server "$TMP/v6.log" --self-signed --addr '[::1]:0' || bad "IPv6 listener did not start"
	CODE=$(curl -sS -gk --max-time 10 "https://[::1]:$PORT/healthz" -o /dev/null -w '%{http_code}')
	equals "$CODE" 200 "--addr [::1]:PORT serves over IPv6"
	stop_server "the IPv6 server"
	# "[::]" is every address, IPv4 included (dual stack), as Go servers and kubelet probes expect.
	start_server "$TMP/any6.log" --self-signed --addr '[::]:0' || bad "[::] listener did not start"
	CODE=$(curl -sS -gk --max-time 10 "https://[::1]:$PORT/healthz" -o /dev/null -w '%{http_code}')
	equals "$CODE" 200 "--addr [::]:PORT serves IPv6"
	CODE=$(curl -sS -k --max-time 10 "https://127.0.0.1:$PORT/healthz" -o /dev/null -w '%{http_code}')
	equals "$CODE" 200 "--addr [::]:PORT serves IPv4 too"
	stop_server "the [::] server"
fi

# ---- make run: the printed curl command works against the server it starts ----
RPORT=$("$CLIENT_BIN" --free-port)
ADDR=127.0.0.1:$RPORT sh test/run-local "$BIN" >"$TMP/run.out" 2>"$TMP/run.log" &
RUN=$!
PIDS="$PIDS $RUN"
check "make run: listening" wait_for "$TMP/run.log" '"msg":"listening"' 60
check "make run: then its banner" wait_for "$TMP/run.out" 'Ctrl-C to stop' 60
cmd=$(grep -m1 '^  curl ' "$TMP/run.out")
check "make run prints a curl command for the sample" test -n "$cmd"
sh -c "$cmd" >"$TMP/run.answer" 2>&1
check "the printed command gets the sample mutated" jq -e \
	'.response.allowed == true and .response.patchType == "JSONPatch" and .response.uid == "5a1e0001-8d3c-4a52-9a0e-6c1f3e2b7a10"' \
	"$TMP/run.answer"
kill -INT "$RUN"; wait_exit "$RUN" 60
equals "$RC" 0 "make run: Ctrl-C stops it cleanly"
finish
