//! Operator-level switches that change generated objects (docs/podgen.md#operator-switches), gathered into one
//! value the binary builds from its environment, flags and configuration file.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, EnvVar};
use ray_api::constants::{
    CLUSTER_DOMAIN_ENV, ENABLE_DETERMINISTIC_HEAD_POD_NAME, ENABLE_INIT_CONTAINER_INJECTION, ENABLE_LOGIN_SHELL,
    ENABLE_PROBES_INJECTION, ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE,
};

pub use ray_api::feature_gates::FeatureGates;

/// Everything outside the custom resource that changes the generated objects.
#[derive(Clone, Debug, PartialEq)]
pub struct PodGenConfig {
    /// `ENABLE_DETERMINISTIC_HEAD_POD_NAME == true`: head pods get `metadata.name` instead of `generateName`.
    pub deterministic_head_pod_name: bool,
    /// `ENABLE_INIT_CONTAINER_INJECTION != false`: workers get the `wait-gcs-ready` init container.
    pub init_container_injection: bool,
    /// `ENABLE_PROBES_INJECTION != false`: Ray containers get liveness/readiness probes.
    pub probes_injection: bool,
    /// `ENABLE_LOGIN_SHELL == true`: generated bash commands use `-cl` instead of `-c`.
    pub login_shell: bool,
    /// `ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE == true`: the head service keeps a cluster IP.
    pub head_cluster_ip_service: bool,
    /// `CLUSTER_DOMAIN` (empty means `cluster.local`).
    pub cluster_domain: String,
    /// Config `defaultContainerEnvs`: added to Ray containers when the name is absent.
    pub default_container_envs: Vec<EnvVar>,
    /// Config `defaultPodLabels`: added to head/worker pods for absent keys.
    pub default_pod_labels: BTreeMap<String, String>,
    /// Config `defaultPodAnnotations`: added to head/worker pods for absent keys.
    pub default_pod_annotations: BTreeMap<String, String>,
    /// Config `headSidecarContainers`: appended to head pods.
    pub head_sidecar_containers: Vec<Container>,
    /// Config `workerSidecarContainers`: appended to worker pods.
    pub worker_sidecar_containers: Vec<Container>,
    /// Feature gates.
    pub feature_gates: FeatureGates,
}

impl Default for PodGenConfig {
    fn default() -> Self {
        Self {
            deterministic_head_pod_name: false,
            init_container_injection: true,
            probes_injection: true,
            login_shell: false,
            head_cluster_ip_service: false,
            cluster_domain: String::new(),
            default_container_envs: Vec::new(),
            default_pod_labels: BTreeMap::new(),
            default_pod_annotations: BTreeMap::new(),
            head_sidecar_containers: Vec::new(),
            worker_sidecar_containers: Vec::new(),
            feature_gates: FeatureGates::default(),
        }
    }
}

fn lower_eq(env: &BTreeMap<String, String>, key: &str, expected: &str) -> bool {
    env.get(key).is_some_and(|value| value.to_lowercase() == expected)
}

impl PodGenConfig {
    /// Reads the operator's `ENABLE_*` switches and `CLUSTER_DOMAIN` from an environment snapshot
    /// (the binary passes `std::env::vars()`); everything else keeps its default.
    pub fn from_env_map(env: &BTreeMap<String, String>) -> Self {
        Self {
            deterministic_head_pod_name: lower_eq(env, ENABLE_DETERMINISTIC_HEAD_POD_NAME, "true"),
            init_container_injection: !lower_eq(env, ENABLE_INIT_CONTAINER_INJECTION, "false"),
            probes_injection: !lower_eq(env, ENABLE_PROBES_INJECTION, "false"),
            login_shell: lower_eq(env, ENABLE_LOGIN_SHELL, "true"),
            head_cluster_ip_service: lower_eq(env, ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE, "true"),
            cluster_domain: env.get(CLUSTER_DOMAIN_ENV).cloned().unwrap_or_default(),
            ..Self::default()
        }
    }

    /// The DNS domain used in FQDNs.
    pub fn domain(&self) -> &str {
        crate::names::cluster_domain(&self.cluster_domain)
    }

    /// KubeRay's `GetContainerCommand(extra)`: `["/bin/bash", "-c<extra>[l]", "--"]`.
    pub fn container_command(&self, extra_flags: &str) -> Vec<String> {
        let login = if self.login_shell { "l" } else { "" };
        vec![
            "/bin/bash".to_owned(),
            format!("-c{extra_flags}{login}"),
            "--".to_owned(),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    #[test]
    fn golden_p11_cluster_domain() {
        assert_eq!(
            PodGenConfig::from_env_map(&env(&[("CLUSTER_DOMAIN", "abc.com")])).domain(),
            "abc.com"
        );
        assert_eq!(PodGenConfig::from_env_map(&env(&[])).domain(), "cluster.local");
        assert_eq!(
            PodGenConfig::from_env_map(&env(&[("CLUSTER_DOMAIN", "")])).domain(),
            "cluster.local"
        );
    }

    #[test]
    fn golden_p14_container_command() {
        let plain = PodGenConfig::default();
        let login = PodGenConfig {
            login_shell: true,
            ..PodGenConfig::default()
        };
        assert_eq!(plain.container_command(""), ["/bin/bash", "-c", "--"]);
        assert_eq!(login.container_command(""), ["/bin/bash", "-cl", "--"]);
        assert_eq!(plain.container_command("e"), ["/bin/bash", "-ce", "--"]);
        assert_eq!(login.container_command("e"), ["/bin/bash", "-cel", "--"]);
    }

    #[test]
    fn golden_p37_injection_switches() {
        for (value, expected) in [
            (None, true),
            (Some("true"), true),
            (Some("True"), true),
            (Some("false"), false),
            (Some("False"), false),
        ] {
            let mut map = BTreeMap::new();
            if let Some(v) = value {
                map.insert(ENABLE_INIT_CONTAINER_INJECTION.to_owned(), v.to_owned());
                map.insert(ENABLE_PROBES_INJECTION.to_owned(), v.to_owned());
            }
            let config = PodGenConfig::from_env_map(&map);
            assert_eq!(config.init_container_injection, expected, "{value:?}");
            assert_eq!(config.probes_injection, expected, "{value:?}");
        }
    }

    #[test]
    fn deterministic_head_and_login_shell_are_case_insensitive() {
        let config = PodGenConfig::from_env_map(&env(&[
            ("ENABLE_DETERMINISTIC_HEAD_POD_NAME", "TRUE"),
            ("ENABLE_LOGIN_SHELL", "True"),
            ("ENABLE_RAY_HEAD_CLUSTER_IP_SERVICE", "yes"),
        ]));
        assert!(config.deterministic_head_pod_name);
        assert!(config.login_shell);
        assert!(!config.head_cluster_ip_service);
    }

    #[test]
    fn feature_gates_parse() {
        let gates = FeatureGates::parse("RayClusterMTLS=true, RayMultiHostIndexing=false").unwrap();
        assert!(gates.ray_cluster_mtls);
        assert!(!gates.ray_multi_host_indexing);
        assert!(gates.ray_job_deletion_policy);
        assert!(FeatureGates::parse("").unwrap() == FeatureGates::default());
        assert_eq!(
            FeatureGates::parse("Nope=true").unwrap_err().to_string(),
            "unrecognized feature gate: Nope"
        );
        assert!(FeatureGates::parse("RayCronJob=maybe").is_err());
        assert!(FeatureGates::parse("RayCronJob").is_err());
    }
}
