use super::*;
use crate::raycluster::observed::{PodRole, ReadyCondition, UpgradeMarks};
use proptest::prelude::*;
use ray_autoscale::ObservedPod;

fn bounds(max_unavailable: i64, max_surge: i64) -> RollingUpdateBounds {
    RollingUpdateBounds {
        max_unavailable,
        max_surge,
    }
}

const SETTINGS: StepSettings = StepSettings {
    paused: false,
    now_unix: 10_000,
    progress_deadline_seconds: 600,
};

fn unit(name: &str, updated: bool, ready: bool) -> Unit {
    Unit {
        pods: vec![name.to_owned()],
        updated,
        ready,
        created_unix: Some(SETTINGS.now_unix - 10),
    }
}

fn view(desired: i64, units: Vec<Unit>) -> GroupView {
    GroupView {
        desired,
        units,
        terminating: 0,
    }
}

fn outdated_group(n: usize) -> Vec<Unit> {
    (0..n).map(|i| unit(&format!("w-{i:02}"), false, true)).collect()
}

#[test]
fn twenty_workers_two_unavailable_deletes_two_at_a_time() {
    let s = step(&view(20, outdated_group(20)), bounds(2, 0), SETTINGS);
    assert_eq!(s.delete, vec![vec!["w-00".to_owned()], vec!["w-01".to_owned()]]);
    assert_eq!(s.surge, 0);
    assert_eq!(s.state, RolloutState::Progressing);
    assert_eq!(
        s.progress,
        Progress {
            desired: 20,
            total: 20,
            updated: 0,
            ready: 20,
            updated_ready: 0
        }
    );
    // The two being replaced are gone and their successors not ready yet: nothing more.
    let mut units = outdated_group(20)[2..].to_vec();
    units.push(unit("n-1", true, false));
    units.push(unit("n-2", true, false));
    assert!(step(&view(20, units), bounds(2, 0), SETTINGS).delete.is_empty());
}

#[test]
fn unready_outdated_replicas_go_first() {
    let mut units = outdated_group(4);
    units[3].ready = false;
    let s = step(&view(4, units), bounds(1, 0), SETTINGS);
    assert_eq!(s.delete, vec![vec!["w-03".to_owned()]]);
}

#[test]
fn surge_creates_before_deleting() {
    let s = step(&view(3, outdated_group(3)), bounds(0, 1), SETTINGS);
    assert!(s.delete.is_empty());
    assert_eq!(s.surge, 1);
    let mut units = outdated_group(3);
    units.push(unit("n-1", true, true));
    let s = step(&view(3, units), bounds(0, 1), SETTINGS);
    assert_eq!(s.delete.len(), 1);
}

#[test]
fn a_replacement_that_never_gets_ready_is_reported_stuck_and_stops_deletions() {
    let mut units = outdated_group(20)[2..].to_vec();
    let mut new = unit("n-1", true, false);
    new.created_unix = Some(SETTINGS.now_unix - 601);
    units.push(new);
    units.push(unit("n-2", true, false));
    let s = step(&view(20, units), bounds(2, 0), SETTINGS);
    assert!(s.delete.is_empty());
    assert_eq!(
        s.state,
        RolloutState::Stuck {
            pod: "n-1".to_owned(),
            seconds: 601
        }
    );
}

#[test]
fn paused_deletes_nothing_and_creates_no_surge() {
    let settings = StepSettings {
        paused: true,
        ..SETTINGS
    };
    let s = step(&view(3, outdated_group(3)), bounds(1, 2), settings);
    assert!(s.delete.is_empty());
    assert_eq!((s.surge, s.state), (0, RolloutState::Paused));
}

#[test]
fn complete_when_every_replica_is_updated() {
    let units = (0..3).map(|i| unit(&format!("n-{i}"), true, true)).collect();
    let s = step(&view(3, units), bounds(1, 1), SETTINGS);
    assert_eq!((s.delete.len(), s.surge, s.state), (0, 0, RolloutState::Complete));
}

fn pod_info(name: &str, hash: &str, replica: Option<&str>, ready: bool, terminating: bool) -> PodInfo {
    let mut pod = ObservedPod::running(name);
    pod.replica_name = replica.map(str::to_owned);
    pod.deletion_timestamp_set = terminating;
    PodInfo {
        pod,
        role: PodRole::Worker,
        group: "g".to_owned(),
        pod_ip: String::new(),
        ready: Some(ReadyCondition {
            status: if ready { "True" } else { "False" }.to_owned(),
            ..ReadyCondition::default()
        }),
        container_problem: None,
        awaiting_node: false,
        upgrade: UpgradeMarks {
            worker_template_hash: hash.to_owned(),
            created_unix: Some(1),
            ..UpgradeMarks::default()
        },
    }
}

#[test]
fn multi_host_replicas_are_units_and_listed_or_terminating_ones_do_not_count() {
    let pods = [
        pod_info("a-0", "H", Some("a"), true, false),
        pod_info("a-1", "H", Some("a"), true, false),
        pod_info("b-0", "H", Some("b"), true, false),
        pod_info("b-1", "OLD", Some("b"), true, false),
        pod_info("c-0", "OLD", Some("c"), true, false),
        pod_info("c-1", "OLD", Some("c"), false, true),
        pod_info("d-0", "OLD", Some("d"), true, false),
        pod_info("d-1", "OLD", Some("d"), true, false),
        // Missing a host: not ready.
        pod_info("e-0", "H", Some("e"), true, false),
    ];
    let refs: Vec<&PodInfo> = pods.iter().collect();
    let v = group_view(4, 2, &refs, &["d-1".to_owned()], "H");
    assert_eq!(v.terminating, 1);
    let summary: Vec<(Vec<String>, bool, bool)> =
        v.units.iter().map(|u| (u.pods.clone(), u.updated, u.ready)).collect();
    assert_eq!(
        summary,
        vec![
            (vec!["a-0".to_owned(), "a-1".to_owned()], true, true),
            (vec!["b-0".to_owned(), "b-1".to_owned()], false, true),
            (vec!["e-0".to_owned()], true, false),
        ]
    );
    // Single-host: every pod is its own unit, replica names or not.
    let v = group_view(4, 1, &refs, &[], "H");
    assert_eq!(v.units.len() + v.terminating, pods.len());
}

/// A simulated group: the step runs, deleted replicas terminate for a while, the scale step tops the group up
/// to `desired + surge` counting terminating replicas (as KubeRay's scale step does), and new replicas get
/// ready after a delay.
#[derive(Clone, Debug)]
struct SimUnit {
    name: String,
    updated: bool,
    ready_at: Option<u32>,
    gone_at: Option<u32>,
}

struct Outcome {
    max_missing: i64,
    ticks: u32,
    complete: bool,
}

fn simulate(
    desired: usize,
    b: RollingUpdateBounds,
    delays: &[u32],
    replans: usize,
    never_ready: bool,
    max_ticks: u32,
) -> Outcome {
    let mut units: Vec<SimUnit> = (0..desired)
        .map(|i| SimUnit {
            name: format!("old-{i:03}"),
            updated: false,
            ready_at: Some(0),
            gone_at: None,
        })
        .collect();
    let mut created = 0usize;
    let mut max_missing = 0;
    for tick in 0..max_ticks {
        units.retain(|u| u.gone_at.is_none_or(|g| g > tick));
        let desired_i = i64::try_from(desired).unwrap();
        let observe = |units: &[SimUnit]| GroupView {
            desired: desired_i,
            units: units
                .iter()
                .filter(|u| u.gone_at.is_none())
                .map(|u| Unit {
                    pods: vec![u.name.clone()],
                    updated: u.updated,
                    ready: u.ready_at.is_some_and(|r| r <= tick),
                    created_unix: Some(0),
                })
                .collect(),
            terminating: units.iter().filter(|u| u.gone_at.is_some()).count(),
        };
        let v = observe(&units);
        if v.units.iter().all(|u| u.updated && u.ready) && v.terminating == 0 && v.units.len() == desired {
            return Outcome {
                max_missing,
                ticks: tick,
                complete: true,
            };
        }
        // The same observation planned again (a restarted operator, a second event) must not over-delete.
        let mut surge = 0;
        for _ in 0..=replans {
            let s = step(&observe(&units), b, SETTINGS);
            surge = s.surge;
            for pods in s.delete {
                let delay = delays[created % delays.len()];
                if let Some(u) = units.iter_mut().find(|u| u.name == pods[0]) {
                    u.gone_at = Some(tick + 1 + delay % 2);
                }
            }
        }
        let target = desired + usize::try_from(surge).unwrap();
        while units.len() < target {
            let delay = delays[created % delays.len()];
            units.push(SimUnit {
                name: format!("new-{created:04}"),
                updated: true,
                ready_at: (!never_ready).then_some(tick + 1 + delay),
                gone_at: None,
            });
            created += 1;
        }
        assert!(units.len() <= desired + usize::try_from(b.max_surge).unwrap());
        let ready = units
            .iter()
            .filter(|u| u.gone_at.is_none() && u.ready_at.is_some_and(|r| r <= tick))
            .count();
        max_missing = max_missing.max(desired_i - i64::try_from(ready).unwrap());
    }
    Outcome {
        max_missing,
        ticks: max_ticks,
        complete: false,
    }
}

proptest! {
    #[test]
    fn never_more_than_max_unavailable_missing_and_always_finishes(
        desired in 1usize..40,
        max_unavailable in 0i64..5,
        max_surge in 0i64..5,
        delays in proptest::collection::vec(0u32..4, 1..8),
        replans in 0usize..3,
    ) {
        prop_assume!(max_unavailable + max_surge > 0);
        let b = bounds(max_unavailable, max_surge);
        let outcome = simulate(desired, b, &delays, replans, false, 2_000);
        prop_assert!(outcome.complete, "did not finish in {} ticks", outcome.ticks);
        prop_assert!(outcome.max_missing <= max_unavailable, "missing {} > {max_unavailable}", outcome.max_missing);
    }

    #[test]
    fn replacements_that_never_get_ready_stop_the_upgrade_within_one_budget(
        desired in 1usize..40,
        max_unavailable in 0i64..5,
        max_surge in 0i64..5,
        delays in proptest::collection::vec(0u32..4, 1..8),
    ) {
        prop_assume!(max_unavailable + max_surge > 0);
        let b = bounds(max_unavailable, max_surge);
        let outcome = simulate(desired, b, &delays, 1, true, 200);
        prop_assert!(!outcome.complete || desired == 0);
        prop_assert!(outcome.max_missing <= max_unavailable);
    }
}

mod in_a_pass {
    use super::*;
    use crate::config::ReconcileConfig;
    use crate::raycluster::observed::ObservedState;
    use crate::raycluster::plan::{DeleteKind, PodAction, plan_pods};
    use crate::raycluster::podgen::PodGenSettings;
    use crate::raycluster::test_fixtures;
    use crate::raycluster::upgrade_status::{REASON_INVALID, REASON_ROLLING_UPDATE, WORKER_UPGRADE_IN_PROGRESS};
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use std::sync::Arc;

    fn cluster(rolling_update: &str) -> ray_api::RayCluster {
        let mut c = test_fixtures::cluster(&format!(
            "  upgradeStrategy: {{type: RollingUpdate, rollingUpdate: {rolling_update}}}\n"
        ));
        let group = &mut c.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(4);
        c
    }

    fn observed(worker_hash: &str) -> ObservedState {
        let mut head = pod_info("demo-head", "", None, true, false);
        head.role = PodRole::Head;
        head.group = "headgroup".to_owned();
        let mut pods = vec![Arc::new(head)];
        for i in 0..4 {
            let mut w = pod_info(&format!("demo-small-worker-{i}"), worker_hash, None, true, false);
            w.group = "small".to_owned();
            pods.push(Arc::new(w));
        }
        ObservedState {
            pods,
            ..ObservedState::default()
        }
    }

    fn rolling_deletes(c: &ray_api::RayCluster, o: &ObservedState) -> Vec<String> {
        let mut suffix = || "abcde".to_owned();
        plan_pods(
            c,
            o,
            &ReconcileConfig::default(),
            &PodGenSettings::default(),
            &mut suffix,
        )
        .actions
        .into_iter()
        .filter_map(|a| match a {
            PodAction::DeletePod {
                name,
                kind: DeleteKind::RollingUpgrade(_),
                ..
            } => Some(name),
            _ => None,
        })
        .collect()
    }

    fn condition(c: &ray_api::RayCluster, o: &ObservedState) -> (String, String, String) {
        let now = Time(k8s_openapi::jiff::Timestamp::from_second(10_000).unwrap());
        let mut status = ray_api::RayClusterStatus::default();
        let mut conds = Vec::new();
        crate::raycluster::upgrade_status::apply(&mut status, &mut conds, c, o, true, &now);
        let cond = conds
            .into_iter()
            .find(|c| c.type_ == WORKER_UPGRADE_IN_PROGRESS)
            .unwrap();
        (cond.status, cond.reason, cond.message)
    }

    #[test]
    fn outdated_workers_are_replaced_within_the_bound_and_reported() {
        let c = cluster("{maxUnavailable: 2}");
        let o = observed("OLD");
        assert_eq!(rolling_deletes(&c, &o), ["demo-small-worker-0", "demo-small-worker-1"]);
        let (status, reason, message) = condition(&c, &o);
        assert_eq!((status.as_str(), reason.as_str()), ("True", REASON_ROLLING_UPDATE));
        assert!(
            message.contains("group small: 0 of 4 replicas updated, 4 ready"),
            "{message}"
        );
        // Up to date: nothing to delete.
        let hash = ray_podgen::hash::worker_group_hash(&c.spec.worker_group_specs.as_ref().unwrap()[0]);
        assert!(rolling_deletes(&c, &observed(&hash)).is_empty());
        // KubeRay's strategies never touch outdated workers.
        let mut none = c.clone();
        none.spec.upgrade_strategy = None;
        assert!(rolling_deletes(&none, &o).is_empty());
    }

    /// `numOfHosts: 2`: a replica is replaced whole, and `maxUnavailable: 1` means one replica (two pods).
    #[test]
    fn a_multi_host_replica_is_replaced_as_a_unit() {
        let mut c = cluster("{maxUnavailable: 1}");
        let group = &mut c.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(2);
        group.num_of_hosts = Some(2);
        let mut o = observed("OLD");
        o.pods.truncate(1);
        for replica in ["r-a", "r-b"] {
            for host in 0..2 {
                let mut w = pod_info(&format!("{replica}-{host}"), "OLD", Some(replica), true, false);
                w.group = "small".to_owned();
                w.pod.host_index = Some(host);
                o.pods.push(Arc::new(w));
            }
        }
        assert_eq!(rolling_deletes(&c, &o), ["r-a-0", "r-a-1"]);
    }

    #[test]
    fn a_surge_creates_a_new_worker_before_any_old_one_goes() {
        let c = cluster("{maxUnavailable: 0, maxSurge: 1}");
        let o = observed("OLD");
        assert!(rolling_deletes(&c, &o).is_empty());
        let mut suffix = || "abcde".to_owned();
        let plan = plan_pods(
            &c,
            &o,
            &ReconcileConfig::default(),
            &PodGenSettings::default(),
            &mut suffix,
        );
        let created: Vec<_> = plan
            .actions
            .iter()
            .filter_map(|a| match a {
                PodAction::CreatePod { pod, group } if group == "small" => Some(pod),
                _ => None,
            })
            .collect();
        assert_eq!(created.len(), 1, "{:?}", plan.actions);
        let hash = ray_podgen::hash::worker_group_hash(&c.spec.worker_group_specs.as_ref().unwrap()[0]);
        let annotations = created[0].metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[ray_api::constants::WORKER_TEMPLATE_HASH_ANNOTATION], hash);
    }

    #[test]
    fn a_config_that_cannot_progress_deletes_nothing_and_names_the_field() {
        for (config, field_text) in [
            ("{maxUnavailable: 0, maxSurge: 0}", "both 0"),
            ("{maxUnavailable: \"10%\"}", "10% of 4 replicas rounds to 0"),
            (
                "{maxSurge: \"x\"}",
                "spec.upgradeStrategy.rollingUpdate.maxSurge \"x\" is invalid",
            ),
        ] {
            let c = cluster(config);
            let o = observed("OLD");
            assert!(rolling_deletes(&c, &o).is_empty(), "{config}");
            let (status, reason, message) = condition(&c, &o);
            assert_eq!(
                (status.as_str(), reason.as_str()),
                ("False", REASON_INVALID),
                "{config}"
            );
            assert!(message.contains("spec.upgradeStrategy.rollingUpdate."), "{message}");
            assert!(message.contains(field_text), "{message}");
        }
    }
}
