#!/bin/sh
# Chart, plain manifests and install sequence, with the real tools: Helm 4 and
# kubectl (from the npm package that ships them, via .ci/helm), the Kubernetes
# OpenAPI validators (test/helm/check.js), openssl, and the built binary.
#
# The suite e2e/helm: this driver, beside its cases. A case is a directory,
# test/helm/cases/<case>/, holding values.yaml (Helm values). For every case: helm
# lint --strict, render, check every object (schema, strict fields, the chart's
# contract), check-config on the rendered policy, and in helm cert mode verify the
# generated certificates. Then: values.schema.json refuses bad values, the chart's
# default policy is the binary's, the three-pool policy steers pods, manifests/
# matches the chart, the chart's README is what `helm show readme` prints, its
# manifests sequence yields valid objects, and `serve`, started with the chart's own
# arguments and certificate, answers over TLS on loopback.
#
# Run from the repository root; BIN is the binary under test. Last line:
# "N passed, M failed"; exit status non-zero on any failure.
set -u
BIN=${BIN:-bin/gpu-admission}
. test/check.lib
finish() {
	[ -n "${SERVE_PID:-}" ] && kill "$SERVE_PID" 2>/dev/null && wait "$SERVE_PID" 2>/dev/null
	rm -rf "$T"
	echo "$pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit $?
}
T=$(mktemp -d)
trap 'finish' EXIT
trap 'exit 1' INT TERM

TOOLBIN=$(sh .ci/helm 2>"$T/tools.log") || { cat "$T/tools.log"; notok "install helm and validators (.ci/helm)"; exit 1; }
HELM=$TOOLBIN/helm
KUBECTL=$TOOLBIN/kubectl
CHART=charts/gpu-admission
NS=gpu-admission
export TOOLS="${TOOLBIN%/bin}"

# ---- every configuration -----------------------------------------------------
# A case may also hold policies.args: the arguments of `gpu-admission
# print-admission-policies` whose output is the case's inProcessPolicies.manifest
# (--set-file, as the README installs it); helm.args: the cluster helm template
# stands for (--kube-version, --api-versions); kinds: the kinds it must render,
# sorted, and nothing else.
for values in test/helm/cases/*/values.yaml; do
	cd_=$(dirname "$values")
	c=$(basename "$cd_")
	d=$T/$c
	mkdir -p "$d"
	set -- -f "$values"
	lint=""
	if [ -f "$cd_/policies.args" ]; then
		# shellcheck disable=SC2046
		"$BIN" print-admission-policies $(cat "$cd_/policies.args") >"$d/policies.yaml" ||
			notok "$c: print-admission-policies $(cat "$cd_/policies.args")"
		# helm lint has no --api-versions, so the MutatingAdmissionPolicy guard would
		# refuse: it lints the case with the validating policies only.
		awk '/^---/ { if (doc !~ /\nkind: Mutating/) printf "%s", doc; doc = "" } { doc = doc "\n" $0 }
			END { if (doc !~ /\nkind: Mutating/) printf "%s\n", doc }' "$d/policies.yaml" >"$d/lint-policies.yaml"
		lint="--set-file inProcessPolicies.manifest=$d/lint-policies.yaml"
		set -- "$@" --set-file "inProcessPolicies.manifest=$d/policies.yaml"
	fi
	desc="$c: helm lint --strict"
	# shellcheck disable=SC2086
	t "$HELM" lint --strict "$CHART" -n "$NS" -f "$values" $lint $(sed -n 's/.*\(--kube-version [^ ]*\).*/\1/p' "$cd_/helm.args" 2>/dev/null)
	# shellcheck disable=SC2046
	[ -f "$cd_/helm.args" ] && set -- "$@" $(cat "$cd_/helm.args")
	desc="$c: helm template"; t sh -c "\"\$0\" template gpu-admission '$CHART' -n '$NS' \"\$@\" >'$d/render.yaml'" "$HELM" "$@"
	node test/helm/check.js "$c" "$d/render.yaml" "$d" >"$d/check.log" 2>&1
	p=$(grep -c '^ok - ' "$d/check.log")
	f=$(grep -c '^not ok - ' "$d/check.log")
	grep -v '^ok - ' "$d/check.log" | grep -v 'check.js: .* passed' | indent
	if [ "$p" -eq 0 ]; then notok "$c: check.js ran no check"; fi
	pass=$((pass + p)); fail=$((fail + f))
	echo "ok - $c: $p object and contract checks ($f failed)"

	if [ -f "$cd_/kinds" ]; then
		desc="$c: renders exactly the kinds of $cd_/kinds"
		t sh -c "[ -f '$d/kinds' ] && diff -u '$cd_/kinds' '$d/kinds'"
	else
		desc="$c: rendered policy accepted by gpu-admission check-config"
		t sh -c "'$BIN' check-config '$d/policy.yaml' | grep -qx 'configuration OK'"
	fi

	if [ -f "$d/ca.crt" ]; then
		desc="$c: generated serving certificate verifies against the caBundle"
		t openssl verify -CAfile "$d/ca.crt" "$d/tls.crt"
		desc="$c: serving certificate names the Service (all four DNS forms)"
		t sh -c "openssl x509 -in '$d/tls.crt' -noout -ext subjectAltName >'$d/san' &&
			for n in gpu-admission gpu-admission.$NS gpu-admission.$NS.svc gpu-admission.$NS.svc.cluster.local; do
				grep -qE \"DNS:\$n(,|\$)\" '$d/san' || { echo \"missing \$n\"; cat '$d/san'; exit 1; }; done"
		desc="$c: tls.key matches tls.crt"
		t sh -c "[ \"\$(openssl x509 -in '$d/tls.crt' -noout -pubkey)\" = \"\$(openssl pkey -in '$d/tls.key' -pubout)\" ]"
	fi
done

# ---- the policies-only install refuses what it cannot do ---------------------------
"$BIN" print-admission-policies --kubernetes-version 1.36 >"$T/policies-1.36.yaml"
refused() { # WHAT ARGS...: helm template fails, saying WHAT
	w=$1; shift
	if "$HELM" template gpu-admission "$CHART" -n "$NS" "$@" >"$T/refused.out" 2>&1; then return 1; fi
	grep -q "$w" "$T/refused.out" || { cat "$T/refused.out"; return 1; }
}
desc="webhook.enabled=false without inProcessPolicies is refused (it would install nothing)"
t refused "nothing would be installed" --set webhook.enabled=false
desc="policies only: a webhook feature (metrics) is refused"
t refused "metrics.enabled needs the webhook" --set webhook.enabled=false --set inProcessPolicies.enabled=true \
	--set-file "inProcessPolicies.manifest=$T/policies-1.36.yaml" --set metrics.enabled=true --kube-version 1.36.0 \
	--api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy
desc="policies only: claimLookups.enabled=true is refused (auto, the default, is not: it is off without the webhook)"
t refused "claimLookups.enabled needs the webhook" --set webhook.enabled=false --set inProcessPolicies.enabled=true \
	--set-file "inProcessPolicies.manifest=$T/policies-1.36.yaml" --set claimLookups.enabled=true --kube-version 1.36.0 \
	--api-versions admissionregistration.k8s.io/v1/MutatingAdmissionPolicy
desc="policies printed for 1.36 on a cluster that does not serve MutatingAdmissionPolicy v1 are refused"
t refused "does not serve admissionregistration.k8s.io/v1 MutatingAdmissionPolicy" --set webhook.enabled=false \
	--set inProcessPolicies.enabled=true --set-file "inProcessPolicies.manifest=$T/policies-1.36.yaml" --kube-version 1.34.0
desc="policies on Kubernetes 1.29 (no ValidatingAdmissionPolicy v1) are refused"
t refused "has no ValidatingAdmissionPolicy v1" --set webhook.enabled=false --set inProcessPolicies.enabled=true \
	--set-file "inProcessPolicies.manifest=$T/policies-1.36.yaml" --kube-version 1.29.0

# ---- the PrometheusRule's alerts: promtool check rules and promtool test rules --
# (test/helm/prometheus/alerts.test.yaml; the "full" case renders the rule.)
if command -v promtool >/dev/null 2>&1; then
	mkdir -p "$T/promtool"
	cp "$T/full/rules.yaml" test/helm/prometheus/alerts.test.yaml "$T/promtool/" 2>/dev/null
	desc="PrometheusRule: promtool check rules"; t promtool check rules "$T/promtool/rules.yaml"
	desc="PrometheusRule: promtool test rules (every alert fires, and only when it should)"
	t sh -c "cd '$T/promtool' && promtool test rules alerts.test.yaml"
	# What the watch really exports: test/tools/watch_metrics runs it (publishing on) against
	# the unit tests' fake API server and prints its /metrics. Prometheus refuses a scrape
	# that names a family twice (a second HELP or TYPE line), so promtool must parse it.
	desc="the watch's /metrics (test/tools/watch_metrics): promtool check metrics"
	t sh -c "'${BUILD:-build}/test/watch_metrics' >'$T/promtool/watch-metrics.txt' &&
		promtool check metrics <'$T/promtool/watch-metrics.txt'"
else
	notok "promtool missing (sh .ci/deps test installs the prometheus package)"
fi

# ---- the chart refuses every policy check-config refuses (issue 23) ----------
# Each test/pools/cases/<case>/policy.yaml, as the chart's policy value: a case the
# binary refuses (its expect ends "exit 1") must fail helm template and helm
# install, and at every field check-config names (its path, as the schema's JSON
# Pointer or a template fail's "policy.FIELD:"); a valid one must render, and
# the rendered policy pass check-config. On a first install no replica is there
# yet to refuse the ConfigMap: the install itself must.
chart_refuses() { # CASE.yaml -> 0 when helm refused at every field check-config names
	"$HELM" template gpu-admission "$CHART" -n "$NS" -f "$T/policy-values.yaml" >/dev/null 2>"$T/helm.err" && return 1
	"$HELM" install gpu-admission "$CHART" -n "$NS" --dry-run=client -f "$T/policy-values.yaml" \
		>/dev/null 2>"$T/install.err" && { echo "helm install --dry-run=client rendered it"; return 1; }
	"$BIN" check-config "$1" 2>&1 | node -e '
		const fs = require("fs");
		const out = fs.readFileSync(process.argv[1], "utf8");
		// Paths helm names, in check-config form: /policy/pools/0/a~1b -> pools[0].a/b.
		const norm = (ptr) => ptr.replace(/^\/policy\/?/, "").split("/").filter((x) => x !== "")
			.map((x) => x.replace(/~1/g, "/").replace(/~0/g, "~"))
			.reduce((acc, x) => /^[0-9]+$/.test(x) ? acc + "[" + x + "]" : acc + (acc ? "." : "") + x, "");
		const helm = [...out.matchAll(/at \x27(\/policy[^\x27]*)\x27/g)].map((m) => norm(m[1]))
			.concat([...out.matchAll(/policy\.([^: ]+):/g)].map((m) => m[1]));
		const under = (a, b) => b === "" ? a !== "" : a.startsWith(b + ".") || a.startsWith(b + "[");
		const missed = [];
		for (const line of fs.readFileSync(0, "utf8").split("\n")) {
			const m = /^[^:]+:[0-9]+:[0-9]+: ([^:]+): /.exec(line);
			if (!m) continue;
			const p = m[1];
			const ok = helm.some((h) => h === p || under(h, p) ||
				(under(p, h) && out.includes("\x27" + p.slice(h.length).replace(/^[.[]/, "").split(/[.[]/)[0] + "\x27")));
			if (!ok) missed.push(p);
		}
		if (missed.length) { console.log("not refused at: " + missed.join(", ") + "\n" + out); process.exit(1); }
	' "$T/helm.err"
}
agree() { # POLICY.yaml: what check-config refuses the chart refuses; what it accepts, the chart renders
	c=$(basename "$(dirname "$1")")
	{ printf 'image:\n  repository: myacr.azurecr.io/gpu-admission\npolicy:\n'; sed 's/^/  /' "$1"; } >"$T/policy-values.yaml"
	if "$BIN" check-config "$1" >/dev/null 2>&1; then
		desc="policy $c, valid: rendered, and the rendered policy passes check-config"
		t sh -c "'$HELM' template gpu-admission '$CHART' -n '$NS' -f '$T/policy-values.yaml' >'$T/policy-render.yaml' &&
			node -e '
				const Y = require(process.env.TOOLS + \"/node_modules/yaml\"), fs = require(\"fs\");
				const cm = Y.parseAllDocuments(fs.readFileSync(process.argv[1], \"utf8\")).map((d) => d.toJS())
					.find((o) => o && o.kind === \"ConfigMap\" && o.data && o.data[\"policy.yaml\"]);
				fs.writeFileSync(process.argv[2], cm.data[\"policy.yaml\"]);
			' '$T/policy-render.yaml' '$T/policy-rendered.yaml' &&
			'$BIN' check-config '$T/policy-rendered.yaml' | grep -qx 'configuration OK'"
	else
		desc="policy $c, refused by check-config: refused by helm template and helm install, at each field"
		t chart_refuses "$1"
	fi
}
for f in test/pools/cases/*/policy.yaml; do agree "$f"; done
# The limits, at and one past each (the schema repeats them: they must agree).
B=$T/bounds
mkdir -p "$B"
seqf() { i=1; while [ $i -le "$2" ]; do printf "$1" $i $i; i=$((i + 1)); done; }
long() { head -c "$1" /dev/zero | tr '\0' a; }
for n in 64 65; do
	{ echo 'pools:'; seqf '  - {name: p%d, nodeSelector: {example.com/pool: v%d}}\n' $n; } >"$B/pools-$n.yaml"
	{ printf 'pools:\n  - name: wide\n    nodeSelector:\n'; seqf '      example.com/l%d: "v%d"\n' $n; } >"$B/selector-$n.yaml"
done
for n in 32 33; do
	{ printf 'pools:\n  - name: t\n    nodeSelector: {example.com/pool: t}\n    tolerations:\n'; seqf '      - {key: example.com/t%d, value: v%d}\n' $n; } >"$B/tolerations-$n.yaml"
done
for n in 1024 1025; do { echo 'gpuResources:'; seqf '  - example.com/gpu%d-%d\n' $n; } >"$B/list-$n.yaml"; done
for n in 316 317; do printf 'gpuNodeNames: ["%s"]\n' "$(long $n)" >"$B/string-$n.yaml"; done
for n in 63 64; do
	printf 'pools:\n  - {name: t, nodeSelector: {example.com/pool: t}, podSelector: {matchLabels: {team: "%s"}}}\n' "$(long $n)" >"$B/label-value-$n.yaml"
	printf 'deferLabels: ["example.com/%s"]\n' "$(long $n)" >"$B/label-name-$n.yaml"
done
for n in 253 254; do printf 'deferLabels: ["%s/queue"]\n' "$(long $n)" >"$B/label-prefix-$n.yaml"; done
for n in 1000000 1000001; do
	printf 'pools:\n  - {name: t, nodeSelector: {example.com/pool: t}, maxGPUsPerPod: %s}\n' $n >"$B/max-gpus-$n.yaml"
done
for f in "$B"/*.yaml; do agree "$f"; done

# ---- values.schema.json and template guards refuse bad values ----------------
refuse() {
	desc="refused: $1"
	shift
	if "$HELM" template gpu-admission "$CHART" -n "$NS" "$@" >"$T/out" 2>&1; then
		notok "$desc (rendered)"
	elif grep -qiE "$want" "$T/out"; then
		ok "$desc"
	else
		notok "$desc (wrong error)"; indent "$T/out" | head -n 5
	fi
}
want='schema'
refuse "unknown certs.mode" --set certs.mode=vault
refuse "unknown policy.mode" --set policy.mode=strict
refuse "unknown namespaceModes mode" --set policy.namespaceModes.team=audit
refuse "unknown failurePolicy" --set webhook.mutating.failurePolicy=Retry
refuse "unknown policyCheck failurePolicy" --set webhook.policyCheck.failurePolicy=Retry
refuse "policyCheck.enabled as a string" --set-string webhook.policyCheck.enabled=yes
refuse "replicaCount as a string" --set-string replicaCount=two
refuse "timeoutSeconds above 30" --set webhook.timeoutSeconds=31
refuse "unknown top-level key" --set replicas=3
refuse "unknown policy field" --set policy.gpuTaints.key=x
refuse "pool without a name" --set 'policy.pools[0].maxGPUsPerPod=1' --set 'policy.pools[0].name=null'
refuse "maxGPUsPerPod negative" --set 'policy.pools[0].maxGPUsPerPod=-1'
refuse "taint effect misspelt" --set policy.gpuTaint.effect=NoSchedul
refuse "pricePerNodeHour negative" --set 'policy.pools[0].name=gpu' --set 'policy.pools[0].pricePerNodeHour=-1'
refuse "gpusPerNode zero" --set 'policy.pools[0].name=gpu' --set 'policy.pools[0].gpusPerNode=0'
refuse "unknown placement" --set policy.placement=spread
refuse "pool toleration operator misspelt" --set 'policy.pools[0].name=gpu' --set 'policy.pools[0].tolerations[0].key=k' \
	--set 'policy.pools[0].tolerations[0].operator=Exist'
refuse "pool podSelector operator Gt" --set 'policy.pools[0].name=gpu' \
	--set 'policy.pools[0].podSelector.matchExpressions[0].key=k' --set 'policy.pools[0].podSelector.matchExpressions[0].operator=Gt'
refuse "pool namespace glob with a slash" --set 'policy.pools[0].name=gpu' --set 'policy.pools[0].namespaces[0]=ml/*'
refuse "unknown prometheusRule key" --set prometheusRule.severity=page
refuse "certExpiryDays zero" --set prometheusRule.certExpiryDays=0
refuse "rejectionSpike factor not above 1" --set prometheusRule.rejectionSpike.factor=1
refuse "unknown grafanaDashboard key" --set grafanaDashboard.uid=x
refuse "claimLookups.enabled neither auto, true nor false" --set claimLookups.enabled=maybe
refuse "claimLookups.enabled \"true\" as a string (auto, true or false)" --set-string claimLookups.enabled=true
want='caBundle is required'
refuse "secret mode without caBundle" --set certs.mode=secret
want='needs metrics.enabled'
refuse "ServiceMonitor without the metrics port" --set serviceMonitor.enabled=true --set image.repository=r/g
# No default image (none is published). A look-only render (helm template, helm lint,
# --dry-run) shows the chart with a placeholder image no registry serves, and says so ...
desc="no image.repository: helm template renders, with a placeholder image and a warning"
if "$HELM" template gpu-admission "$CHART" -n "$NS" >"$T/noimg.yaml" 2>"$T/noimg.err"; then
	ok "$desc"
	has "$T/noimg.yaml" "image: image-repository-not-set.invalid/gpu-admission:$(cat VERSION)" "no image.repository: the placeholder image"
	has "$T/noimg.yaml" "# WARNING: image.repository is not set: this render is for reading." "no image.repository: the render says so"
	lacks "$T/noimg.yaml" "image.repository is required" "no image.repository: no error in the render"
else
	notok "$desc"; indent "$T/noimg.err" | head -n 5
fi
"$HELM" lint --strict "$CHART" -n "$NS" >"$T/noimg.lint" 2>&1
equals "$?" 0 "no image.repository: helm lint --strict passes"
lacks "$T/noimg.lint" "image.repository is required" "no image.repository: helm lint prints no error"
"$HELM" install gpu-admission "$CHART" -n "$NS" --dry-run=client >"$T/noimg.notes" 2>&1
has "$T/noimg.notes" "WARNING: image.repository is not set" "no image.repository: helm install --dry-run's notes say so"
# ... while an install (rendered against an API server, here a stub answering discovery and
# kube-system) fails before anything is created, saying how to make the image and push it
# under the chart's own version, once.
node test/helm/fake-api.js >"$T/api.port" 2>"$T/api.err" &
API=$!
eventually 10 test -s "$T/api.port"
printf 'apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: "http://127.0.0.1:%s"}}]\nusers: [{name: u, user: {token: t}}]\ncontexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\n' \
	"$(cat "$T/api.port")" >"$T/api.kubeconfig"
want="image.repository is required.*make image.*podman push.*gpu-admission:$(cat VERSION)[^0-9.].*--set image.repository="
desc="no image.repository: an install is refused, saying how to build and push the image"
if KUBECONFIG=$T/api.kubeconfig "$HELM" template gpu-admission "$CHART" -n "$NS" --dry-run=server >"$T/noimg.out" 2>&1; then
	notok "$desc (rendered)"
elif grep -qE "$want" "$T/noimg.out"; then
	ok "$desc"
else
	notok "$desc (wrong error)"; indent "$T/noimg.out" | head -n 5
fi
equals "$(grep -c "image.repository is required" "$T/noimg.out")" 1 "no image.repository: the install's error is said once"
kill "$API" 2>/dev/null; wait "$API" 2>/dev/null

# ---- kubeVersion and templates agree (issue 14) --------------------------------
IMG="--set image.repository=myacr.azurecr.io/gpu-admission"
# preStop sleep: alpha and off in 1.29, absent in 1.28, on by default from 1.30.
for kv in 1.28.0 1.29.0 1.30.0 1.33.0; do
	desc="kube $kv: renders (Chart.yaml kubeVersion >=1.28), preStop sleep only where it is on"
	want_sleep=0
	case $kv in 1.28.*|1.29.*) ;; *) want_sleep=1 ;; esac
	t sh -c "'$HELM' template gpu-admission '$CHART' -n '$NS' $IMG --kube-version $kv >'$T/kv.yaml' &&
		[ \$(grep -c '^ *sleep:' '$T/kv.yaml') -eq $want_sleep ]"
done
desc="kube 1.27: refused by Chart.yaml kubeVersion"
t sh -c "! '$HELM' template gpu-admission '$CHART' -n '$NS' $IMG --kube-version 1.27.0 >/dev/null 2>&1"
# NetworkPolicy with the ServiceMonitor: the scrapes are admitted; metricsFrom narrows them.
np_metrics() { # VALUES... -> prints the peers allowed on the metrics port as JSON ("open": anyone)
	"$HELM" template gpu-admission "$CHART" -n "$NS" $IMG --set metrics.enabled=true \
		--set serviceMonitor.enabled=true --set networkPolicy.enabled=true "$@" >"$T/np.yaml" &&
	node -e '
		const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs");
		const np = Y.parseAllDocuments(fs.readFileSync(process.argv[1], "utf8")).map((d) => d.toJS())
			.find((o) => o && o.kind === "NetworkPolicy");
		const r = (np.spec.ingress || []).filter((i) => (i.ports || []).some((p) => p.port === "metrics"));
		console.log(r.length === 0 ? "blocked" : r.some((i) => !i.from) ? "open" : JSON.stringify(r.map((i) => i.from)));
	' "$T/np.yaml"
}
desc="NetworkPolicy + ServiceMonitor, no metricsFrom: the metrics port admits the scrapes"
got=$(np_metrics)
if [ "$got" = open ]; then ok "$desc"; else notok "$desc"; echo "    got $got"; fi
desc="NetworkPolicy + ServiceMonitor with metricsFrom: only those peers"
got=$(np_metrics --set 'networkPolicy.metricsFrom[0].namespaceSelector.matchLabels.team=mon')
if [ "$got" = '[[{"namespaceSelector":{"matchLabels":{"team":"mon"}}}]]' ]; then ok "$desc"; else notok "$desc"; echo "    got $got"; fi

# ---- the chart's default policy is the binary's embedded default --------------
desc="chart default policy equals gpu-admission print-default-config"
"$BIN" print-default-config >"$T/default-policy.yaml" 2>&1
t node -e '
	const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs");
	const a = Y.parse(fs.readFileSync(process.argv[1], "utf8")), b = Y.parse(fs.readFileSync(process.argv[2], "utf8"));
	const norm = (v) => JSON.stringify(v, (k, x) => x && typeof x === "object" && !Array.isArray(x) ?
		Object.keys(x).sort().reduce((o, k2) => (o[k2] = x[k2], o), {}) : x);
	if (norm(a) !== norm(b)) { console.log("chart:  " + norm(a)); console.log("binary: " + norm(b)); process.exit(1); }
' "$T/defaults/policy.yaml" "$T/default-policy.yaml"

# ---- the three-pool policy steers pods the way the policy guide says ---------
review() { # COUNT -> prints the response
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u-%s","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":"%s"}}}]}}}}' "$1" "$1" |
		"$BIN" review --config "$T/three-pools/policy.yaml"
}
for pair in 1:t4 8:a100; do
	n=${pair%%:*}; pool=${pair#*:}
	desc="three pools: a pod asking $n GPU(s) goes to $pool"
	out=$(review "$n")
	if echo "$out" | grep -q "\"pool\":\"$pool\"" && echo "$out" | grep -q '"allowed":true'; then ok "$desc"; else notok "$desc"; echo "    $out"; fi
done
desc="three pools: a pod asking 16 GPUs is rejected, naming the largest pool"
out=$(review 16)
if echo "$out" | grep -q '"allowed":false' && echo "$out" | grep -qE 'a100|h100'; then ok "$desc"; else notok "$desc"; echo "    $out"; fi

# ---- NOTES.txt: its check command is runnable and its pod is a GPU pod we patch
"$HELM" install gpu-admission "$CHART" -n "$NS" --dry-run=client --set image.repository=myacr.azurecr.io/gpu-admission \
	>"$T/install.txt" 2>&1
sed -n '/^NOTES:/,$p' "$T/install.txt" >"$T/notes.txt"
desc="NOTES: tells to check with kubectl create --dry-run=server -o yaml"
t grep -q "^kubectl create --dry-run=server -o yaml -f - <<'POD'" "$T/notes.txt"
sed -n "/<<'POD'/,/^POD\$/p" "$T/notes.txt" | sed '1d;$d' >"$T/notes-pod.yaml"
desc="NOTES: its pod, reviewed by the chart's policy, gets the toleration the notes promise"
t node -e '
	const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs"), cp = require("child_process");
	const pod = Y.parse(fs.readFileSync(process.argv[1], "utf8"));
	if (!pod || pod.kind !== "Pod") { console.log("no pod in NOTES"); process.exit(1); }
	const rev = { apiVersion: "admission.k8s.io/v1", kind: "AdmissionReview", request: { uid: "notes",
		kind: { group: "", version: "v1", kind: "Pod" }, resource: { group: "", version: "v1", resource: "pods" },
		namespace: pod.metadata.namespace, operation: "CREATE", object: pod } };
	const out = JSON.parse(cp.execFileSync(process.argv[2], ["review", "--config", process.argv[3]], { input: JSON.stringify(rev) }));
	const patch = Buffer.from(out.response.patch || "", "base64").toString();
	if (!/"key":"sku"/.test(patch) || !/"value":"gpu"/.test(patch) || !/"effect":"NoSchedule"/.test(patch)) {
		console.log(JSON.stringify(out)); process.exit(1); }
' "$T/notes-pod.yaml" "$BIN" "$T/defaults/policy.yaml"
desc="NOTES: the pod namespace is one the webhooks cover"
t sh -c "grep -q 'namespace: default' '$T/notes-pod.yaml' && ! grep -q '\"default\"' '$T/defaults/render.yaml'"

# ---- a single replica gets no PDB (it would block every node drain) -----------
desc="replicaCount=1 renders no PodDisruptionBudget"
t sh -c "'$HELM' template gpu-admission '$CHART' -n '$NS' $IMG --set replicaCount=1 | grep -q '^kind: Deployment' &&
	! '$HELM' template gpu-admission '$CHART' -n '$NS' $IMG --set replicaCount=1 | grep -q '^kind: PodDisruptionBudget'"

# ---- manifests/ is the chart's render ----------------------------------------
desc="manifests/gpu-admission.yaml matches the chart (regenerate: make manifests)"
t sh -c "HELM='$HELM' sh test/helm/manifests.sh >'$T/manifests.yaml' && diff -u manifests/gpu-admission.yaml '$T/manifests.yaml'"

# ---- the chart's README is what `helm show readme` prints, packaged too -------
desc="helm show readme prints charts/gpu-admission/README.md"
# (helm prints a newline after the file's own last one)
t sh -c "'$HELM' show readme '$CHART' >'$T/readme.txt' && [ -s '$T/readme.txt' ] &&
	sed '\${/^\$/d}' '$T/readme.txt' | diff -u '$CHART/README.md' -"
desc="the packaged chart carries its README (helm package, then helm show readme on the .tgz)"
t sh -c "mkdir -p '$T/pkg' && '$HELM' package '$CHART' -d '$T/pkg' >/dev/null &&
	'$HELM' show readme '$T'/pkg/gpu-admission-*.tgz | sed '\${/^\$/d}' | diff -u '$CHART/README.md' - &&
	tar -tzf '$T'/pkg/gpu-admission-*.tgz | grep -qx 'gpu-admission/README.md'"

# ---- the chart README's plain-manifests sequence ------------------------------
if "$BIN" certs --help >/dev/null 2>&1 || "$BIN" help 2>&1 | grep -q '^  certs'; then
	m=$T/manifests
	mkdir -p "$m"
	desc="sequence: gpu-admission certs writes ca.crt ca.key tls.crt tls.key caBundle"
	t sh -c "'$BIN' certs --service gpu-admission --namespace $NS --out '$m/certs' &&
		for f in ca.crt ca.key tls.crt tls.key caBundle; do [ -s '$m/certs/'\$f ] || { echo missing \$f; exit 1; }; done"
	desc="sequence: kubectl create secret tls makes the Secret the Deployment mounts"
	t sh -c "'$KUBECTL' -n $NS create secret tls gpu-admission-tls --cert='$m/certs/tls.crt' --key='$m/certs/tls.key' \
		--dry-run=client -o yaml >'$m/secret.yaml' && grep -q 'name: gpu-admission-tls' '$m/secret.yaml' &&
		grep -q 'secretName: gpu-admission-tls' manifests/gpu-admission.yaml"
	desc="sequence: the documented sed fills caBundle (the three webhook entries) and registry"
	t sh -c "sed -e \"s|\\\${CA_BUNDLE}|\$(cat '$m/certs/caBundle')|\" -e 's|\${REGISTRY}|myacr.azurecr.io|' \
		manifests/gpu-admission.yaml >'$m/apply.yaml' && ! grep -n '\\\${' '$m/apply.yaml' &&
		[ \$(grep -c \"caBundle: \$(cat '$m/certs/caBundle')\$\" '$m/apply.yaml') -eq \$(grep -c '^ *clientConfig:\$' '$m/apply.yaml') ] &&
		[ \$(grep -c '^ *clientConfig:\$' '$m/apply.yaml') -eq 4 ] &&
		grep -q 'image: myacr.azurecr.io/gpu-admission:' '$m/apply.yaml'"
	desc="sequence: caBundle decodes to the CA that signed tls.crt"
	t sh -c "base64 -d '$m/certs/caBundle' >'$m/ca-from-bundle.pem' && openssl verify -CAfile '$m/ca-from-bundle.pem' '$m/certs/tls.crt'"
	node test/helm/check.js --validate "$m/apply.yaml" >"$m/check.log" 2>&1
	node test/helm/check.js --validate "$m/secret.yaml" >>"$m/check.log" 2>&1
	p=$(grep -c '^ok - ' "$m/check.log"); f=$(grep -c '^not ok - ' "$m/check.log")
	grep '^not ok' "$m/check.log" | indent
	pass=$((pass + p)); fail=$((fail + f))
	echo "ok - sequence: $p objects valid against OpenAPI ($f failed)"
else
	notok "sequence: gpu-admission certs not available in $BIN"
fi

# ---- serve, started with the chart's arguments, answers with the chart's certificate
if "$BIN" help 2>&1 | grep -q '^  serve'; then
	d=$T/defaults
	port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
	# The Deployment's args, with the pod paths mapped onto the rendered files.
	sed -e "s|^--addr=.*|--addr=127.0.0.1:$port|" \
	    -e "s|/etc/gpu-admission/tls/|$d/|" -e "s|/etc/gpu-admission/policy/|$d/|" "$d/args" >"$d/args.local"
	set --
	while IFS= read -r a; do set -- "$@" "$a"; done <"$d/args.local"
	"$BIN" serve "$@" >"$T/serve.log" 2>&1 &
	SERVE_PID=$!
	host=gpu-admission.$NS.svc
	curl_() { curl -sS --max-time 5 --cacert "$d/ca.crt" --resolve "$host:$port:127.0.0.1" "$@"; }
	i=0
	until curl_ -o /dev/null "https://$host:$port/healthz" 2>/dev/null; do
		i=$((i + 1)); [ $i -ge 600 ] && break; sleep 0.1
	done
	for p in /healthz /readyz; do
		desc="serve (chart args): GET $p 200 over TLS, certificate trusted via caBundle for $host"
		t sh -c "[ \"\$(curl -sS --max-time 5 --cacert '$d/ca.crt' --resolve '$host:$port:127.0.0.1' -o /dev/null -w '%{http_code}' https://$host:$port$p)\" = 200 ]"
	done
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"chart-1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"ml"},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"nvidia.com/gpu":1}}}]}}}}' >"$T/review.json"
	for path in /mutate /validate; do
		desc="serve (chart args): POST $path answers the GPU pod review"
		curl_ -H 'Content-Type: application/json' --data-binary "@$T/review.json" "https://$host:$port$path" >"$T/resp.json" 2>&1
		if grep -q '"uid":"chart-1"' "$T/resp.json" &&
			{ [ "$path" = /validate ] || grep -q '"patch"' "$T/resp.json"; }; then ok "$desc"; else notok "$desc"; head -c 400 "$T/resp.json"; echo; fi
	done
	# Every metric the dashboard and the alerts use is one the server (or the report) exports
	# (Prometheus's own per-target "up" aside). Names: gpu_admission_* anywhere, and any identifier before { or [.
	desc="monitoring: every metric name in the dashboard and the PrometheusRule is in /metrics"
	curl_ "https://$host:$port/metrics" >"$T/metrics.txt" 2>&1
	# ... or one the cost report exports (every family, on a snapshot with a finding of each kind).
	"$BIN" report -o prometheus --config test/report/cases/aks-snapshot/policy.yaml \
		test/report/cases/aks-snapshot/cluster.json >>"$T/metrics.txt" 2>/dev/null
	# ... or one the live watch exports (the real watch, publishing on, against the fake API
	# server: test/tools/watch_metrics), so a gpu_admission_watch_* family renamed fails here.
	"${BUILD:-build}/test/watch_metrics" >>"$T/metrics.txt" 2>/dev/null
	t node -e '
		const fs = require("fs");
		const have = new Set(fs.readFileSync(process.argv[1], "utf8").split("\n")
			.filter((l) => l && !l.startsWith("#")).map((l) => l.split(/[{ ]/)[0]));
		const promql = fs.readFileSync(process.argv[2], "utf8");
		const names = new Set([...promql.matchAll(/\bgpu_admission_[a-z0-9_]+/g)].map((m) => m[0])
			.concat([...promql.matchAll(/\b([a-zA-Z_:][a-zA-Z0-9_:]*)\s*[{[]/g)].map((m) => m[1])));
		const builtin = new Set(["up"]);
		const missing = [...names].filter((n) => !have.has(n) && !builtin.has(n));
		if (!have.size || names.size < 8 || missing.length) {
			console.log("metrics: " + have.size + ", names used: " + [...names].join(" ") + "; missing: " + missing.join(" "));
			process.exit(1);
		}
	' "$T/metrics.txt" "$T/full/promql.txt"
	desc="serve (chart args): no errors logged at start"
	t sh -c "! grep -q '\"level\":\"error\"' '$T/serve.log'"
	kill "$SERVE_PID" 2>/dev/null
	wait "$SERVE_PID" 2>/dev/null
	SERVE_PID=
else
	notok "serve (chart args): gpu-admission serve not available in $BIN"
fi
