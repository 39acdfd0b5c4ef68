//! `x-kubernetes-validations` without the crate's `cel` feature: each rule is kept (so CRDs are stored and read
//! back unchanged, and the rest of their schema still validates) but never evaluated. Storing a CRD with
//! rules logs a warning naming them, so a run that depends on them shows why they did not apply.

use serde_json::Value;

use super::schema::{Node, SchemaError};
use crate::error::FieldError;

/// One `x-kubernetes-validations` entry, not compiled.
#[derive(Debug)]
pub struct CompiledRule;

impl CompiledRule {
    /// Accepts one rule object, with a warning that it will not be evaluated.
    pub fn compile(spec: &Value, path: &str) -> Result<Self, SchemaError> {
        tracing::warn!(
            path,
            rule = spec["rule"].as_str().unwrap_or_default(),
            "CRD validation rule not evaluated: kube-sim was built without its cel feature"
        );
        Ok(Self)
    }
}

/// Evaluates nothing: the rules were not compiled.
pub fn validate(_node: &Node, _v: &Value, _old: Option<&Value>, _path: &str, _errs: &mut Vec<FieldError>) {}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use crate::crd_schema::CrdValidator;

    #[test]
    fn rules_are_accepted_and_not_evaluated_while_the_schema_still_validates() {
        let schema = json!({
            "type": "object",
            "properties": {"spec": {
                "type": "object",
                "properties": {"replicas": {"type": "integer", "minimum": 0}},
                "x-kubernetes-validations": [{"rule": "self.replicas > 5", "message": "too few"}],
            }},
        });
        let validator = CrdValidator::compile(&schema).unwrap();
        assert!(validator.admit(&mut json!({"spec": {"replicas": 1}}), None).is_empty());
        let errors = validator.admit(&mut json!({"spec": {"replicas": -1}}), None);
        assert_eq!(errors.len(), 1, "{errors:?}");
        assert_eq!(errors[0].field, "spec.replicas");
    }
}
