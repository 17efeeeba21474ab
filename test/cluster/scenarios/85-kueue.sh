# Sourced by suite.sh (full mode): Kueue v0.17.0 (build/cluster/bin/kueue, built from
# its module by build.sh) beside the webhook, its flavors and queues printed by
# `gpu-admission print-kueue-config` from the policy the replica runs
# (values/kueue.yaml: t4-spot, t4, a100, h100; h100 for team-research only).
# NOTES (upstream Kueue behaviour relied on, read in sigs.k8s.io/kueue@v0.17.0):
# - CRDs: config/components/crd/bases serve v1beta1 and v1beta2 and store v1beta2;
#   print-kueue-config writes v1beta2, so no conversion webhook is needed.
# - Kueue's Job webhook (pkg/controller/jobs/job/job_webhook.go, via jobframework
#   base_webhook.go) suspends a Job that names a queue (kueue.x-k8s.io/queue-name) at
#   CREATE. Only the batch/job integration is enabled and only its and Kueue's own
#   webhooks are registered (config/components/webhook/manifests.yaml, filtered):
#   the pod integration gates plain pods through a second mutating webhook on every
#   pod (pkg/controller/jobs/pod), which a Job's pods do not need; left off.
# - On admission the job reconciler (pkg/controller/jobframework/reconciler.go step 7,
#   startJob) builds each pod set's info from the Workload's assignment
#   (getPodSetsInfoFromStatus -> pkg/podset FromAssignment: the flavors' nodeLabels
#   and tolerations; labels kueue.x-k8s.io/podset, local-queue-name,
#   cluster-queue-name) and PATCHes the Job: suspend false, the template's
#   nodeSelector and tolerations merged (podset.Merge). That UPDATE of the Job is what
#   gpu-admission's validating webhook judges by its template.
# - When that PATCH fails, startJob returns the error: only podset.IsPermanent errors
#   (ErrInvalidPodsetInfo, ErrInvalidPodSetUpdate) finish the Workload
#   (FailedToStart); a webhook's denial is not one, so the reconcile is retried by
#   controller-runtime's default per-item exponential backoff (5 ms doubling to
#   1000 s, client-go util/workqueue DefaultTypedControllerRateLimiter), and no
#   Event is recorded (ReasonStarted only on success). The Workload stays Admitted,
#   holding its quota.
# - A ClusterQueue admits only Workloads of namespaces its namespaceSelector selects
#   (pkg/scheduler/scheduler.go: "Workload namespace doesn't match ClusterQueue
#   selector"); an empty selector {} selects every namespace.
# - Kueue runs with the admin's kubeconfig (its RBAC, config/components/rbac, is not
#   what is tested), its manager config's internalCertManagement off: its webhook
#   serves a certificate of the cluster CA for kueue-webhook-service.kueue-system.svc,
#   and the webhook configurations carry that CA, as webhook.lib does for ours. (Its
#   internal rotation would need the kubelet to project its Secret into the webhook's
#   certDir, and the CRDs' conversion webhooks of its kustomization, to be ready.)

clean
cp_clear_pods
KQ_NS=kueue-system
KQ_SVC=kueue-webhook-service
KQ_DIR=$T/kueue
KQ_PORT=9443
KQ_HEALTH=127.0.0.1:18081
EV_REASON=RefusedByGPUAdmission   # pkg/webhook/events.h EVENTS_REASON
KUEUE=$ROOT/build/cluster/bin/kueue
GO_BIN=${CP_GO:-go}
KQ_MOD=$(cd "$ROOT/test/cluster/kueue" && GOFLAGS=-mod=readonly GOPROXY=off "$GO_BIN" list -m -f '{{.Dir}}' sigs.k8s.io/kueue 2>/dev/null)
mkdir -p "$KQ_DIR/certs"

# job NAME QUEUE [JQ]: a one-pod Job in QUEUE (1 CPU, 1 GiB), changed by JQ.
job() {
	jq -n --arg n "$1" --arg q "$2" '{apiVersion: "batch/v1", kind: "Job",
		metadata: {name: $n, labels: {"kueue.x-k8s.io/queue-name": $q}},
		spec: {parallelism: 1, completions: 1, template: {spec: {restartPolicy: "Never",
			containers: [{name: "c", image: "registry.example/c:1",
				resources: {requests: {cpu: "1", memory: "1Gi"}, limits: {cpu: "1", memory: "1Gi"}}}]}}}}' | jq "${3:-.}"
}
JGPU='.spec.template.spec.containers[0].resources.requests["nvidia.com/gpu"] = "1" | .spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"] = "1"'

# wl NS JOB: the Job's Workload (JSON), or nothing.
wl() { kubectl get workloads.kueue.x-k8s.io -n "$1" -o json | jq -c --arg j "$2" '.items[] | select(any(.metadata.ownerReferences[]?; .name == $j))'; }
# wl_cond NS JOB TYPE: that condition's status (True, False or empty).
wl_cond() { wl "$1" "$2" | jq -r --arg t "$3" '[.status.conditions[]? | select(.type == $t) | .status][0] // empty'; }
# wl_flavor NS JOB: the flavor Kueue assigned the pod set's first resource.
wl_flavor() { wl "$1" "$2" | jq -r '.status.admission.podSetAssignments[0].flavors | to_entries[0].value // empty'; }
wl_admitted() { [ "$(wl_cond "$1" "$2" Admitted)" = True ]; }
# job_pod NS JOB: the name of the Job's pod, once there is one.
job_pod() { kubectl get pods -n "$1" -l "batch.kubernetes.io/job-name=$2" -o jsonpath='{.items[0].metadata.name}' 2>/dev/null; }
job_has_pod() { [ -n "$(job_pod "$1" "$2")" ]; }
# wh_rejects: the replica's rejections so far (/validate and /mutate); api_rejects: kube-apiserver's
# count of rejections by gpu-admission's webhooks (apiserver_admission_webhook_rejection_count).
wh_rejects() {
	curl -sf --cacert "$WH_DIR/caBundle.pem" --resolve "$WH_HOST:$WH_PORT:$CP_WEBHOOK_IP" "https://$WH_HOST:$WH_PORT/metrics" |
		awk '/^gpu_admission_requests_total\{endpoint="(validate|mutate)",decision="reject"/ { n += $2 } END { print n + 0 }'
}
api_rejects() {
	kubectl get --raw /metrics | awk '/^apiserver_admission_webhook_rejection_count\{/ && /gpu-admission\.azure\.io/ { n += $2 } END { print n + 0 }'
}
# job_patches CODE: kube-apiserver's count of PATCH and UPDATE requests on Jobs answered CODE.
job_patches() {
	kubectl get --raw /metrics | awk -v c="code=\"$1\"" '/^apiserver_request_total\{/ && /resource="jobs"/ && /verb="(PATCH|UPDATE)"/ && index($0, c) { n += $2 } END { print n + 0 }'
}

# objects FILE|-: the objects of a multi-document YAML file as one JSON array (kubectl
# prints one object, a List, or several objects one after the other).
objects() {
	kubectl create --dry-run=client -o json -f "$1" | jq -s '[.[] | if .kind == "List" then .items[] else . end]'
}

kueue_up() {
	local ca
	[ -n "$KQ_MOD" ] && [ -d "$KQ_MOD/config/components/crd/bases" ] || { bad "Kueue's module is not in the Go module cache (build.sh downloads it)"; return 1; }
	[ -x "$KUEUE" ] || { bad "no $KUEUE (test/cluster/build.sh builds it)"; return 1; }
	# The CRDs, from the module's own manifests (create: the Workload CRD is too large
	# for client-side apply's last-applied annotation).
	kubectl create -f "$KQ_MOD/config/components/crd/bases/" >"$KQ_DIR/crd.out" 2>&1 && ok || { bad "Kueue's CRDs"; tail -n 5 "$KQ_DIR/crd.out"; return 1; }
	cp_wait 60 kubectl get --raw /apis/kueue.x-k8s.io/v1beta2/resourceflavors || { bad "kueue.x-k8s.io/v1beta2 not served"; return 1; }
	kubectl create namespace "$KQ_NS" >/dev/null
	cp_leaf "$T/cp/pki" kueue-webhook "/CN=$KQ_SVC.$KQ_NS.svc" "subjectAltName=DNS:$KQ_SVC.$KQ_NS.svc" || { bad "Kueue's webhook certificate"; return 1; }
	cp "$T/cp/pki/kueue-webhook.crt" "$KQ_DIR/certs/tls.crt"
	cp "$T/cp/pki/kueue-webhook.key" "$KQ_DIR/certs/tls.key"
	ca=$(base64 -w0 "$T/cp/pki/ca.crt")
	# Its webhook Service, published at the replica's address (webhook.lib's notes).
	wh_service "$KQ_NS" "$KQ_SVC" "$KQ_PORT" || { bad "Kueue's Service"; return 1; }
	# Its webhooks for Jobs and its own kinds, named and pointed as its kustomization does.
	objects "$KQ_MOD/config/components/webhook/manifests.yaml" |
		jq --arg ca "$ca" --arg ns "$KQ_NS" --arg svc "$KQ_SVC" '{apiVersion: "v1", kind: "List", items: [.[]
			| .metadata.name = ("kueue-" + .metadata.name)
			| .webhooks = [.webhooks[] | select(.clientConfig.service.path | test("batch-v1-job|kueue-x-k8s-io"))
				| .clientConfig.service.name = $svc | .clientConfig.service.namespace = $ns | .clientConfig.caBundle = $ca]]}' \
		>"$KQ_DIR/webhooks.json" 2>"$KQ_DIR/webhooks.err"
	kubectl create -f "$KQ_DIR/webhooks.json" >>"$KQ_DIR/webhooks.err" 2>&1 && ok ||
		{ bad "Kueue's webhook configurations"; indent "$KQ_DIR/webhooks.err" | head -n 10; return 1; }
	cat >"$KQ_DIR/config.yaml" <<EOK
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: $KQ_NS
health: {healthProbeBindAddress: "$KQ_HEALTH"}
metrics: {bindAddress: "127.0.0.1:18443"}
webhook: {host: "$CP_WEBHOOK_IP", port: $KQ_PORT, certDir: "$KQ_DIR/certs"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
integrations: {frameworks: ["batch/job"]}
EOK
	# With internalCertManagement off Kueue reads its metrics server's pair from a fixed
	# path, /etc/kueue/metrics/certs (cmd/kueue/main.go), where its Deployment mounts a
	# Secret: the same pair is put there, in a mount namespace of Kueue's own (an overlay
	# of /etc that nothing else sees). VisibilityOnDemand would start an aggregated API
	# server the scenario does not use.
	mkdir -p "$KQ_DIR/etc"
	unshare --mount --propagation private sh -c '
		mount -t tmpfs kueue-etc "$1" && mkdir -p "$1/up/kueue/metrics/certs" "$1/work" &&
		cp "$2/tls.crt" "$2/tls.key" "$1/up/kueue/metrics/certs/" &&
		mount -t overlay overlay -o "lowerdir=/etc,upperdir=$1/up,workdir=$1/work" /etc &&
		exec "$3" --config "$4" --feature-gates=VisibilityOnDemand=false' sh \
		"$KQ_DIR/etc" "$KQ_DIR/certs" "$KUEUE" "$KQ_DIR/config.yaml" >"$KQ_DIR/kueue.log" 2>&1 &
	KQ_PID=$!
	CP_PIDS="$CP_PIDS $KQ_PID"
	if ! CP_WAIT_PID=$KQ_PID cp_wait 120 curl -sf "http://$KQ_HEALTH/readyz"; then
		bad "Kueue never became ready"; tail -n 30 "$KQ_DIR/kueue.log" | indent; return 1
	fi
	echo "cluster: Kueue ready (pid $KQ_PID): $(grep -o '"gitVersion":"[^"]*"' "$KQ_DIR/kueue.log" | head -n 1)"
	ok
}

kueue_down() {
	kubectl delete job --all -n team-kq --wait=false >/dev/null 2>&1
	kubectl delete job --all -n team-research --wait=false >/dev/null 2>&1
	# Kueue removes its finalizers from the Workloads of deleted Jobs: it must still run.
	cp_wait 60 sh -c '[ -z "$(kubectl get workloads.kueue.x-k8s.io -A -o name)" ]' || kubectl delete workloads.kueue.x-k8s.io --all -A --wait=false >/dev/null 2>&1
	kubectl delete localqueues.kueue.x-k8s.io --all -A >/dev/null 2>&1
	kubectl delete clusterqueues.kueue.x-k8s.io,resourceflavors.kueue.x-k8s.io --all >/dev/null 2>&1
	[ -n "${KQ_PID:-}" ] && { kill "$KQ_PID" 2>/dev/null; wait "$KQ_PID" 2>/dev/null; }
	KQ_PID=""
	# With Kueue gone its webhooks (failurePolicy Fail) would refuse every Job: removed.
	kubectl delete mutatingwebhookconfiguration kueue-mutating-webhook-configuration --ignore-not-found >/dev/null
	kubectl delete validatingwebhookconfiguration kueue-validating-webhook-configuration --ignore-not-found >/dev/null
	# KQ_KEEP=DIR keeps Kueue's log, config and the objects printed, for a look after the run.
	[ -z "${KQ_KEEP:-}" ] || cp -r "$KQ_DIR" "$KQ_KEEP"
	clean
}

if kueue_up; then
	upgrade kueue.yaml
	# refusalEvents' auto asks the API server at the upgrade: Kueue's Workloads are
	# served now, so the rendered args (and RBAC, and token) change: the replica restarts.
	wh_restart && ok || bad "the replica restarts with the upgraded Deployment's args"
	has "$WH_DIR/args" "--refusal-events" "refusalEvents auto: on where Kueue's Workloads are served"
	POLICY=$(ls "$WH_DIR"/policy/* | head -n 1)
	ns team-kq
	ns team-research
	# --- print-kueue-config's output, validated by the real CRDs and Kueue's webhooks ---
	"$B" print-kueue-config -c "$POLICY" >"$KQ_DIR/all.yaml" 2>"$KQ_DIR/all.err"
	equals "$?" 0 "print-kueue-config of the replica's policy"
	has "$KQ_DIR/all.err" "pool t4-spot takes at most 1 GPU per pod" "print-kueue-config notes what Kueue cannot be told"
	if kubectl create --dry-run=server --validate=strict -f "$KQ_DIR/all.yaml" >"$KQ_DIR/all.out" 2>&1; then ok
	else bad "the API server (Kueue's CRDs, strict) and Kueue's webhooks accept print-kueue-config's objects"; indent "$KQ_DIR/all.out" | head -n 10; fi
	cq_ns=$(objects "$KQ_DIR/all.yaml" |
		jq -r '.[] | select(.kind == "ClusterQueue") | .spec.namespaceSelector.matchExpressions[0].values | join(",")')
	equals "$cq_ns" team-research "the ClusterQueue over every pool selects h100's one namespace"
	# The team's queue: the two T4 pools, 1 GPU each; h100's queue as printed (team-research
	# only), and the same with its selector opened by hand, as an admin might.
	"$B" print-kueue-config -c "$POLICY" --queue team-kq --pool t4 --pool t4-spot --quota nvidia.com/gpu=1 \
		--quota cpu=8 --quota memory=32Gi --local-queue team-kq >"$KQ_DIR/team.yaml" 2>/dev/null &&
		kubectl create --validate=strict -f "$KQ_DIR/team.yaml" >"$KQ_DIR/team.out" 2>&1 && ok ||
		{ bad "the team's flavors and queues"; indent "$KQ_DIR/team.out" | head -n 10; }
	"$B" print-kueue-config -c "$POLICY" --queue h100 --pool h100 --quota nvidia.com/gpu=8 --quota cpu=32 \
		--quota memory=128Gi --local-queue team-research --local-queue team-kq 2>/dev/null |
		objects - | jq '{apiVersion: "v1", kind: "List", items: [.[] | select(.kind != "ResourceFlavor")]}' >"$KQ_DIR/h100.json"
	jq '{apiVersion: "v1", kind: "List", items: [.items[] | select(.kind == "ClusterQueue" or .metadata.namespace == "team-kq")
		| .metadata.name = "h100-open" | if .kind == "ClusterQueue" then .spec.namespaceSelector = {} else .spec.clusterQueue = "h100-open" end]}' \
		"$KQ_DIR/h100.json" >"$KQ_DIR/h100-open.json"
	kubectl create -f "$KQ_DIR/h100.json" -f "$KQ_DIR/h100-open.json" >"$KQ_DIR/h100.out" 2>&1 && ok ||
		{ bad "h100's queues"; indent "$KQ_DIR/h100.out" | head -n 10; }
	cp_wait 30 sh -c '[ "$(kubectl get clusterqueues.kueue.x-k8s.io -o json | jq "[.items[] | select(.status.conditions[]? | .type == \"Active\" and .status == \"True\")] | length")" -eq 3 ]' &&
		ok || bad "the three ClusterQueues are active"

	# --- a queued GPU Job: suspended, admitted on the cheapest flavor, its pod placed there ---
	job j1 team-kq "$JGPU" >"$T/j1.in"
	created team-kq j1 "a queued 1-GPU Job is created"
	equals "$(jq -r '.spec.suspend' "$T/j1.out")" true "Kueue's webhook suspended the queued Job"
	cp_wait 60 wl_admitted team-kq j1 && ok || bad "j1's Workload is admitted"
	equals "$(wl_flavor team-kq j1)" t4-spot "Kueue assigned j1 the first flavor, t4-spot"
	cp_wait 60 job_has_pod team-kq j1 || bad "j1's pod was not created"
	p=$(job_pod team-kq j1)
	kubectl get pod -n team-kq "$p" -o json >"$T/j1.pod"
	equals "$(jq -r '.spec.nodeSelector["kubernetes.azure.com/agentpool"]' "$T/j1.pod")" gput4spot "j1's pod carries the flavor's node label"
	gpu_tolerated "$T/j1.pod" && ok || bad "j1's pod tolerates the GPU taint"
	jq -e '[.spec.tolerations[] | select(.key == "kubernetes.azure.com/scalesetpriority")] | length == 1' "$T/j1.pod" >/dev/null && ok ||
		bad "j1's pod tolerates the spot taint once (the flavor's, not again by gpu-admission)"
	equals "$(pool_of team-kq "$p")" gput4spot "j1's pod is bound by the scheduler to the t4-spot pool"
	# --- the next flavor in cost order, then the quota: the third Job waits ---
	job j2 team-kq "$JGPU" >"$T/j2.in"
	created team-kq j2 "a second queued GPU Job is created"
	cp_wait 60 wl_admitted team-kq j2 && ok || bad "j2's Workload is admitted"
	equals "$(wl_flavor team-kq j2)" t4 "t4-spot's quota is used: Kueue assigned j2 the next flavor, t4"
	cp_wait 60 job_has_pod team-kq j2 || bad "j2's pod was not created"
	equals "$(pool_of team-kq "$(job_pod team-kq j2)")" gput4 "j2's pod is bound to the t4 pool"
	job j3 team-kq "$JGPU" >"$T/j3.in"
	created team-kq j3 "a third queued GPU Job is created"
	cp_wait 30 sh -c "kubectl get workloads.kueue.x-k8s.io -n team-kq -o json | jq -e '.items[] | select(any(.metadata.ownerReferences[]?; .name == \"j3\")) | .status.conditions[]? | select(.type == \"QuotaReserved\" and .status == \"False\")'" ||
		bad "j3's Workload has no QuotaReserved=False condition"
	sleep 5
	equals "$(wl_cond team-kq j3 Admitted)/$(kubectl get job -n team-kq j3 -o jsonpath='{.spec.suspend}')/$(job_pod team-kq j3)" "/true/" \
		"the quota is spent: j3's Workload is not admitted, the Job stays suspended, no pod"
	wl team-kq j3 | jq -r '.status.conditions[]? | select(.type == "QuotaReserved") | .message' >"$T/j3.msg"
	has "$T/j3.msg" "insufficient" "j3's Workload says why it waits"
	echo "cluster: j3 waits: $(cat "$T/j3.msg")"

	# --- h100's queue as printed: team-research only ---
	job r1 h100 '.spec.template.spec.containers[0].resources.requests["nvidia.com/gpu"] = "8" | .spec.template.spec.containers[0].resources.limits["nvidia.com/gpu"] = "8"' >"$T/r1.in"
	created team-research r1 "team-research's 8-GPU Job is created"
	cp_wait 60 wl_admitted team-research r1 && ok || bad "r1's Workload is admitted"
	equals "$(wl_flavor team-research r1)" h100 "Kueue assigned r1 flavor h100"
	cp_wait 60 job_has_pod team-research r1 || bad "r1's pod was not created"
	equals "$(pool_of team-research "$(job_pod team-research r1)")" gpuh100 "r1's pod is bound to the h100 pool"
	job k1 h100 "$JGPU" >"$T/k1.in"
	created team-kq k1 "team-kq's Job in the h100 queue is created"
	cp_wait 30 sh -c "kubectl get workloads.kueue.x-k8s.io -n team-kq -o json | jq -e '.items[] | select(any(.metadata.ownerReferences[]?; .name == \"k1\")) | .status.conditions[]? | select(.type == \"QuotaReserved\" and .status == \"False\")'" ||
		bad "k1's Workload has no QuotaReserved=False condition"
	wl team-kq k1 | jq -r '.status.conditions[]? | select(.type == "QuotaReserved") | .message' >"$T/k1.msg"
	has "$T/k1.msg" "doesn't match ClusterQueue selector" "the printed h100 queue keeps team-kq out: its Workload says so"

	# --- the selector opened by hand: Kueue admits, gpu-admission refuses the start ---
	w0=$(wh_rejects) a0=$(api_rejects) f0=$(job_patches 403) s0=$(date +%s)
	job x1 h100-open "$JGPU" >"$T/x1.in"
	created team-kq x1 "team-kq's Job in the opened h100 queue is created"
	cp_wait 60 wl_admitted team-kq x1 && ok || bad "x1's Workload is admitted by Kueue"
	equals "$(wl_flavor team-kq x1)" h100 "Kueue assigned x1 flavor h100"
	cp_wait 30 grep -q 'denied the request.*Job team-kq/x1' "$KQ_DIR/kueue.log" && ok || bad "gpu-admission refused Kueue's start of x1"
	grep 'denied the request.*Job team-kq/x1' "$KQ_DIR/kueue.log" | jq -rR 'fromjson? | .error // empty' | head -n 1 >"$T/x1.denied"
	echo "cluster: Kueue's log: $(cat "$T/x1.denied")"
	has "$T/x1.denied" 'namespace "team-kq" may not use GPU pool "h100"' "the refusal is gpu-admission's pool rule"
	sleep 5
	equals "$(kubectl get job -n team-kq x1 -o jsonpath='{.spec.suspend}')/$(job_pod team-kq x1)/$(kubectl get job -n team-kq x1 -o json | jq -r '.spec.template.spec.nodeSelector // {} | length')" \
		"true//0" "x1 stays suspended, unchanged: no pod, no h100 selector"
	x1_wl=$(wl team-kq x1 | jq -r '.metadata.name')
	cp_wait 30 sh -c "kubectl get events -n team-kq --field-selector reason=$EV_REASON,involvedObject.name=$x1_wl -o name | grep -q ." ||
		bad "no $EV_REASON Event on x1's Workload $x1_wl"
	kubectl get events -n team-kq -o json | jq -r '.items[] | select(.involvedObject.name == "x1" or (.involvedObject.name | startswith("job-x1-"))) | "\(.involvedObject.kind) \(.type) \(.reason) x\(.count // 1): \(.message)"' >"$T/x1.events"
	wl team-kq x1 | jq -r '.status.conditions[]? | "\(.type)=\(.status) \(.reason): \(.message)"' >"$T/x1.conds"
	echo "cluster: x1's Workload conditions:"; indent "$T/x1.conds"
	echo "cluster: x1's events:"; indent "$T/x1.events"
	# Kueue itself (upstream's behaviour, NOTES): the Workload admitted, holding h100's
	# quota, no Started event, the refusal in its log. gpu-admission's Events
	# (serve --refusal-events, on by the chart's auto where Kueue's Workloads are
	# served) put it where a Kueue user looks: kubectl describe job, and workload.
	lacks "$T/x1.events" "Started" "Kueue v0.17 records no Started event for the refused start"
	has "$T/x1.conds" "Admitted=True" "Kueue v0.17 leaves x1's Workload Admitted (its quota held)"
	has "$T/x1.events" "Job Warning $EV_REASON x1: " "the refusal is a Warning Event on the Job"
	has "$T/x1.events" "Workload Warning $EV_REASON x1: " "and on its Workload"
	grep "Workload Warning $EV_REASON" "$T/x1.events" >"$T/x1.wlev"
	has "$T/x1.wlev" 'namespace "team-kq" may not use GPU pool "h100"' "the Workload's Event says gpu-admission's message"
	kubectl describe workload -n team-kq "$x1_wl" >"$T/x1.describe" 2>&1
	has "$T/x1.describe" "$EV_REASON" "kubectl describe workload shows it"

	# --- a CPU Job cannot use the queue to reach GPU nodes ---
	job c1 team-kq >"$T/c1.in"
	created team-kq c1 "a queued CPU Job is created"
	cp_wait 60 wl_admitted team-kq c1 && ok || bad "c1's Workload is admitted by Kueue (cpu quota on a GPU flavor)"
	echo "cluster: Kueue assigned the CPU Job flavor $(wl_flavor team-kq c1)"
	cp_wait 30 grep -q 'denied the request.*Job team-kq/c1: pod template spec.template: CPU-only pod aimed at GPU nodes' "$KQ_DIR/kueue.log" && ok ||
		bad "gpu-admission refused Kueue's start of the CPU Job"
	sleep 5
	equals "$(kubectl get job -n team-kq c1 -o jsonpath='{.spec.suspend}')/$(job_pod team-kq c1)" "true/" "the CPU Job stays suspended: no pod on a GPU node"
	kubectl get events -n team-kq --field-selector "reason=$EV_REASON,involvedObject.name=c1" -o json >"$T/c1.events"
	has "$T/c1.events" "CPU-only pod aimed at GPU nodes" "the CPU Job's refused start is an Event on the Job"

	# --- the requests each side made: Kueue's retries back off, no storm ---
	w1=$(wh_rejects) a1=$(api_rejects) f1=$(job_patches 403) s1=$(date +%s)
	sleep 30
	w2=$(wh_rejects) a2=$(api_rejects) f2=$(job_patches 403) s2=$(date +%s)
	echo "cluster: refused starts: webhook /validate rejections $w0 -> $w1 -> $w2, apiserver webhook rejections $a0 -> $a1 -> $a2, Job PATCH 403s $f0 -> $f1 -> $f2 (at +0, +$((s1 - s0)), +$((s2 - s0)) s)"
	[ $((w2 - w0)) -ge 2 ] && ok || bad "both refused starts were judged by the replica ($w0 -> $w2)"
	equals "$((a2 - a0))" "$((w2 - w0))" "kube-apiserver counts every refusal the replica made, and no other"
	# Two Jobs retried with per-item exponential backoff: over 30 s after the first
	# minute, a handful of tries each (a storm would be hundreds).
	[ $((w2 - w1)) -le 10 ] && ok || bad "Kueue's retries back off: $((w2 - w1)) refusals in 30 s"
	# Each retry is refused again with the same message: one Event per object, not one per try.
	kubectl get events -n team-kq --field-selector "reason=$EV_REASON" -o json |
		jq -r '[.items[] | .involvedObject.name] | group_by(.) | map("\(.[0]) \(length)") | .[]' >"$T/ev.count"
	echo "cluster: $EV_REASON Events per object after the retries:"; indent "$T/ev.count"
	equals "$(awk '$2 != 1' "$T/ev.count")" "" "one Event per refused object, whatever Kueue's retries"
	curl -sf --cacert "$WH_DIR/caBundle.pem" --resolve "$WH_HOST:$WH_PORT:$CP_WEBHOOK_IP" "https://$WH_HOST:$WH_PORT/metrics" |
		grep '^gpu_admission_refusal_events_total' >"$T/ev.metrics"
	echo "cluster: $(tr '\n' ' ' <"$T/ev.metrics")"
	has "$T/ev.metrics" 'result="failed"} 0' "no Event failed to publish (RBAC: the chart's ClusterRole)"
	kueue_down
else
	kueue_down
fi
