{{- define "atrium.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "atrium.selectorLabels" -}}
app.kubernetes.io/name: {{ .Chart.Name }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "atrium.labels" -}}
{{ include "atrium.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "atrium.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "atrium.secretName" -}}
{{ .Values.existingSecret | default (include "atrium.fullname" .) }}
{{- end -}}

{{- define "atrium.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{ .Values.serviceAccount.name | default (include "atrium.fullname" .) }}
{{- else -}}
{{ .Values.serviceAccount.name | default "default" }}
{{- end -}}
{{- end -}}

{{/* Pod-level security: non-root (the image's node user), RuntimeDefault seccomp. */}}
{{- define "atrium.podSecurityContext" -}}
runAsNonRoot: true
runAsUser: 1000
runAsGroup: 1000
fsGroup: 1000
seccompProfile:
  type: RuntimeDefault
{{- end -}}

{{/* Container-level security: read-only root filesystem, no capabilities, no privilege escalation. */}}
{{- define "atrium.containerSecurityContext" -}}
allowPrivilegeEscalation: false
readOnlyRootFilesystem: true
runAsNonRoot: true
capabilities:
  drop: ["ALL"]
{{- end -}}

{{/* Environment shared by every container of the release: the ConfigMap, then the Secret. */}}
{{- define "atrium.envFrom" -}}
- configMapRef:
    name: {{ include "atrium.fullname" . }}
- secretRef:
    name: {{ include "atrium.secretName" . }}
{{- end -}}

{{/* Restarts the pods when the chart's ConfigMap or Secret changes (an existingSecret's changes need a rollout restart). */}}
{{- define "atrium.configChecksums" -}}
checksum/config: {{ include (print .Template.BasePath "/configmap.yaml") . | sha256sum }}
checksum/secret: {{ include (print .Template.BasePath "/secret.yaml") . | sha256sum }}
{{- end -}}

{{/* The only place the app writes with DATABASE_URL set and the secrets given: the OS temporary directory. */}}
{{- define "atrium.tmpVolume" -}}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpSizeLimit }}
{{- end -}}

{{- define "atrium.tmpMount" -}}
- name: tmp
  mountPath: /tmp
{{- end -}}

{{/* The three probes of a role's HTTP port (the api's PORT, a worker's WORKER_HTTP_PORT). */}}
{{- define "atrium.probes" -}}
startupProbe:
  httpGet:
    path: /api/health
    port: http
  periodSeconds: 2
  failureThreshold: {{ .Values.probes.startupFailureThreshold }}
readinessProbe:
  httpGet:
    path: /api/ready
    port: http
  periodSeconds: {{ .Values.probes.readinessPeriodSeconds }}
  failureThreshold: 1
  timeoutSeconds: 2
livenessProbe:
  httpGet:
    path: /api/health
    port: http
  periodSeconds: {{ .Values.probes.livenessPeriodSeconds }}
  failureThreshold: 3
  timeoutSeconds: 5
{{- end -}}
