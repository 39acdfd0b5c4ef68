//! `x-kubernetes-validations`: CEL rules compiled once per CRD and evaluated on every write with `self` (and
//! `oldSelf` for transition rules on update), reported as kube-apiserver reports them
//! (`spec.managedBy: Invalid value: "string": the managedBy field is immutable`).

use std::collections::HashMap;
use std::sync::{Arc, OnceLock};

use cel::objects::{Key, Map as CelMap};
use cel::{Context, Env, Program, Value as CelValue};
use serde_json::Value;

use super::schema::{JsonType, ListType, Node, SchemaError};
use crate::error::FieldError;

/// The CEL environment every rule compiles and runs in (the standard library), built once.
fn env() -> Arc<Env> {
    static ENV: OnceLock<Arc<Env>> = OnceLock::new();
    ENV.get_or_init(|| Arc::new(Env::stdlib())).clone()
}

/// The variable a rule's subject is bound to.
const SELF: &str = "self";
/// The variable the previous value is bound to in a transition rule.
const OLD_SELF: &str = "oldSelf";

/// One compiled `x-kubernetes-validations` entry.
pub struct CompiledRule {
    rule: String,
    program: Program,
    message: Option<String>,
    message_expression: Option<Program>,
    reason: Option<String>,
    field_path: Option<String>,
    transition: bool,
}

impl std::fmt::Debug for CompiledRule {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompiledRule").field("rule", &self.rule).finish()
    }
}

impl CompiledRule {
    /// Compiles one rule object (`rule`, `message`, `messageExpression`, `reason`, `fieldPath`).
    pub fn compile(spec: &Value, path: &str) -> Result<Self, SchemaError> {
        let rule = spec["rule"].as_str().unwrap_or_default().to_string();
        let compile = |src: &str| {
            env().compile(src).map_err(|e| SchemaError::Rule {
                path: path.to_string(),
                rule: src.to_string(),
                reason: e.to_string(),
            })
        };
        let program = compile(&rule)?;
        let message_expression = match spec["messageExpression"].as_str() {
            Some(src) if !src.is_empty() => Some(compile(src)?),
            _ => None,
        };
        let transition = program.references().has_variable(OLD_SELF);
        let text = |k: &str| {
            spec[k]
                .as_str()
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(str::to_string)
        };
        Ok(Self {
            message: text("message"),
            reason: text("reason"),
            field_path: text("fieldPath"),
            rule,
            program,
            message_expression,
            transition,
        })
    }

    fn run(&self, program: &Program, this: &CelValue, old: Option<&CelValue>) -> Result<CelValue, String> {
        let mut ctx = Context::with_env(env());
        let bind = |v: &CelValue| -> Result<Box<dyn cel::common::value::Val>, String> {
            v.clone().try_into().map_err(|e: cel::ExecutionError| e.to_string())
        };
        ctx.add_variable_as_val(SELF, bind(this)?);
        if let Some(old) = old {
            ctx.add_variable_as_val(OLD_SELF, bind(old)?);
        }
        program.execute(&ctx).map_err(|e| e.to_string())
    }

    fn message(&self, this: &CelValue, old: Option<&CelValue>) -> String {
        if let Some(expr) = &self.message_expression
            && let Ok(CelValue::String(s)) = self.run(expr, this, old)
            && !s.trim().is_empty()
            && !s.contains('\n')
        {
            return s.trim().to_string();
        }
        self.message
            .clone()
            .unwrap_or_else(|| format!("failed rule: {}", self.rule.trim()))
    }

    /// The field a failure is reported at: the node's path, extended by `fieldPath` (`.a.b`, `['k']`).
    fn field(&self, path: &str) -> String {
        let Some(rel) = &self.field_path else {
            return path.to_string();
        };
        let mut out = path.to_string();
        for seg in rel.split('.').filter(|s| !s.is_empty()) {
            let (name, rest) = seg.split_once('[').unwrap_or((seg, ""));
            if !name.is_empty() {
                if !out.is_empty() {
                    out.push('.');
                }
                out.push_str(name);
            }
            if !rest.is_empty() {
                let key = rest.trim_end_matches(']').trim_matches('\'');
                out.push_str(&format!("[{key}]"));
            }
        }
        out
    }

    fn failure(&self, path: &str, type_name: &str, detail: String) -> FieldError {
        let field = self.field(path);
        match self.reason.as_deref() {
            Some("FieldValueForbidden") => FieldError::forbidden(field, &detail),
            Some("FieldValueRequired") => FieldError::required(field, &detail),
            Some("FieldValueDuplicate") => FieldError {
                reason: "FieldValueDuplicate",
                field,
                message: format!("Duplicate value: {}", kube_compat::go_strconv::quote(type_name)),
            },
            _ => FieldError::invalid(field, type_name, &detail),
        }
    }

    fn check(&self, node: &Node, v: &Value, old: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
        if self.transition && old.is_none() {
            return;
        }
        let this = to_cel(node, v);
        let old = old.map(|o| to_cel(node, o));
        let type_name = node.type_names();
        match self.run(&self.program, &this, old.as_ref()) {
            Ok(CelValue::Bool(true)) => {}
            Ok(CelValue::Bool(false)) => {
                let msg = self.message(&this, old.as_ref());
                errs.push(self.failure(path, &type_name, msg));
            }
            Ok(other) => errs.push(FieldError::invalid(
                self.field(path),
                &type_name,
                &format!("{}: rule did not evaluate to a bool: {other:?}", self.rule.trim()),
            )),
            Err(e) => errs.push(FieldError::invalid(
                self.field(path),
                &type_name,
                &format!("{}: evaluation error: {e}", self.rule.trim()),
            )),
        }
    }
}

/// A JSON value as CEL sees it under its schema: integers as `int`, `number` fields as `double`.
fn to_cel(node: &Node, v: &Value) -> CelValue {
    match v {
        Value::Null => CelValue::Null,
        Value::Bool(b) => CelValue::Bool(*b),
        Value::Number(n) => match n.as_i64() {
            Some(i) if node.json_type != Some(JsonType::Number) => CelValue::Int(i),
            _ => CelValue::Float(n.as_f64().unwrap_or(f64::NAN)),
        },
        Value::String(s) => CelValue::String(Arc::new(s.clone())),
        Value::Array(items) => {
            let item = node.items.as_deref();
            CelValue::List(Arc::new(
                items
                    .iter()
                    .map(|x| item.map_or_else(|| untyped(x), |n| to_cel(n, x)))
                    .collect(),
            ))
        }
        Value::Object(map) => {
            let entries: HashMap<Key, CelValue> = map
                .iter()
                .map(|(k, x)| {
                    let val = node.child(k).map_or_else(|| untyped(x), |n| to_cel(n, x));
                    (Key::String(Arc::new(k.clone())), val)
                })
                .collect();
            CelValue::Map(CelMap { map: Arc::new(entries) })
        }
    }
}

fn untyped(v: &Value) -> CelValue {
    to_cel(&Node::default(), v)
}

/// Evaluates every rule at and below `node` on `v`; `old` is the correlated previous value on update.
/// Unchanged values are not re-evaluated (upstream ratchets rules on unchanged values).
pub fn validate(node: &Node, v: &Value, old: Option<&Value>, path: &str, errs: &mut Vec<FieldError>) {
    if !node.has_rules_below || old == Some(v) {
        return;
    }
    for rule in &node.rules {
        rule.check(node, v, old, path, errs);
    }
    match v {
        Value::Object(map) => {
            for (k, x) in map {
                let old_x = old.and_then(|o| o.get(k));
                if let Some(child) = node.properties.get(k) {
                    let p = if path.is_empty() {
                        k.clone()
                    } else {
                        format!("{path}.{k}")
                    };
                    validate(child, x, old_x, &p, errs);
                } else if let Some(extra) = node.additional_properties.as_deref() {
                    validate(extra, x, old_x, &format!("{path}[{k}]"), errs);
                }
            }
        }
        Value::Array(items) => {
            let Some(item) = node.items.as_deref() else {
                return;
            };
            let correlated = super::openapi::correlate_items(node, old);
            for (i, x) in items.iter().enumerate() {
                let old_x = match node.list_type {
                    ListType::Map => correlated.as_ref().and_then(|c| c.find(x)),
                    ListType::Set => old.and_then(Value::as_array).and_then(|o| o.iter().find(|y| *y == x)),
                    ListType::Atomic => None,
                };
                validate(item, x, old_x, &format!("{path}[{i}]"), errs);
            }
        }
        _ => {}
    }
}
