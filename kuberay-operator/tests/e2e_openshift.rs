//! End to end, the real operator binary against an in-process kube-sim that serves OpenShift's
//! `route.openshift.io/v1` Routes (installed as a CRD before the operator starts, so its one-time
//! discovery sees the group): `headGroupSpec.enableIngress` gives a Route instead of an Ingress, unless
//! `USE_INGRESS_ON_OPENSHIFT=true`.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::time::Duration;

use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::api::{Api, DeleteParams, ListParams, PostParams};
use kube::{Client, ResourceExt};
use ray_api::RayCluster;
use ray_podgen::route::{Route, RouteSpec, RouteTargetReference};
use serde_json::{Value, json};

use crate::common;
use common::{Operator, SimEnv, free_port};

const NS: &str = "default";
/// Each step is one or two reconcile passes; generous for a loaded 2-core machine.
const WAIT: Duration = Duration::from_secs(20);
/// A user annotation the Route must carry.
const TEAM_ANNOTATION: (&str, &str) = ("example.com/team", "ray");
/// The ingress-class annotation: dropped from the Ingress, kept on the Route.
const INGRESS_CLASS_ANNOTATION: (&str, &str) = ("kubernetes.io/ingress.class", "nginx");

/// Poll `check` every 100 ms until it yields `Some`, failing after [`WAIT`].
async fn wait_for<T, F, Fut>(what: &str, check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Option<T>>,
{
    common::wait_for(what, WAIT, Duration::from_millis(100), check).await
}

/// OpenShift's Route CRD as kube-sim needs it: `route.openshift.io/v1`, namespaced, any content.
fn route_crd() -> Value {
    json!({
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "routes.route.openshift.io"},
        "spec": {
            "group": "route.openshift.io", "scope": "Namespaced",
            "names": {"plural": "routes", "singular": "route", "kind": "Route", "listKind": "RouteList"},
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": true}},
                "subresources": {"status": {}}
            }]
        }
    })
}

/// kube-sim (optionally serving Routes) with the operator running against it.
struct Env {
    /// Keeps the simulated API server alive.
    _sim: kube_sim::SimHandle,
    client: Client,
    operator: Operator,
    dir: PathBuf,
}

impl Env {
    /// kube-sim with our CRDs and the Route CRD, then the operator with the environment `env`.
    async fn start(tag: &str, env: &[(&str, &str)]) -> Env {
        let SimEnv {
            sim,
            client,
            dir,
            kubeconfig,
        } = SimEnv::start(tag, kube_sim::SimConfig::default()).await;
        common::install_extra_crds(&client, &[route_crd()]).await;
        let operator = Operator::start_with_env(&dir, &kubeconfig, NS, free_port(), free_port(), &[], env);
        Env {
            _sim: sim,
            client,
            operator,
            dir,
        }
    }

    fn api<K>(&self) -> Api<K>
    where
        K: kube::Resource<Scope = k8s_openapi::NamespaceResourceScope>,
        K::DynamicType: Default,
    {
        Api::namespaced(self.client.clone(), NS)
    }

    async fn create_cluster(&self, cluster: &RayCluster) {
        self.api::<RayCluster>()
            .create(&PostParams::default(), cluster)
            .await
            .unwrap();
    }

    /// Waits for the cluster's head service: the pass that made it went through the Ingress / Route step.
    async fn wait_head_service(&self, cluster: &str) {
        let services: Api<Service> = self.api();
        let name = format!("{cluster}-head-svc");
        wait_for(&format!("service {name}"), || async {
            services.get_opt(&name).await.unwrap().map(|_| ())
        })
        .await;
    }

    /// The first event with `reason` about the object named `regarding`, if any yet.
    async fn event(&self, reason: &str, regarding: &str) -> Option<Event> {
        self.api::<Event>()
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .into_iter()
            .find(|e| {
                e.reason.as_deref() == Some(reason)
                    && e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some(regarding)
            })
    }

    async fn routes(&self) -> Vec<Route> {
        self.api::<Route>().list(&ListParams::default()).await.unwrap().items
    }

    async fn ingresses(&self) -> Vec<Ingress> {
        self.api::<Ingress>().list(&ListParams::default()).await.unwrap().items
    }

    fn finish(self) {
        let dir = self.dir.clone();
        drop(self.operator);
        let _ = std::fs::remove_dir_all(dir);
    }
}

/// `ray-cluster.sample.yaml` named `name`, with `enableIngress: true` and two annotations.
fn cluster_with_ingress(name: &str) -> RayCluster {
    let doc = common::sample_documents("ray-cluster.sample.yaml").remove(0);
    let mut cluster: RayCluster = serde_json::from_value(doc).unwrap();
    cluster.metadata.name = Some(name.into());
    cluster.metadata.namespace = Some(NS.into());
    cluster.metadata.annotations = Some(BTreeMap::from([
        (TEAM_ANNOTATION.0.to_owned(), TEAM_ANNOTATION.1.to_owned()),
        (
            INGRESS_CLASS_ANNOTATION.0.to_owned(),
            INGRESS_CLASS_ANNOTATION.1.to_owned(),
        ),
    ]));
    cluster.spec.head_group_spec.enable_ingress = Some(true);
    cluster
}

/// On OpenShift: the dashboard Route `<c>-head-route` (KubeRay's shape, owned by the cluster, every
/// cluster annotation), no Ingress, a `CreatedRoute` event; a cluster that already has a Route labelled
/// with its name gets none; deleting the cluster garbage-collects its Route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enable_ingress_on_openshift_creates_a_route_not_an_ingress() {
    let env = Env::start("openshift-route", &[]).await;
    let routes: Api<Route> = env.api();

    let name = "route-demo";
    env.create_cluster(&cluster_with_ingress(name)).await;
    let route_name = format!("{name}-head-route");
    let route = wait_for(&format!("route {route_name}"), || async {
        routes.get_opt(&route_name).await.unwrap()
    })
    .await;
    let cluster = env.api::<RayCluster>().get(name).await.unwrap();

    assert_eq!(
        route.metadata.labels,
        Some(BTreeMap::from([
            ("ray.io/cluster".to_owned(), name.to_owned()),
            ("ray.io/identifier".to_owned(), format!("{name}-head")),
            ("app.kubernetes.io/name".to_owned(), "kuberay".to_owned()),
            ("app.kubernetes.io/created-by".to_owned(), "kuberay-operator".to_owned()),
        ]))
    );
    let annotations = route.annotations();
    assert_eq!(annotations[TEAM_ANNOTATION.0], TEAM_ANNOTATION.1);
    assert_eq!(annotations[INGRESS_CLASS_ANNOTATION.0], INGRESS_CLASS_ANNOTATION.1);
    assert_eq!(route.spec.to.kind, "Service");
    assert_eq!(route.spec.to.name, format!("{name}-head-svc"));
    assert_eq!(route.spec.to.weight, Some(100));
    assert_eq!(
        route.spec.port.as_ref().map(|p| &p.target_port),
        Some(&IntOrString::Int(8265))
    );
    assert_eq!(route.spec.wildcard_policy, "None");
    let owners = route.owner_references();
    assert_eq!(owners.len(), 1);
    assert_eq!(
        (owners[0].kind.as_str(), owners[0].name.as_str(), owners[0].uid.as_str()),
        ("RayCluster", name, cluster.metadata.uid.as_deref().unwrap())
    );
    assert_eq!(owners[0].controller, Some(true));

    let event = wait_for("CreatedRoute event", || env.event("CreatedRoute", name)).await;
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    assert_eq!(event.action.as_deref(), Some("Create"));
    assert_eq!(
        event.note.as_deref(),
        Some(format!("Created route {NS}/{route_name}").as_str())
    );

    // The pass that created the Route went on to the head service; no Ingress on the way.
    env.wait_head_service(name).await;
    assert!(env.ingresses().await.is_empty(), "no Ingress on OpenShift");

    // A Route already labelled with the cluster's name (whatever its name) means no dashboard Route.
    let premade_cluster = "route-premade";
    let mut premade = Route::new(
        "someone-elses-route",
        RouteSpec {
            to: RouteTargetReference {
                kind: "Service".into(),
                name: "elsewhere".into(),
                weight: None,
            },
            ..RouteSpec::default()
        },
    );
    premade.metadata.labels = Some(BTreeMap::from([(
        "ray.io/cluster".to_owned(),
        premade_cluster.to_owned(),
    )]));
    routes.create(&PostParams::default(), &premade).await.unwrap();
    env.create_cluster(&cluster_with_ingress(premade_cluster)).await;
    env.wait_head_service(premade_cluster).await;
    assert_eq!(
        routes
            .get_opt(&format!("{premade_cluster}-head-route"))
            .await
            .unwrap()
            .map(|r| r.name_any()),
        None,
        "a labelled Route exists: no create"
    );
    assert_eq!(
        routes.get("someone-elses-route").await.unwrap().spec,
        premade.spec,
        "never updated"
    );
    assert!(env.event("CreatedRoute", premade_cluster).await.is_none());
    assert!(env.ingresses().await.is_empty(), "no Ingress on OpenShift");

    // Deleting the cluster takes its Route with it (owner reference).
    env.api::<RayCluster>()
        .delete(name, &DeleteParams::default())
        .await
        .unwrap();
    wait_for(&format!("route {route_name} garbage-collected"), || {
        common::gone(&routes, &route_name)
    })
    .await;
    env.finish();
}

/// `USE_INGRESS_ON_OPENSHIFT=true`: on OpenShift the operator creates the Ingress, and no Route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn use_ingress_on_openshift_keeps_the_ingress() {
    let env = Env::start("openshift-ingress", &[("USE_INGRESS_ON_OPENSHIFT", "true")]).await;
    let name = "ingress-demo";
    env.create_cluster(&cluster_with_ingress(name)).await;
    let ingresses: Api<Ingress> = env.api();
    let ingress_name = format!("{name}-head-ingress");
    let ingress = wait_for(&format!("ingress {ingress_name}"), || async {
        ingresses.get_opt(&ingress_name).await.unwrap()
    })
    .await;
    // The Ingress drops the class annotation into spec.ingressClassName.
    assert_eq!(
        ingress.spec.as_ref().and_then(|s| s.ingress_class_name.as_deref()),
        Some(INGRESS_CLASS_ANNOTATION.1)
    );
    let event = wait_for("CreatedIngress event", || env.event("CreatedIngress", name)).await;
    assert_eq!(event.type_.as_deref(), Some("Normal"));
    env.wait_head_service(name).await;
    assert!(
        env.routes().await.is_empty(),
        "no Route with USE_INGRESS_ON_OPENSHIFT=true"
    );
    env.finish();
}

/// Plain kube-sim is not OpenShift: it serves no `route.openshift.io` group, so the operator's discovery
/// picks Ingresses (the Ingress path itself is covered by `e2e_raycluster_more`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plain_kube_sim_serves_no_route_api() {
    let env = SimEnv::start("openshift-plain", kube_sim::SimConfig::default()).await;
    let groups = env.client.list_api_groups().await.unwrap();
    assert!(groups.groups.iter().all(|g| !g.name.ends_with(".openshift.io")));
    let routes: Api<Route> = Api::namespaced(env.client.clone(), NS);
    match routes.list(&ListParams::default()).await {
        Err(kube::Error::Api(status)) => assert!(status.is_not_found(), "{status:?}"),
        other => panic!("Routes must not be served by plain kube-sim: {other:?}"),
    }
    // Installing the CRD is what makes it OpenShift for the operator.
    common::install_extra_crds(&env.client, &[route_crd()]).await;
    let groups = env.client.list_api_groups().await.unwrap();
    assert!(groups.groups.iter().any(|g| g.name == "route.openshift.io"));
    let _ = std::fs::remove_dir_all(&env.dir);
}
