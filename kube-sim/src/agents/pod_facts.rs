//! What the hollow scheduler's indexes read of one pod version, decoded straight from the stored JSON.
//!
//! The store keeps objects only as JSON, and the scheduler sees every version of every pod (creation, binding,
//! each kubelet status write). Decoding each into a whole `serde_json::Value` to read a handful of fields was
//! most of the simulator's CPU at thousands of pods; this reads just those fields.

use std::marker::PhantomData;

use serde::Deserialize;
use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde_json::Value;

use super::quantity::{Resources, pod_requests, requests_from};
use super::scheduler::group_of;
use super::{ANN_GROUP_NAME, ANN_VOLCANO_GROUP_NAME, is_terminal, is_terminating, node_name};
use crate::store::StoredObject;

/// The fields of a pod version that the scheduler's indexes (node usage, pending queue, PodGroup members)
/// depend on.
#[derive(Debug, Clone, PartialEq, Default)]
pub(super) struct PodFacts {
    /// `spec.nodeName`, when set and not empty.
    pub node: Option<String>,
    /// `metadata.deletionTimestamp` is set.
    pub terminating: bool,
    /// `status.phase` is `Succeeded` or `Failed`.
    pub terminal: bool,
    /// `metadata.creationTimestamp` (empty when missing).
    pub created: String,
    /// The PodGroup the pod names (`scheduling.k8s.io/group-name`, else Volcano's annotation).
    pub group: Option<String>,
    /// The pod's scheduling requests ([`pod_requests`]).
    pub requests: Resources,
}

impl PodFacts {
    /// Reads the facts of `pod` from its JSON; a document that does not have the expected shape is decoded
    /// whole and read the way the rest of the simulator reads pods.
    pub fn of(pod: &StoredObject) -> Self {
        match serde_json::from_slice::<PodView>(&pod.json) {
            Ok(view) => view.into_facts(),
            Err(_) => Self::from_value(&pod.value()),
        }
    }

    /// Reads the facts from a decoded pod.
    pub fn from_value(pod: &Value) -> Self {
        Self {
            node: node_name(pod).map(str::to_string),
            terminating: is_terminating(pod),
            terminal: is_terminal(pod),
            created: pod["metadata"]["creationTimestamp"]
                .as_str()
                .unwrap_or_default()
                .to_string(),
            group: group_of(pod).map(str::to_string),
            requests: pod_requests(&pod["spec"]),
        }
    }

    /// Unbound and live: waiting for a node.
    pub fn is_pending(&self) -> bool {
        self.node.is_none() && !self.terminating && !self.terminal
    }
}

/// `T` read only from a JSON object. serde's derived struct readers also accept an array (fields in order);
/// the simulator's other readers see nothing in an array where an object belongs, so neither may this one:
/// anything else is an error, and the partial readers ([`PodFacts::of`], `endpoint_pod`) then read the decoded
/// document instead.
pub(super) struct ObjectOnly<T>(pub(super) T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for ObjectOnly<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct ObjectVisitor<T>(PhantomData<T>);

        impl<'de, T: Deserialize<'de>> Visitor<'de> for ObjectVisitor<T> {
            type Value = T;

            fn expecting(&self, formatter: &mut std::fmt::Formatter) -> std::fmt::Result {
                formatter.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
                T::deserialize(de::value::MapAccessDeserializer::new(map))
            }
        }

        deserializer.deserialize_map(ObjectVisitor(PhantomData)).map(ObjectOnly)
    }
}

impl<T: Default> Default for ObjectOnly<T> {
    fn default() -> Self {
        Self(T::default())
    }
}

/// The three parts of a pod document a partial reader reads (as `M`, `S` and `T`, each only from an object);
/// everything else is skipped unparsed, and a missing part reads as its default.
#[derive(Deserialize, Default)]
#[serde(
    default,
    bound(deserialize = "M: Deserialize<'de> + Default, S: Deserialize<'de> + Default, T: Deserialize<'de> + Default")
)]
pub(super) struct PodParts<M, S, T> {
    pub(super) metadata: ObjectOnly<M>,
    pub(super) spec: ObjectOnly<S>,
    pub(super) status: ObjectOnly<T>,
}

/// The parts of a pod document [`PodFacts`] reads.
type PodView = PodParts<MetaView, SpecView, StatusView>;

/// The read parts of `metadata`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct MetaView {
    creation_timestamp: Option<String>,
    /// `Some` when present and not null.
    deletion_timestamp: Option<serde::de::IgnoredAny>,
    annotations: Option<serde_json::Map<String, Value>>,
}

/// The read parts of `spec`.
#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct SpecView {
    node_name: Option<String>,
    containers: Option<Vec<ObjectOnly<ContainerView>>>,
    init_containers: Option<Vec<ObjectOnly<ContainerView>>>,
    overhead: Value,
}

/// The read part of a container.
#[derive(Deserialize, Default)]
#[serde(default)]
struct ContainerView {
    resources: Value,
}

/// The read part of `status`.
#[derive(Deserialize, Default)]
#[serde(default)]
struct StatusView {
    phase: Option<String>,
}

impl PodView {
    fn into_facts(self) -> PodFacts {
        let (metadata, spec, status) = (self.metadata.0, self.spec.0, self.status.0);
        let annotation = |key: &str| {
            metadata
                .annotations
                .as_ref()
                .and_then(|a| a.get(key))
                .and_then(Value::as_str)
        };
        let group = annotation(ANN_GROUP_NAME)
            .or_else(|| annotation(ANN_VOLCANO_GROUP_NAME))
            .map(str::to_string);
        let requests = requests_from(
            resources_of(&spec.containers),
            resources_of(&spec.init_containers),
            &spec.overhead,
        );
        PodFacts {
            node: spec.node_name.filter(|n| !n.is_empty()),
            terminating: metadata.deletion_timestamp.is_some(),
            terminal: matches!(status.phase.as_deref(), Some("Succeeded" | "Failed")),
            created: metadata.creation_timestamp.unwrap_or_default(),
            group,
            requests,
        }
    }
}

/// The `resources` of each container of a list.
fn resources_of(list: &Option<Vec<ObjectOnly<ContainerView>>>) -> impl Iterator<Item = &Value> {
    list.iter().flatten().map(|c| &c.0.resources)
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn stored(pod: Value) -> std::sync::Arc<StoredObject> {
        StoredObject::new(pod, 7)
    }

    /// The typed read agrees with reading the decoded document, field by field, over the shapes pods take.
    #[test]
    fn typed_read_matches_the_decoded_document() {
        let pods = [
            json!({"metadata": {"name": "a", "namespace": "ns"}}),
            json!({
                "metadata": {"name": "b", "namespace": "ns", "creationTimestamp": "2026-11-28T00:00:00Z",
                             "annotations": {ANN_VOLCANO_GROUP_NAME: "pg-v", "other": "x"}},
                "spec": {"nodeName": "", "containers": [
                    {"name": "c", "resources": {"limits": {"cpu": "2", "memory": "1Gi"}, "requests": {"cpu": "500m"}}},
                    {"name": "d"}],
                    "initContainers": [{"name": "i", "resources": {"requests": {"cpu": "3"}}}],
                    "overhead": {"memory": "10Mi"}},
                "status": {"phase": "Pending"},
            }),
            json!({
                "metadata": {"name": "c", "namespace": "ns", "deletionTimestamp": "2026-11-28T00:00:01Z",
                             "annotations": {ANN_GROUP_NAME: "pg", ANN_VOLCANO_GROUP_NAME: "pg-v"}},
                "spec": {"nodeName": "node-1", "containers": [{"name": "c", "resources": {"requests": {"cpu": 1}}}]},
                "status": {"phase": "Succeeded"},
            }),
            json!({"metadata": {"name": "d", "deletionTimestamp": null}, "spec": {"nodeName": "n"},
                   "status": {"phase": "Failed"}}),
        ];
        for pod in pods {
            let object = stored(pod.clone());
            let typed = serde_json::from_slice::<PodView>(&object.json)
                .expect("a pod document reads as the view")
                .into_facts();
            assert_eq!(typed, PodFacts::from_value(&object.value()), "{pod}");
        }
    }

    #[test]
    fn facts_of_a_pod() {
        let facts = PodFacts::of(&stored(json!({
            "metadata": {"name": "b", "namespace": "ns", "creationTimestamp": "t0",
                         "annotations": {ANN_GROUP_NAME: "pg"}},
            "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "500m"}}}]},
        })));
        assert_eq!(facts.node, None);
        assert!(facts.is_pending());
        assert_eq!(facts.created, "t0");
        assert_eq!(facts.group.as_deref(), Some("pg"));
        assert_eq!(facts.requests.get("cpu"), 500);
        assert_eq!(facts.requests.get("pods"), 1000);
    }

    /// A document whose fields have unexpected types still gives the facts the decoded reading gives.
    #[test]
    fn an_unexpected_shape_falls_back_to_the_decoded_document() {
        let object = stored(json!({
            "metadata": {"name": "x", "annotations": {ANN_GROUP_NAME: 5}},
            "spec": {"nodeName": 3, "containers": "not a list"},
            "status": {"phase": "Running"},
        }));
        assert!(serde_json::from_slice::<PodView>(&object.json).is_err());
        assert_eq!(PodFacts::of(&object), PodFacts::from_value(&object.value()));
    }

    /// Arrays where objects belong are not read positionally (serde's struct readers would): they fall back
    /// to the decoded reading, which sees nothing in them.
    #[test]
    fn arrays_in_place_of_objects_read_as_nothing() {
        for pod in [
            json!({"metadata": {"name": "a"}, "spec": ["node-1"]}),
            json!({"metadata": {"name": "b"}, "status": ["Failed"]}),
            json!({"metadata": {"name": "c"}, "spec": {"containers": [[{"requests": {"cpu": "4"}}]]}}),
            json!({"metadata": ["c", "t0"]}),
        ] {
            let object = stored(pod.clone());
            assert!(serde_json::from_slice::<PodView>(&object.json).is_err(), "{pod}");
            let facts = PodFacts::of(&object);
            assert_eq!(facts, PodFacts::from_value(&object.value()), "{pod}");
            assert_eq!(facts.node, None, "{pod}");
            assert!(!facts.terminal, "{pod}");
            assert_eq!(facts.requests.get("cpu"), 0, "{pod}");
        }
    }
}
