# Sourced by suite.sh (full mode), after 10-pools.sh (three pools in force):
# workloads judged at kubectl apply; their pods created by the real controllers.

# manifest KIND NAME TEMPLATE-JQ: a workload of KIND whose pod template is the plain
# container changed by TEMPLATE-JQ (applied to the pod spec's parent, .template).
workload() {
	jq -n --arg k "$1" --arg n "$2" '
	{metadata: {labels: {app: $n}}, spec: {containers: [{name: "c", image: "registry.example/c:1"}]}} as $t
	| {Deployment: {apiVersion: "apps/v1", spec: {replicas: 1, selector: {matchLabels: {app: $n}}, template: $t}},
	   StatefulSet: {apiVersion: "apps/v1", spec: {replicas: 1, serviceName: $n, selector: {matchLabels: {app: $n}}, template: $t}},
	   DaemonSet: {apiVersion: "apps/v1", spec: {selector: {matchLabels: {app: $n}}, template: $t}},
	   Job: {apiVersion: "batch/v1", spec: {template: ($t | .spec.restartPolicy = "Never")}},
	   CronJob: {apiVersion: "batch/v1", spec: {schedule: "0 * * * *", jobTemplate: {spec: {template: ($t | .spec.restartPolicy = "Never")}}}},
	   TrainingJob: {apiVersion: "batch.example.com/v1", spec: {replicaSpecs: {Worker: {replicas: 1, template: $t}}}}}[$k]
	| .kind = $k | .metadata.name = $n' |
	jq --arg k "$1" "if \$k == \"CronJob\" then .spec.jobTemplate.spec.template |= ($3)
		elif \$k == \"TrainingJob\" then .spec.replicaSpecs.Worker.template |= ($3) else .spec.template |= ($3) end"
}
apply() { # apply NS NAME: kubectl apply of $T/NAME.in; sets RC, $T/NAME.err
	kubectl apply -n "$1" -f "$T/$2.in" >"$T/$2.out" 2>"$T/$2.err"
	RC=$?
}
TPL_TOL='.spec.tolerations = [{key: "sku", operator: "Equal", value: "gpu", effect: "NoSchedule"}]'
TPL_GPU='.spec.containers[0].resources.limits["nvidia.com/gpu"] = "1"'

kubectl apply -f "$ROOT/test/cluster/crd-trainingjob.yaml" >/dev/null &&
	cp_wait 30 kubectl get trainingjobs -A && ok || bad "the TrainingJob CRD is served"
ns team-w
ns team-x
for k in Deployment StatefulSet DaemonSet Job CronJob TrainingJob; do
	name=$(echo "bad-$k" | tr 'A-Z' 'a-z')
	# DaemonSets are exempt in team-w only (values/three-pools.yaml).
	n=team-w
	[ "$k" = DaemonSet ] && n=team-x
	workload "$k" "$name" "$TPL_TOL" >"$T/$name.in"
	apply "$n" "$name"
	equals "$RC" 1 "kubectl apply of a $k whose template tolerates the GPU taint is refused"
	has "$T/$name.err" "$k $n/$name: pod template" "the $k refusal names its template"
	has "$T/$name.err" "remove the toleration, or request a GPU" "the $k refusal says how to fix it"
done
# A good GPU Deployment: the real ReplicaSet controller creates its pods, which the
# mutating webhook places (three pools: 1 GPU -> t4).
clean
workload Deployment trainer "$TPL_GPU" | jq '.spec.replicas = 2' >"$T/trainer.in"
apply team-w trainer
equals "$RC" 0 "kubectl apply of a GPU Deployment"
cp_wait 60 sh -c '[ "$(kubectl get pods -n team-w -l app=trainer -o name | wc -l)" -eq 2 ]' && ok ||
	bad "the ReplicaSet controller created the Deployment's 2 pods"
for p in $(kubectl get pods -n team-w -l app=trainer -o name); do
	kubectl get -n team-w "$p" -o json >"$T/trainer.json"
	gpu_tolerated "$T/trainer.json" && ok || bad "the ReplicaSet's pod $p tolerates the GPU taint"
	equals "$(pool_of team-w "${p#pod/}")" gput4 "the ReplicaSet's pod $p lands on t4"
done
# A DaemonSet that tolerates the GPU taint without a GPU (a node agent): admitted at
# apply, and its pods, created by the real DaemonSet controller as its own service
# account, are admitted on every node it tolerates (5: the spot node's taint is not).
workload DaemonSet agent "$TPL_TOL" >"$T/agent.in"
apply team-w agent
equals "$RC" 0 "kubectl apply of a DaemonSet tolerating the GPU taint"
cp_wait 60 sh -c '[ "$(kubectl get pods -n team-w -l app=agent -o name | wc -l)" -eq 5 ]' && ok ||
	bad "the DaemonSet controller's pods are admitted on the 5 nodes (got $(kubectl get pods -n team-w -l app=agent -o name | wc -l))"
kubectl get events -n team-w --field-selector reason=FailedCreate -o json >"$T/ds-events.json"
equals "$(jq '[.items[] | select(.involvedObject.name == "agent")] | length' "$T/ds-events.json")" 0 "no FailedCreate event for the DaemonSet"
# The same pod made by hand, with a forged DaemonSet owner: the requester is not the controller.
uid=$(kubectl get daemonset -n team-w agent -o jsonpath='{.metadata.uid}')
pod forged "$SKU_TOL | .metadata.ownerReferences = [{apiVersion: \"apps/v1\", kind: \"DaemonSet\", name: \"agent\", uid: \"$uid\", controller: true}]" >"$T/forged.in"
create team-w forged
equals "$RC" 1 "a hand-made pod with a forged DaemonSet owner is refused"
has "$T/forged.err" "CPU-only pod aimed at GPU nodes" "the forged pod's refusal"
# A good TrainingJob is admitted.
workload TrainingJob good-tj "$TPL_GPU" >"$T/good-tj.in"
apply team-w good-tj
equals "$RC" 0 "kubectl apply of a GPU TrainingJob"
