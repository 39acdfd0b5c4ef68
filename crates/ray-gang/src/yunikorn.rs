//! YuniKorn (`--batch-scheduler=yunikorn`): no objects are created; children get YuniKorn's
//! labels, `schedulerName: yunikorn`, and, when the parent carries the
//! `ray.io/gang-scheduling-enabled` label (any value), the `yunikorn.apache.org/task-groups`
//! annotation (a compact JSON array, [`task_groups_json`]) and the pod's task-group name.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Affinity, PodSpec, PodTemplateSpec, Toleration};
use ray_api::constants::HEAD_GROUP_NAME;
use ray_api::quantity::{QuantityError, ResourceTotals, pod_resources};
use ray_api::{RayClusterSpec, RayJob};
use serde_json::Value;

use crate::constants::{
    GANG_SCHEDULING_ENABLED_LABEL, SUBMITTER_GROUP_NAME, YUNIKORN_APP_ID_LABEL, YUNIKORN_POD_APP_ID_LABEL,
    YUNIKORN_POD_QUEUE_LABEL, YUNIKORN_QUEUE_LABEL, YUNIKORN_SCHEDULER_NAME, YUNIKORN_TASK_GROUP_NAME_ANNOTATION,
    YUNIKORN_TASK_GROUPS_ANNOTATION,
};
use crate::gojson::{GoObject, affinity, to_go_json, toleration};
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
    to_go_json(&Value::Array(groups.iter().map(TaskGroup::to_json).collect()))
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
