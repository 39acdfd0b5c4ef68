//! The in-process object store: the single source of truth behind the HTTP API and the hollow agents.
//!
//! Every write — from HTTP or from an agent — goes through the same pipeline: resolve the resource, validate
//! names and metadata, apply the kind's strategy (defaults, status splitting, generation), enforce
//! preconditions, suppress no-ops, then commit under one lock. A commit takes the next global
//! `resourceVersion`, appends a [`StoreEvent`] to the resource's bounded history and fans it out to watchers.
//!
//! Quick reference (all methods are synchronous and cheap; watches are async):
//!
//! | Method | Upstream equivalent |
//! |---|---|
//! | [`Store::create`] | `POST {collection}` |
//! | [`Store::get`] | `GET {collection}/{name}` |
//! | [`Store::list`] | `GET {collection}?labelSelector=..` |
//! | [`Store::update`] | `PUT {collection}/{name}[/status]` |
//! | [`Store::patch`] | `PATCH {collection}/{name}[/status]` |
//! | [`Store::delete`] | `DELETE {collection}/{name}` |
//! | [`Store::delete_collection`] | `DELETE {collection}?labelSelector=..` |
//! | [`Store::watch`] | `GET {collection}?watch=true&resourceVersion=N` |
//!
//! Namespaced resources take `Some(namespace)`; cluster-scoped ones take `None`.

pub(crate) mod apps;
pub mod events;
mod gc;
mod managed;
mod object;
mod strategy;
mod watch;

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::{Value, json};
use tokio::sync::{Notify, broadcast, mpsc};

pub use gc::GcTask;
pub use object::StoredObject;
pub use watch::{WatchEvent, WatchOptions, WatchReceiver};

use crate::error::{ApiError, FieldError};
use crate::kinds::{Gvr, ResourceInfo, builtin_resources};
pub use crate::patch::PatchKind;
use crate::select::{FieldSelector, LabelSelector};

/// Namespaces that exist from startup.
pub const SYSTEM_NAMESPACES: &[&str] = &["default", "kube-system", "kube-public", "kube-node-lease"];
/// Finalizer the server adds for `propagationPolicy: Orphan`.
pub const ORPHAN_FINALIZER: &str = "orphan";
/// Finalizer the server adds for `propagationPolicy: Foreground`.
pub const FOREGROUND_FINALIZER: &str = "foregroundDeletion";
/// Namespace `spec.finalizers` entry the namespace controller removes.
pub const NAMESPACE_FINALIZER: &str = "kubernetes";
/// Warning sent when a Job is deleted without a propagation policy.
pub const JOB_ORPHAN_WARNING: &str = "child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning";
/// Maximum length of a `generateName` prefix.
const MAX_GENERATE_NAME_PREFIX: usize = 58;
/// Alphabet of generated name suffixes (upstream's vowel-free set).
const NAME_SUFFIX_ALPHABET: &[u8] = b"bcdfghjklmnpqrstvwxz2456789";
/// Length of generated name suffixes.
const NAME_SUFFIX_LEN: usize = 5;

/// What happened to an object in a committed write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EventType {
    /// Created.
    Added,
    /// Updated (including deletion marking).
    Modified,
    /// Removed from storage.
    Deleted,
}

/// One committed write, as kept in a resource's history and fanned out to watchers.
#[derive(Debug)]
pub struct StoreEvent {
    /// The write's resourceVersion.
    pub rv: u64,
    /// What happened.
    pub kind: EventType,
    /// The new state (for deletions: the last state, stamped with the deletion RV).
    pub object: Arc<StoredObject>,
    /// The state before the write (for selector transitions); `None` for creations.
    pub previous: Option<Arc<StoredObject>>,
}

/// The deletion propagation policy (`propagationPolicy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Propagation {
    /// Dependents are deleted in the background after the owner is gone.
    Background,
    /// The owner stays (with `foregroundDeletion`) until blocking dependents are gone.
    Foreground,
    /// Dependents lose their owner references and survive.
    Orphan,
}

impl Propagation {
    /// Parses `Background` / `Foreground` / `Orphan`.
    pub fn parse(s: &str) -> Result<Self, ApiError> {
        match s {
            "Background" => Ok(Self::Background),
            "Foreground" => Ok(Self::Foreground),
            "Orphan" => Ok(Self::Orphan),
            other => Err(ApiError::bad_request(format!(
                "unsupported propagationPolicy: {other:?}"
            ))),
        }
    }
}

/// Options of a delete (the DeleteOptions body).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeleteOptions {
    /// `gracePeriodSeconds`.
    pub grace_period_seconds: Option<i64>,
    /// `propagationPolicy`; `None` means the kind's default (Orphan for Jobs, Background otherwise).
    pub propagation: Option<Propagation>,
    /// `preconditions.uid`.
    pub precondition_uid: Option<String>,
    /// `preconditions.resourceVersion`.
    pub precondition_rv: Option<String>,
}

impl DeleteOptions {
    /// Parses a DeleteOptions JSON body (an empty body means defaults).
    pub fn from_json(body: &Value) -> Result<Self, ApiError> {
        let propagation = match body.get("propagationPolicy").and_then(Value::as_str) {
            Some(p) => Some(Propagation::parse(p)?),
            None => match body.get("orphanDependents").and_then(Value::as_bool) {
                Some(true) => Some(Propagation::Orphan),
                Some(false) => Some(Propagation::Background),
                None => None,
            },
        };
        Ok(Self {
            grace_period_seconds: body.get("gracePeriodSeconds").and_then(Value::as_i64),
            propagation,
            precondition_uid: body["preconditions"]["uid"].as_str().map(str::to_string),
            precondition_rv: body["preconditions"]["resourceVersion"].as_str().map(str::to_string),
        })
    }
}

/// The result of a delete.
#[derive(Debug, Clone)]
pub struct DeleteOutcome {
    /// The object: its final state when `finished`, else its terminating state.
    pub object: Arc<StoredObject>,
    /// True when the object is gone; false when it is terminating (finalizers, graceful pod).
    pub finished: bool,
    /// A `Warning` header to send (Job default orphaning).
    pub warning: Option<String>,
}

/// List options.
#[derive(Debug, Clone, Default)]
pub struct ListOptions {
    /// Label selector (parsed).
    pub label_selector: LabelSelector,
    /// Field selector (parsed against the resource's kind).
    pub field_selector: Option<String>,
    /// Page size (`limit`); `None` or 0 returns everything.
    pub limit: Option<usize>,
    /// `continue` token from a previous page.
    pub continue_token: Option<String>,
}

impl ListOptions {
    /// Options with just a label selector string (parse errors become 400).
    pub fn labels(selector: &str) -> Result<Self, ApiError> {
        Ok(Self {
            label_selector: LabelSelector::parse(selector)?,
            ..Self::default()
        })
    }
}

/// One page of a list.
#[derive(Debug, Clone)]
pub struct ListResult {
    /// Items in key order (namespace, name).
    pub items: Vec<Arc<StoredObject>>,
    /// The RV the list reflects (the first page's RV on later pages).
    pub resource_version: u64,
    /// Token for the next page, when more items remain.
    pub continue_token: Option<String>,
    /// Items after this page, when paging.
    pub remaining: Option<usize>,
}

/// Object key within a resource: (namespace or "", name).
type Key = (String, String);

/// A reference to a stored object, used by the owner index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ObjRef {
    /// The resource's group.
    pub group: String,
    /// The resource's plural.
    pub resource: String,
    /// Namespace ("" for cluster-scoped).
    pub namespace: String,
    /// Name.
    pub name: String,
}

/// Storage of one resource (all versions share it).
struct KindStore {
    objects: BTreeMap<Key, Arc<StoredObject>>,
    history: VecDeque<Arc<StoreEvent>>,
    /// Commit time of each event of `history`.
    history_times: VecDeque<Instant>,
    /// Watches from an RV below this get 410 Expired.
    floor: u64,
    tx: broadcast::Sender<Arc<StoreEvent>>,
}

/// Everything behind the store lock.
struct Inner {
    rv: u64,
    resources: HashMap<(String, String, String), Arc<ResourceInfo>>,
    kinds: HashMap<(String, String), KindStore>,
    /// Live objects by uid.
    uids: HashMap<String, ObjRef>,
    /// Owner uid → dependents.
    dependents: HashMap<String, HashSet<ObjRef>>,
    rng: fastrand::Rng,
    next_service_ip: u32,
    gc_tx: mpsc::UnboundedSender<GcTask>,
    /// Server-side apply field ownership by uid (only objects that an apply touched).
    managed: HashMap<String, managed::Managed>,
    /// Change feeds of in-process agents (see [`Store::change_feed`]).
    feeds: Vec<FeedSender>,
    /// Age below which history events are kept beyond the count limit.
    history_age: Duration,
    /// Events kept per resource at most, whatever their age.
    history_max: usize,
}

/// One subscriber of [`Store::change_feed`]: the resources it follows and where their events go.
struct FeedSender {
    kinds: Vec<(String, String)>,
    tx: mpsc::UnboundedSender<(usize, Arc<StoreEvent>)>,
}

/// A lossless, unbounded feed of the committed writes to some resources, for in-process agents (unlike a
/// watch it never lags out). Created by [`Store::change_feed`]; dropping it unsubscribes.
#[derive(Debug)]
pub struct ChangeFeed {
    /// The objects that existed when the feed started, with the index of their resource in the requested list.
    pub snapshot: Vec<(usize, Arc<StoredObject>)>,
    /// Every later commit to one of the resources, with the index of its resource.
    pub rx: mpsc::UnboundedReceiver<(usize, Arc<StoreEvent>)>,
}

/// Settings of the store (a subset of [`crate::SimConfig`]).
#[derive(Debug, Clone)]
pub struct StoreConfig {
    /// Events kept per resource (at least).
    pub history_len: usize,
    /// Events younger than this are kept even beyond `history_len`.
    pub history_age: Duration,
    /// Events kept per resource at most, whatever their age (wins over `history_age`).
    pub history_max: usize,
    /// Fan-out channel capacity per resource.
    pub channel_capacity: usize,
    /// RNG seed.
    pub seed: u64,
    /// Garbage collector delay.
    pub gc_delay: Duration,
    /// Pod ServiceAccount admission.
    pub service_account_admission: bool,
    /// Lifetime of continue tokens.
    pub continue_ttl: Duration,
    /// Custom resources are pruned, defaulted and validated against their CRD's schema.
    pub validate_custom_resources: bool,
    /// The block Service ClusterIPs are allocated from (its first host address is kept for the
    /// `kubernetes` Service).
    pub service_cidr: crate::network::Ipv4Cidr,
}

impl Default for StoreConfig {
    fn default() -> Self {
        let c = crate::SimConfig::default();
        Self::from(&c)
    }
}

impl From<&crate::SimConfig> for StoreConfig {
    fn from(c: &crate::SimConfig) -> Self {
        Self {
            history_len: c.history_len,
            history_age: c.history_age,
            history_max: c.history_max,
            channel_capacity: c.watch_channel_capacity,
            seed: c.seed,
            gc_delay: c.gc_delay,
            service_account_admission: c.service_account_admission,
            continue_ttl: c.continue_ttl,
            validate_custom_resources: c.validate_custom_resources,
            service_cidr: c.pod_network.service_cidr,
        }
    }
}

struct Shared {
    inner: Mutex<Inner>,
    config: StoreConfig,
    gc_rx: Mutex<Option<mpsc::UnboundedReceiver<GcTask>>>,
    /// Woken on every commit (used by waiters such as the namespace controller).
    changed: Notify,
    started: Instant,
}

/// The object store. Cheap to clone (an `Arc`); all clones share state.
#[derive(Clone)]
pub struct Store {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("rv", &self.current_rv()).finish()
    }
}

/// Current time as RFC 3339 with seconds precision (`2026-11-21T14:07:16Z`).
pub fn now_rfc3339() -> String {
    jiff::Timestamp::now().strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn rfc3339_after(secs: i64) -> String {
    let ts = jiff::Timestamp::now();
    let later = ts.checked_add(jiff::SignedDuration::from_secs(secs)).unwrap_or(ts);
    later.strftime("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn meta_str<'a>(obj: &'a Value, field: &str) -> Option<&'a str> {
    obj["metadata"][field].as_str().filter(|s| !s.is_empty())
}

fn finalizers(obj: &Value) -> Vec<String> {
    obj["metadata"]["finalizers"]
        .as_array()
        .map(|a| a.iter().filter_map(|f| f.as_str().map(str::to_string)).collect())
        .unwrap_or_default()
}

fn is_terminating(obj: &Value) -> bool {
    obj["metadata"].get("deletionTimestamp").is_some_and(|v| !v.is_null())
}

/// A continue token: the list's RV, the token's issue time (ms since the store started, for the TTL) and the last
/// key served, hex-encoded.
fn encode_continue(rv: u64, issued_ms: u128, key: &Key) -> String {
    let raw = format!("{rv}\u{1}{issued_ms}\u{1}{}\u{1}{}", key.0, key.1);
    raw.bytes().map(|b| format!("{b:02x}")).collect()
}

fn decode_continue(token: &str) -> Option<(u64, u128, Key)> {
    let bytes: Option<Vec<u8>> = (0..token.len())
        .step_by(2)
        .map(|i| token.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect();
    let raw = String::from_utf8(bytes?).ok()?;
    let mut parts = raw.split('\u{1}');
    let rv = parts.next()?.parse().ok()?;
    let issued = parts.next()?.parse().ok()?;
    Some((rv, issued, (parts.next()?.to_string(), parts.next()?.to_string())))
}

impl Store {
    /// Creates a store with the built-in resources and the system namespaces (each with a `default`
    /// ServiceAccount).
    pub fn new(config: StoreConfig) -> Self {
        let (gc_tx, gc_rx) = mpsc::unbounded_channel();
        let mut inner = Inner {
            rv: 0,
            resources: HashMap::new(),
            kinds: HashMap::new(),
            uids: HashMap::new(),
            dependents: HashMap::new(),
            rng: fastrand::Rng::with_seed(config.seed),
            next_service_ip: 1,
            gc_tx,
            managed: HashMap::new(),
            feeds: Vec::new(),
            history_age: config.history_age,
            history_max: config.history_max,
        };
        for info in builtin_resources() {
            inner.register(Arc::new(info), config.channel_capacity);
        }
        let store = Self {
            shared: Arc::new(Shared {
                inner: Mutex::new(inner),
                config,
                gc_rx: Mutex::new(Some(gc_rx)),
                changed: Notify::new(),
                started: Instant::now(),
            }),
        };
        for ns in SYSTEM_NAMESPACES {
            // The names are valid and fresh, so this cannot fail.
            let _ = store.create_namespace(ns);
        }
        store
    }

    /// The store's settings.
    pub fn config(&self) -> &StoreConfig {
        &self.shared.config
    }

    /// Time since the store was created.
    pub fn uptime(&self) -> Duration {
        self.shared.started.elapsed()
    }

    /// The latest committed resourceVersion.
    pub fn current_rv(&self) -> u64 {
        self.shared.inner.lock().rv
    }

    /// Resolves a served resource (e.g. `Gvr::pods()`), `None` if unknown.
    pub fn resource(&self, gvr: &Gvr) -> Option<Arc<ResourceInfo>> {
        self.shared.inner.lock().info(gvr).ok()
    }

    /// Every served resource, sorted by group, version and plural (for discovery).
    pub fn resources(&self) -> Vec<Arc<ResourceInfo>> {
        let g = self.shared.inner.lock();
        let mut all: Vec<_> = g.resources.values().cloned().collect();
        all.sort_by(|a, b| a.gvr.cmp(&b.gvr));
        all
    }

    /// Resolves a resource by group and plural (any version), for kubectl-style lookups.
    pub fn resource_by_plural(&self, group: &str, plural: &str) -> Option<Arc<ResourceInfo>> {
        let g = self.shared.inner.lock();
        g.resources
            .values()
            .find(|r| r.gvr.group == group && r.gvr.resource == plural)
            .cloned()
    }

    /// Creates a Namespace named `name` plus its `default` ServiceAccount.
    pub fn create_namespace(&self, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        self.create(
            &Gvr::namespaces(),
            None,
            json!({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}),
        )
    }

    /// Creates an object (`POST`). Fills namespace, name (from `generateName`), uid, creationTimestamp,
    /// generation and resourceVersion; applies the kind's defaults. Returns the stored object.
    pub fn create(&self, gvr: &Gvr, namespace: Option<&str>, obj: Value) -> Result<Arc<StoredObject>, ApiError> {
        if events::is_events_v1(gvr) {
            let core = events::v1_to_core(&obj)?;
            return self
                .create(&events::storage_gvr(), namespace, core)
                .map(|o| events::present(&o))
                .map_err(events::retarget_error);
        }
        let created = {
            let mut g = self.shared.inner.lock();
            let info = g.info(gvr)?;
            g.create(&self.shared.config, &info, namespace, obj)?
        };
        self.after_commit(gvr, &created, None);
        Ok(created)
    }

    /// Reads one object (`GET`). 404 `NotFound` when missing.
    pub fn get(&self, gvr: &Gvr, namespace: Option<&str>, name: &str) -> Result<Arc<StoredObject>, ApiError> {
        if events::is_events_v1(gvr) {
            return self
                .get(&events::storage_gvr(), namespace, name)
                .map(|o| events::present(&o))
                .map_err(events::retarget_error);
        }
        let g = self.shared.inner.lock();
        let info = g.info(gvr)?;
        let key = scope_key(&info, namespace, name)?;
        g.stored(&info, &key)
            .ok_or_else(|| ApiError::not_found(info.target(name)))
    }

    /// Lists objects (`GET` on a collection). `namespace: None` on a namespaced resource lists all namespaces.
    pub fn list(&self, gvr: &Gvr, namespace: Option<&str>, opts: &ListOptions) -> Result<ListResult, ApiError> {
        if events::is_events_v1(gvr) {
            let mut page = self.list(&events::storage_gvr(), namespace, &events_list_options(opts)?)?;
            page.items = page.items.iter().map(events::present).collect();
            return Ok(page);
        }
        let g = self.shared.inner.lock();
        let info = g.info(gvr)?;
        let fields = FieldSelector::parse(opts.field_selector.as_deref().unwrap_or_default(), &info.kind)?;
        let now_ms = self.shared.started.elapsed().as_millis();
        let Some(ks) = g.kinds.get(&kind_key(&info.gvr)) else {
            return Ok(ListResult {
                items: Vec::new(),
                resource_version: g.rv,
                continue_token: None,
                remaining: None,
            });
        };
        let (list_rv, start) = match opts.continue_token.as_deref().filter(|t| !t.is_empty()) {
            Some(token) => {
                let (rv, issued_ms, key) =
                    decode_continue(token).ok_or_else(|| ApiError::bad_request("invalid continue token"))?;
                let age_ms = now_ms.saturating_sub(issued_ms);
                if rv < ks.floor || age_ms > self.shared.config.continue_ttl.as_millis() {
                    let mut e = ApiError::expired(
                        "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.",
                    );
                    e.list_meta = Some(json!({"continue": encode_continue(g.rv, now_ms, &key)}));
                    return Err(e);
                }
                (rv, Some(key))
            }
            None => (g.rv, None),
        };
        let ns_filter = namespace.filter(|_| info.namespaced).map(str::to_string);
        let range: Box<dyn Iterator<Item = (&Key, &Arc<StoredObject>)>> = match (&start, &ns_filter) {
            (Some(k), _) => Box::new(
                ks.objects
                    .range::<Key, _>((std::ops::Bound::Excluded(k.clone()), std::ops::Bound::Unbounded)),
            ),
            (None, Some(ns)) => Box::new(ks.objects.range::<Key, _>((ns.clone(), String::new())..)),
            (None, None) => Box::new(ks.objects.iter()),
        };
        let limit = opts.limit.filter(|l| *l > 0);
        let mut items = Vec::new();
        let mut last_key = None;
        let mut more = false;
        let mut remaining = 0usize;
        for (key, obj) in range {
            if let Some(ns) = &ns_filter
                && &key.0 != ns
            {
                if key.0.as_str() > ns.as_str() {
                    break;
                }
                continue;
            }
            if !obj.matches_labels(&opts.label_selector) || !obj.matches_fields(&fields) {
                continue;
            }
            if let Some(l) = limit
                && items.len() >= l
            {
                more = true;
                remaining += 1;
                continue;
            }
            last_key = Some(key.clone());
            items.push(obj.clone());
        }
        let continue_token = if more {
            last_key.map(|k| encode_continue(list_rv, now_ms, &k))
        } else {
            None
        };
        Ok(ListResult {
            items,
            resource_version: list_rv,
            continue_token,
            remaining: more.then_some(remaining),
        })
    }

    /// Replaces an object (`PUT`), or its status with `subresource: Some("status")`. The object's
    /// `metadata.resourceVersion`, when set, is a precondition (409 on mismatch).
    pub fn update(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        obj: Value,
        subresource: Option<&str>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.update_or_create(gvr, namespace, obj, subresource).map(|(o, _)| o)
    }

    /// Like [`Store::update`], also reporting whether the object was created (kinds with create-on-update).
    pub fn update_or_create(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        obj: Value,
        subresource: Option<&str>,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        self.update_or_create_as(gvr, namespace, obj, subresource, None)
    }

    /// Like [`Store::update_or_create`], on behalf of `field_manager` (the `fieldManager` query parameter), which
    /// takes ownership of the fields it changes on objects that server-side apply manages.
    pub fn update_or_create_as(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        obj: Value,
        subresource: Option<&str>,
        field_manager: Option<&str>,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        if events::is_events_v1(gvr) {
            let core = events::v1_to_core(&obj)?;
            return self
                .update_or_create_as(&events::storage_gvr(), namespace, core, subresource, field_manager)
                .map(|(o, created)| (events::present(&o), created))
                .map_err(events::retarget_error);
        }
        let (res, prev) = {
            let mut g = self.shared.inner.lock();
            let info = g.info(gvr)?;
            check_subresource(&info, subresource)?;
            let name = meta_str(&obj, "name").unwrap_or_default().to_string();
            let key = scope_key(&info, namespace, &name)?;
            let existing = g.stored(&info, &key);
            match existing {
                None if info.create_on_update && subresource.is_none() => {
                    let mut obj = obj;
                    if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                        m.remove("resourceVersion");
                    }
                    (
                        g.create(&self.shared.config, &info, namespace, obj)
                            .map(|o| (o, true))?,
                        None,
                    )
                }
                None => return Err(ApiError::not_found(info.target(&name))),
                Some(old) => {
                    let rv = meta_str(&obj, "resourceVersion");
                    match rv {
                        Some(rv) if rv != old.rv.to_string() => return Err(ApiError::conflict(info.target(&name))),
                        None if !info.unconditional_update => {
                            // Upstream's quirks: the "kind" is the qualified resource
                            // (`leases.coordination.k8s.io "x" is invalid`) and the value the uint64 0, unquoted.
                            return Err(ApiError::invalid(
                                crate::error::Target {
                                    kind: &info.gvr.resource,
                                    ..info.target(&name)
                                },
                                &[FieldError {
                                    reason: "FieldValueInvalid",
                                    field: "metadata.resourceVersion".into(),
                                    message: "Invalid value: 0: must be specified for an update".into(),
                                }],
                            ));
                        }
                        _ => {}
                    }
                    let new = g.update(&self.shared.config, &info, &old, obj, subresource)?;
                    g.record_update(&info, &old, &new, field_manager);
                    ((new, false), Some(old))
                }
            }
        };
        self.after_commit(gvr, &res.0, prev.as_ref());
        Ok(res)
    }

    /// Binds pod `namespace/name` to `node` as kube-apiserver's `pods/binding` subresource does: `spec.nodeName`
    /// and `status.conditions` (the caller's list, which sets `PodScheduled=True`) in one write, so that watchers
    /// see one MODIFIED event per binding, as they do from a real cluster (like upstream's, it leaves
    /// `metadata.generation` alone). 409 when the pod is no longer at `rv`, is bound already, is being deleted or
    /// has scheduling gates.
    pub fn bind_pod(
        &self,
        namespace: &str,
        name: &str,
        rv: u64,
        node: &str,
        conditions: Vec<Value>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        let gvr = Gvr::pods();
        let (bound, old) = {
            let mut g = self.shared.inner.lock();
            let info = g.info(&gvr)?;
            let key = scope_key(&info, Some(namespace), name)?;
            let old = g
                .stored(&info, &key)
                .ok_or_else(|| ApiError::not_found(info.target(name)))?;
            if old.rv != rv {
                return Err(ApiError::conflict(info.target(name)));
            }
            let mut pod = old.value();
            if let Some(bound_to) = pod["spec"]["nodeName"].as_str().filter(|n| !n.is_empty()) {
                return Err(ApiError::conflict_msg(
                    info.target(name),
                    &format!("pod {name} is already assigned to node \"{bound_to}\""),
                ));
            }
            if is_terminating(&pod) {
                return Err(ApiError::conflict_msg(
                    info.target(name),
                    &format!("pod {name} is being deleted, cannot be assigned to a host"),
                ));
            }
            if pod["spec"]["schedulingGates"]
                .as_array()
                .is_some_and(|gates| !gates.is_empty())
            {
                return Err(ApiError::conflict_msg(
                    info.target(name),
                    &format!("pod {name} has non-empty .spec.schedulingGates"),
                ));
            }
            pod["spec"]["nodeName"] = Value::String(node.to_string());
            pod["status"]["conditions"] = Value::Array(conditions);
            let history_len = self.shared.config.history_len;
            let bound = g.commit(&info, key, pod, EventType::Modified, Some(old.clone()), history_len);
            g.record_update(&info, &old, &bound, None);
            (bound, old)
        };
        self.after_commit(&gvr, &bound, Some(&old));
        Ok(bound)
    }

    /// Patches an object (`PATCH`), or its status with `subresource: Some("status")`. `Apply` creates a missing
    /// object. A `metadata.resourceVersion` in the patched result that differs from storage → 409.
    pub fn patch(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        kind: &PatchKind,
        body: &Value,
        subresource: Option<&str>,
    ) -> Result<Arc<StoredObject>, ApiError> {
        self.patch_or_create(gvr, namespace, name, kind, body, subresource)
            .map(|(o, _)| o)
    }

    /// Like [`Store::patch`], also reporting whether an apply patch created the object.
    pub fn patch_or_create(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        kind: &PatchKind,
        body: &Value,
        subresource: Option<&str>,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        self.patch_or_create_as(gvr, namespace, name, kind, body, subresource, None)
    }

    /// Like [`Store::patch_or_create`]; a non-apply patch is made on behalf of `field_manager` (the `fieldManager`
    /// query parameter), which takes ownership of the fields it changes on objects that server-side apply manages.
    #[allow(clippy::too_many_arguments)]
    pub fn patch_or_create_as(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        kind: &PatchKind,
        body: &Value,
        subresource: Option<&str>,
        field_manager: Option<&str>,
    ) -> Result<(Arc<StoredObject>, bool), ApiError> {
        if events::is_events_v1(gvr) {
            let core = events::patch_to_core(kind, body)?;
            return self
                .patch_or_create_as(
                    &events::storage_gvr(),
                    namespace,
                    name,
                    kind,
                    &core,
                    subresource,
                    field_manager,
                )
                .map(|(o, created)| (events::present(&o), created))
                .map_err(events::retarget_error);
        }
        let (res, prev) = {
            let mut g = self.shared.inner.lock();
            let info = g.info(gvr)?;
            check_subresource(&info, subresource)?;
            if let PatchKind::Apply { field_manager, .. } = kind {
                if field_manager.as_deref().unwrap_or_default().is_empty() {
                    let mut e = ApiError::new(
                        422,
                        "Invalid",
                        "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is required for apply patch",
                    );
                    e.details = json!({"group": "meta.k8s.io", "kind": "PatchOptions", "causes": [{"reason": "FieldValueRequired", "message": "Required value: is required for apply patch", "field": "fieldManager"}]});
                    return Err(e);
                }
                if body
                    .get("apiVersion")
                    .is_some_and(|v| v.as_str() != Some(&info.gvr.api_version()))
                    || body.get("kind").is_some_and(|v| v.as_str() != Some(&info.kind))
                {
                    return Err(ApiError::bad_request(
                        "apiVersion and kind of the applied object must match the endpoint",
                    ));
                }
                if body["metadata"]["name"].as_str().is_some_and(|n| n != name) {
                    return Err(ApiError::bad_request(
                        "the name of the object does not match the name on the URL",
                    ));
                }
            }
            if *kind == PatchKind::Strategic && !info.strategic_merge {
                return Err(ApiError::unsupported_media_type());
            }
            let key = scope_key(&info, namespace, name)?;
            let existing = g.stored(&info, &key);
            match existing {
                None => {
                    if matches!(kind, PatchKind::Apply { .. }) && subresource.is_none() {
                        let mut obj = body.clone();
                        if let Some(m) = obj.as_object_mut() {
                            m.entry("apiVersion").or_insert_with(|| json!(info.gvr.api_version()));
                            m.entry("kind").or_insert_with(|| json!(info.kind));
                        }
                        if let Some(m) = obj.get_mut("metadata").and_then(Value::as_object_mut) {
                            m.insert("name".into(), json!(name));
                        }
                        let created = g.create(&self.shared.config, &info, namespace, obj)?;
                        if let PatchKind::Apply {
                            field_manager: Some(m), ..
                        } = kind
                        {
                            let paths = managed::leaf_paths(&info, body);
                            let mut owned = managed::Managed::new();
                            managed::record_apply(&mut owned, m, paths, &[]);
                            g.managed.insert(created.uid().to_string(), owned);
                        }
                        ((created, true), None)
                    } else {
                        return Err(ApiError::not_found(info.target(name)));
                    }
                }
                Some(old) => {
                    let mut doc = old.value();
                    // Server-side apply ownership: conflicts, then fields this manager stopped applying.
                    let mut applied = None;
                    if let PatchKind::Apply {
                        field_manager: Some(m),
                        force,
                    } = kind
                    {
                        let paths = managed::leaf_paths(&info, body);
                        let owned = g.managed.get(old.uid()).cloned().unwrap_or_default();
                        let conflicts = managed::conflicts(&owned, m, &paths, body, &old.value());
                        if !conflicts.is_empty() && !force {
                            return Err(managed::conflict_error(&info, name, &conflicts));
                        }
                        for p in managed::dropped(&owned, m, &paths) {
                            managed::remove(&mut doc, &p);
                        }
                        let taken: Vec<_> = conflicts.into_iter().map(|(_, p)| p).collect();
                        applied = Some((m.clone(), paths, taken));
                    }
                    match kind {
                        PatchKind::Merge => crate::patch::merge_patch(&mut doc, body),
                        PatchKind::Json => crate::patch::json_patch(&mut doc, body)?,
                        PatchKind::Strategic => crate::patch::strategic_merge(&mut doc, body)?,
                        PatchKind::Apply { .. } => {
                            if info.strategic_merge {
                                crate::patch::strategic_merge(&mut doc, body)?;
                            } else {
                                crate::patch::merge_patch(&mut doc, body);
                            }
                        }
                    }
                    if !doc.is_object() || !doc["metadata"].is_object() {
                        return Err(ApiError::patch_failed());
                    }
                    match meta_str(&doc, "resourceVersion") {
                        Some(rv) if rv != old.rv.to_string() => return Err(ApiError::conflict(info.target(name))),
                        _ => {}
                    }
                    if meta_str(&doc, "name") != Some(name) {
                        return Err(ApiError::invalid(
                            info.target(name),
                            &[FieldError::invalid(
                                "metadata.name",
                                meta_str(&doc, "name").unwrap_or_default(),
                                "field is immutable",
                            )],
                        ));
                    }
                    let new = g.update(&self.shared.config, &info, &old, doc, subresource)?;
                    match applied {
                        Some((m, paths, taken))
                            if g.uids.contains_key(old.uid())
                                && (new.rv != old.rv || !g.managed.contains_key(old.uid())) =>
                        {
                            let owned = g.managed.entry(old.uid().to_string()).or_default();
                            managed::record_apply(owned, &m, paths, &taken);
                        }
                        Some(_) => {}
                        None => g.record_update(&info, &old, &new, field_manager),
                    }
                    ((new, false), Some(old))
                }
            }
        };
        self.after_commit(gvr, &res.0, prev.as_ref());
        Ok(res)
    }

    /// Deletes an object (`DELETE`), honouring finalizers, graceful pod termination, preconditions and the
    /// propagation policy.
    pub fn delete(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        name: &str,
        opts: &DeleteOptions,
    ) -> Result<DeleteOutcome, ApiError> {
        if events::is_events_v1(gvr) {
            return self
                .delete(&events::storage_gvr(), namespace, name, opts)
                .map(|out| DeleteOutcome {
                    object: events::present(&out.object),
                    ..out
                })
                .map_err(events::retarget_error);
        }
        let (out, prev) = {
            let mut g = self.shared.inner.lock();
            let info = g.info(gvr)?;
            let key = scope_key(&info, namespace, name)?;
            let old = g
                .stored(&info, &key)
                .ok_or_else(|| ApiError::not_found(info.target(name)))?;
            (g.delete(&self.shared.config, &info, &old, opts)?, old)
        };
        self.after_commit(gvr, &out.object, Some(&prev));
        Ok(out)
    }

    /// Deletes every object matching the selectors (`DELETE` on a collection); each delete is its own write.
    pub fn delete_collection(
        &self,
        gvr: &Gvr,
        namespace: Option<&str>,
        list: &ListOptions,
        opts: &DeleteOptions,
    ) -> Result<Vec<DeleteOutcome>, ApiError> {
        // events.k8s.io/v1 needs no translation here: `list` and `delete` below do it.
        let page = self.list(
            gvr,
            namespace,
            &ListOptions {
                limit: None,
                continue_token: None,
                ..list.clone()
            },
        )?;
        let mut out = Vec::new();
        for obj in page.items {
            match self.delete(gvr, obj.namespace(), obj.name(), opts) {
                Ok(o) => out.push(o),
                Err(e) if e.code == 404 => {}
                Err(e) => return Err(e),
            }
        }
        Ok(out)
    }

    /// Starts a watch. Returns a receiver of events in RV order; see [`WatchOptions`] for the starting point.
    /// A too-old `resource_version` yields a single [`WatchEvent::Error`] (410 `Expired`).
    pub fn watch(&self, gvr: &Gvr, namespace: Option<&str>, opts: WatchOptions) -> Result<WatchReceiver, ApiError> {
        if events::is_events_v1(gvr) {
            let info = self.resource(gvr).ok_or_else(ApiError::no_route)?;
            let opts = WatchOptions {
                field_selector: opts
                    .field_selector
                    .as_deref()
                    .map(events::field_selector_to_core)
                    .transpose()?,
                ..opts
            };
            let mut receiver = watch::start(self, &events::storage_gvr(), namespace, opts)?;
            receiver.present_as(info, events::present);
            return Ok(receiver);
        }
        watch::start(self, gvr, namespace, opts)
    }

    /// Raises every resource's history floor to the current RV and drops the history, so watches and continue
    /// tokens from before now get 410 Expired (test control: "compact").
    pub fn compact(&self) {
        let mut g = self.shared.inner.lock();
        // Compaction takes a revision of its own (no object changes), so every RV handed out before it — list RVs,
        // continue tokens, watch positions — falls below the new floor, while lists taken afterwards report the
        // floor itself and can be watched from.
        g.rv += 1;
        let rv = g.rv;
        for ks in g.kinds.values_mut() {
            ks.history.clear();
            ks.history_times.clear();
            ks.floor = rv;
        }
    }

    /// Starts a [`ChangeFeed`] over `gvrs` (resources not served yet are followed once they are): a snapshot
    /// of their objects and, after it, every commit to them, in resourceVersion order.
    pub fn change_feed(&self, gvrs: &[Gvr]) -> ChangeFeed {
        let mut g = self.shared.inner.lock();
        let kinds: Vec<(String, String)> = gvrs.iter().map(kind_key).collect();
        let mut snapshot = Vec::new();
        for (i, k) in kinds.iter().enumerate() {
            if let Some(ks) = g.kinds.get(k) {
                snapshot.extend(ks.objects.values().map(|o| (i, o.clone())));
            }
        }
        let (tx, rx) = mpsc::unbounded_channel();
        g.feeds.push(FeedSender { kinds, tx });
        ChangeFeed { snapshot, rx }
    }

    /// Waits until the next commit (or `timeout`), for polling loops.
    pub async fn changed(&self, timeout: Duration) {
        let _ = tokio::time::timeout(timeout, self.shared.changed.notified()).await;
    }

    /// Takes the garbage-collector task queue (once); the server runs [`Store::run_controllers`] with it.
    fn take_gc_queue(&self) -> Option<mpsc::UnboundedReceiver<GcTask>> {
        self.shared.gc_rx.lock().take()
    }

    /// Runs the garbage collector and namespace controller until the store is dropped. Spawned by
    /// [`crate::SimServer::start`]; call it yourself only when using a bare `Store`.
    pub async fn run_controllers(self) {
        if let Some(rx) = self.take_gc_queue() {
            gc::run(self, rx).await;
        }
    }

    /// Number of objects per resource (`group/plural` → count), for metrics.
    pub fn object_counts(&self) -> BTreeMap<String, usize> {
        let g = self.shared.inner.lock();
        g.kinds
            .iter()
            .map(|((grp, plural), k)| (format!("{grp}/{plural}"), k.objects.len()))
            .collect()
    }

    fn after_commit(&self, gvr: &Gvr, obj: &Arc<StoredObject>, prev: Option<&Arc<StoredObject>>) {
        self.shared.changed.notify_waiters();
        let _ = (gvr, obj, prev);
    }
}

/// List options of an events.k8s.io/v1 list in core terms (its field selector translated).
fn events_list_options(opts: &ListOptions) -> Result<ListOptions, ApiError> {
    Ok(ListOptions {
        field_selector: opts
            .field_selector
            .as_deref()
            .map(events::field_selector_to_core)
            .transpose()?,
        ..opts.clone()
    })
}

fn kind_key(gvr: &Gvr) -> (String, String) {
    (gvr.group.clone(), gvr.resource.clone())
}

fn check_subresource(info: &ResourceInfo, sub: Option<&str>) -> Result<(), ApiError> {
    match sub {
        None => Ok(()),
        Some("status") if info.status_subresource => Ok(()),
        Some(_) => Err(ApiError::no_route()),
    }
}

fn scope_key(info: &ResourceInfo, namespace: Option<&str>, name: &str) -> Result<Key, ApiError> {
    if info.namespaced {
        match namespace {
            Some(ns) if !ns.is_empty() => Ok((ns.to_string(), name.to_string())),
            _ => Err(ApiError::bad_request(
                "the server could not find the requested resource: a namespace is required",
            )),
        }
    } else {
        Ok((String::new(), name.to_string()))
    }
}

impl Inner {
    /// The stored object of `info` at `key`, if any.
    fn stored(&self, info: &ResourceInfo, key: &Key) -> Option<Arc<StoredObject>> {
        self.kinds
            .get(&kind_key(&info.gvr))
            .and_then(|k| k.objects.get(key))
            .cloned()
    }

    /// Hands the fields a non-apply write changed to its manager, on objects that server-side apply manages.
    fn record_update(&mut self, info: &ResourceInfo, old: &StoredObject, new: &StoredObject, manager: Option<&str>) {
        if new.rv == old.rv {
            return;
        }
        if let Some(owned) = self.managed.get_mut(old.uid()) {
            let manager = manager.filter(|m| !m.is_empty()).unwrap_or(managed::UNKNOWN_MANAGER);
            managed::record_update(owned, info, manager, &old.value(), &new.value());
        }
    }

    fn register(&mut self, info: Arc<ResourceInfo>, capacity: usize) {
        let gvr = &info.gvr;
        self.kinds.entry(kind_key(gvr)).or_insert_with(|| KindStore {
            objects: BTreeMap::new(),
            history: VecDeque::new(),
            history_times: VecDeque::new(),
            floor: 0,
            tx: broadcast::channel(capacity.max(16)).0,
        });
        self.resources
            .insert((gvr.group.clone(), gvr.version.clone(), gvr.resource.clone()), info);
    }

    fn info(&self, gvr: &Gvr) -> Result<Arc<ResourceInfo>, ApiError> {
        self.resources
            .get(&(gvr.group.clone(), gvr.version.clone(), gvr.resource.clone()))
            .cloned()
            .ok_or_else(ApiError::no_route)
    }

    fn lookup(&self, r: &ObjRef) -> Option<Arc<StoredObject>> {
        self.kinds
            .get(&(r.group.clone(), r.resource.clone()))
            .and_then(|k| k.objects.get(&(r.namespace.clone(), r.name.clone())))
            .cloned()
    }

    fn new_uid(&mut self) -> String {
        let mut b = [0u8; 16];
        for x in &mut b {
            *x = self.rng.u8(..);
        }
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
        format!(
            "{}-{}-{}-{}-{}",
            &h[0..8],
            &h[8..12],
            &h[12..16],
            &h[16..20],
            &h[20..32]
        )
    }

    fn name_suffix(&mut self) -> String {
        (0..NAME_SUFFIX_LEN)
            .map(|_| NAME_SUFFIX_ALPHABET[self.rng.usize(..NAME_SUFFIX_ALPHABET.len())] as char)
            .collect()
    }

    /// Commits a new state (or a removal when `removed`), returning the stored object.
    fn commit(
        &mut self,
        info: &ResourceInfo,
        key: Key,
        value: Value,
        kind: EventType,
        previous: Option<Arc<StoredObject>>,
        history_len: usize,
    ) -> Arc<StoredObject> {
        self.rv += 1;
        let rv = self.rv;
        let obj = StoredObject::new(value, rv);
        let me = ObjRef {
            group: info.gvr.group.clone(),
            resource: info.gvr.resource.clone(),
            namespace: key.0.clone(),
            name: key.1.clone(),
        };
        // Owner index maintenance.
        let old_owners: Vec<String> = previous
            .as_ref()
            .map(|p| p.owner_uids().map(str::to_string).collect())
            .unwrap_or_default();
        let new_owners: Vec<String> = if kind == EventType::Deleted {
            Vec::new()
        } else {
            obj.owner_uids().map(str::to_string).collect()
        };
        for u in old_owners.iter().filter(|u| !new_owners.contains(u)) {
            if let Some(set) = self.dependents.get_mut(u) {
                set.remove(&me);
                if set.is_empty() {
                    self.dependents.remove(u);
                }
            }
        }
        for u in new_owners.iter().filter(|u| !old_owners.contains(u)) {
            self.dependents.entry(u.clone()).or_default().insert(me.clone());
            // A dependent that names an owner which is already gone (a controller's create racing its owner's
            // deletion) is collected as kube's garbage collector collects it: the owner's absence is handled
            // as if it had just been deleted.
            let owner_present = self
                .uids
                .get(u)
                .is_some_and(|owner| owner.namespace.is_empty() || owner.namespace == key.0);
            if !owner_present {
                let _ = self.gc_tx.send(GcTask::OwnerGone(u.clone()));
            }
        }
        let uid = obj.uid().to_string();
        let Some(ks) = self.kinds.get_mut(&kind_key(&info.gvr)) else {
            return obj;
        };
        if kind == EventType::Deleted {
            ks.objects.remove(&key);
            self.uids.remove(&uid);
            self.managed.remove(&uid);
        } else {
            ks.objects.insert(key, obj.clone());
            if kind == EventType::Added {
                self.uids.insert(uid, me);
            }
        }
        let event = Arc::new(StoreEvent {
            rv,
            kind,
            object: obj.clone(),
            previous,
        });
        ks.history.push_back(event.clone());
        let now = Instant::now();
        ks.history_times.push_back(now);
        // Keep the last `history_len` events or those younger than `history_age`, whichever are more, but never
        // more than `history_max` (the ceiling of upstream's watch cache).
        while ks.history.len() > self.history_max
            || (ks.history.len() > history_len
                && ks
                    .history_times
                    .front()
                    .is_some_and(|t| now.duration_since(*t) > self.history_age))
        {
            ks.history_times.pop_front();
            if let Some(ev) = ks.history.pop_front() {
                ks.floor = ks.floor.max(ev.rv);
            }
        }
        if !self.feeds.is_empty() {
            let kk = kind_key(&info.gvr);
            self.feeds.retain(|f| match f.kinds.iter().position(|k| *k == kk) {
                Some(i) => f.tx.send((i, event.clone())).is_ok(),
                None => !f.tx.is_closed(),
            });
        }
        let _ = ks.tx.send(event);
        obj
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn pending_pod(store: &Store) -> Arc<StoredObject> {
        let pod = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                         "spec": {"containers": [{"name": "c", "image": "i"}]}});
        store.create(&Gvr::pods(), Some("default"), pod).unwrap()
    }

    #[test]
    fn a_binding_is_one_write_of_the_node_and_the_scheduled_condition() {
        let store = Store::new(StoreConfig::default());
        let pod = pending_pod(&store);
        let mut feed = store.change_feed(&[Gvr::pods()]);
        let scheduled = vec![json!({"type": "PodScheduled", "status": "True"})];
        let bound = store
            .bind_pod("default", "p", pod.rv, "node-1", scheduled.clone())
            .unwrap();
        assert_eq!(bound.rv, pod.rv + 1, "one write");
        let value = bound.value();
        assert_eq!(value["spec"]["nodeName"], "node-1");
        assert_eq!(value["status"]["conditions"], json!(scheduled));
        let events: Vec<EventType> = std::iter::from_fn(|| feed.rx.try_recv().ok())
            .map(|(_, e)| e.kind)
            .collect();
        assert_eq!(events, vec![EventType::Modified], "one MODIFIED event");
    }

    #[test]
    fn a_stale_or_second_binding_is_a_conflict() {
        let store = Store::new(StoreConfig::default());
        let pod = pending_pod(&store);
        let bound = store.bind_pod("default", "p", pod.rv, "node-1", Vec::new()).unwrap();
        let stale = store
            .bind_pod("default", "p", pod.rv, "node-2", Vec::new())
            .unwrap_err();
        assert_eq!(stale.code, 409);
        let again = store
            .bind_pod("default", "p", bound.rv, "node-2", Vec::new())
            .unwrap_err();
        assert_eq!(again.code, 409);
        assert!(
            again.message.contains("already assigned to node \"node-1\""),
            "{}",
            again.message
        );
        assert_eq!(
            store
                .bind_pod("default", "gone", 1, "node-1", Vec::new())
                .unwrap_err()
                .code,
            404
        );
        let gated = json!({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "gated"},
                           "spec": {"schedulingGates": [{"name": "wait"}], "containers": [{"name": "c", "image": "i"}]}});
        let gated = store.create(&Gvr::pods(), Some("default"), gated).unwrap();
        let refused = store
            .bind_pod("default", "gated", gated.rv, "node-1", Vec::new())
            .unwrap_err();
        assert!(refused.message.contains("schedulingGates"), "{}", refused.message);
    }
}
