//! The checks of KubeRay's validating admission webhooks (`ENABLE_WEBHOOKS=true`, KubeRay
//! `pkg/webhooks/v1/*_webhook.go`; docs/validation.md#webhooks), as pure functions returning the rejection
//! the webhook answers with.
//!
//! Unlike the controllers' validation (first failure wins), a webhook collects every failing check
//! into one `apierrors.NewInvalid` error: `RayCluster.ray.io "<name>" is invalid: <field errors>`,
//! HTTP 422, reason `Invalid`.
//!
//! - RayCluster: metadata (the name rule) and unique worker group names.
//! - RayJob, RayService: metadata only.

use std::collections::BTreeSet;
use std::fmt;

use super::k8s::go_quote;
use super::{validate_ray_cluster_metadata, validate_ray_job_metadata, validate_ray_service_metadata};
use crate::constants::{
    CRD_KIND_RAY_CLUSTER, CRD_KIND_RAY_JOB, CRD_KIND_RAY_SERVICE, RAY_API_GROUP, WORKER_GROUP_NAMES_MUST_BE_UNIQUE,
};
use crate::{RayCluster, RayJob, RayService};

/// Kubernetes' `StatusCause.reason` of an invalid field value (`field.ErrorTypeInvalid`).
pub const FIELD_VALUE_INVALID: &str = "FieldValueInvalid";

/// One `field.Invalid` error: the offending field, its value as shown to the user and why it is
/// rejected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InvalidField {
    /// Path of the field, e.g. `metadata.name`, `spec.workerGroupSpecs[1]`.
    pub field: String,
    /// The value as printed in the message (a string value is Go-quoted: `"my-name"`).
    pub value: String,
    /// Why the value is invalid.
    pub detail: String,
}

impl InvalidField {
    /// The error without its field (`field.Error.ErrorBody`): `Invalid value: <value>: <detail>`;
    /// the `message` of the Status cause.
    pub fn body(&self) -> String {
        format!("Invalid value: {}: {}", self.value, self.detail)
    }
}

impl fmt::Display for InvalidField {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.field, self.body())
    }
}

/// A webhook's rejection of an object (`apierrors.NewInvalid(GroupKind{ray.io, <kind>}, name, errs)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRejection {
    /// The rejected object's kind (`RayCluster`).
    pub kind: &'static str,
    /// The rejected object's name.
    pub name: String,
    /// Every failed check, in the webhook's order (never empty).
    pub causes: Vec<InvalidField>,
}

impl WebhookRejection {
    /// The group of the rejected kind (`ray.io`).
    pub fn group(&self) -> &'static str {
        RAY_API_GROUP
    }

    /// The Status message: `RayCluster.ray.io "<name>" is invalid: <error>` for one error,
    /// `... is invalid: [<error>, <error>]` for several (apimachinery's aggregate formatting).
    pub fn message(&self) -> String {
        let errors: Vec<String> = self.causes.iter().map(ToString::to_string).collect();
        let joined = match errors.as_slice() {
            [one] => one.clone(),
            many => format!("[{}]", many.join(", ")),
        };
        format!(
            "{}.{} {} is invalid: {joined}",
            self.kind,
            RAY_API_GROUP,
            go_quote(&self.name)
        )
    }
}

impl fmt::Display for WebhookRejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message())
    }
}

impl std::error::Error for WebhookRejection {}

/// Turns the collected field errors into the webhook's answer.
fn verdict(kind: &'static str, name: &str, causes: Vec<InvalidField>) -> Result<(), WebhookRejection> {
    if causes.is_empty() {
        return Ok(());
    }
    Err(WebhookRejection {
        kind,
        name: name.to_owned(),
        causes,
    })
}

/// A metadata failure as KubeRay's webhooks report it: always at `metadata.name` with the name as the
/// value (even for the RayService annotation rule), the controller validation's message as detail.
fn metadata_error(name: &str, message: String) -> InvalidField {
    InvalidField {
        field: "metadata.name".to_owned(),
        value: go_quote(name),
        detail: message,
    }
}

/// The RayCluster webhook (on create and update; the new object): the metadata (name) rule, then the first
/// worker group whose name repeats an earlier group's.
///
/// Deliberate difference: KubeRay prints the whole `WorkerGroupSpec` Go struct as the value; this prints
/// `{"groupName":"<name>"}`.
pub fn webhook_validate_ray_cluster(cluster: &RayCluster) -> Result<(), WebhookRejection> {
    let name = cluster.metadata.name.as_deref().unwrap_or_default();
    let mut causes = Vec::new();
    if let Err(e) = validate_ray_cluster_metadata(&cluster.metadata) {
        causes.push(metadata_error(name, e.message));
    }
    let mut seen = BTreeSet::new();
    let groups = cluster.spec.worker_group_specs.as_deref().unwrap_or_default();
    if let Some((index, group)) = groups
        .iter()
        .enumerate()
        .find(|(_, group)| !seen.insert(group.group_name.as_str()))
    {
        causes.push(InvalidField {
            field: format!("spec.workerGroupSpecs[{index}]"),
            value: format!("{{\"groupName\":{}}}", go_quote(&group.group_name)),
            detail: WORKER_GROUP_NAMES_MUST_BE_UNIQUE.to_owned(),
        });
    }
    verdict(CRD_KIND_RAY_CLUSTER, name, causes)
}

/// The RayJob webhook (on create and update): metadata only (name length ≤ 47, DNS-1035).
pub fn webhook_validate_ray_job(job: &RayJob) -> Result<(), WebhookRejection> {
    let name = job.metadata.name.as_deref().unwrap_or_default();
    let causes = validate_ray_job_metadata(&job.metadata)
        .err()
        .map(|e| metadata_error(name, e.message))
        .into_iter()
        .collect();
    verdict(CRD_KIND_RAY_JOB, name, causes)
}

/// The RayService webhook (on create and update): metadata only (name, `ray.io/initializing-timeout`).
pub fn webhook_validate_ray_service(service: &RayService) -> Result<(), WebhookRejection> {
    let name = service.metadata.name.as_deref().unwrap_or_default();
    let causes = validate_ray_service_metadata(&service.metadata)
        .err()
        .map(|e| metadata_error(name, e.message))
        .into_iter()
        .collect();
    verdict(CRD_KIND_RAY_SERVICE, name, causes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{RayClusterSpec, WorkerGroupSpec};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

    fn meta(name: &str) -> ObjectMeta {
        ObjectMeta {
            name: Some(name.to_owned()),
            ..ObjectMeta::default()
        }
    }

    fn cluster(name: &str, groups: &[&str]) -> RayCluster {
        let spec = RayClusterSpec {
            worker_group_specs: Some(
                groups
                    .iter()
                    .map(|g| WorkerGroupSpec {
                        group_name: (*g).to_owned(),
                        ..WorkerGroupSpec::default()
                    })
                    .collect(),
            ),
            ..RayClusterSpec::default()
        };
        RayCluster::new(name, spec)
    }

    #[test]
    fn p65_valid_cluster_is_allowed() {
        assert_eq!(
            webhook_validate_ray_cluster(&cluster("raycluster-sample", &["small", "large"])),
            Ok(())
        );
    }

    #[test]
    fn p65_duplicate_worker_group_names_are_rejected_at_the_second_occurrence() {
        let err = webhook_validate_ray_cluster(&cluster("raycluster-dup", &["a", "b", "a", "b"])).unwrap_err();
        assert_eq!(err.causes.len(), 1, "only the first repeat is reported");
        assert_eq!(err.causes[0].field, "spec.workerGroupSpecs[2]");
        assert_eq!(
            err.message(),
            r#"RayCluster.ray.io "raycluster-dup" is invalid: spec.workerGroupSpecs[2]: Invalid value: {"groupName":"a"}: worker group names must be unique"#
        );
    }

    #[test]
    fn p61_long_name_is_rejected_at_metadata_name() {
        let name = "a".repeat(54);
        let err = webhook_validate_ray_cluster(&cluster(&name, &["small"])).unwrap_err();
        assert_eq!(
            err.message(),
            format!(
                r#"RayCluster.ray.io "{name}" is invalid: metadata.name: Invalid value: "{name}": RayCluster name should be no more than 53 characters"#
            )
        );
        assert_eq!(
            err.causes[0].body(),
            format!(r#"Invalid value: "{name}": RayCluster name should be no more than 53 characters"#)
        );
    }

    #[test]
    fn p61_p65_several_errors_are_joined_in_brackets() {
        let err = webhook_validate_ray_cluster(&cluster("1111", &["x", "x"])).unwrap_err();
        let message = err.message();
        assert!(
            message.starts_with(r#"RayCluster.ray.io "1111" is invalid: [metadata.name: Invalid value: "1111": RayCluster name should be a valid DNS1035 label: [a DNS-1035 label"#),
            "{message}"
        );
        assert!(
            message.ends_with(
                r#"')], spec.workerGroupSpecs[1]: Invalid value: {"groupName":"x"}: worker group names must be unique]"#
            ),
            "{message}"
        );
    }

    #[test]
    fn rayjob_webhook_checks_the_name_only() {
        let mut job = RayJob::new(&"j".repeat(48), Default::default());
        let err = webhook_validate_ray_job(&job).unwrap_err();
        assert_eq!(
            err.message(),
            format!(
                r#"RayJob.ray.io "{0}" is invalid: metadata.name: Invalid value: "{0}": The RayJob metadata is invalid: RayJob name should be no more than 47 characters"#,
                "j".repeat(48)
            )
        );
        job.metadata = meta("rayjob-sample");
        assert_eq!(webhook_validate_ray_job(&job), Ok(()));
    }

    #[test]
    fn rayservice_webhook_reports_the_annotation_rule_at_metadata_name() {
        let mut service = RayService::new("rayservice-sample", Default::default());
        assert_eq!(webhook_validate_ray_service(&service), Ok(()));
        service.metadata.annotations = Some(
            [(
                crate::constants::RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION.to_owned(),
                "-5".to_owned(),
            )]
            .into(),
        );
        let err = webhook_validate_ray_service(&service).unwrap_err();
        assert_eq!(err.kind, CRD_KIND_RAY_SERVICE);
        assert_eq!(err.causes[0].field, "metadata.name");
        assert!(
            err.message().starts_with(
                r#"RayService.ray.io "rayservice-sample" is invalid: metadata.name: Invalid value: "rayservice-sample": The RayService metadata is invalid: RayService annotations is invalid: "#
            ),
            "{}",
            err.message()
        );
    }
}
