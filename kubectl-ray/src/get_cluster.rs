//! `kubectl ray get cluster [NAME] [-A]`: the Ray clusters of a namespace (or all) with their desired and
//! available workers, resources, first true condition and state.

use kube::Api;
use kube::api::ListParams;
use ray_api::{RayCluster, RayClusterStatus};
use ray_reconcile::conditions::{
    HEAD_POD_READY, RAY_CLUSTER_PROVISIONED, RAY_CLUSTER_SUSPENDED, RAY_CLUSTER_SUSPENDING, REPLICA_FAILURE, TRUE,
};

use crate::age::age;
use crate::error::{PluginError, Result, failed};
use crate::kube_context::KubeContext;
use crate::table::Table;

/// The condition types the CONDITION column looks at, in order: the first true one is shown.
const REPORTED_CONDITIONS: [&str; 5] = [
    RAY_CLUSTER_PROVISIONED,
    HEAD_POD_READY,
    REPLICA_FAILURE,
    RAY_CLUSTER_SUSPENDED,
    RAY_CLUSTER_SUSPENDING,
];

/// The table's columns.
const COLUMNS: [&str; 11] = [
    "name",
    "namespace",
    "desired workers",
    "available workers",
    "cpus",
    "gpus",
    "tpus",
    "memory",
    "condition",
    "status",
    "age",
];

/// Runs the command.
pub async fn run(ctx: &KubeContext, names: &[String], all_namespaces: bool) -> Result<()> {
    if names.len() > 1 {
        return Err(PluginError::usage(
            "get cluster",
            format!("accepts at most 1 arg(s), received {}", names.len()),
        ));
    }
    let name = names.first();
    let api: Api<RayCluster> = if all_namespaces {
        Api::all(ctx.client.clone())
    } else {
        Api::namespaced(ctx.client.clone(), &ctx.namespace)
    };
    let mut params = ListParams::default();
    if let Some(name) = name {
        params = params.fields(&format!("metadata.name={name}"));
    }
    let scope = if all_namespaces {
        "all namespaces".to_string()
    } else {
        format!("namespace {}", ctx.namespace)
    };
    let clusters = api
        .list(&params)
        .await
        .map_err(|e| failed!("unable to retrieve Ray clusters for {scope}: {e}"))?;
    if let Some(name) = name
        && clusters.items.is_empty()
    {
        return Err(if all_namespaces {
            failed!("Ray cluster {name} not found in any namespace")
        } else {
            failed!("Ray cluster {name} not found in namespace {}", ctx.namespace)
        });
    }
    print!("{}", render(&clusters.items, jiff::Timestamp::now()));
    Ok(())
}

/// The table of `clusters` at `now`.
pub fn render(clusters: &[RayCluster], now: jiff::Timestamp) -> String {
    let mut table = Table::new(&COLUMNS);
    let empty = RayClusterStatus::default();
    for cluster in clusters {
        let status = cluster.status.as_ref().unwrap_or(&empty);
        let quantity = |q: &Option<k8s_openapi::apimachinery::pkg::api::resource::Quantity>| {
            q.as_ref().map_or_else(|| "0".to_string(), |q| q.0.clone())
        };
        table.push(vec![
            cluster.metadata.name.clone().unwrap_or_default(),
            cluster.metadata.namespace.clone().unwrap_or_default(),
            status.desired_worker_replicas.unwrap_or(0).to_string(),
            status.available_worker_replicas.unwrap_or(0).to_string(),
            quantity(&status.desired_cpu),
            quantity(&status.desired_gpu),
            quantity(&status.desired_tpu),
            quantity(&status.desired_memory),
            condition_cell(status),
            status.state.as_ref().map(|s| s.to_string()).unwrap_or_default(),
            age(cluster.metadata.creation_timestamp.as_ref(), now),
        ]);
    }
    table.render()
}

/// The type of the first reported condition that is true, or blank.
fn condition_cell(status: &RayClusterStatus) -> String {
    let conditions = status.conditions.as_deref().unwrap_or_default();
    REPORTED_CONDITIONS
        .iter()
        .find(|wanted| conditions.iter().any(|c| c.type_ == **wanted && c.status == TRUE))
        .map(|t| t.to_string())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;

    fn cluster(json: serde_json::Value) -> RayCluster {
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn the_table_shows_status_counts_resources_condition_and_state() {
        let c = cluster(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "raycluster-kuberay", "namespace": "default",
                         "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}},
            "status": {"desiredWorkerReplicas": 1, "availableWorkerReplicas": 1, "desiredCPU": "2",
                       "desiredMemory": "6Gi", "desiredGPU": "0", "desiredTPU": "0", "state": "ready",
                       "conditions": [
                           {"type": "HeadPodReady", "status": "True", "reason": "r", "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"},
                           {"type": "RayClusterProvisioned", "status": "True", "reason": "r", "message": "",
                            "lastTransitionTime": "2026-01-01T00:00:00Z"}]}
        }));
        let now: jiff::Timestamp = "2026-01-01T00:00:45Z".parse().unwrap();
        let text = render(&[c], now);
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(
            lines[0].split_whitespace().collect::<Vec<_>>().join(" "),
            "NAME NAMESPACE DESIRED WORKERS AVAILABLE WORKERS CPUS GPUS TPUS MEMORY CONDITION STATUS AGE"
        );
        assert_eq!(
            lines[1].split_whitespace().collect::<Vec<_>>(),
            [
                "raycluster-kuberay",
                "default",
                "1",
                "1",
                "2",
                "0",
                "0",
                "6Gi",
                "RayClusterProvisioned",
                "ready",
                "45s"
            ]
        );
    }

    #[test]
    fn a_cluster_without_status_shows_zeros_and_blanks() {
        let c = cluster(serde_json::json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": "new", "namespace": "ns"},
            "spec": {"headGroupSpec": {"template": {"spec": {"containers": []}}}}
        }));
        let text = render(&[c], jiff::Timestamp::UNIX_EPOCH);
        assert!(text.lines().nth(1).unwrap().ends_with("<unknown>"), "{text}");
        assert!(text.lines().nth(1).unwrap().contains("0      0"), "{text}");
    }
}
