//! The streaming pod subresources: `exec` (a command in a running container, its stdio over a WebSocket
//! channel protocol) and `portforward` (TCP to the pod's ports over WebSocket channels or SPDY/3.1 streams,
//! plain or tunnelled in a WebSocket). See `docs/kube-sim.md`, "exec and port-forward".
//!
//! Requests are validated (pod, container, phase) before the connection is upgraded, so errors reach the
//! client as `Status` responses exactly like other API errors.
//!
//! Without the crate's `exec` feature both subresources are still routed and authorized, then refused with
//! 400 `BadRequest` saying why.

#[cfg(feature = "exec")]
mod channel;
#[cfg(feature = "exec")]
mod exec;
#[cfg(feature = "exec")]
mod portforward;
#[cfg(feature = "exec")]
mod spdy;
#[cfg(feature = "exec")]
mod target;
#[cfg(feature = "exec")]
mod upgrade;

use std::sync::Arc;

use http::{HeaderMap, Response};
use hyper::upgrade::OnUpgrade;

use super::{Body, HttpState};
use crate::error::ApiError;
use crate::store::StoredObject;

/// One request to a streaming subresource, with everything needed after the HTTP exchange ends.
// Built (the pod looked up, so a missing one is still 404) but not read without the `exec` feature.
#[cfg_attr(not(feature = "exec"), allow(dead_code))]
pub(super) struct StreamRequest {
    /// The server state (container executor, proxy backends, store).
    pub(super) state: Arc<HttpState>,
    /// The pod addressed.
    pub(super) pod: Arc<StoredObject>,
    /// Request headers (upgrade negotiation).
    pub(super) headers: HeaderMap,
    /// The raw query string (parameters such as `command` repeat).
    pub(super) query: String,
    /// The connection once the 101 response is sent.
    pub(super) upgrade: Option<OnUpgrade>,
}

/// Whether `subresource` of pods is served here.
pub(super) fn is_streaming(subresource: &str) -> bool {
    matches!(subresource, "exec" | "portforward")
}

/// Serves `exec` or `portforward`: a `101 Switching Protocols` response (the session then runs on its own
/// task) or the error `Status`.
#[cfg(feature = "exec")]
pub(super) async fn serve(subresource: &str, request: StreamRequest) -> Result<Response<Body>, ApiError> {
    match subresource {
        "exec" => exec::serve(request),
        "portforward" => portforward::serve(request),
        _ => Err(ApiError::no_route()),
    }
}

/// Refuses `exec` and `portforward`: this build of kube-sim has no streaming.
#[cfg(not(feature = "exec"))]
pub(super) async fn serve(subresource: &str, _request: StreamRequest) -> Result<Response<Body>, ApiError> {
    Err(ApiError::bad_request(format!(
        "pods/{subresource} is not served: kube-sim was built without its exec feature"
    )))
}

/// Every value of a query parameter that may repeat (`command=sh&command=-c`), in order.
#[cfg(feature = "exec")]
fn query_values(query: &str, key: &str) -> Vec<String> {
    form_urlencoded::parse(query.as_bytes())
        .filter(|(k, _)| k == key)
        .map(|(_, v)| v.into_owned())
        .collect()
}

/// A boolean query parameter as Go's `strconv.ParseBool` reads it; absent is `false`.
#[cfg(feature = "exec")]
fn query_flag(query: &str, key: &str) -> Result<bool, ApiError> {
    match query_values(query, key).last() {
        None => Ok(false),
        Some(v) => super::logs::parse_bool(key, v),
    }
}

/// kube-apiserver refuses streaming to a pod no node runs yet.
#[cfg(feature = "exec")]
fn require_host(pod: &StoredObject) -> Result<(), ApiError> {
    if pod.value()["spec"]["nodeName"].as_str().is_none_or(str::is_empty) {
        return Err(ApiError::bad_request(format!(
            "pod {} does not have a host assigned",
            pod.name()
        )));
    }
    Ok(())
}

#[cfg(all(test, feature = "exec"))]
mod tests {
    use super::*;

    #[test]
    fn repeated_parameters_keep_their_order() {
        let q = "command=sh&command=-c&command=echo+a%26b&stdout=true&container=main";
        assert_eq!(query_values(q, "command"), ["sh", "-c", "echo a&b"]);
        assert!(query_flag(q, "stdout").unwrap());
        assert!(!query_flag(q, "stdin").unwrap());
        assert!(query_flag("tty=maybe", "tty").is_err());
    }
}
