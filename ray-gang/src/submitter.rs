//! Resources of a RayJob's submitter, which Volcano adds to the gang's `minResources` and
//! YuniKorn lists as the `submittergroup` task group.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use ray_api::constants::SUBMITTER_CONTAINER_NAME;
use ray_api::quantity::{QuantityError, ResourceTotals, pod_resources};
use ray_api::{JobSubmissionMode, RayJobSpec};

use crate::constants::{
    DEFAULT_SUBMITTER_CPU_LIMIT, DEFAULT_SUBMITTER_CPU_REQUEST, DEFAULT_SUBMITTER_MEMORY_LIMIT,
    DEFAULT_SUBMITTER_MEMORY_REQUEST,
};

/// `cpu` / `memory` resource list from two quantity strings.
fn cpu_memory(cpu: &str, memory: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpu.to_owned())),
        ("memory".to_owned(), Quantity(memory.to_owned())),
    ])
}

/// The default submitter container's resources: requests cpu `500m` / memory `200Mi`,
/// limits cpu `1` / memory `1Gi`.
pub fn default_submitter_resources() -> ResourceRequirements {
    ResourceRequirements {
        requests: Some(cpu_memory(
            DEFAULT_SUBMITTER_CPU_REQUEST,
            DEFAULT_SUBMITTER_MEMORY_REQUEST,
        )),
        limits: Some(cpu_memory(DEFAULT_SUBMITTER_CPU_LIMIT, DEFAULT_SUBMITTER_MEMORY_LIMIT)),
        ..Default::default()
    }
}

/// A pod template holding only the default submitter container's name and resources (what the
/// gang computations look at).
pub fn default_submitter_template() -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: SUBMITTER_CONTAINER_NAME.to_owned(),
                resources: Some(default_submitter_resources()),
                ..Default::default()
            }],
            ..Default::default()
        }),
    }
}

/// The submitter pod template the gang code uses: `submitterPodTemplate` if set, else the default.
pub fn submitter_template(spec: &RayJobSpec) -> PodTemplateSpec {
    spec.submitter_pod_template
        .clone()
        .unwrap_or_else(default_submitter_template)
}

/// Resources of one submitter pod: the per-pod rule (requests, plus limits without a request) on
/// [`submitter_template`].
pub fn submitter_pod_resources(spec: &RayJobSpec) -> Result<ResourceTotals, QuantityError> {
    pod_resources(submitter_template(spec).spec.as_ref().unwrap_or(&PodSpec::default()))
}

/// What Volcano adds to a RayJob gang's `minResources` for the submitter, by submission mode:
/// `K8sJobMode` → the submitter pod; `SidecarMode` → the default container's requests (limits fill
/// missing names); HTTP, Interactive, unset (Go's empty string) or unknown → nothing.
///
/// Callers that want the CRD default (`K8sJobMode`) for an unset mode must apply it first.
pub fn volcano_submitter_resources(spec: &RayJobSpec) -> Result<ResourceTotals, QuantityError> {
    match &spec.submission_mode {
        Some(JobSubmissionMode::K8sJobMode) => submitter_pod_resources(spec),
        Some(JobSubmissionMode::SidecarMode) => pod_resources(
            default_submitter_template()
                .spec
                .as_ref()
                .unwrap_or(&PodSpec::default()),
        ),
        _ => Ok(ResourceTotals::new()),
    }
}
