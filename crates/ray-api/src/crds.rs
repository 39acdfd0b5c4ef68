//! The four generated CustomResourceDefinitions.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::CustomResourceExt;

use crate::{RayCluster, RayCronJob, RayJob, RayService};

/// The RayCluster, RayJob, RayService and RayCronJob CRDs, in that order.
pub fn all_crds() -> Vec<CustomResourceDefinition> {
    vec![RayCluster::crd(), RayJob::crd(), RayService::crd(), RayCronJob::crd()]
}
