#!/bin/sh
# make image: builds the gpu-admission image with podman into the project's own
# store (test/image/env.sh), from a context holding only what the Dockerfile
# copies. Makes the base image first when missing (test/image/base.sh) and never
# pulls (no registry is reachable). Also writes build/image/gpu-admission.tar
# (docker-archive) for `podman load` / `docker load` and pushing to a registry.
set -eu
. "$(dirname "$0")/env.sh"
cd "$ROOT_DIR"
sh .ci/deps image
sh test/image/base.sh

# The labels: the release (VERSION, as the chart's appVersion), the commit built,
# and where the sources live (the git remote, when there is one).
VERSION=$(cat VERSION)
REVISION=$(git describe --always --dirty --abbrev=7 --exclude='*' 2>/dev/null || echo unknown)
SOURCE=${SOURCE:-$(git remote get-url origin 2>/dev/null || echo unknown)}
CTX=$ROOT_DIR/build/image/context
rm -rf "$CTX"
mkdir -p "$CTX/.ci"
cp -R Dockerfile Makefile VERSION LICENSE pkg cmd "$CTX/"
cp .ci/deps "$CTX/.ci/"

echo "image: building $IMAGE (version $VERSION, revision $REVISION)" >&2
podman_ build --pull=never --isolation=chroot --layers=true \
	--build-arg VERSION="$VERSION" --build-arg REVISION="$REVISION" --build-arg SOURCE="$SOURCE" \
	-t "$IMAGE" -t "localhost/gpu-admission:$VERSION" \
	-f "$CTX/Dockerfile" "$CTX" >"$ROOT_DIR/build/image/build.log" 2>&1 || {
	tail -n 40 "$ROOT_DIR/build/image/build.log" >&2
	exit 1
}
rm -f build/image/gpu-admission.tar
podman_ save --format docker-archive -o build/image/gpu-admission.tar "$IMAGE" >/dev/null 2>&1
size=$(podman_ image inspect --format '{{.Size}}' "$IMAGE")
echo "image: $IMAGE built, $((size / 1024)) KiB uncompressed; archive build/image/gpu-admission.tar" >&2
echo "image: list it with: podman --root $PODMAN_ROOT --runroot $PODMAN_RUNROOT images" >&2
