//! Head and worker pods: the template stage, then `BuildPod` (docs/podgen.md#the-generation-pipeline; labels,
//! `ray start`, environment, ports, probes and volumes are described in the sections after it).
//!
//! [`PodGenerator`] computes the cluster-wide facts once. A worker group's pod is the same for
//! every replica except its replica labels, so [`PodGenerator::worker_template`] builds it once
//! and [`WorkerPodTemplate::pod`] only clones it and sets those labels.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerPort, Pod, PodSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ray_api::constants::{
    APPLICATION_NAME, COMPONENT_NAME, DEFAULT_METRICS_PORT, HEAD_GROUP_NAME, KUBERAY_VERSION,
    KUBERAY_VERSION_ANNOTATION, KUBERNETES_APPLICATION_NAME_LABEL, KUBERNETES_CREATED_BY_LABEL, LOCAL_HOST,
    METRICS_PORT_NAME, PLASMA_DIRECTORY_PARAM, RAY_CLUSTER_LABEL, RAY_CLUSTER_SERVING_SERVICE_LABEL,
    RAY_HOST_INDEX_LABEL, RAY_ID_LABEL, RAY_IS_RAY_NODE_LABEL, RAY_IS_RAY_NODE_VALUE, RAY_LOG_VOLUME_MOUNT_PATH,
    RAY_LOG_VOLUME_NAME, RAY_NODE_GROUP_LABEL, RAY_NODE_TYPE_LABEL, RAY_WORKER_REPLICA_INDEX_LABEL,
    RAY_WORKER_REPLICA_NAME_LABEL, SHARED_MEMORY_VOLUME_MOUNT_PATH, SHARED_MEMORY_VOLUME_NAME,
    UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION, WAIT_GCS_READY_INIT_CONTAINER_NAME, WORKER_TEMPLATE_HASH_ANNOTATION,
};
use ray_api::{AutoscalerVersion, RayCluster, WorkerGroupSpec};

use crate::autoscaler::{
    CLUSTER_LABEL_FIELD_PATH, GROUP_LABEL_FIELD_PATH, build_autoscaler_container, head_service_account_name,
};
use crate::cluster::{
    ClusterFacts, CreatorKind, OVERWRITE_CONTAINER_CMD_ANNOTATION, cluster_owner_reference, tls_enabled,
};
use crate::config::PodGenConfig;
use crate::containers::{add_empty_dir, env, field_env, fixed_resources, has_env, push_env, push_env_if_absent};
use crate::env_names::{
    FQ_RAY_IP, KUBERAY_GEN_RAY_START_CMD, RAY_ADDRESS, RAY_CLOUD_INSTANCE_ID, RAY_CLUSTER_NAME, RAY_CLUSTER_NAMESPACE,
    RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE, RAY_ENABLE_AUTOSCALER_V2, RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS, RAY_IP,
    RAY_NODE_TYPE_NAME, RAY_PORT, RAY_SERVE_KV_TIMEOUT_S, RAY_START_ULIMIT_OPEN_FILES,
    RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO, RAY_USAGE_STATS_EXTRA_TAGS, RAY_USAGE_STATS_KUBERAY_IN_USE,
};
use crate::error::PodGenError;
use crate::names::{check_label, check_name, identifier, pod_name, ray_ip_from_fqdn};
use crate::start_params::{self, RayNodeType, RayStartParams};
use crate::{gcs_ft, hash, probes};

/// `wait-gcs-ready` CPU (limit and request).
pub const WAIT_GCS_READY_CPU: &str = "200m";
/// `wait-gcs-ready` memory (limit and request).
pub const WAIT_GCS_READY_MEMORY: &str = "256Mi";
/// Seconds `wait-gcs-ready` polls quietly before printing health-check errors.
pub const WAIT_GCS_READY_QUIET_SECONDS: u32 = 120;

/// The identity of one worker pod inside its group.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct WorkerReplica<'a> {
    /// `ray.io/worker-group-replica-index` (lowest index not used by the group's pods).
    pub replica_index: u32,
    /// Multi-host groups: the replica name `<group>-<5 random>` shared by the replica's hosts.
    pub replica_name: Option<&'a str>,
    /// Multi-host groups: the host index `0..numOfHosts-1`.
    pub host_index: u32,
}

impl WorkerReplica<'_> {
    /// A single-host replica.
    pub fn single(replica_index: u32) -> Self {
        Self {
            replica_index,
            replica_name: None,
            host_index: 0,
        }
    }
}

/// Builds the pods of one RayCluster.
#[derive(Debug)]
pub struct PodGenerator<'a> {
    cluster: &'a RayCluster,
    config: &'a PodGenConfig,
    facts: ClusterFacts,
}

/// A worker group's pod with everything but the per-replica labels; cheap to stamp out.
#[derive(Clone, Debug)]
pub struct WorkerPodTemplate {
    pod: Pod,
    num_of_hosts: i32,
    multi_host_indexing: bool,
}

impl WorkerPodTemplate {
    /// The pod of one replica (host): the shared pod plus its replica labels.
    pub fn pod(&self, replica: &WorkerReplica<'_>) -> Pod {
        let mut pod = self.pod.clone();
        if self.multi_host_indexing {
            let labels = pod.metadata.labels.get_or_insert_with(BTreeMap::new);
            labels.insert(
                RAY_WORKER_REPLICA_INDEX_LABEL.to_owned(),
                replica.replica_index.to_string(),
            );
            if self.num_of_hosts > 1 {
                labels.insert(
                    RAY_WORKER_REPLICA_NAME_LABEL.to_owned(),
                    replica.replica_name.unwrap_or_default().to_owned(),
                );
                labels.insert(RAY_HOST_INDEX_LABEL.to_owned(), replica.host_index.to_string());
            }
        }
        pod
    }

    /// The shared pod (no replica labels).
    pub fn base(&self) -> &Pod {
        &self.pod
    }
}

/// `mergeLabels`: template labels, then group labels on top.
pub(crate) fn merge_labels(
    template: Option<&BTreeMap<String, String>>,
    group: Option<&BTreeMap<String, String>>,
) -> BTreeMap<String, String> {
    let mut merged = template.cloned().unwrap_or_default();
    if let Some(group) = group {
        merged.extend(group.iter().map(|(k, v)| (k.clone(), v.clone())));
    }
    merged
}

/// `labelPod`: KubeRay's base labels overridden by the user's, except node type, group and cluster.
pub fn label_pod(
    node_type: RayNodeType,
    cluster: &str,
    group: &str,
    overrides: BTreeMap<String, String>,
) -> BTreeMap<String, String> {
    let mut labels = BTreeMap::from([
        (RAY_IS_RAY_NODE_LABEL.to_owned(), RAY_IS_RAY_NODE_VALUE.to_owned()),
        (RAY_CLUSTER_LABEL.to_owned(), cluster.to_owned()),
        (RAY_NODE_TYPE_LABEL.to_owned(), node_type.as_str().to_owned()),
        (RAY_NODE_GROUP_LABEL.to_owned(), group.to_owned()),
        (
            RAY_ID_LABEL.to_owned(),
            check_label(&identifier(cluster, node_type.as_str())),
        ),
        (
            KUBERNETES_APPLICATION_NAME_LABEL.to_owned(),
            APPLICATION_NAME.to_owned(),
        ),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
    ]);
    for (key, value) in overrides {
        if key == RAY_NODE_TYPE_LABEL || key == RAY_NODE_GROUP_LABEL || key == RAY_CLUSTER_LABEL {
            continue;
        }
        labels.insert(key, value);
    }
    labels
}

/// The `wait-gcs-ready` script, exactly as KubeRay indents it.
pub fn wait_gcs_ready_script(address: &str) -> String {
    let quiet = WAIT_GCS_READY_QUIET_SECONDS;
    let lines: [(usize, String); 17] = [
        (5, "SECONDS=0".to_owned()),
        (5, "while true; do".to_owned()),
        (6, format!("if (( SECONDS <= {quiet} )); then")),
        (7, format!("if ray health-check --address {address} > /dev/null 2>&1; then")),
        (8, "echo \"GCS is ready.\"".to_owned()),
        (8, "break".to_owned()),
        (7, "fi".to_owned()),
        (7, "echo \"$SECONDS seconds elapsed: Waiting for GCS to be ready.\"".to_owned()),
        (6, "else".to_owned()),
        (7, format!("if ray health-check --address {address}; then")),
        (8, "echo \"GCS is ready. Any error messages above can be safely ignored.\"".to_owned()),
        (8, "break".to_owned()),
        (7, "fi".to_owned()),
        (7, "echo \"$SECONDS seconds elapsed: Still waiting for GCS to be ready. For troubleshooting, refer to the FAQ at https://docs.ray.io/en/master/cluster/kubernetes/troubleshooting.html.\"".to_owned()),
        (6, "fi".to_owned()),
        (6, "sleep 5".to_owned()),
        (5, "done".to_owned()),
    ];
    let mut script = String::from("\n");
    for (tabs, line) in lines {
        script.push_str(&"\t".repeat(tabs));
        script.push_str(&line);
        script.push('\n');
    }
    script.push_str("\t\t\t\t");
    script
}

fn ensure_metrics_port(container: &mut Container) {
    if !container
        .ports
        .iter()
        .flatten()
        .any(|p| p.name.as_deref() == Some(METRICS_PORT_NAME))
    {
        container.ports.get_or_insert_with(Vec::new).push(ContainerPort {
            name: Some(METRICS_PORT_NAME.to_owned()),
            container_port: DEFAULT_METRICS_PORT,
            ..ContainerPort::default()
        });
    }
}

fn fill_absent(target: &mut BTreeMap<String, String>, defaults: &BTreeMap<String, String>) {
    for (key, value) in defaults {
        target.entry(key.clone()).or_insert_with(|| value.clone());
    }
}

fn none_if_empty(map: BTreeMap<String, String>) -> Option<BTreeMap<String, String>> {
    (!map.is_empty()).then_some(map)
}

/// Splits a template into metadata and a pod spec that has a Ray container.
fn split_template(
    template: &k8s_openapi::api::core::v1::PodTemplateSpec,
    group: &str,
) -> Result<(ObjectMeta, PodSpec), PodGenError> {
    let spec = template.spec.clone().unwrap_or_default();
    if spec.containers.is_empty() {
        return Err(PodGenError::MissingRayContainer {
            group: group.to_owned(),
        });
    }
    Ok((template.metadata.clone().unwrap_or_default(), spec))
}

impl<'a> PodGenerator<'a> {
    /// Prepares generation for `cluster` under `config`.
    pub fn new(cluster: &'a RayCluster, config: &'a PodGenConfig) -> Self {
        Self {
            cluster,
            config,
            facts: ClusterFacts::new(cluster, config),
        }
    }

    /// The cluster-wide facts (FQDN, head port, creator, ...).
    pub fn facts(&self) -> &ClusterFacts {
        &self.facts
    }

    fn check_supported(&self) -> Result<(), PodGenError> {
        let spec = &self.cluster.spec;
        if self.config.feature_gates.ray_cluster_history_server
            && spec
                .history_server_options
                .as_ref()
                .and_then(|h| h.collector_options.as_ref())
                .is_some()
        {
            return Err(PodGenError::Unsupported(
                "the history-server collector (gate RayClusterHistoryServer)",
            ));
        }
        Ok(())
    }

    /// The head pod as the operator creates it (`buildHeadPod` + the creation-time annotations
    /// `ray.io/upgrade-strategy-recreate-hash` and `ray.io/kuberay-version`).
    pub fn head_pod(&self) -> Result<Pod, PodGenError> {
        self.check_supported()?;
        let (cluster, config, facts) = (self.cluster, self.config, &self.facts);
        let head = &cluster.spec.head_group_spec;
        let (mut meta, mut spec) = split_template(&head.template, HEAD_GROUP_NAME)?;
        let name = pod_name(
            &facts.name,
            RayNodeType::Head.as_str(),
            !config.deterministic_head_pod_name,
        );
        if config.deterministic_head_pod_name {
            meta.name = Some(name);
        } else {
            meta.generate_name = Some(name);
        }
        meta.namespace = Some(facts.namespace.clone());

        let mut params = head.ray_start_params.clone().unwrap_or_default();
        if let Some(resources) = &head.resources {
            start_params::apply_group_resources(&mut params, resources);
        }
        if let Some(labels) = &head.labels {
            start_params::apply_group_labels(&mut params, labels);
        }
        let merged = merge_labels(meta.labels.as_ref(), head.labels.as_ref());
        let mut labels = label_pod(RayNodeType::Head, &facts.name, HEAD_GROUP_NAME, merged);
        start_params::set_missing_params(&mut params, RayNodeType::Head, &facts.head_port, "");
        let mut annotations = meta.annotations.take().unwrap_or_default();
        if facts.overwrite_container_cmd {
            annotations.insert(OVERWRITE_CONTAINER_CMD_ANNOTATION.to_owned(), "true".to_owned());
        }

        if facts.autoscaling {
            params.insert(start_params::NO_MONITOR.to_owned(), "true".to_owned());
            spec.service_account_name = Some(check_name(&head_service_account_name(cluster)));
            let image = spec.containers[0].image.clone();
            spec.containers
                .push(build_autoscaler_container(image, &facts.name, &cluster.spec, config));
            match facts.autoscaler_version {
                Some(AutoscalerVersion::V2) => {
                    push_env(&mut spec.containers[0], env(RAY_ENABLE_AUTOSCALER_V2, "true"));
                    spec.restart_policy = Some("Never".to_owned());
                }
                Some(AutoscalerVersion::V1) => {
                    push_env(&mut spec.containers[0], env(RAY_ENABLE_AUTOSCALER_V2, "false"))
                }
                None => {}
            }
        }
        gcs_ft::configure(
            cluster,
            facts,
            RayNodeType::Head,
            &mut annotations,
            &mut spec,
            &mut params,
        );
        ensure_metrics_port(&mut spec.containers[0]);
        if facts.auth {
            crate::auth::configure_token_auth(&facts.name, &mut spec, &cluster.spec);
        }
        if tls_enabled(&cluster.spec, config) {
            crate::tls::configure_tls(&facts.name, true, &mut spec);
        }

        spec.containers.extend(config.head_sidecar_containers.iter().cloned());
        fill_absent(&mut annotations, &config.default_pod_annotations);
        fill_absent(&mut labels, &config.default_pod_labels);
        meta.labels = Some(labels);
        meta.annotations = Some(annotations);
        let mut pod = self.build_pod(RayNodeType::Head, meta, spec, &mut params);
        pod.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
        let annotations = pod.metadata.annotations.get_or_insert_with(BTreeMap::new);
        annotations.insert(
            UPGRADE_STRATEGY_RECREATE_HASH_ANNOTATION.to_owned(),
            hash::recreate_hash(&cluster.spec),
        );
        annotations.insert(KUBERAY_VERSION_ANNOTATION.to_owned(), KUBERAY_VERSION.to_owned());
        Ok(pod)
    }

    /// The shared pod of worker group `group_index` (see [`WorkerPodTemplate::pod`]).
    pub fn worker_template(&self, group_index: usize) -> Result<WorkerPodTemplate, PodGenError> {
        self.check_supported()?;
        let group = self
            .cluster
            .spec
            .worker_group_specs
            .as_ref()
            .and_then(|groups| groups.get(group_index))
            .ok_or(PodGenError::NoSuchWorkerGroup(group_index))?;
        let pod = self.worker_base_pod(group)?;
        Ok(WorkerPodTemplate {
            pod,
            num_of_hosts: group.num_of_hosts.unwrap_or(1),
            multi_host_indexing: self.config.feature_gates.ray_multi_host_indexing,
        })
    }

    /// One worker pod (convenience for [`PodGenerator::worker_template`] + [`WorkerPodTemplate::pod`]).
    pub fn worker_pod(&self, group_index: usize, replica: &WorkerReplica<'_>) -> Result<Pod, PodGenError> {
        Ok(self.worker_template(group_index)?.pod(replica))
    }

    fn worker_base_pod(&self, group: &WorkerGroupSpec) -> Result<Pod, PodGenError> {
        let (cluster, config, facts) = (self.cluster, self.config, &self.facts);
        let (mut meta, mut spec) = split_template(&group.template, &group.group_name)?;
        meta.generate_name = Some(pod_name(
            &format!("{}-{}", facts.name, group.group_name),
            RayNodeType::Worker.as_str(),
            true,
        ));
        meta.namespace = Some(facts.namespace.clone());

        if config.init_container_injection {
            let ray = &spec.containers[0];
            let init = Container {
                name: WAIT_GCS_READY_INIT_CONTAINER_NAME.to_owned(),
                image: ray.image.clone(),
                image_pull_policy: ray.image_pull_policy.clone(),
                command: Some(config.container_command("")),
                args: Some(vec![wait_gcs_ready_script(&format!(
                    "{}:{}",
                    facts.fqdn, facts.head_port
                ))]),
                security_context: ray.security_context.clone(),
                env: ray.env.clone(),
                volume_mounts: ray.volume_mounts.clone(),
                resources: Some(fixed_resources(WAIT_GCS_READY_CPU, WAIT_GCS_READY_MEMORY)),
                ..Container::default()
            };
            spec.init_containers.get_or_insert_with(Vec::new).push(init);
        }
        meta.name = None;

        let mut params = group.ray_start_params.clone().unwrap_or_default();
        if let Some(resources) = &group.resources {
            start_params::apply_group_resources(&mut params, resources);
        }
        if let Some(labels) = &group.labels {
            start_params::apply_group_labels(&mut params, labels);
        }
        let merged = merge_labels(meta.labels.as_ref(), group.labels.as_ref());
        let mut labels = label_pod(RayNodeType::Worker, &facts.name, &group.group_name, merged);
        start_params::set_missing_params(&mut params, RayNodeType::Worker, &facts.head_port, &facts.fqdn);
        let mut annotations = meta.annotations.take().unwrap_or_default();
        if facts.overwrite_container_cmd {
            annotations.insert(OVERWRITE_CONTAINER_CMD_ANNOTATION.to_owned(), "true".to_owned());
        }
        gcs_ft::configure(
            cluster,
            facts,
            RayNodeType::Worker,
            &mut annotations,
            &mut spec,
            &mut params,
        );
        ensure_metrics_port(&mut spec.containers[0]);
        if facts.autoscaler_version == Some(AutoscalerVersion::V2) {
            spec.restart_policy = Some("Never".to_owned());
        }
        if facts.auth {
            crate::auth::configure_token_auth(&facts.name, &mut spec, &cluster.spec);
        }
        if tls_enabled(&cluster.spec, config) {
            crate::tls::configure_tls(&facts.name, false, &mut spec);
        }

        spec.containers.extend(config.worker_sidecar_containers.iter().cloned());
        fill_absent(&mut annotations, &config.default_pod_annotations);
        fill_absent(&mut labels, &config.default_pod_labels);
        meta.labels = Some(labels);
        meta.annotations = none_if_empty(annotations);
        let mut pod = self.build_pod(RayNodeType::Worker, meta, spec, &mut params);
        pod.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
        if ray_api::validation::rolling_update::rolling_update_requested(&cluster.spec) {
            pod.metadata.annotations.get_or_insert_with(BTreeMap::new).insert(
                WORKER_TEMPLATE_HASH_ANNOTATION.to_owned(),
                hash::worker_group_hash(group),
            );
        }
        Ok(pod)
    }

    /// `BuildPod`: serve label, `/dev/shm`, log volume, command, env vars and probes.
    fn build_pod(
        &self,
        node_type: RayNodeType,
        mut meta: ObjectMeta,
        mut spec: PodSpec,
        params: &mut RayStartParams,
    ) -> Pod {
        let (config, facts) = (self.config, &self.facts);
        if facts.creator == CreatorKind::RayService {
            let value = if node_type == RayNodeType::Head {
                "false"
            } else {
                "true"
            };
            meta.labels
                .get_or_insert_with(BTreeMap::new)
                .insert(RAY_CLUSTER_SERVING_SERVICE_LABEL.to_owned(), value.to_owned());
        }
        if !params.contains_key(PLASMA_DIRECTORY_PARAM) {
            add_empty_dir(
                &mut spec,
                0,
                SHARED_MEMORY_VOLUME_NAME,
                SHARED_MEMORY_VOLUME_MOUNT_PATH,
                true,
            );
        }
        if node_type == RayNodeType::Head && facts.autoscaling {
            add_empty_dir(&mut spec, 0, RAY_LOG_VOLUME_NAME, RAY_LOG_VOLUME_MOUNT_PATH, false);
            if let Some(index) = spec
                .containers
                .iter()
                .position(|c| c.name == ray_api::constants::AUTOSCALER_CONTAINER_NAME)
            {
                add_empty_dir(&mut spec, index, RAY_LOG_VOLUME_NAME, RAY_LOG_VOLUME_MOUNT_PATH, false);
            }
        }

        let ray = &mut spec.containers[0];
        let mut user_cmd = String::new();
        for part in ray.command.iter().flatten().chain(ray.args.iter().flatten()) {
            user_cmd.push(' ');
            user_cmd.push_str(part);
            user_cmd.push(' ');
        }
        let ray_start_cmd = start_params::generate_ray_start_command(node_type, params, ray.resources.as_ref());
        let overwrite = meta
            .annotations
            .as_ref()
            .and_then(|a| a.get(OVERWRITE_CONTAINER_CMD_ANNOTATION))
            .is_some_and(|v| v.to_lowercase() == "true");
        if !overwrite && !user_cmd.contains("ray start") {
            let generated = format!("ulimit -n ${{{RAY_START_ULIMIT_OPEN_FILES}:-65536}}; {ray_start_cmd}");
            ray.command = Some(config.container_command(""));
            ray.args = Some(vec![if user_cmd.is_empty() {
                generated
            } else {
                format!("{user_cmd} && {generated}")
            }]);
        }

        let ray_ip = ray_ip_from_fqdn(&facts.fqdn).to_owned();
        for init in spec.init_containers.iter_mut().flatten() {
            push_env(init, env(FQ_RAY_IP, facts.fqdn.clone()));
            push_env(init, env(RAY_IP, ray_ip.clone()));
        }
        let ray = &mut spec.containers[0];
        self.set_container_env(ray, node_type, ray_start_cmd);
        if config.probes_injection {
            let ray_version = self.cluster.spec.ray_version.as_deref().unwrap_or_default();
            probes::init_probes(ray, node_type, facts.creator, params, ray_version);
        }
        Pod {
            metadata: meta,
            spec: Some(spec),
            status: None,
        }
    }

    /// `setContainerEnvVars` on the Ray container.
    fn set_container_env(&self, ray: &mut Container, node_type: RayNodeType, ray_start_cmd: String) {
        let facts = &self.facts;
        for default in &self.config.default_container_envs {
            if !has_env(ray, &default.name) {
                push_env(ray, default.clone());
            }
        }
        let ip = match node_type {
            RayNodeType::Worker => {
                push_env(ray, env(FQ_RAY_IP, facts.fqdn.clone()));
                push_env(ray, env(RAY_IP, ray_ip_from_fqdn(&facts.fqdn)));
                facts.fqdn.as_str()
            }
            RayNodeType::Head => LOCAL_HOST,
        };
        push_env(ray, field_env(RAY_CLUSTER_NAME, CLUSTER_LABEL_FIELD_PATH));
        push_env(ray, field_env(RAY_CLUSTER_NAMESPACE, "metadata.namespace"));
        push_env(ray, field_env(RAY_CLOUD_INSTANCE_ID, "metadata.name"));
        push_env(ray, field_env(RAY_NODE_TYPE_NAME, GROUP_LABEL_FIELD_PATH));
        push_env(ray, env(KUBERAY_GEN_RAY_START_CMD, ray_start_cmd));
        push_env_if_absent(ray, env(RAY_PORT, facts.head_port.clone()));
        if facts.creator == CreatorKind::RayService {
            push_env_if_absent(ray, env(RAY_TIMEOUT_MS_TASK_WAIT_FOR_DEATH_INFO, "0"));
            push_env_if_absent(ray, env(RAY_GCS_SERVER_REQUEST_TIMEOUT_SECONDS, "5"));
            push_env_if_absent(ray, env(RAY_SERVE_KV_TIMEOUT_S, "5"));
        }
        push_env_if_absent(ray, env(RAY_ADDRESS, format!("{ip}:{}", facts.head_port)));
        push_env_if_absent(ray, env(RAY_USAGE_STATS_KUBERAY_IN_USE, "1"));
        if node_type == RayNodeType::Head {
            push_env(
                ray,
                env(
                    RAY_USAGE_STATS_EXTRA_TAGS,
                    format!(
                        "kuberay_version={KUBERAY_VERSION};kuberay_crd={}",
                        facts.creator.as_str()
                    ),
                ),
            );
        }
        push_env_if_absent(ray, env(RAY_DASHBOARD_ENABLE_K8S_DISK_USAGE, "1"));
    }
}

/// The head pod of `cluster` (see [`PodGenerator::head_pod`]).
pub fn build_head_pod(cluster: &RayCluster, config: &PodGenConfig) -> Result<Pod, PodGenError> {
    PodGenerator::new(cluster, config).head_pod()
}

/// One worker pod of group `group_index` (see [`PodGenerator::worker_template`] to build many).
pub fn build_worker_pod(
    cluster: &RayCluster,
    group_index: usize,
    replica: &WorkerReplica<'_>,
    config: &PodGenConfig,
) -> Result<Pod, PodGenError> {
    PodGenerator::new(cluster, config).worker_pod(group_index, replica)
}
