//! Everything a RayCluster pass wants to exist, built once per pass from the cluster and the
//! operator's settings: the children besides pods (autoscaler RBAC, dashboard Ingress or Route,
//! auth Secret, head / headless / serve Services, GCS storage PVC, PodGroup) with the same
//! per-child decisions KubeRay makes, and the generator of the head and worker pods. Pure: no
//! server, no clock, no randomness. The executor only compares these with what exists and writes
//! the difference ([`super::children`]), and the pod plan takes its pods from [`DesiredChildren::pods`].
//!
//! A child whose object cannot be built carries the error: KubeRay builds some of them only when
//! they are missing, so the error fails the pass only when the child has to be created.

use super::children::{
    DashboardExposure, GcsPvcPlan, auth_secret_name, auth_secret_needed, batch_scheduling_due, build_serve_service,
    dashboard_exposure, desired_headless_service, desired_ingress, desired_route, plan_gcs_pvc, serve_service_enabled,
};
use super::podgen::{self, ClusterPods, PodGenSettings};
use crate::config::ReconcileConfig;
use k8s_openapi::api::core::v1::Service;
use k8s_openapi::api::networking::v1::Ingress;
use ray_api::RayCluster;
use ray_gang::{DesiredPodGroup, GangError};
use ray_podgen::PodGenError;
use ray_podgen::autoscaler::AutoscalerRbac;
use ray_podgen::cluster::{cluster_name, cluster_owner_reference};
use ray_podgen::names::serve_service_name;
use ray_podgen::route::Route;

/// What exposes the dashboard outside the Kubernetes cluster (`headGroupSpec.enableIngress`).
#[derive(Clone, Debug, PartialEq)]
pub enum DashboardObject {
    /// A Kubernetes Ingress, owned by the cluster.
    Ingress(Box<Ingress>),
    /// An OpenShift Route (on OpenShift unless `USE_INGRESS_ON_OPENSHIFT`), owned by the cluster.
    Route(Box<Route>),
}

/// The in-tree autoscaler's RBAC.
#[derive(Clone, Debug, PartialEq)]
pub struct AutoscalerChildren {
    /// The ServiceAccount (unless the head names its own), Role and RoleBinding.
    pub objects: AutoscalerRbac,
    /// The head template's `serviceAccountName`, when set: that account must exist, the operator
    /// does not create it.
    pub user_service_account: Option<String>,
}

impl AutoscalerChildren {
    /// The ServiceAccount the head runs as: the user's, or one named like the cluster.
    pub fn service_account_name(&self, cluster: &RayCluster) -> String {
        self.user_service_account
            .clone()
            .unwrap_or_else(|| cluster_name(cluster).to_owned())
    }
}

/// The serve Service the cluster asks for (annotation `ray.io/enable-serve-service: "true"`).
#[derive(Clone, Debug, PartialEq)]
pub struct ServeServiceChild {
    /// `<cluster>-serve-svc`.
    pub name: String,
    /// The Service, owned by the cluster (an error when the head has no serving port).
    pub service: Result<Service, PodGenError>,
}

/// The desired state of one RayCluster pass.
pub struct DesiredChildren<'a> {
    /// With in-tree autoscaling: the autoscaler's ServiceAccount, Role and RoleBinding.
    pub autoscaler_rbac: Option<AutoscalerChildren>,
    /// With `enableIngress`: the dashboard Ingress, or the OpenShift Route.
    pub dashboard: Option<DashboardObject>,
    /// The generated token Secret's name, when the operator generates one (its token is drawn
    /// from the kernel only when the Secret is created, so it is not part of this pure build).
    pub auth_secret: Option<String>,
    /// The head Service, owned by the cluster.
    pub head_service: Result<Service, PodGenError>,
    /// The headless worker Service (some group has `numOfHosts > 1`).
    pub headless_service: Option<Service>,
    /// The serve Service.
    pub serve_service: Option<ServeServiceChild>,
    /// What the embedded GCS backend needs from storage.
    pub gcs_pvc: GcsPvcPlan,
    /// The batch scheduler's PodGroup: `Ok(None)` without a scheduler that wants one, or while the
    /// cluster is suspending or suspended (KubeRay's hook is not reached then).
    pub pod_group: Result<Option<DesiredPodGroup>, GangError>,
    /// The head and worker pods (decorated by the batch scheduler; worker templates built on
    /// first use).
    pub pods: ClusterPods<'a>,
}

/// The desired state of a pass over `cluster`.
pub fn desired_children<'a>(
    cluster: &'a RayCluster,
    settings: &'a PodGenSettings,
    config: &ReconcileConfig,
) -> DesiredChildren<'a> {
    DesiredChildren {
        autoscaler_rbac: desired_autoscaler_rbac(cluster),
        dashboard: desired_dashboard(cluster, config.use_openshift_route),
        auth_secret: auth_secret_needed(cluster).then(|| auth_secret_name(cluster)),
        head_service: desired_head_service(cluster, settings),
        headless_service: desired_headless_service(cluster),
        serve_service: serve_service_enabled(cluster).then(|| ServeServiceChild {
            name: serve_service_name(cluster_name(cluster)),
            service: build_serve_service(cluster),
        }),
        gcs_pvc: plan_gcs_pvc(cluster),
        pod_group: if batch_scheduling_due(cluster, &config.gates) {
            settings.scheduler.pod_group_for_cluster(cluster)
        } else {
            Ok(None)
        },
        pods: ClusterPods::new(cluster, settings),
    }
}

/// `enableInTreeAutoscaling: true`: the autoscaler's RBAC.
fn desired_autoscaler_rbac(cluster: &RayCluster) -> Option<AutoscalerChildren> {
    if cluster.spec.enable_in_tree_autoscaling != Some(true) {
        return None;
    }
    let objects = podgen::autoscaler_rbac(cluster)?;
    let user_service_account = cluster
        .spec
        .head_group_spec
        .template
        .spec
        .as_ref()
        .and_then(|s| s.service_account_name.clone())
        .filter(|s| !s.is_empty());
    Some(AutoscalerChildren {
        objects,
        user_service_account,
    })
}

/// KubeRay's `reconcileIngress` switch, with the object it would write.
fn desired_dashboard(cluster: &RayCluster, use_openshift_route: bool) -> Option<DashboardObject> {
    match dashboard_exposure(cluster, use_openshift_route) {
        DashboardExposure::Nothing => None,
        DashboardExposure::Ingress => desired_ingress(cluster).map(|i| DashboardObject::Ingress(Box::new(i))),
        DashboardExposure::Route => desired_route(cluster).map(|r| DashboardObject::Route(Box::new(r))),
    }
}

/// The head Service with the cluster's controller reference (KubeRay sets it in
/// `reconcileHeadService`, not in the builder).
fn desired_head_service(cluster: &RayCluster, settings: &PodGenSettings) -> Result<Service, PodGenError> {
    let mut service = podgen::head_service(cluster, settings)?;
    service.metadata.owner_references = Some(vec![cluster_owner_reference(cluster)]);
    Ok(service)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::FeatureGates;
    use kube::ResourceExt;
    use ray_gang::BatchScheduler;
    use std::collections::BTreeMap;

    /// The shape of KubeRay's `ray-cluster.sample.yaml`: a head with the GCS, dashboard and serve
    /// ports, and one worker group.
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
          resources: {{requests: {{cpu: "1", memory: 2Gi}}}}
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
          resources: {{requests: {{cpu: "1", memory: 1Gi}}}}
{extra_spec}"#
        );
        let docs: Vec<RayCluster> = ray_api::yaml::from_yaml_documents(&yaml).unwrap();
        docs.into_iter().next().unwrap()
    }

    fn build(cluster: &RayCluster) -> DesiredChildren<'_> {
        static SETTINGS: std::sync::OnceLock<PodGenSettings> = std::sync::OnceLock::new();
        desired_children(
            cluster,
            SETTINGS.get_or_init(PodGenSettings::default),
            &ReconcileConfig::default(),
        )
    }

    fn owned_by_demo(service: &Service) -> bool {
        let refs = service.metadata.owner_references.as_deref().unwrap_or_default();
        refs.len() == 1 && refs[0].name == "demo" && refs[0].uid == "u-1" && refs[0].controller == Some(true)
    }

    #[test]
    fn the_sample_cluster_wants_only_its_head_service_and_pods() {
        let c = cluster("");
        let desired = build(&c);
        assert!(desired.autoscaler_rbac.is_none());
        assert!(desired.dashboard.is_none());
        assert!(desired.auth_secret.is_none());
        let head = desired.head_service.as_ref().unwrap();
        assert_eq!(head.name_any(), "demo-head-svc");
        assert!(owned_by_demo(head));
        assert!(desired.headless_service.is_none());
        assert!(desired.serve_service.is_none());
        assert_eq!(desired.gcs_pvc, GcsPvcPlan::NotNeeded);
        assert_eq!(desired.pod_group, Ok(None));
        // The pods come from the same build: the head from ray_podgen, the worker of group 0.
        let head_pod = desired.pods.head_pod().unwrap();
        assert_eq!(head_pod, podgen::head_pod(&c, &PodGenSettings::default()).unwrap());
    }

    #[test]
    fn autoscaling_adds_the_rbac_and_names_the_service_account() {
        assert!(
            build(&cluster("  enableInTreeAutoscaling: false\n"))
                .autoscaler_rbac
                .is_none()
        );
        let c = cluster("  enableInTreeAutoscaling: true\n");
        let rbac = build(&c).autoscaler_rbac.unwrap();
        assert_eq!(rbac.user_service_account, None);
        assert_eq!(rbac.service_account_name(&c), "demo");
        assert_eq!(rbac.objects.role.name_any(), "demo");
        assert_eq!(rbac.objects.role_binding.name_any(), "demo");
        assert_eq!(
            rbac.objects
                .service_account
                .as_ref()
                .map(ResourceExt::name_any)
                .as_deref(),
            Some("demo")
        );

        let mut own = c.clone();
        own.spec
            .head_group_spec
            .template
            .spec
            .as_mut()
            .unwrap()
            .service_account_name = Some("mine".into());
        let rbac = build(&own).autoscaler_rbac.unwrap();
        assert_eq!(rbac.user_service_account.as_deref(), Some("mine"));
        assert_eq!(rbac.service_account_name(&own), "mine");
    }

    #[test]
    fn gcs_fault_tolerance_wants_a_pvc_only_for_the_embedded_backend() {
        let redis = cluster("  gcsFaultToleranceOptions: {redisAddress: \"redis:6379\"}\n");
        assert_eq!(build(&redis).gcs_pvc, GcsPvcPlan::NotNeeded);
        let embedded = cluster("  gcsFaultToleranceOptions: {backend: rocksdb}\n");
        let GcsPvcPlan::Ensure(pvc) = build(&embedded).gcs_pvc else {
            panic!("expected an operator-managed PVC");
        };
        assert_eq!(pvc.name_any(), "demo-gcs-pvc");
    }

    #[test]
    fn enable_ingress_wants_an_ingress_or_on_openshift_a_route() {
        let mut c = cluster("");
        c.spec.head_group_spec.enable_ingress = Some(true);
        match build(&c).dashboard {
            Some(DashboardObject::Ingress(ingress)) => assert_eq!(ingress.name_any(), "demo-head-ingress"),
            other => panic!("expected an Ingress, got {other:?}"),
        }
        let openshift = ReconcileConfig {
            use_openshift_route: true,
            ..ReconcileConfig::default()
        };
        let settings = PodGenSettings::default();
        match desired_children(&c, &settings, &openshift).dashboard {
            Some(DashboardObject::Route(route)) => assert_eq!(route.name_any(), "demo-head-route"),
            other => panic!("expected a Route, got {other:?}"),
        }
    }

    #[test]
    fn serve_headless_and_auth_children_follow_the_spec() {
        let mut c = cluster("  authOptions: {mode: token}\n");
        c.metadata.annotations = Some(BTreeMap::from([(
            ray_api::constants::ENABLE_SERVE_SERVICE_ANNOTATION.to_owned(),
            "true".to_owned(),
        )]));
        c.spec.worker_group_specs.as_mut().unwrap()[0].num_of_hosts = Some(2);
        let desired = build(&c);
        assert_eq!(desired.auth_secret.as_deref(), Some("demo"));
        let serve = desired.serve_service.unwrap();
        assert_eq!(serve.name, "demo-serve-svc");
        assert_eq!(serve.service.unwrap().name_any(), "demo-serve-svc");
        assert_eq!(desired.headless_service.unwrap().name_any(), "demo-headless");
    }

    #[test]
    fn a_volcano_pod_group_is_wanted_unless_the_cluster_is_suspended() {
        let settings = PodGenSettings {
            scheduler: BatchScheduler::Volcano,
            ..PodGenSettings::default()
        };
        let config = ReconcileConfig {
            gates: FeatureGates::default(),
            ..ReconcileConfig::default()
        };
        let c = cluster("");
        match desired_children(&c, &settings, &config).pod_group {
            Ok(Some(DesiredPodGroup::Volcano(pg))) => assert_eq!(pg.name_any(), "ray-demo-pg"),
            other => panic!("expected a Volcano PodGroup, got {other:?}"),
        }
        let suspended = cluster("  suspend: true\n");
        assert_eq!(desired_children(&suspended, &settings, &config).pod_group, Ok(None));
    }
}
