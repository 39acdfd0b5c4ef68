//! `kubectl ray get node [N] [-c C] [-A]`: the pods of Ray clusters with the first container's requests and
//! the cluster, node type and worker group from their labels.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::ListParams;
use ray_api::constants::{
    RAY_CLUSTER_LABEL, RAY_IS_RAY_NODE_LABEL, RAY_IS_RAY_NODE_VALUE, RAY_NODE_GROUP_LABEL, RAY_NODE_TYPE_LABEL,
};
use ray_api::quantity::parse_resource_list;

use crate::age::age;
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::not_found::not_found_message;
use crate::resources::resource_cells;
use crate::table::Table;

/// Runs the command.
pub async fn run(ctx: &KubeContext, names: &[String], ray_cluster: Option<&str>, all_namespaces: bool) -> Result<()> {
    if names.len() > 1 {
        return Err(PluginError::usage(
            "get node",
            format!("accepts at most 1 arg(s), received {}", names.len()),
        ));
    }
    let node = names.first();
    let api: Api<Pod> = if all_namespaces {
        Api::all(ctx.client.clone())
    } else {
        Api::namespaced(ctx.client.clone(), &ctx.namespace)
    };
    let mut selector = format!("{RAY_IS_RAY_NODE_LABEL}={RAY_IS_RAY_NODE_VALUE}");
    if let Some(cluster) = ray_cluster {
        selector.push_str(&format!(",{RAY_CLUSTER_LABEL}={cluster}"));
    }
    let mut params = ListParams::default().labels(&selector);
    if let Some(node) = node {
        params = params.fields(&format!("metadata.name={node}"));
    }
    let pods = api
        .list(&params)
        .await
        .map_err(|e| failed!("unable to get Ray nodes: {e}"))?;
    if let Some(node) = node
        && pods.items.is_empty()
    {
        let namespace = (!all_namespaces).then_some(ctx.namespace.as_str());
        return Err(failed!(
            "{}",
            not_found_message(&format!("Ray node {node}"), namespace, ray_cluster)
        ));
    }
    print!("{}", render(&pods.items, all_namespaces, jiff::Timestamp::now())?);
    Ok(())
}

/// The table of `pods` at `now`, with a NAMESPACE column first when listing all namespaces.
pub fn render(pods: &[Pod], all_namespaces: bool, now: jiff::Timestamp) -> Result<String> {
    let mut headers = vec![
        "name",
        "cpus",
        "gpus",
        "tpus",
        "memory",
        "cluster",
        "type",
        "worker group",
        "age",
    ];
    if all_namespaces {
        headers.insert(0, "namespace");
    }
    let mut table = Table::new(&headers);
    for pod in pods {
        let name = pod.metadata.name.clone().unwrap_or_default();
        let requests = pod
            .spec
            .as_ref()
            .and_then(|s| s.containers.first())
            .and_then(|c| c.resources.as_ref())
            .and_then(|r| r.requests.clone())
            .unwrap_or_default();
        let totals = parse_resource_list(&requests).map_err(|e| failed!("pod {name}: {e}"))?;
        let label = |key: &str| {
            pod.metadata
                .labels
                .as_ref()
                .and_then(|l| l.get(key))
                .cloned()
                .unwrap_or_default()
        };
        let [cpus, gpus, tpus, memory] = resource_cells(&totals);
        let mut cells = vec![
            name.clone(),
            cpus,
            gpus,
            tpus,
            memory,
            label(RAY_CLUSTER_LABEL),
            label(RAY_NODE_TYPE_LABEL),
            label(RAY_NODE_GROUP_LABEL),
            age(pod.metadata.creation_timestamp.as_ref(), now),
        ];
        if all_namespaces {
            cells.insert(0, pod.metadata.namespace.clone().unwrap_or_default());
        }
        table.push(cells);
    }
    Ok(table.render())
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    #[test]
    fn nodes_show_the_first_containers_requests_and_their_labels() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "c-head-x", "namespace": "ns", "creationTimestamp": "2026-01-01T00:00:00Z",
                         "labels": {"ray.io/cluster": "c", "ray.io/node-type": "head", "ray.io/group": "headgroup"}},
            "spec": {"containers": [
                {"name": "ray-head", "resources": {"requests": {"cpu": "2", "memory": "4Gi"}, "limits": {"nvidia.com/gpu": "1"}}},
                {"name": "sidecar", "resources": {"requests": {"cpu": "1"}}}
            ]}
        }))
        .unwrap();
        let now: jiff::Timestamp = "2026-01-01T01:00:00Z".parse().unwrap();
        let text = render(&[pod], true, now).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>().join(" "),
            "NAMESPACE NAME CPUS GPUS TPUS MEMORY CLUSTER TYPE WORKER GROUP AGE"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            ["ns", "c-head-x", "2", "0", "0", "4Gi", "c", "head", "headgroup", "60m"]
        );
    }
}
