//! The CPUS / GPUS / TPUS / MEMORY cells of the `get` tables, from a resource list: GPUs are
//! `nvidia.com/gpu`, TPUs `google.com/tpu`; an absent resource prints as `0`.

use ray_api::constants::TPU_CONTAINER_RESOURCE;
use ray_api::quantity::{Qty, ResourceTotals};

/// The container resource the plugin counts as GPUs.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// The four resource cells: CPUs, GPUs, TPUs, memory.
pub fn resource_cells(totals: &ResourceTotals) -> [String; 4] {
    let cell = |name: &str| totals.get(name).map_or_else(|| Qty::zero().to_string(), Qty::to_string);
    [
        cell("cpu"),
        cell(GPU_RESOURCE),
        cell(TPU_CONTAINER_RESOURCE),
        cell("memory"),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn absent_resources_print_as_zero() {
        let mut totals = ResourceTotals::new();
        totals.insert("cpu".into(), Qty::parse("4").unwrap_or_else(|_| Qty::zero()));
        totals.insert("memory".into(), Qty::parse("8Gi").unwrap_or_else(|_| Qty::zero()));
        assert_eq!(resource_cells(&totals), ["4", "0", "0", "8Gi"]);
    }
}
