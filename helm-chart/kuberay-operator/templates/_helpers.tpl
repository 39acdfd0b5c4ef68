{{/* Names, labels and the switches the other templates share. */}}

{{/* The chart's name: nameOverride, else the chart name. */}}
{{- define "kuberay-operator.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Name of the chart's objects: fullnameOverride, else <release>-<name> (just <release> when it holds the name). */}}
{{- define "kuberay-operator.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{- define "kuberay-operator.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels that select the operator pods. */}}
{{- define "kuberay-operator.selectorLabels" -}}
app.kubernetes.io/name: {{ include "kuberay-operator.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Labels of every object of the chart. */}}
{{- define "kuberay-operator.labels" -}}
helm.sh/chart: {{ include "kuberay-operator.chart" . }}
{{ include "kuberay-operator.selectorLabels" . }}
app.kubernetes.io/component: {{ default .Chart.Name .Values.componentOverride }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The effective batch scheduler: volcano with the deprecated switch, else batchScheduler.name. */}}
{{- define "kuberay-operator.batchScheduler" -}}
{{- if .Values.batchScheduler.enabled }}volcano{{ else }}{{ .Values.batchScheduler.name }}{{ end }}
{{- end }}

{{/* "true" when useKubernetesProxy is set and true. */}}
{{- define "kuberay-operator.useKubernetesProxy" -}}
{{- if and (hasKey .Values "useKubernetesProxy") .Values.useKubernetesProxy }}true{{ end }}
{{- end }}

{{/* "true" when the gate (list . NAME DEFAULT) is on: the last featureGates entry naming it, else DEFAULT. */}}
{{- define "kuberay-operator.featureGateEnabled" -}}
{{- $root := index . 0 }}
{{- $enabled := index . 2 }}
{{- range $root.Values.featureGates }}
{{- if eq .name (index $ 1) }}{{ $enabled = .enabled }}{{ end }}
{{- end }}
{{- if $enabled }}true{{ end }}
{{- end }}

{{/* The namespaces the operator watches ("" = all), comma-separated. */}}
{{- define "kuberay-operator.watchNamespace" -}}
{{- if .Values.watchNamespace }}
{{- join "," .Values.watchNamespace }}
{{- else if .Values.singleNamespaceInstall }}
{{- .Release.Namespace }}
{{- end }}
{{- end }}

{{- define "kuberay-operator.webhookSecretName" -}}
{{- default (printf "%s-webhook-cert" (include "kuberay-operator.fullname" .)) .Values.webhook.secretName }}
{{- end }}

{{/* The operator's command-line arguments. */}}
{{- define "kuberay-operator.args" -}}
{{- $args := list }}
{{- if .Values.configuration.enabled }}
{{- $args = append $args "--config=/etc/kuberay/config.yaml" }}
{{- end }}
{{- $gates := list }}
{{- range .Values.featureGates }}
{{- $gates = append $gates (printf "%s=%t" .name .enabled) }}
{{- end }}
{{- if $gates }}
{{- $args = append $args (printf "--feature-gates=%s" (join "," $gates)) }}
{{- end }}
{{- if not .Values.configuration.enabled }}
{{- if .Values.batchScheduler.enabled }}
{{- $args = append $args "--enable-batch-scheduler" }}
{{- end }}
{{- if .Values.batchScheduler.name }}
{{- $args = append $args (printf "--batch-scheduler=%s" .Values.batchScheduler.name) }}
{{- end }}
{{- $watch := include "kuberay-operator.watchNamespace" . }}
{{- if $watch }}
{{- $args = append $args "--watch-namespace" }}
{{- $args = append $args $watch }}
{{- end }}
{{- if hasKey .Values "useKubernetesProxy" }}
{{- $args = append $args (printf "--use-kubernetes-proxy=%t" .Values.useKubernetesProxy) }}
{{- end }}
{{- $args = append $args (printf "--enable-leader-election=%t" .Values.leaderElectionEnabled) }}
{{- if .Values.logging.baseDir }}
{{- $args = append $args (printf "--log-file-path=%s/%s" .Values.logging.baseDir .Values.logging.fileName) }}
{{- end }}
{{- end }}
{{- $args = append $args (printf "--log-file-encoder=%s" .Values.logging.fileEncoder) }}
{{- $args = append $args (printf "--log-stdout-encoder=%s" .Values.logging.stdoutEncoder) }}
{{- if not .Values.configuration.enabled }}
{{- $args = append $args (printf "--reconcile-concurrency=%d" (int .Values.reconcileConcurrency)) }}
{{- $args = append $args (printf "--qps=%v" .Values.kubeClient.qps) }}
{{- $args = append $args (printf "--burst=%d" (int .Values.kubeClient.burst)) }}
{{- $args = append $args (printf "--enable-metrics=%t" .Values.metrics.enabled) }}
{{- end }}
{{- if .Values.webhook.enabled }}
{{- $args = append $args (printf "--webhook-port=%d" (int .Values.webhook.port)) }}
{{- end }}
{{- range .Values.extraArgs }}
{{- $args = append $args . }}
{{- end }}
{{- toYaml $args }}
{{- end }}
