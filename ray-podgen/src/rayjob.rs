//! What the RayJob controller creates (docs/podgen.md#rayjob-and-rayservice-objects): the RayCluster name and Ray job
//! (submission) id, the RayCluster built from `spec.rayClusterSpec`, the `ray job submit` command
//! line, the submitter container, the submitter batch/v1 Job of `K8sJobMode` and the RayJob-owned
//! head service `<rayjob>-head-svc`.
//!
//! Pure: no I/O, environment or clock; randomness only through [`SuffixSource`]. Values KubeRay
//! reads from the RayJob's status (`status.dashboardURL`, `status.jobId`) are read from the given
//! object, so callers set the status first, as the controller does.

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_compat::go_json;
use kube_compat::go_strconv;
use ray_api::constants::{
    COMPONENT_NAME, CRD_KIND_RAY_JOB, DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT,
    DEFAULT_SUBMITTER_CONTAINER_CPU_LIMIT, DEFAULT_SUBMITTER_CONTAINER_CPU_REQUEST,
    DEFAULT_SUBMITTER_CONTAINER_MEMORY_LIMIT, DEFAULT_SUBMITTER_CONTAINER_MEMORY_REQUEST,
    DEFAULT_SUBMITTER_JOB_BACKOFF_LIMIT, DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION, HEAD_GROUP_NAME,
    KUBERNETES_CREATED_BY_LABEL, LOCAL_HOST, MIN_RAY_VERSION_FOR_JOB_METADATA, NODE_TYPE_HEAD, RAY_CLUSTER_LABEL,
    RAY_CONTAINER_INDEX, RAY_ID_LABEL, RAY_JOB_SUBMISSION_MODE_LABEL, RAY_NODE_TYPE_LABEL,
    RAY_ORIGINATED_FROM_CR_NAME_LABEL, RAY_ORIGINATED_FROM_CRD_LABEL, SUBMITTER_CONTAINER_NAME,
};
use ray_api::{JobSubmissionMode, RayCluster, RayClusterSpec, RayJob};

use crate::auth::set_token_auth_env;
use crate::cluster::{auth_enabled, controller_reference};
use crate::config::PodGenConfig;
use crate::containers::{env, push_env};
use crate::env_names::{PYTHONUNBUFFERED, RAY_DASHBOARD_ADDRESS, RAY_JOB_SUBMISSION_ID};
use crate::error::PodGenError;
use crate::random::{SuffixSource, suffixed_name};

/// Pod `restartPolicy` of the default submitter template and of a SidecarMode head pod.
pub const RESTART_POLICY_NEVER: &str = "Never";
/// Container-level `restartPolicy` of the SidecarMode submitter under gate `SidecarSubmitterRestart`.
pub const CONTAINER_RESTART_POLICY_ON_FAILURE: &str = "OnFailure";
/// Value of `PYTHONUNBUFFERED` in the submitter container (real-time logs).
pub const PYTHONUNBUFFERED_VALUE: &str = "1";
/// Value of [`DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION`] on a SidecarMode cluster.
pub const DISABLE_PROVISIONED_HEAD_RESTART_VALUE: &str = "true";
/// Scheme prefixed to `status.dashboardURL` when it has none.
pub const HTTP_SCHEME: &str = "http://";
/// Dashboard path answering `success` once the GCS is healthy.
pub const GCS_HEALTH_PATH: &str = "/api/gcs_healthz";
/// Host of the SidecarMode health URL (the submit address itself uses [`LOCAL_HOST`]).
pub const SIDECAR_HEALTH_HOST: &str = "localhost";
/// Extra `bash` flag of the submitter command (`-ce`): stop at the first failing command.
pub const SUBMITTER_SHELL_FLAGS: &str = "e";
/// Group name reported when a submitter template has no container.
pub const SUBMITTER_GROUP: &str = "submitter";

/// `metadata.name` of the RayJob, or [`PodGenError::MissingName`].
fn job_name(job: &RayJob) -> Result<&str, PodGenError> {
    job.metadata
        .name
        .as_deref()
        .filter(|name| !name.is_empty())
        .ok_or(PodGenError::MissingName { kind: CRD_KIND_RAY_JOB })
}

fn non_empty(value: Option<&String>) -> Option<&str> {
    value.map(String::as_str).filter(|v| !v.is_empty())
}

/// KubeRay's `GenerateRayClusterName`: `<rayjob name>-<5 random chars>` (e.g. `rayjob-sample-b5rs7`).
///
/// The name is not truncated: validation caps RayJob names at 47 characters
/// (`MAX_RAY_JOB_NAME_LENGTH` = 53 − 6), so the result fits the 53-character RayCluster limit.
pub fn ray_cluster_name_for_job(job: &RayJob, suffix_source: &mut dyn SuffixSource) -> String {
    suffixed_name(job.metadata.name.as_deref().unwrap_or_default(), suffix_source)
}

/// KubeRay's `GenerateRayJobId`: `<rayjob name>-<5 random chars>`.
pub fn generate_job_id(job: &RayJob, suffix_source: &mut dyn SuffixSource) -> String {
    suffixed_name(job.metadata.name.as_deref().unwrap_or_default(), suffix_source)
}

/// The `status.jobId` the New → Initializing step sets when it is empty: none in `InteractiveMode`
/// (the user sets `spec.jobId` later), else `spec.jobId` when non-empty, else [`generate_job_id`].
///
/// KubeRay draws the job id before the cluster name; call this before [`initial_ray_cluster_name`]
/// to consume suffixes in the same order.
pub fn initial_job_id(job: &RayJob, suffix_source: &mut dyn SuffixSource) -> Option<String> {
    if job.spec.submission_mode() == JobSubmissionMode::InteractiveMode {
        return None;
    }
    Some(match non_empty(job.spec.job_id.as_ref()) {
        Some(id) => id.to_owned(),
        None => generate_job_id(job, suffix_source),
    })
}

/// The `status.rayClusterName` the New → Initializing step sets when it is empty: the
/// `clusterSelector["ray.io/cluster"]` value when non-empty, else [`ray_cluster_name_for_job`].
pub fn initial_ray_cluster_name(job: &RayJob, suffix_source: &mut dyn SuffixSource) -> String {
    let selected = job
        .spec
        .cluster_selector
        .as_ref()
        .and_then(|selector| non_empty(selector.get(RAY_CLUSTER_LABEL)));
    match selected {
        Some(name) => name.to_owned(),
        None => ray_cluster_name_for_job(job, suffix_source),
    }
}

/// `constructRayClusterForRayJob`: the RayCluster `cluster_name` for `job`.
///
/// Labels: the RayJob's labels plus `ray.io/originated-from-cr-name=<rayjob>`,
/// `ray.io/originated-from-crd=RayJob` and `ray.io/job-submission-mode=<mode>`; annotations: the
/// RayJob's (plus `ray.io/disable-provisioned-head-restart: "true"` in SidecarMode); namespace of the
/// RayJob; controller owner reference to the RayJob; spec = a copy of `spec.rayClusterSpec`. In
/// SidecarMode the submitter container is appended to the head pod, whose `restartPolicy` becomes
/// `Never`.
pub fn build_ray_cluster_for_job(
    job: &RayJob,
    cluster_name: &str,
    config: &PodGenConfig,
) -> Result<RayCluster, PodGenError> {
    let name = job_name(job)?;
    let spec = job
        .spec
        .ray_cluster_spec
        .clone()
        .ok_or_else(|| PodGenError::MissingRayClusterSpec(name.to_owned()))?;
    let mode = job.spec.submission_mode();
    let mut labels = job.metadata.labels.clone().unwrap_or_default();
    labels.insert(RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_owned(), name.to_owned());
    labels.insert(RAY_ORIGINATED_FROM_CRD_LABEL.to_owned(), CRD_KIND_RAY_JOB.to_owned());
    labels.insert(RAY_JOB_SUBMISSION_MODE_LABEL.to_owned(), mode.as_str().to_owned());
    let mut cluster = RayCluster {
        metadata: ObjectMeta {
            name: Some(cluster_name.to_owned()),
            namespace: job.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: job.metadata.annotations.clone(),
            owner_references: Some(vec![controller_reference(
                CRD_KIND_RAY_JOB,
                name,
                job.metadata.uid.as_deref(),
            )]),
            ..ObjectMeta::default()
        },
        spec,
        status: None,
    };
    if mode == JobSubmissionMode::SidecarMode {
        let sidecar = sidecar_submitter_container(job, &cluster, config)?;
        let pod = cluster
            .spec
            .head_group_spec
            .template
            .spec
            .get_or_insert_with(PodSpec::default);
        pod.containers.push(sidecar);
        pod.restart_policy = Some(RESTART_POLICY_NEVER.to_owned());
        cluster.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(
            DISABLE_PROVISIONED_HEAD_RESTART_ANNOTATION.to_owned(),
            DISABLE_PROVISIONED_HEAD_RESTART_VALUE.to_owned(),
        );
    }
    Ok(cluster)
}

/// The head service a RayJob owns (`<rayjob>-head-svc`): the cluster's head service renamed,
/// in the RayJob's namespace, labelled `ray.io/originated-from-cr-name=<rayjob>`,
/// `ray.io/originated-from-crd=RayJob`, `ray.io/node-type=head`, `ray.io/identifier=<rayjob>-head`,
/// selecting the head pod of `cluster`, with a controller owner reference to the RayJob.
pub fn build_rayjob_head_service(
    job: &RayJob,
    cluster: &RayCluster,
    config: &PodGenConfig,
) -> Result<k8s_openapi::api::core::v1::Service, PodGenError> {
    let name = job_name(job)?;
    let namespace = job.metadata.namespace.clone().unwrap_or_default();
    let mut service = crate::service::build_head_service(cluster, config)?;
    service.metadata.name = Some(crate::names::default_head_service_name(name));
    service.metadata.namespace = Some(namespace);
    service.metadata.labels = Some(BTreeMap::from([
        (RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_owned(), name.to_owned()),
        (RAY_ORIGINATED_FROM_CRD_LABEL.to_owned(), CRD_KIND_RAY_JOB.to_owned()),
        (RAY_NODE_TYPE_LABEL.to_owned(), NODE_TYPE_HEAD.to_owned()),
        (
            RAY_ID_LABEL.to_owned(),
            crate::names::check_label(&crate::names::identifier(name, NODE_TYPE_HEAD)),
        ),
    ]));
    service.metadata.owner_references = Some(vec![controller_reference(
        CRD_KIND_RAY_JOB,
        name,
        job.metadata.uid.as_deref(),
    )]);
    Ok(service)
}

/// `getRuntimeEnvJson`: `runtimeEnvYAML` converted to JSON as sigs.k8s.io/yaml's `YAMLToJSON` +
/// Go's encoder write it (keys sorted, compact). An empty YAML string gives an empty string.
pub fn runtime_env_yaml_to_json(runtime_env_yaml: &str) -> Result<String, PodGenError> {
    if runtime_env_yaml.is_empty() {
        return Ok(String::new());
    }
    let value: serde_json::Value =
        ray_api::yaml::from_yaml_str(runtime_env_yaml).map_err(|err| PodGenError::RuntimeEnvYaml(err.to_string()))?;
    Ok(go_json::to_string_sorted(&value))
}

/// A parsed semantic version (Masterminds/semver's loose form: optional `v`, 1-3 numbers).
struct SemVer {
    numbers: [u64; 3],
    prerelease: bool,
}

fn is_semver_ident_list(text: &str) -> bool {
    !text.is_empty()
        && text
            .split('.')
            .all(|part| !part.is_empty() && part.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

fn parse_semver(version: &str) -> Option<SemVer> {
    let text = version.strip_prefix('v').unwrap_or(version);
    let (text, build) = match text.split_once('+') {
        Some((head, build)) => (head, Some(build)),
        None => (text, None),
    };
    if build.is_some_and(|b| !is_semver_ident_list(b)) {
        return None;
    }
    let (core, prerelease) = match text.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (text, None),
    };
    if prerelease.is_some_and(|p| !is_semver_ident_list(p)) {
        return None;
    }
    let parts: Vec<&str> = core.split('.').collect();
    if parts.is_empty() || parts.len() > 3 {
        return None;
    }
    let mut numbers = [0u64; 3];
    for (slot, part) in numbers.iter_mut().zip(&parts) {
        if part.is_empty() || !part.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        *slot = part.parse().ok()?;
    }
    Some(SemVer {
        numbers,
        prerelease: prerelease.is_some(),
    })
}

/// `GetMetadataJson`: `metadata` as Go's `json.Marshal` writes a `map[string]string`, after checking
/// that `ray_version` (when given and non-empty) is a semantic version ≥ 2.6.0 (pre-releases do not
/// satisfy the constraint, as in Masterminds/semver).
pub fn metadata_json(metadata: &BTreeMap<String, String>, ray_version: Option<&str>) -> Result<String, PodGenError> {
    if let Some(version) = ray_version.filter(|v| !v.is_empty()) {
        let parsed = parse_semver(version).ok_or_else(|| PodGenError::RayVersionParse {
            version: version.to_owned(),
        })?;
        let minimum = parse_semver(MIN_RAY_VERSION_FOR_JOB_METADATA).map_or([0; 3], |v| v.numbers);
        if parsed.prerelease || parsed.numbers < minimum {
            return Err(PodGenError::RayVersionTooOldForMetadata);
        }
    }
    Ok(go_json::string_map(metadata))
}

/// Port of the head Ray container named `dashboard` in `spec` (8265 when absent): the port the
/// SidecarMode submitter talks to.
pub fn sidecar_dashboard_port(spec: Option<&RayClusterSpec>) -> i32 {
    spec.and_then(|s| s.head_group_spec.template.spec.as_ref())
        .and_then(|pod| pod.containers.get(RAY_CONTAINER_INDEX))
        .and_then(|c| c.ports.as_ref())
        .and_then(|ports| ports.iter().find(|p| p.name.as_deref() == Some(DASHBOARD_PORT_NAME)))
        .map_or(DEFAULT_DASHBOARD_PORT, |p| p.container_port)
}

/// `BuildJobSubmitCommand`: the shell tokens of the submitter for `mode`, to be joined
/// by single spaces.
///
/// `K8sJobMode`: address = `dashboard_address` (`http://` prefixed when missing), with the
/// `if ! ray job status … ; then … --no-wait … ; fi ; ray job logs … --follow <id>` wrapper.
/// `SidecarMode`: address `http://127.0.0.1:<dashboard port>`, health URL on `localhost`; the wrapper
/// only with gate `SidecarSubmitterRestart`. Other modes are an error.
pub fn build_job_submit_command(
    job: &RayJob,
    mode: &JobSubmissionMode,
    dashboard_address: &str,
    job_id: &str,
    config: &PodGenConfig,
) -> Result<Vec<String>, PodGenError> {
    let (address, health_url, status_check) = match mode {
        JobSubmissionMode::K8sJobMode => {
            let address = if dashboard_address.starts_with(HTTP_SCHEME) {
                dashboard_address.to_owned()
            } else {
                format!("{HTTP_SCHEME}{dashboard_address}")
            };
            let health_url = format!("{address}{GCS_HEALTH_PATH}");
            (address, health_url, true)
        }
        JobSubmissionMode::SidecarMode => {
            let port = sidecar_dashboard_port(job.spec.ray_cluster_spec.as_ref());
            (
                format!("{HTTP_SCHEME}{LOCAL_HOST}:{port}"),
                format!("{HTTP_SCHEME}{SIDECAR_HEALTH_HOST}:{port}{GCS_HEALTH_PATH}"),
                config.feature_gates.sidecar_submitter_restart,
            )
        }
        other => return Err(PodGenError::UnsupportedSubmissionMode(other.as_str().to_owned())),
    };
    let spec = &job.spec;
    let health_probe = format!(
        "python -c \"import urllib.request; r=urllib.request.urlopen('{health_url}', timeout=10); exit(0 if b'success' in r.read() else 1)\""
    );
    let waiting = go_strconv::quote(&format!(
        "Waiting for Ray Dashboard GCS to become healthy at {address} ..."
    ));
    let mut cmd: Vec<String> = Vec::with_capacity(64);
    let mut push = |tokens: &[&str]| cmd.extend(tokens.iter().map(|t| (*t).to_owned()));
    push(&[
        "until",
        &health_probe,
        ">/dev/null",
        "2>&1",
        ";",
        "do",
        "echo",
        &waiting,
    ]);
    push(&[";", "sleep", "2", ";", "done", ";"]);
    if status_check {
        push(&["if", "!", "ray", "job", "status", "--address", &address, job_id]);
        push(&[">/dev/null", "2>&1", ";", "then"]);
    }
    push(&["ray", "job", "submit", "--address", &address]);
    if status_check {
        push(&["--no-wait"]);
    }
    let runtime_env = runtime_env_yaml_to_json(spec.runtime_env_yaml.as_deref().unwrap_or_default())?;
    if !runtime_env.is_empty() {
        push(&["--runtime-env-json", &go_strconv::quote(&runtime_env)]);
    }
    if let Some(metadata) = spec.metadata.as_ref().filter(|m| !m.is_empty()) {
        let ray_version = spec.ray_cluster_spec.as_ref().and_then(|s| s.ray_version.as_deref());
        push(&[
            "--metadata-json",
            &go_strconv::quote(&metadata_json(metadata, ray_version)?),
        ]);
    }
    if !job_id.is_empty() {
        push(&["--submission-id", job_id]);
    }
    let cpus = spec.entrypoint_num_cpus.as_ref().map_or(0.0, |n| n.as_f32());
    if cpus > 0.0 {
        push(&["--entrypoint-num-cpus", &format!("{cpus:.6}")]);
    }
    let gpus = spec.entrypoint_num_gpus.as_ref().map_or(0.0, |n| n.as_f32());
    if gpus > 0.0 {
        push(&["--entrypoint-num-gpus", &format!("{gpus:.6}")]);
    }
    if let Some(resources) = non_empty(spec.entrypoint_resources.as_ref()) {
        push(&["--entrypoint-resources", &go_strconv::quote(resources)]);
    }
    push(&["--", spec.entrypoint.as_deref().unwrap_or_default().trim(), ";"]);
    if status_check {
        push(&[
            "fi",
            ";",
            "ray",
            "job",
            "logs",
            "--address",
            &address,
            "--follow",
            job_id,
        ]);
    }
    Ok(cmd)
}

/// The `K8sJobMode` submitter command tokens for `job` against `dashboard_address`
/// (`status.dashboardURL`) and `job_id` (`status.jobId`); see [`build_job_submit_command`].
pub fn submitter_command(job: &RayJob, dashboard_address: &str, job_id: &str) -> Result<Vec<String>, PodGenError> {
    build_job_submit_command(
        job,
        &JobSubmissionMode::K8sJobMode,
        dashboard_address,
        job_id,
        &PodGenConfig::default(),
    )
}

fn cpu_memory(cpu: &str, memory: &str) -> BTreeMap<String, Quantity> {
    BTreeMap::from([
        ("cpu".to_owned(), Quantity(cpu.to_owned())),
        ("memory".to_owned(), Quantity(memory.to_owned())),
    ])
}

/// `GetDefaultSubmitterContainer`: `ray-job-submitter` with the head Ray container's image, limits
/// cpu `1` / memory `1Gi`, requests cpu `500m` / memory `200Mi`.
pub fn default_submitter_container(cluster_spec: &RayClusterSpec) -> Result<Container, PodGenError> {
    let head = cluster_spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|pod| pod.containers.get(RAY_CONTAINER_INDEX))
        .ok_or_else(|| PodGenError::MissingRayContainer {
            group: HEAD_GROUP_NAME.to_owned(),
        })?;
    Ok(Container {
        name: SUBMITTER_CONTAINER_NAME.to_owned(),
        image: head.image.clone(),
        resources: Some(ResourceRequirements {
            limits: Some(cpu_memory(
                DEFAULT_SUBMITTER_CONTAINER_CPU_LIMIT,
                DEFAULT_SUBMITTER_CONTAINER_MEMORY_LIMIT,
            )),
            requests: Some(cpu_memory(
                DEFAULT_SUBMITTER_CONTAINER_CPU_REQUEST,
                DEFAULT_SUBMITTER_CONTAINER_MEMORY_REQUEST,
            )),
            ..ResourceRequirements::default()
        }),
        ..Container::default()
    })
}

/// `GetDefaultSubmitterTemplate`: one [`default_submitter_container`], `restartPolicy: Never`.
pub fn default_submitter_template(cluster_spec: &RayClusterSpec) -> Result<PodTemplateSpec, PodGenError> {
    Ok(PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![default_submitter_container(cluster_spec)?],
            restart_policy: Some(RESTART_POLICY_NEVER.to_owned()),
            ..PodSpec::default()
        }),
    })
}

/// `configureSubmitterContainer`: sets the default command (`/bin/bash -ce --` + the joined
/// [`build_job_submit_command`] tokens) when the container has none or in SidecarMode, then appends
/// `PYTHONUNBUFFERED=1`, `RAY_DASHBOARD_ADDRESS=<status.dashboardURL>`,
/// `RAY_JOB_SUBMISSION_ID=<status.jobId>` and, when the cluster uses token auth, the auth env vars.
pub fn configure_submitter_container(
    container: &mut Container,
    job: &RayJob,
    cluster: &RayCluster,
    mode: &JobSubmissionMode,
    config: &PodGenConfig,
) -> Result<(), PodGenError> {
    let status = job.status.as_ref();
    let dashboard_url = status.and_then(|s| s.dashboard_url.as_deref()).unwrap_or_default();
    let job_id = status.and_then(|s| s.job_id.as_deref()).unwrap_or_default();
    let tokens = build_job_submit_command(job, mode, dashboard_url, job_id, config)?;
    let has_command = container.command.as_ref().is_some_and(|c| !c.is_empty());
    if !has_command || *mode == JobSubmissionMode::SidecarMode {
        container.command = Some(config.container_command(SUBMITTER_SHELL_FLAGS));
        container.args = Some(vec![tokens.join(" ")]);
    }
    push_env(container, env(PYTHONUNBUFFERED, PYTHONUNBUFFERED_VALUE));
    push_env(container, env(RAY_DASHBOARD_ADDRESS, dashboard_url));
    push_env(container, env(RAY_JOB_SUBMISSION_ID, job_id));
    if auth_enabled(&cluster.spec) {
        set_token_auth_env(
            cluster.metadata.name.as_deref().unwrap_or_default(),
            container,
            &cluster.spec,
        );
    }
    Ok(())
}

/// The SidecarMode submitter container appended to the head pod: [`default_submitter_container`]
/// configured for SidecarMode, with container `restartPolicy: OnFailure` under gate
/// `SidecarSubmitterRestart`.
pub fn sidecar_submitter_container(
    job: &RayJob,
    cluster: &RayCluster,
    config: &PodGenConfig,
) -> Result<Container, PodGenError> {
    let mut container = default_submitter_container(&cluster.spec)?;
    configure_submitter_container(&mut container, job, cluster, &JobSubmissionMode::SidecarMode, config)?;
    if config.feature_gates.sidecar_submitter_restart {
        container.restart_policy = Some(CONTAINER_RESTART_POLICY_ON_FAILURE.to_owned());
    }
    Ok(container)
}

/// The three labels of the submitter Job and its pod template.
fn submitter_labels(job_name: &str) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RAY_ORIGINATED_FROM_CR_NAME_LABEL.to_owned(), job_name.to_owned()),
        (RAY_ORIGINATED_FROM_CRD_LABEL.to_owned(), CRD_KIND_RAY_JOB.to_owned()),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
    ])
}

/// `getSubmitterTemplate` (K8sJobMode): a copy of `spec.submitterPodTemplate` or
/// [`default_submitter_template`] of `cluster` (the actual cluster, so clusterSelector uses its
/// image), the submitter labels added, and container 0 configured by [`configure_submitter_container`].
pub fn submitter_pod_template(
    job: &RayJob,
    cluster: &RayCluster,
    config: &PodGenConfig,
) -> Result<PodTemplateSpec, PodGenError> {
    let name = job_name(job)?;
    let mut template = match &job.spec.submitter_pod_template {
        Some(template) => template.clone(),
        None => default_submitter_template(&cluster.spec)?,
    };
    template
        .metadata
        .get_or_insert_with(ObjectMeta::default)
        .labels
        .get_or_insert_with(BTreeMap::new)
        .extend(submitter_labels(name));
    let container = template
        .spec
        .as_mut()
        .and_then(|pod| pod.containers.get_mut(RAY_CONTAINER_INDEX))
        .ok_or_else(|| PodGenError::MissingRayContainer {
            group: SUBMITTER_GROUP.to_owned(),
        })?;
    configure_submitter_container(container, job, cluster, &JobSubmissionMode::K8sJobMode, config)?;
    Ok(template)
}

/// `createNewK8sJob`: the K8sJobMode submitter batch/v1 Job, named and namespaced as the RayJob,
/// labelled `ray.io/originated-from-cr-name`, `ray.io/originated-from-crd=RayJob`,
/// `app.kubernetes.io/created-by=kuberay-operator`, owned (controller) by the RayJob,
/// `backoffLimit` = `spec.submitterConfig.backoffLimit` or 2, template [`submitter_pod_template`].
pub fn build_submitter_job(job: &RayJob, cluster: &RayCluster, config: &PodGenConfig) -> Result<Job, PodGenError> {
    let name = job_name(job)?;
    let backoff_limit = job
        .spec
        .submitter_config
        .as_ref()
        .and_then(|c| c.backoff_limit)
        .unwrap_or(DEFAULT_SUBMITTER_JOB_BACKOFF_LIMIT);
    Ok(Job {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: job.metadata.namespace.clone(),
            labels: Some(submitter_labels(name)),
            owner_references: Some(vec![controller_reference(
                CRD_KIND_RAY_JOB,
                name,
                job.metadata.uid.as_deref(),
            )]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(backoff_limit),
            template: submitter_pod_template(job, cluster, config)?,
            ..JobSpec::default()
        }),
        status: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::ContainerPort;
    use ray_api::{HeadGroupSpec, JsonNumber, RayJobSpec, RayJobStatus, SubmitterConfig};

    /// Hands out the given suffixes in order.
    struct FixedSuffixes(Vec<&'static str>);

    impl SuffixSource for FixedSuffixes {
        fn next_suffix(&mut self) -> String {
            if self.0.is_empty() {
                return "zzzzz".to_owned();
            }
            self.0.remove(0).to_owned()
        }
    }

    const ENTRYPOINT: &str = r#"echo no quote 'single quote' "double quote""#;
    const HEALTH_127: &str = r#"until python -c "import urllib.request; r=urllib.request.urlopen('http://127.0.0.1:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at http://127.0.0.1:8265 ..." ; sleep 2 ; done ;"#;
    const SUBMIT_FLAGS: &str = r#"--runtime-env-json "{\"test\":\"test\"}" --metadata-json "{\"testKey\":\"testValue\"}" --submission-id testJobId --entrypoint-num-cpus 1.000000 --entrypoint-num-gpus 0.500000 --entrypoint-resources "{\"Custom_1\": 1, \"Custom_2\": 5.5}""#;

    fn head_spec(image: &str, dashboard_port: i32) -> RayClusterSpec {
        RayClusterSpec {
            ray_version: Some("2.6.0".into()),
            head_group_spec: HeadGroupSpec {
                template: PodTemplateSpec {
                    metadata: None,
                    spec: Some(PodSpec {
                        containers: vec![Container {
                            name: "ray-head".into(),
                            image: Some(image.into()),
                            ports: Some(vec![ContainerPort {
                                name: Some(DASHBOARD_PORT_NAME.into()),
                                container_port: dashboard_port,
                                ..ContainerPort::default()
                            }]),
                            ..Container::default()
                        }],
                        ..PodSpec::default()
                    }),
                },
                ..HeadGroupSpec::default()
            },
            ..RayClusterSpec::default()
        }
    }

    /// The RayJob of KubeRay's `common/job_test.go`.
    fn test_job() -> RayJob {
        let mut job = RayJob::new(
            "rayjob-sample",
            RayJobSpec {
                entrypoint: Some(ENTRYPOINT.into()),
                runtime_env_yaml: Some("test: test".into()),
                metadata: Some(BTreeMap::from([("testKey".into(), "testValue".into())])),
                entrypoint_num_cpus: Some(JsonNumber::from(1_i64)),
                entrypoint_num_gpus: Some(JsonNumber::from(0.5)),
                entrypoint_resources: Some(r#"{"Custom_1": 1, "Custom_2": 5.5}"#.into()),
                ray_cluster_spec: Some(head_spec("rayproject/ray:2.6.0", DEFAULT_DASHBOARD_PORT)),
                ..RayJobSpec::default()
            },
        );
        job.metadata.namespace = Some("default".into());
        job.metadata.uid = Some("job-uid".into());
        job.status = Some(RayJobStatus {
            dashboard_url: Some("http://127.0.0.1:8265".into()),
            job_id: Some("testJobId".into()),
            ..RayJobStatus::default()
        });
        job
    }

    fn cluster_for(job: &RayJob) -> RayCluster {
        build_ray_cluster_for_job(job, "rayjob-sample-b5rs7", &PodGenConfig::default()).unwrap()
    }

    fn sidecar_config(restart_gate: bool) -> PodGenConfig {
        let mut config = PodGenConfig::default();
        config.feature_gates.sidecar_submitter_restart = restart_gate;
        config
    }

    #[test]
    fn golden_j1_k8s_job_mode_command() {
        let job = test_job();
        let tokens = submitter_command(&job, "http://127.0.0.1:8265", "testJobId").unwrap();
        assert_eq!(tokens[0], "until");
        assert_eq!(
            tokens[1],
            r#"python -c "import urllib.request; r=urllib.request.urlopen('http://127.0.0.1:8265/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)""#
        );
        let expected = format!(
            "{HEALTH_127} if ! ray job status --address http://127.0.0.1:8265 testJobId >/dev/null 2>&1 ; then ray job submit --address http://127.0.0.1:8265 --no-wait {SUBMIT_FLAGS} -- {ENTRYPOINT} ; fi ; ray job logs --address http://127.0.0.1:8265 --follow testJobId"
        );
        assert_eq!(tokens.join(" "), expected);
        // The entrypoint is one unquoted token.
        assert!(tokens.iter().any(|t| t == ENTRYPOINT));
    }

    #[test]
    fn golden_j2_sidecar_mode_command_gate_off() {
        let job = test_job();
        let tokens = build_job_submit_command(
            &job,
            &JobSubmissionMode::SidecarMode,
            "ignored",
            "testJobId",
            &sidecar_config(false),
        )
        .unwrap();
        let health = HEALTH_127.replacen("http://127.0.0.1:8265/api", "http://localhost:8265/api", 1);
        let expected =
            format!("{health} ray job submit --address http://127.0.0.1:8265 {SUBMIT_FLAGS} -- {ENTRYPOINT} ;");
        assert_eq!(tokens.join(" "), expected);
        assert!(!tokens.iter().any(|t| t == "--no-wait" || t == "if" || t == "fi"));
        // With the restart gate the status-check wrapper comes back.
        let gated = build_job_submit_command(
            &job,
            &JobSubmissionMode::SidecarMode,
            "",
            "testJobId",
            &sidecar_config(true),
        )
        .unwrap()
        .join(" ");
        assert!(gated.contains(
            "if ! ray job status --address http://127.0.0.1:8265 testJobId >/dev/null 2>&1 ; then ray job submit --address http://127.0.0.1:8265 --no-wait "
        ));
        assert!(gated.ends_with("; fi ; ray job logs --address http://127.0.0.1:8265 --follow testJobId"));
    }

    #[test]
    fn golden_j4_sidecar_custom_dashboard_port_uses_python() {
        let mut job = test_job();
        job.spec.ray_cluster_spec = Some(head_spec("rayproject/ray:2.6.0", 9000));
        let tokens = build_job_submit_command(
            &job,
            &JobSubmissionMode::SidecarMode,
            "",
            "testJobId",
            &sidecar_config(false),
        )
        .unwrap();
        assert!(tokens[1].contains("localhost:9000/api/gcs_healthz"));
        assert!(tokens[1].contains("python -c"));
        assert!(!tokens.join(" ").contains("wget"));
        for version in ["2.53.0", "2.52.1", "invalid-version"] {
            let mut job = test_job();
            job.spec.metadata = None;
            let mut spec = head_spec("rayproject/ray", 9000);
            spec.ray_version = Some(version.into());
            job.spec.ray_cluster_spec = Some(spec);
            let tokens = build_job_submit_command(
                &job,
                &JobSubmissionMode::SidecarMode,
                "",
                "testJobId",
                &sidecar_config(false),
            )
            .unwrap();
            assert!(tokens[1].contains("localhost:9000/api/gcs_healthz"), "{version}");
            assert!(tokens[1].contains("python -c"), "{version}");
            assert!(!tokens.join(" ").contains("wget"), "{version}");
        }
    }

    #[test]
    fn golden_j5_runtime_env_json_and_no_zero_flags() {
        let url =
            "https://github.com/ray-project/serve_config_examples/archive/b393e77bbd6aba0881e3d94c05f968f05a387b96.zip";
        let mut job = test_job();
        job.spec.runtime_env_yaml = Some(format!("working_dir: \"{url}\"\npip: [\"python-multipart==0.0.6\"]\n"));
        job.spec.metadata = None;
        job.spec.entrypoint_num_cpus = None;
        job.spec.entrypoint_num_gpus = Some(JsonNumber::from(0_i64));
        job.spec.entrypoint_resources = None;
        let tokens = submitter_command(&job, "127.0.0.1:8265", "testJobId").unwrap();
        let index = tokens.iter().position(|t| t == "--runtime-env-json").unwrap();
        let quoted = &tokens[index + 1];
        let unquoted: String = serde_json::from_str(quoted).unwrap();
        let got: serde_json::Value = serde_json::from_str(&unquoted).unwrap();
        assert_eq!(
            got,
            serde_json::json!({"working_dir": url, "pip": ["python-multipart==0.0.6"]})
        );
        for flag in [
            "--entrypoint-num-cpus",
            "--entrypoint-num-gpus",
            "--entrypoint-resources",
        ] {
            assert!(!tokens.iter().any(|t| t == flag), "{flag}");
        }
    }

    #[test]
    fn golden_j7_user_command_kept_else_default_command() {
        let mut job = test_job();
        job.spec.entrypoint_num_cpus = None;
        job.spec.entrypoint_num_gpus = None;
        job.spec.entrypoint_resources = None;
        job.spec.runtime_env_yaml = None;
        job.spec.metadata = None;
        job.status = Some(RayJobStatus {
            dashboard_url: Some("test-url".into()),
            job_id: Some("test-job-id".into()),
            ..RayJobStatus::default()
        });
        let template = |command: Vec<String>| PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "ray-job-submitter".into(),
                    image: Some("rayproject/ray:custom-version".into()),
                    command: Some(command),
                    ..Container::default()
                }],
                restart_policy: Some(RESTART_POLICY_NEVER.into()),
                ..PodSpec::default()
            }),
        };
        let cluster = cluster_for(&job);
        job.spec.submitter_pod_template = Some(template(vec!["user-command".into()]));
        let got = submitter_pod_template(&job, &cluster, &PodGenConfig::default()).unwrap();
        let container = &got.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.command.as_deref().unwrap(), ["user-command"]);

        job.spec.submitter_pod_template = Some(template(Vec::new()));
        let got = submitter_pod_template(&job, &cluster, &PodGenConfig::default()).unwrap();
        let container = &got.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.command.as_deref().unwrap(), ["/bin/bash", "-ce", "--"]);
        assert_eq!(
            container.args.as_deref().unwrap(),
            [
                r#"until python -c "import urllib.request; r=urllib.request.urlopen('http://test-url/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)" >/dev/null 2>&1 ; do echo "Waiting for Ray Dashboard GCS to become healthy at http://test-url ..." ; sleep 2 ; done ; if ! ray job status --address http://test-url test-job-id >/dev/null 2>&1 ; then ray job submit --address http://test-url --no-wait --submission-id test-job-id -- echo no quote 'single quote' "double quote" ; fi ; ray job logs --address http://test-url --follow test-job-id"#
            ]
        );
        // ENABLE_LOGIN_SHELL=true gives `-cel`.
        let login = PodGenConfig {
            login_shell: true,
            ..PodGenConfig::default()
        };
        let got = submitter_pod_template(&job, &cluster, &login).unwrap();
        assert_eq!(
            got.spec.as_ref().unwrap().containers[0].command.as_deref().unwrap(),
            ["/bin/bash", "-cel", "--"]
        );
    }

    #[test]
    fn golden_j8_default_submitter_template() {
        let mut job = test_job();
        job.spec.ray_cluster_spec = Some(head_spec("rayproject/ray:custom-version", 8265));
        job.status = Some(RayJobStatus {
            dashboard_url: Some("test-url".into()),
            job_id: Some("test-job-id".into()),
            ..RayJobStatus::default()
        });
        let cluster = cluster_for(&job);
        let template = submitter_pod_template(&job, &cluster, &PodGenConfig::default()).unwrap();
        let pod = template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.containers.len(), 1);
        let container = &pod.containers[0];
        assert_eq!(container.name, "ray-job-submitter");
        assert_eq!(container.image.as_deref(), Some("rayproject/ray:custom-version"));
        let envs: Vec<(&str, &str)> = container
            .env
            .iter()
            .flatten()
            .map(|e| (e.name.as_str(), e.value.as_deref().unwrap_or_default()))
            .collect();
        assert_eq!(
            envs,
            [
                ("PYTHONUNBUFFERED", "1"),
                ("RAY_DASHBOARD_ADDRESS", "test-url"),
                ("RAY_JOB_SUBMISSION_ID", "test-job-id")
            ]
        );
        let resources = container.resources.as_ref().unwrap();
        let q = |m: &Option<BTreeMap<String, Quantity>>, k: &str| m.as_ref().unwrap()[k].0.clone();
        assert_eq!(q(&resources.limits, "cpu"), "1");
        assert_eq!(q(&resources.limits, "memory"), "1Gi");
        assert_eq!(q(&resources.requests, "cpu"), "500m");
        assert_eq!(q(&resources.requests, "memory"), "200Mi");
    }

    #[test]
    fn golden_j10_submitter_backoff_limit() {
        let mut job = test_job();
        let cluster = cluster_for(&job);
        let built = build_submitter_job(&job, &cluster, &PodGenConfig::default()).unwrap();
        assert_eq!(built.spec.as_ref().unwrap().backoff_limit, Some(2));
        job.spec.submitter_config = Some(SubmitterConfig {
            backoff_limit: Some(88),
        });
        let built = build_submitter_job(&job, &cluster, &PodGenConfig::default()).unwrap();
        assert_eq!(built.spec.as_ref().unwrap().backoff_limit, Some(88));
    }

    #[test]
    fn submitter_job_metadata_and_owner() {
        let job = test_job();
        let cluster = cluster_for(&job);
        let built = build_submitter_job(&job, &cluster, &PodGenConfig::default()).unwrap();
        assert_eq!(built.metadata.name.as_deref(), Some("rayjob-sample"));
        assert_eq!(built.metadata.namespace.as_deref(), Some("default"));
        let expected = BTreeMap::from([
            ("app.kubernetes.io/created-by".to_owned(), "kuberay-operator".to_owned()),
            ("ray.io/originated-from-cr-name".to_owned(), "rayjob-sample".to_owned()),
            ("ray.io/originated-from-crd".to_owned(), "RayJob".to_owned()),
        ]);
        assert_eq!(built.metadata.labels.as_ref(), Some(&expected));
        let template_labels = built
            .spec
            .as_ref()
            .unwrap()
            .template
            .metadata
            .as_ref()
            .unwrap()
            .labels
            .as_ref();
        assert_eq!(template_labels, Some(&expected));
        let owner = &built.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!(
            (owner.kind.as_str(), owner.name.as_str(), owner.uid.as_str()),
            ("RayJob", "rayjob-sample", "job-uid")
        );
        assert_eq!(owner.controller, Some(true));
        assert_eq!(owner.api_version, "ray.io/v1");
    }

    /// G35 (RayJob part): the RayJob's head service is `<rayjob>-head-svc` even when the cluster's
    /// head service has a custom name, selects the cluster's head pod and is owned by the RayJob.
    #[test]
    fn golden_j35_rayjob_head_service() {
        let job = test_job();
        let mut cluster = cluster_for(&job);
        cluster.spec.head_group_spec.head_service =
            Some(serde_json::from_value(serde_json::json!({"metadata": {"name": "my-head-svc"}})).unwrap());
        let service = build_rayjob_head_service(&job, &cluster, &PodGenConfig::default()).unwrap();
        assert_eq!(service.metadata.name.as_deref(), Some("rayjob-sample-head-svc"));
        assert_eq!(service.metadata.namespace.as_deref(), Some("default"));
        let labels = service.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["ray.io/originated-from-cr-name"], "rayjob-sample");
        assert_eq!(labels["ray.io/originated-from-crd"], "RayJob");
        assert_eq!(labels["ray.io/node-type"], "head");
        assert_eq!(labels["ray.io/identifier"], "rayjob-sample-head");
        let selector = service.spec.as_ref().unwrap().selector.as_ref().unwrap();
        assert_eq!(selector["ray.io/cluster"], "rayjob-sample-b5rs7");
        assert_eq!(selector["ray.io/node-type"], "head");
        let owner = &service.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("RayJob", "rayjob-sample"));
    }

    #[test]
    fn golden_j22_cluster_labels_and_annotations() {
        let mut job = test_job();
        job.metadata.labels = Some(BTreeMap::from([("team".into(), "a".into())]));
        job.metadata.annotations = Some(BTreeMap::from([("note".into(), "x".into())]));
        let cluster = cluster_for(&job);
        assert_eq!(cluster.metadata.name.as_deref(), Some("rayjob-sample-b5rs7"));
        assert_eq!(cluster.metadata.namespace.as_deref(), Some("default"));
        let labels = cluster.metadata.labels.as_ref().unwrap();
        assert_eq!(labels["ray.io/originated-from-cr-name"], "rayjob-sample");
        assert_eq!(labels["ray.io/originated-from-crd"], "RayJob");
        assert_eq!(labels["ray.io/job-submission-mode"], "K8sJobMode");
        assert_eq!(labels["team"], "a");
        assert_eq!(cluster.metadata.annotations, job.metadata.annotations);
        assert_eq!(Some(&cluster.spec), job.spec.ray_cluster_spec.as_ref());
        let owner = &cluster.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.kind.as_str(), owner.name.as_str()), ("RayJob", "rayjob-sample"));
    }

    #[test]
    fn golden_j23_max_length_name() {
        let name = "j".repeat(47);
        let mut job = test_job();
        job.metadata.name = Some(name.clone());
        let cluster_name = ray_cluster_name_for_job(&job, &mut FixedSuffixes(vec!["b5rs7"]));
        assert_eq!(cluster_name, format!("{name}-b5rs7"));
        assert_eq!(cluster_name.len(), 53);
        let cluster = build_ray_cluster_for_job(&job, &cluster_name, &PodGenConfig::default()).unwrap();
        assert_eq!(
            crate::cluster::head_service_name(&cluster),
            format!("{cluster_name}-head-svc")
        );
    }

    #[test]
    fn golden_j32_runtime_env_four_keys() {
        let yaml = "working_dir: \"./\"\npip: [\"requests==2.26.0\", \"pendulum==2.1.2\"]\nconda: \"pytorch_p36\"\neager_install: false\n";
        let json = runtime_env_yaml_to_json(yaml).unwrap();
        let value: serde_json::Value = serde_json::from_str(&json).unwrap();
        let map = value.as_object().unwrap();
        assert_eq!(map.len(), 4);
        assert_eq!(map["working_dir"], "./");
        assert_eq!(
            json,
            r#"{"conda":"pytorch_p36","eager_install":false,"pip":["requests==2.26.0","pendulum==2.1.2"],"working_dir":"./"}"#
        );
    }

    #[test]
    fn job_id_and_cluster_name_rules() {
        let mut job = test_job();
        let mut suffixes = FixedSuffixes(vec!["k2x9z", "b5rs7"]);
        assert_eq!(
            initial_job_id(&job, &mut suffixes).as_deref(),
            Some("rayjob-sample-k2x9z")
        );
        assert_eq!(initial_ray_cluster_name(&job, &mut suffixes), "rayjob-sample-b5rs7");
        job.spec.job_id = Some("my-id".into());
        job.spec.cluster_selector = Some(BTreeMap::from([("ray.io/cluster".into(), "existing".into())]));
        let mut untouched = FixedSuffixes(vec![]);
        assert_eq!(initial_job_id(&job, &mut untouched).as_deref(), Some("my-id"));
        assert_eq!(initial_ray_cluster_name(&job, &mut untouched), "existing");
        job.spec.submission_mode = Some(JobSubmissionMode::InteractiveMode);
        assert_eq!(initial_job_id(&job, &mut untouched), None);
    }

    #[test]
    fn metadata_requires_ray_2_6() {
        let metadata = BTreeMap::from([("b".to_owned(), "<x>".to_owned()), ("a".to_owned(), "1".to_owned())]);
        assert_eq!(
            metadata_json(&metadata, None).unwrap(),
            r#"{"a":"1","b":"\u003cx\u003e"}"#
        );
        assert!(metadata_json(&metadata, Some("2.6")).is_ok());
        assert!(metadata_json(&metadata, Some("v2.10.1")).is_ok());
        assert_eq!(
            metadata_json(&metadata, Some("2.5.0")).unwrap_err().to_string(),
            "the Ray version must be at least 2.6.0 to use the metadata field"
        );
        assert_eq!(
            metadata_json(&metadata, Some("2.7.0-rc1")).unwrap_err(),
            PodGenError::RayVersionTooOldForMetadata
        );
        assert_eq!(
            metadata_json(&metadata, Some("invalid-version"))
                .unwrap_err()
                .to_string(),
            "failed to parse Ray version: invalid-version: Invalid Semantic Version"
        );
    }

    #[test]
    fn unsupported_modes_are_errors() {
        let job = test_job();
        for mode in [JobSubmissionMode::HttpMode, JobSubmissionMode::InteractiveMode] {
            let err = build_job_submit_command(&job, &mode, "x", "id", &PodGenConfig::default()).unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("unsupported submission mode for job submit command: {mode}")
            );
        }
    }

    #[test]
    fn sidecar_cluster_gets_submitter_container() {
        let mut job = test_job();
        job.spec.submission_mode = Some(JobSubmissionMode::SidecarMode);
        let cluster = build_ray_cluster_for_job(&job, "rayjob-sample-b5rs7", &sidecar_config(true)).unwrap();
        let pod = cluster.spec.head_group_spec.template.spec.as_ref().unwrap();
        assert_eq!(pod.restart_policy.as_deref(), Some("Never"));
        assert_eq!(pod.containers.len(), 2);
        let sidecar = &pod.containers[1];
        assert_eq!(sidecar.name, "ray-job-submitter");
        assert_eq!(sidecar.image.as_deref(), Some("rayproject/ray:2.6.0"));
        assert_eq!(sidecar.restart_policy.as_deref(), Some("OnFailure"));
        assert_eq!(sidecar.command.as_deref().unwrap(), ["/bin/bash", "-ce", "--"]);
        assert!(sidecar.args.as_ref().unwrap()[0].contains("http://localhost:8265/api/gcs_healthz"));
        let annotations = cluster.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations["ray.io/disable-provisioned-head-restart"], "true");
        assert_eq!(
            cluster.metadata.labels.as_ref().unwrap()["ray.io/job-submission-mode"],
            "SidecarMode"
        );
    }

    #[test]
    fn missing_cluster_spec_is_an_error() {
        let mut job = test_job();
        job.spec.ray_cluster_spec = None;
        assert_eq!(
            build_ray_cluster_for_job(&job, "c", &PodGenConfig::default()).unwrap_err(),
            PodGenError::MissingRayClusterSpec("rayjob-sample".into())
        );
    }

    #[test]
    fn rayjob_sample_submitter_command() {
        let text = kuberay_reference::sample_text("ray-job.sample.yaml");
        let docs: Vec<serde_json::Value> = ray_api::yaml::from_yaml_documents(&text).unwrap();
        let doc = docs.into_iter().find(|d| d["kind"] == "RayJob").unwrap();
        let mut job: RayJob = serde_json::from_value(doc).unwrap();
        job.metadata.namespace = Some("default".into());
        let mut suffixes = FixedSuffixes(vec!["k2x9z", "b5rs7"]);
        let job_id = initial_job_id(&job, &mut suffixes).unwrap();
        let cluster_name = initial_ray_cluster_name(&job, &mut suffixes);
        assert_eq!(cluster_name, "rayjob-sample-b5rs7");
        let dashboard = "rayjob-sample-b5rs7-head-svc.default.svc.cluster.local:8265";
        let command = submitter_command(&job, dashboard, &job_id).unwrap().join(" ");
        let address = format!("http://{dashboard}");
        let expected = format!(
            "until python -c \"import urllib.request; r=urllib.request.urlopen('{address}/api/gcs_healthz', timeout=10); exit(0 if b'success' in r.read() else 1)\" >/dev/null 2>&1 ; do echo \"Waiting for Ray Dashboard GCS to become healthy at {address} ...\" ; sleep 2 ; done ; if ! ray job status --address {address} rayjob-sample-k2x9z >/dev/null 2>&1 ; then ray job submit --address {address} --no-wait --runtime-env-json {runtime_env} --submission-id rayjob-sample-k2x9z -- python /home/ray/samples/sample_code.py ; fi ; ray job logs --address {address} --follow rayjob-sample-k2x9z",
            runtime_env = r#""{\"env_vars\":{\"counter_name\":\"test_counter\"},\"pip\":[\"requests==2.26.0\",\"pendulum==2.1.2\"]}""#,
        );
        assert_eq!(command, expected);

        // The whole K8sJobMode path: cluster, then the submitter Job against it.
        let cluster = build_ray_cluster_for_job(&job, &cluster_name, &PodGenConfig::default()).unwrap();
        job.status = Some(RayJobStatus {
            dashboard_url: Some(dashboard.into()),
            job_id: Some(job_id),
            ..RayJobStatus::default()
        });
        let submitter = build_submitter_job(&job, &cluster, &PodGenConfig::default()).unwrap();
        let pod = submitter.spec.as_ref().unwrap().template.spec.as_ref().unwrap();
        assert_eq!(pod.containers[0].image.as_deref(), Some("rayproject/ray:2.52.0"));
        assert_eq!(pod.containers[0].args.as_deref().unwrap(), [expected]);
    }
}
