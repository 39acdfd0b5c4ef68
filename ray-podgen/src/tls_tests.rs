//! KubeRay's golden cases P61 and P62 (mTLS), and where the TLS additions go in the order of environment
//! variables and init containers (docs/podgen.md#mtls).

use k8s_openapi::api::core::v1::{Container, Pod};
use ray_api::RayCluster;
use ray_api::constants::{
    RAY_TLS_CA_CERT_ENV, RAY_TLS_CERT_MOUNT_PATH, RAY_TLS_SERVER_CERT_ENV, RAY_TLS_SERVER_KEY_ENV, RAY_TLS_VOLUME_NAME,
    RAY_USE_TLS_ENV, WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME, WAIT_GCS_READY_INIT_CONTAINER_NAME,
};

use crate::config::{FeatureGates, PodGenConfig};
use crate::pod::{PodGenerator, WorkerReplica};
use crate::test_fixtures::*;
use crate::tls::{WAIT_FOR_TLS_IP_SAN_SCRIPT, set_container_tls_config};

const TLS_ENV: [&str; 4] = [
    RAY_USE_TLS_ENV,
    RAY_TLS_SERVER_CERT_ENV,
    RAY_TLS_SERVER_KEY_ENV,
    RAY_TLS_CA_CERT_ENV,
];

fn tls_config() -> PodGenConfig {
    PodGenConfig {
        feature_gates: FeatureGates {
            ray_cluster_mtls: true,
            ..FeatureGates::default()
        },
        ..PodGenConfig::default()
    }
}

fn tls_cluster() -> RayCluster {
    let mut cluster = cluster_c();
    cluster.spec.tls_options = Some(ray_api::raycluster::TlsOptions { enabled: Some(true) });
    cluster
}

fn head(cluster: &RayCluster, config: &PodGenConfig) -> Pod {
    PodGenerator::new(cluster, config).head_pod().unwrap()
}

fn worker(cluster: &RayCluster, config: &PodGenConfig) -> Pod {
    PodGenerator::new(cluster, config)
        .worker_pod(0, &WorkerReplica::single(0))
        .unwrap()
}

fn inits(pod: &Pod) -> &[Container] {
    pod.spec
        .as_ref()
        .unwrap()
        .init_containers
        .as_deref()
        .unwrap_or_default()
}

fn tls_secret_of(pod: &Pod) -> Option<&str> {
    pod.spec
        .as_ref()
        .unwrap()
        .volumes
        .iter()
        .flatten()
        .find(|v| v.name == RAY_TLS_VOLUME_NAME)
        .and_then(|v| v.secret.as_ref())
        .and_then(|s| s.secret_name.as_deref())
}

fn has_tls_mount(container: &Container) -> bool {
    container
        .volume_mounts
        .iter()
        .flatten()
        .any(|m| m.name == RAY_TLS_VOLUME_NAME && m.mount_path == RAY_TLS_CERT_MOUNT_PATH && m.read_only == Some(true))
}

fn assert_tls_env(container: &Container) {
    assert_eq!(env_value(container, RAY_USE_TLS_ENV), Some("1"));
    assert_eq!(
        env_value(container, RAY_TLS_SERVER_CERT_ENV),
        Some("/etc/ray/tls/tls.crt")
    );
    assert_eq!(
        env_value(container, RAY_TLS_SERVER_KEY_ENV),
        Some("/etc/ray/tls/tls.key")
    );
    assert_eq!(env_value(container, RAY_TLS_CA_CERT_ENV), Some("/etc/ray/tls/ca.crt"));
}

fn assert_wait_for_tls_ip_san(init: &Container, ray: &Container) {
    assert_eq!(init.name, WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME);
    assert_eq!(init.image, ray.image);
    assert_eq!(init.command.as_deref(), Some(&["sh".to_owned(), "-c".to_owned()][..]));
    assert_eq!(args0(init), WAIT_FOR_TLS_IP_SAN_SCRIPT);
    assert_eq!(field_path(init, "POD_IP"), Some("status.podIP"));
    assert!(has_tls_mount(init));
    let resources = init.resources.as_ref().unwrap();
    for list in [resources.limits.as_ref().unwrap(), resources.requests.as_ref().unwrap()] {
        assert_eq!(list["cpu"].0, "50m");
        assert_eq!(list["memory"].0, "64Mi");
    }
}

#[test]
fn golden_p61_tls_head_pod() {
    let pod = head(&tls_cluster(), &tls_config());
    let ray = ray_container(&pod);
    assert_eq!(tls_secret_of(&pod), Some("ray-head-secret-raycluster-sample"));
    assert_tls_env(ray);
    assert!(has_tls_mount(ray));
    let init = &inits(&pod)[0];
    assert_wait_for_tls_ip_san(init, ray);
    // BuildPod gives every init container FQ_RAY_IP and RAY_IP, this one included.
    let names = env_names(init);
    assert_eq!(names, ["POD_IP", "FQ_RAY_IP", "RAY_IP"]);
}

#[test]
fn golden_p61_tls_worker_pod() {
    let pod = worker(&tls_cluster(), &tls_config());
    let ray = ray_container(&pod);
    assert_eq!(tls_secret_of(&pod), Some("ray-worker-secret-raycluster-sample"));
    assert_tls_env(ray);
    assert!(has_tls_mount(ray));
    let inits = inits(&pod);
    assert_eq!(
        inits.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(),
        [
            WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME,
            WAIT_GCS_READY_INIT_CONTAINER_NAME
        ]
    );
    assert_wait_for_tls_ip_san(&inits[0], ray);
    let wait_gcs = &inits[1];
    assert_tls_env(wait_gcs);
    assert!(has_tls_mount(wait_gcs));
}

#[test]
fn golden_p61_tls_autoscaler() {
    let mut cluster = tls_cluster();
    cluster.spec.enable_in_tree_autoscaling = Some(true);
    let pod = head(&cluster, &tls_config());
    let autoscaler = container(&pod, "autoscaler");
    assert_tls_env(autoscaler);
    assert!(has_tls_mount(autoscaler));
    // TLS vars come right after the autoscaler's five base vars, before autoscalerOptions.env.
    assert_eq!(&env_names(autoscaler)[5..9], TLS_ENV);
}

#[test]
fn golden_p62_set_container_tls_config_on_empty_container() {
    let mut container = Container::default();
    set_container_tls_config(&mut container);
    assert_eq!(env_names(&container), TLS_ENV);
    let mounts = container.volume_mounts.as_ref().unwrap();
    assert_eq!(mounts.len(), 1);
    assert_eq!(mounts[0].name, "ray-tls");
    assert_eq!(mounts[0].mount_path, "/etc/ray/tls");
    assert_eq!(mounts[0].read_only, Some(true));
}

#[test]
fn set_container_tls_config_keeps_user_values_and_mounts() {
    let mut container = Container {
        env: Some(vec![crate::containers::env(RAY_USE_TLS_ENV, "0")]),
        volume_mounts: Some(vec![crate::containers::mount("certs", RAY_TLS_CERT_MOUNT_PATH, false)]),
        ..Container::default()
    };
    set_container_tls_config(&mut container);
    assert_eq!(env_value(&container, RAY_USE_TLS_ENV), Some("0"));
    assert_eq!(env_names(&container), TLS_ENV);
    assert_eq!(container.volume_mounts.as_ref().unwrap().len(), 1);
}

#[test]
fn tls_env_order_in_ray_container() {
    // Template stage: autoscaler-v2 var, auth, then TLS; BuildPod vars follow.
    let mut cluster = tls_cluster();
    cluster.spec.auth_options = Some(serde_json::from_value(serde_json::json!({"mode": "token"})).unwrap());
    let pod = head(&cluster, &tls_config());
    let names = env_names(ray_container(&pod));
    let auth = names.iter().position(|n| *n == "RAY_AUTH_TOKEN").unwrap();
    let tls = names.iter().position(|n| *n == RAY_USE_TLS_ENV).unwrap();
    let cluster_name = names.iter().position(|n| *n == "RAY_CLUSTER_NAME").unwrap();
    assert_eq!(&names[tls..tls + 4], TLS_ENV);
    assert!(auth < tls && tls < cluster_name, "{names:?}");

    let pod = worker(&cluster, &tls_config());
    let inits = inits(&pod);
    let names = env_names(&inits[1]);
    let auth = names.iter().position(|n| *n == "RAY_AUTH_TOKEN").unwrap();
    let tls = names.iter().position(|n| *n == RAY_USE_TLS_ENV).unwrap();
    let fq = names.iter().position(|n| *n == "FQ_RAY_IP").unwrap();
    assert!(auth < tls && tls < fq, "{names:?}");
}

#[test]
fn tls_off_without_gate_or_flag() {
    let gate_off = head(&tls_cluster(), &PodGenConfig::default());
    let flag_off = head(&cluster_c(), &tls_config());
    for pod in [gate_off, flag_off] {
        assert!(tls_secret_of(&pod).is_none());
        assert!(env_value(ray_container(&pod), RAY_USE_TLS_ENV).is_none());
        assert!(
            !inits(&pod)
                .iter()
                .any(|c| c.name == WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME)
        );
    }
}

#[test]
fn existing_wait_for_tls_ip_san_is_kept() {
    let mut cluster = tls_cluster();
    let spec = cluster.spec.head_group_spec.template.spec.as_mut().unwrap();
    spec.init_containers = Some(vec![Container {
        name: WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME.to_owned(),
        image: Some("custom".to_owned()),
        ..Container::default()
    }]);
    let pod = head(&cluster, &tls_config());
    let inits = inits(&pod);
    assert_eq!(inits.len(), 1);
    assert_eq!(inits[0].image.as_deref(), Some("custom"));
}
