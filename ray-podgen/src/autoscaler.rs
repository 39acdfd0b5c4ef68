//! The autoscaler sidecar container and its RBAC objects (docs/podgen.md#autoscaler-sidecar-and-rbac).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ServiceAccount};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ray_api::constants::{
    APPLICATION_NAME, AUTOSCALER_CONTAINER_NAME, COMPONENT_NAME, KUBERNETES_APPLICATION_NAME_LABEL,
    KUBERNETES_CREATED_BY_LABEL, RAY_CLUSTER_LABEL,
};
use ray_api::{RayCluster, RayClusterSpec};

use crate::cluster::{cluster_name, cluster_namespace, cluster_owner_reference};
use crate::config::PodGenConfig;
use crate::containers::{env, field_env, fixed_resources};
use crate::env_names::{
    KUBERAY_CRD_VER, KUBERAY_GEN_AUTOSCALER_START_CMD, RAY_CLUSTER_NAME, RAY_CLUSTER_NAMESPACE, RAY_HEAD_POD_NAME,
};
use crate::names::check_name;

/// The command that starts the KubeRay autoscaler.
pub const AUTOSCALER_START_CMD: &str =
    "ray kuberay-autoscaler --cluster-name $(RAY_CLUSTER_NAME) --cluster-namespace $(RAY_CLUSTER_NAMESPACE)";
/// Default CPU of the sidecar (limit and request).
pub const AUTOSCALER_DEFAULT_CPU: &str = "500m";
/// Default memory of the sidecar (limit and request).
pub const AUTOSCALER_DEFAULT_MEMORY: &str = "512Mi";
/// Pull policy of the sidecar unless overridden.
pub const AUTOSCALER_DEFAULT_PULL_POLICY: &str = "IfNotPresent";
/// `KUBERAY_CRD_VER` value.
pub const KUBERAY_CRD_VERSION: &str = "v1";
/// Field path of the pod's cluster label.
pub const CLUSTER_LABEL_FIELD_PATH: &str = "metadata.labels['ray.io/cluster']";
/// Field path of the pod's group label.
pub const GROUP_LABEL_FIELD_PATH: &str = "metadata.labels['ray.io/group']";

/// `BuildAutoscalerContainer` + token auth + TLS + `mergeAutoscalerOverrides`.
pub fn build_autoscaler_container(
    image: Option<String>,
    cluster_name: &str,
    spec: &RayClusterSpec,
    config: &PodGenConfig,
) -> Container {
    let mut container = Container {
        name: AUTOSCALER_CONTAINER_NAME.to_owned(),
        image,
        image_pull_policy: Some(AUTOSCALER_DEFAULT_PULL_POLICY.to_owned()),
        env: Some(vec![
            field_env(RAY_CLUSTER_NAME, CLUSTER_LABEL_FIELD_PATH),
            field_env(RAY_CLUSTER_NAMESPACE, "metadata.namespace"),
            field_env(RAY_HEAD_POD_NAME, "metadata.name"),
            env(KUBERAY_CRD_VER, KUBERAY_CRD_VERSION),
            env(KUBERAY_GEN_AUTOSCALER_START_CMD, AUTOSCALER_START_CMD),
        ]),
        command: Some(config.container_command("")),
        args: Some(vec![AUTOSCALER_START_CMD.to_owned()]),
        resources: Some(fixed_resources(AUTOSCALER_DEFAULT_CPU, AUTOSCALER_DEFAULT_MEMORY)),
        ..Container::default()
    };
    if crate::cluster::auth_enabled(spec) {
        crate::auth::set_token_auth_env(cluster_name, &mut container, spec);
    }
    if crate::cluster::tls_enabled(spec, config) {
        crate::tls::set_container_tls_config(&mut container);
    }
    if let Some(options) = spec.autoscaler_options.as_ref() {
        if let Some(resources) = &options.resources {
            container.resources = Some(resources.clone());
        }
        if let Some(image) = &options.image {
            container.image = Some(image.clone());
        }
        if let Some(policy) = &options.image_pull_policy {
            container.image_pull_policy = Some(policy.clone());
        }
        if let Some(extra) = options.env.as_ref().filter(|e| !e.is_empty()) {
            container.env.get_or_insert_with(Vec::new).extend(extra.iter().cloned());
        }
        if let Some(extra) = options.env_from.as_ref().filter(|e| !e.is_empty()) {
            container
                .env_from
                .get_or_insert_with(Vec::new)
                .extend(extra.iter().cloned());
        }
        if let Some(extra) = options.volume_mounts.as_ref().filter(|e| !e.is_empty()) {
            container
                .volume_mounts
                .get_or_insert_with(Vec::new)
                .extend(extra.iter().cloned());
        }
        if let Some(context) = &options.security_context {
            container.security_context = Some(context.clone());
        }
        if let Some(command) = options.command.as_ref().filter(|c| !c.is_empty()) {
            container.command = Some(command.clone());
        }
        if let Some(args) = options.args.as_ref().filter(|a| !a.is_empty()) {
            container.args = Some(args.clone());
        }
    }
    container
}

/// `GetHeadGroupServiceAccountName`: the head template's service account, else the cluster name.
pub fn head_service_account_name(cluster: &RayCluster) -> String {
    cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.as_deref())
        .filter(|n| !n.is_empty())
        .unwrap_or(cluster_name(cluster))
        .to_owned()
}

/// The labels of the autoscaler RBAC objects.
fn rbac_labels(cluster: &RayCluster) -> BTreeMap<String, String> {
    BTreeMap::from([
        (RAY_CLUSTER_LABEL.to_owned(), cluster_name(cluster).to_owned()),
        (
            KUBERNETES_APPLICATION_NAME_LABEL.to_owned(),
            APPLICATION_NAME.to_owned(),
        ),
        (KUBERNETES_CREATED_BY_LABEL.to_owned(), COMPONENT_NAME.to_owned()),
    ])
}

fn rbac_meta(cluster: &RayCluster, name: String) -> ObjectMeta {
    ObjectMeta {
        name: Some(name),
        namespace: Some(cluster_namespace(cluster).to_owned()),
        labels: Some(rbac_labels(cluster)),
        owner_references: Some(vec![cluster_owner_reference(cluster)]),
        ..ObjectMeta::default()
    }
}

/// The autoscaler's RBAC objects, in the order the operator creates them.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoscalerRbac {
    /// The service account (`None` when the user named one: KubeRay expects it to exist).
    pub service_account: Option<ServiceAccount>,
    /// The Role.
    pub role: Role,
    /// The RoleBinding.
    pub role_binding: RoleBinding,
}

/// The ServiceAccount, Role and RoleBinding of an autoscaling cluster (`None` without autoscaling).
pub fn build_autoscaler_rbac(cluster: &RayCluster) -> Option<AutoscalerRbac> {
    if !crate::cluster::autoscaling_enabled(&cluster.spec) {
        return None;
    }
    let sa_name = check_name(&head_service_account_name(cluster));
    let user_named = cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.as_deref())
        .is_some_and(|n| !n.is_empty());
    let role_name = check_name(cluster_name(cluster));
    let rule = |group: &str, resource: &str, verbs: &[&str]| PolicyRule {
        api_groups: Some(vec![group.to_owned()]),
        resources: Some(vec![resource.to_owned()]),
        verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
        ..PolicyRule::default()
    };
    Some(AutoscalerRbac {
        service_account: (!user_named).then(|| ServiceAccount {
            metadata: rbac_meta(cluster, sa_name.clone()),
            ..ServiceAccount::default()
        }),
        role: Role {
            metadata: rbac_meta(cluster, role_name.clone()),
            rules: Some(vec![
                rule("", "pods", &["get", "list", "watch", "patch"]),
                rule("", "pods/resize", &["patch"]),
                rule("ray.io", "rayclusters", &["get", "patch"]),
            ]),
        },
        role_binding: RoleBinding {
            metadata: rbac_meta(cluster, role_name.clone()),
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".to_owned(),
                name: sa_name,
                namespace: Some(cluster_namespace(cluster).to_owned()),
                api_group: None,
            }]),
            role_ref: RoleRef {
                api_group: Some("rbac.authorization.k8s.io".to_owned()),
                kind: "Role".to_owned(),
                name: role_name,
            },
        },
    })
}
