//! GCS fault tolerance: the head/worker pod changes, the operator-managed PVC of the embedded backend and the
//! Redis cleanup Job (docs/podgen.md#gcs-fault-tolerance).

use std::collections::BTreeMap;

use k8s_openapi::api::batch::v1::{Job, JobSpec};
use k8s_openapi::api::core::v1::{EnvVar, Volume};
use k8s_openapi::api::core::v1::{
    PersistentVolumeClaim, PersistentVolumeClaimSpec, PersistentVolumeClaimVolumeSource, Pod, PodSpec, PodTemplateSpec,
    VolumeMount, VolumeResourceRequirements,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use ray_api::constants::{
    NODE_TYPE_REDIS_CLEANUP, RAY_CLUSTER_LABEL, RAY_EXTERNAL_STORAGE_NS_ANNOTATION, RAY_FT_ENABLED_ANNOTATION,
    RAY_NODE_TYPE_LABEL, WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME,
};
use ray_api::{RayCluster, RedisCredential};

use crate::cluster::{ClusterFacts, cluster_name, cluster_namespace, cluster_owner_reference};
use crate::config::PodGenConfig;
use crate::containers::{env, fixed_resources, has_env, push_env, push_env_if_absent, push_mount};
use crate::env_names::{
    DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S, GCS_STORAGE_MOUNT_PATH, GCS_STORAGE_ROCKSDB, GCS_STORAGE_VOLUME_NAME,
    RAY_EXTERNAL_STORAGE_NS, RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S, RAY_GCS_STORAGE, RAY_GCS_STORAGE_PATH,
    RAY_REDIS_ADDRESS, RAY_REDIS_DB_CONNECT_RETRIES, RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS, REDIS_PASSWORD,
    REDIS_USERNAME,
};
use crate::names;
use crate::start_params::{self, RayNodeType, RayStartParams};

/// Default size of the operator-managed GCS PVC.
pub const DEFAULT_GCS_PVC_SIZE: &str = "1Gi";
/// Default access mode of the operator-managed GCS PVC.
pub const DEFAULT_GCS_PVC_ACCESS_MODE: &str = "ReadWriteOnce";
/// Redis cleanup Job: CPU (limit and request).
pub const REDIS_CLEANUP_CPU: &str = "200m";
/// Redis cleanup Job: memory (limit and request).
pub const REDIS_CLEANUP_MEMORY: &str = "256Mi";
/// Redis cleanup Job: `activeDeadlineSeconds`.
pub const REDIS_CLEANUP_ACTIVE_DEADLINE_SECONDS: i64 = 300;
/// Redis cleanup Job: connect retries.
pub const REDIS_CLEANUP_CONNECT_RETRIES: &str = "120";
/// Redis cleanup Job: wait between retries in ms.
pub const REDIS_CLEANUP_CONNECT_WAIT_MS: &str = "500";

/// `GetGCSStoragePVCName`: `storage.claimName`, else `<cluster>-gcs-pvc`.
pub fn gcs_storage_pvc_name(cluster: &RayCluster) -> String {
    cluster
        .spec
        .gcs_fault_tolerance_options
        .as_ref()
        .and_then(|o| o.storage.as_ref())
        .and_then(|s| s.claim_name.clone())
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| names::default_gcs_pvc_name(cluster_name(cluster)))
}

fn credential_env(name: &str, credential: &RedisCredential) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: credential.value.clone(),
        value_from: credential.value_from.clone(),
    }
}

/// `configureGCSFaultTolerance` for one pod template.
pub fn configure(
    cluster: &RayCluster,
    facts: &ClusterFacts,
    node_type: RayNodeType,
    annotations: &mut BTreeMap<String, String>,
    pod: &mut PodSpec,
    params: &mut RayStartParams,
) {
    if node_type == RayNodeType::Head {
        annotations.insert(RAY_FT_ENABLED_ANNOTATION.to_owned(), facts.ft_enabled.to_string());
    }
    if !facts.ft_enabled {
        return;
    }
    let Some(container) = pod.containers.first_mut() else {
        return;
    };
    if node_type == RayNodeType::Worker {
        push_env_if_absent(
            container,
            env(
                RAY_GCS_RPC_SERVER_RECONNECT_TIMEOUT_S,
                DEFAULT_WORKER_GCS_RECONNECT_TIMEOUT_S,
            ),
        );
        return;
    }
    let options = cluster.spec.gcs_fault_tolerance_options.as_ref();
    if facts.ft_embedded {
        push_env_if_absent(container, env(RAY_GCS_STORAGE, GCS_STORAGE_ROCKSDB));
        push_env_if_absent(container, env(RAY_GCS_STORAGE_PATH, GCS_STORAGE_MOUNT_PATH));
        let sub_path = options
            .and_then(|o| o.storage.as_ref())
            .and_then(|s| s.sub_path.clone())
            .filter(|s| !s.is_empty());
        push_mount(
            container,
            VolumeMount {
                name: GCS_STORAGE_VOLUME_NAME.to_owned(),
                mount_path: GCS_STORAGE_MOUNT_PATH.to_owned(),
                sub_path,
                ..VolumeMount::default()
            },
        );
        pod.volumes.get_or_insert_with(Vec::new).push(Volume {
            name: GCS_STORAGE_VOLUME_NAME.to_owned(),
            persistent_volume_claim: Some(PersistentVolumeClaimVolumeSource {
                claim_name: gcs_storage_pvc_name(cluster),
                read_only: None,
            }),
            ..Volume::default()
        });
        return;
    }
    // Redis backend.
    let mut storage_ns = cluster.metadata.uid.clone().unwrap_or_default();
    if let Some(ns) = cluster
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(RAY_EXTERNAL_STORAGE_NS_ANNOTATION))
    {
        storage_ns.clone_from(ns);
    }
    if let Some(ns) = options
        .and_then(|o| o.external_storage_namespace.as_ref())
        .filter(|n| !n.is_empty())
    {
        storage_ns.clone_from(ns);
    }
    annotations.insert(RAY_EXTERNAL_STORAGE_NS_ANNOTATION.to_owned(), storage_ns.clone());
    push_env_if_absent(container, env(RAY_EXTERNAL_STORAGE_NS, storage_ns));
    match options {
        Some(options) => {
            push_env(
                container,
                env(RAY_REDIS_ADDRESS, options.redis_address.clone().unwrap_or_default()),
            );
            if let Some(username) = &options.redis_username {
                params.insert(start_params::REDIS_USERNAME.to_owned(), format!("${REDIS_USERNAME}"));
                push_env(container, credential_env(REDIS_USERNAME, username));
            }
            if let Some(password) = &options.redis_password {
                params.insert(start_params::REDIS_PASSWORD.to_owned(), format!("${REDIS_PASSWORD}"));
                push_env(container, credential_env(REDIS_PASSWORD, password));
            }
        }
        None => {
            if !has_env(container, REDIS_PASSWORD)
                && let Some(password) = params.get(start_params::REDIS_PASSWORD)
            {
                push_env(container, env(REDIS_PASSWORD, password.clone()));
            }
        }
    }
}

/// The operator-managed PVC of the embedded backend (`None` unless rocksdb without `claimName`).
pub fn build_gcs_storage_pvc(cluster: &RayCluster) -> Option<PersistentVolumeClaim> {
    if !crate::cluster::gcs_ft_embedded(&cluster.spec) {
        return None;
    }
    let storage = cluster
        .spec
        .gcs_fault_tolerance_options
        .as_ref()
        .and_then(|o| o.storage.as_ref());
    if storage
        .and_then(|s| s.claim_name.as_deref())
        .is_some_and(|n| !n.is_empty())
    {
        return None;
    }
    let retain = storage.and_then(|s| s.deletion_policy.as_ref()) == Some(&ray_api::GcsStorageDeletionPolicy::Retain);
    let size = storage
        .and_then(|s| s.size.clone())
        .unwrap_or_else(|| Quantity(DEFAULT_GCS_PVC_SIZE.to_owned()));
    let access_modes = storage
        .and_then(|s| s.access_modes.clone())
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| vec![DEFAULT_GCS_PVC_ACCESS_MODE.to_owned()]);
    Some(PersistentVolumeClaim {
        metadata: ObjectMeta {
            name: Some(gcs_storage_pvc_name(cluster)),
            namespace: Some(cluster_namespace(cluster).to_owned()),
            labels: Some(BTreeMap::from([(
                RAY_CLUSTER_LABEL.to_owned(),
                cluster_name(cluster).to_owned(),
            )])),
            owner_references: (!retain).then(|| vec![cluster_owner_reference(cluster)]),
            ..ObjectMeta::default()
        },
        spec: Some(PersistentVolumeClaimSpec {
            access_modes: Some(access_modes),
            resources: Some(VolumeResourceRequirements {
                requests: Some(BTreeMap::from([("storage".to_owned(), size)])),
                limits: None,
            }),
            storage_class_name: storage.and_then(|s| s.storage_class_name.clone()),
            ..PersistentVolumeClaimSpec::default()
        }),
        status: None,
    })
}

const CLEANUP_PREFIX: &str = "echo \"To get more information about manually deleting the storage namespace in Redis and removing the RayCluster's finalizer, please check https://docs.ray.io/en/master/cluster/kubernetes/user-guides/kuberay-gcs-ft.html for more details.\" && python -c \"from ray._private.gcs_utils import cleanup_redis_storage; from urllib.parse import urlparse; import os; import sys; redis_address = os.getenv('RAY_REDIS_ADDRESS', '').split(',')[0]; redis_address = redis_address if '://' in redis_address else 'redis://' + redis_address; parsed = urlparse(redis_address); ";
const CLEANUP_WITH_USERNAME: &str = "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, username=os.getenv('REDIS_USERNAME', parsed.username), password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\"";
const CLEANUP_WITHOUT_USERNAME: &str = "sys.exit(1) if not cleanup_redis_storage(host=parsed.hostname, port=parsed.port, password=os.getenv('REDIS_PASSWORD', parsed.password or ''), use_ssl=parsed.scheme=='rediss', storage_namespace=os.getenv('RAY_external_storage_namespace')) else None\"";

/// `buildRedisCleanupJob`: a Job built from the full head pod that deletes the cluster's storage
/// namespace in Redis.
pub fn build_redis_cleanup_job(cluster: &RayCluster, head_pod: &Pod, config: &PodGenConfig) -> Job {
    let mut meta = head_pod.metadata.clone();
    meta.labels
        .get_or_insert_with(BTreeMap::new)
        .insert(RAY_NODE_TYPE_LABEL.to_owned(), NODE_TYPE_REDIS_CLEANUP.to_owned());
    let mut spec = head_pod.spec.clone().unwrap_or_default();
    spec.containers.truncate(1);
    if let Some(inits) = spec.init_containers.as_mut() {
        inits.retain(|c| c.name != WAIT_FOR_TLS_IP_SAN_INIT_CONTAINER_NAME);
    }
    if let Some(container) = spec.containers.first_mut() {
        container.command = Some(config.container_command(""));
        let tail = if has_env(container, REDIS_USERNAME) {
            CLEANUP_WITH_USERNAME
        } else {
            CLEANUP_WITHOUT_USERNAME
        };
        container.args = Some(vec![format!("{CLEANUP_PREFIX}{tail}")]);
        container.liveness_probe = None;
        container.readiness_probe = None;
        push_env(
            container,
            env(RAY_REDIS_DB_CONNECT_RETRIES, REDIS_CLEANUP_CONNECT_RETRIES),
        );
        push_env(
            container,
            env(RAY_REDIS_DB_CONNECT_WAIT_MILLISECONDS, REDIS_CLEANUP_CONNECT_WAIT_MS),
        );
        container.resources = Some(fixed_resources(REDIS_CLEANUP_CPU, REDIS_CLEANUP_MEMORY));
    }
    spec.restart_policy = Some("Never".to_owned());
    Job {
        metadata: ObjectMeta {
            name: Some(names::redis_cleanup_job_name(cluster_name(cluster))),
            namespace: Some(cluster_namespace(cluster).to_owned()),
            labels: meta.labels.clone(),
            annotations: meta.annotations.clone(),
            owner_references: Some(vec![cluster_owner_reference(cluster)]),
            ..ObjectMeta::default()
        },
        spec: Some(JobSpec {
            backoff_limit: Some(0),
            active_deadline_seconds: Some(REDIS_CLEANUP_ACTIVE_DEADLINE_SECONDS),
            template: PodTemplateSpec {
                metadata: Some(meta),
                spec: Some(spec),
            },
            ..JobSpec::default()
        }),
        status: None,
    }
}
