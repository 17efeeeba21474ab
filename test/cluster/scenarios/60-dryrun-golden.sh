# Sourced by suite.sh (full mode): the golden suite through the real API server.
# Every golden case that creates an object (a Pod, a built-in workload, a custom
# resource) is sent with `kubectl create --dry-run=server`, as its requester
# (--as the review's user), under its own policy (helm upgrade to it, the replica
# reloaded), and what the API server answers must be what `gpu-admission review`
# predicts from the case's request:
#   - the verdict: a Pod is admitted when /mutate admits it and /validate admits the
#     patched pod (the API server runs the validating webhooks on the final object);
#     a workload when /validate admits it;
#   - for an admitted Pod, the stored tolerations, nodeSelector and affinity: the
#     predicted patch applied to the case's pod, plus the two tolerations the
#     DefaultTolerationSeconds plugin appends before any webhook runs (NOTES in
#     suite.sh; tolerations are compared as a set: their order has no meaning).
# Not sent: UPDATE, DELETE and CONNECT cases (they need a stored object to change:
# the golden driver checks their rules), /validate-policy cases (40-policy-edit.sh
# does that on the cluster), and reviews that are not objects (malformed, hostile).
# Cases whose object the API server itself refuses before any webhook (an invalid
# Pod) are listed in test/cluster/golden-invalid.txt with upstream's reason; the
# test checks that the list is exactly those cases.
G=$T/golden
mkdir -p "$G"
: >"$G/invalid.got"
gp=0
gf=0
golden_cases "$G/cases"
golden_crds "$G/cases"

golden_policy() {
	v=$G/values-$1.yaml
	if [ "$1" = default ]; then
		echo "{}" >"$v"
	else
		{ echo "policy:"; sed 's/^/  /' "$GOLDEN/$2/config.yaml"; } >"$v"
	fi
	if ! helm upgrade "$REL" "$CHART" -n "$RNS" $HELM_FORCE --reset-values -f "$ROOT/test/cluster/values/image.yaml" -f "$v" >"$G/upgrade.out" 2>&1; then
		bad "golden: helm upgrade to the policy of $2"
		indent "$G/upgrade.out" | tail -n 5
		return 1
	fi
	wh_reload policy || { bad "golden: the replica did not reload the policy of $2"; return 1; }
}

# golden_case CASE: one case sent and compared.
golden_case() {
	local gc=$1 want got real_rc
	golden_prepare "$gc" "$G"
	golden_create "$G"
	real_rc=$?
	# Refused by the API server itself (decoding, validation), not by a webhook nor by a
	# matchCondition that failed to evaluate.
	if [ "$real_rc" -ne 0 ] && ! grep -q 'admission webhook\|resulted in error' "$G/real.err"; then
		printf '%s\t%s\n' "$gc" "$(tr '\n' ' ' <"$G/real.err" | cut -c1-300)" >>"$G/invalid.got"
		return
	fi
	golden_predict "$gc" "$G"
	want=$?
	got=0
	[ "$real_rc" -ne 0 ] && got=1
	if [ "$want" -gt 1 ]; then
		gf=$((gf + 1)); bad "golden $gc: review could not predict it (exit $want)"; return
	fi
	if [ "$got" -ne "$want" ]; then
		gf=$((gf + 1)); bad "golden $gc: the API server $( [ $got = 0 ] && echo admitted || echo refused) it, review predicts $( [ $want = 0 ] && echo admitted || echo refused)"
		indent "$G/real.err" | head -n 3
		return
	fi
	if [ "$GOLDEN_KIND" = Pod ] && [ "$got" -eq 0 ]; then
		# The predicted pod, as the API server stores it.
		golden_want_placement "$G"
		jq -S '.spec | {tolerations: (.tolerations // [] | sort_by([.key, .operator, .value, .effect, .tolerationSeconds])), nodeSelector: (.nodeSelector // {}),
			affinity: (.affinity.nodeAffinity // {})}' "$G/real.json" >"$G/got.json"
		# The API server encodes with Go's omitempty: an empty string, list or map in the
		# case's pod is absent from the stored one (k8s.io/api core/v1 types.go json tags).
		for f in want got; do
			jq -S 'walk(if type == "object" then with_entries(select(.value != "" and .value != null and .value != [] and .value != {})) else . end)
				| .tolerations = ((.tolerations // []) | sort_by([.key, .operator, .value, .effect, .tolerationSeconds]))' \
				"$G/$f.json" >"$G/$f.n.json" && mv "$G/$f.n.json" "$G/$f.json"
		done
		if ! cmp -s "$G/want.json" "$G/got.json"; then
			gf=$((gf + 1)); bad "golden $gc: the stored pod differs from review's prediction"
			diff "$G/want.json" "$G/got.json" | indent | head -n 12
			return
		fi
	fi
	gp=$((gp + 1)); ok
}

last=""
skip=""
while read -r key c; do
	if [ "$key" != "$last" ]; then
		last=$key
		skip=""
		golden_policy "$key" "$c" || skip=1
	fi
	[ -z "$skip" ] || continue
	golden_case "$c"
done <"$G/cases"
# The names only (the messages are for people; -a: a message may hold any byte).
LC_ALL=C sort "$G/invalid.got" >"$G/invalid.sorted"
grep -av '^#' "$ROOT/test/cluster/golden-invalid.txt" | cut -f1 | LC_ALL=C sort >"$G/invalid.want"
cut -f1 "$G/invalid.sorted" >"$G/invalid.names"
if cmp -s "$G/invalid.want" "$G/invalid.names"; then ok; else
	bad "golden: the cases the API server refuses as invalid are not test/cluster/golden-invalid.txt's (< listed, > refused)"
	diff "$G/invalid.want" "$G/invalid.names" | sed "s/^/    /" | head -n 40
	echo "    what the API server said of the refused ones:"
	LC_ALL=C tr -cd '\11\12\40-\176' <"$G/invalid.sorted" | sed "s/^/    /" | head -n 40
fi
echo "cluster: golden through the API server: $gp cases as predicted, $gf not, $(wc -l <"$G/invalid.sorted") refused as invalid (of $(wc -l <"$G/cases") sent)"
# Back to the three pools for the scenarios after this one.
upgrade three-pools.yaml
