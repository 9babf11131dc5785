{{- define "toolguard.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "toolguard.labels" -}}
app.kubernetes.io/name: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ .Chart.Name }}-{{ .Chart.Version }}
{{- end -}}

{{/* The toolguard container, for a Deployment or as a native sidecar. */}}
{{- define "toolguard.container" -}}
- name: toolguard
  {{- if .sidecar }}
  restartPolicy: Always
  {{- end }}
  image: {{ include "toolguard.image" .root }}
  imagePullPolicy: {{ .root.Values.image.pullPolicy }}
  ports:
    - name: http
      containerPort: 8080
    {{- if .root.Values.metrics.port }}
    - name: metrics
      containerPort: {{ .root.Values.metrics.port }}
    {{- end }}
  env:
    - name: TOOLGUARD_UPSTREAM_URL
      value: {{ .root.Values.upstreamURL | quote }}
    {{- if .root.Values.metrics.port }}
    - name: TOOLGUARD_METRICS_ADDR
      value: ":{{ .root.Values.metrics.port }}"
    {{- end }}
    {{- with .root.Values.upstreamKeySecret }}
    {{- if .name }}
    - name: TOOLGUARD_UPSTREAM_API_KEY
      valueFrom:
        secretKeyRef:
          name: {{ .name }}
          key: {{ .key }}
    {{- end }}
    {{- end }}
    {{- if not .sidecar }}
    {{- with .root.Values.clientKeysSecret }}
    {{- if .name }}
    - name: TOOLGUARD_API_KEYS
      valueFrom:
        secretKeyRef:
          name: {{ .name }}
          key: {{ .key }}
    {{- end }}
    {{- end }}
    {{- end }}
    {{- range $name, $value := .root.Values.env }}
    - name: {{ $name }}
      value: {{ $value | quote }}
    {{- end }}
  {{- if .sidecar }}
  # The kubelet starts the application once this succeeds.
  startupProbe:
    httpGet:
      path: /readyz
      port: http
    periodSeconds: 1
    failureThreshold: 30
  {{- end }}
  livenessProbe:
    httpGet:
      path: /healthz
      port: http
    periodSeconds: 10
  readinessProbe:
    httpGet:
      path: /readyz
      port: http
    periodSeconds: 5
  resources:
    {{- toYaml .root.Values.resources | nindent 4 }}
  securityContext:
    runAsNonRoot: true
    readOnlyRootFilesystem: true
    allowPrivilegeEscalation: false
    capabilities:
      drop: ["ALL"]
{{- end -}}
