{{/* The chart's name, or nameOverride. */}}
{{- define "ksmon.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The prefix of every object name: fullnameOverride, else <release>-<name>, or just
the release name when it already contains the chart's name (release "ksmon" -> "ksmon"). */}}
{{- define "ksmon.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := include "ksmon.name" . }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Selector labels of one component: (dict "root" $ "component" "agent"). */}}
{{- define "ksmon.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ksmon.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Every label of one component's objects: (dict "root" $ "component" "agent"). */}}
{{- define "ksmon.labels" -}}
{{ include "ksmon.selectorLabels" . }}
app.kubernetes.io/part-of: ksmon
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" }}
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* An image reference from (dict "image" .Values.image "root" $); tag defaults to appVersion. */}}
{{- define "ksmon.image" -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .root.Chart.AppVersion | toString) }}
{{- end }}

{{- define "ksmon.agentConfigMap" -}}
{{- .Values.agent.existingConfigMap | default (printf "%s-agent-config" (include "ksmon.fullname" .)) }}
{{- end }}

{{- define "ksmon.jobConfigMap" -}}
{{- .Values.job.existingConfigMap | default (printf "%s-job-config" (include "ksmon.fullname" .)) }}
{{- end }}

{{- define "ksmon.sidecarConfigMap" -}}
{{- if .Values.sidecar.config }}
{{- printf "%s-sidecar-config" (include "ksmon.fullname" .) }}
{{- else }}
{{- .Values.sidecar.existingConfigMap | default "ksmon-sidecar-config" }}
{{- end }}
{{- end }}

{{- define "ksmon.jobName" -}}
{{- printf "%s-job" (include "ksmon.fullname" .) }}
{{- end }}

{{- define "ksmon.checkpointClaim" -}}
{{- .Values.job.checkpoint.existingClaim | default (printf "%s-job-checkpoint" (include "ksmon.fullname" .)) }}
{{- end }}

{{- define "ksmon.sparkServiceAccount" -}}
{{- .Values.job.serviceAccount.name | default (printf "%s-spark" (include "ksmon.fullname" .)) }}
{{- end }}

{{/* envFrom entries for a secrets: block's env list. */}}
{{- define "ksmon.secretEnvFrom" -}}
{{- range . }}
- secretRef:
    name: {{ required "each secrets.env entry needs the name of an existing Secret" .name }}
    optional: {{ .optional | default false }}
{{- end }}
{{- end }}

{{/* volumeMounts for a secrets: block's files list (volumes: ksmon.secretVolumes). */}}
{{- define "ksmon.secretVolumeMounts" -}}
{{- range . }}
- name: secret-{{ required "each secrets.files entry needs the name of an existing Secret" .name }}
  mountPath: {{ required (printf "secrets.files entry %s needs a mountPath" .name) .mountPath }}
  readOnly: true
{{- end }}
{{- end }}

{{- define "ksmon.secretVolumes" -}}
{{- range . }}
- name: secret-{{ .name }}
  secret:
    secretName: {{ .name }}
    {{- with .items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
{{- end }}

{{/* The sidecar's init container (a native sidecar), from the chart's sidecar: values. */}}
{{- define "ksmon.sidecar.initContainer" -}}
- name: ksmon-sidecar
  image: {{ include "ksmon.image" (dict "image" .Values.image "root" .) }}
  imagePullPolicy: {{ .Values.image.pullPolicy }}
  # A native sidecar: starts before the app, runs beside it, never keeps a finished pod alive.
  restartPolicy: Always
  args: ["agent", "--config", "/etc/ksmon/config.yaml"]
  ports:
    # Not "metrics": the app's own port may already be called that.
    - name: ksmon-metrics
      containerPort: {{ .Values.sidecar.port }}
      protocol: TCP
  env:
    - name: POD_NAME
      valueFrom:
        fieldRef:
          fieldPath: metadata.name
    - name: POD_NAMESPACE
      valueFrom:
        fieldRef:
          fieldPath: metadata.namespace
    - name: POD_IP
      valueFrom:
        fieldRef:
          fieldPath: status.podIP
    - name: NODE_NAME
      valueFrom:
        fieldRef:
          fieldPath: spec.nodeName
    # The app container's memory limit, for sidecar.app_memory_limit: {env: APP_MEMORY_LIMIT}.
    - name: APP_MEMORY_LIMIT
      valueFrom:
        resourceFieldRef:
          containerName: {{ .Values.sidecar.appContainerName }}
          resource: limits.memory
  {{- with .Values.sidecar.secrets.env }}
  envFrom:
    {{- include "ksmon.secretEnvFrom" . | trim | nindent 4 }}
  {{- end }}
  # Readiness gates the whole pod: a minute of failures before it flips.
  readinessProbe:
    httpGet:
      path: /readyz
      port: ksmon-metrics
    periodSeconds: 10
    timeoutSeconds: 5
    failureThreshold: 6
  livenessProbe:
    httpGet:
      path: /healthz
      port: ksmon-metrics
    initialDelaySeconds: 10
    periodSeconds: 20
    timeoutSeconds: 5
    failureThreshold: 3
  resources:
    {{- toYaml .Values.sidecar.resources | nindent 4 }}
  securityContext:
    {{- toYaml .Values.sidecar.securityContext | nindent 4 }}
  volumeMounts:
    # The app's state.dir: ksmon reads it and must never write there.
    - name: {{ .Values.sidecar.stateVolume }}
      mountPath: {{ .Values.sidecar.stateMountPath }}
      readOnly: true
    - name: ksmon-sidecar-config
      mountPath: /etc/ksmon
      readOnly: true
    - name: ksmon-sidecar-tmp
      mountPath: /tmp
    {{- with .Values.sidecar.secrets.files }}{{ include "ksmon.secretVolumeMounts" . | trim | nindent 4 }}{{ end }}
{{- end }}

{{/* The sidecar's volumes (the state volume is the app's own). */}}
{{- define "ksmon.sidecar.volumes" -}}
- name: ksmon-sidecar-config
  configMap:
    name: {{ include "ksmon.sidecarConfigMap" . }}
- name: ksmon-sidecar-tmp
  emptyDir:
    sizeLimit: 64Mi
{{- with .Values.sidecar.secrets.files }}{{ include "ksmon.secretVolumes" . | trim | nindent 0 }}{{ end }}
{{- end }}

{{/* What to merge into a Kafka Streams Deployment or StatefulSet (a strategic merge
patch: lists merge by name, so the app's own containers and volumes stay). */}}
{{- define "ksmon.sidecar.podPatch" -}}
spec:
  template:
    metadata:
      labels:
        # Selected by the sidecar PodMonitor.
        ksmon/sidecar: "true"
    spec:
      initContainers:
        {{- include "ksmon.sidecar.initContainer" . | nindent 8 }}
      volumes:
        {{- include "ksmon.sidecar.volumes" . | nindent 8 }}
{{- end }}

{{/* The endpoint settings shared by the PodMonitors and ServiceMonitors. */}}
{{- define "ksmon.scrapeEndpoint" -}}
path: /metrics
{{- with .interval }}
interval: {{ . }}
{{- end }}
{{- end }}

{{/* A number as PromQL and people write it: Helm reads values files' numbers as floats,
which Go prints as 1e+06; whole numbers are printed as integers. */}}
{{- define "ksmon.number" -}}
{{- if eq (float64 .) (floor .) }}{{ int64 . }}{{ else }}{{ . }}{{ end }}
{{- end }}
