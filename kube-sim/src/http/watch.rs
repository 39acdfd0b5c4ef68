//! Watch streaming over HTTP: newline-delimited events, bookmarks, timeouts, in-stream errors.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::{BufMut, Bytes, BytesMut};
use futures::StreamExt;
use http::{HeaderValue, Response, header};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use serde_json::json;
use tokio::time::Instant;

use super::table::TableWriter;
use super::{Body, HttpState, Query};
use crate::error::ApiError;
use crate::kinds::ResourceInfo;
use crate::select::LabelSelector;
use crate::store::{WatchEvent, WatchOptions, WatchReceiver};

/// Watch timeout when the client sends none (upstream picks 30–60 min; kube always sends one).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);
/// Buffered lines between the watch task and the connection.
const LINE_BUFFER: usize = 256;
/// A line of the watch response and when the watch task produced it (for the `watch-lag` fault).
type Line = (Instant, Bytes);

/// Annotation marking the end of a streaming list's initial events.
const INITIAL_EVENTS_END: &str = "k8s.io/initial-events-end";

struct Encoder {
    kind: String,
    api_version: String,
    meta_only: bool,
    /// Table output (`kubectl get -w`): each object becomes a one-row Table.
    table: Option<TableWriter>,
    /// Length-prefixed protobuf frames instead of JSON lines.
    protobuf: bool,
}

impl Encoder {
    fn event(&self, ev: &WatchEvent) -> Bytes {
        if self.protobuf {
            return self.protobuf_event(ev);
        }
        let mut out = BytesMut::new();
        out.put_slice(b"{\"type\":\"");
        out.put_slice(ev.type_name().as_bytes());
        out.put_slice(b"\",\"object\":");
        match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                if let Some(t) = &self.table {
                    out.put_slice(&serde_json::to_vec(&t.watch_object(o)).unwrap_or_default());
                } else if self.meta_only {
                    out.put_slice(&serde_json::to_vec(&o.partial_metadata()).unwrap_or_default());
                } else {
                    out.put_slice(&o.json);
                }
            }
            WatchEvent::InitialEventsEnd(rv) => out.put_slice(&self.bookmark(*rv, true)),
            WatchEvent::Error(e) => out.put_slice(&serde_json::to_vec(&e.to_status()).unwrap_or_default()),
        }
        out.put_slice(b"}\n");
        out.freeze()
    }

    fn bookmark(&self, rv: u64, initial_end: bool) -> Vec<u8> {
        let mut meta = json!({"resourceVersion": rv.to_string()});
        if initial_end {
            meta["annotations"] = json!({INITIAL_EVENTS_END: "true"});
        }
        serde_json::to_vec(&json!({"kind": self.kind, "apiVersion": self.api_version, "metadata": meta}))
            .unwrap_or_default()
    }

    /// One protobuf frame; an object without a protobuf form (never for a built-in kind) ends as an empty
    /// frame rather than a panic.
    fn protobuf_event(&self, ev: &WatchEvent) -> Bytes {
        let (event_type, object) = match ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => (
                ev.type_name(),
                if self.meta_only {
                    o.partial_metadata()
                } else {
                    o.value()
                },
            ),
            WatchEvent::InitialEventsEnd(rv) => (
                "BOOKMARK",
                serde_json::from_slice(&self.bookmark(*rv, true)).unwrap_or_default(),
            ),
            WatchEvent::Error(e) => ("ERROR", e.to_status()),
        };
        super::protobuf::encode_watch_event(event_type, &object).unwrap_or_else(|e| {
            tracing::warn!(error = %e, "watch event without a protobuf form");
            Bytes::new()
        })
    }

    fn bookmark_line(&self, rv: u64) -> Bytes {
        if self.protobuf {
            let object = serde_json::from_slice(&self.bookmark(rv, false)).unwrap_or_default();
            return super::protobuf::encode_watch_event("BOOKMARK", &object).unwrap_or_default();
        }
        let mut out = BytesMut::new();
        out.put_slice(b"{\"type\":\"BOOKMARK\",\"object\":");
        out.put_slice(&self.bookmark(rv, false));
        out.put_slice(b"}\n");
        out.freeze()
    }
}

/// Starts a watch and returns the streaming response (headers are sent at once).
pub(super) fn serve(
    state: Arc<HttpState>,
    info: Arc<ResourceInfo>,
    namespace: Option<String>,
    q: &Query,
    meta_only: bool,
    table: Option<TableWriter>,
    protobuf: bool,
) -> Result<Response<Body>, ApiError> {
    let send_initial = q.flag("sendInitialEvents");
    let bookmarks = q.flag("allowWatchBookmarks");
    if send_initial && (!bookmarks || q.get("resourceVersionMatch") != Some("NotOlderThan")) {
        return Err(ApiError::new(
            422,
            "Invalid",
            "sendInitialEvents requires allowWatchBookmarks=true and resourceVersionMatch=NotOlderThan",
        ));
    }
    let rv = match q.get("resourceVersion").filter(|s| !s.is_empty()) {
        Some(s) => Some(
            s.parse::<u64>()
                .map_err(|_| ApiError::bad_request(format!("invalid resource version: {s}")))?,
        ),
        None => None,
    };
    let opts = WatchOptions {
        resource_version: rv,
        send_initial_events: send_initial,
        label_selector: LabelSelector::parse(q.get("labelSelector").unwrap_or_default())?,
        field_selector: q.get("fieldSelector").map(str::to_string),
    };
    let forced_expiry = state.faults.lock().take_expire_next_watch();
    let receiver = if forced_expiry {
        None
    } else {
        Some(state.store.watch(&info.gvr, namespace.as_deref(), opts)?)
    };
    let requested = q
        .get("timeoutSeconds")
        .and_then(|t| t.parse::<u64>().ok())
        .map(Duration::from_secs)
        .unwrap_or(DEFAULT_WATCH_TIMEOUT);
    let timeout = requested.min(*state.max_watch_timeout.lock());
    let interval = *state.bookmark_interval.lock();
    let encoder = Encoder {
        kind: if meta_only {
            "PartialObjectMetadata".into()
        } else {
            info.kind.clone()
        },
        api_version: if meta_only {
            "meta.k8s.io/v1".into()
        } else {
            info.gvr.api_version()
        },
        meta_only,
        table,
        protobuf,
    };
    let lag = state.faults.lock().config().watch_lag_of(&info.gvr.resource);
    let (tx, rx) = tokio::sync::mpsc::channel::<Line>(LINE_BUFFER);
    let task_state = state.clone();
    tokio::spawn(async move {
        task_state.counters.open_watches.fetch_add(1, Ordering::Relaxed);
        match receiver {
            Some(r) => pump(&task_state, r, tx, encoder, timeout, bookmarks.then_some(interval)).await,
            None => {
                let rv = task_state.store.current_rv();
                task_state.counters.expired_watches.fetch_add(1, Ordering::Relaxed);
                let e = ApiError::expired(format!("too old resource version: {rv} ({rv})"));
                let _ = tx.send((Instant::now(), encoder.event(&WatchEvent::Error(e)))).await;
            }
        }
        task_state.counters.open_watches.fetch_sub(1, Ordering::Relaxed);
    });
    let stream = futures::stream::unfold(rx, move |mut rx| async move {
        let (written_at, line) = rx.recv().await?;
        if let Some(lag) = lag {
            // Held back from when the event was taken from the store, not from when this stage gets to it:
            // a lagging watch delivers late, it does not slow down (up to `LINE_BUFFER` events per lag
            // period; beyond that the pump waits for room, and the lag grows).
            tokio::time::sleep_until(written_at + lag).await;
        }
        Some((Ok::<_, std::convert::Infallible>(Frame::data(line)), rx))
    });
    let mut resp = Response::new(BodyExt::boxed_unsync(StreamBody::new(stream.boxed())));
    let content_type = if protobuf {
        super::protobuf::PROTOBUF_WATCH
    } else {
        super::JSON
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    Ok(resp)
}

async fn pump(
    state: &HttpState,
    mut receiver: WatchReceiver,
    tx: tokio::sync::mpsc::Sender<Line>,
    encoder: Encoder,
    timeout: Duration,
    bookmark_every: Option<Duration>,
) {
    let deadline = Instant::now() + timeout;
    let mut next_bookmark = bookmark_every.map(|d| Instant::now() + d);
    let mut sever = state.sever.subscribe();
    sever.borrow_and_update();
    loop {
        let bookmark_at = next_bookmark.unwrap_or(deadline + Duration::from_secs(3600));
        tokio::select! {
            ev = receiver.next() => {
                let Some(ev) = ev else { break };
                if let WatchEvent::Error(e) = &ev
                    && e.code == 410 {
                        state.counters.expired_watches.fetch_add(1, Ordering::Relaxed);
                    }
                state.counters.watch_events.fetch_add(1, Ordering::Relaxed);
                let is_error = matches!(ev, WatchEvent::Error(_));
                if tx.send((Instant::now(), encoder.event(&ev))).await.is_err() || is_error {
                    return;
                }
            }
            _ = tokio::time::sleep_until(bookmark_at) => {
                if tx.send((Instant::now(), encoder.bookmark_line(receiver.bookmark_rv()))).await.is_err() {
                    return;
                }
                next_bookmark = bookmark_every.map(|d| Instant::now() + d);
            }
            _ = tokio::time::sleep_until(deadline) => {
                if bookmark_every.is_some() {
                    let _ = tx.send((Instant::now(), encoder.bookmark_line(receiver.bookmark_rv()))).await;
                }
                return;
            }
            changed = sever.changed() => {
                if changed.is_ok() && sever.borrow().1 {
                    let rv = receiver.bookmark_rv();
                    let e = ApiError::expired(format!("too old resource version: {rv} ({rv})"));
                    state.counters.expired_watches.fetch_add(1, Ordering::Relaxed);
                    let _ = tx.send((Instant::now(), encoder.event(&WatchEvent::Error(e)))).await;
                }
                return;
            }
            _ = tx.closed() => return,
        }
    }
}
