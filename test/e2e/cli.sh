#!/bin/sh
# The CLI as a user drives it: one grammar for every command (options, one-line
# errors, help, exit codes as the README's table says), review, check-config,
# certs, serve's log format, version, completions, the man page, make install
# and make run. Runs the real binary ($BIN) from the repo root.
. test/e2e/check.lib
WRAP=${WRAP:-}
PIDS=""
cleanup() {
	for p in $PIDS; do kill -TERM "$p" 2>/dev/null; done
	rm -rf "$tmp"
}
trap cleanup EXIT
expect_rc() { # expect_rc WANT DESCRIPTION -- command...
	want=$1; what=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else bad "$what: exit $rc, want $want"; head -5 "$tmp/err"; fi
}
lines() { # lines FILE: how many lines
	wc -l <"$1" | tr -d ' '
}

G=test/golden
# ==== review ====
expect_rc 0 "review of a GPU pod" -- $WRAP "$B" review "$G/gpu-limit-minimal/request.json"
has "$tmp/out" '"patchType":"JSONPatch"' "GPU pod answered with a patch"
expect_rc 0 "review from stdin" -- sh -c "$WRAP $B review < $G/gpu-limit-minimal/request.json"
has "$tmp/out" '"uid":' "stdin review answered"
expect_rc 0 "review from '-'" -- sh -c "$WRAP $B review - < $G/gpu-limit-minimal/request.json"
expect_rc 1 "policy rejection exits 1" -- $WRAP "$B" review "$G/cpu-toleration-sku-gpu/request.json"
has "$tmp/out" '"allowed":false' "rejection printed as an AdmissionReview"
expect_rc 1 "/validate rejects an unmutated GPU pod" -- $WRAP "$B" review --validate "$G/gpu-limit-minimal/request.json"
expect_rc 2 "malformed review exits 2" -- $WRAP "$B" review "$G/not-json/request.json"
has "$tmp/err" "gpu-admission review: $G/not-json/request.json: not valid JSON" "one-line message on stderr, the file named"
equals "$(lines "$tmp/err")" 1 "malformed review: one line"
# Input that is not JSON at all: the file named and what review reads, not the webhook's terms.
printf 'hello\n' >"$tmp/hello.txt"
expect_rc 2 "review of a text file" -- $WRAP "$B" review "$tmp/hello.txt"
has "$tmp/err" "gpu-admission review: $tmp/hello.txt: not valid JSON" "non-JSON input: the file named"
has "$tmp/err" "review reads one AdmissionReview" "non-JSON input: what review reads"
lacks "$tmp/err" "request body" "non-JSON input: not in the webhook's terms"
: >"$tmp/empty.json"
expect_rc 2 "review of an empty file" -- $WRAP "$B" review "$tmp/empty.json"
has "$tmp/err" "gpu-admission review: $tmp/empty.json: empty: review reads one AdmissionReview" "empty input explained"
printf '[1]\n' >"$tmp/array.json"
expect_rc 2 "review of a JSON array" -- $WRAP "$B" review "$tmp/array.json"
has "$tmp/err" "gpu-admission review: $tmp/array.json: " "JSON that is no review: the file named"
# On a pipe the answer is the compact AdmissionReview; on a terminal, indented with the patch decoded.
"$B" review "$G/gpu-limit-minimal/request.json" >"$tmp/piped"
equals "$(lines "$tmp/piped")" 1 "review on a pipe: one compact line"
has "$tmp/piped" '"patch":"W3' "review on a pipe: the patch in base64, as kube-apiserver reads it"
"$B" review -o pretty "$G/gpu-limit-minimal/request.json" >"$tmp/pretty"
has "$tmp/pretty" '"op": "add"' "review -o pretty: the patch decoded"
has "$tmp/pretty" '"allowed": true,' "review -o pretty: indented"
if command -v script >/dev/null 2>&1; then
	script -qec "$B review $G/gpu-limit-minimal/request.json" /dev/null >"$tmp/tty.log" 2>&1
	has "$tmp/tty.log" '"op": "add"' "review on a terminal: the patch decoded"
	lacks "$tmp/tty.log" '"patch":"W3' "review on a terminal: no base64 patch"
	script -qec "$B review -o review $G/gpu-limit-minimal/request.json" /dev/null >"$tmp/tty.log" 2>&1
	has "$tmp/tty.log" '"patch":"W3' "review -o review on a terminal: the AdmissionReview as sent"
fi
expect_rc 2 "review with a bad uid-bearing request exits 2" -- $WRAP "$B" review "$G/object-not-object/request.json"
expect_rc 2 "missing input file" -- $WRAP "$B" review /nonexistent.json
has "$tmp/err" "gpu-admission review: /nonexistent.json: No such file or directory" "missing file named"
expect_rc 0 "review with a policy file" -- $WRAP "$B" review --config "$G/pool-cheapest-fits/config.yaml" "$G/pool-cheapest-fits/request.json"
has "$tmp/out" '"pool":"t4"' "policy file applied"
expect_rc 2 "review with a broken policy file" -- $WRAP "$B" review --config "$G/pool-cheapest-fits/request.json" "$G/gpu-limit-minimal/request.json"

# A bare Pod or Deployment is not an AdmissionReview: say so, and --wrap it.
cat >"$tmp/pod.yaml" <<'EOF'
apiVersion: v1
kind: Pod
metadata:
  name: train
  namespace: ml
spec:
  containers:
    - name: cuda
      image: nvidia/cuda:12.4.0-base-ubuntu22.04
      resources:
        limits:
          nvidia.com/gpu: 1
EOF
expect_rc 2 "review of a bare Pod" -- $WRAP "$B" review "$tmp/pod.yaml"
has "$tmp/err" "gpu-admission review: $tmp/pod.yaml: this is a Pod, not an AdmissionReview: use \"gpu-admission audit $tmp/pod.yaml\", or \"gpu-admission review --wrap $tmp/pod.yaml\" to wrap it" "bare Pod explained"
equals "$(lines "$tmp/err")" 1 "bare Pod: one line"
"$B" review --wrap "$tmp/pod.yaml" >"$tmp/wrapped" 2>&1; rc=$?
equals "$rc" 0 "review --wrap of a GPU pod"
has "$tmp/wrapped" '"auditAnnotations":{"decision":"mutate","reason":"gpu-pod-mutated","mode":"enforce","pool":"gpu"}' "wrapped pod mutated"
expect_rc 0 "review --wrap -o patch" -- $WRAP "$B" review --wrap -o patch "$tmp/pod.yaml"
if jq -e '. == [{"op":"add","path":"/spec/tolerations","value":[{"key":"sku","operator":"Equal","value":"gpu","effect":"NoSchedule"}]},{"op":"add","path":"/spec/nodeSelector","value":{"kubernetes.azure.com/accelerator":"nvidia"}}]' "$tmp/out" >/dev/null; then ok
else bad "-o patch: not the decoded patch"; cat "$tmp/out"; fi
expect_rc 0 "review --wrap -o patched" -- $WRAP "$B" review --wrap -o patched "$tmp/pod.yaml"
if jq -e '.kind == "Pod" and .metadata.namespace == "ml" and .spec.tolerations[0].key == "sku" and .spec.nodeSelector["kubernetes.azure.com/accelerator"] == "nvidia" and .spec.containers[0].name == "cuda"' "$tmp/out" >/dev/null; then ok
else bad "-o patched: not the patched pod"; cat "$tmp/out"; fi
# -o patch of an AdmissionReview too; a rejection prints its message, not a patch.
expect_rc 0 "review -o patch of a review" -- $WRAP "$B" review -o patch "$G/gpu-limit-minimal/request.json"
has "$tmp/out" '"op": "add"' "decoded patch of a review"
expect_rc 1 "review -o patch of a rejected pod" -- $WRAP "$B" review -o patch "$G/cpu-toleration-sku-gpu/request.json"
has "$tmp/err" "gpu-admission review: rejected: CPU-only pod aimed at GPU nodes" "rejection message"
equals "$(lines "$tmp/out")" 0 "no patch printed for a rejection"
expect_rc 0 "review -o patched of an allowed CPU pod" -- $WRAP "$B" review -o patched "$G/cpu-nodename-cpu-node/request.json"
has "$tmp/out" '"kind": "Pod"' "unchanged object printed"
# A Deployment: the pod its ReplicaSet would create; a file of several templates: audit.
cat >"$tmp/deploy.yaml" <<'EOF'
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: shop}
spec:
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: nginx}]
      nodeSelector: {kubernetes.azure.com/accelerator: nvidia}
EOF
expect_rc 2 "review of a bare Deployment" -- $WRAP "$B" review "$tmp/deploy.yaml"
has "$tmp/err" "this is a Deployment, not an AdmissionReview" "bare Deployment explained"
# A malformed review of a workload is a review: its own error, not "this is a AdmissionReview".
jq -c 'del(.request.uid)' test/golden/workload-deployment-gpu/request.json >"$tmp/nouid.json"
expect_rc 2 "review of a Deployment's review without a uid" -- $WRAP "$B" review "$tmp/nouid.json"
has "$tmp/err" "AdmissionReview request.uid is missing or not a string" "the review's own error"
lacks "$tmp/err" "not an AdmissionReview" "a review is not taken for a manifest"
expect_rc 1 "review --wrap of a Deployment aimed at GPU nodes" -- $WRAP "$B" review --wrap "$tmp/deploy.yaml"
has "$tmp/out" '"cpu-pod-gpu-node-selector"' "Deployment's pod reviewed"
cat "$tmp/pod.yaml" >"$tmp/two.yaml"; echo --- >>"$tmp/two.yaml"; cat "$tmp/deploy.yaml" >>"$tmp/two.yaml"
expect_rc 2 "review --wrap of two templates" -- $WRAP "$B" review --wrap "$tmp/two.yaml"
has "$tmp/err" "holds 2 pod templates and --wrap takes one: gpu-admission audit $tmp/two.yaml reviews them all" "two templates explained"
# --apply: the object itself, as kubectl apply sends it to the validating webhook.
expect_rc 1 "review --apply --validate of a Deployment aimed at GPU nodes" -- $WRAP "$B" review --apply --validate "$tmp/deploy.yaml"
has "$tmp/out" '"allowed":false' "Deployment denied on /validate"
has "$tmp/out" "pod template spec.template" "denial names the template"
has "$tmp/out" "gpu-admission audit --fix" "denial says how to fix"
lacks "$tmp/out" '"patch"' "a workload is never patched"
expect_rc 2 "review --apply of two objects" -- $WRAP "$B" review --apply "$tmp/two.yaml"
has "$tmp/err" "--apply takes one object (there are several): gpu-admission audit $tmp/two.yaml judges them all" "two objects explained"
expect_rc 2 "review --wrap --apply" -- $WRAP "$B" review --wrap --apply "$tmp/deploy.yaml"
has "$tmp/err" "--wrap and --apply: one or the other" "--wrap and --apply refused"
printf 'apiVersion: apps/v1\nkind: DaemonSet\nmetadata: {name: plugin, namespace: gpu-resources}\nspec:\n  template:\n    spec:\n      containers: [{name: p, image: x}]\n      tolerations: [{key: sku, operator: Exists}]\n' >"$tmp/ds.yaml"
expect_rc 0 "review --wrap of a DaemonSet in exempt.daemonSetNamespaces: its pods are exempt" -- $WRAP "$B" review --wrap "$tmp/ds.yaml"
has "$tmp/out" '"decision":"exempt"' "DaemonSet pod exempt"
lacks "$tmp/out" "remove the toleration" "no advice that would break a device plugin"
# Elsewhere (the default lists where admins install node agents) refused, told which list to extend.
sed 's/namespace: gpu-resources/namespace: tools/' "$tmp/ds.yaml" >"$tmp/ds-tools.yaml"
expect_rc 1 "review --wrap of a DaemonSet elsewhere: refused" -- $WRAP "$B" review --wrap "$tmp/ds-tools.yaml"
has "$tmp/out" "if an admin installed this DaemonSet as a node agent, list tools there" "the refusal names exempt.daemonSetNamespaces"

# ==== check-config: every error, with its place; a missing file is an input error ====
"$B" print-default-config >"$tmp/default.yaml"
expect_rc 0 "the printed default is a valid policy" -- "$B" check-config "$tmp/default.yaml"
has "$tmp/out" "configuration OK" "check-config says OK"
cat >"$tmp/bad.yaml" <<'EOF'
mode: strict
color: red
namespaceModes: {team-a: loud}
gpuResources: nvidia.com/gpu
gpuTaint: {key: sku, effect: Sometimes}
gpuNodeNames: [[aks-gpu]]
pools:
  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gput4}, maxGPUsPerPod: lots}
  - {name: t4, nodeSelector: {kubernetes.azure.com/agentpool: gpua100}, maxGPUsPerPod: "8"}
  - {nodeSelector: {}}
exempt:
  daemonSets: "true"
  podSelectors: [{namespaces: [ml], matchLabels: {}}]
EOF
expect_rc 1 "invalid policy exits 1" -- "$B" check-config "$tmp/bad.yaml"
n=$(grep -c "^$tmp/bad.yaml:[1-9][0-9]*:[1-9][0-9]*: " "$tmp/err")
equals "$n" 13 "every error listed, one a line, each with a real line:column"
equals "$(tail -n 1 "$tmp/err")" "13 errors" "ends with the count"
lacks "$tmp/err" ":0:0:" "no error without a place"
has "$tmp/err" "$tmp/bad.yaml:1:7: mode: must be one of enforce, warn, dryrun" "error names file, line, column and field"
has "$tmp/err" "$tmp/bad.yaml:9:12: pools[1].name: two pools are named \"t4\"" "a rule over fields points at the field"
has "$tmp/err" "$tmp/bad.yaml:12:15: exempt.daemonSets: must be true or false, not a string" "a quoted boolean is a wrong type"
has "$tmp/err" "$tmp/bad.yaml:9:88: pools[1].maxGPUsPerPod: must be a whole number from 0 to 1000000, not a string" "a quoted count is a wrong type"
has "$tmp/err" "$tmp/bad.yaml:5:30: gpuTaint.effect:" "a cross-field rule at its value"
printf 'mode: warn\n' >"$tmp/one.yaml"
printf 'mode: loud\n' >"$tmp/one-bad.yaml"
expect_rc 1 "one error" -- "$B" check-config "$tmp/one-bad.yaml"
equals "$(tail -n 1 "$tmp/err")" "1 error" "singular"
expect_rc 2 "check-config of a missing file" -- "$B" check-config "$tmp/missing.yaml"
has "$tmp/err" "gpu-admission check-config: $tmp/missing.yaml: No such file or directory" "missing file named"
expect_rc 2 "check-config without a file" -- "$B" check-config
expect_rc 2 "check-config with two files" -- "$B" check-config "$tmp/one.yaml" "$tmp/one.yaml"
# serve --config: one log line per error, then that it runs not ready and retries (an invalid policy
# does not stop it: issue 14, tested further in server_resilience.sh); SIGTERM stops it cleanly.
$WRAP "$B" serve --self-signed --addr 127.0.0.1:0 --config "$tmp/bad.yaml" --log-format json 2>"$tmp/err" &
sp=$!
PIDS="$PIDS $sp"
# "listening" comes after the policy's lines, once SIGTERM is serve's to handle.
eventually 60 grep -q '"msg":"listening"' "$tmp/err"
equals "$(grep -c '"msg":"policy error","error":"'"$tmp"'/bad.yaml:[0-9]*:[0-9]*: ' "$tmp/err")" 13 "serve logs one line per policy error"
has "$tmp/err" "\"msg\":\"policy did not load; not ready until it does, retrying\",\"config\":\"$tmp/bad.yaml\",\"error\":\"$tmp/bad.yaml: 13 errors\"" "then that it is not ready, and why"
kill -TERM "$sp"; wait "$sp"; rc=$?
equals "$rc" 0 "an invalid policy does not stop serve; SIGTERM does, cleanly"
# review and audit list every error of their --config too.
expect_rc 2 "review with an invalid policy" -- $WRAP "$B" review --config "$tmp/bad.yaml" "$G/gpu-limit-minimal/request.json"
equals "$(grep -c "^$tmp/bad.yaml:" "$tmp/err")" 13 "review lists every policy error"
has "$tmp/err" "gpu-admission review: $tmp/bad.yaml: 13 errors" "and sums them up"
printf 'exempt:\n  podSelectors:\n    - matchLabels: {app: agent}\n' >"$tmp/selector.yaml"
expect_rc 1 "a podSelectors entry without namespaces is refused" -- "$B" check-config "$tmp/selector.yaml"
has "$tmp/err" "exempt.podSelectors[0]: namespaces is required" "check-config names the entry"
has "$tmp/err" "a workload sets its own labels" "check-config says why"
expect_rc 0 "check-config of agent-pool pools" -- "$B" check-config "$G/tenant-nodename-derived/config.yaml"
has "$tmp/out" "gpuNodeNames: not set; derived from the pools: aks-gput4-*, aks-gpua100-*, aks-gpuh100-*" \
	"check-config shows the node-name globs derived from the pools"
expect_rc 0 "check-config of the default" -- "$B" check-config "$tmp/default.yaml"
has "$tmp/out" "cannot be told by name" "check-config says when no node name can be derived"

# ==== One grammar: every command, from the command table ====
"$B" help >"$tmp/help"
cmds=$(sed -n '/^Commands:/,/^$/p' "$tmp/help" | awk 'NF > 1 && $1 != "Commands:" { print $1 }')
equals "$(echo $cmds)" "review audit report watch serve certs check-config print-default-config print-autoscaler-config print-kueue-config print-match-conditions print-admission-policies completion version help" "help lists every command"
for c in $cmds; do
	expect_rc 2 "$c: unknown option" -- "$B" "$c" --bogus-option
	equals "$(cat "$tmp/err")" "gpu-admission $c: unknown option --bogus-option (see gpu-admission $c --help)" "$c: one line for an unknown option"
	equals "$(lines "$tmp/out")" 0 "$c: nothing on stdout for an unknown option"
	expect_rc 2 "$c: unknown short option" -- "$B" "$c" -Z
	equals "$(cat "$tmp/err")" "gpu-admission $c: unknown option -Z (see gpu-admission $c --help)" "$c: unknown -Z"
	expect_rc 0 "$c --help" -- "$B" "$c" --help
	equals "$(head -n 1 "$tmp/out" | cut -d' ' -f1-3)" "usage: gpu-admission $c" "$c --help starts with its usage"
	has "$tmp/out" "Exit status:" "$c --help lists its exit codes"
	lacks "$tmp/out" "review allowed the pod" "$c --help: its own exit codes, not every command's"
	# A usage wrapped to 80 columns never splits a bracket, or an option from its value.
	if sed -n '1,/^$/p' "$tmp/out" | awk '
		{ o = gsub(/[[(]/, "&"); c = gsub(/[])]/, "&"); if (o != c) bad = 1 }
		NF && prev ~ /(^| )-[^ ]*$/ && $1 !~ /^[-[(|]/ { bad = 1 }
		length($0) > 80 { bad = 1 }
		{ prev = $0 }
		END { exit bad }'; then ok; else bad "$c --help: its usage splits an option"; sed -n '1,/^$/p' "$tmp/out"; fi
	cp "$tmp/out" "$tmp/help-$c"
	expect_rc 0 "help $c" -- "$B" help "$c"
	if cmp -s "$tmp/out" "$tmp/help-$c"; then ok; else bad "help $c differs from $c --help"; fi
	expect_rc 0 "$c -h" -- "$B" "$c" -h
	if cmp -s "$tmp/out" "$tmp/help-$c"; then ok; else bad "$c -h differs from $c --help"; fi
done
expect_rc 2 "a value is missing" -- "$B" audit --config
equals "$(cat "$tmp/err")" "gpu-admission audit: option --config needs a value (FILE) (see gpu-admission audit --help)" "missing value named"
expect_rc 2 "a switch given a value" -- "$B" audit --fix=yes x
equals "$(cat "$tmp/err")" "gpu-admission audit: option --fix takes no value (see gpu-admission audit --help)" "switch value refused"
expect_rc 2 "a choice outside the list" -- "$B" audit -o xml x
equals "$(cat "$tmp/err")" "gpu-admission audit: --output takes text, json, yaml or wide, not \"xml\" (see gpu-admission audit --help)" "choices listed"
expect_rc 2 "a number out of range" -- "$B" serve --self-signed --threads 0
equals "$(cat "$tmp/err")" "gpu-admission serve: --threads takes a number from 1 to 256, not \"0\" (see gpu-admission serve --help)" "range named"
expect_rc 2 "--name=value spelling, checked alike" -- "$B" serve --self-signed --timeout=abc
has "$tmp/err" "--timeout takes a number from 1 to 3600, not \"abc\"" "--timeout=abc"
expect_rc 0 "-oVALUE and --output=VALUE" -- "$B" audit -ojson --output=json "$G/../audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml"
has "$tmp/out" '"summary"' "-ojson read"
expect_rc 0 "-- ends the options" -- "$B" check-config -- "$tmp/one.yaml"
expect_rc 2 "unknown command" -- "$B" frobnicate
equals "$(cat "$tmp/err")" "gpu-admission: unknown command \"frobnicate\" (see gpu-admission help)" "unknown command: one line"
expect_rc 2 "unknown top-level option" -- "$B" --frobnicate
equals "$(cat "$tmp/err")" "gpu-admission: unknown option --frobnicate (see gpu-admission help)" "unknown top-level option: one line"
expect_rc 2 "help of an unknown command" -- "$B" help frobnicate
expect_rc 2 "no command" -- "$B"
has "$tmp/err" "usage: gpu-admission COMMAND" "no command: the overview on stderr"
expect_rc 0 "--help" -- "$B" --help
if cmp -s "$tmp/out" "$tmp/help"; then ok; else bad "--help differs from help"; fi
# One error prefix everywhere: "gpu-admission COMMAND: ".
for run in "review /nonexistent" "audit /nonexistent" "certs --service a --namespace b --out /proc/nonexistent/x" \
	   "check-config /nonexistent" "serve --tls-cert /nonexistent --tls-key /nonexistent --log-format text"; do
	set -- $run
	"$B" "$@" >/dev/null 2>"$tmp/err"
	if grep -q "^gpu-admission $1: \|^.* error .*cannot serve" "$tmp/err"; then ok; else bad "$run: error prefix"; cat "$tmp/err"; fi
done

# ==== Exit codes, as README's table says ====
# The tables in README.md and cmd/gpu-admission/README.md and `gpu-admission help` word the
# same three codes.
for page in README.md cmd/gpu-admission/README.md; do
	readme_codes=$(sed -n '/^| Exit | Meaning |/,/^$/p' "$page" | sed -n 's/^| \([0-9]\) | .*/\1/p' | tr '\n' ' ')
	equals "$readme_codes" "0 1 2 " "$page's exit-code table lists 0, 1, 2"
	for code in 0 1 2; do
		readme=$(sed -n "s/^| $code | \(.*\) |$/\1/p" "$page")
		helptext=$(sed -n '/^Exit status (every command):/,$p' "$tmp/help" | awk -v c="$code" '
			$1 == c { on = 1; sub(/^ *[0-9] +/, ""); printf "%s", $0; next }
			/^  [0-9] / { on = 0 } on { sub(/^ +/, " "); printf "%s", $0 }')
		equals "$readme" "$helptext" "exit code $code: $page and help agree"
	done
done
# Each row, for each command that has it.
expect_rc 0 "0: review allowed" -- "$B" review "$G/gpu-limit-minimal/request.json"
expect_rc 1 "1: review rejected" -- "$B" review "$G/cpu-toleration-sku-gpu/request.json"
expect_rc 0 "0: audit found nothing to reject" -- "$B" audit test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml
expect_rc 1 "1: audit found a rejection" -- "$B" audit test/audit/corpus/ROCm__k8s-device-plugin__example__pod__pytorch.yaml
expect_rc 1 "1: audit --fail-on mutate" -- "$B" audit --fail-on mutate test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml
expect_rc 2 "2: audit of unreadable input" -- "$B" audit /nonexistent.yaml
expect_rc 2 "2: audit with an invalid --config" -- "$B" audit --config "$tmp/bad.yaml" test/audit/corpus/NVIDIA__gpu-operator__tests__gpu-pod.yaml
expect_rc 0 "0: check-config valid" -- "$B" check-config "$tmp/one.yaml"
expect_rc 1 "1: check-config invalid" -- "$B" check-config "$tmp/bad.yaml"
expect_rc 2 "2: check-config unreadable" -- "$B" check-config /nonexistent.yaml
expect_rc 2 "2: serve cannot start" -- "$B" serve --tls-cert /nonexistent --tls-key /nonexistent
expect_rc 2 "2: certs usage" -- "$B" certs --service a
expect_rc 0 "0: version" -- "$B" version
expect_rc 0 "0: print-default-config" -- "$B" print-default-config

# ==== version: semantic version and git revision; the chart follows it ====
expect_rc 0 "version" -- "$B" version
v=$(cat VERSION)
if git rev-parse --git-dir >/dev/null 2>&1; then
	if grep -qE "^gpu-admission $v \([0-9a-f]{7}(-dirty)?\)$" "$tmp/out"; then ok; else bad "version: $(cat "$tmp/out")"; fi
	has "$tmp/out" "($(git rev-parse --short=7 HEAD)" "version names the revision built"
else  # built outside a git checkout (a tarball): the revision is not known
	if grep -qx "gpu-admission $v (unknown)" "$tmp/out"; then ok; else bad "version: $(cat "$tmp/out")"; fi
fi
equals "$(sed -n 's/^appVersion: "\(.*\)"$/\1/p' charts/gpu-admission/Chart.yaml)" "$v" "Chart.yaml appVersion is VERSION"
if echo "$v" | grep -qE '^[0-9]+\.[0-9]+\.[0-9]+$'; then ok; else bad "VERSION is not semantic: $v"; fi
expect_rc 0 "--version" -- "$B" --version
has "$tmp/out" "gpu-admission $v (" "--version"

# ==== certs: extra SANs, renewal with the existing CA, no temporary file names ====
expect_rc 0 "certs with extra SANs" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs" --san 127.0.0.1 --san localhost
has "$tmp/out" "(and 127.0.0.1, localhost)" "SANs said"
openssl x509 -in "$tmp/certs/tls.crt" -noout -ext subjectAltName >"$tmp/san" 2>&1
has "$tmp/san" "IP Address:127.0.0.1" "IP SAN"
has "$tmp/san" "DNS:localhost" "DNS SAN"
has "$tmp/san" "DNS:gpu-admission.gpu-admission.svc" "service SAN kept"
cp "$tmp/certs/caBundle" "$tmp/caBundle.before"
cp "$tmp/certs/tls.crt" "$tmp/tls.before"
expect_rc 0 "certs renewal with the existing CA" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs" --ca-cert "$tmp/certs/ca.crt" --ca-key "$tmp/certs/ca.key"
has "$tmp/out" "signed by the existing CA" "renewal said"
if cmp -s "$tmp/caBundle.before" "$tmp/certs/caBundle"; then ok; else bad "renewal changed caBundle"; fi
if cmp -s "$tmp/tls.before" "$tmp/certs/tls.crt"; then bad "renewal kept the old certificate"; else ok; fi
if openssl verify -CAfile "$tmp/certs/ca.crt" "$tmp/certs/tls.crt" >/dev/null 2>&1; then ok; else bad "renewed certificate not signed by the CA"; fi
mkdir "$tmp/renew"
expect_rc 0 "renewal into another directory" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/renew" --ca-cert "$tmp/certs/ca.crt" --ca-key "$tmp/certs/ca.key"
if [ ! -e "$tmp/renew/ca.key" ] && cmp -s "$tmp/renew/ca.crt" "$tmp/certs/ca.crt"; then ok; else bad "renewal wrote ca.key or another CA"; fi
# The CA in --out is never replaced silently (issue 24): re-running renews with it, as kubeadm
# reuses its CA; --force makes a new one and says the caBundle must change; a ca.crt whose key
# was moved offline, or another CA given with --ca-cert, is refused without --force.
cp "$tmp/certs/ca.key" "$tmp/ca.key.before"
expect_rc 0 "certs re-run over its own output" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs"
has "$tmp/out" "signed by the existing CA in it (caBundle unchanged)" "re-run said it kept the CA"
if cmp -s "$tmp/caBundle.before" "$tmp/certs/caBundle" && cmp -s "$tmp/ca.key.before" "$tmp/certs/ca.key"; then ok
else bad "re-run replaced the CA"; fi
if openssl verify -CAfile "$tmp/certs/ca.crt" "$tmp/certs/tls.crt" >/dev/null 2>&1; then ok; else bad "re-run: tls.crt not signed by the CA"; fi
expect_rc 0 "certs --force: a new CA" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs" --force
has "$tmp/err" "new CA: update caBundle" "--force says the caBundle must change"
if cmp -s "$tmp/caBundle.before" "$tmp/certs/caBundle"; then bad "--force kept the CA"; else ok; fi
cp "$tmp/certs/caBundle" "$tmp/caBundle.forced"
mv "$tmp/certs/ca.key" "$tmp/ca.key.offline"
expect_rc 2 "certs over a ca.crt whose key is kept elsewhere" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs"
has "$tmp/err" "holds ca.crt without ca.key" "missing key named"
if cmp -s "$tmp/caBundle.forced" "$tmp/certs/caBundle"; then ok; else bad "refused run still wrote"; fi
expect_rc 0 "renewal with the key from elsewhere" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs" --ca-cert "$tmp/certs/ca.crt" --ca-key "$tmp/ca.key.offline"
lacks "$tmp/err" "new CA" "renewal with the same CA: no new-CA warning"
mkdir "$tmp/other"
"$B" certs --service a --namespace b --out "$tmp/other" >/dev/null 2>&1
expect_rc 2 "certs --ca-cert of another CA than the one in --out" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs" --ca-cert "$tmp/other/ca.crt" --ca-key "$tmp/other/ca.key"
has "$tmp/err" "holds another CA than --ca-cert" "other CA refused"
if cmp -s "$tmp/caBundle.forced" "$tmp/certs/caBundle"; then ok; else bad "refused run still wrote"; fi
expect_rc 0 "... replaced with --force" -- "$B" certs --service gpu-admission --namespace gpu-admission --out "$tmp/certs" --ca-cert "$tmp/other/ca.crt" --ca-key "$tmp/other/ca.key" --force
has "$tmp/err" "new CA: update caBundle" "--force with another CA says so"
if cmp -s "$tmp/other/caBundle" "$tmp/certs/caBundle"; then ok; else bad "--force --ca-cert: caBundle not the other CA's"; fi
expect_rc 2 "certs --ca-cert without --ca-key" -- "$B" certs --service a --namespace b --out "$tmp/x" --ca-cert "$tmp/certs/ca.crt"
has "$tmp/err" "--ca-cert and --ca-key go together" "pair required"
expect_rc 2 "certs --ca-cert that is no CA" -- "$B" certs --service a --namespace b --out "$tmp/x" --ca-cert "$tmp/certs/tls.crt" --ca-key "$tmp/certs/tls.key"
has "$tmp/err" "is not a CA certificate" "not a CA"
expect_rc 2 "certs --san that is neither" -- "$B" certs --service a --namespace b --out "$tmp/x" --san "bad name"
has "$tmp/err" "--san \"bad name\" is neither an IP address nor a DNS name" "bad SAN named"
: >"$tmp/afile"
expect_rc 2 "certs into a file, not a directory" -- "$B" certs --service a --namespace b --out "$tmp/afile"
has "$tmp/err" "gpu-admission certs: $tmp/afile/" "error names the file"
lacks "$tmp/err" ".tmp-" "no temporary file name"

# ==== serve: text logs on a terminal, JSON otherwise, --log-format overrides ====
serve_log() { # serve_log OUT [ARGS...]: runs serve briefly, its stderr to OUT
	out=$1; shift
	"$B" serve --self-signed --addr 127.0.0.1:0 "$@" 2>"$out" &
	pid=$!
	eventually 60 grep -q "listening" "$out"
	kill -TERM $pid; wait $pid
}
serve_log "$tmp/json.log"
if head -n 1 "$tmp/json.log" | jq -e '.msg == "policy loaded"' >/dev/null 2>&1; then ok; else bad "serve to a file: not JSON"; cat "$tmp/json.log"; fi
serve_log "$tmp/text.log" --log-format text
if grep -qE '^[0-9-]{10}T[0-9:.]{12}Z info  listening addr=127\.0\.0\.1:0 port=[0-9]+ scheme=https$' "$tmp/text.log"; then ok
else bad "serve --log-format text"; cat "$tmp/text.log"; fi
if command -v script >/dev/null 2>&1; then
	# script(1) gives serve a terminal; the shell stops it once it said it listens (script
	# writes what the terminal shows to tty.log as it comes), not after a guess of how long.
	listened="i=0; while [ \$i -lt 1200 ] && ! grep -q listening '$tmp/tty.log'; do sleep 0.05; i=\$((i + 1)); done"
	script -qec "$B serve --self-signed --addr 127.0.0.1:0 & p=\$!; $listened; kill -TERM \$p; wait \$p" /dev/null >"$tmp/tty.log" 2>&1
	if grep -q ' info  listening addr=' "$tmp/tty.log" && ! grep -q '{"time"' "$tmp/tty.log"; then ok; else bad "serve on a terminal: not text"; cat "$tmp/tty.log"; fi
	script -qec "$B serve --self-signed --addr 127.0.0.1:0 --log-format json & p=\$!; $listened; kill -TERM \$p; wait \$p" /dev/null >"$tmp/tty.log" 2>&1
	has "$tmp/tty.log" '"msg":"listening"' "--log-format json on a terminal"
fi

# ==== completion: generated from the command table ====
expect_rc 0 "completion bash" -- "$B" completion bash
cp "$tmp/out" "$tmp/gpu-admission.bash"
if bash -n "$tmp/gpu-admission.bash"; then ok; else bad "bash completion: syntax"; fi
complete_bash() { # complete_bash WORDS...: what bash would offer for the last word
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _gpu_admission; echo "${COMPREPLY[*]}"' \
		_ "$tmp/gpu-admission.bash" "$@"
}
equals "$(complete_bash gpu-admission au)" "audit" "bash: command names"
equals "$(complete_bash gpu-admission audit --f)" "--fix --fail-on" "bash: a command's options"
equals "$(complete_bash gpu-admission audit -o '')" "text json yaml wide" "bash: an option's values"
equals "$(complete_bash gpu-admission serve --log-format '')" "text json" "bash: serve --log-format"
equals "$(complete_bash gpu-admission completion '')" "bash zsh" "bash: completion's operands"
equals "$(complete_bash gpu-admission help check-)" "check-config" "bash: help COMMAND"
expect_rc 0 "completion zsh" -- "$B" completion zsh
cp "$tmp/out" "$tmp/_gpu-admission"
if command -v zsh >/dev/null 2>&1; then
	if zsh -n "$tmp/_gpu-admission"; then ok; else bad "zsh completion: syntax"; fi
	# The completion function, with zsh's helpers replaced by ones that print what they are given.
	complete_zsh() {
		zsh -fc 'autoload -Uz compinit; compinit -u -d "$2/zcompdump"; . "$1"
			_arguments() { print -rl -- "$@" }; _describe() { print -rl -- "${(@P)${@[-1]}}" }
			shift 2; words=("$@"); CURRENT=$#; _gpu_admission' _ "$tmp/_gpu-admission" "$tmp" "$@"
	}
	complete_zsh gpu-admission '' >"$tmp/z1" 2>&1
	has "$tmp/z1" "audit:dry-run the policy" "zsh: commands described"
	complete_zsh gpu-admission audit '' >"$tmp/z2" 2>&1
	has "$tmp/z2" "(-o --output)--output[report format" "zsh: audit --output"
	has "$tmp/z2" "(text json yaml wide)" "zsh: --output values"
	has "$tmp/z2" "*:PATH:_files" "zsh: audit operands are files"
	zsh -fc 'autoload -Uz compinit; compinit -u -d "$2/zcompdump"; . "$1"; print -r -- ${_comps[gpu-admission]}' _ "$tmp/_gpu-admission" "$tmp" >"$tmp/z3" 2>&1
	has "$tmp/z3" "_gpu_admission" "zsh: registered for gpu-admission"
fi
expect_rc 2 "completion of an unknown shell" -- "$B" completion fish
# Every option of every command is offered by both.
for c in $cmds; do
	for o in $(grep -oE '^  (-[a-zA-Z], )?--[a-z-]+' "$tmp/help-$c" | sed 's/.*--//'); do
		if grep -q -- "--$o" "$tmp/gpu-admission.bash" && grep -q -- "--$o" "$tmp/_gpu-admission"; then ok
		else bad "completion lacks $c --$o"; fi
	done
done

# ==== The man page, from the help texts ====
expect_rc 0 "help --man" -- "$B" help --man
cp "$tmp/out" "$tmp/gpu-admission.1"
if command -v groff >/dev/null 2>&1; then
	groff -man -Tutf8 -ww -z "$tmp/gpu-admission.1" >"$tmp/groff" 2>&1
	equals "$(lines "$tmp/groff")" 0 "man page: groff has nothing to warn about"
	groff -man -Tascii "$tmp/gpu-admission.1" 2>/dev/null | col -b >"$tmp/man.txt"
	for c in $cmds; do
		has "$tmp/man.txt" "gpu-admission $c" "man page: $c"
		for o in $(grep -oE '^  (-[a-zA-Z], )?--[a-z-]+' "$tmp/help-$c" | sed 's/.*--//'); do
			has "$tmp/man.txt" "--$o" "man page: $c --$o"
		done
	done
	has "$tmp/man.txt" "EXIT STATUS" "man page: exit status"
fi

# ==== make install: binary, man page, completions, under PREFIX and DESTDIR ====
if [ "$BIN" = bin/gpu-admission ]; then
	make --no-print-directory -s install DESTDIR="$tmp/dest" PREFIX=/usr >"$tmp/install.log" 2>&1; rc=$?
	equals "$rc" 0 "make install"
	for f in bin/gpu-admission share/man/man1/gpu-admission.1 share/bash-completion/completions/gpu-admission \
		 share/zsh/site-functions/_gpu-admission; do
		if [ -s "$tmp/dest/usr/$f" ]; then ok; else bad "make install: no $f"; cat "$tmp/install.log"; fi
	done
	"$tmp/dest/usr/bin/gpu-admission" help --man >"$tmp/installed.1"
	"$tmp/dest/usr/bin/gpu-admission" completion bash >"$tmp/installed.bash"
	if cmp -s "$tmp/dest/usr/share/man/man1/gpu-admission.1" "$tmp/installed.1"; then ok; else bad "installed man page is not help --man"; fi
	if cmp -s "$tmp/dest/usr/share/bash-completion/completions/gpu-admission" "$tmp/installed.bash"; then ok; else bad "installed bash completion"; fi
	"$tmp/dest/usr/bin/gpu-admission" version >"$tmp/v" 2>&1
	has "$tmp/v" "gpu-admission $v (" "installed binary runs"
	if command -v man >/dev/null 2>&1; then
		MANPAGER=cat MANWIDTH=80 man -l "$tmp/dest/usr/share/man/man1/gpu-admission.1" >"$tmp/man.out" 2>&1
		has "$tmp/man.out" "check-config" "man -l renders the installed page"
	fi
fi

# ==== Build flags: the objects depend on a stamp of them, so a changed flag rebuilds ====
if [ "$BIN" = bin/gpu-admission ]; then
	if [ -f build/flags.stamp ]; then ok; else bad "no build/flags.stamp after the build"; fi
	cp -p build/flags.stamp "$tmp/flags.stamp" 2>/dev/null
	# The flag the build was not made with: -O1, and DEVELOPER the other way.
	dev=1; grep -q -- -Werror build/flags.stamp 2>/dev/null && dev=0
	for flag in O=-O1 DEVELOPER=$dev; do
		make --no-print-directory -s "$flag" build/flags.stamp >/dev/null 2>&1
		# RUN_QUERY=1: make -q judges the stamp as it stands (make run's query).
		make --no-print-directory -q RUN_QUERY=1 "$flag" bin/gpu-admission >/dev/null 2>&1
		equals "$?" 1 "make $flag after a build without it: bin/gpu-admission out of date"
		cp -p "$tmp/flags.stamp" build/flags.stamp 2>/dev/null
	done
fi

# ==== make run: binds first, then prints a command that works from anywhere ====
port() { # a free port, from the kernel
	"$B" serve --self-signed --addr 127.0.0.1:0 --log-format json 2>"$tmp/p.log" & pp=$!
	eventually 60 grep -q listening "$tmp/p.log"
	sed -n 's/.*"port":"\([0-9]*\)".*/\1/p' "$tmp/p.log"
	kill -TERM $pp; wait $pp
}
P=$(port)
ADDR=127.0.0.1:$P sh test/run-local "$BIN" >"$tmp/run.out" 2>"$tmp/run.err" &
runpid=$!
PIDS="$PIDS $runpid"
eventually 60 grep -q "Ctrl-C to stop" "$tmp/run.out"
has "$tmp/run.out" "serving https://127.0.0.1:$P" "make run: banner"
has "$tmp/run.err" '"msg":"listening"' "make run: the server listened before the banner"
curl_cmd=$(sed -n '/^  curl/,/^$/p' "$tmp/run.out" | sed 's/\\$//' | tr '\n' ' ')
has "$tmp/run.out" "@$ROOT/test/e2e/sample-gpu-pod.json" "make run: the sample's absolute path"
(cd / && eval "$curl_cmd") >"$tmp/curl.out" 2>&1
if jq -e '.response.allowed == true and .response.patch[0].path == "/spec/tolerations"' "$tmp/curl.out" >/dev/null 2>&1; then ok
else bad "make run: the printed curl command (run from /) does not show the decoded patch"; echo "$curl_cmd"; head -5 "$tmp/curl.out"; fi
# A busy port (the instance above holds it): the server's own message, no banner, a failing exit.
ADDR=127.0.0.1:$P sh test/run-local "$BIN" >"$tmp/busy.out" 2>"$tmp/busy.err"; rc=$?
if [ $rc -ne 0 ]; then ok; else bad "make run on a busy port exited 0"; fi
lacks "$tmp/busy.out" "serving" "make run on a busy port: no banner"
has "$tmp/busy.err" "Address already in use" "make run on a busy port: why"
has "$tmp/busy.err" "make run: 127.0.0.1:$P is in use (another make run?); choose another address:" "make run on a busy port: the hint"
has "$tmp/busy.err" "  make run ADDR=127.0.0.1:PORT" "make run on a busy port: the command"
lacks "$tmp/run.err" "is in use" "make run on a free port: no hint"
# Without curl (a Debian 12 without it): at once, one message, no loop and no server.
mkdir -p "$tmp/nocurl" && ln -sf "$(command -v dirname)" "$tmp/nocurl/dirname"
timeout 10 env PATH="$tmp/nocurl" ADDR=127.0.0.1:$P /bin/sh test/run-local "$BIN" >"$tmp/nocurl.out" 2>"$tmp/nocurl.err"; rc=$?
equals "$rc" 1 "make run without curl: exit 1 at once"
equals "$(cat "$tmp/nocurl.err")" "make run: curl is missing: test/run-local waits for the server with it and prints a curl command
  make run installs it (sh .ci/deps run, as root or with sudo), or: sudo apt-get install curl" "make run without curl: what is missing and how to get it"
lacks "$tmp/nocurl.out" "serving" "make run without curl: no banner"
has "$tmp/run.out" "same body is denied there (code 403), as expected" "make run: /validate's 403 is expected"
# make run builds quietly: a recompile (a newer version stamp: main.o and cmd_serve.o are
# rebuilt, as after a commit) prints one line and no compiler line.
if [ "$BIN" = bin/gpu-admission ]; then
	touch "${BUILD:-build}/version.stamp"
	make --no-print-directory run ADDR=127.0.0.1:$P >"$tmp/mrun.out" 2>&1; rc=$?
	if [ $rc -ne 0 ]; then ok; else bad "make run on a busy port exited 0"; fi
	has "$tmp/mrun.out" "make run: building bin/gpu-admission" "make run: one line while building"
	lacks "$tmp/mrun.out" "cc " "make run: compiler lines kept quiet"
	lacks "$tmp/mrun.out" "serving https" "make run on a busy port: no banner"
	# Nothing to rebuild: no "building" line (the version stamp does not count as a change).
	make --no-print-directory run ADDR=127.0.0.1:$P >"$tmp/mrun2.out" 2>&1
	lacks "$tmp/mrun2.out" "make run: building" "make run with nothing to build: no building line"
	has "$tmp/mrun2.out" "make run ADDR=127.0.0.1:PORT" "make run on a busy port: the hint, through make"
fi
kill -TERM $runpid; wait $runpid; rc=$?
equals "$rc" 0 "make run: SIGTERM drains and exits 0"
grep -q 'ADDR=' README.md && ok || bad "README does not document make run ADDR="

# ==== A project people may use ====
if head -n 3 LICENSE | grep -q "Apache License" && grep -q "Version 2.0, January 2004" LICENSE &&
   grep -q "END OF TERMS AND CONDITIONS" LICENSE; then ok; else bad "LICENSE is not the Apache-2.0 text"; fi
for label in source version revision licenses title description; do
	has Dockerfile "org.opencontainers.image.$label=" "Dockerfile: OCI label $label"
done
has Dockerfile 'org.opencontainers.image.licenses="Apache-2.0"' "Dockerfile: the licence"
has test/image/build.sh '--build-arg REVISION=' "image build passes the revision"
# pkg/README.md's module map lists every pkg/ module, and only those.
mods=$(ls pkg/*/*.c | sort | tr '\n' ' ')
mapped=$(sed -n '/^## Module map/,/^## /p' pkg/README.md | grep -oE '^\| `pkg/[a-z0-9_]+/[a-z0-9_]+\.c`' | sed 's/^| `//; s/`$//' | sort | tr '\n' ' ')
equals "$mapped" "$mods" "pkg/README.md's module map lists every pkg/*/*.c"
has README.md "## Contributing" "README: Contributing section"

# ==== The first hour: kubectl's habits (issue 27) ====
# Every help text within 80 columns: the overview, help COMMAND and COMMAND --help.
"$B" help >"$tmp/helps" 2>&1
"$B" >>"$tmp/helps" 2>&1
for c in $("$B" completion bash | sed -n 's/.*commands="\([^"]*\)".*/\1/p' | head -n 1) review audit report serve certs \
	check-config print-default-config print-autoscaler-config print-kueue-config print-match-conditions print-admission-policies completion version help; do
	"$B" "$c" --help >>"$tmp/helps" 2>&1
	"$B" help "$c" >>"$tmp/helps" 2>&1
done
equals "$(awk 'length($0) > 80' "$tmp/helps" | head -n 3)" "" "every --help within 80 columns"
# -o yaml wherever -o json exists: every command whose --output lists json lists yaml too.
for c in review audit report serve certs check-config print-default-config print-autoscaler-config print-kueue-config print-match-conditions print-admission-policies version; do
	"$B" "$c" --help >"$tmp/h" 2>&1
	if grep -qE -- '--output [a-z|]*json' "$tmp/h"; then
		if grep -qE -- '--output [a-z|]*yaml' "$tmp/h"; then ok; else bad "$c: -o json but no -o yaml"; fi
	fi
	# -c on every command that takes a policy.
	if grep -q -- '--config FILE' "$tmp/h"; then has "$tmp/h" "-c, --config FILE" "$c: -c for --config"; fi
done
expect_rc 0 "report -o yaml" -- "$B" report --fail-on none -o yaml test/report/cases/aks-snapshot/cluster.json
"$B" report --fail-on none -o json test/report/cases/aks-snapshot/cluster.json >"$tmp/rep.json" 2>/dev/null
if head -n 1 "$tmp/out" | grep -qx 'summary:' && grep -q '^  gpuNodes: [0-9]' "$tmp/out"; then ok; else bad "report -o yaml: not the report as YAML"; head -3 "$tmp/out"; fi
if TOOLBIN=$(sh .ci/helm 2>/dev/null); then
	if TOOLS=${TOOLBIN%/bin} node -e '
		const Y = require(process.env.TOOLS + "/node_modules/yaml"), fs = require("fs"), assert = require("assert");
		assert.deepStrictEqual(Y.parse(fs.readFileSync(process.argv[1], "utf8")),
				       JSON.parse(fs.readFileSync(process.argv[2], "utf8")));' "$tmp/out" "$tmp/rep.json"; then ok
	else bad "report -o yaml does not read back as the -o json report"; fi
fi
# ==== watch, report --publish: which API server (kubectl's sources, controller-runtime's order) ====
# client-go tools/clientcmd loader.go (NewDefaultClientConfigLoadingRules: $KUBECONFIG's files, else
# ~/.kube/config) and client_config.go (BuildConfigFromFlags: in-cluster when no file is named);
# controller-runtime pkg/client/config GetConfig: --kubeconfig, $KUBECONFIG, in-cluster, ~/.kube/config.
mkdir -p "$tmp/home"
for c in "watch --addr 127.0.0.1:0" "report --publish --events"; do
	expect_rc 2 "$c with no configuration" -- env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST HOME="$tmp/home" "$B" $c
	has "$tmp/err" "pass --kubeconfig FILE, or set \$KUBECONFIG, or run in a cluster" "$c: names --kubeconfig and \$KUBECONFIG"
	has "$tmp/err" "create ~/.kube/config ($tmp/home/.kube/config does not exist)" "$c: names ~/.kube/config"
done
printf 'clusters:\n- name: c\n  cluster: {server: "https://127.0.0.1:1"}\ncontexts:\n- name: x\n  context: {cluster: c}\ncurrent-context: x\n' >"$tmp/kc.yaml"
expect_rc 2 "report --publish with \$KUBECONFIG" -- env -u KUBERNETES_SERVICE_HOST KUBECONFIG="$tmp/none:$tmp/kc.yaml" HOME="$tmp/home" "$B" report --publish --events
has "$tmp/err" "API server https://127.0.0.1:1, from \$KUBECONFIG $tmp/kc.yaml" "report --publish reads \$KUBECONFIG's first existing file"
mkdir -p "$tmp/home/.kube" && cp "$tmp/kc.yaml" "$tmp/home/.kube/config"
expect_rc 2 "report --publish with ~/.kube/config" -- env -u KUBECONFIG -u KUBERNETES_SERVICE_HOST HOME="$tmp/home" "$B" report --publish --events
has "$tmp/err" "API server https://127.0.0.1:1, from ~/.kube/config ($tmp/home/.kube/config)" "report --publish reads ~/.kube/config"

expect_rc 0 "version -o json" -- "$B" version -o json
if jq -e --arg v "$(cat VERSION)" '.version == $v and (.revision | length > 0) and (keys | length == 2)' "$tmp/out" >/dev/null; then ok
else bad "version -o json"; cat "$tmp/out"; fi
expect_rc 0 "version -o yaml" -- "$B" version -o yaml
equals "$(head -n 1 "$tmp/out")" "version: \"$(cat VERSION)\"" "version -o yaml"
# serve -c: the option is taken (the usage error is then about --threads, not -c).
expect_rc 2 "serve -c" -- "$B" serve -c policy.yaml --self-signed --threads 0
has "$tmp/err" "gpu-admission serve: --threads takes a number" "serve -c accepted"
# Sizes as they were set, and a YAML tab said as such (issue 27).
expect_rc 2 "review of 3 MiB + 1" -- sh -c "head -c 3145729 /dev/zero | $B review -"
equals "$(cat "$tmp/err")" "gpu-admission review: <stdin>: larger than 3 MiB" "review: the size limit in MiB"
printf 'mode: enforce\npools:\n\t- name: x\n' >"$tmp/tab-policy.yaml"
expect_rc 1 "check-config of a policy with a tab" -- "$B" check-config "$tmp/tab-policy.yaml"
has "$tmp/err" "$tmp/tab-policy.yaml:3:1: (document): not valid YAML: a tab character: YAML indents with spaces only" "check-config: a tab said"
# The policy guide's node auto-provisioning example: check-config's note names both pools it cannot tell by name.
awk '/policy-example: .*gpu-spot,gpu-ondemand/ { f = 1; next } f && /^```yaml/ { next } f && /^```/ { exit } f' pkg/policy/README.md >"$tmp/nap.yaml"
expect_rc 0 "check-config of README's NAP example" -- "$B" check-config "$tmp/nap.yaml"
has "$tmp/out" 'pools "gpu-spot" and "gpu-ondemand" do not select by kubernetes.azure.com/agentpool' "NAP example: both pools named"
# print-default-config words exempt.podSelectors as the policy guide does: "admitted unchanged".
"$B" print-default-config >"$tmp/default.yaml"
if sed -n '/Pods in one of an entry/,/podSelectors:/p' "$tmp/default.yaml" | tr '\n' ' ' | grep -q 'are admitted unchanged'; then ok
else bad "print-default-config: podSelectors not worded 'admitted unchanged'"; sed -n '/Pods in one of an entry/,/podSelectors:/p' "$tmp/default.yaml"; fi
grep -q 'matching pods in those namespaces admitted unchanged' pkg/policy/README.md && ok || bad "pkg/policy/README.md: podSelectors wording"
# A bare serve: its usage error as every command's, on stderr, not as a log line.
expect_rc 2 "bare serve" -- "$B" serve
equals "$(cat "$tmp/err")" "gpu-admission serve: give --tls-cert and --tls-key, or --self-signed (see gpu-admission serve --help)" "bare serve: a usage error"
expect_rc 2 "serve --self-signed --tls-cert" -- "$B" serve --self-signed --tls-cert x.crt
has "$tmp/err" "gpu-admission serve: --self-signed takes no --tls-cert or --tls-key" "serve: certificate options that conflict"
# print-match-conditions: --for only; -f (a file, to kubectl users) is refused, pointing at --for.
expect_rc 0 "print-match-conditions --for pods" -- "$B" print-match-conditions --for pods
expect_rc 2 "print-match-conditions -f" -- "$B" print-match-conditions -f pods
equals "$(cat "$tmp/err")" "gpu-admission print-match-conditions: unknown option -f; did you mean --for? (see gpu-admission print-match-conditions --help)" "-f refused, --for suggested"
# Did you mean: commands, options, the options before a command; nothing when nothing is close.
expect_rc 2 "mistyped command" -- "$B" reveiw x.json
equals "$(cat "$tmp/err")" "gpu-admission: unknown command \"reveiw\"; did you mean \"review\"? (see gpu-admission help)" "command suggested"
expect_rc 2 "help of a mistyped command" -- "$B" help reprot
equals "$(cat "$tmp/err")" "gpu-admission help: unknown command \"reprot\"; did you mean \"report\"? (see gpu-admission help --help)" "help: command suggested"
expect_rc 2 "mistyped option" -- "$B" audit --fxi deploy/
equals "$(cat "$tmp/err")" "gpu-admission audit: unknown option --fxi; did you mean --fix? (see gpu-admission audit --help)" "option suggested"
expect_rc 2 "option prefix" -- "$B" serve --self-sign
has "$tmp/err" "did you mean --self-signed?" "an option's prefix suggests it"
expect_rc 2 "mistyped --version" -- "$B" --verison
has "$tmp/err" "unknown option --verison; did you mean --version?" "--version suggested"
expect_rc 2 "nothing close" -- "$B" frobnicate
equals "$(cat "$tmp/err")" "gpu-admission: unknown command \"frobnicate\" (see gpu-admission help)" "no suggestion when none is close"
expect_rc 2 "a long mistyped option" -- "$B" audit "--$(printf '%0300d' 0)"
lacks "$tmp/err" "did you mean" "a 300-letter option: no suggestion"

echo "cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
