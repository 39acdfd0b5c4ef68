//! Ray logical resources (`{"CPU": 1, "GPU": 1, "memory": 2147483648, ...}`) with exact
//! fixed-point arithmetic: amounts are stored in units of 1/10000, Ray's own resource granularity,
//! so bin-packing never suffers from float rounding.

use std::collections::BTreeMap;
use std::fmt;

/// Fixed-point units per whole resource (Ray's `RESOURCE_UNIT_SCALING`).
pub const RESOURCE_UNIT_SCALING: u64 = 10_000;
/// Ray's CPU resource name.
pub const CPU: &str = "CPU";
/// Ray's GPU resource name.
pub const GPU: &str = "GPU";
/// Ray's memory resource name (bytes).
pub const MEMORY: &str = "memory";
/// Ray's TPU resource name.
pub const TPU: &str = ray_api::constants::TPU_RAY_RESOURCE;

/// A set of named logical resource amounts (a node's capacity or a demand bundle).
///
/// Zero amounts are never stored, so two sets with the same non-zero amounts compare equal.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ResourceSet {
    units: BTreeMap<String, u64>,
}

/// Convert a float amount to fixed-point units (negative, NaN -> 0; saturating).
fn to_units(amount: f64) -> u64 {
    if amount.is_nan() || amount <= 0.0 {
        return 0;
    }
    let scaled = (amount * RESOURCE_UNIT_SCALING as f64).round();
    if scaled >= u64::MAX as f64 {
        u64::MAX
    } else {
        scaled as u64
    }
}

impl ResourceSet {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// Builder: this set plus `amount` of `name` (replacing any previous amount).
    pub fn with(mut self, name: impl Into<String>, amount: f64) -> Self {
        self.set(name, amount);
        self
    }

    /// Set `name` to `amount` (whole units, fractional allowed down to 1/10000); 0 removes it.
    pub fn set(&mut self, name: impl Into<String>, amount: f64) {
        self.set_units(name, to_units(amount));
    }

    /// Set `name` to an exact fixed-point amount (1/10000 units); 0 removes it.
    pub fn set_units(&mut self, name: impl Into<String>, units: u64) {
        let name = name.into();
        if units == 0 {
            self.units.remove(&name);
        } else {
            self.units.insert(name, units);
        }
    }

    /// The amount of `name` as a float (0 when absent).
    pub fn get(&self, name: &str) -> f64 {
        self.units(name) as f64 / RESOURCE_UNIT_SCALING as f64
    }

    /// The exact fixed-point amount of `name` (0 when absent).
    pub fn units(&self, name: &str) -> u64 {
        self.units.get(name).copied().unwrap_or(0)
    }

    /// No resource has a non-zero amount.
    pub fn is_empty(&self) -> bool {
        self.units.is_empty()
    }

    /// Iterate `(name, fixed-point units)` in name order.
    pub fn iter_units(&self) -> impl Iterator<Item = (&str, u64)> {
        self.units.iter().map(|(k, v)| (k.as_str(), *v))
    }

    /// Number of distinct resources.
    pub fn len(&self) -> usize {
        self.units.len()
    }

    /// Every amount of `demand` is available here.
    pub fn fits(&self, demand: &ResourceSet) -> bool {
        demand.units.iter().all(|(k, v)| self.units(k) >= *v)
    }

    /// Remove `demand` from this set (saturating at 0).
    pub fn subtract(&mut self, demand: &ResourceSet) {
        for (k, v) in &demand.units {
            if let Some(have) = self.units.get_mut(k) {
                *have = have.saturating_sub(*v);
                if *have == 0 {
                    self.units.remove(k);
                }
            }
        }
    }

    /// Add `other` to this set (saturating).
    pub fn add(&mut self, other: &ResourceSet) {
        for (k, v) in &other.units {
            let total = self.units(k).saturating_add(*v);
            self.set_units(k.clone(), total);
        }
    }

    /// Sum of all amounts in fixed-point units (Ray's demand ordering uses this sum).
    pub(crate) fn total_units(&self) -> u128 {
        self.units.values().map(|v| u128::from(*v)).sum()
    }
}

impl fmt::Display for ResourceSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("{")?;
        for (i, (k, v)) in self.units.iter().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{k}: {}", *v as f64 / RESOURCE_UNIT_SCALING as f64)?;
        }
        f.write_str("}")
    }
}

impl<K: Into<String>> FromIterator<(K, f64)> for ResourceSet {
    fn from_iter<I: IntoIterator<Item = (K, f64)>>(iter: I) -> Self {
        let mut set = Self::new();
        for (k, v) in iter {
            set.set(k, v);
        }
        set
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fits_and_subtract_are_exact_for_fractions() {
        let mut node = ResourceSet::new().with(CPU, 1.0);
        let tenth = ResourceSet::new().with(CPU, 0.1);
        for _ in 0..10 {
            assert!(node.fits(&tenth));
            node.subtract(&tenth);
        }
        assert!(node.is_empty());
        assert!(!node.fits(&tenth));
    }

    #[test]
    fn zero_and_negative_amounts_are_not_stored() {
        let set = ResourceSet::new().with(CPU, 0.0).with(GPU, -1.0).with(MEMORY, f64::NAN);
        assert!(set.is_empty());
        assert!(set.fits(&ResourceSet::new()));
        assert_eq!(ResourceSet::new().with(CPU, 2.0).to_string(), "{CPU: 2}");
    }

    #[test]
    fn missing_resource_does_not_fit() {
        let node = ResourceSet::new().with(CPU, 4.0);
        assert!(!node.fits(&ResourceSet::new().with(CPU, 1.0).with(GPU, 1.0)));
        let mut sum = node.clone();
        sum.add(&ResourceSet::new().with(GPU, 1.0));
        assert_eq!(sum, [(CPU, 4.0), (GPU, 1.0)].into_iter().collect());
    }
}
