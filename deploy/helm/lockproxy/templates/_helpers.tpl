{{/* The name of every object: the release's, with the chart's. */}}
{{- define "lockproxy.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the pods. */}}
{{- define "lockproxy.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "lockproxy.labels" -}}
{{ include "lockproxy.selectorLabels" . }}
app.kubernetes.io/version: {{ .Values.image.tag | default .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* lockproxy.yaml: .Values.config with listen, metrics.listen and
admin.users set from the other values. */}}
{{- define "lockproxy.config" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $_ := set $cfg "listen" (printf "0.0.0.0:%v" .Values.port) -}}
{{- $metrics := get $cfg "metrics" | default dict -}}
{{- $_ := set $metrics "listen" (printf "0.0.0.0:%v" .Values.metricsPort) -}}
{{- $_ := set $cfg "metrics" $metrics -}}
{{- if .Values.admin.users -}}
{{- $admin := get $cfg "admin" | default dict -}}
{{- $users := list -}}
{{- range .Values.admin.users -}}
{{- $users = append $users (dict "name" .name "role" (.role | default "read") "password_file" (printf "secrets/%s" .name)) -}}
{{- end -}}
{{- $_ := set $admin "users" $users -}}
{{- $_ := set $cfg "admin" $admin -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}
