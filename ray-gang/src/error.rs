//! Errors of the gang-scheduling hooks and of scheduler selection; the texts are KubeRay's.

use ray_api::quantity::QuantityError;

use crate::constants::VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL;

/// Why a scheduler object could not be computed.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum GangError {
    /// A resource quantity in a pod template could not be parsed.
    #[error(transparent)]
    Quantity(#[from] QuantityError),
    /// Volcano gang scheduling of a RayJob that uses `clusterSelector` (no `rayClusterSpec`).
    #[error("gang scheduling does not support RayJob {namespace}/{name} referencing an existing RayCluster")]
    JobWithExistingCluster {
        /// The RayJob's namespace.
        namespace: String,
        /// The RayJob's name.
        name: String,
    },
    /// The Volcano highest-tier label is not an integer.
    #[error(
        "failed to convert {} label to int: strconv.Atoi: parsing {value:?}: {reason} for podgroup {pod_group} in namespace {namespace}",
        VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL
    )]
    HighestTierNotInt {
        /// The label's value.
        value: String,
        /// Go's parse failure reason (`invalid syntax` / `value out of range`).
        reason: &'static str,
        /// The PodGroup being built.
        pod_group: String,
        /// Its namespace.
        namespace: String,
    },
    /// scheduler-plugins was handed a RayJob.
    #[error("currently only RayCluster is supported, got *v1.RayJob")]
    SchedulerPluginsRayJob,
    /// KAI was handed a RayJob in `K8sJobMode`.
    #[error(
        "KAI-Scheduler does not support RayJob with K8sJobMode: the submitter pod is created after RayCluster is ready, preventing proper gang scheduling"
    )]
    KaiK8sJobMode,
}

/// Why the operator's batch-scheduler configuration is rejected.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum SelectionError {
    /// The KubernetesWAS gate was combined with a batch-scheduler flag.
    #[error("the KubernetesWAS feature gate cannot be combined with --batch-scheduler or --enable-batch-scheduler")]
    WasGateCombined,
    /// Both the deprecated and the new flag are set.
    #[error(
        "both feature flags enable-batch-scheduler (deprecated) and batch-scheduler are set. Please use batch-scheduler only"
    )]
    BothFlags,
    /// Startup validation: unknown scheduler name.
    #[error("scheduler is not supported, name={name}")]
    Unsupported {
        /// The rejected name.
        name: String,
    },
    /// Factory selection: unknown scheduler name (note the leading "the").
    #[error("the scheduler is not supported, name={name}")]
    FactoryUnsupported {
        /// The rejected name.
        name: String,
    },
    /// The `KubernetesWAS` gate selects a plugin this crate does not implement (Rust-only error).
    #[error("the KubernetesWAS batch scheduler is not implemented")]
    KubernetesWasUnimplemented,
}
