//! The RayCronJob controller (gate `RayCronJob`; behaviour: `docs/raycronjob.md`): creates a RayJob from
//! `spec.jobTemplate` at every tick of `spec.schedule`, one tick per pass, and records the tick in
//! `status.lastScheduleTime`.
//!
//! Layout: [`schedule`] parses cron schedules and [`next`] finds their next tick (both pure, the cron
//! library KubeRay uses, re-implemented), [`zones`] reads time zone names, [`plan`] decides a pass from the
//! RayCronJob and the clock, and [`controller`] carries passes out through kube-runtime.

pub mod controller;
pub mod next;
pub mod plan;
pub mod schedule;
pub mod zones;
