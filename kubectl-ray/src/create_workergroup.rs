//! `kubectl ray create workergroup NAME -c CLUSTER`: appends a worker group to a Ray cluster and updates it.
//! The group's `ray-worker` container sets CPU and memory in both requests and limits.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec, ResourceRequirements};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use kube::Api;
use kube::api::PostParams;
use ray_api::constants::TPU_CONTAINER_RESOURCE;
use ray_api::{RayCluster, WorkerGroupSpec};

use crate::cli::{CreateWorkerGroupArgs, merged};
use crate::cluster_spec::{NodeResources, WORKER_CONTAINER_NAME, WorkerGroupShape, check_tpu_group};
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::resources::GPU_RESOURCE;

/// Runs the command.
pub async fn run(ctx: &KubeContext, args: &CreateWorkerGroupArgs) -> Result<()> {
    let [name] = args.names.as_slice() else {
        return Err(PluginError::usage("create workergroup", "workergroup [name]"));
    };
    let Some(cluster_name) = args.ray_cluster.as_deref() else {
        return Err(failed!("required flag(s) \"ray-cluster\" not set"));
    };
    let group = group_spec(name, args)?;
    let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut cluster = api
        .get(cluster_name)
        .await
        .map_err(|e| failed!("error getting Ray cluster: {e}"))?;
    cluster.spec.worker_group_specs.get_or_insert_with(Vec::new).push(group);
    api.replace(cluster_name, &PostParams::default(), &cluster)
        .await
        .map_err(|e| failed!("error updating Ray cluster with new worker group: {e}"))?;
    println!(
        "Updated Ray cluster {}/{cluster_name} with new worker group",
        ctx.namespace
    );
    Ok(())
}

/// The group the flags describe. Unlike KubeRay's plugin, a bad quantity is an error naming the flag rather
/// than a crash.
pub fn group_spec(name: &str, args: &CreateWorkerGroupArgs) -> Result<WorkerGroupSpec> {
    let resources = NodeResources::from_flags(
        ("--worker-cpu", &args.worker_cpu),
        ("--worker-memory", &args.worker_memory),
        ("--worker-ephemeral-storage", ""),
        ("--worker-gpu", &args.worker_gpu),
        ("--worker-tpu", &args.worker_tpu),
    )?;
    let shape = WorkerGroupShape {
        name: name.to_string(),
        replicas: args.worker_replicas,
        num_of_hosts: Some(args.num_of_hosts),
        resources,
        ray_start_params: merged(&args.worker_ray_start_params),
        node_selector: merged(&args.worker_node_selectors),
    };
    check_tpu_group(&shape)?;
    let quantity = |q: &Option<ray_api::quantity::Qty>| q.as_ref().map(|q| Quantity(q.to_string()));
    let mut requests = BTreeMap::new();
    let mut limits = BTreeMap::new();
    for (key, value) in [("cpu", &shape.resources.cpu), ("memory", &shape.resources.memory)] {
        if let Some(q) = quantity(value) {
            requests.insert(key.to_string(), q.clone());
            limits.insert(key.to_string(), q);
        }
    }
    for (key, value) in [
        (GPU_RESOURCE, &shape.resources.gpu),
        (TPU_CONTAINER_RESOURCE, &shape.resources.tpu),
    ] {
        if let Some(q) = value.as_ref().filter(|q| !q.is_zero()) {
            requests.insert(key.to_string(), Quantity(q.to_string()));
            limits.insert(key.to_string(), Quantity(q.to_string()));
        }
    }
    let container = Container {
        name: WORKER_CONTAINER_NAME.to_string(),
        image: Some(args.image.clone()),
        resources: Some(ResourceRequirements {
            requests: Some(requests),
            limits: Some(limits),
            ..Default::default()
        }),
        ..Default::default()
    };
    Ok(WorkerGroupSpec {
        group_name: shape.name,
        replicas: Some(shape.replicas),
        min_replicas: Some(args.worker_min_replicas),
        max_replicas: Some(args.worker_max_replicas),
        num_of_hosts: shape.num_of_hosts,
        ray_start_params: Some(shape.ray_start_params),
        template: PodTemplateSpec {
            metadata: None,
            spec: Some(PodSpec {
                containers: vec![container],
                node_selector: (!shape.node_selector.is_empty()).then_some(shape.node_selector),
                ..Default::default()
            }),
        },
        ..Default::default()
    })
}
