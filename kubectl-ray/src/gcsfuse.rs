//! The config file's `gke.gcsfuse` option: a Cloud Storage bucket mounted into every Ray pod through GKE's
//! Cloud Storage FUSE CSI driver. Each pod template gets the inline CSI volume `cluster-storage`, its first
//! container mounts it at `mount-path`, and the sidecar's resources become `gke-gcsfuse/*` pod annotations.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{CSIVolumeSource, PodTemplateSpec, Volume, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Deserialize;

use crate::error::{Result, failed};
use crate::quantity_flags::check_quantity;

/// The name of the volume the bucket is mounted from.
pub const GCSFUSE_VOLUME_NAME: &str = "cluster-storage";
/// GKE's Cloud Storage FUSE CSI driver.
pub const GCSFUSE_CSI_DRIVER: &str = "gcsfuse.csi.storage.gke.io";
/// The pod annotation with the sidecar's CPU request.
pub const SIDECAR_CPU_REQUEST: &str = "gke-gcsfuse/cpu-request";
/// The pod annotation with the sidecar's memory limit.
pub const SIDECAR_MEMORY_LIMIT: &str = "gke-gcsfuse/memory-limit";
/// The pod annotation with the sidecar's memory request.
pub const SIDECAR_MEMORY_REQUEST: &str = "gke-gcsfuse/memory-request";
/// The pod annotation with the sidecar's ephemeral-storage limit.
pub const SIDECAR_EPHEMERAL_STORAGE_LIMIT: &str = "gke-gcsfuse/ephemeral-storage-limit";
/// The pod annotation with the sidecar's ephemeral-storage request.
pub const SIDECAR_EPHEMERAL_STORAGE_REQUEST: &str = "gke-gcsfuse/ephemeral-storage-request";

/// `gke.gcsfuse` as written in the config file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct GcsFuse {
    /// The bucket (required).
    #[serde(default)]
    pub bucket_name: String,
    /// Where the containers see it (required).
    #[serde(default)]
    pub mount_path: String,
    /// The driver's `mountOptions` attribute.
    pub mount_options: Option<String>,
    /// The driver's `disableMetrics` attribute.
    pub disable_metrics: Option<bool>,
    /// The driver's `gcsfuseMetadataPrefetchOnMount` attribute.
    pub gcsfuse_metadata_prefetch_on_mount: Option<bool>,
    /// The driver's `skipCSIBucketAccessCheck` attribute.
    #[serde(rename = "skip-csi-bucket-access-check")]
    pub skip_csi_bucket_access_check: Option<bool>,
    /// The FUSE sidecar's resources.
    pub resources: Option<SidecarResources>,
}

/// `gke.gcsfuse.resources`: what GKE gives the FUSE sidecar container it injects.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct SidecarResources {
    /// CPU request.
    pub cpu: Option<String>,
    /// Memory request and limit.
    pub memory: Option<String>,
    /// Ephemeral-storage request and limit.
    pub ephemeral_storage: Option<String>,
}

impl GcsFuse {
    /// The checks of `failed to validate config file`: bucket and mount path set, sidecar quantities valid.
    pub fn validate(&self) -> Result<()> {
        if self.bucket_name.is_empty() {
            return Err(failed!(".gcsfuse.bucket-name is required"));
        }
        if self.mount_path.is_empty() {
            return Err(failed!(".gcsfuse.mount-path is required"));
        }
        if let Some(resources) = &self.resources {
            for (name, value) in [
                ("cpu", &resources.cpu),
                ("memory", &resources.memory),
                ("ephemeral-storage", &resources.ephemeral_storage),
            ] {
                check_quantity(
                    &format!("gcsfuse.resources.{name}"),
                    value.as_deref().unwrap_or_default(),
                )?;
            }
        }
        Ok(())
    }

    /// The CSI driver's volume attributes: the bucket, and each option that is set.
    fn volume_attributes(&self) -> BTreeMap<String, String> {
        let mut attributes = BTreeMap::from([("bucketName".to_string(), self.bucket_name.clone())]);
        if let Some(options) = self.mount_options.as_ref().filter(|o| !o.is_empty()) {
            attributes.insert("mountOptions".into(), options.clone());
        }
        for (key, value) in [
            ("disableMetrics", self.disable_metrics),
            (
                "gcsfuseMetadataPrefetchOnMount",
                self.gcsfuse_metadata_prefetch_on_mount,
            ),
            ("skipCSIBucketAccessCheck", self.skip_csi_bucket_access_check),
        ] {
            if let Some(value) = value {
                attributes.insert(key.into(), value.to_string());
            }
        }
        attributes
    }

    /// The sidecar's resources as pod annotations (the values as written).
    fn annotations(&self) -> BTreeMap<String, String> {
        let Some(resources) = &self.resources else {
            return BTreeMap::new();
        };
        let set = |value: &Option<String>| value.clone().filter(|v| !v.is_empty());
        let mut annotations = BTreeMap::new();
        if let Some(cpu) = set(&resources.cpu) {
            annotations.insert(SIDECAR_CPU_REQUEST.to_string(), cpu);
        }
        if let Some(memory) = set(&resources.memory) {
            annotations.insert(SIDECAR_MEMORY_LIMIT.to_string(), memory.clone());
            annotations.insert(SIDECAR_MEMORY_REQUEST.to_string(), memory);
        }
        if let Some(storage) = set(&resources.ephemeral_storage) {
            annotations.insert(SIDECAR_EPHEMERAL_STORAGE_LIMIT.to_string(), storage.clone());
            annotations.insert(SIDECAR_EPHEMERAL_STORAGE_REQUEST.to_string(), storage);
        }
        annotations
    }

    /// Adds the volume, its mount in the first container and the sidecar annotations to a pod template.
    pub fn mount_into(&self, template: &mut PodTemplateSpec) {
        let annotations = self.annotations();
        if !annotations.is_empty() {
            template
                .metadata
                .get_or_insert_with(ObjectMeta::default)
                .annotations
                .get_or_insert_with(BTreeMap::new)
                .extend(annotations);
        }
        let spec = template.spec.get_or_insert_with(Default::default);
        spec.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: GCSFUSE_VOLUME_NAME.to_string(),
            csi: Some(CSIVolumeSource {
                driver: GCSFUSE_CSI_DRIVER.to_string(),
                volume_attributes: Some(self.volume_attributes()),
                ..Default::default()
            }),
            ..Default::default()
        });
        if let Some(container) = spec.containers.first_mut() {
            container.volume_mounts.get_or_insert_with(Vec::new).push(VolumeMount {
                name: GCSFUSE_VOLUME_NAME.to_string(),
                mount_path: self.mount_path.clone(),
                ..Default::default()
            });
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn full() -> GcsFuse {
        GcsFuse {
            bucket_name: "my-bucket".into(),
            mount_path: "/mnt/cluster_storage".into(),
            mount_options: Some("implicit-dirs,uid=1000,gid=100".into()),
            disable_metrics: Some(true),
            gcsfuse_metadata_prefetch_on_mount: Some(false),
            skip_csi_bucket_access_check: None,
            resources: Some(SidecarResources {
                cpu: Some("250m".into()),
                memory: Some("256Mi".into()),
                ephemeral_storage: None,
            }),
        }
    }

    #[test]
    fn bucket_and_mount_path_are_required_and_sidecar_quantities_checked() {
        let message = |g: &GcsFuse| g.validate().err().map(|e| e.to_string());
        assert_eq!(message(&full()), None);
        let mut g = full();
        g.bucket_name.clear();
        assert_eq!(message(&g).as_deref(), Some(".gcsfuse.bucket-name is required"));
        let mut g = full();
        g.mount_path.clear();
        assert_eq!(message(&g).as_deref(), Some(".gcsfuse.mount-path is required"));
        let mut g = full();
        g.resources.as_mut().unwrap().memory = Some("-1Gi".into());
        assert_eq!(
            message(&g).as_deref(),
            Some("gcsfuse.resources.memory cannot be negative")
        );
    }

    #[test]
    fn the_template_gets_the_csi_volume_the_mount_and_the_sidecar_annotations() {
        let mut template = PodTemplateSpec {
            spec: Some(k8s_openapi::api::core::v1::PodSpec {
                containers: vec![Default::default()],
                ..Default::default()
            }),
            ..Default::default()
        };
        full().mount_into(&mut template);
        let value = serde_json::to_value(&template).unwrap();
        assert_eq!(
            value["spec"]["volumes"],
            serde_json::json!([{"name": "cluster-storage", "csi": {
                "driver": "gcsfuse.csi.storage.gke.io",
                "volumeAttributes": {
                    "bucketName": "my-bucket",
                    "mountOptions": "implicit-dirs,uid=1000,gid=100",
                    "disableMetrics": "true",
                    "gcsfuseMetadataPrefetchOnMount": "false"
                }
            }}])
        );
        assert_eq!(
            value["spec"]["containers"][0]["volumeMounts"],
            serde_json::json!([{"name": "cluster-storage", "mountPath": "/mnt/cluster_storage"}])
        );
        assert_eq!(
            value["metadata"]["annotations"],
            serde_json::json!({
                "gke-gcsfuse/cpu-request": "250m",
                "gke-gcsfuse/memory-limit": "256Mi",
                "gke-gcsfuse/memory-request": "256Mi"
            })
        );
    }
}
