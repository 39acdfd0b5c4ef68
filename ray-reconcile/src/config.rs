//! Controller settings: KubeRay's feature gates and the operator environment variables the
//! RayCluster path reads, resolved once at start-up (see `docs/operator.md`).

use ray_api::constants::{
    ENABLE_GCS_FT_REDIS_CLEANUP, ENABLE_RANDOM_POD_DELETE, RAYCLUSTER_DEFAULT_REQUEUE_SECONDS,
    RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV,
};
use std::time::Duration;

pub use ray_api::feature_gates::{FeatureGateError, FeatureGates};

/// The client the RayJob and RayService controllers reach dashboards with through the API server's service
/// proxy (`--use-kubernetes-proxy`). KubeRay sends those requests over the manager's HTTP client, outside the
/// `--qps` / `--burst` limit of its API client, so the operator gives them a client without that limit.
#[derive(Clone)]
pub struct DashboardProxyClient(pub kube::Client);

impl DashboardProxyClient {
    /// The client for proxied dashboard requests: `proxy`'s when one was given, else `fallback` (the
    /// controller's own).
    pub fn or_controller_client(proxy: Option<&Self>, fallback: &kube::Client) -> kube::Client {
        proxy.map_or_else(|| fallback.clone(), |proxy| proxy.0.clone())
    }
}

impl std::fmt::Debug for DashboardProxyClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("DashboardProxyClient")
    }
}

/// Everything the RayCluster reconcile needs besides the cluster and the observed objects.
#[derive(Clone, Debug, PartialEq)]
pub struct ReconcileConfig {
    /// Feature gates.
    pub gates: FeatureGates,
    /// Unconditional requeue after a clean pass (`None`: `RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV=0`,
    /// no timed requeue).
    pub default_requeue: Option<Duration>,
    /// `ENABLE_RANDOM_POD_DELETE=true`: surplus deletion even with autoscaling on.
    pub enable_random_pod_delete: bool,
    /// `ENABLE_GCS_FT_REDIS_CLEANUP != false`: the Redis cleanup finalizer and Job.
    pub enable_gcs_ft_redis_cleanup: bool,
    /// The batch scheduler name chosen by the flags (empty: none).
    pub batch_scheduler: String,
    /// `enableIngress` builds an OpenShift Route instead of an Ingress: the operator runs on OpenShift
    /// (discovered at start-up) and `USE_INGRESS_ON_OPENSHIFT` is not `true`.
    pub use_openshift_route: bool,
    /// cert-manager's `cert-manager.io/v1` API was discovered at start-up (the mTLS path needs it).
    pub cert_manager_available: bool,
    /// Most worker pods of one RayCluster that may wait for a node before the operator stops creating
    /// more (`--max-unscheduled-worker-pods`; `None`: no limit, as KubeRay). The binary sets `None` with a
    /// batch scheduler, whose gang scheduling places no pod of a group until all of them exist.
    pub max_unscheduled_workers: Option<usize>,
}

/// Default of [`ReconcileConfig::max_unscheduled_workers`]: far above any real scale-up's backlog of a
/// cluster that can run (Ray clusters reach a few thousand nodes), low enough that a `replicas` typo
/// such as 2,000,000 costs a thousand Pending pods, not an unbounded flood of them.
pub const DEFAULT_MAX_UNSCHEDULED_WORKERS: usize = 1000;

impl Default for ReconcileConfig {
    fn default() -> Self {
        Self {
            gates: FeatureGates::default(),
            default_requeue: Some(Duration::from_secs(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS)),
            enable_random_pod_delete: false,
            enable_gcs_ft_redis_cleanup: true,
            batch_scheduler: String::new(),
            use_openshift_route: false,
            cert_manager_available: false,
            max_unscheduled_workers: Some(DEFAULT_MAX_UNSCHEDULED_WORKERS),
        }
    }
}

impl ReconcileConfig {
    /// Resolve the environment-driven settings through `lookup` (the binary passes `std::env::var`).
    pub fn from_env(gates: FeatureGates, lookup: impl Fn(&str) -> Option<String>) -> Self {
        let default_requeue = match lookup(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV).map(|v| v.parse::<i64>()) {
            Some(Ok(0)) => None,
            // Go's RequeueAfter with a negative duration requeues immediately; treat it as 0 s.
            Some(Ok(secs)) => Some(Duration::from_secs(u64::try_from(secs).unwrap_or(0))),
            _ => Some(Duration::from_secs(RAYCLUSTER_DEFAULT_REQUEUE_SECONDS)),
        };
        Self {
            gates,
            default_requeue,
            enable_random_pod_delete: ray_autoscale::random_pod_delete_flag(
                lookup(ENABLE_RANDOM_POD_DELETE).as_deref(),
            ),
            enable_gcs_ft_redis_cleanup: !lookup(ENABLE_GCS_FT_REDIS_CLEANUP)
                .is_some_and(|v| v.eq_ignore_ascii_case("false")),
            batch_scheduler: String::new(),
            use_openshift_route: false,
            cert_manager_available: false,
            max_unscheduled_workers: Some(DEFAULT_MAX_UNSCHEDULED_WORKERS),
        }
    }
}

/// Whether `headGroupSpec.enableIngress` builds an OpenShift Route: the API server is OpenShift
/// (`openshift`, discovered once at start-up) and `USE_INGRESS_ON_OPENSHIFT` (its value, if set) is not
/// `true` in any letter case (KubeRay's `ShouldUseIngressOnOpenShift`).
pub fn use_openshift_route(openshift: bool, use_ingress_on_openshift: Option<&str>) -> bool {
    openshift && !use_ingress_on_openshift.is_some_and(|v| v.eq_ignore_ascii_case("true"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn feature_gates_parse_over_defaults() {
        let g = FeatureGates::parse("RayClusterStatusConditions=false, RayCronJob=true,").unwrap();
        assert!(!g.ray_cluster_status_conditions);
        assert!(g.ray_cron_job);
        assert!(g.ray_multi_host_indexing);
        assert_eq!(FeatureGates::parse("").unwrap(), FeatureGates::default());
        assert_eq!(
            FeatureGates::parse("Nope=true").unwrap_err(),
            FeatureGateError::Unknown("Nope".into())
        );
        assert!(matches!(
            FeatureGates::parse("RayCronJob=maybe"),
            Err(FeatureGateError::InvalidValue { .. })
        ));
        assert!(matches!(
            FeatureGates::parse("RayCronJob"),
            Err(FeatureGateError::MissingValue(_))
        ));
    }

    #[test]
    fn route_needs_openshift_and_no_use_ingress_override() {
        assert!(use_openshift_route(true, None));
        assert!(use_openshift_route(true, Some("false")));
        assert!(use_openshift_route(true, Some("")));
        assert!(!use_openshift_route(true, Some("true")));
        assert!(!use_openshift_route(true, Some("TRUE")));
        assert!(!use_openshift_route(false, None));
        assert!(!use_openshift_route(false, Some("false")));
    }

    #[test]
    fn env_settings_follow_kuberay() {
        let env = |pairs: &'static [(&'static str, &'static str)]| {
            move |k: &str| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| (*v).to_owned())
        };
        let c = ReconcileConfig::from_env(FeatureGates::default(), env(&[]));
        assert_eq!(c.default_requeue, Some(Duration::from_secs(300)));
        assert!(c.enable_gcs_ft_redis_cleanup);
        assert!(!c.enable_random_pod_delete);
        let c = ReconcileConfig::from_env(
            FeatureGates::default(),
            env(&[
                ("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV", "0"),
                ("ENABLE_GCS_FT_REDIS_CLEANUP", "FALSE"),
                ("ENABLE_RANDOM_POD_DELETE", "True"),
            ]),
        );
        assert_eq!(c.default_requeue, None);
        assert!(!c.enable_gcs_ft_redis_cleanup);
        assert!(c.enable_random_pod_delete);
        let c = ReconcileConfig::from_env(
            FeatureGates::default(),
            env(&[("RAYCLUSTER_DEFAULT_REQUEUE_SECONDS_ENV", "x")]),
        );
        assert_eq!(c.default_requeue, Some(Duration::from_secs(300)));
    }
}
