//! The checks of a read config file (the messages that follow `failed to validate config file: `) and the
//! cluster it describes. Quantities are checked head first (`cpu`, `gpu`, `memory`, `ephemeral-storage`),
//! then each worker group's (named `<key> (worker group <index>)`, `tpu` after `gpu`) followed by its TPU
//! checks, then `gke.gcsfuse`.

use std::collections::BTreeMap;

use crate::cluster_spec::{
    ClusterShape, DEFAULT_GROUP_NAME, NodeResources, WorkerGroupShape, check_tpu_group, parse_autoscaler,
};
use crate::config_file::{ClusterConfig, HeadConfig, WorkerGroupConfig};
use crate::error::Result;
use crate::quantity_flags::check_quantity;

/// What the file says about the RayCluster's metadata.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigMetadata {
    /// `name`, when set and not empty.
    pub name: Option<String>,
    /// `namespace`, when set and not empty.
    pub namespace: Option<String>,
    /// `labels`.
    pub labels: BTreeMap<String, String>,
    /// `annotations`.
    pub annotations: BTreeMap<String, String>,
}

/// Checks a config file laid over the defaults and returns its metadata and cluster.
pub fn resolve(config: ClusterConfig) -> Result<(ConfigMetadata, ClusterShape)> {
    let head_config = config.head.unwrap_or_default();
    let head = head_resources(&head_config)?;
    let worker_groups = config
        .worker_groups
        .unwrap_or_default()
        .into_iter()
        .enumerate()
        .map(|(index, group)| worker_group(index, group))
        .collect::<Result<Vec<_>>>()?;
    let gcsfuse = config.gke.and_then(|gke| gke.gcsfuse);
    if let Some(gcsfuse) = &gcsfuse {
        gcsfuse.validate()?;
    }
    let autoscaler_version = config.autoscaler.and_then(|a| a.version).filter(|v| !v.is_empty());
    let shape = ClusterShape {
        ray_version: config.ray_version.unwrap_or_default(),
        image: config.image.unwrap_or_default(),
        head,
        head_ray_start_params: head_config.ray_start_params.unwrap_or_default(),
        head_node_selector: head_config.node_selectors.unwrap_or_default(),
        worker_groups,
        autoscaler: parse_autoscaler(autoscaler_version.as_deref())?,
        service_account: config.service_account.filter(|s| !s.is_empty()),
        gcsfuse,
    };
    let metadata = ConfigMetadata {
        name: config.name.filter(|n| !n.is_empty()),
        namespace: config.namespace.filter(|n| !n.is_empty()),
        labels: config.labels.unwrap_or_default(),
        annotations: config.annotations.unwrap_or_default(),
    };
    Ok((metadata, shape))
}

/// A key's value, or "" (unset) when left out.
fn text(value: &Option<String>) -> &str {
    value.as_deref().unwrap_or_default()
}

/// The head's resources, checked under their bare key names.
fn head_resources(head: &HeadConfig) -> Result<NodeResources> {
    // Checked in this order, whatever order the fields are built in.
    let cpu = ("cpu", text(&head.cpu));
    let gpu = ("gpu", text(&head.gpu));
    let memory = ("memory", text(&head.memory));
    let ephemeral_storage = ("ephemeral-storage", text(&head.ephemeral_storage));
    let checked = NodeResources {
        cpu: check_quantity(cpu.0, cpu.1)?,
        gpu: check_quantity(gpu.0, gpu.1)?,
        memory: check_quantity(memory.0, memory.1)?,
        ephemeral_storage: check_quantity(ephemeral_storage.0, ephemeral_storage.1)?,
        tpu: None,
    };
    Ok(checked)
}

/// The name of the group at `index` when the file gives none.
fn default_group_name(index: usize) -> String {
    if index == 0 {
        DEFAULT_GROUP_NAME.to_string()
    } else {
        format!("{DEFAULT_GROUP_NAME}-{index}")
    }
}

/// One worker group, its quantities checked as `<key> (worker group <index>)`, then its TPU settings.
fn worker_group(index: usize, group: WorkerGroupConfig) -> Result<WorkerGroupShape> {
    let check =
        |key: &str, value: &Option<String>| check_quantity(&format!("{key} (worker group {index})"), text(value));
    let cpu = check("cpu", &group.cpu)?;
    let gpu = check("gpu", &group.gpu)?;
    let tpu = check("tpu", &group.tpu)?;
    let memory = check("memory", &group.memory)?;
    let ephemeral_storage = check("ephemeral-storage", &group.ephemeral_storage)?;
    let shape = WorkerGroupShape {
        name: group
            .name
            .filter(|n| !n.is_empty())
            .unwrap_or_else(|| default_group_name(index)),
        replicas: group.replicas,
        num_of_hosts: group.num_of_hosts,
        resources: NodeResources {
            cpu,
            memory,
            ephemeral_storage,
            gpu,
            tpu,
        },
        ray_start_params: group.ray_start_params.unwrap_or_default(),
        node_selector: group.node_selectors.unwrap_or_default(),
    };
    check_tpu_group(&shape)?;
    Ok(shape)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use crate::config_file::parse;

    fn resolved(text: &str) -> (ConfigMetadata, ClusterShape) {
        resolve(parse(text).unwrap()).unwrap()
    }

    fn message(text: &str) -> String {
        resolve(parse(text).unwrap()).err().unwrap().to_string()
    }

    #[test]
    fn unnamed_groups_are_numbered_after_the_first() {
        let (_, shape) = resolved("worker-groups:\n- replicas: 1\n- name: gpu\n- name: \"\"\n");
        let names: Vec<_> = shape.worker_groups.iter().map(|g| g.name.as_str()).collect();
        assert_eq!(names, ["default-group", "gpu", "default-group-2"]);
        assert_eq!(shape.worker_groups[1].replicas, 0);
        assert_eq!(shape.worker_groups[1].num_of_hosts, None);
    }

    #[test]
    fn quantities_are_checked_in_order_and_named_by_key_and_group() {
        assert!(
            message("head:\n  cpu: lots\n  memory: -1Gi\n").starts_with("cpu is not a valid resource quantity: "),
            "{}",
            message("head:\n  cpu: lots\n")
        );
        assert_eq!(message("head:\n  memory: -1Gi\n"), "memory cannot be negative");
        assert!(
            message("worker-groups:\n- cpu: lots\n")
                .starts_with("cpu (worker group 0) is not a valid resource quantity: ")
        );
        assert_eq!(
            message("worker-groups:\n- cpu: 1\n- tpu: -4\n"),
            "tpu (worker group 1) cannot be negative"
        );
    }

    #[test]
    fn tpu_groups_need_gke_selectors_and_hosts() {
        assert!(
            message("worker-groups:\n- tpu: 4\n")
                .starts_with("cloud.google.com/gke-tpu-accelerator is not set in --worker-node-selectors.")
        );
        assert_eq!(
            message(
                "worker-groups:\n- tpu: 4\n  num-of-hosts: 0\n  node-selectors:\n    \
                 cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice\n    cloud.google.com/gke-tpu-topology: 2x2\n"
            ),
            "numOfHosts cannot be 0 when using TPU"
        );
        let (_, shape) = resolved(
            "worker-groups:\n- tpu: 4\n  node-selectors:\n    cloud.google.com/gke-tpu-accelerator: tpu-v6e-slice\n    \
             cloud.google.com/gke-tpu-topology: 2x2\n",
        );
        assert!(shape.worker_groups[0].resources.uses_tpu());
    }

    #[test]
    fn gcsfuse_needs_a_bucket_and_a_mount_path() {
        assert_eq!(
            message("gke:\n  gcsfuse:\n    mount-path: /m\n"),
            ".gcsfuse.bucket-name is required"
        );
        assert_eq!(
            message("gke:\n  gcsfuse:\n    bucket-name: b\n"),
            ".gcsfuse.mount-path is required"
        );
    }

    #[test]
    fn the_autoscaler_version_must_be_v1_or_v2() {
        assert_eq!(
            message("autoscaler:\n  version: v3\n"),
            "must be one of \"v1\" or \"v2\""
        );
        assert_eq!(resolved("autoscaler:\n  version: \"\"\n").1.autoscaler, None);
    }

    #[test]
    fn the_generated_cluster_has_every_setting_of_the_file() {
        let (metadata, shape) = resolved(
            "name: rc\nnamespace: \"\"\nlabels: {app: ray}\nimage: my/ray:x\nservice-account: ray-sa\n\
             head:\n  gpu: 1\n  ephemeral-storage: 10Gi\n  node-selectors: {pool: head}\n\
             worker-groups:\n- name: tpu\n  replicas: 2\n  cpu: 1\n  memory: 8Gi\n  tpu: 4\n  num-of-hosts: 2\n  \
             ray-start-params: {num-cpus: \"1\"}\n  node-selectors:\n    cloud.google.com/gke-tpu-accelerator: \
             tpu-v6e-slice\n    cloud.google.com/gke-tpu-topology: 2x4\n\
             autoscaler: {version: V2}\n\
             gke:\n  gcsfuse: {bucket-name: b, mount-path: /data, resources: {memory: 256Mi}}\n",
        );
        assert_eq!(metadata.name.as_deref(), Some("rc"));
        assert_eq!(metadata.namespace, None, "an empty namespace is unset");
        assert_eq!(
            metadata.labels,
            BTreeMap::from([("app".to_string(), "ray".to_string())])
        );
        let spec = serde_json::to_value(shape.spec()).unwrap();
        assert_eq!(spec["rayVersion"], "2.52.0");
        assert_eq!(spec["enableInTreeAutoscaling"], true);
        assert_eq!(spec["autoscalerOptions"]["version"], "v2");
        let head = &spec["headGroupSpec"]["template"];
        assert_eq!(head["spec"]["serviceAccountName"], "ray-sa");
        assert_eq!(head["spec"]["nodeSelector"], serde_json::json!({"pool": "head"}));
        assert_eq!(head["spec"]["containers"][0]["image"], "my/ray:x");
        assert_eq!(
            head["spec"]["containers"][0]["resources"],
            serde_json::json!({
                "requests": {"cpu": "2", "memory": "4Gi", "ephemeral-storage": "10Gi", "nvidia.com/gpu": "1"},
                "limits": {"memory": "4Gi", "ephemeral-storage": "10Gi", "nvidia.com/gpu": "1"}
            })
        );
        assert_eq!(head["metadata"]["annotations"]["gke-gcsfuse/memory-limit"], "256Mi");
        assert_eq!(head["spec"]["volumes"][0]["csi"]["volumeAttributes"]["bucketName"], "b");
        let group = &spec["workerGroupSpecs"][0];
        assert_eq!(group["groupName"], "tpu");
        assert_eq!(group["replicas"], 2);
        assert_eq!(group["numOfHosts"], 2);
        assert_eq!(group["rayStartParams"], serde_json::json!({"num-cpus": "1"}));
        let worker = &group["template"];
        assert_eq!(worker["spec"]["serviceAccountName"], "ray-sa");
        assert_eq!(worker["spec"]["containers"][0]["name"], "ray-worker");
        assert_eq!(
            worker["spec"]["containers"][0]["resources"]["limits"],
            serde_json::json!({"memory": "8Gi", "google.com/tpu": "4"})
        );
        assert_eq!(
            worker["spec"]["containers"][0]["volumeMounts"],
            serde_json::json!([{"name": "cluster-storage", "mountPath": "/data"}])
        );
        assert_eq!(worker["metadata"]["annotations"]["gke-gcsfuse/memory-request"], "256Mi");
    }
}
