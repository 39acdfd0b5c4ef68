//! RayJob validation: metadata, spec and status checks in KubeRay's order (docs/validation.md#rayjob).

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::raycluster::{autoscaling_enabled, cluster_spec, k8s_auth_enabled};
use super::{ValidationError, ValidationOptions, ValidationResult, map_value, validate_name};
use crate::constants::{CRD_KIND_RAY_JOB, MAX_RAY_JOB_NAME_LENGTH, RAY_CLUSTER_LABEL};
use crate::rayjob::{DeletionPolicyType, JobDeploymentStatus, JobSubmissionMode, RayJob};

const SPEC_INVALID: &str = "The RayJob spec is invalid: ";

/// Runs the RayJob controller's validation in its order: metadata, spec, status.
pub fn validate_ray_job(job: &RayJob, options: &ValidationOptions) -> ValidationResult {
    validate_ray_job_metadata(&job.metadata)?;
    validate_ray_job_spec(job, options)?;
    validate_ray_job_status(job)
}

/// `ValidateRayJobMetadata`: name length ≤ 47, then DNS-1035.
pub fn validate_ray_job_metadata(metadata: &ObjectMeta) -> ValidationResult {
    validate_name(
        metadata.name.as_deref().unwrap_or_default(),
        MAX_RAY_JOB_NAME_LENGTH,
        CRD_KIND_RAY_JOB,
        "The RayJob metadata is invalid: ",
    )
}

/// `ValidateRayJobStatus`: `Waiting` only in `InteractiveMode`.
pub fn validate_ray_job_status(job: &RayJob) -> ValidationResult {
    let waiting =
        job.status.as_ref().and_then(|s| s.job_deployment_status.as_ref()) == Some(&JobDeploymentStatus::Waiting);
    if waiting && job.spec.submission_mode() != JobSubmissionMode::InteractiveMode {
        return Err(ValidationError::new(
            "status.jobDeploymentStatus",
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not InteractiveMode",
        ));
    }
    Ok(())
}

/// `ValidateRayJobSpec` (checks in KubeRay's order; first failure returned).
pub fn validate_ray_job_spec(job: &RayJob, options: &ValidationOptions) -> ValidationResult {
    let spec = &job.spec;
    let shutdown = spec.shutdown_after_job_finishes();
    let suspend = spec.suspend();
    let mode = spec.submission_mode();
    if suspend && !shutdown {
        return Err(ValidationError::new(
            "spec.suspend",
            format!("{SPEC_INVALID}a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended"),
        ));
    }
    let ttl = spec.ttl_seconds_after_finished.unwrap_or(0);
    if ttl < 0 {
        return Err(ValidationError::new(
            "spec.ttlSecondsAfterFinished",
            format!("{SPEC_INVALID}TTLSecondsAfterFinished must be a non-negative integer"),
        ));
    }
    deletion_configuration(job, options)?;

    let selector_mode = spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty());
    if suspend && selector_mode {
        return Err(ValidationError::new(
            "spec.suspend",
            format!("{SPEC_INVALID}the ClusterSelector mode doesn't support the suspend operation"),
        ));
    }
    if spec.ray_cluster_spec.is_none() && !selector_mode {
        return Err(ValidationError::new(
            "spec.rayClusterSpec",
            format!("{SPEC_INVALID}one of RayClusterSpec or ClusterSelector must be set"),
        ));
    }
    let backoff = spec.backoff_limit;
    if selector_mode {
        if map_value(spec.cluster_selector.as_ref(), RAY_CLUSTER_LABEL).is_empty() {
            return Err(ValidationError::new(
                format!("spec.clusterSelector[{RAY_CLUSTER_LABEL}]"),
                "cluster name in ClusterSelector should not be empty",
            ));
        }
        if mode == JobSubmissionMode::SidecarMode {
            return Err(ValidationError::new(
                "spec.submissionMode",
                "ClusterSelector is not supported in SidecarMode",
            ));
        }
        if backoff.is_some_and(|b| b > 0) {
            return Err(ValidationError::new(
                "spec.backoffLimit",
                format!("{SPEC_INVALID}BackoffLimit is incompatible with ClusterSelector mode"),
            ));
        }
    }
    if mode == JobSubmissionMode::InteractiveMode && backoff.is_some_and(|b| b > 0) {
        return Err(ValidationError::new(
            "spec.backoffLimit",
            format!("{SPEC_INVALID}BackoffLimit is incompatible with InteractiveMode"),
        ));
    }
    if mode == JobSubmissionMode::SidecarMode {
        if spec.submitter_pod_template.is_some() {
            return Err(ValidationError::new(
                "spec.submitterPodTemplate",
                "Currently, SidecarMode doesn't support SubmitterPodTemplate",
            ));
        }
        if spec.submitter_config.is_some() {
            return Err(ValidationError::new(
                "spec.submitterConfig",
                "Currently, SidecarMode doesn't support SubmitterConfig",
            ));
        }
        let policy = spec
            .ray_cluster_spec
            .as_ref()
            .and_then(|c| c.head_group_spec.template.spec.as_ref())
            .and_then(|s| s.restart_policy.as_deref())
            .unwrap_or_default();
        if !policy.is_empty() && policy != "Never" {
            return Err(ValidationError::new(
                "spec.rayClusterSpec.headGroupSpec.template.spec.restartPolicy",
                "restartPolicy for head Pod should be Never or unset when using SidecarMode",
            ));
        }
    }
    if let Some(cluster) = spec.ray_cluster_spec.as_ref() {
        if k8s_auth_enabled(cluster) {
            return Err(ValidationError::new(
                "spec.rayClusterSpec.authOptions.enableK8sTokenAuth",
                format!("{SPEC_INVALID}K8s token auth mode is currently not supported for RayJob"),
            ));
        }
        cluster_spec(
            cluster,
            job.metadata.annotations.as_ref(),
            options,
            "spec.rayClusterSpec",
        )
        .map_err(|e| e.wrap(SPEC_INVALID))?;
    }
    runtime_env_yaml(spec.runtime_env_yaml.as_deref().unwrap_or_default())?;
    if spec.active_deadline_seconds.is_some_and(|v| v <= 0) {
        return Err(ValidationError::new(
            "spec.activeDeadlineSeconds",
            format!("{SPEC_INVALID}activeDeadlineSeconds must be a positive integer"),
        ));
    }
    if spec.pre_running_deadline_seconds.is_some_and(|v| v <= 0) {
        return Err(ValidationError::new(
            "spec.preRunningDeadlineSeconds",
            format!("{SPEC_INVALID}preRunningDeadlineSeconds must be a positive integer"),
        ));
    }
    if backoff.is_some_and(|b| b < 0) {
        return Err(ValidationError::new(
            "spec.backoffLimit",
            format!("{SPEC_INVALID}backoffLimit must be a positive integer"),
        ));
    }
    Ok(())
}

/// `UnmarshalRuntimeEnvYAML`: the string must be empty, `null` or a YAML mapping.
///
/// The text after `<yaml>: ` is our YAML reader's error (or, for a non-mapping document, the
/// message Go's `sigs.k8s.io/yaml` gives); Go's parser words syntax errors differently.
fn runtime_env_yaml(text: &str) -> ValidationResult {
    if text.trim().is_empty() {
        return Ok(());
    }
    let err = |detail: String| {
        Err(ValidationError::new(
            "spec.runtimeEnvYAML",
            format!("failed to unmarshal RuntimeEnvYAML: {text}: {detail}"),
        ))
    };
    match crate::yaml::from_yaml_str::<serde_json::Value>(text) {
        Ok(serde_json::Value::Null | serde_json::Value::Object(_)) => Ok(()),
        Ok(other) => {
            let kind = match other {
                serde_json::Value::Bool(_) => "bool",
                serde_json::Value::Number(_) => "number",
                serde_json::Value::String(_) => "string",
                _ => "array",
            };
            err(format!(
                "error unmarshaling JSON: while decoding JSON: json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
            ))
        }
        Err(e) => err(e.to_string()),
    }
}

/// `validateDeletionConfiguration`.
fn deletion_configuration(job: &RayJob, options: &ValidationOptions) -> ValidationResult {
    let spec = &job.spec;
    let shutdown = spec.shutdown_after_job_finishes();
    if !shutdown && spec.ttl_seconds_after_finished.unwrap_or(0) > 0 {
        return Err(ValidationError::new(
            "spec.ttlSecondsAfterFinished",
            format!(
                "{SPEC_INVALID}a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished"
            ),
        ));
    }
    let Some(strategy) = spec.deletion_strategy.as_ref() else {
        return Ok(());
    };
    let path = "spec.deletionStrategy";
    if !options.ray_job_deletion_policy {
        return Err(ValidationError::new(
            path,
            "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy",
        ));
    }
    let legacy = strategy.on_success.is_some() || strategy.on_failure.is_some();
    let rules = strategy.deletion_rules.as_deref().unwrap_or_default();
    if !rules.is_empty() && shutdown {
        return Err(ValidationError::new(
            format!("{path}.deletionRules"),
            format!(
                "{SPEC_INVALID}spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive"
            ),
        ));
    }
    if !rules.is_empty() && legacy {
        return Err(ValidationError::new(
            format!("{path}.deletionRules"),
            format!("{SPEC_INVALID}Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously"),
        ));
    }
    if legacy {
        legacy_policies(job)
    } else if !rules.is_empty() {
        deletion_rules(job)
    } else {
        Err(ValidationError::new(
            path,
            format!(
                "{SPEC_INVALID}DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)"
            ),
        ))
    }
}

/// `validateLegacyDeletionPolicies`.
fn legacy_policies(job: &RayJob) -> ValidationResult {
    let spec = &job.spec;
    let path = "spec.deletionStrategy";
    let strategy = spec.deletion_strategy.as_ref();
    let (Some(on_success), Some(on_failure)) = (
        strategy.and_then(|s| s.on_success.as_ref()),
        strategy.and_then(|s| s.on_failure.as_ref()),
    ) else {
        let missing = if strategy.and_then(|s| s.on_success.as_ref()).is_none() {
            "onSuccess"
        } else {
            "onFailure"
        };
        return Err(ValidationError::new(
            format!("{path}.{missing}"),
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy deletion policy fields of DeletionStrategy",
        ));
    };
    let Some(success) = on_success.policy else {
        return Err(ValidationError::new(
            format!("{path}.onSuccess.policy"),
            "the DeletionPolicyType field of DeletionStrategy.OnSuccess cannot be unset when DeletionStrategy is enabled",
        ));
    };
    let Some(failure) = on_failure.policy else {
        return Err(ValidationError::new(
            format!("{path}.onFailure.policy"),
            "the DeletionPolicyType field of DeletionStrategy.OnFailure cannot be unset when DeletionStrategy is enabled",
        ));
    };
    let selector_mode = spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty());
    let deletes_cluster =
        |p: DeletionPolicyType| matches!(p, DeletionPolicyType::DeleteCluster | DeletionPolicyType::DeleteWorkers);
    if selector_mode {
        if deletes_cluster(success) {
            return Err(ValidationError::new(
                format!("{path}.onSuccess.policy"),
                format!("the ClusterSelector mode doesn't support DeletionStrategy={success} on success"),
            ));
        }
        if deletes_cluster(failure) {
            return Err(ValidationError::new(
                format!("{path}.onFailure.policy"),
                format!("the ClusterSelector mode doesn't support DeletionStrategy={failure} on failure"),
            ));
        }
    }
    let workers = DeletionPolicyType::DeleteWorkers;
    if (success == workers || failure == workers) && autoscaling_enabled(spec.ray_cluster_spec.as_ref()) {
        let which = if success == workers { "onSuccess" } else { "onFailure" };
        return Err(ValidationError::new(
            format!("{path}.{which}.policy"),
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled",
        ));
    }
    let none = DeletionPolicyType::DeleteNone;
    if spec.shutdown_after_job_finishes() && (success == none || failure == none) {
        let which = if success == none { "onSuccess" } else { "onFailure" };
        return Err(ValidationError::new(
            format!("{path}.{which}.policy"),
            format!("{SPEC_INVALID}shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'"),
        ));
    }
    Ok(())
}

/// `validateDeletionRules`: every problem is collected and the messages joined with `\n`
/// (Go's `errors.Join`). The TTL-ordering pass walks conditions in sorted order (KubeRay walks a
/// Go map). The field is the first offending rule.
fn deletion_rules(job: &RayJob) -> ValidationResult {
    let spec = &job.spec;
    let rules = spec
        .deletion_strategy
        .as_ref()
        .and_then(|s| s.deletion_rules.as_deref())
        .unwrap_or_default();
    let selector_mode = spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty());
    let autoscaling = autoscaling_enabled(spec.ray_cluster_spec.as_ref());
    // (condition kind, condition value) -> policy -> ttl
    let mut by_condition: BTreeMap<(&str, String), BTreeMap<DeletionPolicyType, i32>> = BTreeMap::new();
    let mut errs: Vec<String> = Vec::new();
    let mut first_index: Option<usize> = None;
    let mut fail = |i: usize, msg: String, errs: &mut Vec<String>| {
        first_index.get_or_insert(i);
        errs.push(msg);
    };
    for (i, rule) in rules.iter().enumerate() {
        let cond = &rule.condition;
        let ttl = cond.ttl_seconds.unwrap_or(0);
        let key = match (&cond.job_status, &cond.job_deployment_status) {
            (Some(_), Some(_)) => {
                fail(
                    i,
                    format!("deletionRules[{i}]: cannot set both JobStatus and JobDeploymentStatus at the same time"),
                    &mut errs,
                );
                continue;
            }
            (None, None) => {
                fail(
                    i,
                    format!("deletionRules[{i}]: exactly one of JobStatus and JobDeploymentStatus must be set"),
                    &mut errs,
                );
                continue;
            }
            (Some(status), None) => ("JobStatus", status.as_str().to_owned()),
            (None, Some(status)) => ("JobDeploymentStatus", status.as_str().to_owned()),
        };
        if ttl < 0 {
            fail(
                i,
                format!("deletionRules[{i}]: TTLSeconds must be non-negative"),
                &mut errs,
            );
            continue;
        }
        let policy = rule.policy;
        if selector_mode
            && matches!(
                policy,
                DeletionPolicyType::DeleteCluster | DeletionPolicyType::DeleteWorkers
            )
        {
            fail(
                i,
                format!("deletionRules[{i}]: DeletionPolicyType '{policy}' not supported when ClusterSelector is set"),
                &mut errs,
            );
            continue;
        }
        if autoscaling && policy == DeletionPolicyType::DeleteWorkers {
            fail(
                i,
                format!(
                    "deletionRules[{i}]: DeletionPolicyType 'DeleteWorkers' not supported with autoscaling enabled"
                ),
                &mut errs,
            );
            continue;
        }
        let policies = by_condition.entry(key.clone()).or_default();
        if policies.contains_key(&policy) {
            fail(
                i,
                format!(
                    "deletionRules[{i}]: duplicate rule for DeletionPolicyType '{policy}' and {} '{}'",
                    key.0, key.1
                ),
                &mut errs,
            );
            continue;
        }
        policies.insert(policy, ttl);
    }
    let order = [
        DeletionPolicyType::DeleteWorkers,
        DeletionPolicyType::DeleteCluster,
        DeletionPolicyType::DeleteSelf,
    ];
    // Both maps of KubeRay: JobStatus conditions first, then JobDeploymentStatus.
    let mut keys: Vec<&(&str, String)> = by_condition.keys().collect();
    keys.sort_by_key(|(kind, value)| (*kind != "JobStatus", value.clone()));
    for key in keys {
        let Some(policies) = by_condition.get(key) else {
            continue;
        };
        let mut prev: Option<(DeletionPolicyType, i32)> = None;
        for policy in order {
            let Some(ttl) = policies.get(&policy).copied() else {
                continue;
            };
            if let Some((prev_policy, prev_ttl)) = prev
                && ttl < prev_ttl
            {
                errs.push(format!(
                    "for {} '{}': {policy} TTL ({ttl}) must be >= {prev_policy} TTL ({prev_ttl})",
                    key.0, key.1
                ));
            }
            prev = Some((policy, ttl));
        }
    }
    if errs.is_empty() {
        return Ok(());
    }
    let field = match first_index {
        Some(i) => format!("spec.deletionStrategy.deletionRules[{i}]"),
        None => "spec.deletionStrategy.deletionRules".to_owned(),
    };
    Err(ValidationError::new(field, errs.join("\n")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn job(spec: serde_json::Value) -> RayJob {
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayJob",
            "metadata": {"name": "rayjob-sample", "namespace": "default"},
            "spec": spec
        }))
        .unwrap()
    }

    fn cluster_spec_json(autoscaling: bool) -> serde_json::Value {
        json!({
            "enableInTreeAutoscaling": autoscaling,
            "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
            "workerGroupSpecs": [{"groupName": "small-group", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}]
        })
    }

    fn check(spec: serde_json::Value) -> ValidationResult {
        validate_ray_job_spec(&job(spec), &ValidationOptions::default())
    }

    fn message(spec: serde_json::Value) -> String {
        check(spec).unwrap_err().message
    }

    #[test]
    fn golden_g23_max_length_name_is_valid() {
        let meta = |n: usize| ObjectMeta {
            name: Some("j".repeat(n)),
            ..Default::default()
        };
        assert_eq!(validate_ray_job_metadata(&meta(47)), Ok(()));
        let e = validate_ray_job_metadata(&meta(48)).unwrap_err();
        assert_eq!(
            e.message,
            "The RayJob metadata is invalid: RayJob name should be no more than 47 characters"
        );
        assert_eq!(e.field, "metadata.name");
    }

    #[test]
    fn golden_g28_status_waiting_needs_interactive_mode() {
        let with = |mode: &str, status: &str| {
            let mut j = job(json!({"submissionMode": mode, "rayClusterSpec": cluster_spec_json(false)}));
            j.status = Some(serde_json::from_value(json!({"jobDeploymentStatus": status})).unwrap());
            validate_ray_job_status(&j)
        };
        let e = with("K8sJobMode", "Waiting").unwrap_err();
        assert_eq!(
            e.message,
            "The RayJob status is invalid: JobDeploymentStatus cannot be `Waiting` when SubmissionMode is not InteractiveMode"
        );
        assert_eq!(e.field, "status.jobDeploymentStatus");
        assert_eq!(with("InteractiveMode", "Waiting"), Ok(()));
        assert_eq!(with("HTTPMode", "Running"), Ok(()));
    }

    #[test]
    fn golden_g29_deletion_strategy() {
        let legacy = |s: &str, f: &str| json!({"onSuccess": {"policy": s}, "onFailure": {"policy": f}});
        let selector = json!({"ray.io/cluster": "existing"});
        // legacy DeleteCluster / DeleteWorkers + clusterSelector
        let e = check(json!({"clusterSelector": selector, "deletionStrategy": legacy("DeleteCluster", "DeleteNone")}))
            .unwrap_err();
        assert_eq!(
            e.message,
            "the ClusterSelector mode doesn't support DeletionStrategy=DeleteCluster on success"
        );
        assert_eq!(e.field, "spec.deletionStrategy.onSuccess.policy");
        assert_eq!(
            message(json!({"clusterSelector": selector, "deletionStrategy": legacy("DeleteNone", "DeleteWorkers")})),
            "the ClusterSelector mode doesn't support DeletionStrategy=DeleteWorkers on failure"
        );
        // legacy DeleteWorkers + autoscaling
        assert_eq!(
            message(
                json!({"rayClusterSpec": cluster_spec_json(true), "deletionStrategy": legacy("DeleteWorkers", "DeleteCluster")})
            ),
            "DeletionStrategy=DeleteWorkers currently does not support RayCluster with autoscaling enabled"
        );
        // legacy DeleteCluster both + shutdown true: ok
        assert_eq!(
            check(
                json!({"rayClusterSpec": cluster_spec_json(false), "shutdownAfterJobFinishes": true, "deletionStrategy": legacy("DeleteCluster", "DeleteCluster")})
            ),
            Ok(())
        );
        // legacy DeleteNone + shutdown true
        assert_eq!(
            message(
                json!({"rayClusterSpec": cluster_spec_json(false), "shutdownAfterJobFinishes": true, "deletionStrategy": legacy("DeleteNone", "DeleteCluster")})
            ),
            "The RayJob spec is invalid: shutdownAfterJobFinshes is set to 'true' while deletion policy is 'DeleteNone'"
        );
        // only one of onSuccess / onFailure
        let e = check(json!({"rayClusterSpec": cluster_spec_json(false), "deletionStrategy": {"onSuccess": {"policy": "DeleteCluster"}}})).unwrap_err();
        assert_eq!(
            e.message,
            "both DeletionStrategy.OnSuccess and DeletionStrategy.OnFailure must be set when using the legacy deletion policy fields of DeletionStrategy"
        );
        assert_eq!(e.field, "spec.deletionStrategy.onFailure");
        let rule = |policy: &str, status: &str, ttl: i32| json!({"policy": policy, "condition": {"jobStatus": status, "ttlSeconds": ttl}});
        let rules = |r: serde_json::Value| json!({"rayClusterSpec": cluster_spec_json(false), "deletionStrategy": {"deletionRules": r}});
        // rule DeleteSelf/SUCCEEDED/10: ok
        assert_eq!(check(rules(json!([rule("DeleteSelf", "SUCCEEDED", 10)]))), Ok(()));
        // rules + shutdown
        let mut s = rules(json!([rule("DeleteSelf", "SUCCEEDED", 10)]));
        s["shutdownAfterJobFinishes"] = json!(true);
        assert_eq!(
            message(s),
            "The RayJob spec is invalid: spec.shutdownAfterJobFinishes and spec.deletionStrategy.deletionRules are mutually exclusive"
        );
        // rules + legacy
        let mut s = rules(json!([rule("DeleteSelf", "SUCCEEDED", 10)]));
        s["deletionStrategy"]["onSuccess"] = json!({"policy": "DeleteCluster"});
        assert_eq!(
            message(s),
            "The RayJob spec is invalid: Cannot use both legacy onSuccess/onFailure fields and deletionRules simultaneously"
        );
        // duplicate
        let e = check(rules(json!([
            rule("DeleteSelf", "SUCCEEDED", 10),
            rule("DeleteSelf", "SUCCEEDED", 20)
        ])))
        .unwrap_err();
        assert_eq!(
            e.message,
            "deletionRules[1]: duplicate rule for DeletionPolicyType 'DeleteSelf' and JobStatus 'SUCCEEDED'"
        );
        assert_eq!(e.field, "spec.deletionStrategy.deletionRules[1]");
        // TTL -10
        let e = check(rules(json!([rule("DeleteCluster", "FAILED", -10)]))).unwrap_err();
        assert_eq!(e.message, "deletionRules[0]: TTLSeconds must be non-negative");
        // Workers 20 > Cluster 10
        assert_eq!(
            message(rules(json!([
                rule("DeleteWorkers", "SUCCEEDED", 20),
                rule("DeleteCluster", "SUCCEEDED", 10)
            ]))),
            "for JobStatus 'SUCCEEDED': DeleteCluster TTL (10) must be >= DeleteWorkers TTL (20)"
        );
        // Cluster 20 > Self 10
        assert_eq!(
            message(rules(json!([
                rule("DeleteCluster", "SUCCEEDED", 20),
                rule("DeleteSelf", "SUCCEEDED", 10)
            ]))),
            "for JobStatus 'SUCCEEDED': DeleteSelf TTL (10) must be >= DeleteCluster TTL (20)"
        );
        // Workers10/Cluster20/Self30 on SUCCEEDED + Self0 on FAILED: ok
        assert_eq!(
            check(rules(json!([
                rule("DeleteWorkers", "SUCCEEDED", 10),
                rule("DeleteCluster", "SUCCEEDED", 20),
                rule("DeleteSelf", "SUCCEEDED", 30),
                rule("DeleteSelf", "FAILED", 0)
            ]))),
            Ok(())
        );
        // jobDeploymentStatus Failed rules Cluster10/Self20: ok
        let dep = |policy: &str, ttl: i32| json!({"policy": policy, "condition": {"jobDeploymentStatus": "Failed", "ttlSeconds": ttl}});
        assert_eq!(
            check(rules(json!([dep("DeleteCluster", 10), dep("DeleteSelf", 20)]))),
            Ok(())
        );
        // both / neither
        assert_eq!(
            message(rules(
                json!([{"policy": "DeleteSelf", "condition": {"jobStatus": "FAILED", "jobDeploymentStatus": "Failed"}}])
            )),
            "deletionRules[0]: cannot set both JobStatus and JobDeploymentStatus at the same time"
        );
        assert_eq!(
            message(rules(json!([{"policy": "DeleteSelf", "condition": {"ttlSeconds": 5}}]))),
            "deletionRules[0]: exactly one of JobStatus and JobDeploymentStatus must be set"
        );
        // gate off
        let off = ValidationOptions {
            ray_job_deletion_policy: false,
            ..Default::default()
        };
        let e = validate_ray_job_spec(&job(rules(json!([rule("DeleteSelf", "SUCCEEDED", 10)]))), &off).unwrap_err();
        assert_eq!(
            e.message,
            "RayJobDeletionPolicy feature gate must be enabled to use DeletionStrategy"
        );
    }

    #[test]
    fn spec_rule_messages() {
        let c = cluster_spec_json(false);
        let selector = json!({"ray.io/cluster": "existing"});
        let cases: Vec<(serde_json::Value, &str, &str)> = vec![
            (
                json!({"rayClusterSpec": c, "suspend": true}),
                "spec.suspend",
                "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false is not allowed to be suspended",
            ),
            (
                json!({"rayClusterSpec": c, "ttlSecondsAfterFinished": -1}),
                "spec.ttlSecondsAfterFinished",
                "The RayJob spec is invalid: TTLSecondsAfterFinished must be a non-negative integer",
            ),
            (
                json!({"rayClusterSpec": c, "ttlSecondsAfterFinished": 10}),
                "spec.ttlSecondsAfterFinished",
                "The RayJob spec is invalid: a RayJob with shutdownAfterJobFinishes set to false cannot have TTLSecondsAfterFinished",
            ),
            (
                json!({"rayClusterSpec": c, "deletionStrategy": {}}),
                "spec.deletionStrategy",
                "The RayJob spec is invalid: DeletionStrategy requires either BOTH onSuccess and onFailure, OR the deletionRules field (cannot be empty)",
            ),
            (
                json!({"clusterSelector": selector, "suspend": true, "shutdownAfterJobFinishes": true}),
                "spec.suspend",
                "The RayJob spec is invalid: the ClusterSelector mode doesn't support the suspend operation",
            ),
            (
                json!({}),
                "spec.rayClusterSpec",
                "The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set",
            ),
            (
                json!({"clusterSelector": {"other": "x"}}),
                "spec.clusterSelector[ray.io/cluster]",
                "cluster name in ClusterSelector should not be empty",
            ),
            (
                json!({"clusterSelector": selector, "submissionMode": "SidecarMode"}),
                "spec.submissionMode",
                "ClusterSelector is not supported in SidecarMode",
            ),
            (
                json!({"clusterSelector": selector, "backoffLimit": 1}),
                "spec.backoffLimit",
                "The RayJob spec is invalid: BackoffLimit is incompatible with ClusterSelector mode",
            ),
            (
                json!({"rayClusterSpec": c, "submissionMode": "InteractiveMode", "backoffLimit": 2}),
                "spec.backoffLimit",
                "The RayJob spec is invalid: BackoffLimit is incompatible with InteractiveMode",
            ),
            (
                json!({"rayClusterSpec": c, "submissionMode": "SidecarMode", "submitterPodTemplate": {}}),
                "spec.submitterPodTemplate",
                "Currently, SidecarMode doesn't support SubmitterPodTemplate",
            ),
            (
                json!({"rayClusterSpec": c, "submissionMode": "SidecarMode", "submitterConfig": {}}),
                "spec.submitterConfig",
                "Currently, SidecarMode doesn't support SubmitterConfig",
            ),
            (
                json!({"rayClusterSpec": c, "activeDeadlineSeconds": 0}),
                "spec.activeDeadlineSeconds",
                "The RayJob spec is invalid: activeDeadlineSeconds must be a positive integer",
            ),
            (
                json!({"rayClusterSpec": c, "preRunningDeadlineSeconds": 0}),
                "spec.preRunningDeadlineSeconds",
                "The RayJob spec is invalid: preRunningDeadlineSeconds must be a positive integer",
            ),
            (
                json!({"rayClusterSpec": c, "backoffLimit": -1}),
                "spec.backoffLimit",
                "The RayJob spec is invalid: backoffLimit must be a positive integer",
            ),
        ];
        for (spec, field, msg) in cases {
            let e = check(spec.clone()).unwrap_err();
            assert_eq!((e.field.as_str(), e.message.as_str()), (field, msg), "{spec}");
        }
        let mut sidecar = json!({"rayClusterSpec": c, "submissionMode": "SidecarMode"});
        sidecar["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            message(sidecar),
            "restartPolicy for head Pod should be Never or unset when using SidecarMode"
        );
        let mut k8s_auth = json!({"rayClusterSpec": c});
        k8s_auth["rayClusterSpec"]["authOptions"] = json!({"mode": "token", "enableK8sTokenAuth": true});
        assert_eq!(
            message(k8s_auth),
            "The RayJob spec is invalid: K8s token auth mode is currently not supported for RayJob"
        );
        let mut no_head = json!({"rayClusterSpec": c});
        no_head["rayClusterSpec"]["headGroupSpec"]["template"]["spec"]["containers"] = json!([]);
        let e = check(no_head).unwrap_err();
        assert_eq!(
            e.message,
            "The RayJob spec is invalid: headGroupSpec should have at least one container"
        );
        assert_eq!(e.field, "spec.rayClusterSpec.headGroupSpec.template.spec.containers");
    }

    #[test]
    fn runtime_env_yaml_must_be_a_mapping() {
        let c = cluster_spec_json(false);
        assert_eq!(check(json!({"rayClusterSpec": c, "runtimeEnvYAML": ""})), Ok(()));
        assert_eq!(
            check(json!({"rayClusterSpec": c, "runtimeEnvYAML": "pip:\n  - requests\n"})),
            Ok(())
        );
        let e = check(json!({"rayClusterSpec": c, "runtimeEnvYAML": "just a string"})).unwrap_err();
        assert!(
            e.message
                .starts_with("failed to unmarshal RuntimeEnvYAML: just a string: "),
            "{}",
            e.message
        );
        assert_eq!(e.field, "spec.runtimeEnvYAML");
        let e = check(json!({"rayClusterSpec": c, "runtimeEnvYAML": "a: [unclosed"})).unwrap_err();
        assert!(
            e.message
                .starts_with("failed to unmarshal RuntimeEnvYAML: a: [unclosed: "),
            "{}",
            e.message
        );
    }
}
