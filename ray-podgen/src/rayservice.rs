//! What the RayService controller creates for a cluster (docs/podgen.md#rayjob-and-rayservice-objects): the RayCluster
//! name and the RayCluster built from `spec.rayClusterConfig`.
//!
//! Pure: no I/O, environment or clock; randomness only through [`SuffixSource`].

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ray_api::constants::{
    CRD_KIND_RAY_SERVICE, HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION, KUBERAY_VERSION,
    KUBERAY_VERSION_ANNOTATION, NUM_WORKER_GROUPS_ANNOTATION, RAY_ORIGINATED_FROM_CR_NAME_LABEL,
    RAY_ORIGINATED_FROM_CRD_LABEL,
};
use ray_api::{RayCluster, RayService, RayServiceUpgradeType};

use crate::cluster::controller_reference;
use crate::config::PodGenConfig;
use crate::error::PodGenError;
use crate::hash::rayservice_cluster_hash;
use crate::random::{SuffixSource, suffixed_name};

/// KubeRay's `GenerateRayClusterName`: `<rayservice name>-<5 random chars>`.
///
/// Not truncated: validation caps RayService names at 47 characters, so the result fits 53.
pub fn ray_cluster_name_for_service(service: &RayService, suffix_source: &mut dyn SuffixSource) -> String {
    suffixed_name(service.metadata.name.as_deref().unwrap_or_default(), suffix_source)
}

/// `IsIncrementalUpgradeEnabled`: gate `RayServiceIncrementalUpgrade` on and
/// `upgradeStrategy.type == NewClusterWithIncrementalUpgrade`.
pub fn incremental_upgrade_enabled(service: &RayService, config: &PodGenConfig) -> bool {
    config.feature_gates.ray_service_incremental_upgrade
        && service.spec.upgrade_strategy.as_ref().and_then(|s| s.type_.as_ref())
            == Some(&RayServiceUpgradeType::NewClusterWithIncrementalUpgrade)
}

/// `constructRayClusterForRayService`: the RayCluster `cluster_name` for `service`.
///
/// Labels: the RayService's plus `ray.io/originated-from-cr-name=<rs>` and
/// `ray.io/originated-from-crd=RayService`. Annotations: the RayService's plus
/// `ray.io/hash-without-replicas-and-workers-to-delete` ([`rayservice_cluster_hash`] of
/// `rayClusterConfig`), `ray.io/num-worker-groups` and `ray.io/kuberay-version`. Namespace of the
/// RayService, controller owner reference to it, spec = a copy of `rayClusterConfig` whose worker
/// `replicas` are cleared when this is the pending cluster of an incremental upgrade (incremental
/// upgrade enabled and an active cluster named in the status).
///
/// The hash is SHA-1 over this implementation's JSON of the spec; it is only comparable with hashes
/// this implementation wrote (see [`crate::hash`]), not with those of the Go operator.
pub fn build_ray_cluster_for_service(
    service: &RayService,
    cluster_name: &str,
    config: &PodGenConfig,
) -> Result<RayCluster, PodGenError> {
    let name = service
        .metadata
        .name
        .as_deref()
        .filter(|n| !n.is_empty())
        .ok_or(PodGenError::MissingName {
            kind: CRD_KIND_RAY_SERVICE,
        })?;
    let config_spec = &service.spec.ray_cluster_config;
    let mut labels = service.metadata.labels.clone().unwrap_or_default();
    labels.insert(RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_owned(), name.to_owned());
    labels.insert(
        RAY_ORIGINATED_FROM_CRD_LABEL.to_owned(),
        CRD_KIND_RAY_SERVICE.to_owned(),
    );
    let mut annotations: BTreeMap<String, String> = service.metadata.annotations.clone().unwrap_or_default();
    annotations.insert(
        HASH_WITHOUT_REPLICAS_AND_WORKERS_TO_DELETE_ANNOTATION.to_owned(),
        rayservice_cluster_hash(config_spec),
    );
    annotations.insert(
        NUM_WORKER_GROUPS_ANNOTATION.to_owned(),
        config_spec.worker_group_specs.as_ref().map_or(0, Vec::len).to_string(),
    );
    annotations.insert(KUBERAY_VERSION_ANNOTATION.to_owned(), KUBERAY_VERSION.to_owned());

    let mut spec = config_spec.clone();
    let has_active = service
        .status
        .as_ref()
        .and_then(|s| s.active_service_status.as_ref())
        .and_then(|s| s.ray_cluster_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    if has_active && incremental_upgrade_enabled(service, config) {
        for group in spec.worker_group_specs.iter_mut().flatten() {
            group.replicas = None;
        }
    }
    Ok(RayCluster {
        metadata: ObjectMeta {
            name: Some(cluster_name.to_owned()),
            namespace: service.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: Some(annotations),
            owner_references: Some(vec![controller_reference(
                CRD_KIND_RAY_SERVICE,
                name,
                service.metadata.uid.as_deref(),
            )]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_api::{
        RayClusterSpec, RayServiceSpec, RayServiceStatus, RayServiceStatuses, RayServiceUpgradeStrategy,
        WorkerGroupSpec,
    };

    struct FixedSuffix(&'static str);

    impl SuffixSource for FixedSuffix {
        fn next_suffix(&mut self) -> String {
            self.0.to_owned()
        }
    }

    fn group(name: &str) -> WorkerGroupSpec {
        WorkerGroupSpec {
            group_name: name.into(),
            replicas: Some(3),
            ..WorkerGroupSpec::default()
        }
    }

    fn service(groups: Option<Vec<WorkerGroupSpec>>) -> RayService {
        let mut service = RayService::new(
            "test-service",
            RayServiceSpec {
                ray_cluster_config: RayClusterSpec {
                    worker_group_specs: groups,
                    ..RayClusterSpec::default()
                },
                ..RayServiceSpec::default()
            },
        );
        service.metadata.namespace = Some("test-namespace".into());
        service.metadata.uid = Some("rs-uid".into());
        service.metadata.labels = Some(BTreeMap::from([("app".into(), "demo".into())]));
        service.metadata.annotations = Some(BTreeMap::from([("note".into(), "x".into())]));
        service
    }

    #[test]
    fn golden_j41_construct_ray_cluster_for_ray_service() {
        for (groups, expected_count) in [
            (None, "0"),
            (Some(vec![group("a"), group("b")]), "2"),
            (Some(vec![group("a")]), "1"),
        ] {
            let rs = service(groups);
            let cluster = build_ray_cluster_for_service(&rs, "test-cluster", &PodGenConfig::default()).unwrap();
            assert_eq!(cluster.metadata.name.as_deref(), Some("test-cluster"));
            assert_eq!(cluster.metadata.namespace.as_deref(), Some("test-namespace"));
            let labels = cluster.metadata.labels.as_ref().unwrap();
            assert_eq!(labels["ray.io/originated-from-cr-name"], "test-service");
            assert_eq!(labels["ray.io/originated-from-crd"], "RayService");
            assert_eq!(labels["app"], "demo");
            let annotations = cluster.metadata.annotations.as_ref().unwrap();
            let hash = &annotations["ray.io/hash-without-replicas-and-workers-to-delete"];
            assert_eq!(hash.len(), 32);
            assert_eq!(*hash, rayservice_cluster_hash(&rs.spec.ray_cluster_config));
            assert_eq!(annotations["ray.io/num-worker-groups"], expected_count);
            assert_eq!(annotations["ray.io/kuberay-version"], KUBERAY_VERSION);
            assert_eq!(annotations["note"], "x");
            let owner = &cluster.metadata.owner_references.as_ref().unwrap()[0];
            assert_eq!(
                (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
                ("RayService", "test-service", "rs-uid")
            );
            assert_eq!(owner.controller, Some(true));
            assert_eq!(cluster.spec, rs.spec.ray_cluster_config);
        }
    }

    #[test]
    fn cluster_name_is_service_name_plus_suffix() {
        let rs = service(None);
        assert_eq!(
            ray_cluster_name_for_service(&rs, &mut FixedSuffix("b5rs7")),
            "test-service-b5rs7"
        );
    }

    #[test]
    fn incremental_pending_cluster_has_no_worker_replicas() {
        let mut rs = service(Some(vec![group("a")]));
        rs.spec.upgrade_strategy = Some(RayServiceUpgradeStrategy {
            type_: Some(RayServiceUpgradeType::NewClusterWithIncrementalUpgrade),
            cluster_upgrade_options: None,
        });
        let config = PodGenConfig::default();
        // Fresh service (no active cluster): replicas kept.
        let fresh = build_ray_cluster_for_service(&rs, "c1", &config).unwrap();
        assert_eq!(fresh.spec.worker_group_specs.as_ref().unwrap()[0].replicas, Some(3));
        rs.status = Some(RayServiceStatuses {
            active_service_status: Some(RayServiceStatus {
                ray_cluster_name: Some("c1".into()),
                ..RayServiceStatus::default()
            }),
            ..RayServiceStatuses::default()
        });
        let pending = build_ray_cluster_for_service(&rs, "c2", &config).unwrap();
        assert_eq!(pending.spec.worker_group_specs.as_ref().unwrap()[0].replicas, None);
        // The hash ignores replicas anyway.
        assert_eq!(
            pending.metadata.annotations.as_ref().unwrap()["ray.io/hash-without-replicas-and-workers-to-delete"],
            fresh.metadata.annotations.as_ref().unwrap()["ray.io/hash-without-replicas-and-workers-to-delete"]
        );
        // Gate off: replicas kept.
        let mut gate_off = PodGenConfig::default();
        gate_off.feature_gates.ray_service_incremental_upgrade = false;
        let kept = build_ray_cluster_for_service(&rs, "c2", &gate_off).unwrap();
        assert_eq!(kept.spec.worker_group_specs.as_ref().unwrap()[0].replicas, Some(3));
    }
}
