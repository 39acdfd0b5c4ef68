//! Deterministic generation of the Kubernetes objects a Ray cluster is made of: pods, services,
//! the autoscaler sidecar and its RBAC, from a RayCluster spec. Pure: same input, byte-identical output.
//! The rules are described in `docs/podgen.md`.
//!
//! # Entry points
//! * [`PodGenerator`]: head and worker pods (labels, `ray start`, environment, probes, volumes, init
//!   containers, the autoscaler sidecar, GCS fault tolerance, token auth, mTLS).
//! * [`service`] (head, serve and headless services), [`ingress`] (or the OpenShift [`route`]),
//!   [`autoscaler::build_autoscaler_rbac`], [`gcs_ft`] (PVC, Redis cleanup Job).
//! * [`rayjob`] and [`rayservice`]: what those controllers create; [`names`]: KubeRay's name rules.
//!
//! Operator switches (`ENABLE_*` variables, configuration defaults, feature gates) arrive as one
//! [`PodGenConfig`]; randomness through [`random::SuffixSource`].
//!
//! # Example
//!
//! The head pod, a worker pod and the head service of a small cluster:
//!
//! ```
//! use ray_podgen::{PodGenConfig, PodGenerator, WorkerReplica, service};
//!
//! let cluster: ray_api::RayCluster = ray_api::yaml::from_yaml_str(r#"
//! apiVersion: ray.io/v1
//! kind: RayCluster
//! metadata:
//!   name: raycluster-kuberay
//!   namespace: default
//! spec:
//!   headGroupSpec:
//!     rayStartParams: {}
//!     template:
//!       spec:
//!         containers:
//!         - name: ray-head
//!           image: rayproject/ray:2.46.0
//!           resources:
//!             limits: {cpu: "1", memory: 2Gi}
//!   workerGroupSpecs:
//!   - groupName: workergroup
//!     replicas: 1
//!     minReplicas: 1
//!     maxReplicas: 5
//!     rayStartParams: {}
//!     template:
//!       spec:
//!         containers:
//!         - name: ray-worker
//!           image: rayproject/ray:2.46.0
//! "#)?;
//! let config = PodGenConfig::default(); // KubeRay's defaults: probes and init containers injected
//! let generator = PodGenerator::new(&cluster, &config);
//!
//! let head = generator.head_pod()?;
//! let labels = head.metadata.labels.clone().unwrap_or_default();
//! assert_eq!(labels["ray.io/node-type"], "head");
//! assert_eq!(labels["ray.io/group"], "headgroup");
//! assert_eq!(head.metadata.generate_name.as_deref(), Some("raycluster-kuberay-head-"));
//! let ray = &head.spec.as_ref().expect("a pod spec").containers[0];
//! let command = &ray.args.as_ref().expect("generated args")[0];
//! assert!(command.contains("ray start --head  --block "));
//! assert!(command.contains(" --num-cpus=1 ")); // from the container's CPU limit
//!
//! let worker = generator.worker_pod(0, &WorkerReplica::single(0))?;
//! let init = &worker.spec.as_ref().expect("a pod spec").init_containers.as_ref().expect("init containers")[0];
//! assert_eq!(init.name, "wait-gcs-ready");
//!
//! let head_service = service::build_head_service(&cluster, &config)?;
//! assert_eq!(head_service.metadata.name.as_deref(), Some("raycluster-kuberay-head-svc"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod auth;
pub mod autoscaler;
pub mod cluster;
pub mod config;
pub mod containers;
pub mod env_names;
pub mod error;
pub mod gcs_ft;
pub mod hash;
pub mod ingress;
pub mod names;
pub mod pod;
pub mod probes;
pub mod random;
pub mod rayjob;
pub mod rayservice;
pub mod route;
pub mod service;
pub mod start_params;
pub mod tls;

pub use config::{FeatureGates, PodGenConfig};
pub use error::PodGenError;
pub use pod::{PodGenerator, WorkerPodTemplate, WorkerReplica, build_head_pod, build_worker_pod};

#[cfg(test)]
mod pod_tests;
#[cfg(test)]
mod service_tests;
#[cfg(test)]
mod test_fixtures;
#[cfg(test)]
mod tls_tests;
