# gpu-admission container image.
#
#   make image        (podman; builds the local debian:bookworm-slim base first if missing)
#
# Stage 1 builds on debian:bookworm-slim with the Debian -dev packages. Stage 2 is
# an empty image holding only the stripped binary, exactly the shared libraries
# it loads (ldd: libmicrohttpd with GnuTLS, libcurl with OpenSSL, their
# dependencies, jansson, libyaml, libc), their copyright files, and /etc/passwd
# and /etc/group naming uid/gid 65532. No shell, no package manager: the entrypoint is the program.

ARG BASE=docker.io/library/debian:bookworm-slim

FROM ${BASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      gcc libc6-dev make pkg-config binutils \
      libmicrohttpd-dev libssl-dev libjansson-dev libyaml-dev libcurl4-openssl-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
COPY Makefile ./
COPY .ci/deps .ci/deps
COPY pkg pkg
COPY cmd cmd
ARG VERSION=0.0.0
ARG REVISION=unknown
RUN make -j"$(nproc)" VERSION="$VERSION" REVISION="$REVISION" bin/gpu-admission \
 && strip --strip-unneeded bin/gpu-admission

# The runtime root, assembled and then tried in a chroot so a missing library
# fails the build rather than the pod.
RUN set -eu; \
    out=/out; \
    mkdir -p "$out/usr/local/bin" "$out/etc" "$out/tmp" "$out/usr/share/doc"; \
    install -m 0755 bin/gpu-admission "$out/usr/local/bin/gpu-admission"; \
    for lib in $(ldd bin/gpu-admission | awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }'); do \
      mkdir -p "$out$(dirname "$lib")"; \
      cp -L "$lib" "$out$lib"; \
      pkg=$(dpkg -S "$(readlink -f "$lib")" 2>/dev/null | head -n 1 | cut -d: -f1); \
      if [ -n "$pkg" ] && [ -f "/usr/share/doc/$pkg/copyright" ]; then \
        mkdir -p "$out/usr/share/doc/$pkg"; cp "/usr/share/doc/$pkg/copyright" "$out/usr/share/doc/$pkg/"; \
      fi; \
    done; \
    printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/nonexistent:/sbin/nologin\n' >"$out/etc/passwd"; \
    printf 'root:x:0:\nnonroot:x:65532:\n' >"$out/etc/group"; \
    chmod 1777 "$out/tmp"; \
    chroot "$out" /usr/local/bin/gpu-admission version; \
    chroot "$out" /usr/local/bin/gpu-admission print-default-config >/dev/null

FROM scratch
ARG VERSION=0.0.0
ARG REVISION=unknown
ARG SOURCE=unknown
COPY --from=build /out/ /
COPY LICENSE /usr/share/doc/gpu-admission/LICENSE
ENV PATH=/usr/local/bin
USER 65532:65532
EXPOSE 8443
# The standard OCI annotations (github.com/opencontainers/image-spec annotations.md).
LABEL org.opencontainers.image.title="gpu-admission" \
      org.opencontainers.image.description="Kubernetes admission webhook for AKS GPU node pools" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
ENTRYPOINT ["gpu-admission", "serve"]
