//! One RayCronJob pass as a pure decision (behaviour: `docs/raycronjob.md`): validate, stop while suspended,
//! otherwise find the first tick after the last scheduled one (or after creation) and, when it is due, the
//! RayJob to create for it and the status to record. The clock and the time zones are inputs.

use std::collections::BTreeMap;
use std::time::Duration;

use jiff::Timestamp;
use jiff::tz::TimeZone;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{ObjectMeta, Time};
use ray_api::constants::{
    CRD_KIND_RAY_CRON_JOB, MAX_RAY_CRON_JOB_NAME_LENGTH, RAY_CRON_JOB_NAME_LABEL,
    RAY_CRON_JOB_SCHEDULED_TIMESTAMP_ANNOTATION,
};
use ray_api::validation::{ValidationError, ValidationOptions, validate_ray_job_spec};
use ray_api::{RayCronJob, RayJob};
use ray_podgen::cluster::controller_reference;

use super::next::next;
use super::schedule::{Schedule, parse};
use crate::events::EventSpec;

/// Event reasons and actions of the RayCronJob controller.
pub mod reason {
    /// The spec failed validation.
    pub const INVALID_RAY_CRON_JOB_SPEC: &str = "InvalidRayCronJobSpec";
    /// The RayCronJob is suspended.
    pub const SUSPENDED_RAY_CRON_JOB: &str = "SuspendedRayCronJob";
    /// The action of [`SUSPENDED_RAY_CRON_JOB`].
    pub const SUSPEND_ACTION: &str = "Suspend";
}

/// The note of the suspended event.
pub const SUSPENDED_NOTE: &str = "RayCronJob suspended, no new RayJobs will be created";

/// What the plan needs besides the RayCronJob.
pub struct CronPlanInput<'a> {
    /// The current time.
    pub now: Timestamp,
    /// The operator's own time zone: schedules without `spec.timeZone` follow it.
    pub local_zone: &'a TimeZone,
    /// Resolves a zone name as Go's `time.LoadLocation` does (see [`super::zones::load_location`]).
    pub lookup_zone: &'a dyn Fn(&str) -> Result<TimeZone, String>,
    /// The validation settings of the operator's feature gates (for the job template).
    pub validation: &'a ValidationOptions,
}

/// What one pass does.
#[derive(Clone, Debug, PartialEq)]
pub enum CronPass {
    /// The spec is invalid: publish the warning and stop (no status write, no requeue).
    Invalid {
        /// The offending field and the message.
        error: ValidationError,
        /// The warning event.
        event: EventSpec,
    },
    /// `spec.suspend` is true: publish the event and stop.
    Suspended {
        /// The normal event.
        event: EventSpec,
    },
    /// The next tick is in the future: come back then.
    Wait {
        /// Time until the tick.
        after: Duration,
    },
    /// The schedule never fires again (no match within five years).
    Never,
    /// A tick is due: create its RayJob, then record it in the status.
    Create(Box<DueTick>),
}

/// A due tick and what it leads to.
#[derive(Clone, Debug, PartialEq)]
pub struct DueTick {
    /// The tick.
    pub scheduled: Timestamp,
    /// The RayJob to create (its name is deterministic, so an existing one counts as created).
    pub job: RayJob,
    /// `status.lastScheduleTime` to write.
    pub last_schedule_time: Time,
    /// Time from now until the tick after this one; `None` when that one is due already (the status write
    /// triggers the next pass) or never comes.
    pub requeue_after: Option<Duration>,
}

/// Validates `cron`; the first failing rule wins.
pub fn validate(
    cron: &RayCronJob,
    lookup_zone: &dyn Fn(&str) -> Result<TimeZone, String>,
    validation: &ValidationOptions,
) -> Result<(), ValidationError> {
    let name = cron.metadata.name.as_deref().unwrap_or_default();
    if name.len() > MAX_RAY_CRON_JOB_NAME_LENGTH {
        return Err(ValidationError::new(
            "metadata.name",
            format!("RayCronJob name should be no more than {MAX_RAY_CRON_JOB_NAME_LENGTH} characters"),
        ));
    }
    let spec = &cron.spec;
    if spec.schedule.contains("TZ") {
        return Err(ValidationError::new(
            "spec.schedule",
            "cannot use TZ or CRON_TZ in schedule, use timeZone field instead",
        ));
    }
    // No prefix is left, so the lookup is never asked here.
    if let Err(e) = parse(&spec.schedule, lookup_zone) {
        return Err(ValidationError::new(
            "spec.schedule",
            format!("invalid cron schedule: {e}"),
        ));
    }
    if let Some(zone) = spec.time_zone.as_deref() {
        if zone.is_empty() {
            return Err(ValidationError::new(
                "spec.timeZone",
                "timeZone must not be empty string, omit the field to use the local time zone of the KubeRay operator",
            ));
        }
        if let Err(e) = lookup_zone(zone) {
            return Err(ValidationError::new("spec.timeZone", format!("invalid time zone: {e}")));
        }
    }
    let template = RayJob {
        metadata: ObjectMeta::default(),
        spec: spec.job_template.clone(),
        status: None,
    };
    validate_ray_job_spec(&template, validation).map_err(|e| ValidationError {
        field: e.field.replacen("spec", "spec.jobTemplate", 1),
        message: format!("invalid RayJob template: {}", e.message),
    })
}

/// The schedule the controller runs: `spec.schedule` in `spec.timeZone` when one is set.
pub fn effective_schedule(
    cron: &RayCronJob,
    lookup_zone: &dyn Fn(&str) -> Result<TimeZone, String>,
) -> Result<Schedule, super::schedule::ScheduleError> {
    match cron.spec.time_zone.as_deref() {
        Some(zone) => parse(&format!("TZ={zone} {}", cron.spec.schedule), lookup_zone),
        None => parse(&cron.spec.schedule, lookup_zone),
    }
}

/// Decides one pass over `cron`.
pub fn plan(cron: &RayCronJob, input: &CronPlanInput<'_>) -> CronPass {
    let namespace = cron.metadata.namespace.as_deref().unwrap_or_default();
    let name = cron.metadata.name.as_deref().unwrap_or_default();
    let invalid = |error: ValidationError| CronPass::Invalid {
        event: EventSpec::warning(
            reason::INVALID_RAY_CRON_JOB_SPEC,
            crate::events::action::VALIDATE,
            format!("{namespace}/{name}: {}", error.message),
        ),
        error,
    };
    if let Err(error) = validate(cron, input.lookup_zone, input.validation) {
        return invalid(error);
    }
    if cron.spec.suspend == Some(true) {
        return CronPass::Suspended {
            event: EventSpec::normal(reason::SUSPENDED_RAY_CRON_JOB, reason::SUSPEND_ACTION, SUSPENDED_NOTE),
        };
    }
    let schedule = match effective_schedule(cron, input.lookup_zone) {
        Ok(schedule) => schedule,
        // Validation parsed both parts already; a failure here is reported the same way.
        Err(e) => {
            return invalid(ValidationError::new(
                "spec.schedule",
                format!("invalid cron schedule: {e}"),
            ));
        }
    };
    let since = cron
        .status
        .as_ref()
        .and_then(|s| s.last_schedule_time.as_ref())
        .or(cron.metadata.creation_timestamp.as_ref())
        .map_or(input.now, |t| t.0);
    let Some(scheduled) = next(&schedule, since, input.local_zone) else {
        return CronPass::Never;
    };
    if scheduled > input.now {
        return CronPass::Wait {
            after: until(input.now, scheduled).unwrap_or_default(),
        };
    }
    let requeue_after = next(&schedule, scheduled, input.local_zone).and_then(|t| until(input.now, t));
    CronPass::Create(Box::new(DueTick {
        scheduled,
        job: child_ray_job(cron, scheduled),
        last_schedule_time: Time(scheduled),
        requeue_after,
    }))
}

/// The positive time from `now` to `then`; `None` when `then` is not after `now`.
fn until(now: Timestamp, then: Timestamp) -> Option<Duration> {
    Duration::try_from(then.duration_since(now))
        .ok()
        .filter(|d| !d.is_zero())
}

/// The name of the RayJob for the tick `scheduled`: the RayCronJob's name and the tick's minute number
/// since the Unix epoch (the same tick always gives the same name, so a retried pass cannot create two).
pub fn child_name(cron_name: &str, scheduled: Timestamp) -> String {
    format!("{cron_name}-{}", scheduled.as_second() / 60)
}

/// The RayJob created for the tick `scheduled`: the job template, the RayCronJob's label and the tick's
/// annotation, owned by the RayCronJob.
pub fn child_ray_job(cron: &RayCronJob, scheduled: Timestamp) -> RayJob {
    let name = cron.metadata.name.as_deref().unwrap_or_default();
    RayJob {
        metadata: ObjectMeta {
            name: Some(child_name(name, scheduled)),
            namespace: cron.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([(RAY_CRON_JOB_NAME_LABEL.to_owned(), name.to_owned())])),
            annotations: Some(BTreeMap::from([(
                RAY_CRON_JOB_SCHEDULED_TIMESTAMP_ANNOTATION.to_owned(),
                scheduled.strftime("%Y-%m-%dT%H:%M:%SZ").to_string(),
            )])),
            owner_references: Some(vec![controller_reference(
                CRD_KIND_RAY_CRON_JOB,
                name,
                cron.metadata.uid.as_deref(),
            )]),
            ..ObjectMeta::default()
        },
        spec: cron.spec.job_template.clone(),
        status: None,
    }
}

#[cfg(test)]
#[path = "plan_tests.rs"]
mod tests;
