#!/bin/sh
# Installs what building and running the image needs (podman, runc, debootstrap),
# once. Idempotent, like .ci/deps.
set -eu
missing=""
for p in podman runc debootstrap containernetworking-plugins iptables; do
	dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "image deps: installing$missing" >&2
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq >&2
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >&2
