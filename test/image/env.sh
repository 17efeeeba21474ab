# Sourced by the image scripts: one private podman store and configuration for
# this project, as measured in shared/notes/containers.md:
#   - runc (podman's default crun refuses this machine's cgroup layout),
#   - default_ulimits = [] (the machine's hard nofile limit is below podman's ask),
#   - overlay storage in build/podman, so nothing outside the work tree is touched.
# Override PODMAN_ROOT / PODMAN_RUNROOT to use another store (e.g. the system one).
ROOT_DIR=$(cd "$(dirname "$0")/../.." && pwd)
PODMAN_ROOT=${PODMAN_ROOT:-$ROOT_DIR/build/podman/root}
PODMAN_RUNROOT=${PODMAN_RUNROOT:-$ROOT_DIR/build/podman/runroot}
IMAGE=${IMAGE:-localhost/gpu-admission:dev}
BASE_IMAGE=docker.io/library/debian:bookworm-slim
mkdir -p "$PODMAN_ROOT" "$PODMAN_RUNROOT"
CONTAINERS_CONF=$ROOT_DIR/build/podman/containers.conf
if [ ! -f "$CONTAINERS_CONF" ]; then
	cat >"$CONTAINERS_CONF" <<'CONF'
[containers]
default_ulimits = []

[engine]
runtime = "runc"
CONF
fi
export CONTAINERS_CONF

podman_() {
	podman --root "$PODMAN_ROOT" --runroot "$PODMAN_RUNROOT" --storage-driver overlay "$@"
}

# The Debian mirrors apt already uses (deb822 sources first, then sources.list).
debian_mirror() {
	suite_re=$1
	m=""
	if [ -f /etc/apt/sources.list.d/debian.sources ]; then
		m=$(awk -v re="$suite_re" '
			/^URIs:/ { uri = $2 }
			/^Suites:/ { for (i = 2; i <= NF; i++) if ($i ~ re) { print uri; exit } }
			/^$/ { uri = "" }' /etc/apt/sources.list.d/debian.sources)
	fi
	if [ -z "$m" ] && [ -f /etc/apt/sources.list ]; then
		m=$(awk -v re="$suite_re" '$1 == "deb" && $3 ~ re { print $2; exit }' /etc/apt/sources.list)
	fi
	echo "${m:-http://deb.debian.org/debian}"
}
