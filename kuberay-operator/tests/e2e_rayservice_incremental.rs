//! End to end: KubeRay's `ray-service.incremental-upgrade.yaml` (autoscaling, upgrade strategy
//! `NewClusterWithIncrementalUpgrade`) through the real operator binary against kube-sim with the
//! Gateway API CRDs installed and hollow Ray heads reached through the API server's service proxy.
//!
//! The RayService goes Ready behind its Gateway and HTTPRoute (one backend, the cluster's own
//! `<cluster>-serve-svc`). A `rayClusterConfig` change creates a pending cluster; a poller records
//! the HTTPRoute weights and the status' `trafficRoutedPercent` / `targetCapacity` every 50 ms while
//! the traffic moves from 100/0 to 0/100 in `stepSizePercent` steps no faster than
//! `intervalSeconds`, the Serve `target_capacity` of the hollow heads following; then the pending
//! cluster is promoted, the route points at it alone and the old cluster is deleted. Finally
//! suspension deletes the Gateway and the HTTPRoute.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::{EnvVar, Service};
use kube::api::{Api, DynamicObject, PostParams};
use kube::core::{ApiResource, GroupVersionKind};
use ray_api::{ClusterUpgradeOptions, RayCluster, RayService};
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port};
use ray_sim::{HollowRay, HollowRayOptions};

const NS: &str = "default";
const NAME: &str = "rayservice-incremental-upgrade";
const GATEWAY: &str = "rayservice-incremental-upgrade-gateway";
const ROUTE: &str = "rayservice-incremental-upgrade-httproute";
const WAIT: Duration = Duration::from_secs(120);
const DELETION_DELAY_SECONDS: i32 = 3;
const MAX_SURGE: i32 = 50;
const STEP: i32 = 25;
const INTERVAL_SECONDS: i32 = 1;

fn gateway_api_crd(plural: &str, kind: &str) -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": format!("{plural}.gateway.networking.k8s.io")},
        "spec": {
            "group": "gateway.networking.k8s.io", "scope": "Namespaced",
            "names": {"plural": plural, "singular": kind.to_lowercase(), "kind": kind, "listKind": format!("{kind}List")},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    })
}

fn gateway_api(client: &kube::Client, kind: &str, plural: &str) -> Api<DynamicObject> {
    let resource =
        ApiResource::from_gvk_with_plural(&GroupVersionKind::gvk("gateway.networking.k8s.io", "v1", kind), plural);
    Api::namespaced_with(client.clone(), NS, &resource)
}

/// kube-sim with the Gateway API CRDs and a hollow Ray head, and the operator started against it: what
/// both tests begin with.
struct Upgrade {
    _operator: Operator,
    ray: Arc<HollowRay>,
    client: kube::Client,
    dir: PathBuf,
    _sim: kube_sim::SimHandle,
}

impl Upgrade {
    async fn start(tag: &str) -> Self {
        let SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        } = SimEnv::start(tag, kube_sim::SimConfig::default()).await;
        common::install_extra_crds(
            &client,
            &[
                gateway_api_crd("gateways", "Gateway"),
                gateway_api_crd("httproutes", "HTTPRoute"),
            ],
        )
        .await;
        let ray = Arc::new(HollowRay::attach(&sim, HollowRayOptions::default()));
        let operator = start_operator(&dir, &kubeconfig);
        Self {
            _operator: operator,
            ray,
            client,
            dir,
            _sim: sim,
        }
    }
}

fn start_operator(dir: &Path, kubeconfig: &Path) -> Operator {
    Operator::start(
        dir,
        kubeconfig,
        NS,
        free_port(),
        free_port(),
        &["--use-kubernetes-proxy"],
    )
}

async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

fn sample() -> RayService {
    let mut service: RayService = common::sample_document("ray-service.incremental-upgrade.yaml", "RayService");
    service.metadata.namespace = Some(NS.into());
    service.spec.ray_cluster_deletion_delay_seconds = Some(DELETION_DELAY_SECONDS);
    let strategy = service.spec.upgrade_strategy.as_mut().unwrap();
    strategy.cluster_upgrade_options = Some(ClusterUpgradeOptions {
        max_surge_percent: Some(MAX_SURGE),
        step_size_percent: Some(STEP),
        interval_seconds: Some(INTERVAL_SECONDS),
        gateway_class_name: "istio".into(),
    });
    service
}

fn names(service: &RayService) -> (Option<String>, Option<String>) {
    let status = service.status.clone().unwrap_or_default();
    let name = |s: Option<ray_api::RayServiceStatus>| s.and_then(|s| s.ray_cluster_name).filter(|n| !n.is_empty());
    (name(status.active_service_status), name(status.pending_service_status))
}

fn condition(service: &RayService, type_: &str) -> Option<(String, String)> {
    service
        .status
        .as_ref()?
        .conditions
        .as_ref()?
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| (c.status.clone(), c.reason.clone()))
}

/// `(backend service name, weight)` of the HTTPRoute's only rule.
fn backends(route: &DynamicObject) -> Vec<(String, i64)> {
    route.data["spec"]["rules"][0]["backendRefs"]
        .as_array()
        .map(|refs| {
            refs.iter()
                .map(|b| {
                    (
                        b["name"].as_str().unwrap_or_default().to_owned(),
                        b["weight"].as_i64().unwrap_or(-1),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// The hollow head's Serve `target_capacity` of `cluster`.
fn serve_target_capacity(ray: &HollowRay, cluster: &str) -> Option<i64> {
    ray.head(NS, cluster)?.serve_details()["target_capacity"].as_i64()
}

/// `(targetCapacity, trafficRoutedPercent)` of one cluster in the status.
type SideStatus = (Option<i32>, Option<i32>);

/// One poll during the upgrade.
#[derive(Clone, Debug, PartialEq)]
struct Sample {
    /// Route weights (active backend, pending backend).
    weights: (i64, i64),
    /// Status: active, pending.
    status: (SideStatus, SideStatus),
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_upgrade_moves_traffic_in_steps_then_promotes() {
    // Locals drop in reverse order: the operator stops before the simulator.
    let Upgrade {
        _sim,
        dir,
        client,
        ray,
        _operator,
    } = Upgrade::start("rayservice-incremental").await;

    let rayservices: Api<RayService> = Api::namespaced(client.clone(), NS);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    let gateways = gateway_api(&client, "Gateway", "gateways");
    let routes = gateway_api(&client, "HTTPRoute", "httproutes");
    rayservices.create(&PostParams::default(), &sample()).await.unwrap();

    // 1. Ready behind the Gateway: the route sends everything to the first cluster.
    let first = wait_for("the RayService to become Ready with its HTTPRoute", || async {
        let service = rayservices.get(NAME).await.unwrap();
        let ready = condition(&service, "Ready").is_some_and(|(s, _)| s == "True");
        let (active, pending) = names(&service);
        let route = routes.get_opt(ROUTE).await.unwrap()?;
        let active = active?;
        let traffic = service.status.clone()?.active_service_status?.traffic_routed_percent;
        (ready && pending.is_none() && traffic.is_some() && backends(&route) == [(format!("{active}-serve-svc"), 100)])
            .then_some(active)
    })
    .await;
    let service = rayservices.get(NAME).await.unwrap();
    let active_status = service.status.clone().unwrap().active_service_status.unwrap();
    assert_eq!(active_status.target_capacity, Some(100));
    assert_eq!(active_status.traffic_routed_percent, Some(100));
    assert_eq!(serve_target_capacity(&ray, &first), Some(100));
    let gateway = gateways.get(GATEWAY).await.unwrap();
    assert_eq!(gateway.data["spec"]["gatewayClassName"], "istio");
    assert_eq!(
        gateway.data["spec"]["listeners"],
        json!([{"name": "http", "protocol": "HTTP", "port": 80}])
    );
    assert_eq!(
        gateway.metadata.owner_references.as_ref().unwrap()[0].kind,
        "RayService"
    );
    let route = routes.get(ROUTE).await.unwrap();
    assert_eq!(
        route.data["spec"]["parentRefs"],
        json!([{"name": GATEWAY, "namespace": NS}])
    );
    assert_eq!(
        route.data["spec"]["rules"][0]["matches"],
        json!([{"path": {"type": "PathPrefix", "value": "/"}}])
    );
    assert_eq!(route.data["spec"]["rules"][0]["backendRefs"][0]["port"], 8000);
    let first_svc = services.get(&format!("{first}-serve-svc")).await.unwrap();
    assert_eq!(
        first_svc.metadata.owner_references.as_ref().unwrap()[0].kind,
        "RayCluster"
    );
    assert_eq!(
        first_svc.spec.as_ref().unwrap().selector.as_ref().unwrap()["ray.io/cluster"],
        first
    );

    // 2. rayClusterConfig change: a pending cluster, traffic moves step by step.
    let changed_at = Instant::now();
    let mut current = rayservices.get(NAME).await.unwrap();
    current
        .spec
        .ray_cluster_config
        .head_group_spec
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
        .env
        .get_or_insert_with(Vec::new)
        .push(EnvVar {
            name: "UPGRADE_MARKER".into(),
            value: Some("incremental".into()),
            ..EnvVar::default()
        });
    rayservices
        .replace(NAME, &PostParams::default(), &current)
        .await
        .unwrap();
    let second = wait_for("a pending cluster", || async {
        names(&rayservices.get(NAME).await.unwrap()).1
    })
    .await;
    assert_ne!(second, first);
    let service = rayservices.get(NAME).await.unwrap();
    assert_eq!(
        condition(&service, "UpgradeInProgress"),
        Some(("True".into(), "BothActivePendingClustersExist".into()))
    );

    let mut samples: Vec<(Duration, Sample)> = Vec::new();
    let mut pending_capacities_seen = Vec::new();
    let deadline = Instant::now() + WAIT;
    loop {
        assert!(Instant::now() < deadline, "upgrade did not complete: {samples:?}");
        let service = rayservices.get(NAME).await.unwrap();
        let (active, pending) = names(&service);
        if active.as_deref() == Some(second.as_str()) && pending.is_none() {
            break;
        }
        if let Some(route) = routes.get_opt(ROUTE).await.unwrap() {
            let refs = backends(&route);
            let weight = |svc: &str| refs.iter().find(|(n, _)| n == svc).map_or(0, |(_, w)| *w);
            let status = service.status.clone().unwrap_or_default();
            let side = |s: Option<ray_api::RayServiceStatus>| {
                s.map_or((None, None), |s| (s.target_capacity, s.traffic_routed_percent))
            };
            let sample = Sample {
                weights: (
                    weight(&format!("{first}-serve-svc")),
                    weight(&format!("{second}-serve-svc")),
                ),
                status: (side(status.active_service_status), side(status.pending_service_status)),
            };
            if let Some(capacity) = serve_target_capacity(&ray, &second)
                && pending_capacities_seen.last() != Some(&capacity)
            {
                pending_capacities_seen.push(capacity);
            }
            if samples.last().map(|(_, s)| s) != Some(&sample) {
                samples.push((changed_at.elapsed(), sample));
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let completed_after = changed_at.elapsed();
    for (at, sample) in &samples {
        eprintln!("{:>6} ms  {sample:?}", at.as_millis());
    }
    eprintln!(
        "promoted after {} ms; pending Serve target_capacity seen: {pending_capacities_seen:?}",
        completed_after.as_millis()
    );

    // The route's weights always sum to 100 and the pending weight only grows, by one step at a time.
    let mut pending_weights: Vec<i64> = samples.iter().map(|(_, s)| s.weights.1).collect();
    pending_weights.dedup();
    assert_eq!(pending_weights.first(), Some(&0), "{samples:?}");
    assert_eq!(pending_weights, [0, 25, 50, 75, 100], "{samples:?}");
    for (_, sample) in &samples {
        assert_eq!(sample.weights.0 + sample.weights.1, 100, "{sample:?}");
    }
    // Steps are at least intervalSeconds apart.
    let step_times: Vec<Duration> = pending_weights
        .iter()
        .skip(1)
        .map(|w| samples.iter().find(|(_, s)| s.weights.1 == *w).unwrap().0)
        .collect();
    for pair in step_times.windows(2) {
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(900),
            "steps closer than intervalSeconds: {step_times:?}"
        );
    }
    // The status follows the route; the pending cluster's capacity leads its traffic.
    for (_, sample) in &samples {
        let ((_, active_traffic), (pending_capacity, pending_traffic)) = sample.status;
        if let (Some(a), Some(p)) = (active_traffic, pending_traffic) {
            assert_eq!(a + p, 100, "{sample:?}");
        }
        if let (Some(capacity), Some(traffic)) = (pending_capacity, pending_traffic) {
            assert!(traffic <= capacity, "traffic above capacity: {sample:?}");
        }
    }
    let mut pending_capacity: Vec<i32> = samples.iter().filter_map(|(_, s)| s.status.1.0).collect();
    pending_capacity.dedup();
    assert_eq!(pending_capacity, [0, 50, 100], "{samples:?}");
    let mut active_capacity: Vec<i32> = samples.iter().filter_map(|(_, s)| s.status.0.0).collect();
    active_capacity.dedup();
    assert_eq!(active_capacity, [100, 50], "{samples:?}");
    assert_eq!(
        pending_capacities_seen.last(),
        Some(&100),
        "{pending_capacities_seen:?}"
    );
    assert_eq!(serve_target_capacity(&ray, &first), Some(0));

    // 3. Promoted: the route sends everything to the new cluster, the old one goes.
    let service = rayservices.get(NAME).await.unwrap();
    assert_eq!(
        condition(&service, "UpgradeInProgress"),
        Some(("False".into(), "NoPendingCluster".into()))
    );
    let promoted = service.status.clone().unwrap().active_service_status.unwrap();
    assert_eq!(
        (promoted.target_capacity, promoted.traffic_routed_percent),
        (Some(100), Some(100))
    );
    wait_for("the route to point at the new cluster alone", || async {
        let route = routes.get(ROUTE).await.unwrap();
        (backends(&route) == [(format!("{second}-serve-svc"), 100)]).then_some(())
    })
    .await;
    wait_for("the old cluster to be deleted", || common::gone(&clusters, &first)).await;
    let service = rayservices.get(NAME).await.unwrap();
    assert!(service.status.unwrap().num_serve_endpoints.unwrap() >= 1);

    // 4. Suspension deletes the Gateway and the HTTPRoute with everything else.
    let mut current = rayservices.get(NAME).await.unwrap();
    current.spec.suspend = Some(true);
    rayservices
        .replace(NAME, &PostParams::default(), &current)
        .await
        .unwrap();
    wait_for("Suspended", || async {
        let service = rayservices.get(NAME).await.unwrap();
        condition(&service, "Suspended").filter(|(s, _)| s == "True")
    })
    .await;
    assert!(gateways.get_opt(GATEWAY).await.unwrap().is_none());
    assert!(routes.get_opt(ROUTE).await.unwrap().is_none());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Adds (`Some`) or removes (`None`) the `UPGRADE_MARKER` env var of the head container.
async fn set_marker(rayservices: &Api<RayService>, marker: Option<&str>) {
    for _ in 0..50 {
        let mut current = rayservices.get(NAME).await.unwrap();
        let env = current
            .spec
            .ray_cluster_config
            .head_group_spec
            .template
            .spec
            .as_mut()
            .unwrap()
            .containers[0]
            .env
            .get_or_insert_with(Vec::new);
        env.retain(|e| e.name != "UPGRADE_MARKER");
        if let Some(value) = marker {
            env.push(EnvVar {
                name: "UPGRADE_MARKER".into(),
                value: Some(value.into()),
                ..EnvVar::default()
            });
        }
        if current
            .spec
            .ray_cluster_config
            .head_group_spec
            .template
            .spec
            .as_ref()
            .unwrap()
            .containers[0]
            .env
            .as_ref()
            .is_some_and(Vec::is_empty)
        {
            current
                .spec
                .ray_cluster_config
                .head_group_spec
                .template
                .spec
                .as_mut()
                .unwrap()
                .containers[0]
                .env = None;
        }
        match rayservices.replace(NAME, &PostParams::default(), &current).await {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 409 => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("updating the RayService: {e}"),
        }
    }
    panic!("could not update the RayService: persistent conflicts");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_upgrade_rolls_back_when_the_spec_is_reverted() {
    // Locals drop in reverse order: the operator stops before the simulator.
    let Upgrade {
        _sim,
        dir,
        client,
        ray,
        _operator,
    } = Upgrade::start("rayservice-incremental-rollback").await;
    let rayservices: Api<RayService> = Api::namespaced(client.clone(), NS);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    let routes = gateway_api(&client, "HTTPRoute", "httproutes");
    rayservices.create(&PostParams::default(), &sample()).await.unwrap();
    let first = wait_for("the RayService to become Ready with its HTTPRoute", || async {
        let service = rayservices.get(NAME).await.unwrap();
        let ready = condition(&service, "Ready").is_some_and(|(s, _)| s == "True");
        let route = routes.get_opt(ROUTE).await.unwrap()?;
        let active = names(&service).0?;
        (ready && backends(&route) == [(format!("{active}-serve-svc"), 100)]).then_some(active)
    })
    .await;

    // Upgrade until some traffic reached the new cluster, then revert the spec.
    set_marker(&rayservices, Some("rollback")).await;
    let second = wait_for("traffic on the pending cluster", || async {
        let service = rayservices.get(NAME).await.unwrap();
        let pending = service.status.clone()?.pending_service_status?;
        (pending.traffic_routed_percent.unwrap_or(0) > 0).then_some(pending.ray_cluster_name?)
    })
    .await;
    set_marker(&rayservices, None).await;
    let service = wait_for("RollbackInProgress", || async {
        let service = rayservices.get(NAME).await.unwrap();
        (condition(&service, "RollbackInProgress") == Some(("True".into(), "DesiredClusterSpecChanged".into())))
            .then_some(service)
    })
    .await;
    assert_eq!(names(&service), (Some(first.clone()), Some(second.clone())));

    // Traffic returns to the first cluster, the pending one is dropped, no new cluster is made.
    let mut pending_weights = Vec::new();
    let second_svc = format!("{second}-serve-svc");
    let deadline = Instant::now() + WAIT;
    let done = loop {
        assert!(
            Instant::now() < deadline,
            "rollback did not complete: {pending_weights:?}"
        );
        if let Some(route) = routes.get_opt(ROUTE).await.unwrap()
            && let Some((_, w)) = backends(&route).into_iter().find(|(n, _)| *n == second_svc)
            && pending_weights.last() != Some(&w)
        {
            pending_weights.push(w);
        }
        let service = rayservices.get(NAME).await.unwrap();
        if names(&service).1.is_none() {
            break service;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    eprintln!("pending weights during the rollback: {pending_weights:?}");
    assert!(pending_weights.windows(2).all(|w| w[1] <= w[0]), "{pending_weights:?}");
    assert_eq!(names(&done).0.as_deref(), Some(first.as_str()));
    assert_eq!(condition(&done, "RollbackInProgress"), None);
    let upgrade = done
        .status
        .as_ref()
        .unwrap()
        .conditions
        .as_ref()
        .unwrap()
        .iter()
        .find(|c| c.type_ == "UpgradeInProgress")
        .unwrap()
        .clone();
    assert_eq!(
        (
            upgrade.status.as_str(),
            upgrade.reason.as_str(),
            upgrade.message.as_str()
        ),
        (
            "False",
            "NoPendingCluster",
            "Rollback complete, active Ray cluster exists and no pending Ray cluster"
        )
    );
    let active = done.status.clone().unwrap().active_service_status.unwrap();
    assert_eq!(
        (active.target_capacity, active.traffic_routed_percent),
        (Some(100), Some(100))
    );
    assert_eq!(serve_target_capacity(&ray, &first), Some(100));
    wait_for("the route to point at the first cluster alone", || async {
        let route = routes.get(ROUTE).await.unwrap();
        (backends(&route) == [(format!("{first}-serve-svc"), 100)]).then_some(())
    })
    .await;
    wait_for("the rolled-back cluster to be deleted", || {
        common::gone(&clusters, &second)
    })
    .await;
    // Still no new pending cluster a few passes later.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let service = rayservices.get(NAME).await.unwrap();
    assert_eq!(names(&service), (Some(first), None));
    let _ = std::fs::remove_dir_all(&dir);
}
