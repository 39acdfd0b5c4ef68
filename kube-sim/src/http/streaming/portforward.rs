//! `pods/{name}/portforward`: upgrades to one of three transports and forwards to the pod's ports.
//!
//! - WebSocket `v4.channel.k8s.io` (kube-rs and other WebSocket clients): the `ports` query lists the ports;
//!   port `i` uses data channel `2i` and error channel `2i+1`, each opened by a message carrying the port as
//!   two little-endian bytes.
//! - WebSocket `SPDY/3.1+portforward.k8s.io` (kubectl's default): a SPDY session tunnelled in binary messages.
//! - `Upgrade: SPDY/3.1` with stream protocol `portforward.k8s.io` (kubectl's fallback).

use std::sync::Arc;

use bytes::Bytes;
use futures::{SinkExt, StreamExt};
use http::{Response, header};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio_tungstenite::tungstenite::Message;

use super::channel;
use super::spdy::{self, PORT_FORWARD_PROTOCOL};
use super::target::PodPorts;
use super::upgrade::{self, UpgradeKind, WebSocket};
use super::{StreamRequest, query_values, require_host};
use crate::error::ApiError;
use crate::http::Body;

/// The WebSocket subprotocol of SPDY tunnelled in WebSocket messages.
const SPDY_TUNNEL: &str = "SPDY/3.1+portforward.k8s.io";
/// WebSocket subprotocols served.
const WEBSOCKET_PROTOCOLS: &[&str] = &[SPDY_TUNNEL, channel::V4];
/// Read size from pod connections.
const CHUNK: usize = 32 * 1024;
/// Buffer of the pipe between a WebSocket and the SPDY session it carries.
const TUNNEL_BUFFER: usize = 256 * 1024;

/// The `ports` query: repeated and/or comma-separated port numbers.
fn parse_ports(query: &str) -> Result<Vec<u16>, ApiError> {
    query_values(query, "ports")
        .iter()
        .flat_map(|v| v.split(','))
        .map(str::trim)
        .filter(|p| !p.is_empty())
        .map(|p| match p.parse::<u16>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(ApiError::bad_request(format!(
                "ports: invalid port {p:?}: must be a number between 1 and 65535"
            ))),
        })
        .collect()
}

/// Validates and upgrades; the session runs on its own task.
pub(super) fn serve(request: StreamRequest) -> Result<Response<Body>, ApiError> {
    let pod = request.pod.clone();
    require_host(&pod)?;
    let value = pod.value();
    let phase = value["status"]["phase"].as_str().unwrap_or("Pending");
    if phase != "Running" {
        return Err(ApiError::bad_request(format!(
            "unable to forward port because pod is not running. Current status={phase}"
        )));
    }
    let ports = parse_ports(&request.query)?;
    let pod_ports = Arc::new(PodPorts {
        state: request.state.clone(),
        pod: pod.clone(),
    });
    let span = tracing::debug_span!("portforward", pod = %pod.name());
    let upgrade_on = request.upgrade;
    let (response, session): (_, futures::future::BoxFuture<'static, ()>) = match upgrade::requested(&request.headers) {
        Some(UpgradeKind::WebSocket) => {
            let protocol = upgrade::choose(
                &request.headers,
                header::SEC_WEBSOCKET_PROTOCOL.as_str(),
                WEBSOCKET_PROTOCOLS,
            )
            .ok_or_else(|| upgrade::no_common_protocol(WEBSOCKET_PROTOCOLS))?;
            if protocol == channel::V4 && ports.is_empty() {
                return Err(ApiError::bad_request("query parameter \"port\" is required"));
            }
            let response = upgrade::accept_websocket(&request.headers, protocol)?;
            let on = upgrade_on.ok_or_else(upgrade::upgrade_required)?;
            let session = Box::pin(async move {
                let Some(ws) = upgrade::websocket(on).await else { return };
                if protocol == SPDY_TUNNEL {
                    tunnel_spdy(ws, pod_ports).await;
                } else {
                    channels(ws, pod_ports, ports).await;
                }
            });
            (response, session)
        }
        Some(UpgradeKind::Spdy) => {
            let supported = [PORT_FORWARD_PROTOCOL];
            let protocol = upgrade::choose(&request.headers, upgrade::STREAM_PROTOCOL_HEADER, &supported)
                .ok_or_else(|| upgrade::no_common_protocol(&supported))?;
            let on = upgrade_on.ok_or_else(upgrade::upgrade_required)?;
            let session = Box::pin(async move {
                if let Some(io) = upgrade::connection(on).await {
                    spdy::serve(io, pod_ports).await;
                }
            });
            (upgrade::accept_spdy(protocol), session)
        }
        None => return Err(upgrade::upgrade_required()),
    };
    tokio::spawn(tracing::Instrument::instrument(session, span));
    Ok(response)
}

/// Runs a SPDY session carried in the binary messages of `ws`.
async fn tunnel_spdy(ws: WebSocket, ports: Arc<PodPorts>) {
    let (session_end, tunnel_end) = tokio::io::duplex(TUNNEL_BUFFER);
    let (mut sink, mut source) = ws.split();
    let (mut from_session, mut to_session) = tokio::io::split(tunnel_end);
    let inbound = async move {
        while let Some(Ok(message)) = source.next().await {
            match message {
                Message::Binary(data) if to_session.write_all(&data).await.is_err() => break,
                Message::Close(_) => break,
                _ => {}
            }
        }
        let _ = to_session.shutdown().await;
    };
    let outbound = async move {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from_session.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if sink
                        .send(Message::Binary(Bytes::copy_from_slice(&buf[..n])))
                        .await
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
        let _ = sink.send(upgrade::normal_close()).await;
        let _ = sink.close().await;
    };
    tokio::join!(inbound, outbound, spdy::serve(session_end, ports));
}

/// The initial message of a port's data or error channel: the port, little-endian.
fn port_announcement(channel: u8, port: u16) -> Message {
    channel::message(channel, &port.to_le_bytes())
}

/// Channel port-forwarding (`v4.channel.k8s.io`): one pod connection per requested port, for the life of
/// the WebSocket.
async fn channels(ws: WebSocket, ports: Arc<PodPorts>, numbers: Vec<u16>) {
    let (sink, mut source) = ws.split();
    let (tx, writer) = upgrade::spawn_writer(sink);
    let mut to_pod = Vec::with_capacity(numbers.len());
    let mut readers = tokio::task::JoinSet::new();
    for (i, port) in numbers.iter().copied().enumerate() {
        let (data, error) = channel_ids(i);
        let _ = tx.send(port_announcement(data, port)).await;
        let _ = tx.send(port_announcement(error, port)).await;
        match ports.open(port).await {
            Ok(connection) => {
                let (mut from_pod, write_half) = tokio::io::split(connection);
                to_pod.push(Some(write_half));
                let tx = tx.clone();
                readers.spawn(async move {
                    let mut buf = vec![0u8; CHUNK];
                    loop {
                        match from_pod.read(&mut buf).await {
                            Ok(0) | Err(_) => return,
                            Ok(n) => {
                                if tx.send(channel::message(data, &buf[..n])).await.is_err() {
                                    return;
                                }
                            }
                        }
                    }
                });
            }
            Err(message) => {
                to_pod.push(None);
                let _ = tx.send(channel::message(error, message.as_bytes())).await;
            }
        }
    }
    let from_client = async {
        while let Some(Ok(message)) = source.next().await {
            let data = match message {
                Message::Binary(data) => data,
                Message::Close(_) => break,
                _ => continue,
            };
            let Some((&ch, payload)) = data.split_first() else {
                continue;
            };
            // Client data arrives on even (data) channels only.
            let index = usize::from(ch / 2);
            if ch % 2 == 0
                && !payload.is_empty()
                && let Some(slot) = to_pod.get_mut(index)
                && let Some(w) = slot.as_mut()
                && w.write_all(payload).await.is_err()
            {
                *slot = None;
            }
        }
    };
    // As the kubelet does, the session ends when the client leaves or every pod connection has closed (the
    // client learns of the latter from the WebSocket's close).
    let pods_closed = async { while readers.join_next().await.is_some() {} };
    tokio::select! {
        () = from_client => {}
        () = pods_closed => {}
    }
    readers.abort_all();
    for w in to_pod.iter_mut().flatten() {
        let _ = w.shutdown().await;
    }
    drop(tx);
    let _ = writer.await;
}

/// The data and error channel of the `index`-th port. Channel ids are one byte, so at most 128 ports.
fn channel_ids(index: usize) -> (u8, u8) {
    let data = u8::try_from(index * 2).unwrap_or(u8::MAX - 1);
    (data, data.saturating_add(1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ports_may_repeat_and_be_comma_separated() {
        assert_eq!(parse_ports("ports=80%2C1234&ports=8265").unwrap(), [80, 1234, 8265]);
        assert_eq!(parse_ports("").unwrap(), Vec::<u16>::new());
        let err = parse_ports("ports=0").unwrap_err();
        assert!(err.message.contains("invalid port \"0\""));
        assert!(parse_ports("ports=http").is_err());
    }

    #[test]
    fn each_port_has_a_data_and_an_error_channel() {
        assert_eq!(channel_ids(0), (0, 1));
        assert_eq!(channel_ids(3), (6, 7));
        assert_eq!(port_announcement(2, 8265).into_data().as_ref(), &[2, 0x49, 0x20]);
    }
}
