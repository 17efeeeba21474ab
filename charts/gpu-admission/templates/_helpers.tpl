{{/* Chart name, truncated to the 63 characters a label value allows. */}}
{{- define "gpu-admission.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Full name: the release name, unless it lacks the chart name. */}}
{{- define "gpu-admission.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{- define "gpu-admission.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "gpu-admission.selectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-admission.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-admission.labels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
{{ include "gpu-admission.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: admission-webhook
{{- end -}}

{{- define "gpu-admission.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "gpu-admission.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- default "default" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{- define "gpu-admission.image" -}}
{{- if not .Values.image.repository -}}
{{- fail (printf "image.repository is required: no public gpu-admission image exists. Build it with `make image` (podman, from this repository), push it to a registry your cluster pulls from, e.g. `podman load -i build/image/gpu-admission.tar && podman push localhost/gpu-admission:dev myacr.azurecr.io/gpu-admission:%s`, and install with --set image.repository=myacr.azurecr.io/gpu-admission" .Chart.AppVersion) -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The Secret holding tls.crt and tls.key that the server mounts. */}}
{{- define "gpu-admission.tlsSecretName" -}}
{{- if and (eq .Values.certs.mode "secret") .Values.certs.secret.name -}}
{{- .Values.certs.secret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "gpu-admission.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The policy file as rendered into the ConfigMap. */}}
{{- define "gpu-admission.policy" -}}
{{- toYaml .Values.policy -}}
{{- end -}}

{{/*
Namespaces kube-apiserver never sends to the webhooks: kube-system, the release
namespace (the webhook must never block its own pods), the policy's exempt
namespaces (always admitted unchanged anyway) and webhook.excludeNamespaces.
*/}}
{{- define "gpu-admission.excludedNamespaces" -}}
{{- $ns := list "kube-system" .Release.Namespace -}}
{{- if .Values.policy.exempt -}}
{{- $ns = concat $ns (default (list) .Values.policy.exempt.namespaces) -}}
{{- end -}}
{{- $ns = concat $ns .Values.webhook.excludeNamespaces -}}
{{- toJson (uniq $ns) -}}
{{- end -}}

{{/* The part shared by the mutating and the validating webhook. */}}
{{- define "gpu-admission.webhookCommon" -}}
{{- $ctx := index . 0 -}}
{{- $path := index . 1 -}}
{{- $caBundle := index . 2 -}}
{{- $workloads := index . 3 -}}
admissionReviewVersions: ["v1"]
sideEffects: None
timeoutSeconds: {{ $ctx.Values.webhook.timeoutSeconds }}
clientConfig:
  service:
    name: {{ include "gpu-admission.fullname" $ctx }}
    namespace: {{ $ctx.Release.Namespace }}
    path: {{ $path }}
    port: {{ $ctx.Values.service.port }}
  {{- if $caBundle }}
  caBundle: {{ $caBundle }}
  {{- end }}
rules:
  {{- /* UPDATE too: a pod created clean can be given a GPU toleration, or (while gated) a GPU selector, later. */}}
  - operations: ["CREATE", "UPDATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]
    scope: Namespaced
  {{- if $workloads }}
  {{- /*
  Workloads, judged at kubectl apply by their pod templates (the validating
  webhook only: a workload is never patched). At v1: with matchPolicy
  Equivalent the API server converts any other version to it.
  */}}
  - operations: ["CREATE", "UPDATE"]
    apiGroups: ["apps"]
    apiVersions: ["v1"]
    resources: ["deployments", "statefulsets", "daemonsets", "replicasets"]
    scope: Namespaced
  - operations: ["CREATE", "UPDATE"]
    apiGroups: ["batch"]
    apiVersions: ["v1"]
    resources: ["jobs", "cronjobs"]
    scope: Namespaced
  - operations: ["CREATE", "UPDATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["replicationcontrollers", "podtemplates"]
    scope: Namespaced
  {{- range $ctx.Values.policy.workloads }}
  {{- /* The custom resources of the policy: the resource is the entry's, else the kind in lower case plus "s", the usual CRD plural. */}}
  - operations: ["CREATE", "UPDATE"]
    apiGroups: [{{ .group | quote }}]
    apiVersions: {{ .versions | default (list "*") | toJson }}
    resources: [{{ .resource | default (printf "%ss" (lower .kind)) | quote }}]
    scope: "*"
  {{- end }}
  {{- end }}
namespaceSelector:
  matchExpressions:
    - key: kubernetes.io/metadata.name
      operator: NotIn
      values: {{ include "gpu-admission.excludedNamespaces" $ctx }}
    - key: control-plane
      operator: DoesNotExist
    - key: kubernetes.azure.com/managedby
      operator: DoesNotExist
    {{- with $ctx.Values.webhook.namespaceSelector.matchExpressions }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
{{- with $ctx.Values.webhook.objectSelector }}
objectSelector:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- with $ctx.Values.webhook.matchConditions }}
matchConditions:
  {{- toYaml . | nindent 2 }}
{{- end }}
{{- end -}}

{{/* Annotations on both webhook configurations. */}}
{{- define "gpu-admission.webhookAnnotations" -}}
{{- if .Values.webhook.disableAksAdmissionsEnforcer }}
admissions.enforcer/disabled: "true"
{{- end }}
{{- if eq .Values.certs.mode "cert-manager" }}
cert-manager.io/inject-ca-from: {{ printf "%s/%s" .Release.Namespace (include "gpu-admission.fullname" .) }}
{{- end }}
{{- end -}}

{{/*
certs.mode=helm: a checksum of the serving certificate that is in force, for the
pod template. It is the existing Secret's while webhook.yaml reuses it, so pods
roll only when that render makes a new certificate (first install, a Secret
without all three keys, certs.helm.regenerate).
*/}}
{{- define "gpu-admission.tlsChecksum" -}}
{{- $existing := lookup "v1" "Secret" .Release.Namespace (include "gpu-admission.tlsSecretName" .) -}}
{{- $crt := "" -}}
{{- if and $existing $existing.data (not .Values.certs.helm.regenerate) -}}
{{- if and (index $existing.data "ca.crt") (index $existing.data "tls.crt") (index $existing.data "tls.key") -}}
{{- $crt = index $existing.data "tls.crt" -}}
{{- end -}}
{{- end -}}
{{- if $crt -}}
{{- $crt | sha256sum -}}
{{- else -}}
{{- printf "new-%s" (randAlphaNum 16) | sha256sum -}}
{{- end -}}
{{- end -}}

{{/*
The label that marks the policy ConfigMap: the validating webhook's policy
entry selects by it (and by the release's app.kubernetes.io/instance).
*/}}
{{- define "gpu-admission.policyLabel" -}}
gpu-admission.azure.io/policy: "true"
{{- end -}}

{{/*
The ConfigMap key holding the policy: the file serve --config reads where the
deployment mounts the ConfigMap, and the key /validate-policy judges (serve
--policy-key).
*/}}
{{- define "gpu-admission.policyKey" -}}
policy.yaml
{{- end -}}
