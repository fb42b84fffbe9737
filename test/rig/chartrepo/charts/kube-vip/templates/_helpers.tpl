{{/* Every object is named after the chart, or nameOverride; never after the release. */}}
{{- define "kube-vip.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* namespaceOverride, else the release's namespace. */}}
{{- define "kube-vip.namespace" -}}
{{- if .Values.namespaceOverride -}}
{{- .Values.namespaceOverride -}}
{{- else -}}
{{- .Release.Namespace -}}
{{- end -}}
{{- end -}}

{{- define "kube-vip.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kube-vip.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "kube-vip.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "kube-vip.selectorLabels" . }}
{{- if .Chart.AppVersion }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{/* "true"/"1" (any case) and true are true, "false"/"0" and false are false; anything else
     is itself, or false when empty. */}}
{{- define "kube-vip.toBool" -}}
{{- $s := lower (toString .) -}}
{{- if or (eq $s "true") (eq $s "1") -}}true
{{- else if or (eq $s "false") (eq $s "0") -}}false
{{- else -}}{{- default . false -}}
{{- end -}}
{{- end -}}
