#!/bin/sh
# Every pool example the project shows runs: README.md's policy examples, the
# chart's values.yaml and print-default-config's commented ones. Each is marked
# with the placements it promises (test/examples/extract.awk says how); each must
# pass check-config, and each promised pod, reviewed against it, must go where the
# example says: "1 nvidia.com/mig-1g.10gb -> a100" fails if a MIG pod lands on t4.
# A pool list with no marker fails too: an example nobody runs can drift.
set -u
BIN=${BIN:-bin/gpu-admission}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

mkdir "$T/ex"
X=test/examples/extract.awk
awk -v out="$T/ex" -v kind=md -v prefix=readme -f $X README.md >"$T/unmarked"
awk -v out="$T/ex" -v kind=yaml -v prefix=values -f $X charts/gpu-admission/values.yaml >>"$T/unmarked"
"$BIN" print-default-config >"$T/print-default-config.yaml"
awk -v out="$T/ex" -v kind=yaml -v prefix=default -f $X "$T/print-default-config.yaml" >>"$T/unmarked"
while read -r what where; do bad "$where: a pool example with no policy-example marker"; done <"$T/unmarked"
for src in readme values default; do
	if ls "$T/ex/$src"-*.yaml >/dev/null 2>&1; then ok; else bad "no policy example found in $src"; fi
done

# review POLICY NS RESOURCE COUNT LABELS-JSON: where the pod goes ("t4", "t4-spot,t4", "rejected").
review() {
	printf '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"example","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"%s","operation":"CREATE","userInfo":{"username":"example"},"object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","namespace":"%s","labels":{%s}},"spec":{"containers":[{"name":"c","image":"x","resources":{"limits":{"%s":"%s"}}}]}}}}' \
		"$2" "$2" "$5" "$3" "$4" | "$BIN" review --config "$1" |
		jq -r '.response | if .allowed then (.auditAnnotations.pool // .auditAnnotations.pools // "(no pool)") else "rejected" end'
}

for y in "$T"/ex/*.yaml; do
	where=$(cat "${y%.yaml}.where")
	if "$BIN" check-config "$y" >"$T/cc" 2>&1 && head -n 1 "$T/cc" | grep -qx 'configuration OK'; then ok
	else bad "$where: check-config"; cat "$T/cc"; cat "$y"; continue; fi
	n=0
	while IFS= read -r e; do
		[ -n "$e" ] || continue
		n=$((n + 1))
		want=$(echo "${e#*->}" | tr -d ' ')
		set -- ${e%%->*}
		count=$1 res=$2 ns=default labels=""
		shift 2
		while [ $# -gt 0 ]; do
			case $1 in
			in) ns=$2; shift 2 ;;
			*=*) labels="$labels${labels:+,}\"${1%%=*}\":\"${1#*=}\""; shift ;;
			*) bad "$where: cannot read \"$e\""; shift ;;
			esac
		done
		got=$(review "$y" "$ns" "$res" "$count" "$labels")
		if [ "$got" = "$want" ]; then ok; else bad "$where: $e: got $got"; fi
	done <"${y%.yaml}.expect"
	[ "$n" -gt 0 ] || bad "$where: the marker promises no placement"
done
echo "$pass passed, $fail failed"
[ "$fail" -eq 0 ]
