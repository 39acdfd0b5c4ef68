//! KubeRay's `ray.io/v1` API for Rust: the RayCluster, RayJob, RayService and RayCronJob types,
//! their CRD defaults and KubeRay's validation rules.
//!
//! Pure: no I/O, no environment reads. Other controllers can depend on this crate alone.
//!
//! # Entry points
//! * The kinds: [`RayCluster`], [`RayJob`], [`RayService`], [`RayCronJob`] (kube `CustomResource`s with every
//!   field of KubeRay v1.7.0's CRDs); the strings KubeRay uses (labels, annotations, environment variable
//!   names, messages) in [`constants`]; the operator's gates in [`feature_gates`].
//! * Reading manifests: [`yaml`] reads Kubernetes' YAML 1.1 (`0777` is octal); [`strict`] reports each unknown
//!   field by its path, for input a person typed (against a CRD's schema, or against the Rust types).
//! * CRDs and defaults: [`crds::all_crds`] generates the four CRDs; [`defaults::apply_schema_defaults`] fills
//!   in what the API server's schema defaulting would.
//! * Validation: [`validation`] runs KubeRay's rules in KubeRay's order with KubeRay's messages (the rules are
//!   listed in `docs/validation.md`).
//!
//! # Example
//!
//! Read a RayCluster manifest as the API server would store it (schema defaults applied), then validate it:
//!
//! ```
//! use ray_api::validation::{ValidationOptions, validate_ray_cluster};
//! use ray_api::{RayCluster, crds, defaults, yaml};
//!
//! let manifest = r#"
//! apiVersion: ray.io/v1
//! kind: RayCluster
//! metadata:
//!   name: raycluster-kuberay
//! spec:
//!   rayVersion: "2.46.0"
//!   headGroupSpec:
//!     rayStartParams: {}
//!     template:
//!       spec:
//!         containers:
//!         - name: ray-head
//!           image: rayproject/ray:2.46.0
//!   workerGroupSpecs:
//!   - groupName: workergroup
//!     replicas: 1
//!     rayStartParams: {}
//!     template:
//!       spec:
//!         containers:
//!         - name: ray-worker
//!           image: rayproject/ray:2.46.0
//! "#;
//! let mut value: serde_json::Value = yaml::from_yaml_str(manifest)?;
//! let crd = &crds::all_crds()[0]; // RayCluster, RayJob, RayService, RayCronJob
//! defaults::apply_schema_defaults(&mut value, &defaults::crd_schema(crd));
//! let cluster: RayCluster = serde_json::from_value(value)?;
//!
//! // The CRD defaults filled in what the manifest left out.
//! let group = &cluster.spec.worker_group_specs.as_deref().unwrap_or_default()[0];
//! assert_eq!((group.min_replicas, group.max_replicas), (Some(0), Some(2147483647)));
//! assert_eq!(group.num_of_hosts, Some(1));
//!
//! // The sample passes KubeRay's rules with the default feature gates ...
//! let options = ValidationOptions::default();
//! validate_ray_cluster(&cluster, &options)?;
//!
//! // ... and a name longer than 53 characters fails with KubeRay's message.
//! let mut renamed = cluster.clone();
//! renamed.metadata.name = Some("r".repeat(54));
//! let error = validate_ray_cluster(&renamed, &options).unwrap_err();
//! assert_eq!(error.field, "metadata.name");
//! assert_eq!(error.message, "RayCluster name should be no more than 53 characters");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

pub mod constants;
pub mod quantity;

pub mod common;
pub mod crds;
pub mod defaults;
pub mod feature_gates;
pub mod raycluster;
pub mod raycronjob;
pub mod rayjob;
pub mod rayservice;
mod schema_util;
pub mod strict;
mod string_enum;
pub mod validation;
pub mod yaml;

pub use common::*;
pub use raycluster::*;
pub use raycronjob::*;
pub use rayjob::*;
pub use rayservice::*;
