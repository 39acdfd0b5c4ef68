//! Ray token authentication in generated containers (docs/podgen.md#token-authentication).

use k8s_openapi::api::core::v1::{
    Container, EnvVar, EnvVarSource, PodSpec, ProjectedVolumeSource, SecretKeySelector, ServiceAccountTokenProjection,
    Volume, VolumeProjection,
};
use ray_api::constants::WAIT_GCS_READY_INIT_CONTAINER_NAME;
use ray_api::{AuthMode, RayClusterSpec};

use crate::containers::{env, has_env, has_volume, mount, push_env, push_mount};
use crate::env_names::{
    RAY_AUTH_MODE, RAY_AUTH_TOKEN, RAY_AUTH_TOKEN_SECRET_KEY, RAY_ENABLE_K8S_TOKEN_AUTH, RAY_TOKEN_MOUNT_PATH,
    RAY_TOKEN_VOLUME_NAME,
};
use crate::names::check_name;

/// Path of the projected service-account token inside [`RAY_TOKEN_VOLUME_NAME`].
pub const RAY_TOKEN_PATH: &str = "token";

/// `SetContainerTokenAuthEnvVars`: `RAY_AUTH_MODE`, then either the Kubernetes token switch and
/// mount, or `RAY_AUTH_TOKEN` from the auth Secret (`secretName` or `CheckName(<cluster>)`).
pub fn set_token_auth_env(cluster_name: &str, container: &mut Container, spec: &RayClusterSpec) {
    if !has_env(container, RAY_AUTH_MODE) {
        push_env(container, env(RAY_AUTH_MODE, AuthMode::Token.as_str()));
    }
    if crate::cluster::k8s_auth_enabled(spec) {
        if !has_env(container, RAY_ENABLE_K8S_TOKEN_AUTH) {
            push_env(container, env(RAY_ENABLE_K8S_TOKEN_AUTH, "true"));
        }
        if !container
            .volume_mounts
            .iter()
            .flatten()
            .any(|m| m.name == RAY_TOKEN_VOLUME_NAME)
        {
            push_mount(container, mount(RAY_TOKEN_VOLUME_NAME, RAY_TOKEN_MOUNT_PATH, true));
        }
    } else if !has_env(container, RAY_AUTH_TOKEN) {
        let secret = spec
            .auth_options
            .as_ref()
            .and_then(|a| a.secret_name.clone())
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| check_name(cluster_name));
        push_env(
            container,
            EnvVar {
                name: RAY_AUTH_TOKEN.to_owned(),
                value: None,
                value_from: Some(EnvVarSource {
                    secret_key_ref: Some(SecretKeySelector {
                        name: secret,
                        key: RAY_AUTH_TOKEN_SECRET_KEY.to_owned(),
                        optional: None,
                    }),
                    ..EnvVarSource::default()
                }),
            },
        );
    }
}

/// `configureTokenAuth`: the Ray container, the `ray-token` volume (Kubernetes token mode) and any
/// `wait-gcs-ready` init container.
pub fn configure_token_auth(cluster_name: &str, pod: &mut PodSpec, spec: &RayClusterSpec) {
    if let Some(ray) = pod.containers.first_mut() {
        set_token_auth_env(cluster_name, ray, spec);
    }
    if crate::cluster::k8s_auth_enabled(spec) && !has_volume(pod, RAY_TOKEN_VOLUME_NAME) {
        pod.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: RAY_TOKEN_VOLUME_NAME.to_owned(),
            projected: Some(ProjectedVolumeSource {
                sources: Some(vec![VolumeProjection {
                    service_account_token: Some(ServiceAccountTokenProjection {
                        path: RAY_TOKEN_PATH.to_owned(),
                        ..ServiceAccountTokenProjection::default()
                    }),
                    ..VolumeProjection::default()
                }]),
                ..ProjectedVolumeSource::default()
            }),
            ..Volume::default()
        });
    }
    for init in pod.init_containers.iter_mut().flatten() {
        if init.name == WAIT_GCS_READY_INIT_CONTAINER_NAME {
            set_token_auth_env(cluster_name, init, spec);
        }
    }
}
