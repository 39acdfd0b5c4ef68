//! How the real Ray dashboard words its answers to bad input, so the hollow head's errors read the same: the
//! Python `TypeError`s of the job API's request check and the pydantic validation report of the serve API
//! (docs/ray-fidelity.md lists what was recorded from Ray and how close these come).

use serde_json::{Map, Value};

/// The fields `POST /api/jobs/` accepts (Ray's `JobSubmitRequest`).
pub const JOB_SUBMIT_FIELDS: &[&str] = &[
    "entrypoint",
    "submission_id",
    "job_id",
    "runtime_env",
    "metadata",
    "entrypoint_num_cpus",
    "entrypoint_num_gpus",
    "entrypoint_memory",
    "entrypoint_resources",
    "entrypoint_label_selector",
];

/// The body Ray's web server answers a request body that is not JSON with (HTTP 500).
pub const SERVER_TROUBLE: &str = "500 Internal Server Error\n\nServer got itself in trouble";

/// Python's `type(v)` text for a JSON value as Python reads it (`<class 'int'>`, ...).
pub fn python_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "<class 'NoneType'>",
        Value::Bool(_) => "<class 'bool'>",
        Value::Number(n) if n.is_f64() => "<class 'float'>",
        Value::Number(_) => "<class 'int'>",
        Value::String(_) => "<class 'str'>",
        Value::Array(_) => "<class 'list'>",
        Value::Object(_) => "<class 'dict'>",
    }
}

/// Python's short type name (`int`, `str`, ...), as pydantic's `input_type` shows it.
fn python_type_name(value: &Value) -> &'static str {
    python_type(value).trim_start_matches("<class '").trim_end_matches("'>")
}

/// Checks a job submission as Ray's `JobSubmitRequest` does (null fields count as absent); the error is the
/// `TypeError` line Ray ends its answer with.
pub fn check_job_submit(body: &Map<String, Value>) -> Result<(), String> {
    let present: Map<String, Value> = body
        .iter()
        .filter(|(_, v)| !v.is_null())
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if let Some(unknown) = present.keys().find(|k| !JOB_SUBMIT_FIELDS.contains(&k.as_str())) {
        return Err(format!(
            "TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument '{unknown}'"
        ));
    }
    let Some(entrypoint) = present.get("entrypoint") else {
        return Err(
            "TypeError: JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'".into(),
        );
    };
    let type_error = |what: &str, v: &Value| Err(format!("TypeError: {what}, got {}", python_type(v)));
    if !entrypoint.is_string() {
        return type_error("entrypoint must be a string", entrypoint);
    }
    for id in ["submission_id", "job_id"] {
        if let Some(v) = present.get(id).filter(|v| !v.is_string()) {
            return type_error(&format!("{id} must be a string if provided"), v);
        }
    }
    if let Some(v) = present.get("runtime_env").filter(|v| !v.is_object()) {
        return type_error("runtime_env must be a dict", v);
    }
    if let Some(v) = present.get("metadata") {
        let Some(map) = v.as_object() else {
            return type_error("metadata must be a dict", v);
        };
        if let Some(bad) = map.values().find(|v| !v.is_string()) {
            return type_error("metadata values must be strings", bad);
        }
    }
    for number in ["entrypoint_num_cpus", "entrypoint_num_gpus"] {
        if let Some(v) = present.get(number).filter(|v| !v.is_number()) {
            return type_error(&format!("{number} must be a number"), v);
        }
    }
    if let Some(v) = present.get("entrypoint_memory").filter(|v| !(v.is_i64() || v.is_u64())) {
        return type_error("entrypoint_memory must be an integer", v);
    }
    if let Some(v) = present.get("entrypoint_resources") {
        let Some(map) = v.as_object() else {
            return type_error("entrypoint_resources must be a dict", v);
        };
        if let Some(bad) = map.values().find(|v| !v.is_number()) {
            return type_error("entrypoint_resources values must be numbers", bad);
        }
    }
    Ok(())
}

/// One problem pydantic reports in a serve config: where (`applications.0.import_path`, empty for the whole
/// body), its message, its error type and the offending input.
#[derive(Debug, Clone, PartialEq)]
pub struct ServeConfigProblem {
    /// Dotted location of the field (empty: the body itself).
    pub location: String,
    /// What is wrong (`Field required`, ...).
    pub message: String,
    /// Pydantic's error type (`missing`, `list_type`, `value_error`, `model_type`).
    pub kind: &'static str,
    /// The offending input, as JSON text.
    pub input: String,
    /// Its Python type name (`dict`, `list`, ...).
    pub input_type: &'static str,
}

impl ServeConfigProblem {
    /// The report Ray answers with (HTTP 400): pydantic's text for one error of `ServeDeploySchema`. The input
    /// is shown as JSON where pydantic shows a Python repr.
    pub fn report(&self) -> String {
        let location = if self.location.is_empty() {
            String::new()
        } else {
            format!("{}\n", self.location)
        };
        format!(
            "1 validation error for ServeDeploySchema\n{location}  {} [type={}, input_value={}, input_type={}]\n    \
             For further information visit https://errors.pydantic.dev/2.14/v/{}",
            self.message, self.kind, self.input, self.input_type, self.kind
        )
    }
}

/// Checks a serve config as Ray's `ServeDeploySchema` does, for what the hollow head can check: the body is an
/// object with an `applications` list, each application has an `import_path`, names and route prefixes are
/// unique. Returns the applications by name (`default` when unnamed) in the order given.
pub fn check_serve_config(config: &Value) -> Result<Vec<(String, Value)>, ServeConfigProblem> {
    let problem = |location: &str, message: String, kind: &'static str, input: &Value| ServeConfigProblem {
        location: location.to_string(),
        message,
        kind,
        input: input.to_string(),
        input_type: python_type_name(input),
    };
    let Some(body) = config.as_object() else {
        return Err(problem(
            "",
            "Input should be a valid dictionary or instance of ServeDeploySchema".into(),
            "model_type",
            config,
        ));
    };
    let apps = match body.get("applications") {
        None => return Err(problem("applications", "Field required".into(), "missing", config)),
        Some(Value::Array(apps)) => apps,
        Some(other) => {
            return Err(problem(
                "applications",
                "Input should be a valid list".into(),
                "list_type",
                other,
            ));
        }
    };
    let mut parsed: Vec<(String, Value)> = Vec::new();
    for (i, app) in apps.iter().enumerate() {
        let Some(fields) = app.as_object() else {
            return Err(problem(
                &format!("applications.{i}"),
                "Input should be a valid dictionary or instance of ServeApplicationSchema".into(),
                "model_type",
                app,
            ));
        };
        if !fields.get("import_path").is_some_and(Value::is_string) {
            return Err(problem(
                &format!("applications.{i}.import_path"),
                "Field required".into(),
                "missing",
                app,
            ));
        }
        let name = fields
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("default")
            .to_string();
        parsed.push((name, app.clone()));
    }
    let duplicate = |key: &dyn Fn(&(String, Value)) -> Option<String>| {
        let mut seen = std::collections::BTreeSet::new();
        parsed.iter().filter_map(key).find(|k| !seen.insert(k.clone()))
    };
    if let Some(name) = duplicate(&|(n, _)| Some(n.clone())) {
        return Err(problem(
            "applications",
            format!("Value error, Found multiple configs for application \"{name}\". Please remove all duplicates."),
            "value_error",
            &Value::Array(apps.clone()),
        ));
    }
    if let Some(prefix) = duplicate(&|(_, a)| a.get("route_prefix").and_then(Value::as_str).map(str::to_string)) {
        return Err(problem(
            "applications",
            format!(
                "Value error, Found duplicate applications for route prefix \"{prefix}\". Please ensure each \
                 application's route_prefix is unique."
            ),
            "value_error",
            &Value::Array(apps.clone()),
        ));
    }
    Ok(parsed)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]
    use super::*;
    use serde_json::json;

    fn submit(v: Value) -> Result<(), String> {
        check_job_submit(v.as_object().unwrap())
    }

    #[test]
    fn job_submit_errors_are_the_type_errors_ray_raises() {
        assert_eq!(submit(json!({"entrypoint": "x", "submission_id": null})), Ok(()));
        assert_eq!(
            submit(json!({"submission_id": "a"})).unwrap_err(),
            "TypeError: JobSubmitRequest.__init__() missing 1 required positional argument: 'entrypoint'"
        );
        assert_eq!(
            submit(json!({"entrypoint": "x", "bogus": 1})).unwrap_err(),
            "TypeError: JobSubmitRequest.__init__() got an unexpected keyword argument 'bogus'"
        );
        assert_eq!(
            submit(json!({"entrypoint": "x", "metadata": {"a": 1}})).unwrap_err(),
            "TypeError: metadata values must be strings, got <class 'int'>"
        );
        assert_eq!(
            submit(json!({"entrypoint": "x", "runtime_env": "y"})).unwrap_err(),
            "TypeError: runtime_env must be a dict, got <class 'str'>"
        );
        assert_eq!(
            submit(json!({"entrypoint": "x", "entrypoint_memory": 1.5})).unwrap_err(),
            "TypeError: entrypoint_memory must be an integer, got <class 'float'>"
        );
    }

    #[test]
    fn serve_config_problems_read_like_pydantic() {
        let p = check_serve_config(&json!({"applications": [{"name": "x"}]})).unwrap_err();
        assert_eq!(
            p.report(),
            "1 validation error for ServeDeploySchema\napplications.0.import_path\n  Field required [type=missing, \
             input_value={\"name\":\"x\"}, input_type=dict]\n    For further information visit \
             https://errors.pydantic.dev/2.14/v/missing"
        );
        let p = check_serve_config(&json!([1])).unwrap_err();
        assert!(
            p.report()
                .starts_with("1 validation error for ServeDeploySchema\n  Input should be a valid dictionary")
        );
        let dup = json!({"applications": [{"name": "a", "import_path": "m:a"}, {"name": "a", "import_path": "m:b"}]});
        assert!(
            check_serve_config(&dup)
                .unwrap_err()
                .message
                .contains("multiple configs for application \"a\"")
        );
        let apps = check_serve_config(&json!({"applications": [{"import_path": "m:a"}]})).unwrap();
        assert_eq!(apps[0].0, "default");
    }
}
