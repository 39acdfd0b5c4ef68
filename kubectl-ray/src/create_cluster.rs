//! `kubectl ray create cluster NAME`: generates a RayCluster from the flags or from a config file (`--file`),
//! prints it (`--dry-run`) or applies it server-side, and with `--wait` waits until it is provisioned.

use std::path::Path;
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
use crate::config_file;
use crate::config_file_shape;
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;

/// The field manager of the plugin's server-side applies.
pub const FIELD_MANAGER: &str = "ray-kubectl-plugin";
/// How often `--wait` looks at the cluster.
const WAIT_POLL: Duration = Duration::from_secs(1);

/// The flags `--file` combines with; any other given flag is an error.
const FLAGS_ALLOWED_WITH_FILE: [&str; 6] = ["context", "dry-run", "file", "namespace", "timeout", "wait"];

/// Runs the command. `namespace_flag` is `-n` as given (it must agree with a config file's namespace);
/// `ctx.namespace` is used when neither it nor the file names one.
pub async fn run(ctx: &KubeContext, args: &CreateClusterArgs, namespace_flag: Option<&str>) -> Result<()> {
    let [name] = args.names.as_slice() else {
        return Err(PluginError::usage("create cluster", "cluster [name]"));
    };
    let timeout = kube_compat::go_duration::parse(&args.timeout)
        .map_err(|e| failed!("invalid argument {:?} for \"--timeout\" flag: {e}", args.timeout))?;
    let cluster = match args.file.as_deref().filter(|path| !path.is_empty()) {
        Some(path) => cluster_from_file(Path::new(path), args, name, namespace_flag, &ctx.namespace)?,
        None => RayCluster {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                namespace: Some(ctx.namespace.clone()),
                labels: non_empty(merged(&args.labels)),
                annotations: non_empty(merged(&args.annotations)),
                ..Default::default()
            },
            spec: shape_from_flags(args)?.spec(),
            status: None,
        },
    };
    let namespace = cluster
        .metadata
        .namespace
        .clone()
        .unwrap_or_else(|| ctx.namespace.clone());
    if args.dry_run {
        print!("{}", to_yaml(&cluster)?);
        return Ok(());
    }
    let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &namespace);
    if api.get_opt(name).await.ok().flatten().is_some() {
        return Err(failed!(
            "the Ray cluster {name} in namespace {namespace} already exists"
        ));
    }
    api.patch(name, &PatchParams::apply(FIELD_MANAGER), &Patch::Apply(&cluster))
        .await
        .map_err(|e| failed!("failed to create Ray cluster: {e}"))?;
    println!("Created Ray cluster: {name}");
    if args.wait {
        wait_provisioned(&api, name, &namespace, timeout).await?;
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
        num_of_hosts: Some(args.num_of_hosts),
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
        service_account: None,
        gcsfuse: None,
    })
}

/// The cluster a config file describes, named `name` and placed in the namespace of `-n`, else the file's,
/// else `context_namespace`. Fails when other flags were given, or when the file's name or namespace (the
/// latter only against an explicit `-n`) disagrees.
fn cluster_from_file(
    path: &Path,
    args: &CreateClusterArgs,
    name: &str,
    namespace_flag: Option<&str>,
    context_namespace: &str,
) -> Result<RayCluster> {
    let incompatible: Vec<&str> = args
        .flags_given
        .iter()
        .map(String::as_str)
        .filter(|flag| !FLAGS_ALLOWED_WITH_FILE.contains(flag))
        .collect();
    if !incompatible.is_empty() {
        return Err(failed!(
            "the following flags are incompatible with --file: [{}]",
            incompatible.join(" ")
        ));
    }
    let config = config_file::read(path).map_err(|e| failed!("failed to parse config file: {e}"))?;
    let (metadata, shape) =
        config_file_shape::resolve(config).map_err(|e| failed!("failed to validate config file: {e}"))?;
    if let Some(file_name) = metadata.name.as_deref()
        && file_name != name
    {
        return Err(failed!(
            "the cluster name in the config file {file_name:?} does not match the cluster name {name:?}. You must \
             use the same name to perform this operation"
        ));
    }
    let namespace_flag = namespace_flag.filter(|n| !n.is_empty());
    if let (Some(file_namespace), Some(flag)) = (metadata.namespace.as_deref(), namespace_flag)
        && file_namespace != flag
    {
        return Err(failed!(
            "the namespace in the config file {file_namespace:?} does not match the namespace {flag:?}. You must \
             pass --namespace={file_namespace} to perform this operation"
        ));
    }
    let namespace = namespace_flag
        .or(metadata.namespace.as_deref())
        .unwrap_or(context_namespace);
    Ok(RayCluster {
        metadata: ObjectMeta {
            name: Some(name.to_string()),
            namespace: Some(namespace.to_string()),
            labels: non_empty(metadata.labels),
            annotations: non_empty(metadata.annotations),
            ..Default::default()
        },
        spec: shape.spec(),
        status: None,
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
