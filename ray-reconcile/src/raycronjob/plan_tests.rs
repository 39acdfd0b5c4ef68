//! The RayCronJob plan against an injected clock: validation order and texts (1.3), the pass (1.4), the
//! children (1.6) and backfill of missed ticks (1.7), numbered after `docs/raycronjob.md`'s sections.

use super::*;
use crate::events::Severity;
use ray_api::RayCronJobSpec;
use ray_api::rayjob::RayJobSpec;

fn lookup(name: &str) -> Result<TimeZone, String> {
    super::super::zones::load_location(name, &TimeZone::UTC, &|n| TimeZone::get(n).ok())
}

fn ts(text: &str) -> Timestamp {
    text.parse().unwrap()
}

fn template() -> RayJobSpec {
    serde_json::from_value(serde_json::json!({
        "entrypoint": "python -c 'print(1)'",
        "shutdownAfterJobFinishes": true,
        "rayClusterSpec": {"headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": [
            {"name": "ray-head", "image": "rayproject/ray:2.52.0"}]}}}}
    }))
    .unwrap()
}

fn cron(schedule: &str) -> RayCronJob {
    let mut cron = RayCronJob::new(
        "test-cronjob",
        RayCronJobSpec {
            job_template: template(),
            schedule: schedule.to_owned(),
            suspend: None,
            time_zone: None,
        },
    );
    cron.metadata.namespace = Some("default".to_owned());
    cron.metadata.uid = Some("uid-1".to_owned());
    cron.metadata.creation_timestamp = Some(Time(ts("2024-01-01T00:00:00Z")));
    cron
}

fn run(cron: &RayCronJob, now: &str) -> CronPass {
    plan(
        cron,
        &CronPlanInput {
            now: ts(now),
            local_zone: &TimeZone::UTC,
            lookup_zone: &lookup,
            validation: &ValidationOptions::default(),
        },
    )
}

fn invalid_message(cron: &RayCronJob) -> (String, String) {
    match run(cron, "2024-01-01T00:00:30Z") {
        CronPass::Invalid { error, event } => {
            assert_eq!(event.severity, Severity::Warning);
            assert_eq!((event.reason, event.action), ("InvalidRayCronJobSpec", "Validate"));
            assert_eq!(
                event.note,
                format!("default/{}: {}", cron.metadata.name.clone().unwrap(), error.message)
            );
            (error.field, error.message)
        }
        other => panic!("expected Invalid, got {other:?}"),
    }
}

#[test]
fn golden_1_3_validation_rules_in_order() {
    let mut long = cron("* * * * *");
    long.metadata.name = Some("a".repeat(37));
    assert_eq!(
        invalid_message(&long),
        (
            "metadata.name".into(),
            "RayCronJob name should be no more than 36 characters".into()
        )
    );
    let mut ok = cron("* * * * *");
    ok.metadata.name = Some("a".repeat(36));
    assert!(!matches!(run(&ok, "2024-01-01T00:00:30Z"), CronPass::Invalid { .. }));

    assert_eq!(
        invalid_message(&cron("TZ=UTC * * * * *")).1,
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    );
    assert_eq!(
        invalid_message(&cron("CRON_TZ=UTC * * * * *")).1,
        "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"
    );
    assert_eq!(
        invalid_message(&cron("invalid cron string")),
        (
            "spec.schedule".into(),
            "invalid cron schedule: expected exactly 5 fields, found 3: [invalid cron string]".into()
        )
    );
    let mut empty_zone = cron("* * * * *");
    empty_zone.spec.time_zone = Some(String::new());
    assert_eq!(
        invalid_message(&empty_zone),
        (
            "spec.timeZone".into(),
            "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator"
                .into()
        )
    );
    let mut bad_zone = cron("* * * * *");
    bad_zone.spec.time_zone = Some("Mars/Olympus_Mons".to_owned());
    assert_eq!(
        invalid_message(&bad_zone),
        (
            "spec.timeZone".into(),
            "invalid time zone: unknown time zone Mars/Olympus_Mons".into()
        )
    );
    let mut no_cluster = cron("* * * * *");
    no_cluster.spec.job_template.ray_cluster_spec = None;
    let (field, message) = invalid_message(&no_cluster);
    assert!(field.starts_with("spec.jobTemplate"), "{field}");
    assert_eq!(
        message,
        "invalid RayJob template: The RayJob spec is invalid: one of RayClusterSpec or ClusterSelector must be set"
    );
}

#[test]
fn golden_1_4_suspend_stops_before_scheduling() {
    let mut suspended = cron("* * * * *");
    suspended.spec.suspend = Some(true);
    let CronPass::Suspended { event } = run(&suspended, "2024-01-01T03:00:00Z") else {
        panic!("expected Suspended");
    };
    assert_eq!(
        event,
        EventSpec::normal("SuspendedRayCronJob", "Suspend", SUSPENDED_NOTE)
    );
    // Validation still comes first.
    suspended.spec.schedule = "nope".to_owned();
    assert!(matches!(
        run(&suspended, "2024-01-01T03:00:00Z"),
        CronPass::Invalid { .. }
    ));
}

#[test]
fn golden_1_4_waits_until_the_next_tick() {
    assert_eq!(
        run(&cron("*/5 * * * *"), "2024-01-01T00:03:20Z"),
        CronPass::Wait {
            after: Duration::from_secs(100)
        }
    );
}

#[test]
fn golden_1_6_due_tick_creates_the_named_labelled_owned_rayjob() {
    let CronPass::Create(due) = run(&cron("*/5 * * * *"), "2024-01-01T00:05:00Z") else {
        panic!("expected Create");
    };
    assert_eq!(due.scheduled, ts("2024-01-01T00:05:00Z"));
    let job = &due.job;
    assert_eq!(job.metadata.name.as_deref(), Some("test-cronjob-28401125"));
    assert_eq!(job.metadata.namespace.as_deref(), Some("default"));
    assert_eq!(
        job.metadata.labels.as_ref().unwrap()["ray.io/cronjob-name"],
        "test-cronjob"
    );
    assert_eq!(
        job.metadata.annotations.as_ref().unwrap()["ray.io/cronjob-scheduled-timestamp"],
        "2024-01-01T00:05:00Z"
    );
    let owner = &job.metadata.owner_references.as_ref().unwrap()[0];
    assert_eq!(
        (
            owner.api_version.as_str(),
            owner.kind.as_str(),
            owner.name.as_str(),
            owner.uid.as_str()
        ),
        ("ray.io/v1", "RayCronJob", "test-cronjob", "uid-1")
    );
    assert_eq!((owner.controller, owner.block_owner_deletion), (Some(true), Some(true)));
    assert_eq!(job.spec, template());
    assert_eq!(due.last_schedule_time, Time(ts("2024-01-01T00:05:00Z")));
    assert_eq!(due.requeue_after, Some(Duration::from_secs(300)));
    assert_eq!(
        serde_json::to_value(&due.last_schedule_time).unwrap(),
        serde_json::json!("2024-01-01T00:05:00Z")
    );
}

#[test]
fn golden_1_7_missed_ticks_are_backfilled_one_per_pass() {
    let mut cron = cron("* * * * *");
    let now = "2024-01-01T00:03:30Z";
    let mut created = Vec::new();
    loop {
        match run(&cron, now) {
            CronPass::Create(due) => {
                created.push(due.job.metadata.name.clone().unwrap());
                let last = due.scheduled;
                assert_eq!(due.requeue_after.is_none(), last < ts("2024-01-01T00:03:00Z"));
                cron.status = Some(ray_api::raycronjob::RayCronJobStatus {
                    last_schedule_time: Some(due.last_schedule_time),
                });
            }
            CronPass::Wait { after } => {
                assert_eq!(after, Duration::from_secs(30));
                break;
            }
            other => panic!("unexpected {other:?}"),
        }
    }
    assert_eq!(
        created,
        [
            "test-cronjob-28401121",
            "test-cronjob-28401122",
            "test-cronjob-28401123"
        ]
    );
}

#[test]
fn golden_1_5_time_zone_field_and_operator_zone() {
    let mut new_york = cron("0 9 * * *");
    new_york.spec.time_zone = Some("America/New_York".to_owned());
    assert_eq!(
        run(&new_york, "2024-01-01T00:00:30Z"),
        CronPass::Wait {
            after: Duration::from_secs(14 * 3600 - 30)
        }
    );
    // Without timeZone the operator's zone applies.
    let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
    let pass = plan(
        &cron("0 9 * * *"),
        &CronPlanInput {
            now: ts("2024-01-01T00:00:30Z"),
            local_zone: &tokyo,
            lookup_zone: &lookup,
            validation: &ValidationOptions::default(),
        },
    );
    // Created at 09:00 Tokyo time: the next 09:00 is a day later.
    assert_eq!(
        pass,
        CronPass::Wait {
            after: Duration::from_secs(24 * 3600 - 30)
        }
    );
}

#[test]
fn never_firing_schedule_waits_for_a_change() {
    assert_eq!(run(&cron("0 0 30 2 *"), "2024-01-01T00:00:30Z"), CronPass::Never);
}
