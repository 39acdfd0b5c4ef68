//! Prometheus metrics of the RayCluster controller under KubeRay's names:
//! the `kuberay_cluster_*` custom-resource series (only with `--enable-metrics`) and
//! controller-runtime's generic reconcile counters.

use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::{Family, MetricConstructor};
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::{Histogram, exponential_buckets};
use prometheus_client::registry::Registry;

/// Controller name used in the generic reconcile metrics.
pub const RAYCLUSTER_CONTROLLER: &str = "raycluster-controller";

/// Labels identifying one RayCluster.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterLabels {
    /// Cluster name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
}

/// `kuberay_cluster_info` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ClusterInfoLabels {
    /// Cluster name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// `RayCluster`, `RayJob` or `RayService`.
    pub owner_kind: String,
}

/// `kuberay_cluster_condition_provisioned` labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ConditionLabels {
    /// Cluster name.
    pub name: String,
    /// Namespace.
    pub namespace: String,
    /// UID.
    pub uid: String,
    /// `true` / `false`.
    pub condition: String,
}

/// controller-runtime reconcile labels.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ReconcileLabels {
    /// Controller name.
    pub controller: String,
    /// `success`, `error`, `requeue_after`.
    pub result: String,
}

/// controller-runtime controller label.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct ControllerLabels {
    /// Controller name.
    pub controller: String,
}

/// Bucket layout of the duration histograms: the function that makes an empty histogram.
#[derive(Clone, Copy, Debug)]
pub struct Buckets(pub fn() -> Histogram);

impl MetricConstructor<Histogram> for Buckets {
    fn new_metric(&self) -> Histogram {
        (self.0)()
    }
}

/// KubeRay's buckets of the custom-resource lifecycle histograms (RayCluster provisioning, RayJob
/// execution): from 30 s, doubling, 8 buckets.
pub fn lifecycle_duration_buckets() -> Histogram {
    Histogram::new(exponential_buckets(30.0, 2.0, 8))
}

fn reconcile_time_buckets() -> Histogram {
    Histogram::new(exponential_buckets(0.005, 2.0, 16))
}

/// Every metric the RayCluster controller records.
#[derive(Debug)]
pub struct ControllerMetrics {
    /// Whether the `kuberay_cluster_*` series are recorded.
    pub custom_resource_metrics: bool,
    provisioned_duration: Family<ClusterLabels, Histogram, Buckets>,
    info: Family<ClusterInfoLabels, Gauge>,
    provisioned: Family<ConditionLabels, Gauge>,
    reconcile_total: Family<ReconcileLabels, Counter>,
    reconcile_errors: Family<ControllerLabels, Counter>,
    reconcile_time: Family<ControllerLabels, Histogram, Buckets>,
    /// Objects the operator cannot read, by kind (shared by every controller's watches).
    pub undecodable: crate::decode::UndecodableGauge,
}

impl ControllerMetrics {
    /// Create the metrics and register them.
    pub fn new(registry: &mut Registry, custom_resource_metrics: bool) -> Self {
        let m = Self {
            custom_resource_metrics,
            provisioned_duration: Family::new_with_constructor(Buckets(lifecycle_duration_buckets)),
            info: Family::default(),
            provisioned: Family::default(),
            reconcile_total: Family::default(),
            reconcile_errors: Family::default(),
            reconcile_time: Family::new_with_constructor(Buckets(reconcile_time_buckets)),
            undecodable: Family::default(),
        };
        registry.register(
            crate::decode::UNDECODABLE_METRIC,
            "Objects the operator's watches skip because they cannot be read as its types, by kind",
            m.undecodable.clone(),
        );
        if custom_resource_metrics {
            registry.register(
                "kuberay_cluster_provisioned_duration_seconds",
                "The time, in seconds, from RayCluster creation until its RayClusterProvisioned condition first turned true",
                m.provisioned_duration.clone(),
            );
            registry.register(
                "kuberay_cluster_info",
                "Metadata information about RayCluster custom resources",
                m.info.clone(),
            );
            registry.register(
                "kuberay_cluster_condition_provisioned",
                "Indicates whether the RayCluster is provisioned",
                m.provisioned.clone(),
            );
        }
        registry.register(
            "controller_runtime_reconcile",
            "Total number of reconciliations per controller",
            m.reconcile_total.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_errors",
            "Total number of reconciliation errors per controller",
            m.reconcile_errors.clone(),
        );
        registry.register(
            "controller_runtime_reconcile_time_seconds",
            "Length of time per reconciliation per controller",
            m.reconcile_time.clone(),
        );
        m
    }

    /// Record one finished reconcile.
    pub fn observe_reconcile(&self, result: &str, seconds: f64) {
        let controller = RAYCLUSTER_CONTROLLER.to_owned();
        self.reconcile_total
            .get_or_create(&ReconcileLabels {
                controller: controller.clone(),
                result: result.to_owned(),
            })
            .inc();
        if result == "error" {
            self.reconcile_errors
                .get_or_create(&ControllerLabels {
                    controller: controller.clone(),
                })
                .inc();
        }
        self.reconcile_time
            .get_or_create(&ControllerLabels { controller })
            .observe(seconds);
    }

    /// Record a cluster's info and provisioned condition.
    pub fn observe_cluster(&self, labels: &ClusterLabels, owner_kind: &str, provisioned: bool) {
        if !self.custom_resource_metrics {
            return;
        }
        self.info
            .get_or_create(&ClusterInfoLabels {
                name: labels.name.clone(),
                namespace: labels.namespace.clone(),
                uid: labels.uid.clone(),
                owner_kind: owner_kind.to_owned(),
            })
            .set(1);
        let cond = |c: bool| ConditionLabels {
            name: labels.name.clone(),
            namespace: labels.namespace.clone(),
            uid: labels.uid.clone(),
            condition: c.to_string(),
        };
        self.provisioned.remove(&cond(!provisioned));
        self.provisioned.get_or_create(&cond(provisioned)).set(1);
    }

    /// The cluster's provisioned condition just turned true, `seconds` after creation.
    pub fn observe_provisioned(&self, labels: &ClusterLabels, seconds: f64) {
        if self.custom_resource_metrics {
            self.provisioned_duration.get_or_create(labels).observe(seconds);
        }
    }

    /// Drop every series of a deleted cluster.
    pub fn forget_cluster(&self, labels: &ClusterLabels) {
        self.provisioned_duration.remove(labels);
        for condition in ["true", "false"] {
            self.provisioned.remove(&ConditionLabels {
                name: labels.name.clone(),
                namespace: labels.namespace.clone(),
                uid: labels.uid.clone(),
                condition: condition.to_owned(),
            });
        }
        for kind in ["RayCluster", "RayJob", "RayService"] {
            self.info.remove(&ClusterInfoLabels {
                name: labels.name.clone(),
                namespace: labels.namespace.clone(),
                uid: labels.uid.clone(),
                owner_kind: kind.to_owned(),
            });
        }
    }
}
