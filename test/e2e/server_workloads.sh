#!/bin/sh
# serve over real TLS on loopback, judging workloads at kubectl apply: a
# Deployment, a CronJob and a PyTorchJob (the policy lists kubeflow.org
# PyTorchJob under workloads:) posted to /validate as kube-apiserver posts
# them, from the golden cases built from the corpus. Each answer: the verdict
# of its templates, never a patch, the template's path in the message or the
# annotations, the UPDATE rules (for each kind, an UPDATE that only scales or
# reschedules is admitted untouched); /mutate answers a workload without a patch;
# the metrics count it under its kind (a custom resource under "custom") and
# the log line names it.
. test/e2e/server.lib

certs "$TMP/c"
CA=$TMP/c/ca.crt
LOG=$TMP/server.log
cat >"$TMP/policy.yaml" <<'EOF'
workloads:
  - {group: kubeflow.org, kind: PyTorchJob}
EOF
start_server "$LOG" --tls-cert "$TMP/c/tls.crt" --tls-key "$TMP/c/tls.key" --service-name "$SVC" \
	--config "$TMP/policy.yaml" --threads 2 || { bad "server did not start"; finish; }
ok
G=test/golden

# post PATH FILE: the answer in $TMP/out, the HTTP status in $CODE.
post() {
	CODE=$(hcurl "$CA" "$1" -H 'Content-Type: application/json' --data-binary "@$2" -o "$TMP/out" -w '%{http_code}')
}
metric() { # metric 'name{labels}': its value on /metrics, or 0
	v=$(hcurl "$CA" /metrics | grep -F "$1 " | awk '{print $2}')
	echo "${v:-0}"
}
# same_as CASE DESCRIPTION: the answer is the golden case's own (patch decoded there: none here).
same_as() {
	check "$2" jq -e --slurpfile want "$G/$1/expect.json" '. == $want[0]' "$TMP/out"
}

# ---- a Deployment whose CPU-only template tolerates the GPU taint ----
post /validate "$G/workload-deployment-cpu-gpu-toleration/request.json"
equals "$CODE" 200 "Deployment: HTTP 200"
check "Deployment: denied (403), never a patch, naming the kind, spec.template, the route and audit --fix" \
	jq -e '.response.allowed == false and .response.status.code == 403 and (.response | has("patch") | not)
	       and (.response.status.message | startswith("Deployment default/nginx: pod template spec.template: CPU-only pod aimed at GPU nodes: it tolerates the GPU taint"))
	       and (.response.status.message | contains("`gpu-admission audit --fix FILE`"))
	       and .response.auditAnnotations.template == "spec.template"' "$TMP/out"
same_as workload-deployment-cpu-gpu-toleration "Deployment: the golden answer, over TLS"
post /mutate "$G/workload-deployment-cpu-gpu-toleration/request.json"
check "Deployment on /mutate: the same denial, never a patch" \
	jq -e '.response.allowed == false and (.response | has("patch") | not) and (.response | has("patchType") | not)' "$TMP/out"
post /validate "$G/workload-deployment-gpu/request.json"
check "GPU Deployment: admitted, not patched" \
	jq -e '.response.allowed == true and (.response | has("patch") | not) and .response.auditAnnotations.reason == "gpu-pod-mutated"' "$TMP/out"
post /mutate "$G/workload-deployment-gpu/request.json"
check "GPU Deployment on /mutate: admitted, never patched (its pods are, when created)" \
	jq -e '.response.allowed == true and (.response | has("patch") | not) and (.response | has("patchType") | not)' "$TMP/out"
post /validate "$G/workload-deployment-update-scale/request.json"
check "Deployment scaled: admitted untouched though its template would be rejected" \
	jq -e '.response.allowed == true and .response.auditAnnotations.reason == "pod-templates-unchanged"' "$TMP/out"
post /validate "$G/workload-deployment-update-adds-toleration/request.json"
check "Deployment whose template newly tolerates the GPU taint: denied" \
	jq -e '.response.allowed == false and (.response.status.message | contains("pod template spec.template:"))' "$TMP/out"

# ---- a CronJob ----
post /validate "$G/workload-cronjob-gpu/request.json"
check "CronJob with a GPU template: admitted, not patched, at spec.jobTemplate.spec.template" \
	jq -e '.response.allowed == true and (.response | has("patch") | not)
	       and .response.auditAnnotations.template == "spec.jobTemplate.spec.template"' "$TMP/out"
post /validate "$G/workload-cronjob-amd/request.json"
check "CronJob no pool serves: denied, naming its template and audit FILE" \
	jq -e '.response.allowed == false and (.response.status.message | contains("pod template spec.jobTemplate.spec.template: no GPU pool serves amd.com/gpu"))
	       and (.response.status.message | contains("`gpu-admission audit FILE`"))' "$TMP/out"

# An UPDATE that only changes the schedule and suspends it, of a CronJob whose template no pool
# serves (its CREATE was denied above): admitted untouched, existing workloads keep working.
jq '.request.operation = "UPDATE" | .request.oldObject = .request.object
    | .request.object.spec.schedule = "0 3 * * *" | .request.object.spec.suspend = true' \
	"$G/workload-cronjob-amd/request.json" >"$TMP/cronjob-suspend.json"
post /validate "$TMP/cronjob-suspend.json"
check "CronJob rescheduled and suspended: admitted untouched though its template would be denied" \
	jq -e '.response.allowed == true and (.response | has("patch") | not)
	       and .response.auditAnnotations.reason == "pod-templates-unchanged"' "$TMP/out"

# ---- a PyTorchJob (custom, listed) ----
post /validate "$G/workload-pytorchjob-gpu/request.json"
check "PyTorchJob: admitted, not patched, its replicas' templates found" \
	jq -e '.response.allowed == true and (.response | has("patch") | not)
	       and .response.auditAnnotations.template == "spec.pytorchReplicaSpecs.Master.template"' "$TMP/out"
post /validate "$G/workload-pytorchjob-amd/request.json"
same_as workload-pytorchjob-amd "PyTorchJob with two templates no pool serves: the golden answer, both named"
post /validate "$G/workload-pytorchjob-update-worker-cpu/request.json"
check "PyTorchJob whose Worker turns CPU-only and tolerates the GPU taint: denied" \
	jq -e '.response.allowed == false and (.response.status.message | contains("pod template spec.pytorchReplicaSpecs.Worker.template:"))' "$TMP/out"
# The stored PyTorchJob is that denied one (a CPU Worker aimed at GPU nodes, created before the
# policy): scaling its Workers from 1 to 4 changes no template, and is admitted untouched.
jq '.request.oldObject = .request.object | .request.object.spec.pytorchReplicaSpecs.Worker.replicas = 4' \
	"$G/workload-pytorchjob-update-worker-cpu/request.json" >"$TMP/pytorchjob-scale.json"
post /validate "$TMP/pytorchjob-scale.json"
check "PyTorchJob scaled: admitted untouched though its Worker template would be denied" \
	jq -e '.response.allowed == true and (.response | has("patch") | not) and (.response | has("warnings") | not)
	       and .response.auditAnnotations.reason == "pod-templates-unchanged"' "$TMP/out"

# ---- metrics and the log line ----
check "verdicts counted by kind: Deployment, CronJob, custom" sh -c "
	test \"\$1\" -ge 2 && test \"\$2\" -ge 1 && test \"\$3\" -ge 2" - \
	"$(metric 'gpu_admission_policy_verdicts_total{endpoint="validate",kind="Deployment",mode="enforce",verdict="reject"}')" \
	"$(metric 'gpu_admission_policy_verdicts_total{endpoint="validate",kind="CronJob",mode="enforce",verdict="reject"}')" \
	"$(metric 'gpu_admission_policy_verdicts_total{endpoint="validate",kind="custom",mode="enforce",verdict="reject"}')"
has "$LOG" '"kind":"PyTorchJob","name":"pytorch-dist-mnist-nccl","decision":"reject"' "the log line names the kind and the object"
stop_server "serve judging workloads"
finish
