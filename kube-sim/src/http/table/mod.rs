//! Server-side printing: `meta.k8s.io` `Table` answers to GETs and watches that ask for them
//! (`Accept: application/json;as=Table;g=meta.k8s.io;v=v1`), with the columns kube-apiserver prints for each
//! built-in kind, a CRD's `additionalPrinterColumns` for custom resources, and kube's default Name/Created At
//! table for kinds without a printer. Nothing here runs unless a client asks for a Table.

mod age;
mod cluster;
mod columns;
mod core;
mod custom;
pub(super) mod format;
pub mod jsonpath;
mod pod;
mod workloads;

use std::sync::atomic::{AtomicBool, Ordering};

use jiff::Timestamp;
use serde_json::{Map, Value, json};

use crate::error::ApiError;
use crate::kinds::{Gvr, ResourceInfo};
use crate::store::{ListResult, Store, StoredObject};
use columns::{Col, NAME, Printer as BuiltinPrinter, Row};
use custom::CustomColumns;

/// The `meta.k8s.io` group of `Table` and `PartialObjectMetadata`.
const META_GROUP: &str = "meta.k8s.io";
/// kube-apiserver's answer when no offered media type can be served.
#[cfg(feature = "protobuf")]
const NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, application/yaml, application/vnd.kubernetes.protobuf";
/// The same, from a build without protobuf (the crate's `protobuf` feature).
#[cfg(not(feature = "protobuf"))]
const NOT_ACCEPTABLE: &str = "only the following media types are accepted: application/json, application/yaml";

/// The `meta.k8s.io` version a client asked its Table in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TableVersion {
    /// `meta.k8s.io/v1`.
    V1,
    /// `meta.k8s.io/v1beta1`.
    V1beta1,
}

impl TableVersion {
    fn api_version(self) -> &'static str {
        match self {
            Self::V1 => "meta.k8s.io/v1",
            Self::V1beta1 => "meta.k8s.io/v1beta1",
        }
    }
}

/// What each row carries in `object` (`?includeObject=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IncludeObject {
    /// `null`.
    None,
    /// A `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object.
    Object,
}

impl IncludeObject {
    /// Parses the query parameter; kube-apiserver's 400 for an unknown value.
    pub fn parse(value: Option<&str>) -> Result<Self, ApiError> {
        match value {
            None | Some("" | "Metadata") => Ok(Self::Metadata),
            Some("None") => Ok(Self::None),
            Some("Object") => Ok(Self::Object),
            Some(other) => Err(ApiError::bad_request(format!(
                "unrecognized includeObject value: {other:?}"
            ))),
        }
    }
}

/// A request for Table output.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TableRequest {
    /// The Table's `apiVersion`.
    pub version: TableVersion,
    /// What rows carry.
    pub include: IncludeObject,
}

/// The first media type of an `Accept` list the server can answer, when it is a Table (parameters in any
/// order). `Ok(None)` when the client prefers something else (plain JSON, metadata); 406 when it only offers
/// Tables the server cannot produce.
pub fn negotiate(accept: &str) -> Result<Option<TableVersion>, ApiError> {
    let mut asked_table = false;
    for entry in accept.split(',') {
        let mut parts = entry.split(';').map(str::trim);
        let media = parts.next().unwrap_or_default().to_ascii_lowercase();
        let (mut as_kind, mut group, mut version) = (None, None, None);
        for p in parts {
            if let Some((k, v)) = p.split_once('=') {
                let v = v.trim().trim_matches('"');
                match k.trim() {
                    "as" => as_kind = Some(v),
                    "g" => group = Some(v),
                    "v" => version = Some(v),
                    _ => {}
                }
            }
        }
        if as_kind != Some("Table") {
            return Ok(None);
        }
        asked_table = true;
        let json = matches!(media.as_str(), "application/json" | "application/*" | "*/*");
        match (json, group, version) {
            (true, Some(META_GROUP), Some("v1")) => return Ok(Some(TableVersion::V1)),
            (true, Some(META_GROUP), Some("v1beta1")) => return Ok(Some(TableVersion::V1beta1)),
            _ => {}
        }
    }
    if asked_table {
        Err(ApiError::new(406, "NotAcceptable", NOT_ACCEPTABLE))
    } else {
        Ok(None)
    }
}

/// How rows of one resource are printed.
#[derive(Debug, Clone)]
enum Printer {
    Builtin(&'static BuiltinPrinter),
    Custom(CustomColumns),
    /// kube's default table convertor: Name and Created At.
    Default,
}

const CREATED_AT: Col = Col {
    ty: "date",
    ..Col::string("Created At", columns::AGE_DOC)
};

macro_rules! printer {
    ($group:expr, $resource:expr, $columns:expr, $row:expr) => {
        BuiltinPrinter {
            group: $group,
            resource: $resource,
            columns: $columns,
            row: $row,
        }
    };
}

/// Every built-in printer, keyed by group and plural as kube-apiserver registers them (kinds kube-sim does not
/// serve yet light up once they are registered).
static BUILTIN: &[BuiltinPrinter] = &[
    printer!("", "pods", pod::COLUMNS, pod::row),
    printer!("", "services", core::SERVICE, core::service),
    printer!("", "nodes", core::NODE, core::node),
    printer!("", "events", core::EVENT, core::event),
    printer!("events.k8s.io", "events", core::EVENT, core::event_v1),
    printer!("", "namespaces", core::NAMESPACE, core::namespace),
    printer!("", "secrets", core::SECRET, core::secret),
    printer!("", "configmaps", core::CONFIG_MAP, core::config_map),
    printer!("", "serviceaccounts", core::SERVICE_ACCOUNT, core::service_account),
    printer!("", "endpoints", core::ENDPOINTS, core::endpoints),
    printer!("", "persistentvolumeclaims", core::PVC, core::pvc),
    printer!("apps", "deployments", workloads::DEPLOYMENT, workloads::deployment),
    printer!("apps", "replicasets", workloads::REPLICA_SET, workloads::replica_set),
    printer!("apps", "statefulsets", workloads::STATEFUL_SET, workloads::stateful_set),
    printer!("apps", "daemonsets", workloads::DAEMON_SET, workloads::daemon_set),
    printer!("batch", "jobs", workloads::JOB, workloads::job),
    printer!("batch", "cronjobs", workloads::CRON_JOB, workloads::cron_job),
    printer!("networking.k8s.io", "ingresses", cluster::INGRESS, cluster::ingress),
    printer!(
        "networking.k8s.io",
        "networkpolicies",
        cluster::NETWORK_POLICY,
        cluster::network_policy
    ),
    printer!(
        "networking.k8s.io",
        "ingressclasses",
        cluster::INGRESS_CLASS,
        cluster::ingress_class
    ),
    printer!(
        "discovery.k8s.io",
        "endpointslices",
        cluster::ENDPOINT_SLICE,
        cluster::endpoint_slice
    ),
    printer!(
        "rbac.authorization.k8s.io",
        "rolebindings",
        cluster::ROLE_BINDING,
        cluster::role_binding
    ),
    printer!(
        "rbac.authorization.k8s.io",
        "clusterrolebindings",
        cluster::CLUSTER_ROLE_BINDING,
        cluster::role_binding
    ),
    printer!("coordination.k8s.io", "leases", cluster::LEASE, cluster::lease),
    printer!(
        "admissionregistration.k8s.io",
        "validatingwebhookconfigurations",
        cluster::WEBHOOK_CONFIGURATION,
        cluster::webhook_configuration
    ),
    printer!(
        "admissionregistration.k8s.io",
        "mutatingwebhookconfigurations",
        cluster::WEBHOOK_CONFIGURATION,
        cluster::webhook_configuration
    ),
    printer!(
        "scheduling.k8s.io",
        "priorityclasses",
        cluster::PRIORITY_CLASS,
        cluster::priority_class
    ),
];

impl Printer {
    fn resolve(store: &Store, info: &ResourceInfo) -> Self {
        let gvr = &info.gvr;
        if info.custom {
            let crd_name = format!("{}.{}", gvr.resource, gvr.group);
            return match store.get(&Gvr::crds(), None, &crd_name) {
                Ok(crd) => Self::Custom(CustomColumns::from_crd(&crd.value(), &gvr.version)),
                Err(_) => Self::Custom(CustomColumns::age_only()),
            };
        }
        BUILTIN
            .iter()
            .find(|p| p.group == gvr.group && p.resource == gvr.resource)
            .map_or(Self::Default, Self::Builtin)
    }

    fn definitions(&self) -> Vec<Value> {
        match self {
            Self::Builtin(p) => p.columns.iter().copied().map(Col::to_json).collect(),
            Self::Custom(c) => c.definitions(),
            Self::Default => vec![NAME.to_json(), CREATED_AT.to_json()],
        }
    }

    fn row(&self, obj: &Value, now: Timestamp) -> Row {
        match self {
            Self::Builtin(p) => (p.row)(obj, now),
            Self::Custom(c) => c.row(obj, now),
            Self::Default => vec![
                format::name(obj),
                json!(age::rfc3339(&obj["metadata"]["creationTimestamp"])),
            ]
            .into(),
        }
    }
}

/// Builds the Tables of one request.
#[derive(Debug)]
pub struct TableWriter {
    printer: Printer,
    request: TableRequest,
    /// Watches send the column definitions with the first event only.
    headers_sent: AtomicBool,
}

impl TableWriter {
    /// The writer for `info`'s resource (custom resources read their CRD once, here).
    pub fn new(store: &Store, info: &ResourceInfo, request: TableRequest) -> Self {
        Self {
            printer: Printer::resolve(store, info),
            request,
            headers_sent: AtomicBool::new(false),
        }
    }

    fn row_json(&self, obj: &StoredObject, now: Timestamp) -> Value {
        let row = self.printer.row(&obj.value(), now);
        let object = match self.request.include {
            IncludeObject::None => Value::Null,
            IncludeObject::Metadata => json!({
                "kind": "PartialObjectMetadata",
                "apiVersion": self.request.version.api_version(),
                "metadata": obj.value()["metadata"],
            }),
            IncludeObject::Object => obj.value(),
        };
        let mut out = Map::new();
        out.insert("cells".into(), Value::Array(row.cells));
        if let Some(c) = row.conditions {
            out.insert("conditions".into(), c);
        }
        out.insert("object".into(), object);
        Value::Object(out)
    }

    fn table(&self, metadata: Map<String, Value>, definitions: Value, rows: Vec<Value>) -> Value {
        json!({
            "kind": "Table",
            "apiVersion": self.request.version.api_version(),
            "metadata": metadata,
            "columnDefinitions": definitions,
            "rows": rows,
        })
    }

    /// The Table of a list response (resourceVersion, continue and remainingItemCount as the list has them).
    pub fn list(&self, res: &ListResult) -> Value {
        let now = Timestamp::now();
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!(res.resource_version.to_string()));
        if let Some(c) = &res.continue_token {
            meta.insert("continue".into(), json!(c));
        }
        if let Some(r) = res.remaining {
            meta.insert("remainingItemCount".into(), json!(r));
        }
        let rows = res.items.iter().map(|o| self.row_json(o, now)).collect();
        self.table(meta, Value::Array(self.printer.definitions()), rows)
    }

    /// The one-row Table of a single object.
    pub fn object(&self, obj: &StoredObject) -> Value {
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!(obj.rv.to_string()));
        let rows = vec![self.row_json(obj, Timestamp::now())];
        self.table(meta, Value::Array(self.printer.definitions()), rows)
    }

    /// The one-row Table of a watch event: column definitions on the first event only, `null` after, as
    /// kube-apiserver's watch encoder sends them.
    pub fn watch_object(&self, obj: &StoredObject) -> Value {
        let mut meta = Map::new();
        meta.insert("resourceVersion".into(), json!(obj.rv.to_string()));
        let definitions = if self.headers_sent.swap(true, Ordering::Relaxed) {
            Value::Null
        } else {
            Value::Array(self.printer.definitions())
        };
        self.table(meta, definitions, vec![self.row_json(obj, Timestamp::now())])
    }
}

/// The fixed "now" of the printers' unit tests.
#[cfg(test)]
pub(crate) mod test_clock {
    /// 2026-01-01T01:00:00Z.
    pub fn now() -> jiff::Timestamp {
        jiff::Timestamp::from_second(1_767_229_200).unwrap_or(jiff::Timestamp::UNIX_EPOCH)
    }

    /// The metadata of an object named `x` created at `created`.
    pub fn meta_created(created: &str) -> serde_json::Value {
        serde_json::json!({"name": "x", "creationTimestamp": created})
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn accept_negotiation_takes_the_first_servable_media_type() {
        let kubectl = "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json";
        assert_eq!(negotiate(kubectl).unwrap(), Some(TableVersion::V1));
        assert_eq!(
            negotiate("application/json; g=meta.k8s.io; as=Table; v=v1beta1").unwrap(),
            Some(TableVersion::V1beta1)
        );
        // An unservable Table version is skipped for the next entry.
        assert_eq!(
            negotiate("application/json;as=Table;v=v2;g=meta.k8s.io,application/json;as=Table;v=v1;g=meta.k8s.io")
                .unwrap(),
            Some(TableVersion::V1)
        );
        assert_eq!(negotiate("application/json").unwrap(), None);
        assert_eq!(negotiate("").unwrap(), None);
        assert_eq!(
            negotiate("application/json;as=PartialObjectMetadataList;v=v1;g=meta.k8s.io").unwrap(),
            None
        );
        let e = negotiate("application/json;as=Table;v=v2;g=meta.k8s.io").unwrap_err();
        assert_eq!(e.code, 406);
        assert_eq!(e.message, NOT_ACCEPTABLE);
    }

    #[test]
    fn include_object_values_as_kube_apiserver_parses_them() {
        assert_eq!(IncludeObject::parse(None).unwrap(), IncludeObject::Metadata);
        assert_eq!(IncludeObject::parse(Some("None")).unwrap(), IncludeObject::None);
        assert_eq!(IncludeObject::parse(Some("Object")).unwrap(), IncludeObject::Object);
        let e = IncludeObject::parse(Some("Everything")).unwrap_err();
        assert_eq!(e.code, 400);
        assert_eq!(e.message, "unrecognized includeObject value: \"Everything\"");
    }

    #[test]
    fn every_builtin_printer_has_one_cell_per_column() {
        let obj = json!({"metadata": {"name": "x", "creationTimestamp": "2026-01-01T00:00:00Z"}});
        for p in BUILTIN {
            let row = (p.row)(&obj, Timestamp::now());
            assert_eq!(row.cells.len(), p.columns.len(), "{}/{}", p.group, p.resource);
            assert_eq!(p.columns.iter().filter(|c| c.format == "name").count(), 1);
        }
    }
}
