//! Serve on a RayService's clusters: the head pod's `ray.io/serve` label follows its serve proxy's
//! health, the serve config is submitted through the dashboard when it changed (with the cluster's
//! `target_capacity` during an incremental upgrade), and the application statuses are read back.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{ListParams, Patch, PatchParams};
use kube::{Api, ResourceExt};
use ray_api::constants::{
    NODE_TYPE_HEAD, RAY_CLUSTER_LABEL, RAY_CLUSTER_SERVING_SERVICE_LABEL, RAY_NODE_TYPE_LABEL, SERVING_PORT_NAME,
};
use ray_api::{AppStatus, RayCluster, RayServiceStatuses};
use ray_podgen::cluster::head_service_name;
use ray_podgen::env_names::RAY_AUTH_TOKEN_SECRET_KEY;
use ray_podgen::service::service_ports;
use serde_json::json;
use tracing::{debug, info};

use super::error::RayServiceError;
use super::executor::Pass;
use super::incremental::{
    Role, rolling_back, serve_body_with_capacity, set_target_capacity, target_capacity_step, upgrade_options,
};
use super::plan::{
    POD_READY_CONDITION, application_statuses, applications_ready, auth_secret_name, event_reason, head_serve_label,
    need_submit_serve_config, serve_config_json,
};
use super::serve_api::{ProxyHealthTarget, ServeTarget};
use crate::conditions::{self, HEAD_POD_READY, TRUE};
use crate::events::action;
use crate::rayjob::dashboard::DashboardTarget;
use crate::rayjob::plan::dashboard_url;

/// Results of the serve step for one cluster (none read and not ready by default).
#[derive(Default)]
pub(super) struct ServeOutcome {
    /// The cluster's serve applications as this pass read them.
    pub(super) apps: BTreeMap<String, AppStatus>,
    /// Whether all of them are running.
    pub(super) ready: bool,
}

impl Pass<'_> {
    /// The cluster's head pod that is not terminating, if any.
    pub(super) async fn head_pod(&self, cluster: &RayCluster) -> Result<Option<Pod>, RayServiceError> {
        let selector = format!(
            "{RAY_CLUSTER_LABEL}={},{RAY_NODE_TYPE_LABEL}={NODE_TYPE_HEAD}",
            cluster.name_any()
        );
        let pods = self.pods.list(&ListParams::default().labels(&selector)).await?;
        Ok(pods.items.into_iter().find(|p| p.metadata.deletion_timestamp.is_none()))
    }

    /// The head pod's `ray.io/serve` label follows its serve proxy's health.
    pub(super) async fn update_head_pod_serve_label(&self, cluster: &RayCluster) -> Result<(), RayServiceError> {
        let Some(pod) = self.head_pod(cluster).await? else {
            return Err(RayServiceError::NoHeadPod {
                cluster: cluster.name_any(),
                namespace: self.namespace.clone(),
            });
        };
        let excluded = self.service.spec.exclude_head_pod_from_serve_svc.unwrap_or(false);
        let healthy = !excluded && self.proxy_healthy(cluster, &pod).await;
        let label = head_serve_label(self.service, healthy);
        let current = pod
            .metadata
            .labels
            .as_ref()
            .and_then(|l| l.get(RAY_CLUSTER_SERVING_SERVICE_LABEL))
            .map(String::as_str);
        if current == Some(label) {
            return Ok(());
        }
        let pod_name = pod.name_any();
        let patch = json!({ "metadata": { "labels": { RAY_CLUSTER_SERVING_SERVICE_LABEL: label } } });
        match self
            .pods
            .patch(&pod_name, &PatchParams::default(), &Patch::Merge(&patch))
            .await
        {
            Ok(_) => {
                self.ctx
                    .publish(
                        self.service,
                        false,
                        event_reason::UPDATED_HEAD_POD_SERVE_LABEL,
                        action::UPDATE,
                        format!(
                            "Updated the serve label to \"{label}\" for the Head Pod {}/{pod_name}",
                            self.namespace
                        ),
                    )
                    .await;
                Ok(())
            }
            Err(e) => {
                self.ctx
                    .publish(
                        self.service,
                        true,
                        event_reason::FAILED_TO_UPDATE_HEAD_POD_SERVE_LABEL,
                        action::UPDATE,
                        format!(
                            "Failed to update the serve label to \"{label}\" for the Head Pod {}/{pod_name}: {e}",
                            self.namespace
                        ),
                    )
                    .await;
                Err(e.into())
            }
        }
    }

    /// Whether the head pod's serve proxy answers its health check.
    pub(super) async fn proxy_healthy(&self, cluster: &RayCluster, pod: &Pod) -> bool {
        let target = if self.ctx.config.use_kubernetes_proxy {
            ProxyHealthTarget::Proxy {
                namespace: self.namespace.clone(),
                service: head_service_name(cluster),
            }
        } else {
            let Some(pod_ip) = pod.status.as_ref().and_then(|s| s.pod_ip.clone()) else {
                return false;
            };
            let port = service_ports(cluster)
                .get(SERVING_PORT_NAME)
                .copied()
                .unwrap_or(ray_api::constants::DEFAULT_SERVING_PORT);
            ProxyHealthTarget::Direct { pod_ip, port }
        };
        self.ctx.serve.proxy_healthy(&target).await
    }

    /// Whether the cluster's head pod is running and ready (`HeadPodReady` with the status
    /// conditions gate, else the pod's own `Ready` condition).
    pub(super) async fn head_ready(&self, cluster: &RayCluster) -> Result<bool, RayServiceError> {
        if self.ctx.config.podgen.feature_gates.ray_cluster_status_conditions {
            return Ok(conditions::is_true(
                conditions::cluster_conditions(cluster),
                HEAD_POD_READY,
            ));
        }
        Ok(self.head_pod(cluster).await?.is_some_and(|p| pod_ready(&p)))
    }

    /// The dashboard of `cluster` and, with token auth, its token.
    pub(super) async fn serve_target(&self, cluster: &RayCluster) -> Result<ServeTarget, RayServiceError> {
        let dashboard = self.dashboard_target(cluster)?;
        let Some(name) = auth_secret_name(cluster) else {
            return Ok(ServeTarget { dashboard, token: None });
        };
        let secrets: Api<Secret> = Api::namespaced(self.ctx.client.clone(), &self.namespace);
        let secret = secrets.get(&name).await.map_err(|source| RayServiceError::AuthSecret {
            namespace: self.namespace.clone(),
            name: name.clone(),
            source,
        })?;
        let token = secret
            .data
            .as_ref()
            .and_then(|d| d.get(RAY_AUTH_TOKEN_SECRET_KEY))
            .map(|b| String::from_utf8_lossy(&b.0).into_owned())
            .ok_or_else(|| RayServiceError::AuthTokenMissing {
                namespace: self.namespace.clone(),
                name,
            })?;
        Ok(ServeTarget {
            dashboard,
            token: Some(token),
        })
    }

    /// Where the cluster's dashboard answers: through the API server's service proxy, or directly.
    pub(super) fn dashboard_target(&self, cluster: &RayCluster) -> Result<DashboardTarget, RayServiceError> {
        if self.ctx.config.use_kubernetes_proxy {
            let service = cluster
                .status
                .as_ref()
                .and_then(|s| s.head.as_ref())
                .and_then(|h| h.service_name.clone())
                .filter(|s| !s.is_empty())
                .unwrap_or_else(|| head_service_name(cluster));
            Ok(DashboardTarget::Proxy {
                namespace: self.namespace.clone(),
                service,
            })
        } else {
            Ok(DashboardTarget::Direct {
                address: dashboard_url(cluster, &self.ctx.config.podgen.cluster_domain)?,
            })
        }
    }

    /// `reconcileServe` for one cluster: read application statuses, submit the serve
    /// config when it changed (or nothing runs), report readiness.
    pub(super) async fn reconcile_serve(
        &self,
        cluster: &RayCluster,
        role: Role,
        status: &mut RayServiceStatuses,
        incremental: bool,
    ) -> Result<ServeOutcome, RayServiceError> {
        let not_ready = ServeOutcome {
            apps: BTreeMap::new(),
            ready: false,
        };
        if !self.head_ready(cluster).await? {
            return Ok(not_ready);
        }
        let cluster_name = cluster.name_any();
        let target = self.serve_target(cluster).await?;
        let details = self
            .ctx
            .serve
            .serve_details(&target)
            .await
            .map_err(RayServiceError::ServeDetails)?;
        let apps = application_statuses(&details);
        let current = self.service.spec.serve_config_v2.clone().unwrap_or_default();
        let cached = self.ctx.cached_config(&self.key, &cluster_name);
        let (submit, why) = need_submit_serve_config(&cached, &current, &apps);
        debug!(rayservice = %self.name, cluster = %cluster_name, submit, reason = why, "serve config check");
        // Incremental: the config carries the cluster's target capacity.
        let capacity = match role {
            Role::Active => status.active_service_status.as_ref(),
            Role::Pending => status.pending_service_status.as_ref(),
        }
        .and_then(|s| s.target_capacity);
        if submit {
            self.submit_serve_config(&target, &cluster_name, &current, incremental.then_some(capacity))
                .await?;
        }
        let ready = applications_ready(&apps);
        if incremental && ready {
            self.reconcile_target_capacity(&target, &cluster_name, role, status, &current)
                .await?;
        }
        Ok(ServeOutcome { apps, ready })
    }

    /// Submits `serve_config` to `cluster_name`'s dashboard (during an incremental upgrade with
    /// the cluster's Serve `target_capacity`), remembers it as the cluster's config and reports the
    /// outcome as an event.
    async fn submit_serve_config(
        &self,
        target: &ServeTarget,
        cluster_name: &str,
        serve_config: &str,
        incremental_capacity: Option<Option<i32>>,
    ) -> Result<(), RayServiceError> {
        let body = match incremental_capacity {
            Some(capacity) => serve_body_with_capacity(serve_config, capacity).map_err(|e| e.to_string()),
            None => serve_config_json(serve_config),
        };
        let result = match body {
            Ok(body) => self
                .ctx
                .serve
                .update_deployments(target, &body)
                .await
                .map_err(|e| e.to_string()),
            Err(e) => Err(e),
        };
        if let Err(e) = result {
            let error = RayServiceError::SubmitServeConfig(e);
            self.ctx
                .publish(
                    self.service,
                    true,
                    event_reason::FAILED_TO_UPDATE_SERVE_APPLICATIONS,
                    action::UPDATE,
                    format!(
                        "Failed to update serve applications to the RayCluster {}/{cluster_name}: {error}",
                        self.namespace
                    ),
                )
                .await;
            return Err(error);
        }
        // An empty config is never cached (so it is resubmitted), as in KubeRay.
        if !serve_config.is_empty() {
            self.ctx.cache_config(&self.key, cluster_name, serve_config);
        }
        self.ctx
            .publish(
                self.service,
                false,
                event_reason::UPDATED_SERVE_APPLICATIONS,
                action::UPDATE,
                format!(
                    "Updated serve applications to the RayCluster {}/{cluster_name}",
                    self.namespace
                ),
            )
            .await;
        Ok(())
    }

    /// `reconcileServeTargetCapacity`: moves this cluster's Serve `target_capacity` by
    /// `maxSurgePercent` when the plan says so, PUTting the config with the new capacity.
    pub(super) async fn reconcile_target_capacity(
        &self,
        target: &ServeTarget,
        cluster_name: &str,
        role: Role,
        status: &mut RayServiceStatuses,
        serve_config: &str,
    ) -> Result<(), RayServiceError> {
        let options = upgrade_options(self.service)?;
        let Some(goal) = target_capacity_step(status, options, role, rolling_back(status)) else {
            return Ok(());
        };
        let body = serve_body_with_capacity(serve_config, Some(goal))?;
        if let Err(e) = self.ctx.serve.update_deployments(target, &body).await {
            let error = RayServiceError::SubmitServeConfig(e.to_string());
            self.ctx
                .publish(
                    self.service,
                    true,
                    event_reason::FAILED_TO_UPDATE_SERVE_APPLICATIONS,
                    action::UPDATE,
                    format!(
                        "Failed to update serve applications to the RayCluster {}/{cluster_name}: {error}",
                        self.namespace
                    ),
                )
                .await;
            return Err(error);
        }
        info!(rayservice = %self.name, cluster = cluster_name, target_capacity = goal, "updated target_capacity");
        set_target_capacity(status, role, goal);
        Ok(())
    }
}

/// Whether the pod reports `Ready=True`.
pub(super) fn pod_ready(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|s| s.conditions.as_ref())
        .is_some_and(|c| c.iter().any(|c| c.type_ == POD_READY_CONDITION && c.status == TRUE))
}
