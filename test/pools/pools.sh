#!/bin/sh
# Pools v2 (issue 12) with the real binary:
#  - the cases, test/pools/cases/<case>/:
#      policy.yaml   a policy file
#      expect        what `check-config policy.yaml`, run in the case directory, prints
#                    (stdout and stderr, then "exit N")
#    (test/helm/helm.sh renders every case through the chart, test/e2e/server_policy.sh
#    posts the refused ones as ConfigMap edits): fallback pools that do not share one key, unknown keys,
#    bad globs, bad selectors and tolerations, a selector longer than a patch carries,
#    a valid fallback policy, and the notes on valid policies that mean more than they
#    say; `check-config -` with the file on stdin prints the same, naming it <stdin>;
#  - print-autoscaler-config prints a ConfigMap that validates against the Kubernetes
#    OpenAPI schema (test/helm/check.js --validate, strict fields), named and placed as
#    cluster-autoscaler's priority expander wants it, whose priorities follow the pool
#    order and whose regexes pick out exactly their pool's AKS scale set;
#  - print-kueue-config prints a ResourceFlavor per pool (nodeLabels, tolerations) and a
#    ClusterQueue trying them in the pool order, quotas where a pool serves the resource;
#  - serve with placement fallback logs the eligible pools on the decision line.
# UPDATE=1 rewrites the expect files: review the diff. The suite e2e/pools: this driver,
# beside its cases; shared helpers in test/check.lib.
#
# Sources for the ConfigMap (cited here, checked below):
#  - kubernetes/autoscaler cluster-autoscaler/expander/priority/readme.md and
#    priority.go: ConfigMap "cluster-autoscaler-priority-expander" in the autoscaler's
#    namespace (kube-system on AKS), key "priorities", YAML map[int][]string; the
#    highest priority among the groups that can take the pod wins; a regex is searched
#    (FindStringIndex, unanchored) in the node group's Id(); a group no regex matches
#    is not used ("not found in priority expander configuration"), and when none
#    matches it falls back to random.
#  - cloudprovider/azure azure_scale_set.go: a scale set's Id() is its name; the AKS
#    notes of kubernetes/autoscaler#1896 and the node group specs AKS passes
#    (Azure/AKS#2359: "1:30:Delete:aks-gpuspot-29141059-vmss:...") name AKS scale sets
#    aks-<nodepool>-<number>-vmss, so "gpu" must not match "aks-gpuspot-...": anchored.
#  - AKS agent pool names are ^[a-z][a-z0-9]{0,11}$ (Agent Pools REST API).
set -u
BIN=${BIN:-bin/gpu-admission}
B=$(pwd)/$BIN
. test/check.lib
T=$(mktemp -d)
SERVER_PID=
trap '[ -n "$SERVER_PID" ] && kill "$SERVER_PID" 2>/dev/null; rm -rf "$T"' EXIT

# ---- check-config, golden ------------------------------------------------------
for d in test/pools/cases/*/; do
	d=${d%/}
	name=$(basename "$d")
	(cd "$d" && { "$B" check-config policy.yaml 2>&1; echo "exit $?"; }) >"$T/out"
	compare "check-config, case $name" "$d/expect" "$T/out"
	# `-` is standard input, as for every command: the same answer, the file named <stdin>.
	{ "$B" check-config - <"$d/policy.yaml" 2>&1; echo "exit $?"; } >"$T/stdin.out"
	sed "s|^policy.yaml:|<stdin>:|" "$d/expect" >"$T/stdin.exp"
	if cmp -s "$T/stdin.exp" "$T/stdin.out"; then ok; else bad "check-config - <$d/policy.yaml"; diff -u "$T/stdin.exp" "$T/stdin.out" | head -20; fi
done
[ -n "${name:-}" ] && ok || bad "no case in test/pools/cases/"

# ---- print-autoscaler-config ----------------------------------------------------
POLICY=test/golden/fallback-no-affinity/config.yaml
if "$BIN" print-autoscaler-config --config "$POLICY" >"$T/cm.yaml" 2>"$T/cm.err"; then ok; else bad "print-autoscaler-config exits 0"; cat "$T/cm.err"; fi
if "$BIN" print-autoscaler-config --help | grep -q 'expander=priority'; then ok; else bad "print-autoscaler-config --help"; fi
# Nothing to print is an input error (exit 2, README's table), said in one line with the command's prefix.
"$BIN" print-autoscaler-config >/dev/null 2>"$T/none.err"
rc=$?
if [ "$rc" = 2 ] && [ "$(wc -l <"$T/none.err")" -eq 1 ] &&
	grep -q '^gpu-admission print-autoscaler-config: no pool selects by kubernetes.azure.com/agentpool' "$T/none.err"; then ok
else bad "the default policy (accelerator label) has no AKS node pool to prioritise: exit $rc"; cat "$T/none.err"; fi
# Pools that select otherwise are left out with a warning; the rest is printed.
printf 'pools:\n  - {name: a, nodeSelector: {kubernetes.azure.com/agentpool: gpua}}\n  - {name: nap, nodeSelector: {karpenter.sh/nodepool: gpu}}\n' >"$T/mixed.yaml"
if "$BIN" print-autoscaler-config -c "$T/mixed.yaml" >"$T/mixed.out" 2>"$T/mixed.err" &&
	grep -q "^      - '^aks-gpua-\[0-9\]+-vmss\$'" "$T/mixed.out" &&
	grep -qx 'gpu-admission print-autoscaler-config: warning: pools nap do not select by kubernetes.azure.com/agentpool and are left out' "$T/mixed.err"
then ok; else bad "a pool of another key is left out, with a warning"; cat "$T/mixed.out" "$T/mixed.err"; fi
# An invalid --config: every error listed, then the summary; exit 2 as for every command.
printf 'placement: fallback\npools:\n  - {name: a, nodeSelector: {kubernetes.azure.com/agentpool: a}}\n  - {name: b, nodeSelector: {karpenter.sh/nodepool: b}}\nmode: loud\n' >"$T/bad.yaml"
"$BIN" print-autoscaler-config --config "$T/bad.yaml" >"$T/bad.out" 2>"$T/bad.err"
rc=$?
if [ "$rc" = 2 ] && [ ! -s "$T/bad.out" ] && grep -q "^$T/bad.yaml:4:29: pools\[1\].nodeSelector: placement fallback" "$T/bad.err" &&
	grep -qx "gpu-admission print-autoscaler-config: $T/bad.yaml: 2 errors" "$T/bad.err"; then ok
else bad "print-autoscaler-config with an invalid --config: exit $rc"; cat "$T/bad.err"; fi
TOOLBIN=$(sh .ci/helm 2>"$T/tools.log")
if [ -z "$TOOLBIN" ]; then
	cat "$T/tools.log"
	bad "install the OpenAPI validators (.ci/helm)"
else
	export TOOLS="${TOOLBIN%/bin}"
	node test/helm/check.js --validate "$T/cm.yaml" >"$T/check.log" 2>&1
	if grep -q '^ok - ' "$T/check.log" && ! grep -q '^not ok' "$T/check.log"; then ok
	else bad "the ConfigMap validates against the Kubernetes OpenAPI schema"; cat "$T/check.log"; fi
	# The priorities, parsed as the expander parses them, in the policy's pool order.
	if node -e '
		const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs");
		const docs = Y.parseAllDocuments(fs.readFileSync(process.argv[1], "utf8")).map((d) => d.toJS());
		const policy = Y.parse(fs.readFileSync(process.argv[2], "utf8"));
		const fail = (m) => { console.log(m); process.exit(1); };
		if (docs.length !== 1) fail("want one object, got " + docs.length);
		const cm = docs[0];
		if (cm.kind !== "ConfigMap" || cm.metadata.name !== "cluster-autoscaler-priority-expander" ||
		    cm.metadata.namespace !== "kube-system") fail("not kube-system/cluster-autoscaler-priority-expander");
		const prio = Y.parse(cm.data.priorities);
		const levels = Object.keys(prio).map(Number).sort((a, b) => b - a);
		if (levels.some((p) => !Number.isInteger(p) || p <= 0)) fail("priorities must be positive integers");
		const pools = policy.pools.map((p) => p.nodeSelector["kubernetes.azure.com/agentpool"]);
		const groups = pools.map((p) => "aks-" + p + "-31415926-vmss").concat(["aks-system-31415926-vmss"]);
		// What the expander does for each group: its highest matching priority.
		const best = (id) => Math.max(-1, ...levels.filter((p) => prio[p].some((re) => new RegExp(re).test(id))));
		const ranks = groups.map(best);
		for (let i = 1; i < ranks.length; i++)
			if (!(ranks[i] < ranks[i - 1])) fail("groups not in pool order: " + groups.map((g, j) => g + "=" + ranks[j]).join(" "));
		if (ranks[ranks.length - 1] < 0) fail("a CPU node group matches nothing (the expander would not use it)");
		// Each pool regex matches its own scale set only (gput4 is not gput4spot).
		for (const p of levels.slice(0, -1))
			for (const re of prio[p]) {
				const hits = groups.filter((g) => new RegExp(re).test(g));
				if (hits.length !== 1) fail(re + " matches " + hits.join(", "));
			}
	' "$T/cm.yaml" "$POLICY" >"$T/order.log" 2>&1; then ok; else bad "priorities follow the pool order"; cat "$T/order.log"; fi
fi

# ---- print-kueue-config -------------------------------------------------------------
# Kueue's objects from the same pools: a ResourceFlavor per pool whose nodeLabels and
# tolerations are what gpu-admission gives the pool's pods, the ClusterQueue's flavors in
# the policy's order, quotas only where the pool serves the resource (the CRDs themselves
# are applied by test/cluster/scenarios/85-kueue.sh).
if "$BIN" print-kueue-config -c "$POLICY" --pool t4 --pool t4-spot --quota nvidia.com/gpu=4 --quota cpu=8 \
	--resource nvidia.com/mig-1g.10gb --local-queue ml >"$T/kq.yaml" 2>"$T/kq.err"; then ok
else bad "print-kueue-config exits 0"; cat "$T/kq.err"; fi
if grep -qx 'gpu-admission print-kueue-config: note: pool t4-spot admits only pods its podSelector matches; .*' "$T/kq.err"; then ok
else bad "print-kueue-config notes a podSelector Kueue cannot be told"; cat "$T/kq.err"; fi
"$BIN" print-kueue-config -c "$POLICY" --pool v100 >"$T/kq-bad.out" 2>"$T/kq-bad.err"
rc=$?
if [ "$rc" = 2 ] && [ ! -s "$T/kq-bad.out" ] && grep -qx 'gpu-admission print-kueue-config: no pool is named "v100"' "$T/kq-bad.err"; then ok
else bad "print-kueue-config --pool v100: exit $rc"; cat "$T/kq-bad.err"; fi
if [ -n "${TOOLS:-}" ] && node -e '
	const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs");
	const docs = Y.parseAllDocuments(fs.readFileSync(process.argv[1], "utf8")).map((d) => d.toJS()).filter((o) => o);
	const policy = Y.parse(fs.readFileSync(process.argv[2], "utf8"));
	const fail = (m) => { console.log(m); process.exit(1); };
	const kinds = docs.map((o) => o.kind).join(" ");
	if (kinds !== "ResourceFlavor ResourceFlavor ResourceFlavor ResourceFlavor ClusterQueue LocalQueue") fail("kinds: " + kinds);
	if (docs.some((o) => o.apiVersion !== "kueue.x-k8s.io/v1beta2")) fail("not kueue.x-k8s.io/v1beta2");
	for (const p of policy.pools) {
		const f = docs.find((o) => o.kind === "ResourceFlavor" && o.metadata.name === p.name);
		if (!f) fail("no flavor " + p.name);
		if (JSON.stringify(f.spec.nodeLabels) !== JSON.stringify(p.nodeSelector)) fail(p.name + ": nodeLabels " + JSON.stringify(f.spec.nodeLabels));
		const want = [{key: "sku", operator: "Equal", value: "gpu", effect: "NoSchedule"}]
			.concat((p.tolerations || []).map((t) => ({key: t.key, operator: t.operator || "Equal", value: t.value, effect: t.effect})));
		if (JSON.stringify(f.spec.tolerations) !== JSON.stringify(want)) fail(p.name + ": tolerations " + JSON.stringify(f.spec.tolerations));
	}
	const cq = docs.find((o) => o.kind === "ClusterQueue"), rg = cq.spec.resourceGroups[0];
	if (rg.flavors.map((f) => f.name).join(",") !== "t4-spot,t4") fail("flavors not in the policy order: " + rg.flavors.map((f) => f.name));
	if (rg.coveredResources.join(",") !== "cpu,memory,nvidia.com/gpu,nvidia.com/mig-1g.10gb") fail("covered: " + rg.coveredResources);
	for (const f of rg.flavors) {
		const q = Object.fromEntries(f.resources.map((r) => [r.name, r.nominalQuota]));
		if (q.cpu !== "8" || q.memory !== "0" || q["nvidia.com/gpu"] !== "4" || q["nvidia.com/mig-1g.10gb"] !== "0") fail(f.name + ": quotas " + JSON.stringify(q));
	}
	const lq = docs.find((o) => o.kind === "LocalQueue");
	if (lq.metadata.namespace !== "ml" || lq.spec.clusterQueue !== cq.metadata.name) fail("LocalQueue " + JSON.stringify(lq));
' "$T/kq.yaml" "$POLICY" >"$T/kq.log" 2>&1; then ok; else bad "print-kueue-config: flavors are the pools, in order"; cat "$T/kq.log"; fi

# ---- serve: the decision line names the eligible pools ---------------------------
"$BIN" serve --self-signed --addr 127.0.0.1:0 --config "$POLICY" 2>"$T/serve.log" &
SERVER_PID=$!
listening() {
	PORT=$(sed -n 's/.*"msg":"listening".*"port":"\([0-9]*\)","scheme":"https".*/\1/p' "$T/serve.log")
	[ -n "$PORT" ]
}
eventually 60 listening
curl -sS -k --max-time 10 -H 'Content-Type: application/json' \
	--data-binary @test/golden/fallback-no-affinity/request.json "https://127.0.0.1:$PORT/mutate" >"$T/resp.json" 2>&1
eventually 60 grep -q '"msg":"admission"' "$T/serve.log"
if grep '"msg":"admission"' "$T/serve.log" | grep -q '"pools":"t4-spot,t4,a100"'; then ok
else bad "the decision log line names the eligible pools"; cat "$T/serve.log" "$T/resp.json"; fi
kill "$SERVER_PID" 2>/dev/null
wait "$SERVER_PID" 2>/dev/null
SERVER_PID=

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
