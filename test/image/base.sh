#!/bin/sh
# Makes the build's base image, docker.io/library/debian:bookworm-slim, locally
# from the Debian mirror apt already uses, because no container registry can be
# reached here (shared/notes/containers.md). Does nothing when the image exists.
#   1. debootstrap --variant=minbase bookworm
#   2. trim it the way the official slim image is trimmed (no docs, man pages,
#      locales, cached .debs or apt lists; deb822 sources)
#   3. podman import
set -eu
. "$(dirname "$0")/env.sh"

if podman_ image exists "$BASE_IMAGE"; then
	exit 0
fi

MIRROR=$(debian_mirror '^bookworm$')
SECURITY=$(debian_mirror '^bookworm-security$')
case $SECURITY in *debian-security*) ;; *) SECURITY=${MIRROR%/debian}/debian-security ;; esac
ROOTFS=$ROOT_DIR/build/podman/rootfs
rm -rf "$ROOTFS"
mkdir -p "$ROOTFS"
trap 'rm -rf "$ROOTFS"' EXIT

echo "base: debootstrap bookworm from $MIRROR" >&2
debootstrap --variant=minbase bookworm "$ROOTFS" "$MIRROR" >"$ROOT_DIR/build/podman/debootstrap.log" 2>&1 || {
	tail -n 20 "$ROOT_DIR/build/podman/debootstrap.log" >&2
	exit 1
}

# Trim as the official slim image does: dpkg never installs these paths again.
cat >"$ROOTFS/etc/dpkg/dpkg.cfg.d/docker" <<'CFG'
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/groff/*
path-exclude /usr/share/info/*
path-exclude /usr/share/lintian/*
path-exclude /usr/share/linda/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
CFG
cat >"$ROOTFS/etc/apt/apt.conf.d/docker-clean" <<'CFG'
DPkg::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
APT::Update::Post-Invoke { "rm -f /var/cache/apt/archives/*.deb /var/cache/apt/archives/partial/*.deb /var/cache/apt/*.bin || true"; };
Dir::Cache::pkgcache "";
Dir::Cache::srcpkgcache "";
CFG
cat >"$ROOTFS/etc/apt/apt.conf.d/docker-no-languages" <<'CFG'
Acquire::Languages "none";
CFG
find "$ROOTFS/usr/share/doc" -mindepth 2 ! -name copyright ! -type d -delete 2>/dev/null || true
find "$ROOTFS/usr/share/doc" -mindepth 1 -type d -empty -delete 2>/dev/null || true
rm -rf "$ROOTFS"/usr/share/man/* "$ROOTFS"/usr/share/info/* "$ROOTFS"/usr/share/groff/* \
       "$ROOTFS"/usr/share/lintian/* "$ROOTFS"/usr/share/linda/*
find "$ROOTFS/usr/share/locale" -mindepth 1 -maxdepth 1 ! -name locale.alias -exec rm -rf {} +
rm -rf "$ROOTFS"/var/cache/apt/*.bin "$ROOTFS"/var/cache/apt/archives/*.deb \
       "$ROOTFS"/var/lib/apt/lists/* "$ROOTFS"/var/log/*.log "$ROOTFS"/var/cache/debconf/*-old
rm -f "$ROOTFS/etc/apt/sources.list"
cat >"$ROOTFS/etc/apt/sources.list.d/debian.sources" <<SRC
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
SRC

echo "base: importing $BASE_IMAGE" >&2
tar --numeric-owner -C "$ROOTFS" -c . | podman_ import \
	--change 'CMD ["bash"]' \
	--change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
	- "$BASE_IMAGE" >/dev/null
podman_ image exists "$BASE_IMAGE"
echo "base: $BASE_IMAGE ready" >&2
