//! Watches on the store: starting points, history replay, selector transitions, lag handling.

use std::collections::VecDeque;
use std::sync::Arc;

use tokio::sync::broadcast;

use super::{EventType, Store, StoreEvent, StoredObject, kind_key};
use crate::error::ApiError;
use crate::kinds::{Gvr, ResourceInfo};
use crate::select::{FieldSelector, LabelSelector};

/// Where a watch starts and what it filters.
#[derive(Debug, Clone, Default)]
pub struct WatchOptions {
    /// `None` or `Some(0)`: synthetic ADDED for the current state, then live events. `Some(n)`: replay events
    /// after `n`, then live events (410 when `n` is older than the history window).
    pub resource_version: Option<u64>,
    /// Streaming list: ADDED for the current state, then a bookmark marking the end of initial events.
    pub send_initial_events: bool,
    /// Label selector.
    pub label_selector: LabelSelector,
    /// Field selector string (parsed against the resource's kind).
    pub field_selector: Option<String>,
}

/// One event delivered to a watcher.
#[derive(Debug, Clone)]
pub enum WatchEvent {
    /// The object started to exist or to match.
    Added(Arc<StoredObject>),
    /// The object changed and still matches.
    Modified(Arc<StoredObject>),
    /// The object was deleted or stopped matching (last state, stamped with the event's RV).
    Deleted(Arc<StoredObject>),
    /// End of the initial events of a streaming list, at this RV.
    InitialEventsEnd(u64),
    /// The watch cannot continue (e.g. 410 Expired); the stream ends after it.
    Error(ApiError),
}

impl WatchEvent {
    /// The wire `type` of the event.
    pub fn type_name(&self) -> &'static str {
        match self {
            Self::Added(_) => "ADDED",
            Self::Modified(_) => "MODIFIED",
            Self::Deleted(_) => "DELETED",
            Self::InitialEventsEnd(_) => "BOOKMARK",
            Self::Error(_) => "ERROR",
        }
    }

    /// The event's object, if it carries one.
    pub fn object(&self) -> Option<&Arc<StoredObject>> {
        match self {
            Self::Added(o) | Self::Modified(o) | Self::Deleted(o) => Some(o),
            _ => None,
        }
    }
}

struct Filter {
    namespace: Option<String>,
    labels: LabelSelector,
    fields: FieldSelector,
}

impl Filter {
    fn matches(&self, o: &StoredObject) -> bool {
        self.namespace.as_deref().is_none_or(|ns| o.namespace() == Some(ns))
            && o.matches_labels(&self.labels)
            && o.matches_fields(&self.fields)
    }

    /// Translates a store event into what this watcher sees (spec W-5).
    fn translate(&self, ev: &StoreEvent) -> Option<WatchEvent> {
        let now = self.matches(&ev.object);
        match ev.kind {
            EventType::Added => now.then(|| WatchEvent::Added(ev.object.clone())),
            EventType::Deleted => now.then(|| WatchEvent::Deleted(ev.object.clone())),
            EventType::Modified => {
                let before = ev.previous.as_ref().is_some_and(|p| self.matches(p));
                match (before, now) {
                    (false, true) => Some(WatchEvent::Added(ev.object.clone())),
                    (true, true) => Some(WatchEvent::Modified(ev.object.clone())),
                    (true, false) => ev.previous.as_ref().map(|p| WatchEvent::Deleted(p.with_rv(ev.rv))),
                    (false, false) => None,
                }
            }
        }
    }
}

/// Turns a stored object into what a watcher of another version of its resource sees.
pub(super) type Presenter = fn(&Arc<StoredObject>) -> Arc<StoredObject>;

/// A live watch on one resource. Dropping it unsubscribes.
pub struct WatchReceiver {
    store: Store,
    info: Arc<ResourceInfo>,
    pending: VecDeque<WatchEvent>,
    rx: Option<broadcast::Receiver<Arc<StoreEvent>>>,
    filter: Filter,
    /// Highest RV this watcher has fully seen.
    seen_rv: u64,
    /// How objects are presented when the watched resource is another version of the stored one
    /// (events.k8s.io/v1 Events over core storage, see [`super::events`]).
    present: Option<Presenter>,
}

impl std::fmt::Debug for WatchReceiver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("WatchReceiver")
            .field("resource", &self.info.gvr)
            .field("seen_rv", &self.seen_rv)
            .finish()
    }
}

pub(super) fn start(
    store: &Store,
    gvr: &Gvr,
    namespace: Option<&str>,
    opts: WatchOptions,
) -> Result<WatchReceiver, ApiError> {
    let g = store.shared.inner.lock();
    let info = g.info(gvr)?;
    let filter = Filter {
        namespace: namespace
            .filter(|n| info.namespaced && !n.is_empty())
            .map(str::to_string),
        labels: opts.label_selector.clone(),
        fields: FieldSelector::parse(opts.field_selector.as_deref().unwrap_or_default(), &info.kind)?,
    };
    let Some(ks) = g.kinds.get(&kind_key(&info.gvr)) else {
        return Err(ApiError::no_route());
    };
    let mut pending = VecDeque::new();
    let from = opts.resource_version.unwrap_or(0);
    let current = g.rv;
    let rx;
    if from == 0 || opts.send_initial_events {
        let snapshot = ks.objects.values().filter(|o| filter.matches(o));
        pending.extend(snapshot.map(|o| WatchEvent::Added(o.clone())));
        if opts.send_initial_events {
            pending.push_back(WatchEvent::InitialEventsEnd(current));
        }
        rx = Some(ks.tx.subscribe());
    } else if from < ks.floor {
        pending.push_back(WatchEvent::Error(ApiError::expired(format!(
            "too old resource version: {from} ({})",
            ks.floor
        ))));
        rx = None;
    } else {
        pending.extend(
            ks.history
                .iter()
                .filter(|e| e.rv > from)
                .filter_map(|e| filter.translate(e)),
        );
        rx = Some(ks.tx.subscribe());
    }
    drop(g);
    Ok(WatchReceiver {
        store: store.clone(),
        info,
        pending,
        rx,
        filter,
        seen_rv: current.max(from),
        present: None,
    })
}

impl WatchReceiver {
    /// Presents this watch's objects through `present` as resource `info` (a view of the watched storage).
    pub(super) fn present_as(&mut self, info: Arc<ResourceInfo>, present: Presenter) {
        self.info = info;
        self.present = Some(present);
    }

    /// The resource being watched.
    pub fn resource(&self) -> &Arc<ResourceInfo> {
        &self.info
    }

    /// The next event, or `None` when the watch has ended (after an error, or when this watcher lagged too far
    /// behind and was disconnected; re-watch from the last RV seen).
    pub async fn next(&mut self) -> Option<WatchEvent> {
        let event = self.next_stored().await?;
        Some(self.presented(event))
    }

    /// The next event if one is ready now, without waiting: what a burst of commits left queued, so a server
    /// can send it in one write. `None` when nothing is ready (or the watch has ended: [`Self::next`] then
    /// says so).
    pub fn try_next(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(ev) = self.pop_pending() {
                return Some(self.presented(ev));
            }
            let rx = self.rx.as_mut()?;
            match rx.try_recv() {
                Ok(ev) => {
                    if let Some(out) = self.accept(&ev) {
                        return Some(self.presented(out));
                    }
                }
                Err(broadcast::error::TryRecvError::Empty) => return None,
                Err(_) => {
                    // Lagged or closed: the watch ends, as `next_stored` ends it.
                    self.rx = None;
                    return None;
                }
            }
        }
    }

    fn presented(&self, event: WatchEvent) -> WatchEvent {
        match (self.present, event) {
            (Some(present), WatchEvent::Added(o)) => WatchEvent::Added(present(&o)),
            (Some(present), WatchEvent::Modified(o)) => WatchEvent::Modified(present(&o)),
            (Some(present), WatchEvent::Deleted(o)) => WatchEvent::Deleted(present(&o)),
            (_, event) => event,
        }
    }

    /// The next replayed or synthetic event; an error ends the live part of the watch.
    fn pop_pending(&mut self) -> Option<WatchEvent> {
        let ev = self.pending.pop_front()?;
        if matches!(ev, WatchEvent::Error(_)) {
            self.rx = None;
        }
        Some(ev)
    }

    /// What this watcher sees of a live store event it has not seen yet.
    fn accept(&mut self, ev: &StoreEvent) -> Option<WatchEvent> {
        if ev.rv <= self.seen_rv {
            // Already covered by the snapshot or replay taken at subscription time.
            return None;
        }
        self.seen_rv = self.seen_rv.max(ev.rv);
        self.filter.translate(ev)
    }

    /// The next event, its objects as stored.
    async fn next_stored(&mut self) -> Option<WatchEvent> {
        loop {
            if let Some(ev) = self.pop_pending() {
                return Some(ev);
            }
            let rx = self.rx.as_mut()?;
            match rx.recv().await {
                Ok(ev) => {
                    if let Some(out) = self.accept(&ev) {
                        return Some(out);
                    }
                }
                Err(_) => {
                    self.rx = None;
                    return None;
                }
            }
        }
    }

    /// The RV a BOOKMARK may carry now: the global RV if every event up to it was delivered, else the last RV
    /// delivered.
    pub fn bookmark_rv(&self) -> u64 {
        let g = self.store.shared.inner.lock();
        match &self.rx {
            Some(rx) if rx.is_empty() && self.pending.is_empty() => g.rv.max(self.seen_rv),
            _ => self.seen_rv,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use serde_json::json;

    use super::*;
    use crate::store::StoreConfig;

    /// A store whose history keeps at least `history_len` events per resource, everything younger than an hour,
    /// but never more than `history_max`.
    fn store_with_window(history_len: usize, history_max: usize) -> Store {
        Store::new(StoreConfig {
            history_len,
            history_age: Duration::from_secs(3600),
            history_max,
            ..StoreConfig::default()
        })
    }

    /// Creates ConfigMaps `cm-0..cm-{n-1}` in `default`, returning their resourceVersions.
    fn create_configmaps(store: &Store, n: usize) -> Vec<u64> {
        (0..n)
            .map(|i| {
                let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": format!("cm-{i}")}});
                store.create(&Gvr::core("configmaps"), Some("default"), cm).unwrap().rv
            })
            .collect()
    }

    fn resume(store: &Store, from: u64) -> Vec<WatchEvent> {
        let opts = WatchOptions {
            resource_version: Some(from),
            ..WatchOptions::default()
        };
        let rx = store.watch(&Gvr::core("configmaps"), Some("default"), opts).unwrap();
        rx.pending.into_iter().collect()
    }

    fn added_names(events: &[WatchEvent]) -> Vec<String> {
        events
            .iter()
            .map(|e| match e {
                WatchEvent::Added(o) => o.name().to_string(),
                other => panic!("expected ADDED, got {}", other.type_name()),
            })
            .collect()
    }

    #[test]
    fn young_events_beyond_the_count_are_kept_below_the_ceiling() {
        let store = store_with_window(2, 100);
        let rvs = create_configmaps(&store, 8);
        let events = resume(&store, rvs[0]);
        assert_eq!(
            added_names(&events),
            (1..8).map(|i| format!("cm-{i}")).collect::<Vec<_>>()
        );
    }

    #[test]
    fn the_ceiling_bounds_young_events_and_older_resumes_get_410() {
        let store = store_with_window(2, 5);
        let rvs = create_configmaps(&store, 8);
        // cm-0..cm-2 fell out of the window although they are young: a resume that still needs cm-2 is too old.
        match resume(&store, rvs[1]).as_slice() {
            [WatchEvent::Error(e)] => {
                assert_eq!(e.code, 410);
                assert_eq!(e.reason, "Expired");
            }
            other => panic!("expected one 410, got {} events", other.len()),
        }
        // Having seen cm-2, a watcher resumes exactly with the five events kept.
        let events = resume(&store, rvs[2]);
        assert_eq!(
            added_names(&events),
            (3..8).map(|i| format!("cm-{i}")).collect::<Vec<_>>()
        );
        assert_eq!(
            events.last().and_then(WatchEvent::object).map(|o| o.rv),
            rvs.last().copied()
        );
    }
}
