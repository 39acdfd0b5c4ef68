//! Facts about a RayCluster that every generated object depends on, computed once per cluster:
//! creator kind, head service / FQDN, head port, autoscaling, GCS fault tolerance and auth modes.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use ray_api::constants::{
    CRD_KIND_RAY_CLUSTER, CRD_KIND_RAY_JOB, CRD_KIND_RAY_SERVICE, RAY_FT_ENABLED_ANNOTATION,
    RAY_ORIGINATED_FROM_CRD_LABEL,
};
use ray_api::{AuthMode, AutoscalerVersion, GcsFaultToleranceBackend, RayCluster, RayClusterSpec};

use crate::config::PodGenConfig;
use crate::names;
use crate::start_params;

/// API version of KubeRay's kinds.
pub const RAY_API_VERSION: &str = "ray.io/v1";
/// Annotation asking KubeRay to keep the user's Ray container command.
pub const OVERWRITE_CONTAINER_CMD_ANNOTATION: &str = "ray.io/overwrite-container-cmd";

/// The kind of resource a RayCluster was created for (label `ray.io/originated-from-crd`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreatorKind {
    /// A user-created RayCluster (also any unknown label value).
    RayCluster,
    /// Created by a RayJob.
    RayJob,
    /// Created by a RayService.
    RayService,
}

impl CreatorKind {
    /// Reads the creator from a cluster's labels.
    pub fn from_labels(labels: Option<&BTreeMap<String, String>>) -> Self {
        match labels
            .and_then(|l| l.get(RAY_ORIGINATED_FROM_CRD_LABEL))
            .map(String::as_str)
        {
            Some(CRD_KIND_RAY_JOB) => CreatorKind::RayJob,
            Some(CRD_KIND_RAY_SERVICE) => CreatorKind::RayService,
            _ => CreatorKind::RayCluster,
        }
    }

    /// The kind name (`RayCluster`, `RayJob`, `RayService`).
    pub fn as_str(self) -> &'static str {
        match self {
            CreatorKind::RayCluster => CRD_KIND_RAY_CLUSTER,
            CreatorKind::RayJob => CRD_KIND_RAY_JOB,
            CreatorKind::RayService => CRD_KIND_RAY_SERVICE,
        }
    }
}

/// `enableInTreeAutoscaling == true`.
pub fn autoscaling_enabled(spec: &RayClusterSpec) -> bool {
    spec.enable_in_tree_autoscaling == Some(true)
}

/// The autoscaler version when autoscaling is on and a version is set.
pub fn autoscaler_version(spec: &RayClusterSpec) -> Option<AutoscalerVersion> {
    if !autoscaling_enabled(spec) {
        return None;
    }
    spec.autoscaler_options.as_ref().and_then(|o| o.version)
}

/// `IsGCSFaultToleranceEnabled`: annotation `ray.io/ft-enabled` (any case) `true`, or options set.
pub fn gcs_ft_enabled(spec: &RayClusterSpec, annotations: Option<&BTreeMap<String, String>>) -> bool {
    let by_annotation = annotations
        .and_then(|a| a.get(RAY_FT_ENABLED_ANNOTATION))
        .is_some_and(|v| v.to_lowercase() == "true");
    by_annotation || spec.gcs_fault_tolerance_options.is_some()
}

/// The embedded RocksDB backend is selected.
pub fn gcs_ft_embedded(spec: &RayClusterSpec) -> bool {
    spec.gcs_fault_tolerance_options
        .as_ref()
        .and_then(|o| o.backend.as_ref())
        == Some(&GcsFaultToleranceBackend::RocksDb)
}

/// `IsAuthEnabled`: `authOptions.mode == token`.
pub fn auth_enabled(spec: &RayClusterSpec) -> bool {
    spec.auth_options.as_ref().and_then(|a| a.mode.as_ref()) == Some(&AuthMode::Token)
}

/// `IsK8sAuthEnabled`: token auth with `enableK8sTokenAuth == true`.
pub fn k8s_auth_enabled(spec: &RayClusterSpec) -> bool {
    auth_enabled(spec) && spec.auth_options.as_ref().and_then(|a| a.enable_k8s_token_auth) == Some(true)
}

/// mTLS requested (gate on and `tlsOptions.enabled`).
pub fn tls_enabled(spec: &RayClusterSpec, config: &PodGenConfig) -> bool {
    config.feature_gates.ray_cluster_mtls && spec.tls_options.as_ref().and_then(|t| t.enabled) == Some(true)
}

/// The head service name of a cluster (`GenerateHeadServiceName` for the RayCluster CRD).
pub fn head_service_name(cluster: &RayCluster) -> String {
    let custom = cluster
        .spec
        .head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.metadata.name.as_deref())
        .filter(|n| !n.is_empty());
    match custom {
        Some(name) => name.to_owned(),
        None => names::default_head_service_name(cluster_name(cluster)),
    }
}

/// `metadata.name` (empty when unset).
pub fn cluster_name(cluster: &RayCluster) -> &str {
    cluster.metadata.name.as_deref().unwrap_or_default()
}

/// `metadata.namespace` (empty when unset).
pub fn cluster_namespace(cluster: &RayCluster) -> &str {
    cluster.metadata.namespace.as_deref().unwrap_or_default()
}

/// A controller owner reference to an object of `kind` (`ray.io/v1`).
pub fn controller_reference(kind: &str, name: &str, uid: Option<&str>) -> OwnerReference {
    OwnerReference {
        api_version: RAY_API_VERSION.to_owned(),
        kind: kind.to_owned(),
        name: name.to_owned(),
        uid: uid.unwrap_or_default().to_owned(),
        controller: Some(true),
        block_owner_deletion: Some(true),
    }
}

/// The controller owner reference to a RayCluster.
pub fn cluster_owner_reference(cluster: &RayCluster) -> OwnerReference {
    controller_reference(
        CRD_KIND_RAY_CLUSTER,
        cluster_name(cluster),
        cluster.metadata.uid.as_deref(),
    )
}

/// What the per-pod pipeline needs to know about the cluster, computed once.
#[derive(Clone, Debug)]
pub struct ClusterFacts {
    /// Cluster name.
    pub name: String,
    /// Cluster namespace.
    pub namespace: String,
    /// Creator kind.
    pub creator: CreatorKind,
    /// Head port (`port` param or 6379).
    pub head_port: String,
    /// Head service FQDN.
    pub fqdn: String,
    /// Autoscaler sidecar enabled.
    pub autoscaling: bool,
    /// Autoscaler version (only when autoscaling).
    pub autoscaler_version: Option<AutoscalerVersion>,
    /// GCS FT enabled.
    pub ft_enabled: bool,
    /// GCS FT uses the embedded backend.
    pub ft_embedded: bool,
    /// Token auth enabled.
    pub auth: bool,
    /// Kubernetes service-account token auth.
    pub k8s_auth: bool,
    /// Cluster annotation `ray.io/overwrite-container-cmd` is `true`.
    pub overwrite_container_cmd: bool,
}

impl ClusterFacts {
    /// Computes the facts of `cluster` under `config`.
    pub fn new(cluster: &RayCluster, config: &PodGenConfig) -> Self {
        let spec = &cluster.spec;
        let name = cluster_name(cluster).to_owned();
        let namespace = cluster_namespace(cluster).to_owned();
        let fqdn = names::fqdn(&head_service_name(cluster), &namespace, config.domain());
        let annotations = cluster.metadata.annotations.as_ref();
        Self {
            creator: CreatorKind::from_labels(cluster.metadata.labels.as_ref()),
            head_port: start_params::head_port(spec.head_group_spec.ray_start_params.as_ref()),
            fqdn,
            autoscaling: autoscaling_enabled(spec),
            autoscaler_version: autoscaler_version(spec),
            ft_enabled: gcs_ft_enabled(spec, annotations),
            ft_embedded: gcs_ft_embedded(spec),
            auth: auth_enabled(spec),
            k8s_auth: k8s_auth_enabled(spec),
            overwrite_container_cmd: annotations
                .and_then(|a| a.get(OVERWRITE_CONTAINER_CMD_ANNOTATION))
                .is_some_and(|v| v.to_lowercase() == "true"),
            name,
            namespace,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_api::GcsFaultToleranceOptions;

    #[test]
    fn golden_p10_head_service_name() {
        let mut cluster = RayCluster::new("raycluster-sample", RayClusterSpec::default());
        assert_eq!(head_service_name(&cluster), "raycluster-sample-head-svc");
        cluster.spec.head_group_spec.head_service = Some(
            k8s_openapi::api::core::v1::Service {
                metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta {
                    name: Some("my-head-svc".into()),
                    ..Default::default()
                },
                ..Default::default()
            }
            .into(),
        );
        assert_eq!(head_service_name(&cluster), "my-head-svc");
        // RayService / RayJob owners always use `<owner>-head-svc`.
        assert_eq!(
            names::default_head_service_name("rayservice-sample"),
            "rayservice-sample-head-svc"
        );
        assert_eq!(
            names::default_head_service_name("rayjob-sample"),
            "rayjob-sample-head-svc"
        );
    }

    #[test]
    fn golden_p59_gcs_ft_enabled_and_backend() {
        let spec = RayClusterSpec::default();
        let ann = |v: &str| BTreeMap::from([(RAY_FT_ENABLED_ANNOTATION.to_owned(), v.to_owned())]);
        assert!(gcs_ft_enabled(&spec, Some(&ann("true"))));
        assert!(gcs_ft_enabled(&spec, Some(&ann("TRUE"))));
        assert!(!gcs_ft_enabled(&spec, Some(&ann("false"))));
        assert!(!gcs_ft_enabled(&spec, None));
        let with_options = RayClusterSpec {
            gcs_fault_tolerance_options: Some(GcsFaultToleranceOptions::default()),
            ..Default::default()
        };
        assert!(gcs_ft_enabled(&with_options, None));
        assert!(!gcs_ft_embedded(&spec));
        assert!(!gcs_ft_embedded(&with_options));
        let redis = RayClusterSpec {
            gcs_fault_tolerance_options: Some(GcsFaultToleranceOptions {
                backend: Some(GcsFaultToleranceBackend::Redis),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(!gcs_ft_embedded(&redis));
        let rocks = RayClusterSpec {
            gcs_fault_tolerance_options: Some(GcsFaultToleranceOptions {
                backend: Some(GcsFaultToleranceBackend::RocksDb),
                ..Default::default()
            }),
            ..Default::default()
        };
        assert!(gcs_ft_embedded(&rocks));
    }
}
