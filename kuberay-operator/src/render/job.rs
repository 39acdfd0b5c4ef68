//! What the operator creates for one RayJob on an empty cluster: its RayCluster (unless
//! `clusterSelector` names an existing one), the Volcano PodGroup when that scheduler runs, and in
//! K8sJobMode the submitter Job.

use ray_api::{JobSubmissionMode, RayJob, RayJobStatus};
use ray_gang::parent::Parent;
use ray_podgen::cluster::head_service_name;
use ray_podgen::names::fqdn;
use ray_podgen::rayjob::{
    SUBMITTER_GROUP, build_ray_cluster_for_job, build_submitter_job, initial_job_id, initial_ray_cluster_name,
};
use ray_podgen::service::dashboard_port;
use serde_json::Value;

use super::RenderSettings;
use super::input::{InputError, Origin};

/// The RayJob's children, in creation order.
pub fn render_job(origin: &Origin, job: &RayJob, settings: &mut RenderSettings) -> Result<Vec<Value>, InputError> {
    let name = job.metadata.name.clone().unwrap_or_default();
    let fail = |e: &dyn std::fmt::Display| origin.render_error("RayJob", &name, e);
    let config = &settings.podgen;
    // KubeRay draws the job id before the cluster name; the seeded source keeps that order.
    let job_id = initial_job_id(job, &mut settings.suffixes);
    let cluster_name = initial_ray_cluster_name(job, &mut settings.suffixes);
    let uses_existing_cluster = job.spec.cluster_selector.as_ref().is_some_and(|s| !s.is_empty());
    let mut items = Vec::new();

    if let Some(pod_group) = settings.scheduler.pod_group_for_job(job).map_err(|e| fail(&e))? {
        items.push(pod_group.to_json());
    }
    if uses_existing_cluster {
        // The submitter Job is built from the live cluster (its image, its head service), which an
        // empty cluster does not have.
        settings.notes.push(format!(
            "RayJob {name}: runs on the existing RayCluster {cluster_name}; its submitter Job depends on that \
             cluster and is not rendered"
        ));
        return Ok(items);
    }
    let mut cluster = build_ray_cluster_for_job(job, &cluster_name, config).map_err(|e| fail(&e))?;
    settings.scheduler.decorate_cluster(job, &mut cluster);
    items.push(serde_json::to_value(&cluster).map_err(|e| fail(&e))?);
    if job.spec.submission_mode() != JobSubmissionMode::K8sJobMode {
        return Ok(items);
    }
    // The submitter is created once the cluster is ready, with the status the controller has by then.
    let mut job_with_status = job.clone();
    let status = job_with_status.status.get_or_insert_with(RayJobStatus::default);
    let namespace = cluster.metadata.namespace.clone().unwrap_or_default();
    status.dashboard_url = Some(format!(
        "{}:{}",
        fqdn(&head_service_name(&cluster), &namespace, config.domain()),
        dashboard_port(&cluster)
    ));
    status.job_id = job_id;
    status.ray_cluster_name = Some(cluster_name);
    let mut submitter = build_submitter_job(&job_with_status, &cluster, config).map_err(|e| fail(&e))?;
    if let Some(template) = submitter.spec.as_mut().map(|spec| &mut spec.template) {
        settings
            .scheduler
            .decorate_pod_template(Parent::Job(job), template, SUBMITTER_GROUP);
    }
    items.push(serde_json::to_value(&submitter).map_err(|e| fail(&e))?);
    Ok(items)
}
