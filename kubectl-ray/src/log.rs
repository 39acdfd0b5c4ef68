//! `kubectl ray log ARG`: downloads the logs of a Ray cluster's nodes (the head's and workers' container logs,
//! and each node's Ray log directory), or with `--link gke` prints a Cloud Logging query for them.

use std::path::{Path, PathBuf};

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{AttachParams, ListParams, LogParams};
use ray_api::constants::{
    NODE_TYPE_HEAD, NODE_TYPE_WORKER, RAY_CLUSTER_LABEL, RAY_IS_RAY_NODE_LABEL, RAY_IS_RAY_NODE_VALUE,
    RAY_NODE_TYPE_LABEL,
};
use ray_api::{RayJob, RayService};
use tokio::io::AsyncReadExt;

use crate::cli::LogArgs;
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::resource_ref::{RayKind, TypeCase, parse};

/// Ray's log directory of the latest session inside a node.
pub const RAY_SESSION_LOG_DIR: &str = "/tmp/ray/session_latest/logs/";
/// The file each node's container log is written to.
pub const STDOUT_LOG_FILE: &str = "stdout.log";

/// Which nodes to read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NodeSelection {
    /// Head and workers.
    All,
    /// The head only.
    Head,
    /// The workers only.
    Worker,
}

impl NodeSelection {
    /// Reads `--node-type`.
    pub fn parse(value: &str) -> Result<Self> {
        match value.to_lowercase().as_str() {
            "all" => Ok(NodeSelection::All),
            "head" => Ok(NodeSelection::Head),
            "worker" => Ok(NodeSelection::Worker),
            _ => Err(failed!(
                "unknown node type `{value}`; must be one of all, head or worker"
            )),
        }
    }

    /// The line announcing what will be read.
    pub fn announcement(self) -> &'static str {
        match self {
            NodeSelection::All => "Command set to retrieve both head and worker node logs.",
            NodeSelection::Head => "Command set to retrieve only head node logs.",
            NodeSelection::Worker => "Command set to retrieve only worker node logs.",
        }
    }

    /// The node-type label value, if restricted.
    fn node_type(self) -> Option<&'static str> {
        match self {
            NodeSelection::All => None,
            NodeSelection::Head => Some(NODE_TYPE_HEAD),
            NodeSelection::Worker => Some(NODE_TYPE_WORKER),
        }
    }
}

/// Runs the command.
pub async fn run(ctx: &KubeContext, args: &LogArgs) -> Result<()> {
    let [arg] = args.targets.as_slice() else {
        return Err(PluginError::usage(
            "log",
            format!("accepts 1 arg, received {}", args.targets.len()),
        ));
    };
    let target = parse(arg, TypeCase::Insensitive).map_err(|e| PluginError::usage("log", e.to_string()))?;
    let selection = NodeSelection::parse(&args.node_type)?;
    if let Some(link) = &args.link
        && link != "gke"
    {
        return Err(failed!("unsupported link type \"{link}\", only \"gke\" is supported"));
    }
    if args.link.is_some() && args.out_dir.is_some() {
        return Err(failed!("--out-dir is incompatible with --link"));
    }
    println!("{}", selection.announcement());
    let cluster = cluster_name(ctx, target.kind, &target.name).await?;
    if args.link.is_some() {
        println!(
            "{}",
            gke_link(ctx.context_name.as_deref(), &ctx.namespace, &cluster, selection)
        );
        return Ok(());
    }
    let (out_dir, created) = match &args.out_dir {
        Some(dir) => {
            if !dir.is_dir() {
                return Err(failed!(
                    "Path is not a directory. Please input a directory and try again"
                ));
            }
            (dir.clone(), false)
        }
        None => {
            let dir = PathBuf::from(&target.name);
            let existed = dir.exists();
            std::fs::create_dir_all(&dir).map_err(|e| failed!("unable to create {}: {e}", dir.display()))?;
            (dir, !existed)
        }
    };
    let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
    let mut selector = format!("{RAY_CLUSTER_LABEL}={cluster}");
    if let Some(node_type) = selection.node_type() {
        selector.push_str(&format!(",{RAY_NODE_TYPE_LABEL}={node_type}"));
    }
    let listed = pods
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| failed!("failed to retrieve the pods of Ray cluster {cluster}: {e}"))?;
    if listed.items.is_empty() {
        if created {
            let _ = std::fs::remove_dir(&out_dir);
        }
        return Err(failed!("No Ray nodes found for resource {cluster}"));
    }
    for pod in &listed.items {
        download_node(&pods, pod, &out_dir).await?;
    }
    Ok(())
}

/// The Ray cluster behind a RayCluster, RayJob or RayService.
async fn cluster_name(ctx: &KubeContext, kind: RayKind, name: &str) -> Result<String> {
    let client = ctx.client.clone();
    let ns = &ctx.namespace;
    match kind {
        RayKind::Cluster => Ok(name.to_string()),
        RayKind::Job => {
            let job = Api::<RayJob>::namespaced(client, ns)
                .get(name)
                .await
                .map_err(|e| failed!("failed to retrieve Ray job info for {name}: {e}"))?;
            job.status
                .and_then(|s| s.ray_cluster_name)
                .ok_or_else(|| failed!("No Ray nodes found for resource {name}"))
        }
        RayKind::Service => {
            let service = Api::<RayService>::namespaced(client, ns)
                .get(name)
                .await
                .map_err(|e| failed!("failed to retrieve Ray service info for {name}: {e}"))?;
            service
                .status
                .and_then(|s| s.active_service_status)
                .and_then(|s| s.ray_cluster_name)
                .ok_or_else(|| failed!("No Ray nodes found for resource {name}"))
        }
    }
}

/// Writes one node's container log and untars its Ray log directory into `<out>/<pod>/`.
async fn download_node(pods: &Api<Pod>, pod: &Pod, out_dir: &Path) -> Result<()> {
    let name = pod.metadata.name.clone().unwrap_or_default();
    let dir = out_dir.join(&name);
    std::fs::create_dir_all(&dir).map_err(|e| failed!("unable to create {}: {e}", dir.display()))?;
    let container = pod
        .spec
        .as_ref()
        .and_then(|s| s.containers.first())
        .map(|c| c.name.clone());
    let log = pods
        .logs(
            &name,
            &LogParams {
                container,
                ..Default::default()
            },
        )
        .await
        .map_err(|e| failed!("failed to get the logs of pod {name}: {e}"))?;
    let log_path = dir.join(STDOUT_LOG_FILE);
    std::fs::write(&log_path, log).map_err(|e| failed!("unable to write {}: {e}", log_path.display()))?;
    let command = [
        "tar",
        "--warning=no-file-changed",
        "-cf",
        "-",
        "-C",
        RAY_SESSION_LOG_DIR,
        ".",
    ];
    let mut attached = pods
        .exec(&name, command, &AttachParams::default().stdout(true).stderr(false))
        .await
        .map_err(|e| failed!("failed to read the Ray logs of pod {name}: {e}"))?;
    let mut archive = Vec::new();
    if let Some(mut stdout) = attached.stdout() {
        stdout
            .read_to_end(&mut archive)
            .await
            .map_err(|e| failed!("failed to read the Ray logs of pod {name}: {e}"))?;
    }
    let _ = attached.join().await;
    untar(&archive, &dir).await
}

/// Unpacks a tar archive into `dir` with the local `tar`, which refuses members that would escape it.
async fn untar(archive: &[u8], dir: &Path) -> Result<()> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("tar")
        .arg("-xf")
        .arg("-")
        .arg("-C")
        .arg(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .map_err(|e| failed!("failed to run tar: {e}"))?;
    if let Some(mut stdin) = child.stdin.take() {
        stdin
            .write_all(archive)
            .await
            .map_err(|e| failed!("failed to unpack the Ray logs: {e}"))?;
    }
    let status = child.wait().await.map_err(|e| failed!("failed to run tar: {e}"))?;
    if !status.success() {
        return Err(failed!(
            "failed to unpack the Ray logs into {}: tar exited with {status}",
            dir.display()
        ));
    }
    Ok(())
}

/// The Cloud Logging link for a cluster's node logs.
pub fn gke_link(context: Option<&str>, namespace: &str, cluster: &str, selection: NodeSelection) -> String {
    // Cloud Logging shows a pod label `a.b/c` as `k8s-pod/a_b/c`.
    let label = |key: &str| format!("labels.\"k8s-pod/{}\"", key.replace('.', "_"));
    let node_filter = match selection.node_type() {
        Some(node_type) => format!("{}=\"{node_type}\"", label(RAY_NODE_TYPE_LABEL)),
        None => format!("{}=\"{RAY_IS_RAY_NODE_VALUE}\"", label(RAY_IS_RAY_NODE_LABEL)),
    };
    let query = format!(
        "resource.type=\"k8s_container\"\nresource.labels.namespace_name=\"{namespace}\"\n{}=\"{cluster}\"\n{node_filter}",
        label(RAY_CLUSTER_LABEL)
    );
    let mut link = format!("https://console.cloud.google.com/logs/query;query={}", escape(&query));
    if let Some(project) = context.and_then(gke_project) {
        link.push_str(&format!("?project={project}"));
    }
    link
}

/// The project of a `gke_<project>_<location>_<cluster>` context.
fn gke_project(context: &str) -> Option<&str> {
    let rest = context.strip_prefix("gke_")?;
    rest.split('_').next().filter(|p| !p.is_empty())
}

/// Percent-escapes a query as Go's `url.QueryEscape` (spaces as `+`).
fn escape(text: &str) -> String {
    let mut out = String::new();
    for b in text.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => out.push(char::from(b)),
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_types_and_their_announcements() {
        assert!(matches!(NodeSelection::parse("HEAD"), Ok(NodeSelection::Head)));
        assert!(NodeSelection::parse("gpu").is_err());
        assert_eq!(
            NodeSelection::All.announcement(),
            "Command set to retrieve both head and worker node logs."
        );
    }

    #[test]
    fn gke_links_escape_the_query_and_name_the_project() {
        let link = gke_link(Some("gke_my-proj_us-central1_c"), "default", "rc", NodeSelection::Head);
        assert!(
            link.starts_with(
                "https://console.cloud.google.com/logs/query;query=resource.type%3D%22k8s_container%22%0A"
            ),
            "{link}"
        );
        assert!(link.contains("k8s-pod%2Fray_io%2Fcluster%22%3D%22rc%22"), "{link}");
        assert!(link.ends_with("?project=my-proj"), "{link}");
        let all = gke_link(Some("kind-x"), "ns", "rc", NodeSelection::All);
        assert!(all.contains("ray_io%2Fis-ray-node%22%3D%22yes%22"), "{all}");
        assert!(!all.contains("project="), "{all}");
    }
}
