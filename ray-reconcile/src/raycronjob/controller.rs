//! The RayCronJob controller's executor and wiring: one [`FairController`] per watch scope over
//! RayCronJobs (no predicate: the status write of a pass triggers the next one, which is how missed ticks
//! are caught up). Like KubeRay's, it does not watch the RayJobs it creates: a deleted child is not
//! re-created, and a pass only looks at `status.lastScheduleTime`.
//!
//! A pass asks [`plan::plan`] what to do with the clock's time, creates the due RayJob (an existing one of
//! the same name counts as created), writes the status with a whole-object update of the status subresource
//! and comes back at the next tick. Failed passes back off per RayCronJob as controller-runtime's default
//! rate limiter does (5 ms doubling, at most 1000 s).

use std::future::Future;
use std::sync::Arc;

use crate::fair_controller::Action;
use crate::fair_controller::FairController;
use crate::recorder::EventRecorder;
use futures::StreamExt;
use jiff::tz::TimeZone;
use jiff::{SignedDuration, Timestamp};
use kube::api::{Api, PostParams};
use kube::runtime::events::Reporter;
use kube::runtime::reflector;
use kube::{Client, Resource, ResourceExt};
use ray_api::raycronjob::RayCronJobStatus;
use ray_api::validation::ValidationOptions;
use ray_api::{RayCronJob, RayJob};
use tracing::{debug, info, warn};

use super::plan::{self, CronPass, CronPlanInput};
use super::zones::load_location;
use crate::decode::{UndecodableGauge, UnreadableReporter};
use crate::events::EventSpec;
use crate::kube_errors::is_already_exists;
use crate::runtime_util::{
    FailureBackoff, custom_resource_changes, note_failed_passes, object_key, publish_event, run_per_scope,
};
use crate::status_writer::{StatusWrite, StatusWriteError, write_status};

/// The controller name events are reported under.
pub const RAYCRONJOB_CONTROLLER: &str = "raycronjob-controller";

/// Settings of the RayCronJob controller.
#[derive(Clone)]
pub struct RayCronJobControllerConfig {
    /// Validation settings of the feature gates (the job template is validated as a RayJob spec).
    pub validation: ValidationOptions,
    /// `--watch-namespace`, split (empty: all namespaces).
    pub watch_namespaces: Vec<String>,
    /// Passes run side by side.
    pub concurrency: u16,
    /// Added to the system clock. Testing only: end-to-end tests move the operator's clock close to a tick
    /// instead of waiting for one (`docs/raycronjob.md`); zero in production.
    pub clock_offset: SignedDuration,
    /// The undecodable-object gauge shared with the other controllers.
    pub undecodable: UndecodableGauge,
}

/// Why a RayCronJob pass failed.
#[derive(Debug, thiserror::Error)]
pub enum RayCronJobError {
    /// Creating the RayJob of a due tick failed.
    #[error("failed to create RayJob {name}: {source}")]
    CreateRayJob {
        /// The RayJob's name.
        name: String,
        /// The API error.
        source: kube::Error,
    },
    /// Recording the tick in the status failed.
    #[error("failed to update RayCronJob status: {0}")]
    Status(#[from] StatusWriteError),
}

/// Shared state of the controller.
pub struct RayCronJobContext {
    client: Client,
    recorder: EventRecorder,
    config: RayCronJobControllerConfig,
    /// The operator's own zone (schedules without `spec.timeZone`).
    local_zone: TimeZone,
    failures: FailureBackoff,
}

impl RayCronJobContext {
    fn now(&self) -> Timestamp {
        Timestamp::now()
            .checked_add(self.config.clock_offset)
            .unwrap_or_else(|_| Timestamp::now())
    }

    fn lookup_zone(&self, name: &str) -> Result<TimeZone, String> {
        load_location(name, &self.local_zone, &|n| TimeZone::get(n).ok())
    }
}

/// Runs the controller until `shutdown` resolves.
pub async fn run(
    client: Client,
    config: RayCronJobControllerConfig,
    shutdown: impl Future<Output = ()> + Send + 'static,
) {
    let ctx = Arc::new(RayCronJobContext {
        recorder: EventRecorder::new(
            client.clone(),
            Reporter {
                controller: RAYCRONJOB_CONTROLLER.to_owned(),
                instance: std::env::var("POD_NAME").ok(),
            },
        ),
        client: client.clone(),
        local_zone: TimeZone::system(),
        failures: FailureBackoff::default(),
        config: config.clone(),
    });
    if !config.clock_offset.is_zero() {
        warn!(offset = %config.clock_offset, "RayCronJob controller runs with a shifted clock (testing only)");
    }
    run_per_scope(&config.watch_namespaces, shutdown, |namespace, stop| {
        let ns = namespace.as_deref();
        info!(namespace = ns.unwrap_or("<all>"), "starting RayCronJob controller");
        let (reader, writer) = reflector::store();
        let unreadable = UnreadableReporter::new::<RayCronJob>(Some(ctx.recorder.clone()), config.undecodable.clone());
        let crons = custom_resource_changes::<RayCronJob>(client.clone(), ns, writer, unreadable);
        FairController::for_stream(crons, reader, config.concurrency)
            .graceful_shutdown_on(stop)
            .run(reconcile, error_policy, Arc::clone(&ctx))
            .for_each(note_failed_passes("raycronjob"))
    })
    .await;
}

fn error_policy(cron: Arc<RayCronJob>, error: &RayCronJobError, ctx: Arc<RayCronJobContext>) -> Action {
    let delay = ctx.failures.next_delay(object_key(cron.as_ref()));
    warn!(raycronjob = %cron.name_any(), error = %error, retry_in = ?delay, "raycronjob reconcile failed");
    Action::requeue(delay)
}

/// One pass over a RayCronJob.
#[tracing::instrument(skip_all, fields(raycronjob = %cron.name_any(), namespace = cron.namespace().unwrap_or_default()))]
async fn reconcile(cron: Arc<RayCronJob>, ctx: Arc<RayCronJobContext>) -> Result<Action, RayCronJobError> {
    let pass = {
        let lookup = |name: &str| ctx.lookup_zone(name);
        let input = CronPlanInput {
            now: ctx.now(),
            local_zone: &ctx.local_zone,
            lookup_zone: &lookup,
            validation: &ctx.config.validation,
        };
        plan::plan(&cron, &input)
    };
    let action = match pass {
        CronPass::Invalid { error, event } => {
            info!(field = %error.field, error = %error.message, "invalid RayCronJob");
            publish(&ctx, &cron, event).await;
            Action::await_change()
        }
        CronPass::Suspended { event } => {
            publish(&ctx, &cron, event).await;
            Action::await_change()
        }
        CronPass::Wait { after } => {
            debug!(next_in = ?after, "next tick not due yet");
            Action::requeue(after)
        }
        CronPass::Never => {
            info!("schedule has no tick within five years");
            Action::await_change()
        }
        CronPass::Create(due) => {
            let namespace = cron.namespace().unwrap_or_default();
            let name = due.job.name_any();
            let jobs: Api<RayJob> = Api::namespaced(ctx.client.clone(), &namespace);
            match jobs.create(&PostParams::default(), &due.job).await {
                Ok(_) => info!(rayjob = %name, scheduled = %due.scheduled, "created RayJob"),
                Err(e) if is_already_exists(&e) => debug!(rayjob = %name, "RayJob of this tick exists"),
                Err(source) => return Err(RayCronJobError::CreateRayJob { name, source }),
            }
            let api: Api<RayCronJob> = Api::namespaced(ctx.client.clone(), &namespace);
            let status = RayCronJobStatus {
                last_schedule_time: Some(due.last_schedule_time.clone()),
            };
            write_status(&api, cron.as_ref(), &status, StatusWrite::Replace).await?;
            due.requeue_after.map_or_else(Action::await_change, Action::requeue)
        }
    };
    ctx.failures.reset(&object_key(cron.as_ref()));
    Ok(action)
}

async fn publish(ctx: &RayCronJobContext, cron: &RayCronJob, event: EventSpec) {
    publish_event(&ctx.recorder, &cron.object_ref(&()), event).await;
}
