//! Which protobuf message carries each built-in kind, and how each message's fields are named and
//! required in JSON.
//!
//! The messages come from the upstream `generated.proto` files (`kube-sim/proto/`, compiled by `build.rs`); the JSON
//! side comes from `k8s-openapi`'s schemas (the OpenAPI definitions kube-apiserver publishes). Joining the
//! two by type name gives, for every field, its JSON name (`$ref` for the proto field `ref`,
//! `x-kubernetes-int-or-string` for `xKubernetesIntOrString`) and whether Go marshals it without
//! `omitempty` (an OpenAPI `required` field): the wire does not carry that, and Go's JSON differs on it.

use std::collections::{HashMap, HashSet};
use std::sync::LazyLock;

use k8s_openapi::schemars::{JsonSchema, SchemaGenerator};
use protobuf::Message;
use protobuf::descriptor::FileDescriptorSet;
use protobuf::reflect::{FileDescriptor, MessageDescriptor};
use serde_json::Value;

/// The compiled descriptor set of `kube-sim/proto/`.
static DESCRIPTOR_SET: &[u8] = include_bytes!(concat!(env!("OUT_DIR"), "/kubernetes.fds"));

/// The `.proto` files, by package (`api.core.v1`). Empty if the embedded set cannot be read (it always can:
/// `build.rs` wrote it), so every lookup then fails cleanly instead of panicking.
fn files() -> &'static HashMap<String, FileDescriptor> {
    static FILES: LazyLock<HashMap<String, FileDescriptor>> = LazyLock::new(|| {
        FileDescriptorSet::parse_from_bytes(DESCRIPTOR_SET)
            .map_err(|e| e.to_string())
            .and_then(|set| FileDescriptor::new_dynamic_fds(set.file, &[]).map_err(|e| e.to_string()))
            .map(|files| files.into_iter().map(|f| (f.package().to_string(), f)).collect())
            .unwrap_or_else(|e| {
                tracing::error!(error = %e, "the compiled Kubernetes descriptors cannot be read");
                HashMap::new()
            })
    });
    &FILES
}

/// The message `name` of the package `package`.
pub(super) fn message_in(package: &str, name: &str) -> Option<MessageDescriptor> {
    files().get(package)?.message_by_package_relative_name(name)
}

/// The JSON face of one protobuf message.
#[derive(Debug, Default)]
pub(super) struct MessageShape {
    /// Proto field name to JSON property name, where they differ.
    renamed: HashMap<String, String>,
    /// JSON property name to proto field name, where they differ.
    renamed_back: HashMap<String, String>,
    /// JSON properties Go writes even when empty (no `omitempty`).
    required: HashSet<String>,
    /// Proto fields of embedded Go structs (`json:",inline"`, such as `IngressRule.ingressRuleValue` or
    /// `Volume.volumeSource`), whose fields JSON writes into the parent object.
    inlined: HashSet<String>,
}

impl MessageShape {
    /// The JSON property name of the proto field `field`.
    pub(super) fn json_name<'a>(&'a self, field: &'a str) -> &'a str {
        self.renamed.get(field).map_or(field, String::as_str)
    }

    /// The proto field name of the JSON property `property`.
    pub(super) fn proto_name<'a>(&'a self, property: &'a str) -> &'a str {
        self.renamed_back.get(property).map_or(property, String::as_str)
    }

    /// Whether the proto field `field` is an embedded struct that JSON flattens into its parent.
    pub(super) fn is_inlined(&self, field: &str) -> bool {
        self.inlined.contains(field)
    }

    /// Whether Go writes the JSON property even when it is empty.
    pub(super) fn is_required(&self, property: &str) -> bool {
        self.required.contains(property)
    }
}

/// Every built-in kind that has a protobuf form, with the shapes of all the messages they reach.
#[derive(Debug)]
pub(super) struct Registry {
    /// `(apiVersion, kind)` to message (`PodList` included).
    kinds: HashMap<(String, String), MessageDescriptor>,
    /// Kinds of `meta.k8s.io` that any group version carries (`Status`, `DeleteOptions`, ...).
    meta_kinds: HashMap<String, MessageDescriptor>,
    /// Proto full name to JSON shape.
    shapes: HashMap<String, MessageShape>,
}

/// The proto package of `meta.k8s.io/v1`.
const META: &str = "apimachinery.pkg.apis.meta.v1";

static EMPTY_SHAPE: LazyLock<MessageShape> = LazyLock::new(MessageShape::default);

/// The registry, built once on first use.
pub(super) fn registry() -> &'static Registry {
    static REGISTRY: LazyLock<Registry> = LazyLock::new(Registry::build);
    &REGISTRY
}

/// The proto full name of the OpenAPI definition `name` (`io.k8s.api.core.v1.Pod` -> `api.core.v1.Pod`).
fn proto_name_of_definition(name: &str) -> Option<String> {
    let rest = name.strip_prefix("io.k8s.")?;
    Some(
        rest.replace("apiextensions-apiserver", "apiextensions_apiserver")
            .replace("kube-aggregator", "kube_aggregator"),
    )
}

/// Folds a name for matching proto field names with JSON names (`$ref`/`ref`, `x-kubernetes-a-b`/`xKubernetesAB`).
fn fold(name: &str) -> String {
    name.chars()
        .filter(char::is_ascii_alphanumeric)
        .map(|c| c.to_ascii_lowercase())
        .collect()
}

struct Builder {
    registry: Registry,
    schemas: SchemaGenerator,
}

impl Builder {
    /// Registers the kind `K` (and its list) from the proto package `package`.
    fn kind<K: k8s_openapi::Resource + JsonSchema>(&mut self, package: &str) {
        self.schemas.subschema_for::<K>();
        for kind in [K::KIND.to_string(), format!("{}List", K::KIND)] {
            if let Some(message) = message_in(package, &kind) {
                self.registry.kinds.insert((K::API_VERSION.to_string(), kind), message);
            }
        }
    }

    /// Registers the `meta.k8s.io/v1` kind `kind` (typed by `T` in OpenAPI).
    fn meta_kind<T: JsonSchema>(&mut self, kind: &str) {
        self.schemas.subschema_for::<T>();
        self.meta_kind_without_schema(kind);
    }

    /// Registers the `meta.k8s.io/v1` kind `kind`, which OpenAPI does not describe (no field of it is
    /// written when empty).
    fn meta_kind_without_schema(&mut self, kind: &str) {
        if let Some(message) = message_in(META, kind) {
            self.registry.meta_kinds.insert(kind.to_string(), message);
        }
    }

    fn finish(mut self) -> Registry {
        let definitions = self.schemas.definitions().clone();
        let mut seen = HashSet::new();
        let roots: Vec<MessageDescriptor> = self
            .registry
            .kinds
            .values()
            .chain(self.registry.meta_kinds.values())
            .cloned()
            .collect();
        let mut stack = roots;
        while let Some(message) = stack.pop() {
            if !seen.insert(message.full_name().to_string()) {
                continue;
            }
            let definition = definitions
                .iter()
                .find(|(name, _)| proto_name_of_definition(name).as_deref() == Some(message.full_name()))
                .map(|(_, d)| d);
            let properties: Vec<&str> = definition
                .and_then(|d| d.get("properties"))
                .and_then(Value::as_object)
                .map(|p| p.keys().map(String::as_str).collect())
                .unwrap_or_default();
            let mut shape = MessageShape::default();
            for field in message.fields() {
                let name = field.name();
                if !properties.contains(&name)
                    && let Some(property) = properties.iter().find(|p| fold(p) == fold(name))
                {
                    shape.renamed.insert(name.to_string(), property.to_string());
                    shape.renamed_back.insert(property.to_string(), name.to_string());
                }
                if let protobuf::reflect::RuntimeFieldType::Singular(protobuf::reflect::RuntimeType::Message(child)) =
                    field.runtime_field_type()
                    && !properties.is_empty()
                    && !properties.iter().any(|p| fold(p) == fold(name))
                    && child.fields().any(|f| properties.contains(&f.name()))
                {
                    shape.inlined.insert(name.to_string());
                }
                if let protobuf::reflect::RuntimeFieldType::Singular(protobuf::reflect::RuntimeType::Message(m))
                | protobuf::reflect::RuntimeFieldType::Repeated(protobuf::reflect::RuntimeType::Message(m))
                | protobuf::reflect::RuntimeFieldType::Map(_, protobuf::reflect::RuntimeType::Message(m)) =
                    field.runtime_field_type()
                {
                    stack.push(m);
                }
            }
            shape.required = definition
                .and_then(|d| d.get("required"))
                .and_then(Value::as_array)
                .map(|r| r.iter().filter_map(Value::as_str).map(str::to_string).collect())
                .unwrap_or_default();
            self.registry.shapes.insert(message.full_name().to_string(), shape);
        }
        self.registry
    }
}

impl Registry {
    fn build() -> Self {
        use k8s_openapi::api as o;
        use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1 as ox;
        use k8s_openapi::apimachinery::pkg::apis::meta::v1 as om;
        let mut b = Builder {
            registry: Registry {
                kinds: HashMap::new(),
                meta_kinds: HashMap::new(),
                shapes: HashMap::new(),
            },
            schemas: SchemaGenerator::default(),
        };
        let core = "api.core.v1";
        b.kind::<o::core::v1::Pod>(core);
        b.kind::<o::core::v1::Service>(core);
        b.kind::<o::core::v1::ServiceAccount>(core);
        b.kind::<o::core::v1::ConfigMap>(core);
        b.kind::<o::core::v1::Secret>(core);
        b.kind::<o::core::v1::PersistentVolumeClaim>(core);
        b.kind::<o::core::v1::PersistentVolume>(core);
        b.kind::<o::core::v1::Namespace>(core);
        b.kind::<o::core::v1::Node>(core);
        b.kind::<o::core::v1::Event>(core);
        b.kind::<o::core::v1::Endpoints>(core);
        b.kind::<o::core::v1::ResourceQuota>(core);
        b.kind::<o::core::v1::LimitRange>(core);
        b.kind::<o::core::v1::ReplicationController>(core);
        b.kind::<o::core::v1::PodTemplate>(core);
        b.kind::<o::core::v1::Binding>(core);
        let apps = "api.apps.v1";
        b.kind::<o::apps::v1::Deployment>(apps);
        b.kind::<o::apps::v1::ReplicaSet>(apps);
        b.kind::<o::apps::v1::StatefulSet>(apps);
        b.kind::<o::apps::v1::DaemonSet>(apps);
        b.kind::<o::apps::v1::ControllerRevision>(apps);
        let batch = "api.batch.v1";
        b.kind::<o::batch::v1::Job>(batch);
        b.kind::<o::batch::v1::CronJob>(batch);
        let rbac = "api.rbac.v1";
        b.kind::<o::rbac::v1::Role>(rbac);
        b.kind::<o::rbac::v1::RoleBinding>(rbac);
        b.kind::<o::rbac::v1::ClusterRole>(rbac);
        b.kind::<o::rbac::v1::ClusterRoleBinding>(rbac);
        b.kind::<o::coordination::v1::Lease>("api.coordination.v1");
        let networking = "api.networking.v1";
        b.kind::<o::networking::v1::Ingress>(networking);
        b.kind::<o::networking::v1::IngressClass>(networking);
        b.kind::<o::networking::v1::NetworkPolicy>(networking);
        b.kind::<o::discovery::v1::EndpointSlice>("api.discovery.v1");
        b.kind::<o::events::v1::Event>("api.events.v1");
        let admission = "api.admissionregistration.v1";
        b.kind::<o::admissionregistration::v1::ValidatingWebhookConfiguration>(admission);
        b.kind::<o::admissionregistration::v1::MutatingWebhookConfiguration>(admission);
        b.kind::<ox::CustomResourceDefinition>("apiextensions_apiserver.pkg.apis.apiextensions.v1");
        let policy = "api.policy.v1";
        b.kind::<o::policy::v1::PodDisruptionBudget>(policy);
        b.kind::<o::policy::v1::Eviction>(policy);
        b.kind::<o::scheduling::v1::PriorityClass>("api.scheduling.v1");
        let authentication = "api.authentication.v1";
        b.kind::<o::authentication::v1::TokenRequest>(authentication);
        b.kind::<o::authentication::v1::TokenReview>(authentication);
        let authorization = "api.authorization.v1";
        b.kind::<o::authorization::v1::SubjectAccessReview>(authorization);
        b.kind::<o::authorization::v1::SelfSubjectAccessReview>(authorization);
        b.kind::<o::authorization::v1::LocalSubjectAccessReview>(authorization);
        b.kind::<o::authorization::v1::SelfSubjectRulesReview>(authorization);
        let autoscaling = "api.autoscaling.v1";
        b.kind::<o::autoscaling::v1::Scale>(autoscaling);
        b.kind::<o::autoscaling::v1::HorizontalPodAutoscaler>(autoscaling);
        b.kind::<o::storage::v1::StorageClass>("api.storage.v1");
        b.meta_kind::<om::Status>("Status");
        b.meta_kind::<om::DeleteOptions>("DeleteOptions");
        b.meta_kind_without_schema("WatchEvent");
        b.meta_kind_without_schema("PartialObjectMetadata");
        b.meta_kind_without_schema("PartialObjectMetadataList");
        b.finish()
    }

    /// The message of `kind` in `api_version`, for a built-in kind (`PodList` too) or a `meta.k8s.io`
    /// kind such as `Status`.
    pub(super) fn message(&self, api_version: &str, kind: &str) -> Option<&MessageDescriptor> {
        self.kinds
            .get(&(api_version.to_string(), kind.to_string()))
            .or_else(|| self.meta_kinds.get(kind))
    }

    /// The message of a `meta.k8s.io/v1` kind (`Status`, `WatchEvent`, ...).
    pub(super) fn meta_message(&self, kind: &str) -> Option<&MessageDescriptor> {
        self.meta_kinds.get(kind)
    }

    /// The JSON shape of the message named `full_name`.
    pub(super) fn shape(&self, full_name: &str) -> &MessageShape {
        self.shapes.get(full_name).unwrap_or(&EMPTY_SHAPE)
    }

    /// Every `(apiVersion, kind)` with a protobuf form (for the round-trip tests).
    #[cfg(test)]
    pub(super) fn kinds(&self) -> impl Iterator<Item = &(String, String)> {
        self.kinds.keys()
    }
}
