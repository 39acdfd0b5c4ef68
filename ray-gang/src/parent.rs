//! The objects the hooks read from ([`Parent`]) and write to ([`Child`]), plus the log lines the
//! pure hooks hand back instead of logging themselves ([`GangLog`]).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, OwnerReference};
use kube::Resource;
use ray_api::constants::{CRD_KIND_RAY_JOB, RAY_ORIGINATED_FROM_CRD_LABEL};
use ray_api::{RayCluster, RayJob};

/// The custom resource a scheduler object or child metadata is derived from.
#[derive(Clone, Copy, Debug)]
pub enum Parent<'a> {
    /// A RayCluster (standalone, or created by a RayJob / RayService).
    Cluster(&'a RayCluster),
    /// A RayJob.
    Job(&'a RayJob),
}

impl<'a> Parent<'a> {
    /// The parent's metadata.
    pub fn meta(&self) -> &'a ObjectMeta {
        match self {
            Parent::Cluster(cluster) => &cluster.metadata,
            Parent::Job(job) => &job.metadata,
        }
    }

    /// The value of a label, if the key is present (possibly empty).
    pub fn label(&self, key: &str) -> Option<&'a str> {
        self.meta().labels.as_ref()?.get(key).map(String::as_str)
    }

    /// The value of a label if it is present and non-empty.
    pub fn non_empty_label(&self, key: &str) -> Option<&'a str> {
        self.label(key).filter(|v| !v.is_empty())
    }

    /// The value of an annotation, if present.
    pub fn annotation(&self, key: &str) -> Option<&'a str> {
        self.meta().annotations.as_ref()?.get(key).map(String::as_str)
    }

    /// `metadata.name` (empty when unset).
    pub fn name(&self) -> &'a str {
        self.meta().name.as_deref().unwrap_or_default()
    }

    /// `metadata.namespace` (empty when unset).
    pub fn namespace(&self) -> &'a str {
        self.meta().namespace.as_deref().unwrap_or_default()
    }

    /// `ray.io/v1`.
    pub fn api_version(&self) -> String {
        RayCluster::api_version(&()).into_owned()
    }

    /// `RayCluster` or `RayJob`.
    pub fn kind(&self) -> String {
        match self {
            Parent::Cluster(_) => RayCluster::kind(&()).into_owned(),
            Parent::Job(_) => RayJob::kind(&()).into_owned(),
        }
    }

    /// Whether this is a RayCluster created by a RayJob (label `ray.io/originated-from-crd=RayJob`).
    pub fn is_cluster_of_job(&self) -> bool {
        matches!(self, Parent::Cluster(_)) && self.label(RAY_ORIGINATED_FROM_CRD_LABEL) == Some(CRD_KIND_RAY_JOB)
    }

    /// An owner reference to this parent; `controller` also sets `blockOwnerDeletion`.
    /// A missing uid becomes empty (offline rendering).
    pub fn owner_reference(&self, controller: bool) -> OwnerReference {
        OwnerReference {
            api_version: self.api_version(),
            kind: self.kind(),
            name: self.name().to_owned(),
            uid: self.meta().uid.clone().unwrap_or_default(),
            controller: controller.then_some(true),
            block_owner_deletion: controller.then_some(true),
        }
    }
}

/// An object receiving scheduler labels, annotations and `schedulerName`.
#[derive(Debug)]
pub enum Child<'a> {
    /// A head or worker pod.
    Pod(&'a mut Pod),
    /// A pod template (the RayJob submitter Job's template).
    PodTemplate(&'a mut PodTemplateSpec),
    /// A RayJob's RayCluster; `schedulerName` is never set on it.
    Cluster(&'a mut RayCluster),
}

impl Child<'_> {
    /// The child's metadata, created if absent.
    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Child::Pod(pod) => &mut pod.metadata,
            Child::PodTemplate(template) => template.metadata.get_or_insert_with(ObjectMeta::default),
            Child::Cluster(cluster) => &mut cluster.metadata,
        }
    }

    /// The child's labels (a map is created if absent).
    pub fn labels_mut(&mut self) -> &mut BTreeMap<String, String> {
        self.meta_mut().labels.get_or_insert_with(BTreeMap::new)
    }

    /// The child's annotations (a map is created if absent).
    pub fn annotations_mut(&mut self) -> &mut BTreeMap<String, String> {
        self.meta_mut().annotations.get_or_insert_with(BTreeMap::new)
    }

    /// Sets a label.
    pub fn set_label(&mut self, key: &str, value: &str) {
        self.labels_mut().insert(key.to_owned(), value.to_owned());
    }

    /// Sets an annotation.
    pub fn set_annotation(&mut self, key: &str, value: &str) {
        self.annotations_mut().insert(key.to_owned(), value.to_owned());
    }

    /// Sets `spec.schedulerName` on a Pod or PodTemplateSpec; a RayCluster is left alone.
    pub fn set_scheduler_name(&mut self, name: &str) {
        let spec: &mut PodSpec = match self {
            Child::Pod(pod) => pod.spec.get_or_insert_with(PodSpec::default),
            Child::PodTemplate(template) => template.spec.get_or_insert_with(PodSpec::default),
            Child::Cluster(_) => return,
        };
        spec.scheduler_name = Some(name.to_owned());
    }
}

/// Severity of a [`GangLog`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GangLogLevel {
    /// Informational (e.g. a KAI parent without a queue label).
    Info,
    /// A failure KubeRay only logs (e.g. YuniKorn task groups that could not be computed).
    Error,
}

/// A log line a hook would have written; the caller decides how to log it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GangLog {
    /// Severity.
    pub level: GangLogLevel,
    /// Message text.
    pub message: String,
}
