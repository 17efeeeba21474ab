#!/bin/sh
# The product on a real control plane (run by test/cluster/run, inside a network and
# PID namespace of its own). Every check asserts on what the cluster did: kubectl's
# exit code and message, the object the API server stored, the node the real
# scheduler bound a pod to, the objects the real controllers created.
#   CLUSTER_MODE=full   every scenario; smoke: install, the pod routes, the outage,
#                       the in-process policies without and with the webhook,
#                       uninstall (what a second minor must also show)
# NOTES (upstream behaviour the checks rely on, read in the Kubernetes source):
# - Admission order: the built-in mutating plugins (ServiceAccount, DefaultTolerationSeconds,
#   ...) run before the mutating webhooks and the validating webhooks see the final object
#   (k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go AllOrderedPlugins).
#   DefaultTolerationSeconds adds not-ready/unreachable NoExecute tolerations
#   (plugin/pkg/admission/defaulttolerationseconds), so a stored pod has more than ours.
# - Webhook reinvocation: with reinvocationPolicy IfNeeded a mutating webhook runs again
#   when a later plugin changed the object (k8s.io/apiserver pkg/admission/plugin/webhook/
#   mutating/dispatcher.go); ours must then add nothing.
# - Dry run: --dry-run=server runs the whole admission chain and returns the object that
#   would be stored; our webhooks declare sideEffects None, which dry run requires
#   (k8s.io/apiserver pkg/admission/plugin/webhook/generic/webhook.go ShouldCallHook /
#   dispatcher: "webhook does not support dry run").
# - A CEL matchCondition that does not compile is refused when the configuration is
#   created (k8s.io/kubernetes pkg/apis/admissionregistration/validation
#   validateMatchConditions), so a successful helm install proves ours type-check.
# - failurePolicy Fail: a webhook that cannot be reached refuses the request with
#   "failed calling webhook" (k8s.io/apiserver pkg/admission/plugin/webhook/errors).
set -u
ROOT=$(pwd)
BIN=${BIN:-bin/gpu-admission}
B=$ROOT/$BIN
MODE=${CLUSTER_MODE:-full}
. "$ROOT/test/cluster/cluster.lib"
. "$ROOT/test/cluster/nodes.sh"
. "$ROOT/test/cluster/webhook.lib"
. "$ROOT/test/cluster/golden.lib"
PATH=$CP_BIN:${HELM_DIR:?HELM_DIR: run through test/cluster/run}:$PATH
export PATH
. "$ROOT/test/check.lib"
T=$(mktemp -d)
cleanup() { cp_down; rm -rf "$T"; }
trap cleanup EXIT
trap 'exit 1' INT TERM


REL=gpu-admission
RNS=gpu-admission
CHART=$ROOT/charts/gpu-admission

# pod NAME JQ: a Pod manifest (JSON), the plain one changed by the jq expression JQ.
pod() {
	jq -n --arg n "$1" '{apiVersion: "v1", kind: "Pod", metadata: {name: $n},
		spec: {containers: [{name: "c", image: "registry.example/c:1"}]}}' | jq "${2:-.}"
}
GPU1='.spec.containers[0].resources.limits["nvidia.com/gpu"] = "1"'
SKU_TOL='.spec.tolerations = [{key: "sku", operator: "Equal", value: "gpu", effect: "NoSchedule"}]'

# create NS NAME: kubectl create of $T/NAME.in; sets RC, and $T/NAME.out/.err.
# (Not a pipeline: RC must be set in this shell.)
create() {
	kubectl create -n "$1" -o json -f "$T/$2.in" >"$T/$2.out" 2>"$T/$2.err"
	RC=$?
}

# created NS NAME DESCRIPTION: create, which must succeed; a refusal shows its message
# (the API server's or a webhook's), the only clue a CI log keeps.
created() {
	create "$1" "$2"
	if [ "$RC" = 0 ]; then ok; else bad "$3: kubectl create exited $RC"; indent "$T/$2.err" | tail -n 5; fi
}

# node_of NS POD: the node the scheduler bound the pod to (waits up to 30 s).
node_of() {
	cp_wait 30 sh -c "[ -n \"\$(kubectl get pod -n $1 $2 -o jsonpath='{.spec.nodeName}')\" ]"
	kubectl get pod -n "$1" "$2" -o jsonpath='{.spec.nodeName}'
}

# pool_of NS POD: the agent pool of that node.
pool_of() {
	local n
	n=$(node_of "$1" "$2")
	[ -n "$n" ] || { echo "(unscheduled)"; return; }
	kubectl get node "$n" -o jsonpath='{.metadata.labels.kubernetes\.azure\.com/agentpool}'
}

# gpu_tolerated FILE: the stored pod (JSON) tolerates sku=gpu:NoSchedule.
gpu_tolerated() {
	jq -e '[.spec.tolerations[]? | select(.key == "sku" and .value == "gpu" and .effect == "NoSchedule")] | length == 1' "$1" >/dev/null
}

# After 40-policy-edit.sh's kubectl edit, upgrades must take the field back.
HELM_FORCE=""
# upgrade VALUES: helm upgrade to the chart's defaults plus VALUES, and the
# replica's reload of the policy (the kubelet's sync of the ConfigMap volume).
upgrade() {
	if helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reset-values -f "$ROOT/test/cluster/values/image.yaml" -f "$ROOT/test/cluster/values/$1" >"$T/upgrade.out" 2>&1; then ok; else
		bad "helm upgrade to $1"; cat "$T/upgrade.out"; return 1
	fi
	wh_reload policy && ok || bad "the replica reloaded the policy of $1"
}

# clean: no pod left in the test's namespaces, so the next scenario's pods find the
# nodes free (workloads first, or their controllers make new pods; force, as no kubelet
# confirms a bound pod's deletion).
clean() {
	local n
	for n in $(kubectl get namespaces -o name | sed 's|namespace/||' | grep -E '^(team-|training-)'); do
		kubectl delete deployment,replicaset,daemonset,statefulset,job,cronjob --all -n "$n" --wait=false >/dev/null 2>&1
		kubectl delete trainingjob --all -n "$n" --wait=false >/dev/null 2>&1
	done
	cp_wait 60 sh -c 'p=$(kubectl get pods -A -o json | jq -r ".items[] | select(.metadata.namespace | test(\"^(team-|training-)\")) | \"\(.metadata.namespace) \(.metadata.name)\"");
		[ -z "$p" ] && exit 0; echo "$p" | while read -r ns name; do kubectl delete pod -n "$ns" "$name" --force --grace-period=0 >/dev/null 2>&1; done; exit 1' ||
		bad "the scenario's pods could not be removed"
}

# ns NAME [LABEL=VALUE]: a namespace, ready for pods. The ServiceAccount admission
# plugin refuses a pod until the namespace has its "default" ServiceAccount, and looks
# for it for one to two seconds only (ten tries, plugin/pkg/admission/serviceaccount/admission.go
# getServiceAccount). That account is the controller manager's work (serviceaccounts
# controller), and after 70-dra.sh restarts kube-apiserver twice its informers relist
# with a backoff of up to a minute (client-go tools/cache/reflector.go). The likeliest
# cause of the one refusal of 72-fractions.sh's first pod in CI (its message was not
# kept); on a loaded machine 65-admission-policies.sh's team-both waited 3 to 4 s too.
# A user's cluster does the same; `kubectl create namespace` does not wait either.
ns() {
	local t0 dt
	# Made once per namespace (golden.lib calls ns for each of its 305 cases, twice); no
	# scenario deletes a namespace or its account.
	case " $NS_READY " in
	*" $1 "*) ;;
	*)
		kubectl create namespace "$1" >/dev/null 2>&1
		t0=$(date +%s)
		cp_wait 90 kubectl get serviceaccount default -n "$1" ||
			bad "namespace $1 has no default ServiceAccount after 90 s"
		# Figures for the log: how long the controller manager kept a namespace unusable,
		# when that is longer than kubectl itself takes on a loaded machine (2 to 4 s).
		dt=$(($(date +%s) - t0))
		[ "$dt" -lt "$NS_SLOW_S" ] || echo "cluster: namespace $1: its default ServiceAccount came after $dt s"
		NS_READY="$NS_READY $1" ;;
	esac
	[ -z "${2:-}" ] || kubectl label namespace "$1" "$2" --overwrite >/dev/null
}
NS_READY=""
NS_SLOW_S=10 # a wait logged from this long on

# --- the control plane --------------------------------------------------------------
# MutatingAdmissionPolicy (65-admission-policies.sh): beta and off by default on 1.34
# and 1.35, its v1beta1 API served only when asked; GA and on from 1.36
# (k8s.io/apiserver pkg/features/kube_features.go).
case $CP_MINOR in
1.3[45]) CP_APISERVER_FLAGS="--feature-gates=MutatingAdmissionPolicy=true --runtime-config=admissionregistration.k8s.io/v1beta1=true" ;;
esac
cp_netns || { bad "network namespace"; finish; }
t0=$(date +%s)
if ! cp_up "$T/cp"; then bad "control plane $CP_MINOR did not start"; finish; fi
echo "cluster: Kubernetes $(kubectl version -o json | jq -r .serverVersion.gitVersion) up in $(( $(date +%s) - t0 )) s"
cp_nodes || { bad "fake AKS nodes"; finish; }
equals "$(kubectl get nodes --no-headers | grep -c ' Ready ')" 6 "fake nodes Ready"

# --- install: helm install with the default values -----------------------------------
install_default() {
	if helm install "$REL" "$CHART" -n "$RNS" --create-namespace -f "$ROOT/test/cluster/values/image.yaml" >"$T/install.out" 2>&1; then ok; else
		bad "helm install (default values)"; cat "$T/install.out"; finish
	fi
	# The configurations the API server accepted: every generated matchCondition compiled.
	n=$(kubectl get validatingwebhookconfiguration "$REL" -o json | jq '[.webhooks[].matchConditions // [] | length] | add')
	[ "$n" -gt 0 ] && ok || bad "the validating configuration kept no matchConditions ($n)"
	wh_up "$RNS" "$REL" "$T/wh" || { bad "webhook replica"; finish; }
	ok
}

# --- pods, default policy --------------------------------------------------------------
pods_default() {
	ns team-a
	pod gpu1 "$GPU1" >"$T/gpu1.in"
	create team-a gpu1
	equals "$RC" 0 "a 1-GPU pod is created"
	gpu_tolerated "$T/gpu1.out" && ok || bad "the stored GPU pod tolerates sku=gpu:NoSchedule"
	equals "$(jq -r '.spec.nodeSelector["kubernetes.azure.com/accelerator"]' "$T/gpu1.out")" nvidia "the stored GPU pod selects GPU nodes"
	# DefaultTolerationSeconds ran before us: its tolerations are kept beside ours.
	jq -e '[.spec.tolerations[] | select(.key == "node.kubernetes.io/not-ready")] | length == 1' "$T/gpu1.out" >/dev/null && ok ||
		bad "the built-in not-ready toleration is kept"
	case $(pool_of team-a gpu1) in gput4|gpua100|gpuh100) ok ;; *) bad "the GPU pod is bound to a GPU node (got $(pool_of team-a gpu1))" ;; esac

	pod cpu-tol "$SKU_TOL" >"$T/cpu-tol.in"
	create team-a cpu-tol
	equals "$RC" 1 "a CPU pod tolerating the GPU taint is refused"
	has "$T/cpu-tol.err" "CPU-only pod aimed at GPU nodes" "refusal, toleration route"
	has "$T/cpu-tol.err" "remove the toleration, or request a GPU" "refusal says how to fix it"

	pod cpu-sel '.spec.nodeSelector = {"kubernetes.azure.com/accelerator": "nvidia"}' >"$T/cpu-sel.in"
	create team-a cpu-sel
	equals "$RC" 1 "a CPU pod selecting GPU nodes is refused"
	has "$T/cpu-sel.err" "CPU-only pod aimed at GPU nodes" "refusal, nodeSelector route"

	pod cpu-aff '.spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms = [{matchExpressions: [{key: "kubernetes.azure.com/accelerator", operator: "In", values: ["nvidia"]}]}]' >"$T/cpu-aff.in"
	create team-a cpu-aff
	equals "$RC" 1 "a CPU pod with GPU node affinity is refused"
	has "$T/cpu-aff.err" "CPU-only pod aimed at GPU nodes" "refusal, affinity route"

	pod cpu-plain >"$T/cpu-plain.in"
	create team-a cpu-plain
	equals "$RC" 0 "a plain CPU pod is created"
	equals "$(jq -c '.spec.nodeSelector // {}' "$T/cpu-plain.out")" '{}' "a plain CPU pod is not changed"
	equals "$(pool_of team-a cpu-plain)" system "a plain CPU pod lands on the CPU pool (the GPU taint repels it)"
	pods_default_dra
}

# A DRA GPU pod on the default install (issue "First contact that holds", item 5): where
# the API server serves resource.k8s.io/v1 (1.34 and later), claimLookups.enabled auto
# turns the lookups on with no value set, and a pod whose claim asks for a GPU
# DeviceClass gets the GPU toleration without writing one. Dry runs until the replica's
# caches have synced (until then the claim is unknown, and the pod unchanged).
pods_default_dra() {
	if ! kubectl api-versions | grep -qx resource.k8s.io/v1; then
		if grep -qx -- --claim-lookups "$T/wh/args"; then bad "auto: claim lookups on, but resource.k8s.io/v1 is not served"; else ok; fi
		return
	fi
	grep -qx -- --claim-lookups "$T/wh/args" && ok ||
		bad "default install on an API server serving resource.k8s.io/v1: serve --claim-lookups (claimLookups.enabled auto)"
	kubectl create -n team-a -f - >/dev/null <<EOF2 || bad "the ResourceClaimTemplate gpu-default"
{"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "gpu-default"},
 "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 1}}]}}}}
EOF2
	pod dra-default '.spec.resourceClaims = [{name: "gpu", resourceClaimTemplateName: "gpu-default"}]
		| .spec.containers[0].resources.claims = [{name: "gpu"}]' >"$T/dra-default.in"
	dra_default_placed() {
		kubectl create --dry-run=server -n team-a -o json -f "$T/dra-default.in" >"$T/dra-default.out" 2>"$T/dra-default.err" &&
			gpu_tolerated "$T/dra-default.out"
	}
	cp_wait 60 dra_default_placed && ok ||
		{ bad "default install: a DRA GPU pod's claim is looked up and counts (the GPU toleration)"; indent "$T/dra-default.err" | tail -n 3; }
	lacks "$T/dra-default.err" "not looked up" "default install: no warning that claims were not looked up"
	kubectl delete resourceclaimtemplate gpu-default -n team-a >/dev/null 2>&1
}

# --- the outage: failurePolicy Fail, the replica stopped --------------------------------
outage() {
	wh_stop
	ns team-outage
	pod out-cpu >"$T/out-cpu.in"
	create team-outage out-cpu
	equals "$RC" 0 "outage: a CPU-only pod is still created (matchConditions keep it from the webhook)"
	pod out-gpu "$GPU1" >"$T/out-gpu.in"
	create team-outage out-gpu
	equals "$RC" 1 "outage: a GPU pod is refused (failurePolicy Fail)"
	has "$T/out-gpu.err" "failed calling webhook" "outage: the API server could not call the webhook"
	pod out-tol "$SKU_TOL" >"$T/out-tol.in"
	create team-outage out-tol
	equals "$RC" 1 "outage: a CPU pod tolerating the GPU taint is refused"
	wh_start || bad "webhook restart"
	pod out-gpu2 "$GPU1" >"$T/out-gpu2.in"
	create team-outage out-gpu2
	equals "$RC" 0 "restarted: a GPU pod is created again"
	gpu_tolerated "$T/out-gpu2.out" && ok || bad "restarted: the GPU pod is mutated"
}

# --- uninstall: nothing left behind -----------------------------------------------------
UNINSTALLS=0
uninstall() {
	wh_stop
	if helm uninstall "$REL" -n "$RNS" >"$T/uninstall.out" 2>&1; then ok; else bad "helm uninstall"; cat "$T/uninstall.out"; fi
	# The test's own EndpointSlice is not the chart's: remove it before counting.
	kubectl delete endpointslice -n "$RNS" "$REL-test" --ignore-not-found >/dev/null
	cp_wait 30 sh -c ". $ROOT/test/cluster/nodes.sh; cp_reap $RNS; [ -z \"\$(kubectl get all,configmap,secret,serviceaccount,role,rolebinding,poddisruptionbudget,networkpolicy -n $RNS -l app.kubernetes.io/instance=$REL -o name)\" ]" && ok ||
		bad "uninstall left: $(kubectl get all,configmap,secret,serviceaccount,role,rolebinding,pdb,networkpolicy -n $RNS -l app.kubernetes.io/instance=$REL -o name | tr '\n' ' ')"
	equals "$(kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration,clusterrole,clusterrolebinding -l app.kubernetes.io/instance=$REL -o name | wc -l)" 0 \
		"uninstall left no cluster-scoped object"
	UNINSTALLS=$((UNINSTALLS + 1))
	pod "after-gpu-$UNINSTALLS" "$GPU1" >"$T/after-gpu-$UNINSTALLS.in"
	create team-a "after-gpu-$UNINSTALLS"
	equals "$RC" 0 "after uninstall a GPU pod is created (no webhook)"
	jq -e '.spec.nodeSelector == null' "$T/after-gpu-$UNINSTALLS.out" >/dev/null && ok || bad "after uninstall nothing mutates"
}

# --- every generated matchCondition accepted by this API server ---------------------------
# print-match-conditions for each entry and each policy of test/matchcond/cases/
# (and the default), in a ValidatingWebhookConfiguration created with
# --dry-run=server: the API server compiles every expression when it validates the
# configuration (validateMatchConditions), so a refusal names the one that does not.
matchconds_accepted() {
	for pol in default "$ROOT"/test/matchcond/cases/*/policy.yaml; do
		cfg=""
		[ "$pol" = default ] || cfg="--config $pol"
		for f in pods workloads custom; do
			# shellcheck disable=SC2086
			"$B" print-match-conditions $cfg --for "$f" -o json >"$T/mc.json" 2>/dev/null || { bad "print-match-conditions $pol --for $f"; continue; }
			jq --arg f "$f" '{apiVersion: "admissionregistration.k8s.io/v1", kind: "ValidatingWebhookConfiguration",
				metadata: {name: "mc-check"}, webhooks: [{name: "check.gpu-admission.azure.io",
				admissionReviewVersions: ["v1"], sideEffects: "None", failurePolicy: "Fail",
				clientConfig: {service: {name: "x", namespace: "default", path: "/validate"}},
				rules: [{operations: ["CREATE", "UPDATE"], apiGroups: (if $f == "pods" then [""] elif $f == "workloads" then ["apps", "batch"] else ["batch.example.com"] end),
					apiVersions: ["*"], resources: (if $f == "pods" then ["pods"] elif $f == "workloads" then ["deployments", "jobs"] else ["trainingjobs"] end)}],
				matchConditions: .matchConditions}]}' "$T/mc.json" |
				kubectl create --dry-run=server -f - >"$T/mc.out" 2>&1
			if [ $? -eq 0 ]; then ok; else bad "the API server refuses the matchConditions of $(basename "$pol") --for $f"; head -n 5 "$T/mc.out"; fi
		done
	done
}

matchconds_accepted
install_default
pods_default
outage
if [ "$MODE" = smoke ]; then
	# The in-process policies' own proof on a second minor: the whole scenario, the
	# differential over the golden cases included.
	AP_SMOKE=1
	. "$ROOT/test/cluster/scenarios/65-admission-policies.sh"
fi
if [ "$MODE" = full ]; then
	# CLUSTER_SCENARIOS: a glob to run some of them only (e.g. "60-*" while editing one).
	for f in "$ROOT"/test/cluster/scenarios/${CLUSTER_SCENARIOS:-*}.sh; do
		[ -f "$f" ] || continue
		. "$f"
	done
fi
uninstall

# --- certs.mode=secret: the pair `gpu-admission certs` writes, rotated under load ------
secret_mode() {
	c=$T/certs
	"$B" certs --service "$REL" --namespace "$RNS" --out "$c" >/dev/null || { bad "certs"; return; }
	kubectl create secret tls "$REL-tls" -n "$RNS" --cert "$c/tls.crt" --key "$c/tls.key" >/dev/null || bad "the TLS Secret"
	if helm install "$REL" "$CHART" -n "$RNS" -f "$ROOT/test/cluster/values/image.yaml" -f "$ROOT/test/cluster/values/three-pools.yaml" \
		--set certs.mode=secret --set "certs.secret.caBundle=$(cat "$c/caBundle")" >"$T/install2.out" 2>&1; then ok; else
		bad "helm install (certs.mode=secret, three pools)"; cat "$T/install2.out"; return
	fi
	WH_DIR=$T/wh2
	wh_up "$RNS" "$REL" "$T/wh2" || { bad "webhook replica (secret mode)"; return; }
	serial0=$(echo | openssl s_client -connect "$CP_WEBHOOK_IP:$WH_PORT" -servername "$WH_HOST" 2>/dev/null | openssl x509 -noout -serial)
	# Pods created while the serving certificate is renewed (same CA: the caBundle
	# stays): none may fail.
	ns team-rot
	(
		i=0
		while [ "$i" -lt 40 ]; do
			pod "rot-$i" "$GPU1" | kubectl create -n team-rot -f - >/dev/null 2>>"$T/rot.err" || echo "rot-$i" >>"$T/rot.failed"
			i=$((i + 1))
		done
	) &
	loader=$!
	sleep 1
	"$B" certs --service "$REL" --namespace "$RNS" --out "$T/certs2" --ca-cert "$c/ca.crt" --ca-key "$c/ca.key" >/dev/null || bad "certs (renewal)"
	kubectl create secret tls "$REL-tls" -n "$RNS" --cert "$T/certs2/tls.crt" --key "$T/certs2/tls.key" --dry-run=client -o yaml |
		kubectl replace -f - >/dev/null || bad "the renewed TLS Secret"
	wh_reload certificate && ok || bad "the replica reloaded the renewed certificate"
	wait "$loader"
	equals "$(cat "$T/rot.failed" 2>/dev/null | wc -l)" 0 "no pod creation failed while the certificate was renewed"
	[ -s "$T/rot.err" ] && indent "$T/rot.err" | head -n 5
	serial1=$(echo | openssl s_client -connect "$CP_WEBHOOK_IP:$WH_PORT" -servername "$WH_HOST" 2>/dev/null | openssl x509 -noout -serial)
	[ -n "$serial1" ] && [ "$serial1" != "$serial0" ] && ok || bad "the replica serves the renewed certificate ($serial0 -> $serial1)"
	equals "$(kubectl get pods -n team-rot -o json | jq '[.items[] | select(.spec.nodeSelector["kubernetes.azure.com/agentpool"] == "gput4")] | length')" 40 \
		"every pod created during the renewal was mutated"
	uninstall
}
[ "$MODE" = full ] && secret_mode
finish
