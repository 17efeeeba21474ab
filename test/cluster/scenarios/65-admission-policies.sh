# Sourced by suite.sh (full mode): the in-process admission policies
# (`gpu-admission print-admission-policies`) on the real API server.
# Upstream (k8s.io/apiserver pkg/features/kube_features.go, MutatingAdmissionPolicy):
# alpha in 1.32, beta in 1.34 (default off), GA in 1.36 (default on); the API
# k8s.io/api admissionregistration/v1beta1 is served on 1.34 only with
# --runtime-config admissionregistration.k8s.io/v1beta1=true (suite.sh passes it and
# the feature gate through CP_APISERVER_FLAGS). ValidatingAdmissionPolicy is v1 since
# 1.30. Variables are evaluated lazily and again for each mutation, on the object the
# previous one left (k8s.io/apiserver pkg/admission/plugin/policy/mutating).
# (a) the differential test: every golden case 60-dryrun-golden.sh sends, through
#     `kubectl create --dry-run=server` with ONLY the policies installed (the webhook
#     configurations removed), under the case's policy: the verdict, and for an admitted
#     Pod the stored tolerations, nodeSelector and affinity, must be what `review`
#     predicts, except for the cases test/cluster/admpolicy-differences.txt lists, each
#     with what CEL does not do; the test checks the differences are exactly those.
# (b) no webhook process: the README's logshipper Deployment is refused at apply, and a
#     1-GPU pod is created with the toleration and bound to a GPU node; a CPU pod
#     given the GPU toleration by an UPDATE is refused.
# (c) the policies and the webhook together: a GPU pod gets one GPU toleration and one
#     selector, the webhook patches nothing the policy did (the policy runs first:
#     k8s.io/kubernetes pkg/kubeapiserver/options/plugins.go AllOrderedPlugins,
#     MutatingAdmissionPolicy before MutatingAdmissionWebhook), and a pod already
#     placed as the webhook places it gets nothing from the policy.
# (d) the chart's policies-only install (webhook.enabled=false), by helm install with
#     no webhook configuration and no webhook process: only policies and bindings are
#     created, and (b)'s logshipper and 1-GPU pod hold.
AP=$T/admpolicy
mkdir -p "$AP"
AP_SELECTOR=app.kubernetes.io/component=admission-policy

# ap_install CONFIG|default: the policies of a policy file (or the default), replacing any.
ap_install() {
	local cfg=""
	[ "$1" = default ] || cfg="--config $1"
	# shellcheck disable=SC2086
	"$B" print-admission-policies $cfg --kubernetes-version "$CP_MINOR" -o json >"$AP/policies.json" 2>"$AP/print.err" || return 1
	kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy,mutatingadmissionpolicybinding,mutatingadmissionpolicy \
		-l "$AP_SELECTOR" --ignore-not-found >/dev/null 2>&1
	kubectl create -f "$AP/policies.json" >"$AP/apply.out" 2>&1
}

# ap_webhooks_off / ap_webhooks_on: the chart's webhook configurations removed, and put back as they were.
ap_webhooks_off() {
	kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration -l "app.kubernetes.io/instance=$REL" -o json |
		jq '.items |= map(del(.metadata.uid, .metadata.resourceVersion, .metadata.creationTimestamp,
			.metadata.managedFields, .metadata.generation))' >"$AP/webhooks.json"
	kubectl delete -f "$AP/webhooks.json" >/dev/null
}
ap_webhooks_on() {
	kubectl create -f "$AP/webhooks.json" >/dev/null
	# Now kubectl's too (its field manager): later upgrades take the fields back (as 40-policy-edit.sh).
	HELM_FORCE=--force-conflicts
}

# ap_case CASE: one golden case, as 60-dryrun-golden.sh sends it; appends to $AP/diff.got
# "CASE<TAB>verdict|placement" when the API server's answer is not review's.
ap_case() {
	local c=$1 want got rc
	golden_prepare "$c" "$AP"
	golden_predict "$c" "$AP"
	want=$?
	[ "$GOLDEN_KIND" = Pod ] && [ "$want" -eq 0 ] && ap_want_placement
	# The first case after a policy change waits for the API server to load the new
	# policies: until it answers as predicted, placement included (a v1.37 run compared a
	# case allowed by the old and the new policy alike, placed by the old one), at most
	# 20 s; what still differs then is a difference.
	rc=0
	if [ -n "${AP_FRESH:-}" ]; then
		AP_FRESH=""
		cp_wait 20 ap_try "$want"
	fi
	golden_create "$AP" || rc=1
	got=$rc
	# Refused by the API server itself. The webhook's mutating call comes before the
	# object's validation, the policies' validation after it, so a pod the webhook
	# refuses (an invalid GPU count) may be refused by validation here: refused either way.
	if [ "$got" -ne 0 ] && ! grep -q 'AdmissionPolicy' "$AP/real.err"; then
		if grep -qx "$c" "$AP/invalid.want" || [ "$want" -ne 1 ]; then
			printf '%s\t%s\n' "$c" "$(tr '\n' ' ' <"$AP/real.err" | cut -c1-200)" >>"$AP/invalid.got"
			return
		fi
	fi
	if [ "$want" -gt 1 ]; then
		bad "admission policies, golden $c: review could not predict it (exit $want)"; return
	fi
	if [ "$got" -ne "$want" ]; then
		printf '%s\tverdict\n' "$c" >>"$AP/diff.got"
		printf '%s: the policies %s it, review predicts %s: %s\n' "$c" "$( [ "$got" = 0 ] && echo admit || echo refuse)" \
			"$( [ "$want" = 0 ] && echo admitted || echo refused)" "$(tr '\n' ' ' <"$AP/real.err" | cut -c1-200)" >>"$AP/diff.why"
		return
	fi
	[ "$GOLDEN_KIND" = Pod ] && [ "$got" -eq 0 ] || { AP_SAME=$((AP_SAME + 1)); return; }
	ap_got_placement
	if cmp -s "$AP/want.json" "$AP/got.json"; then
		AP_SAME=$((AP_SAME + 1))
	else
		printf '%s\tplacement\n' "$c" >>"$AP/diff.got"
		printf '%s: placed otherwise: %s\n' "$c" "$(diff "$AP/want.json" "$AP/got.json" | grep '^[<>]' | tr '\n' ' ' | cut -c1-300)" >>"$AP/diff.why"
	fi
}

# (a) The differential test.
admpolicy_golden() {
	local key c last="" skip="" cfgfile t0
	t0=$(date +%s)
	: >"$AP/diff.got"; : >"$AP/diff.why"; : >"$AP/invalid.got"
	grep -av '^#' "$ROOT/test/cluster/golden-invalid.txt" | cut -f1 | LC_ALL=C sort >"$AP/invalid.want"
	AP_SAME=0
	golden_cases "$AP/cases"
	golden_crds "$AP/cases"   # nothing when 60-dryrun-golden.sh ran
	while read -r key c; do
		if [ "$key" != "$last" ]; then
			last=$key
			skip=""
			cfgfile=default
			[ "$key" = default ] || cfgfile=$GOLDEN/$c/config.yaml
			if ap_install "$cfgfile"; then AP_FRESH=1; else
				skip=1
				bad "admission policies: the policies of $c were not created"
				indent "$AP/print.err" "$AP/apply.out" | head -n 8
			fi
		fi
		[ -z "$skip" ] || continue
		ap_case "$c"
	done <"$AP/cases"
	LC_ALL=C sort "$AP/diff.got" >"$AP/diff.sorted"
	grep -av '^#' "$ROOT/test/cluster/admpolicy-differences.txt" | cut -f1,2 | LC_ALL=C sort >"$AP/diff.want"
	if cmp -s "$AP/diff.want" "$AP/diff.sorted"; then ok; else
		bad "admission policies: the golden cases where the policies differ from review are not test/cluster/admpolicy-differences.txt's (< listed, > found)"
		diff "$AP/diff.want" "$AP/diff.sorted" | indent | head -n 60
		diff "$AP/diff.want" "$AP/diff.sorted" | sed -n 's/^> \([^	]*\).*/\1:/p' >"$AP/diff.new"
		grep -F -f "$AP/diff.new" "$AP/diff.why" | indent | head -n 60
	fi
	cut -f1 "$AP/invalid.got" | LC_ALL=C sort >"$AP/invalid.sorted"
	if cmp -s "$AP/invalid.want" "$AP/invalid.sorted"; then ok; else
		bad "admission policies: the cases the API server refuses itself are not golden-invalid.txt's"
		diff "$AP/invalid.want" "$AP/invalid.sorted" | indent | head -n 20
		LC_ALL=C tr -cd '\11\12\40-\176' <"$AP/invalid.got" | indent | head -n 50
	fi
	echo "cluster: admission policies on the golden cases: $AP_SAME as review predicts, $(wc -l <"$AP/diff.sorted") listed differences, $(wc -l <"$AP/invalid.sorted") refused as invalid (of $(wc -l <"$AP/cases") sent) in $(( $(date +%s) - t0 )) s"
}

# (b) No webhook process: the guarantees from the policies alone.
admpolicy_no_webhook() {
	ap_install default || { bad "admission policies: install (default policy)"; return; }
	wh_stop
	ns observability
	ns team-ap
	cp_wait 20 sh -c "! kubectl apply --dry-run=server -f '$ROOT/test/readme/logshipper.yaml' >/dev/null 2>&1"
	kubectl apply -f "$ROOT/test/readme/logshipper.yaml" >"$AP/logshipper.out" 2>"$AP/logshipper.err"
	equals "$?" 1 "no webhook: the README's logshipper Deployment is refused at apply"
	has "$AP/logshipper.err" "ValidatingAdmissionPolicy 'gpu-admission-workloads'" "no webhook: refused by the in-process policy"
	has "$AP/logshipper.err" "Deployment observability/logshipper: pod template spec.template: CPU-only pod aimed at GPU nodes: it tolerates the GPU taint sku=gpu:NoSchedule (spec.tolerations[0])" \
		"no webhook: the webhook's words"
	pod ap-gpu "$GPU1" >"$T/ap-gpu.in"
	created team-ap ap-gpu "no webhook: a 1-GPU pod is created"
	gpu_tolerated "$T/ap-gpu.out" && ok || bad "no webhook: the GPU pod got the GPU toleration from the policy"
	case $(pool_of team-ap ap-gpu) in gput4|gput4spot|gpua100|gpuh100) ok ;; *) bad "no webhook: the GPU pod is bound to a GPU node (got $(pool_of team-ap ap-gpu))" ;; esac
	pod ap-cpu "$SKU_TOL" >"$T/ap-cpu.in"
	create team-ap ap-cpu
	equals "$RC" 1 "no webhook: a CPU pod tolerating the GPU taint is refused"
	has "$T/ap-cpu.err" "CPU-only pod aimed at GPU nodes" "no webhook: the refusal's words"
	# UPDATE: a route the stored pod did not take is refused (policy.c judge_update);
	# Kubernetes lets tolerations be added to a pod (ValidatePodUpdate).
	pod ap-plain >"$T/ap-plain.in"
	created team-ap ap-plain "no webhook: a plain CPU pod is created"
	kubectl patch pod -n team-ap ap-plain --type=json \
		-p '[{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "sku", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}}]' \
		>"$AP/upd.out" 2>"$AP/upd.err"
	equals "$?" 1 "no webhook: adding the GPU toleration to a CPU pod is refused"
	has "$AP/upd.err" "CPU-only pod aimed at GPU nodes" "no webhook: the update's refusal"
	kubectl label pod -n team-ap ap-plain touched=yes >"$AP/upd.out" 2>"$AP/upd.err"
	equals "$?" 0 "no webhook: an update that aims nowhere new is admitted"
}

# (d) The chart's policies-only install (webhook.enabled=false): helm install renders
# it, asking this API server which kinds it serves (the chart's guard per kind), and
# creates only the admission policies and their bindings; with no webhook anywhere,
# the README's logshipper is refused at apply and a 1-GPU pod is placed.
ap_gpu_placed() { # a server dry-run 1-GPU pod gets the GPU toleration: the mutating policy is in force
	pod chart-probe "$GPU1" | kubectl create -n team-ap --dry-run=server -o json -f - >"$AP/probe.json" 2>/dev/null &&
		gpu_tolerated "$AP/probe.json"
}
admpolicy_chart_only() {
	local kinds
	kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy,mutatingadmissionpolicybinding,mutatingadmissionpolicy \
		-l "$AP_SELECTOR" --ignore-not-found >/dev/null 2>&1
	"$B" print-admission-policies --kubernetes-version "$CP_MINOR" >"$AP/chart-policies.yaml" || bad "print-admission-policies"
	if helm install gpu-policies "$CHART" -n gpu-policies --create-namespace --set webhook.enabled=false \
		--set inProcessPolicies.enabled=true --set-file "inProcessPolicies.manifest=$AP/chart-policies.yaml" \
		>"$AP/chart.out" 2>&1; then ok; else
		bad "policies only: helm install --set webhook.enabled=false"; indent "$AP/chart.out" | head -n 10; return
	fi
	kinds=$(helm get manifest gpu-policies -n gpu-policies | sed -n 's/^kind: //p' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
	equals "$kinds" " 1 MutatingAdmissionPolicy; 1 MutatingAdmissionPolicyBinding; 2 ValidatingAdmissionPolicy; 2 ValidatingAdmissionPolicyBinding;" \
		"policies only: the release is the admission policies and their bindings, nothing else"
	equals "$(kubectl get deployment,service,secret,configmap,serviceaccount -n gpu-policies -o name -l app.kubernetes.io/instance=gpu-policies | wc -l)" 0 \
		"policies only: no Deployment, Service, Secret, ConfigMap or ServiceAccount"
	equals "$(kubectl get mutatingwebhookconfiguration,validatingwebhookconfiguration -o name | wc -l)" 0 "policies only: no webhook configuration at all"
	cp_wait 30 sh -c "! kubectl apply --dry-run=server -f '$ROOT/test/readme/logshipper.yaml' >/dev/null 2>&1"
	cp_wait 30 ap_gpu_placed || bad "policies only: the mutating policy never took effect"
	kubectl apply -f "$ROOT/test/readme/logshipper.yaml" >"$AP/logshipper.out" 2>"$AP/logshipper.err"
	equals "$?" 1 "policies only: the README's logshipper Deployment is refused at apply"
	has "$AP/logshipper.err" "ValidatingAdmissionPolicy 'gpu-admission-workloads'" "policies only: refused by the chart's policy"
	pod chart-gpu "$GPU1" >"$T/chart-gpu.in"
	created team-ap chart-gpu "policies only: a 1-GPU pod is created"
	gpu_tolerated "$T/chart-gpu.out" && ok || bad "policies only: the GPU pod got the GPU toleration"
	equals "$(jq -c '.spec.nodeSelector' "$T/chart-gpu.out")" '{"kubernetes.azure.com/accelerator":"nvidia"}' \
		"policies only: the GPU pod got the pinned pool's nodeSelector"
	case $(pool_of team-ap chart-gpu) in gput4|gput4spot|gpua100|gpuh100) ok ;; *) bad "policies only: the GPU pod is bound to a GPU node (got $(pool_of team-ap chart-gpu))" ;; esac
	helm uninstall gpu-policies -n gpu-policies >/dev/null 2>&1 || bad "policies only: helm uninstall"
	equals "$(kubectl get validatingadmissionpolicy,mutatingadmissionpolicy -o name -l "$AP_SELECTOR" | wc -l)" 0 \
		"policies only: helm uninstall removes the policies"
}

# ap_tidy: stdin's placement with empty members dropped and tolerations as a set.
ap_tidy() {
	jq -S 'walk(if type == "object" then with_entries(select(.value != "" and .value != null and .value != [] and .value != {})) else . end)
		| .tolerations = ((.tolerations // []) | unique)'
}

# ap_want_placement: $AP/want.json, the placement review predicts, tidied.
ap_want_placement() {
	golden_want_placement "$AP"
	ap_tidy <"$AP/want.json" >"$AP/want.tidy" && mv "$AP/want.tidy" "$AP/want.json"
}

# ap_got_placement: $AP/got.json, the placement of the pod the API server answered.
ap_got_placement() {
	jq -S '.spec | {tolerations: (.tolerations // []), nodeSelector: (.nodeSelector // {}),
		affinity: (.affinity.nodeAffinity // {})}' "$AP/real.json" | ap_tidy >"$AP/got.json"
}

# ap_try WANT: the case's kubectl create once; true when it answers as review
# predicts: the verdict (WANT: 0 admitted, 1 refused) and, for an admitted Pod, the
# placement in $AP/want.json.
ap_try() {
	local r=0
	golden_create "$AP" || r=1
	[ "$r" -eq "$1" ] || return 1
	[ "$GOLDEN_KIND" = Pod ] && [ "$r" -eq 0 ] || return 0
	ap_got_placement
	cmp -s "$AP/want.json" "$AP/got.json"
}

# ap_probe: one dry-run GPU pod in team-both; true when the webhook answered it and
# allowed it unchanged every time, i.e. when the mutating policy had acted before it.
AP_PROBE=0
ap_probe() {
	AP_PROBE=$((AP_PROBE + 1))
	pod "both-probe-$AP_PROBE" "$GPU1" | kubectl create -n team-both --dry-run=server -f - >/dev/null 2>&1 ||
		return 1
	grep -qF "\"pod\":\"both-probe-$AP_PROBE\"" "$WH_DIR/serve.log" &&
		! grep -F "\"pod\":\"both-probe-$AP_PROBE\"" "$WH_DIR/serve.log" | grep -qv '"decision":"allow"'
}

# (c) Both: one mutation, never two.
admpolicy_with_webhook() {
	local seen
	ap_install default || { bad "admission policies: install beside the webhook"; return; }
	ns team-both
	pod both-gpu "$GPU1" >"$T/both-gpu.in"
	# The policy object stored is not yet the policy in force: kube-apiserver's
	# MutatingAdmissionPolicy plugin compiles it from an informer, and until then the
	# webhook alone mutates (a 1.37 run created the pod in that window). Dry-run probes
	# until the webhook sees one the policy already placed.
	cp_wait 30 ap_probe || bad "policies and webhook: the mutating policy never took effect before the webhook ($AP_PROBE probes)"
	created team-both both-gpu "policies and webhook: a 1-GPU pod is created"
	equals "$(jq '[.spec.tolerations[] | select(.key == "sku")] | length' "$T/both-gpu.out")" 1 "policies and webhook: one GPU toleration, not two"
	equals "$(jq -c '.spec.nodeSelector' "$T/both-gpu.out")" '{"kubernetes.azure.com/accelerator":"nvidia"}' "policies and webhook: the selector once"
	# The webhook was called for it (its log line per answer) and never patched it.
	seen=$(grep -F '"pod":"both-gpu"' "$WH_DIR/serve.log" | grep -c '"namespace":"team-both"')
	[ "$seen" -ge 1 ] && ok || bad "policies and webhook: the webhook answered for the pod"
	equals "$(grep -F '"pod":"both-gpu"' "$WH_DIR/serve.log" | grep -cv '"decision":"allow"')" 0 \
		"policies and webhook: the webhook allowed it unchanged (the policy had added everything)"
	# The reverse: a pod already placed as the webhook places it gets nothing from the policy.
	pod both-placed "$GPU1 | .spec.tolerations = [{key: \"sku\", operator: \"Equal\", value: \"gpu\", effect: \"NoSchedule\"}] | .spec.nodeSelector = {\"kubernetes.azure.com/accelerator\": \"nvidia\"}" >"$T/both-placed.in"
	created team-both both-placed "policies and webhook: a placed GPU pod is created"
	equals "$(jq -c '[.spec.tolerations[] | select(.key == "sku")] | length' "$T/both-placed.out")" 1 "policies and webhook: the policy added no second toleration"
	kubectl delete validatingadmissionpolicybinding,validatingadmissionpolicy,mutatingadmissionpolicybinding,mutatingadmissionpolicy \
		-l "$AP_SELECTOR" --ignore-not-found >/dev/null 2>&1
}

if kubectl api-resources --api-group admissionregistration.k8s.io -o name | grep -q '^mutatingadmissionpolicies'; then ok; else
	bad "admission policies: the API server serves no MutatingAdmissionPolicy (feature gate, runtime-config)"
fi
clean
[ -n "${AP_SMOKE:-}" ] || upgrade image.yaml
ap_webhooks_off
admpolicy_golden
admpolicy_no_webhook
admpolicy_chart_only
ap_webhooks_on
wh_start || bad "webhook restart (it reads the caBundle of the configurations put back)"
admpolicy_with_webhook
clean
[ -n "${AP_SMOKE:-}" ] || upgrade three-pools.yaml
