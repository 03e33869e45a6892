{{/* Name of every object and of the pods' app.kubernetes.io/name label. */}}
{{- define "weft.fullname" -}}
{{- default .Release.Name .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "weft.labels" -}}
app.kubernetes.io/name: {{ include "weft.fullname" . }}
app.kubernetes.io/component: model-server
{{- end -}}
