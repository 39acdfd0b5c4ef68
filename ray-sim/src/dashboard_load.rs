//! Slow dashboards and what they are asked: a hollow head can hold every dashboard request for a while
//! before answering ([`HollowRayOptions::dashboard_delay`](crate::HollowRayOptions::dashboard_delay), or per
//! RayCluster the [`DASHBOARD_DELAY_ANNOTATION`]), and [`DashboardLoad`] counts the requests in flight by
//! kind, with their peak, so that tests can see how many calls a controller has outstanding at once.

use std::collections::BTreeMap;
use std::time::Duration;

use http::Method;
use parking_lot::Mutex;
use serde_json::Value;

/// RayCluster annotation (milliseconds, a decimal integer) that sets how long that cluster's hollow dashboard
/// holds each request before answering. It overrides the global delay; RayJobs and RayServices copy their own
/// annotations onto the clusters they create, so it can be set on them too.
pub const DASHBOARD_DELAY_ANNOTATION: &str = "ray-sim.kuberay-rs.io/dashboard-delay-ms";

/// The delay a RayCluster's annotations ask for, if any (an unreadable value is ignored).
pub fn annotated_delay(cluster: &Value) -> Option<Duration> {
    cluster["metadata"]["annotations"][DASHBOARD_DELAY_ANNOTATION]
        .as_str()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map(Duration::from_millis)
}

/// What a dashboard request asks for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DashboardCall {
    /// `GET /api/jobs/{id}`.
    JobInfo,
    /// `POST /api/jobs/`.
    JobSubmit,
    /// `POST /api/jobs/{id}/stop`.
    JobStop,
    /// `/api/serve/applications/` (any method).
    Serve,
    /// Anything else (health, version, logs, listing, the web UI, the hollow API).
    Other,
}

impl DashboardCall {
    /// Classifies a request by method and path (after the proxy prefix, without the query).
    pub fn classify(method: &Method, path: &str) -> Self {
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        match (method, segments.as_slice()) {
            (&Method::GET, ["api", "jobs", _]) => Self::JobInfo,
            (&Method::POST, ["api", "jobs"]) => Self::JobSubmit,
            (&Method::POST, ["api", "jobs", _, "stop"]) => Self::JobStop,
            (_, ["api", "serve", "applications"]) => Self::Serve,
            _ => Self::Other,
        }
    }
}

/// Counts of one kind of call.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CallCounts {
    /// Received and not yet answered.
    pub in_flight: usize,
    /// The most ever in flight at once.
    pub peak: usize,
    /// Received in total.
    pub total: usize,
}

/// Dashboard requests in flight by kind (one per head, and one shared by every head of a
/// [`HollowRay`](crate::HollowRay)).
#[derive(Debug, Default)]
pub struct DashboardLoad {
    counts: Mutex<BTreeMap<DashboardCall, CallCounts>>,
}

impl DashboardLoad {
    /// The counts of `call` so far.
    pub fn counts(&self, call: DashboardCall) -> CallCounts {
        self.counts.lock().get(&call).copied().unwrap_or_default()
    }

    fn enter(&self, call: DashboardCall) {
        let mut counts = self.counts.lock();
        let c = counts.entry(call).or_default();
        c.in_flight += 1;
        c.total += 1;
        c.peak = c.peak.max(c.in_flight);
    }

    fn leave(&self, call: DashboardCall) {
        if let Some(c) = self.counts.lock().get_mut(&call) {
            c.in_flight = c.in_flight.saturating_sub(1);
        }
    }
}

/// One request counted in some gauges from creation until dropped (answered, or abandoned by the client).
pub(crate) struct InFlight {
    call: DashboardCall,
    gauges: Vec<std::sync::Arc<DashboardLoad>>,
}

impl InFlight {
    /// Counts `call` in every gauge of `gauges`.
    pub(crate) fn enter(call: DashboardCall, gauges: Vec<std::sync::Arc<DashboardLoad>>) -> Self {
        for gauge in &gauges {
            gauge.enter(call);
        }
        Self { call, gauges }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        for gauge in &self.gauges {
            gauge.leave(self.call);
        }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use std::sync::Arc;

    use super::*;

    #[test]
    fn classifies_the_calls_kuberay_makes() {
        let cases = [
            (Method::GET, "/api/jobs/j-1", DashboardCall::JobInfo),
            (Method::POST, "/api/jobs/", DashboardCall::JobSubmit),
            (Method::POST, "/api/jobs/j-1/stop", DashboardCall::JobStop),
            (Method::PUT, "/api/serve/applications/", DashboardCall::Serve),
            (Method::GET, "/api/gcs_healthz", DashboardCall::Other),
            (Method::GET, "/api/jobs/", DashboardCall::Other),
        ];
        for (method, path, call) in cases {
            assert_eq!(DashboardCall::classify(&method, path), call, "{method} {path}");
        }
    }

    #[test]
    fn counts_in_flight_peak_and_total_in_every_gauge() {
        let (a, b) = (Arc::new(DashboardLoad::default()), Arc::new(DashboardLoad::default()));
        let first = InFlight::enter(DashboardCall::JobInfo, vec![a.clone(), b.clone()]);
        let second = InFlight::enter(DashboardCall::JobInfo, vec![a.clone()]);
        let triple = |c: CallCounts| (c.in_flight, c.peak, c.total);
        assert_eq!(triple(a.counts(DashboardCall::JobInfo)), (2, 2, 2));
        drop(first);
        drop(second);
        let _third = InFlight::enter(DashboardCall::JobInfo, vec![a.clone()]);
        assert_eq!(
            triple(a.counts(DashboardCall::JobInfo)),
            (1, 2, 3),
            "in flight, peak, total"
        );
        assert_eq!(b.counts(DashboardCall::JobInfo).in_flight, 0);
        assert_eq!(a.counts(DashboardCall::JobStop), CallCounts::default());
    }

    #[test]
    fn reads_the_annotation() {
        let annotated = serde_json::json!({"metadata": {"annotations": {DASHBOARD_DELAY_ANNOTATION: "2500"}}});
        assert_eq!(annotated_delay(&annotated), Some(Duration::from_millis(2500)));
        assert_eq!(annotated_delay(&serde_json::json!({"metadata": {}})), None);
        let bad = serde_json::json!({"metadata": {"annotations": {DASHBOARD_DELAY_ANNOTATION: "soon"}}});
        assert_eq!(annotated_delay(&bad), None);
    }
}
