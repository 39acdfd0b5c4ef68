//! Custom resources as a controller's store keeps them: metadata decoded, spec and status as JSON text.
//!
//! A decoded RayCluster is about 14 KiB on the heap for 0.6 KiB of JSON, because k8s-openapi's pod template
//! structs are large even when nearly empty (`docs/benchmarks.md`, "Memory profile"). A store holds every
//! object for the operator's lifetime, while a reconcile pass needs one object for the length of the pass. So
//! the store keeps [`Stored<K>`]: the metadata (which the controller's filters and keys read on every event)
//! decoded, and the spec and status as the compact JSON they serialise to; a pass decodes its one object with
//! [`Stored::decode`].
//!
//! Objects reach the store already decoded and checked (the watch reads each as `K` first, see
//! [`crate::decode`]), and the spec and status text is what serde wrote from that value, so decoding it again
//! gives back the same object.

use std::fmt;
use std::marker::PhantomData;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};

/// A custom resource made of `metadata`, `spec` and an optional `status`, taken apart and put back together.
pub trait SpecAndStatus: Resource + Sized {
    /// The type of `spec`.
    type Spec: Serialize + DeserializeOwned;
    /// The type of `status`.
    type Status: Serialize + DeserializeOwned;

    /// Takes the object apart.
    fn into_parts(self) -> (ObjectMeta, Self::Spec, Option<Self::Status>);

    /// Puts an object together.
    fn from_parts(metadata: ObjectMeta, spec: Self::Spec, status: Option<Self::Status>) -> Self;
}

/// Implements [`SpecAndStatus`] for kube custom resources (`metadata`, `spec`, `status: Option`).
macro_rules! impl_spec_and_status {
    ($($kind:ty => $spec:ty, $status:ty);* $(;)?) => {$(
        impl SpecAndStatus for $kind {
            type Spec = $spec;
            type Status = $status;

            fn into_parts(self) -> (ObjectMeta, Self::Spec, Option<Self::Status>) {
                (self.metadata, self.spec, self.status)
            }

            fn from_parts(metadata: ObjectMeta, spec: Self::Spec, status: Option<Self::Status>) -> Self {
                Self { metadata, spec, status }
            }
        }
    )*};
}

impl_spec_and_status!(
    ray_api::RayCluster => ray_api::RayClusterSpec, ray_api::RayClusterStatus;
);

/// An object as a store keeps it: decoded metadata, spec and status as JSON text.
pub struct Stored<K> {
    metadata: ObjectMeta,
    spec: Box<str>,
    status: Option<Box<str>>,
    kind: PhantomData<fn() -> K>,
}

/// Why a stored object did not decode again (it cannot happen for text this module wrote; reported, not
/// assumed).
#[derive(Debug, thiserror::Error)]
#[error("stored {part} of {name} does not decode: {source}")]
pub struct StoredDecodeError {
    /// `spec` or `status`.
    part: &'static str,
    /// `namespace/name` of the object.
    name: String,
    /// The decoder's error.
    source: serde_json::Error,
}

impl<K: SpecAndStatus> Stored<K> {
    /// Keeps `object` in its compact form.
    pub fn new(object: K) -> Result<Self, serde_json::Error> {
        let (metadata, spec, status) = object.into_parts();
        Ok(Self {
            metadata,
            spec: serde_json::to_string(&spec)?.into_boxed_str(),
            status: status
                .map(|s| serde_json::to_string(&s))
                .transpose()?
                .map(String::into_boxed_str),
            kind: PhantomData,
        })
    }

    /// The last state of a deleted object: its metadata (all a store needs to drop it), spec and status left
    /// as JSON `null` since nothing reconciles a deleted object from its store.
    pub fn deleted(object: K) -> Self {
        let (metadata, _, _) = object.into_parts();
        Self {
            metadata,
            spec: Box::from("null"),
            status: None,
            kind: PhantomData,
        }
    }

    /// The whole object again, for one reconcile pass.
    pub fn decode(&self) -> Result<K, StoredDecodeError> {
        let failed = |part, source| StoredDecodeError {
            part,
            name: format!(
                "{}/{}",
                self.metadata.namespace.as_deref().unwrap_or_default(),
                self.metadata.name.as_deref().unwrap_or_default()
            ),
            source,
        };
        let spec = serde_json::from_str(&self.spec).map_err(|e| failed("spec", e))?;
        let status = match &self.status {
            Some(text) => Some(serde_json::from_str(text).map_err(|e| failed("status", e))?),
            None => None,
        };
        Ok(K::from_parts(self.metadata.clone(), spec, status))
    }

    /// Bytes of JSON text held for the spec and status.
    pub fn text_len(&self) -> usize {
        self.spec.len() + self.status.as_deref().map_or(0, str::len)
    }
}

impl<K> Clone for Stored<K> {
    fn clone(&self) -> Self {
        Self {
            metadata: self.metadata.clone(),
            spec: self.spec.clone(),
            status: self.status.clone(),
            kind: PhantomData,
        }
    }
}

impl<K> fmt::Debug for Stored<K> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Stored")
            .field("metadata", &self.metadata)
            .field("spec", &self.spec)
            .field("status", &self.status)
            .finish()
    }
}

/// Reads the object as `K` and keeps it compact (kube-runtime's controller asks its objects to be
/// deserializable; the operator builds them with [`Stored::new`] from objects its watch already read).
impl<'de, K: SpecAndStatus + DeserializeOwned> Deserialize<'de> for Stored<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let object = K::deserialize(deserializer)?;
        Stored::new(object).map_err(serde::de::Error::custom)
    }
}

impl<K: Resource> Resource for Stored<K> {
    crate::decode::resource_type_of!(K);

    fn meta(&self) -> &ObjectMeta {
        &self.metadata
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        &mut self.metadata
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_api::RayCluster;

    fn sample_cluster() -> RayCluster {
        serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "c", "namespace": "ns", "generation": 3, "labels": {"a": "b"}},
            "spec": {
                "rayVersion": "2.46.0",
                "headGroupSpec": {"rayStartParams": {"num-cpus": "1"}, "template": {"spec": {"containers": [
                    {"name": "ray-head", "image": "rayproject/ray:2.46.0",
                     "resources": {"limits": {"cpu": "1", "memory": "2Gi"}}}]}}},
                "workerGroupSpecs": [{"groupName": "small-group", "replicas": 2, "minReplicas": 0,
                    "maxReplicas": 5, "rayStartParams": {}, "template": {"spec": {"containers": [
                    {"name": "ray-worker", "image": "rayproject/ray:2.46.0"}]}}}]
            },
            "status": {"state": "ready", "readyWorkerReplicas": 2, "desiredWorkerReplicas": 2}
        }))
        .unwrap()
    }

    #[test]
    fn a_stored_cluster_decodes_to_the_same_cluster() {
        let cluster = sample_cluster();
        let stored = Stored::new(cluster.clone()).unwrap();
        assert_eq!(stored.decode().unwrap(), cluster);
        assert_eq!(stored.meta().generation, Some(3));
        assert_eq!(Stored::<RayCluster>::kind(&()), "RayCluster");
        let without_status = RayCluster {
            status: None,
            ..cluster
        };
        assert_eq!(
            Stored::new(without_status.clone()).unwrap().decode().unwrap(),
            without_status
        );
    }

    /// Every RayCluster of KubeRay's samples survives the round trip through the store unchanged.
    #[test]
    fn every_sample_cluster_survives_the_store() {
        let mut checked = 0;
        for path in kuberay_reference::sample_files() {
            let text = std::fs::read_to_string(&path).unwrap();
            let documents: Vec<serde_json::Value> = ray_api::yaml::from_yaml_documents(&text).unwrap();
            for value in documents {
                if value["kind"] != "RayCluster" {
                    continue;
                }
                let cluster: RayCluster = serde_json::from_value(value).unwrap();
                let stored = Stored::new(cluster.clone()).unwrap();
                assert_eq!(stored.decode().unwrap(), cluster, "{}", path.display());
                checked += 1;
            }
        }
        assert!(checked > 10, "only {checked} sample RayClusters found");
    }

    #[test]
    fn deserializing_reads_the_object_then_keeps_it_compact() {
        let json = serde_json::to_string(&sample_cluster()).unwrap();
        let stored: Stored<RayCluster> = serde_json::from_str(&json).unwrap();
        assert_eq!(stored.decode().unwrap(), sample_cluster());
        assert!(stored.text_len() < json.len());
    }
}
