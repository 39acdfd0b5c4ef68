//! `spec.upgradeStrategy.rollingUpdate` (beyond KubeRay, `docs/rolling-upgrades.md`): the static checks of its
//! values and their resolution against a worker group's desired replicas.
//!
//! The checks are separate from KubeRay's validation on purpose: a bad rolling-update setting stops only the
//! upgrade (the controller reports it in an Event and a condition), never the rest of the cluster's reconcile.

use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

use super::{ValidationError, ValidationResult};
use crate::raycluster::{RayClusterSpec, RayClusterUpgradeType, RollingUpdateOptions};

/// `maxUnavailable` when unset: one replica at a time.
pub const DEFAULT_MAX_UNAVAILABLE: i32 = 1;
/// `maxSurge` when unset: no replica above the desired count (workers are often large or GPU nodes).
pub const DEFAULT_MAX_SURGE: i32 = 0;
/// `progressDeadlineSeconds` when unset (a Deployment's default).
pub const DEFAULT_PROGRESS_DEADLINE_SECONDS: i32 = 600;

/// JSON path of `maxUnavailable`.
pub const MAX_UNAVAILABLE_FIELD: &str = "spec.upgradeStrategy.rollingUpdate.maxUnavailable";
/// JSON path of `maxSurge`.
pub const MAX_SURGE_FIELD: &str = "spec.upgradeStrategy.rollingUpdate.maxSurge";
/// JSON path of `progressDeadlineSeconds`.
pub const PROGRESS_DEADLINE_FIELD: &str = "spec.upgradeStrategy.rollingUpdate.progressDeadlineSeconds";

/// Whether the spec asks for rolling worker upgrades (`upgradeStrategy.type: RollingUpdate`).
pub fn rolling_update_requested(spec: &RayClusterSpec) -> bool {
    spec.upgrade_strategy.as_ref().and_then(|u| u.type_) == Some(RayClusterUpgradeType::RollingUpdate)
}

/// The rolling-update options of a spec that requests rolling upgrades (`None` for any other strategy).
pub fn rolling_update_options(spec: &RayClusterSpec) -> Option<RollingUpdateOptions> {
    rolling_update_requested(spec).then(|| {
        spec.upgrade_strategy
            .as_ref()
            .and_then(|u| u.rolling_update.clone())
            .unwrap_or_default()
    })
}

/// One bound as written: a count, or a percentage of the desired replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Bound {
    Count(i64),
    Percent(i64),
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bound::Count(n) => write!(f, "{n}"),
            Bound::Percent(p) => write!(f, "{p}%"),
        }
    }
}

fn parse_bound(
    value: Option<&IntOrString>,
    default: i32,
    field: &str,
    max_percent: i64,
) -> Result<Bound, ValidationError> {
    let bound = match value {
        None => Bound::Count(i64::from(default)),
        Some(IntOrString::Int(n)) => Bound::Count(i64::from(*n)),
        Some(IntOrString::String(text)) => {
            let percent = text
                .strip_suffix('%')
                .and_then(|digits| digits.parse::<i64>().ok())
                .ok_or_else(|| {
                    ValidationError::new(
                        field,
                        format!("{field} {text:?} is invalid: use a whole number or a percentage such as \"25%\""),
                    )
                })?;
            Bound::Percent(percent)
        }
    };
    match bound {
        Bound::Count(n) | Bound::Percent(n) if n < 0 => Err(ValidationError::new(
            field,
            format!("{field} {bound} is invalid: it must not be negative"),
        )),
        Bound::Percent(p) if p > max_percent => Err(ValidationError::new(
            field,
            format!("{field} {bound} is invalid: it must not exceed {max_percent}%"),
        )),
        _ => Ok(bound),
    }
}

fn bounds(options: &RollingUpdateOptions) -> Result<(Bound, Bound), ValidationError> {
    let unavailable = parse_bound(
        options.max_unavailable.as_ref(),
        DEFAULT_MAX_UNAVAILABLE,
        MAX_UNAVAILABLE_FIELD,
        100,
    )?;
    let surge = parse_bound(options.max_surge.as_ref(), DEFAULT_MAX_SURGE, MAX_SURGE_FIELD, i64::MAX)?;
    Ok((unavailable, surge))
}

/// The static checks of `rollingUpdate` (only when `type: RollingUpdate`): each bound a non-negative count or
/// percentage (`maxUnavailable` at most 100%), not both zero (nothing could ever be replaced), and a positive
/// `progressDeadlineSeconds`.
pub fn validate_rolling_update(spec: &RayClusterSpec) -> ValidationResult {
    let Some(options) = rolling_update_options(spec) else {
        return Ok(());
    };
    let (unavailable, surge) = bounds(&options)?;
    let zero = |b: Bound| matches!(b, Bound::Count(0) | Bound::Percent(0));
    if zero(unavailable) && zero(surge) {
        return Err(ValidationError::new(
            MAX_UNAVAILABLE_FIELD,
            format!(
                "{MAX_UNAVAILABLE_FIELD} and maxSurge are both 0: the upgrade could never replace a pod; \
                 allow at least one unavailable or one surge replica"
            ),
        ));
    }
    if let Some(seconds) = options.progress_deadline_seconds
        && seconds <= 0
    {
        return Err(ValidationError::new(
            PROGRESS_DEADLINE_FIELD,
            format!("{PROGRESS_DEADLINE_FIELD} {seconds} is invalid: it must be positive"),
        ));
    }
    Ok(())
}

/// Rolling-update bounds of one worker group, in replicas.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RollingUpdateBounds {
    /// Most desired replicas that may be unavailable.
    pub max_unavailable: i64,
    /// Most replicas above the desired count.
    pub max_surge: i64,
}

/// Resolves the bounds for a group of `desired` replicas (percentages: `maxUnavailable` rounded down,
/// `maxSurge` rounded up, as a Deployment does). Fails, naming the field, when they resolve to 0 and 0 for a
/// group that has replicas: such an upgrade could never make progress.
pub fn resolve_rolling_update(
    options: &RollingUpdateOptions,
    desired: i64,
) -> Result<RollingUpdateBounds, ValidationError> {
    let (unavailable, surge) = bounds(options)?;
    let desired = desired.max(0);
    let scaled = |b: Bound, round_up: bool| match b {
        Bound::Count(n) => n,
        Bound::Percent(p) => {
            let product = desired.saturating_mul(p);
            if round_up {
                product.saturating_add(99) / 100
            } else {
                product / 100
            }
        }
    };
    let resolved = RollingUpdateBounds {
        max_unavailable: scaled(unavailable, false),
        max_surge: scaled(surge, true),
    };
    if desired > 0 && resolved.max_unavailable == 0 && resolved.max_surge == 0 {
        return Err(ValidationError::new(
            MAX_UNAVAILABLE_FIELD,
            format!(
                "{MAX_UNAVAILABLE_FIELD} {unavailable} of {desired} replicas rounds to 0 and maxSurge {surge} is 0: \
                 the upgrade cannot replace a pod"
            ),
        ));
    }
    Ok(resolved)
}

/// `progressDeadlineSeconds` with its default applied.
pub fn progress_deadline_seconds(options: &RollingUpdateOptions) -> i64 {
    i64::from(
        options
            .progress_deadline_seconds
            .unwrap_or(DEFAULT_PROGRESS_DEADLINE_SECONDS),
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::raycluster::RayClusterUpgradeStrategy;

    fn spec(unavailable: Option<IntOrString>, surge: Option<IntOrString>) -> RayClusterSpec {
        RayClusterSpec {
            upgrade_strategy: Some(RayClusterUpgradeStrategy {
                type_: Some(RayClusterUpgradeType::RollingUpdate),
                rolling_update: Some(RollingUpdateOptions {
                    max_unavailable: unavailable,
                    max_surge: surge,
                    ..Default::default()
                }),
            }),
            ..Default::default()
        }
    }

    fn pct(s: &str) -> Option<IntOrString> {
        Some(IntOrString::String(s.to_owned()))
    }

    #[test]
    fn defaults_are_one_unavailable_no_surge() {
        assert_eq!(validate_rolling_update(&spec(None, None)), Ok(()));
        let resolved = resolve_rolling_update(&RollingUpdateOptions::default(), 20).unwrap();
        assert_eq!(
            resolved,
            RollingUpdateBounds {
                max_unavailable: 1,
                max_surge: 0
            }
        );
    }

    #[test]
    fn both_zero_is_refused_naming_the_field() {
        let e = validate_rolling_update(&spec(Some(IntOrString::Int(0)), Some(IntOrString::Int(0)))).unwrap_err();
        assert_eq!(e.field, MAX_UNAVAILABLE_FIELD);
        assert!(e.message.contains("both 0"), "{}", e.message);
        let e = validate_rolling_update(&spec(pct("0%"), None)).unwrap_err();
        assert_eq!(e.field, MAX_UNAVAILABLE_FIELD);
    }

    #[test]
    fn invalid_values_name_their_field() {
        let e = validate_rolling_update(&spec(Some(IntOrString::Int(-1)), None)).unwrap_err();
        assert_eq!(e.field, MAX_UNAVAILABLE_FIELD);
        assert!(e.message.contains("negative"));
        let e = validate_rolling_update(&spec(None, pct("abc"))).unwrap_err();
        assert_eq!(e.field, MAX_SURGE_FIELD);
        assert!(e.message.contains("\"abc\""), "{}", e.message);
        let e = validate_rolling_update(&spec(pct("150%"), None)).unwrap_err();
        assert_eq!(e.field, MAX_UNAVAILABLE_FIELD);
        // Surge may exceed 100%.
        assert_eq!(validate_rolling_update(&spec(None, pct("150%"))), Ok(()));
        let mut s = spec(None, None);
        if let Some(r) = s.upgrade_strategy.as_mut().and_then(|u| u.rolling_update.as_mut()) {
            r.progress_deadline_seconds = Some(0);
        }
        assert_eq!(validate_rolling_update(&s).unwrap_err().field, PROGRESS_DEADLINE_FIELD);
    }

    #[test]
    fn other_strategies_ignore_rolling_update() {
        let mut s = spec(Some(IntOrString::Int(-1)), None);
        if let Some(u) = s.upgrade_strategy.as_mut() {
            u.type_ = Some(RayClusterUpgradeType::Recreate);
        }
        assert_eq!(validate_rolling_update(&s), Ok(()));
    }

    #[test]
    fn percentages_round_like_a_deployment() {
        let options = RollingUpdateOptions {
            max_unavailable: pct("25%"),
            max_surge: pct("25%"),
            ..Default::default()
        };
        assert_eq!(
            resolve_rolling_update(&options, 10).unwrap(),
            RollingUpdateBounds {
                max_unavailable: 2,
                max_surge: 3
            }
        );
    }

    #[test]
    fn percentages_that_round_to_zero_cannot_progress() {
        let options = RollingUpdateOptions {
            max_unavailable: pct("10%"),
            max_surge: Some(IntOrString::Int(0)),
            ..Default::default()
        };
        let e = resolve_rolling_update(&options, 5).unwrap_err();
        assert_eq!(e.field, MAX_UNAVAILABLE_FIELD);
        assert!(e.message.contains("10% of 5 replicas rounds to 0"), "{}", e.message);
        assert!(resolve_rolling_update(&options, 10).is_ok());
        // An empty group has nothing to replace.
        assert!(resolve_rolling_update(&options, 0).is_ok());
    }
}
