# Sourced by suite.sh (full mode): issue 28, fractions and shared GPUs. A pod whose
# only GPU sign is a gpuAnnotations key (KAI-Scheduler's gpu-fraction) or a
# gpuShareResources name (HAMi's nvidia.com/gpumem) is sent to the webhook by the
# chart's matchConditions (pkg/render/matchcond.c), mutated, and scheduled on a
# tainted GPU node of its pool, with no hand-written toleration.
# KAI-Scheduler itself is not run: a second kube-scheduler whose one profile is named
# kai-scheduler stands in for it (KubeSchedulerConfiguration profiles[].schedulerName:
# it schedules only the pods that name it, with the default plugins, taint and
# node-selector filters included: pkg/scheduler/profile, framework/plugins/
# tainttoleration and nodeaffinity). What it shows is the webhook's part: the
# toleration and the pool; the fraction's accounting is KAI's.
clean
ns team-frac
upgrade three-pools.yaml

# HAMi's device plugin advertises nvidia.com/gpumem on its nodes: the t4 nodes offer it
# for the HAMi pod below. Patched first, so that the scheduler's node informer has it
# long before that pod comes: an attempt made before would find no node that fits and
# wait for the update's requeue and a backoff (seen once on a loaded machine: the pod
# was still unscheduled after 30 s).
for n in $(kubectl get nodes -l kubernetes.azure.com/agentpool=gput4 -o name); do
	kubectl patch "$n" --subresource=status --type=merge \
		-p '{"status": {"capacity": {"nvidia.com/gpumem": "15360"}, "allocatable": {"nvidia.com/gpumem": "15360"}}}' >/dev/null ||
		bad "$n offers nvidia.com/gpumem"
done

# The stand-in scheduler, as the main one is started (cluster.lib cp_up), on its own port.
cat >"$T/kai-scheduler.yaml" <<EOF
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$T/cp/pki/scheduler.kubeconfig"}
leaderElection: {leaderElect: false}
profiles:
  - schedulerName: kai-scheduler
EOF
"$CP_BIN/kube-scheduler" --config "$T/kai-scheduler.yaml" \
	--authentication-kubeconfig "$T/cp/pki/scheduler.kubeconfig" --authorization-kubeconfig "$T/cp/pki/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port 10261 >"$T/kai-scheduler.log" 2>&1 &
KAI_PID=$!
cp_wait 30 sh -c "curl -skf https://127.0.0.1:10261/healthz" && ok || { bad "the kai-scheduler stand-in started"; tail -n 20 "$T/kai-scheduler.log"; }

# The installed conditions test the annotation for the schedulers that read it, and the share names.
kubectl get mutatingwebhookconfiguration -l "app.kubernetes.io/instance=$REL" -o json |
	jq -r '.items[].webhooks[] | select(.name | startswith("mutate.")) | .matchConditions[] | select(.name == "gpu-relevant") | .expression' >"$T/frac-cond.txt"
has "$T/frac-cond.txt" "'gpu-fraction'" "the installed gpu-relevant condition tests gpu-fraction"
has "$T/frac-cond.txt" "'nvidia.com/gpumem'" "the installed gpu-relevant condition tests nvidia.com/gpumem"

# A KAI fraction pod: half a GPU by annotation, no GPU resource, no toleration.
pod kai-half '.metadata.annotations = {"gpu-fraction": "0.5"} | .spec.schedulerName = "kai-scheduler"' >"$T/kai-half.in"
created team-frac kai-half "the KAI fraction pod is created"
gpu_tolerated "$T/kai-half.out" && ok || bad "the KAI fraction pod is mutated: it tolerates sku=gpu:NoSchedule"
equals "$(jq -r '.spec.nodeSelector["kubernetes.azure.com/agentpool"] // "none"' "$T/kai-half.out")" gput4 \
	"the KAI fraction pod is pinned to the cheapest pool serving one nvidia.com/gpu (t4)"
equals "$(pool_of team-frac kai-half)" gput4 "the kai-scheduler stand-in binds it to a tainted t4 node"

# The same annotation on a pod of the default scheduler means nothing: not a GPU pod,
# not mutated (and not sent: the conditions test the annotation for its schedulers only).
pod plain-half '.metadata.annotations = {"gpu-fraction": "0.5"}' >"$T/plain-half.in"
created team-frac plain-half "a default-scheduler pod with gpu-fraction is created"
jq -e '.spec.tolerations // [] | map(select(.key == "sku")) | length == 0' "$T/plain-half.out" >/dev/null && ok ||
	bad "a default-scheduler pod with gpu-fraction gets no GPU toleration"
equals "$(pool_of team-frac plain-half)" system "... and runs on the CPU pool"

# A HAMi pod asking only for GPU memory (MiB); the t4 nodes offer it from the top of
# the scenario.
pod hami-mem '.spec.containers[0].resources.limits["nvidia.com/gpumem"] = "4000"' >"$T/hami-mem.in"
created team-frac hami-mem "the HAMi gpumem pod is created"
gpu_tolerated "$T/hami-mem.out" && ok || bad "the HAMi gpumem pod is mutated: it tolerates sku=gpu:NoSchedule"
equals "$(jq -r '.spec.nodeSelector["kubernetes.azure.com/agentpool"] // "none"' "$T/hami-mem.out")" gput4 \
	"the HAMi gpumem pod is pinned to the t4 pool"
got=$(pool_of team-frac hami-mem)
equals "$got" gput4 "the scheduler binds the HAMi gpumem pod to a tainted t4 node"
[ "$got" = gput4 ] ||
	kubectl get pod -n team-frac hami-mem -o jsonpath='{.status.conditions[?(@.type=="PodScheduled")].message}' | indent
equals "$(wh_count '"level":"error"')" 0 "the replica logged no error"

clean
kill "$KAI_PID" 2>/dev/null
wait "$KAI_PID" 2>/dev/null
for n in $(kubectl get nodes -l kubernetes.azure.com/agentpool=gput4 -o name); do
	kubectl patch "$n" --subresource=status --type=merge \
		-p '{"status": {"capacity": {"nvidia.com/gpumem": null}, "allocatable": {"nvidia.com/gpumem": null}}}' >/dev/null
done
