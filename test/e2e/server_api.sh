#!/bin/sh
# serve over real TLS on loopback: /mutate and /validate answers (curl --cacert and
# the OpenSSL client), every error status, body limits, /healthz, /readyz, /metrics
# (TLS and plain listeners) and the JSON log lines.
. test/e2e/server.lib

certs "$TMP/c"
CA=$TMP/c/ca.crt
LOG=$TMP/server.log
# The default policy, but team-dry in dryrun (the metrics of a dryrun trail, below).
printf 'namespaceModes: {team-dry: dryrun}\n' >"$TMP/policy.yaml"
start_server "$LOG" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --service-name "$SVC" \
	--metrics-addr 127.0.0.1:0 --threads 2 --config "$TMP/policy.yaml" || { bad "server did not start"; finish; }
ok
J='Content-Type: application/json'

# post PATH FILE [curl args]: body of the answer in $TMP/out, status in $CODE.
post() {
	p=$1; f=$2; shift 2
	CODE=$(hcurl "$CA" "$p" -H "$J" --data-binary "@$f" -o "$TMP/out" -w '%{http_code}' "$@")
}
metric() { # metric 'name{labels}': its value on /metrics, or 0
	v=$(hcurl "$CA" /metrics | grep -F "$1 " | awk '{print $2}')
	echo "${v:-0}"
}

# ---- answers ----
post /mutate "$SAMPLE_GPU"
equals "$CODE" 200 "/mutate GPU pod: HTTP status"
check "/mutate GPU pod: allowed with a JSONPatch, same uid" \
	jq -e '.apiVersion == "admission.k8s.io/v1" and .response.uid == "5a1e0001-8d3c-4a52-9a0e-6c1f3e2b7a10"
	       and .response.allowed == true and .response.patchType == "JSONPatch"' "$TMP/out"
jq -r .response.patch "$TMP/out" | base64 -d >"$TMP/patch.json"
check "/mutate GPU pod: the patch adds the GPU toleration and node selector" \
	jq -e 'map(.path) == ["/spec/tolerations", "/spec/nodeSelector"] and .[0].value[0].key == "sku"' "$TMP/patch.json"

post /validate "$SAMPLE_GPU"
equals "$CODE" 200 "/validate unmutated GPU pod: HTTP status"
check "/validate unmutated GPU pod: rejected (403), never a patch" \
	jq -e '.response.allowed == false and .response.status.code == 403 and (.response | has("patch") | not)' "$TMP/out"

post /mutate "$SAMPLE_CPU"
check "/mutate CPU pod tolerating the GPU taint: rejected 403 with a reason" \
	jq -e '.response.allowed == false and .response.status.code == 403 and (.response.status.message | test("toleration"))' "$TMP/out"
post /validate "$SAMPLE_CPU"
check "/validate CPU pod tolerating the GPU taint: rejected" jq -e '.response.allowed == false' "$TMP/out"

# dryrun: what both webhooks together count is what enforce does. The CPU pod's would-be rejection is
# /mutate's (enforce refuses it there, and its /validate never sees it): /validate admits it silently
# and counts nothing; the unpatched GPU pod is judged as /mutate leaves it in enforce: admitted.
jq '.request.namespace = "team-dry" | .request.object.metadata.namespace = "team-dry"' "$SAMPLE_CPU" >"$TMP/cpu-dry.json"
jq '.request.namespace = "team-dry" | .request.object.metadata.namespace = "team-dry"' "$SAMPLE_GPU" >"$TMP/gpu-dry.json"
post /mutate "$TMP/cpu-dry.json"
check "dryrun /mutate CPU pod: admitted, the would-be rejection said" \
	jq -e '.response.allowed and .response.auditAnnotations.wouldDecide == "reject" and (.response.warnings | length) == 1' "$TMP/out"
post /validate "$TMP/cpu-dry.json"
check "dryrun /validate CPU pod: admitted silently, judged at /mutate" \
	jq -e '.response.allowed and .response.auditAnnotations.reason == "judged-at-mutate"
	       and (.response.auditAnnotations | has("wouldDecide") | not) and (.response | has("warnings") | not)' "$TMP/out"
post /validate "$TMP/gpu-dry.json"
check "dryrun /validate unpatched GPU pod: admitted as enforce admits the patched pod" \
	jq -e '.response.allowed and .response.auditAnnotations.reason == "gpu-pod-ok" and (.response | has("warnings") | not)' "$TMP/out"
equals "$(metric 'gpu_admission_policy_verdicts_total{endpoint="mutate",kind="Pod",mode="dryrun",verdict="reject"}')" 1 \
	"dryrun: /mutate counts the would-be rejection"
equals "$(metric 'gpu_admission_policy_verdicts_total{endpoint="validate",kind="Pod",mode="dryrun",verdict="reject"}')" 0 \
	"dryrun: /validate counts no rejection"
equals "$(metric 'gpu_admission_policy_verdicts_total{endpoint="validate",kind="Pod",mode="dryrun",verdict="allow"}')" 1 \
	"dryrun: /validate counts the GPU pod enforce's /validate sees, not the CPU pod it never does"

printf '{"apiVersion":"v9","kind":"AdmissionReview","request":{"uid":"u-bad-1"}}' >"$TMP/badver.json"
post /mutate "$TMP/badver.json"
equals "$CODE" 200 "malformed review with a uid: still HTTP 200"
check "malformed review with a uid: AdmissionReview with code 400 and the uid" \
	jq -e '.response.uid == "u-bad-1" and .response.allowed == false and .response.status.code == 400' "$TMP/out"

# ---- plain HTTP errors ----
printf 'this is not json' >"$TMP/notjson"
post /mutate "$TMP/notjson"
equals "$CODE" 400 "body that is not JSON: plain 400"
has "$TMP/out" "not valid JSON" "400 carries a short message"
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{}}' >"$TMP/nouid.json"
post /mutate "$TMP/nouid.json"
equals "$CODE" 400 "review without a uid: plain 400"
printf '' >"$TMP/empty"
post /mutate "$TMP/empty"
equals "$CODE" 400 "empty body: 400"

CODE=$(hcurl "$CA" /nope -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 404 "GET unknown path: 404"
post /nope "$SAMPLE_GPU"
equals "$CODE" 404 "POST unknown path: 404"
CODE=$(hcurl "$CA" /mutate -o "$TMP/out" -D "$TMP/headers" -w '%{http_code}')
equals "$CODE" 405 "GET /mutate: 405"
has "$TMP/headers" "Allow: POST" "405 says what is allowed"
post /healthz "$SAMPLE_GPU"
equals "$CODE" 405 "POST /healthz: 405"
CODE=$(hcurl "$CA" /mutate -H 'Content-Type: text/plain' --data-binary "@$SAMPLE_GPU" -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 415 "text/plain body: 415"
CODE=$(hcurl "$CA" /mutate -H 'Content-Type:' --data-binary "@$SAMPLE_GPU" -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 415 "no Content-Type: 415"
post /mutate "$SAMPLE_GPU" -H 'Content-Type: application/json; charset=utf-8'
equals "$CODE" 200 "application/json with a charset parameter: 200"

# ---- body limit: exactly 3 MiB passes, 3 MiB + 1 is refused ----
pad() { # pad SIZE OUT: the GPU sample padded with spaces to SIZE bytes
	cp "$SAMPLE_GPU" "$2"
	n=$(($1 - $(wc -c <"$SAMPLE_GPU")))
	head -c "$n" /dev/zero | tr '\0' ' ' >>"$2"
}
pad 3145728 "$TMP/3mib.json"
pad 3145729 "$TMP/3mib1.json"
post /mutate "$TMP/3mib.json"
equals "$CODE" 200 "body of exactly 3 MiB: answered"
check "body of exactly 3 MiB: mutated" jq -e '.response.patchType == "JSONPatch"' "$TMP/out"
post /mutate "$TMP/3mib1.json"
equals "$CODE" 413 "body of 3 MiB + 1 (Content-Length): 413"
check "chunked body of 3 MiB + 1: 413 while reading" \
	client "$CA" --body "$TMP/3mib1.json" --chunked --expect 413 --count 1
check "chunked body within the limit: answered" \
	client "$CA" --body "$SAMPLE_GPU" --chunked --count 3 --expect-body '"patchType":"JSONPatch"'

# ---- hostile input: answered or closed, never a crash ----
big=$(head -c 40000 /dev/zero | tr '\0' a)
CODE=$(hcurl "$CA" /mutate -H "X-Big: $big" -H "$J" -d '{}' -o /dev/null -w '%{http_code}')
equals "$CODE" 431 "40 KB of headers: 431"
raw() { printf "$1" | openssl s_client -connect "127.0.0.1:$PORT" -quiet 2>/dev/null | head -n 1; }
has_line() { case "$1" in *"$2"*) ok ;; *) bad "$3: got '$1'" ;; esac; }
has_line "$(raw 'POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 99999999999999999999999\r\n\r\n')" \
	" 413 " "Content-Length beyond 64 bits: 413"
has_line "$(raw 'POST /mutate HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: -1\r\n\r\n')" \
	" 400 " "negative Content-Length: 400"
raw 'GARBAGE\r\n\r\n' >/dev/null
head -c 20000 /dev/urandom >"$TMP/noise"
curl -sS --max-time 5 "http://127.0.0.1:$PORT/" --data-binary "@$TMP/noise" -o /dev/null 2>/dev/null
printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"deep","object":%s}}' \
	"$(head -c 5000 /dev/zero | tr '\0' '[')" >"$TMP/deep.json"
post /mutate "$TMP/deep.json"
equals "$CODE" 400 "5000-deep JSON nesting: 400"
check "alive after hostile input" client "$CA" --body "$SAMPLE_GPU" --count 3

# ---- keep-alive survives refusals that had a body ----
check "415 with a body keeps the connection" sh -c \
	"$CLIENT_BIN --port $PORT --cafile $CA --servername $HOST --body $SAMPLE_GPU --content-type text/plain --expect 415 --count 5 | grep -q 'closes=0'"
check "404 keeps the connection" sh -c \
	"$CLIENT_BIN --port $PORT --cafile $CA --servername $HOST --method GET --path /nope --expect 404 --count 5 | grep -q 'closes=0'"

# ---- the OpenSSL client, keep-alive, counted in /metrics ----
before=$(metric 'gpu_admission_requests_total{endpoint="mutate",decision="mutate",code="200"}')
vbefore=$(metric 'gpu_admission_policy_verdicts_total{endpoint="mutate",kind="Pod",mode="enforce",verdict="mutate"}')
check "200 mutations over one keep-alive connection" \
	client "$CA" --body "$SAMPLE_GPU" --count 200 --expect-body '"uid":"5a1e0001-8d3c-4a52-9a0e-6c1f3e2b7a10"'
after=$(metric 'gpu_admission_requests_total{endpoint="mutate",decision="mutate",code="200"}')
equals "$((after - before))" 200 "requests_total counts each mutation"
vafter=$(metric 'gpu_admission_policy_verdicts_total{endpoint="mutate",kind="Pod",mode="enforce",verdict="mutate"}')
equals "$((vafter - ${vbefore:-0}))" 200 "policy_verdicts_total counts each mutation with its mode"
check "validate rejections over keep-alive" client "$CA" --path /validate --body "$SAMPLE_CPU" --count 20 \
	--expect-body '"allowed":false'

# ---- health ----
CODE=$(hcurl "$CA" /healthz -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 200 "/healthz: 200"
CODE=$(hcurl "$CA" /readyz -o "$TMP/out" -w '%{http_code}')
equals "$CODE" 200 "/readyz: 200 when serving"

# ---- /metrics ----
hcurl "$CA" /metrics -o "$TMP/metrics" -D "$TMP/mheaders"
has "$TMP/mheaders" "text/plain; version=0.0.4" "/metrics: Prometheus content type"
for series in \
	'gpu_admission_requests_total{endpoint="validate",decision="reject",code="200"}' \
	'gpu_admission_requests_total{endpoint="mutate",decision="error",code="413"}' \
	'gpu_admission_requests_total{endpoint="mutate",decision="error",code="415"}' \
	'gpu_admission_requests_total{endpoint="mutate",decision="error",code="400"}' \
	'gpu_admission_requests_total{endpoint="mutate",decision="error",code="200"}' \
	'gpu_admission_requests_total{endpoint="other",decision="none",code="404"}' \
	'gpu_admission_requests_total{endpoint="mutate",decision="error",code="405"}' \
	'gpu_admission_request_duration_seconds_bucket{endpoint="mutate",le="0.0001"}' \
	'gpu_admission_request_duration_seconds_bucket{endpoint="mutate",le="1"}' \
	'gpu_admission_request_duration_seconds_bucket{endpoint="mutate",le="+Inf"}' \
	'gpu_admission_request_duration_seconds_count{endpoint="validate"}' \
	'gpu_admission_in_flight_requests' \
	'gpu_admission_config_reloads_total 0' \
	'gpu_admission_config_reload_failures_total 0' \
	'gpu_admission_cert_reloads_total 0' \
	'gpu_admission_cert_reload_failures_total 0' \
	'gpu_admission_build_info{version="'; do
	has "$TMP/metrics" "$series" "/metrics series"
done
inf=$(grep -F 'gpu_admission_request_duration_seconds_bucket{endpoint="mutate",le="+Inf"}' "$TMP/metrics" | awk '{print $2}')
cnt=$(grep -F 'gpu_admission_request_duration_seconds_count{endpoint="mutate"}' "$TMP/metrics" | awk '{print $2}')
equals "$cnt" "$inf" "histogram count equals its +Inf bucket"
check "histogram buckets are cumulative" sh -c "grep -F 'duration_seconds_bucket{endpoint=\"mutate\"' $TMP/metrics | awk '{ if (\$2 < prev) exit 1; prev = \$2 }'"
want=$(date -u -d "$(openssl x509 -enddate -noout -in "$TMP/c/tls.crt" | cut -d= -f2)" +%s)
has "$TMP/metrics" "gpu_admission_cert_expiry_timestamp_seconds $want" "/metrics: certificate expiry as a unix time"
check "/metrics: one sample per line, parseable" sh -c "grep -v '^#' $TMP/metrics | awk 'NF != 2 { exit 1 }'"

CODE=$(curl -sS --max-time 10 "http://127.0.0.1:$MPORT/metrics" -o "$TMP/pmetrics" -w '%{http_code}')
equals "$CODE" 200 "plain-HTTP metrics listener: /metrics"
has "$TMP/pmetrics" "gpu_admission_requests_total" "plain /metrics has the counters"
CODE=$(curl -sS --max-time 10 "http://127.0.0.1:$MPORT/readyz" -o /dev/null -w '%{http_code}')
equals "$CODE" 200 "plain-HTTP metrics listener: /readyz"
CODE=$(curl -sS --max-time 10 "http://127.0.0.1:$MPORT/mutate" -H "$J" --data-binary "@$SAMPLE_GPU" -o /dev/null -w '%{http_code}')
equals "$CODE" 404 "plain-HTTP listener never serves /mutate"

# ---- logs: JSON lines, one per decision, names only ----
check "every log line is one JSON object" sh -c "jq -c . <$LOG >/dev/null"
check "decision line with uid, namespace, pod, decision, reason, latency" sh -c \
	"jq -e 'select(.msg == \"admission\" and .uid == \"5a1e0001-8d3c-4a52-9a0e-6c1f3e2b7a10\" and .namespace == \"ml\"
	 and .pod == \"train-0\" and .decision == \"mutate\" and .reason != null and (.latency_us | type) == \"number\"
	 and (.upload_us | type) == \"number\" and .upload_us <= .latency_us
	 and .level == \"info\" and (.time | test(\"Z\$\")))' <$LOG | grep -q uid"
lacks "$LOG" "secret-image-name" "no pod spec content in the log"
check "the server is still alive after all of that" kill -0 "$SERVER_PID"
stop_server "the API server"
finish
