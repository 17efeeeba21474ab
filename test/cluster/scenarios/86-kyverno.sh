# Sourced by suite.sh (full mode): Kyverno v1.19.1's admission controller
# (build/cluster/bin/kyverno, built from its module by build.sh) beside the webhook, with the
# ClusterPolicy a user would write by hand for the same two guarantees
# (kyverno/clusterpolicy.yaml: GPU pods get sku=gpu:NoSchedule and the accelerator node
# selector; a CPU-only pod tolerating the GPU taint is refused). First both alone, each in a
# namespace the other leaves out, on the same cases (the comparison's counted figures,
# KYVERNO-NOTES in the log); then both on the same pods; then Kyverno stopped.
# Starting, stopping and removing Kyverno: ../kyverno.lib (its NOTES: out of cluster, its
# webhooks, why they outlive it).
# NOTES (upstream behaviour relied on, read in github.com/kyverno/kyverno@v1.19.1 and
# k8s.io/apiserver@v0.34.4):
# - Autogen: a policy with a patchesJson6902 rule gets no rules for pod controllers at all,
#   its validate rule included (pkg/autogen/v1/autogen.go CanAutoGen returns "none"), so a
#   Deployment is judged by its pods only, when its ReplicaSet creates them. The same CPU
#   rule alone in a policy gets its autogen-* rule for pod controllers (checked too).
# - Order and reinvocation (k8s.io/apiserver): mutating webhook configurations are called in
#   the order of their names (pkg/admission/configuration/mutating_webhook_manager.go,
#   sort ByName), so "gpu-admission" before "kyverno-resource-mutating-webhook-cfg". A
#   webhook whose patch changed the object makes every IfNeeded webhook called before it
#   run again in a second round (pkg/admission/plugin/webhook/mutating/dispatcher.go:
#   RequireReinvokingPreviouslyInvokedPlugins, ShouldReinvokeWebhook; pkg/admission/
#   reinvocation.go runs the chain once more), but not the one that changed it last. A
#   rejection at a mutating webhook ends the request before any validating webhook.
# - A pod created with spec.nodeName is never scheduled, and the kubelet admits it on a node
#   whose NoSchedule taint it does not tolerate: its admission checks NoExecute taints only
#   (k8s.io/kubernetes pkg/kubelet/lifecycle/predicate.go).
# KY_KEEP=DIR keeps Kyverno's log.

. "$ROOT/test/cluster/kyverno.lib"
clean
cp_clear_pods
A100=aks-gpua100-40000000-vmss000000

# calls TYPE NAME: kube-apiserver's count of its calls of the webhooks whose names start
# with NAME (TYPE admit: mutating; validating).
calls() {
	kubectl get --raw /metrics | awk -v t="type=\"$1\"" -v n="name=\"$2" \
		'/^apiserver_admission_webhook_request_total\{/ && index($0, t) && index($0, n) { s += $NF } END { print s + 0 }'
}
# decisions DECISION: the replica's /mutate answers so far that were DECISION (mutate, allow).
decisions() {
	curl -sf --cacert "$WH_DIR/caBundle.pem" --resolve "$WH_HOST:$WH_PORT:$CP_WEBHOOK_IP" "https://$WH_HOST:$WH_PORT/metrics" |
		awk -v d="decision=\"$1\"" '/^gpu_admission_requests_total\{endpoint="mutate"/ && index($0, d) { n += $NF } END { print n + 0 }'
}
# sku_tols FILE: how many tolerations of the stored pod are the GPU taint's.
sku_tols() { jq '[.spec.tolerations[]? | select(.key == "sku")] | length' "$1"; }
# unschedulable NS POD: the scheduler said it fits no node.
unschedulable() {
	[ "$(kubectl get pod -n "$1" "$2" -o json | jq -r '.status.conditions[]? | select(.type == "PodScheduled") | .reason')" = Unschedulable ]
}
rss() { awk '/^VmRSS/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }
hwm() { awk '/^VmHWM/ { printf "%d", $2 / 1024 }' "/proc/$1/status" 2>/dev/null; }
# deployment NAME TEMPLATE-JQ: a one-replica Deployment whose pod template is the plain
# container changed by TEMPLATE-JQ (applied to .spec.template).
deployment() {
	jq -n --arg n "$1" '{apiVersion: "apps/v1", kind: "Deployment", metadata: {name: $n},
		spec: {replicas: 1, selector: {matchLabels: {app: $n}}, template: {metadata: {labels: {app: $n}},
			spec: {containers: [{name: "c", image: "registry.example/c:1"}]}}}}' | jq ".spec.template |= ($2)"
}

kyverno_up() {
	ky_crds "$T/kyverno" && ok || { bad "Kyverno's CRDs"; return 1; }
	ky_config team-gadm && ok || { bad "Kyverno's ConfigMap"; return 1; }
	ky_start || { bad "Kyverno is ready"; return 1; }
	echo "cluster: Kyverno ready (pid $KY_PID) in $KY_READY_S s: $(ky_version)"
	ky_policy_create && ok || { bad "the ClusterPolicy is accepted (Kyverno's policy webhook)"; return 1; }
	ky_policy_ready && ok || { bad "the ClusterPolicy is Ready"; return 1; }
	# Its resource webhooks for pods, as kube-apiserver will call them.
	kubectl get mutatingwebhookconfiguration kyverno-resource-mutating-webhook-cfg -o json >"$KY_DIR/mwc.json" 2>/dev/null
	kubectl get validatingwebhookconfiguration kyverno-resource-validating-webhook-cfg -o json >"$KY_DIR/vwc.json" 2>/dev/null
	equals "$(jq -r '[.webhooks[] | select(any(.rules[]; .resources | index("pods"))) | "\(.name) \(.failurePolicy) \(.reinvocationPolicy) \(.sideEffects) \(.clientConfig.url)"] | join(",")' "$KY_DIR/mwc.json")" \
		"mutate.kyverno.svc-fail Fail IfNeeded NoneOnDryRun https://$CP_WEBHOOK_IP:$KY_PORT/mutate/fail" "Kyverno's mutating webhook for pods, as registered"
	equals "$(jq -r '[.webhooks[] | select(any(.rules[]; .resources | index("pods"))) | "\(.name) \(.failurePolicy) \(.matchConditions // [] | length)"] | join(",")' "$KY_DIR/vwc.json")" \
		"validate.kyverno.svc-fail Fail 0" "Kyverno's validating webhook for pods: failurePolicy Fail, no matchConditions"
	# The first pod it mutates: a dry run until the configurations reach the API server.
	ky_mutates() {
		pod ky-probe "$GPU1" | kubectl create --dry-run=server -n team-kyv -o json -f - >"$KY_DIR/probe.json" 2>/dev/null &&
			[ "$(sku_tols "$KY_DIR/probe.json")" = 1 ]
	}
	cp_wait 60 ky_mutates && ok || bad "Kyverno mutates a GPU pod in team-kyv"
}

kyverno_down() {
	local n
	ky_stop
	# Kyverno out of cluster never removes its webhook configurations (kyverno.lib NOTES):
	# they would refuse every pod (failurePolicy Fail).
	ky_unhook && ok "no Kyverno webhook configuration is left" || bad "no Kyverno webhook configuration is left"
	ky_uninstall
	kubectl patch node "$A100" --subresource=status --type=merge \
		-p '{"status": {"capacity": {"nvidia.com/mig-1g.5gb": null}, "allocatable": {"nvidia.com/mig-1g.5gb": null}}}' >/dev/null 2>&1
	[ -z "${KY_KEEP:-}" ] || cp -r "$KY_DIR" "$KY_KEEP"
	clean
}

# --- the comparison: the same cases, gpu-admission alone (team-gadm), Kyverno alone (team-kyv) ---
# compare_ns NS: runs the cases in NS; sets the figures C_* (counts) and P_FB (pools).
compare_ns() {
	local n=$1 i p
	# 1. The guarantee both give: a CPU pod tolerating the GPU taint is refused.
	pod cmp-tol "$SKU_TOL" >"$T/cmp-tol.in"
	create "$n" cmp-tol
	C_TOL=$([ "$RC" = 1 ] && echo 1 || echo 0)
	# 2. Fallback between pools: four interruptible 1-GPU pods, one after the other. Cost
	# order: t4-spot (1 GPU), t4 (2 nodes of 1), then a100.
	P_FB=""
	i=1
	while [ "$i" -le 4 ]; do
		pod "fb-$i" "$GPU1 | .metadata.labels[\"gpu-admission/interruptible\"] = \"true\"" >"$T/fb-$i.in"
		create "$n" "fb-$i"
		P_FB="$P_FB $(pool_of "$n" "fb-$i")"
		i=$((i + 1))
	done
	P_FB=${P_FB# }
	C_SPOT=$(echo "$P_FB" | tr ' ' '\n' | grep -c '^gput4spot$')
	C_BIG=$(echo "$P_FB" | tr ' ' '\n' | grep -cE '^(gpua100|gpuh100)$')
	C_H100=$(echo "$P_FB" | tr ' ' '\n' | grep -c '^gpuh100$')
	clean
	# 3. MIG slices (nvidia.com/mig-1g.5gb, which the a100 node serves here): one pod as
	# written, one that already tolerates the GPU taint. Right: both on the a100 node.
	C_MIG=0 C_MIG_REFUSED=0 C_MIG_PENDING=0
	for p in mig-1 mig-2; do
		jq_mig='.spec.containers[0].resources.limits["nvidia.com/mig-1g.5gb"] = "1"'
		[ "$p" = mig-2 ] && jq_mig="$jq_mig | $SKU_TOL"
		pod "$p" "$jq_mig" >"$T/$p.in"
		create "$n" "$p"
		if [ "$RC" != 0 ]; then C_MIG_REFUSED=$((C_MIG_REFUSED + 1)); cp "$T/$p.err" "$T/$n-$p.err"; continue; fi
		if [ "$(pool_of "$n" "$p")" = gpua100 ]; then C_MIG=$((C_MIG + 1))
		elif cp_wait 30 unschedulable "$n" "$p"; then C_MIG_PENDING=$((C_MIG_PENDING + 1)); fi
	done
	clean
	# 4. A CPU pod aimed at GPU nodes without the toleration: by nodeSelector, by required
	# node affinity, by nodeName. Right: refused. Also counted: those left on a GPU node
	# (nodeName: never scheduled, and the kubelet checks NoExecute taints only) or Pending.
	C_ROUTE=0 C_ON_GPU=0 C_ROUTE_PENDING=0
	pod cmp-sel '.spec.nodeSelector = {"kubernetes.azure.com/accelerator": "nvidia"}' >"$T/cmp-sel.in"
	pod cmp-aff '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms = [{matchExpressions: [{key: "kubernetes.azure.com/agentpool", operator: "In", values: ["gpuh100"]}]}]' >"$T/cmp-aff.in"
	pod cmp-name '.spec.nodeName = "aks-gput4-20000000-vmss000001"' >"$T/cmp-name.in"
	for p in cmp-sel cmp-aff cmp-name; do
		create "$n" "$p"
		if [ "$RC" = 1 ]; then C_ROUTE=$((C_ROUTE + 1)); continue; fi
		case $(kubectl get pod -n "$n" "$p" -o jsonpath='{.spec.nodeName}') in
		aks-gpu*) C_ON_GPU=$((C_ON_GPU + 1)) ;;
		*) cp_wait 30 unschedulable "$n" "$p" && C_ROUTE_PENDING=$((C_ROUTE_PENDING + 1)) ;;
		esac
	done
	clean
	# 5. A Deployment whose CPU template tolerates the GPU taint, at kubectl apply. Right:
	# refused at apply. When admitted: its ReplicaSet's pod creations refused (FailedCreate).
	deployment cmp-deploy "$SKU_TOL" >"$T/cmp-deploy.in"
	if kubectl apply -n "$n" -f "$T/cmp-deploy.in" >"$T/cmp-deploy.out" 2>"$T/$n-deploy.err"; then C_DEPLOY=0; else C_DEPLOY=1; fi
	C_FAILEDCREATE=0
	if [ "$C_DEPLOY" = 0 ]; then
		fc() { kubectl get events -n "$n" --field-selector reason=FailedCreate -o json | jq '[.items[] | select(.involvedObject.kind == "ReplicaSet") | .count // 1] | add // 0'; }
		cp_wait 30 sh -c "[ \$(kubectl get events -n $n --field-selector reason=FailedCreate -o name | wc -l) -gt 0 ]"
		sleep 10
		C_FAILEDCREATE=$(fc)
		kubectl get events -n "$n" --field-selector reason=FailedCreate -o json | jq -r '[.items[].message][0] // ""' >"$T/$n-failedcreate.msg"
		C_DEPLOY_PODS=$(kubectl get pods -n "$n" -l app=cmp-deploy -o name | wc -l)
		# Its ReplicaSet gone first (foreground), so that no retry of it is counted later.
		kubectl delete deployment -n "$n" cmp-deploy --cascade=foreground --timeout 60s >/dev/null 2>&1 ||
			bad "the admitted Deployment and its ReplicaSet are deleted"
	fi
	clean
}

upgrade kyverno.yaml
ns team-gadm
ns team-kyv
ns team-both
if kyverno_up; then
	# The a100 node's MIG slices as an A100 40GB serves them (7 x 1g.5gb per GPU); removed at the end.
	kubectl patch node "$A100" --subresource=status --type=merge \
		-p '{"status": {"capacity": {"nvidia.com/mig-1g.5gb": "56"}, "allocatable": {"nvidia.com/mig-1g.5gb": "56"}}}' >/dev/null &&
		ok || bad "the a100 node serves nvidia.com/mig-1g.5gb"

	compare_ns team-gadm
	G_TOL=$C_TOL G_FB=$P_FB G_SPOT=$C_SPOT G_BIG=$C_BIG G_H100=$C_H100 G_MIG=$C_MIG G_MIG_REFUSED=$C_MIG_REFUSED
	G_MIG_PENDING=$C_MIG_PENDING G_ROUTE=$C_ROUTE G_ON_GPU=$C_ON_GPU G_ROUTE_PENDING=$C_ROUTE_PENDING G_DEPLOY=$C_DEPLOY
	compare_ns team-kyv
	K_TOL=$C_TOL K_FB=$P_FB K_SPOT=$C_SPOT K_BIG=$C_BIG K_H100=$C_H100 K_MIG=$C_MIG K_MIG_REFUSED=$C_MIG_REFUSED
	K_MIG_PENDING=$C_MIG_PENDING K_ROUTE=$C_ROUTE K_ON_GPU=$C_ON_GPU K_ROUTE_PENDING=$C_ROUTE_PENDING K_DEPLOY=$C_DEPLOY
	echo "cluster: KYVERNO-NOTES case | right | gpu-admission | Kyverno (hand-written ClusterPolicy)"
	echo "cluster: KYVERNO-NOTES CPU pod tolerating the GPU taint refused | 1/1 | $G_TOL/1 | $K_TOL/1"
	echo "cluster: KYVERNO-NOTES 4 interruptible 1-GPU pods: pools | gput4spot gput4 gput4 gpua100 | $G_FB | $K_FB"
	echo "cluster: KYVERNO-NOTES   on spot (the cheapest) | 1 | $G_SPOT | $K_SPOT"
	echo "cluster: KYVERNO-NOTES   on an 8-GPU VM (a100, h100) | 1 | $G_BIG | $K_BIG"
	echo "cluster: KYVERNO-NOTES   on h100 (the dearest) | 0 | $G_H100 | $K_H100"
	echo "cluster: KYVERNO-NOTES MIG 1g.5gb pods placed on the a100 node | 2/2 | $G_MIG/2 | $K_MIG/2 (refused $K_MIG_REFUSED, unschedulable $K_MIG_PENDING)"
	echo "cluster: KYVERNO-NOTES CPU pods aimed by nodeSelector/affinity/nodeName refused | 3/3 | $G_ROUTE/3 | $K_ROUTE/3 (on a GPU node $K_ON_GPU, unschedulable $K_ROUTE_PENDING)"
	echo "cluster: KYVERNO-NOTES CPU Deployment tolerating the GPU taint refused at apply | 1/1 | $G_DEPLOY/1 | $K_DEPLOY/1 (its ReplicaSet's pods refused $C_FAILEDCREATE times in about 10 s, ${C_DEPLOY_PODS:-0} pods)"
	# gpu-admission: every case right.
	equals "$G_TOL/$G_FB/$G_MIG/$G_ROUTE/$G_DEPLOY" "1/gput4spot gput4 gput4 gpua100/2/3/1" "gpu-admission alone: refusal, cost order with fallback, MIG, routes, Deployment at apply"
	# Kyverno with the hand-written policy: what it does, deterministically.
	equals "$K_TOL" 1 "Kyverno alone: the CPU pod tolerating the GPU taint is refused"
	has "$T/cmp-tol.err" "validate.kyverno.svc-fail" "Kyverno alone: the refusal is its validating webhook's"
	equals "$K_SPOT" 0 "Kyverno alone: no pod on spot (its policy adds no spot toleration)"
	equals "$K_MIG/$K_MIG_REFUSED/$K_MIG_PENDING" "0/1/1" "Kyverno alone: a MIG pod is left unschedulable, one tolerating the taint is refused as CPU-only"
	has "$T/team-kyv-mig-2.err" "CPU-only pods may not tolerate the GPU taint" "Kyverno alone: the MIG pod's refusal is the CPU rule's"
	equals "$K_ROUTE/$K_ON_GPU/$K_ROUTE_PENDING" "0/1/2" "Kyverno alone: CPU pods aimed by selector or affinity are admitted (Pending), the nodeName one sits on a GPU node"
	equals "$K_DEPLOY" 0 "Kyverno alone: the CPU Deployment with the GPU toleration is admitted at apply (no autogen)"
	[ "$C_FAILEDCREATE" -gt 0 ] && ok || bad "Kyverno alone: its ReplicaSet's pod creations are refused (FailedCreate)"
	has "$T/team-kyv-failedcreate.msg" "CPU-only pods may not tolerate the GPU taint" "Kyverno alone: FailedCreate carries Kyverno's refusal"

	# The same CPU rule as a policy of its own, without the JSON patch: Kyverno's autogen
	# then gives it a rule for Deployments (autogen-cpu-pods-off-gpu-nodes), and the
	# Deployment is refused at apply. Removed after.
	split_pol=$(kubectl create --dry-run=client -o json -f "$KY_POLICY" |
		jq -c '.metadata.name = "gpu-pools-cpu" | .spec.rules |= map(select(.name == "cpu-pods-off-gpu-nodes"))')
	echo "$split_pol" | kubectl create -f - >/dev/null 2>"$T/split.err" && ok || { bad "the CPU rule as a policy of its own"; indent "$T/split.err"; }
	split_refuses() {
		kubectl apply --dry-run=server -n team-kyv -f "$T/cmp-deploy.in" >/dev/null 2>"$T/split-deploy.err" && return 1
		grep -q autogen-cpu-pods-off-gpu-nodes "$T/split-deploy.err"
	}
	if cp_wait 60 split_refuses; then K_DEPLOY_SPLIT=1; else K_DEPLOY_SPLIT=0; indent "$T/split-deploy.err" | head -n 5; fi
	echo "cluster: KYVERNO-NOTES   the same rule as a validate-only policy (autogen on): refused at apply $K_DEPLOY_SPLIT/1"
	equals "$K_DEPLOY_SPLIT" 1 "Kyverno, the CPU rule in a policy of its own: its autogen rule refuses the Deployment at apply"
	kubectl delete clusterpolicy gpu-pools-cpu >/dev/null 2>&1

	# --- both on the same pods (team-both) ---
	ga0=$(calls admit mutate.gpu-admission) ka0=$(calls admit mutate.kyverno) dm0=$(decisions mutate) da0=$(decisions allow)
	pod both-gpu "$GPU1" >"$T/both-gpu.in"
	created team-both both-gpu "both: a 1-GPU pod is created"
	ga1=$(calls admit mutate.gpu-admission) ka1=$(calls admit mutate.kyverno) dm1=$(decisions mutate) da1=$(decisions allow)
	echo "cluster: both: one GPU pod: gpu-admission /mutate called $((ga1 - ga0)) times (mutate $((dm1 - dm0)), allow $((da1 - da0))), Kyverno's $((ka1 - ka0))"
	equals "$((ga1 - ga0))/$((ka1 - ka0))" 2/1 "both: gpu-admission first, Kyverno second, gpu-admission reinvoked once (Kyverno's selector changed the pod)"
	equals "$((dm1 - dm0))/$((da1 - da0))" 1/1 "both: gpu-admission's reinvocation adds nothing"
	equals "$(sku_tols "$T/both-gpu.out")" 1 "both: one GPU toleration, not two"
	equals "$(jq -r '.spec.nodeSelector["kubernetes.azure.com/accelerator"]' "$T/both-gpu.out")" nvidia "both: Kyverno's node selector is kept"
	equals "$(jq -c '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values' "$T/both-gpu.out")" \
		'["gput4","gpua100","gpuh100"]' "both: gpu-admission's pools are kept"
	equals "$(pool_of team-both both-gpu)" gput4 "both: the pod lands on t4, the cheapest pool it may use"
	pod both-tol "$GPU1 | $SKU_TOL" >"$T/both-tol.in"
	created team-both both-tol "both: a GPU pod already tolerating the taint"
	equals "$(sku_tols "$T/both-tol.out")" 1 "both: its toleration is not doubled"
	pod both-spot "$GPU1 | .metadata.labels[\"gpu-admission/interruptible\"] = \"true\"" >"$T/both-spot.in"
	created team-both both-spot "both: an interruptible GPU pod"
	equals "$(sku_tols "$T/both-spot.out")/$(pool_of team-both both-spot)" 1/gput4spot "both: one GPU toleration, on spot (Kyverno's selector agrees with every GPU pool)"
	pod both-dry "$GPU1" >"$T/both-dry.in"
	kubectl create --dry-run=server -n team-both -o json -f "$T/both-dry.in" >"$T/both-dry.out" 2>"$T/both-dry.err" && ok ||
		{ bad "both: a dry run of a GPU pod"; indent "$T/both-dry.err" | head -n 5; }
	equals "$(sku_tols "$T/both-dry.out")/$(jq -r '.spec.nodeSelector["kubernetes.azure.com/accelerator"]' "$T/both-dry.out")" 1/nvidia "both: the dry run returns both mutations"
	# A plain CPU pod: gpu-admission's matchConditions keep it from its webhooks; Kyverno,
	# with none, is called for it (mutating and validating).
	ga0=$(calls admit mutate.gpu-admission) gv0=$(calls validating validate.gpu-admission) ka0=$(calls admit mutate.kyverno) kv0=$(calls validating validate.kyverno)
	pod both-plain >"$T/both-plain.in"
	created team-both both-plain "both: a plain CPU pod is created"
	ga1=$(calls admit mutate.gpu-admission) gv1=$(calls validating validate.gpu-admission) ka1=$(calls admit mutate.kyverno) kv1=$(calls validating validate.kyverno)
	echo "cluster: KYVERNO-NOTES webhook calls for a plain CPU pod: gpu-admission $((ga1 - ga0)) mutating + $((gv1 - gv0)) validating, Kyverno $((ka1 - ka0)) + $((kv1 - kv0))"
	equals "$((ga1 - ga0 + gv1 - gv0))/$((ka1 - ka0))/$((kv1 - kv0))" 0/1/1 "both: a plain CPU pod costs gpu-admission no call, Kyverno two"
	equals "$(jq -c '[.spec.nodeSelector // {}, [.spec.tolerations[]? | select(.key == "sku")]]' "$T/both-plain.out")" '[{},[]]' "both: the plain CPU pod is not changed"
	pod both-cpu "$SKU_TOL" >"$T/both-cpu.in"
	create team-both both-cpu
	equals "$RC" 1 "both: a CPU pod tolerating the GPU taint is refused"
	has "$T/both-cpu.err" "CPU-only pod aimed at GPU nodes" "both: by gpu-admission's mutating webhook, before any validating one"
	lacks "$T/both-cpu.err" "kyverno" "both: Kyverno's validation is never reached"
	# The conflict: gpu-admission tolerates a MIG pod for the a100 pool; Kyverno's rule, which
	# counts nvidia.com/gpu only, then refuses it as a CPU pod tolerating the GPU taint.
	pod both-mig '.spec.containers[0].resources.limits["nvidia.com/mig-1g.5gb"] = "1"' >"$T/both-mig.in"
	create team-both both-mig
	equals "$RC" 1 "both: a MIG pod gpu-admission places is refused by Kyverno's CPU rule"
	has "$T/both-mig.err" "validate.kyverno.svc-fail" "both: the refusal is Kyverno's validating webhook's"
	echo "cluster: both: the MIG pod: $(head -c 300 "$T/both-mig.err" | tr '\n' ' ')"

	# --- memory, beside each other ---
	echo "cluster: KYVERNO-NOTES resident memory (MiB, now/peak): gpu-admission $(rss "$WH_PID")/$(hwm "$WH_PID"), Kyverno $(rss "$KY_PID")/$(hwm "$KY_PID")"

	# --- Kyverno stopped, its webhooks left (out of cluster it never removes them) ---
	ky_stop
	pod ky-out-cpu >"$T/ky-out-cpu.in"
	create team-kyv ky-out-cpu
	equals "$RC" 1 "Kyverno stopped: a plain CPU pod is refused (failurePolicy Fail on every pod)"
	has "$T/ky-out-cpu.err" "failed calling webhook" "Kyverno stopped: kube-apiserver could not call it"
	pod ky-out-gadm >"$T/ky-out-gadm.in"
	create team-gadm ky-out-gadm
	equals "$RC" 0 "Kyverno stopped: a plain CPU pod outside its webhooks is created"
	kyverno_down
	create team-kyv ky-out-cpu
	equals "$RC" 0 "Kyverno's webhooks removed: a plain CPU pod is created"
	clean
else
	kyverno_down
fi
