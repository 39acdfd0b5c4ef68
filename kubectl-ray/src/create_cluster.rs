//! `kubectl ray create cluster NAME`: generates a RayCluster from the flags, prints it (`--dry-run`) or applies
//! it server-side, and with `--wait` waits until it is provisioned.

use std::time::Duration;

use kube::Api;
use kube::api::{ObjectMeta, Patch, PatchParams};
use ray_api::{ClusterState, RayCluster};
use ray_reconcile::conditions::{RAY_CLUSTER_PROVISIONED, TRUE};

use crate::cli::{CreateClusterArgs, merged};
use crate::cluster_spec::{
    ClusterShape, DEFAULT_GROUP_NAME, ExtraResourceFlags, WorkerGroupShape, check_tpu_group, effective_image,
    node_resources, parse_autoscaler,
};
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;

/// The field manager of the plugin's server-side applies.
pub const FIELD_MANAGER: &str = "ray-kubectl-plugin";
/// How often `--wait` looks at the cluster.
const WAIT_POLL: Duration = Duration::from_secs(1);

/// Runs the command.
pub async fn run(ctx: &KubeContext, args: &CreateClusterArgs) -> Result<()> {
    let [name] = args.names.as_slice() else {
        return Err(PluginError::usage("create cluster", "cluster [name]"));
    };
    if args.file.is_some() {
        return Err(failed!(
            "--file is not supported by this version of kubectl ray; use the flags"
        ));
    }
    let shape = shape_from_flags(args)?;
    let timeout = kube_compat::go_duration::parse(&args.timeout)
        .map_err(|e| failed!("invalid argument {:?} for \"--timeout\" flag: {e}", args.timeout))?;
    let cluster = RayCluster {
        metadata: ObjectMeta {
            name: Some(name.clone()),
            namespace: Some(ctx.namespace.clone()),
            labels: non_empty(merged(&args.labels)),
            annotations: non_empty(merged(&args.annotations)),
            ..Default::default()
        },
        spec: shape.spec(),
        status: None,
    };
    if args.dry_run {
        print!("{}", to_yaml(&cluster)?);
        return Ok(());
    }
    let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    if api.get_opt(name).await.ok().flatten().is_some() {
        return Err(failed!(
            "the Ray cluster {name} in namespace {} already exists",
            ctx.namespace
        ));
    }
    api.patch(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Apply(&cluster))
        .await
        .map_err(|e| failed!("failed to create Ray cluster: {e}"))?;
    println!("Created Ray cluster: {name}");
    if args.wait {
        wait_provisioned(&api, name, &ctx.namespace, timeout).await?;
        println!("Ray cluster {name} is provisioned");
    }
    Ok(())
}

/// The cluster the flags describe, after KubeRay's checks.
pub fn shape_from_flags(args: &CreateClusterArgs) -> Result<ClusterShape> {
    let autoscaler = parse_autoscaler(args.autoscaler.as_deref())?;
    let s = &args.shape;
    let (head, worker) = node_resources(
        s,
        ExtraResourceFlags {
            head_ephemeral_storage: &args.head_ephemeral_storage,
            worker_ephemeral_storage: &args.worker_ephemeral_storage,
            worker_tpu: &args.worker_tpu,
        },
    )?;
    let group = WorkerGroupShape {
        name: DEFAULT_GROUP_NAME.to_string(),
        replicas: s.worker_replicas,
        num_of_hosts: args.num_of_hosts,
        resources: worker,
        ray_start_params: merged(&args.worker_ray_start_params),
        node_selector: merged(&s.worker_node_selectors),
    };
    check_tpu_group(&group)?;
    Ok(ClusterShape {
        ray_version: s.ray_version.clone(),
        image: effective_image(&s.image, &s.ray_version),
        head,
        head_ray_start_params: merged(&args.head_ray_start_params),
        head_node_selector: merged(&s.head_node_selectors),
        worker_groups: vec![group],
        autoscaler,
    })
}

/// `None` for an empty map, so the generated object leaves the field out.
fn non_empty(map: std::collections::BTreeMap<String, String>) -> Option<std::collections::BTreeMap<String, String>> {
    (!map.is_empty()).then_some(map)
}

/// An object as YAML.
pub fn to_yaml<T: serde::Serialize>(object: &T) -> Result<String> {
    serde_saphyr::to_string(object).map_err(|e| failed!("failed to print YAML: {e}"))
}

/// Polls the cluster until it is provisioned (condition `RayClusterProvisioned` or state `ready`).
async fn wait_provisioned(api: &Api<RayCluster>, name: &str, namespace: &str, timeout: Duration) -> Result<()> {
    let provisioned = async {
        loop {
            if let Ok(cluster) = api.get(name).await
                && is_provisioned(&cluster)
            {
                return;
            }
            tokio::time::sleep(WAIT_POLL).await;
        }
    };
    tokio::time::timeout(timeout, provisioned)
        .await
        .map_err(|_| failed!("timed out waiting for Ray cluster {name} in namespace {namespace} to be provisioned"))
}

/// Whether a cluster counts as provisioned.
pub fn is_provisioned(cluster: &RayCluster) -> bool {
    let Some(status) = &cluster.status else {
        return false;
    };
    status.state == Some(ClusterState::Ready)
        || status
            .conditions
            .iter()
            .flatten()
            .any(|c| c.type_ == RAY_CLUSTER_PROVISIONED && c.status == TRUE)
}
