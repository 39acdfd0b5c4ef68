//! Gang-scheduling strings (docs/gang-scheduling.md#what-each-integration-produces): label and annotation keys,
//! plugin and scheduler names, and the default submitter's resources. Keys shared with other crates
//! (`ray.io/originated-from-*`, `headgroup`, the submitter container name) come from [`ray_api::constants`]
//! instead.

/// Owner label naming the PriorityClass (copied to the Volcano PodGroup and to pods as a label).
pub const PRIORITY_CLASS_NAME_LABEL: &str = "ray.io/priority-class-name";
/// Owner label whose mere presence enables YuniKorn / scheduler-plugins gang scheduling.
pub const GANG_SCHEDULING_ENABLED_LABEL: &str = "ray.io/gang-scheduling-enabled";
/// Task group / task-spec name of a RayJob's submitter pod.
pub const SUBMITTER_GROUP_NAME: &str = "submittergroup";

/// Owner label naming the Volcano queue.
pub const VOLCANO_QUEUE_LABEL: &str = "volcano.sh/queue-name";
/// Owner label selecting the Volcano network-topology mode (`hard` / `soft`).
pub const VOLCANO_NETWORK_TOPOLOGY_MODE_LABEL: &str = "volcano.sh/network-topology-mode";
/// Owner label with the highest network tier allowed (an integer).
pub const VOLCANO_NETWORK_TOPOLOGY_HIGHEST_TIER_LABEL: &str = "volcano.sh/network-topology-highest-tier-allowed";
/// Pod annotation naming the Volcano PodGroup.
pub const VOLCANO_GROUP_NAME_ANNOTATION: &str = "scheduling.k8s.io/group-name";
/// Pod annotation naming the Volcano task (the Ray group name).
pub const VOLCANO_TASK_SPEC_ANNOTATION: &str = "volcano.sh/task-spec";
/// Prefix of a Volcano PodGroup name (`ray-<name>-pg`).
pub const VOLCANO_POD_GROUP_PREFIX: &str = "ray-";
/// Suffix of a Volcano PodGroup name (`ray-<name>-pg`).
pub const VOLCANO_POD_GROUP_SUFFIX: &str = "-pg";
/// `status.phase` a new PodGroup is created with.
pub const POD_GROUP_PHASE_PENDING: &str = "Pending";

/// Owner label with the YuniKorn application id.
pub const YUNIKORN_APP_ID_LABEL: &str = "yunikorn.apache.org/app-id";
/// Owner label with the YuniKorn queue.
pub const YUNIKORN_QUEUE_LABEL: &str = "yunikorn.apache.org/queue";
/// Child label receiving [`YUNIKORN_APP_ID_LABEL`] (YuniKorn's older name).
pub const YUNIKORN_POD_APP_ID_LABEL: &str = "applicationId";
/// Child label receiving [`YUNIKORN_QUEUE_LABEL`] (YuniKorn's older name).
pub const YUNIKORN_POD_QUEUE_LABEL: &str = "queue";
/// Annotation with the JSON array of task groups.
pub const YUNIKORN_TASK_GROUPS_ANNOTATION: &str = "yunikorn.apache.org/task-groups";
/// Annotation naming the pod's task group.
pub const YUNIKORN_TASK_GROUP_NAME_ANNOTATION: &str = "yunikorn.apache.org/task-group-name";

/// Pod label naming the scheduler-plugins PodGroup.
pub const SCHEDULER_PLUGINS_POD_GROUP_LABEL: &str = "scheduling.x-k8s.io/pod-group";
/// Owner and pod label naming the KAI queue.
pub const KAI_QUEUE_LABEL: &str = "kai.scheduler/queue";

/// `--batch-scheduler` value and plugin name of Volcano.
pub const VOLCANO_PLUGIN: &str = "volcano";
/// `--batch-scheduler` value and plugin name of YuniKorn.
pub const YUNIKORN_PLUGIN: &str = "yunikorn";
/// `--batch-scheduler` value and plugin name of KAI.
pub const KAI_PLUGIN: &str = "kai-scheduler";
/// `--batch-scheduler` value of scheduler-plugins (its plugin name differs, see
/// [`SCHEDULER_PLUGINS_SCHEDULER_NAME`]).
pub const SCHEDULER_PLUGINS_PLUGIN: &str = "scheduler-plugins";
/// Plugin name of the no-op scheduler used when no batch scheduler is configured.
pub const DEFAULT_PLUGIN: &str = "default";
/// Plugin name of the Kubernetes workload-aware scheduling plugin (feature gate only; rejected as a
/// `--batch-scheduler` value).
pub const KUBERNETES_WAS_PLUGIN: &str = "kubernetes-was-v1alpha2";

/// Pod `schedulerName` for Volcano.
pub const VOLCANO_SCHEDULER_NAME: &str = "volcano";
/// Pod `schedulerName` for YuniKorn.
pub const YUNIKORN_SCHEDULER_NAME: &str = "yunikorn";
/// Pod `schedulerName` for KAI.
pub const KAI_SCHEDULER_NAME: &str = "kai-scheduler";
/// Pod `schedulerName` (and plugin `Name()`) for scheduler-plugins.
pub const SCHEDULER_PLUGINS_SCHEDULER_NAME: &str = "scheduler-plugins-scheduler";

/// CPU request of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_CPU_REQUEST: &str = ray_api::constants::DEFAULT_SUBMITTER_CONTAINER_CPU_REQUEST;
/// Memory request of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_MEMORY_REQUEST: &str = ray_api::constants::DEFAULT_SUBMITTER_CONTAINER_MEMORY_REQUEST;
/// CPU limit of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_CPU_LIMIT: &str = ray_api::constants::DEFAULT_SUBMITTER_CONTAINER_CPU_LIMIT;
/// Memory limit of KubeRay's default submitter container.
pub const DEFAULT_SUBMITTER_MEMORY_LIMIT: &str = ray_api::constants::DEFAULT_SUBMITTER_CONTAINER_MEMORY_LIMIT;
