//! Kubernetes quantities for KubeRay's API: the exact quantity type from `kube-compat`, re-exported
//! here because this crate's functions take and return it, its bridge to k8s-openapi's `Quantity`,
//! and KubeRay's resource-list helpers built on it.
//!
//! Resource lists: [`ResourceTotals`] with [`pod_resources`] (KubeRay `CalculatePodResource`),
//! [`sum_resources`] (`SumResourceList`), [`scale_resources`] and [`resource_lists_equal`]
//! (Volcano's semantic-equality check).

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;

/// The exact Kubernetes quantity, its print format and its parse error (see `kube_compat::quantity`).
pub use kube_compat::quantity::{Qty, QuantityError, QuantityFormat};

/// Parses a k8s-openapi `Quantity`, trimming surrounding whitespace as Go's JSON decoding does.
pub fn from_quantity(quantity: &Quantity) -> Result<Qty, QuantityError> {
    Qty::parse_trimmed(&quantity.0)
}

/// The printed form of `qty` as a k8s-openapi `Quantity`.
pub fn to_quantity(qty: &Qty) -> Quantity {
    Quantity(qty.to_string())
}

/// A resource list (`cpu`, `memory`, `nvidia.com/gpu`, …) with exact quantities, sorted by name.
pub type ResourceTotals = BTreeMap<String, Qty>;

/// Parses a k8s `ResourceList` (`BTreeMap<String, Quantity>`).
pub fn parse_resource_list(list: &BTreeMap<String, Quantity>) -> Result<ResourceTotals, QuantityError> {
    list.iter()
        .map(|(name, q)| Ok((name.clone(), from_quantity(q)?)))
        .collect()
}

/// Prints a resource list back into a k8s `ResourceList`.
pub fn to_resource_list(totals: &ResourceTotals) -> BTreeMap<String, Quantity> {
    totals.iter().map(|(name, q)| (name.clone(), to_quantity(q))).collect()
}

/// Resources of one pod (KubeRay `CalculatePodResource`): over `spec.containers` only (no init
/// containers, no overhead), each container contributes its requests plus any limit whose name is
/// absent from its requests; containers are summed by name in order.
pub fn pod_resources(spec: &PodSpec) -> Result<ResourceTotals, QuantityError> {
    let mut pod = ResourceTotals::new();
    for container in &spec.containers {
        let Some(resources) = &container.resources else {
            continue;
        };
        let parse = |resource: &String, q: &Quantity| {
            from_quantity(q).map_err(|source| QuantityError::InContainer {
                container: container.name.clone(),
                resource: resource.clone(),
                source: Box::new(source),
            })
        };
        let mut per_container = ResourceTotals::new();
        for (name, q) in resources.requests.iter().flatten() {
            per_container.insert(name.clone(), parse(name, q)?);
        }
        for (name, q) in resources.limits.iter().flatten() {
            if !per_container.contains_key(name) {
                per_container.insert(name.clone(), parse(name, q)?);
            }
        }
        accumulate(&mut pod, per_container);
    }
    Ok(pod)
}

/// Adds `list` into `total`: a new name is moved in as is, an existing one is added to.
fn accumulate(total: &mut ResourceTotals, list: ResourceTotals) {
    for (name, q) in list {
        match total.get_mut(&name) {
            Some(existing) => *existing = existing.add(&q),
            None => {
                total.insert(name, q);
            }
        }
    }
}

/// Sums resource lists in order (KubeRay `SumResourceList`): the first occurrence of a name is
/// copied, later ones are added to it (so the first non-zero contribution decides the format).
pub fn sum_resources<'a>(lists: impl IntoIterator<Item = &'a ResourceTotals>) -> ResourceTotals {
    let mut total = ResourceTotals::new();
    for list in lists {
        accumulate(&mut total, list.clone());
    }
    total
}

/// Multiplies every quantity by `n`; with `n = 0` every key stays, with a zero value.
pub fn scale_resources(resources: &ResourceTotals, n: i64) -> ResourceTotals {
    resources.iter().map(|(name, q)| (name.clone(), q.mul(n))).collect()
}

/// Semantic equality of two resource lists (apimachinery `quota.Equals`): the same names, and
/// every pair of quantities equal by value (`1Gi` equals `1024Mi`).
pub fn resource_lists_equal(a: &ResourceTotals, b: &ResourceTotals) -> bool {
    a.len() == b.len() && a.iter().all(|(name, qa)| b.get(name).is_some_and(|qb| qa.eq_value(qb)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::api::core::v1::{Container, ResourceRequirements};

    fn q(s: &str) -> Qty {
        Qty::parse(s).unwrap()
    }

    fn list(entries: &[(&str, &str)]) -> BTreeMap<String, Quantity> {
        entries
            .iter()
            .map(|(k, v)| (k.to_string(), Quantity(v.to_string())))
            .collect()
    }

    fn container(name: &str, requests: &[(&str, &str)], limits: &[(&str, &str)]) -> Container {
        Container {
            name: name.into(),
            resources: Some(ResourceRequirements {
                requests: (!requests.is_empty()).then(|| list(requests)),
                limits: (!limits.is_empty()).then(|| list(limits)),
                ..Default::default()
            }),
            ..Default::default()
        }
    }

    #[test]
    fn table_empty_list() {
        let empty = sum_resources(std::iter::empty());
        assert!(empty.is_empty());
        assert_eq!(serde_json::to_string(&to_resource_list(&empty)).unwrap(), "{}");
        let cpu = empty.get("cpu").cloned().unwrap_or_else(Qty::zero);
        assert_eq!(cpu.to_string(), "0");
    }

    #[test]
    fn from_quantity_trims_whitespace() {
        assert_eq!(from_quantity(&Quantity(" 2Gi ".into())).unwrap().to_string(), "2Gi");
    }

    #[test]
    fn to_quantity_prints_the_canonical_form() {
        assert_eq!(to_quantity(&q("1Gi")), Quantity("1Gi".into()));
        assert_eq!(to_quantity(&q("1024Mi")), Quantity("1Gi".into()));
    }

    // ---- resource lists ----

    #[test]
    fn pod_resources_requests_win_and_limits_fill_gaps() {
        // Requests cpu 1; limits cpu 1, memory 200Mi: the limit fills in the missing memory.
        let spec = PodSpec {
            containers: vec![container("c", &[("cpu", "1")], &[("cpu", "1"), ("memory", "200Mi")])],
            ..Default::default()
        };
        let before = spec.clone();
        let totals = pod_resources(&spec).unwrap();
        assert_eq!(to_resource_list(&totals), list(&[("cpu", "1"), ("memory", "200Mi")]));
        assert_eq!(spec, before);
    }

    #[test]
    fn pod_resources_sums_containers_and_ignores_init_containers() {
        let spec = PodSpec {
            containers: vec![
                container(
                    "a",
                    &[("cpu", "256m"), ("memory", "256Mi")],
                    &[("cpu", "500m"), ("nvidia.com/gpu", "1")],
                ),
                container("b", &[("cpu", "500m")], &[("memory", "200Mi")]),
                Container {
                    name: "no-resources".into(),
                    ..Default::default()
                },
            ],
            init_containers: Some(vec![container("init", &[("cpu", "10")], &[])]),
            ..Default::default()
        };
        let totals = pod_resources(&spec).unwrap();
        assert_eq!(
            to_resource_list(&totals),
            list(&[("cpu", "756m"), ("memory", "456Mi"), ("nvidia.com/gpu", "1")])
        );
    }

    #[test]
    fn pod_resources_names_the_bad_entry() {
        let spec = PodSpec {
            containers: vec![container("ray-head", &[("cpu", "lots")], &[])],
            ..Default::default()
        };
        let err = pod_resources(&spec).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("ray-head") && text.contains("cpu") && text.contains("lots"),
            "{text}"
        );
    }

    #[test]
    fn sum_copies_first_then_adds() {
        let head: ResourceTotals = parse_resource_list(&list(&[("cpu", "1"), ("memory", "2Gi")])).unwrap();
        let workers = scale_resources(
            &parse_resource_list(&list(&[("cpu", "1"), ("memory", "1Gi")])).unwrap(),
            2,
        );
        let total = sum_resources([&head, &workers]);
        assert_eq!(to_resource_list(&total), list(&[("cpu", "3"), ("memory", "4Gi")]));
    }

    #[test]
    fn scale_by_zero_keeps_keys() {
        let gpu = parse_resource_list(&list(&[("nvidia.com/gpu", "1")])).unwrap();
        assert_eq!(
            to_resource_list(&scale_resources(&gpu, 0)),
            list(&[("nvidia.com/gpu", "0")])
        );
    }

    #[test]
    fn semantic_list_equality() {
        let a = parse_resource_list(&list(&[("cpu", "1"), ("memory", "1Gi")])).unwrap();
        let b = parse_resource_list(&list(&[("cpu", "1000m"), ("memory", "1024Mi")])).unwrap();
        let c = parse_resource_list(&list(&[("cpu", "1")])).unwrap();
        assert!(resource_lists_equal(&a, &b));
        assert!(!resource_lists_equal(&a, &c));
        assert!(!resource_lists_equal(&c, &a));
    }
}
