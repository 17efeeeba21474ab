#!/bin/sh
# Builds the test control plane from pinned Go modules, once per machine:
#   build/cluster/bin/etcd                         test/cluster/etcd (go.etcd.io/etcd/server/v3)
#   build/cluster/MINOR/bin/{kube-apiserver,kube-scheduler,kube-controller-manager,kubectl}
#                                                   test/cluster/k8s-MINOR (k8s.io/kubernetes)
#   build/cluster/bin/{kubelet,loadgen,webhook}    test/cluster/tools (client-go): the day-2
#                                                   scenarios' kubelet and load generator, and
#                                                   bench-cluster's Go webhooks
#   build/cluster/bin/kueue                        test/cluster/kueue (sigs.k8s.io/kueue/cmd/kueue):
#                                                   scenario 85's queue manager
#   build/cluster/bin/kyverno                      test/cluster/kyverno (github.com/kyverno/kyverno/cmd/kyverno):
#                                                   scenario 86's admission controller
# A binary set is rebuilt only when its go.mod/go.sum change (a stamp records their
# checksum). Go's module cache (GOMODCACHE) and build cache (GOCACHE) are the user's
# defaults, so they survive `make clean` and a fresh clone on the same machine: the
# first build downloads and compiles everything, later ones only link (see README).
# No binary is downloaded but the Go toolchain when the machine has none new enough
# (.ci/go, pinned): only source modules through the Go module proxy.
#   usage: test/cluster/build.sh MINOR...      (e.g. 1.34 1.37); prints nothing on a hit
set -eu
cd "$(dirname "$0")/../.."
# go_cmd: sets gocmd, on the first build only (a cache hit needs no Go): the machine's Go
# ($GO if set) when it is new enough for these go.mod files, else the pinned toolchain that
# make deps (or make test) put in the user's cache; .ci/go says which, or what is missing.
gocmd=""
go_cmd() {
	[ -n "$gocmd" ] || gocmd=$(sh .ci/go --check) || exit 1
}
# This go builds, never one it would switch to (cmd/go/internal/toolchain/select.go: a
# GOTOOLCHAIN in the environment or a go.mod toolchain line), from its own tree, whatever
# GOROOT another install left in the environment (.ci/go asked it its version so).
export GOTOOLCHAIN=local
unset GOROOT
out=$PWD/build/cluster
# -mod=readonly: go.sum pins every module's hash; a missing line fails the build.
export GOFLAGS="-mod=readonly -trimpath"

stamp_ok() { # stamp_ok STAMP FILES...: the stamp matches the files' checksum
	st=$1; shift
	[ -f "$st" ] && [ "$(cat "$@" | cksum)" = "$(cat "$st")" ]
}

etcd_dir=test/cluster/etcd
if ! stamp_ok "$out/bin/.etcd" "$etcd_dir/go.mod" "$etcd_dir/go.sum" || [ ! -x "$out/bin/etcd" ]; then
	echo "cluster: building etcd ($(sed -n 's/^require go.etcd.io\/etcd\/server\/v3 //p' "$etcd_dir/go.mod"))" >&2
	go_cmd
	mkdir -p "$out/bin"
	(cd "$etcd_dir" && "$gocmd" build -ldflags "-s -w" -o "$out/bin/etcd" .)
	cat "$etcd_dir/go.mod" "$etcd_dir/go.sum" | cksum >"$out/bin/.etcd"
fi

tools_dir=test/cluster/tools
if ! stamp_ok "$out/bin/.tools" "$tools_dir/go.mod" "$tools_dir/go.sum" "$tools_dir"/*/*.go ||
   [ ! -x "$out/bin/kubelet" ] || [ ! -x "$out/bin/loadgen" ] || [ ! -x "$out/bin/webhook" ]; then
	echo "cluster: building the test kubelet, load generator and Go webhook" >&2
	go_cmd
	mkdir -p "$out/bin"
	for t in kubelet loadgen webhook; do
		(cd "$tools_dir" && "$gocmd" build -ldflags "-s -w" -o "$out/bin/$t" "./$t")
	done
	cat "$tools_dir/go.mod" "$tools_dir/go.sum" "$tools_dir"/*/*.go | cksum >"$out/bin/.tools"
fi

# neighbour NAME MODULE VERSION_SYMBOL TIME: the main MODULE/cmd/NAME of a neighbour the
# suite runs beside the webhook, from test/cluster/NAME (its go.mod pins MODULE: its own
# requirements, and the replaces its go.mod makes), the version stamped into
# VERSION_SYMBOL as the project's own Makefile does, so its logs say it; once per
# go.mod and go.sum. TIME: what the first build costs (README).
neighbour() {
	dir=test/cluster/$1
	stamp_ok "$out/bin/.$1" "$dir/go.mod" "$dir/go.sum" && [ -x "$out/bin/$1" ] && return 0
	ver=$(awk -v m="$2" '$1 == "require" && $2 == m { print $3 }' "$dir/go.mod")
	echo "cluster: building $1 $ver (first time: $4 on 2 cores, see README)" >&2
	go_cmd
	mkdir -p "$out/bin"
	(cd "$dir" && "$gocmd" build -ldflags "-s -w -X $3=$ver" -o "$out/bin/$1" "$2/cmd/$1")
	cat "$dir/go.mod" "$dir/go.sum" | cksum >"$out/bin/.$1"
}
# Kueue's manager (no replace); Kyverno's admission controller (one replace, in its go.mod).
neighbour kueue sigs.k8s.io/kueue sigs.k8s.io/kueue/pkg/version.GitVersion "about 6 min"
neighbour kyverno github.com/kyverno/kyverno github.com/kyverno/kyverno/pkg/version.BuildVersion "7.5-9 min"

for minor in "$@"; do
	dir=test/cluster/k8s-$minor
	[ -f "$dir/go.mod" ] || { echo "cluster: no $dir/go.mod (test/cluster/gomod.sh writes it)" >&2; exit 1; }
	bin=$out/$minor/bin
	if stamp_ok "$bin/.stamp" "$dir/go.mod" "$dir/go.sum" && [ -x "$bin/kube-apiserver" ] && [ -x "$bin/kubectl" ] \
	   && [ -x "$bin/kube-scheduler" ] && [ -x "$bin/kube-controller-manager" ]; then
		continue
	fi
	ver=$(sed -n 's/^require k8s.io\/kubernetes //p' "$dir/go.mod")
	echo "cluster: building Kubernetes $ver (first time: about 30 min on 2 cores, see README)" >&2
	go_cmd
	mkdir -p "$bin"
	# The version is stamped as upstream's release build does (hack/lib/version.sh), so the
	# API server reports it (/version, helm's .Capabilities.KubeVersion).
	major=${ver#v}; major=${major%%.*}
	v=k8s.io/component-base/version
	cv=k8s.io/client-go/pkg/version
	ld="-s -w -X $v.gitVersion=$ver -X $v.gitMajor=$major -X $v.gitMinor=${minor#*.} -X $v.gitTreeState=clean"
	ld="$ld -X $cv.gitVersion=$ver -X $cv.gitMajor=$major -X $cv.gitMinor=${minor#*.}"
	(cd "$dir" && "$gocmd" build -ldflags "$ld" -o "$bin/" \
		k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kube-scheduler \
		k8s.io/kubernetes/cmd/kube-controller-manager k8s.io/kubernetes/cmd/kubectl)
	cat "$dir/go.mod" "$dir/go.sum" | cksum >"$bin/.stamp"
done
