{{- define "kube-fip-operator.labels" -}}
app.kubernetes.io/name: kube-fip-operator
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{- define "kube-fip-operator.selectorLabels" -}}
app.kubernetes.io/name: kube-fip-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- /*
The proxy of the calls out of the cluster, as Rancher's chart passes it (values proxy, noProxy).
*/ -}}
{{- define "kube-fip-operator.proxyEnv" -}}
{{- if .Values.proxy }}
- name: HTTP_PROXY
  value: {{ .Values.proxy | quote }}
- name: HTTPS_PROXY
  value: {{ .Values.proxy | quote }}
- name: NO_PROXY
  value: {{ .Values.noProxy | quote }}
{{- end }}
{{- end -}}

{{- define "system_default_registry" -}}
{{- if .Values.global.cattle.systemDefaultRegistry -}}
{{- printf "%s/" .Values.global.cattle.systemDefaultRegistry -}}
{{- end -}}
{{- end -}}

{{- define "kube-fip-operator.image" -}}
{{ template "system_default_registry" . }}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- /*
Fails the install when a monitoring object is switched on but the cluster has no Rancher
Monitoring: the rancher-monitoring chart brings the monitoring.coreos.com/v1 CRDs and the
cattle-dashboards namespace its Grafana reads, and the chart sees the former. Call with
(list . "<value>" "<Kind>"): the kind the object is, or, for the dashboard, Prometheus. An offline
render skips the check with validateInstallCRD=false, as for the other checks.
*/ -}}
{{- define "kube-fip-operator.requireMonitoring" -}}
{{- $ := index . 0 -}}
{{- $value := index . 1 -}}
{{- $kind := index . 2 -}}
{{- if and $.Values.validateInstallCRD (not ($.Capabilities.APIVersions.Has (printf "monitoring.coreos.com/v1/%s" $kind))) -}}
{{- fail (printf "%s needs the monitoring.coreos.com/v1 API (%s), which the cluster does not have: install Rancher Monitoring first, or set %s to false. When rendering offline, pass --api-versions monitoring.coreos.com/v1/%s or set validateInstallCRD=false." $value $kind $value $kind) -}}
{{- end -}}
{{- end -}}

{{- /* runbookURL is an alert's runbook, a heading of docs/troubleshooting.md under monitoring.runbookBaseURL: (list . "<Alert>"). */ -}}
{{- define "kube-fip-operator.runbookURL" -}}
{{- $ := index . 0 -}}
{{- printf "%s#%s" (trimSuffix "/" $.Values.monitoring.runbookBaseURL) (lower (index . 1)) -}}
{{- end -}}

{{/*
The parts every webhook of the ValidatingWebhookConfiguration shares: where the API server calls,
and which requests are never sent (those of the users in "exempt": the operator, the uninstall
hook and a Rancher Backups restore; with "name", objects of any other name).
*/}}
{{- define "kube-fip-operator.webhookCommon" -}}
clientConfig:
  service:
    name: kube-fip-operator-webhook
    namespace: {{ .ctx.Release.Namespace }}
    path: /v1/webhook/validation
    port: 443
sideEffects: None
admissionReviewVersions: ["v1"]
timeoutSeconds: {{ .ctx.Values.webhook.timeoutSeconds }}
matchConditions:
- name: not-an-exempt-service-account
  expression: {{ printf "!(request.userInfo.username in ['%s'])" (join "', '" .exempt) | quote }}
{{- with .name }}
- name: {{ . }}
  expression: {{ printf "object.metadata.name == '%s'" . | quote }}
{{- end }}
{{- end }}

{{/*
The deployment's security settings (security.*) as the operator reads them from the Secret
kube-fip-operator-security (key settings): a JSON object of comma-separated lists. A list may be
given as a YAML list or comma-separated; an empty list allows nothing.
*/}}
{{- define "kube-fip-operator.securitySettings" -}}
{{- with .Values.security -}}
{{- if and .allowedImagePrefixes (ne (toString .allowedImagePrefixes) "ghcr.io/kube-vip,docker.io/plndr,docker.io/kubevip") -}}
{{- fail "security.allowedImagePrefixes was replaced by security.allowedImages.kubevip and security.allowedImages.kubevipCloudProvider: a prefix also allowed image variants that ship a shell; name the exact image repositories instead" -}}
{{- end -}}
{{- $lists := dict -}}
{{- range $key, $value := dict "allowedChartSources" .allowedChartSources "allowedKubevipImages" (.allowedImages).kubevip "allowedCloudProviderImages" (.allowedImages).kubevipCloudProvider "allowedChartDigests" .allowedChartDigests "allowedKubevipModes" .kubevipModes "allowedGuestNamespaces" .allowedGuestNamespaces -}}
{{- $list := $value | default list -}}
{{- $_ := set $lists $key (kindIs "string" $list | ternary $list (join "," $list)) -}}
{{- end -}}
{{- $_ := set $lists "allowHTTPChartSources" (.allowHTTPChartSources | default false) -}}
{{- $_ := set $lists "chartCredentialsSecret" (.chartCredentialsSecret | default "" | toString) -}}
{{- toJson $lists -}}
{{- end -}}
{{- end -}}
