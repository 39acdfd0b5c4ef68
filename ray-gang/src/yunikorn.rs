//! YuniKorn (`--batch-scheduler=yunikorn`): no objects are created; children get YuniKorn's
//! labels, `schedulerName: yunikorn`, and, when the parent carries the
//! `ray.io/gang-scheduling-enabled` label (any value), the `yunikorn.apache.org/task-groups`
//! annotation (a compact JSON array, [`task_groups_json`]) and the pod's task-group name.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, PodSpec, PodTemplateSpec, Toleration};
use kube_compat::go_json;
use ray_api::constants::HEAD_GROUP_NAME;
use ray_api::quantity::{QuantityError, ResourceTotals, pod_resources};
use ray_api::{RayClusterSpec, RayJob};
use serde_json::Value;

use crate::constants::{
    GANG_SCHEDULING_ENABLED_LABEL, SUBMITTER_GROUP_NAME, YUNIKORN_APP_ID_LABEL, YUNIKORN_POD_APP_ID_LABEL,
    YUNIKORN_POD_QUEUE_LABEL, YUNIKORN_QUEUE_LABEL, YUNIKORN_SCHEDULER_NAME, YUNIKORN_TASK_GROUP_NAME_ANNOTATION,
    YUNIKORN_TASK_GROUPS_ANNOTATION,
};
use crate::go_struct_json::{GoObject, affinity, toleration};
use crate::parent::{Child, GangLog, GangLogLevel, Parent};
use crate::sizing::num_of_hosts;
use crate::submitter::submitter_template;

/// One YuniKorn task group.
#[derive(Clone, Debug, PartialEq)]
pub struct TaskGroup {
    /// `headgroup`, the worker `groupName`, or `submittergroup`.
    pub name: String,
    /// Head 1; worker `minReplicas × numOfHosts` (replicas, autoscaling and suspend ignored);
    /// submitter 1.
    pub min_member: i32,
    /// Resources of **one** pod of the group.
    pub min_resource: ResourceTotals,
    /// The template's `nodeSelector`.
    pub node_selector: Option<BTreeMap<String, String>>,
    /// The template's `affinity`.
    pub affinity: Option<Affinity>,
    /// The template's `tolerations`.
    pub tolerations: Option<Vec<Toleration>>,
}

impl TaskGroup {
    /// A group from a pod template.
    fn from_template(name: &str, min_member: i32, template: &PodTemplateSpec) -> Result<TaskGroup, QuantityError> {
        let default_spec = PodSpec::default();
        let spec = template.spec.as_ref().unwrap_or(&default_spec);
        Ok(TaskGroup {
            name: name.to_owned(),
            min_member,
            min_resource: pod_resources(spec)?,
            node_selector: spec.node_selector.clone(),
            affinity: spec.affinity.clone(),
            tolerations: spec.tolerations.clone(),
        })
    }

    /// The group as Go marshals it: keys `minResource`, `nodeSelector`, `affinity`, `name`,
    /// (`topologySpreadConstraints`, never filled), `tolerations`, `minMember`.
    fn to_json(&self) -> Value {
        let min_resource: serde_json::Map<String, Value> = self
            .min_resource
            .iter()
            .map(|(k, q)| (k.clone(), Value::from(q.to_string())))
            .collect();
        let node_selector = self
            .node_selector
            .as_ref()
            .map(|m| Value::Object(m.iter().map(|(k, v)| (k.clone(), Value::from(v.clone()))).collect()));
        let mut object = GoObject::default()
            .put("minResource", Value::Object(min_resource))
            .put_non_empty("nodeSelector", node_selector);
        if let Some(a) = &self.affinity {
            object = object.put("affinity", affinity(a));
        }
        object
            .put("name", self.name.clone())
            .put_non_empty(
                "tolerations",
                self.tolerations.as_ref().map(|t| t.iter().map(toleration).collect()),
            )
            .put("minMember", self.min_member)
            .build()
    }
}

/// Task groups of a cluster spec: the head, then the worker groups in spec order.
pub fn task_groups_for_cluster(spec: &RayClusterSpec) -> Result<Vec<TaskGroup>, QuantityError> {
    let mut groups = vec![TaskGroup::from_template(
        HEAD_GROUP_NAME,
        1,
        &spec.head_group_spec.template,
    )?];
    for group in spec.worker_group_specs.iter().flatten() {
        let min_member = group.min_replicas.unwrap_or(0).wrapping_mul(num_of_hosts(group));
        groups.push(TaskGroup::from_template(
            &group.group_name,
            min_member,
            &group.template,
        )?);
    }
    Ok(groups)
}

/// Task groups of a RayJob: those of `spec.rayClusterSpec` (none in clusterSelector mode), then
/// `submittergroup` from `submitterPodTemplate` or the default submitter, whatever the mode.
pub fn task_groups_for_job(job: &RayJob) -> Result<Vec<TaskGroup>, QuantityError> {
    let mut groups = match &job.spec.ray_cluster_spec {
        Some(spec) => task_groups_for_cluster(spec)?,
        None => Vec::new(),
    };
    groups.push(TaskGroup::from_template(
        SUBMITTER_GROUP_NAME,
        1,
        &submitter_template(&job.spec),
    )?);
    Ok(groups)
}

/// The task groups of a parent (cluster spec, or job spec + submitter).
pub fn task_groups(parent: Parent<'_>) -> Result<Vec<TaskGroup>, QuantityError> {
    match parent {
        Parent::Cluster(cluster) => task_groups_for_cluster(&cluster.spec),
        Parent::Job(job) => task_groups_for_job(job),
    }
}

/// The `yunikorn.apache.org/task-groups` value: a compact JSON array in Go's format.
pub fn task_groups_json(groups: &[TaskGroup]) -> String {
    go_json::to_string_in_order(&Value::Array(groups.iter().map(TaskGroup::to_json).collect()))
}

/// Whether the parent asks for gang scheduling: the label key is present, whatever its value.
pub fn gang_enabled(parent: Parent<'_>) -> bool {
    parent.label(GANG_SCHEDULING_ENABLED_LABEL).is_some()
}

/// YuniKorn's `AddMetadataToChildResource`.
pub fn decorate(parent: Parent<'_>, child: &mut Child<'_>, group_name: &str) -> Vec<GangLog> {
    for (parent_key, child_key) in [
        (YUNIKORN_APP_ID_LABEL, YUNIKORN_POD_APP_ID_LABEL),
        (YUNIKORN_QUEUE_LABEL, YUNIKORN_POD_QUEUE_LABEL),
    ] {
        if let Some(value) = parent.non_empty_label(parent_key) {
            child.set_label(child_key, value);
        }
    }
    child.set_scheduler_name(YUNIKORN_SCHEDULER_NAME);
    if !gang_enabled(parent) {
        return Vec::new();
    }
    let task_groups = match parent
        .annotation(YUNIKORN_TASK_GROUPS_ANNOTATION)
        .filter(|v| !v.is_empty())
    {
        Some(user_value) => user_value.to_owned(),
        None => match task_groups(parent) {
            Ok(groups) => task_groups_json(&groups),
            Err(err) => {
                return vec![GangLog {
                    level: GangLogLevel::Error,
                    message: format!("failed to add gang scheduling related annotations to pod: {err}"),
                }];
            }
        },
    };
    child.set_annotation(YUNIKORN_TASK_GROUPS_ANNOTATION, &task_groups);
    if !group_name.is_empty() {
        child.set_annotation(YUNIKORN_TASK_GROUP_NAME_ANNOTATION, group_name);
    }
    Vec::new()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scheduler::BatchScheduler;
    use crate::test_fixtures::*;
    use ray_api::RayCluster;
    use serde_json::json;

    fn one_one() -> Value {
        resources(&[("cpu", "1"), ("memory", "1Gi")], &[("cpu", "1"), ("memory", "1Gi")])
    }

    fn gang_cluster(labels: &[(&str, &str)]) -> RayCluster {
        cluster(
            "ray-cluster-with-gang-scheduling",
            labels,
            cluster_spec_json(
                one_one(),
                vec![worker_group(
                    "worker-group-1",
                    Some(1),
                    Some(1),
                    Some(1),
                    Some(1),
                    one_one(),
                )],
            ),
        )
    }

    fn gang_job(app_id: &str, gang: bool) -> RayJob {
        let mut labels = vec![
            ("yunikorn.apache.org/app-id", app_id),
            ("yunikorn.apache.org/queue", "root.default"),
        ];
        if gang {
            labels.push(("ray.io/gang-scheduling-enabled", "true"));
        }
        job(
            "rayjob-sample",
            &labels,
            json!({
                "entrypoint": "python /home/ray/samples/sample_code.py",
                "submissionMode": "K8sJobMode",
                "rayClusterSpec": cluster_spec_json(
                    one_one(),
                    vec![worker_group("worker-group", Some(1), Some(1), Some(1), None, one_one())],
                ),
            }),
        )
    }

    #[test]
    fn golden_g35_gang_label_presence_enables() {
        for (labels, expected) in [
            (vec![("ray.io/gang-scheduling-enabled", "true")], true),
            (vec![("ray.io/gang-scheduling-enabled", "")], true),
            (vec![("ray.io/gang-scheduling-enabled", "false")], true),
            (vec![], false),
        ] {
            assert_eq!(
                gang_enabled(Parent::Cluster(&gang_cluster(&labels))),
                expected,
                "{labels:?}"
            );
            let j = job("j", &labels, json!({"entrypoint": "x"}));
            assert_eq!(gang_enabled(Parent::Job(&j)), expected, "{labels:?}");
        }
    }

    #[test]
    fn golden_g37_cluster_task_groups() {
        let c = gang_cluster(&[
            ("ray.io/gang-scheduling-enabled", "true"),
            ("yunikorn.apache.org/app-id", "job-2"),
            ("yunikorn.apache.org/queue", "root.default"),
        ]);
        let mut p = pod(&[]);
        let logs =
            BatchScheduler::YuniKorn.decorate_pod(Parent::Cluster(&c), &mut p, "ray-cluster-with-gang-scheduling");
        assert!(logs.is_empty());
        let annotations = p.metadata.annotations.unwrap();
        assert_eq!(
            annotations["yunikorn.apache.org/task-groups"],
            r#"[{"minResource":{"cpu":"1","memory":"1Gi"},"name":"headgroup","minMember":1},{"minResource":{"cpu":"1","memory":"1Gi"},"name":"worker-group-1","minMember":1}]"#
        );
        assert_eq!(
            annotations["yunikorn.apache.org/task-group-name"],
            "ray-cluster-with-gang-scheduling"
        );
        assert_eq!(annotations.len(), 2);
        assert_eq!(
            p.metadata.labels.unwrap(),
            map(&[("applicationId", "job-2"), ("queue", "root.default")])
        );
        assert_eq!(p.spec.unwrap().scheduler_name.as_deref(), Some("yunikorn"));
    }

    #[test]
    fn golden_g38_job_cluster_child_gets_three_groups() {
        let j = gang_job("job-4", true);
        let mut child = cluster("rayjob-sample-raycluster-abcde", &[], t_spec(1, false));
        let before = child.spec.clone();
        BatchScheduler::YuniKorn.decorate_cluster(&j, &mut child);
        assert_eq!(
            child.metadata.labels.unwrap(),
            map(&[("applicationId", "job-4"), ("queue", "root.default")])
        );
        let annotations = child.metadata.annotations.unwrap();
        assert_eq!(
            annotations["yunikorn.apache.org/task-groups"],
            r#"[{"minResource":{"cpu":"1","memory":"1Gi"},"name":"headgroup","minMember":1},{"minResource":{"cpu":"1","memory":"1Gi"},"name":"worker-group","minMember":1},{"minResource":{"cpu":"500m","memory":"200Mi"},"name":"submittergroup","minMember":1}]"#
        );
        assert!(!annotations.contains_key("yunikorn.apache.org/task-group-name"));
        assert_eq!(child.spec, before, "no schedulerName on a RayCluster");
    }

    #[test]
    fn golden_g40_job_without_gang() {
        let j = gang_job("job-3", false);
        let mut child = cluster("rayjob-sample-raycluster-abcde", &[], t_spec(1, false));
        BatchScheduler::YuniKorn.decorate_cluster(&j, &mut child);
        assert_eq!(
            child.metadata.labels.unwrap(),
            map(&[("applicationId", "job-3"), ("queue", "root.default")])
        );
        assert!(child.metadata.annotations.unwrap_or_default().is_empty());
        let mut template = pod_template();
        BatchScheduler::YuniKorn.decorate_pod_template(Parent::Job(&j), &mut template, "submittergroup");
        let meta = template.metadata.unwrap();
        assert_eq!(
            meta.labels.unwrap(),
            map(&[("applicationId", "job-3"), ("queue", "root.default")])
        );
        assert!(meta.annotations.unwrap_or_default().is_empty());
        assert_eq!(template.spec.unwrap().scheduler_name.as_deref(), Some("yunikorn"));
    }

    #[test]
    fn golden_g41_worker_min_member_counts_hosts_but_resources_are_per_pod() {
        let spec = cluster_spec(
            resources(&[("cpu", "5"), ("memory", "5Gi")], &[]),
            vec![worker_group(
                "worker-group-1",
                Some(2),
                Some(2),
                Some(2),
                Some(3),
                resources(&[("cpu", "2"), ("memory", "10Gi"), ("nvidia.com/gpu", "1")], &[]),
            )],
        );
        let groups = task_groups_for_cluster(&spec).unwrap();
        assert_eq!(groups.len(), 2);
        let strings = |g: &TaskGroup| -> BTreeMap<String, String> {
            g.min_resource.iter().map(|(k, q)| (k.clone(), q.to_string())).collect()
        };
        assert_eq!((groups[0].name.as_str(), groups[0].min_member), ("headgroup", 1));
        assert_eq!(strings(&groups[0]), map(&[("cpu", "5"), ("memory", "5Gi")]));
        assert_eq!((groups[1].name.as_str(), groups[1].min_member), ("worker-group-1", 6));
        assert_eq!(
            strings(&groups[1]),
            map(&[("cpu", "2"), ("memory", "10Gi"), ("nvidia.com/gpu", "1")])
        );
        assert_eq!(
            task_groups_json(&groups),
            r#"[{"minResource":{"cpu":"5","memory":"5Gi"},"name":"headgroup","minMember":1},{"minResource":{"cpu":"2","memory":"10Gi","nvidia.com/gpu":"1"},"name":"worker-group-1","minMember":6}]"#
        );
    }

    #[test]
    fn golden_g43_job_sample_task_groups() {
        let j: RayJob = sample("ray-job.yunikorn-scheduler.yaml", "RayJob");
        assert_eq!(
            task_groups_json(&task_groups(Parent::Job(&j)).unwrap()),
            r#"[{"minResource":{"cpu":"1","memory":"2Gi"},"name":"headgroup","minMember":1},{"minResource":{"cpu":"1","memory":"1Gi"},"name":"small-group","minMember":1},{"minResource":{"cpu":"500m","memory":"200Mi"},"name":"submittergroup","minMember":1}]"#
        );
    }

    #[test]
    fn user_annotation_wins_and_optional_keys_follow_go_order() {
        let mut c = gang_cluster(&[("ray.io/gang-scheduling-enabled", "")]);
        c.metadata.annotations = Some(BTreeMap::from([(
            "yunikorn.apache.org/task-groups".to_owned(),
            "[{\"name\":\"mine\"}]".to_owned(),
        )]));
        let mut p = pod(&[]);
        BatchScheduler::YuniKorn.decorate_pod(Parent::Cluster(&c), &mut p, "headgroup");
        let annotations = p.metadata.annotations.unwrap();
        assert_eq!(annotations["yunikorn.apache.org/task-groups"], "[{\"name\":\"mine\"}]");
        assert_eq!(annotations["yunikorn.apache.org/task-group-name"], "headgroup");
        // No app-id / queue labels: none copied.
        assert!(p.metadata.labels.unwrap_or_default().is_empty());

        // nodeSelector, tolerations and affinity in Go's key order; min 0 groups still print minMember.
        let mut spec = cluster_spec_json(
            resources(&[], &[]),
            vec![worker_group(
                "w",
                Some(3),
                None,
                None,
                None,
                resources(&[("cpu", "1")], &[]),
            )],
        );
        spec["workerGroupSpecs"][0]["template"]["spec"]["nodeSelector"] = json!({"zone": "a", "disk": "ssd"});
        spec["workerGroupSpecs"][0]["template"]["spec"]["tolerations"] =
            json!([{"key": "k", "operator": "Equal", "value": "<v>", "effect": "NoSchedule", "tolerationSeconds": 0}]);
        spec["workerGroupSpecs"][0]["template"]["spec"]["affinity"] = json!({"nodeAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a"]}]}
            ]}
        }});
        let spec: RayClusterSpec = serde_json::from_value(spec).unwrap();
        assert_eq!(
            task_groups_json(&task_groups_for_cluster(&spec).unwrap()),
            concat!(
                r#"[{"minResource":{},"name":"headgroup","minMember":1},"#,
                r#"{"minResource":{"cpu":"1"},"nodeSelector":{"disk":"ssd","zone":"a"},"#,
                r#""affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"zone","operator":"In","values":["a"]}]}]}}},"#,
                r#""name":"w","tolerations":[{"key":"k","operator":"Equal","value":"\u003cv\u003e","effect":"NoSchedule","tolerationSeconds":0}],"minMember":0}]"#
            )
        );
    }

    #[test]
    fn bad_quantity_is_logged_and_stops() {
        let c = cluster(
            "bad",
            &[("ray.io/gang-scheduling-enabled", "true")],
            cluster_spec_json(resources(&[("cpu", "lots")], &[]), vec![]),
        );
        let mut p = pod(&[]);
        let logs = BatchScheduler::YuniKorn.decorate_pod(Parent::Cluster(&c), &mut p, "headgroup");
        assert_eq!(logs.len(), 1);
        assert_eq!(logs[0].level, GangLogLevel::Error);
        assert!(p.metadata.annotations.unwrap_or_default().is_empty());
        assert_eq!(p.spec.unwrap().scheduler_name.as_deref(), Some("yunikorn"));
    }
}
