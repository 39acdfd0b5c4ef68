//! KubeRay's incremental-upgrade golden cases G47, G49 and G53 (the tests carry KubeRay's case
//! numbers), plus property tests of the stepping math.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use k8s_openapi::api::core::v1::{Container, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use proptest::prelude::*;
use ray_api::{
    ClusterUpgradeOptions, HeadGroupSpec, RayClusterSpec, RayServiceSpec, RayServiceUpgradeStrategy,
    RayServiceUpgradeType,
};
use ray_podgen::PodGenConfig;
use ray_podgen::rayservice::build_ray_cluster_for_service;

use super::super::gateway::{RouteBackend, build_gateway, build_http_route, route_weights};
use super::*;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn options(max_surge: i32, step: i32, interval: i32) -> ClusterUpgradeOptions {
    ClusterUpgradeOptions {
        max_surge_percent: Some(max_surge),
        step_size_percent: Some(step),
        interval_seconds: Some(interval),
        gateway_class_name: "istio".into(),
    }
}

fn service(name: &str, image: &str, opts: Option<ClusterUpgradeOptions>) -> RayService {
    let template = PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "ray-head".into(),
                image: Some(image.into()),
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    };
    let mut service = RayService::new(
        name,
        RayServiceSpec {
            ray_cluster_config: RayClusterSpec {
                enable_in_tree_autoscaling: Some(true),
                head_group_spec: HeadGroupSpec {
                    template,
                    ..HeadGroupSpec::default()
                },
                ..RayClusterSpec::default()
            },
            upgrade_strategy: Some(RayServiceUpgradeStrategy {
                type_: Some(RayServiceUpgradeType::NewClusterWithIncrementalUpgrade),
                cluster_upgrade_options: opts,
            }),
            ..RayServiceSpec::default()
        },
    );
    service.metadata.namespace = Some("default".into());
    service
}

fn side(name: &str, capacity: Option<i32>, traffic: Option<i32>) -> Option<RayServiceStatus> {
    Some(RayServiceStatus {
        ray_cluster_name: Some(name.into()),
        target_capacity: capacity,
        traffic_routed_percent: traffic,
        ..RayServiceStatus::default()
    })
}

fn statuses(active: Option<RayServiceStatus>, pending: Option<RayServiceStatus>) -> RayServiceStatuses {
    RayServiceStatuses {
        active_service_status: active,
        pending_service_status: pending,
        ..RayServiceStatuses::default()
    }
}

#[test]
fn g47_target_capacity_step_raises_pending_then_lowers_active() {
    let opts = options(20, 10, 30);
    // Active 70 / pending 10 with 10% of the traffic: total 80 ≤ 100 ⇒ the pending cluster rises.
    let status = statuses(side("active", Some(70), None), side("pending", Some(10), Some(10)));
    assert_eq!(target_capacity_step(&status, &opts, Role::Active, false), None);
    let goal = target_capacity_step(&status, &opts, Role::Pending, false);
    assert_eq!(goal, Some(30));
    assert_eq!(
        serve_body_with_capacity("", goal).unwrap(),
        serde_json::json!({"target_capacity": 30})
    );
    // Active 80 / pending 30 with 30%: total 110 > 100 ⇒ the active cluster drops.
    let status = statuses(side("active", Some(80), None), side("pending", Some(30), Some(30)));
    assert_eq!(target_capacity_step(&status, &opts, Role::Pending, false), None);
    let goal = target_capacity_step(&status, &opts, Role::Active, false);
    assert_eq!(goal, Some(60));
    assert_eq!(
        serve_body_with_capacity("", goal).unwrap(),
        serde_json::json!({"target_capacity": 60})
    );
}

#[test]
fn g47_target_capacity_step_waits_for_traffic_and_needs_both_clusters() {
    let opts = options(20, 10, 30);
    let migrating = statuses(side("active", Some(70), None), side("pending", Some(30), Some(10)));
    assert_eq!(target_capacity_step(&migrating, &opts, Role::Pending, false), None);
    assert_eq!(target_capacity_step(&migrating, &opts, Role::Active, false), None);
    let no_pending = statuses(side("active", Some(70), None), None);
    assert_eq!(target_capacity_step(&no_pending, &opts, Role::Active, false), None);
    let body = serve_body_with_capacity("applications:\n- name: app\n  import_path: a.b\n", Some(0)).unwrap();
    assert_eq!(body["target_capacity"], 0);
    assert_eq!(body["applications"][0]["name"], "app");
    assert_eq!(
        serve_body_with_capacity("applications: []", None).unwrap(),
        serde_json::json!({"applications": []})
    );
}

fn route_service(pending_capacity: i32, last_migrated: Option<Timestamp>) -> RayService {
    let mut rs = service("test-rayservice", "rayproject/ray:2.52.0", Some(options(100, 10, 30)));
    let mut pending = side("pending", Some(pending_capacity), Some(0)).unwrap();
    pending.last_traffic_migrated_time = last_migrated.map(Time);
    rs.status = Some(statuses(side("active", Some(100), Some(100)), Some(pending)));
    rs
}

fn weights_of(rs: &RayService, pending_ready: bool, now: Timestamp) -> Result<TrafficWeights, IncrementalError> {
    traffic_weights(rs, rs.status.as_ref().unwrap(), pending_ready, false, now)
}

#[test]
fn g49_http_route_weights() {
    let now = t(1000);
    let w = |active, pending| TrafficWeights { active, pending };
    // Pending not ready ⇒ unchanged.
    assert_eq!(weights_of(&route_service(60, None), false, now).unwrap(), w(100, 0));
    // Last migration just now ⇒ unchanged.
    assert_eq!(weights_of(&route_service(60, Some(now)), true, now).unwrap(), w(100, 0));
    // More than the interval ago, pending capacity 60 ⇒ one step of 10.
    let before = now.checked_sub(SignedDuration::from_secs(31)).unwrap();
    assert_eq!(
        weights_of(&route_service(60, Some(before)), true, now).unwrap(),
        w(90, 10)
    );
    // Pending capacity 5 caps the step.
    assert_eq!(
        weights_of(&route_service(5, Some(before)), true, now).unwrap(),
        w(95, 5)
    );
    // Missing options ⇒ error.
    let mut missing = route_service(60, None);
    missing.spec.upgrade_strategy.as_mut().unwrap().cluster_upgrade_options = None;
    assert_eq!(
        traffic_weights(&missing, &missing.status.clone().unwrap(), true, false, now),
        Err(IncrementalError::MissingOptions)
    );
}

#[test]
fn g49_http_route_shape() {
    let rs = route_service(60, None);
    let active = RouteBackend {
        cluster: "active",
        port: 8000,
    };
    let pending = RouteBackend {
        cluster: "pending",
        port: 8000,
    };
    let route = build_http_route(
        &rs,
        &active,
        Some(&pending),
        TrafficWeights {
            active: 90,
            pending: 10,
        },
    );
    assert_eq!(route.metadata.name.as_deref(), Some("test-rayservice-httproute"));
    let value = serde_json::to_value(&route).unwrap();
    assert_eq!(value["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(value["kind"], "HTTPRoute");
    assert_eq!(
        value["spec"]["parentRefs"],
        serde_json::json!([{"name": "test-rayservice-gateway", "namespace": "default"}])
    );
    let rule = &value["spec"]["rules"][0];
    assert_eq!(
        rule["matches"],
        serde_json::json!([{"path": {"type": "PathPrefix", "value": "/"}}])
    );
    assert_eq!(
        rule["backendRefs"],
        serde_json::json!([
            {"name": "active-serve-svc", "namespace": "default", "port": 8000, "weight": 90},
            {"name": "pending-serve-svc", "namespace": "default", "port": 8000, "weight": 10},
        ])
    );
    assert_eq!(
        route_weights(&route, Some("active"), Some("pending")),
        (Some(90), Some(10))
    );
    // No pending cluster ⇒ a single backend with all the traffic.
    let single = build_http_route(
        &rs,
        &active,
        None,
        TrafficWeights {
            active: 100,
            pending: 0,
        },
    );
    let backends = &single.spec.rules[0].backend_refs;
    assert_eq!(backends.len(), 1);
    assert_eq!(backends[0].name, "active-serve-svc");
    assert_eq!(backends[0].weight, Some(100));
    assert_eq!(
        route_weights(&single, Some("active"), Some("pending")),
        (Some(100), None)
    );
}

#[test]
fn g49_gateway() {
    let rs = service(
        "incremental-ray-service",
        "rayproject/ray:2.52.0",
        Some(options(100, 10, 30)),
    );
    let gateway = build_gateway(&rs).unwrap();
    assert_eq!(
        gateway.metadata.name.as_deref(),
        Some("incremental-ray-service-gateway")
    );
    assert_eq!(gateway.spec.gateway_class_name, "istio");
    assert_eq!(gateway.spec.listeners.len(), 1);
    let value = serde_json::to_value(&gateway).unwrap();
    assert_eq!(value["apiVersion"], "gateway.networking.k8s.io/v1");
    assert_eq!(
        value["spec"]["listeners"],
        serde_json::json!([{"name": "http", "protocol": "HTTP", "port": 80}])
    );
    let missing = service("incremental-ray-service", "rayproject/ray:2.52.0", None);
    assert_eq!(build_gateway(&missing), Err(IncrementalError::MissingOptions));
}

fn cluster_of(rs: &RayService, name: &str) -> RayCluster {
    build_ray_cluster_for_service(rs, name, &PodGenConfig::default()).unwrap()
}

fn rollback_case(goal_image: &str, pending_image: &str, rolling_back: bool) -> bool {
    let active = cluster_of(&service("rs", "base", None), "active");
    let pending = cluster_of(&service("rs", pending_image, None), "pending");
    let goal = service("rs", goal_image, None);
    let mut status = RayServiceStatuses::default();
    let now = Time(t(0));
    if rolling_back {
        reconcile_rollback_state(
            &mut status,
            &service("rs", "base", None),
            Some(&active),
            Some(&pending),
            &now,
        );
        assert!(super::rolling_back(&status));
    }
    reconcile_rollback_state(&mut status, &goal, Some(&active), Some(&pending), &now);
    let rolling = super::rolling_back(&status);
    if rolling {
        let c = status.conditions.as_ref().unwrap();
        let c = c.iter().find(|c| c.type_ == condition::ROLLBACK_IN_PROGRESS).unwrap();
        assert_eq!(c.reason, "DesiredClusterSpecChanged");
    } else {
        assert!(
            status
                .conditions
                .as_ref()
                .is_none_or(|c| c.iter().all(|c| c.type_ != condition::ROLLBACK_IN_PROGRESS))
        );
    }
    rolling
}

#[test]
fn g53_reconcile_rollback_state() {
    assert!(
        !rollback_case("updated", "updated", false),
        "goal=updated ⇒ no rollback"
    );
    assert!(rollback_case("base", "updated", false), "goal=base ⇒ rollback");
    assert!(
        rollback_case("base", "updated", true),
        "rolling back, goal=base ⇒ stays"
    );
    assert!(
        !rollback_case("updated", "updated", true),
        "rolling back, goal=updated ⇒ cleared"
    );
    assert!(rollback_case("third", "updated", false), "goal=third spec ⇒ rollback");
    assert!(
        rollback_case("base", "base", false),
        "goal=base, pending also base ⇒ rollback"
    );
}

#[test]
fn g53_should_complete_incremental_rollback() {
    let active = side("active", Some(100), Some(100));
    let healthy_drained = statuses(active.clone(), side("pending", Some(0), Some(0)));
    assert!(rollback_complete(&healthy_drained, Some(true)));
    let unhealthy = statuses(active.clone(), side("pending", Some(30), Some(0)));
    assert!(rollback_complete(&unhealthy, Some(false)));
    assert!(rollback_complete(&statuses(active.clone(), None), None));
    let healthy_busy = statuses(active, side("pending", Some(50), Some(0)));
    assert!(!rollback_complete(&healthy_busy, Some(true)));
}

#[test]
fn rollback_completion_clears_pending_and_reports() {
    let mut status = statuses(side("active", Some(100), Some(100)), side("pending", Some(0), Some(0)));
    let now = Time(t(0));
    reconcile_rollback_state(
        &mut status,
        &service("rs", "base", None),
        Some(&cluster_of(&service("rs", "base", None), "active")),
        Some(&cluster_of(&service("rs", "updated", None), "pending")),
        &now,
    );
    complete_rollback(&mut status, &now);
    assert_eq!(status.pending_service_status, Some(RayServiceStatus::default()));
    let list = status.conditions.unwrap();
    assert!(list.iter().all(|c| c.type_ != condition::ROLLBACK_IN_PROGRESS));
    let upgrade = list.iter().find(|c| c.type_ == condition::UPGRADE_IN_PROGRESS).unwrap();
    assert_eq!(
        (
            upgrade.status.as_str(),
            upgrade.reason.as_str(),
            upgrade.message.as_str()
        ),
        ("False", "NoPendingCluster", ROLLBACK_COMPLETE_MESSAGE)
    );
}

#[test]
fn rollback_moves_traffic_and_capacity_back() {
    let opts = options(50, 25, 1);
    let mut rs = service("rs", "base", Some(opts.clone()));
    rs.status = Some(statuses(
        side("active", Some(50), Some(50)),
        side("pending", Some(100), Some(50)),
    ));
    let status = rs.status.clone().unwrap();
    // Active traffic equals its capacity and the total exceeds 100 ⇒ the pending cluster shrinks.
    assert_eq!(target_capacity_step(&status, &opts, Role::Pending, true), Some(50));
    assert_eq!(target_capacity_step(&status, &opts, Role::Active, true), None);
    // Traffic moves back to the active cluster only up to its capacity.
    assert_eq!(
        traffic_weights(&rs, &rs.status.clone().unwrap(), false, true, t(10)).unwrap(),
        TrafficWeights {
            active: 50,
            pending: 50
        }
    );
}

#[test]
fn upgrade_completes_at_zero_active_capacity_and_full_pending_traffic() {
    assert!(upgrade_complete(&statuses(
        side("a", Some(0), Some(0)),
        side("p", Some(100), Some(100))
    )));
    assert!(!upgrade_complete(&statuses(
        side("a", Some(0), Some(10)),
        side("p", Some(100), Some(90))
    )));
    assert!(!upgrade_complete(&statuses(
        side("a", Some(50), Some(0)),
        side("p", Some(100), Some(100))
    )));
}

/// Runs a whole forward upgrade with the plan's steps, one pass per interval; returns the
/// weights seen and checks the invariants on every pass.
fn simulate(max_surge: i32, step: i32) -> Vec<TrafficWeights> {
    let opts = options(max_surge, step, 1);
    let mut rs = service("rs", "img", Some(opts.clone()));
    rs.status = Some(statuses(side("a", Some(100), Some(100)), side("p", Some(0), Some(0))));
    let mut seen = Vec::new();
    for pass in 0..1000 {
        let now = t(i64::from(pass) * 2);
        let mut status = rs.status.clone().unwrap();
        for role in [Role::Pending, Role::Active] {
            if let Some(goal) = target_capacity_step(&status, &opts, role, false) {
                set_target_capacity(&mut status, role, goal);
            }
        }
        rs.status = Some(status.clone());
        let weights = traffic_weights(&rs, &rs.status.clone().unwrap(), true, false, now).unwrap();
        record_route_weights(&mut status, (Some(weights.active), Some(weights.pending)), &Time(now));
        assert_eq!(weights.active + weights.pending, FULL_PERCENT);
        assert!(weights.pending <= target_capacity(&status, Role::Pending));
        assert!((0..=FULL_PERCENT).contains(&target_capacity(&status, Role::Active)));
        assert!((0..=FULL_PERCENT).contains(&target_capacity(&status, Role::Pending)));
        seen.push(weights);
        let done = upgrade_complete(&status);
        rs.status = Some(status);
        if done {
            return seen;
        }
    }
    panic!("upgrade with maxSurge {max_surge} step {step} did not complete: {seen:?}");
}

#[test]
fn forward_upgrade_sequence_maxsurge_50_step_25() {
    let pending: Vec<i32> = simulate(50, 25).iter().map(|w| w.pending).collect();
    let mut distinct = pending.clone();
    distinct.dedup();
    assert_eq!(distinct, vec![25, 50, 75, 100]);
}

proptest! {
    #[test]
    fn forward_upgrade_always_completes_within_bounds(max_surge in 1i32..=100, step_frac in 1i32..=100) {
        // stepSizePercent ≤ maxSurgePercent (validation).
        let step = 1.max(max_surge * step_frac / 100);
        let seen = simulate(max_surge, step);
        prop_assert_eq!(seen.last().map(|w| w.pending), Some(FULL_PERCENT));
    }
}

mod status {
    use super::super::super::plan::{IncrementalInputs, StatusInputs, calculate_status};
    use super::*;

    fn config() -> RayServicePlanConfig {
        RayServicePlanConfig {
            enable_zero_downtime: None,
            incremental_upgrade_gate: true,
        }
    }

    fn inputs<'a>(
        active: Option<&'a RayCluster>,
        pending: Option<&'a RayCluster>,
        services_cluster: Option<&str>,
        observed: IncrementalInputs,
    ) -> StatusInputs<'a> {
        StatusInputs {
            active,
            pending,
            services_cluster: services_cluster.map(str::to_owned),
            num_serve_endpoints: 1,
            new_cluster_name: "rs-new01".into(),
            now: Time(t(0)),
            incremental: Some(observed),
        }
    }

    fn upgrading(mut status: RayServiceStatuses) -> RayServiceStatuses {
        crate::conditions::set(
            status.conditions.get_or_insert_with(Vec::new),
            condition::UPGRADE_IN_PROGRESS,
            "True",
            reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
            "Both active and pending Ray clusters exist",
            &Time(t(0)),
        );
        status
    }

    #[test]
    fn fresh_pending_cluster_gets_full_capacity_and_is_promoted_once_serving() {
        let rs = service("rs", "base", Some(options(50, 25, 1)));
        let status = calculate_status(
            &rs,
            RayServiceStatuses::default(),
            &inputs(None, None, None, IncrementalInputs::default()),
            &config(),
        )
        .unwrap();
        let pending = status.pending_service_status.clone().unwrap();
        assert_eq!(pending.ray_cluster_name.as_deref(), Some("rs-new01"));
        assert_eq!(pending.target_capacity, Some(100));

        let first = cluster_of(&rs, "rs-new01");
        let status = calculate_status(
            &rs,
            status,
            &inputs(None, Some(&first), Some("rs-new01"), IncrementalInputs::default()),
            &config(),
        )
        .unwrap();
        assert_eq!(
            status.active_service_status.unwrap().ray_cluster_name.as_deref(),
            Some("rs-new01")
        );
        assert_eq!(status.pending_service_status, Some(RayServiceStatus::default()));
    }

    #[test]
    fn upgrade_pending_starts_at_zero_and_is_promoted_only_when_complete() {
        let old = service("rs", "base", Some(options(50, 25, 1)));
        let active = cluster_of(&old, "rs-aaaaa");
        let rs = service("rs", "updated", Some(options(50, 25, 1)));
        let status = statuses(side("rs-aaaaa", Some(100), Some(100)), None);
        let status = calculate_status(
            &rs,
            status,
            &inputs(Some(&active), None, Some("rs-aaaaa"), IncrementalInputs::default()),
            &config(),
        )
        .unwrap();
        assert_eq!(status.pending_service_status.as_ref().unwrap().target_capacity, Some(0));

        let pending = cluster_of(&rs, "rs-new01");
        let mut mid = upgrading(status.clone());
        set_target_capacity(&mut mid, Role::Pending, 50);
        let observed = IncrementalInputs {
            route_weights: (Some(75), Some(25)),
            pending_healthy: Some(true),
        };
        let mid = calculate_status(
            &rs,
            mid,
            &inputs(Some(&active), Some(&pending), Some("rs-aaaaa"), observed),
            &config(),
        )
        .unwrap();
        assert_eq!(
            mid.pending_service_status.as_ref().unwrap().ray_cluster_name.as_deref(),
            Some("rs-new01")
        );
        assert_eq!(
            mid.pending_service_status.as_ref().unwrap().traffic_routed_percent,
            Some(25)
        );
        assert_eq!(
            mid.active_service_status.as_ref().unwrap().traffic_routed_percent,
            Some(75)
        );
        assert_eq!(
            mid.pending_service_status.as_ref().unwrap().last_traffic_migrated_time,
            Some(Time(t(0)))
        );

        let mut done = mid;
        set_target_capacity(&mut done, Role::Active, 0);
        set_target_capacity(&mut done, Role::Pending, 100);
        let observed = IncrementalInputs {
            route_weights: (Some(0), Some(100)),
            pending_healthy: Some(true),
        };
        let done = calculate_status(
            &rs,
            done,
            &inputs(Some(&active), Some(&pending), Some("rs-aaaaa"), observed),
            &config(),
        )
        .unwrap();
        let promoted = done.active_service_status.unwrap();
        assert_eq!(promoted.ray_cluster_name.as_deref(), Some("rs-new01"));
        assert_eq!(
            (promoted.target_capacity, promoted.traffic_routed_percent),
            (Some(100), Some(100))
        );
        assert_eq!(done.pending_service_status, Some(RayServiceStatus::default()));
    }

    #[test]
    fn rollback_prepares_nothing_then_completes_without_a_new_cluster() {
        let rs = service("rs", "base", Some(options(50, 25, 1)));
        let active = cluster_of(&rs, "rs-aaaaa");
        let pending = cluster_of(&service("rs", "updated", None), "rs-bbbbb");
        let mut status = upgrading(statuses(
            side("rs-aaaaa", Some(50), Some(50)),
            side("rs-bbbbb", Some(100), Some(50)),
        ));
        reconcile_rollback_state(&mut status, &rs, Some(&active), Some(&pending), &Time(t(0)));
        let observed = IncrementalInputs {
            route_weights: (Some(75), Some(25)),
            pending_healthy: Some(true),
        };
        let status = calculate_status(
            &rs,
            status,
            &inputs(Some(&active), Some(&pending), Some("rs-aaaaa"), observed),
            &config(),
        )
        .unwrap();
        assert_eq!(
            status
                .pending_service_status
                .as_ref()
                .unwrap()
                .ray_cluster_name
                .as_deref(),
            Some("rs-bbbbb"),
            "no new pending cluster during a rollback"
        );
        assert!(rolling_back(&status));

        let mut back = status;
        set_target_capacity(&mut back, Role::Active, 100);
        set_target_capacity(&mut back, Role::Pending, 0);
        let observed = IncrementalInputs {
            route_weights: (Some(100), Some(0)),
            pending_healthy: Some(true),
        };
        let back = calculate_status(
            &rs,
            back,
            &inputs(Some(&active), Some(&pending), Some("rs-aaaaa"), observed),
            &config(),
        )
        .unwrap();
        assert_eq!(back.pending_service_status, Some(RayServiceStatus::default()));
        assert!(!rolling_back(&back));
        let list = back.conditions.unwrap();
        let upgrade = list.iter().find(|c| c.type_ == condition::UPGRADE_IN_PROGRESS).unwrap();
        assert_eq!(upgrade.message, ROLLBACK_COMPLETE_MESSAGE);
        assert_eq!(
            back.active_service_status.unwrap().ray_cluster_name.as_deref(),
            Some("rs-aaaaa")
        );
    }
}
