//! The `ray start` command: the parameter pipeline (group `resources` / `labels`, defaults,
//! container-derived `num-cpus` / `memory` / `num-gpus` / accelerators) and its rendering
//! (docs/podgen.md#the-ray-start-command).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ResourceRequirements;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube_compat::go_json;
use kube_compat::quantity::{Qty, approximate_f64};
use ray_api::constants::{DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_GCS_SERVER_PORT, DEFAULT_METRICS_PORT};

/// `rayStartParams`: flag name → value.
pub type RayStartParams = BTreeMap<String, String>;

/// Head or worker: decides the `ray start` prefix and which defaults apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RayNodeType {
    /// The head pod.
    Head,
    /// A worker pod.
    Worker,
}

impl RayNodeType {
    /// The `ray.io/node-type` label value.
    pub fn as_str(self) -> &'static str {
        match self {
            RayNodeType::Head => ray_api::constants::NODE_TYPE_HEAD,
            RayNodeType::Worker => ray_api::constants::NODE_TYPE_WORKER,
        }
    }
}

/// Param key of the CPU count.
pub const NUM_CPUS: &str = ray_api::constants::RAY_START_PARAM_NUM_CPUS;
/// Param key of the memory in bytes.
pub const MEMORY: &str = ray_api::constants::RAY_START_PARAM_MEMORY;
/// Param key of the GPU count.
pub const NUM_GPUS: &str = ray_api::constants::RAY_START_PARAM_NUM_GPUS;
/// Param key of the custom resources JSON.
pub const RESOURCES: &str = ray_api::constants::RAY_START_PARAM_RESOURCES;
/// Param key of the Ray node labels.
pub const LABELS: &str = "labels";
/// Param key of the head port (also the GCS port workers connect to).
pub const PORT: &str = "port";
/// Param key of the worker's head address.
pub const ADDRESS: &str = "address";
/// Param key of the dashboard bind host.
pub const DASHBOARD_HOST: &str = "dashboard-host";
/// Param key of the metrics export port.
pub const METRICS_EXPORT_PORT: &str = "metrics-export-port";
/// Param key of `--block` (always forced on).
pub const BLOCK: &str = "block";
/// Param key of the dashboard agent listen port.
pub const DASHBOARD_AGENT_LISTEN_PORT: &str = "dashboard-agent-listen-port";
/// Param key of the dashboard port.
pub const DASHBOARD_PORT: &str = "dashboard-port";
/// Param key disabling Ray's own monitor when the KubeRay autoscaler sidecar runs.
pub const NO_MONITOR: &str = "no-monitor";
/// Param key of the Redis user name (GCS FT).
pub const REDIS_USERNAME: &str = "redis-username";
/// Param key of the Redis password (GCS FT).
pub const REDIS_PASSWORD: &str = "redis-password";
/// Default dashboard bind host on the head.
pub const DEFAULT_DASHBOARD_HOST: &str = "0.0.0.0";
/// Flags that keep an explicit `=true` / `=false` instead of becoming bare switches.
pub const EXPLICIT_BOOLEAN_FLAGS: [&str; 3] = ["log-color", "include-dashboard", "include-log-monitor"];
/// Container resource of AWS Neuron cores.
pub const NEURON_CORE_CONTAINER_RESOURCE: &str = ray_api::constants::NEURON_CORE_CONTAINER_RESOURCE;
/// Ray resource name of AWS Neuron cores.
pub const NEURON_CORE_RAY_RESOURCE: &str = ray_api::constants::NEURON_CORE_RAY_RESOURCE;
/// Container resource of Google TPUs.
pub const TPU_CONTAINER_RESOURCE: &str = ray_api::constants::TPU_CONTAINER_RESOURCE;
/// Ray resource name of Google TPUs.
pub const TPU_RAY_RESOURCE: &str = ray_api::constants::TPU_RAY_RESOURCE;
/// Characters stripped around a user `resources` param before JSON decoding.
const RESOURCES_QUOTE_CHARS: [char; 4] = ['\'', '"', '`', ' '];

/// The head port: head `rayStartParams["port"]` verbatim, else `6379` (`GetHeadPort`).
pub fn head_port(head_params: Option<&RayStartParams>) -> String {
    head_params
        .and_then(|p| p.get(PORT))
        .cloned()
        .unwrap_or_else(|| DEFAULT_GCS_SERVER_PORT.to_string())
}

/// KubeRay's `IsGPUResourceKey`: ends with `gpu`, or matches `nvidia\.com/mig-\d+g\.\d+gb$`.
pub fn is_gpu_resource_key(key: &str) -> bool {
    if key.ends_with("gpu") {
        return true;
    }
    const MIG: &str = "nvidia.com/mig-";
    key.match_indices(MIG)
        .any(|(at, _)| is_mig_profile(&key[at + MIG.len()..]))
}

/// `\d+g\.\d+gb` spanning the whole string.
fn is_mig_profile(rest: &str) -> bool {
    let Some(rest) = strip_digits(rest).and_then(|r| r.strip_prefix("g.")) else {
        return false;
    };
    strip_digits(rest) == Some("gb")
}

fn strip_digits(s: &str) -> Option<&str> {
    let trimmed = s.trim_start_matches(|c: char| c.is_ascii_digit());
    (trimmed.len() < s.len()).then_some(trimmed)
}

/// Step 1 (`updateRayStartParamsResources`): the group's top-level `resources` override
/// `num-cpus` / `memory` / `num-gpus`; other entries become the `resources` JSON.
pub fn apply_group_resources(params: &mut RayStartParams, resources: &BTreeMap<String, String>) {
    let mut custom = BTreeMap::new();
    for (name, text) in resources {
        let Some((quantity, amount)) = quantity_and_float(text) else {
            continue;
        };
        let normalized = name.to_lowercase();
        if normalized == "cpu" {
            params.insert(NUM_CPUS.to_owned(), quantity.value_ceil().to_string());
        } else if normalized == "memory" {
            params.insert(MEMORY.to_owned(), quantity.value_ceil().to_string());
        } else if is_gpu_resource_key(&normalized) {
            params.insert(NUM_GPUS.to_owned(), quantity.value_ceil().to_string());
        } else {
            custom.insert(name.clone(), amount);
        }
    }
    if !custom.is_empty() {
        params.insert(RESOURCES.to_owned(), format!("'{}'", go_json::float_map(&custom)));
    }
}

/// Step 2 (`updateRayStartParamsLabels`): `labels=k1=v1,k2=v2` sorted by key.
pub fn apply_group_labels(params: &mut RayStartParams, labels: &BTreeMap<String, String>) {
    if labels.is_empty() {
        return;
    }
    let joined = labels
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect::<Vec<_>>()
        .join(",");
    params.insert(LABELS.to_owned(), joined);
}

/// Step 3 (`setMissingRayStartParams`): worker `address`, head `dashboard-host`, and for both
/// `metrics-export-port`, `block=true` (forced) and `dashboard-agent-listen-port`.
pub fn set_missing_params(params: &mut RayStartParams, node_type: RayNodeType, head_port: &str, fqdn: &str) {
    match node_type {
        RayNodeType::Worker => {
            params
                .entry(ADDRESS.to_owned())
                .or_insert_with(|| format!("{fqdn}:{head_port}"));
        }
        RayNodeType::Head => {
            params
                .entry(DASHBOARD_HOST.to_owned())
                .or_insert_with(|| DEFAULT_DASHBOARD_HOST.to_owned());
        }
    }
    params
        .entry(METRICS_EXPORT_PORT.to_owned())
        .or_insert_with(|| DEFAULT_METRICS_PORT.to_string());
    params.insert(BLOCK.to_owned(), "true".to_owned());
    params
        .entry(DASHBOARD_AGENT_LISTEN_PORT.to_owned())
        .or_insert_with(|| DEFAULT_DASHBOARD_AGENT_LISTEN_PORT.to_string());
}

/// The exact quantity and Go's approximate float of `text` (surrounding whitespace trimmed), as
/// KubeRay reads a resource amount; `None` when Go would reject the text.
fn quantity_and_float(text: &str) -> Option<(Qty, f64)> {
    Some((Qty::parse_trimmed(text).ok()?, approximate_f64(text).ok()?))
}

fn nonzero(list: Option<&BTreeMap<String, Quantity>>, key: &str) -> Option<Qty> {
    list.and_then(|l| l.get(key))
        .and_then(|q| Qty::parse_trimmed(&q.0).ok())
        .filter(|q| !q.is_zero())
}

/// Step 6: `num-cpus` (limit, else request), `memory` (limit only) and accelerators from the Ray
/// container's resources, each only when absent.
pub fn add_container_resources(params: &mut RayStartParams, resources: Option<&ResourceRequirements>) {
    let limits = resources.and_then(|r| r.limits.as_ref());
    let requests = resources.and_then(|r| r.requests.as_ref());
    if !params.contains_key(NUM_CPUS)
        && let Some(cpu) = nonzero(limits, "cpu").or_else(|| nonzero(requests, "cpu"))
    {
        params.insert(NUM_CPUS.to_owned(), cpu.value_ceil().to_string());
    }
    if !params.contains_key(MEMORY)
        && let Some(memory) = nonzero(limits, "memory")
    {
        params.insert(MEMORY.to_owned(), memory.value_ceil().to_string());
    }
    if let Some(limits) = limits {
        add_accelerators(params, limits);
    }
}

/// `addWellKnownAcceleratorResources`: first GPU key (sorted) → `num-gpus`; first of Neuron / TPU
/// → an entry of the `resources` JSON unless one is already there.
fn add_accelerators(params: &mut RayStartParams, limits: &BTreeMap<String, Quantity>) {
    if limits.is_empty() {
        return;
    }
    let mut resources: BTreeMap<String, f64> = match params.get(RESOURCES) {
        None => BTreeMap::new(),
        Some(raw) => match serde_json::from_str(raw.trim_matches(RESOURCES_QUOTE_CHARS)) {
            Ok(map) => map,
            // KubeRay logs the decode error and leaves every accelerator param untouched.
            Err(_) => return,
        },
    };
    let mut custom_present =
        resources.contains_key(NEURON_CORE_RAY_RESOURCE) || resources.contains_key(TPU_RAY_RESOURCE);
    for (key, value) in limits {
        let Some((quantity, amount)) = quantity_and_float(&value.0).filter(|(q, _)| !q.is_zero()) else {
            continue;
        };
        if !params.contains_key(NUM_GPUS) && is_gpu_resource_key(key) {
            params.insert(NUM_GPUS.to_owned(), quantity.value_ceil().to_string());
        }
        if custom_present {
            continue;
        }
        let ray_name = match key.as_str() {
            NEURON_CORE_CONTAINER_RESOURCE => NEURON_CORE_RAY_RESOURCE,
            TPU_CONTAINER_RESOURCE => TPU_RAY_RESOURCE,
            _ => continue,
        };
        if !resources.contains_key(ray_name) {
            resources.insert(ray_name.to_owned(), amount);
            params.insert(RESOURCES.to_owned(), format!("'{}'", go_json::float_map(&resources)));
        }
        custom_present = true;
    }
}

/// `convertParamMap`: ` --key=value ` per param in key order; `true`/`false` values (any case)
/// become a bare ` --key ` or nothing, except for [`EXPLICIT_BOOLEAN_FLAGS`].
pub fn render_params(params: &RayStartParams) -> String {
    let mut out = String::with_capacity(params.len() * 32);
    for (key, value) in params {
        let lower = value.to_lowercase();
        if (lower == "true" || lower == "false") && !EXPLICIT_BOOLEAN_FLAGS.contains(&key.as_str()) {
            if lower == "true" {
                out.push_str(" --");
                out.push_str(key);
                out.push(' ');
            }
        } else {
            out.push_str(" --");
            out.push_str(key);
            out.push('=');
            out.push_str(value);
            out.push(' ');
        }
    }
    out
}

/// `generateRayStartCommand`: adds the container-derived params, then renders
/// `ray start --head <flags>` or `ray start <flags>`.
pub fn generate_ray_start_command(
    node_type: RayNodeType,
    params: &mut RayStartParams,
    resources: Option<&ResourceRequirements>,
) -> String {
    add_container_resources(params, resources);
    match node_type {
        RayNodeType::Head => format!("ray start --head {}", render_params(params)),
        RayNodeType::Worker => format!("ray start {}", render_params(params)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(pairs: &[(&str, &str)]) -> RayStartParams {
        pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect()
    }

    fn limits(pairs: &[(&str, &str)]) -> ResourceRequirements {
        ResourceRequirements {
            limits: Some(
                pairs
                    .iter()
                    .map(|(k, v)| ((*k).to_owned(), Quantity((*v).to_owned())))
                    .collect(),
            ),
            ..ResourceRequirements::default()
        }
    }

    #[test]
    fn golden_p1_head_port() {
        assert_eq!(head_port(Some(&params(&[]))), "6379");
        assert_eq!(head_port(None), "6379");
        assert_eq!(head_port(Some(&params(&[("port", "9999")]))), "9999");
    }

    #[test]
    fn golden_p40_metrics_export_port() {
        for node in [RayNodeType::Head, RayNodeType::Worker] {
            let mut p = params(&[]);
            set_missing_params(&mut p, node, "6379", "fqdn");
            assert_eq!(p["metrics-export-port"], "8080");
            let mut p = params(&[("metrics-export-port", "8081")]);
            set_missing_params(&mut p, node, "6379", "fqdn");
            assert_eq!(p["metrics-export-port"], "8081");
        }
    }

    #[test]
    fn golden_p41_block_forced() {
        for node in [RayNodeType::Head, RayNodeType::Worker] {
            let mut p = params(&[]);
            set_missing_params(&mut p, node, "6379", "fqdn");
            assert_eq!(p["block"], "true");
            let mut p = params(&[("block", "false")]);
            set_missing_params(&mut p, node, "6379", "fqdn");
            assert_eq!(p["block"], "true");
        }
    }

    #[test]
    fn golden_p43_generate_ray_start_command() {
        let run = |node, p: &[(&str, &str)], l: &[(&str, &str)]| {
            generate_ray_start_command(node, &mut params(p), Some(&limits(l)))
        };
        use RayNodeType::{Head, Worker};
        assert_eq!(run(Worker, &[], &[("nvidia.com/gpu", "1")]), "ray start  --num-gpus=1 ");
        assert_eq!(
            run(Worker, &[], &[("nvidia.com/mig-2g.32gb", "1")]),
            "ray start  --num-gpus=1 "
        );
        assert_eq!(
            run(Worker, &[], &[("google.com/tpu", "4")]),
            "ray start  --resources='{\"TPU\":4}' "
        );
        assert_eq!(
            run(Head, &[], &[("aws.amazon.com/neuroncore", "4")]),
            "ray start --head  --resources='{\"neuron_cores\":4}' "
        );
        assert_eq!(
            run(
                Head,
                &[],
                &[("aws.amazon.com/neuroncore", "4"), ("nvidia.com/gpu", "1")]
            ),
            "ray start --head  --num-gpus=1  --resources='{\"neuron_cores\":4}' "
        );
        assert_eq!(
            run(
                Head,
                &[],
                &[
                    ("google.com/tpu", "8"),
                    ("aws.amazon.com/neuroncore", "4"),
                    ("nvidia.com/gpu", "1")
                ]
            ),
            "ray start --head  --num-gpus=1  --resources='{\"neuron_cores\":4}' "
        );
        assert_eq!(
            run(
                Head,
                &[("resources", "\"{\"custom_resource\":2}\"")],
                &[("aws.amazon.com/neuroncore", "4")]
            ),
            "ray start --head  --resources='{\"custom_resource\":2,\"neuron_cores\":4}' "
        );
        assert_eq!(
            run(
                Head,
                &[("resources", "'{\"custom_resource\":2,\"neuron_cores\":3}'")],
                &[("aws.amazon.com/neuroncore", "4")]
            ),
            "ray start --head  --resources='{\"custom_resource\":2,\"neuron_cores\":3}' "
        );
        assert_eq!(
            run(
                Head,
                &[("resources", "'{\"custom_resource\":2,\"TPU\":4}'")],
                &[("google.com/tpu", "8")]
            ),
            "ray start --head  --resources='{\"custom_resource\":2,\"TPU\":4}' "
        );
        assert_eq!(
            run(Head, &[("resources", "{")], &[("aws.amazon.com/neuroncore", "4")]),
            "ray start --head  --resources={ "
        );
        assert_eq!(
            run(Head, &[("include-log-monitor", "false")], &[]),
            "ray start --head  --include-log-monitor=false "
        );
        assert_eq!(
            run(Head, &[("include-log-monitor", "true")], &[]),
            "ray start --head  --include-log-monitor=true "
        );
    }

    #[test]
    fn golden_p44_group_labels() {
        let mut p = params(&[]);
        let labels = BTreeMap::from([
            ("topology.kubernetes.io/zone".to_owned(), "us-central2".to_owned()),
            ("ray.io/node-group".to_owned(), "worker-group-1".to_owned()),
            ("cloud.google.com/gke-spot".to_owned(), "true".to_owned()),
        ]);
        apply_group_labels(&mut p, &labels);
        assert_eq!(
            p["labels"],
            "cloud.google.com/gke-spot=true,ray.io/node-group=worker-group-1,topology.kubernetes.io/zone=us-central2"
        );
        let mut p = params(&[("labels", "old=label,to-be=replaced"), ("num-cpus", "1")]);
        apply_group_labels(&mut p, &BTreeMap::from([("new".to_owned(), "label".to_owned())]));
        assert_eq!(p, params(&[("labels", "new=label"), ("num-cpus", "1")]));
        let mut p = params(&[("labels", "keep")]);
        apply_group_labels(&mut p, &BTreeMap::new());
        assert_eq!(p, params(&[("labels", "keep")]));
    }

    #[test]
    fn group_resources_override_and_json() {
        let mut p = params(&[("num-cpus", "9")]);
        let resources = BTreeMap::from([
            ("CPU".to_owned(), "2500m".to_owned()),
            ("memory".to_owned(), "1Gi".to_owned()),
            ("nvidia.com/GPU".to_owned(), "2".to_owned()),
            ("Custom".to_owned(), "1.5".to_owned()),
            ("bad".to_owned(), "x".to_owned()),
        ]);
        apply_group_resources(&mut p, &resources);
        assert_eq!(
            p,
            params(&[
                ("num-cpus", "3"),
                ("memory", "1073741824"),
                ("num-gpus", "2"),
                ("resources", "'{\"Custom\":1.5}'")
            ])
        );
    }

    #[test]
    fn gpu_keys() {
        assert!(is_gpu_resource_key("nvidia.com/gpu"));
        assert!(is_gpu_resource_key("amd.com/gpu"));
        assert!(is_gpu_resource_key("nvidia.com/mig-1g.5gb"));
        assert!(is_gpu_resource_key("x/nvidia.com/mig-12g.128gb"));
        assert!(!is_gpu_resource_key("nvidia.com/gpu-mig-12g.128gb"));
        assert!(!is_gpu_resource_key("cpu"));
        assert!(!is_gpu_resource_key("memory"));
        assert!(!is_gpu_resource_key("nvidia.com/mig-g.5gb"));
    }

    #[test]
    fn cpu_falls_back_to_requests_and_memory_does_not() {
        let resources = ResourceRequirements {
            requests: Some(BTreeMap::from([
                ("cpu".to_owned(), Quantity("2".to_owned())),
                ("memory".to_owned(), Quantity("1Gi".to_owned())),
            ])),
            ..ResourceRequirements::default()
        };
        let mut p = params(&[]);
        add_container_resources(&mut p, Some(&resources));
        assert_eq!(p, params(&[("num-cpus", "2")]));
    }
}
