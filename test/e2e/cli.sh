#!/bin/sh
# The CLI as a user drives it: review, check-config, print-default-config,
# exit codes and messages. Runs the real binary ($BIN) from the repo root.
set -u
BIN=${BIN:-bin/gpu-admission}
pass=0
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }
expect_rc() { # expect_rc WANT DESCRIPTION -- command...
	want=$1; what=$2; shift 3
	"$@" >"$tmp/out" 2>"$tmp/err"; rc=$?
	if [ "$rc" -eq "$want" ]; then ok; else bad "$what: exit $rc, want $want"; cat "$tmp/err"; fi
}
has() { # has FILE TEXT DESCRIPTION
	if grep -qF -- "$2" "$1"; then ok; else bad "$3: no \"$2\" in $1"; cat "$1"; fi
}

G=test/golden
expect_rc 0 "review of a GPU pod" -- $WRAP "$BIN" review "$G/gpu-limit-minimal/request.json"
has "$tmp/out" '"patchType":"JSONPatch"' "GPU pod answered with a patch"
expect_rc 0 "review from stdin" -- sh -c "$WRAP $BIN review < $G/gpu-limit-minimal/request.json"
has "$tmp/out" '"uid":' "stdin review answered"
expect_rc 0 "review from '-'" -- sh -c "$WRAP $BIN review - < $G/gpu-limit-minimal/request.json"
expect_rc 1 "policy rejection exits 1" -- $WRAP "$BIN" review "$G/cpu-toleration-sku-gpu/request.json"
has "$tmp/out" '"allowed":false' "rejection printed as an AdmissionReview"
expect_rc 1 "/validate rejects an unmutated GPU pod" -- $WRAP "$BIN" review --validate "$G/gpu-limit-minimal/request.json"
expect_rc 2 "malformed review exits 2" -- $WRAP "$BIN" review "$G/not-json/request.json"
has "$tmp/err" "not valid JSON" "one-line message on stderr"
expect_rc 2 "review with a bad uid-bearing request exits 2" -- $WRAP "$BIN" review "$G/object-not-object/request.json"
expect_rc 2 "missing input file" -- $WRAP "$BIN" review /nonexistent.json
expect_rc 2 "unknown option" -- $WRAP "$BIN" review --bogus
expect_rc 0 "review with a policy file" -- $WRAP "$BIN" review --config "$G/pool-cheapest-fits/config.yaml" "$G/pool-cheapest-fits/request.json"
has "$tmp/out" '"pool":"t4"' "policy file applied"
expect_rc 2 "review with a broken policy file" -- $WRAP "$BIN" review --config "$G/pool-cheapest-fits/request.json" "$G/gpu-limit-minimal/request.json"

"$BIN" print-default-config >"$tmp/default.yaml"
expect_rc 0 "the printed default is a valid policy" -- "$BIN" check-config "$tmp/default.yaml"
has "$tmp/out" "configuration OK" "check-config says OK"
printf 'mode: strict\npools:\n  - name: x\n' >"$tmp/bad.yaml"
expect_rc 1 "invalid policy exits 1" -- "$BIN" check-config "$tmp/bad.yaml"
has "$tmp/err" "$tmp/bad.yaml:1:7: mode:" "error names file, line, column and field"
has "$tmp/err" "pools[0]: nodeSelector is required" "every error listed"
printf 'exempt:\n  podSelectors:\n    - matchLabels: {app: agent}\n' >"$tmp/selector.yaml"
expect_rc 1 "a podSelectors entry without namespaces is refused" -- "$BIN" check-config "$tmp/selector.yaml"
has "$tmp/err" "exempt.podSelectors[0]: namespaces is required" "check-config names the entry"
has "$tmp/err" "a workload sets its own labels" "check-config says why"
expect_rc 0 "check-config of agent-pool pools" -- "$BIN" check-config "$G/tenant-nodename-derived/config.yaml"
has "$tmp/out" "gpuNodeNames: not set; derived from the pools: aks-gput4-*, aks-gpua100-*, aks-gpuh100-*" \
	"check-config shows the node-name globs derived from the pools"
expect_rc 0 "check-config of the default" -- "$BIN" check-config "$tmp/default.yaml"
has "$tmp/out" "cannot be told by name" "check-config says when no node name can be derived"
expect_rc 2 "check-config without a file" -- "$BIN" check-config
expect_rc 0 "help" -- "$BIN" help
has "$tmp/out" "review" "help lists review"
expect_rc 0 "version" -- "$BIN" version
has "$tmp/out" "gpu-admission " "version printed"
expect_rc 2 "unknown command" -- "$BIN" frobnicate

echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
