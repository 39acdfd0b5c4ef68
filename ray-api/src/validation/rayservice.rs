//! RayService validation: metadata (name, `ray.io/initializing-timeout`), spec, and the options of an incremental
//! upgrade (docs/validation.md#rayservice).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_compat::{go_duration, go_strconv};

use super::raycluster::{autoscaling_enabled, cluster_spec, k8s_auth_enabled};
use super::{ValidationError, ValidationOptions, ValidationResult, map_value, validate_name};
use crate::constants::{
    CRD_KIND_RAY_SERVICE, MAX_RAY_SERVICE_NAME_LENGTH, RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION,
};
use crate::rayservice::{RayService, RayServiceUpgradeType};

const SPEC_INVALID: &str = "The RayService spec is invalid: ";
const METADATA_INVALID: &str = "The RayService metadata is invalid: ";

/// Runs the RayService controller's validation in its order: metadata, spec.
pub fn validate_ray_service(service: &RayService, options: &ValidationOptions) -> ValidationResult {
    validate_ray_service_metadata(&service.metadata)?;
    validate_ray_service_spec(service, options)
}

/// `ValidateRayServiceMetadata`: name length ≤ 47, DNS-1035, then the
/// `ray.io/initializing-timeout` annotation (a positive Go duration or positive integer seconds).
pub fn validate_ray_service_metadata(metadata: &ObjectMeta) -> ValidationResult {
    validate_name(
        metadata.name.as_deref().unwrap_or_default(),
        MAX_RAY_SERVICE_NAME_LENGTH,
        CRD_KIND_RAY_SERVICE,
        METADATA_INVALID,
    )?;
    let timeout = map_value(
        metadata.annotations.as_ref(),
        RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION,
    );
    if timeout.is_empty() {
        return Ok(());
    }
    let annotation = RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION;
    let problem = if let Ok(nanos) = go_duration::parse_nanos(timeout) {
        (nanos <= 0).then(|| format!("annotation {annotation} must be a positive duration, got: {timeout}"))
    } else if let Ok(seconds) = go_strconv::atoi(timeout) {
        (seconds <= 0).then(|| format!("annotation {annotation} must be a positive integer (seconds), got: {timeout}"))
    } else {
        Some(format!(
            "annotation {annotation} has invalid format: {timeout}. Expected Go duration format (e.g., '5m', '1h') or positive integer seconds"
        ))
    };
    match problem {
        Some(detail) => Err(ValidationError::new(
            format!("metadata.annotations[{annotation}]"),
            format!("{METADATA_INVALID}RayService annotations is invalid: {detail}"),
        )),
        None => Ok(()),
    }
}

/// `ValidateRayServiceSpec` (checks in KubeRay's order; first failure returned).
pub fn validate_ray_service_spec(service: &RayService, options: &ValidationOptions) -> ValidationResult {
    let spec = &service.spec;
    let cluster = &spec.ray_cluster_config;
    if k8s_auth_enabled(cluster) {
        return Err(ValidationError::new(
            "spec.rayClusterConfig.authOptions.enableK8sTokenAuth",
            format!("{SPEC_INVALID}K8s token auth mode is currently not supported for RayService"),
        ));
    }
    cluster_spec(
        cluster,
        service.metadata.annotations.as_ref(),
        options,
        "spec.rayClusterConfig",
    )
    .map_err(|e| e.wrap(SPEC_INVALID))?;
    if cluster
        .head_group_spec
        .head_service
        .as_ref()
        .and_then(|s| s.metadata.name.as_deref())
        .is_some_and(|n| !n.is_empty())
    {
        return Err(ValidationError::new(
            "spec.rayClusterConfig.headGroupSpec.headService.metadata.name",
            format!("{SPEC_INVALID}spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set"),
        ));
    }
    let upgrade_type = spec.upgrade_strategy.as_ref().and_then(|u| u.type_.as_ref());
    if let Some(RayServiceUpgradeType::Unknown(value)) = upgrade_type {
        return Err(ValidationError::new(
            "spec.upgradeStrategy.type",
            format!(
                "{SPEC_INVALID}Spec.UpgradeStrategy.Type value {value} is invalid, valid options are NewClusterWithIncrementalUpgrade, NewCluster, or None"
            ),
        ));
    }
    if let Some(delay) = spec.ray_cluster_deletion_delay_seconds.filter(|d| *d < 0) {
        return Err(ValidationError::new(
            "spec.rayClusterDeletionDelaySeconds",
            format!("{SPEC_INVALID}Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got {delay}"),
        ));
    }
    if options.ray_service_incremental_upgrade
        && upgrade_type == Some(&RayServiceUpgradeType::NewClusterWithIncrementalUpgrade)
    {
        return cluster_upgrade_options(service).map_err(|e| e.wrap(SPEC_INVALID));
    }
    Ok(())
}

/// `ValidateClusterUpgradeOptions` (unprefixed; the caller wraps it).
fn cluster_upgrade_options(service: &RayService) -> ValidationResult {
    let spec = &service.spec;
    if !autoscaling_enabled(Some(&spec.ray_cluster_config)) {
        return Err(ValidationError::new(
            "spec.rayClusterConfig.enableInTreeAutoscaling",
            "Ray Autoscaler is required for NewClusterWithIncrementalUpgrade",
        ));
    }
    let path = "spec.upgradeStrategy.clusterUpgradeOptions";
    let Some(options) = spec
        .upgrade_strategy
        .as_ref()
        .and_then(|u| u.cluster_upgrade_options.as_ref())
    else {
        return Err(ValidationError::new(
            path,
            "ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade",
        ));
    };
    // CRD default 100 when unset.
    let max_surge = options.max_surge_percent.unwrap_or(100);
    if !(0..=100).contains(&max_surge) {
        return Err(ValidationError::new(
            format!("{path}.maxSurgePercent"),
            "maxSurgePercent must be between 0 and 100",
        ));
    }
    let Some(step) = options.step_size_percent.filter(|s| (0..=100).contains(s)) else {
        return Err(ValidationError::new(
            format!("{path}.stepSizePercent"),
            "stepSizePercent must be between 0 and 100",
        ));
    };
    if step > max_surge {
        return Err(ValidationError::new(
            format!("{path}.stepSizePercent"),
            "stepSizePercent must be less than or equal to maxSurgePercent",
        ));
    }
    if options.interval_seconds.is_none_or(|i| i <= 0) {
        return Err(ValidationError::new(
            format!("{path}.intervalSeconds"),
            "intervalSeconds must be greater than 0",
        ));
    }
    if options.gateway_class_name.is_empty() {
        return Err(ValidationError::new(
            format!("{path}.gatewayClassName"),
            "gatewayClassName is required for NewClusterWithIncrementalUpgrade",
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn service(annotations: serde_json::Value, spec_patch: impl FnOnce(&mut serde_json::Value)) -> RayService {
        let mut spec = json!({
            "rayClusterConfig": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
                "workerGroupSpecs": [{"groupName": "small-group", "replicas": 1, "minReplicas": 1, "maxReplicas": 5,
                    "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}}]
            }
        });
        spec_patch(&mut spec);
        serde_json::from_value(json!({
            "apiVersion": "ray.io/v1", "kind": "RayService",
            "metadata": {"name": "rayservice-sample", "annotations": annotations},
            "spec": spec
        }))
        .unwrap()
    }

    fn err(s: &RayService) -> ValidationError {
        validate_ray_service(s, &ValidationOptions::default()).unwrap_err()
    }

    #[test]
    fn valid_service() {
        assert_eq!(
            validate_ray_service(&service(json!({}), |_| {}), &ValidationOptions::default()),
            Ok(())
        );
    }

    #[test]
    fn metadata_rules() {
        let mut s = service(json!({}), |_| {});
        s.metadata.name = Some("s".repeat(48));
        let e = err(&s);
        assert_eq!(
            e.message,
            "The RayService metadata is invalid: RayService name should be no more than 47 characters"
        );
        s.metadata.name = Some("Bad".to_owned());
        assert!(err(&s).message.starts_with(
            "The RayService metadata is invalid: RayService name should be a valid DNS1035 label: [a DNS-1035 label"
        ));
        for ok in ["30m", "1h", "600"] {
            let s = service(json!({"ray.io/initializing-timeout": ok}), |_| {});
            assert_eq!(validate_ray_service_metadata(&s.metadata), Ok(()), "{ok}");
        }
        let cases = [
            (
                "0s",
                "annotation ray.io/initializing-timeout must be a positive duration, got: 0s",
            ),
            (
                "-5",
                "annotation ray.io/initializing-timeout must be a positive integer (seconds), got: -5",
            ),
            (
                "soon",
                "annotation ray.io/initializing-timeout has invalid format: soon. Expected Go duration format (e.g., '5m', '1h') or positive integer seconds",
            ),
        ];
        for (value, detail) in cases {
            let e = err(&service(json!({"ray.io/initializing-timeout": value}), |_| {}));
            assert_eq!(
                e.message,
                format!("The RayService metadata is invalid: RayService annotations is invalid: {detail}")
            );
            assert_eq!(e.field, "metadata.annotations[ray.io/initializing-timeout]");
        }
    }

    #[test]
    fn spec_rules() {
        let e = err(&service(json!({}), |s| {
            s["rayClusterConfig"]["authOptions"] = json!({"mode": "token", "enableK8sTokenAuth": true})
        }));
        assert_eq!(
            e.message,
            "The RayService spec is invalid: K8s token auth mode is currently not supported for RayService"
        );
        let e = err(&service(json!({}), |s| {
            s["rayClusterConfig"]["headGroupSpec"]["template"]["spec"]["containers"] = json!([])
        }));
        assert_eq!(
            e.message,
            "The RayService spec is invalid: headGroupSpec should have at least one container"
        );
        assert_eq!(e.field, "spec.rayClusterConfig.headGroupSpec.template.spec.containers");
        let e = err(&service(json!({}), |s| {
            s["rayClusterConfig"]["headGroupSpec"]["headService"] = json!({"metadata": {"name": "custom"}})
        }));
        assert_eq!(
            e.message,
            "The RayService spec is invalid: spec.rayClusterConfig.headGroupSpec.headService.metadata.name should not be set"
        );
        let e = err(&service(json!({}), |s| {
            s["upgradeStrategy"] = json!({"type": "BlueGreen"})
        }));
        assert_eq!(
            e.message,
            "The RayService spec is invalid: Spec.UpgradeStrategy.Type value BlueGreen is invalid, valid options are NewClusterWithIncrementalUpgrade, NewCluster, or None"
        );
        let e = err(&service(json!({}), |s| s["rayClusterDeletionDelaySeconds"] = json!(-5)));
        assert_eq!(
            e.message,
            "The RayService spec is invalid: Spec.RayClusterDeletionDelaySeconds should be a non-negative integer, got -5"
        );
        assert_eq!(e.field, "spec.rayClusterDeletionDelaySeconds");
    }

    #[test]
    fn incremental_upgrade_options() {
        let with = |autoscaling: bool, options: Option<serde_json::Value>| {
            service(json!({}), |s| {
                s["rayClusterConfig"]["enableInTreeAutoscaling"] = json!(autoscaling);
                s["upgradeStrategy"] = json!({"type": "NewClusterWithIncrementalUpgrade"});
                if let Some(o) = options {
                    s["upgradeStrategy"]["clusterUpgradeOptions"] = o;
                }
            })
        };
        let good =
            json!({"maxSurgePercent": 50, "stepSizePercent": 10, "intervalSeconds": 30, "gatewayClassName": "istio"});
        assert_eq!(
            validate_ray_service(&with(true, Some(good.clone())), &ValidationOptions::default()),
            Ok(())
        );
        let p = "The RayService spec is invalid: ";
        assert_eq!(
            err(&with(false, Some(good.clone()))).message,
            format!("{p}Ray Autoscaler is required for NewClusterWithIncrementalUpgrade")
        );
        assert_eq!(
            err(&with(true, None)).message,
            format!("{p}ClusterUpgradeOptions are required for NewClusterWithIncrementalUpgrade")
        );
        let patched = |key: &str, value: serde_json::Value| {
            let mut o = good.clone();
            o[key] = value;
            err(&with(true, Some(o))).message
        };
        assert_eq!(
            patched("maxSurgePercent", json!(101)),
            format!("{p}maxSurgePercent must be between 0 and 100")
        );
        assert_eq!(
            patched("stepSizePercent", json!(-1)),
            format!("{p}stepSizePercent must be between 0 and 100")
        );
        assert_eq!(
            patched("stepSizePercent", json!(60)),
            format!("{p}stepSizePercent must be less than or equal to maxSurgePercent")
        );
        assert_eq!(
            patched("intervalSeconds", json!(0)),
            format!("{p}intervalSeconds must be greater than 0")
        );
        assert_eq!(
            patched("gatewayClassName", json!("")),
            format!("{p}gatewayClassName is required for NewClusterWithIncrementalUpgrade")
        );
        // Gate off: options are not checked.
        let off = ValidationOptions {
            ray_service_incremental_upgrade: false,
            ..Default::default()
        };
        assert_eq!(validate_ray_service(&with(false, None), &off), Ok(()));
    }
}
