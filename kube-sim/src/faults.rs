//! Seeded, reproducible fault injection for the HTTP layer (agents bypass it).
//!
//! Spec string syntax (comma-separated items, all optional):
//!
//! | Item | Meaning |
//! |---|---|
//! | `error=5%:500` | 5 % of requests fail with 500 `InternalError` (codes: 500, 503, 504, 429, 409) |
//! | `error=3x:500@create/pods` | the next 3 matching requests fail (count instead of percentage) |
//! | `conflict=2%` | shorthand for `error=2%:409` restricted to writes |
//! | `@VERB[+VERB..]` | restrict a rule to verbs: get, list, watch, create, update, patch, delete, deletecollection |
//! | `/RESOURCE` | restrict a rule to a plural resource name (after the optional `@verbs`) |
//! | `latency=20ms` | add latency to every request (a Go duration such as `20ms` or `1.5s`; a bare number is milliseconds) |
//! | `watch-drop=2s` | sever every open watch stream every 2 s |
//! | `watch-lag=300ms/RESOURCE` | watch events (of one plural resource, or of all without `/RESOURCE`) reach clients that much after they happen, as from a watch cache behind storage; requests still see the latest state. Set on a running simulator, it applies to watches started after. A watch holds back at most 256 events at a time: beyond that rate the lag grows |
//! | `expire-watch` | the next watch request gets an in-stream 410 `Expired` |
//! | `seed=42` | RNG seed for the percentages |
//!
//! 429 responses carry `Retry-After: 1`. kube-client retries 429/503/504 itself, so use 500 or 409 to reach an
//! operator's error paths.

use std::time::Duration;

use kube_compat::go_duration;

use crate::error::ApiError;

/// How often a rule fires.
#[derive(Debug, Clone, PartialEq)]
pub enum Amount {
    /// A probability in percent (0–100).
    Percent(f64),
    /// The next N matching requests.
    Count(u64),
}

/// One error-injection rule.
#[derive(Debug, Clone, PartialEq)]
pub struct ErrorRule {
    /// How often it fires.
    pub amount: Amount,
    /// HTTP status to return.
    pub code: u16,
    /// Verbs it applies to (empty = all).
    pub verbs: Vec<String>,
    /// Plural resource it applies to (`None` = all).
    pub resource: Option<String>,
}

/// A parsed fault specification.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct FaultConfig {
    /// Error rules, checked in order.
    pub errors: Vec<ErrorRule>,
    /// Added latency per request.
    pub latency: Duration,
    /// Sever all watch streams at this interval.
    pub watch_drop: Option<Duration>,
    /// Delay watch events by this long, for one plural resource or (`None`) all.
    pub watch_lag: Option<(Duration, Option<String>)>,
    /// Answer the next watch with an in-stream 410.
    pub expire_next_watch: bool,
    /// RNG seed.
    pub seed: u64,
}

/// Errors in a fault spec string.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("invalid fault spec item {item:?}: {why}")]
pub struct FaultSpecError {
    /// The offending item.
    pub item: String,
    /// What is wrong with it.
    pub why: String,
}

/// A fault item's duration: Go duration text (`20ms`, `2s`) or a bare number of milliseconds.
fn parse_duration(s: &str) -> Option<Duration> {
    let s = s.trim();
    if let Ok(ms) = s.parse::<u64>() {
        return Some(Duration::from_millis(ms));
    }
    go_duration::parse(s).ok()
}

const VERBS: &[&str] = &[
    "get",
    "list",
    "watch",
    "create",
    "update",
    "patch",
    "delete",
    "deletecollection",
];
/// Verbs that change state (the scope of `conflict=`; also what the HTTP layer counts as a write).
pub(crate) const WRITE_VERBS: &[&str] = &["create", "update", "patch", "delete", "deletecollection"];
const CODES: &[u16] = &[409, 429, 500, 503, 504];

impl FaultConfig {
    /// How long watch events of `resource` are held back (`watch-lag`).
    pub fn watch_lag_of(&self, resource: &str) -> Option<Duration> {
        match &self.watch_lag {
            Some((lag, None)) => Some(*lag),
            Some((lag, Some(only))) if only == resource => Some(*lag),
            _ => None,
        }
    }

    /// Parses the `--faults` syntax described in the module docs.
    pub fn parse(spec: &str) -> Result<Self, FaultSpecError> {
        let mut cfg = Self {
            seed: 42,
            ..Self::default()
        };
        for item in spec.split(',').map(str::trim).filter(|s| !s.is_empty()) {
            let err = |why: &str| FaultSpecError {
                item: item.to_string(),
                why: why.to_string(),
            };
            let (key, value) = item.split_once('=').unwrap_or((item, ""));
            match key {
                "error" | "conflict" => {
                    let cut = value.find(['@', '/']).unwrap_or(value.len());
                    let (main, filter) = value.split_at(cut);
                    let (amount, code) = match main.split_once(':') {
                        Some((a, c)) => (a, Some(c)),
                        None => (main, None),
                    };
                    let amount = if let Some(p) = amount.strip_suffix('%') {
                        Amount::Percent(p.parse::<f64>().map_err(|_| err("bad percentage"))?.clamp(0.0, 100.0))
                    } else if let Some(n) = amount.strip_suffix('x') {
                        Amount::Count(n.parse().map_err(|_| err("bad count"))?)
                    } else {
                        return Err(err("amount must be N% or Nx"));
                    };
                    let code = match (key, code) {
                        ("conflict", _) => 409,
                        (_, Some(c)) => c.parse().map_err(|_| err("bad status code"))?,
                        (_, None) => 500,
                    };
                    if !CODES.contains(&code) {
                        return Err(err("status code must be one of 409, 429, 500, 503, 504"));
                    }
                    let (mut verbs, mut resource) = (Vec::new(), None);
                    if !filter.is_empty() {
                        let f = filter.strip_prefix('@').unwrap_or(filter);
                        let (v, r) = match f.split_once('/') {
                            Some((v, r)) => (v, Some(r)),
                            None => (f, None),
                        };
                        for verb in v.split('+').filter(|s| !s.is_empty()) {
                            if !VERBS.contains(&verb) {
                                return Err(err("unknown verb"));
                            }
                            verbs.push(verb.to_string());
                        }
                        resource = r.filter(|r| !r.is_empty()).map(str::to_string);
                    }
                    if key == "conflict" && verbs.is_empty() {
                        verbs = WRITE_VERBS.iter().map(|s| s.to_string()).collect();
                    }
                    cfg.errors.push(ErrorRule {
                        amount,
                        code,
                        verbs,
                        resource,
                    });
                }
                "latency" => cfg.latency = parse_duration(value).ok_or_else(|| err("bad duration"))?,
                "watch-drop" => cfg.watch_drop = Some(parse_duration(value).ok_or_else(|| err("bad duration"))?),
                "watch-lag" => {
                    let (lag, resource) = match value.split_once('/') {
                        Some((lag, resource)) if !resource.is_empty() => (lag, Some(resource.to_string())),
                        Some(_) => return Err(err("empty resource")),
                        None => (value, None),
                    };
                    cfg.watch_lag = Some((parse_duration(lag).ok_or_else(|| err("bad duration"))?, resource));
                }
                "expire-watch" => cfg.expire_next_watch = true,
                "seed" => cfg.seed = value.parse().map_err(|_| err("bad seed"))?,
                _ => return Err(err("unknown item")),
            }
        }
        Ok(cfg)
    }
}

/// Runtime fault state: the active config, its RNG and remaining counts.
#[derive(Debug)]
pub struct FaultState {
    config: FaultConfig,
    rng: fastrand::Rng,
}

impl FaultState {
    /// State for a config (the RNG is seeded from `config.seed`).
    pub fn new(config: FaultConfig) -> Self {
        let rng = fastrand::Rng::with_seed(config.seed);
        Self { config, rng }
    }

    /// The active config.
    pub fn config(&self) -> &FaultConfig {
        &self.config
    }

    /// Takes the one-shot "expire the next watch" flag.
    pub fn take_expire_next_watch(&mut self) -> bool {
        std::mem::take(&mut self.config.expire_next_watch)
    }

    /// Decides whether this request fails; returns the error to send.
    pub fn decide(&mut self, verb: &str, resource: &str) -> Option<ApiError> {
        for rule in &mut self.config.errors {
            if !rule.verbs.is_empty() && !rule.verbs.iter().any(|v| v == verb) {
                continue;
            }
            if rule.resource.as_deref().is_some_and(|r| r != resource) {
                continue;
            }
            let fire = match &mut rule.amount {
                Amount::Percent(p) => self.rng.f64() * 100.0 < *p,
                Amount::Count(n) if *n > 0 => {
                    *n -= 1;
                    true
                }
                Amount::Count(_) => false,
            };
            if fire {
                return Some(injected_error(rule.code));
            }
        }
        None
    }
}

/// The Status error for an injected status code.
pub fn injected_error(code: u16) -> ApiError {
    match code {
        409 => ApiError::new(
            409,
            "Conflict",
            "injected fault: the object has been modified; please apply your changes to the latest version and try again",
        ),
        429 => {
            let mut e = ApiError::new(
                429,
                "TooManyRequests",
                "injected fault: too many requests, please try again later",
            );
            e.retry_after = Some(1);
            e
        }
        503 => ApiError::new(
            503,
            "ServiceUnavailable",
            "injected fault: the server is currently unable to handle the request",
        ),
        504 => ApiError::new(
            504,
            "Timeout",
            "injected fault: the server was unable to return a response in the time allotted",
        ),
        _ => ApiError::internal("injected fault"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_documented_example() {
        let c = FaultConfig::parse("error=5%:500,conflict=2%,watch-drop=2s,seed=7,latency=10ms").unwrap();
        assert_eq!(c.errors.len(), 2);
        assert_eq!(c.errors[0].code, 500);
        assert_eq!(c.errors[1].code, 409);
        assert!(c.errors[1].verbs.contains(&"patch".to_string()));
        assert_eq!(c.watch_drop, Some(Duration::from_secs(2)));
        assert_eq!(c.latency, Duration::from_millis(10));
        assert_eq!(c.seed, 7);
    }

    #[test]
    fn count_rules_fire_exactly_n_times() {
        let c = FaultConfig::parse("error=2x:503@create/pods").unwrap();
        let mut s = FaultState::new(c);
        assert!(s.decide("get", "pods").is_none());
        assert!(s.decide("create", "services").is_none());
        assert_eq!(s.decide("create", "pods").unwrap().code, 503);
        assert_eq!(s.decide("create", "pods").unwrap().reason, "ServiceUnavailable");
        assert!(s.decide("create", "pods").is_none());
    }

    #[test]
    fn durations_are_go_text_or_bare_milliseconds() {
        assert_eq!(
            FaultConfig::parse("latency=250").unwrap().latency,
            Duration::from_millis(250)
        );
        assert_eq!(
            FaultConfig::parse("latency=1.5s").unwrap().latency,
            Duration::from_millis(1500)
        );
        assert_eq!(
            FaultConfig::parse("watch-drop=1m").unwrap().watch_drop,
            Some(Duration::from_secs(60))
        );
        assert!(FaultConfig::parse("latency=soon").is_err());
        assert!(FaultConfig::parse("latency=-1s").is_err());
    }

    #[test]
    fn watch_lag_applies_to_its_resource_or_to_all() {
        let one = FaultConfig::parse("watch-lag=300ms/rayclusters").unwrap();
        assert_eq!(one.watch_lag_of("rayclusters"), Some(Duration::from_millis(300)));
        assert_eq!(one.watch_lag_of("pods"), None);
        let all = FaultConfig::parse("watch-lag=1s").unwrap();
        assert_eq!(all.watch_lag_of("pods"), Some(Duration::from_secs(1)));
        assert_eq!(FaultConfig::default().watch_lag_of("pods"), None);
        assert!(FaultConfig::parse("watch-lag=1s/").is_err());
        assert!(FaultConfig::parse("watch-lag=later/pods").is_err());
    }

    #[test]
    fn rejects_unknown_items() {
        assert!(FaultConfig::parse("boom=1").is_err());
        assert!(FaultConfig::parse("error=5%:418").is_err());
    }
}
