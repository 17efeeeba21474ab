#!/bin/sh
# make image-test (slow): builds the image and runs it for real with podman, the
# way the chart runs it: uid 65532, read-only root filesystem, no capabilities,
# no privilege escalation.
#   - image: size <= IMAGE_MAX_BYTES (24 MB), USER 65532, ENTRYPOINT ["gpu-admission", "serve"], no shell
#   - version, check-config (the chart's rendered policies; a bad one fails),
#     certs (writes into a mounted directory)
#   - serve with the chart's Deployment arguments, the certificates from `certs`
#     and the rendered policy mounted where the chart mounts them; from the host,
#     through a published loopback port, over TLS verified with the caBundle:
#     /healthz, /readyz, a GPU pod review on /mutate (toleration patched in) and
#     /validate; then SIGTERM (podman stop) exits 0.
# Last line "N passed, M failed"; non-zero exit on any failure.
set -u
. "$(dirname "$0")/env.sh"
cd "$ROOT_DIR"
. test/check.lib
# tg PATTERN CMD...: CMD exits 0 and prints a line matching PATTERN.
tg() {
	pat=$1; shift
	if "$@" >"$T/out" 2>&1 && grep -qE "$pat" "$T/out"; then ok "$desc"; else notok "$desc"; indent "$T/out" | head -n 20; fi
}
CID=""
finish() {
	if [ -n "$CID" ]; then podman_ rm -f "$CID" >/dev/null 2>&1; fi
	rm -rf "$T"
	echo "image-test: $pass passed, $fail failed"
	[ "$fail" -eq 0 ]
	exit $?
}
T=$(mktemp -d)
trap finish EXIT
trap 'exit 1' INT TERM
start=$(date +%s)

# node, curl, npm (for .ci/helm): the same test tools make test uses.
sh .ci/deps test
desc="make image"
t sh test/image/build.sh
[ "$fail" -eq 0 ] || exit 1

# ---- the image itself ---------------------------------------------------------
# The budget guards against bloat (a base image, a static debug build), not a
# goal in itself. Measured at 2368e46: 19.9 MB = the 2.1 MB binary + 18.1 MB of
# the libraries ldd lists. Two TLS stacks ride along, because Debian builds
# libmicrohttpd on GnuTLS (with nettle, gmp, p11-kit, unistring: ~6.3 MB) and
# libcurl, for the API client, on OpenSSL with Kerberos, LDAP, SASL, RTMP and
# SSH2 linked in (~2.7 MB the program never calls). Dropping either means
# building that library from source in the image; 24 MB leaves ~4 MB of room.
IMAGE_MAX_BYTES=24000000
size=$(podman_ image inspect --format '{{.Size}}' "$IMAGE")
desc="image size $((size / 1024)) KiB <= $((IMAGE_MAX_BYTES / 1000000)) MB"
t [ "$size" -le "$IMAGE_MAX_BYTES" ]
desc="image runs as 65532:65532"
t sh -c "[ \"\$(podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' image inspect --format '{{.Config.User}}' '$IMAGE')\" = 65532:65532 ]"
desc="ENTRYPOINT [\"gpu-admission\", \"serve\"]"
t sh -c "podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' image inspect --format '{{json .Config.Entrypoint}}' '$IMAGE' | grep -qx '\[\"gpu-admission\",\"serve\"\]'"
for label in version revision source licenses; do
	desc="OCI label org.opencontainers.image.$label"
	t sh -c "podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' image inspect --format '{{index .Labels \"org.opencontainers.image.$label\"}}' '$IMAGE' | grep -q ."
done
desc="OCI labels: version $(cat VERSION), licenses Apache-2.0"
t sh -c "podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' image inspect --format '{{index .Labels \"org.opencontainers.image.version\"}} {{index .Labels \"org.opencontainers.image.licenses\"}}' '$IMAGE' | grep -qx '$(cat VERSION) Apache-2.0'"
desc="no shell in the image"
t sh -c "! podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' run --rm --entrypoint /bin/sh '$IMAGE' -c true"

hardened="--user 65532:65532 --read-only --cap-drop=all --security-opt no-new-privileges"
run() { # run COMMAND ARGS... in the hardened container, with extra podman options in $RUN_OPTS
	# shellcheck disable=SC2086
	podman_ run --rm $hardened ${RUN_OPTS:-} --entrypoint gpu-admission "$IMAGE" "$@"
}

desc="version"
tg "^gpu-admission $(cat VERSION) \\([0-9a-f]{7}" run version
indent "$T/out"

# ---- the chart's files: Deployment args and policies ------------------------
TOOLBIN=$(sh .ci/helm 2>"$T/tools.log") || { cat "$T/tools.log"; notok "install helm (.ci/helm)"; exit 1; }
export TOOLS="${TOOLBIN%/bin}"
for c in defaults three-pools; do
	mkdir -p "$T/$c"
	"$TOOLBIN/helm" template gpu-admission charts/gpu-admission -n gpu-admission \
		-f "test/helm/cases/$c/values.yaml" >"$T/$c/render.yaml"
	node test/helm/check.js "$c" "$T/$c/render.yaml" "$T/$c" >"$T/$c/check.log" 2>&1 ||
		notok "chart render $c usable (see test/helm/helm.sh)"
	chmod 0644 "$T/$c/policy.yaml"
	desc="check-config on the chart's $c policy"
	RUN_OPTS="-v $T/$c/policy.yaml:/policy.yaml:ro" tg '^configuration OK$' run check-config /policy.yaml
done
printf 'mode: enforce\npools: 3\n' >"$T/bad.yaml"
chmod 0644 "$T/bad.yaml"
desc="check-config refuses a bad policy (exit 1)"
RUN_OPTS="-v $T/bad.yaml:/policy.yaml:ro" run check-config /policy.yaml >"$T/out" 2>&1
rc=$?
if [ "$rc" -eq 1 ]; then ok "$desc"; else notok "$desc (exit $rc)"; indent "$T/out"; fi

# ---- certs, written by uid 65532 into a mounted directory ---------------------
mkdir -p "$T/certs"
chown 65532:65532 "$T/certs"
desc="certs --service gpu-admission --namespace gpu-admission"
RUN_OPTS="-v $T/certs:/certs" t run certs --service gpu-admission --namespace gpu-admission --out /certs
desc="certs wrote ca.crt ca.key tls.crt tls.key caBundle"
t sh -c "for f in ca.crt ca.key tls.crt tls.key caBundle; do [ -s '$T/certs/'\$f ] || exit 1; done"

# ---- serve, as the chart runs it ----------------------------------------------
mkdir -p "$T/tls" "$T/policy"
cp "$T/certs/tls.crt" "$T/certs/tls.key" "$T/tls/"
cp "$T/defaults/policy.yaml" "$T/policy/policy.yaml"
chown -R 65532:65532 "$T/tls" "$T/policy"
chmod 0440 "$T/tls/tls.key"
port=$(node -e 'const s=require("net").createServer().listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')
cport=$(sed -n 's/^--addr=0\.0\.0\.0:\([0-9]*\)$/\1/p' "$T/defaults/args")
set --
while IFS= read -r a; do set -- "$@" "$a"; done <"$T/defaults/args"
# shellcheck disable=SC2086
CID=$(podman_ run -d $hardened -p "127.0.0.1:$port:$cport" \
	-v "$T/tls:/etc/gpu-admission/tls:ro" -v "$T/policy:/etc/gpu-admission/policy:ro" \
	"$IMAGE" "$@" 2>"$T/run.err")
desc="serve started with the chart's args: $*"
if [ -n "$CID" ]; then ok "$desc"; else notok "$desc"; indent "$T/run.err"; exit 1; fi

host=gpu-admission.gpu-admission.svc
curl_() { curl -sS --max-time 5 --cacert "$T/certs/ca.crt" --resolve "$host:$port:127.0.0.1" "$@"; }
i=0
until curl_ -o /dev/null "https://$host:$port/healthz" 2>/dev/null; do
	i=$((i + 1))
	if [ $i -ge 100 ]; then break; fi
	sleep 0.1
done
for p in /healthz /readyz; do
	code=$(curl_ -o /dev/null -w '%{http_code}' "https://$host:$port$p" 2>"$T/out")
	desc="GET $p over TLS through the published port: 200"
	if [ "$code" = 200 ]; then ok "$desc"; else notok "$desc (got $code)"; indent "$T/out"; fi
done
printf '%s' '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"img-1","kind":{"group":"","version":"v1","kind":"Pod"},"resource":{"group":"","version":"v1","resource":"pods"},"namespace":"ml","operation":"CREATE","object":{"apiVersion":"v1","kind":"Pod","metadata":{"name":"train","namespace":"ml"},"spec":{"containers":[{"name":"cuda","image":"x","resources":{"limits":{"nvidia.com/gpu":1}}}]}}}}' >"$T/review.json"
curl_ -H 'Content-Type: application/json' --data-binary "@$T/review.json" "https://$host:$port/mutate" >"$T/mutate.json" 2>&1
desc="POST /mutate: GPU pod gets the sku=gpu toleration and the pool's nodeSelector"
if node -e '
	const r = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).response;
	const patch = JSON.parse(Buffer.from(r.patch, "base64").toString());
	const s = JSON.stringify(patch);
	if (!(r.uid === "img-1" && r.allowed && r.patchType === "JSONPatch" &&
	      /"key":"sku"/.test(s) && /"value":"gpu"/.test(s) && /kubernetes.azure.com\/accelerator/.test(s))) process.exit(1);
' "$T/mutate.json" 2>"$T/out"; then ok "$desc"; else notok "$desc"; head -c 600 "$T/mutate.json" | indent; echo; fi
curl_ -H 'Content-Type: application/json' --data-binary "@$T/review.json" "https://$host:$port/validate" >"$T/validate.json" 2>&1
desc="POST /validate: answers the review, never with a patch"
t sh -c "grep -q '\"uid\":\"img-1\"' '$T/validate.json' && ! grep -q '\"patch\"' '$T/validate.json'"
desc="the server process runs as uid 65532"
t sh -c "podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' top '$CID' huser user | awk 'NR > 1' | grep -q '65532'"
desc="the container's root filesystem is read-only"
t sh -c "[ \"\$(podman --root '$PODMAN_ROOT' --runroot '$PODMAN_RUNROOT' inspect --format '{{.HostConfig.ReadonlyRootfs}}' '$CID')\" = true ]"

desc="SIGTERM (podman stop): exits 0 within the grace period"
podman_ stop -t 20 "$CID" >/dev/null 2>&1
code=$(podman_ inspect --format '{{.State.ExitCode}}' "$CID" 2>/dev/null)
if [ "$code" = 0 ]; then ok "$desc"; else notok "$desc (exit $code)"; podman_ logs "$CID" 2>&1 | tail -n 10 | indent; fi
desc="no error logged by serve"
podman_ logs "$CID" >"$T/serve.log" 2>&1
t sh -c "! grep -q '\"level\":\"error\"' '$T/serve.log'"

echo "image-test: $(($(date +%s) - start)) s"
