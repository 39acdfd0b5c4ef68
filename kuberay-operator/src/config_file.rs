//! The `--config` file: KubeRay's `config.ray.io/v1alpha1` `Configuration`. When it is given, its
//! values replace every flag (KubeRay quirk kept: the stdout/file log encoders still come from the
//! flags), with KubeRay's defaulting (`SetDefaults_Configuration`).

use crate::flags::Flags;
use anyhow::Context as _;
use k8s_openapi::api::core::v1::{Container, EnvVar};
use serde::Deserialize;
use std::collections::BTreeMap;

/// API version of the configuration file.
pub const CONFIG_API_VERSION: &str = "config.ray.io/v1alpha1";
/// Kind of the configuration file.
pub const CONFIG_KIND: &str = "Configuration";

/// The `Configuration` document (fields KubeRay defines; unknown fields are ignored as in Go).
#[derive(Clone, Debug, Default, Deserialize, PartialEq)]
#[serde(rename_all = "camelCase", default)]
pub struct Configuration {
    /// Must be [`CONFIG_API_VERSION`] when set.
    pub api_version: Option<String>,
    /// Must be [`CONFIG_KIND`] when set.
    pub kind: Option<String>,
    /// Metrics bind address.
    pub metrics_addr: Option<String>,
    /// Probe bind address.
    pub probe_addr: Option<String>,
    /// Leader election on/off (default true).
    pub enable_leader_election: Option<bool>,
    /// Lease namespace.
    pub leader_election_namespace: Option<String>,
    /// Reconcile concurrency (0 -> 1).
    pub reconcile_concurrency: Option<i64>,
    /// Watched namespaces, comma-separated.
    pub watch_namespace: Option<String>,
    /// Log file path.
    pub log_file: Option<String>,
    /// Deprecated Volcano switch.
    pub enable_batch_scheduler: Option<bool>,
    /// Batch scheduler name.
    pub batch_scheduler: Option<String>,
    /// Sidecars appended to head pods.
    pub head_sidecar_containers: Option<Vec<Container>>,
    /// Sidecars appended to worker pods.
    pub worker_sidecar_containers: Option<Vec<Container>>,
    /// Env vars added to every Ray container.
    pub default_container_envs: Option<Vec<EnvVar>>,
    /// Annotations added to Ray pods (template values win).
    pub default_pod_annotations: Option<BTreeMap<String, String>>,
    /// Labels added to Ray pods (template values win).
    pub default_pod_labels: Option<BTreeMap<String, String>>,
    /// RayJob: delete the CR after the job finishes.
    pub delete_ray_job_after_job_finishes: Option<bool>,
    /// Client QPS (default 100).
    pub qps: Option<f64>,
    /// Client burst (default 200).
    pub burst: Option<i64>,
    /// Custom-resource metrics.
    pub enable_metrics: Option<bool>,
    /// Dashboard access through the API server proxy.
    pub use_kubernetes_proxy: Option<bool>,
}

/// Read and validate a configuration file.
pub fn load(path: &str) -> anyhow::Result<Configuration> {
    let text = std::fs::read_to_string(path).with_context(|| format!("failed to read config file {path}"))?;
    parse(&text).with_context(|| format!("failed to decode config file {path}"))
}

/// Parse a configuration document (YAML read as Kubernetes reads it, then decoded as the operator decodes
/// what it watches, so that a misfit names its field).
pub fn parse(text: &str) -> anyhow::Result<Configuration> {
    let document: serde_json::Value = ray_api::yaml::from_yaml_str(text)?;
    // An empty (or comments-only) file is the empty configuration, as Go's YAML reader has it.
    let config: Configuration = if document.is_null() {
        Configuration::default()
    } else {
        ray_reconcile::decode::decode_value(&document)?
    };
    if let Some(v) = config.api_version.as_deref().filter(|v| *v != CONFIG_API_VERSION) {
        anyhow::bail!("unsupported apiVersion {v:?}, want {CONFIG_API_VERSION:?}");
    }
    if let Some(k) = config.kind.as_deref().filter(|k| *k != CONFIG_KIND) {
        anyhow::bail!("unsupported kind {k:?}, want {CONFIG_KIND:?}");
    }
    Ok(config)
}

/// Replace the run flags by the configuration's values (with KubeRay's defaults for absent ones).
/// Log encoders and feature gates stay as the flags set them.
pub fn apply(config: &Configuration, flags: &Flags) -> Flags {
    let defaults = Flags::default();
    Flags {
        metrics_addr: config
            .metrics_addr
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or(defaults.metrics_addr),
        probe_addr: config
            .probe_addr
            .clone()
            .filter(|s| !s.is_empty())
            .unwrap_or(defaults.probe_addr),
        enable_leader_election: config.enable_leader_election.unwrap_or(true),
        leader_election_namespace: config.leader_election_namespace.clone().unwrap_or_default(),
        reconcile_concurrency: config.reconcile_concurrency.filter(|c| *c != 0).unwrap_or(1),
        watch_namespace: config.watch_namespace.clone().unwrap_or_default(),
        log_file_path: config.log_file.clone().unwrap_or_default(),
        enable_batch_scheduler: config.enable_batch_scheduler.unwrap_or(false),
        batch_scheduler: config.batch_scheduler.clone().unwrap_or_default(),
        config: flags.config.clone(),
        use_kubernetes_proxy: config.use_kubernetes_proxy.unwrap_or(false),
        enable_metrics: config.enable_metrics.unwrap_or(false),
        qps: config.qps.unwrap_or(defaults.qps),
        burst: config.burst.unwrap_or(defaults.burst),
        ..flags.clone()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn config_replaces_flags_with_defaults() {
        let config = parse(
            "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nmetricsAddr: \":9090\"\n\
             reconcileConcurrency: 0\nenableLeaderElection: false\nqps: 20\n",
        )
        .unwrap();
        let flags = Flags {
            burst: 5,
            log_stdout_encoder: "console".into(),
            ..Flags::default()
        };
        let merged = apply(&config, &flags);
        assert_eq!(merged.metrics_addr, ":9090");
        assert_eq!(merged.probe_addr, ":8082");
        assert_eq!(merged.reconcile_concurrency, 1);
        assert!(!merged.enable_leader_election);
        assert_eq!(merged.qps, 20.0);
        assert_eq!(merged.burst, 200, "flags are ignored when --config is set");
        assert_eq!(
            merged.log_stdout_encoder, "console",
            "encoders still come from the flags"
        );
    }

    #[test]
    fn sidecars_are_read_and_a_misfit_names_its_field() {
        let config = parse(
            "apiVersion: config.ray.io/v1alpha1\nkind: Configuration\nheadSidecarContainers:\n\
             - name: fluentbit\n  image: fluent/fluent-bit:1.9.6\n  resources: {limits: {cpu: 100m}}\n",
        )
        .unwrap();
        let sidecars = config.head_sidecar_containers.unwrap_or_default();
        assert_eq!(sidecars.len(), 1);
        assert_eq!(sidecars[0].name, "fluentbit");

        let error =
            parse("kind: Configuration\nworkerSidecarContainers:\n- name: a\n  ports: [{containerPort: http}]\n")
                .unwrap_err()
                .to_string();
        assert_eq!(
            error,
            "workerSidecarContainers[0].ports[0].containerPort: invalid type: string \"http\", expected i32"
        );
    }

    #[test]
    fn an_empty_file_is_the_empty_configuration() {
        assert_eq!(parse("").unwrap(), Configuration::default());
        assert_eq!(parse("# nothing set\n").unwrap(), Configuration::default());
    }

    #[test]
    fn wrong_kind_is_rejected() {
        assert!(parse("apiVersion: v1\nkind: ConfigMap\n").is_err());
    }
}
