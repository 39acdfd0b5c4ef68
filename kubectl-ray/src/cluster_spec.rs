//! The RayCluster spec the plugin generates from its flags (`create cluster`, and `job submit` without a
//! file): a head container `ray-head` with the Ray ports and one or more worker groups with `ray-worker`
//! containers. Requests carry every non-zero resource; limits the same except CPU.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use ray_api::constants::{
    CLIENT_PORT_NAME, DASHBOARD_PORT_NAME, DEFAULT_CLIENT_PORT, DEFAULT_DASHBOARD_PORT, DEFAULT_GCS_SERVER_PORT,
    GCS_SERVER_PORT_NAME, TPU_CONTAINER_RESOURCE,
};
use ray_api::quantity::Qty;
use ray_api::{AutoscalerOptions, AutoscalerVersion, HeadGroupSpec, RayClusterSpec, WorkerGroupSpec};

use crate::cli::{DEFAULT_RAY_IMAGE, DEFAULT_RAY_VERSION, RAY_IMAGE_REPOSITORY};
use crate::error::{Result, failed};
use crate::gcsfuse::GcsFuse;
use crate::quantity_flags::check_quantity;
use crate::resources::GPU_RESOURCE;

/// The head container's name.
pub const HEAD_CONTAINER_NAME: &str = "ray-head";
/// The worker containers' name.
pub const WORKER_CONTAINER_NAME: &str = "ray-worker";
/// The name of the generated worker group.
pub const DEFAULT_GROUP_NAME: &str = "default-group";
/// The node selector a TPU worker group needs for its accelerator type.
pub const GKE_TPU_ACCELERATOR_SELECTOR: &str = "cloud.google.com/gke-tpu-accelerator";
/// The node selector a TPU worker group needs for its topology.
pub const GKE_TPU_TOPOLOGY_SELECTOR: &str = "cloud.google.com/gke-tpu-topology";

/// One node's resources, checked.
#[derive(Debug, Clone, Default)]
pub struct NodeResources {
    /// CPUs.
    pub cpu: Option<Qty>,
    /// Memory.
    pub memory: Option<Qty>,
    /// Ephemeral storage.
    pub ephemeral_storage: Option<Qty>,
    /// GPUs (`nvidia.com/gpu`).
    pub gpu: Option<Qty>,
    /// TPUs (`google.com/tpu`).
    pub tpu: Option<Qty>,
}

impl NodeResources {
    /// Checks each flag value (`(flag name, value)`; an empty value is unset).
    pub fn from_flags(
        cpu: (&str, &str),
        memory: (&str, &str),
        ephemeral_storage: (&str, &str),
        gpu: (&str, &str),
        tpu: (&str, &str),
    ) -> Result<Self> {
        Ok(NodeResources {
            cpu: check_quantity(cpu.0, cpu.1)?,
            memory: check_quantity(memory.0, memory.1)?,
            ephemeral_storage: check_quantity(ephemeral_storage.0, ephemeral_storage.1)?,
            gpu: check_quantity(gpu.0, gpu.1)?,
            tpu: check_quantity(tpu.0, tpu.1)?,
        })
    }

    /// Whether TPUs are asked for.
    pub fn uses_tpu(&self) -> bool {
        self.tpu.as_ref().is_some_and(|q| !q.is_zero())
    }

    /// The non-zero resources by name.
    fn non_zero(&self) -> BTreeMap<String, Quantity> {
        [
            ("cpu", &self.cpu),
            ("memory", &self.memory),
            ("ephemeral-storage", &self.ephemeral_storage),
            (GPU_RESOURCE, &self.gpu),
            (TPU_CONTAINER_RESOURCE, &self.tpu),
        ]
        .into_iter()
        .filter_map(|(name, q)| {
            q.as_ref()
                .filter(|q| !q.is_zero())
                .map(|q| (name.to_string(), Quantity(q.to_string())))
        })
        .collect()
    }

    /// Requests with every non-zero resource, limits the same without CPU.
    fn requirements(&self) -> ResourceRequirements {
        let requests = self.non_zero();
        let mut limits = requests.clone();
        limits.remove("cpu");
        ResourceRequirements {
            requests: Some(requests),
            limits: Some(limits),
            ..Default::default()
        }
    }
}

/// The extra resource flags only some commands have (empty when a command lacks them).
#[derive(Debug, Clone, Copy, Default)]
pub struct ExtraResourceFlags<'a> {
    /// `--head-ephemeral-storage`.
    pub head_ephemeral_storage: &'a str,
    /// `--worker-ephemeral-storage`.
    pub worker_ephemeral_storage: &'a str,
    /// `--worker-tpu`.
    pub worker_tpu: &'a str,
}

/// The head's and the workers' resources from the shape flags, each checked and named by its flag.
pub fn node_resources(
    shape: &crate::cli::ClusterShapeFlags,
    extra: ExtraResourceFlags<'_>,
) -> Result<(NodeResources, NodeResources)> {
    let head = NodeResources::from_flags(
        ("--head-cpu", &shape.head_cpu),
        ("--head-memory", &shape.head_memory),
        ("--head-ephemeral-storage", extra.head_ephemeral_storage),
        ("--head-gpu", &shape.head_gpu),
        ("--head-tpu", ""),
    )?;
    let worker = NodeResources::from_flags(
        ("--worker-cpu", &shape.worker_cpu),
        ("--worker-memory", &shape.worker_memory),
        ("--worker-ephemeral-storage", extra.worker_ephemeral_storage),
        ("--worker-gpu", &shape.worker_gpu),
        ("--worker-tpu", extra.worker_tpu),
    )?;
    Ok((head, worker))
}

/// A worker group to generate.
#[derive(Debug, Clone)]
pub struct WorkerGroupShape {
    /// The group's name.
    pub name: String,
    /// `replicas`.
    pub replicas: i32,
    /// `numOfHosts` (left out when `None`).
    pub num_of_hosts: Option<i32>,
    /// Each worker's resources.
    pub resources: NodeResources,
    /// `rayStartParams`.
    pub ray_start_params: BTreeMap<String, String>,
    /// The pods' node selector.
    pub node_selector: BTreeMap<String, String>,
}

/// The whole generated cluster.
#[derive(Debug, Clone)]
pub struct ClusterShape {
    /// `rayVersion`.
    pub ray_version: String,
    /// The image of every Ray container.
    pub image: String,
    /// The head's resources.
    pub head: NodeResources,
    /// The head's `rayStartParams`.
    pub head_ray_start_params: BTreeMap<String, String>,
    /// The head's node selector.
    pub head_node_selector: BTreeMap<String, String>,
    /// The worker groups.
    pub worker_groups: Vec<WorkerGroupShape>,
    /// The in-tree autoscaler version, when enabled.
    pub autoscaler: Option<AutoscalerVersion>,
    /// The service account of every pod, when set.
    pub service_account: Option<String>,
    /// A Cloud Storage bucket mounted into every pod with the GCS FUSE CSI driver, when set.
    pub gcsfuse: Option<GcsFuse>,
}

/// The image for `--image` and `--ray-version`: `rayproject/ray:<version>` when the image was left at its
/// default while the version changed, or set to "".
pub fn effective_image(image: &str, ray_version: &str) -> String {
    if image.is_empty() || (image == DEFAULT_RAY_IMAGE && ray_version != DEFAULT_RAY_VERSION) {
        format!("{RAY_IMAGE_REPOSITORY}:{ray_version}")
    } else {
        image.to_string()
    }
}

/// Reads `--autoscaler` (case-insensitive `v1` / `v2`).
pub fn parse_autoscaler(value: Option<&str>) -> Result<Option<AutoscalerVersion>> {
    match value.map(str::to_lowercase).as_deref() {
        None => Ok(None),
        Some("v1") => Ok(Some(AutoscalerVersion::V1)),
        Some("v2") => Ok(Some(AutoscalerVersion::V2)),
        Some(_) => Err(failed!("must be one of \"v1\" or \"v2\"")),
    }
}

/// The checks of a worker group that asks for TPUs: hosts and GKE's TPU node selectors.
pub fn check_tpu_group(group: &WorkerGroupShape) -> Result<()> {
    if !group.resources.uses_tpu() {
        return Ok(());
    }
    if group.num_of_hosts == Some(0) {
        return Err(failed!("numOfHosts cannot be 0 when using TPU"));
    }
    for selector in [GKE_TPU_ACCELERATOR_SELECTOR, GKE_TPU_TOPOLOGY_SELECTOR] {
        if !group.node_selector.contains_key(selector) {
            return Err(failed!(
                "{selector} is not set in --worker-node-selectors. See \
                 https://cloud.google.com/kubernetes-engine/docs/concepts/plan-tpus#availability for supported values"
            ));
        }
    }
    Ok(())
}

/// A pod template with one container.
fn template(
    container: Container,
    node_selector: &BTreeMap<String, String>,
    service_account: Option<&String>,
) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![container],
            node_selector: (!node_selector.is_empty()).then(|| node_selector.clone()),
            service_account_name: service_account.cloned(),
            ..Default::default()
        }),
    }
}

/// A container port.
fn port(name: &str, number: i32) -> ContainerPort {
    ContainerPort {
        name: Some(name.to_string()),
        container_port: number,
        ..Default::default()
    }
}

/// The worker group spec of `group` with the cluster's `image` and service account.
pub fn worker_group_spec(group: &WorkerGroupShape, image: &str, service_account: Option<&String>) -> WorkerGroupSpec {
    let container = Container {
        name: WORKER_CONTAINER_NAME.to_string(),
        image: Some(image.to_string()),
        resources: Some(group.resources.requirements()),
        ..Default::default()
    };
    WorkerGroupSpec {
        group_name: group.name.clone(),
        replicas: Some(group.replicas),
        num_of_hosts: group.num_of_hosts,
        ray_start_params: Some(group.ray_start_params.clone()),
        template: template(container, &group.node_selector, service_account),
        ..Default::default()
    }
}

impl ClusterShape {
    /// The RayCluster spec.
    pub fn spec(&self) -> RayClusterSpec {
        let head = Container {
            name: HEAD_CONTAINER_NAME.to_string(),
            image: Some(self.image.clone()),
            resources: Some(self.head.requirements()),
            ports: Some(vec![
                port(GCS_SERVER_PORT_NAME, DEFAULT_GCS_SERVER_PORT),
                port(DASHBOARD_PORT_NAME, DEFAULT_DASHBOARD_PORT),
                port(CLIENT_PORT_NAME, DEFAULT_CLIENT_PORT),
            ]),
            ..Default::default()
        };
        let service_account = self.service_account.as_ref().filter(|name| !name.is_empty());
        let mut spec = RayClusterSpec {
            ray_version: Some(self.ray_version.clone()),
            enable_in_tree_autoscaling: self.autoscaler.map(|_| true),
            autoscaler_options: self.autoscaler.map(|version| AutoscalerOptions {
                version: Some(version),
                ..Default::default()
            }),
            head_group_spec: HeadGroupSpec {
                ray_start_params: Some(self.head_ray_start_params.clone()),
                template: template(head, &self.head_node_selector, service_account),
                ..Default::default()
            },
            worker_group_specs: Some(
                self.worker_groups
                    .iter()
                    .map(|g| worker_group_spec(g, &self.image, service_account))
                    .collect(),
            ),
            ..Default::default()
        };
        if let Some(gcsfuse) = &self.gcsfuse {
            gcsfuse.mount_into(&mut spec.head_group_spec.template);
            for group in spec.worker_group_specs.iter_mut().flatten() {
                gcsfuse.mount_into(&mut group.template);
            }
        }
        spec
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn resources(cpu: &str, memory: &str, gpu: &str, tpu: &str) -> NodeResources {
        NodeResources::from_flags(("c", cpu), ("m", memory), ("e", ""), ("g", gpu), ("t", tpu)).unwrap()
    }

    #[test]
    fn the_image_follows_the_version_only_when_left_at_its_default() {
        assert_eq!(effective_image(DEFAULT_RAY_IMAGE, "2.52.0"), "rayproject/ray:2.52.0");
        assert_eq!(effective_image(DEFAULT_RAY_IMAGE, "2.46.0"), "rayproject/ray:2.46.0");
        assert_eq!(effective_image("", "2.46.0"), "rayproject/ray:2.46.0");
        assert_eq!(effective_image("my/ray:x", "2.46.0"), "my/ray:x");
    }

    #[test]
    fn autoscaler_versions_are_case_insensitive() {
        assert_eq!(parse_autoscaler(Some("V2")).unwrap(), Some(AutoscalerVersion::V2));
        assert_eq!(parse_autoscaler(None).unwrap(), None);
        assert_eq!(
            parse_autoscaler(Some("v3")).err().unwrap().to_string(),
            "must be one of \"v1\" or \"v2\""
        );
    }

    #[test]
    fn the_spec_has_the_ray_ports_and_limits_without_cpu() {
        let shape = ClusterShape {
            ray_version: "2.52.0".into(),
            image: DEFAULT_RAY_IMAGE.into(),
            head: resources("2", "4Gi", "0", "0"),
            head_ray_start_params: BTreeMap::new(),
            head_node_selector: BTreeMap::new(),
            worker_groups: vec![WorkerGroupShape {
                name: DEFAULT_GROUP_NAME.into(),
                replicas: 3,
                num_of_hosts: Some(1),
                resources: resources("1", "2Gi", "1", "0"),
                ray_start_params: BTreeMap::new(),
                node_selector: BTreeMap::new(),
            }],
            autoscaler: Some(AutoscalerVersion::V2),
            service_account: None,
            gcsfuse: None,
        };
        let spec = serde_json::to_value(shape.spec()).unwrap();
        let head = &spec["headGroupSpec"]["template"]["spec"]["containers"][0];
        assert_eq!(head["name"], "ray-head");
        assert_eq!(
            head["resources"]["requests"],
            serde_json::json!({"cpu": "2", "memory": "4Gi"})
        );
        assert_eq!(head["resources"]["limits"], serde_json::json!({"memory": "4Gi"}));
        let ports: Vec<_> = head["ports"]
            .as_array()
            .unwrap()
            .iter()
            .map(|p| p["containerPort"].clone())
            .collect();
        assert_eq!(ports, [6379, 8265, 10001]);
        let worker = &spec["workerGroupSpecs"][0];
        assert_eq!(worker["groupName"], "default-group");
        assert_eq!(worker["replicas"], 3);
        assert_eq!(
            worker["template"]["spec"]["containers"][0]["resources"]["limits"],
            serde_json::json!({"memory": "2Gi", "nvidia.com/gpu": "1"})
        );
        assert_eq!(spec["enableInTreeAutoscaling"], true);
        assert_eq!(spec["autoscalerOptions"]["version"], "v2");
    }

    #[test]
    fn tpu_groups_need_hosts_and_gke_selectors() {
        let mut group = WorkerGroupShape {
            name: "tpu".into(),
            replicas: 1,
            num_of_hosts: Some(0),
            resources: resources("1", "1Gi", "0", "4"),
            ray_start_params: BTreeMap::new(),
            node_selector: BTreeMap::new(),
        };
        assert_eq!(
            check_tpu_group(&group).err().unwrap().to_string(),
            "numOfHosts cannot be 0 when using TPU"
        );
        group.num_of_hosts = None;
        assert!(
            check_tpu_group(&group)
                .err()
                .unwrap()
                .to_string()
                .starts_with("cloud.google.com/gke-tpu-accelerator is not set in --worker-node-selectors.")
        );
        group
            .node_selector
            .insert(GKE_TPU_ACCELERATOR_SELECTOR.into(), "tpu-v6e-slice".into());
        group
            .node_selector
            .insert(GKE_TPU_TOPOLOGY_SELECTOR.into(), "2x2".into());
        assert!(check_tpu_group(&group).is_ok());
    }
}
