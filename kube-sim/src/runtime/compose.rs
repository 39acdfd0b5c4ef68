//! A container's command line and environment, composed from the pod spec as the kubelet does: `command`
//! replaces the image's entrypoint and `args` its cmd, `$(VAR)` references expand (`$$` escapes), and env
//! values come from literals, `fieldRef`, `resourceFieldRef`, `secretKeyRef`, `configMapKeyRef` and `envFrom`.

use std::collections::BTreeMap;

use base64::Engine as _;
use serde_json::Value;

use super::images::ImageConfig;
use crate::agents::quantity;

/// Why a container's configuration cannot be built (the kubelet's `CreateContainerConfigError`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ConfigError(pub String);

/// What the environment of a container may refer to besides the pod itself.
pub trait ObjectSource {
    /// The data of Secret `namespace/name` (decoded), `None` when it does not exist.
    fn secret(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>>;
    /// The data of ConfigMap `namespace/name`, `None` when it does not exist.
    fn config_map(&self, namespace: &str, name: &str) -> Option<BTreeMap<String, String>>;
}

/// Values only the node knows.
#[derive(Debug, Clone, Default)]
pub struct NodeFacts {
    /// `status.podIP`.
    pub pod_ip: String,
    /// `status.hostIP`.
    pub host_ip: String,
    /// Variables every container gets first (`KUBERNETES_SERVICE_HOST`, service links, ...).
    pub base_env: Vec<(String, String)>,
}

/// Where a container reaches the API server (`KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`): a pod in a
/// network namespace of its own (the bridge network) goes through the `kubernetes` Service's ClusterIP and
/// first port, as in a cluster, since the API server's own address (loopback) is the pod's own loopback there;
/// a pod on the host's network, or when that Service has no usable ClusterIP, uses `api`, the API server's
/// address.
pub fn api_server_address(
    own_network_namespace: bool,
    kubernetes_service: Option<&Value>,
    api: std::net::SocketAddr,
) -> (String, u16) {
    let through_service = kubernetes_service.filter(|_| own_network_namespace).and_then(|svc| {
        let ip = svc["spec"]["clusterIP"].as_str()?.parse::<std::net::IpAddr>().ok()?;
        let port = u16::try_from(svc["spec"]["ports"][0]["port"].as_u64()?).ok()?;
        Some((ip.to_string(), port))
    });
    through_service.unwrap_or_else(|| (api.ip().to_string(), api.port()))
}

/// A container ready to start.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Composed {
    /// `argv[0]` and its arguments.
    pub argv: Vec<String>,
    /// The environment, in Kubernetes order (later duplicates win).
    pub env: Vec<(String, String)>,
    /// Working directory inside the container.
    pub working_dir: String,
}

/// The data of a Secret object: `data` base64-decoded, overlaid with any `stringData` the store kept.
pub fn secret_data(secret: &Value) -> BTreeMap<String, String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut out: BTreeMap<String, String> = secret["data"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| {
            let bytes = engine.decode(v.as_str()?).ok()?;
            Some((k.clone(), String::from_utf8_lossy(&bytes).into_owned()))
        })
        .collect();
    for (k, v) in secret["stringData"].as_object().into_iter().flatten() {
        if let Some(v) = v.as_str() {
            out.insert(k.clone(), v.to_string());
        }
    }
    out
}

/// The data of a ConfigMap object (`data`, then `binaryData` decoded).
pub fn config_map_data(cm: &Value) -> BTreeMap<String, String> {
    let engine = base64::engine::general_purpose::STANDARD;
    let mut out: BTreeMap<String, String> = cm["data"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string())))
        .collect();
    for (k, v) in cm["binaryData"].as_object().into_iter().flatten() {
        if let Some(bytes) = v.as_str().and_then(|s| engine.decode(s).ok()) {
            out.insert(k.clone(), String::from_utf8_lossy(&bytes).into_owned());
        }
    }
    out
}

/// Expands `$(VAR)` references from `env`; `$$` is a literal `$`, unknown references stay as written.
pub fn expand(input: &str, env: &BTreeMap<&str, &str>) -> String {
    let mut out = String::with_capacity(input.len());
    let mut rest = input;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos + 1..];
        if let Some(tail) = after.strip_prefix('$') {
            out.push('$');
            rest = tail;
        } else if let Some(inner) = after.strip_prefix('(')
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.get(name) {
                Some(v) => out.push_str(v),
                None => {
                    out.push_str("$(");
                    out.push_str(name);
                    out.push(')');
                }
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// `command` + `args` over the image's `Entrypoint` + `Cmd`, as the kubelet composes them.
pub fn command_line(container: &Value, image: &ImageConfig) -> Vec<String> {
    let list = |k: &str| -> Option<Vec<String>> {
        container[k]
            .as_array()
            .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
    };
    let command = list("command").filter(|c| !c.is_empty());
    let args = list("args").filter(|a| !a.is_empty());
    match (command, args) {
        (Some(c), Some(a)) => c.into_iter().chain(a).collect(),
        (Some(c), None) => c,
        (None, Some(a)) => image.entrypoint.iter().cloned().chain(a).collect(),
        (None, None) => image.entrypoint.iter().chain(&image.cmd).cloned().collect(),
    }
}

/// The value of a `fieldRef` path of `pod`.
fn field_ref(pod: &Value, path: &str, facts: &NodeFacts) -> Result<String, ConfigError> {
    let bracket = |prefix: &str| -> Option<String> {
        let key = path.strip_prefix(prefix)?.strip_suffix("']")?;
        Some(key.to_string())
    };
    if let Some(k) = bracket("metadata.labels['") {
        return Ok(pod["metadata"]["labels"][&k].as_str().unwrap_or_default().to_string());
    }
    if let Some(k) = bracket("metadata.annotations['") {
        return Ok(pod["metadata"]["annotations"][&k]
            .as_str()
            .unwrap_or_default()
            .to_string());
    }
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    Ok(match path {
        "metadata.name" => s(&pod["metadata"]["name"]),
        "metadata.namespace" => s(&pod["metadata"]["namespace"]),
        "metadata.uid" => s(&pod["metadata"]["uid"]),
        "spec.nodeName" => s(&pod["spec"]["nodeName"]),
        "spec.serviceAccountName" => s(&pod["spec"]["serviceAccountName"]),
        "status.podIP" | "status.podIPs" => facts.pod_ip.clone(),
        "status.hostIP" | "status.hostIPs" => facts.host_ip.clone(),
        other => return Err(ConfigError(format!("unsupported fieldRef path {other:?}"))),
    })
}

/// The value of a `resourceFieldRef` of `container`: the limit (or request) divided by `divisor`, rounded up
/// as the kubelet does; an unset limit reads as the node's allocatable, which is not modelled: "0".
fn resource_field_ref(pod: &Value, container: &Value, r: &Value) -> Result<String, ConfigError> {
    let target = match r["containerName"].as_str().filter(|s| !s.is_empty()) {
        Some(name) => pod["spec"]["containers"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|c| c["name"] == name)
            .unwrap_or(container),
        None => container,
    };
    let res = r["resource"].as_str().unwrap_or_default();
    let (section, name) = res
        .split_once('.')
        .ok_or_else(|| ConfigError(format!("unsupported resourceFieldRef resource {res:?}")))?;
    let raw = &target["resources"][section][name];
    if raw.is_null() {
        return Ok("0".into());
    }
    let value = quantity::parse_value(raw).map_err(|e| ConfigError(format!("invalid quantity in {res}: {e}")))?;
    let divisor = match r["divisor"].as_str() {
        Some(d) => quantity::parse_milli(d).map_err(|e| ConfigError(format!("invalid divisor {d:?}: {e}")))?,
        None => 1000,
    };
    if divisor <= 0 {
        return Err(ConfigError(format!("invalid divisor for {res}")));
    }
    Ok(((value + divisor - 1) / divisor).to_string())
}

/// Composes a container's command line, environment and working directory.
pub fn compose(
    pod: &Value,
    container: &Value,
    image: &ImageConfig,
    objects: &dyn ObjectSource,
    facts: &NodeFacts,
) -> Result<Composed, ConfigError> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let mut env: Vec<(String, String)> = image.env.clone();
    env.extend(facts.base_env.iter().cloned());
    for from in container["envFrom"].as_array().into_iter().flatten() {
        let prefix = from["prefix"].as_str().unwrap_or_default();
        let (data, name, kind, optional) = if let Some(s) = from.get("secretRef") {
            let name = s["name"].as_str().unwrap_or_default();
            (objects.secret(ns, name), name, "secret", s["optional"] == true)
        } else if let Some(c) = from.get("configMapRef") {
            let name = c["name"].as_str().unwrap_or_default();
            (objects.config_map(ns, name), name, "configmap", c["optional"] == true)
        } else {
            continue;
        };
        match data {
            Some(d) => env.extend(d.into_iter().map(|(k, v)| (format!("{prefix}{k}"), v))),
            None if optional => {}
            None => return Err(ConfigError(format!("{kind} \"{name}\" not found"))),
        }
    }
    for e in container["env"].as_array().into_iter().flatten() {
        let name = e["name"].as_str().unwrap_or_default().to_string();
        let value = if let Some(v) = e["value"].as_str() {
            let known: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
            expand(v, &known)
        } else if let Some(from) = e.get("valueFrom") {
            match value_from(pod, container, from, ns, objects, facts)? {
                Some(v) => v,
                None => continue,
            }
        } else {
            String::new()
        };
        env.push((name, value));
    }
    let known: BTreeMap<&str, &str> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    let argv: Vec<String> = command_line(container, image)
        .iter()
        .map(|a| expand(a, &known))
        .collect();
    if argv.is_empty() {
        return Err(ConfigError("no command specified".into()));
    }
    let working_dir = container["workingDir"]
        .as_str()
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .or_else(|| image.working_dir.clone())
        .unwrap_or_else(|| "/".into());
    Ok(Composed { argv, env, working_dir })
}

/// One `valueFrom`; `None` for an optional reference that does not resolve.
fn value_from(
    pod: &Value,
    container: &Value,
    from: &Value,
    ns: &str,
    objects: &dyn ObjectSource,
    facts: &NodeFacts,
) -> Result<Option<String>, ConfigError> {
    if let Some(f) = from.get("fieldRef") {
        return field_ref(pod, f["fieldPath"].as_str().unwrap_or_default(), facts).map(Some);
    }
    if let Some(r) = from.get("resourceFieldRef") {
        return resource_field_ref(pod, container, r).map(Some);
    }
    let (sel, kind, data) = if let Some(s) = from.get("secretKeyRef") {
        (s, "Secret", objects.secret(ns, s["name"].as_str().unwrap_or_default()))
    } else if let Some(c) = from.get("configMapKeyRef") {
        (
            c,
            "ConfigMap",
            objects.config_map(ns, c["name"].as_str().unwrap_or_default()),
        )
    } else {
        return Ok(None);
    };
    let name = sel["name"].as_str().unwrap_or_default();
    let key = sel["key"].as_str().unwrap_or_default();
    let optional = sel["optional"] == true;
    match data {
        None if optional => Ok(None),
        None => Err(ConfigError(format!("{} \"{name}\" not found", kind.to_lowercase()))),
        Some(d) => match d.get(key) {
            Some(v) => Ok(Some(v.clone())),
            None if optional => Ok(None),
            None => Err(ConfigError(format!("couldn't find key {key} in {kind} {ns}/{name}"))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    struct Objects;
    impl ObjectSource for Objects {
        fn secret(&self, _: &str, name: &str) -> Option<BTreeMap<String, String>> {
            (name == "s").then(|| BTreeMap::from([("pw".to_string(), "hunter2".to_string())]))
        }
        fn config_map(&self, _: &str, name: &str) -> Option<BTreeMap<String, String>> {
            (name == "c").then(|| BTreeMap::from([("mode".to_string(), "fast".to_string())]))
        }
    }

    #[test]
    fn pods_in_their_own_network_reach_the_api_server_through_the_kubernetes_service() {
        let api: std::net::SocketAddr = "127.0.0.1:35791".parse().unwrap();
        let svc = json!({"spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]}});
        assert_eq!(api_server_address(true, Some(&svc), api), ("10.96.0.1".into(), 443));
        // On the host's network the API server's own address works and the ClusterIP may not be routed.
        assert_eq!(api_server_address(false, Some(&svc), api), ("127.0.0.1".into(), 35791));
        assert_eq!(api_server_address(true, None, api), ("127.0.0.1".into(), 35791));
        let no_ip = json!({"spec": {"clusterIP": "None", "ports": [{"port": 443}]}});
        assert_eq!(api_server_address(true, Some(&no_ip), api), ("127.0.0.1".into(), 35791));
    }

    #[test]
    fn expansion_and_escape() {
        let env = BTreeMap::from([("A", "1")]);
        assert_eq!(expand("$(A)-$$(A)-$(B)-$", &env), "1-$(A)-$(B)-$");
    }

    #[test]
    fn command_overrides_entrypoint_and_args_override_cmd() {
        let img = ImageConfig {
            entrypoint: vec!["/e".into()],
            cmd: vec!["c".into()],
            ..ImageConfig::default()
        };
        assert_eq!(command_line(&json!({}), &img), vec!["/e", "c"]);
        assert_eq!(command_line(&json!({"args": ["a"]}), &img), vec!["/e", "a"]);
        assert_eq!(command_line(&json!({"command": ["/x"]}), &img), vec!["/x"]);
        assert_eq!(
            command_line(&json!({"command": ["/x"], "args": ["a"]}), &img),
            vec!["/x", "a"]
        );
    }

    #[test]
    fn env_sources() {
        let pod = json!({"metadata": {"name": "p", "namespace": "ns", "uid": "u", "labels": {"app": "x"}},
                         "spec": {"nodeName": "n1"}});
        let c = json!({"name": "main", "command": ["echo", "$(POD)", "$(PW)"],
        "resources": {"limits": {"memory": "1Gi", "cpu": "1500m"}},
        "envFrom": [{"configMapRef": {"name": "c"}, "prefix": "CFG_"}],
        "env": [
            {"name": "POD", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
            {"name": "APP", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['app']"}}},
            {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
            {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
            {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
            {"name": "CPU", "valueFrom": {"resourceFieldRef": {"resource": "limits.cpu"}}},
            {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k", "optional": true}}},
            {"name": "BOTH", "value": "$(POD)/$(CFG_mode)"}
        ]});
        let facts = NodeFacts {
            pod_ip: "10.0.0.5".into(),
            ..NodeFacts::default()
        };
        let out = compose(&pod, &c, &ImageConfig::default(), &Objects, &facts).unwrap();
        let env: BTreeMap<_, _> = out.env.iter().cloned().collect();
        assert_eq!(env["POD"], "p");
        assert_eq!(env["APP"], "x");
        assert_eq!(env["IP"], "10.0.0.5");
        assert_eq!(env["MEM"], "1024");
        assert_eq!(env["CPU"], "2");
        assert_eq!(env["BOTH"], "p/fast");
        assert!(!env.contains_key("OPT"));
        assert_eq!(out.argv, vec!["echo", "p", "hunter2"]);
        let missing = json!({"name": "m", "command": ["x"],
            "env": [{"name": "K", "valueFrom": {"secretKeyRef": {"name": "s", "key": "nope"}}}]});
        let err = compose(&pod, &missing, &ImageConfig::default(), &Objects, &facts).unwrap_err();
        assert_eq!(err.0, "couldn't find key nope in Secret ns/s");
    }
}
