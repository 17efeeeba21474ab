#!/bin/sh
# test/cluster/ns, the namespaces the control plane runs in (test/cluster/run, the cluster
# benchmarks), as root and as a user: make test as a user must not need root for its
# cluster suite. As root the user's path is taken by a user with no privilege at all
# (setpriv to nobody), so that CI, which runs as root, proves it too: inside, lo is set up
# with the control plane's addresses and a port below 1024 is served and reached, as
# cluster.lib and webhook.lib do. A machine whose kernel forbids user namespaces to users
# is told so (the sysctls named), and the refusal's message is checked with a fake unshare.
. test/check.lib

T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
chmod 755 "$T"

# inside: what the suite does first in its namespace (cp_netns), then a server on
# 192.0.2.10:443 reached from the same namespace; prints "uid 0" and what it served.
cat >"$T/inside" <<'EOF'
echo "uid $(id -u)"
ip link set lo up && ip addr add 192.0.2.1/32 dev lo && ip addr add 192.0.2.10/32 dev lo || exit 1
node -e 'require("http").createServer((q, r) => r.end("served\n")).listen(443, "192.0.2.10")' &
i=0
until out=$(curl -sS --max-time 2 http://192.0.2.10:443/ 2>/dev/null); do
	i=$((i + 1)); [ "$i" -lt 50 ] || break; sleep 0.1
done
echo "$out"
kill $!
EOF

# as_user CMD...: CMD as a user without privilege (nobody, when this runs as root).
as_user() {
	if [ "$(id -u)" -eq 0 ]; then setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; else "$@"; fi
}

if [ "$(id -u)" -eq 0 ]; then
	check "as root: --probe" sh test/cluster/ns --probe
	sh test/cluster/ns sh "$T/inside" >"$T/root.out" 2>&1
	has "$T/root.out" "served" "as root: lo set up and a port below 1024 served and reached in the namespace"
fi

# As a user. Allowed by default on Debian 12 (asked of unshare itself, not of ns); where
# the kernel forbids it the probe must say which setting does, and the suite needs root.
if as_user unshare --user --map-root-user true 2>/dev/null; then
	as_user sh test/cluster/ns --probe >"$T/probe.out" 2>&1 && ok ||
		{ bad "as a user: --probe"; indent "$T/probe.out"; }
	as_user sh test/cluster/ns sh "$T/inside" >"$T/user.out" 2>&1
	has "$T/user.out" "uid 0" "as a user: root of a user namespace of its own"
	has "$T/user.out" "served" "as a user: lo set up and a port below 1024 served and reached in the namespace"
else
	as_user sh test/cluster/ns --probe >"$T/probe.out" 2>&1
	has "$T/probe.out" "sysctl " "a user refused user namespaces is told which setting forbids them"
	echo "ns: user namespaces are forbidden to users here: the cluster suite needs root on this machine"
	indent "$T/probe.out"
fi

# The refusal, as a user whose kernel says no (a fake unshare): why, and what to change.
mkdir "$T/bin"
printf '#!/bin/sh\necho "unshare: unshare failed: Operation not permitted" >&2\nexit 1\n' >"$T/bin/unshare"
chmod 755 "$T/bin" "$T/bin/unshare"
as_user env PATH="$T/bin:$PATH" sh test/cluster/ns --probe >"$T/refused.out" 2>&1
equals "$?" 1 "--probe fails when unshare does"
has "$T/refused.out" "unshare --user --map-root-user --net --pid" "the refusal names the namespaces it asked for"
has "$T/refused.out" "Operation not permitted" "... unshare's own words"
has "$T/refused.out" "kernel.unprivileged_userns_clone=1" "... and what to allow"
has "$T/refused.out" "or run as root" "... or to run as root"

finish
