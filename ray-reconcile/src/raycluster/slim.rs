//! A pod as the RayCluster controller's watch decodes it: only the fields reconcile reads.
//!
//! A fully decoded [`Pod`] takes tens of kilobytes of heap (every container's env, probes, volumes,
//! managedFields…), and a watch's initial list decodes a whole page of them at once; that transient peak,
//! not the compact records the index keeps, set the operator's resident memory. [`SlimPod`] decodes the
//! wire JSON into a handful of fields and skips the rest without allocating, then presents them as an
//! ordinary `Pod` with everything else unset, so the code that compacts pods is the same for both.

use std::borrow::Cow;
use std::collections::BTreeMap;

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::{Container, ContainerStatus, Pod, PodCondition, PodSpec, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use ray_api::constants::{
    KUBERAY_VERSION_ANNOTATION, UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION, WORKER_TEMPLATE_HASH_ANNOTATION,
};
use serde::Deserialize;

/// A pod decoded with only what reconcile reads (see the module docs); `.0` is that partial `Pod`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SlimPod(pub Pod);

impl crate::decode::FromMetadata for SlimPod {
    fn from_metadata(metadata: ObjectMeta) -> Self {
        SlimPod(Pod {
            metadata,
            ..Pod::default()
        })
    }
}

impl kube::Resource for SlimPod {
    type DynamicType = ();
    type Scope = NamespaceResourceScope;

    fn kind(dt: &()) -> Cow<'_, str> {
        Pod::kind(dt)
    }

    fn group(dt: &()) -> Cow<'_, str> {
        Pod::group(dt)
    }

    fn version(dt: &()) -> Cow<'_, str> {
        Pod::version(dt)
    }

    fn plural(dt: &()) -> Cow<'_, str> {
        Pod::plural(dt)
    }

    fn meta(&self) -> &ObjectMeta {
        &self.0.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.0.metadata
    }
}

/// The metadata fields kept: identity, the resourceVersion the watcher resumes from, labels, the upgrade
/// annotations, creation and deletion.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireMeta {
    name: Option<String>,
    namespace: Option<String>,
    uid: Option<String>,
    resource_version: Option<String>,
    labels: Option<BTreeMap<String, String>>,
    annotations: Option<UpgradeAnnotations>,
    creation_timestamp: Option<Time>,
    deletion_timestamp: Option<Time>,
}

/// The annotations upgrades read ([`KEPT_ANNOTATIONS`]); every other annotation is skipped unallocated.
struct UpgradeAnnotations(BTreeMap<String, String>);

/// Annotation keys a slim pod keeps: the Recreate strategy's hash and version, the rolling upgrade's hash.
pub const KEPT_ANNOTATIONS: [&str; 3] = [
    UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION,
    KUBERAY_VERSION_ANNOTATION,
    WORKER_TEMPLATE_HASH_ANNOTATION,
];

impl<'de> Deserialize<'de> for UpgradeAnnotations {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl<'de> serde::de::Visitor<'de> for Visitor {
            type Value = UpgradeAnnotations;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("a map of annotations")
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut kept = BTreeMap::new();
                while let Some(key) = map.next_key::<Cow<'de, str>>()? {
                    if KEPT_ANNOTATIONS.contains(&key.as_ref()) {
                        kept.insert(key.into_owned(), map.next_value::<String>()?);
                    } else {
                        map.next_value::<serde::de::IgnoredAny>()?;
                    }
                }
                Ok(UpgradeAnnotations(kept))
            }
        }
        deserializer.deserialize_map(Visitor)
    }
}

/// Only the container name (the Ray container's status is matched by it).
#[derive(Deserialize)]
struct WireContainer {
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireSpec {
    restart_policy: Option<String>,
    #[serde(default)]
    containers: Vec<WireContainer>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WireStatus {
    phase: Option<String>,
    #[serde(rename = "podIP")]
    pod_ip: Option<String>,
    conditions: Option<Vec<PodCondition>>,
    container_statuses: Option<Vec<ContainerStatus>>,
}

#[derive(Deserialize)]
struct WirePod {
    metadata: WireMeta,
    spec: Option<WireSpec>,
    status: Option<WireStatus>,
}

impl From<WirePod> for SlimPod {
    fn from(wire: WirePod) -> Self {
        let meta = wire.metadata;
        SlimPod(Pod {
            metadata: ObjectMeta {
                name: meta.name,
                namespace: meta.namespace,
                uid: meta.uid,
                resource_version: meta.resource_version,
                labels: meta.labels,
                annotations: meta.annotations.map(|a| a.0).filter(|a| !a.is_empty()),
                creation_timestamp: meta.creation_timestamp,
                deletion_timestamp: meta.deletion_timestamp,
                ..ObjectMeta::default()
            },
            spec: wire.spec.map(|spec| PodSpec {
                restart_policy: spec.restart_policy,
                containers: spec
                    .containers
                    .into_iter()
                    .map(|c| Container {
                        name: c.name,
                        ..Container::default()
                    })
                    .collect(),
                ..PodSpec::default()
            }),
            status: wire.status.map(|status| PodStatus {
                phase: status.phase,
                pod_ip: status.pod_ip,
                conditions: status.conditions,
                container_statuses: status.container_statuses,
                ..PodStatus::default()
            }),
        })
    }
}

impl<'de> Deserialize<'de> for SlimPod {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        WirePod::deserialize(deserializer).map(SlimPod::from)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::Resource as _;

    #[test]
    fn keeps_what_reconcile_reads_and_drops_the_rest() {
        let json = serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "c-head-x", "namespace": "ns", "uid": "u1", "resourceVersion": "42",
                "labels": {"ray.io/cluster": "c"}, "deletionTimestamp": "2026-01-01T00:00:00Z",
                "creationTimestamp": "2025-12-31T00:00:00Z",
                "annotations": {"a": "b", "ray.io/upgrade-strategy-recreate-hash": "H", "ray.io/kuberay-version": "v"},
                "managedFields": [{"manager": "m"}]},
            "spec": {"restartPolicy": "Never", "nodeName": "n1",
                "containers": [{"name": "ray-head", "image": "rayproject/ray", "env": [{"name": "A", "value": "1"}]}]},
            "status": {"phase": "Running", "podIP": "10.0.0.7", "hostIP": "10.1.0.1",
                "conditions": [{"type": "Ready", "status": "True"}],
                "containerStatuses": [{"name": "ray-head", "image": "i", "imageID": "", "ready": true,
                    "restartCount": 0, "state": {"running": {}}}]}
        });
        let slim: SlimPod = serde_json::from_value(json).unwrap();
        let pod = &slim.0;
        assert_eq!(slim.meta().name.as_deref(), Some("c-head-x"));
        assert_eq!(pod.metadata.resource_version.as_deref(), Some("42"));
        assert_eq!(pod.metadata.labels.as_ref().unwrap()["ray.io/cluster"], "c");
        assert!(pod.metadata.deletion_timestamp.is_some());
        assert!(pod.metadata.managed_fields.is_none() && pod.metadata.creation_timestamp.is_some());
        let annotations = pod.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations.len(), 2, "{annotations:?}");
        assert_eq!(annotations["ray.io/upgrade-strategy-recreate-hash"], "H");
        assert_eq!(annotations["ray.io/kuberay-version"], "v");
        let spec = pod.spec.as_ref().unwrap();
        assert_eq!(spec.restart_policy.as_deref(), Some("Never"));
        assert_eq!(spec.containers[0].name, "ray-head");
        assert!(spec.containers[0].image.is_none() && spec.node_name.is_none());
        let status = pod.status.as_ref().unwrap();
        assert_eq!(status.phase.as_deref(), Some("Running"));
        assert_eq!(status.pod_ip.as_deref(), Some("10.0.0.7"));
        assert!(status.host_ip.is_none());
        assert_eq!(status.conditions.as_ref().unwrap()[0].type_, "Ready");
        assert_eq!(status.container_statuses.as_ref().unwrap()[0].name, "ray-head");
        assert_eq!(SlimPod::plural(&()), "pods");
    }

    #[test]
    fn a_pod_without_spec_or_status_decodes() {
        let slim: SlimPod = serde_json::from_value(serde_json::json!({"metadata": {"name": "p"}})).unwrap();
        assert!(slim.0.spec.is_none() && slim.0.status.is_none());
    }
}
