//! The NetworkPolicy controller (gate `RayClusterNetworkPolicy`; behaviour: `docs/networkpolicy.md`): for a
//! RayCluster with `spec.networkPolicy`, a `networking.k8s.io/v1` NetworkPolicy for the head and one per
//! worker group, owned by the cluster (deleted with it), kept converged, and stale ones removed.
//!
//! Layout: [`plan`] (pure: the desired policies, update and stale decisions, event reasons) and
//! [`controller`] (the kube-runtime controller and its executor).

pub mod controller;
pub mod plan;
