//! `kubectl ray get workergroup [G] [-c C] [-A]`: each worker group's bounds, ready/desired replicas,
//! total resources and cluster.

use k8s_openapi::api::core::v1::Pod;
use kube::Api;
use kube::api::{ListParams, ObjectList};
use ray_api::constants::{NODE_TYPE_WORKER, RAY_CLUSTER_LABEL, RAY_NODE_GROUP_LABEL, RAY_NODE_TYPE_LABEL};
use ray_api::quantity::{ResourceTotals, pod_resources, scale_resources};
use ray_api::{RayCluster, WorkerGroupSpec};

use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::not_found::not_found_message;
use crate::resources::resource_cells;
use crate::table::Table;

/// One worker group's row, before rendering.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupRow {
    /// The cluster's namespace.
    pub namespace: String,
    /// The group's name.
    pub name: String,
    /// `minReplicas` (0 when unset).
    pub min: i32,
    /// `maxReplicas` (2147483647 when unset).
    pub max: i32,
    /// Running and Ready worker pods of the group.
    pub ready: usize,
    /// `replicas`.
    pub desired: i32,
    /// The group's total resources.
    pub totals: ResourceTotals,
    /// The Ray cluster.
    pub cluster: String,
}

/// Runs the command.
pub async fn run(ctx: &KubeContext, names: &[String], ray_cluster: Option<&str>, all_namespaces: bool) -> Result<()> {
    if names.len() > 1 {
        return Err(PluginError::usage(
            "get workergroup",
            format!("accepts at most 1 arg(s), received {}", names.len()),
        ));
    }
    let group_filter = names.first().map(String::as_str);
    let clusters = clusters_in_scope(ctx, ray_cluster, all_namespaces).await?;
    let mut rows = Vec::new();
    for cluster in &clusters {
        let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
        let cluster_name = cluster.metadata.name.clone().unwrap_or_default();
        let pods: Api<Pod> = Api::namespaced(ctx.client.clone(), &namespace);
        for group in cluster.spec.worker_group_specs.iter().flatten() {
            if group_filter.is_some_and(|g| g != group.group_name) {
                continue;
            }
            let selector = format!(
                "{RAY_NODE_TYPE_LABEL}={NODE_TYPE_WORKER},{RAY_NODE_GROUP_LABEL}={},{RAY_CLUSTER_LABEL}={cluster_name}",
                group.group_name
            );
            let listed = pods
                .list(&ListParams::default().labels(&selector))
                .await
                .map_err(|e| failed!("unable to get Ray nodes: {e}"))?;
            rows.push(group_row(&namespace, &cluster_name, group, ready_pods(&listed))?);
        }
    }
    if let Some(group) = group_filter
        && rows.is_empty()
    {
        let namespace = (!all_namespaces).then_some(ctx.namespace.as_str());
        return Err(failed!(
            "{}",
            not_found_message(&format!("Ray worker group {group}"), namespace, ray_cluster)
        ));
    }
    print!("{}", render(&rows, all_namespaces));
    Ok(())
}

/// The Ray clusters `-c` and `-A` select.
pub async fn clusters_in_scope(
    ctx: &KubeContext,
    ray_cluster: Option<&str>,
    all_namespaces: bool,
) -> Result<Vec<RayCluster>> {
    if let (Some(name), false) = (ray_cluster, all_namespaces) {
        let api: Api<RayCluster> = Api::namespaced(ctx.client.clone(), &ctx.namespace);
        let cluster = api
            .get(name)
            .await
            .map_err(|e| failed!("unable to get Ray cluster {name} in namespace {}: {e}", ctx.namespace))?;
        return Ok(vec![cluster]);
    }
    let (api, scope): (Api<RayCluster>, String) = if all_namespaces {
        (Api::all(ctx.client.clone()), "all namespaces".into())
    } else {
        (
            Api::namespaced(ctx.client.clone(), &ctx.namespace),
            format!("namespace {}", ctx.namespace),
        )
    };
    let mut params = ListParams::default();
    if let Some(name) = ray_cluster {
        params = params.fields(&format!("metadata.name={name}"));
    }
    let list = api
        .list(&params)
        .await
        .map_err(|e| failed!("unable to list Ray clusters in {scope}: {e}"))?;
    Ok(list.items)
}

/// How many of `pods` are Running with condition Ready true.
fn ready_pods(pods: &ObjectList<Pod>) -> usize {
    pods.items
        .iter()
        .filter(|pod| {
            let status = pod.status.as_ref();
            status.and_then(|s| s.phase.as_deref()) == Some("Running")
                && status
                    .and_then(|s| s.conditions.as_ref())
                    .is_some_and(|cs| cs.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
        })
        .count()
}

/// A group's row: per-pod resources times replicas (zero when the group is suspended; `numOfHosts` is not
/// counted).
pub fn group_row(namespace: &str, cluster: &str, group: &WorkerGroupSpec, ready: usize) -> Result<GroupRow> {
    let desired = group.replicas.unwrap_or(0);
    let per_pod = match &group.template.spec {
        Some(spec) => pod_resources(spec)
            .map_err(|e| failed!("worker group {} of Ray cluster {cluster}: {e}", group.group_name))?,
        None => ResourceTotals::new(),
    };
    let count = if group.suspend.unwrap_or(false) { 0 } else { desired };
    Ok(GroupRow {
        namespace: namespace.to_string(),
        name: group.group_name.clone(),
        min: group.min_replicas.unwrap_or(0),
        max: group.max_replicas.unwrap_or(i32::MAX),
        ready,
        desired,
        totals: scale_resources(&per_pod, i64::from(count)),
        cluster: cluster.to_string(),
    })
}

/// The table of `rows`, with a NAMESPACE column first when listing all namespaces.
pub fn render(rows: &[GroupRow], all_namespaces: bool) -> String {
    let mut headers = vec![
        "name", "min", "max", "replicas", "cpus", "gpus", "tpus", "memory", "cluster",
    ];
    if all_namespaces {
        headers.insert(0, "namespace");
    }
    let mut table = Table::new(&headers);
    for row in rows {
        let [cpus, gpus, tpus, memory] = resource_cells(&row.totals);
        let mut cells = vec![
            row.name.clone(),
            row.min.to_string(),
            row.max.to_string(),
            format!("{}/{}", row.ready, row.desired),
            cpus,
            gpus,
            tpus,
            memory,
            row.cluster.clone(),
        ];
        if all_namespaces {
            cells.insert(0, row.namespace.clone());
        }
        table.push(cells);
    }
    table.render()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn group(json: serde_json::Value) -> WorkerGroupSpec {
        serde_json::from_value(json).unwrap()
    }

    fn container(requests: serde_json::Value, limits: serde_json::Value) -> serde_json::Value {
        serde_json::json!({"name": "ray-worker", "image": "ray",
                           "resources": {"requests": requests, "limits": limits}})
    }

    #[test]
    fn totals_are_per_pod_resources_times_replicas_with_limits_filling_gaps() {
        let g = group(serde_json::json!({
            "groupName": "gpu", "replicas": 3, "minReplicas": 1, "numOfHosts": 2,
            "template": {"spec": {"containers": [
                container(serde_json::json!({"cpu": "2", "memory": "4Gi"}), serde_json::json!({"nvidia.com/gpu": "1"})),
                container(serde_json::json!({"cpu": "500m"}), serde_json::json!({}))
            ]}}
        }));
        let row = group_row("ns", "c", &g, 2).unwrap();
        let text = render(&[row], false);
        let cells: Vec<&str> = text.lines().nth(1).unwrap().split_whitespace().collect();
        assert_eq!(cells, ["gpu", "1", "2147483647", "2/3", "7500m", "3", "0", "12Gi", "c"]);
    }

    #[test]
    fn a_suspended_group_counts_no_resources_and_all_namespaces_adds_a_column() {
        let g = group(serde_json::json!({
            "groupName": "small", "replicas": 2, "maxReplicas": 5, "suspend": true,
            "template": {"spec": {"containers": [container(serde_json::json!({"cpu": "1"}), serde_json::json!({}))]}}
        }));
        let text = render(&[group_row("ns", "c", &g, 0).unwrap()], true);
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].starts_with("NAMESPACE"), "{text}");
        let cells: Vec<&str> = lines[1].split_whitespace().collect();
        assert_eq!(cells, ["ns", "small", "0", "5", "0/2", "0", "0", "0", "0", "c"]);
    }
}
