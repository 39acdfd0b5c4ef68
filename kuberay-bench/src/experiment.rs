//! The three experiments of KubeRay's memory benchmark (`shared/bench/README.md`) as step schedules, and the
//! RayCluster template they all use (head + `small-group`, 1 CPU / 1 Gi each, minReplicas 0, maxReplicas 200).

use serde_json::{Value, json};

/// Label on every RayCluster the benchmark creates (value: the experiment number).
pub const EXPERIMENT_LABEL: &str = "kuberay-bench.io/experiment";

/// Worker group name of the template.
pub const GROUP: &str = "small-group";

/// What one step does.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Action {
    /// Create a RayCluster with this many workers.
    Create {
        /// RayCluster name.
        name: String,
        /// `small-group` replicas.
        workers: i32,
    },
    /// Set `small-group` replicas of an existing RayCluster.
    Scale {
        /// RayCluster name.
        name: String,
        /// New `small-group` replicas.
        workers: i32,
    },
}

/// One step of a schedule and the state it converges to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Step {
    /// The change.
    pub action: Action,
    /// RayClusters that exist after the step.
    pub clusters: usize,
    /// Ray pods (heads + workers) that exist after the step.
    pub pods: usize,
}

/// Human description of an experiment, as KubeRay published it.
pub fn describe(experiment: u8) -> &'static str {
    match experiment {
        1 => "create a 1-pod RayCluster (head only) every 20 s until 150 RayClusters",
        2 => "one RayCluster; add 5 worker pods every 60 s until 150 pods",
        3 => "create a 5-pod RayCluster (1 head + 4 workers) every 60 s until 30 RayClusters",
        _ => "unknown experiment",
    }
}

/// KubeRay's wall-clock interval between steps (the benchmark compresses it to "until converged").
pub fn published_interval_secs(experiment: u8) -> u64 {
    if experiment == 1 { 20 } else { 60 }
}

/// Name of the `index`-th RayCluster of an experiment.
pub fn cluster_name(experiment: u8, index: usize) -> String {
    format!("bench-e{experiment}-{index:03}")
}

/// The steps of an experiment (empty for an unknown number).
///
/// Experiment 2 starts with head + 4 workers (5 pods) and adds 5 workers per step, so every step adds 5
/// pods and the 30th step reaches 150, like experiment 3.
pub fn schedule(experiment: u8) -> Vec<Step> {
    match experiment {
        1 => (0..150)
            .map(|i| Step {
                action: Action::Create {
                    name: cluster_name(1, i),
                    workers: 0,
                },
                clusters: i + 1,
                pods: i + 1,
            })
            .collect(),
        2 => (0..30)
            .map(|i| {
                let workers = 5 * (i as i32 + 1) - 1;
                let name = cluster_name(2, 0);
                let action = if i == 0 {
                    Action::Create { name, workers }
                } else {
                    Action::Scale { name, workers }
                };
                Step {
                    action,
                    clusters: 1,
                    pods: 5 * (i + 1),
                }
            })
            .collect(),
        3 => (0..30)
            .map(|i| Step {
                action: Action::Create {
                    name: cluster_name(3, i),
                    workers: 4,
                },
                clusters: i + 1,
                pods: 5 * (i + 1),
            })
            .collect(),
        _ => Vec::new(),
    }
}

fn container(name: &str) -> Value {
    let resources = json!({"cpu": "1", "memory": "1Gi"});
    json!({
        "name": name,
        "image": "rayproject/ray:2.52.0",
        "resources": {"limits": resources, "requests": resources},
    })
}

/// The `small-group` worker group with `workers` replicas.
pub fn worker_group(workers: i32) -> Value {
    json!({
        "groupName": GROUP,
        "replicas": workers,
        "minReplicas": 0,
        "maxReplicas": 200,
        "rayStartParams": {},
        "template": {"spec": {"containers": [container("ray-worker")]}},
    })
}

/// The benchmark RayCluster (`ray.io/v1`) named `name` in `namespace` with `workers` workers.
pub fn raycluster(name: &str, namespace: &str, experiment: u8, workers: i32) -> Value {
    let mut head = container("ray-head");
    head["ports"] = json!([
        {"containerPort": 6379, "name": "gcs-server"},
        {"containerPort": 8265, "name": "dashboard"},
        {"containerPort": 10001, "name": "client"},
    ]);
    json!({
        "apiVersion": "ray.io/v1",
        "kind": "RayCluster",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {EXPERIMENT_LABEL: experiment.to_string()},
        },
        "spec": {
            "rayVersion": "2.52.0",
            "headGroupSpec": {
                "rayStartParams": {},
                "template": {"spec": {"containers": [head]}},
            },
            "workerGroupSpecs": [worker_group(workers)],
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedules_end_where_kuberay_published() {
        let ends: Vec<(usize, usize, usize)> = (1..=3)
            .map(|e| {
                let steps = schedule(e);
                let last = steps.last().unwrap();
                (steps.len(), last.clusters, last.pods)
            })
            .collect();
        assert_eq!(ends, vec![(150, 150, 150), (30, 1, 150), (30, 30, 150)]);
        assert!(schedule(4).is_empty());
        // Every step of experiments 2 and 3 adds five pods.
        for e in [2, 3] {
            let pods: Vec<usize> = schedule(e).iter().map(|s| s.pods).collect();
            assert!(pods.windows(2).all(|w| w[1] == w[0] + 5), "{pods:?}");
        }
    }

    #[test]
    fn template_parses_as_a_raycluster() {
        let value = raycluster("bench-e3-000", "default", 3, 4);
        let cluster: ray_api::RayCluster = ray_reconcile::decode::decode_value(&value).unwrap();
        let groups = cluster.spec.worker_group_specs.unwrap();
        assert_eq!(groups.len(), 1);
        assert_eq!(groups[0].group_name, GROUP);
        assert_eq!(groups[0].replicas, Some(4));
        assert_eq!(groups[0].max_replicas, Some(200));
    }
}
