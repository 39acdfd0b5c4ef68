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

/// Most worker pods `render` prints for one RayCluster. The schema lets a group ask for 2,147,483,647
/// replicas; rendering them all would hold billions of pods in memory before the first byte is printed.
pub const MAX_RENDERED_WORKER_PODS: i64 = 100_000;

/// The field path of the worker group whose desired pods take the cluster past
/// [`MAX_RENDERED_WORKER_PODS`], and the cluster's total up to and including it.
fn too_many_workers(cluster: &RayCluster) -> Option<(String, i64)> {
    let mut total = 0i64;
    for (index, group) in cluster.spec.worker_group_specs.iter().flatten().enumerate() {
        total = total.saturating_add(desired_pods(&group_replicas(group)));
        if total > MAX_RENDERED_WORKER_PODS {
            return Some((format!("spec.workerGroupSpecs[{index}].replicas"), total));
        }
    }
    None
}

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

    if let Some((field, total)) = too_many_workers(cluster) {
        return Err(fail(&format!(
            "{field}: {total} worker pods or more; render prints at most {MAX_RENDERED_WORKER_PODS} per RayCluster"
        )));
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

#[cfg(test)]
mod tests {
    use super::*;

    fn cluster_with_groups(replicas: &[i32]) -> RayCluster {
        let groups: Vec<Value> = replicas
            .iter()
            .enumerate()
            .map(|(i, r)| {
                serde_json::json!({"groupName": format!("g{i}"), "replicas": r, "minReplicas": 0,
                    "maxReplicas": i32::MAX, "rayStartParams": {}, "template": {"spec": {"containers": []}}})
            })
            .collect();
        serde_json::from_value(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster", "metadata": {"name": "c"},
            "spec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}},
                "workerGroupSpecs": groups}
        }))
        .unwrap()
    }

    #[test]
    fn the_largest_replica_count_is_refused_naming_the_field() {
        assert_eq!(
            too_many_workers(&cluster_with_groups(&[1, i32::MAX])),
            Some(("spec.workerGroupSpecs[1].replicas".to_owned(), 1 + i64::from(i32::MAX)))
        );
        // Many groups add up.
        let many = vec![30; 4_000];
        assert_eq!(
            too_many_workers(&cluster_with_groups(&many)).map(|(field, _)| field),
            Some("spec.workerGroupSpecs[3333].replicas".to_owned())
        );
        assert_eq!(too_many_workers(&cluster_with_groups(&[100_000])), None);
    }
}
