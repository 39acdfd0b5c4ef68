//! KubeRay's RayService golden cases for the plan (`g<number>_...`, after KubeRay's case numbers),
//! plus the blue/green status transitions and the dangling-cluster schedule.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Container, ContainerPort, PodSpec, PodTemplateSpec};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use k8s_openapi::jiff::{SignedDuration, Timestamp};
use ray_api::{
    ApplicationStatus, HeadGroupSpec, RayClusterSpec, RayServiceSpec, RayServiceUpgradeStrategy, WorkerGroupSpec,
};
use ray_podgen::PodGenConfig;
use ray_podgen::rayservice::build_ray_cluster_for_service;
use ray_podgen::service::{ServeServiceOwner, build_rayservice_head_service, build_serve_service};

use super::*;

fn t(secs: i64) -> Timestamp {
    Timestamp::from_second(1_700_000_000 + secs).unwrap()
}

fn template(image: &str, ports: Option<Vec<ContainerPort>>) -> PodTemplateSpec {
    PodTemplateSpec {
        metadata: None,
        spec: Some(PodSpec {
            containers: vec![Container {
                name: "ray".into(),
                image: Some(image.into()),
                ports,
                ..Container::default()
            }],
            ..PodSpec::default()
        }),
    }
}

fn group(name: &str) -> WorkerGroupSpec {
    WorkerGroupSpec {
        group_name: name.into(),
        replicas: Some(1),
        template: template("rayproject/ray:2.52.0", None),
        ..WorkerGroupSpec::default()
    }
}

fn service_with(ray_version: &str, groups: Vec<WorkerGroupSpec>) -> RayService {
    let mut service = RayService::new(
        "test-service",
        RayServiceSpec {
            ray_cluster_config: RayClusterSpec {
                ray_version: Some(ray_version.into()),
                head_group_spec: HeadGroupSpec {
                    template: template("rayproject/ray:2.52.0", None),
                    ..HeadGroupSpec::default()
                },
                worker_group_specs: Some(groups),
                ..RayClusterSpec::default()
            },
            serve_config_v2: Some("applications: []".into()),
            ..RayServiceSpec::default()
        },
    );
    service.metadata.namespace = Some("test-namespace".into());
    service.metadata.uid = Some("rs-uid".into());
    service.metadata.generation = Some(1);
    service
}

fn service() -> RayService {
    service_with("old-version", vec![group("small-group")])
}

fn cluster_for(service: &RayService, name: &str) -> RayCluster {
    build_ray_cluster_for_service(service, name, &PodGenConfig::default()).unwrap()
}

fn with_names(mut service: RayService, active: Option<&str>, pending: Option<&str>) -> RayService {
    let status = service.status.get_or_insert_with(Default::default);
    status.active_service_status = active.map(|n| RayServiceStatus {
        ray_cluster_name: Some(n.into()),
        ..RayServiceStatus::default()
    });
    status.pending_service_status = pending.map(|n| RayServiceStatus {
        ray_cluster_name: Some(n.into()),
        ..RayServiceStatus::default()
    });
    service
}

fn cond(status: &RayServiceStatuses, type_: &str) -> (String, String) {
    let c = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == type_)
        .unwrap();
    (c.status.clone(), c.reason.clone())
}

fn condition(type_: &str, status: &str, reason: &str, at: Timestamp) -> Condition {
    Condition {
        type_: type_.into(),
        status: status.into(),
        reason: reason.into(),
        message: String::new(),
        last_transition_time: Time(at),
        observed_generation: None,
    }
}

fn app(status: &str) -> AppStatus {
    AppStatus {
        status: Some(status.into()),
        ..AppStatus::default()
    }
}

fn config() -> RayServicePlanConfig {
    RayServicePlanConfig {
        enable_zero_downtime: None,
        incremental_upgrade_gate: true,
    }
}

#[test]
fn g35_rayservice_head_service_name_ignores_custom_name() {
    let mut rs = service_with("2.52.0", vec![]);
    rs.metadata.name = Some("rayservice-sample".into());
    let cluster = cluster_for(&rs, "rayservice-sample-abcde");
    let head = build_rayservice_head_service(
        "rayservice-sample",
        "test-namespace",
        &cluster,
        &PodGenConfig::default(),
    )
    .unwrap();
    assert_eq!(head.metadata.name.as_deref(), Some("rayservice-sample-head-svc"));
    assert_eq!(selected_cluster(&head), Some("rayservice-sample-abcde"));
}

#[test]
fn g37_check_if_need_submit_serve_applications() {
    let running = BTreeMap::from([("myapp".to_owned(), app("RUNNING"))]);
    let none = BTreeMap::new();
    assert_eq!(
        need_submit_serve_config("", "c1", &none),
        (true, submit_reason::NOTHING_CACHED)
    );
    assert_eq!(
        need_submit_serve_config("c1", "c1", &running),
        (false, submit_reason::CONFIG_MATCHES)
    );
    assert_eq!(
        need_submit_serve_config("c1", "c2", &running),
        (true, submit_reason::CONFIG_CHANGED)
    );
    assert_eq!(
        need_submit_serve_config("c1", "c1", &none),
        (true, submit_reason::NO_APPLICATION)
    );
    assert_eq!(
        need_submit_serve_config("", "c1", &running),
        (true, submit_reason::NOTHING_CACHED)
    );
}

#[test]
fn g38_reconcile_ray_cluster_create_pending() {
    let rs = with_names(service(), None, Some("pending-cluster"));
    assert_eq!(
        plan_cluster(&rs, None, None),
        ClusterAction::CreatePending {
            name: "pending-cluster".into()
        }
    );
}

#[test]
fn g38_reconcile_ray_cluster_refreshes_operator_version() {
    let rs = with_names(service(), Some("active-cluster"), None);
    let mut active = cluster_for(&rs, "active-cluster");
    active
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .insert(KUBERAY_VERSION_ANNOTATION.into(), "new-version".into());
    active.spec.suspend = Some(true);
    active.metadata.resource_version = Some("42".into());
    assert_eq!(plan_cluster(&rs, Some(&active), None), ClusterAction::UpdateActive);
    let updated = updated_cluster(&active, cluster_for(&rs, "active-cluster"));
    assert_eq!(
        updated.metadata.annotations.as_ref().unwrap()[KUBERAY_VERSION_ANNOTATION],
        KUBERAY_VERSION
    );
    // The stored object's identity and `suspend` survive the rebuild.
    assert_eq!(updated.metadata.resource_version.as_deref(), Some("42"));
    assert_eq!(updated.spec.suspend, Some(true));
    // Up to date: nothing to do.
    let fresh = cluster_for(&rs, "active-cluster");
    assert_eq!(plan_cluster(&rs, Some(&fresh), None), ClusterAction::None);
}

#[test]
fn g38_reconcile_ray_cluster_appended_worker_group_updates_in_place() {
    let before = service();
    let active = cluster_for(&before, "active-cluster");
    let pending = cluster_for(&before, "pending-cluster");
    let mut after = service_with("old-version", vec![group("small-group"), group("new-worker-group")]);
    after.status = with_names(before.clone(), Some("active-cluster"), None).status;
    assert_eq!(plan_cluster(&after, Some(&active), None), ClusterAction::UpdateActive);
    let updated = updated_cluster(&active, cluster_for(&after, "active-cluster"));
    assert_eq!(updated.spec.worker_group_specs.as_ref().unwrap().len(), 2);
    assert_eq!(
        updated.metadata.annotations.as_ref().unwrap()[NUM_WORKER_GROUPS_ANNOTATION],
        "2"
    );
    assert!(!should_prepare_new_cluster(
        &after,
        Some(&active),
        None,
        false,
        &config()
    ));
    // The same for a pending cluster (an upgrade in progress keeps the active one as it is).
    let mut upgrading = after.clone();
    upgrading.status = with_names(before, Some("active-cluster"), Some("pending-cluster")).status;
    upgrading.status.as_mut().unwrap().conditions = Some(vec![condition(
        condition::UPGRADE_IN_PROGRESS,
        TRUE,
        reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST,
        t(0),
    )]);
    assert_eq!(
        plan_cluster(&upgrading, Some(&active), Some(&pending)),
        ClusterAction::UpdatePending
    );
    assert!(!should_prepare_new_cluster(
        &upgrading,
        Some(&active),
        Some(&pending),
        false,
        &config()
    ));
}

#[test]
fn g40_calculate_conditions() {
    let now = Time(t(0));
    // Empty RayService: both Initializing.
    let mut status = RayServiceStatuses::default();
    calculate_conditions(&mut status, &now);
    assert_eq!(
        cond(&status, condition::READY),
        (FALSE.into(), reason::INITIALIZING.into())
    );
    assert_eq!(
        cond(&status, condition::UPGRADE_IN_PROGRESS),
        (FALSE.into(), reason::INITIALIZING.into())
    );
    assert_eq!(status.service_status, Some(ServiceStatus::NotRunning));

    // The status after a pass from a prior Ready condition and a count of serve endpoints.
    let ready = |prior: &str, prior_reason: &str, endpoints: i32| {
        let mut status = RayServiceStatuses {
            conditions: Some(vec![condition(condition::READY, prior, prior_reason, t(-5))]),
            num_serve_endpoints: Some(endpoints),
            ..RayServiceStatuses::default()
        };
        calculate_conditions(&mut status, &now);
        status
    };

    // 0 endpoints and Ready False/WhateverReason: Ready unchanged.
    let status = ready(FALSE, "WhateverReason", 0);
    assert_eq!(cond(&status, condition::READY), (FALSE.into(), "WhateverReason".into()));

    // 1 endpoint: Ready True, from False or True.
    for prior in [FALSE, TRUE] {
        let status = ready(prior, "X", 1);
        assert_eq!(
            cond(&status, condition::READY),
            (TRUE.into(), reason::NON_ZERO_SERVE_ENDPOINTS.into())
        );
        assert_eq!(status.service_status, Some(ServiceStatus::Running));
    }

    // 0 endpoints and Ready True: dropped.
    let status = ready(TRUE, "X", 0);
    assert_eq!(
        cond(&status, condition::READY),
        (FALSE.into(), reason::ZERO_SERVE_ENDPOINTS.into())
    );

    let upgrade = |active: Option<&str>, pending: Option<&str>, prior: &str| {
        let mut status = with_names(service(), active, pending).status.unwrap();
        status.conditions = Some(vec![condition(condition::UPGRADE_IN_PROGRESS, FALSE, prior, t(-5))]);
        calculate_conditions(&mut status, &now);
        cond(&status, condition::UPGRADE_IN_PROGRESS)
    };
    assert_eq!(
        upgrade(Some("a"), Some("p"), "X"),
        (TRUE.into(), reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST.into())
    );
    assert_eq!(
        upgrade(Some("a"), None, "X"),
        (FALSE.into(), reason::NO_PENDING_CLUSTER.into())
    );
    assert_eq!(
        upgrade(None, None, reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST),
        (condition::UNKNOWN.into(), reason::NO_ACTIVE_CLUSTER.into())
    );
    assert_eq!(
        upgrade(None, Some("p"), reason::INITIALIZING),
        (FALSE.into(), reason::INITIALIZING.into())
    );
    assert_eq!(
        upgrade(None, None, reason::INITIALIZING_TIMEOUT),
        (FALSE.into(), reason::INITIALIZING_TIMEOUT.into())
    );
}

#[test]
fn g40_condition_observed_generation_follows_status() {
    let mut status = RayServiceStatuses {
        observed_generation: Some(7),
        ..RayServiceStatuses::default()
    };
    calculate_conditions(&mut status, &Time(t(0)));
    assert!(
        status
            .conditions
            .unwrap()
            .iter()
            .all(|c| c.observed_generation == Some(7))
    );
}

#[test]
fn g41_constructed_cluster_matches_its_service() {
    for groups in [vec![], vec![group("a"), group("b")], vec![group("a")]] {
        let count = groups.len();
        let rs = service_with("2.52.0", groups);
        let cluster = cluster_for(&rs, "test-cluster");
        assert_eq!(cluster.metadata.name.as_deref(), Some("test-cluster"));
        assert_eq!(cluster.metadata.namespace.as_deref(), Some("test-namespace"));
        let annotations = cluster.metadata.annotations.as_ref().unwrap();
        assert_eq!(annotations[NUM_WORKER_GROUPS_ANNOTATION], count.to_string());
        assert_eq!(annotations[KUBERAY_VERSION_ANNOTATION], KUBERAY_VERSION);
        // The plan recognises the cluster it built as up to date.
        assert!(cluster_hash_equal(&rs, &cluster, false));
        assert!(!should_update_cluster(&rs, &cluster, true));
        let owner = &cluster.metadata.owner_references.as_ref().unwrap()[0];
        assert_eq!((owner.name.as_str(), owner.uid.as_str()), ("test-service", "rs-uid"));
    }
}

#[test]
fn g43_should_prepare_new_cluster() {
    let old = service_with("old-version", vec![group("small-group")]);
    let new = service_with("new-version", vec![group("small-group")]);
    let old_cluster = cluster_for(&old, "c1");
    assert!(should_prepare_new_cluster(&new, None, None, false, &config()));
    assert!(should_prepare_new_cluster(
        &new,
        Some(&old_cluster),
        None,
        false,
        &config()
    ));
    assert!(should_prepare_new_cluster(
        &new,
        None,
        Some(&old_cluster),
        false,
        &config()
    ));
    assert!(!should_prepare_new_cluster(
        &new,
        None,
        Some(&old_cluster),
        true,
        &config()
    ));
    // Unchanged spec: no new cluster.
    assert!(!should_prepare_new_cluster(
        &old,
        Some(&old_cluster),
        None,
        false,
        &config()
    ));
    // Replicas do not count.
    let mut scaled = old.clone();
    scaled.spec.ray_cluster_config.worker_group_specs.as_mut().unwrap()[0].replicas = Some(5);
    assert!(!should_prepare_new_cluster(
        &scaled,
        Some(&old_cluster),
        None,
        false,
        &config()
    ));
}

#[test]
fn g44_is_zero_downtime_upgrade_enabled() {
    let with = |type_: Option<RayServiceUpgradeType>, env: Option<&str>| {
        let mut rs = service();
        rs.spec.upgrade_strategy = type_.map(|t| RayServiceUpgradeStrategy {
            type_: Some(t),
            cluster_upgrade_options: None,
        });
        let config = RayServicePlanConfig {
            enable_zero_downtime: env.map(str::to_owned),
            incremental_upgrade_gate: true,
        };
        zero_downtime_enabled(&rs, &config)
    };
    assert!(with(None, Some("")));
    assert!(with(None, None));
    assert!(with(None, Some("true")));
    assert!(!with(None, Some("false")));
    assert!(!with(None, Some("FALSE")));
    for env in [None, Some("true"), Some("false")] {
        assert!(with(Some(RayServiceUpgradeType::NewCluster), env));
        assert!(!with(Some(RayServiceUpgradeType::None), env));
    }
    // With upgradeStrategy None a cluster change is not applied.
    let mut rs = service_with("new-version", vec![group("small-group")]);
    rs.spec.upgrade_strategy = Some(RayServiceUpgradeStrategy {
        type_: Some(RayServiceUpgradeType::None),
        cluster_upgrade_options: None,
    });
    let old_cluster = cluster_for(&service(), "c1");
    assert!(!should_prepare_new_cluster(
        &rs,
        Some(&old_cluster),
        None,
        false,
        &config()
    ));
}

#[test]
fn g46_reconcile_services_updates_only_on_cluster_change() {
    let rs = service();
    let cluster = cluster_for(&rs, "test-cluster");
    let build = |c: &RayCluster| {
        build_rayservice_head_service("test-service", "test-namespace", c, &PodGenConfig::default()).unwrap()
    };
    let ServiceSync::Create(created) = sync_service(build(&cluster), None) else {
        panic!("first call must create");
    };
    let mut stored = created;
    stored.spec.as_mut().unwrap().cluster_ip = Some("10.0.0.7".into());

    // Same cluster name, different ports: unchanged.
    let mut ports_changed = cluster.clone();
    ports_changed.spec.head_group_spec.template = template(
        "rayproject/ray:2.52.0",
        Some(vec![ContainerPort {
            name: Some("dashboard".into()),
            container_port: 9999,
            ..ContainerPort::default()
        }]),
    );
    assert_eq!(
        sync_service(build(&ports_changed), Some(&stored)),
        ServiceSync::Unchanged(stored.clone())
    );

    // Renamed cluster: updated in place, clusterIP kept.
    let renamed = cluster_for(&rs, "new-cluster");
    let ServiceSync::Update(updated) = sync_service(build(&renamed), Some(&stored)) else {
        panic!("a cluster switch must update");
    };
    assert_eq!(selected_cluster(&updated), Some("new-cluster"));
    assert_eq!(updated.metadata.name, stored.metadata.name);
    assert_eq!(updated.spec.as_ref().unwrap().cluster_ip.as_deref(), Some("10.0.0.7"));
}

#[test]
fn serve_service_selects_serving_pods_of_the_cluster() {
    let rs = service();
    let cluster = cluster_for(&rs, "c1");
    let serve = build_serve_service(
        &cluster,
        ServeServiceOwner::RayService {
            name: "test-service",
            namespace: "test-namespace",
            custom: None,
            service_type: None,
        },
    )
    .unwrap();
    assert_eq!(serve.metadata.name.as_deref(), Some("test-service-serve-svc"));
    let selector = serve.spec.unwrap().selector.unwrap();
    assert_eq!(selector[RAY_CLUSTER_LABEL], "c1");
    assert_eq!(selector["ray.io/serve"], "true");
}

fn timeout_service(annotation: Option<&str>, ready: Condition) -> RayService {
    let mut rs = with_names(service(), Some("a"), Some("p"));
    if let Some(value) = annotation {
        rs.metadata.annotations = Some(BTreeMap::from([(
            RAY_SERVICE_INITIALIZING_TIMEOUT_ANNOTATION.to_owned(),
            value.to_owned(),
        )]));
    }
    rs.status.as_mut().unwrap().conditions = Some(vec![ready]);
    rs
}

#[test]
fn g50_initializing_timeout() {
    let initializing = condition(condition::READY, FALSE, reason::INITIALIZING, t(0));
    let now_10m = t(600);
    let now_35m = t(35 * 60);
    assert_eq!(
        check_initializing_timeout(&timeout_service(None, initializing.clone()), now_35m),
        None
    );
    assert_eq!(
        check_initializing_timeout(&timeout_service(Some("30m"), initializing.clone()), now_10m),
        None
    );
    let outcome = check_initializing_timeout(&timeout_service(Some("30m"), initializing.clone()), now_35m).unwrap();
    let status = &outcome.status;
    let ready = status
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == condition::READY)
        .unwrap();
    assert_eq!(
        (ready.status.as_str(), ready.reason.as_str()),
        (FALSE, reason::INITIALIZING_TIMEOUT)
    );
    assert!(
        ready
            .message
            .contains("failed to become ready within the configured timeout"),
        "{}",
        ready.message
    );
    assert_eq!(
        ready.message,
        "RayService failed to become ready within the configured timeout of 30m0s. Time spent initializing: 35m0s"
    );
    assert_eq!(status.active_service_status.as_ref().unwrap().ray_cluster_name, None);
    assert_eq!(status.pending_service_status.as_ref().unwrap().ray_cluster_name, None);
    assert!(outcome.event.contains("RayService initializing timeout exceeded"));
    // Integer seconds work too.
    assert!(check_initializing_timeout(&timeout_service(Some("1800"), initializing), now_35m).is_some());

    let timed_out = timeout_service(
        Some("30m"),
        condition(condition::READY, FALSE, reason::INITIALIZING_TIMEOUT, t(0)),
    );
    assert_eq!(check_initializing_timeout(&timed_out, now_35m), None);
    assert!(is_initializing_timeout(&timed_out));
    let ready = timeout_service(
        Some("30m"),
        condition(condition::READY, TRUE, reason::NON_ZERO_SERVE_ENDPOINTS, t(0)),
    );
    assert_eq!(check_initializing_timeout(&ready, now_35m), None);
    assert!(!is_initializing_timeout(&ready));
    assert!(!is_initializing_timeout(&timeout_service(
        None,
        condition(condition::READY, FALSE, reason::INITIALIZING, t(0))
    )));
}

#[test]
fn g52_managed_by_and_finalizer() {
    let mut rs = service();
    assert!(managed_by_operator(&rs));
    rs.spec.managed_by = Some(KUBERAY_CONTROLLER.into());
    assert!(managed_by_operator(&rs));
    for other in ["", "kueue.x-k8s.io/multikueue", "controller.com/invalid"] {
        rs.spec.managed_by = Some(other.into());
        assert!(!managed_by_operator(&rs), "{other:?}");
    }

    let mut rs = service();
    assert_eq!(finalizer_step(&rs, 0), FinalizerStep::Add);
    rs.metadata.finalizers = Some(vec![RAY_SERVICE_FINALIZER.into()]);
    assert_eq!(finalizer_step(&rs, 1), FinalizerStep::Proceed);
    rs.metadata.deletion_timestamp = Some(Time(t(0)));
    assert_eq!(finalizer_step(&rs, 1), FinalizerStep::WaitForClusters);
    assert_eq!(finalizer_step(&rs, 0), FinalizerStep::Remove);
}

#[test]
fn serve_statuses_rename_default_app_and_readiness() {
    let details: ServeDetails = serde_json::from_value(serde_json::json!({
        "applications": {
            "": {"status": "RUNNING", "message": "", "deployments": {"d": {"status": "HEALTHY", "message": "ok"}}},
            "app2": {"status": "DEPLOYING", "message": "wait"}
        }
    }))
    .unwrap();
    let apps = application_statuses(&details);
    assert_eq!(apps.keys().cloned().collect::<Vec<_>>(), ["app2", "default"]);
    assert_eq!(
        apps["default"].serve_deployment_statuses.as_ref().unwrap()["d"]
            .message
            .as_deref(),
        Some("ok")
    );
    assert!(!applications_ready(&apps));
    assert!(!applications_ready(&BTreeMap::new()));
    let running = BTreeMap::from([("a".to_owned(), app("RUNNING")), ("b".to_owned(), app("RUNNING"))]);
    assert!(applications_ready(&running));
    assert_eq!(running["a"].status, Some(ApplicationStatus::Running));
}

#[test]
fn serve_config_yaml_becomes_json() {
    let body = serve_config_json("applications:\n  - name: a\n    import_path: x.y\n    route_prefix: /a\n").unwrap();
    assert_eq!(body["applications"][0]["import_path"], "x.y");
    assert!(serve_config_json("applications: [").is_err());
}

fn inputs<'a>(
    active: Option<&'a RayCluster>,
    pending: Option<&'a RayCluster>,
    services_cluster: Option<&str>,
    endpoints: i32,
) -> StatusInputs<'a> {
    StatusInputs {
        active,
        pending,
        services_cluster: services_cluster.map(str::to_owned),
        num_serve_endpoints: endpoints,
        new_cluster_name: "test-service-new01".into(),
        now: Time(t(0)),
        incremental: None,
    }
}

#[test]
fn fresh_service_prepares_then_promotes_its_first_cluster() {
    let rs = service();
    // Pass 1: nothing exists, a pending name is chosen.
    let s1 = calculate_status(
        &rs,
        RayServiceStatuses::default(),
        &inputs(None, None, None, 0),
        &config(),
    )
    .unwrap();
    assert_eq!(pending_name(&s1), Some("test-service-new01"));
    assert_eq!(active_name(&s1), None);
    assert_eq!(cond(&s1, condition::READY), (FALSE.into(), reason::INITIALIZING.into()));
    assert_eq!(s1.observed_generation, Some(1));

    // The pending cluster exists, not serving yet: no change of names.
    let mut rs2 = rs.clone();
    rs2.status = Some(s1.clone());
    let p = cluster_for(&rs2, "test-service-new01");
    let s2 = calculate_status(&rs2, s1.clone(), &inputs(None, Some(&p), None, 0), &config()).unwrap();
    assert_eq!(pending_name(&s2), Some("test-service-new01"));
    assert!(!status_changed(&s1, &s2));

    // The services point to it: promoted, Ready.
    let s3 = calculate_status(
        &rs2,
        s2,
        &inputs(None, Some(&p), Some("test-service-new01"), 2),
        &config(),
    )
    .unwrap();
    assert_eq!(active_name(&s3), Some("test-service-new01"));
    assert_eq!(pending_name(&s3), None);
    assert_eq!(
        cond(&s3, condition::READY),
        (TRUE.into(), reason::NON_ZERO_SERVE_ENDPOINTS.into())
    );
    assert_eq!(
        cond(&s3, condition::UPGRADE_IN_PROGRESS),
        (FALSE.into(), reason::NO_PENDING_CLUSTER.into())
    );
    assert_eq!(s3.service_status, Some(ServiceStatus::Running));
    assert_eq!(s3.num_serve_endpoints, Some(2));
}

#[test]
fn cluster_spec_change_runs_blue_green() {
    let old = with_names(service(), Some("a"), None);
    let a = cluster_for(&old, "a");
    let mut status = old.status.clone().unwrap();
    status.num_serve_endpoints = Some(1);
    calculate_conditions(&mut status, &Time(t(-10)));

    // The spec changes: a pending cluster is prepared; services stay on A.
    let mut new = service_with("new-version", vec![group("small-group")]);
    new.status = Some(status.clone());
    let s1 = calculate_status(&new, status, &inputs(Some(&a), None, Some("a"), 1), &config()).unwrap();
    assert_eq!(pending_name(&s1), Some("test-service-new01"));
    assert_eq!(active_name(&s1), Some("a"));
    assert_eq!(
        cond(&s1, condition::UPGRADE_IN_PROGRESS),
        (TRUE.into(), reason::BOTH_ACTIVE_PENDING_CLUSTERS_EXIST.into())
    );
    assert_eq!(cond(&s1, condition::READY).0, TRUE);

    // P created from the new spec: no further pending cluster while it is prepared.
    new.status = Some(s1.clone());
    let p = cluster_for(&new, "test-service-new01");
    let s2 = calculate_status(&new, s1, &inputs(Some(&a), Some(&p), Some("a"), 1), &config()).unwrap();
    assert_eq!(pending_name(&s2), Some("test-service-new01"));

    // Services switched to P: promotion.
    let s3 = calculate_status(
        &new,
        s2,
        &inputs(Some(&a), Some(&p), Some("test-service-new01"), 1),
        &config(),
    )
    .unwrap();
    assert_eq!(active_name(&s3), Some("test-service-new01"));
    assert_eq!(pending_name(&s3), None);
    assert_eq!(
        cond(&s3, condition::UPGRADE_IN_PROGRESS),
        (FALSE.into(), reason::NO_PENDING_CLUSTER.into())
    );
}

#[test]
fn services_pointing_elsewhere_is_an_error() {
    let rs = with_names(service(), Some("a"), None);
    let a = cluster_for(&rs, "a");
    let err = calculate_status(
        &rs,
        rs.status.clone().unwrap(),
        &inputs(Some(&a), None, Some("zzz"), 1),
        &config(),
    );
    assert_eq!(err, Err(StatusError::ServicesPointElsewhere("zzz".into())));
}

#[test]
fn status_change_ignores_cluster_status_copies_and_update_time() {
    let rs = with_names(service(), Some("a"), None);
    let old = rs.status.clone().unwrap();
    let mut new = old.clone();
    new.last_update_time = Some(Time(t(1)));
    new.active_service_status.as_mut().unwrap().ray_cluster_status = Some(Default::default());
    assert!(!status_changed(&old, &new));
    new.num_serve_endpoints = Some(3);
    assert!(status_changed(&old, &new));
    let mut apps = old.clone();
    apps.active_service_status.as_mut().unwrap().application_statuses =
        Some(BTreeMap::from([("x".to_owned(), app("RUNNING"))]));
    assert!(status_changed(&old, &apps));
}

#[test]
fn dangling_clusters_wait_for_the_deletion_delay() {
    let mut rs = with_names(service(), Some("a"), Some("p"));
    rs.spec.ray_cluster_deletion_delay_seconds = Some(10);
    let owned: Vec<String> = ["a", "p", "old"].iter().map(|s| (*s).to_owned()).collect();
    let mut schedule = BTreeMap::new();
    assert!(dangling_clusters_to_delete(&rs, &owned, &mut schedule, t(0)).is_empty());
    assert_eq!(schedule.keys().collect::<Vec<_>>(), ["old"]);
    assert!(dangling_clusters_to_delete(&rs, &owned, &mut schedule, t(10)).is_empty());
    assert_eq!(dangling_clusters_to_delete(&rs, &owned, &mut schedule, t(11)), ["old"]);
    // Gone from the list: forgotten.
    assert!(dangling_clusters_to_delete(&rs, &owned[..2], &mut schedule, t(12)).is_empty());
    assert!(schedule.is_empty());
    // Default delay 60 s; 0 while the RayService is being deleted, and then every cluster goes.
    assert_eq!(deletion_delay(&service()), SignedDuration::from_secs(60));
    rs.metadata.deletion_timestamp = Some(Time(t(0)));
    assert_eq!(deletion_delay(&rs), SignedDuration::ZERO);
    let mut schedule = BTreeMap::new();
    assert!(dangling_clusters_to_delete(&rs, &owned, &mut schedule, t(20)).is_empty());
    assert_eq!(
        dangling_clusters_to_delete(&rs, &owned, &mut schedule, t(21)),
        ["a", "p", "old"]
    );
}

#[test]
fn head_serve_label_follows_health_unless_excluded() {
    let mut rs = service();
    assert_eq!(head_serve_label(&rs, true), "true");
    assert_eq!(head_serve_label(&rs, false), "false");
    rs.spec.exclude_head_pod_from_serve_svc = Some(true);
    assert_eq!(head_serve_label(&rs, true), "false");
}

#[test]
fn timeout_annotation_parsing() {
    assert_eq!(parse_timeout("30m"), Some(std::time::Duration::from_secs(1800)));
    assert_eq!(parse_timeout("1h30m"), Some(std::time::Duration::from_secs(5400)));
    assert_eq!(parse_timeout("90"), Some(std::time::Duration::from_secs(90)));
    assert_eq!(parse_timeout("1.5s"), Some(std::time::Duration::from_millis(1500)));
    assert_eq!(parse_timeout("0"), None);
    assert_eq!(parse_timeout("abc"), None);
}

#[test]
fn g38_removed_worker_group_needs_a_new_cluster_and_missing_count_updates_in_place() {
    let before = service_with("2.52.0", vec![group("a"), group("b")]);
    let active = cluster_for(&before, "active-cluster");
    let mut after = service_with("2.52.0", vec![group("a")]);
    after.status = with_names(before.clone(), Some("active-cluster"), None).status;
    assert_eq!(plan_cluster(&after, Some(&active), None), ClusterAction::None);
    assert!(should_prepare_new_cluster(
        &after,
        Some(&active),
        None,
        false,
        &config()
    ));

    // KubeRay treats an unreadable `ray.io/num-worker-groups` as "only appended": in place.
    let mut unlabelled = active.clone();
    unlabelled
        .metadata
        .annotations
        .as_mut()
        .unwrap()
        .remove(NUM_WORKER_GROUPS_ANNOTATION);
    assert_eq!(
        plan_cluster(&after, Some(&unlabelled), None),
        ClusterAction::UpdateActive
    );
    assert!(!should_prepare_new_cluster(
        &after,
        Some(&unlabelled),
        None,
        false,
        &config()
    ));
}

fn suspend_conditions(status: &RayServiceStatuses) -> Vec<(String, String, String)> {
    let mut all: Vec<_> = status
        .conditions
        .iter()
        .flatten()
        .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
        .collect();
    all.sort();
    all
}

fn triple(type_: &str, status: &str, reason: &str) -> (String, String, String) {
    (type_.into(), status.into(), reason.into())
}

#[test]
fn suspend_stages_deletes_completes_and_resumes() {
    let now = Time(t(0));
    // Running service, suspend requested: staged, cluster names cleared.
    let mut rs = with_names(service(), Some("a"), None);
    let mut running = rs.status.clone().unwrap();
    running.num_serve_endpoints = Some(2);
    calculate_conditions(&mut running, &Time(t(-100)));
    rs.status = Some(running);
    assert_eq!(plan_suspend(&rs, &now), SuspendStep::Proceed);
    rs.spec.suspend = Some(true);
    let SuspendStep::Stop(Some(staged)) = plan_suspend(&rs, &now) else {
        panic!("suspension must be staged");
    };
    let staged = *staged;
    assert_eq!(
        suspend_conditions(&staged),
        [
            triple(condition::READY, FALSE, reason::SUSPEND_IN_PROGRESS),
            triple(condition::ROLLBACK_IN_PROGRESS, FALSE, reason::SUSPEND_IN_PROGRESS),
            triple(condition::SUSPENDING, TRUE, reason::SUSPEND_REQUESTED),
            triple(condition::UPGRADE_IN_PROGRESS, FALSE, reason::SUSPEND_IN_PROGRESS),
        ]
    );
    assert_eq!(active_name(&staged), None);
    assert_eq!(staged.num_serve_endpoints, Some(0));
    assert_eq!(staged.service_status, Some(ServiceStatus::NotRunning));
    assert_eq!(staged.observed_generation, Some(1));

    // Suspending: delete, even when spec.suspend flips back (the suspension is atomic).
    rs.status = Some(staged);
    rs.spec.suspend = Some(false);
    assert_eq!(plan_suspend(&rs, &now), SuspendStep::DeleteOwned);
    let in_progress = suspend_progress(&rs, 3, &now);
    assert_eq!(
        cond(&in_progress, condition::SUSPENDING),
        (TRUE.into(), reason::SUSPEND_IN_PROGRESS.into())
    );
    let complete = suspend_progress(&rs, 0, &now);
    assert_eq!(
        suspend_conditions(&complete),
        [
            triple(condition::READY, FALSE, reason::SUSPEND_COMPLETE),
            triple(condition::ROLLBACK_IN_PROGRESS, FALSE, reason::SUSPEND_COMPLETE),
            triple(condition::SUSPENDED, TRUE, reason::SUSPEND_COMPLETE),
            triple(condition::SUSPENDING, FALSE, reason::SUSPEND_COMPLETE),
            triple(condition::UPGRADE_IN_PROGRESS, FALSE, reason::SUSPEND_COMPLETE),
        ]
    );

    // Suspended and still requested: nothing to do.
    rs.status = Some(complete);
    rs.spec.suspend = Some(true);
    assert_eq!(plan_suspend(&rs, &now), SuspendStep::Stop(None));

    // Resumed: Ready and UpgradeInProgress start over as Initializing with a fresh transition time.
    rs.spec.suspend = Some(false);
    let later = Time(t(50));
    let SuspendStep::Stop(Some(resumed)) = plan_suspend(&rs, &later) else {
        panic!("resuming must write the status");
    };
    let resumed = *resumed;
    assert_eq!(
        cond(&resumed, condition::SUSPENDED),
        (FALSE.into(), reason::RAY_SERVICE_RESUMED.into())
    );
    for type_ in [condition::READY, condition::UPGRADE_IN_PROGRESS] {
        let c = resumed
            .conditions
            .as_ref()
            .unwrap()
            .iter()
            .find(|c| c.type_ == type_)
            .unwrap();
        assert_eq!((c.status.as_str(), c.reason.as_str()), (FALSE, reason::INITIALIZING));
        assert_eq!(c.message, message::INITIALIZING_AFTER_RESUME);
        assert_eq!(c.last_transition_time, later);
    }
    // The next pass reconciles normally and prepares a fresh cluster.
    rs.status = Some(resumed.clone());
    assert_eq!(plan_suspend(&rs, &later), SuspendStep::Proceed);
    let next = calculate_status(&rs, resumed, &inputs(None, None, None, 0), &config()).unwrap();
    assert_eq!(pending_name(&next), Some("test-service-new01"));
    assert_eq!(
        cond(&next, condition::UPGRADE_IN_PROGRESS),
        (FALSE.into(), reason::INITIALIZING.into())
    );
}

#[test]
fn token_auth_secret_defaults_to_the_cluster_name() {
    let rs = service();
    let mut cluster = cluster_for(&rs, "c1");
    assert_eq!(auth_secret_name(&cluster), None);
    cluster.spec.auth_options = Some(ray_api::AuthOptions {
        mode: Some(ray_api::AuthMode::Token),
        ..ray_api::AuthOptions::default()
    });
    assert_eq!(auth_secret_name(&cluster).as_deref(), Some("c1"));
    cluster.spec.auth_options.as_mut().unwrap().secret_name = Some("my-token".into());
    assert_eq!(auth_secret_name(&cluster).as_deref(), Some("my-token"));
    assert_eq!(super::super::serve_api::bearer("abc"), "Bearer abc");
}
