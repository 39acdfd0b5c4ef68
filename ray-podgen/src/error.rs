//! Errors of object generation.

/// Why an object could not be generated.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PodGenError {
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
    /// `spec.runtimeEnvYAML` is not valid YAML (sigs.k8s.io/yaml's `YAMLToJSON` prefix).
    #[error("error converting YAML to JSON: {0}")]
    RuntimeEnvYaml(String),
    /// `rayClusterSpec.rayVersion` is not a semantic version (metadata needs a version check).
    #[error("failed to parse Ray version: {version}: Invalid Semantic Version")]
    RayVersionParse {
        /// The rejected version text.
        version: String,
    },
    /// `spec.metadata` needs Ray 2.6.0 or later.
    #[error("the Ray version must be at least 2.6.0 to use the metadata field")]
    RayVersionTooOldForMetadata,
    /// `BuildJobSubmitCommand` only knows `K8sJobMode` and `SidecarMode`.
    #[error("unsupported submission mode for job submit command: {0}")]
    UnsupportedSubmissionMode(String),
    /// A RayCluster must be built for a RayJob without `spec.rayClusterSpec`.
    #[error("RayJob {0} has no rayClusterSpec to create a RayCluster from")]
    MissingRayClusterSpec(String),
}
