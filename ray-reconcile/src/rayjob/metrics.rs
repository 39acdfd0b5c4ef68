//! Prometheus metrics of the RayJob controller under KubeRay's names:
//! `kuberay_job_info`, `kuberay_job_deployment_status` and `kuberay_job_execution_duration_seconds`,
//! registered only with `--enable-metrics`.

use std::collections::HashMap;
use std::sync::Mutex;

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

use super::plan::ExecutionDuration;
use crate::metrics::{Buckets, ClusterLabels, lifecycle_duration_buckets};

/// Labels of `kuberay_job_deployment_status`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DeploymentStatusLabels {
    /// RayJob name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// The current `jobDeploymentStatus`.
    pub deployment_status: String,
}

/// Labels of `kuberay_job_execution_duration_seconds`.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ExecutionDurationLabels {
    /// RayJob name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// `Complete`, `Failed` or `Retrying`.
    pub job_deployment_status: String,
    /// `status.failed` before the transition.
    pub retry_count: String,
}

/// Every metric the RayJob controller records.
#[derive(Debug)]
pub struct RayJobMetrics {
    enabled: bool,
    info: Family<ClusterLabels, Gauge>,
    deployment_status: Family<DeploymentStatusLabels, Gauge>,
    execution_duration: Family<ExecutionDurationLabels, Histogram, Buckets>,
    /// The deployment-status series currently exported per RayJob uid (one at a time).
    current: Mutex<HashMap<String, DeploymentStatusLabels>>,
}

impl RayJobMetrics {
    /// Create the metrics; with `enabled` they are registered in `registry`, else nothing is recorded.
    pub fn new(registry: &mut Registry, enabled: bool) -> Self {
        let m = Self {
            enabled,
            info: Family::default(),
            deployment_status: Family::default(),
            execution_duration: Family::new_with_constructor(Buckets(lifecycle_duration_buckets)),
            current: Mutex::default(),
        };
        if enabled {
            registry.register(
                "kuberay_job_info",
                "Metadata information about RayJob custom resources",
                m.info.clone(),
            );
            registry.register(
                "kuberay_job_deployment_status",
                "The RayJob's current deployment status",
                m.deployment_status.clone(),
            );
            registry.register(
                "kuberay_job_execution_duration_seconds",
                "Duration from when the RayJob's JobDeploymentStatus transitions from Initializing to either the Retrying state or a terminal state",
                m.execution_duration.clone(),
            );
        }
        m
    }

    /// Record a RayJob's info series and its current deployment status.
    pub fn observe_job(&self, labels: &ClusterLabels, deployment_status: &str) {
        if !self.enabled {
            return;
        }
        self.info.get_or_create(labels).set(1);
        let series = DeploymentStatusLabels {
            name: labels.name.clone(),
            namespace: labels.namespace.clone(),
            uid: labels.uid.clone(),
            deployment_status: deployment_status.to_owned(),
        };
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(previous) = current.insert(labels.uid.clone(), series.clone())
            && previous != series
        {
            self.deployment_status.remove(&previous);
        }
        self.deployment_status.get_or_create(&series).set(1);
    }

    /// Record one execution-duration observation.
    pub fn observe_execution(&self, labels: &ClusterLabels, observation: &ExecutionDuration) {
        if !self.enabled {
            return;
        }
        self.execution_duration
            .get_or_create(&ExecutionDurationLabels {
                name: labels.name.clone(),
                namespace: labels.namespace.clone(),
                uid: labels.uid.clone(),
                job_deployment_status: observation.job_deployment_status.to_string(),
                retry_count: observation.retry_count.to_string(),
            })
            .observe(observation.seconds);
    }

    /// Drop the series of a deleted RayJob (the execution-duration histogram keeps its history, as
    /// KubeRay's does).
    pub fn forget_job(&self, labels: &ClusterLabels) {
        self.info.remove(labels);
        let mut current = self.current.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(previous) = current.remove(&labels.uid) {
            self.deployment_status.remove(&previous);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use prometheus_client::encoding::text::encode;
    use ray_api::JobDeploymentStatus;

    fn labels() -> ClusterLabels {
        ClusterLabels {
            name: "j".to_owned(),
            namespace: "ns".to_owned(),
            uid: "u1".to_owned(),
        }
    }

    #[test]
    fn deployment_status_keeps_one_series_and_is_dropped_on_delete() {
        let mut registry = Registry::default();
        let metrics = RayJobMetrics::new(&mut registry, true);
        metrics.observe_job(&labels(), "Initializing");
        metrics.observe_job(&labels(), "Running");
        metrics.observe_execution(
            &labels(),
            &ExecutionDuration {
                job_deployment_status: JobDeploymentStatus::Complete,
                retry_count: 0,
                seconds: 60.0,
            },
        );
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(
            text.contains(
                r#"kuberay_job_deployment_status{name="j",namespace="ns",uid="u1",deployment_status="Running"} 1"#
            ),
            "{text}"
        );
        assert!(!text.contains(r#"deployment_status="Initializing""#), "{text}");
        assert!(
            text.contains(r#"kuberay_job_info{name="j",namespace="ns",uid="u1"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"job_deployment_status="Complete",retry_count="0""#),
            "{text}"
        );
        metrics.forget_job(&labels());
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(!text.contains("kuberay_job_deployment_status{"), "{text}");
        assert!(!text.contains("kuberay_job_info{"), "{text}");
    }

    #[test]
    fn disabled_metrics_are_not_registered() {
        let mut registry = Registry::default();
        let metrics = RayJobMetrics::new(&mut registry, false);
        metrics.observe_job(&labels(), "Running");
        let mut text = String::new();
        encode(&mut text, &registry).unwrap();
        assert!(!text.contains("kuberay_job"), "{text}");
    }
}
