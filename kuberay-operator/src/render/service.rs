//! What the operator creates for one RayService on an empty cluster: its pending RayCluster, then
//! the RayService's head service and serve service pointing at it.

use ray_api::RayService;
use ray_podgen::rayservice::{build_ray_cluster_for_service, ray_cluster_name_for_service};
use ray_podgen::service::{ServeServiceOwner, build_rayservice_head_service, build_serve_service};
use serde_json::Value;

use super::RenderSettings;
use super::input::{InputError, Origin};

/// The RayService's children, in creation order.
pub fn render_service(
    origin: &Origin,
    service: &RayService,
    settings: &mut RenderSettings,
) -> Result<Vec<Value>, InputError> {
    let name = service.metadata.name.clone().unwrap_or_default();
    let namespace = service.metadata.namespace.clone().unwrap_or_default();
    let fail = |e: &dyn std::fmt::Display| origin.render_error("RayService", &name, e);
    let config = &settings.podgen;
    let cluster_name = ray_cluster_name_for_service(service, &mut settings.suffixes);
    let cluster = build_ray_cluster_for_service(service, &cluster_name, config).map_err(|e| fail(&e))?;
    let head = build_rayservice_head_service(&name, &namespace, &cluster, config).map_err(|e| fail(&e))?;
    let serve = build_serve_service(
        &cluster,
        ServeServiceOwner::RayService {
            name: &name,
            namespace: &namespace,
            custom: service.spec.serve_service.as_ref().map(|s| &s.object),
            service_type: service.spec.ray_cluster_config.head_group_spec.service_type.as_deref(),
        },
    )
    .map_err(|e| fail(&e))?;
    Ok(vec![
        serde_json::to_value(&cluster).map_err(|e| fail(&e))?,
        serde_json::to_value(&head).map_err(|e| fail(&e))?,
        serde_json::to_value(&serve).map_err(|e| fail(&e))?,
    ])
}
