//! Printers of the workload kinds: apps/v1 Deployment, ReplicaSet, StatefulSet, DaemonSet and batch/v1 Job,
//! CronJob (registered by group/resource, so they apply as soon as a kind is served).

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;
use super::columns::{AGE, CONTAINERS_DOC, Col, IMAGES_DOC, NAME, Row};
use super::format::{
    NONE, created, format_label_selector, format_labels, int, layout_containers, len, name, selector_string,
};

fn containers(template: &Value) -> [Value; 2] {
    let (names, images) = layout_containers(&template["spec"]["containers"]);
    [json!(names), json!(images)]
}

const CONTAINERS: Col = Col::string("Containers", CONTAINERS_DOC).wide();
const IMAGES: Col = Col::string("Images", IMAGES_DOC).wide();

/// Deployment columns.
pub const DEPLOYMENT: &[Col] = &[
    NAME,
    Col::string("Ready", "Number of the pod with ready state"),
    Col::string("Up-to-date", "Total number of non-terminated pods targeted by this deployment that have the desired template spec."),
    Col::string("Available", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment."),
    AGE,
    CONTAINERS,
    IMAGES,
    Col::string("Selector", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.").wide(),
];

/// `printDeployment`.
pub fn deployment(d: &Value, now: Timestamp) -> Row {
    let [names, images] = containers(&d["spec"]["template"]);
    let selector = selector_string(&d["spec"]["selector"]).unwrap_or_else(|()| "<invalid>".into());
    vec![
        name(d),
        json!(format!(
            "{}/{}",
            int(&d["status"]["readyReplicas"]),
            int(&d["spec"]["replicas"])
        )),
        json!(int(&d["status"]["updatedReplicas"])),
        json!(int(&d["status"]["availableReplicas"])),
        created(d, now),
        names,
        images,
        json!(selector),
    ]
    .into()
}

/// ReplicaSet columns.
pub const REPLICA_SET: &[Col] = &[
    NAME,
    Col::integer("Desired", "Replicas is the number of desired pods."),
    Col::integer("Current", "Replicas is the most recently observed number of replicas."),
    Col::integer("Ready", "The number of ready replicas for this replica set."),
    AGE,
    CONTAINERS,
    IMAGES,
    Col::string(
        "Selector",
        "Selector is a label query over pods that should match the replica count.",
    )
    .wide(),
];

/// `printReplicaSet`.
pub fn replica_set(rs: &Value, now: Timestamp) -> Row {
    let [names, images] = containers(&rs["spec"]["template"]);
    vec![
        name(rs),
        json!(int(&rs["spec"]["replicas"])),
        json!(int(&rs["status"]["replicas"])),
        json!(int(&rs["status"]["readyReplicas"])),
        created(rs, now),
        names,
        images,
        json!(format_label_selector(&rs["spec"]["selector"])),
    ]
    .into()
}

/// StatefulSet columns.
pub const STATEFUL_SET: &[Col] = &[
    NAME,
    Col::string("Ready", "Number of the pod with ready state"),
    AGE,
    CONTAINERS,
    IMAGES,
];

/// `printStatefulSet`.
pub fn stateful_set(s: &Value, now: Timestamp) -> Row {
    let [names, images] = containers(&s["spec"]["template"]);
    vec![
        name(s),
        json!(format!(
            "{}/{}",
            int(&s["status"]["readyReplicas"]),
            int(&s["spec"]["replicas"])
        )),
        created(s, now),
        names,
        images,
    ]
    .into()
}

/// DaemonSet columns.
pub const DAEMON_SET: &[Col] = &[
    NAME,
    Col::integer(
        "Desired",
        "The total number of nodes that should be running the daemon pod (including nodes correctly running the daemon pod).",
    ),
    Col::integer(
        "Current",
        "The number of nodes that are running at least 1 daemon pod and are supposed to run the daemon pod.",
    ),
    Col::integer(
        "Ready",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and ready.",
    ),
    Col::integer(
        "Up-to-date",
        "The total number of nodes that are running updated daemon pod",
    ),
    Col::integer(
        "Available",
        "The number of nodes that should be running the daemon pod and have one or more of the daemon pod running and available (ready for at least spec.minReadySeconds)",
    ),
    Col::string(
        "Node Selector",
        "NodeSelector is a selector which must be true for the pod to fit on a node.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    Col::string(
        "Selector",
        "A label query over pods that are managed by the daemon set.",
    )
    .wide(),
];

/// `printDaemonSet`.
pub fn daemon_set(ds: &Value, now: Timestamp) -> Row {
    let status = &ds["status"];
    let [names, images] = containers(&ds["spec"]["template"]);
    vec![
        name(ds),
        json!(int(&status["desiredNumberScheduled"])),
        json!(int(&status["currentNumberScheduled"])),
        json!(int(&status["numberReady"])),
        json!(int(&status["updatedNumberScheduled"])),
        json!(int(&status["numberAvailable"])),
        json!(format_labels(&ds["spec"]["template"]["spec"]["nodeSelector"])),
        created(ds, now),
        names,
        images,
        json!(format_label_selector(&ds["spec"]["selector"])),
    ]
    .into()
}

/// Job columns.
pub const JOB: &[Col] = &[
    NAME,
    Col::string("Status", "Status of the job."),
    Col::string("Completions", "The number of pods which reached phase Succeeded."),
    Col::string("Duration", "Time required to complete the job."),
    AGE,
    CONTAINERS,
    IMAGES,
    Col::string("Selector", "A label query over pods that should match the pod count.").wide(),
];

fn job_condition(job: &Value, ty: &str) -> bool {
    job["status"]["conditions"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|c| c["type"] == ty)
        .is_some_and(|c| c["status"] == "True")
}

/// `printJob`.
pub fn job(job: &Value, now: Timestamp) -> Row {
    let spec = &job["spec"];
    let status = &job["status"];
    let succeeded = int(&status["succeeded"]);
    let completions = match spec["completions"].as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int(&spec["parallelism"]) {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (age::parse(&status["startTime"]), age::parse(&status["completionTime"])) {
        (None, _) => String::new(),
        (Some(start), None) => age::since_timestamp(start, now),
        (Some(start), Some(end)) => age::between(start, end),
    };
    let state = if job_condition(job, "Complete") {
        "Complete"
    } else if job_condition(job, "Failed") {
        "Failed"
    } else if job["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else if job_condition(job, "Suspended") {
        "Suspended"
    } else if job_condition(job, "FailureTarget") {
        "FailureTarget"
    } else {
        "Running"
    };
    let [names, images] = containers(&spec["template"]);
    vec![
        name(job),
        json!(state),
        json!(completions),
        json!(duration),
        created(job, now),
        names,
        images,
        json!(format_label_selector(&spec["selector"])),
    ]
    .into()
}

/// CronJob columns.
pub const CRON_JOB: &[Col] = &[
    NAME,
    Col::string(
        "Schedule",
        "The schedule in Cron format, see https://en.wikipedia.org/wiki/Cron.",
    ),
    Col::string(
        "Timezone",
        "The time zone name for the given schedule, see https://en.wikipedia.org/wiki/List_of_tz_database_time_zones.",
    ),
    Col {
        ty: "boolean",
        ..Col::string(
            "Suspend",
            "This flag tells the controller to suspend subsequent executions, it does not apply to already started executions.  Defaults to false.",
        )
    },
    Col::integer("Active", "A list of pointers to currently running jobs."),
    Col::string(
        "Last Schedule",
        "Information when was the last time the job was successfully scheduled.",
    ),
    AGE,
    CONTAINERS,
    IMAGES,
    Col::string("Selector", "A label query over pods that should match the pod count.").wide(),
];

/// `printCronJob`.
pub fn cron_job(cj: &Value, now: Timestamp) -> Row {
    let spec = &cj["spec"];
    let last = match age::parse(&cj["status"]["lastScheduleTime"]) {
        Some(t) => age::since_timestamp(t, now),
        None => NONE.into(),
    };
    let suspend = match spec["suspend"].as_bool() {
        Some(true) => "True",
        Some(false) => "False",
        None => "<unset>",
    };
    let job_spec = &spec["jobTemplate"]["spec"];
    let [names, images] = containers(&job_spec["template"]);
    vec![
        name(cj),
        json!(spec["schedule"].as_str().unwrap_or_default()),
        json!(spec["timeZone"].as_str().unwrap_or(NONE)),
        json!(suspend),
        json!(len(&cj["status"]["active"])),
        json!(last),
        created(cj, now),
        names,
        images,
        json!(format_label_selector(&job_spec["selector"])),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    use crate::http::table::test_clock::now;

    fn template() -> Value {
        json!({"spec": {"containers": [{"name": "web", "image": "nginx:1"}, {"name": "log", "image": "busybox"}]}})
    }

    #[test]
    fn print_deployment_ready_fraction_and_wide_cells() {
        let d = json!({"metadata": {"name": "d", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "d"}}, "template": template()},
            "status": {"readyReplicas": 2, "updatedReplicas": 3, "availableReplicas": 2}});
        assert_eq!(
            deployment(&d, now()).cells,
            [
                json!("d"),
                json!("2/3"),
                json!(3),
                json!(2),
                json!("60m"),
                json!("web,log"),
                json!("nginx:1,busybox"),
                json!("app=d")
            ]
        );
    }

    #[test]
    fn print_replica_set_stateful_set_and_daemon_set() {
        let meta = json!({"name": "w", "creationTimestamp": "2026-01-01T00:59:00Z"});
        let rs = json!({"metadata": meta, "spec": {"replicas": 2, "template": template(),
            "selector": {"matchLabels": {"app": "w"}}}, "status": {"replicas": 2, "readyReplicas": 1}});
        assert_eq!(
            replica_set(&rs, now()).cells[..5],
            [json!("w"), json!(2), json!(2), json!(1), json!("60s")]
        );
        let sts = json!({"metadata": meta, "spec": {"replicas": 3, "template": template()}, "status": {}});
        assert_eq!(stateful_set(&sts, now()).cells[1], "0/3");
        let ds = json!({"metadata": meta, "spec": {"template": template()}, "status": {"desiredNumberScheduled": 4}});
        let cells = daemon_set(&ds, now()).cells;
        assert_eq!(cells[1], 4);
        assert_eq!(cells[6], "<none>");
        assert_eq!(cells[10], "<none>");
    }

    #[test]
    fn print_job_status_completions_and_duration() {
        let mut j = json!({"metadata": {"name": "j", "creationTimestamp": "2026-01-01T00:50:00Z"},
            "spec": {"completions": 1, "template": template(),
                "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "u"}}},
            "status": {"startTime": "2026-01-01T00:50:00Z"}});
        assert_eq!(
            job(&j, now()).cells[..5],
            [json!("j"), json!("Running"), json!("0/1"), json!("10m"), json!("10m")]
        );
        j["status"] = json!({"startTime": "2026-01-01T00:50:00Z", "completionTime": "2026-01-01T00:50:42Z",
            "succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]});
        assert_eq!(
            job(&j, now()).cells[1..4],
            [json!("Complete"), json!("1/1"), json!("42s")]
        );
        j["spec"] = json!({"parallelism": 3});
        j["status"] = json!({});
        assert_eq!(job(&j, now()).cells[2..4], [json!("0/1 of 3"), json!("")]);
    }

    #[test]
    fn print_cron_job_schedule_and_suspend() {
        let cj = json!({"metadata": {"name": "c", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"schedule": "*/5 * * * *", "suspend": false,
                "jobTemplate": {"spec": {"template": template()}}},
            "status": {"lastScheduleTime": "2026-01-01T00:55:00Z"}});
        assert_eq!(
            cron_job(&cj, now()).cells[..7],
            [
                json!("c"),
                json!("*/5 * * * *"),
                json!("<none>"),
                json!("False"),
                json!(0),
                json!("5m"),
                json!("60m")
            ]
        );
    }
}
