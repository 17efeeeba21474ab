#!/bin/sh
# serve --refusal-events (pkg/webhook/events.h), the queue and its folding of
# repeats, against an API server that is not there: the kubeconfig names a
# loopback port nothing listens on, so every publish fails at once and is
# counted, and the answers never wait for it. What is queued: a refused UPDATE
# only (a refused CREATE is answered to whoever sent it; an admitted UPDATE is
# nothing to tell). The same message on the same object is one publish; another
# object is another. (The Events on a real API server, the Workload's included,
# with the chart's RBAC: test/cluster/scenarios/85-kueue.sh.)
. test/e2e/server.lib

certs "$TMP/c"
CA=$TMP/c/ca.crt
LOG=$TMP/server.log
cat >"$TMP/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", certificate-authority: "$CA"}}]
users: [{name: u, user: {token: not-a-real-token}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
EOF
start_server "$LOG" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --service-name "$SVC" \
	--refusal-events --kubeconfig "$TMP/kubeconfig" --threads 2 || { bad "server did not start"; finish; }
ok
lacks "$LOG" "claim cache" "--refusal-events with --kubeconfig: no claim lookups started"

G=test/golden/workload-deployment-cpu-gpu-toleration/request.json
# review OP UID [JQ]: the golden CPU Deployment that tolerates the GPU taint, as OP; on
# UPDATE its stored version is the same Deployment without that toleration (the edit
# that aims it at GPU nodes, refused as at CREATE).
review() {
	jq --arg op "$1" --arg uid "$2" '.request.operation = $op | .request.object.metadata.uid = $uid
		| .request.uid = ("r-" + $uid + "-" + $op)
		| if $op == "UPDATE" then .request.oldObject = (.request.object | .spec.template.spec.tolerations = []) else . end
		| '"${3:-.}" "$G" >"$TMP/req.json"
	CODE=$(hcurl "$CA" /validate -H 'Content-Type: application/json' --data-binary "@$TMP/req.json" -o "$TMP/out" -w '%{http_code}')
}
metric() { # metric RESULT: gpu_admission_refusal_events_total{result=RESULT}
	hcurl "$CA" /metrics | awk -v r="result=\"$1\"" 'index($0, "gpu_admission_refusal_events_total{") == 1 && index($0, r) { print $2 }'
}
# settled RESULT N: waits (5 s at most) for the counter to read N.
settled() {
	i=0
	while [ "$(metric "$1")" != "$2" ] && [ $i -lt $((50 * SLOW)) ]; do sleep 0.1; i=$((i + 1)); done
	equals "$(metric "$1")" "$2" "$3"
}

equals "$(metric published)/$(metric repeat)/$(metric dropped)/$(metric failed)" "0/0/0/0" "the counters start at 0"
review UPDATE 11111111-1111-4111-8111-111111111111
equals "$CODE/$(jq -r '.response.allowed' "$TMP/out")" "200/false" "the UPDATE that aims the Deployment at GPU nodes is refused"
settled failed 1 "its Event is queued and fails to publish (no API server): counted"
has "$LOG" "cannot publish the refusal's Event" "the failure is logged"
has "$LOG" '"name":"nginx"' "naming the object"
review UPDATE 11111111-1111-4111-8111-111111111111
equals "$(jq -r '.response.allowed' "$TMP/out")" false "the same UPDATE again (a controller's retry) is refused again"
settled repeat 1 "the same message on the same object: a repeat, not published again"
equals "$(metric failed)" 1 "nothing more was sent"
review UPDATE 22222222-2222-4222-8222-222222222222
settled failed 2 "another object's refused UPDATE is its own Event"
review CREATE 33333333-3333-4333-8333-333333333333
equals "$(jq -r '.response.allowed' "$TMP/out")" false "the same Deployment at CREATE is refused"
review UPDATE 44444444-4444-4444-8444-444444444444 '.request.object.spec.template.spec.tolerations = []'
equals "$(jq -r '.response.allowed' "$TMP/out")" true "an UPDATE that keeps it off GPU nodes is admitted"
sleep 1
equals "$(metric failed)/$(metric repeat)/$(metric published)/$(metric dropped)" "2/1/0/0" \
	"neither the refused CREATE nor the admitted UPDATE is an Event"
stop_server "serve with the Event thread running"
finish
