//! The RayCluster's children besides pods: the autoscaler's RBAC, the dashboard Ingress (an
//! OpenShift Route on OpenShift), the auth token Secret, the head, headless worker and serve
//! Services, the GCS storage PVC and the batch scheduler's PodGroup.
//!
//! Each child has a pure part (whether it is wanted, which object, what to do given what exists),
//! which [`super::desired`] calls to build a pass's desired children once, and an async
//! `reconcile_*` that compares the desired object with what exists and performs the GET / CREATE /
//! UPDATE through kube's `Api` with KubeRay's events; [`reconcile`] runs them in KubeRay's order.
//! Every object carries the cluster's controller reference (except a PVC with
//! `deletionPolicy: Retain`), so the API server garbage-collects it with the cluster.

use super::desired::{AutoscalerChildren, DashboardObject, DesiredChildren, ServeServiceChild};
use super::error::PassError;
use super::executor::{Context, cluster_key};
use super::observed::ServiceInfo;
use super::status::suspend_status;
use crate::conditions;
use crate::config::FeatureGates;
use crate::events::{EventSpec, action, reason};
use crate::kube_errors::is_already_exists;
use crate::pod_group_sync::{pod_group_name, sync_pod_group};
use base64::Engine as _;
use k8s_openapi::api::core::v1::{PersistentVolumeClaim, Secret, Service, ServiceAccount};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube::api::{Api, ListParams, PostParams};
use kube::{Resource, ResourceExt};
use ray_api::constants::{
    ENABLE_SERVE_SERVICE_ANNOTATION, ENABLE_SERVE_SERVICE_TRUE, NODE_TYPE_HEAD, RAY_CLUSTER_HEADLESS_SERVICE_LABEL,
    RAY_CLUSTER_LABEL,
};
use ray_api::quantity::Qty;
use ray_api::{AuthMode, RayCluster};
use ray_gang::{DesiredPodGroup, GangError};
use ray_podgen::cluster::{cluster_name, cluster_namespace, cluster_owner_reference};
use ray_podgen::env_names::RAY_AUTH_TOKEN_SECRET_KEY;
use ray_podgen::names::check_name;
use ray_podgen::route::Route;
use ray_podgen::service::ServeServiceOwner;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::collections::BTreeMap;
use std::fmt::Debug;
use std::io::Read;
use std::sync::Arc;
use tracing::debug;

/// Random bytes in a generated Ray auth token (KubeRay: 32 bytes, standard base64).
pub const AUTH_TOKEN_BYTES: usize = 32;

/// The PVC resource that carries its size.
const STORAGE_RESOURCE: &str = "storage";

/// Where the operator reads the auth token's random bytes from.
const RANDOM_SOURCE: &str = "/dev/urandom";

fn owned_by(
    meta_refs: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>,
    cluster: &RayCluster,
) -> bool {
    let uid = cluster.metadata.uid.as_deref().unwrap_or_default();
    meta_refs
        .into_iter()
        .flatten()
        .any(|r| r.controller == Some(true) && r.uid == uid)
}

// ---------------------------------------------------------------------------------------------
// The pass's children, in KubeRay's order.

/// Creates or updates what `desired` holds besides the pods, in KubeRay's order (`rayClusterReconcile`
/// up to the pods); the first failure ends the pass (status is still written). The batch
/// scheduler's PodGroup comes last: `reconcilePods` syncs it before any pod.
pub async fn reconcile(cluster: &RayCluster, ctx: &Context, desired: &DesiredChildren<'_>) -> Result<(), PassError> {
    if let Some(rbac) = &desired.autoscaler_rbac {
        reconcile_autoscaler_rbac(cluster, ctx, rbac).await?;
    }
    reconcile_dashboard(cluster, ctx, desired.dashboard.as_ref()).await?;
    if let Some(name) = &desired.auth_secret {
        reconcile_auth_secret(cluster, ctx, name).await?;
    }
    reconcile_head_service(cluster, ctx, &desired.head_service).await?;
    if let Some(service) = &desired.headless_service {
        reconcile_headless_service(cluster, ctx, service).await?;
    }
    if let Some(serve) = &desired.serve_service {
        reconcile_serve_service(cluster, ctx, serve).await?;
    }
    reconcile_gcs_storage_pvc(cluster, ctx, &desired.gcs_pvc).await?;
    reconcile_pod_group(cluster, ctx, &desired.pod_group).await
}

// ---------------------------------------------------------------------------------------------
// Autoscaler RBAC (`reconcileAutoscalerServiceAccount`, `...Role`, `...RoleBinding`).

/// The autoscaler's ServiceAccount, Role and RoleBinding, each created when missing.
pub async fn reconcile_autoscaler_rbac(
    cluster: &RayCluster,
    ctx: &Context,
    rbac: &AutoscalerChildren,
) -> Result<(), PassError> {
    let ns = cluster_namespace(cluster);
    reconcile_autoscaler_service_account(cluster, ctx, rbac).await?;
    let role_api: Api<Role> = Api::namespaced(ctx.client.clone(), ns);
    if get_child(&role_api, &rbac.objects.role.name_any()).await?.is_none() {
        create_child(
            cluster,
            ctx,
            &role_api,
            &rbac.objects.role,
            reason::CREATED_ROLE,
            reason::FAILED_TO_CREATE_ROLE,
            "role",
        )
        .await?;
    }
    let rb_api: Api<RoleBinding> = Api::namespaced(ctx.client.clone(), ns);
    if get_child(&rb_api, &rbac.objects.role_binding.name_any())
        .await?
        .is_none()
    {
        create_child(
            cluster,
            ctx,
            &rb_api,
            &rbac.objects.role_binding,
            reason::CREATED_ROLE_BINDING,
            reason::FAILED_TO_CREATE_ROLE_BINDING,
            "role binding",
        )
        .await?;
    }
    Ok(())
}

/// The head's ServiceAccount: a missing user-named one fails the pass, the operator's own is
/// created when missing.
async fn reconcile_autoscaler_service_account(
    cluster: &RayCluster,
    ctx: &Context,
    rbac: &AutoscalerChildren,
) -> Result<(), PassError> {
    let ns = cluster_namespace(cluster);
    let sa_api: Api<ServiceAccount> = Api::namespaced(ctx.client.clone(), ns);
    let sa_key = rbac.service_account_name(cluster);
    if get_child(&sa_api, &sa_key).await?.is_some() {
        return Ok(());
    }
    if rbac.user_service_account.is_some() {
        let note = format!(
            "Failed to reconcile RayCluster {ns}/{}. Autoscaler ServiceAccount {sa_key} not found; create it or unset serviceAccountName in the head template",
            cluster_name(cluster)
        );
        ctx.publish(
            cluster,
            EventSpec::warning(
                reason::AUTOSCALER_SERVICE_ACCOUNT_NOT_FOUND,
                action::VALIDATE,
                note.clone(),
            ),
        )
        .await;
        return Err(PassError::plain(note));
    }
    let Some(account) = &rbac.objects.service_account else {
        return Ok(());
    };
    create_child(
        cluster,
        ctx,
        &sa_api,
        account,
        reason::CREATED_SERVICE_ACCOUNT,
        reason::FAILED_TO_CREATE_SERVICE_ACCOUNT,
        "service account",
    )
    .await
}

// ---------------------------------------------------------------------------------------------
// Head service (`reconcileHeadService`).

/// The head Service: nothing when exactly one exists (in the index), an error with several,
/// else create `desired` (failing the pass when it could not be built).
pub async fn reconcile_head_service(
    cluster: &RayCluster,
    ctx: &Context,
    desired: &Result<Service, ray_podgen::PodGenError>,
) -> Result<(), PassError> {
    let key = cluster_key(cluster);
    let identifier = format!("{}-{}", key.name, NODE_TYPE_HEAD);
    let existing: Vec<Arc<ServiceInfo>> = ctx
        .services
        .cluster(&key)
        .into_iter()
        .filter(|s| s.identifier.is_empty() || s.identifier.ends_with(&identifier))
        .collect();
    match existing.len() {
        0 => {}
        1 => return Ok(()),
        n => {
            let names: Vec<&str> = existing.iter().map(|s| s.name.as_str()).collect();
            return Err(PassError::plain(format!("{n} head service found {names:?}")));
        }
    }
    let svc = desired.as_ref().map_err(|e| PassError::plain(e.to_string()))?;
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), &key.namespace);
    let svc_name = svc.name_any();
    match api.create(&PostParams::default(), svc).await {
        Ok(_) => {
            ctx.publish(
                cluster,
                EventSpec::normal(
                    reason::CREATED_SERVICE,
                    action::CREATE,
                    format!("Created service {}/{svc_name}", key.namespace),
                ),
            )
            .await;
            Ok(())
        }
        Err(e) if is_already_exists(&e) => Ok(()),
        Err(e) => {
            let note = format!("Failed to create service {}/{svc_name}, {e}", key.namespace);
            ctx.publish(
                cluster,
                EventSpec::warning(reason::FAILED_TO_CREATE_SERVICE, action::CREATE, note.clone()),
            )
            .await;
            Err(PassError::plain(note))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Ingress (`reconcileIngress`).

/// The dashboard Ingress the cluster should have (`headGroupSpec.enableIngress`), owned by it.
pub fn desired_ingress(cluster: &RayCluster) -> Option<Ingress> {
    if !ray_podgen::ingress::ingress_enabled(cluster) {
        return None;
    }
    let mut ingress = ray_podgen::ingress::build_ingress(cluster);
    ingress.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
    Some(ingress)
}

/// What to do about the dashboard Ingress given the same-named object read back.
#[derive(Clone, Debug, PartialEq)]
pub enum IngressAction {
    /// None exists: create this one.
    Create(Ingress),
    /// Ours, but its spec, labels or annotations drifted: replace it with this one.
    Update(Ingress),
    /// Ours and up to date.
    Keep,
    /// An Ingress of that name exists and is not ours: report, do not touch it.
    NotOwned,
}

/// Plans the Ingress write: create when missing, update our own when it drifted, leave a foreign
/// one alone.
pub fn plan_ingress(cluster: &RayCluster, desired: Ingress, existing: Option<&Ingress>) -> IngressAction {
    let Some(existing) = existing else {
        return IngressAction::Create(desired);
    };
    if !owned_by(existing.metadata.owner_references.as_ref(), cluster) {
        return IngressAction::NotOwned;
    }
    let same = existing.spec == desired.spec
        && existing.metadata.labels == desired.metadata.labels
        && existing.metadata.annotations == desired.metadata.annotations;
    if same {
        return IngressAction::Keep;
    }
    let mut updated = existing.clone();
    updated.spec = desired.spec;
    updated.metadata.labels = desired.metadata.labels;
    updated.metadata.annotations = desired.metadata.annotations;
    IngressAction::Update(updated)
}

/// What exposes a cluster's dashboard outside the Kubernetes cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DashboardExposure {
    /// `headGroupSpec.enableIngress` is not `true`: nothing.
    Nothing,
    /// A Kubernetes Ingress (`reconcileIngressKubernetes`).
    Ingress,
    /// An OpenShift Route (`reconcileRouteOpenShift`).
    Route,
}

/// KubeRay's `reconcileIngress` switch: nothing unless `enableIngress`; then a Route when the operator
/// discovered OpenShift at start-up and `USE_INGRESS_ON_OPENSHIFT` is not `true`
/// ([`crate::config::ReconcileConfig::use_openshift_route`]), else an Ingress.
pub fn dashboard_exposure(cluster: &RayCluster, use_openshift_route: bool) -> DashboardExposure {
    if !ray_podgen::ingress::ingress_enabled(cluster) {
        DashboardExposure::Nothing
    } else if use_openshift_route {
        DashboardExposure::Route
    } else {
        DashboardExposure::Ingress
    }
}

/// `reconcileIngress`: the dashboard Ingress, or the OpenShift Route, when `headGroupSpec.enableIngress`
/// is true.
pub async fn reconcile_dashboard(
    cluster: &RayCluster,
    ctx: &Context,
    desired: Option<&DashboardObject>,
) -> Result<(), PassError> {
    match desired {
        None => Ok(()),
        Some(DashboardObject::Ingress(ingress)) => {
            reconcile_kubernetes_ingress(cluster, ctx, ingress.as_ref().clone()).await
        }
        Some(DashboardObject::Route(route)) => reconcile_openshift_route(cluster, ctx, route.as_ref().clone()).await,
    }
}

/// `reconcileIngressKubernetes`: create, update or refuse the dashboard Ingress.
async fn reconcile_kubernetes_ingress(cluster: &RayCluster, ctx: &Context, desired: Ingress) -> Result<(), PassError> {
    let ns = cluster_namespace(cluster).to_owned();
    let name = desired.name_any();
    let api: Api<Ingress> = Api::namespaced(ctx.client.clone(), &ns);
    let existing = get_child(&api, &name).await?;
    match plan_ingress(cluster, desired, existing.as_ref()) {
        IngressAction::Keep => Ok(()),
        IngressAction::Create(ingress) => {
            create_child(
                cluster,
                ctx,
                &api,
                &ingress,
                reason::CREATED_INGRESS,
                reason::FAILED_TO_CREATE_INGRESS,
                "ingress",
            )
            .await
        }
        IngressAction::Update(ingress) => match api.replace(&name, &PostParams::default(), &ingress).await {
            Ok(_) => {
                let note = format!("Updated ingress {ns}/{name}");
                ctx.publish(
                    cluster,
                    EventSpec::normal(reason::UPDATED_INGRESS, action::UPDATE, note),
                )
                .await;
                Ok(())
            }
            Err(e) => {
                let note = format!("Failed to update ingress {ns}/{name}, {e}");
                ctx.publish(
                    cluster,
                    EventSpec::warning(reason::FAILED_TO_UPDATE_INGRESS, action::UPDATE, note.clone()),
                )
                .await;
                Err(PassError::plain(note))
            }
        },
        IngressAction::NotOwned => {
            let note = format!(
                "Failed to create ingress {ns}/{name}: an ingress with this name exists and is not owned by RayCluster {ns}/{}",
                cluster_name(cluster)
            );
            ctx.publish(
                cluster,
                EventSpec::warning(reason::FAILED_TO_CREATE_INGRESS, action::CREATE, note.clone()),
            )
            .await;
            Err(PassError::plain(note))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// OpenShift Route (`reconcileRouteOpenShift`).

/// Note of the Normal `CreatedRoute` event: `Created route <namespace>/<name>` (KubeRay's text).
pub fn created_route_note(namespace: &str, name: &str) -> String {
    format!("Created route {namespace}/{name}")
}

/// Note of the Warning `FailedToCreateRoute` event: `Failed creating route <namespace>/<name>, <error>`
/// (KubeRay's text).
pub fn failed_to_create_route_note(namespace: &str, name: &str, error: &dyn std::fmt::Display) -> String {
    format!("Failed creating route {namespace}/{name}, {error}")
}

/// The dashboard Route the cluster should have (`headGroupSpec.enableIngress`), owned by it.
pub fn desired_route(cluster: &RayCluster) -> Option<Route> {
    if !ray_podgen::ingress::ingress_enabled(cluster) {
        return None;
    }
    let mut route = ray_podgen::route::build_route(cluster);
    route.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
    Some(route)
}

/// Plans the Route write from the number of Routes labelled `ray.io/cluster=<cluster>` in the
/// cluster's namespace: create `desired` only when there is none. A Route is never updated, and with
/// two or more (made by someone else) KubeRay does nothing either.
pub fn plan_route(desired: Route, labelled_routes: usize) -> Option<Route> {
    (labelled_routes == 0).then_some(desired)
}

/// The label selector finding a cluster's Routes: `ray.io/cluster=<cluster>`.
pub fn route_selector(cluster: &RayCluster) -> String {
    format!("{RAY_CLUSTER_LABEL}={}", cluster_name(cluster))
}

/// `reconcileRouteOpenShift`: list the Routes labelled with the cluster's name; when there are none,
/// create the dashboard Route (an `AlreadyExists` answer counts as there, without an event).
async fn reconcile_openshift_route(cluster: &RayCluster, ctx: &Context, desired: Route) -> Result<(), PassError> {
    let ns = cluster_namespace(cluster).to_owned();
    let api: Api<Route> = Api::namespaced(ctx.client.clone(), &ns);
    let existing = api
        .list_metadata(&ListParams::default().labels(&route_selector(cluster)))
        .await
        .map_err(|e| {
            PassError::plain(format!(
                "failed to list the routes of RayCluster {ns}/{}: {e}",
                cluster_name(cluster)
            ))
        })?;
    let Some(route) = plan_route(desired, existing.items.len()) else {
        return Ok(());
    };
    let name = route.name_any();
    match api.create(&PostParams::default(), &route).await {
        Ok(_) => {
            ctx.publish(
                cluster,
                EventSpec::normal(reason::CREATED_ROUTE, action::CREATE, created_route_note(&ns, &name)),
            )
            .await;
            debug!(route = %name, "created dashboard route");
            Ok(())
        }
        Err(e) if is_already_exists(&e) => Ok(()),
        Err(e) => {
            let note = failed_to_create_route_note(&ns, &name, &e);
            ctx.publish(
                cluster,
                EventSpec::warning(reason::FAILED_TO_CREATE_ROUTE, action::CREATE, note.clone()),
            )
            .await;
            Err(PassError::plain(note))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Auth secret (`reconcileAuthSecret`).

/// Whether the operator generates the token Secret: `authOptions` set with a mode other than
/// `disabled` (an unset mode counts), no Kubernetes token auth and no user `secretName`.
pub fn auth_secret_needed(cluster: &RayCluster) -> bool {
    let Some(options) = &cluster.spec.auth_options else {
        return false;
    };
    options.mode != Some(AuthMode::Disabled)
        && options.enable_k8s_token_auth != Some(true)
        && options.secret_name.as_deref().is_none_or(str::is_empty)
}

/// Name of the generated token Secret: `CheckName(<cluster>)`.
pub fn auth_secret_name(cluster: &RayCluster) -> String {
    check_name(cluster_name(cluster))
}

/// The token Secret holding `token` under `auth_token`, labelled and owned by the cluster.
pub fn build_auth_secret(cluster: &RayCluster, token: &str) -> Secret {
    let mut secret = Secret::default();
    secret.metadata.name = Some(auth_secret_name(cluster));
    secret.metadata.namespace = Some(cluster_namespace(cluster).to_owned());
    secret.metadata.labels = Some(BTreeMap::from([(
        RAY_CLUSTER_LABEL.to_owned(),
        cluster_name(cluster).to_owned(),
    )]));
    secret.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
    secret.string_data = Some(BTreeMap::from([(
        RAY_AUTH_TOKEN_SECRET_KEY.to_owned(),
        token.to_owned(),
    )]));
    secret
}

/// Token text for `bytes`: standard base64 with padding (Go's `base64.StdEncoding`).
fn token_text(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A fresh token: [`AUTH_TOKEN_BYTES`] bytes from the kernel's CSPRNG, base64-encoded.
pub fn random_auth_token() -> std::io::Result<String> {
    let mut bytes = [0u8; AUTH_TOKEN_BYTES];
    std::fs::File::open(RANDOM_SOURCE)?.read_exact(&mut bytes)?;
    Ok(token_text(&bytes))
}

/// `reconcileAuthSecret`: create the token Secret when needed and missing (never updated).
/// `name` is the Secret's; its token is drawn only when it is created.
pub async fn reconcile_auth_secret(cluster: &RayCluster, ctx: &Context, name: &str) -> Result<(), PassError> {
    let api: Api<Secret> = Api::namespaced(ctx.client.clone(), cluster_namespace(cluster));
    let created = create_if_missing(&api, cluster, name, "auth secret", || {
        let token = random_auth_token()
            .map_err(|e| PassError::plain(format!("failed to generate the auth token for secret {name}: {e}")))?;
        Ok(build_auth_secret(cluster, &token))
    })
    .await?;
    if created {
        debug!(secret = %name, "created auth token secret");
    }
    Ok(())
}

/// A child object of the cluster by name (`None` when missing); API errors become plain pass errors.
async fn get_child<K>(api: &Api<K>, name: &str) -> Result<Option<K>, PassError>
where
    K: Clone + DeserializeOwned + Debug,
{
    api.get_opt(name).await.map_err(|e| PassError::plain(e.to_string()))
}

/// KubeRay's get-or-create of a child it never updates and reports no event for: when `name` is missing,
/// creates what `build` returns (one created meanwhile counts as there). Returns whether this call created
/// it; a failed create reads `failed to create <what> <namespace>/<name>: <error>`.
async fn create_if_missing<K>(
    api: &Api<K>,
    cluster: &RayCluster,
    name: &str,
    what: &str,
    build: impl FnOnce() -> Result<K, PassError>,
) -> Result<bool, PassError>
where
    K: Clone + Serialize + DeserializeOwned + Debug,
{
    if get_child(api, name).await?.is_some() {
        return Ok(false);
    }
    match api.create(&PostParams::default(), &build()?).await {
        Ok(_) => Ok(true),
        Err(e) if is_already_exists(&e) => Ok(false),
        Err(e) => Err(PassError::plain(format!(
            "failed to create {what} {}/{name}: {e}",
            cluster_namespace(cluster)
        ))),
    }
}

/// Create one child object with KubeRay's `Created*` / `FailedToCreate*` events; `AlreadyExists` is fine.
pub(super) async fn create_child<K>(
    cluster: &RayCluster,
    ctx: &Context,
    api: &Api<K>,
    obj: &K,
    ok_reason: &'static str,
    fail_reason: &'static str,
    what: &str,
) -> Result<(), PassError>
where
    K: Resource + Clone + serde::Serialize + serde::de::DeserializeOwned + std::fmt::Debug,
{
    let ns = cluster.namespace().unwrap_or_default();
    let obj_name = obj.meta().name.clone().unwrap_or_default();
    match api.create(&PostParams::default(), obj).await {
        Ok(_) => {
            ctx.publish(
                cluster,
                EventSpec::normal(ok_reason, action::CREATE, format!("Created {what} {ns}/{obj_name}")),
            )
            .await;
            Ok(())
        }
        Err(e) if is_already_exists(&e) => Ok(()),
        Err(e) => {
            let note = format!("Failed to create {what} {ns}/{obj_name}, {e}");
            ctx.publish(cluster, EventSpec::warning(fail_reason, action::CREATE, note.clone()))
                .await;
            Err(PassError::plain(note))
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Headless worker service and serve service.

/// The headless worker Service (only when some group has `numOfHosts > 1`), owned by the cluster.
pub fn desired_headless_service(cluster: &RayCluster) -> Option<Service> {
    if !ray_podgen::service::needs_headless_service(cluster) {
        return None;
    }
    let mut service = ray_podgen::service::build_headless_service(cluster);
    service.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
    Some(service)
}

/// `reconcileHeadlessService`: create `<cluster>-headless` unless a service labelled
/// `ray.io/headless-worker-svc=<cluster>` exists.
pub async fn reconcile_headless_service(
    cluster: &RayCluster,
    ctx: &Context,
    desired: &Service,
) -> Result<(), PassError> {
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), cluster_namespace(cluster));
    let selector = format!("{RAY_CLUSTER_HEADLESS_SERVICE_LABEL}={}", cluster_name(cluster));
    let existing = api
        .list_metadata(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| PassError::plain(e.to_string()))?;
    if !existing.items.is_empty() {
        return Ok(());
    }
    create_child(
        cluster,
        ctx,
        &api,
        desired,
        reason::CREATED_SERVICE,
        reason::FAILED_TO_CREATE_SERVICE,
        "service",
    )
    .await
}

/// Whether the cluster asks for a serve Service (annotation `ray.io/enable-serve-service: "true"`).
pub fn serve_service_enabled(cluster: &RayCluster) -> bool {
    cluster
        .annotations()
        .get(ENABLE_SERVE_SERVICE_ANNOTATION)
        .is_some_and(|v| v == ENABLE_SERVE_SERVICE_TRUE)
}

/// The serve Service of a RayCluster, owned by it (an error when the head has no serving port).
pub fn build_serve_service(cluster: &RayCluster) -> Result<Service, ray_podgen::PodGenError> {
    let mut service = ray_podgen::service::build_serve_service(cluster, ServeServiceOwner::RayCluster)?;
    service.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
    Ok(service)
}

/// `reconcileServeService`: GET `<cluster>-serve-svc`; when missing create it, failing the pass
/// when it could not be built (KubeRay emits no event for it).
pub async fn reconcile_serve_service(
    cluster: &RayCluster,
    ctx: &Context,
    serve: &ServeServiceChild,
) -> Result<(), PassError> {
    let api: Api<Service> = Api::namespaced(ctx.client.clone(), cluster_namespace(cluster));
    let name = &serve.name;
    let created = create_if_missing(&api, cluster, name, "serve service", || {
        serve.service.clone().map_err(|e| PassError::plain(e.to_string()))
    })
    .await?;
    if created {
        debug!(service = %name, "created serve service");
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// GCS storage PVC (`reconcileGCSStoragePVC`, embedded RocksDB backend only).

/// What the embedded GCS backend needs from storage.
#[derive(Clone, Debug, PartialEq)]
pub enum GcsPvcPlan {
    /// Not the embedded backend: nothing to do.
    NotNeeded,
    /// A user-provided claim (`storage.claimName`) that must exist.
    VerifyClaim(String),
    /// The operator-managed claim.
    Ensure(Box<PersistentVolumeClaim>),
}

/// The PVC plan of a cluster.
pub fn plan_gcs_pvc(cluster: &RayCluster) -> GcsPvcPlan {
    if !ray_podgen::cluster::gcs_ft_embedded(&cluster.spec) {
        return GcsPvcPlan::NotNeeded;
    }
    match ray_podgen::gcs_ft::build_gcs_storage_pvc(cluster) {
        Some(pvc) => GcsPvcPlan::Ensure(Box::new(pvc)),
        None => GcsPvcPlan::VerifyClaim(ray_podgen::gcs_ft::gcs_storage_pvc_name(cluster)),
    }
}

/// How an existing operator-managed PVC differs from the desired one (size, storage class, access
/// modes), as a note; `None` when it matches. PVC specs are immutable, so drift is only reported.
pub fn pvc_drift(existing: &PersistentVolumeClaim, desired: &PersistentVolumeClaim) -> Option<String> {
    let (have, want) = (
        existing.spec.clone().unwrap_or_default(),
        desired.spec.clone().unwrap_or_default(),
    );
    let size = |spec: &k8s_openapi::api::core::v1::PersistentVolumeClaimSpec| {
        spec.resources
            .as_ref()
            .and_then(|r| r.requests.as_ref())
            .and_then(|r| r.get(STORAGE_RESOURCE))
            .map(|q| q.0.clone())
    };
    let mut diffs = Vec::new();
    let (have_size, want_size) = (size(&have), size(&want));
    let same_size = match (&have_size, &want_size) {
        (Some(a), Some(b)) => match (Qty::parse(a), Qty::parse(b)) {
            (Ok(a), Ok(b)) => a.eq_value(&b),
            _ => a == b,
        },
        (a, b) => a == b,
    };
    if !same_size {
        diffs.push(format!(
            "storage request {} (desired {})",
            have_size.unwrap_or_default(),
            want_size.unwrap_or_default()
        ));
    }
    // An unset class is defaulted by the server; only an explicitly desired class can drift.
    if want.storage_class_name.is_some() && have.storage_class_name != want.storage_class_name {
        diffs.push(format!(
            "storageClassName {} (desired {})",
            have.storage_class_name.unwrap_or_default(),
            want.storage_class_name.unwrap_or_default()
        ));
    }
    if have.access_modes != want.access_modes {
        diffs.push(format!(
            "accessModes {:?} (desired {:?})",
            have.access_modes.unwrap_or_default(),
            want.access_modes.unwrap_or_default()
        ));
    }
    (!diffs.is_empty()).then(|| diffs.join(", "))
}

/// `reconcileGCSStoragePVC`: verify the user's claim, or create the operator's PVC when missing and
/// report (never fix) one that drifted.
pub async fn reconcile_gcs_storage_pvc(
    cluster: &RayCluster,
    ctx: &Context,
    plan: &GcsPvcPlan,
) -> Result<(), PassError> {
    let ns = cluster_namespace(cluster).to_owned();
    let api: Api<PersistentVolumeClaim> = Api::namespaced(ctx.client.clone(), &ns);
    let get = |name: String| {
        let api = api.clone();
        async move { get_child(&api, &name).await }
    };
    match plan {
        GcsPvcPlan::NotNeeded => Ok(()),
        GcsPvcPlan::VerifyClaim(name) => {
            if get(name.clone()).await?.is_none() {
                let note = format!(
                    "GCS storage PVC {ns}/{name} (gcsFaultToleranceOptions.storage.claimName) does not exist; create it for RayCluster {ns}/{}",
                    cluster_name(cluster)
                );
                ctx.publish(
                    cluster,
                    EventSpec::warning(reason::FAILED_TO_CREATE_PVC, action::VALIDATE, note),
                )
                .await;
            }
            Ok(())
        }
        GcsPvcPlan::Ensure(desired) => {
            let name = desired.name_any();
            match get(name.clone()).await? {
                None => {
                    create_child(
                        cluster,
                        ctx,
                        &api,
                        desired.as_ref(),
                        reason::CREATED_PVC,
                        reason::FAILED_TO_CREATE_PVC,
                        "PVC",
                    )
                    .await
                }
                Some(existing) => {
                    if let Some(drift) = pvc_drift(&existing, desired) {
                        let note = format!(
                            "GCS storage PVC {ns}/{name} differs from the RayCluster's storage options: {drift}; a PVC's spec cannot be changed in place"
                        );
                        ctx.publish(
                            cluster,
                            EventSpec::warning(reason::FAILED_TO_CREATE_PVC, action::UPDATE, note),
                        )
                        .await;
                    }
                    Ok(())
                }
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Batch scheduler PodGroup (`DoBatchSchedulingOnSubmission` in `reconcilePods`).

/// Whether `reconcilePods` reaches the batch-scheduler hook: not while the cluster is suspending or
/// suspended (or asked to suspend), where it returns before.
pub fn batch_scheduling_due(cluster: &RayCluster, gates: &FeatureGates) -> bool {
    let suspend = suspend_status(conditions::cluster_conditions(cluster));
    if suspend == Some(conditions::RAY_CLUSTER_SUSPENDING) || cluster.spec.suspend == Some(true) {
        return false;
    }
    !(gates.ray_cluster_status_conditions && suspend == Some(conditions::RAY_CLUSTER_SUSPENDED))
}

/// The batch scheduler's submission hook for a RayCluster: create or update its PodGroup (Volcano:
/// `minMember` / `minResources` follow the spec; scheduler-plugins: create only). An error ends
/// the pass before any pod is created.
pub async fn reconcile_pod_group(
    cluster: &RayCluster,
    ctx: &Context,
    desired: &Result<Option<DesiredPodGroup>, GangError>,
) -> Result<(), PassError> {
    let desired = match desired {
        Ok(Some(desired)) => desired,
        Ok(None) => return Ok(()),
        Err(e) => return Err(PassError::plain(e.to_string())),
    };
    let scheduler = ctx.podgen.scheduler;
    let key = cluster_key(cluster);
    let written = sync_pod_group(&ctx.client, &key.namespace, desired).await;
    let name = pod_group_name(desired);
    match written {
        Ok(true) => {
            debug!(podgroup = %name, scheduler = scheduler.plugin_name(), "synced PodGroup");
            Ok(())
        }
        Ok(false) => Ok(()),
        Err(e) => Err(PassError::plain(format!(
            "failed to sync PodGroup {}/{name} for batch scheduler {}: {e}",
            key.namespace,
            scheduler.plugin_name()
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use ray_api::RayClusterStatus;
    use ray_gang::DesiredPodGroup;
    use ray_gang::volcano::{self, SyncPlan};

    fn cluster(extra_spec: &str) -> RayCluster {
        let yaml = format!(
            r#"
apiVersion: ray.io/v1
kind: RayCluster
metadata: {{name: demo, namespace: ns, uid: u-1}}
spec:
  rayVersion: "2.52.0"
  headGroupSpec:
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-head
          image: rayproject/ray:2.52.0
          ports:
          - {{containerPort: 6379, name: gcs-server}}
          - {{containerPort: 8265, name: dashboard}}
          - {{containerPort: 8000, name: serve}}
  workerGroupSpecs:
  - groupName: small
    replicas: 1
    minReplicas: 1
    maxReplicas: 5
    rayStartParams: {{}}
    template:
      spec:
        containers:
        - name: ray-worker
          image: rayproject/ray:2.52.0
{extra_spec}"#
        );
        let docs: Vec<RayCluster> = ray_api::yaml::from_yaml_documents(&yaml).unwrap();
        docs.into_iter().next().unwrap()
    }

    fn owned_by_demo(refs: Option<&Vec<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>>) -> bool {
        let refs = refs.unwrap();
        refs.len() == 1 && refs[0].kind == "RayCluster" && refs[0].name == "demo" && refs[0].uid == "u-1"
    }

    #[test]
    fn ingress_is_wanted_only_with_enable_ingress_and_is_owned() {
        let plain = cluster("");
        assert!(desired_ingress(&plain).is_none());
        let mut c = cluster("");
        c.spec.head_group_spec.enable_ingress = Some(true);
        let ingress = desired_ingress(&c).unwrap();
        assert_eq!(ingress.name_any(), "demo-head-ingress");
        assert!(owned_by_demo(ingress.metadata.owner_references.as_ref()));
    }

    #[test]
    fn ingress_plan_creates_keeps_updates_and_refuses_foreign() {
        let mut c = cluster("");
        c.spec.head_group_spec.enable_ingress = Some(true);
        let desired = desired_ingress(&c).unwrap();
        assert_eq!(
            plan_ingress(&c, desired.clone(), None),
            IngressAction::Create(desired.clone())
        );

        let mut live = desired.clone();
        live.metadata.resource_version = Some("7".into());
        assert_eq!(plan_ingress(&c, desired.clone(), Some(&live)), IngressAction::Keep);

        let mut drifted = live.clone();
        drifted.spec.as_mut().unwrap().rules.as_mut().unwrap()[0].host = Some("old.example.com".into());
        match plan_ingress(&c, desired.clone(), Some(&drifted)) {
            IngressAction::Update(updated) => {
                assert_eq!(updated.spec, desired.spec);
                assert_eq!(updated.metadata.resource_version.as_deref(), Some("7"));
            }
            other => panic!("expected an update, got {other:?}"),
        }

        let mut foreign = live;
        foreign.metadata.owner_references = None;
        assert_eq!(plan_ingress(&c, desired, Some(&foreign)), IngressAction::NotOwned);
    }

    #[test]
    fn route_replaces_the_ingress_only_when_enabled_and_on_openshift() {
        let plain = cluster("");
        assert_eq!(dashboard_exposure(&plain, false), DashboardExposure::Nothing);
        assert_eq!(dashboard_exposure(&plain, true), DashboardExposure::Nothing);
        assert!(desired_route(&plain).is_none());
        let mut disabled = cluster("");
        disabled.spec.head_group_spec.enable_ingress = Some(false);
        assert_eq!(dashboard_exposure(&disabled, true), DashboardExposure::Nothing);
        let mut c = cluster("");
        c.spec.head_group_spec.enable_ingress = Some(true);
        assert_eq!(dashboard_exposure(&c, false), DashboardExposure::Ingress);
        assert_eq!(dashboard_exposure(&c, true), DashboardExposure::Route);
    }

    #[test]
    fn route_is_owned_labelled_and_created_only_when_no_labelled_route_exists() {
        let mut c = cluster("");
        c.spec.head_group_spec.enable_ingress = Some(true);
        c.metadata.annotations = Some(BTreeMap::from([(
            "kubernetes.io/ingress.class".to_owned(),
            "nginx".to_owned(),
        )]));
        let route = desired_route(&c).unwrap();
        assert_eq!(route.name_any(), "demo-head-route");
        assert_eq!(route.metadata.namespace.as_deref(), Some("ns"));
        assert!(owned_by_demo(route.metadata.owner_references.as_ref()));
        assert_eq!(route.labels()[RAY_CLUSTER_LABEL], "demo");
        assert_eq!(route.annotations()["kubernetes.io/ingress.class"], "nginx");
        assert_eq!(route.spec.to.name, "demo-head-svc");
        assert_eq!(route_selector(&c), "ray.io/cluster=demo");

        assert_eq!(plan_route(route.clone(), 0), Some(route.clone()));
        // An existing labelled Route (whatever its name or content) means no create, and never an update.
        assert_eq!(plan_route(route.clone(), 1), None);
        assert_eq!(plan_route(route, 2), None);
    }

    #[test]
    fn route_event_notes_are_kuberays() {
        assert_eq!(
            created_route_note("ns", "demo-head-route"),
            "Created route ns/demo-head-route"
        );
        assert_eq!(
            failed_to_create_route_note("ns", "demo-head-route", &"forbidden"),
            "Failed creating route ns/demo-head-route, forbidden"
        );
    }

    #[test]
    fn auth_secret_follows_kuberay_skip_rules() {
        assert!(!auth_secret_needed(&cluster("")));
        let with = |auth: &str| cluster(&format!("  authOptions: {auth}\n"));
        assert!(auth_secret_needed(&with("{mode: token}")));
        // A non-nil authOptions without a mode also gets a Secret.
        assert!(auth_secret_needed(&with("{}")));
        assert!(!auth_secret_needed(&with("{mode: disabled}")));
        assert!(!auth_secret_needed(&with("{mode: token, enableK8sTokenAuth: true}")));
        assert!(!auth_secret_needed(&with("{mode: token, secretName: mine}")));
        assert!(auth_secret_needed(&with("{mode: token, secretName: \"\"}")));

        let c = with("{mode: token}");
        let secret = build_auth_secret(&c, "tok");
        assert_eq!(secret.name_any(), "demo");
        assert_eq!(secret.metadata.namespace.as_deref(), Some("ns"));
        assert_eq!(secret.labels()[RAY_CLUSTER_LABEL], "demo");
        assert_eq!(secret.string_data.as_ref().unwrap()["auth_token"], "tok");
        assert!(owned_by_demo(secret.metadata.owner_references.as_ref()));
    }

    #[test]
    fn base64_matches_rfc4648_vectors() {
        for (input, want) in [
            ("", ""),
            ("f", "Zg=="),
            ("fo", "Zm8="),
            ("foo", "Zm9v"),
            ("foob", "Zm9vYg=="),
            ("fooba", "Zm9vYmE="),
            ("foobar", "Zm9vYmFy"),
        ] {
            assert_eq!(token_text(input.as_bytes()), want, "{input:?}");
        }
        assert_eq!(token_text(&[0xfb, 0xff]), "+/8=");
    }

    #[test]
    fn random_tokens_are_44_chars_and_differ() {
        let (a, b) = (random_auth_token().unwrap(), random_auth_token().unwrap());
        assert_eq!(a.len(), 44);
        assert!(a.ends_with('=') && !a.ends_with("=="));
        assert_ne!(a, b);
    }

    #[test]
    fn headless_service_only_for_multi_host_groups() {
        assert!(desired_headless_service(&cluster("")).is_none());
        let mut c = cluster("");
        c.spec.worker_group_specs.as_mut().unwrap()[0].num_of_hosts = Some(2);
        let svc = desired_headless_service(&c).unwrap();
        assert_eq!(svc.name_any(), "demo-headless");
        assert_eq!(svc.labels()[RAY_CLUSTER_HEADLESS_SERVICE_LABEL], "demo");
        assert_eq!(svc.spec.unwrap().cluster_ip.as_deref(), Some("None"));
        assert!(owned_by_demo(svc.metadata.owner_references.as_ref()));
    }

    #[test]
    fn serve_service_needs_the_exact_annotation_and_a_serve_port() {
        let mut c = cluster("");
        assert!(!serve_service_enabled(&c));
        c.metadata.annotations = Some(BTreeMap::from([(
            ENABLE_SERVE_SERVICE_ANNOTATION.to_owned(),
            "True".to_owned(),
        )]));
        assert!(!serve_service_enabled(&c), "the value is case-sensitive");
        c.metadata.annotations = Some(BTreeMap::from([(
            ENABLE_SERVE_SERVICE_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]));
        assert!(serve_service_enabled(&c));
        let svc = build_serve_service(&c).unwrap();
        assert_eq!(svc.name_any(), "demo-serve-svc");
        let ports = svc.spec.as_ref().unwrap().ports.clone().unwrap();
        assert_eq!(ports.len(), 1);
        assert_eq!(ports[0].port, 8000);
        assert!(owned_by_demo(svc.metadata.owner_references.as_ref()));

        // No serving port on the head: the builder's error.
        let containers = &mut c.spec.head_group_spec.template.spec.as_mut().unwrap().containers;
        containers[0]
            .ports
            .as_mut()
            .unwrap()
            .retain(|p| p.name.as_deref() != Some("serve"));
        assert!(build_serve_service(&c).is_err());
    }

    #[test]
    fn gcs_pvc_plan_and_drift() {
        assert_eq!(plan_gcs_pvc(&cluster("")), GcsPvcPlan::NotNeeded);
        let redis = cluster("  gcsFaultToleranceOptions: {redisAddress: \"redis:6379\"}\n");
        assert_eq!(plan_gcs_pvc(&redis), GcsPvcPlan::NotNeeded);
        let byo = cluster("  gcsFaultToleranceOptions: {backend: rocksdb, storage: {claimName: mine}}\n");
        assert_eq!(plan_gcs_pvc(&byo), GcsPvcPlan::VerifyClaim("mine".into()));
        let managed = cluster("  gcsFaultToleranceOptions: {backend: rocksdb}\n");
        let GcsPvcPlan::Ensure(desired) = plan_gcs_pvc(&managed) else {
            panic!("expected an operator-managed PVC");
        };
        assert_eq!(desired.name_any(), "demo-gcs-pvc");
        assert!(owned_by_demo(desired.metadata.owner_references.as_ref()));

        // Equal quantities in another unit and a server-defaulted class are not drift.
        let mut live = (*desired).clone();
        let spec = live.spec.as_mut().unwrap();
        spec.resources.as_mut().unwrap().requests.as_mut().unwrap().insert(
            "storage".into(),
            k8s_openapi::apimachinery::pkg::api::resource::Quantity("1024Mi".into()),
        );
        spec.storage_class_name = Some("standard".into());
        assert_eq!(pvc_drift(&live, &desired), None);

        live.spec
            .as_mut()
            .unwrap()
            .resources
            .as_mut()
            .unwrap()
            .requests
            .as_mut()
            .unwrap()
            .insert(
                "storage".into(),
                k8s_openapi::apimachinery::pkg::api::resource::Quantity("2Gi".into()),
            );
        live.spec.as_mut().unwrap().access_modes = Some(vec!["ReadWriteMany".into()]);
        let drift = pvc_drift(&live, &desired).unwrap();
        assert!(drift.contains("storage request 2Gi (desired 1Gi)"), "{drift}");
        assert!(drift.contains("ReadWriteMany"), "{drift}");

        // Retain: no owner reference, so the PVC outlives the cluster.
        let retain = cluster("  gcsFaultToleranceOptions: {backend: rocksdb, storage: {deletionPolicy: Retain}}\n");
        let GcsPvcPlan::Ensure(kept) = plan_gcs_pvc(&retain) else {
            panic!("expected an operator-managed PVC");
        };
        assert!(kept.metadata.owner_references.is_none());
    }

    #[test]
    fn pod_group_sync_is_skipped_while_suspending_or_suspended() {
        let gates = FeatureGates::default();
        let mut c = cluster("");
        assert!(batch_scheduling_due(&c, &gates));
        c.spec.suspend = Some(true);
        assert!(!batch_scheduling_due(&c, &gates));
        c.spec.suspend = Some(false);

        let now = Time(k8s_openapi::jiff::Timestamp::UNIX_EPOCH);
        let with_condition = |type_: &str| {
            let mut conds = Vec::new();
            conditions::set(&mut conds, type_, "True", "r", "m", &now);
            let mut c = c.clone();
            c.status = Some(RayClusterStatus {
                conditions: Some(conds),
                ..RayClusterStatus::default()
            });
            c
        };
        assert!(!batch_scheduling_due(
            &with_condition(conditions::RAY_CLUSTER_SUSPENDING),
            &gates
        ));
        let suspended = with_condition(conditions::RAY_CLUSTER_SUSPENDED);
        assert!(!batch_scheduling_due(&suspended, &gates));
        let no_conditions_gate = FeatureGates {
            ray_cluster_status_conditions: false,
            ..FeatureGates::default()
        };
        assert!(batch_scheduling_due(&suspended, &no_conditions_gate));
        assert!(batch_scheduling_due(
            &with_condition(conditions::RAY_CLUSTER_PROVISIONED),
            &gates
        ));
    }

    #[test]
    fn volcano_pod_group_for_the_queue_sample_is_planned_then_unchanged() {
        // The guide's cluster: head 1 CPU / 2Gi, two workers 1 CPU / 1Gi, in kuberay-test-queue.
        let mut c = cluster("");
        c.metadata.labels = Some(BTreeMap::from([(
            "volcano.sh/queue-name".to_owned(),
            "kuberay-test-queue".to_owned(),
        )]));
        let resources = |cpu: &str, mem: &str| {
            serde_json::from_value(serde_json::json!({"requests": {"cpu": cpu, "memory": mem}})).unwrap()
        };
        c.spec.head_group_spec.template.spec.as_mut().unwrap().containers[0].resources = Some(resources("1", "2Gi"));
        let group = &mut c.spec.worker_group_specs.as_mut().unwrap()[0];
        group.replicas = Some(2);
        group.min_replicas = Some(2);
        group.max_replicas = Some(2);
        group.template.spec.as_mut().unwrap().containers[0].resources = Some(resources("1", "1Gi"));

        let Some(DesiredPodGroup::Volcano(pg)) = ray_gang::BatchScheduler::Volcano.pod_group_for_cluster(&c).unwrap()
        else {
            panic!("expected a Volcano PodGroup");
        };
        assert_eq!(pg.name_any(), "ray-demo-pg");
        assert_eq!(pg.spec.min_member, 3);
        assert_eq!(pg.spec.queue, "kuberay-test-queue");
        let min = pg.spec.min_resources.clone().unwrap();
        assert_eq!(min["cpu"].0, "3");
        assert_eq!(min["memory"].0, "4Gi");
        assert!(matches!(volcano::plan_sync(None, &pg), SyncPlan::Create(_)));
        assert_eq!(volcano::plan_sync(Some(&pg), &pg), SyncPlan::Unchanged);
    }
}
