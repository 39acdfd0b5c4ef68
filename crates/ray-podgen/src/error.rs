//! Errors of object generation.

/// Why an object could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodGenError {
    /// A `--feature-gates` value KubeRay would refuse (message as Kubernetes prints it).
    #[error("{0}")]
    FeatureGate(String),
    /// A pod template without containers (the Ray container must be `containers[0]`).
    #[error("{group} pod template has no containers; the Ray container must be containers[0]")]
    MissingRayContainer {
        /// `headgroup` or the worker group name.
        group: String,
    },
    /// A worker group index beyond `workerGroupSpecs`.
    #[error("worker group index {0} is out of range")]
    NoSuchWorkerGroup(usize),
    /// A feature this crate does not generate yet (see docs/podgen.md).
    #[error("{0} is not supported by ray-podgen yet")]
    Unsupported(&'static str),
    /// The head service would have no ports.
    #[error("ray head service does not have any ports set up. Please check the Ray container ports")]
    NoHeadServicePorts,
    /// A serve service without serving ports (KubeRay's message).
    #[error(
        "Please specify a port named 'serve' (or with the prefix 'serve-', e.g. 'serve-grpc') in the Ray head container; otherwise, the Kubernetes service for Ray Serve will not be created."
    )]
    NoServePort,
    /// The RayJob submitter command cannot be built (message as KubeRay gives it).
    #[error("{0}")]
    SubmitCommand(String),
    /// The object has no `metadata.name`.
    #[error("{kind} has no metadata.name")]
    MissingName {
        /// Kind of the object.
        kind: &'static str,
    },
}
