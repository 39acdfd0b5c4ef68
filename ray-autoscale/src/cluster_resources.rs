//! Cluster resource totals for the status fields `desiredCPU`, `desiredMemory`, `desiredGPU`,
//! `desiredTPU` (docs/autoscaling.md#resources-in-the-status), with exact Kubernetes quantity arithmetic.

use k8s_openapi::api::core::v1::PodSpec;
use ray_api::quantity::{Qty, QuantityError, ResourceTotals, pod_resources, scale_resources, sum_resources};
use ray_api::{RayClusterSpec, WorkerGroupSpec};

/// Kubernetes CPU resource name.
pub const CPU_RESOURCE: &str = "cpu";
/// Kubernetes memory resource name.
pub const MEMORY_RESOURCE: &str = "memory";
/// Google TPU extended resource name.
pub const TPU_RESOURCE: &str = ray_api::constants::TPU_CONTAINER_RESOURCE;
/// Suffix marking a GPU resource key (`nvidia.com/gpu`, `amd.com/gpu`, ...).
pub const GPU_RESOURCE_SUFFIX: &str = "gpu";
/// Prefix of NVIDIA MIG resource keys (`nvidia.com/mig-<n>g.<n>gb`).
pub const NVIDIA_MIG_PREFIX: &str = "nvidia.com/mig-";

/// The four status quantities.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusResources {
    /// `desiredCPU`: the `cpu` total.
    pub cpu: Qty,
    /// `desiredMemory`: the `memory` total.
    pub memory: Qty,
    /// `desiredGPU`: Σ of non-zero GPU-like totals (see [`is_gpu_resource_key`]).
    pub gpu: Qty,
    /// `desiredTPU`: the `google.com/tpu` total.
    pub tpu: Qty,
}

/// KubeRay's GPU key rule: the key ends with `gpu` (case-sensitive) or matches
/// `nvidia\.com/mig-\d+g\.\d+gb$` (not anchored at the start).
pub fn is_gpu_resource_key(key: &str) -> bool {
    key.ends_with(GPU_RESOURCE_SUFFIX)
        || key
            .match_indices(NVIDIA_MIG_PREFIX)
            .any(|(i, _)| is_mig_profile(&key[i + NVIDIA_MIG_PREFIX.len()..]))
}

/// `\d+g\.\d+gb` matching the whole string.
fn is_mig_profile(rest: &str) -> bool {
    fn digits(s: &str) -> Option<&str> {
        let n = s.bytes().take_while(u8::is_ascii_digit).count();
        (n > 0).then(|| &s[n..])
    }
    digits(rest)
        .and_then(|r| r.strip_prefix("g."))
        .and_then(digits)
        .is_some_and(|r| r == "gb")
}

/// Σ of the non-zero quantities whose key is a GPU key (TPU excluded), in key order.
pub fn sum_gpus(resources: &ResourceTotals) -> Qty {
    resources
        .iter()
        .filter(|(k, q)| is_gpu_resource_key(k) && !q.is_zero())
        .fold(Qty::zero(), |acc, (_, q)| acc.add(q))
}

/// Pull the status quantities out of a resource total (missing names are zero).
pub fn status_resources(totals: &ResourceTotals) -> StatusResources {
    let get = |name: &str| totals.get(name).cloned().unwrap_or_else(Qty::zero);
    StatusResources {
        cpu: get(CPU_RESOURCE),
        memory: get(MEMORY_RESOURCE),
        gpu: sum_gpus(totals),
        tpu: get(TPU_RESOURCE),
    }
}

fn template_resources(spec: Option<&PodSpec>) -> Result<ResourceTotals, QuantityError> {
    spec.map_or_else(|| Ok(ResourceTotals::new()), pod_resources)
}

/// Head pod resources + Σ over non-suspended groups of pod resources × `numOfHosts × count(group)`.
fn cluster_resources(
    spec: &RayClusterSpec,
    count: impl Fn(&WorkerGroupSpec) -> i32,
) -> Result<ResourceTotals, QuantityError> {
    let mut lists = vec![template_resources(spec.head_group_spec.template.spec.as_ref())?];
    for group in spec.worker_group_specs.iter().flatten() {
        if group.suspend == Some(true) {
            continue;
        }
        let pods = i64::from(group.num_of_hosts.unwrap_or(1)) * i64::from(count(group));
        lists.push(scale_resources(
            &template_resources(group.template.spec.as_ref())?,
            pods,
        ));
    }
    Ok(sum_resources(&lists))
}

/// `CalculateDesiredResources`: uses the raw `replicas` (unset = 0), NOT clamped to min/max.
pub fn desired_resources(spec: &RayClusterSpec) -> Result<ResourceTotals, QuantityError> {
    cluster_resources(spec, |g| g.replicas.unwrap_or(0))
}

/// `CalculateMinResources`: the same with `minReplicas` (unset = 0).
pub fn min_resources(spec: &RayClusterSpec) -> Result<ResourceTotals, QuantityError> {
    cluster_resources(spec, |g| g.min_replicas.unwrap_or(0))
}

/// `desiredCPU` / `desiredMemory` / `desiredGPU` / `desiredTPU` of a cluster.
pub fn desired_status_resources(spec: &RayClusterSpec) -> Result<StatusResources, QuantityError> {
    desired_resources(spec).map(|t| status_resources(&t))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodTemplateSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
    use ray_api::HeadGroupSpec;
    use std::collections::BTreeMap;

    fn template(requests: &[(&str, &str)]) -> PodTemplateSpec {
        PodTemplateSpec {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "ray".into(),
                    resources: Some(ResourceRequirements {
                        requests: Some(
                            requests
                                .iter()
                                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                                .collect(),
                        ),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn cluster(head: &[(&str, &str)], groups: Vec<WorkerGroupSpec>) -> RayClusterSpec {
        RayClusterSpec {
            head_group_spec: HeadGroupSpec {
                template: template(head),
                ..Default::default()
            },
            worker_group_specs: Some(groups),
            ..Default::default()
        }
    }

    fn totals(list: &[(&str, &str)]) -> ResourceTotals {
        list.iter()
            .map(|(k, v)| (k.to_string(), Qty::parse(v).unwrap()))
            .collect()
    }

    #[test]
    fn golden_r11_desired_and_min_resources() {
        let group = WorkerGroupSpec {
            group_name: "g".into(),
            num_of_hosts: Some(2),
            replicas: Some(4),
            min_replicas: Some(3),
            template: template(&[("cpu", "1"), ("memory", "200Mi")]),
            ..Default::default()
        };
        let spec = cluster(&[("cpu", "1"), ("memory", "100Mi")], vec![group]);
        let desired = desired_status_resources(&spec).unwrap();
        assert_eq!(desired.cpu.to_string(), "9");
        assert_eq!(desired.memory.to_string(), "1700Mi");
        let min = status_resources(&min_resources(&spec).unwrap());
        assert_eq!(min.cpu.to_string(), "7");
        assert_eq!(min.memory.to_string(), "1300Mi");
    }

    #[test]
    fn golden_r13_suspended_group_counts_nothing() {
        let group = WorkerGroupSpec {
            group_name: "g".into(),
            suspend: Some(true),
            replicas: Some(3),
            min_replicas: Some(2),
            template: template(&[("cpu", "1"), ("memory", "200Mi")]),
            ..Default::default()
        };
        let spec = cluster(&[("cpu", "1"), ("memory", "100Mi")], vec![group]);
        for t in [desired_resources(&spec).unwrap(), min_resources(&spec).unwrap()] {
            let s = status_resources(&t);
            assert_eq!(
                (s.cpu.to_string(), s.memory.to_string()),
                ("1".to_string(), "100Mi".to_string())
            );
        }
    }

    #[test]
    fn golden_r14_max_int32_replicas_do_not_overflow() {
        let group = WorkerGroupSpec {
            group_name: "g".into(),
            replicas: Some(i32::MAX),
            min_replicas: Some(i32::MAX),
            template: template(&[("cpu", "1")]),
            ..Default::default()
        };
        let spec = cluster(&[("cpu", "1")], vec![group]);
        assert_eq!(desired_status_resources(&spec).unwrap().cpu.to_string(), "2147483648");
    }

    #[test]
    fn golden_r16_sum_gpus() {
        assert_eq!(sum_gpus(&totals(&[("cpu", "1")])).to_string(), "0");
        assert_eq!(
            sum_gpus(&totals(&[("nvidia.com/gpu", "1"), ("google.com/tpu", "1")])).to_string(),
            "1"
        );
        assert_eq!(
            sum_gpus(&totals(&[
                ("nvidia.com/gpu", "3"),
                ("nvidia.com/mig-1g.10gb", "2"),
                ("foo.bar/gpu", "2"),
                ("google.com/tpu", "1"),
            ]))
            .to_string(),
            "7"
        );
        assert_eq!(
            sum_gpus(&totals(&[
                ("nvidia.com/gpu", "1"),
                ("nvidia.com/mig-1g.10gb", "2"),
                ("nvidia.com/mig-2g.20gb", "3"),
                ("nvidia.com/mig-3g.40gb", "4"),
                ("google.com/tpu", "1"),
            ]))
            .to_string(),
            "10"
        );
    }

    #[test]
    fn gpu_key_rule() {
        for yes in [
            "nvidia.com/gpu",
            "amd.com/gpu",
            "nvidia.com/mig-2g.32gb",
            "x/nvidia.com/mig-12g.128gb",
        ] {
            assert!(is_gpu_resource_key(yes), "{yes}");
        }
        for no in [
            "nvidia.com/gpu-mig-12g.128gb",
            "cpu",
            "memory",
            "nvidia.com/GPU",
            "nvidia.com/mig-g.1gb",
        ] {
            assert!(!is_gpu_resource_key(no), "{no}");
        }
    }

    #[test]
    fn raw_replicas_are_used_and_unset_replicas_count_zero() {
        let group = WorkerGroupSpec {
            group_name: "g".into(),
            replicas: None,
            min_replicas: Some(5),
            template: template(&[("cpu", "500m")]),
            ..Default::default()
        };
        let spec = cluster(&[], vec![group]);
        assert_eq!(desired_status_resources(&spec).unwrap().cpu.to_string(), "0");
        assert_eq!(
            status_resources(&min_resources(&spec).unwrap()).cpu.to_string(),
            "2500m"
        );
        let empty = status_resources(&BTreeMap::new());
        assert!(empty.gpu.is_zero() && empty.tpu.is_zero());
    }
}
