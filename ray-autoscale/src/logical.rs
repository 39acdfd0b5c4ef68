//! Ray logical resources of one head or worker pod, derived the way KubeRay builds the
//! `ray start` flags (docs/podgen.md#the-ray-start-command): group `resources`, then `rayStartParams`,
//! then the Ray container's resources.
//!
//! | Ray resource | source, first hit wins |
//! |---|---|
//! | `CPU` | group `resources.cpu` (ceil); `num-cpus`; Ray container CPU limit (ceil); CPU request (ceil) |
//! | `memory` | group `resources.memory` (ceil); `memory`; Ray container memory **limit** (no request fallback) |
//! | `GPU` | group GPU key (ceil); `num-gpus`; first non-zero GPU limit in key order (ceil) |
//! | custom | group `resources` other keys; else `resources` JSON param; plus `TPU` / `neuron_cores` from limits |

use crate::cluster_resources::is_gpu_resource_key;
use crate::planner::resources::{CPU, GPU, MEMORY, ResourceSet, TPU};
use k8s_openapi::api::core::v1::PodTemplateSpec;
use ray_api::constants::RAY_CONTAINER_INDEX;
use ray_api::quantity::{Qty, QuantityError, from_quantity};
use ray_api::{HeadGroupSpec, WorkerGroupSpec};
use std::collections::BTreeMap;

/// `rayStartParams` key for the CPU count.
pub const NUM_CPUS_PARAM: &str = ray_api::constants::RAY_START_PARAM_NUM_CPUS;
/// `rayStartParams` key for the GPU count.
pub const NUM_GPUS_PARAM: &str = ray_api::constants::RAY_START_PARAM_NUM_GPUS;
/// `rayStartParams` key for memory in bytes.
pub const MEMORY_PARAM: &str = ray_api::constants::RAY_START_PARAM_MEMORY;
/// `rayStartParams` key for the custom resources JSON.
pub const RESOURCES_PARAM: &str = ray_api::constants::RAY_START_PARAM_RESOURCES;
/// AWS Neuron core extended resource.
pub const NEURON_CORE_RESOURCE: &str = ray_api::constants::NEURON_CORE_CONTAINER_RESOURCE;
/// Ray's name for Neuron cores.
pub const NEURON_CORES: &str = ray_api::constants::NEURON_CORE_RAY_RESOURCE;
/// Google TPU extended resource.
pub const GOOGLE_TPU_RESOURCE: &str = ray_api::constants::TPU_CONTAINER_RESOURCE;
/// Characters stripped around the `resources` JSON before decoding.
const RESOURCES_QUOTE_CHARS: &[char] = &['\'', '"', '`', ' '];

/// Why logical resources could not be derived.
#[derive(Debug, thiserror::Error)]
pub enum LogicalResourceError {
    /// A numeric `rayStartParams` value is not a number.
    #[error("rayStartParams[{key:?}] = {value:?} is not a number")]
    InvalidNumber {
        /// The parameter name.
        key: &'static str,
        /// Its value.
        value: String,
    },
    /// The `resources` parameter is not a JSON object of numbers.
    #[error("rayStartParams[\"resources\"] = {value:?} is not a JSON object of numbers: {reason}")]
    InvalidResourcesJson {
        /// The raw value.
        value: String,
        /// Decoder message.
        reason: String,
    },
    /// A container resource quantity does not parse.
    #[error("invalid container resource {name:?}: {source}")]
    Quantity {
        /// Resource name.
        name: String,
        /// Parse error.
        source: QuantityError,
    },
}

/// Logical resources of a head pod.
pub fn head_logical_resources(head: &HeadGroupSpec) -> Result<ResourceSet, LogicalResourceError> {
    logical_resources(head.ray_start_params.as_ref(), head.resources.as_ref(), &head.template)
}

/// Logical resources of one pod (host) of a worker group.
pub fn worker_logical_resources(group: &WorkerGroupSpec) -> Result<ResourceSet, LogicalResourceError> {
    logical_resources(
        group.ray_start_params.as_ref(),
        group.resources.as_ref(),
        &group.template,
    )
}

fn qty_to_f64(q: &Qty) -> f64 {
    q.as_nanos() as f64 / 1e9
}

fn parse_number(key: &'static str, value: &str) -> Result<f64, LogicalResourceError> {
    value
        .trim()
        .parse::<f64>()
        .ok()
        .filter(|v| v.is_finite())
        .ok_or_else(|| LogicalResourceError::InvalidNumber {
            key,
            value: value.to_string(),
        })
}

fn parse_custom(raw: &str) -> Result<BTreeMap<String, f64>, LogicalResourceError> {
    serde_json::from_str(raw.trim_matches(RESOURCES_QUOTE_CHARS)).map_err(|e| {
        LogicalResourceError::InvalidResourcesJson {
            value: raw.to_string(),
            reason: e.to_string(),
        }
    })
}

/// The Ray container's `(limits, requests)`, parsed.
type ContainerResources = (BTreeMap<String, Qty>, BTreeMap<String, Qty>);

fn ray_container_resources(template: &PodTemplateSpec) -> Result<ContainerResources, LogicalResourceError> {
    let Some(resources) = template
        .spec
        .as_ref()
        .and_then(|s| s.containers.get(RAY_CONTAINER_INDEX))
        .and_then(|c| c.resources.as_ref())
    else {
        return Ok(Default::default());
    };
    let parse = |list: &Option<BTreeMap<String, k8s_openapi::apimachinery::pkg::api::resource::Quantity>>| {
        list.iter()
            .flatten()
            .map(|(name, q)| {
                from_quantity(q)
                    .map(|q| (name.clone(), q))
                    .map_err(|source| LogicalResourceError::Quantity {
                        name: name.clone(),
                        source,
                    })
            })
            .collect::<Result<BTreeMap<_, _>, _>>()
    };
    Ok((parse(&resources.limits)?, parse(&resources.requests)?))
}

/// Derive the logical resources from the three sources (see the module table).
pub fn logical_resources(
    ray_start_params: Option<&BTreeMap<String, String>>,
    group_resources: Option<&BTreeMap<String, String>>,
    template: &PodTemplateSpec,
) -> Result<ResourceSet, LogicalResourceError> {
    let param = |key: &str| ray_start_params.and_then(|p| p.get(key)).map(String::as_str);
    let mut cpu = param(NUM_CPUS_PARAM)
        .map(|v| parse_number(NUM_CPUS_PARAM, v))
        .transpose()?;
    let mut gpu = param(NUM_GPUS_PARAM)
        .map(|v| parse_number(NUM_GPUS_PARAM, v))
        .transpose()?;
    let mut memory = param(MEMORY_PARAM).map(|v| parse_number(MEMORY_PARAM, v)).transpose()?;
    let mut custom = param(RESOURCES_PARAM).map(parse_custom).transpose()?;

    // Group-level `resources` override the params (unparseable quantities are skipped).
    let mut collected = BTreeMap::new();
    for (name, value) in group_resources.into_iter().flatten() {
        let Ok(q) = Qty::parse(value.trim()) else { continue };
        match name.to_lowercase().as_str() {
            "cpu" => cpu = Some(q.value_ceil() as f64),
            "memory" => memory = Some(q.value_ceil() as f64),
            lower if is_gpu_resource_key(lower) => gpu = Some(q.value_ceil() as f64),
            _ => {
                collected.insert(name.clone(), qty_to_f64(&q));
            }
        }
    }
    if !collected.is_empty() {
        custom = Some(collected);
    }

    // Then the Ray container.
    let (limits, requests) = ray_container_resources(template)?;
    let non_zero = |list: &BTreeMap<String, Qty>, name: &str| list.get(name).filter(|q| !q.is_zero()).cloned();
    if cpu.is_none() {
        cpu = non_zero(&limits, "cpu")
            .or_else(|| non_zero(&requests, "cpu"))
            .map(|q| q.value_ceil() as f64);
    }
    if memory.is_none() {
        memory = non_zero(&limits, "memory").map(|q| q.value_ceil() as f64);
    }
    if !limits.is_empty() {
        let mut custom_map = custom.take().unwrap_or_default();
        let mut accelerator_present = custom_map.contains_key(NEURON_CORES) || custom_map.contains_key(TPU);
        for (name, q) in &limits {
            if q.is_zero() {
                continue;
            }
            if gpu.is_none() && is_gpu_resource_key(name) {
                gpu = Some(q.value_ceil() as f64);
            }
            let ray_name = match name.as_str() {
                NEURON_CORE_RESOURCE => Some(NEURON_CORES),
                GOOGLE_TPU_RESOURCE => Some(TPU),
                _ => None,
            };
            if let (Some(ray_name), false) = (ray_name, accelerator_present) {
                custom_map.entry(ray_name.to_string()).or_insert_with(|| qty_to_f64(q));
                accelerator_present = true;
            }
        }
        custom = Some(custom_map);
    }

    let mut set = ResourceSet::new();
    for (name, amount) in custom.into_iter().flatten() {
        set.set(name, amount);
    }
    for (name, amount) in [(CPU, cpu), (GPU, gpu), (MEMORY, memory)] {
        if let Some(amount) = amount {
            set.set(name, amount);
        }
    }
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, PodSpec, ResourceRequirements};
    use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

    fn list(items: &[(&str, &str)]) -> Option<BTreeMap<String, Quantity>> {
        (!items.is_empty()).then(|| {
            items
                .iter()
                .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
                .collect()
        })
    }

    fn template(limits: &[(&str, &str)], requests: &[(&str, &str)]) -> PodTemplateSpec {
        PodTemplateSpec {
            spec: Some(PodSpec {
                containers: vec![Container {
                    name: "ray".into(),
                    resources: Some(ResourceRequirements {
                        limits: list(limits),
                        requests: list(requests),
                        ..Default::default()
                    }),
                    ..Default::default()
                }],
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    fn params(items: &[(&str, &str)]) -> BTreeMap<String, String> {
        items.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn container_limits_give_cpu_memory_gpu() {
        let t = template(&[("cpu", "1"), ("memory", "1Gi"), ("nvidia.com/gpu", "3")], &[]);
        let r = logical_resources(None, None, &t).unwrap();
        assert_eq!(
            r,
            ResourceSet::new()
                .with(CPU, 1.0)
                .with(MEMORY, 1073741824.0)
                .with(GPU, 3.0)
        );
    }

    #[test]
    fn cpu_falls_back_to_requests_and_rounds_up_but_memory_does_not() {
        let t = template(&[], &[("cpu", "1500m"), ("memory", "1Gi")]);
        let r = logical_resources(None, None, &t).unwrap();
        assert_eq!(r, ResourceSet::new().with(CPU, 2.0));
    }

    #[test]
    fn params_win_over_the_container_and_num_cpus_zero_means_no_cpu() {
        let t = template(&[("cpu", "1"), ("memory", "2G")], &[]);
        let p = params(&[("num-cpus", "0")]);
        let r = logical_resources(Some(&p), None, &t).unwrap();
        assert_eq!(r.get(CPU), 0.0);
        assert_eq!(r.get(MEMORY), 2e9);
    }

    #[test]
    fn custom_resources_json_and_accelerators() {
        let t = template(&[("google.com/tpu", "4")], &[]);
        let r = logical_resources(None, None, &t).unwrap();
        assert_eq!(r, ResourceSet::new().with(TPU, 4.0));
        let t = template(&[("aws.amazon.com/neuroncore", "4")], &[]);
        let p = params(&[("resources", r#""{"custom_resource":2}""#)]);
        let r = logical_resources(Some(&p), None, &t).unwrap();
        assert_eq!(
            r,
            ResourceSet::new().with("custom_resource", 2.0).with(NEURON_CORES, 4.0)
        );
        // An accelerator already in the JSON is kept as is.
        let p = params(&[("resources", r#"'{"custom_resource":2,"neuron_cores":3}'"#)]);
        assert_eq!(logical_resources(Some(&p), None, &t).unwrap().get(NEURON_CORES), 3.0);
        // Only the first accelerator in key order is added.
        let t = template(
            &[
                ("aws.amazon.com/neuroncore", "4"),
                ("google.com/tpu", "8"),
                ("nvidia.com/gpu", "1"),
            ],
            &[],
        );
        let r = logical_resources(None, None, &t).unwrap();
        assert_eq!(r, ResourceSet::new().with(NEURON_CORES, 4.0).with(GPU, 1.0));
    }

    #[test]
    fn group_resources_override_params() {
        let t = template(&[("cpu", "8")], &[]);
        let p = params(&[("num-cpus", "2"), ("resources", r#"'{"old":1}'"#)]);
        let g = params(&[
            ("CPU", "3"),
            ("memory", "1Gi"),
            ("nvidia.com/gpu", "1"),
            ("custom", "500m"),
            ("bad", "x!"),
        ]);
        let r = logical_resources(Some(&p), Some(&g), &t).unwrap();
        assert_eq!(
            r,
            ResourceSet::new()
                .with(CPU, 3.0)
                .with(MEMORY, 1073741824.0)
                .with(GPU, 1.0)
                .with("custom", 0.5)
        );
    }

    #[test]
    fn bad_inputs_are_errors_not_panics() {
        let t = template(&[], &[]);
        let p = params(&[("num-cpus", "many")]);
        assert!(matches!(
            logical_resources(Some(&p), None, &t),
            Err(LogicalResourceError::InvalidNumber { .. })
        ));
        let p = params(&[("resources", "{")]);
        assert!(matches!(
            logical_resources(Some(&p), None, &t),
            Err(LogicalResourceError::InvalidResourcesJson { .. })
        ));
        let bad = template(&[("cpu", "lots")], &[]);
        assert!(matches!(
            logical_resources(None, None, &bad),
            Err(LogicalResourceError::Quantity { .. })
        ));
    }
}
