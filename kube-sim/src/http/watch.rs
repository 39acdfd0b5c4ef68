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
use super::{Body, Counters, HttpState, Query};
use crate::error::ApiError;
use crate::kinds::ResourceInfo;
use crate::select::LabelSelector;
use crate::store::{WatchEvent, WatchOptions, WatchReceiver};

/// Watch timeout when the client sends none (upstream picks 30–60 min; kube always sends one).
const DEFAULT_WATCH_TIMEOUT: Duration = Duration::from_secs(1800);
/// Buffered writes between the watch task and the connection when each write is one event (the `watch-lag`
/// fault).
const LINE_BUFFER: usize = 256;
/// Buffered writes between the watch task and the connection when writes batch the ready events: a stalled
/// client then holds about a MiB of them (16 writes of up to [`MAX_BATCH_BYTES`]), not 256 full batches.
const BATCHED_LINE_BUFFER: usize = 16;
/// Bytes of ready events after which a write stops taking more (the event that crosses it is included): a
/// burst of commits (an agent pass, a controller's creates) then costs the connection one write, not one per
/// event.
const MAX_BATCH_BYTES: usize = 64 * 1024;
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
        let mut out = BytesMut::new();
        self.put_event(ev, &mut out);
        out.freeze()
    }

    /// Appends the wire form of `ev` (a JSON line or a protobuf frame) to `out`.
    fn put_event(&self, ev: &WatchEvent, out: &mut BytesMut) {
        if self.protobuf {
            out.put_slice(&self.protobuf_event(ev));
            return;
        }
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
    // A lagging watch holds back events one by one, as the fault describes.
    let (batch_bytes, buffer) = if lag.is_some() {
        (0, LINE_BUFFER)
    } else {
        (MAX_BATCH_BYTES, BATCHED_LINE_BUFFER)
    };
    let (tx, rx) = tokio::sync::mpsc::channel::<Line>(buffer);
    let task_state = state.clone();
    tokio::spawn(async move {
        task_state.counters.open_watches.fetch_add(1, Ordering::Relaxed);
        match receiver {
            Some(r) => {
                let pacing = Pacing {
                    timeout,
                    bookmark_every: bookmarks.then_some(interval),
                    batch_bytes,
                };
                pump(&task_state, r, tx, encoder, pacing).await;
            }
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

/// When a watch ends, sends bookmarks, and how many ready events it writes at once.
struct Pacing {
    timeout: Duration,
    bookmark_every: Option<Duration>,
    /// Events ready at once are sent in one write up to this many bytes (0: each event on its own).
    batch_bytes: usize,
}

/// Encodes `first` and the events ready right after it, up to `limit` bytes (at least `first`; an error
/// event ends the batch and the watch). Returns the write and whether the watch ends after it.
fn take_ready(
    counters: &Counters,
    receiver: &mut WatchReceiver,
    encoder: &Encoder,
    first: WatchEvent,
    limit: usize,
) -> (Bytes, bool) {
    let mut out = BytesMut::new();
    let mut next = Some(first);
    while let Some(ev) = next.take() {
        counters.watch_events.fetch_add(1, Ordering::Relaxed);
        let is_error = match &ev {
            WatchEvent::Error(e) => {
                if e.code == 410 {
                    counters.expired_watches.fetch_add(1, Ordering::Relaxed);
                }
                true
            }
            _ => false,
        };
        encoder.put_event(&ev, &mut out);
        if is_error {
            return (out.freeze(), true);
        }
        if out.len() < limit {
            next = receiver.try_next();
        }
    }
    (out.freeze(), false)
}

async fn pump(
    state: &HttpState,
    mut receiver: WatchReceiver,
    tx: tokio::sync::mpsc::Sender<Line>,
    encoder: Encoder,
    pacing: Pacing,
) {
    let deadline = Instant::now() + pacing.timeout;
    let no_bookmark = deadline + Duration::from_secs(3600);
    // One timer each for the whole watch, reset when it fires, rather than two new ones per event.
    let deadline_timer = tokio::time::sleep_until(deadline);
    tokio::pin!(deadline_timer);
    let bookmark_timer = tokio::time::sleep_until(pacing.bookmark_every.map_or(no_bookmark, |d| Instant::now() + d));
    tokio::pin!(bookmark_timer);
    let mut sever = state.sever.subscribe();
    sever.borrow_and_update();
    loop {
        tokio::select! {
            ev = receiver.next() => {
                let Some(ev) = ev else { break };
                let (write, ends) = take_ready(&state.counters, &mut receiver, &encoder, ev, pacing.batch_bytes);
                if tx.send((Instant::now(), write)).await.is_err() || ends {
                    return;
                }
            }
            _ = &mut bookmark_timer => {
                if tx.send((Instant::now(), encoder.bookmark_line(receiver.bookmark_rv()))).await.is_err() {
                    return;
                }
                bookmark_timer
                    .as_mut()
                    .reset(pacing.bookmark_every.map_or(no_bookmark, |d| Instant::now() + d));
            }
            _ = &mut deadline_timer => {
                if pacing.bookmark_every.is_some() {
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

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::kinds::Gvr;
    use crate::store::{Store, StoreConfig};

    fn json_encoder() -> Encoder {
        Encoder {
            kind: "ConfigMap".into(),
            api_version: "v1".into(),
            meta_only: false,
            table: None,
            protobuf: false,
        }
    }

    fn create_configmap(store: &Store, name: &str) {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}});
        store.create(&Gvr::core("configmaps"), Some("default"), cm).unwrap();
    }

    fn live_watch(store: &Store) -> WatchReceiver {
        let opts = WatchOptions {
            resource_version: Some(store.current_rv()),
            ..WatchOptions::default()
        };
        store.watch(&Gvr::core("configmaps"), Some("default"), opts).unwrap()
    }

    /// The names in a write's JSON lines, in order.
    fn names(write: &[u8]) -> Vec<String> {
        write
            .split(|b| *b == b'\n')
            .filter(|line| !line.is_empty())
            .map(|line| {
                let ev: serde_json::Value = serde_json::from_slice(line).unwrap();
                assert_eq!(ev["type"], "ADDED");
                ev["object"]["metadata"]["name"].as_str().unwrap().to_string()
            })
            .collect()
    }

    #[tokio::test]
    async fn events_ready_at_once_go_out_in_one_write_in_order() {
        let store = Store::new(StoreConfig::default());
        let mut watch = live_watch(&store);
        for name in ["a", "b", "c"] {
            create_configmap(&store, name);
        }
        let counters = Counters::default();
        let first = watch.next().await.unwrap();
        let (write, ends) = take_ready(&counters, &mut watch, &json_encoder(), first, MAX_BATCH_BYTES);
        assert_eq!(names(&write), ["a", "b", "c"]);
        assert!(!ends);
        assert_eq!(counters.watch_events.load(Ordering::Relaxed), 3);
        // Nothing was left behind: the next commit is the next write's only event.
        create_configmap(&store, "d");
        let first = watch.next().await.unwrap();
        let (write, _) = take_ready(&counters, &mut watch, &json_encoder(), first, MAX_BATCH_BYTES);
        assert_eq!(names(&write), ["d"]);
    }

    #[tokio::test]
    async fn without_a_batch_budget_each_event_is_its_own_write() {
        let store = Store::new(StoreConfig::default());
        let mut watch = live_watch(&store);
        create_configmap(&store, "a");
        create_configmap(&store, "b");
        let counters = Counters::default();
        for expected in ["a", "b"] {
            let first = watch.next().await.unwrap();
            let (write, _) = take_ready(&counters, &mut watch, &json_encoder(), first, 0);
            assert_eq!(names(&write), [expected]);
        }
    }

    #[tokio::test]
    async fn a_watch_that_fell_behind_ends_after_what_it_had_received() {
        let store = Store::new(StoreConfig {
            channel_capacity: 16,
            ..StoreConfig::default()
        });
        let mut watch = live_watch(&store);
        create_configmap(&store, "cm-0");
        let counters = Counters::default();
        let first = watch.next().await.unwrap();
        // More commits than the store's broadcast buffer holds arrive while a write is being assembled: this
        // watcher lags and is disconnected, after the events it had.
        for i in 1..100 {
            create_configmap(&store, &format!("cm-{i}"));
        }
        let (write, ends) = take_ready(&counters, &mut watch, &json_encoder(), first, MAX_BATCH_BYTES);
        assert_eq!(names(&write), ["cm-0"]);
        assert!(!ends);
        assert!(
            watch.next().await.is_none(),
            "a lagging watch must end, not skip events silently"
        );
    }
}
