//! Deterministic generation of the Kubernetes objects a Ray cluster is made of: pods, services,
//! the autoscaler sidecar and its RBAC, from a RayCluster spec. Pure: same input, byte-identical output.
