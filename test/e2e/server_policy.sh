#!/bin/sh
# The policy ConfigMap's edits, judged by the real binary over TLS (POST /validate-policy,
# the chart's policy.gpu-admission.azure.io entry):
#  1. a bad edit is refused (403) with the errors `gpu-admission check-config` prints for
#     the same text, line for line: every bad policy of test/pools/cases/ and the
#     golden ones; a good edit is allowed, check-config's advice as kubectl warnings;
#  2. a missing key is named; another release's policy (a chart upgrade rolling out) is
#     allowed with what this release finds; --policy-key chooses the key;
#  3. a replica with no valid policy (not ready, retrying) still judges the edit that fixes it;
#  4. metrics (endpoint="validate-policy") and the decision log line (kind=ConfigMap);
#  5. hostile ConfigMaps of ~1 MiB, alone and eight at once: answered, the process stays
#     under the chart's memory limit and comes back near its baseline; a pod review
#     sent meanwhile is answered; the load's bound is charged to the memory budget (503);
#  6. The chart README's `kubectl edit` transcript is what the webhook answers to its edit.
# Timings are reported, never asserted.
. test/e2e/server.lib

certs "$TMP/c"
CA=$TMP/c/ca.crt
CERT="--tls-cert $TMP/c/tls.crt --tls-key $TMP/c/tls.key"
RELEASE=$(cat VERSION)
case $BIN in /*) B=$BIN ;; *) B=$(pwd)/$BIN ;; esac

# cm_review FILE [KEY [RELEASE]]: the AdmissionReview kube-apiserver sends for an UPDATE of
# the chart's policy ConfigMap holding FILE's text under data[KEY] (default policy.yaml),
# labelled as the chart labels it for RELEASE (default this one's).
cm_review() {
	jq -n --rawfile p "$1" --arg key "${2:-policy.yaml}" --arg rel "${3:-$RELEASE}" '{
		apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview",
		request: {
			uid: "e2e-policy", operation: "UPDATE", name: "gpu-admission-policy", namespace: "gpu-admission",
			kind: {group: "", version: "v1", kind: "ConfigMap"},
			resource: {group: "", version: "v1", resource: "configmaps"},
			userInfo: {username: "alice@contoso.com", groups: ["system:authenticated"]},
			object: {apiVersion: "v1", kind: "ConfigMap",
				metadata: {name: "gpu-admission-policy", namespace: "gpu-admission",
					labels: {"gpu-admission.azure.io/policy": "true", "app.kubernetes.io/instance": "gpu-admission",
						"app.kubernetes.io/version": $rel}},
				data: {($key): $p}},
			dryRun: false}}'
}
# post PATH FILE: POSTs FILE; the answer in $TMP/ans, the HTTP status printed.
post() {
	hcurl "$CA" "$1" --max-time $((30 * SLOW)) -H 'Content-Type: application/json' --data-binary "@$2" \
		-o "$TMP/ans" -w '%{http_code}' 2>/dev/null
}
message() { jq -r '.response.status.message // ""' "$TMP/ans"; }

# ---- 1. the denial lists check-config's errors; a good edit is allowed ----
"$BIN" print-default-config >"$TMP/default.yaml"
start_server "$TMP/serve.log" $CERT --config "$TMP/default.yaml" --threads 2 || { bad "server did not start"; finish; }

# same_errors FILE WHAT: FILE's text as an edit is denied with the lines check-config prints for it.
mkdir -p "$TMP/cc"
same_errors() {
	cp "$1" "$TMP/cc/policy.yaml"
	(cd "$TMP/cc" && "$B" check-config policy.yaml) >/dev/null 2>"$TMP/cc.err"
	equals "$?" 1 "$2: check-config finds errors"
	cm_review "$TMP/cc/policy.yaml" >"$TMP/review.json"
	equals "$(post /validate-policy "$TMP/review.json")" 200 "$2: answered"
	check "$2: denied, 403" jq -e '.response.allowed == false and .response.status.code == 403 and
		.response.auditAnnotations.decision == "reject" and .response.auditAnnotations.reason == "policy-invalid"' "$TMP/ans"
	total=$(tail -n 1 "$TMP/cc.err" | sed -n 's/^\([0-9]*\) errors*$/\1/p')
	message >"$TMP/msg"
	has "$TMP/msg" "has $total error" "$2: the denial counts check-config's $total"
	# check-config's lines but its last (the count): the denial lists the same, in order,
	# then says how many more when it could not list them all.
	sed '$d' "$TMP/cc.err" >"$TMP/cc.lines"
	sed '1d' "$TMP/msg" | grep -v '^\.\.\. and [0-9]* more error' >"$TMP/msg.lines"
	n=$(wc -l <"$TMP/msg.lines")
	if [ "$n" -gt 0 ] && head -n "$n" "$TMP/cc.lines" | cmp -s - "$TMP/msg.lines"; then ok
	else bad "$2: the denial's errors are not check-config's"; diff "$TMP/cc.lines" "$TMP/msg.lines" | head; fi
	if [ "$n" -lt "$total" ]; then
		has "$TMP/msg" "... and $((total - n)) more error" "$2: counts the errors it does not list"
	fi
	check "$2: message within 4096 bytes" sh -c "[ $(wc -c <"$TMP/msg") -le 4096 ]"
}
for f in test/pools/cases/*/policy.yaml; do
	[ "$(tail -n 1 "${f%/policy.yaml}/expect")" = "exit 1" ] || continue  # a valid one (ok-*, notes)
	same_errors "$f" "$(basename "${f%/policy.yaml}")"
done
# The golden cases' policies: two mistakes of a kubectl edit, and 30 errors (20 listed).
for c in invalid many-errors long-errors hostile-anchors; do
	jq -r '.request.object.data["policy.yaml"]' "test/golden/policy-cm-$c/request.json" >"$TMP/golden.yaml"
	same_errors "$TMP/golden.yaml" "golden policy-cm-$c"
done

# Good edits: allowed; check-config's advice ("FILE: warning: ...") as the warnings (its
# notes, "FILE: note: ...", are its own).
for f in test/pools/cases/ok-fallback/policy.yaml "$TMP/default.yaml" test/golden/policy-cm-warnings; do
	if [ -d "$f" ]; then jq -r '.request.object.data["policy.yaml"]' "$f/request.json" >"$TMP/good.yaml"
	else cp "$f" "$TMP/good.yaml"; fi
	cp "$TMP/good.yaml" "$TMP/cc/policy.yaml"
	(cd "$TMP/cc" && "$B" check-config policy.yaml) >/dev/null 2>"$TMP/cc.all"
	grep ': warning: ' "$TMP/cc.all" >"$TMP/cc.err"
	cm_review "$TMP/good.yaml" >"$TMP/review.json"
	post /validate-policy "$TMP/review.json" >/dev/null
	check "$(basename "$f"): a valid edit is allowed" jq -e '.response.allowed == true and
		.response.auditAnnotations.reason == "policy-valid"' "$TMP/ans"
	jq -r '.response.warnings // [] | .[]' "$TMP/ans" >"$TMP/warn"
	if cmp -s "$TMP/cc.err" "$TMP/warn"; then ok
	else bad "$(basename "$f"): warnings are not check-config's advice"; diff "$TMP/cc.err" "$TMP/warn"; fi
done
has "$TMP/warn" "policy.yaml: warning: pools[1]" "the misordered pools are a kubectl warning"

# ---- 2. a missing key; another release's policy; the key option ----
cm_review test/pools/cases/ok-fallback/policy.yaml policy.yml >"$TMP/review.json"
post /validate-policy "$TMP/review.json" >/dev/null
check "key renamed: denied" jq -e '.response.allowed == false and .response.auditAnnotations.reason == "policy-key-missing"' "$TMP/ans"
message >"$TMP/msg"
has "$TMP/msg" 'data["policy.yaml"] is missing' "key renamed: the key expected is named"
cm_review test/pools/cases/unknown-top-keys/policy.yaml policy.yaml 99.0.0 >"$TMP/review.json"
post /validate-policy "$TMP/review.json" >/dev/null
check "another release's policy: allowed, what this release finds as warnings" jq -e --arg r "$RELEASE" '
	.response.allowed == true and .response.auditAnnotations.reason == "policy-other-release" and
	(.response.warnings[0] | contains("labelled app.kubernetes.io/version=99.0.0 and this webhook runs \($r)")) and
	(.response.warnings[1] | startswith("policy.yaml:2:1: placment: unknown field"))' "$TMP/ans"
# /validate-policy does not judge what is not a ConfigMap; /validate does not judge a ConfigMap.
equals "$(post /validate-policy "$SAMPLE_CPU")" 200 "a pod review on /validate-policy: answered"
check "... allowed untouched" jq -e '.response.allowed == true and (.response | has("patch") | not)' "$TMP/ans"
cm_review test/pools/cases/unknown-top-keys/policy.yaml >"$TMP/review.json"
post /validate "$TMP/review.json" >/dev/null
check "a bad policy ConfigMap on /validate: not judged there" jq -e '.response.allowed == true' "$TMP/ans"

# ---- 4. metrics and the log (before the other servers) ----
hcurl "$CA" /metrics -o "$TMP/metrics" 2>/dev/null
rejects=$(sed -n 's/^gpu_admission_requests_total{endpoint="validate-policy",decision="reject",code="200"} //p' "$TMP/metrics")
check "metrics: the refused edits counted under endpoint validate-policy" sh -c "[ '${rejects:-0}' -ge 12 ]"
has "$TMP/metrics" 'gpu_admission_request_duration_seconds_count{endpoint="validate-policy"}' "metrics: their latency"
lacks "$TMP/metrics" 'gpu_admission_policy_verdicts_total{endpoint="validate-policy"' "metrics: not pod verdicts"
if grep '"endpoint":"validate-policy"' "$SERVER_LOG" | grep '"decision":"reject"' | grep '"reason":"policy-invalid"' |
	grep '"kind":"ConfigMap"' | grep -q '"name":"gpu-admission-policy"'; then ok
else bad "log: a decision line with kind ConfigMap and its name"; grep validate-policy "$SERVER_LOG" | head -3; fi

# ---- 5. hostile ConfigMaps ----
# Over 1 MiB of policy text: refused as check-config refuses such a file.
awk 'BEGIN { printf "# "; for (i = 0; i < 1100000; i++) printf "x"; print "" }' >"$TMP/big.yaml"
cm_review "$TMP/big.yaml" >"$TMP/big.json"
post /validate-policy "$TMP/big.json" >/dev/null
message >"$TMP/msg"
has "$TMP/msg" "policy.yaml: larger than 1 MiB" "a 1.1 MB policy: refused for its size"
# 1 MiB of one-letter list entries (90 MB as a libyaml document, unbounded): refused at the node bound.
awk 'BEGIN { printf "gpuResources: ["; for (i = 0; i < 524000; i++) printf "a,"; print "a]" }' >"$TMP/dense.yaml"
cm_review "$TMP/dense.yaml" >"$TMP/dense.json"
RSS0=$(rss_kb)
t0=$(date +%s%N)
equals "$(post /validate-policy "$TMP/dense.json")" 200 "1 MiB of YAML nodes: answered"
t1=$(date +%s%N)
message >"$TMP/msg"
has "$TMP/msg" "more than 20000 YAML nodes" "1 MiB of YAML nodes: refused at the bound"
echo "    1 MiB of YAML nodes: answered in $(((t1 - t0) / 1000000)) ms"
# Eight at once, and a pod review among them: every answer a verdict or a 503, the pod's a verdict.
ps=""
for k in 1 2 3 4 5 6 7 8; do
	hcurl "$CA" /validate-policy --max-time $((60 * SLOW)) -H 'Content-Type: application/json' \
		--data-binary "@$TMP/dense.json" -o /dev/null -w '%{http_code}\n' >"$TMP/par.$k" 2>/dev/null &
	ps="$ps $!"
done
equals "$(post /mutate "$SAMPLE_GPU")" 200 "a pod review among eight hostile policy reviews: answered"
for p in $ps; do wait "$p"; done
codes=$(cat "$TMP"/par.* | sort | uniq -c | tr -s ' ' | tr '\n' ';')
echo "    eight 1 MiB policy reviews at once: $codes"
check "eight at once: each answered 200 or 503 (the memory budget)" sh -c "! grep -vqxE '200|503' $TMP/par.*"
rss_settled 4096
PEAK=$(peak_kb)
echo "    RSS ${RSS0} kB before, peak ${PEAK} kB, ${RSS1} kB after"
if [ "$MEASURE_RSS" = 1 ]; then
	check "hostile policies: peak RSS under $((ROOM_KB / 1024)) MiB (the chart's limit is $((CHART_LIMIT_KB / 1024)) Mi)" \
		sh -c "[ $PEAK -le $ROOM_KB ]"
	check "hostile policies: RSS back within 4 MB of its baseline" sh -c "[ $((RSS1 - RSS0)) -le 4096 ]"
fi
stop_server "the policy server"
# The load's bound is charged to the memory budget: with a budget of 4 MB, a 1 MiB policy
# (charged 8 MiB besides its body) is a 503 with Retry-After, a small one is judged.
start_server "$TMP/budget.log" $CERT --max-body 2000000 --memory-budget 4000000 ||
	{ bad "the small-budget server did not start"; finish; }
code=$(hcurl "$CA" /validate-policy --max-time $((30 * SLOW)) -H 'Content-Type: application/json' \
	--data-binary "@$TMP/dense.json" -D "$TMP/headers" -o "$TMP/ans" -w '%{http_code}' 2>/dev/null)
equals "$code" 503 "a 1 MiB policy over a 4 MB budget: 503"
has "$TMP/headers" "Retry-After: 1" "... with Retry-After"
cm_review test/pools/cases/bad-selector/policy.yaml >"$TMP/review.json"
equals "$(post /validate-policy "$TMP/review.json")" 200 "a small policy within the same budget: judged"
check "... and refused for its errors" jq -e '.response.allowed == false' "$TMP/ans"
stop_server "the small-budget server"

# ---- 3. a replica with no valid policy judges the edit that fixes it; --policy-key ----
cp test/pools/cases/unknown-top-keys/policy.yaml "$TMP/broken.yaml"
start_server "$TMP/broken.log" $CERT --config "$TMP/broken.yaml" --policy-key gpu-policy.yaml ||
	{ bad "the not-ready server did not start"; finish; }
equals "$(hcurl "$CA" /readyz -o /dev/null -w '%{http_code}' 2>/dev/null)" 503 "bad policy at start: not ready"
equals "$(post /validate "$SAMPLE_CPU")" 503 "bad policy at start: pod reviews 503"
cm_review "$TMP/broken.yaml" gpu-policy.yaml >"$TMP/review.json"
equals "$(post /validate-policy "$TMP/review.json")" 200 "not ready: the policy edit is still judged"
message >"$TMP/msg"
has "$TMP/msg" 'data["gpu-policy.yaml"] has 1 error' "--policy-key: that key judged"
has "$TMP/msg" "gpu-policy.yaml:2:1: placment: unknown field" "--policy-key: errors named after it"
cm_review "$TMP/default.yaml" gpu-policy.yaml >"$TMP/review.json"
post /validate-policy "$TMP/review.json" >/dev/null
check "not ready: the fixing edit is allowed" jq -e '.response.allowed == true' "$TMP/ans"
stop_server "the not-ready server"
"$BIN" serve $CERT --addr 127.0.0.1:0 --policy-key ../etc >"$TMP/out" 2>&1
equals "$?" 2 "--policy-key that is no ConfigMap key: exit 2"
has "$TMP/out" "--policy-key" "... naming the option"

# ---- 6. The chart README's transcript (charts/gpu-admission/README.md) ----
# The ```yaml block before the marker naming this script is the edit; the ```sh block after
# it shows what kubectl prints: the webhook's message follows "denied the request: ", up to
# kubectl's own "You can run ..." line.
awk '
	/^```yaml$/ { on = 1; n = 0; next }
	on && /^```$/ { on = 0; next }
	on { y[++n] = $0; next }
	/not run by make test:.*test\/e2e\/server_policy.sh/ { for (i = 1; i <= n; i++) print y[i] > yaml; found = 1; next }
	found == 1 && /^```sh$/ { found = 2; next }
	found == 2 && /^```$/ { exit }
	found == 2 { print > sh }
' yaml="$TMP/readme-edit.yaml" sh="$TMP/readme-kubectl.txt" charts/gpu-admission/README.md
if [ -s "$TMP/readme-edit.yaml" ] && [ -s "$TMP/readme-kubectl.txt" ]; then ok; else bad "charts/gpu-admission/README.md: no edit and transcript marked for this test"; fi
# The policy text: the block scalar under "policy.yaml: |", its 4-space indent removed.
awk '/^  policy.yaml: \|$/ { on = 1; next } on && /^    / { print substr($0, 5); next } on { exit }' \
	"$TMP/readme-edit.yaml" >"$TMP/readme-policy.yaml"
sed -n 's/.*denied the request: //p' "$TMP/readme-kubectl.txt" >"$TMP/readme-msg"
sed -n '/denied the request: /,$p' "$TMP/readme-kubectl.txt" | sed '1d' | sed '/^You can run /,$d' >>"$TMP/readme-msg"
start_server "$TMP/readme.log" $CERT || { bad "server did not start"; finish; }
cm_review "$TMP/readme-policy.yaml" >"$TMP/review.json"
post /validate-policy "$TMP/review.json" >/dev/null
message >"$TMP/msg"
if [ -s "$TMP/readme-msg" ] && cmp -s "$TMP/readme-msg" "$TMP/msg"; then ok
else bad "the chart README's kubectl transcript is not what the webhook answers"; diff "$TMP/readme-msg" "$TMP/msg"; fi
has "$TMP/readme-kubectl.txt" 'error: configmaps "gpu-admission-policy" could not be patched: configmaps "gpu-admission-policy" is forbidden: admission webhook "policy.gpu-admission.azure.io" denied the request: ' \
	"README: kubectl's words (editoptions.go addError, apiserver ToStatusErr)"
stop_server "the README server"
finish
