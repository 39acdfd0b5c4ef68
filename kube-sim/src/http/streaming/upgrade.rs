//! Protocol negotiation of streaming requests: which upgrade the client asks for (WebSocket or SPDY/3.1),
//! which subprotocol both sides speak, the `101 Switching Protocols` answers, and the upgraded connection.

use http::{HeaderMap, HeaderValue, Response, StatusCode, header};
use http_body_util::{BodyExt, Empty};
use hyper::upgrade::{OnUpgrade, Upgraded};
use hyper_util::rt::TokioIo;
use tokio_tungstenite::WebSocketStream;
use tokio_tungstenite::tungstenite::handshake::derive_accept_key;
use tokio_tungstenite::tungstenite::protocol::Role;

use super::super::Body;
use crate::error::ApiError;

/// A WebSocket over an upgraded API connection.
pub(super) type WebSocket = WebSocketStream<TokioIo<Upgraded>>;

/// Messages queued towards a WebSocket client before senders wait.
const WRITE_QUEUE: usize = 64;
/// `Upgrade` value of SPDY clients.
const SPDY_UPGRADE: &str = "SPDY/3.1";
/// Header in which SPDY clients offer, and the server names, the stream protocol.
pub(super) const STREAM_PROTOCOL_HEADER: &str = "X-Stream-Protocol-Version";

/// The upgrade a request asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum UpgradeKind {
    /// `Upgrade: websocket`.
    WebSocket,
    /// `Upgrade: SPDY/3.1`.
    Spdy,
}

/// The upgrade asked for, if any.
pub(super) fn requested(headers: &HeaderMap) -> Option<UpgradeKind> {
    let wants_upgrade = headers
        .get_all(header::CONNECTION)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .any(|t| t.trim().eq_ignore_ascii_case("upgrade"));
    let upgrade = headers.get(header::UPGRADE).and_then(|v| v.to_str().ok())?;
    match upgrade.trim() {
        u if wants_upgrade && u.eq_ignore_ascii_case("websocket") => Some(UpgradeKind::WebSocket),
        u if wants_upgrade && u.eq_ignore_ascii_case(SPDY_UPGRADE) => Some(UpgradeKind::Spdy),
        _ => None,
    }
}

/// kube-apiserver's answer to a streaming request that is not an upgrade.
pub(super) fn upgrade_required() -> ApiError {
    ApiError::bad_request("Upgrade request required")
}

/// The first protocol the client offers (in its order of preference) that `supported` holds. WebSocket
/// clients offer in `Sec-WebSocket-Protocol`, SPDY clients in `X-Stream-Protocol-Version`; either may repeat
/// the header or list values separated by commas.
pub(super) fn choose(headers: &HeaderMap, name: &str, supported: &[&'static str]) -> Option<&'static str> {
    headers
        .get_all(name)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .find_map(|offered| supported.iter().find(|s| **s == offered).copied())
}

/// The error for a client that offers none of `supported`.
pub(super) fn no_common_protocol(supported: &[&str]) -> ApiError {
    ApiError::bad_request(format!(
        "unable to upgrade: the client offers none of the supported protocols [{}]",
        supported.join(", ")
    ))
}

fn switching(headers: Vec<(header::HeaderName, String)>) -> Response<Body> {
    let mut r = Response::new(Empty::new().boxed_unsync());
    *r.status_mut() = StatusCode::SWITCHING_PROTOCOLS;
    for (name, value) in headers {
        if let Ok(v) = HeaderValue::from_str(&value) {
            r.headers_mut().append(name, v);
        }
    }
    r
}

/// The `101` accepting a WebSocket upgrade with subprotocol `protocol`.
pub(super) fn accept_websocket(request: &HeaderMap, protocol: &str) -> Result<Response<Body>, ApiError> {
    let key = request
        .get(header::SEC_WEBSOCKET_KEY)
        .ok_or_else(|| ApiError::bad_request("unable to upgrade: missing Sec-WebSocket-Key"))?;
    Ok(switching(vec![
        (header::UPGRADE, "websocket".into()),
        (header::CONNECTION, "Upgrade".into()),
        (header::SEC_WEBSOCKET_ACCEPT, derive_accept_key(key.as_bytes())),
        (header::SEC_WEBSOCKET_PROTOCOL, protocol.into()),
    ]))
}

/// The `101` accepting a SPDY/3.1 upgrade for stream protocol `protocol`.
pub(super) fn accept_spdy(protocol: &str) -> Response<Body> {
    switching(vec![
        (header::UPGRADE, SPDY_UPGRADE.into()),
        (header::CONNECTION, "Upgrade".into()),
        (
            header::HeaderName::from_static("x-stream-protocol-version"),
            protocol.into(),
        ),
    ])
}

/// The upgraded connection, once hyper has sent the `101`; `None` if the client went away.
pub(super) async fn connection(upgrade: OnUpgrade) -> Option<TokioIo<Upgraded>> {
    match upgrade.await {
        Ok(upgraded) => Some(TokioIo::new(upgraded)),
        Err(e) => {
            tracing::debug!(error = %e, "streaming upgrade failed");
            None
        }
    }
}

/// A close frame with status 1000 (normal closure): Go's WebSocket clients report a close without a status
/// (1005) as an error.
pub(super) fn normal_close() -> tokio_tungstenite::tungstenite::Message {
    use tokio_tungstenite::tungstenite::protocol::{CloseFrame, frame::coding::CloseCode};
    tokio_tungstenite::tungstenite::Message::Close(Some(CloseFrame {
        code: CloseCode::Normal,
        reason: "".into(),
    }))
}

/// A task sending the messages queued on the returned sender, then a normal close once every sender is
/// dropped; it stops early when the client is gone.
pub(super) fn spawn_writer(
    mut sink: futures::stream::SplitSink<WebSocket, tokio_tungstenite::tungstenite::Message>,
) -> (
    tokio::sync::mpsc::Sender<tokio_tungstenite::tungstenite::Message>,
    tokio::task::JoinHandle<()>,
) {
    use futures::SinkExt;
    let (tx, mut rx) = tokio::sync::mpsc::channel(WRITE_QUEUE);
    let writer = tokio::spawn(async move {
        while let Some(m) = rx.recv().await {
            if sink.send(m).await.is_err() {
                return;
            }
        }
        let _ = sink.send(normal_close()).await;
        let _ = sink.close().await;
    });
    (tx, writer)
}

/// The upgraded connection as the server end of a WebSocket.
pub(super) async fn websocket(upgrade: OnUpgrade) -> Option<WebSocket> {
    let io = connection(upgrade).await?;
    Some(WebSocketStream::from_raw_socket(io, Role::Server, None).await)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &'static str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.append(*k, HeaderValue::from_static(v));
        }
        h
    }

    #[test]
    fn upgrade_kinds_are_recognised() {
        let ws = headers(&[("connection", "keep-alive, Upgrade"), ("upgrade", "websocket")]);
        assert_eq!(requested(&ws), Some(UpgradeKind::WebSocket));
        let spdy = headers(&[("connection", "Upgrade"), ("upgrade", "SPDY/3.1")]);
        assert_eq!(requested(&spdy), Some(UpgradeKind::Spdy));
        assert_eq!(requested(&headers(&[("upgrade", "websocket")])), None);
    }

    #[test]
    fn the_clients_first_supported_protocol_wins() {
        let h = headers(&[
            ("sec-websocket-protocol", "v5.channel.k8s.io, v4.channel.k8s.io"),
            ("sec-websocket-protocol", "channel.k8s.io"),
        ]);
        let name = "sec-websocket-protocol";
        assert_eq!(
            choose(&h, name, &["v4.channel.k8s.io", "v5.channel.k8s.io"]),
            Some("v5.channel.k8s.io")
        );
        assert_eq!(choose(&h, name, &["v4.channel.k8s.io"]), Some("v4.channel.k8s.io"));
        assert_eq!(choose(&h, name, &["base64.channel.k8s.io"]), None);
    }

    #[test]
    fn websocket_accept_key_follows_rfc_6455() {
        let h = headers(&[("sec-websocket-key", "dGhlIHNhbXBsZSBub25jZQ==")]);
        let r = accept_websocket(&h, "v5.channel.k8s.io").unwrap();
        assert_eq!(r.status(), StatusCode::SWITCHING_PROTOCOLS);
        assert_eq!(r.headers()["sec-websocket-accept"], "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
        assert!(accept_websocket(&HeaderMap::new(), "x").is_err());
    }
}
