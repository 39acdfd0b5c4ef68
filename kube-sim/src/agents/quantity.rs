//! Kubernetes resource quantities (`100m`, `1.5Gi`, `2e3`) and resource lists, in milli-units.
//!
//! Quantities are read as Kubernetes reads them (`kube_compat::quantity`). Every amount is kept as an `i128`
//! count of thousandths of the base unit (millicores for `cpu`, milli-bytes for `memory`, milli-pods for
//! `pods`), which is exact for every suffix down to `m` and rounds `u`/`n` up, as the scheduler does.

use std::collections::BTreeMap;

use kube_compat::quantity::Qty;
use serde_json::Value;

/// A quantity that could not be parsed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid quantity {0:?}")]
pub struct QuantityError(pub String);

/// Parses a quantity into milli-units (`"1"` → 1000, `"250m"` → 250, `"1Ki"` → 1_024_000), surrounding
/// whitespace ignored, finer amounts rounded up.
pub fn parse_milli(s: &str) -> Result<i128, QuantityError> {
    Qty::parse_trimmed(s)
        .map(|q| q.as_millis_ceil())
        .map_err(|_| QuantityError(s.to_string()))
}

/// Parses a quantity given as a JSON string or number.
pub fn parse_value(v: &Value) -> Result<i128, QuantityError> {
    match v {
        Value::String(s) => parse_milli(s),
        Value::Number(n) => parse_milli(&n.to_string()),
        other => Err(QuantityError(other.to_string())),
    }
}

/// A resource list (`cpu`, `memory`, `pods`, extended resources) in milli-units.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Resources(pub BTreeMap<String, i128>);

impl Resources {
    /// Parses a JSON resource list (`{"cpu": "1", "memory": "1Gi"}`); unparsable entries are skipped.
    pub fn from_json(v: &Value) -> Self {
        let mut out = BTreeMap::new();
        if let Some(m) = v.as_object() {
            for (k, q) in m {
                if let Ok(x) = parse_value(q) {
                    out.insert(k.clone(), x);
                }
            }
        }
        Self(out)
    }

    /// The amount of `name` (0 when absent).
    pub fn get(&self, name: &str) -> i128 {
        self.0.get(name).copied().unwrap_or(0)
    }

    /// Adds `other` to `self`.
    pub fn add(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_insert(0) += v;
        }
    }

    /// Subtracts `other` from `self`.
    pub fn sub(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            *self.0.entry(k.clone()).or_insert(0) -= v;
        }
    }

    /// Raises every entry of `self` to at least the one in `other`.
    pub fn max_with(&mut self, other: &Resources) {
        for (k, v) in &other.0 {
            let e = self.0.entry(k.clone()).or_insert(0);
            *e = (*e).max(*v);
        }
    }

    /// True when every positive request in `req` fits within `self`.
    pub fn fits(&self, req: &Resources) -> bool {
        req.0.iter().all(|(k, v)| *v <= 0 || self.get(k) >= *v)
    }

    /// The names of the resources in `req` that do not fit within `self`.
    pub fn insufficient(&self, req: &Resources) -> Vec<String> {
        req.0
            .iter()
            .filter(|(k, v)| **v > 0 && self.get(k) < **v)
            .map(|(k, _)| k.clone())
            .collect()
    }

    /// True when every entry of `self` that `cap` limits is within `cap` (entries `cap` does not name are
    /// unlimited).
    pub fn within(&self, cap: &Resources) -> bool {
        cap.0.iter().all(|(k, c)| self.get(k) <= *c)
    }
}

/// The scheduling requests of a pod spec: the sum over containers (a missing request defaults to the limit),
/// raised to the largest init container, plus `pods: 1`.
pub fn pod_requests(spec: &Value) -> Resources {
    let resources = |list: &str| {
        spec[list]
            .as_array()
            .into_iter()
            .flatten()
            .map(|c| &c["resources"])
            .collect::<Vec<_>>()
    };
    requests_from(resources("containers"), resources("initContainers"), &spec["overhead"])
}

/// [`pod_requests`] from the parts of a pod spec it reads: the `resources` of each app and init container and
/// `overhead` (for readers that decode only those).
pub fn requests_from<'a>(
    containers: impl IntoIterator<Item = &'a Value>,
    init_containers: impl IntoIterator<Item = &'a Value>,
    overhead: &Value,
) -> Resources {
    // A container's request defaults to its limit.
    let container = |resources: &Value| {
        let mut r = Resources::from_json(&resources["limits"]);
        for (k, v) in Resources::from_json(&resources["requests"]).0 {
            r.0.insert(k, v);
        }
        r
    };
    let mut total = Resources::default();
    for c in containers {
        total.add(&container(c));
    }
    for c in init_containers {
        total.max_with(&container(c));
    }
    total.add(&Resources::from_json(overhead));
    *total.0.entry("pods".into()).or_insert(0) += 1000;
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_strings_and_numbers() {
        assert_eq!(parse_value(&serde_json::json!("250m")), Ok(250));
        assert_eq!(parse_value(&serde_json::json!(" 1Ki ")), Ok(1_024_000));
        assert_eq!(parse_value(&serde_json::json!(2)), Ok(2000));
        assert_eq!(parse_value(&serde_json::json!(1.5)), Ok(1500));
        assert_eq!(parse_milli("-2"), Ok(-2000));
        assert_eq!(parse_milli("abc"), Err(QuantityError("abc".into())));
        assert!(parse_milli("1Qi").is_err());
        assert!(parse_milli("").is_err());
        assert!(parse_value(&serde_json::json!(true)).is_err());
    }

    #[test]
    fn pod_requests_sum_and_default_to_limits() {
        let spec = serde_json::json!({"containers": [
            {"resources": {"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}},
            {"resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        ], "initContainers": [{"resources": {"requests": {"cpu": "4"}}}]});
        let r = pod_requests(&spec);
        assert_eq!(r.get("cpu"), 4000);
        assert_eq!(r.get("memory"), 2 * (1 << 30) * 1000);
        assert_eq!(r.get("pods"), 1000);
    }
}
