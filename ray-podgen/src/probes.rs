//! Liveness and readiness probes of the Ray container: KubeRay's timings, the unified `/api/healthz` check for
//! Ray ≥ 2.53 or `wget` exec checks before, and the Serve proxy check on RayService workers
//! (docs/podgen.md#ports-and-probes).

use k8s_openapi::api::core::v1::{Container, ExecAction, HTTPGetAction, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use ray_api::constants::{
    DEFAULT_DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_DASHBOARD_PORT, DEFAULT_SERVING_PORT, SERVING_PORT_NAME,
};

use crate::cluster::CreatorKind;
use crate::start_params::{DASHBOARD_AGENT_LISTEN_PORT, DASHBOARD_PORT, RayNodeType, RayStartParams};

/// Liveness: initial delay.
pub const LIVENESS_INITIAL_DELAY_SECONDS: i32 = 30;
/// Liveness timeout on the head.
pub const HEAD_LIVENESS_TIMEOUT_SECONDS: i32 = 5;
/// Liveness timeout on workers.
pub const WORKER_LIVENESS_TIMEOUT_SECONDS: i32 = 2;
/// Liveness: period.
pub const LIVENESS_PERIOD_SECONDS: i32 = 5;
/// Liveness: success threshold.
pub const LIVENESS_SUCCESS_THRESHOLD: i32 = 1;
/// Liveness: failure threshold.
pub const LIVENESS_FAILURE_THRESHOLD: i32 = 120;
/// Readiness: initial delay (also, quirk, the wget timeout of the serve proxy check).
pub const READINESS_INITIAL_DELAY_SECONDS: i32 = 10;
/// Readiness timeout on the head.
pub const HEAD_READINESS_TIMEOUT_SECONDS: i32 = 5;
/// Readiness timeout on workers (also the raylet wget timeout).
pub const WORKER_READINESS_TIMEOUT_SECONDS: i32 = 2;
/// Readiness: period.
pub const READINESS_PERIOD_SECONDS: i32 = 5;
/// Readiness: success threshold.
pub const READINESS_SUCCESS_THRESHOLD: i32 = 1;
/// Readiness: failure threshold (also, quirk, the GCS wget timeout).
pub const READINESS_FAILURE_THRESHOLD: i32 = 10;
/// Readiness failure threshold of RayService workers.
pub const SERVE_READINESS_FAILURE_THRESHOLD: i32 = 1;
/// Unified health endpoint of Ray ≥ 2.53.
pub const RAY_NODE_HEALTH_PATH: &str = "/api/healthz";
/// Raylet health path on the dashboard agent.
pub const RAYLET_HEALTH_PATH: &str = "api/local_raylet_healthz";
/// GCS health path on the dashboard.
pub const GCS_HEALTH_PATH: &str = "api/gcs_healthz";
/// Serve proxy health path.
pub const SERVE_PROXY_HEALTH_PATH: &str = "-/healthz";
/// First Ray version with the unified HTTP health check.
pub const UNIFIED_HEALTH_CHECK_MIN_VERSION: [u64; 3] = [2, 53, 0];

/// `wget` health command (`BaseWgetHealthCommand`).
fn wget(timeout: i32, port: i32, path: &str) -> String {
    format!("wget --tries 1 -T {timeout} -q -O- http://localhost:{port}/{path} | grep success")
}

/// A port from `rayStartParams` parsed as base-10 int32, else the default.
fn param_port(params: &RayStartParams, key: &str, default: i32) -> i32 {
    params.get(key).and_then(|v| v.parse::<i32>().ok()).unwrap_or(default)
}

/// Kubernetes `version.ParseGeneric`: optional spaces and `v`, at least two dot-separated numbers
/// (the first without a leading zero), anything after the numbers ignored. Missing fields are 0.
pub fn parse_generic_version(text: &str) -> Option<Vec<u64>> {
    let text = text.trim_start();
    let text = text.strip_prefix('v').unwrap_or(text);
    let end = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let numeric = text[..end].trim_end_matches('.');
    let parts: Vec<&str> = numeric.split('.').collect();
    if parts.len() < 2 || parts.iter().any(|p| p.is_empty()) {
        return None;
    }
    if parts[0].len() > 1 && parts[0].starts_with('0') {
        return None;
    }
    parts.iter().map(|p| p.parse::<u64>().ok()).collect()
}

/// Whether `rayVersion` supports the unified `/api/healthz` check (≥ 2.53.0).
pub fn supports_unified_health_check(ray_version: &str) -> bool {
    let Some(mut parts) = parse_generic_version(ray_version) else {
        return false;
    };
    parts.resize(parts.len().max(3), 0);
    parts.as_slice() >= UNIFIED_HEALTH_CHECK_MIN_VERSION.as_slice()
}

/// The port of the container port named `name`, else `default` (`FindContainerPort`).
pub fn container_port(container: &Container, name: &str, default: i32) -> i32 {
    container
        .ports
        .iter()
        .flatten()
        .find(|p| p.name.as_deref() == Some(name))
        .map_or(default, |p| p.container_port)
}

fn exec(commands: &[String]) -> Option<ExecAction> {
    Some(ExecAction {
        command: Some(vec!["bash".to_owned(), "-c".to_owned(), commands.join(" && ")]),
    })
}

/// `initLivenessAndReadinessProbe`: fills each probe the user left unset.
pub fn init_probes(
    container: &mut Container,
    node_type: RayNodeType,
    creator: CreatorKind,
    params: &RayStartParams,
    ray_version: &str,
) {
    let agent_port = param_port(params, DASHBOARD_AGENT_LISTEN_PORT, DEFAULT_DASHBOARD_AGENT_LISTEN_PORT);
    let http = supports_unified_health_check(ray_version).then(|| HTTPGetAction {
        path: Some(RAY_NODE_HEALTH_PATH.to_owned()),
        port: IntOrString::Int(agent_port),
        ..HTTPGetAction::default()
    });
    let mut commands = vec![wget(WORKER_READINESS_TIMEOUT_SECONDS, agent_port, RAYLET_HEALTH_PATH)];
    if node_type == RayNodeType::Head {
        let dashboard_port = param_port(params, DASHBOARD_PORT, DEFAULT_DASHBOARD_PORT);
        commands.push(wget(READINESS_FAILURE_THRESHOLD, dashboard_port, GCS_HEALTH_PATH));
    }
    let head = node_type == RayNodeType::Head;
    if container.liveness_probe.is_none() {
        container.liveness_probe = Some(Probe {
            initial_delay_seconds: Some(LIVENESS_INITIAL_DELAY_SECONDS),
            timeout_seconds: Some(if head {
                HEAD_LIVENESS_TIMEOUT_SECONDS
            } else {
                WORKER_LIVENESS_TIMEOUT_SECONDS
            }),
            period_seconds: Some(LIVENESS_PERIOD_SECONDS),
            success_threshold: Some(LIVENESS_SUCCESS_THRESHOLD),
            failure_threshold: Some(LIVENESS_FAILURE_THRESHOLD),
            http_get: http.clone(),
            exec: if http.is_some() { None } else { exec(&commands) },
            ..Probe::default()
        });
    }
    if container.readiness_probe.is_none() {
        let mut probe = Probe {
            initial_delay_seconds: Some(READINESS_INITIAL_DELAY_SECONDS),
            timeout_seconds: Some(if head {
                HEAD_READINESS_TIMEOUT_SECONDS
            } else {
                WORKER_READINESS_TIMEOUT_SECONDS
            }),
            period_seconds: Some(READINESS_PERIOD_SECONDS),
            success_threshold: Some(READINESS_SUCCESS_THRESHOLD),
            failure_threshold: Some(READINESS_FAILURE_THRESHOLD),
            exec: if http.is_some() { None } else { exec(&commands) },
            http_get: http,
            ..Probe::default()
        };
        if creator == CreatorKind::RayService && !head {
            probe.failure_threshold = Some(SERVE_READINESS_FAILURE_THRESHOLD);
            let serve_port = container_port(container, SERVING_PORT_NAME, DEFAULT_SERVING_PORT);
            commands.push(wget(
                READINESS_INITIAL_DELAY_SECONDS,
                serve_port,
                SERVE_PROXY_HEALTH_PATH,
            ));
            probe.http_get = None;
            probe.exec = exec(&commands);
        }
        container.readiness_probe = Some(probe);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generic_versions() {
        assert!(supports_unified_health_check("2.53.0"));
        assert!(supports_unified_health_check("v2.53"));
        assert!(supports_unified_health_check("2.54.1-rc1"));
        assert!(supports_unified_health_check("3.0"));
        assert!(!supports_unified_health_check("2.52.1"));
        assert!(!supports_unified_health_check("2"));
        assert!(!supports_unified_health_check("invalid-version"));
        assert!(!supports_unified_health_check(""));
    }
}
