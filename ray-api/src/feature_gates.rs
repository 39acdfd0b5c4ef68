//! KubeRay's feature gates (`--feature-gates Name=bool,...`), shared by validation, pod generation
//! and the controllers. Parsing follows Kubernetes' component-base: Go booleans, unknown names rejected.

use crate::validation::ValidationOptions;

/// KubeRay's feature gates with their v1.7.0 defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FeatureGates {
    /// `RayClusterStatusConditions` (default on).
    pub ray_cluster_status_conditions: bool,
    /// `RayJobDeletionPolicy` (default on).
    pub ray_job_deletion_policy: bool,
    /// `RayMultiHostIndexing` (default on).
    pub ray_multi_host_indexing: bool,
    /// `RayServiceIncrementalUpgrade` (default on).
    pub ray_service_incremental_upgrade: bool,
    /// `RayCronJob` (default off).
    pub ray_cron_job: bool,
    /// `SidecarSubmitterRestart` (default off).
    pub sidecar_submitter_restart: bool,
    /// `RayClusterNetworkPolicy` (default off).
    pub ray_cluster_network_policy: bool,
    /// `GCSFaultToleranceEmbeddedStorage` (default off).
    pub gcs_fault_tolerance_embedded_storage: bool,
    /// `RayClusterMTLS` (default off).
    pub ray_cluster_mtls: bool,
    /// `RayClusterHistoryServer` (default off).
    pub ray_cluster_history_server: bool,
    /// `KubernetesWAS` (default off).
    pub kubernetes_was: bool,
}

impl Default for FeatureGates {
    fn default() -> Self {
        Self {
            ray_cluster_status_conditions: true,
            ray_job_deletion_policy: true,
            ray_multi_host_indexing: true,
            ray_service_incremental_upgrade: true,
            ray_cron_job: false,
            sidecar_submitter_restart: false,
            ray_cluster_network_policy: false,
            gcs_fault_tolerance_embedded_storage: false,
            ray_cluster_mtls: false,
            ray_cluster_history_server: false,
            kubernetes_was: false,
        }
    }
}

/// Name of the `RayClusterMTLS` gate.
pub const RAY_CLUSTER_MTLS_GATE: &str = "RayClusterMTLS";
/// Name of the `RayServiceIncrementalUpgrade` gate.
pub const RAY_SERVICE_INCREMENTAL_UPGRADE_GATE: &str = "RayServiceIncrementalUpgrade";
/// Name of the `RayCronJob` gate.
pub const RAY_CRON_JOB_GATE: &str = "RayCronJob";
/// Name of the `RayClusterNetworkPolicy` gate.
pub const RAY_CLUSTER_NETWORK_POLICY_GATE: &str = "RayClusterNetworkPolicy";

/// A `--feature-gates` value that cannot be applied.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FeatureGateError {
    /// An entry without `=`.
    #[error("missing bool value for {0}")]
    MissingValue(String),
    /// A value that is not a Go bool.
    #[error("invalid value of {name}={value}, err: strconv.ParseBool: parsing {value:?}: invalid syntax")]
    InvalidValue {
        /// Gate name.
        name: String,
        /// Rejected value.
        value: String,
    },
    /// A gate this operator does not know.
    #[error("unrecognized feature gate: {0}")]
    Unknown(String),
}

impl FeatureGates {
    /// Parse `Name=bool,Name=bool` over the defaults (empty entries are skipped).
    pub fn parse(spec: &str) -> Result<Self, FeatureGateError> {
        let mut gates = Self::default();
        for entry in spec.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            let (name, value) = entry
                .split_once('=')
                .ok_or_else(|| FeatureGateError::MissingValue(entry.to_owned()))?;
            let (name, value) = (name.trim(), value.trim());
            let enabled = kube_compat::go_strconv::parse_bool(value).map_err(|_| FeatureGateError::InvalidValue {
                name: name.to_owned(),
                value: value.to_owned(),
            })?;
            let slot = match name {
                "RayClusterStatusConditions" => &mut gates.ray_cluster_status_conditions,
                "RayJobDeletionPolicy" => &mut gates.ray_job_deletion_policy,
                "RayMultiHostIndexing" => &mut gates.ray_multi_host_indexing,
                RAY_SERVICE_INCREMENTAL_UPGRADE_GATE => &mut gates.ray_service_incremental_upgrade,
                RAY_CRON_JOB_GATE => &mut gates.ray_cron_job,
                "SidecarSubmitterRestart" => &mut gates.sidecar_submitter_restart,
                RAY_CLUSTER_NETWORK_POLICY_GATE => &mut gates.ray_cluster_network_policy,
                "GCSFaultToleranceEmbeddedStorage" => &mut gates.gcs_fault_tolerance_embedded_storage,
                RAY_CLUSTER_MTLS_GATE => &mut gates.ray_cluster_mtls,
                "RayClusterHistoryServer" => &mut gates.ray_cluster_history_server,
                "KubernetesWAS" => &mut gates.kubernetes_was,
                other => return Err(FeatureGateError::Unknown(other.to_owned())),
            };
            *slot = enabled;
        }
        Ok(gates)
    }
}

impl FeatureGates {
    /// The validation settings these gates imply.
    pub fn validation_options(&self) -> ValidationOptions {
        ValidationOptions {
            ray_job_deletion_policy: self.ray_job_deletion_policy,
            gcs_fault_tolerance_embedded_storage: self.gcs_fault_tolerance_embedded_storage,
            ray_cluster_history_server: self.ray_cluster_history_server,
            ray_cluster_network_policy: self.ray_cluster_network_policy,
            ray_cluster_mtls: self.ray_cluster_mtls,
            ray_service_incremental_upgrade: self.ray_service_incremental_upgrade,
        }
    }
}
