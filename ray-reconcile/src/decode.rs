//! Per-object decoding for watches: one stored object that cannot be read as our type costs that object
//! alone, never the whole watch.
//!
//! kube-runtime's watcher decodes a list page or a watch event as a whole, so a single object whose JSON
//! does not fit our types (a newer CRD version with values this operator cannot read, an object stored
//! before a CRD was tightened, a server that does not validate custom resources) fails the page, the
//! watcher retries with back-off, and no object behind it is ever delivered. Watching [`Decoded<K>`]
//! instead makes every object decodable: an object that reads as `K` is [`Decoded::Readable`], any other
//! is [`Decoded::Unreadable`] with its metadata and the field path and reason of the failure.
//! [`readable_events`] then turns the watch into an ordinary watch of `K` for the reflector and the
//! controller, and hands every unreadable object to an [`UnreadableReporter`]: one log line, one Warning
//! Event on the object and the `kuberay_undecodable_objects` gauge, once per resourceVersion. The object is
//! read again when it changes.
//!
//! An object that becomes unreadable keeps its last readable version in the store until it is deleted or
//! the watch relists (a relist rebuilds the store from readable objects only); nothing is deleted on its
//! account, so its children are left as they are.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};

use crate::recorder::EventRecorder;
use futures::{Stream, StreamExt, future};
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::Resource;
use kube::runtime::watcher;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;
use tracing::{info, warn};

use crate::events::{EventSpec, Severity};
use crate::json_path::{Failed, json_path_at};
use crate::runtime_util::publish_event;

/// The Event reason of an object the operator cannot read.
pub const UNDECODABLE_REASON: &str = "UndecodableObject";

/// The name of the gauge of objects the operator cannot read, by kind.
pub const UNDECODABLE_METRIC: &str = "kuberay_undecodable_objects";

/// An object as a watch delivers it: readable as `K`, or not.
///
/// Both cases are boxed so that the value is two words: a watch's events and list pages move it by value
/// through kube-runtime's stream combinators, and an object inline (5.7 KiB for a RayCluster, 8 KiB for a
/// RayJob) made each of their frames large enough that polling a watch used a few hundred KiB of stack.
#[derive(Clone, Debug)]
pub enum Decoded<K> {
    /// The object reads as `K`.
    Readable(Box<K>),
    /// The object does not read as `K`; boxed because it is the rare case.
    Unreadable(Box<Unreadable>),
}

/// An object that did not read as the watched type: what is known of it and why.
#[derive(Clone, Debug, PartialEq)]
pub struct Unreadable {
    /// The object's identity, read leniently from its `metadata` (name, namespace, uid, resourceVersion,
    /// generation; the rest is left unset).
    pub metadata: ObjectMeta,
    /// Why it did not read.
    pub error: DecodeError,
}

/// Where and why an object did not read as its type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// The JSON path of the failing value (`spec.workerGroupSpecs[0].replicas`), `.` for the object itself.
    pub path: String,
    /// The decoder's reason (`invalid type: string "1Ei", expected i32`).
    pub reason: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.path, self.reason)
    }
}

impl std::error::Error for DecodeError {}

/// Reads one object's JSON text as `K`, or says where and why it does not read.
pub fn decode_json<K: DeserializeOwned>(text: &str) -> Result<K, DecodeError> {
    serde_json::from_str(text).map_err(|error| located_error(text, &error))
}

/// Reads `value` as `K`, or says where and why it does not read (through its JSON text, so that the failure
/// reads exactly as [`decode_json`]'s).
pub fn decode_value<K: DeserializeOwned>(value: &Value) -> Result<K, DecodeError> {
    decode_json(&value.to_string())
}

/// Where and why `text` did not read: the field is found from the position serde_json stopped at
/// ([`json_path_at`]); text that is not JSON at all names the object itself (`.`).
fn located_error(text: &str, error: &serde_json::Error) -> DecodeError {
    let message = error.to_string();
    if error.line() == 0 {
        return DecodeError {
            path: ".".to_owned(),
            reason: message,
        };
    }
    // The message without serde_json's " at line L column C", which the path replaces.
    let position = format!(" at line {} column {}", error.line(), error.column());
    let reason = message.strip_suffix(&position).unwrap_or(&message).to_owned();
    let offset = byte_offset(text, error.line(), error.column());
    let path = match error.classify() {
        serde_json::error::Category::Data => {
            // A list or map that fails as a whole may be reported at its first element.
            let failed = if reason.starts_with("invalid type: sequence") {
                Failed::Array
            } else if reason.starts_with("invalid type: map") {
                Failed::Object
            } else {
                Failed::Any
            };
            match json_path_at(text, offset, failed) {
                // An error a type re-raised for a value it read whole (an embedded Service) is reported past
                // that value, where no list or map of the kind named holds the position.
                path if path == "." && failed != Failed::Any => json_path_at(text, offset, Failed::Any),
                path => path,
            }
        }
        // serde_json reports an enum given a number, `true` or a list as a syntax error ("expected value");
        // in text that is well-formed JSON it is a misfit like any other.
        serde_json::error::Category::Syntax if serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok() => {
            json_path_at(text, offset, Failed::Any)
        }
        _ => ".".to_owned(),
    };
    DecodeError { path, reason }
}

/// The byte offset of serde_json's position: `line` counts from 1, `column` is the byte offset within it.
fn byte_offset(text: &str, line: usize, column: usize) -> usize {
    let line_start = if line <= 1 {
        0
    } else {
        text.match_indices('\n')
            .nth(line - 2)
            .map_or(text.len(), |(at, _)| at + 1)
    };
    line_start + column
}

impl<K: DeserializeOwned> Decoded<K> {
    /// Decodes one object's JSON value (through its text, as [`Decoded::from_json`]).
    pub fn from_value(value: &Value) -> Self {
        Self::from_json(&value.to_string())
    }

    /// Decodes one object's JSON text straight into `K`; an object that does not read keeps what can be
    /// read of its metadata, so that it can still be named.
    pub fn from_json(text: &str) -> Self {
        match decode_json::<Box<K>>(text) {
            Ok(object) => Decoded::Readable(object),
            Err(error) => Decoded::Unreadable(Box::new(Unreadable {
                metadata: serde_json::from_str::<Value>(text)
                    .map(|value| lenient_metadata(&value))
                    .unwrap_or_default(),
                error,
            })),
        }
    }
}

/// The name under which serde_json hands a value's raw text to a deserializer that asks for it (its
/// `RawValue` token, enabled by the `raw_value` feature).
const RAW_JSON_TOKEN: &str = "$serde_json::private::RawValue";

impl<'de, K: DeserializeOwned> Deserialize<'de> for Decoded<K> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        // Any JSON value decodes. Asking for the object's raw text lets serde_json hand it over unparsed
        // (`visit_map` below), which `from_json` then decodes straight into `K`: an eighth of the
        // allocations of going through a generic value. A deserializer that cannot give raw text (serde's
        // buffer, used when a watch line has `object` before `type`) hands itself over instead
        // (`visit_newtype_struct`): the object is read into a generic value and decoded from its text.
        deserializer.deserialize_newtype_struct(RAW_JSON_TOKEN, DecodedVisitor(std::marker::PhantomData))
    }
}

/// Reads a [`Decoded`] from raw JSON text when the deserializer offers it, from any value otherwise.
struct DecodedVisitor<K>(std::marker::PhantomData<K>);

impl<'de, K: DeserializeOwned> serde::de::Visitor<'de> for DecodedVisitor<K> {
    type Value = Decoded<K>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a Kubernetes object")
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Self::Value, A::Error> {
        let raw: Box<serde_json::value::RawValue> =
            Deserialize::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        Ok(Decoded::from_json(raw.get()))
    }

    fn visit_newtype_struct<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        let value = Value::deserialize(deserializer)?;
        Ok(Decoded::from_value(&value))
    }
}

/// The identity fields of an object's metadata, each taken only when it has the right type.
fn lenient_metadata(value: &Value) -> ObjectMeta {
    let metadata = &value["metadata"];
    let text = |key: &str| metadata.get(key).and_then(Value::as_str).map(str::to_owned);
    ObjectMeta {
        name: text("name"),
        namespace: text("namespace"),
        uid: text("uid"),
        resource_version: text("resourceVersion"),
        generation: metadata.get("generation").and_then(Value::as_i64),
        ..ObjectMeta::default()
    }
}

/// The type-level half of `kube::Resource` for a wrapper of `K` (a watch's or a store's form of `K`): its kind,
/// group, version, plural and scope are `K`'s.
macro_rules! resource_type_of {
    ($k:ident) => {
        type DynamicType = $k::DynamicType;
        type Scope = $k::Scope;

        fn kind(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
            $k::kind(dt)
        }

        fn group(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
            $k::group(dt)
        }

        fn version(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
            $k::version(dt)
        }

        fn plural(dt: &Self::DynamicType) -> std::borrow::Cow<'_, str> {
            $k::plural(dt)
        }
    };
}
pub(crate) use resource_type_of;

impl<K: Resource> Resource for Decoded<K> {
    resource_type_of!(K);

    fn meta(&self) -> &ObjectMeta {
        match self {
            Decoded::Readable(object) => object.meta(),
            Decoded::Unreadable(unreadable) => &unreadable.metadata,
        }
    }

    fn meta_mut(&mut self) -> &mut ObjectMeta {
        match self {
            Decoded::Readable(object) => object.meta_mut(),
            Decoded::Unreadable(unreadable) => &mut unreadable.metadata,
        }
    }
}

/// A resource that can stand for an object known only by its metadata: the deletion of an object whose
/// last version did not read still has to remove its earlier, readable version from the store.
pub trait FromMetadata: Resource {
    /// An object with `metadata` and everything else empty.
    fn from_metadata(metadata: ObjectMeta) -> Self;
}

/// Implements [`FromMetadata`] for kube custom resources (`metadata`, `spec: Default`, `status: Option`).
#[macro_export]
macro_rules! impl_from_metadata_for_custom_resource {
    ($($kind:ty),* $(,)?) => {$(
        impl $crate::decode::FromMetadata for $kind {
            fn from_metadata(metadata: k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta) -> Self {
                Self { metadata, spec: Default::default(), status: None }
            }
        }
    )*};
}

impl_from_metadata_for_custom_resource!(
    ray_api::RayCluster,
    ray_api::RayJob,
    ray_api::RayService,
    ray_api::RayCronJob
);

impl FromMetadata for k8s_openapi::api::core::v1::Service {
    fn from_metadata(metadata: ObjectMeta) -> Self {
        Self {
            metadata,
            ..Self::default()
        }
    }
}

impl FromMetadata for k8s_openapi::api::batch::v1::Job {
    fn from_metadata(metadata: ObjectMeta) -> Self {
        Self {
            metadata,
            ..Self::default()
        }
    }
}

/// Labels of [`UNDECODABLE_METRIC`].
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct KindLabels {
    /// The kind of the objects (`RayCluster`, `Pod`, ...).
    pub kind: String,
}

/// The gauge family of objects the operator cannot read, by kind (register it once under
/// [`UNDECODABLE_METRIC`]).
pub type UndecodableGauge = Family<KindLabels, Gauge>;

/// Namespace and name: the key of an object within one watch.
type ObjectKey = (String, String);

/// Reports unreadable objects of one watched kind: a log line, a Warning Event on the object and the gauge,
/// once per resourceVersion; forgets an object once it reads again or is deleted. Clones share their state.
#[derive(Clone)]
pub struct UnreadableReporter {
    kind: String,
    api_version: String,
    recorder: Option<EventRecorder>,
    gauge: UndecodableGauge,
    /// The resourceVersion last reported of each currently unreadable object.
    reported: Arc<Mutex<HashMap<ObjectKey, String>>>,
}

impl fmt::Debug for UnreadableReporter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("UnreadableReporter")
            .field("kind", &self.kind)
            .finish_non_exhaustive()
    }
}

/// What [`UnreadableReporter::report`] decided about one unreadable object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ReportOutcome {
    /// First sight of this resourceVersion: logged, counted and an Event published.
    Reported,
    /// This resourceVersion was reported already.
    AlreadyReported,
}

impl UnreadableReporter {
    /// A reporter for objects of `K`; Events go through `recorder` when one is given (tests and tools may
    /// leave it out).
    pub fn new<K>(recorder: Option<EventRecorder>, gauge: UndecodableGauge) -> Self
    where
        K: Resource,
        K::DynamicType: Default,
    {
        let dt = K::DynamicType::default();
        UnreadableReporter {
            kind: K::kind(&dt).into_owned(),
            api_version: K::api_version(&dt).into_owned(),
            recorder,
            gauge,
            reported: Arc::default(),
        }
    }

    /// The kind this reporter reports on.
    pub fn kind(&self) -> &str {
        &self.kind
    }

    fn key(metadata: &ObjectMeta) -> ObjectKey {
        (
            metadata.namespace.clone().unwrap_or_default(),
            metadata.name.clone().unwrap_or_default(),
        )
    }

    fn with_reported<T>(&self, f: impl FnOnce(&mut HashMap<ObjectKey, String>) -> T) -> T {
        // A panic while holding the lock cannot leave the map inconsistent (single inserts and removes).
        let mut reported = self.reported.lock().unwrap_or_else(PoisonError::into_inner);
        f(&mut reported)
    }

    fn set_gauge(&self, count: usize) {
        let count = i64::try_from(count).unwrap_or(i64::MAX);
        self.gauge
            .get_or_create(&KindLabels {
                kind: self.kind.clone(),
            })
            .set(count);
    }

    /// Reports `unreadable` unless its resourceVersion was reported before. The Event is published on a
    /// background task so the watch never waits on the API server for it.
    pub fn report(&self, unreadable: &Unreadable) -> ReportOutcome {
        let key = Self::key(&unreadable.metadata);
        let version = unreadable.metadata.resource_version.clone().unwrap_or_default();
        let (outcome, count) = self.with_reported(|reported| {
            if reported.get(&key) == Some(&version) {
                (ReportOutcome::AlreadyReported, reported.len())
            } else {
                reported.insert(key.clone(), version.clone());
                (ReportOutcome::Reported, reported.len())
            }
        });
        if outcome == ReportOutcome::AlreadyReported {
            return outcome;
        }
        self.set_gauge(count);
        warn!(
            kind = %self.kind,
            namespace = %key.0,
            name = %key.1,
            resource_version = %version,
            field = %unreadable.error.path,
            reason = %unreadable.error.reason,
            "skipping an object that cannot be read; it is read again when it changes"
        );
        if let Some(recorder) = self.recorder.clone() {
            let regarding = ObjectReference {
                api_version: Some(self.api_version.clone()),
                kind: Some(self.kind.clone()),
                name: unreadable.metadata.name.clone(),
                namespace: unreadable.metadata.namespace.clone(),
                uid: unreadable.metadata.uid.clone(),
                resource_version: unreadable.metadata.resource_version.clone(),
                ..ObjectReference::default()
            };
            let spec = undecodable_event(&self.kind, &unreadable.error);
            if let Ok(runtime) = tokio::runtime::Handle::try_current() {
                runtime.spawn(async move { publish_event(&recorder, &regarding, spec).await });
            }
        }
        outcome
    }

    /// Forgets an object that read again or was deleted.
    pub fn forget(&self, metadata: &ObjectMeta) {
        let key = Self::key(metadata);
        let removed = self.with_reported(|reported| reported.remove(&key).map(|_| reported.len()));
        if let Some(count) = removed {
            self.set_gauge(count);
            info!(kind = %self.kind, namespace = %key.0, name = %key.1, "object reads again");
        }
    }

    /// How many objects of this kind are unreadable now.
    pub fn unreadable_count(&self) -> usize {
        self.with_reported(|reported| reported.len())
    }
}

/// The Warning Event on an object that cannot be read.
pub fn undecodable_event(kind: &str, error: &DecodeError) -> EventSpec {
    EventSpec {
        severity: Severity::Warning,
        reason: UNDECODABLE_REASON,
        action: "Decode",
        note: format!("The operator cannot read this {kind} and skips it until it changes: {error}"),
    }
}

/// One watch event of `Decoded<K>` as a watch event of `K`: unreadable objects are reported and left out
/// (`None`), readable ones pass; a deletion always passes so the store drops the object.
pub fn readable_event<K>(event: watcher::Event<Decoded<K>>, reporter: &UnreadableReporter) -> Option<watcher::Event<K>>
where
    K: FromMetadata,
{
    let readable = |decoded: Decoded<K>| match decoded {
        Decoded::Readable(object) => {
            reporter.forget(object.meta());
            Some(*object)
        }
        Decoded::Unreadable(unreadable) => {
            reporter.report(&unreadable);
            None
        }
    };
    match event {
        watcher::Event::Apply(decoded) => readable(decoded).map(watcher::Event::Apply),
        watcher::Event::InitApply(decoded) => readable(decoded).map(watcher::Event::InitApply),
        watcher::Event::Delete(decoded) => {
            let object = match decoded {
                Decoded::Readable(object) => *object,
                Decoded::Unreadable(unreadable) => K::from_metadata(unreadable.metadata),
            };
            reporter.forget(object.meta());
            Some(watcher::Event::Delete(object))
        }
        watcher::Event::Init => Some(watcher::Event::Init),
        watcher::Event::InitDone => Some(watcher::Event::InitDone),
    }
}

/// A watch of `Decoded<K>` as a watch of `K` (see [`readable_event`]); errors pass through, with the
/// watch's own message.
pub fn readable_events<K, S>(
    events: S,
    reporter: UnreadableReporter,
) -> impl Stream<Item = Result<watcher::Event<K>, watcher::Error>> + Send
where
    K: FromMetadata + Send,
    S: Stream<Item = Result<watcher::Event<Decoded<K>>, watcher::Error>> + Send,
{
    events.filter_map(move |event| {
        future::ready(match event {
            Ok(event) => readable_event(event, &reporter).map(Ok),
            Err(error) => Some(Err(error)),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use ray_api::RayCluster;
    use serde_json::json;

    fn cluster_json(name: &str, replicas: Value) -> Value {
        json!({
            "apiVersion": "ray.io/v1", "kind": "RayCluster",
            "metadata": {"name": name, "namespace": "default", "uid": format!("uid-{name}"), "resourceVersion": "7"},
            "spec": {
                "headGroupSpec": {"rayStartParams": {}, "template": {"spec": {"containers": []}}},
                "workerGroupSpecs": [{"groupName": "g", "replicas": replicas, "rayStartParams": {},
                    "template": {"spec": {"containers": []}}}]
            }
        })
    }

    fn reporter() -> UnreadableReporter {
        UnreadableReporter::new::<RayCluster>(None, UndecodableGauge::default())
    }

    #[test]
    fn a_string_where_an_integer_belongs_names_the_field_and_keeps_the_identity() {
        let decoded = Decoded::<RayCluster>::from_value(&cluster_json("bad", json!("1Ei")));
        let Decoded::Unreadable(unreadable) = decoded else {
            panic!("a string replicas must not read");
        };
        assert_eq!(unreadable.error.path, "spec.workerGroupSpecs[0].replicas");
        assert_eq!(unreadable.error.reason, r#"invalid type: string "1Ei", expected i32"#);
        assert_eq!(
            unreadable.error.to_string(),
            r#"spec.workerGroupSpecs[0].replicas: invalid type: string "1Ei", expected i32"#
        );
        assert_eq!(unreadable.metadata.name.as_deref(), Some("bad"));
        assert_eq!(unreadable.metadata.namespace.as_deref(), Some("default"));
        assert_eq!(unreadable.metadata.resource_version.as_deref(), Some("7"));
    }

    #[test]
    fn each_kind_of_misfit_names_its_field() {
        let worker = |group: Value| {
            let mut value = cluster_json("bad", json!(1));
            value["spec"]["workerGroupSpecs"][0] = group;
            value
        };
        let cases = [
            // A map where a string belongs: reported where the map starts.
            (
                worker(
                    json!({"groupName": {"a": 1}, "replicas": 1, "rayStartParams": {}, "template": {"spec": {"containers": []}}}),
                ),
                "spec.workerGroupSpecs[0].groupName",
                "invalid type: map, expected a string",
            ),
            // A required field missing: reported on the object that lacks it.
            (
                worker(
                    json!({"replicas": 1, "rayStartParams": {}, "template": {"spec": {"containers": [{"image": "ray"}]}}}),
                ),
                "spec.workerGroupSpecs[0]",
                "missing field `groupName`",
            ),
            // A number where a list belongs, after other fields.
            (
                worker(
                    json!({"groupName": "g", "rayStartParams": {}, "template": {"spec": {"containers": [], "volumes": 3}}}),
                ),
                "spec.workerGroupSpecs[0].template.spec.volumes",
                "invalid type: integer `3`, expected a sequence",
            ),
            // A misfit inside an embedded Service, which its type reads whole and re-raises without a
            // position: serde_json places it past the enclosing object when the Service is its last field, so
            // the path names that object (a known limit; the reason still names what did not fit).
            (
                {
                    let mut value = worker(
                        json!({"groupName": "g", "rayStartParams": {}, "template": {"spec": {"containers": []}}}),
                    );
                    value["spec"]["headGroupSpec"]["headService"] = json!({"spec": {"selector": ["a"]}});
                    value
                },
                "spec.headGroupSpec",
                "invalid type: sequence, expected a map",
            ),
            // An enum given a number (serde_json calls it a syntax error).
            (
                {
                    let mut value = worker(
                        json!({"groupName": "g", "rayStartParams": {}, "template": {"spec": {"containers": []}}}),
                    );
                    value["spec"]["autoscalerOptions"] = json!({"upscalingMode": 1});
                    value
                },
                "spec.autoscalerOptions.upscalingMode",
                "expected value",
            ),
            // A value that does not parse as its type (a quantity).
            (
                worker(
                    json!({"groupName": "g", "rayStartParams": {}, "template": {"spec": {"containers": [
                        {"name": "w", "resources": {"limits": {"cpu": [1]}}}
                    ]}}}),
                ),
                "spec.workerGroupSpecs[0].template.spec.containers[0].resources.limits.cpu",
                "invalid type: sequence, expected Quantity",
            ),
        ];
        for (value, path, reason) in cases {
            let pretty = serde_json::to_string_pretty(&value).unwrap();
            for (how, error) in [
                ("value", decode_value::<RayCluster>(&value).unwrap_err()),
                ("pretty text", decode_json::<RayCluster>(&pretty).unwrap_err()),
            ] {
                assert_eq!((error.path.as_str(), error.reason.as_str()), (path, reason), "{how}");
            }
        }
    }

    #[test]
    fn a_readable_object_reads_as_usual() {
        let value = cluster_json("good", json!(2));
        let Decoded::Readable(cluster) = Decoded::<RayCluster>::from_value(&value) else {
            panic!("a valid cluster must read");
        };
        assert_eq!(*cluster, serde_json::from_value::<RayCluster>(value).unwrap());
    }

    #[test]
    fn one_unreadable_object_does_not_fail_its_list_page() {
        let page = json!({
            "apiVersion": "ray.io/v1", "kind": "RayClusterList", "metadata": {"resourceVersion": "9"},
            "items": [cluster_json("a", json!(1)), cluster_json("bad", json!(1e308)), cluster_json("c", json!(3))]
        });
        // The page is what the watcher decodes whole: a plain `RayCluster` list fails on the one object.
        assert!(serde_json::from_value::<kube::core::ObjectList<RayCluster>>(page.clone()).is_err());
        let list: kube::core::ObjectList<Decoded<RayCluster>> = serde_json::from_value(page).unwrap();
        let readable: Vec<bool> = list.items.iter().map(|d| matches!(d, Decoded::Readable(_))).collect();
        assert_eq!(readable, [true, false, true]);
    }

    /// A watch line as an API server writes it (`type` first) or as a re-serialising proxy with sorted keys
    /// would (`object` first).
    fn watch_line(event_type: &str, object: &Value, object_first: bool) -> String {
        let (t, o) = (json!(event_type), object.to_string());
        if object_first {
            format!(r#"{{"object":{o},"type":{t}}}"#)
        } else {
            format!(r#"{{"type":{t},"object":{o}}}"#)
        }
    }

    #[test]
    fn watch_lines_read_in_either_key_order() {
        for object_first in [false, true] {
            let good = watch_line("ADDED", &cluster_json("good", json!(2)), object_first);
            let event: kube::core::WatchEvent<Decoded<RayCluster>> = serde_json::from_str(&good).unwrap();
            let kube::core::WatchEvent::Added(Decoded::Readable(cluster)) = event else {
                panic!("object_first={object_first}: a valid cluster must read");
            };
            assert_eq!(
                *cluster,
                serde_json::from_value::<RayCluster>(cluster_json("good", json!(2))).unwrap()
            );

            let bad = watch_line("MODIFIED", &cluster_json("bad", json!("1Ei")), object_first);
            let event: kube::core::WatchEvent<Decoded<RayCluster>> = serde_json::from_str(&bad).unwrap();
            let kube::core::WatchEvent::Modified(Decoded::Unreadable(unreadable)) = event else {
                panic!("object_first={object_first}: only the object fails, not the event");
            };
            assert_eq!(unreadable.error.path, "spec.workerGroupSpecs[0].replicas");
            assert_eq!(unreadable.error.reason, r#"invalid type: string "1Ei", expected i32"#);
            assert_eq!(unreadable.metadata.name.as_deref(), Some("bad"));
        }
    }

    #[test]
    fn text_that_is_not_json_is_unreadable_not_an_error() {
        let Decoded::Unreadable(unreadable) = Decoded::<RayCluster>::from_json("{\"metadata\":") else {
            panic!("truncated text must not read");
        };
        assert_eq!(unreadable.error.path, ".");
        assert_eq!(unreadable.metadata, ObjectMeta::default());
    }

    /// Records which deserializer it was read from, to tell the raw-text route from the generic-value one.
    #[derive(Debug)]
    struct Route(&'static str);

    impl<'de> Deserialize<'de> for Route {
        fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
            serde::de::IgnoredAny::deserialize(deserializer)?;
            Ok(Route(std::any::type_name::<D>()))
        }
    }

    #[test]
    fn text_is_decoded_straight_into_the_type_unless_it_was_buffered() {
        let object = cluster_json("good", json!(2));
        let route = |line: &str| -> &'static str {
            let event: kube::core::WatchEvent<Decoded<Route>> = serde_json::from_str(line).unwrap();
            match event {
                kube::core::WatchEvent::Added(Decoded::Readable(route)) => route.0,
                other => panic!("unexpected {other:?}"),
            }
        };
        // `type` first: the object's text goes straight to its type, no generic value in between.
        let direct = route(&watch_line("ADDED", &object, false));
        assert!(
            direct.contains("serde_json::de::Deserializer") && !direct.contains("Value"),
            "{direct}"
        );
        // `object` first: serde buffered it into a generic value, whose text is then decoded the same way.
        let buffered = route(&watch_line("ADDED", &object, true));
        assert!(
            buffered.contains("serde_json::de::Deserializer") && !buffered.contains("Value"),
            "{buffered}"
        );
    }

    #[test]
    fn garbage_metadata_still_yields_an_unreadable_object() {
        let decoded = Decoded::<RayCluster>::from_value(&json!({"metadata": {"name": 5}, "spec": 1e308}));
        let Decoded::Unreadable(unreadable) = decoded else {
            panic!("garbage must not read");
        };
        assert_eq!(unreadable.metadata, ObjectMeta::default());
    }

    #[test]
    fn each_resource_version_is_reported_once_and_forgotten_when_readable() {
        let reporter = reporter();
        let bad = |rv: &str| {
            let mut value = cluster_json("bad", json!("x"));
            value["metadata"]["resourceVersion"] = json!(rv);
            watcher::Event::Apply(Decoded::<RayCluster>::from_value(&value))
        };
        assert!(readable_event(bad("7"), &reporter).is_none());
        assert_eq!(reporter.unreadable_count(), 1);
        let Decoded::Unreadable(again) = Decoded::<RayCluster>::from_value(&cluster_json("bad", json!("x"))) else {
            panic!()
        };
        assert_eq!(reporter.report(&again), ReportOutcome::AlreadyReported);
        let mut newer = again.clone();
        newer.metadata.resource_version = Some("8".into());
        assert_eq!(reporter.report(&newer), ReportOutcome::Reported);
        let gauge = reporter.gauge.get_or_create(&KindLabels {
            kind: "RayCluster".into(),
        });
        assert_eq!(gauge.get(), 1);

        let fixed = watcher::Event::Apply(Decoded::<RayCluster>::from_value(&cluster_json("bad", json!(1))));
        assert!(matches!(
            readable_event(fixed, &reporter),
            Some(watcher::Event::Apply(_))
        ));
        assert_eq!(reporter.unreadable_count(), 0);
        assert_eq!(gauge.get(), 0);
    }

    #[test]
    fn deleting_an_unreadable_object_removes_it_from_the_store() {
        let reporter = reporter();
        let decoded = Decoded::<RayCluster>::from_value(&cluster_json("bad", json!("x")));
        let Some(watcher::Event::Delete(cluster)) = readable_event(watcher::Event::Delete(decoded), &reporter) else {
            panic!("a deletion must pass");
        };
        assert_eq!(cluster.metadata.name.as_deref(), Some("bad"));
        assert_eq!(cluster.metadata.uid.as_deref(), Some("uid-bad"));
    }

    #[test]
    fn the_event_names_the_field() {
        let error = DecodeError {
            path: "spec.workerGroupSpecs[0].replicas".into(),
            reason: r#"invalid type: string "1Ei", expected i32"#.into(),
        };
        let spec = undecodable_event("RayCluster", &error);
        assert_eq!(spec.reason, UNDECODABLE_REASON);
        assert_eq!(
            spec.note,
            r#"The operator cannot read this RayCluster and skips it until it changes: spec.workerGroupSpecs[0].replicas: invalid type: string "1Ei", expected i32"#
        );
    }
}
