#!/bin/sh
# Renders the plain manifests, manifests/gpu-admission.yaml, from the chart:
# certs.mode=secret, a Namespace object, and two placeholders the documented
# install sequence fills in with sed (charts/gpu-admission/README.md, "Installing on AKS"):
#   ${CA_BUNDLE}  the caBundle file `gpu-admission certs` writes
#   ${REGISTRY}   the registry holding the image (e.g. myacr.azurecr.io)
# A placeholder left unfilled makes `kubectl apply` fail (caBundle is not base64),
# never a webhook that silently cannot be reached.
# DRA claim lookups are on (claimLookups.enabled auto, rendered for a cluster that
# serves resource.k8s.io/v1, as AKS does from 1.34): on an older cluster the webhook
# says in each DRA pod's warning that the API does not serve it, and refuses nothing
# for that; render the chart with claimLookups.enabled=false to leave them out.
#   sh test/helm/manifests.sh > manifests/gpu-admission.yaml   (make manifests)
set -eu
cd "$(dirname "$0")/../.."
HELM=${HELM:-$(sh .ci/helm)/helm}
cat <<'HDR'
# gpu-admission: plain manifests for clusters without Helm.
# GENERATED from charts/gpu-admission by `make manifests` (test/helm/manifests.sh);
# do not edit: `make test` fails when this file drifts from the chart.
#
# Install (namespace gpu-admission, service gpu-admission):
#   kubectl create namespace gpu-admission
#   gpu-admission certs --service gpu-admission --namespace gpu-admission --out certs
#   kubectl -n gpu-admission create secret tls gpu-admission-tls \
#     --cert=certs/tls.crt --key=certs/tls.key
#   sed -e "s|\${CA_BUNDLE}|$(cat certs/caBundle)|" -e "s|\${REGISTRY}|myacr.azurecr.io|" \
#     manifests/gpu-admission.yaml | kubectl apply -f -
# Keep certs/ca.key offline; re-run the sequence with new certificates before
# tls.crt expires (the server reloads the Secret's files without a restart).
# DRA claim lookups are on: a read-only ClusterRole (get, list, watch on
# resourceclaimtemplates, resourceclaims, deviceclasses) and the ServiceAccount's
# token; before Kubernetes 1.34 (no resource.k8s.io/v1) DRA pods are warned so.
HDR
"$HELM" template gpu-admission charts/gpu-admission --namespace gpu-admission \
	--set certs.mode=secret \
	--set-string 'certs.secret.caBundle=${CA_BUNDLE}' \
	--set-string 'image.repository=${REGISTRY}/gpu-admission' \
	--set createNamespace=true \
	--api-versions resource.k8s.io/v1/ResourceClaim |
	sed 's|app.kubernetes.io/managed-by: Helm|app.kubernetes.io/managed-by: kubectl|'
