//! Bin-packing of resource demands, after Ray's `resource_demand_scheduler`: demands are placed
//! largest first onto the first node that fits, and new nodes are chosen one at a time by a
//! utilization score.

use super::resources::{GPU, RESOURCE_UNIT_SCALING, ResourceSet};
use std::cmp::Ordering;

/// Ray's demand order: more resource kinds first, then larger total amount, then the larger
/// `(name, amount)` list. Stable, so equal demands keep their input order.
pub(crate) fn sort_largest_first(demands: &mut [(usize, &ResourceSet)]) {
    demands.sort_by(|(_, a), (_, b)| {
        b.len()
            .cmp(&a.len())
            .then_with(|| b.total_units().cmp(&a.total_units()))
            .then_with(|| b.iter_units().cmp(a.iter_units()))
    });
}

/// Place each demand (already ordered) on the first node in `nodes` that fits it, subtracting it.
/// Returns, per demand, the index of the node it went to (or `None`).
pub(crate) fn first_fit(nodes: &mut [ResourceSet], demands: &[(usize, &ResourceSet)]) -> Vec<Option<usize>> {
    demands
        .iter()
        .map(|(_, demand)| {
            let slot = nodes.iter().position(|node| node.fits(demand));
            if let Some(i) = slot {
                nodes[i].subtract(demand);
            }
            slot
        })
        .collect()
}

/// Ray's utilization score of launching one node with `capacity` for `demands`; `None` when no
/// demand fits or no resource of the node is at least 1 unit. Higher is better.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Score {
    /// `false` for a GPU node when no demand asks for a GPU (conserve GPU nodes).
    gpu_ok: bool,
    /// Number of the node's resources that some demand asks for.
    matching_kinds: usize,
    /// Lowest weighted utilization over the node's resources.
    min_util: f64,
    /// Mean weighted utilization.
    mean_util: f64,
}

impl Score {
    /// Total order (floats compared with `total_cmp`).
    pub(crate) fn cmp(&self, other: &Self) -> Ordering {
        self.gpu_ok
            .cmp(&other.gpu_ok)
            .then(self.matching_kinds.cmp(&other.matching_kinds))
            .then(self.min_util.total_cmp(&other.min_util))
            .then(self.mean_util.total_cmp(&other.mean_util))
    }
}

/// Score a node type for the (ordered) demands.
pub(crate) fn utilization_score(capacity: &ResourceSet, demands: &[(usize, &ResourceSet)]) -> Option<Score> {
    let mut remaining = capacity.clone();
    let mut any_fit = false;
    let mut any_gpu_demand = false;
    let mut kinds: Vec<&str> = Vec::new();
    for (_, demand) in demands {
        for (name, _) in demand.iter_units() {
            if !kinds.contains(&name) {
                kinds.push(name);
            }
        }
        any_gpu_demand |= demand.units(GPU) > 0;
        if remaining.fits(demand) {
            any_fit = true;
            remaining.subtract(demand);
        }
    }
    if !any_fit {
        return None;
    }
    let mut utils = Vec::new();
    let mut matching_kinds = 0;
    for (name, units) in capacity.iter_units() {
        // Resources below one whole unit (0 or fractional) do not count.
        if units < RESOURCE_UNIT_SCALING {
            continue;
        }
        if kinds.contains(&name) {
            matching_kinds += 1;
        }
        let amount = units as f64 / RESOURCE_UNIT_SCALING as f64;
        let used = (units - remaining.units(name)) as f64 / units as f64;
        utils.push(amount * used.powi(3));
    }
    if utils.is_empty() {
        return None;
    }
    let min_util = utils.iter().copied().fold(f64::INFINITY, f64::min);
    let mean_util = utils.iter().sum::<f64>() / utils.len() as f64;
    let gpu_ok = capacity.units(GPU) == 0 || any_gpu_demand;
    Some(Score {
        gpu_ok,
        matching_kinds,
        min_util,
        mean_util,
    })
}

/// A node type that new nodes can be launched from.
pub(crate) struct LaunchCandidate<'a> {
    /// Group name (ties between equal scores go to the greater name, as in Ray).
    pub name: &'a str,
    /// Per-node logical capacity.
    pub capacity: &'a ResourceSet,
    /// How many more nodes this type may still get.
    pub room: i64,
}

/// Ray's `get_nodes_for`: repeatedly add the best-scoring node type and pack the remaining demands
/// onto that new node, until all demands are placed, no type can take any, or `max_to_add` nodes
/// were added. Returns the nodes added per candidate and the demands left unplaced.
pub(crate) fn nodes_for<'d>(
    candidates: &[LaunchCandidate<'_>],
    max_to_add: i64,
    mut demands: Vec<(usize, &'d ResourceSet)>,
) -> (Vec<i64>, Vec<(usize, &'d ResourceSet)>) {
    let mut added = vec![0i64; candidates.len()];
    let mut total_added = 0i64;
    while !demands.is_empty() && total_added < max_to_add {
        let mut best: Option<(Score, usize)> = None;
        for (i, c) in candidates.iter().enumerate() {
            if added[i] >= c.room {
                continue;
            }
            let Some(score) = utilization_score(c.capacity, &demands) else {
                continue;
            };
            let better = match &best {
                None => true,
                Some((best_score, best_i)) => match score.cmp(best_score) {
                    Ordering::Greater => true,
                    Ordering::Equal => c.name > candidates[*best_i].name,
                    Ordering::Less => false,
                },
            };
            if better {
                best = Some((score, i));
            }
        }
        let Some((_, chosen)) = best else { break };
        added[chosen] += 1;
        total_added += 1;
        let mut fresh = [candidates[chosen].capacity.clone()];
        let placed = first_fit(&mut fresh, &demands);
        demands = demands
            .into_iter()
            .zip(placed)
            .filter(|(_, slot)| slot.is_none())
            .map(|(d, _)| d)
            .collect();
    }
    (added, demands)
}

#[cfg(test)]
mod tests {
    use super::super::resources::{CPU, MEMORY};
    use super::*;

    #[test]
    fn demands_sort_by_kinds_then_size() {
        let small = ResourceSet::new().with(CPU, 1.0);
        let big = ResourceSet::new().with(CPU, 4.0);
        let gpu = ResourceSet::new().with(CPU, 1.0).with(GPU, 1.0);
        let mut demands = vec![(0, &small), (1, &big), (2, &gpu), (3, &small)];
        sort_largest_first(&mut demands);
        assert_eq!(demands.iter().map(|(i, _)| *i).collect::<Vec<_>>(), vec![2, 1, 0, 3]);
    }

    #[test]
    fn cpu_only_demands_prefer_the_cpu_node_over_a_gpu_node() {
        let cpu_node = ResourceSet::new().with(CPU, 4.0);
        let gpu_node = ResourceSet::new().with(CPU, 8.0).with(GPU, 1.0);
        let demand = ResourceSet::new().with(CPU, 1.0);
        let demands = vec![(0, &demand)];
        let a = utilization_score(&cpu_node, &demands).unwrap();
        let b = utilization_score(&gpu_node, &demands).unwrap();
        assert_eq!(a.cmp(&b), Ordering::Greater);
    }

    #[test]
    fn nodes_for_packs_several_demands_per_node_and_respects_room() {
        let node = ResourceSet::new().with(CPU, 2.0).with(MEMORY, 1e9);
        let demand = ResourceSet::new().with(CPU, 1.0);
        let candidates = [LaunchCandidate {
            name: "g",
            capacity: &node,
            room: 2,
        }];
        let demands: Vec<(usize, &ResourceSet)> = (0..5).map(|i| (i, &demand)).collect();
        let (added, left) = nodes_for(&candidates, 100, demands);
        assert_eq!(added, vec![2]);
        assert_eq!(left.len(), 1);
    }

    #[test]
    fn nodes_for_stops_when_nothing_fits() {
        let node = ResourceSet::new().with(CPU, 1.0);
        let demand = ResourceSet::new().with(CPU, 2.0);
        let candidates = [LaunchCandidate {
            name: "g",
            capacity: &node,
            room: 10,
        }];
        let (added, left) = nodes_for(&candidates, 100, vec![(0, &demand)]);
        assert_eq!((added, left.len()), (vec![0], 1));
    }
}
