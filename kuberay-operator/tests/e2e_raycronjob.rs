//! End to end, the real operator binary against an in-process kube-sim: the RayCronJob controller (gate
//! `RayCronJob`) running KubeRay's every-minute sample. The operator's cron clock is moved forward with the
//! testing-only `KUBERAY_TESTING_CRON_CLOCK_OFFSET_SECONDS` so that, at start, it stands a few seconds before
//! a minute boundary two or three minutes after the RayCronJob's creation: the missed ticks are backfilled
//! at once and the next one fires when the boundary passes, seconds later, instead of a minute of waiting.
//! Invalid schedules and time zones get KubeRay's Warning Events; suspend stops new RayJobs.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::ConfigMap;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, ListParams, Patch, PatchParams, PostParams};
use kube::{Client, ResourceExt};
use ray_api::{RayCronJob, RayJob};
use serde_json::json;

use crate::common;
use common::{Operator, SimEnv, free_port, sample_document};

const NS: &str = "default";
const SAMPLE: &str = "ray-cronjob.sample.yaml";
/// How far before the minute boundary the operator's clock stands when it starts.
const LEAD: i64 = 10;

async fn events_with(client: &Client, reason: &str, object: &str) -> Vec<Event> {
    common::events_about(client, NS, reason, object).await
}

async fn children(client: &Client, cron: &str) -> BTreeSet<String> {
    let jobs: Api<RayJob> = Api::namespaced(client.clone(), NS);
    jobs.list(&ListParams::default().labels(&format!("ray.io/cronjob-name={cron}")))
        .await
        .unwrap()
        .items
        .iter()
        .map(ResourceExt::name_any)
        .collect()
}

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, Duration::from_secs(60), Duration::from_millis(200), check).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_minute_sample_backfills_then_fires_at_the_boundary_and_rejects_bad_input() {
    let env = SimEnv::start("raycronjob", kube_sim::SimConfig::default()).await;
    let client = env.client.clone();
    let crons: Api<RayCronJob> = Api::namespaced(client.clone(), NS);
    let config_maps: Api<ConfigMap> = Api::namespaced(client.clone(), NS);
    config_maps
        .create(&PostParams::default(), &sample_document(SAMPLE, "ConfigMap"))
        .await
        .unwrap();
    let sample: RayCronJob = sample_document(SAMPLE, "RayCronJob");
    let created = crons.create(&PostParams::default(), &sample).await.unwrap();
    let name = created.name_any();
    let creation = created.metadata.creation_timestamp.clone().unwrap().0.as_second();

    // The operator's clock starts LEAD seconds before the first minute boundary at least two minutes after
    // creation; every tick after creation up to that boundary is due by the time it passes.
    let boundary = (creation + 120).div_euclid(60) * 60 + 60;
    let offset = boundary - LEAD - Timestamp::now().as_second();
    let expected: BTreeSet<String> = ((creation.div_euclid(60) + 1)..=boundary / 60)
        .map(|minute| format!("{name}-{minute}"))
        .collect();
    assert!(expected.len() >= 2, "{expected:?}");
    let offset_text = offset.to_string();
    let _operator = Operator::start_with_env(
        &env.dir,
        &env.kubeconfig,
        NS,
        free_port(),
        free_port(),
        &["--feature-gates=RayCronJob=true"],
        &[("KUBERAY_TESTING_CRON_CLOCK_OFFSET_SECONDS", offset_text.as_str())],
    );

    // Backfill: all ticks before the boundary, one per pass, soon after start.
    let before_boundary: BTreeSet<String> = expected.iter().take(expected.len() - 1).cloned().collect();
    wait_for("the missed ticks' RayJobs", || async {
        let now = children(&client, &name).await;
        before_boundary.is_subset(&now).then_some(())
    })
    .await;
    // The boundary's tick fires once the operator's clock passes it.
    wait_for("the RayJob of the boundary tick", || async {
        (children(&client, &name).await == expected).then_some(())
    })
    .await;
    // The status is written after the RayJob is created, in the same pass: wait for it rather than read it at
    // once, and then it must name the boundary (not a later tick).
    let last = wait_for("lastScheduleTime at the boundary tick", || async {
        let cron = crons.get(&name).await.ok()?;
        let last = cron.status?.last_schedule_time?.0.as_second();
        (last >= boundary).then_some(last)
    })
    .await;
    assert_eq!(last, boundary);

    let jobs: Api<RayJob> = Api::namespaced(client.clone(), NS);
    for child in &expected {
        let job = jobs.get(child).await.unwrap();
        let minute: i64 = child.rsplit('-').next().unwrap().parse().unwrap();
        assert_eq!(job.labels()["ray.io/cronjob-name"], name);
        assert_eq!(
            job.annotations()["ray.io/cronjob-scheduled-timestamp"],
            Timestamp::from_second(minute * 60)
                .unwrap()
                .strftime("%Y-%m-%dT%H:%M:%SZ")
                .to_string()
        );
        let owner = &job.owner_references()[0];
        assert_eq!(
            (
                owner.kind.as_str(),
                owner.name.as_str(),
                owner.uid.as_str(),
                owner.controller
            ),
            ("RayCronJob", name.as_str(), created.uid().unwrap().as_str(), Some(true))
        );
        assert_eq!(job.spec.entrypoint, sample.spec.job_template.entrypoint);
        assert_eq!(job.spec.runtime_env_yaml, sample.spec.job_template.runtime_env_yaml);
    }

    // Suspend: an event, and no RayJob for the next tick (a minute away on the operator's clock).
    crons
        .patch(
            &name,
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"suspend": true}})),
        )
        .await
        .unwrap();
    wait_for("the SuspendedRayCronJob event", || async {
        let events = events_with(&client, "SuspendedRayCronJob", &name).await;
        events.first().map(|e| {
            assert_eq!(
                e.note.as_deref(),
                Some("RayCronJob suspended, no new RayJobs will be created")
            )
        })
    })
    .await;
    assert_eq!(children(&client, &name).await, expected);

    // Bad input: each gets KubeRay's Warning Event naming what is wrong; the operator keeps serving.
    let bad_cases = [
        (
            "bad-schedule",
            json!({"schedule": "invalid cron string"}),
            "default/bad-schedule: invalid cron schedule: expected exactly 5 fields, found 3: [invalid cron string]",
        ),
        (
            "bad-zone",
            json!({"schedule": "* * * * *", "timeZone": "Mars/Phobos"}),
            "default/bad-zone: invalid time zone: unknown time zone Mars/Phobos",
        ),
        (
            "tz-in-schedule",
            json!({"schedule": "CRON_TZ=UTC * * * * *"}),
            "default/tz-in-schedule: cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ),
    ];
    for (bad_name, fields, _) in &bad_cases {
        let mut bad = sample.clone();
        bad.metadata.name = Some((*bad_name).to_owned());
        bad.spec.schedule = fields["schedule"].as_str().unwrap().to_owned();
        bad.spec.time_zone = fields["timeZone"].as_str().map(str::to_owned);
        crons.create(&PostParams::default(), &bad).await.unwrap();
    }
    for (bad_name, _, note) in &bad_cases {
        wait_for(&format!("the InvalidRayCronJobSpec event of {bad_name}"), || async {
            let events = events_with(&client, "InvalidRayCronJobSpec", bad_name).await;
            events.first().map(|e| {
                assert_eq!(e.type_.as_deref(), Some("Warning"));
                assert_eq!(e.action.as_deref(), Some("Validate"));
                assert_eq!(e.note.as_deref(), Some(*note));
            })
        })
        .await;
        assert!(children(&client, bad_name).await.is_empty());
        let stored = crons.get(bad_name).await.unwrap();
        assert!(stored.status.and_then(|s| s.last_schedule_time).is_none());
    }

    // KubeRay's time zone sample is valid: no warning, and it waits for 21:45 in Taipei.
    let zoned: RayCronJob = sample_document("ray-cronjob-timezone.sample.yaml", "RayCronJob");
    let zoned = crons.create(&PostParams::default(), &zoned).await.unwrap();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        events_with(&client, "InvalidRayCronJobSpec", &zoned.name_any())
            .await
            .is_empty()
    );
}
