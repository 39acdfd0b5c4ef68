//! Reading `render`'s input: YAML documents, read strictly and validated with KubeRay's rules.

use ray_api::validation::{ValidationOptions, validate_ray_cluster, validate_ray_job, validate_ray_service};
use ray_api::{RayCluster, RayJob, RayService};
use std::sync::OnceLock;

use ray_api::defaults::{apply_schema_defaults, crd_schema};
use ray_podgen::random::SuffixSource;
use serde_json::Value;

/// Why an input document was rejected; the message names the file, the document and the field.
#[derive(Debug, thiserror::Error)]
pub enum InputError {
    /// The file is not YAML.
    #[error("{file}: {message}")]
    Yaml {
        /// The input's name.
        file: String,
        /// The parser's message.
        message: String,
    },
    /// The document does not fit its kind (unknown field, wrong type).
    #[error("{file}: document {index} ({kind}): {message}")]
    Parse {
        /// The input's name.
        file: String,
        /// Zero-based document index in the file.
        index: usize,
        /// The document's kind.
        kind: String,
        /// What is wrong, with the field path.
        message: String,
    },
    /// KubeRay's validation rejects the document.
    #[error("{file}: document {index} ({kind} {name}): {field}: {message}")]
    Invalid {
        /// The input's name.
        file: String,
        /// Zero-based document index in the file.
        index: usize,
        /// The document's kind.
        kind: String,
        /// The resource's name.
        name: String,
        /// The field path.
        field: String,
        /// KubeRay's validation message.
        message: String,
    },
    /// A generator refused the document (a feature this build does not render).
    #[error("{file}: document {index} ({kind} {name}): {message}")]
    Render {
        /// The input's name.
        file: String,
        /// Zero-based document index in the file.
        index: usize,
        /// The document's kind.
        kind: String,
        /// The resource's name.
        name: String,
        /// What went wrong.
        message: String,
    },
}

/// Where a document came from, for error messages.
#[derive(Clone, Debug)]
pub struct Origin {
    /// The input's name.
    pub file: String,
    /// Zero-based document index.
    pub index: usize,
}

impl Origin {
    /// A generator error for this document.
    pub fn render_error(&self, kind: &str, name: &str, message: impl std::fmt::Display) -> InputError {
        InputError::Render {
            file: self.file.clone(),
            index: self.index,
            kind: kind.to_owned(),
            name: name.to_owned(),
            message: message.to_string(),
        }
    }
}

/// One input document.
pub enum Document {
    /// A valid RayCluster.
    Cluster {
        /// Where it came from.
        origin: Origin,
        /// The cluster.
        cluster: Box<RayCluster>,
    },
    /// A valid RayJob.
    Job {
        /// Where it came from.
        origin: Origin,
        /// The job.
        job: Box<RayJob>,
    },
    /// A valid RayService.
    Service {
        /// Where it came from.
        origin: Origin,
        /// The service.
        service: Box<RayService>,
    },
    /// A kind `render` does not render (ConfigMap, Queue, ...).
    Skipped {
        /// Zero-based document index.
        index: usize,
        /// Its kind.
        kind: String,
    },
}

/// The schema of our CRD for `kind`, generated once.
fn schema_of(kind: &str) -> Option<&'static Value> {
    static SCHEMAS: OnceLock<Vec<(String, Value)>> = OnceLock::new();
    SCHEMAS
        .get_or_init(|| {
            ray_api::crds::all_crds()
                .iter()
                .map(|crd| (crd.spec.names.kind.clone(), crd_schema(crd)))
                .collect()
        })
        .iter()
        .find(|(k, _)| k == kind)
        .map(|(_, schema)| schema)
}

/// The namespace `kubectl create -f` puts a document without one in.
const DEFAULT_NAMESPACE: &str = "default";

/// What the API server does to a document before the operator sees it: a missing namespace becomes
/// `default`, a `generateName` becomes a name, and the CRD's defaults are filled in.
fn as_stored(value: &mut Value, kind: &str, suffixes: &mut dyn SuffixSource) {
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut) {
        meta.entry("namespace")
            .or_insert_with(|| Value::String(DEFAULT_NAMESPACE.to_owned()));
    }
    if let Some(meta) = value.get_mut("metadata").and_then(Value::as_object_mut)
        && !meta.contains_key("name")
        && let Some(prefix) = meta.get("generateName").and_then(Value::as_str)
    {
        let name = format!("{prefix}{}", suffixes.next_suffix());
        meta.insert("name".to_owned(), Value::String(name));
    }
    if let Some(schema) = schema_of(kind) {
        apply_schema_defaults(value, schema);
    }
}

/// Reads, strictly parses and validates every document of one input: `Err` when the input is not YAML,
/// else one result per document, so a caller can go on past an invalid one.
pub fn read_documents(
    file: &str,
    text: &str,
    options: &ValidationOptions,
    suffixes: &mut dyn SuffixSource,
) -> Result<Vec<Result<Document, InputError>>, InputError> {
    let values: Vec<Value> = ray_api::yaml::from_yaml_documents(text).map_err(|e| InputError::Yaml {
        file: file.to_owned(),
        message: e.to_string(),
    })?;
    let mut documents = Vec::new();
    for (index, value) in values.into_iter().enumerate() {
        if value.is_null() {
            continue;
        }
        documents.push(read_document(file, index, value, options, suffixes));
    }
    Ok(documents)
}

/// Reads, strictly parses and validates document `index` of `file`.
fn read_document(
    file: &str,
    index: usize,
    value: Value,
    options: &ValidationOptions,
    suffixes: &mut dyn SuffixSource,
) -> Result<Document, InputError> {
    let kind = value.get("kind").and_then(Value::as_str).unwrap_or_default().to_owned();
    let api_version = value.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    if api_version != <RayCluster as kube::Resource>::api_version(&()) {
        return Ok(Document::Skipped { index, kind });
    }
    let origin = Origin {
        file: file.to_owned(),
        index,
    };
    let mut read = Reader {
        file,
        index,
        kind: &kind,
        suffixes,
    };
    match kind.as_str() {
        "RayCluster" => Ok(Document::Cluster {
            cluster: Box::new(read.typed(value, |c: &RayCluster| validate_ray_cluster(c, options))?),
            origin,
        }),
        "RayJob" => Ok(Document::Job {
            job: Box::new(read.typed(value, |j: &RayJob| validate_ray_job(j, options))?),
            origin,
        }),
        "RayService" => Ok(Document::Service {
            service: Box::new(read.typed(value, |s: &RayService| validate_ray_service(s, options))?),
            origin,
        }),
        _ => Ok(Document::Skipped { index, kind }),
    }
}

/// Reads one document of a known kind: strictly, then as stored (defaults, generated names), then
/// validated.
struct Reader<'a> {
    file: &'a str,
    index: usize,
    kind: &'a str,
    suffixes: &'a mut dyn SuffixSource,
}

impl Reader<'_> {
    fn typed<K>(
        &mut self,
        mut value: Value,
        validate: impl Fn(&K) -> Result<(), ray_api::validation::ValidationError>,
    ) -> Result<K, InputError>
    where
        K: serde::de::DeserializeOwned + kube::Resource,
    {
        let parse_error = |message: String| InputError::Parse {
            file: self.file.to_owned(),
            index: self.index,
            kind: self.kind.to_owned(),
            message,
        };
        // Strictness applies to what the user wrote, before the server's defaults: checked against our
        // CRD's schema, as the API server's strict field validation would.
        if let Some(schema) = schema_of(self.kind) {
            let unknown = ray_api::strict::unknown_fields(&value, schema);
            if !unknown.is_empty() {
                return Err(parse_error(ray_api::strict::unknown_field_lines(&unknown)));
            }
        }
        as_stored(&mut value, self.kind, self.suffixes);
        // Read as the operator reads what it watches, so a misfit names its field the same way.
        let resource: K =
            ray_reconcile::decode::decode_value(&value).map_err(|error| parse_error(error.to_string()))?;
        validate(&resource).map_err(|e| InputError::Invalid {
            file: self.file.to_owned(),
            index: self.index,
            kind: self.kind.to_owned(),
            name: resource.meta().name.clone().unwrap_or_default(),
            field: e.field,
            message: e.message,
        })?;
        Ok(resource)
    }
}
