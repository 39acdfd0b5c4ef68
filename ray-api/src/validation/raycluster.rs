//! RayCluster validation: metadata, spec, upgrade options and status, in KubeRay's order
//! (docs/validation.md#raycluster).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar, VolumeMount};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

use super::k8s;
use super::{
    ValidationError, ValidationOptions, ValidationResult, container_env, env_by_name, env_exists, map_value,
    validate_name,
};
use crate::constants::*;
use crate::raycluster::{
    AuthMode, AutoscalerVersion, CollectorOptions, GcsFaultToleranceBackend, GcsFaultToleranceOptions,
    NetworkPolicyMode, RayCluster, RayClusterSpec, RayClusterUpgradeType, WorkerGroupSpec,
};

/// Runs the RayCluster controller's validation in its order: metadata, spec, upgrade options, status.
pub fn validate_ray_cluster(cluster: &RayCluster, options: &ValidationOptions) -> ValidationResult {
    validate_ray_cluster_metadata(&cluster.metadata)?;
    validate_ray_cluster_spec(&cluster.spec, cluster.metadata.annotations.as_ref(), options)?;
    validate_ray_cluster_upgrade_options(cluster)?;
    validate_ray_cluster_status(cluster)
}

/// `ValidateRayClusterMetadata`: name length ≤ 53, then DNS-1035.
pub fn validate_ray_cluster_metadata(metadata: &ObjectMeta) -> ValidationResult {
    validate_name(
        metadata.name.as_deref().unwrap_or_default(),
        MAX_RAY_CLUSTER_NAME_LENGTH,
        CRD_KIND_RAY_CLUSTER,
        "",
    )
}

/// `ValidateRayClusterStatus`: `RayClusterSuspending` and `RayClusterSuspended` not both True.
pub fn validate_ray_cluster_status(cluster: &RayCluster) -> ValidationResult {
    let conditions = cluster
        .status
        .as_ref()
        .and_then(|s| s.conditions.as_deref())
        .unwrap_or_default();
    let is_true = |type_: &str| conditions.iter().any(|c| c.type_ == type_ && c.status == "True");
    if is_true(RAY_CLUSTER_SUSPENDING_CONDITION) && is_true(RAY_CLUSTER_SUSPENDED_CONDITION) {
        return Err(ValidationError::new(
            "status.conditions",
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true",
        ));
    }
    Ok(())
}

/// `ValidateRayClusterUpgradeOptions`: `upgradeStrategy.type` is `Recreate` or `None`, and is not set on a cluster
/// a RayJob or RayService created.
///
/// `upgradeStrategy.type` is a closed enum in our types (the CRD lists `Recreate` / `None`), so
/// the "value is invalid" message can only come from objects built in code; it is still checked
/// against the allowed list for parity.
pub fn validate_ray_cluster_upgrade_options(cluster: &RayCluster) -> ValidationResult {
    let Some(type_) = cluster.spec.upgrade_strategy.as_ref().and_then(|u| u.type_) else {
        return Ok(());
    };
    if !matches!(
        type_,
        RayClusterUpgradeType::Recreate | RayClusterUpgradeType::None | RayClusterUpgradeType::RollingUpdate
    ) {
        return Err(ValidationError::new(
            "spec.upgradeStrategy.type",
            format!(
                "The RayCluster spec is invalid: Spec.UpgradeStrategy.Type value {type_} is invalid, valid options are Recreate or None"
            ),
        ));
    }
    let creator = map_value(cluster.metadata.labels.as_ref(), RAY_ORIGINATED_FROM_CRD_LABEL);
    if creator == CRD_KIND_RAY_JOB || creator == CRD_KIND_RAY_SERVICE {
        return Err(ValidationError::new(
            "spec.upgradeStrategy.type",
            format!("upgradeStrategy cannot be set when RayCluster is created by {creator}"),
        ));
    }
    Ok(())
}

/// `ValidateRayClusterSpec` of a RayCluster (the 17 ordered checks of docs/validation.md#raycluster):
/// `annotations` are the object's (`ray.io/ft-enabled`, `ray.io/external-storage-namespace`). Field paths start
/// at `spec`.
pub fn validate_ray_cluster_spec(
    spec: &RayClusterSpec,
    annotations: Option<&BTreeMap<String, String>>,
    options: &ValidationOptions,
) -> ValidationResult {
    cluster_spec(spec, annotations, options, "spec")
}

/// `IsAutoscalingEnabled`.
pub(super) fn autoscaling_enabled(spec: Option<&RayClusterSpec>) -> bool {
    spec.is_some_and(|s| s.enable_in_tree_autoscaling == Some(true))
}

/// `IsK8sAuthEnabled`.
pub(super) fn k8s_auth_enabled(spec: &RayClusterSpec) -> bool {
    spec.auth_options.as_ref().and_then(|a| a.enable_k8s_token_auth) == Some(true)
}

/// `IsAutoscalingV2Enabled`: `autoscalerOptions.version == v2`.
fn autoscaling_v2_enabled(spec: &RayClusterSpec) -> bool {
    spec.autoscaler_options.as_ref().and_then(|o| o.version) == Some(AutoscalerVersion::V2)
}

/// v2 via the option or the head env `RAY_enable_autoscaler_v2` = `1` / `true`.
fn v2_by_option_or_env(spec: &RayClusterSpec, head_env: Option<&[EnvVar]>) -> bool {
    autoscaling_v2_enabled(spec)
        || env_by_name(head_env, RAY_ENABLE_AUTOSCALER_V2_ENV)
            .and_then(|e| e.value.as_deref())
            .is_some_and(|v| v == "1" || v == "true")
}

/// `IsGCSFaultToleranceEnabled`.
fn gcs_ft_enabled(spec: &RayClusterSpec, annotations: Option<&BTreeMap<String, String>>) -> bool {
    map_value(annotations, RAY_FT_ENABLED_ANNOTATION).to_lowercase() == "true"
        || spec.gcs_fault_tolerance_options.is_some()
}

fn containers(template: &k8s_openapi::api::core::v1::PodTemplateSpec) -> &[Container] {
    template
        .spec
        .as_ref()
        .map(|s| s.containers.as_slice())
        .unwrap_or_default()
}

fn restart_policy(template: &k8s_openapi::api::core::v1::PodTemplateSpec) -> &str {
    template
        .spec
        .as_ref()
        .and_then(|s| s.restart_policy.as_deref())
        .unwrap_or_default()
}

/// `validateRayGroupResources`.
fn group_resources(
    group: &str,
    params: Option<&BTreeMap<String, String>>,
    resources: Option<&BTreeMap<String, String>>,
    path: &str,
) -> ValidationResult {
    let from_params = ["num-cpus", "num-gpus", "memory", "resources"]
        .iter()
        .any(|k| !map_value(params, k).is_empty());
    if from_params && resources.is_some_and(|r| !r.is_empty()) {
        return Err(ValidationError::new(
            format!("{path}.resources"),
            format!(
                "resource fields should not be set in both rayStartParams and Resources for {group} group; please use only one"
            ),
        ));
    }
    Ok(())
}

/// `validateRayGroupLabels`. Labels are checked in key order (KubeRay walks a Go map, in random order).
fn group_labels(
    group: &str,
    params: Option<&BTreeMap<String, String>>,
    labels: Option<&BTreeMap<String, String>>,
    path: &str,
) -> ValidationResult {
    if params.is_some_and(|p| p.contains_key("labels")) {
        return Err(ValidationError::new(
            format!("{path}.rayStartParams[labels]"),
            format!(
                "rayStartParams['labels'] is not supported for {group} group; please use the top-level Labels field instead"
            ),
        ));
    }
    let mut errs = Vec::new();
    let mut first_key = None;
    for (key, value) in labels.into_iter().flatten() {
        let before = errs.len();
        for e in k8s::is_qualified_name(key) {
            errs.push(format!("invalid label key for {group} group: '{key}', error: {e}"));
        }
        for e in k8s::is_valid_label_value(value) {
            errs.push(format!(
                "invalid label value for key '{key}' in {group} group: '{value}', error: {e}"
            ));
        }
        if errs.len() > before && first_key.is_none() {
            first_key = Some(key.clone());
        }
    }
    match first_key {
        Some(key) => Err(ValidationError::new(format!("{path}.labels[{key}]"), errs.join("; "))),
        None => Ok(()),
    }
}

/// `validateWorkerGroupIdleTimeout`.
fn worker_idle_timeout(
    group: &WorkerGroupSpec,
    spec: &RayClusterSpec,
    head_env: Option<&[EnvVar]>,
    path: &str,
) -> ValidationResult {
    let Some(idle) = group.idle_timeout_seconds else {
        return Ok(());
    };
    let g = &group.group_name;
    let field = format!("{path}.idleTimeoutSeconds");
    if idle < 0 {
        return Err(ValidationError::new(
            field,
            format!("worker group {g}: idleTimeoutSeconds must be non-negative, got {idle}"),
        ));
    }
    if v2_by_option_or_env(spec, head_env) {
        return Ok(());
    }
    Err(ValidationError::new(
        field,
        format!(
            "worker group {g}: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set .spec.autoscalerOptions.version to 'v2' (or set {RAY_ENABLE_AUTOSCALER_V2_ENV} environment variable to 'true' in the head pod if using KubeRay < 1.4.0)"
        ),
    ))
}

/// `validateWorkerGroupPriority`.
fn worker_priority(
    group: &WorkerGroupSpec,
    spec: &RayClusterSpec,
    head_env: Option<&[EnvVar]>,
    path: &str,
) -> ValidationResult {
    let priority = match group.priority {
        None | Some(0) => return Ok(()),
        Some(p) => p,
    };
    let g = &group.group_name;
    let field = format!("{path}.priority");
    let ray_version = spec.ray_version.as_deref().unwrap_or_default();
    if ray_version.is_empty() {
        return Err(ValidationError::new(
            field,
            format!(
                "worker group {g}: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is required"
            ),
        ));
    }
    let version = k8s::parse_generic_version(ray_version).map_err(|e| {
        ValidationError::new(
            field.clone(),
            format!("worker group {g}: priority is set, but RayVersion format is invalid: {ray_version}, {e}"),
        )
    })?;
    if k8s::version_less_than(&version, &[2, 56, 0]) {
        return Err(ValidationError::new(
            field,
            format!("worker group {g}: priority is set, but minimum Ray version is 2.56.0, got {ray_version}"),
        ));
    }
    if v2_by_option_or_env(spec, head_env) {
        return Ok(());
    }
    Err(ValidationError::new(
        field,
        format!(
            "worker group {g}: priority is set to {priority}, but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled"
        ),
    ))
}

/// The ordered spec checks (docs/validation.md#raycluster), with field paths under `base` (`spec`,
/// `spec.rayClusterSpec`, ...).
pub(super) fn cluster_spec(
    spec: &RayClusterSpec,
    annotations: Option<&BTreeMap<String, String>>,
    options: &ValidationOptions,
    base: &str,
) -> ValidationResult {
    let head = &spec.head_group_spec;
    let head_path = format!("{base}.headGroupSpec");
    // 1. Head containers.
    let Some(head_container) = containers(&head.template).first() else {
        return Err(ValidationError::new(
            format!("{head_path}.template.spec.containers"),
            "headGroupSpec should have at least one container",
        ));
    };
    let head_env = container_env(head_container);
    let head_env_path = format!("{head_path}.template.spec.containers[0].env");
    // 2-3. Head resources and labels.
    group_resources(
        "Head",
        head.ray_start_params.as_ref(),
        head.resources.as_ref(),
        &head_path,
    )?;
    group_labels("Head", head.ray_start_params.as_ref(), head.labels.as_ref(), &head_path)?;

    // 4. Worker groups.
    let autoscaling = autoscaling_enabled(Some(spec));
    let workers = spec.worker_group_specs.as_deref().unwrap_or_default();
    for (i, group) in workers.iter().enumerate() {
        let path = format!("{base}.workerGroupSpecs[{i}]");
        let g = &group.group_name;
        if containers(&group.template).is_empty() {
            return Err(ValidationError::new(
                format!("{path}.template.spec.containers"),
                "workerGroupSpec should have at least one container",
            ));
        }
        if !autoscaling && (group.min_replicas.is_none() || group.max_replicas.is_none()) {
            let missing = if group.min_replicas.is_none() {
                "minReplicas"
            } else {
                "maxReplicas"
            };
            return Err(ValidationError::new(
                format!("{path}.{missing}"),
                format!("worker group {g} must set both minReplicas and maxReplicas when autoscaling is disabled"),
            ));
        }
        if let Some(min) = group.min_replicas.filter(|m| *m < 0) {
            return Err(ValidationError::new(
                format!("{path}.minReplicas"),
                format!("worker group {g} has negative minReplicas {min}"),
            ));
        }
        if let Some(max) = group.max_replicas.filter(|m| *m < 0) {
            return Err(ValidationError::new(
                format!("{path}.maxReplicas"),
                format!("worker group {g} has negative maxReplicas {max}"),
            ));
        }
        if let (Some(min), Some(max)) = (group.min_replicas, group.max_replicas)
            && min > max
        {
            return Err(ValidationError::new(
                format!("{path}.minReplicas"),
                format!("worker group {g} has minReplicas {min} greater than maxReplicas {max}"),
            ));
        }
        group_resources(g, group.ray_start_params.as_ref(), group.resources.as_ref(), &path)?;
        group_labels(g, group.ray_start_params.as_ref(), group.labels.as_ref(), &path)?;
        worker_idle_timeout(group, spec, head_env, &path)?;
        worker_priority(group, spec, head_env, &path)?;
    }

    // 5. Annotation and options both set.
    let ft_options_path = format!("{base}.gcsFaultToleranceOptions");
    if !map_value(annotations, RAY_FT_ENABLED_ANNOTATION).is_empty() && spec.gcs_fault_tolerance_options.is_some() {
        return Err(ValidationError::new(
            ft_options_path,
            format!(
                "{RAY_FT_ENABLED_ANNOTATION} annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to configure GCS fault tolerance"
            ),
        ));
    }
    // 6. RAY_REDIS_ADDRESS without GCS FT.
    if !gcs_ft_enabled(spec, annotations) && env_exists(head_env, RAY_REDIS_ADDRESS_ENV) {
        return Err(ValidationError::new(
            format!("{head_env_path}[{RAY_REDIS_ADDRESS_ENV}]"),
            format!(
                "{RAY_REDIS_ADDRESS_ENV} is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance"
            ),
        ));
    }
    // 7. GCS FT options conflicts.
    if let Some(ft) = spec.gcs_fault_tolerance_options.as_ref() {
        if !map_value(head.ray_start_params.as_ref(), "redis-password").is_empty() {
            return Err(ValidationError::new(
                format!("{head_path}.rayStartParams[redis-password]"),
                "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead",
            ));
        }
        if env_exists(head_env, REDIS_PASSWORD_ENV) {
            return Err(ValidationError::new(
                format!("{head_env_path}[{REDIS_PASSWORD_ENV}]"),
                "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead",
            ));
        }
        if env_exists(head_env, RAY_REDIS_ADDRESS_ENV) {
            return Err(ValidationError::new(
                format!("{head_env_path}[{RAY_REDIS_ADDRESS_ENV}]"),
                "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisAddress instead",
            ));
        }
        if !map_value(annotations, RAY_EXTERNAL_STORAGE_NS_ANNOTATION).is_empty() {
            return Err(ValidationError::new(
                format!("metadata.annotations[{RAY_EXTERNAL_STORAGE_NS_ANNOTATION}]"),
                "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead",
            ));
        }
        gcs_ft_backend(ft, head_container, spec, options, &ft_options_path, &head_path)?;
    }
    // 8. Redis user name outside the options.
    if !map_value(head.ray_start_params.as_ref(), "redis-username").is_empty()
        || env_exists(head_env, REDIS_USERNAME_ENV)
    {
        let field = if env_exists(head_env, REDIS_USERNAME_ENV) {
            format!("{head_env_path}[{REDIS_USERNAME_ENV}]")
        } else {
            format!("{head_path}.rayStartParams[redis-username]")
        };
        return Err(ValidationError::new(
            field,
            "cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead",
        ));
    }
    // 9. Suspended groups need the RayJobDeletionPolicy gate.
    let suspended = || workers.iter().enumerate().find(|(_, g)| g.suspend == Some(true));
    if !options.ray_job_deletion_policy
        && let Some((i, g)) = suspended()
    {
        return Err(ValidationError::new(
            format!("{base}.workerGroupSpecs[{i}].suspend"),
            format!(
                "worker group {} can be suspended only when the RayJobDeletionPolicy feature gate is enabled",
                g.group_name
            ),
        ));
    }
    // 10. RAY_enable_autoscaler_v2 without autoscaling.
    if !autoscaling
        && let Some(value) = env_by_name(head_env, RAY_ENABLE_AUTOSCALER_V2_ENV)
            .map(|e| e.value.as_deref().unwrap_or_default())
            .filter(|v| *v == "1" || *v == "true")
    {
        return Err(ValidationError::new(
            format!("{head_env_path}[{RAY_ENABLE_AUTOSCALER_V2_ENV}]"),
            format!(
                "environment variable {RAY_ENABLE_AUTOSCALER_V2_ENV} cannot be set to '{value}' when enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2"
            ),
        ));
    }
    // 11. Autoscaling rules.
    if autoscaling {
        if let Some((i, g)) = suspended() {
            return Err(ValidationError::new(
                format!("{base}.workerGroupSpecs[{i}].suspend"),
                format!(
                    "worker group {} cannot be suspended with Autoscaler enabled",
                    g.group_name
                ),
            ));
        }
        if spec.autoscaler_options.as_ref().is_some_and(|o| o.version.is_some())
            && env_exists(head_env, RAY_ENABLE_AUTOSCALER_V2_ENV)
        {
            return Err(ValidationError::new(
                format!("{base}.autoscalerOptions.version"),
                format!(
                    "both .spec.autoscalerOptions.version and head Pod env var {RAY_ENABLE_AUTOSCALER_V2_ENV} are set, please only use the former"
                ),
            ));
        }
        if autoscaling_v2_enabled(spec) {
            let policy = restart_policy(&head.template);
            if !policy.is_empty() && policy != "Never" {
                return Err(ValidationError::new(
                    format!("{head_path}.template.spec.restartPolicy"),
                    "restartPolicy for head Pod should be Never or unset when using autoscaler V2",
                ));
            }
            for (i, group) in workers.iter().enumerate() {
                let policy = restart_policy(&group.template);
                if !policy.is_empty() && policy != "Never" {
                    return Err(ValidationError::new(
                        format!("{base}.workerGroupSpecs[{i}].template.spec.restartPolicy"),
                        format!(
                            "restartPolicy for worker group {} should be Never or unset when using autoscaler V2",
                            group.group_name
                        ),
                    ));
                }
            }
        }
    }
    // 12. autoscalerOptions.idleTimeoutSeconds.
    if let Some(idle) = spec
        .autoscaler_options
        .as_ref()
        .and_then(|o| o.idle_timeout_seconds)
        .filter(|v| *v < 0)
    {
        return Err(ValidationError::new(
            format!("{base}.autoscalerOptions.idleTimeoutSeconds"),
            format!("autoscalerOptions.idleTimeoutSeconds must be non-negative, got {idle}"),
        ));
    }
    // 13. KubeRay-managed autoscaler env var.
    if spec
        .autoscaler_options
        .as_ref()
        .is_some_and(|o| env_exists(o.env.as_deref(), KUBERAY_GEN_AUTOSCALER_START_CMD_ENV))
    {
        return Err(ValidationError::new(
            format!("{base}.autoscalerOptions.env[{KUBERAY_GEN_AUTOSCALER_START_CMD_ENV}]"),
            format!(
                "autoscalerOptions.env must not contain {KUBERAY_GEN_AUTOSCALER_START_CMD_ENV}: it is managed by KubeRay and injected automatically into the autoscaler container"
            ),
        ));
    }
    // 14. History server.
    if let Some(history) = spec.history_server_options.as_ref() {
        let path = format!("{base}.historyServerOptions");
        if !options.ray_cluster_history_server {
            return Err(ValidationError::new(
                path,
                "RayClusterHistoryServer feature gate is not enabled",
            ));
        }
        let Some(collector) = history.collector_options.as_ref() else {
            return Err(ValidationError::new(
                format!("{path}.collectorOptions"),
                "historyServerOptions.collectorOptions must be set",
            ));
        };
        collector_options(collector, &format!("{path}.collectorOptions"))?;
        if let Some(i) = containers(&head.template)
            .iter()
            .position(|c| c.name == RAY_HISTORY_COLLECTOR_CONTAINER_NAME)
        {
            return Err(ValidationError::new(
                format!("{head_path}.template.spec.containers[{i}].name"),
                format!(
                    "head pod template must not define a container with name '{RAY_HISTORY_COLLECTOR_CONTAINER_NAME}' when history server collector options are enabled"
                ),
            ));
        }
        for (i, group) in workers.iter().enumerate() {
            if let Some(j) = containers(&group.template)
                .iter()
                .position(|c| c.name == RAY_HISTORY_COLLECTOR_CONTAINER_NAME)
            {
                return Err(ValidationError::new(
                    format!("{base}.workerGroupSpecs[{i}].template.spec.containers[{j}].name"),
                    format!(
                        "worker group {} pod template must not define a container with name '{RAY_HISTORY_COLLECTOR_CONTAINER_NAME}' when history server collector options are enabled",
                        group.group_name
                    ),
                ));
            }
        }
    }
    // 15. Auth.
    auth(spec, base)?;
    // 16. Network policy.
    if spec.network_policy.is_some() && !options.ray_cluster_network_policy {
        return Err(ValidationError::new(
            format!("{base}.networkPolicy"),
            "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled",
        ));
    }
    network_policy(spec, base)?;
    // 17. TLS.
    if spec.tls_options.is_some() && !options.ray_cluster_mtls {
        return Err(ValidationError::new(
            format!("{base}.tlsOptions"),
            "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled",
        ));
    }
    tls(spec, base)
}

/// `validateGcsFaultToleranceBackend`.
fn gcs_ft_backend(
    ft: &GcsFaultToleranceOptions,
    head_container: &Container,
    spec: &RayClusterSpec,
    options: &ValidationOptions,
    path: &str,
    head_path: &str,
) -> ValidationResult {
    if ft.backend != Some(GcsFaultToleranceBackend::RocksDb) {
        if ft.storage.is_some() {
            return Err(ValidationError::new(
                format!("{path}.storage"),
                "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend",
            ));
        }
        return Ok(());
    }
    if !options.gcs_fault_tolerance_embedded_storage {
        return Err(ValidationError::new(
            format!("{path}.backend"),
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled",
        ));
    }
    let redis_only: [(&str, &str, bool); 4] = [
        (
            "redisAddress",
            "RedisAddress",
            ft.redis_address.as_deref().is_some_and(|a| !a.is_empty()),
        ),
        ("redisUsername", "RedisUsername", ft.redis_username.is_some()),
        ("redisPassword", "RedisPassword", ft.redis_password.is_some()),
        (
            "externalStorageNamespace",
            "ExternalStorageNamespace",
            ft.external_storage_namespace.as_deref().is_some_and(|n| !n.is_empty()),
        ),
    ];
    if let Some((json, go, _)) = redis_only.iter().find(|(_, _, set)| *set) {
        return Err(ValidationError::new(
            format!("{path}.{json}"),
            format!("cannot set GcsFaultToleranceOptions.{go} when backend is 'rocksdb'"),
        ));
    }
    if let Some(storage) = ft.storage.as_ref()
        && storage.claim_name.as_deref().is_some_and(|c| !c.is_empty())
        && (storage.size.is_some()
            || storage.storage_class_name.is_some()
            || storage.access_modes.as_ref().is_some_and(|m| !m.is_empty()))
    {
        return Err(ValidationError::new(
            format!("{path}.storage.claimName"),
            "GcsFaultToleranceOptions.Storage.ClaimName is mutually exclusive with size, storageClassName, and accessModes",
        ));
    }
    let env = container_env(head_container);
    if env_exists(env, RAY_GCS_STORAGE_ENV) || env_exists(env, RAY_GCS_STORAGE_PATH_ENV) {
        return Err(ValidationError::new(
            format!("{head_path}.template.spec.containers[0].env"),
            format!(
                "cannot set `{RAY_GCS_STORAGE_ENV}` or `{RAY_GCS_STORAGE_PATH_ENV}` env var in head Pod when the embedded GCS FT backend is used - these are managed by KubeRay"
            ),
        ));
    }
    if let Some(i) = head_container
        .volume_mounts
        .as_deref()
        .unwrap_or_default()
        .iter()
        .position(|m| m.mount_path == GCS_STORAGE_MOUNT_PATH || m.name == GCS_STORAGE_VOLUME_NAME)
    {
        return Err(ValidationError::new(
            format!("{head_path}.template.spec.containers[0].volumeMounts[{i}]"),
            format!(
                "cannot set a volume mount named {} or mounted at {GCS_STORAGE_MOUNT_PATH} in the head container when the embedded GCS FT backend is used - it is managed by KubeRay",
                k8s::go_quote(GCS_STORAGE_VOLUME_NAME)
            ),
        ));
    }
    let volumes = spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.volumes.as_deref())
        .unwrap_or_default();
    if let Some(i) = volumes.iter().position(|v| v.name == GCS_STORAGE_VOLUME_NAME) {
        return Err(ValidationError::new(
            format!("{head_path}.template.spec.volumes[{i}]"),
            format!(
                "cannot set a volume named {} in the head Pod when the embedded GCS FT backend is used - it is managed by KubeRay",
                k8s::go_quote(GCS_STORAGE_VOLUME_NAME)
            ),
        ));
    }
    Ok(())
}

/// `validateCollectorOptions`.
fn collector_options(collector: &CollectorOptions, path: &str) -> ValidationResult {
    if collector.image.as_deref().is_none_or(str::is_empty) {
        return Err(ValidationError::new(
            format!("{path}.image"),
            "historyServerOptions.collectorOptions.image must be set",
        ));
    }
    let env = collector.env.as_deref().unwrap_or_default();
    // Go builds a map: the last entry of a name wins.
    let get = |name: &str| env.iter().rev().find(|e| e.name == name);
    let has_value = |name: &str| {
        get(name).is_some_and(|e| e.value.as_deref().is_some_and(|v| !v.is_empty()) || e.value_from.is_some())
    };
    let env_path = format!("{path}.env");
    let forbidden = [
        COLLECTOR_POD_IP_ENV,
        COLLECTOR_FQ_RAY_IP_ENV,
        COLLECTOR_RAY_CLUSTER_NAME_ENV,
        COLLECTOR_RAY_CLUSTER_NAMESPACE_ENV,
        COLLECTOR_RAY_ROLE_ENV,
        COLLECTOR_OWNER_KIND_ENV,
        COLLECTOR_OWNER_NAME_ENV,
        COLLECTOR_EVENTS_PORT_ENV,
    ];
    if let Some(name) = forbidden.iter().find(|n| get(n).is_some()) {
        return Err(ValidationError::new(
            format!("{env_path}[{name}]"),
            format!(
                "historyServerOptions.collectorOptions.env must not contain {name}: it is managed by KubeRay and injected automatically into the collector container"
            ),
        ));
    }
    let backend = get(COLLECTOR_STORAGE_BACKEND_ENV)
        .and_then(|e| e.value.as_deref())
        .unwrap_or_default();
    let missing = |name: &str, message: String| Err(ValidationError::new(format!("{env_path}[{name}]"), message));
    if backend.is_empty() {
        return missing(
            COLLECTOR_STORAGE_BACKEND_ENV,
            format!(
                "{COLLECTOR_STORAGE_BACKEND_ENV} environment variable must be set with a literal string value in historyServerOptions.collectorOptions.env"
            ),
        );
    }
    let sb = COLLECTOR_STORAGE_BACKEND_ENV;
    match backend.to_uppercase().as_str() {
        "GCS" if !has_value(COLLECTOR_GCS_BUCKET_ENV) => missing(
            COLLECTOR_GCS_BUCKET_ENV,
            format!("{COLLECTOR_GCS_BUCKET_ENV} environment variable must be set when {sb} is GCS"),
        ),
        "S3" if !has_value(COLLECTOR_S3_REGION_ENV) => missing(
            COLLECTOR_S3_REGION_ENV,
            format!("{COLLECTOR_S3_REGION_ENV} environment variable must be set when {sb} is S3"),
        ),
        "AZUREBLOB" => {
            let mode = COLLECTOR_AZURE_STORAGE_AUTH_MODE_ENV;
            let cs = COLLECTOR_AZURE_STORAGE_CONNECTION_STRING_ENV;
            let url = COLLECTOR_AZURE_STORAGE_ACCOUNT_URL_ENV;
            let auth_mode = get(mode)
                .and_then(|e| e.value.as_deref())
                .map(|v| v.trim().to_lowercase())
                .unwrap_or_default();
            match auth_mode.as_str() {
                "connection_string" if !has_value(cs) => missing(
                    cs,
                    format!(
                        "{cs} environment variable must be set when {sb} is AZUREBLOB and {mode} is connection_string"
                    ),
                ),
                "workload_identity" | "default" if !has_value(url) => missing(
                    url,
                    format!("{url} environment variable must be set when {sb} is AZUREBLOB and {mode} is {auth_mode}"),
                ),
                "connection_string" | "workload_identity" | "default" => Ok(()),
                _ if !has_value(cs) && !has_value(url) => missing(
                    cs,
                    format!("either {cs} or {url} environment variable must be set when {sb} is AZUREBLOB"),
                ),
                _ => Ok(()),
            }
        }
        "ALIYUNOSS" => {
            for name in [
                COLLECTOR_ALIYUN_BUCKET_ENV,
                COLLECTOR_ALIYUN_ENDPOINT_ENV,
                COLLECTOR_ALIYUN_REGION_ENV,
            ] {
                if !has_value(name) {
                    return missing(
                        name,
                        format!("{name} environment variable must be set when {sb} is ALIYUNOSS"),
                    );
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

/// Token auth rules: minimum Ray versions for `token` and `enableK8sTokenAuth`, no `secretName` with the
/// latter, which also needs mode `token`.
fn auth(spec: &RayClusterSpec, base: &str) -> ValidationResult {
    let path = format!("{base}.authOptions");
    let token = spec.auth_options.as_ref().and_then(|a| a.mode) == Some(AuthMode::Token);
    if !token {
        if k8s_auth_enabled(spec) {
            return Err(ValidationError::new(
                format!("{path}.enableK8sTokenAuth"),
                "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'",
            ));
        }
        return Ok(());
    }
    let ray_version = spec.ray_version.as_deref().unwrap_or_default();
    let version_path = format!("{base}.rayVersion");
    if ray_version.is_empty() {
        return Err(ValidationError::new(
            version_path,
            "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required",
        ));
    }
    let version = k8s::parse_generic_version(ray_version).map_err(|e| {
        ValidationError::new(
            version_path.clone(),
            format!("authOptions.mode is 'token' but RayVersion format is invalid: {ray_version}, {e}"),
        )
    })?;
    if k8s::version_less_than(&version, &[2, 52, 0]) {
        return Err(ValidationError::new(
            version_path,
            format!("authOptions.mode is 'token' but minimum Ray version is 2.52.0, got {ray_version}"),
        ));
    }
    if k8s_auth_enabled(spec) {
        if k8s::version_less_than(&version, &[2, 55, 0]) {
            return Err(ValidationError::new(
                version_path,
                format!(
                    "authOptions.enableK8sTokenAuth is enabled but minimum Ray version is 2.55.0, got {ray_version}"
                ),
            ));
        }
        if spec
            .auth_options
            .as_ref()
            .and_then(|a| a.secret_name.as_deref())
            .is_some_and(|s| !s.is_empty())
        {
            return Err(ValidationError::new(
                format!("{path}.secretName"),
                "authOptions.enableK8sTokenAuth is enabled and authOptions.secretName is also set",
            ));
        }
    }
    Ok(())
}

/// `validateNetworkPolicy`.
fn network_policy(spec: &RayClusterSpec, base: &str) -> ValidationResult {
    let Some(np) = spec.network_policy.as_ref() else {
        return Ok(());
    };
    let path = format!("{base}.networkPolicy");
    let mode = np.mode.unwrap_or(NetworkPolicyMode::DenyAll);
    let quoted_mode = k8s::go_quote(mode.as_str());
    let rules_check = |label: &str, field: String, ingress: bool, egress: bool| -> ValidationResult {
        if mode == NetworkPolicyMode::DenyAllEgress && ingress {
            return Err(ValidationError::new(
                format!("{field}.ingressRules"),
                format!(
                    "networkPolicy.{label}.ingressRules cannot be set when mode is {quoted_mode} (ingress is not restricted)"
                ),
            ));
        }
        if mode == NetworkPolicyMode::DenyAllIngress && egress {
            return Err(ValidationError::new(
                format!("{field}.egressRules"),
                format!(
                    "networkPolicy.{label}.egressRules cannot be set when mode is {quoted_mode} (egress is not restricted)"
                ),
            ));
        }
        Ok(())
    };
    let non_empty = |v: Option<usize>| v.is_some_and(|n| n > 0);
    if let Some(head) = np.head.as_ref() {
        rules_check(
            "head",
            format!("{path}.head"),
            non_empty(head.ingress_rules.as_ref().map(Vec::len)),
            non_empty(head.egress_rules.as_ref().map(Vec::len)),
        )?;
    }
    if let Some(worker) = np.worker.as_ref() {
        rules_check(
            "worker",
            format!("{path}.worker"),
            non_empty(worker.ingress_rules.as_ref().map(Vec::len)),
            non_empty(worker.egress_rules.as_ref().map(Vec::len)),
        )?;
    }
    let workers = spec.worker_group_specs.as_deref().unwrap_or_default();
    for (i, group) in workers.iter().enumerate() {
        let errs = k8s::is_dns1123_label(&group.group_name);
        if !errs.is_empty() {
            return Err(ValidationError::new(
                format!("{base}.workerGroupSpecs[{i}].groupName"),
                format!(
                    "worker group name {} must be a valid DNS1123 label when networkPolicy is enabled (it is embedded in the NetworkPolicy name): {}",
                    k8s::go_quote(&group.group_name),
                    k8s::go_list(&errs)
                ),
            ));
        }
    }
    for (i, wg) in np.worker_groups.as_deref().unwrap_or_default().iter().enumerate() {
        rules_check(
            &format!("workerGroups[{}]", k8s::go_quote(&wg.group_name)),
            format!("{path}.workerGroups[{i}]"),
            non_empty(wg.ingress_rules.as_ref().map(Vec::len)),
            non_empty(wg.egress_rules.as_ref().map(Vec::len)),
        )?;
        if !workers.iter().any(|g| g.group_name == wg.group_name) {
            return Err(ValidationError::new(
                format!("{path}.workerGroups[{i}].groupName"),
                format!(
                    "networkPolicy.workerGroups[{}] does not match any group name in workerGroupSpecs",
                    k8s::go_quote(&wg.group_name)
                ),
            ));
        }
    }
    Ok(())
}

const TLS_FORBIDDEN_ENV: [&str; 4] = [
    RAY_USE_TLS_ENV,
    RAY_TLS_SERVER_CERT_ENV,
    RAY_TLS_SERVER_KEY_ENV,
    RAY_TLS_CA_CERT_ENV,
];

/// `validateNoConflictingTLSVolumeMount`.
fn tls_mounts(mounts: Option<&[VolumeMount]>, location: &str, path: &str) -> ValidationResult {
    for (i, m) in mounts.unwrap_or_default().iter().enumerate() {
        if m.name == RAY_TLS_VOLUME_NAME {
            return Err(ValidationError::new(
                format!("{path}.volumeMounts[{i}].name"),
                format!(
                    "cannot use volume mount named {} in {location} when tlsOptions is set - the operator manages TLS configuration automatically",
                    k8s::go_quote(RAY_TLS_VOLUME_NAME)
                ),
            ));
        }
        if m.mount_path == RAY_TLS_CERT_MOUNT_PATH {
            return Err(ValidationError::new(
                format!("{path}.volumeMounts[{i}].mountPath"),
                format!(
                    "cannot use volume mount at path {} in {location} when tlsOptions is set - the operator manages TLS configuration automatically",
                    k8s::go_quote(RAY_TLS_CERT_MOUNT_PATH)
                ),
            ));
        }
    }
    Ok(())
}

/// `validateTLSOptions` (only when `tlsOptions.enabled`; the gate was checked before).
fn tls(spec: &RayClusterSpec, base: &str) -> ValidationResult {
    if spec.tls_options.as_ref().and_then(|t| t.enabled) != Some(true) {
        return Ok(());
    }
    if let Some(head) = containers(&spec.head_group_spec.template).first() {
        let path = format!("{base}.headGroupSpec.template.spec.containers[0]");
        if let Some(name) = TLS_FORBIDDEN_ENV.iter().find(|n| env_exists(container_env(head), n)) {
            return Err(ValidationError::new(
                format!("{path}.env[{name}]"),
                format!(
                    "cannot set {name} environment variable in head Pod when tlsOptions is set - the operator manages TLS configuration automatically"
                ),
            ));
        }
        tls_mounts(head.volume_mounts.as_deref(), "head Pod", &path)?;
    }
    for (i, group) in spec
        .worker_group_specs
        .as_deref()
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        if let Some(worker) = containers(&group.template).first() {
            let path = format!("{base}.workerGroupSpecs[{i}].template.spec.containers[0]");
            let quoted = k8s::go_quote(&group.group_name);
            if let Some(name) = TLS_FORBIDDEN_ENV.iter().find(|n| env_exists(container_env(worker), n)) {
                return Err(ValidationError::new(
                    format!("{path}.env[{name}]"),
                    format!(
                        "cannot set {name} environment variable in worker group {quoted} when tlsOptions is set - the operator manages TLS configuration automatically"
                    ),
                ));
            }
            tls_mounts(
                worker.volume_mounts.as_deref(),
                &format!("worker group {quoted}"),
                &path,
            )?;
        }
    }
    if let Some(autoscaler) = spec.autoscaler_options.as_ref() {
        let path = format!("{base}.autoscalerOptions");
        if let Some(name) = TLS_FORBIDDEN_ENV
            .iter()
            .find(|n| env_exists(autoscaler.env.as_deref(), n))
        {
            return Err(ValidationError::new(
                format!("{path}.env[{name}]"),
                format!(
                    "cannot set {name} environment variable in autoscalerOptions.env when tlsOptions is set - the operator manages TLS configuration for the autoscaler automatically"
                ),
            ));
        }
        tls_mounts(
            autoscaler.volume_mounts.as_deref(),
            "autoscalerOptions.volumeMounts",
            &path,
        )?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn cluster(value: serde_json::Value) -> RayCluster {
        serde_json::from_value(value).unwrap()
    }

    /// A valid cluster: one head container, group `worker-group-1` with min 0 / max 4.
    fn base() -> serde_json::Value {
        json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "raycluster-sample", "namespace": "default"},
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [{"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}},
                "workerGroupSpecs": [{
                    "groupName": "worker-group-1", "replicas": 1, "minReplicas": 0, "maxReplicas": 4, "rayStartParams": {},
                    "template": {"spec": {"containers": [{"name": "ray-worker", "image": "rayproject/ray:2.52.0"}]}}
                }]
            }
        })
    }

    fn spec_err(value: serde_json::Value) -> ValidationError {
        spec_err_with(value, &ValidationOptions::default())
    }

    fn spec_err_with(value: serde_json::Value, options: &ValidationOptions) -> ValidationError {
        let c = cluster(value);
        validate_ray_cluster_spec(&c.spec, c.metadata.annotations.as_ref(), options).unwrap_err()
    }

    fn spec_ok(value: serde_json::Value) {
        let c = cluster(value);
        assert_eq!(
            validate_ray_cluster_spec(&c.spec, c.metadata.annotations.as_ref(), &ValidationOptions::default()),
            Ok(())
        );
    }

    fn head_env(v: &mut serde_json::Value, name: &str, value: &str) {
        let env = &mut v["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["env"];
        if env.is_null() {
            *env = json!([]);
        }
        env.as_array_mut().unwrap().push(json!({"name": name, "value": value}));
    }

    #[test]
    fn display_is_field_then_message() {
        let e = ValidationError::new("metadata.name", "bad");
        assert_eq!(e.to_string(), "metadata.name: bad");
        assert_eq!(e.message(), "bad");
        assert_eq!(e.field(), "metadata.name");
    }

    #[test]
    fn base_cluster_is_valid() {
        assert_eq!(
            validate_ray_cluster(&cluster(base()), &ValidationOptions::default()),
            Ok(())
        );
    }

    #[test]
    fn metadata_name_rules() {
        let meta = |name: &str| ObjectMeta {
            name: Some(name.to_owned()),
            ..Default::default()
        };
        let e = validate_ray_cluster_metadata(&meta(&"a".repeat(54))).unwrap_err();
        assert_eq!(e.message, "RayCluster name should be no more than 53 characters");
        assert_eq!(e.field, "metadata.name");
        assert_eq!(validate_ray_cluster_metadata(&meta(&"a".repeat(53))), Ok(()));
        let e = validate_ray_cluster_metadata(&meta(&"1".repeat(53))).unwrap_err();
        assert_eq!(
            e.message,
            "RayCluster name should be a valid DNS1035 label: [a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')]"
        );
    }

    #[test]
    fn golden_r62_suspended_group_with_autoscaling_is_rejected() {
        let mut v = base();
        v["spec"]["enableInTreeAutoscaling"] = json!(true);
        v["spec"]["workerGroupSpecs"][0]["suspend"] = json!(true);
        let e = spec_err(v.clone());
        assert_eq!(
            e.message,
            "worker group worker-group-1 cannot be suspended with Autoscaler enabled"
        );
        assert_eq!(e.field, "spec.workerGroupSpecs[0].suspend");
        // Autoscaling off, gate on: fine. Gate off: rejected.
        v["spec"]["enableInTreeAutoscaling"] = json!(false);
        spec_ok(v.clone());
        let gate_off = ValidationOptions {
            ray_job_deletion_policy: false,
            ..Default::default()
        };
        let e = spec_err_with(v, &gate_off);
        assert_eq!(
            e.message,
            "worker group worker-group-1 can be suspended only when the RayJobDeletionPolicy feature gate is enabled"
        );
    }

    #[test]
    fn golden_r64_replica_validation() {
        let group = |min: Option<i32>, max: Option<i32>, replicas: i32| {
            let mut v = base();
            let g = &mut v["spec"]["workerGroupSpecs"][0];
            g["groupName"] = json!("worker-group-3");
            g["replicas"] = json!(replicas);
            g.as_object_mut().unwrap().remove("minReplicas");
            g.as_object_mut().unwrap().remove("maxReplicas");
            if let Some(min) = min {
                g["minReplicas"] = json!(min);
            }
            if let Some(max) = max {
                g["maxReplicas"] = json!(max);
            }
            v
        };
        let e = spec_err(group(Some(5), Some(3), 4));
        assert_eq!(
            e.message,
            "worker group worker-group-3 has minReplicas 5 greater than maxReplicas 3"
        );
        assert_eq!(e.field, "spec.workerGroupSpecs[0].minReplicas");
        spec_ok(group(Some(2), Some(5), 1));
        let both = "worker group worker-group-3 must set both minReplicas and maxReplicas when autoscaling is disabled";
        for (min, max, field) in [
            (None, Some(5), "minReplicas"),
            (Some(1), None, "maxReplicas"),
            (None, None, "minReplicas"),
        ] {
            let e = spec_err(group(min, max, 1));
            assert_eq!(e.message, both);
            assert_eq!(e.field, format!("spec.workerGroupSpecs[0].{field}"));
        }
        let autoscaled = |min: Option<i32>, max: Option<i32>| {
            let mut v = group(min, max, 1);
            v["spec"]["enableInTreeAutoscaling"] = json!(true);
            v
        };
        let e = spec_err(autoscaled(Some(-1), Some(5)));
        assert_eq!(e.message, "worker group worker-group-3 has negative minReplicas -1");
        assert_eq!(e.field, "spec.workerGroupSpecs[0].minReplicas");
        let e = spec_err(autoscaled(Some(0), Some(-1)));
        assert_eq!(e.message, "worker group worker-group-3 has negative maxReplicas -1");
        assert_eq!(e.field, "spec.workerGroupSpecs[0].maxReplicas");
        spec_ok(autoscaled(None, None));
    }

    #[test]
    fn golden_r65_gcs_fault_tolerance_conflicts() {
        let both = "ray.io/ft-enabled annotation and GcsFaultToleranceOptions are both set. Please use only GcsFaultToleranceOptions to configure GCS fault tolerance";
        let mut v = base();
        v["metadata"]["annotations"] = json!({"ray.io/ft-enabled": "false"});
        v["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379"});
        let e = spec_err(v);
        assert_eq!(e.message, both);
        assert_eq!(e.field, "spec.gcsFaultToleranceOptions");

        let mut v = base();
        v["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379"});
        head_env(&mut v, "RAY_REDIS_ADDRESS", "redis:6379");
        let e = spec_err(v);
        assert_eq!(
            e.message,
            "cannot set `RAY_REDIS_ADDRESS` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisAddress instead"
        );
        assert_eq!(
            e.field,
            "spec.headGroupSpec.template.spec.containers[0].env[RAY_REDIS_ADDRESS]"
        );

        let mut v = base();
        head_env(&mut v, "RAY_REDIS_ADDRESS", "redis:6379");
        let e = spec_err(v.clone());
        assert_eq!(
            e.message,
            "RAY_REDIS_ADDRESS is set which implicitly enables GCS fault tolerance, but GcsFaultToleranceOptions is not set. Please set GcsFaultToleranceOptions to enable GCS fault tolerance"
        );
        assert_eq!(
            e.field,
            "spec.headGroupSpec.template.spec.containers[0].env[RAY_REDIS_ADDRESS]"
        );

        v["metadata"]["annotations"] = json!({"ray.io/ft-enabled": "true"});
        spec_ok(v);

        let mut v = base();
        v["metadata"]["annotations"] = json!({"ray.io/external-storage-namespace": "ns"});
        v["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379"});
        let e = spec_err(v);
        assert_eq!(
            e.message,
            "cannot set `ray.io/external-storage-namespace` annotation when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.ExternalStorageNamespace instead"
        );
        assert_eq!(e.field, "metadata.annotations[ray.io/external-storage-namespace]");
    }

    #[test]
    fn golden_r67_status_suspending_and_suspended() {
        let with = |suspending: &str, suspended: &str| {
            let mut v = base();
            v["status"] = json!({"conditions": [
                {"type": "RayClusterSuspending", "status": suspending, "reason": "r", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"},
                {"type": "RayClusterSuspended", "status": suspended, "reason": "r", "message": "", "lastTransitionTime": "2024-01-01T00:00:00Z"}
            ]});
            validate_ray_cluster_status(&cluster(v))
        };
        let e = with("True", "True").unwrap_err();
        assert_eq!(
            e.message,
            "invalid RayCluster State: rayv1.RayClusterSuspending and rayv1.RayClusterSuspended conditions should not be both true"
        );
        assert_eq!(e.field, "status.conditions");
        for (a, b) in [
            ("True", "False"),
            ("False", "True"),
            ("False", "False"),
            ("Unknown", "True"),
        ] {
            assert_eq!(with(a, b), Ok(()));
        }
        assert_eq!(validate_ray_cluster_status(&cluster(base())), Ok(()));
    }

    #[test]
    fn golden_r68_idle_timeout_seconds() {
        let group_idle = |idle: i32, version: Option<&str>, env: Option<&str>| {
            let mut v = base();
            v["spec"]["enableInTreeAutoscaling"] = json!(true);
            v["spec"]["workerGroupSpecs"][0]["idleTimeoutSeconds"] = json!(idle);
            if let Some(version) = version {
                v["spec"]["autoscalerOptions"] = json!({"version": version});
            }
            if let Some(env) = env {
                head_env(&mut v, "RAY_enable_autoscaler_v2", env);
            }
            v
        };
        spec_ok(group_idle(60, Some("v2"), None));
        spec_ok(group_idle(60, None, Some("1")));
        spec_ok(group_idle(0, Some("v2"), None));
        let e = spec_err(group_idle(-10, Some("v2"), None));
        assert_eq!(
            e.message,
            "worker group worker-group-1: idleTimeoutSeconds must be non-negative, got -10"
        );
        assert_eq!(e.field, "spec.workerGroupSpecs[0].idleTimeoutSeconds");
        let not_v2 = "worker group worker-group-1: idleTimeoutSeconds is set, but autoscaler v2 is not enabled. Please set .spec.autoscalerOptions.version to 'v2' (or set RAY_enable_autoscaler_v2 environment variable to 'true' in the head pod if using KubeRay < 1.4.0)";
        for v in [
            group_idle(60, None, None),
            group_idle(60, None, Some("false")),
            group_idle(60, Some("v1"), None),
        ] {
            let e = spec_err(v);
            assert_eq!(e.message, not_v2);
            assert_eq!(e.field, "spec.workerGroupSpecs[0].idleTimeoutSeconds");
        }
        let options_idle = |idle: i32, version: Option<&str>| {
            let mut v = base();
            v["spec"]["enableInTreeAutoscaling"] = json!(true);
            v["spec"]["autoscalerOptions"] = json!({"idleTimeoutSeconds": idle});
            if let Some(version) = version {
                v["spec"]["autoscalerOptions"]["version"] = json!(version);
            }
            v
        };
        spec_ok(options_idle(120, Some("v1")));
        spec_ok(options_idle(120, Some("v2")));
        spec_ok(options_idle(120, None));
        spec_ok(options_idle(0, None));
        let e = spec_err(options_idle(-10, None));
        assert_eq!(
            e.message,
            "autoscalerOptions.idleTimeoutSeconds must be non-negative, got -10"
        );
        assert_eq!(e.field, "spec.autoscalerOptions.idleTimeoutSeconds");
    }

    #[test]
    fn upgrade_options_rules() {
        let mut v = base();
        v["spec"]["upgradeStrategy"] = json!({"type": "Recreate"});
        assert_eq!(validate_ray_cluster_upgrade_options(&cluster(v.clone())), Ok(()));
        v["metadata"]["labels"] = json!({"ray.io/originated-from-crd": "RayJob"});
        let e = validate_ray_cluster_upgrade_options(&cluster(v.clone())).unwrap_err();
        assert_eq!(
            e.message,
            "upgradeStrategy cannot be set when RayCluster is created by RayJob"
        );
        assert_eq!(e.field, "spec.upgradeStrategy.type");
        v["metadata"]["labels"] = json!({"ray.io/originated-from-crd": "RayService"});
        let e = validate_ray_cluster_upgrade_options(&cluster(v)).unwrap_err();
        assert_eq!(
            e.message,
            "upgradeStrategy cannot be set when RayCluster is created by RayService"
        );
    }

    #[test]
    fn head_and_worker_container_rules() {
        let mut v = base();
        v["spec"]["headGroupSpec"]["template"]["spec"]["containers"] = json!([]);
        let e = spec_err(v);
        assert_eq!(e.message, "headGroupSpec should have at least one container");
        assert_eq!(e.field, "spec.headGroupSpec.template.spec.containers");
        let mut v = base();
        v["spec"]["workerGroupSpecs"][0]["template"]["spec"]["containers"] = json!([]);
        let e = spec_err(v);
        assert_eq!(e.message, "workerGroupSpec should have at least one container");
        assert_eq!(e.field, "spec.workerGroupSpecs[0].template.spec.containers");
    }

    #[test]
    fn resources_and_labels_rules() {
        let mut v = base();
        v["spec"]["headGroupSpec"]["rayStartParams"] = json!({"num-cpus": "1"});
        v["spec"]["headGroupSpec"]["resources"] = json!({"CPU": "1"});
        let e = spec_err(v);
        assert_eq!(
            e.message,
            "resource fields should not be set in both rayStartParams and Resources for Head group; please use only one"
        );
        assert_eq!(e.field, "spec.headGroupSpec.resources");
        let mut v = base();
        v["spec"]["workerGroupSpecs"][0]["rayStartParams"] = json!({"labels": "a=b"});
        let e = spec_err(v);
        assert_eq!(
            e.message,
            "rayStartParams['labels'] is not supported for worker-group-1 group; please use the top-level Labels field instead"
        );
        let mut v = base();
        v["spec"]["headGroupSpec"]["labels"] = json!({"ok": "fine", "bad key!": "v"});
        let e = spec_err(v);
        assert!(
            e.message
                .starts_with("invalid label key for Head group: 'bad key!', error: name part must consist of"),
            "{}",
            e.message
        );
        assert_eq!(e.field, "spec.headGroupSpec.labels[bad key!]");
        let mut v = base();
        v["spec"]["headGroupSpec"]["labels"] = json!({"k": "-v"});
        let e = spec_err(v);
        assert_eq!(
            e.message,
            "invalid label value for key 'k' in Head group: '-v', error: a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
        );
    }

    #[test]
    fn priority_rules() {
        let with = |version: Option<&str>, autoscaler: Option<&str>| {
            let mut v = base();
            v["spec"]["enableInTreeAutoscaling"] = json!(true);
            v["spec"]["workerGroupSpecs"][0]["priority"] = json!(5);
            if let Some(version) = version {
                v["spec"]["rayVersion"] = json!(version);
            }
            if let Some(a) = autoscaler {
                v["spec"]["autoscalerOptions"] = json!({"version": a});
            }
            v
        };
        assert_eq!(
            spec_err(with(None, Some("v2"))).message,
            "worker group worker-group-1: priority is set, but RayVersion was not specified. Ray version 2.56.0 or later is required"
        );
        assert_eq!(
            spec_err(with(Some("2.55.0"), Some("v2"))).message,
            "worker group worker-group-1: priority is set, but minimum Ray version is 2.56.0, got 2.55.0"
        );
        assert!(
            spec_err(with(Some("latest"), Some("v2"))).message.starts_with(
                "worker group worker-group-1: priority is set, but RayVersion format is invalid: latest, "
            )
        );
        let e = spec_err(with(Some("2.56.0"), None));
        assert_eq!(
            e.message,
            "worker group worker-group-1: priority is set to 5, but autoscaler v2 is not enabled. Priority is only supported with autoscaler v2 enabled"
        );
        assert_eq!(e.field, "spec.workerGroupSpecs[0].priority");
        spec_ok(with(Some("2.56.0"), Some("v2")));
    }

    #[test]
    fn redis_and_autoscaler_env_rules() {
        let mut v = base();
        v["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379"});
        v["spec"]["headGroupSpec"]["rayStartParams"] = json!({"redis-password": "x"});
        assert_eq!(
            spec_err(v).message,
            "cannot set `redis-password` in rayStartParams when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead"
        );
        let mut v = base();
        v["spec"]["gcsFaultToleranceOptions"] = json!({"redisAddress": "redis:6379"});
        head_env(&mut v, "REDIS_PASSWORD", "x");
        assert_eq!(
            spec_err(v).message,
            "cannot set `REDIS_PASSWORD` env var in head Pod when GcsFaultToleranceOptions is enabled - use GcsFaultToleranceOptions.RedisPassword instead"
        );
        let mut v = base();
        head_env(&mut v, "REDIS_USERNAME", "x");
        assert_eq!(
            spec_err(v).message,
            "cannot set redis username in rayStartParams or environment variables - use GcsFaultToleranceOptions.RedisUsername instead"
        );
        let mut v = base();
        head_env(&mut v, "RAY_enable_autoscaler_v2", "true");
        let e = spec_err(v);
        assert_eq!(
            e.message,
            "environment variable RAY_enable_autoscaler_v2 cannot be set to 'true' when enableInTreeAutoscaling is false. Please set enableInTreeAutoscaling: true to use autoscaler v2"
        );
        let mut v = base();
        v["spec"]["enableInTreeAutoscaling"] = json!(true);
        v["spec"]["autoscalerOptions"] = json!({"version": "v1"});
        head_env(&mut v, "RAY_enable_autoscaler_v2", "false");
        assert_eq!(
            spec_err(v).message,
            "both .spec.autoscalerOptions.version and head Pod env var RAY_enable_autoscaler_v2 are set, please only use the former"
        );
        let mut v = base();
        v["spec"]["enableInTreeAutoscaling"] = json!(true);
        v["spec"]["autoscalerOptions"] = json!({"version": "v2"});
        v["spec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = json!("Always");
        assert_eq!(
            spec_err(v.clone()).message,
            "restartPolicy for head Pod should be Never or unset when using autoscaler V2"
        );
        v["spec"]["headGroupSpec"]["template"]["spec"]["restartPolicy"] = json!("Never");
        v["spec"]["workerGroupSpecs"][0]["template"]["spec"]["restartPolicy"] = json!("OnFailure");
        assert_eq!(
            spec_err(v).message,
            "restartPolicy for worker group worker-group-1 should be Never or unset when using autoscaler V2"
        );
        let mut v = base();
        v["spec"]["autoscalerOptions"] = json!({"env": [{"name": "KUBERAY_GEN_AUTOSCALER_START_CMD", "value": "x"}]});
        assert_eq!(
            spec_err(v).message,
            "autoscalerOptions.env must not contain KUBERAY_GEN_AUTOSCALER_START_CMD: it is managed by KubeRay and injected automatically into the autoscaler container"
        );
    }

    #[test]
    fn rocksdb_backend_rules() {
        let mut v = base();
        v["spec"]["gcsFaultToleranceOptions"] = json!({"backend": "rocksdb"});
        assert_eq!(
            spec_err(v.clone()).message,
            "the embedded RocksDB GCS fault tolerance backend (GcsFaultToleranceOptions.Backend: 'rocksdb') requires the GCSFaultToleranceEmbeddedStorage feature gate to be enabled"
        );
        let all = ValidationOptions::all_enabled();
        v["spec"]["gcsFaultToleranceOptions"]["redisAddress"] = json!("redis:6379");
        assert_eq!(
            spec_err_with(v, &all).message,
            "cannot set GcsFaultToleranceOptions.RedisAddress when backend is 'rocksdb'"
        );
        let mut v = base();
        v["spec"]["gcsFaultToleranceOptions"] = json!({"backend": "redis", "storage": {"size": "1Gi"}});
        assert_eq!(
            spec_err(v).message,
            "cannot set GcsFaultToleranceOptions.Storage when backend is 'redis' - it only applies to the 'rocksdb' backend"
        );
    }

    #[test]
    fn gated_features_and_auth() {
        let mut v = base();
        v["spec"]["networkPolicy"] = json!({});
        assert_eq!(
            spec_err(v).message,
            "spec.networkPolicy requires the RayClusterNetworkPolicy feature gate to be enabled"
        );
        let mut v = base();
        v["spec"]["tlsOptions"] = json!({"enabled": true});
        assert_eq!(
            spec_err(v).message,
            "spec.tlsOptions requires the RayClusterMTLS feature gate to be enabled"
        );
        let mut v = base();
        v["spec"]["historyServerOptions"] = json!({});
        assert_eq!(
            spec_err(v).message,
            "RayClusterHistoryServer feature gate is not enabled"
        );
        let mut v = base();
        v["spec"]["authOptions"] = json!({"mode": "token"});
        let e = spec_err(v.clone());
        assert_eq!(
            e.message,
            "authOptions.mode is 'token' but RayVersion was not specified. Ray version 2.52.0 or later is required"
        );
        assert_eq!(e.field, "spec.rayVersion");
        v["spec"]["rayVersion"] = json!("2.51.0");
        assert_eq!(
            spec_err(v.clone()).message,
            "authOptions.mode is 'token' but minimum Ray version is 2.52.0, got 2.51.0"
        );
        v["spec"]["rayVersion"] = json!("2.52.0");
        spec_ok(v);
        let mut v = base();
        v["spec"]["authOptions"] = json!({"enableK8sTokenAuth": true});
        assert_eq!(
            spec_err(v).message,
            "authOptions.enableK8sTokenAuth is enabled but authOptions.mode not set to 'token'"
        );
    }

    #[test]
    fn tls_and_network_policy_consistency() {
        let all = ValidationOptions::all_enabled();
        let mut v = base();
        v["spec"]["tlsOptions"] = json!({"enabled": true});
        head_env(&mut v, "RAY_USE_TLS", "1");
        assert_eq!(
            spec_err_with(v, &all).message,
            "cannot set RAY_USE_TLS environment variable in head Pod when tlsOptions is set - the operator manages TLS configuration automatically"
        );
        let mut v = base();
        v["spec"]["networkPolicy"] = json!({"mode": "DenyAllIngress", "worker": {"egressRules": [{}]}});
        assert_eq!(
            spec_err_with(v, &all).message,
            "networkPolicy.worker.egressRules cannot be set when mode is \"DenyAllIngress\" (egress is not restricted)"
        );
        let mut v = base();
        v["spec"]["networkPolicy"] = json!({"workerGroups": [{"groupName": "nope"}]});
        let e = spec_err_with(v, &all);
        assert_eq!(
            e.message,
            "networkPolicy.workerGroups[\"nope\"] does not match any group name in workerGroupSpecs"
        );
        assert_eq!(e.field, "spec.networkPolicy.workerGroups[0].groupName");
    }

    #[test]
    fn tls_managed_volume_mounts_are_refused_with_their_path() {
        let all = ValidationOptions::all_enabled();
        let mut v = base();
        v["spec"]["tlsOptions"] = json!({"enabled": true});
        v["spec"]["headGroupSpec"]["template"]["spec"]["containers"][0]["volumeMounts"] =
            json!([{"name": "data", "mountPath": "/data"}, {"name": "ray-tls", "mountPath": "/x"}]);
        let e = spec_err_with(v, &all);
        assert_eq!(
            e.message,
            "cannot use volume mount named \"ray-tls\" in head Pod when tlsOptions is set - the operator manages TLS configuration automatically"
        );
        assert_eq!(
            e.field,
            "spec.headGroupSpec.template.spec.containers[0].volumeMounts[1].name"
        );

        let mut v = base();
        v["spec"]["tlsOptions"] = json!({"enabled": true});
        v["spec"]["autoscalerOptions"] =
            json!({"volumeMounts": [{"name": "certs", "mountPath": RAY_TLS_CERT_MOUNT_PATH}]});
        let e = spec_err_with(v, &all);
        assert_eq!(
            e.message,
            format!(
                "cannot use volume mount at path \"{RAY_TLS_CERT_MOUNT_PATH}\" in autoscalerOptions.volumeMounts when tlsOptions is set - the operator manages TLS configuration automatically"
            )
        );
        assert_eq!(e.field, "spec.autoscalerOptions.volumeMounts[0].mountPath");
    }
}
