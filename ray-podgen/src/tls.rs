//! mTLS between Ray nodes (gate `RayClusterMTLS` + `tlsOptions.enabled`; docs/podgen.md#mtls).
//!
//! The Ray container, the autoscaler and `wait-gcs-ready` get the four `RAY_TLS_*` variables and
//! the `ray-tls` mount; the pod gets the `ray-tls` Secret volume and the `wait-for-tls-ip-san`
//! init container, which holds the pod until cert-manager re-issued the certificate with the
//! pod's IP as a SAN (the mTLS controller adds pod IPs only once pods have them).

use k8s_openapi::api::core::v1::{Container, PodSpec, SecretVolumeSource, Volume};
use ray_api::constants::{
    RAY_TLS_CA_CERT_ENV, RAY_TLS_CERT_MOUNT_PATH, RAY_TLS_SERVER_CERT_ENV, RAY_TLS_SERVER_KEY_ENV, RAY_TLS_VOLUME_NAME,
    RAY_USE_TLS_ENV, WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME, WAIT_GCS_READY_INIT_CONTAINER_NAME,
};

use crate::containers::{env, field_env, fixed_resources, has_volume, mount, push_env_if_absent, push_mount};
use crate::names::tls_secret_name;

/// `RAY_TLS_SERVER_CERT` value.
pub const TLS_SERVER_CERT_PATH: &str = "/etc/ray/tls/tls.crt";
/// `RAY_TLS_SERVER_KEY` value.
pub const TLS_SERVER_KEY_PATH: &str = "/etc/ray/tls/tls.key";
/// `RAY_TLS_CA_CERT` value.
pub const TLS_CA_CERT_PATH: &str = "/etc/ray/tls/ca.crt";
/// `wait-for-tls-ip-san` CPU (limit and request).
pub const WAIT_FOR_TLS_IP_SAN_CPU: &str = "50m";
/// `wait-for-tls-ip-san` memory (limit and request).
pub const WAIT_FOR_TLS_IP_SAN_MEMORY: &str = "64Mi";
/// Env var of `wait-for-tls-ip-san` carrying the pod IP.
pub const POD_IP_ENV: &str = "POD_IP";

/// The `wait-for-tls-ip-san` script, exactly as KubeRay writes it (no trailing newline).
pub const WAIT_FOR_TLS_IP_SAN_SCRIPT: &str = r#"CERT="/etc/ray/tls/tls.crt"
if [ -z "${POD_IP}" ]; then
  POD_IP=$(hostname -i 2>/dev/null | awk '{print $1}')
fi
if ! command -v openssl >/dev/null 2>&1; then
  echo "openssl not found; cannot verify IP SAN" >&2
  exit 1
fi
echo "Waiting for TLS cert to include IP SAN for ${POD_IP}..."
while true; do
  if openssl x509 -in "${CERT}" -noout -text 2>/dev/null | grep -qE "IP Address:${POD_IP}([^0-9.]|$)"; then
    echo "TLS cert now includes IP SAN for ${POD_IP}"
    exit 0
  fi
  echo "IP SAN for ${POD_IP} not yet in cert, retrying in 5s..."
  sleep 5
done"#;

/// `SetContainerTLSConfig`: the four TLS env vars (each if absent, in order) and the read-only
/// `ray-tls` mount unless a mount with that name or path exists.
pub fn set_container_tls_config(container: &mut Container) {
    push_env_if_absent(container, env(RAY_USE_TLS_ENV, "1"));
    push_env_if_absent(container, env(RAY_TLS_SERVER_CERT_ENV, TLS_SERVER_CERT_PATH));
    push_env_if_absent(container, env(RAY_TLS_SERVER_KEY_ENV, TLS_SERVER_KEY_PATH));
    push_env_if_absent(container, env(RAY_TLS_CA_CERT_ENV, TLS_CA_CERT_PATH));
    let mounted = container
        .volume_mounts
        .iter()
        .flatten()
        .any(|m| m.name == RAY_TLS_VOLUME_NAME || m.mount_path == RAY_TLS_CERT_MOUNT_PATH);
    if !mounted {
        push_mount(container, mount(RAY_TLS_VOLUME_NAME, RAY_TLS_CERT_MOUNT_PATH, true));
    }
}

/// The `wait-for-tls-ip-san` init container, modelled on the Ray container `ray`.
pub fn wait_for_tls_ip_san_container(ray: &Container) -> Container {
    Container {
        name: WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME.to_owned(),
        image: ray.image.clone(),
        image_pull_policy: ray.image_pull_policy.clone(),
        security_context: ray.security_context.clone(),
        command: Some(vec!["sh".to_owned(), "-c".to_owned()]),
        args: Some(vec![WAIT_FOR_TLS_IP_SAN_SCRIPT.to_owned()]),
        env: Some(vec![field_env(POD_IP_ENV, "status.podIP")]),
        volume_mounts: Some(vec![mount(RAY_TLS_VOLUME_NAME, RAY_TLS_CERT_MOUNT_PATH, true)]),
        resources: Some(fixed_resources(WAIT_FOR_TLS_IP_SAN_CPU, WAIT_FOR_TLS_IP_SAN_MEMORY)),
        ..Container::default()
    }
}

/// `configureTLS` on a head (`head == true`) or worker pod spec of cluster `cluster_name`: the Ray
/// container and `wait-gcs-ready` get env + mount, the pod the Secret volume (if absent) and the
/// `wait-for-tls-ip-san` init container prepended (if absent).
pub fn configure_tls(cluster_name: &str, head: bool, pod: &mut PodSpec) {
    let Some(ray) = pod.containers.first_mut() else {
        return;
    };
    set_container_tls_config(ray);
    let init_container = wait_for_tls_ip_san_container(ray);
    for init in pod.init_containers.iter_mut().flatten() {
        if init.name == WAIT_GCS_READY_INIT_CONTAINER_NAME {
            set_container_tls_config(init);
        }
    }
    if !has_volume(pod, RAY_TLS_VOLUME_NAME) {
        pod.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: RAY_TLS_VOLUME_NAME.to_owned(),
            secret: Some(SecretVolumeSource {
                secret_name: Some(tls_secret_name(cluster_name, head)),
                ..SecretVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    let inits = pod.init_containers.get_or_insert_with(Vec::new);
    if !inits.iter().any(|c| c.name == WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME) {
        inits.insert(0, init_container);
    }
}
