//! The `RayCluster` kind (`ray.io/v1`): spec, status and their sub-structures.
//!
//! Field names, optionality and enum values follow KubeRay v1.7.0's `raycluster_types.go` and
//! its generated CRD. Go pointers and `omitempty` fields are `Option` so that an object read and
//! written back is unchanged (nothing added, nothing lost).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    EnvFromSource, EnvVar, EnvVarSource, PodTemplateSpec, ResourceRequirements, SecurityContext, Service, VolumeMount,
};
use k8s_openapi::api::networking::v1::{IngressTLS, NetworkPolicyEgressRule, NetworkPolicyIngressRule};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::schema_util;
use crate::string_enum::{closed_string_enum, open_string_enum};

/// Desired state of a Ray cluster: one head group and any number of worker groups.
#[derive(CustomResource, Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[kube(
    group = "ray.io",
    version = "v1",
    kind = "RayCluster",
    plural = "rayclusters",
    singular = "raycluster",
    namespaced,
    status = "RayClusterStatus",
    category = "all",
    derive = "PartialEq",
    derive = "Default",
    doc = "RayCluster is the Schema for the RayClusters API",
    printcolumn = r#"{"name":"desired workers","type":"integer","jsonPath":".status.desiredWorkerReplicas"}"#,
    printcolumn = r#"{"name":"available workers","type":"integer","jsonPath":".status.availableWorkerReplicas"}"#,
    printcolumn = r#"{"name":"cpus","type":"string","jsonPath":".status.desiredCPU"}"#,
    printcolumn = r#"{"name":"memory","type":"string","jsonPath":".status.desiredMemory"}"#,
    printcolumn = r#"{"name":"gpus","type":"string","jsonPath":".status.desiredGPU"}"#,
    printcolumn = r#"{"name":"tpus","type":"string","priority":1,"jsonPath":".status.desiredTPU"}"#,
    printcolumn = r#"{"name":"status","type":"string","jsonPath":".status.state"}"#,
    printcolumn = r#"{"name":"age","type":"date","jsonPath":".metadata.creationTimestamp"}"#,
    printcolumn = r#"{"name":"head pod IP","type":"string","priority":1,"jsonPath":".status.head.podIP"}"#,
    printcolumn = r#"{"name":"head service IP","type":"string","priority":1,"jsonPath":".status.head.serviceIP"}"#
)]
#[serde(rename_all = "camelCase")]
pub struct RayClusterSpec {
    /// How the cluster's pods are replaced when the spec changes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upgrade_strategy: Option<RayClusterUpgradeStrategy>,
    /// Ray token authentication settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auth_options: Option<AuthOptions>,
    /// Suspends the cluster: all pods are deleted while true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Which controller reconciles this object (`ray.io/kuberay-operator` or MultiKueue).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = schema_util::managed_by_validations()))]
    pub managed_by: Option<String>,
    /// Settings of the in-tree autoscaler sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaler_options: Option<AutoscalerOptions>,
    /// Annotations added to the head service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_service_annotations: Option<BTreeMap<String, String>>,
    /// Enables the Ray autoscaler sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_in_tree_autoscaling: Option<bool>,
    /// GCS fault tolerance (external Redis or embedded RocksDB).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gcs_fault_tolerance_options: Option<GcsFaultToleranceOptions>,
    /// History server collector sidecar settings (gate `RayClusterHistoryServer`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub history_server_options: Option<HistoryServerOptions>,
    /// Network policies generated for the cluster (gate `RayClusterNetworkPolicy`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network_policy: Option<NetworkPolicyOptions>,
    /// Mutual TLS between Ray nodes (gate `RayClusterMTLS`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls_options: Option<TlsOptions>,
    /// The head group.
    pub head_group_spec: HeadGroupSpec,
    /// Ray version of the images (used by version-dependent checks).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_version: Option<String>,
    /// The worker groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker_group_specs: Option<Vec<WorkerGroupSpec>>,
}

closed_string_enum! {
    /// `upgradeStrategy.type` of a RayCluster.
    pub enum RayClusterUpgradeType {
        /// Recreate all pods when the spec hash changes.
        Recreate = "Recreate",
        /// Never recreate pods for spec changes.
        None = "None",
        /// Beyond KubeRay: replace the pods of a worker group whose template changed a bounded number at a
        /// time (`rollingUpdate`); the head is left alone. See `docs/rolling-upgrades.md`.
        RollingUpdate = "RollingUpdate",
    }
}

/// `spec.upgradeStrategy` of a RayCluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayClusterUpgradeStrategy {
    /// The strategy type.
    #[serde(default, rename = "type", skip_serializing_if = "Option::is_none")]
    pub type_: Option<RayClusterUpgradeType>,
    /// Bounds of a rolling worker upgrade (read only with `type: RollingUpdate`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rolling_update: Option<RollingUpdateOptions>,
}

/// `spec.upgradeStrategy.rollingUpdate`: how fast a worker group's outdated pods are replaced.
///
/// `maxUnavailable` and `maxSurge` are counted in replicas of the group (a multi-host replica is one unit)
/// and resolved against the group's desired replicas, as a Deployment resolves them.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RollingUpdateOptions {
    /// Most replicas of a group that may be unavailable during the upgrade: a count or a percentage of the
    /// desired replicas, rounded down (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_unavailable: Option<IntOrString>,
    /// Most replicas created above the desired count during the upgrade: a count or a percentage of the
    /// desired replicas, rounded up (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_surge: Option<IntOrString>,
    /// Pauses the upgrade: no outdated pod is replaced while true (scaling goes on).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Seconds an updated pod may stay unready before the upgrade is reported stuck (default 600).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress_deadline_seconds: Option<i32>,
}

closed_string_enum! {
    /// `authOptions.mode`.
    pub enum AuthMode {
        /// No Ray authentication.
        Disabled = "disabled",
        /// Ray token authentication.
        Token = "token",
    }
}

/// `spec.authOptions`: Ray token authentication.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AuthOptions {
    /// Authentication mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<AuthMode>,
    /// Authenticate with Kubernetes service-account tokens.
    #[serde(default, rename = "enableK8sTokenAuth", skip_serializing_if = "Option::is_none")]
    pub enable_k8s_token_auth: Option<bool>,
    /// Secret holding the token (`auth_token` key); generated when empty.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret_name: Option<String>,
}

closed_string_enum! {
    /// `autoscalerOptions.upscalingMode`.
    pub enum UpscalingMode {
        /// Default upscaling speed.
        Default = "Default",
        /// Scale up without rate limit.
        Aggressive = "Aggressive",
        /// Rate-limited upscaling.
        Conservative = "Conservative",
    }
}

closed_string_enum! {
    /// `autoscalerOptions.version`.
    pub enum AutoscalerVersion {
        /// Autoscaler v1.
        V1 = "v1",
        /// Autoscaler v2.
        V2 = "v2",
    }
}

/// `spec.autoscalerOptions`: the autoscaler sidecar container.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalerOptions {
    /// Container resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Container image (defaults to the Ray container's image).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Image pull policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    /// Container security context.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub security_context: Option<SecurityContext>,
    /// Seconds a node must be idle before scale-down.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<i32>,
    /// Upscaling speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upscaling_mode: Option<UpscalingMode>,
    /// Autoscaler version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<AutoscalerVersion>,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
    /// Extra environment sources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env_from: Option<Vec<EnvFromSource>>,
    /// Extra volume mounts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub volume_mounts: Option<Vec<VolumeMount>>,
    /// Overrides the container command.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Overrides the container args.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args: Option<Vec<String>>,
}

closed_string_enum! {
    /// `gcsFaultToleranceOptions.backend`.
    pub enum GcsFaultToleranceBackend {
        /// External Redis.
        Redis = "redis",
        /// Embedded RocksDB on a PVC.
        RocksDb = "rocksdb",
    }
}

closed_string_enum! {
    /// `gcsFaultToleranceOptions.storage.deletionPolicy`.
    pub enum GcsStorageDeletionPolicy {
        /// Delete the PVC with the cluster.
        DeleteWithCluster = "DeleteWithCluster",
        /// Keep the PVC.
        Retain = "Retain",
    }
}

/// `spec.gcsFaultToleranceOptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GcsFaultToleranceOptions {
    /// Redis user name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_username: Option<RedisCredential>,
    /// Redis password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_password: Option<RedisCredential>,
    /// Storage namespace inside Redis.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_storage_namespace: Option<String>,
    /// Redis address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redis_address: Option<String>,
    /// Storage backend (immutable).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-validations" = schema_util::immutable_validation("gcsFaultToleranceOptions.backend is immutable")))]
    pub backend: Option<GcsFaultToleranceBackend>,
    /// PVC settings of the RocksDB backend.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage: Option<GcsStorage>,
}

/// A Redis credential: a literal value or an env-var source.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RedisCredential {
    /// Where to read the value from.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value_from: Option<EnvVarSource>,
    /// The literal value.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
}

/// `gcsFaultToleranceOptions.storage`: the PVC of the embedded RocksDB backend.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct GcsStorage {
    /// Existing claim to use instead of creating one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim_name: Option<String>,
    /// Requested size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Quantity>,
    /// Storage class.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub storage_class_name: Option<String>,
    /// Access modes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_modes: Option<Vec<String>>,
    /// Sub-path inside the volume.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sub_path: Option<String>,
    /// What happens to the PVC when the cluster is deleted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deletion_policy: Option<GcsStorageDeletionPolicy>,
}

/// `spec.historyServerOptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HistoryServerOptions {
    /// The collector sidecar.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub collector_options: Option<CollectorOptions>,
}

/// `historyServerOptions.collectorOptions`: the `ray-history-collector` sidecar.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct CollectorOptions {
    /// Container image.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image: Option<String>,
    /// Image pull policy.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub image_pull_policy: Option<String>,
    /// Container resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<ResourceRequirements>,
    /// Extra environment variables.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub env: Option<Vec<EnvVar>>,
}

closed_string_enum! {
    /// `networkPolicy.mode`.
    pub enum NetworkPolicyMode {
        /// Deny all ingress and egress not allowed by rules.
        DenyAll = "DenyAll",
        /// Deny ingress only.
        DenyAllIngress = "DenyAllIngress",
        /// Deny egress only.
        DenyAllEgress = "DenyAllEgress",
    }
}

/// `spec.networkPolicy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyOptions {
    /// Policy mode (CRD default `DenyAll`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = "DenyAll"))]
    pub mode: Option<NetworkPolicyMode>,
    /// Rules for the head pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<NetworkPolicyRules>,
    /// Rules for every worker pod.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub worker: Option<NetworkPolicyRules>,
    /// Rules for specific worker groups.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["groupName"]))]
    pub worker_groups: Option<Vec<WorkerGroupNetworkPolicy>>,
}

/// Ingress and egress rules of a network policy.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NetworkPolicyRules {
    /// Allowed ingress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_rules: Option<Vec<NetworkPolicyIngressRule>>,
    /// Allowed egress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_rules: Option<Vec<NetworkPolicyEgressRule>>,
}

/// Network policy rules of one worker group.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerGroupNetworkPolicy {
    /// The worker group.
    pub group_name: String,
    /// Allowed ingress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_rules: Option<Vec<NetworkPolicyIngressRule>>,
    /// Allowed egress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub egress_rules: Option<Vec<NetworkPolicyEgressRule>>,
}

/// `spec.tlsOptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TlsOptions {
    /// Enables mTLS between Ray nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
}

/// `spec.headGroupSpec`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeadGroupSpec {
    /// The head pod template (the Ray container is `containers[0]`).
    pub template: PodTemplateSpec,
    /// A custom head service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head_service: Option<crate::Embedded<Service>>,
    /// Creates an Ingress (or Route on OpenShift) for the dashboard.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enable_ingress: Option<bool>,
    /// Settings of the dashboard Ingress.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ingress_options: Option<IngressOptions>,
    /// Ray logical resources (override what is derived from the container).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeMap<String, String>>,
    /// Ray node labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// `ray start` parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_start_params: Option<BTreeMap<String, String>>,
    /// Type of the head service.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_type: Option<String>,
}

closed_string_enum! {
    /// `ingressOptions.pathType`.
    pub enum IngressPathType {
        /// Exact path match.
        Exact = "Exact",
        /// Prefix match.
        Prefix = "Prefix",
        /// Up to the IngressClass.
        ImplementationSpecific = "ImplementationSpecific",
    }
}

/// `headGroupSpec.ingressOptions`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct IngressOptions {
    /// Ingress host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    /// Ingress path.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// Ingress path type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path_type: Option<IngressPathType>,
    /// TLS settings.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<Vec<IngressTLS>>,
}

/// One entry of `spec.workerGroupSpecs`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
#[schemars(transform = schema_util::require_min_max_replicas)]
pub struct WorkerGroupSpec {
    /// Suspends this group (its pods are deleted).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub suspend: Option<bool>,
    /// Group name (unique in the cluster).
    pub group_name: String,
    /// Desired replica count (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub replicas: Option<i32>,
    /// Minimum replicas (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub min_replicas: Option<i32>,
    /// Maximum replicas (CRD default 2147483647).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 2147483647))]
    pub max_replicas: Option<i32>,
    /// Per-group autoscaler v2 idle timeout.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub idle_timeout_seconds: Option<i32>,
    /// Ray logical resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resources: Option<BTreeMap<String, String>>,
    /// Ray node labels.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub labels: Option<BTreeMap<String, String>>,
    /// `ray start` parameters.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ray_start_params: Option<BTreeMap<String, String>>,
    /// The worker pod template (the Ray container is `containers[0]`).
    pub template: PodTemplateSpec,
    /// Pods the autoscaler asks to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scale_strategy: Option<ScaleStrategy>,
    /// Hosts per replica (multi-host groups; CRD default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 1))]
    pub num_of_hosts: Option<i32>,
    /// Scheduling priority for autoscaler v2 (CRD default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("default" = 0))]
    pub priority: Option<i32>,
}

/// `workerGroupSpecs[].scaleStrategy`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ScaleStrategy {
    /// Names of pods to delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub workers_to_delete: Option<Vec<String>>,
}

open_string_enum! {
    /// `status.state` of a RayCluster.
    pub enum ClusterState {
        /// All pods are ready (first time).
        Ready = "ready",
        /// Deprecated failure state.
        Failed = "failed",
        /// The cluster is suspended.
        Suspended = "suspended",
    }
}

/// Observed state of a RayCluster.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct RayClusterStatus {
    /// Overall state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<ClusterState>,
    /// Sum of desired CPU.
    #[serde(default, rename = "desiredCPU", skip_serializing_if = "Option::is_none")]
    pub desired_cpu: Option<Quantity>,
    /// Sum of desired memory.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_memory: Option<Quantity>,
    /// Sum of desired GPUs.
    #[serde(default, rename = "desiredGPU", skip_serializing_if = "Option::is_none")]
    pub desired_gpu: Option<Quantity>,
    /// Sum of desired TPUs.
    #[serde(default, rename = "desiredTPU", skip_serializing_if = "Option::is_none")]
    pub desired_tpu: Option<Quantity>,
    /// Last status update.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("nullable" = true))]
    pub last_update_time: Option<Time>,
    /// When each state was last entered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state_transition_times: Option<BTreeMap<String, Time>>,
    /// Head service ports by name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub endpoints: Option<BTreeMap<String, String>>,
    /// Head pod and service addresses.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<HeadInfo>,
    /// Reason of the current state.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    /// Standard conditions.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["type"]))]
    pub conditions: Option<Vec<Condition>>,
    /// Ready worker pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_worker_replicas: Option<i32>,
    /// Available worker pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_worker_replicas: Option<i32>,
    /// Desired worker pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub desired_worker_replicas: Option<i32>,
    /// Minimum worker pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_worker_replicas: Option<i32>,
    /// Maximum worker pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_worker_replicas: Option<i32>,
    /// Generation the status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// Progress of rolling worker upgrades, one entry per worker group (`upgradeStrategy.type:
    /// RollingUpdate` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(extend("x-kubernetes-list-type" = "map", "x-kubernetes-list-map-keys" = ["groupName"]))]
    pub worker_group_upgrades: Option<Vec<WorkerGroupUpgradeStatus>>,
}

/// `status.workerGroupUpgrades[]`: where one worker group's rolling upgrade stands, in replicas (a multi-host
/// replica counts once).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct WorkerGroupUpgradeStatus {
    /// The worker group.
    pub group_name: String,
    /// Replicas the group should have.
    #[serde(default)]
    pub desired_replicas: i32,
    /// Replicas that exist and are not terminating.
    #[serde(default)]
    pub replicas: i32,
    /// Of those, replicas built from the current template.
    #[serde(default)]
    pub updated_replicas: i32,
    /// Of those, replicas whose pods are running and ready.
    #[serde(default)]
    pub ready_replicas: i32,
    /// Replicas built from the current template and ready.
    #[serde(default)]
    pub updated_ready_replicas: i32,
}

/// `status.head`: where the head runs.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct HeadInfo {
    /// Head pod IP.
    #[serde(default, rename = "podIP", skip_serializing_if = "Option::is_none")]
    pub pod_ip: Option<String>,
    /// Head service IP.
    #[serde(default, rename = "serviceIP", skip_serializing_if = "Option::is_none")]
    pub service_ip: Option<String>,
    /// Head pod name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod_name: Option<String>,
    /// Head service name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub service_name: Option<String>,
}
