//! End to end: KubeRay's `ray-service.sample.yaml` through the real operator binary against an
//! in-process kube-sim with hollow Ray heads, dashboards and serve proxies reached through the API
//! server's service proxy (`--use-kubernetes-proxy`).
//!
//! One RayService goes Ready, takes a `serveConfigV2` change in place (same cluster, the hollow
//! head sees the new config), then a `rayClusterConfig` change blue/green: a new cluster, the serve
//! service moves only once its applications run, the old cluster is deleted. A watcher polls the
//! serve service every 20 ms throughout and checks it always selects at least one ready pod. Then it
//! is suspended (clusters and services deleted) and resumed (a fresh cluster), and finally deleted.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::api::core::v1::{Container, EnvVar, Pod, Service};
use kube::api::{Api, ListParams, PostParams};
use kube::{Client, ResourceExt};
use ray_api::{RayCluster, RayService};
use ray_sim::{AppStatus, HollowRay, HollowRayOptions};

use crate::common;
use common::{Operator, SimEnv, free_port};

const NS: &str = "default";
const NAME: &str = "rayservice-sample";
const SERVE_SVC: &str = "rayservice-sample-serve-svc";
const WAIT: Duration = Duration::from_secs(90);
/// Short deletion delay so the old cluster goes within the test.
const DELETION_DELAY_SECONDS: i32 = 3;

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
    let mut service: RayService = common::sample_document("ray-service.sample.yaml", "RayService");
    service.metadata.namespace = Some(NS.into());
    service.spec.ray_cluster_deletion_delay_seconds = Some(DELETION_DELAY_SECONDS);
    service
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

fn active_name(service: &RayService) -> Option<String> {
    service
        .status
        .as_ref()?
        .active_service_status
        .as_ref()?
        .ray_cluster_name
        .clone()
        .filter(|n| !n.is_empty())
}

fn pending_name(service: &RayService) -> Option<String> {
    service
        .status
        .as_ref()?
        .pending_service_status
        .as_ref()?
        .ray_cluster_name
        .clone()
        .filter(|n| !n.is_empty())
}

fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == "Ready" && c.status == "True"))
}

fn selected_cluster(service: &Service) -> Option<String> {
    service.spec.as_ref()?.selector.as_ref()?.get("ray.io/cluster").cloned()
}

/// What the serve-service watcher saw.
#[derive(Default)]
struct Watch {
    /// Polls that found the serve service.
    observations: usize,
    /// Polls where it selected no ready pod (with the selector).
    violations: Vec<String>,
    /// Clusters it selected, in order, without repeats.
    clusters: Vec<String>,
    /// Clusters first seen selected while their hollow head had an application not `RUNNING`.
    switched_early: Vec<String>,
}

/// Polls the serve service every 20 ms until `stop`.
async fn watch_serve_service(client: Client, ray: Arc<HollowRay>, stop: Arc<AtomicBool>) -> Watch {
    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    let pods: Api<Pod> = Api::namespaced(client, NS);
    let mut watch = Watch::default();
    while !stop.load(Ordering::Relaxed) {
        if let Some(service) = services.get_opt(SERVE_SVC).await.unwrap() {
            let selector: BTreeMap<String, String> = service
                .spec
                .as_ref()
                .and_then(|s| s.selector.clone())
                .unwrap_or_default();
            let query = selector
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect::<Vec<_>>()
                .join(",");
            let selected = pods.list(&ListParams::default().labels(&query)).await.unwrap();
            watch.observations += 1;
            if !selected.items.iter().any(pod_ready) {
                watch.violations.push(query.clone());
            }
            let cluster = selected_cluster(&service).unwrap_or_default();
            if watch.clusters.last() != Some(&cluster) {
                let running = ray.head(NS, &cluster).is_some_and(|h| {
                    let apps = h.app_statuses();
                    !apps.is_empty() && apps.values().all(|s| *s == AppStatus::Running)
                });
                if !running {
                    watch.switched_early.push(cluster.clone());
                }
                watch.clusters.push(cluster);
            }
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    watch
}

/// `deployed_app_config.user_config.price` of `MangoStand` in `fruit_app`, as the hollow head has it.
fn mango_price(ray: &HollowRay, cluster: &str) -> Option<i64> {
    let details = ray.head(NS, cluster)?.serve_details();
    details["applications"]["fruit_app"]["deployed_app_config"]["deployments"]
        .as_array()?
        .iter()
        .find(|d| d["name"] == "MangoStand")?["user_config"]["price"]
        .as_i64()
}

/// The head container of the RayService's `rayClusterConfig`.
fn head_container(service: &mut RayService) -> &mut Container {
    &mut service
        .spec
        .ray_cluster_config
        .head_group_spec
        .template
        .spec
        .as_mut()
        .unwrap()
        .containers[0]
}

/// Replaces the first `from` in the RayService's `serveConfigV2` with `to`.
fn replace_in_serve_config(service: &mut RayService, from: &str, to: &str) {
    let config = service.spec.serve_config_v2.clone().unwrap();
    service.spec.serve_config_v2 = Some(config.replacen(from, to, 1));
}

/// Applies `change` to the stored RayService and writes it back (retrying on conflicts).
async fn update_spec(rayservices: &Api<RayService>, change: impl Fn(&mut RayService)) {
    update_spec_of(rayservices, NAME, change).await;
}

/// [`update_spec`] for the RayService `name`.
async fn update_spec_of(rayservices: &Api<RayService>, name: &str, change: impl Fn(&mut RayService)) {
    for _ in 0..50 {
        let mut service = rayservices.get(name).await.unwrap();
        change(&mut service);
        match rayservices.replace(name, &PostParams::default(), &service).await {
            Ok(_) => return,
            Err(kube::Error::Api(e)) if e.code == 409 => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("updating the RayService: {e}"),
        }
    }
    panic!("could not update the RayService: persistent conflicts");
}

async fn wait_ready(rayservices: &Api<RayService>, what: &str) -> RayService {
    wait_ready_of(rayservices, NAME, what).await
}

/// [`wait_ready`] for the RayService `name`.
async fn wait_ready_of(rayservices: &Api<RayService>, name: &str, what: &str) -> RayService {
    wait_for(what, || async {
        let service = rayservices.get(name).await.unwrap();
        let ready = condition(&service, "Ready").is_some_and(|(s, _)| s == "True");
        let running = service
            .status
            .as_ref()
            .and_then(|s| s.service_status.as_ref())
            .map(ToString::to_string);
        (ready && running.as_deref() == Some("Running")).then_some(service)
    })
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayservice_sample_ready_update_in_place_and_blue_green() {
    let SimEnv {
        sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("rayservice", kube_sim::SimConfig::default()).await;
    let ray = Arc::new(HollowRay::attach(&sim, HollowRayOptions::default()));
    let _operator = start_operator(&dir, &kubeconfig);

    let stop = Arc::new(AtomicBool::new(false));
    let watcher = tokio::spawn(watch_serve_service(client.clone(), Arc::clone(&ray), Arc::clone(&stop)));

    let rayservices: Api<RayService> = Api::namespaced(client.clone(), NS);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);
    rayservices.create(&PostParams::default(), &sample()).await.unwrap();

    // 1. Ready: one cluster `rayservice-sample-xxxxx`, both applications RUNNING.
    let service = wait_ready(&rayservices, "the RayService to become Ready").await;
    let first = active_name(&service).unwrap();
    assert!(first.starts_with("rayservice-sample-"), "{first}");
    assert_eq!(first.len(), "rayservice-sample-".len() + 5);
    assert_eq!(pending_name(&service), None);
    assert_eq!(
        condition(&service, "UpgradeInProgress"),
        Some(("False".into(), "NoPendingCluster".into()))
    );
    assert_eq!(condition(&service, "Ready").unwrap().1, "NonZeroServeEndpoints");
    let status = service.status.clone().unwrap();
    assert!(status.num_serve_endpoints.unwrap() >= 1);
    let apps = status.active_service_status.unwrap().application_statuses.unwrap();
    assert_eq!(apps.keys().cloned().collect::<Vec<_>>(), ["fruit_app", "math_app"]);
    assert!(
        apps.values()
            .all(|a| a.status.as_ref().map(ToString::to_string).as_deref() == Some("RUNNING"))
    );
    let cluster = clusters.get(&first).await.unwrap();
    assert_eq!(cluster.owner_references()[0].kind, "RayService");
    assert_eq!(cluster.labels()["ray.io/originated-from-crd"], "RayService");
    assert!(
        cluster
            .annotations()
            .contains_key("ray.io/hash-without-replicas-and-workers-to-delete")
    );
    assert!(finalizer_present(&service));
    let services: Api<Service> = Api::namespaced(client.clone(), NS);
    let head_svc = services.get("rayservice-sample-head-svc").await.unwrap();
    assert_eq!(selected_cluster(&head_svc).as_deref(), Some(first.as_str()));
    assert_eq!(mango_price(&ray, &first), Some(3));

    // 2. serveConfigV2 change: submitted to the same cluster, no new cluster.
    update_spec(&rayservices, |s| replace_in_serve_config(s, "price: 3", "price: 4")).await;
    wait_for("the hollow head to run the new serve config", || async {
        (mango_price(&ray, &first) == Some(4)).then_some(())
    })
    .await;
    let service = wait_ready(&rayservices, "Ready after the serve config change").await;
    assert_eq!(active_name(&service).as_deref(), Some(first.as_str()));
    assert_eq!(pending_name(&service), None);
    assert_eq!(clusters.list(&ListParams::default()).await.unwrap().items.len(), 1);

    // 3. rayClusterConfig change: a new cluster, the services move once it serves, the old goes.
    update_spec(&rayservices, |s| {
        head_container(s).env.get_or_insert_with(Vec::new).push(EnvVar {
            name: "UPGRADE_MARKER".into(),
            value: Some("blue-green".into()),
            ..EnvVar::default()
        });
    })
    .await;
    let second = wait_for("a pending cluster", || async {
        let service = rayservices.get(NAME).await.unwrap();
        pending_name(&service)
    })
    .await;
    assert_ne!(second, first);
    let service = rayservices.get(NAME).await.unwrap();
    if pending_name(&service).is_some() {
        assert_eq!(
            condition(&service, "UpgradeInProgress"),
            Some(("True".into(), "BothActivePendingClustersExist".into()))
        );
    }
    let promoted = wait_for("the new cluster to be promoted", || async {
        let service = rayservices.get(NAME).await.unwrap();
        (active_name(&service).as_deref() == Some(second.as_str()) && pending_name(&service).is_none())
            .then_some(service)
    })
    .await;
    assert_eq!(
        condition(&promoted, "UpgradeInProgress"),
        Some(("False".into(), "NoPendingCluster".into()))
    );
    assert_eq!(mango_price(&ray, &second), Some(4));
    let head_svc = services.get("rayservice-sample-head-svc").await.unwrap();
    assert_eq!(selected_cluster(&head_svc).as_deref(), Some(second.as_str()));
    wait_for("the old cluster to be deleted", || common::gone(&clusters, &first)).await;
    wait_ready(&rayservices, "Ready after the upgrade").await;

    stop.store(true, Ordering::Relaxed);
    let watch = watcher.await.unwrap();
    assert!(watch.observations > 50, "only {} observations", watch.observations);
    assert!(
        watch.violations.is_empty(),
        "serve service selected no ready pod: {:?}",
        watch.violations
    );
    assert_eq!(watch.clusters, [first.clone(), second.clone()]);
    assert!(
        watch.switched_early.is_empty(),
        "serve service moved before the applications ran: {:?}",
        watch.switched_early
    );
    println!(
        "serve service observations: {}, clusters: {:?}",
        watch.observations, watch.clusters
    );

    // KubeRay's events about the RayService (published in the background, a moment after what they report).
    let expected = [
        "CreatedRayCluster",
        "UpdatedServeApplications",
        "UpdatedHeadPodServeLabel",
        "CreatedService",
        "UpdatedService",
        "DeletedRayCluster",
    ];
    let deadline = tokio::time::Instant::now() + Duration::from_secs(10);
    let reasons = loop {
        let reasons: Vec<String> = common::namespace_events(&client, NS)
            .await
            .into_iter()
            .filter(|e| e.regarding.as_ref().and_then(|r| r.kind.as_deref()) == Some("RayService"))
            .filter_map(|e| e.reason)
            .collect();
        let all_there = expected.iter().all(|reason| reasons.iter().any(|r| r == reason));
        if all_there || tokio::time::Instant::now() >= deadline {
            break reasons;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    for reason in expected {
        assert!(reasons.iter().any(|r| r == reason), "no {reason} event in {reasons:?}");
    }

    // Suspend: every cluster and service goes, then `Suspended`; resume: a fresh cluster, Ready again.
    update_spec(&rayservices, |s| s.spec.suspend = Some(true)).await;
    wait_for("the RayService to be suspended", || async {
        let service = rayservices.get(NAME).await.unwrap();
        let suspended = condition(&service, "Suspended") == Some(("True".into(), "SuspendComplete".into()));
        let clusters_left = clusters.list(&ListParams::default()).await.unwrap().items.len();
        let services_left = services.get_opt(SERVE_SVC).await.unwrap().is_some()
            || services.get_opt("rayservice-sample-head-svc").await.unwrap().is_some();
        (suspended && clusters_left == 0 && !services_left).then_some(())
    })
    .await;
    let suspended = rayservices.get(NAME).await.unwrap();
    assert_eq!(active_name(&suspended), None);
    assert_eq!(condition(&suspended, "Ready").unwrap().1, "SuspendComplete");
    update_spec(&rayservices, |s| s.spec.suspend = Some(false)).await;
    let resumed = wait_ready(&rayservices, "Ready after resuming").await;
    let third = active_name(&resumed).unwrap();
    assert!(third != first && third != second, "{third}");
    assert_eq!(
        condition(&resumed, "Suspended"),
        Some(("False".into(), "RayServiceResumed".into()))
    );
    assert_eq!(mango_price(&ray, &third), Some(4));

    // Deleting the RayService deletes its cluster, then the finalizer goes and the object with it.
    rayservices.delete(NAME, &Default::default()).await.unwrap();
    wait_for("the RayService and its clusters to be gone", || async {
        let gone = rayservices.get_opt(NAME).await.unwrap().is_none();
        let clusters_left = clusters.list(&ListParams::default()).await.unwrap().items.len();
        (gone && clusters_left == 0).then_some(())
    })
    .await;
}

fn finalizer_present(service: &RayService) -> bool {
    service.finalizers().iter().any(|f| f == "ray.io/rayservice-finalizer")
}

/// `upgradeStrategy: None` keeps the cluster on a `rayClusterConfig` change and still applies
/// `serveConfigV2` changes; `ray.io/initializing-timeout` fails a RayService that is not ready in
/// time and deletes its cluster.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rayservice_upgrade_none_and_initializing_timeout() {
    let SimEnv {
        sim,
        client,
        dir,
        kubeconfig,
    } = SimEnv::start("rayservice-none", kube_sim::SimConfig::default()).await;
    let ray = HollowRay::attach(&sim, HollowRayOptions::default());
    let _operator = start_operator(&dir, &kubeconfig);
    let rayservices: Api<RayService> = Api::namespaced(client.clone(), NS);
    let clusters: Api<RayCluster> = Api::namespaced(client.clone(), NS);

    // A RayService that must be ready within 1 s: it cannot, so it fails and its cluster goes.
    let mut hasty = sample();
    hasty.metadata.name = Some("hasty".into());
    hasty.spec.ray_cluster_deletion_delay_seconds = Some(0);
    hasty.metadata.annotations = Some(BTreeMap::from([(
        "ray.io/initializing-timeout".to_owned(),
        "1s".to_owned(),
    )]));
    rayservices.create(&PostParams::default(), &hasty).await.unwrap();

    let mut steady = sample();
    steady.metadata.name = Some("steady".into());
    steady.spec.upgrade_strategy = Some(ray_api::RayServiceUpgradeStrategy {
        type_: Some(ray_api::RayServiceUpgradeType::None),
        cluster_upgrade_options: None,
    });
    rayservices.create(&PostParams::default(), &steady).await.unwrap();

    let timed_out = wait_for("the initializing timeout", || async {
        let service = rayservices.get("hasty").await.unwrap();
        (condition(&service, "Ready") == Some(("False".into(), "InitializingTimeout".into()))).then_some(service)
    })
    .await;
    assert_eq!(active_name(&timed_out), None);
    assert_eq!(pending_name(&timed_out), None);
    let owned_by = |name: &'static str| {
        let clusters = clusters.clone();
        async move {
            clusters
                .list(&ListParams::default().labels(&format!("ray.io/originated-from-cr-name={name}")))
                .await
                .unwrap()
                .items
        }
    };
    wait_for("the timed-out RayService's clusters to be deleted", || async {
        owned_by("hasty").await.is_empty().then_some(())
    })
    .await;

    let ready = wait_ready_of(&rayservices, "steady", "the None-strategy RayService to become Ready").await;
    let cluster = active_name(&ready).unwrap();
    update_spec_of(&rayservices, "steady", |s| {
        head_container(s).image = Some("rayproject/ray:2.52.1".into());
    })
    .await;
    // Several passes later: still one cluster, no pending one, no upgrade.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let service = rayservices.get("steady").await.unwrap();
    assert_eq!(active_name(&service).as_deref(), Some(cluster.as_str()));
    assert_eq!(pending_name(&service), None);
    assert_eq!(
        condition(&service, "UpgradeInProgress"),
        Some(("False".into(), "NoPendingCluster".into()))
    );
    let owned = owned_by("steady").await;
    assert_eq!(owned.len(), 1);
    let image = owned[0].spec.head_group_spec.template.spec.as_ref().unwrap().containers[0]
        .image
        .clone();
    assert_eq!(image.as_deref(), Some("rayproject/ray:2.52.0"));

    // A serve config change still reaches the running cluster.
    update_spec_of(&rayservices, "steady", |s| {
        replace_in_serve_config(s, "price: 3", "price: 5")
    })
    .await;
    wait_for("the serve config change on the same cluster", || async {
        (mango_price(&ray, &cluster) == Some(5)).then_some(())
    })
    .await;
    wait_ready_of(&rayservices, "steady", "Ready after the serve config change").await;
}
