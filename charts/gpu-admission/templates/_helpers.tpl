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

{{/* The watch's own ServiceAccount (watch.enabled): the full name + "-watch". */}}
{{- define "gpu-admission.watchServiceAccountName" -}}
{{- printf "%s-watch" (include "gpu-admission.fullname" . | trunc 57 | trimSuffix "-") -}}
{{- end -}}

{{/*
The image. No public image exists, so image.repository has no default, and
there are two cases without one. An install or upgrade fails before anything
is created, saying how to build and push the image: two failurePolicy Fail
webhooks in front of pods that can never start would block pod creation. A
look-only render (helm template, helm lint, helm install --dry-run) shows the
chart with its defaults: the image is gpu-admission.imagePlaceholder, in the
reserved .invalid domain no registry answers for, and the Deployment and the
notes say so. .Release.IsInstall cannot tell the two apart (helm template
renders as an install); lookup can: against a cluster it finds kube-system,
which every API server makes, and offline it finds nothing. It is asked only
when image.repository is empty.
*/}}
{{- define "gpu-admission.imagePlaceholder" -}}image-repository-not-set.invalid/gpu-admission{{- end -}}

{{- define "gpu-admission.image" -}}
{{- $repo := .Values.image.repository -}}
{{- if not $repo -}}
{{- if lookup "v1" "Namespace" "" "kube-system" -}}
{{- fail (printf "image.repository is required: no public gpu-admission image exists. Build it with `make image` (podman, from this repository), push it to a registry your cluster pulls from (e.g. an Azure Container Registry attached with `az aks update --attach-acr`): `podman load -i build/image/gpu-admission.tar && podman push localhost/gpu-admission:dev myacr.azurecr.io/gpu-admission:%s`, and install with --set image.repository=myacr.azurecr.io/gpu-admission. Nothing was created." .Chart.AppVersion) -}}
{{- end -}}
{{- $repo = include "gpu-admission.imagePlaceholder" . -}}
{{- end -}}
{{- if .Values.image.digest -}}
{{- printf "%s@%s" $repo .Values.image.digest -}}
{{- else -}}
{{- printf "%s:%s" $repo (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}
{{- end -}}

{{/* The warning a render without image.repository carries (YAML comment lines): it is for reading only. */}}
{{- define "gpu-admission.imageWarning" -}}
{{- if not .Values.image.repository }}
# WARNING: image.repository is not set: this render is for reading. Its image,
# {{ include "gpu-admission.imagePlaceholder" . }}, is a placeholder no registry serves.
# Build the image (make image), push it (podman push ... myacr.azurecr.io/gpu-admission:{{ .Chart.AppVersion }})
# and render or install with --set image.repository=myacr.azurecr.io/gpu-admission.
{{- end }}
{{- end -}}

{{/* The Secret holding tls.crt and tls.key that the server mounts. */}}
{{- define "gpu-admission.tlsSecretName" -}}
{{- if and (eq .Values.certs.mode "secret") .Values.certs.secret.name -}}
{{- .Values.certs.secret.name -}}
{{- else -}}
{{- printf "%s-tls" (include "gpu-admission.fullname" .) -}}
{{- end -}}
{{- end -}}

{{/* The policy file as rendered into the ConfigMap, once it passes the checks below. */}}
{{- define "gpu-admission.policy" -}}
{{- include "gpu-admission.policyCheck" . -}}
{{- toYaml .Values.policy -}}
{{- end -}}

{{/*
The rules of the policy that span fields, as `gpu-admission check-config`
checks them (pkg/policy/config_check.c config_check_whole, check_fallback, check_infra;
pkg/policy/config_schema.c read_workloads):
values.schema.json holds the shape of each field, these the rest. On a first
install no replica runs yet to refuse the ConfigMap (webhook.policyCheck), so
a policy the binary refuses would leave two failurePolicy Fail webhooks in
front of a server that never becomes ready: the install fails here instead.
test/helm/helm.sh renders every test/pools/cases/ error case.
*/}}
{{- define "gpu-admission.policyCheck" -}}
{{- $p := .Values.policy -}}
{{- $refused := "(gpu-admission check-config refuses this policy)" -}}
{{- $names := dict -}}
{{- range $i, $pool := default (list) $p.pools -}}
{{- $name := toString $pool.name -}}
{{- if hasKey $names $name -}}
{{- fail (printf "policy.pools[%d].name: two pools are named %q (pools[%v] too) %s" $i $name (get $names $name) $refused) -}}
{{- end -}}
{{- $_ := set $names $name $i -}}
{{- end -}}
{{- if eq (toString $p.placement) "fallback" -}}
{{- $key := "" -}}
{{- range $i, $pool := default (list) $p.pools -}}
{{- $sel := default (dict) $pool.nodeSelector -}}
{{- if ne (len $sel) 1 -}}
{{- fail (printf "policy.pools[%d].nodeSelector: placement fallback needs every pool to select by exactly one label (pool %q has %d), one and the same key for all (e.g. kubernetes.azure.com/agentpool, or karpenter.sh/nodepool) %s" $i (toString $pool.name) (len $sel) $refused) -}}
{{- end -}}
{{- $k := keys $sel | first -}}
{{- if eq $i 0 -}}
{{- $key = $k -}}
{{- else if ne $k $key -}}
{{- fail (printf "policy.pools[%d].nodeSelector: placement fallback needs every pool to select by the same label key: pool %q selects by %s, pools[0] by %s %s" $i (toString $pool.name) $k $key $refused) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $ex := default (dict) $p.exempt -}}
{{- $dsOn := true -}}
{{- if hasKey $ex "daemonSets" -}}
{{- $dsOn = $ex.daemonSets -}}
{{- end -}}
{{- $exNs := default (list "kube-system" "gpu-operator") $ex.namespaces -}}
{{- $dsNs := list "kube-system" "gpu-operator" "gpu-resources" -}}
{{- if hasKey $ex "daemonSetNamespaces" -}}
{{- $dsNs = default (list) $ex.daemonSetNamespaces -}}
{{- end -}}
{{- range $ns := default (list) $p.gpuInfraNamespaces -}}
{{- $admitted := has $ns $exNs -}}
{{- range $g := $dsNs -}}
{{- if and $dsOn (regexMatch (printf "^%s$" (replace "?" "." (replace "*" ".*" $g))) $ns) -}}
{{- $admitted = true -}}
{{- end -}}
{{- end -}}
{{- if not $admitted -}}
{{- fail (printf "policy.gpuInfraNamespaces: %q: its DaemonSets would get the GPU toleration and their CPU-only pods be refused for it: list it in exempt.daemonSetNamespaces (with exempt.daemonSets on) or in exempt.namespaces %s" $ns $refused) -}}
{{- end -}}
{{- end -}}
{{- $kinds := dict -}}
{{- range $i, $w := default (list) $p.workloads -}}
{{- $gk := printf "%s %s" (toString $w.group) (toString $w.kind) -}}
{{- if hasKey $kinds $gk -}}
{{- fail (printf "policy.workloads[%d]: lists %s again (workloads[%v]): one entry, with every version in it %s" $i $gk (get $kinds $gk) $refused) -}}
{{- end -}}
{{- $_ := set $kinds $gk $i -}}
{{- end -}}
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

{{/*
The part shared by the webhook entries. Each receives one class of object
(index 3: "pods", "workloads" for the built-in workload kinds, "custom" for
the policy's workloads), and its policy matchConditions are written for that
class only: an expression never reads an object it was not written for.
*/}}
{{- define "gpu-admission.webhookCommon" -}}
{{- $ctx := index . 0 -}}
{{- $path := index . 1 -}}
{{- $caBundle := index . 2 -}}
{{- $for := index . 3 -}}
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
  {{- if eq $for "pods" }}
  {{- /* UPDATE too: a pod created clean can be given a GPU toleration, or (while gated) a GPU selector, later. */}}
  - operations: ["CREATE", "UPDATE"]
    apiGroups: [""]
    apiVersions: ["v1"]
    resources: ["pods"]
    scope: Namespaced
  {{- else if eq $for "workloads" }}
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
  {{- else }}
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
{{- $conditions := list }}
{{- if $ctx.Values.webhook.policyMatchConditions }}
{{- $conditions = include "gpu-admission.matchConditions" (dict "ctx" $ctx "for" $for) | fromJsonArray }}
{{- end }}
{{- with concat $conditions $ctx.Values.webhook.matchConditions }}
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
The CEL matchConditions of one webhook entry (.for: pods, workloads, custom),
made from the policy values (.ctx) exactly as `gpu-admission
print-match-conditions --for FOR` makes them from the policy file
(pkg/render/matchcond.c; test/matchcond/matchcond.sh renders the chart for several policies
and compares the texts): kube-apiserver sends an object only when gpu-admission
may act on it, so an outage cannot block any other. A JSON list of {name,
expression}. Lists are sorted and without duplicates, as the binary writes them.
*/}}
{{- define "gpu-admission.matchConditions" -}}
{{- $for := .for -}}
{{- $updateOnly := "!has(request.operation) || request.operation != 'UPDATE' || oldObject == null" -}}
{{- /* What the policy reads of a pod (pkg/policy/policy_pod.c policy_pod_fields), compared on UPDATE. */ -}}
{{- $specMembers := list -}}
{{- range list "containers" "initContainers" "tolerations" "nodeSelector" "affinity" "nodeName" "resourceClaims" "schedulerName" -}}
{{- $specMembers = append $specMembers (dict "name" .) -}}
{{- end -}}
{{- /* The annotations apart, for the pods of a gpuAnnotations scheduler only (celAnnChanged). */ -}}
{{- $metaMembers := list (dict "name" "namespace") (dict "name" "labels") (dict "name" "ownerReferences") -}}
{{- $templateMembers := list (dict "name" "metadata" "members" $metaMembers) (dict "name" "spec" "members" $specMembers) -}}
{{- if eq $for "custom" -}}
{{- /* A custom resource: CEL cannot search it for templates, so every member but metadata is compared. */ -}}
{{- $upd := printf "%s || object == null\n|| size(object) > 16 || size(oldObject) > 16\n|| object.exists(k, k != 'metadata' && (!(k in oldObject) || object[k] != oldObject[k]))\n|| oldObject.exists(k, k != 'metadata' && !(k in object))\n|| %s" $updateOnly (include "gpu-admission.celChanged" (dict "path" "metadata" "members" $metaMembers "depth" 0)) -}}
{{- toJson (list (dict "name" "update-changes-what-policy-reads" "expression" $upd)) -}}
{{- else -}}
{{- $p := .ctx.Values.policy -}}
{{- $why := "is needed for webhook.policyMatchConditions (or set that to false)" -}}
{{- $exact := list -}}
{{- $wild := list -}}
{{- /* A gpuShareResources name makes a GPU pod as a GPU resource does. */ -}}
{{- $resNames := concat (list) (required (printf "policy.gpuResources %s" $why) $p.gpuResources) -}}
{{- range default (list) $p.gpuShareResources -}}{{- if .name -}}{{- $resNames = append $resNames .name -}}{{- end -}}{{- end -}}
{{- range $resNames -}}
{{- if regexMatch "[*?]" . -}}{{- $wild = append $wild . -}}{{- else -}}{{- $exact = append $exact . -}}{{- end -}}
{{- end -}}
{{- $res := dict "exact" ($exact | uniq | sortAlpha) "wild" ($wild | uniq | sortAlpha) -}}
{{- $taint := required (printf "policy.gpuTaint.key %s" $why) ($p.gpuTaint | default dict).key -}}
{{- $taintKeys := list "" $taint "nvidia.com/gpu" | uniq | sortAlpha -}}
{{- /* AKS sets both agent pool labels alike on every node: each key stands for the other (config_label_alias() in pkg/policy/config.c). */ -}}
{{- $aliases := dict "kubernetes.azure.com/agentpool" "agentpool" "agentpool" "kubernetes.azure.com/agentpool" -}}
{{- $labels := concat (list) (required (printf "policy.gpuNodeLabels %s" $why) $p.gpuNodeLabels) -}}
{{- range $labels -}}{{- if hasKey $aliases . -}}{{- $labels = append $labels (get $aliases .) -}}{{- end -}}{{- end -}}
{{- $pools := required (printf "policy.pools %s" $why) $p.pools -}}
{{- /* GPU nodes by name, as policy_target.c tells them: gpuNodeNames, else aks-<pool>-* for each pool selected by agent pool. */ -}}
{{- $known := true -}}
{{- $names := list -}}
{{- if $p.gpuNodeNames -}}
{{- $names = $p.gpuNodeNames -}}
{{- else -}}
{{- range $pools -}}
{{- $ap := or (index (.nodeSelector | default dict) "kubernetes.azure.com/agentpool") (index (.nodeSelector | default dict) "agentpool") -}}
{{- if $ap -}}{{- $names = append $names (printf "aks-%s-*" $ap) -}}{{- else -}}{{- $known = false -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- $nodeExact := list -}}
{{- $nodeWild := list -}}
{{- if $known -}}
{{- range $names -}}
{{- if regexMatch "[*?]" . -}}{{- $nodeWild = append $nodeWild . -}}{{- else -}}{{- $nodeExact = append $nodeExact . -}}{{- end -}}
{{- end -}}
{{- else -}}
{{- $labels = append $labels "kubernetes.io/hostname" -}}
{{- end -}}
{{- /* The pools' other label keys: only the values pools select by them aim at GPU nodes. */ -}}
{{- $poolKeys := dict -}}
{{- range $pools -}}
{{- range $k, $v := (.nodeSelector | default dict) -}}
{{- range $key := compact (list $k (get $aliases $k)) -}}
{{- if not (has $key $labels) -}}{{- $_ := set $poolKeys $key (append (get $poolKeys $key | default list) $v) -}}{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- range $k, $v := $poolKeys -}}{{- $_ := set $poolKeys $k ($v | uniq | sortAlpha) -}}{{- end -}}
{{- /* gpuAnnotations: the keys and their schedulers, tested apart. */ -}}
{{- $annKeys := list -}}
{{- $annScheds := list -}}
{{- range default (list) $p.gpuAnnotations -}}
{{- if .key -}}{{- $annKeys = append $annKeys .key -}}{{- $annScheds = concat $annScheds (default (list) .schedulerNames) -}}{{- end -}}
{{- end -}}
{{- $w := dict "res" $res "annKeys" ($annKeys | uniq | sortAlpha) "annScheds" ($annScheds | uniq | sortAlpha) "taintKeys" $taintKeys "labels" ($labels | uniq | sortAlpha) "poolKeys" $poolKeys "nodes" (dict "exact" ($nodeExact | uniq | sortAlpha) "wild" ($nodeWild | uniq | sortAlpha)) -}}
{{- $_ := set $w "tested" $known -}}
{{- $rel := "" -}}
{{- $upd := $updateOnly -}}
{{- if eq $for "pods" -}}
{{- $rel = printf "%s && (\n%s\n)" (include "gpu-admission.celGuard" "spec") (include "gpu-admission.celSpecRelevant" (dict "w" $w "s" "object.spec" "m" "object.metadata")) -}}
{{- $upd = printf "%s\n|| %s" $upd (include "gpu-admission.celChanged" (dict "path" "spec" "members" $specMembers "depth" 0)) -}}
{{- $upd = printf "%s%s" $upd (include "gpu-admission.celAnnChanged" (dict "w" $w "spec" "spec" "meta" "metadata" "depth" 0)) -}}
{{- else -}}
{{- /*
The built-in workloads (pkg/policy/template.c: where each kind keeps its pod template),
each kind's template read at its own path; a kind not listed is sent.
*/ -}}
{{- $roots := list (dict "kinds" (list "DaemonSet" "Deployment" "Job" "ReplicaSet" "ReplicationController" "StatefulSet") "tmpl" (list "spec" "template")) (dict "kinds" (list "CronJob") "tmpl" (list "spec" "jobTemplate" "spec" "template")) (dict "kinds" (list "PodTemplate") "tmpl" (list "template")) -}}
{{- $all := list -}}
{{- range $roots -}}{{- $all = concat $all .kinds -}}{{- end -}}
{{- $unknown := printf "!has(request.kind) || !has(request.kind.kind) || !(request.kind.kind in %s)" (include "gpu-admission.celList" ($all | sortAlpha)) -}}
{{- $rel = $unknown -}}
{{- $upd = printf "%s\n|| %s" $upd $unknown -}}
{{- range $roots -}}
{{- $tmpl := join "." .tmpl -}}
{{- $kind := printf "request.kind.kind in %s && " (include "gpu-admission.celList" .kinds) -}}
{{- $rel = printf "%s\n|| %s%s && (\n%s\n)" $rel $kind (include "gpu-admission.celGuard" (printf "%s.spec" $tmpl)) (include "gpu-admission.celSpecRelevant" (dict "w" $w "s" (printf "object.%s.spec" $tmpl) "m" (printf "object.%s.metadata" $tmpl))) -}}
{{- /* The template's levels, each compared as an object whose one member is the next. */ -}}
{{- $members := $templateMembers -}}
{{- range (rest .tmpl | reverse) -}}{{- $members = list (dict "name" . "members" $members) -}}{{- end -}}
{{- $upd = printf "%s\n|| %s(\n  %s%s\n)" $upd $kind (include "gpu-admission.celChanged" (dict "path" (first .tmpl) "members" $members "depth" 1)) (include "gpu-admission.celAnnChanged" (dict "w" $w "spec" (printf "%s.spec" $tmpl) "meta" (printf "%s.metadata" $tmpl) "depth" 1)) -}}
{{- end -}}
{{- end -}}
{{- toJson (list (dict "name" "gpu-relevant" "expression" $rel) (dict "name" "update-changes-what-policy-reads" "expression" $upd)) -}}
{{- end -}}
{{- end -}}

{{/* `object != null && has(object.a) && has(object.a.b)` for the dotted path "a.b". */}}
{{- define "gpu-admission.celGuard" -}}
{{- $out := "object != null" -}}
{{- $at := "" -}}
{{- range splitList "." . -}}
{{- $at = ternary . (printf "%s.%s" $at .) (eq $at "") -}}
{{- $out = printf "%s && has(object.%s)" $out $at -}}
{{- end -}}
{{- $out -}}
{{- end -}}

{{/* Whether the pod spec at .s (its pod's metadata at .m) may be acted on: the disjuncts, each on a line of its own. */}}
{{- define "gpu-admission.celSpecRelevant" -}}
{{- $w := .w -}}
{{- $s := .s -}}
{{- $sel := printf "%s.nodeSelector" $s -}}
{{- $rel := printf "  %s" (include "gpu-admission.celContainers" (dict "w" $w "list" (printf "%s.containers" $s))) -}}
{{- $rel = printf "%s\n  || %s" $rel (include "gpu-admission.celContainers" (dict "w" $w "list" (printf "%s.initContainers" $s))) -}}
{{- $rel = printf "%s\n  || has(%s.resourceClaims) && size(%s.resourceClaims) > 0" $rel $s $s -}}
{{- if $w.annKeys -}}
{{- $ann := printf "%s.annotations" .m -}}
{{- $rel = printf "%s\n  || has(%s.schedulerName) && %s.schedulerName in %s && has(%s) && has(%s) && (size(%s) > 16 || %s.exists(k, k in %s))" $rel $s $s (include "gpu-admission.celList" $w.annScheds) .m $ann $ann $ann (include "gpu-admission.celList" $w.annKeys) -}}
{{- end -}}
{{- $rel = printf "%s\n  || has(%s.tolerations) && (size(%s.tolerations) > 16 || %s.tolerations.exists(t, !has(t.key) || t.key in %s))" $rel $s $s $s (include "gpu-admission.celList" $w.taintKeys) -}}
{{- $rel = printf "%s\n  || has(%s) && (size(%s) > 16 || %s.exists(k, k in %s" $rel $sel $sel $sel (include "gpu-admission.celList" $w.labels) -}}
{{- range $k, $v := $w.poolKeys -}}
{{- $rel = printf "%s || k == %s && %s[k] in %s" $rel (include "gpu-admission.celLit" $k) $sel (include "gpu-admission.celList" $v) -}}
{{- end -}}
{{- if $w.tested -}}
{{- $rel = printf "%s || k == 'kubernetes.io/hostname' && %s" $rel (include "gpu-admission.celAnyGlob" (merge (dict "v" (printf "%s[k]" $sel)) $w.nodes)) -}}
{{- end -}}
{{- $rel = printf "%s))" $rel -}}
{{- $na := printf "%s.affinity.nodeAffinity" $s -}}
{{- $req := printf "%s.requiredDuringSchedulingIgnoredDuringExecution" $na -}}
{{- $terms := printf "%s.nodeSelectorTerms" $req -}}
{{- $pref := printf "%s.preferredDuringSchedulingIgnoredDuringExecution" $na -}}
{{- $rel = printf "%s\n  || has(%s.affinity) && has(%s) && (has(%s) && has(%s) && %s != null && (size(%s) > 8 || %s.exists(t, %s))" $rel $s $na $req $terms $terms $terms $terms (include "gpu-admission.celTerm" (dict "w" $w "t" "t")) -}}
{{- $rel = printf "%s || has(%s) && (size(%s) > 8 || %s.exists(p, has(p.preference) && (%s))))" $rel $pref $pref $pref (include "gpu-admission.celTerm" (dict "w" $w "t" "p.preference")) -}}
{{- $rel = printf "%s\n  || has(%s.nodeName)" $rel $s -}}
{{- if $w.tested -}}
{{- $rel = printf "%s && %s" $rel (include "gpu-admission.celAnyGlob" (merge (dict "v" (printf "%s.nodeName" $s)) $w.nodes)) -}}
{{- end -}}
{{- $rel -}}
{{- end -}}

{{/*
Whether object.<.path> differs from oldObject's: its presence, then (a leaf)
the value, or (.members: a list of {name, members}) each member in turn, one
per line, indented by .depth.
*/}}
{{- define "gpu-admission.celChanged" -}}
{{- $p := .path -}}
{{- $d := int .depth -}}
{{- $out := printf "has(object.%s) != has(oldObject.%s) || has(object.%s) && " $p $p $p -}}
{{- if not .members -}}
{{- $out = printf "%sobject.%s != oldObject.%s" $out $p $p -}}
{{- else -}}
{{- $out = printf "%s(" $out -}}
{{- range $i, $m := .members -}}
{{- $out = printf "%s\n%s%s%s" $out (repeat (int (mul 2 (add $d 1))) " ") (ternary "" "|| " (eq $i 0)) (include "gpu-admission.celChanged" (dict "path" (printf "%s.%s" $p $m.name) "members" $m.members "depth" (add $d 1))) -}}
{{- end -}}
{{- $out = printf "%s\n%s)" $out (repeat (int (mul 2 $d)) " ") -}}
{{- end -}}
{{- $out -}}
{{- end -}}

{{/*
A pod's annotations changed (at .meta, dotted under object), for a pod whose
spec (.spec) names a gpuAnnotations scheduler: a key removed makes a fraction
pod CPU-only. A line of its own, indented by .depth; nothing without gpuAnnotations.
*/}}
{{- define "gpu-admission.celAnnChanged" -}}
{{- if .w.annKeys -}}
{{- $d := int .depth -}}
{{- $sched := printf "%s.schedulerName" .spec -}}
{{- $has := list -}}
{{- $at := "" -}}
{{- range splitList "." $sched -}}
{{- $at = ternary . (printf "%s.%s" $at .) (eq $at "") -}}
{{- $has = append $has (printf "has(object.%s)" $at) -}}
{{- end -}}
{{- $parts := splitList "." (printf "%s.annotations" .meta) -}}
{{- $members := list -}}
{{- range (rest $parts | reverse) -}}{{- $members = list (dict "name" . "members" $members) -}}{{- end -}}
{{- $changed := include "gpu-admission.celChanged" (dict "path" (first $parts) "members" $members "depth" (add $d 1)) -}}
{{- printf "\n%s|| %s && object.%s in %s && (\n%s%s\n%s)" (repeat (int (mul 2 $d)) " ") (join " && " $has) $sched (include "gpu-admission.celList" .w.annScheds) (repeat (int (mul 2 (add $d 1))) " ") $changed (repeat (int (mul 2 $d)) " ") -}}
{{- end -}}
{{- end -}}

{{/* A CEL string literal: single-quoted, \ and ' escaped. */}}
{{- define "gpu-admission.celLit" -}}
'{{ . | replace "\\" "\\\\" | replace "'" "\\'" }}'
{{- end -}}

{{/* A CEL list literal of strings. */}}
{{- define "gpu-admission.celList" -}}
{{- $out := list -}}
{{- range . -}}{{- $out = append $out (include "gpu-admission.celLit" .) -}}{{- end -}}
[{{ join ", " $out }}]
{{- end -}}

{{/* Does CEL value .v match one of the globs (.exact without a wildcard, .wild with one)? */}}
{{- define "gpu-admission.celAnyGlob" -}}
{{- $v := .v -}}
{{- $parts := list -}}
{{- if .exact -}}{{- $parts = append $parts (printf "%s in %s" $v (include "gpu-admission.celList" .exact)) -}}{{- end -}}
{{- if .wild -}}{{- $parts = append $parts (printf "size(%s) > 63" $v) -}}{{- end -}}
{{- range .wild -}}
{{- $pre := regexReplaceAll "^([^*?]*)[\\s\\S]*$" . "${1}" -}}
{{- $suf := regexReplaceAll "^[\\s\\S]*[*?]([^*?]*)$" . "${1}" -}}
{{- $t := list -}}
{{- if $pre -}}{{- $t = append $t (printf "%s.startsWith(%s)" $v (include "gpu-admission.celLit" $pre)) -}}{{- end -}}
{{- if $suf -}}{{- $t = append $t (printf "%s.endsWith(%s)" $v (include "gpu-admission.celLit" $suf)) -}}{{- end -}}
{{- $parts = append $parts (ternary "true" (join " && " $t) (empty $t)) -}}
{{- end -}}
({{ join " || " $parts }})
{{- end -}}

{{/* A containers list (.list) naming a GPU resource, or resource claims. */}}
{{- define "gpu-admission.celContainers" -}}
{{- $l := .list -}}
{{- /* Or a name that looks like a GPU (policy_pod.c looks_like_gpu()), to be warned about; a long one sent unread. */ -}}
{{- $key := printf "%s%s || k.matches('^[^/]+/.*[gG][pP][uU]')" (include "gpu-admission.celAnyGlob" (merge (dict "v" "k") .w.res)) (ternary "" " || size(k) > 63" (not (empty .w.res.wild))) -}}
{{- $m := list -}}
{{- range list "c.resources.limits" "c.resources.requests" -}}
{{- $m = append $m (printf "has(%s) && (size(%s) > 16 || %s.exists(k, %s))" . . . $key) -}}
{{- end -}}
has({{ $l }}) && {{ $l }} != null && (size({{ $l }}) > 16 || {{ $l }}.exists(c, has(c.resources) && (has(c.resources.claims) || {{ join " || " $m }})))
{{- end -}}

{{/* A node selector term (.t) whose requirements may aim at GPU nodes. */}}
{{- define "gpu-admission.celTerm" -}}
{{- $w := .w -}}
{{- $e := printf "%s.matchExpressions" .t -}}
{{- $f := printf "%s.matchFields" .t -}}
{{- $values := printf "has(e.values) && (size(e.values) > 16 || e.values.exists(v, %s))" (include "gpu-admission.celAnyGlob" (merge (dict "v" "v") $w.nodes)) -}}
{{- $pools := "" -}}
{{- range $k, $v := $w.poolKeys -}}
{{- $pools = printf "%s || e.key == %s && has(e.values) && (size(e.values) > 16 || e.values.exists(v, v in %s))" $pools (include "gpu-admission.celLit" $k) (include "gpu-admission.celList" $v) -}}
{{- end -}}
{{- $hostname := ternary (printf " || e.key == 'kubernetes.io/hostname' && %s" $values) "" $w.tested -}}
{{- $name := ternary (printf " && %s" $values) "" $w.tested -}}
has({{ $e }}) && (size({{ $e }}) > 8 || {{ $e }}.exists(e, has(e.key) && (e.key in {{ include "gpu-admission.celList" $w.labels }}{{ $pools }}{{ $hostname }}))) || has({{ $f }}) && (size({{ $f }}) > 8 || {{ $f }}.exists(e, has(e.key) && e.key == 'metadata.name'{{ $name }}))
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

{{- /* The live watch's labels: a name of its own, so the webhook's selectors never match it. */ -}}
{{- define "gpu-admission.watchSelectorLabels" -}}
app.kubernetes.io/name: {{ include "gpu-admission.name" . }}-watch
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "gpu-admission.watchLabels" -}}
helm.sh/chart: {{ include "gpu-admission.chart" . }}
{{ include "gpu-admission.watchSelectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/component: cost-watch
{{- end -}}

{{/*
Whether the webhook resolves DRA claims (serve --claim-lookups, its ClusterRole and
token): "true" or "". claimLookups.enabled true, or auto (the default) when the
cluster serves resource.k8s.io/v1, the version serve reads (Kubernetes 1.34 and
later); false only when the admin says so. Auto asks for the kind, not the
group/version: helm template's built-in API versions list every group/version of
Helm's own client library (resource.k8s.io/v1 included, whatever the cluster), but
no kind, while helm install asks the cluster, which lists both. So an offline render
turns lookups on only when told (--api-versions resource.k8s.io/v1/ResourceClaim).
Never without the webhook: the policies-only install runs no pod.
*/}}
{{- /*
refusalEvents: auto is on where the cluster serves Kueue's Workloads, the
controller whose refused write (a flavor into a queued Job's template) nobody
else would see. Any API access: gpu-admission.apiAccess.
*/ -}}
{{- define "gpu-admission.refusalEvents" -}}
{{- $e := toString .Values.refusalEvents.enabled -}}
{{- if and .Values.webhook.enabled (or (eq $e "true") (and (eq $e "auto") (or (.Capabilities.APIVersions.Has "kueue.x-k8s.io/v1beta2/Workload") (.Capabilities.APIVersions.Has "kueue.x-k8s.io/v1beta1/Workload")))) -}}
true
{{- end -}}
{{- end -}}

{{- define "gpu-admission.apiAccess" -}}
{{- if or (include "gpu-admission.claimLookups" .) (include "gpu-admission.refusalEvents" .) -}}
true
{{- end -}}
{{- end -}}

{{- define "gpu-admission.claimLookups" -}}
{{- $e := toString .Values.claimLookups.enabled -}}
{{- if and .Values.webhook.enabled (or (eq $e "true") (and (eq $e "auto") (.Capabilities.APIVersions.Has "resource.k8s.io/v1/ResourceClaim"))) -}}
true
{{- end -}}
{{- end -}}
