//! What the operator creates for one RayCluster on an empty cluster, in its reconcile order
//! (the RayCluster controller's order): autoscaler RBAC, ingress (or OpenShift route), head service, headless
//! worker service, serve service, GCS storage PVC, the PodGroup, then the head pod and the worker pods.

use k8s_openapi::api::core::v1::Pod;
use ray_api::RayCluster;
use ray_api::constants::HEAD_GROUP_NAME;
use ray_autoscale::from_api::group_replicas;
use ray_autoscale::replicas::{desired_pods, desired_replica_groups};
use ray_gang::parent::Parent;
use ray_podgen::random::suffixed_name;
use ray_podgen::{PodGenerator, WorkerReplica, autoscaler, gcs_ft, ingress, route, service};
use serde::Serialize;
use serde_json::Value;

use super::RenderSettings;
use super::input::{InputError, Origin};

/// The RayCluster's children, in creation order.
pub fn render_cluster(
    origin: &Origin,
    cluster: &RayCluster,
    settings: &mut RenderSettings,
) -> Result<Vec<Value>, InputError> {
    let name = cluster.metadata.name.clone().unwrap_or_default();
    let fail = |e: &dyn std::fmt::Display| origin.render_error("RayCluster", &name, e);
    let config = &settings.podgen;
    let mut items = Vec::new();

    if let Some(rbac) = autoscaler::build_autoscaler_rbac(cluster) {
        if let Some(account) = &rbac.service_account {
            items.push(to_json(account).map_err(|e| fail(&e))?);
        }
        items.push(to_json(&rbac.role).map_err(|e| fail(&e))?);
        items.push(to_json(&rbac.role_binding).map_err(|e| fail(&e))?);
    }
    if ingress::ingress_enabled(cluster) {
        // On OpenShift the Route replaces the Ingress (same place in the order).
        let exposure = if settings.use_openshift_route {
            to_json(&route::build_route(cluster))
        } else {
            to_json(&ingress::build_ingress(cluster))
        };
        items.push(exposure.map_err(|e| fail(&e))?);
    }
    items.push(to_json(&service::build_head_service(cluster, config).map_err(|e| fail(&e))?).map_err(|e| fail(&e))?);
    if service::needs_headless_service(cluster) {
        items.push(to_json(&service::build_headless_service(cluster)).map_err(|e| fail(&e))?);
    }
    if serve_service_enabled(cluster) {
        let serve =
            service::build_serve_service(cluster, service::ServeServiceOwner::RayCluster).map_err(|e| fail(&e))?;
        items.push(to_json(&serve).map_err(|e| fail(&e))?);
    }
    if let Some(pvc) = gcs_ft::build_gcs_storage_pvc(cluster) {
        items.push(to_json(&pvc).map_err(|e| fail(&e))?);
    }
    if let Some(pod_group) = settings
        .scheduler
        .pod_group_for_cluster(cluster)
        .map_err(|e| fail(&e))?
    {
        items.push(pod_group.to_json());
    }
    if cluster.spec.suspend == Some(true) {
        // A suspended cluster has its services but no pods.
        return Ok(items);
    }

    let generator = PodGenerator::new(cluster, config);
    let mut head = generator.head_pod().map_err(|e| fail(&e))?;
    settings
        .scheduler
        .decorate_pod(Parent::Cluster(cluster), &mut head, HEAD_GROUP_NAME);
    items.push(to_json(&head).map_err(|e| fail(&e))?);

    for (group_index, group) in cluster.spec.worker_group_specs.iter().flatten().enumerate() {
        let template = generator.worker_template(group_index).map_err(|e| fail(&e))?;
        let replicas = group_replicas(group);
        let mut pods: Vec<Pod> = Vec::new();
        if replicas.num_of_hosts > 1 {
            // Multi-host groups are created a whole replica at a time, its hosts sharing one name.
            for replica_index in 0..desired_replica_groups(&replicas) {
                let replica_name = suffixed_name(&group.group_name, &mut settings.suffixes);
                for host_index in 0..replicas.num_of_hosts {
                    pods.push(template.pod(&WorkerReplica {
                        replica_index: u32::try_from(replica_index).unwrap_or(u32::MAX),
                        replica_name: Some(&replica_name),
                        host_index: u32::try_from(host_index).unwrap_or(u32::MAX),
                    }));
                }
            }
        } else {
            for replica_index in 0..desired_pods(&replicas) {
                pods.push(template.pod(&WorkerReplica::single(u32::try_from(replica_index).unwrap_or(u32::MAX))));
            }
        }
        for mut pod in pods {
            settings
                .scheduler
                .decorate_pod(Parent::Cluster(cluster), &mut pod, &group.group_name);
            items.push(to_json(&pod).map_err(|e| fail(&e))?);
        }
    }
    Ok(items)
}

/// `ray.io/enable-serve-service: "true"` on the RayCluster.
fn serve_service_enabled(cluster: &RayCluster) -> bool {
    cluster
        .metadata
        .annotations
        .as_ref()
        .and_then(|a| a.get(ray_api::constants::ENABLE_SERVE_SERVICE_ANNOTATION))
        .is_some_and(|v| v == ray_api::constants::ENABLE_SERVE_SERVICE_TRUE)
}

fn to_json(object: &impl Serialize) -> Result<Value, serde_json::Error> {
    serde_json::to_value(object)
}
