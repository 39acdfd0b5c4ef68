//! Custom resources validated as kube-apiserver validates them: each served version's `openAPIV3Schema` is
//! compiled once, when its CRD is written, into a [`CrdValidator`]; every write of a custom resource is then
//! pruned, defaulted and validated against it (OpenAPI value validations, embedded resources, list-type invariants,
//! `x-kubernetes-validations` CEL rules), and `fieldValidation` reports the unknown fields pruning drops.
//! Without the crate's `cel` feature the CEL rules are accepted and not evaluated.

#[cfg(feature = "cel")]
mod cel;
#[cfg(not(feature = "cel"))]
#[path = "no_cel.rs"]
mod cel;
mod embedded;
mod formats;
pub mod go_fmt;
mod listtype;
mod openapi;
mod prune;
mod schema;

use std::sync::Arc;

use serde_json::Value;

use crate::error::{ApiError, FieldError};
use crate::kinds::ResourceInfo;
use schema::Node;
pub use schema::SchemaError;

/// The message upstream adds when type-level errors stop the CEL rules from running.
const RULES_NOT_CHECKED: &str = "some validation rules were not checked because the object was invalid; correct the existing errors to complete validation";

/// How upstream prints the field of an error about the object as a whole (a nil `field.Path`).
pub(crate) const NIL_FIELD: &str = "<nil>";

/// Error reasons after which upstream does not evaluate CEL rules.
const BLOCKING_REASONS: &[&str] = &[
    "FieldValueNotSupported",
    "FieldValueRequired",
    "FieldValueTooLong",
    "FieldValueTooMany",
    "FieldValueTypeInvalid",
];

/// One CRD version's compiled schema.
pub struct CrdValidator {
    root: Node,
}

impl std::fmt::Debug for CrdValidator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrdValidator").finish_non_exhaustive()
    }
}

impl PartialEq for CrdValidator {
    /// Validators are compiled per CRD write: two are the same only if they are the same compilation.
    fn eq(&self, other: &Self) -> bool {
        std::ptr::eq(self, other)
    }
}

impl CrdValidator {
    /// Compiles an `openAPIV3Schema`.
    pub fn compile(openapi_v3_schema: &Value) -> Result<Self, SchemaError> {
        Ok(Self {
            root: Node::compile(openapi_v3_schema, "openAPIV3Schema")?,
        })
    }

    /// The validator of one entry of a CRD's `spec.versions`; `None` when it carries no schema or the schema
    /// does not compile (logged: upstream would have refused such a CRD).
    pub fn for_crd_version(version: &Value) -> Option<Arc<Self>> {
        let schema = version.get("schema")?.get("openAPIV3Schema")?;
        match Self::compile(schema) {
            Ok(v) => Some(Arc::new(v)),
            Err(e) => {
                tracing::warn!(version = %version["name"], error = %e, "CRD schema not enforced");
                None
            }
        }
    }

    /// The paths of the fields of `obj` the schema does not know, sorted (what `fieldValidation=Strict`
    /// rejects and `Warn` warns about).
    pub fn unknown_fields(&self, obj: &Value) -> Vec<String> {
        let mut out = Vec::new();
        prune::unknown_fields(&self.root, obj, "", true, &mut out);
        out.sort();
        out
    }

    /// Fills in the schema's defaults (upstream also does this when it reads an object from storage).
    pub fn apply_defaults(&self, obj: &mut Value) {
        prune::apply_defaults(&self.root, obj);
    }

    /// Prepares a write of `obj` as upstream's decoder and strategy do: drops unknown fields and nulls of
    /// non-nullable fields, applies defaults, then validates. `old` is the stored object on update: values
    /// unchanged from it are not re-validated and transition rules (`oldSelf`) run. The field errors, in
    /// upstream's order (schema, list types, CEL), are empty when `obj` may be stored.
    pub fn admit(&self, obj: &mut Value, old: Option<&Value>) -> Vec<FieldError> {
        prune::prune(&self.root, obj, true);
        prune::drop_non_nullable_nulls(&self.root, obj);
        prune::apply_defaults(&self.root, obj);
        let mut errs = Vec::new();
        openapi::validate(&self.root, obj, old, "", &mut errs);
        embedded::validate(&self.root, obj, "", &mut errs);
        listtype::validate(&self.root, obj, "", &mut errs);
        // Without the `cel` feature the rules are not evaluated, so none is reported as skipped either.
        if cfg!(feature = "cel") && self.root.has_rules_below {
            if errs.iter().any(|e| BLOCKING_REASONS.contains(&e.reason)) {
                errs.push(FieldError {
                    reason: "FieldValueInvalid",
                    field: NIL_FIELD.to_string(),
                    message: format!("Invalid value: \"null\": {RULES_NOT_CHECKED}"),
                });
            } else {
                cel::validate(&self.root, obj, old, "", &mut errs);
            }
        }
        errs
    }
}

/// The store's hook on every create and update of an object of `info` (PUT, PATCH after the patch is
/// applied, `/status`): for a custom resource whose version has a schema, and when `enabled`
/// ([`crate::SimConfig::validate_custom_resources`]), prunes, defaults and validates `obj` in place; 422
/// `Invalid` with upstream's causes when it may not be stored.
pub fn admit_write(info: &ResourceInfo, enabled: bool, obj: &mut Value, old: Option<&Value>) -> Result<(), ApiError> {
    let Some(validator) = info.schema.as_deref().filter(|_| enabled && info.custom) else {
        return Ok(());
    };
    let errs = validator.admit(obj, old);
    if errs.is_empty() {
        return Ok(());
    }
    let name = obj["metadata"]["name"].as_str().unwrap_or_default().to_string();
    Err(ApiError::invalid(info.target(&name), &errs))
}

#[cfg(all(test, feature = "cel"))]
mod tests;
