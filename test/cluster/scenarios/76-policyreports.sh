# Sourced by suite.sh (full mode): issue 25 item 3, the report published where people
# already look, by `gpu-admission report --publish` and then by `gpu-admission watch
# --policy-reports --events` (one module, pkg/report/report_publish.h) against this API
# server; the watch runs as the chart's watch ServiceAccount, with the chart's grants.
#   team-pr:  five CPU pods pinned by nodeName to the h100 GPU node (the namespace is
#             labelled control-plane, which the chart's webhooks never see, so they are
#             admitted as they are);
#   team-pr2: a pod asking for amd.com/gpu, a GPU resource no pool of the policy serves
#             (unserved-resource), and a gated one (scheduling-gated: no Event).
# Without the PolicyReport CRD nothing is written and the run says so; with it (the
# upstream CRD, vendored in crd-policyreport.yaml) each namespace gets one report,
# capped (--max-results 3: three results, the summary counting all five), labelled,
# owned by nothing; a namespace with nothing left has its report deleted. Each
# unserved Pending pod gets one Warning Event, referring to it by uid (kubectl describe
# finds Events by the pod's uid: k8s.io/kubectl pkg/describe/describe.go searches with
# the object reference, uid included); seen again (a second run, then the watch), that
# Event's count grows: one Event, never several.
clean
ns team-pr control-plane=test
ns team-pr2 control-plane=test
for i in 1 2 3 4 5; do
	pod "pr-cpu$i" '.spec.nodeName = "aks-gpuh100-50000000-vmss000000"' >"$T/pr-cpu$i.in"
	created team-pr "pr-cpu$i" "a CPU pod pinned to the h100 node in team-pr ($i)"
done
pod pr-amd '.spec.containers[0].resources.limits["amd.com/gpu"] = "1"' >"$T/pr-amd.in"
created team-pr2 pr-amd "a pod asking for amd.com/gpu in team-pr2"
pod pr-gated "$GPU1 | .spec.schedulingGates = [{name: \"example.com/queue\"}]" >"$T/pr-gated.in"
created team-pr2 pr-gated "a gated GPU pod in team-pr2"
kubectl get configmap -n "$RNS" "$REL-policy" -o jsonpath='{.data.policy\.yaml}' >"$T/pr-policy.yaml"
PR_KC=$KUBECONFIG
# publish ARGS...: one run of report --publish (stdout the text report, stderr what it wrote); sets RC.
publish() {
	"$B" report --publish --kubeconfig "$PR_KC" -c "$T/pr-policy.yaml" --fail-on none "$@" >"$T/pr.out" 2>"$T/pr.err"
	RC=$?
	[ "$RC" -eq 0 ] || sed 's/^/    publish: /' "$T/pr.err"
}

# No CRD: nothing written, said once on stderr, not a failure.
kubectl delete crd policyreports.wgpolicyk8s.io --ignore-not-found >/dev/null 2>&1
publish --policy-reports --max-results 3
equals "$RC" 0 "publish without the PolicyReport CRD: exit 0"
has "$T/pr.err" "PolicyReport CRD absent: skipped" "publish without the CRD says it skipped"
has "$T/pr.err" "0 PolicyReports applied" "publish without the CRD applied nothing"

# The CRD installed: one report per namespace, capped, with the report's own words.
kubectl apply -f "$ROOT/test/cluster/crd-policyreport.yaml" >/dev/null && ok || bad "install the PolicyReport CRD"
cp_wait 60 sh -c 'kubectl get crd policyreports.wgpolicyk8s.io -o jsonpath="{.status.conditions[?(@.type==\"Established\")].status}" | grep -qx True' &&
	ok || bad "the PolicyReport CRD is Established"
# Discovery serves the new group once established; the client's discovery cache may lag.
cp_wait 60 sh -c 'kubectl get --raw /apis/wgpolicyk8s.io/v1alpha2 | grep -q policyreports' && ok || bad "discovery serves policyreports"
# Right after the CRD is Established, the API server may refuse its first LIST with 429
# "storage is (re)initializing" while the new resource's watch cache fills
# (k8s.io/apiserver pkg/storage/cacher: reads wait for the cacher to be ready and are
# refused with TooManyRequests meanwhile); seen here, printed above when it happens. The
# watch tries again at its next interval; here, again for up to 30 s.
publish --policy-reports --max-results 3
n=0
while [ "$RC" -ne 0 ] && [ "$n" -lt 30 ]; do
	sleep 1
	n=$((n + 1))
	publish --policy-reports --max-results 3
done
equals "$RC" 0 "publish with the CRD: exit 0"
has "$T/pr.err" "0 failed" "publish with the CRD: no write failed"
kubectl get policyreport -n team-pr gpu-admission -o json >"$T/pr-team.json" 2>"$T/pr-get.err"
equals "$?" 0 "team-pr has its PolicyReport"
equals "$(jq -c '[.metadata.labels["app.kubernetes.io/managed-by"], (.metadata.ownerReferences // [] | length)]' "$T/pr-team.json")" \
	'["gpu-admission",0]' "the report is labelled managed-by gpu-admission and owned by nothing"
equals "$(jq -c '[(.results | length), .summary.fail, .summary.warn, .summary.skip, .metadata.annotations["gpu-admission/omitted-results"]]' "$T/pr-team.json")" \
	'[4,5,0,1,"2"]' "capped: 3 results and the omitted one; the summary counts all 5 CPU pods, 2 left out"
equals "$(jq -r '[.results[:3][] | select(.result == "fail" and .rule == "cpu-pod-on-gpu-node") | .resources[0].name] | join(" ")' "$T/pr-team.json")" \
	"pr-cpu1 pr-cpu2 pr-cpu3" "the listed results are the first CPU pods, as fail"
equals "$(jq -r '.results[0] | [.properties.node, .properties.routes] | join(" ")' "$T/pr-team.json")" \
	"aks-gpuh100-50000000-vmss000000 untolerated-taint" "a result names the node and the route"
jq -r '.results[0].message' "$T/pr-team.json" >"$T/pr-msg.txt"
has "$T/pr-msg.txt" "CPU-only pod on GPU node aks-gpuh100-50000000-vmss000000 via untolerated-taint" "the result's message gives the route"
equals "$(jq -r '.results[3] | [.rule, .result, .properties.omitted] | join(" ")' "$T/pr-team.json")" \
	"results-omitted skip 2" "the last result says how many were left out"
kubectl get policyreport -n team-pr2 gpu-admission -o json >"$T/pr-team2.json" 2>/dev/null
equals "$(jq -r '[.results[] | select(.resources[0].name == "pr-amd") | .result, .properties.reason] | join(" ")' "$T/pr-team2.json")" \
	"warn unserved-resource" "team-pr2: the amd.com/gpu pod is a warning, unserved-resource"
equals "$(jq -r '[.results[] | select(.resources[0].name == "pr-gated") | .properties.reason] | join(" ")' "$T/pr-team2.json")" \
	"scheduling-gated" "team-pr2: the gated pod is listed as gated"
# Once more: the same reports (a server-side apply of the same fields changes nothing).
rv=$(jq -r .metadata.resourceVersion "$T/pr-team.json")
publish --policy-reports --max-results 3
equals "$(kubectl get policyreport -n team-pr gpu-admission -o jsonpath='{.metadata.resourceVersion}')" "$rv" \
	"a second run leaves an unchanged report as it was"

# Events: one per unserved Pending pod, by uid; none for the gated pod.
publish --events
equals "$RC" 0 "publish --events: exit 0"
has "$T/pr.err" "1 Events created" "one Event created (the gated pod gets none)"
uid=$(kubectl get pod -n team-pr2 pr-amd -o jsonpath='{.metadata.uid}')
kubectl get events -n team-pr2 -o json >"$T/pr-events.json"
equals "$(jq -r --arg uid "$uid" '[.items[] | select(.involvedObject.uid == $uid and .reason == "GPUResourceUnserved") |
	[.type, .involvedObject.name, .source.component, .metadata.labels["app.kubernetes.io/managed-by"]] | join(" ")] | join(",")' "$T/pr-events.json")" \
	"Warning pr-amd gpu-admission gpu-admission" "the Event is a Warning on pr-amd (by uid), from gpu-admission"
equals "$(jq '[.items[] | select(.involvedObject.name == "pr-gated" and .source.component == "gpu-admission")] | length' "$T/pr-events.json")" 0 \
	"no Event on the gated pod"
kubectl describe pod -n team-pr2 pr-amd >"$T/pr-describe.txt" 2>&1
has "$T/pr-describe.txt" "GPUResourceUnserved" "kubectl describe shows the Event"
# pr_amd_events: [how many Events from gpu-admission refer to pr-amd (by uid) as unserved, the count of the first].
pr_amd_events() {
	kubectl get events -n team-pr2 -o json | jq -c --arg uid "$uid" '[.items[] | select(.involvedObject.uid == $uid and
		.reason == "GPUResourceUnserved" and .source.component == "gpu-admission")] | [length, (.[0].count // 0)]'
}
equals "$(pr_amd_events)" "[1,1]" "one Event on pr-amd, count 1"
# The same pod, still unserved, at the next run: aggregated as Kubernetes' recorder does
# (client-go tools/record/events_cache.go): the Event it made, its count patched, not a second.
publish --events
equals "$RC" 0 "publish --events again: exit 0"
has "$T/pr.err" "0 Events created, 1 updated" "the second run updates the Event the first made"
equals "$(pr_amd_events)" "[1,2]" "still ONE Event on pr-amd, its count 2"

# Nothing left in team-pr: its report is deleted; team-pr2 keeps its own.
kubectl delete pod -n team-pr --all --force --grace-period=0 >/dev/null 2>&1
cp_wait 60 sh -c '[ -z "$(kubectl get pods -n team-pr -o name)" ]' || bad "team-pr's pods deleted"
publish --policy-reports --max-results 3
equals "$RC" 0 "publish after team-pr emptied: exit 0"
kubectl get policyreport -n team-pr gpu-admission >/dev/null 2>&1
equals "$?" 1 "team-pr's report is deleted once it has nothing to report"
kubectl get policyreport -n team-pr2 gpu-admission >/dev/null 2>&1
equals "$?" 0 "team-pr2's report is kept"

# The chart's RBAC for the writes: granted to the watch's ServiceAccount only when asked.
SA_W=system:serviceaccount:$RNS:$REL-watch
equals "$(kubectl auth can-i patch policyreports.wgpolicyk8s.io -n team-pr2 --as "$SA_W")" no "no write access before the option is on"
helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reuse-values --set watch.enabled=true \
	--set watch.policyReports.enabled=true --set watch.events.enabled=true >"$T/pr-upgrade.out" 2>&1 && ok ||
	{ bad "helm upgrade with watch.policyReports and watch.events"; cat "$T/pr-upgrade.out"; }
for v in create patch update delete list; do
	equals "$(kubectl auth can-i "$v" policyreports.wgpolicyk8s.io --all-namespaces --as "$SA_W")" yes "the watch may $v policyreports"
done
for v in create get patch; do
	equals "$(kubectl auth can-i "$v" events --all-namespaces --as "$SA_W")" yes "the watch may $v events"
done
equals "$(kubectl auth can-i delete events --all-namespaces --as "$SA_W")" no "the watch may not delete events"
equals "$(kubectl auth can-i patch policyreports.wgpolicyk8s.io -n team-pr2 --as "system:serviceaccount:$RNS:$REL")" no \
	"the webhook's ServiceAccount gets none of it"
# The watch itself publishing, as the chart's watch ServiceAccount with its token: the
# chart's read role (get, list, watch on nodes and pods) and these writes suffice, and the
# watch writes each interval what report --publish wrote once (the same module).
cp_sa_kubeconfig "$REL-watch" "https://$CP_API_ADDR" "$T/pr-sa.kubeconfig" || bad "a token for the watch's ServiceAccount"
kubectl delete policyreport -n team-pr2 gpu-admission >/dev/null 2>&1
PR_WATCH_ADDR=127.0.0.1:19091
"$B" watch -c "$T/pr-policy.yaml" --kubeconfig "$T/pr-sa.kubeconfig" --addr "$PR_WATCH_ADDR" --interval 2 \
	--policy-reports --events --max-results 3 --log-format json >"$T/pr-watch.log" 2>&1 &
PR_WATCH=$!
CP_PIDS="$CP_PIDS $PR_WATCH"
CP_WAIT_PID=$PR_WATCH cp_wait 60 kubectl get policyreport -n team-pr2 gpu-admission && ok ||
	{ bad "the watch, as its ServiceAccount, writes team-pr2's PolicyReport"; tail -n 20 "$T/pr-watch.log"; }
pr_metric() { curl -sf "http://$PR_WATCH_ADDR/metrics" | awk -v m="$1" '$1 == m { print $2 }'; }
pr_unchanged() { [ "$(pr_metric 'gpu_admission_watch_policyreports_total{result="unchanged"}')" -ge 1 ]; }
cp_wait 30 pr_unchanged || bad "the watch's next interval finds the report unchanged"
equals "$(pr_metric 'gpu_admission_watch_policyreports_total{result="applied"}')" 1 \
	"the watch applied one PolicyReport (team-pr2's), then left it as it was"
equals "$(pr_metric 'gpu_admission_watch_publish_errors_total')" 0 "the watch's writes: none failed"
# The watch's first interval found the Event report --publish made (409), read its count and
# patched it, as its ServiceAccount (create, get, patch): still one Event, its count 3.
equals "$(pr_metric 'gpu_admission_watch_pod_events_total{result="updated"}')" 1 "the watch updated the Event"
equals "$(pr_amd_events)" "[1,3]" "still ONE Event on pr-amd, its count 3"
if command -v promtool >/dev/null 2>&1; then
	curl -sf "http://$PR_WATCH_ADDR/metrics" >"$T/pr-metrics.txt"
	promtool check metrics <"$T/pr-metrics.txt" >"$T/pr-promtool.out" 2>&1
	equals "$?" 0 "the publishing watch's /metrics parse (promtool check metrics: one HELP and TYPE a family)"
	[ -s "$T/pr-promtool.out" ] && sed 's/^/    promtool: /' "$T/pr-promtool.out"
fi
kubectl get policyreport -n team-pr2 gpu-admission -o json >"$T/pr-watch-report.json" 2>&1
pr_results='[.summary, [.results[] | {policy, rule, result, resources: [.resources[].name], reason: .properties.reason}]]'
equals "$(jq -c "$pr_results" "$T/pr-watch-report.json")" "$(jq -c "$pr_results" "$T/pr-team2.json")" \
	"the watch's report of team-pr2 is the one report --publish wrote"
kill "$PR_WATCH" 2>/dev/null
wait "$PR_WATCH" 2>/dev/null
equals "$?" 0 "SIGTERM: the publishing watch exits 0"
helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reuse-values --set watch.enabled=false \
	--set watch.policyReports.enabled=false --set watch.events.enabled=false >"$T/pr-upgrade.out" 2>&1 && ok ||
	{ bad "helm upgrade with the options off again"; cat "$T/pr-upgrade.out"; }
equals "$(kubectl auth can-i patch policyreports.wgpolicyk8s.io -n team-pr2 --as "$SA_W")" no "the write access goes with the option"

kubectl delete policyreport -n team-pr2 gpu-admission >/dev/null 2>&1
kubectl delete crd policyreports.wgpolicyk8s.io >/dev/null 2>&1
