# Sourced by suite.sh (full mode): day 2. The chart installed as a platform team runs it
# (two replicas as pods, the PDB, the topology spread, certificates from a Secret),
# then, under a steady load of pods and workloads (D2_RATE a second, D2_WINDOW seconds
# a window), each disruption one at a time: planned (helm upgrade that rolls the pods,
# one that changes only the policy, scale 2 -> 3 -> 2, a node drain, certificate
# renewal, kube-apiserver restart) and unplanned (SIGKILL of a replica, SIGSTOP of one
# for longer than the webhook timeout, both replicas gone). Then the rollout path:
# the same requests in dryrun, warn and enforce mode. `make soak-cluster` runs it long.
# It replaces the base scenarios' release (one replica played by webhook.lib) with its
# own, and puts the base release back when done.
#
# NOTES (upstream behaviour the checks rely on):
# - kube-apiserver dials a webhook's Service through its own resolver on each new
#   connection, and keeps connections alive between calls (k8s.io/apiserver
#   pkg/util/webhook/client.go HookClient: the dialer resolves the Service; client-go's
#   transport pools the connections), so a replica must keep answering on the
#   connections it has until its grace ends: the server's drain says
#   "Connection: close" on each answer after SIGTERM (pkg/webhook/server.c drain).
# - An admission webhook call is not retried by kube-apiserver (k8s.io/apiserver
#   pkg/admission/plugin/webhook/mutating/dispatcher.go: one r.Do); a failure is the
#   failurePolicy's (Fail for pods and workloads in the chart).
# - kubectl drain evicts through the Eviction API, which the PDB guards
#   (pkg/registry/core/pod/storage/eviction.go: 429 while disruptionsAllowed is 0).
# - The ReplicaSet and Job controllers retry a pod creation that failed (with their
#   rate-limited queues), so a workload's pod that the webhook refused for an outage is
#   created later: the check waits for it.
. "$ROOT/test/cluster/day2.lib"

d2_install() {
	"$B" certs --service "$REL" --namespace "$RNS" --out "$D2/certs" >/dev/null || { bad "day2: certs"; return 1; }
	kubectl create secret tls "$REL-tls" -n "$RNS" --cert "$D2/certs/tls.crt" --key "$D2/certs/tls.key" >/dev/null ||
		{ bad "day2: the TLS Secret"; return 1; }
	if helm install "$REL" "$CHART" -n "$RNS" -f "$ROOT/test/cluster/values/image.yaml" -f "$ROOT/test/cluster/values/day2.yaml" \
		--set "certs.secret.caBundle=$(cat "$D2/certs/caBundle")" >"$D2/install.out" 2>&1; then ok; else
		bad "day2: helm install (two replicas, certs.mode=secret)"; cat "$D2/install.out"; return 1
	fi
}

# d2_upgrade ARGS...: helm upgrade keeping the day-2 values, plus ARGS.
d2_upgrade() {
	helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reuse-values "$@" >"$D2/upgrade.out" 2>&1 && return 0
	bad "day2: helm upgrade $*"; indent "$D2/upgrade.out"; return 1
}

# --- the disruptions (each run inside d2_window) -------------------------------------
d2_roll() { # a helm upgrade that changes the pod template: a rolling update
	D2_ROLLS=$((${D2_ROLLS:-0} + 1))
	d2_upgrade --set-string "podAnnotations.day2-roll=$D2_ROLLS" && d2_settle 2 "rolling update"
}
d2_policy() { # a helm upgrade that changes only the policy: both replicas reload it
	local before
	before=$(d2_counts policy)
	d2_upgrade --set-json 'policy.namespaceModes={"team-day2":"warn"}' &&
		{ cp_wait 60 d2_reloaded policy "$before" || bad "day2: both replicas reloaded the policy"; }
}
d2_scale() {
	kubectl scale deployment -n "$RNS" "$REL" --replicas 3 >/dev/null && d2_settle 3 "scale to 3" &&
		kubectl scale deployment -n "$RNS" "$REL" --replicas 2 >/dev/null && d2_settle 2 "scale back to 2"
}
d2_drain() { # kubectl drain of the node that runs the first replica (eviction through the PDB)
	local node
	node=$(kubectl get pod -n "$RNS" "$(d2_pods | head -n 1)" -o jsonpath='{.spec.nodeName}')
	kubectl drain "$node" --pod-selector "$D2_SEL" --ignore-daemonsets --delete-emptydir-data --timeout 180s \
		>"$D2/drain.out" 2>&1 || { bad "day2: kubectl drain $node"; indent "$D2/drain.out"; }
	d2_settle 2 "drain"
	kubectl uncordon "$node" >/dev/null
}
d2_certs() { # the serving certificate renewed (same CA): both replicas reload it
	local before
	before=$(d2_counts certificate)
	"$B" certs --service "$REL" --namespace "$RNS" --out "$D2/certs-$(d2_ms)" --ca-cert "$D2/certs/ca.crt" \
		--ca-key "$D2/certs/ca.key" >"$D2/renew.out" 2>&1 || { bad "day2: certs (renewal)"; return; }
	kubectl create secret tls "$REL-tls" -n "$RNS" --cert "$(ls -d "$D2"/certs-* | tail -n 1)/tls.crt" \
		--key "$(ls -d "$D2"/certs-* | tail -n 1)/tls.key" --dry-run=client -o yaml | kubectl replace -f - >/dev/null ||
		bad "day2: the renewed TLS Secret"
	cp_wait 60 d2_reloaded certificate "$before" || bad "day2: both replicas reloaded the renewed certificate"
}
d2_apiserver() { # kube-apiserver stopped (SIGTERM) and a new one started in its place
	local t0 t1 old=$CP_APISERVER_PID
	t0=$(d2_ms)
	kill "$old"
	# SIGTERM closes its listener at once (http.Server.Shutdown), then it drains the
	# long-running requests, the controllers' watches, for up to its ShutdownTimeout,
	# the request timeout: 60 s (k8s.io/apiserver pkg/server/config.go ShutdownTimeout:
	# c.RequestTimeout; secure_serving.go RunServer). Its successor binds the port as
	# soon as it is closed, as a rolling restart's next instance takes the traffic.
	cp_wait 30 sh -c "! curl -sk --max-time 1 -o /dev/null https://$CP_API_ADDR/readyz" || bad "day2: kube-apiserver closed its port"
	t1=$(d2_ms)
	cp_apiserver "$T/cp" || bad "day2: kube-apiserver restarted"
	echo "cluster: day2: kube-apiserver closed its port $((t1 - t0)) ms after SIGTERM, its successor was ready $(($(d2_ms) - t1)) ms later"
}
# unplanned
d2_sigkill() { # one replica OOM-killed: the kubelet restarts it
	local pod ip t0
	pod=$(d2_pods | head -n 1); ip=$(d2_ip "$pod"); t0=$(d2_ms)
	kill -9 "$(d2_pid "$pod")"
	d2_settle 2 "SIGKILL"
	D2_GONE_MS=$(d2_back_ms "$pod" "$ip" "$t0")
}
d2_sigstop() { # one replica frozen for longer than the webhook's timeout, then resumed
	local pod ip t0 gone
	pod=$(d2_pods | head -n 1); ip=$(d2_ip "$pod"); t0=$(d2_ms)
	kill -STOP "$(d2_pid "$pod")"
	sleep "${DAY2_STOP_S:-15}"
	kill -CONT "$(d2_pid "$pod")"
	# A frozen process keeps its sockets: kube-apiserver's pooled connections to it stay
	# open after its endpoint leaves the Service, and a request that picks one waits for
	# the webhook's timeout (5 s). Failures end once it answers again.
	D2_GONE_MS=$(d2_ms)
	d2_settle 2 "SIGSTOP"
	gone=$(d2_gone_ms "$ip" "$D2/$D2_NAME.ep" "$t0")
	if [ -n "$gone" ]; then
		echo "cluster: day2: sigstop: the frozen replica's endpoint left the Service $((gone - t0)) ms after the freeze"
	else
		echo "cluster: day2: sigstop: the frozen replica's endpoint never left the Service (it was resumed first)"
	fi
}
d2_both() { # both replicas gone, and no kubelet to restart them, for DAY2_OUTAGE_S
	local pod
	kill -STOP "$D2_KL_PID"
	for pod in $(d2_pods); do kill -9 "$(d2_pid "$pod")"; done
	sleep "${DAY2_OUTAGE_S:-15}"
	kill -CONT "$D2_KL_PID"
	d2_settle 2 "both replicas gone"
}
# d2_back_ms POD IP T0: when the failed replica stopped taking requests or was back:
# its endpoint left the Service, or the kubelet saw it ready again.
d2_back_ms() {
	local gone back
	sleep 1
	gone=$(d2_gone_ms "$2" "$D2/$D2_NAME.ep" "$3")
	back=$(jq -r --arg p "$1" --argjson t0 "$3" 'select(.pod == $p and .ev == "ready" and .t >= $t0) | .t' \
		"$D2/kl/events.jsonl" | head -n 1)
	printf '%s\n%s\n' "$gone" "$back" | grep . | sort -n | head -n 1
}

# --- the rollout path: dryrun, then warn, then enforce, on the same requests ---------
D2_WOULD="would be rejected"
# d2_rejects MODE: the replicas' gpu_admission_policy_verdicts_total{mode=MODE,
# verdict="reject"} summed over both webhooks, by kind ("Pod 12 Deployment 3 ..."):
# what the metrics say enforce would refuse (the server serves /metrics on its TLS port
# too; the rollout path restarts no replica, so the counters only grow).
d2_rejects() {
	local pod
	for pod in $(d2_pods); do
		curl -sk --max-time 5 "https://$(d2_ip "$pod"):8443/metrics"
	done | awk -v m="mode=\"$1\"" 'index($0, "gpu_admission_policy_verdicts_total{") == 1 && index($0, m) && index($0, "verdict=\"reject\"") {
		match($0, /kind="[^"]*"/); k = substr($0, RSTART + 6, RLENGTH - 7); n[k] += $NF }
		END { for (k in n) print k, n[k] }' | sort
}
# d2_delta BEFORE AFTER: AFTER less BEFORE, kind by kind (lines "KIND N").
d2_delta() {
	printf '%s\n' "$1" | sed 's/^/- /' >"$D2/delta.in"
	printf '%s\n' "$2" | sed 's/^/+ /' >>"$D2/delta.in"
	awk 'NF == 3 { n[$2] += ($1 == "+" ? $3 : -$3) } END { for (k in n) if (n[k] != 0) print k, n[k] }' "$D2/delta.in" | sort
}
d2_mode_run() { # d2_mode_run MODE: the policy's mode set, then D2_COUNT requests
	local before m0
	before=$(d2_counts policy)
	d2_upgrade --set "policy.mode=$1" && { cp_wait 60 d2_reloaded policy "$before" || bad "day2: replicas reloaded mode $1"; }
	m0=$(d2_rejects "$1")
	d2_loadgen run -rate "$D2_RATE" -count "$D2_COUNT" -seed 7 -run "mode-$1" -namespaces "$D2_NS" \
		-out "$D2/mode-$1.jsonl" 2>"$D2/mode-$1.err" || bad "day2: the load generator ($1)"
	# The workloads' pods too (the controllers create those of the workloads admitted).
	d2_loadgen check -in "$D2/mode-$1.jsonl" -run "mode-$1" -namespaces "$D2_NS" 2>/dev/null
	d2_loadgen sum -in "$D2/mode-$1.jsonl" -warn "$D2_WOULD" >"$D2/mode-$1.sum.json"
	d2_delta "$m0" "$(d2_rejects "$1")" >"$D2/mode-$1.metrics"
	echo "cluster: day2: mode $1: $(jq -c '{requests, results, warned}' "$D2/mode-$1.sum.json"), metrics' rejects: $(tr '\n' ' ' <"$D2/mode-$1.metrics")"
}
d2_rollout() {
	local dry warn enf fixable
	d2_mode_run dryrun
	d2_mode_run warn
	d2_mode_run enforce
	dry=$(jq -r --arg w "$D2_WOULD" '.warned[$w] // 0' "$D2/mode-dryrun.sum.json")
	warn=$(jq -r --arg w "$D2_WOULD" '.warned[$w] // 0' "$D2/mode-warn.sum.json")
	enf=$(jq -r '.results.refused // 0' "$D2/mode-enforce.sum.json")
	[ "$enf" -gt 0 ] && ok || bad "day2: enforce refused some of the mix ($enf)"
	equals "$(jq -r '.results.refused // 0' "$D2/mode-dryrun.sum.json")" 0 "day2: dryrun refuses nothing"
	equals "$(jq -r '.results.refused // 0' "$D2/mode-warn.sum.json")" 0 "day2: warn refuses nothing"
	equals "$dry" "$enf" "day2: the would-be rejections of dryrun are the rejections of enforce"
	equals "$warn" "$enf" "day2: the would-be rejections of warn are the rejections of enforce"
	# The same request, the same verdict: request by request, not only in number.
	jq -r --arg w "$D2_WOULD" 'select(any(.warnings[]?; contains($w))) | .seq' "$D2/mode-dryrun.jsonl" | sort -n >"$D2/dry.seqs"
	jq -r 'select(.result == "refused") | .seq' "$D2/mode-enforce.jsonl" | sort -n >"$D2/enf.seqs"
	cmp -s "$D2/dry.seqs" "$D2/enf.seqs" && ok || bad "day2: dryrun warns of exactly the requests enforce refuses ($(diff "$D2/dry.seqs" "$D2/enf.seqs" | grep -c '^[<>]') differ)"
	fixable=$(jq -r --arg w "$D2_WOULD" 'select(.expect == "admit" and any(.warnings[]?; contains($w))) | .class' \
		"$D2/mode-dryrun.jsonl" | sort | uniq -c | tr '\n' ' ')
	equals "$fixable" "" "day2: no request the mutating webhook would fix is a would-be rejection in dryrun"
	# The metrics count what the webhook judged: in dryrun and warn that includes what the
	# controllers made from the workloads enforce refuses at apply (a ReplicaSet for each
	# Deployment, a pod for each ReplicaSet and Job), each a would-be rejection of its
	# own; the rest is enforce's count, kind by kind.
	for m in dryrun warn; do
		made=$(kubectl get replicasets,pods -A -l "gpu-admission.test/load-run=mode-$m" -o json |
			jq -r '[.items[] | select(.metadata.labels["gpu-admission.test/load-class"] | test("^(deploy|job)-cpu"))]
				| group_by(.kind)[] | "\(.[0].kind) \(length)"')
		want=$(d2_delta "" "$(printf '%s\n%s\n' "$(cat "$D2/mode-enforce.metrics")" "$made" | grep .)")
		equals "$(cat "$D2/mode-$m.metrics")" "$want" "day2: the $m metrics' would-be rejections are enforce's and those of what the controllers made ($(echo "$made" | tr '\n' ' '))"
	done
	equals "$(jq '.failedCreates' "$D2/mode-enforce.sum.json")" 0 "day2: enforce admits every request it should"
	equals "$(jq '[.stored | to_entries[] | select(.key != "ok" and .key != "not-stored")] | length' "$D2/mode-enforce.sum.json")" 0 \
		"day2: enforce stores every object as the policy makes it"
	for m in dryrun warn enforce; do d2_cleanup "mode-$m"; done
}

# d2_no_pods: the release namespace's pods deleted; with no kubelet playing them, a
# bound pod's deletion is finished by hand (cp_reap, as the kubelet's last step).
d2_no_pods() {
	cp_wait 60 sh -c ". $ROOT/test/cluster/nodes.sh; cp_reap $RNS; [ -z \"\$(kubectl get pods -n $RNS -o name)\" ]"
}

# --- the scenario ----------------------------------------------------------------------
day2() {
	mkdir -p "$D2"
	# The base release and its played replica make way.
	wh_stop
	helm uninstall "$REL" -n "$RNS" >/dev/null 2>&1 || bad "day2: the base release uninstalled"
	kubectl delete endpointslice -n "$RNS" "$REL-test" --ignore-not-found >/dev/null
	d2_no_pods || bad "day2: the base release's pods are gone"
	# A second system node, in the other zone: the topology spread puts one replica on each.
	kubectl get node "$D2_SYS2" >/dev/null 2>&1 ||
		cp_node_up "$D2_SYS2" system Standard_D4s_v5 - - no eastus-2 || bad "day2: the second system node"
	for n in $(echo "$D2_NS" | tr ',' ' '); do ns "$n"; done
	d2_kubelet_start
	d2_install || return
	d2_settle 2 "install" || return
	equals "$(kubectl get pods -n "$RNS" -l "$D2_SEL" -o json | jq -r '[.items[].spec.nodeName] | unique | length')" 2 \
		"day2: the two replicas run on the two system nodes (topology spread)"
	equals "$(kubectl get pdb -n "$RNS" "$REL" -o jsonpath='{.status.currentHealthy}')" 2 "day2: the PDB counts both replicas healthy"

	D2_NAME=rolling-update; d2_window rolling-update planned d2_roll
	D2_NAME=policy-upgrade; d2_window policy-upgrade planned d2_policy
	D2_NAME=scale; d2_window scale planned d2_scale
	D2_NAME=drain; d2_window drain planned d2_drain
	D2_NAME=cert-renewal; d2_window cert-renewal planned d2_certs
	D2_NAME=apiserver-restart; d2_window apiserver-restart planned d2_apiserver
	D2_NAME=sigkill; d2_window sigkill unplanned d2_sigkill
	D2_NAME=sigstop; d2_window sigstop unplanned d2_sigstop
	D2_NAME=both-gone; d2_window both-gone unplanned d2_both
	d2_rollout
	echo "cluster: day2: the windows:$D2_TABLE"

	# Back to the base scenarios' state: the kubelet and its replicas stopped, the release
	# gone, the base release installed again with its played replica.
	kill "$D2_KL_PID" 2>/dev/null
	wait "$D2_KL_PID" 2>/dev/null
	helm uninstall "$REL" -n "$RNS" >/dev/null 2>&1 || bad "day2: helm uninstall"
	d2_no_pods || bad "day2: the release's pods are gone"
	kubectl delete secret -n "$RNS" "$REL-tls" --ignore-not-found >/dev/null
	kubectl delete node "$D2_SYS2" >/dev/null
	install_default
}
day2
