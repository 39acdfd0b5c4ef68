//! Autoscaler options derived from `spec.autoscalerOptions`: upscaling speed from `upscalingMode`, idle timeouts
//! (docs/autoscaling.md#upscaling-modes-autoscaleroptionsupscalingmode, #idle-timeout).

use std::time::Duration;

/// Default `idleTimeoutSeconds` (Ray's `idle_timeout_minutes` 1.0).
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(60);
/// `upscaling_speed` for `Conservative`.
pub const CONSERVATIVE_UPSCALING_SPEED: f64 = 1.0;
/// `upscaling_speed` for `Default`, `Aggressive` or an unset mode.
pub const DEFAULT_UPSCALING_SPEED: f64 = 1000.0;
/// Pending pods always allowed per group regardless of speed (Ray's `UPSCALING_INITIAL_NUM_NODES`).
pub const UPSCALING_INITIAL_NUM_NODES: i64 = 5;

/// `autoscalerOptions.upscalingMode`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum UpscalingMode {
    /// Rate-limited: pending pods at most the number of running pods of the group (min 5).
    Conservative,
    /// Not rate-limited (speed 1000); also used when the field is unset.
    #[default]
    Default,
    /// Alias of `Default`.
    Aggressive,
}

impl UpscalingMode {
    /// Parse the CRD value; unset or unknown values behave as `Default` (Ray's fallback).
    pub fn parse(mode: Option<&str>) -> Self {
        match mode {
            Some("Conservative") => Self::Conservative,
            Some("Aggressive") => Self::Aggressive,
            _ => Self::Default,
        }
    }

    /// Ray's `upscaling_speed` for this mode.
    pub fn upscaling_speed(self) -> f64 {
        match self {
            Self::Conservative => CONSERVATIVE_UPSCALING_SPEED,
            Self::Default | Self::Aggressive => DEFAULT_UPSCALING_SPEED,
        }
    }
}

/// Which Ray autoscaler generation runs (`autoscalerOptions.version`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AutoscalerVersion {
    /// v1: while any group still has a listed `workersToDelete` pod, no scale request at all.
    V1,
    /// v2 (Ray ≥ 2.47 default): only the group with listed pods still present is left alone.
    #[default]
    V2,
}

/// Planner knobs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PlannerOptions {
    /// Upscaling mode (speed).
    pub upscaling_mode: UpscalingMode,
    /// Cluster-wide idle timeout (`autoscalerOptions.idleTimeoutSeconds`, default 60 s).
    pub idle_timeout: Duration,
    /// Autoscaler generation.
    pub version: AutoscalerVersion,
}

impl Default for PlannerOptions {
    fn default() -> Self {
        Self {
            upscaling_mode: UpscalingMode::Default,
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            version: AutoscalerVersion::default(),
        }
    }
}

impl PlannerOptions {
    /// Build from the raw CRD fields (`upscalingMode`, `idleTimeoutSeconds`, `version`); a
    /// negative timeout (rejected by validation) counts as 0.
    pub fn from_fields(upscaling_mode: Option<&str>, idle_timeout_seconds: Option<i32>, version: Option<&str>) -> Self {
        Self {
            upscaling_mode: UpscalingMode::parse(upscaling_mode),
            idle_timeout: idle_timeout_seconds.map_or(DEFAULT_IDLE_TIMEOUT, |s| {
                Duration::from_secs(u64::try_from(s).unwrap_or(0))
            }),
            version: match version {
                Some("v1") => AutoscalerVersion::V1,
                _ => AutoscalerVersion::V2,
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_map_to_ray_speeds() {
        assert_eq!(UpscalingMode::parse(Some("Conservative")).upscaling_speed(), 1.0);
        assert_eq!(UpscalingMode::parse(Some("Default")).upscaling_speed(), 1000.0);
        assert_eq!(UpscalingMode::parse(Some("Aggressive")).upscaling_speed(), 1000.0);
        assert_eq!(UpscalingMode::parse(None).upscaling_speed(), 1000.0);
    }

    #[test]
    fn options_from_fields_apply_defaults() {
        let o = PlannerOptions::from_fields(None, None, None);
        assert_eq!(o, PlannerOptions::default());
        assert_eq!(o.idle_timeout, Duration::from_secs(60));
        let o = PlannerOptions::from_fields(Some("Conservative"), Some(120), Some("v1"));
        assert_eq!(o.idle_timeout, Duration::from_secs(120));
        assert_eq!(o.version, AutoscalerVersion::V1);
        assert_eq!(
            PlannerOptions::from_fields(None, Some(-5), None).idle_timeout,
            Duration::ZERO
        );
    }
}
