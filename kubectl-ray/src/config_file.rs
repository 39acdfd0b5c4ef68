//! The YAML file of `kubectl ray create cluster NAME --file FILE`: its keys (read strictly, an unknown key is an
//! error) and the defaults it is laid over. Missing top-level and head keys keep the defaults of the flags;
//! `worker-groups`, when present, replaces the default group whole, with no per-field defaults.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;

use crate::cli::{
    DEFAULT_HEAD_CPU, DEFAULT_HEAD_MEMORY, DEFAULT_RAY_IMAGE, DEFAULT_RAY_VERSION, DEFAULT_WORKER_CPU,
    DEFAULT_WORKER_MEMORY, DEFAULT_WORKER_REPLICAS,
};
use crate::cluster_spec::DEFAULT_GROUP_NAME;
use crate::error::{Result, failed};
use crate::gcsfuse::GcsFuse;

/// The whole file.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct ClusterConfig {
    /// The RayCluster's namespace.
    pub namespace: Option<String>,
    /// The RayCluster's name.
    pub name: Option<String>,
    /// The RayCluster's labels.
    pub labels: Option<BTreeMap<String, String>>,
    /// The RayCluster's annotations.
    pub annotations: Option<BTreeMap<String, String>>,
    /// `rayVersion`.
    pub ray_version: Option<String>,
    /// The image of every Ray container (used as written; it does not follow `ray-version`).
    pub image: Option<String>,
    /// The service account of every pod.
    pub service_account: Option<String>,
    /// The head.
    pub head: Option<HeadConfig>,
    /// The worker groups.
    pub worker_groups: Option<Vec<WorkerGroupConfig>>,
    /// The in-tree autoscaler.
    pub autoscaler: Option<AutoscalerConfig>,
    /// GKE options.
    pub gke: Option<GkeConfig>,
}

/// `head`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct HeadConfig {
    /// CPUs.
    pub cpu: Option<String>,
    /// GPUs.
    pub gpu: Option<String>,
    /// Memory.
    pub memory: Option<String>,
    /// Ephemeral storage.
    pub ephemeral_storage: Option<String>,
    /// `rayStartParams`.
    pub ray_start_params: Option<BTreeMap<String, String>>,
    /// The pods' node selector.
    pub node_selectors: Option<BTreeMap<String, String>>,
}

/// One entry of `worker-groups`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
pub struct WorkerGroupConfig {
    /// The group's name (unnamed groups are `default-group`, then `default-group-<index>`).
    pub name: Option<String>,
    /// `replicas` (0 when left out).
    #[serde(default)]
    pub replicas: i32,
    /// CPUs.
    pub cpu: Option<String>,
    /// GPUs.
    pub gpu: Option<String>,
    /// TPUs.
    pub tpu: Option<String>,
    /// Memory.
    pub memory: Option<String>,
    /// Ephemeral storage.
    pub ephemeral_storage: Option<String>,
    /// `numOfHosts` (left out of the group when not set).
    pub num_of_hosts: Option<i32>,
    /// `rayStartParams`.
    pub ray_start_params: Option<BTreeMap<String, String>>,
    /// The pods' node selector.
    pub node_selectors: Option<BTreeMap<String, String>>,
}

/// `autoscaler`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AutoscalerConfig {
    /// `v1` or `v2`; empty or left out: no autoscaler.
    pub version: Option<String>,
}

/// `gke`.
#[derive(Debug, Clone, Default, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GkeConfig {
    /// Cloud Storage FUSE.
    pub gcsfuse: Option<GcsFuse>,
}

/// Reads `path` and lays it over the defaults. The messages are those that follow `failed to parse config
/// file: `.
pub fn read(path: &Path) -> Result<ClusterConfig> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(failed!("config file {} does not exist", path.display()));
        }
        Err(e) => return Err(failed!("failed to read config file: {e}")),
    };
    parse(&text)
}

/// Parses the file's text and lays it over the defaults; an empty document is all defaults.
pub fn parse(text: &str) -> Result<ClusterConfig> {
    let file: Option<ClusterConfig> =
        ray_api::yaml::from_yaml_str(text).map_err(|e| failed!("failed to parse YAML: {e}"))?;
    Ok(file.unwrap_or_default().with_defaults())
}

/// The default worker group: the flags' defaults.
fn default_worker_group() -> WorkerGroupConfig {
    WorkerGroupConfig {
        name: Some(DEFAULT_GROUP_NAME.to_string()),
        replicas: DEFAULT_WORKER_REPLICAS,
        cpu: Some(DEFAULT_WORKER_CPU.to_string()),
        memory: Some(DEFAULT_WORKER_MEMORY.to_string()),
        ..Default::default()
    }
}

impl ClusterConfig {
    /// The file over the defaults: Ray version, image, head CPU and memory key by key; the worker groups whole.
    fn with_defaults(self) -> ClusterConfig {
        let head = self.head.unwrap_or_default();
        ClusterConfig {
            ray_version: self.ray_version.or_else(|| Some(DEFAULT_RAY_VERSION.to_string())),
            image: self.image.or_else(|| Some(DEFAULT_RAY_IMAGE.to_string())),
            head: Some(HeadConfig {
                cpu: head.cpu.or_else(|| Some(DEFAULT_HEAD_CPU.to_string())),
                memory: head.memory.or_else(|| Some(DEFAULT_HEAD_MEMORY.to_string())),
                ..head
            }),
            worker_groups: Some(self.worker_groups.unwrap_or_else(|| vec![default_worker_group()])),
            ..self
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn message(text: &str) -> String {
        parse(text).err().unwrap().to_string()
    }

    #[test]
    fn an_empty_file_is_the_defaults() {
        let config = parse("# nothing here\n").unwrap();
        assert_eq!(config, parse("").unwrap());
        assert_eq!(config.ray_version.as_deref(), Some("2.52.0"));
        assert_eq!(config.image.as_deref(), Some("rayproject/ray:2.52.0"));
        let head = config.head.unwrap();
        assert_eq!((head.cpu.as_deref(), head.memory.as_deref()), (Some("2"), Some("4Gi")));
        assert_eq!(head.gpu, None);
        assert_eq!(config.worker_groups.unwrap(), [default_worker_group()]);
        assert_eq!(config.name, None);
    }

    #[test]
    fn head_keys_merge_with_the_defaults_and_worker_groups_replace_them() {
        let config = parse(
            "ray-version: 2.46.0\nhead:\n  cpu: 3\n  ray-start-params:\n    num-cpus: 0\n\
             worker-groups:\n- replicas: 2\n  gpu: 1\n- name: big\n  cpu: \"4\"\n",
        )
        .unwrap();
        assert_eq!(config.ray_version.as_deref(), Some("2.46.0"));
        // The image does not follow the version in a file.
        assert_eq!(config.image.as_deref(), Some("rayproject/ray:2.52.0"));
        let head = config.head.unwrap();
        assert_eq!((head.cpu.as_deref(), head.memory.as_deref()), (Some("3"), Some("4Gi")));
        assert_eq!(
            head.ray_start_params.unwrap(),
            BTreeMap::from([("num-cpus".to_string(), "0".to_string())])
        );
        let groups = config.worker_groups.unwrap();
        assert_eq!(
            groups,
            [
                WorkerGroupConfig {
                    replicas: 2,
                    gpu: Some("1".into()),
                    ..Default::default()
                },
                WorkerGroupConfig {
                    name: Some("big".into()),
                    cpu: Some("4".into()),
                    ..Default::default()
                },
            ]
        );
    }

    #[test]
    fn every_key_is_read() {
        let config = parse(
            "namespace: ns\nname: rc\nlabels: {app: ray}\nannotations: {owner: me}\nray-version: 2.46.0\n\
             image: my/ray:x\nservice-account: sa\nhead:\n  cpu: 1\n  gpu: 0\n  memory: 2Gi\n  \
             ephemeral-storage: 1Gi\n  ray-start-params: {a: b}\n  node-selectors: {c: d}\n\
             worker-groups:\n- name: g\n  replicas: 3\n  cpu: 1\n  gpu: 1\n  tpu: 4\n  memory: 1Gi\n  \
             ephemeral-storage: 2Gi\n  num-of-hosts: 2\n  ray-start-params: {e: f}\n  node-selectors: {g: h}\n\
             autoscaler:\n  version: v2\ngke:\n  gcsfuse:\n    bucket-name: b\n    mount-path: /m\n    \
             mount-options: o\n    disable-metrics: true\n    gcsfuse-metadata-prefetch-on-mount: false\n    \
             skip-csi-bucket-access-check: true\n    resources: {cpu: 250m, memory: 256Mi, ephemeral-storage: 5Gi}\n",
        )
        .unwrap();
        assert_eq!(config.namespace.as_deref(), Some("ns"));
        assert_eq!(config.service_account.as_deref(), Some("sa"));
        assert_eq!(config.head.unwrap().ephemeral_storage.as_deref(), Some("1Gi"));
        let group = &config.worker_groups.unwrap()[0];
        assert_eq!((group.tpu.as_deref(), group.num_of_hosts), (Some("4"), Some(2)));
        assert_eq!(config.autoscaler.unwrap().version.as_deref(), Some("v2"));
        let gcsfuse = config.gke.unwrap().gcsfuse.unwrap();
        assert_eq!(gcsfuse.skip_csi_bucket_access_check, Some(true));
        assert_eq!(gcsfuse.resources.unwrap().ephemeral_storage.as_deref(), Some("5Gi"));
    }

    #[test]
    fn unknown_keys_and_wrong_shapes_are_errors() {
        for text in [
            "bogus: 1\n",
            "head:\n  tpu: 1\n",
            "worker-groups:\n- min-replicas: 1\n",
            "gke:\n  gcsfuse:\n    bucket: b\n",
            "worker-groups: {name: g}\n",
            "worker-groups:\n- replicas: many\n",
        ] {
            let m = message(text);
            assert!(m.starts_with("failed to parse YAML: "), "{text:?}: {m}");
        }
        assert!(message("bogus: 1\n").contains("bogus"), "{}", message("bogus: 1\n"));
    }

    #[test]
    fn a_missing_file_is_named() {
        let err = read(Path::new("/nonexistent/cluster.yaml")).err().unwrap().to_string();
        assert_eq!(err, "config file /nonexistent/cluster.yaml does not exist");
    }
}
