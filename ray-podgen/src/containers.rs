//! Small container/pod helpers shared by the builders: env vars, field references, mounts,
//! emptyDir volumes and fixed resource lists.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, EmptyDirVolumeSource, EnvVar, EnvVarSource, ObjectFieldSelector, PodSpec, ResourceRequirements, Volume,
    VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// A literal env var.
pub fn env(name: &str, value: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: Some(value.into()),
        value_from: None,
    }
}

/// An env var from a pod field (`metadata.name`, `status.podIP`, ...).
pub fn field_env(name: &str, field_path: impl Into<String>) -> EnvVar {
    EnvVar {
        name: name.to_owned(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: field_path.into(),
            }),
            ..EnvVarSource::default()
        }),
    }
}

/// `EnvVarExists`.
pub fn has_env(container: &Container, name: &str) -> bool {
    container
        .env
        .as_ref()
        .is_some_and(|list| list.iter().any(|e| e.name == name))
}

/// Appends unconditionally.
pub fn push_env(container: &mut Container, var: EnvVar) {
    container.env.get_or_insert_with(Vec::new).push(var);
}

/// Appends when no var of that name exists.
pub fn push_env_if_absent(container: &mut Container, var: EnvVar) {
    if !has_env(container, &var.name) {
        push_env(container, var);
    }
}

/// Appends a mount.
pub fn push_mount(container: &mut Container, mount: VolumeMount) {
    container.volume_mounts.get_or_insert_with(Vec::new).push(mount);
}

/// A mount.
pub fn mount(name: &str, path: &str, read_only: bool) -> VolumeMount {
    VolumeMount {
        name: name.to_owned(),
        mount_path: path.to_owned(),
        read_only: read_only.then_some(true),
        ..VolumeMount::default()
    }
}

/// Whether the pod has a volume named `name`.
pub fn has_volume(spec: &PodSpec, name: &str) -> bool {
    spec.volumes
        .as_ref()
        .is_some_and(|v| v.iter().any(|vol| vol.name == name))
}

/// Limits and requests both set to `cpu` / `memory`.
pub fn fixed_resources(cpu: &str, memory: &str) -> ResourceRequirements {
    fixed_resources_split(cpu, memory, cpu, memory)
}

/// Limits `cpu_limit` / `memory_limit`, requests `cpu_request` / `memory_request`.
pub fn fixed_resources_split(
    cpu_limit: &str,
    memory_limit: &str,
    cpu_request: &str,
    memory_request: &str,
) -> ResourceRequirements {
    let list = |cpu: &str, memory: &str| {
        BTreeMap::from([
            ("cpu".to_owned(), Quantity(cpu.to_owned())),
            ("memory".to_owned(), Quantity(memory.to_owned())),
        ])
    };
    ResourceRequirements {
        limits: Some(list(cpu_limit, memory_limit)),
        requests: Some(list(cpu_request, memory_request)),
        ..ResourceRequirements::default()
    }
}

/// `addEmptyDir`: mounts an emptyDir volume `name` at `path` in container `index` unless something
/// is already mounted there. Memory-backed volumes get the container's memory limit (else request)
/// as size limit.
pub fn add_empty_dir(spec: &mut PodSpec, index: usize, name: &str, path: &str, memory_medium: bool) {
    let Some(container) = spec.containers.get(index) else {
        return;
    };
    if container
        .volume_mounts
        .as_ref()
        .is_some_and(|m| m.iter().any(|m| m.mount_path == path))
    {
        return;
    }
    if !has_volume(spec, name) {
        let size_limit = if memory_medium {
            let resources = container.resources.as_ref();
            resources
                .and_then(|r| r.limits.as_ref())
                .and_then(|l| l.get("memory"))
                .or_else(|| {
                    resources
                        .and_then(|r| r.requests.as_ref())
                        .and_then(|l| l.get("memory"))
                })
                .cloned()
        } else {
            None
        };
        let volume = Volume {
            name: name.to_owned(),
            empty_dir: Some(EmptyDirVolumeSource {
                medium: memory_medium.then(|| "Memory".to_owned()),
                size_limit,
            }),
            ..Volume::default()
        };
        spec.volumes.get_or_insert_with(Vec::new).push(volume);
    }
    if let Some(container) = spec.containers.get_mut(index) {
        push_mount(container, mount(name, path, false));
    }
}
