//! Port-forwarding over SPDY/3.1, as kubectl speaks it (over a plain `Upgrade: SPDY/3.1` connection or
//! tunnelled in a WebSocket): for each local connection the client opens an `error` stream and a `data`
//! stream with the same `requestID` and `port` headers; the server connects to the pod port, relays the data
//! stream and writes any failure on the error stream before closing both.

mod dictionary;
mod frame;
mod headers;

use std::collections::HashMap;
use std::sync::Arc;

use bytes::Bytes;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::sync::mpsc;
use tokio::task::JoinSet;

use super::target::PodPorts;
use frame::{FLAG_FIN, Frame};
use headers::HeaderCodec;

/// The stream protocol negotiated for port-forwarding.
pub(super) const PORT_FORWARD_PROTOCOL: &str = "portforward.k8s.io";
/// Offset of the header block in a `SYN_STREAM` payload (stream id, associated id, priority, slot).
const SYN_STREAM_HEADERS: usize = 10;
/// Read size from pod connections.
const CHUNK: usize = 32 * 1024;
/// Frames queued towards the client before senders wait.
const OUTBOUND_QUEUE: usize = 64;
/// Chunks queued towards one pod connection before the session waits.
const INBOUND_QUEUE: usize = 16;

/// The half-known pair of streams of one forwarded connection.
#[derive(Default)]
struct Pair {
    port: Option<u16>,
    data: Option<(u32, mpsc::Receiver<Bytes>)>,
    error: Option<u32>,
}

/// Serves one SPDY port-forward session on `io` until the client closes it.
pub(super) async fn serve<IO>(io: IO, ports: Arc<PodPorts>)
where
    IO: AsyncRead + AsyncWrite + Send + 'static,
{
    let (mut reader, mut writer) = tokio::io::split(io);
    let (tx, mut rx) = mpsc::channel::<Bytes>(OUTBOUND_QUEUE);
    let write_task = tokio::spawn(async move {
        while let Some(frame) = rx.recv().await {
            if writer.write_all(&frame).await.is_err() {
                return;
            }
        }
        let _ = writer.shutdown().await;
    });
    let mut session = Session {
        codec: match HeaderCodec::new() {
            Ok(c) => c,
            Err(e) => {
                tracing::warn!(error = %e, "SPDY header codec");
                return;
            }
        },
        pairs: HashMap::new(),
        inbound: HashMap::new(),
        forwards: JoinSet::new(),
        tx,
        ports,
    };
    loop {
        match frame::read(&mut reader).await {
            Ok(Some(frame)) => {
                if let Err(e) = session.handle(frame).await {
                    tracing::debug!(error = %e, "SPDY session ends");
                    break;
                }
            }
            Ok(None) => break,
            Err(e) => {
                tracing::debug!(error = %e, "SPDY read");
                break;
            }
        }
    }
    session.forwards.abort_all();
    drop(session);
    let _ = write_task.await;
}

/// The state of one SPDY connection.
struct Session {
    codec: HeaderCodec,
    /// Streams seen, by `requestID`, until both of a pair are there.
    pairs: HashMap<String, Pair>,
    /// Senders of client data into pod connections, by data stream id.
    inbound: HashMap<u32, mpsc::Sender<Bytes>>,
    forwards: JoinSet<()>,
    tx: mpsc::Sender<Bytes>,
    ports: Arc<PodPorts>,
}

/// Why a session stops.
#[derive(Debug, thiserror::Error)]
enum SessionEnd {
    #[error(transparent)]
    Headers(#[from] headers::HeaderError),
    #[error("malformed SPDY control frame")]
    Malformed,
    #[error("client sent GOAWAY")]
    GoAway,
    #[error("client connection closed")]
    Closed,
}

impl Session {
    async fn send(&self, frame: Bytes) -> Result<(), SessionEnd> {
        self.tx.send(frame).await.map_err(|_| SessionEnd::Closed)
    }

    async fn handle(&mut self, frame: Frame) -> Result<(), SessionEnd> {
        match frame {
            Frame::Control {
                kind: frame::SYN_STREAM,
                payload,
                ..
            } => self.open_stream(&payload).await,
            Frame::Data { stream, flags, payload } => {
                if let Some(sender) = self.inbound.get(&stream)
                    && !payload.is_empty()
                    && sender.send(payload).await.is_err()
                {
                    self.inbound.remove(&stream);
                }
                if flags & FLAG_FIN != 0 {
                    // Dropping the sender half-closes the pod connection.
                    self.inbound.remove(&stream);
                }
                Ok(())
            }
            Frame::Control {
                kind: frame::RST_STREAM,
                payload,
                ..
            } => {
                if let Some(id) = frame::stream_id(&payload) {
                    self.inbound.remove(&id);
                }
                Ok(())
            }
            Frame::Control {
                kind: frame::PING,
                payload,
                ..
            } => self.send(frame::control(frame::PING, 0, &payload)).await,
            Frame::Control {
                kind: frame::GOAWAY, ..
            } => Err(SessionEnd::GoAway),
            // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do for port-forwarding.
            Frame::Control { .. } => Ok(()),
        }
    }

    async fn open_stream(&mut self, payload: &[u8]) -> Result<(), SessionEnd> {
        let id = frame::stream_id(payload).ok_or(SessionEnd::Malformed)?;
        let block = payload.get(SYN_STREAM_HEADERS..).ok_or(SessionEnd::Malformed)?;
        let headers = self.codec.decode(block)?;
        let reply = self.codec.encode(&[])?;
        self.send(frame::syn_reply(id, &reply)).await?;
        let request_id = headers::get(&headers, "requestID").unwrap_or_default().to_string();
        let port = headers::get(&headers, "port").and_then(|p| p.parse::<u16>().ok());
        let pair = self.pairs.entry(request_id.clone()).or_default();
        pair.port = pair.port.or(port);
        match headers::get(&headers, "streamType") {
            Some("data") => {
                let (sender, receiver) = mpsc::channel(INBOUND_QUEUE);
                self.inbound.insert(id, sender);
                pair.data = Some((id, receiver));
            }
            Some("error") => pair.error = Some(id),
            other => {
                tracing::debug!(stream_type = ?other, "unknown SPDY stream type");
                return self.send(frame::rst_stream(id, frame::STATUS_CANCEL)).await;
            }
        }
        if pair.data.is_some()
            && pair.error.is_some()
            && let Some(Pair {
                port,
                data: Some((data, from_client)),
                error: Some(error),
            }) = self.pairs.remove(&request_id)
        {
            let streams = Streams {
                data,
                error,
                tx: self.tx.clone(),
            };
            self.forwards
                .spawn(forward(self.ports.clone(), port, streams, from_client));
        }
        Ok(())
    }
}

/// The two streams of one forwarded connection and the way to the client.
struct Streams {
    data: u32,
    error: u32,
    tx: mpsc::Sender<Bytes>,
}

impl Streams {
    /// Ends both streams, after writing `error` (if any) on the error stream.
    async fn finish(&self, error: Option<&str>) {
        if let Some(message) = error {
            let _ = self.tx.send(frame::data(self.error, 0, message.as_bytes())).await;
        }
        let _ = self.tx.send(frame::data(self.data, FLAG_FIN, &[])).await;
        let _ = self.tx.send(frame::data(self.error, FLAG_FIN, &[])).await;
    }
}

/// Relays one forwarded connection between its data stream and the pod port.
async fn forward(ports: Arc<PodPorts>, port: Option<u16>, streams: Streams, mut from_client: mpsc::Receiver<Bytes>) {
    let Some(port) = port else {
        streams.finish(Some("invalid or missing port header")).await;
        return;
    };
    let connection = match ports.open(port).await {
        Ok(c) => c,
        Err(message) => {
            streams.finish(Some(&message)).await;
            return;
        }
    };
    let (mut from_pod, mut to_pod) = tokio::io::split(connection);
    let upstream = async {
        while let Some(chunk) = from_client.recv().await {
            if to_pod.write_all(&chunk).await.is_err() {
                break;
            }
        }
        let _ = to_pod.shutdown().await;
    };
    let downstream = async {
        let mut buf = vec![0u8; CHUNK];
        loop {
            match from_pod.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if streams.tx.send(frame::data(streams.data, 0, &buf[..n])).await.is_err() {
                        return;
                    }
                }
            }
        }
        streams.finish(None).await;
    };
    tokio::join!(upstream, downstream);
}
