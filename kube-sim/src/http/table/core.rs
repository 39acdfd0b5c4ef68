//! Printers of the core/v1 kinds other than pods, as kube-apiserver's `printers.go` defines them.

use std::collections::BTreeSet;

use jiff::Timestamp;
use serde_json::{Value, json};

use super::age;
use super::columns::{AGE, Col, NAME, Row};
use super::format::{NONE, created, format_labels, int, len, name, str_or};

/// Service columns.
pub const SERVICE: &[Col] = &[
    NAME,
    Col::string("Type", "type determines how the Service is exposed."),
    Col::string(
        "Cluster-IP",
        "clusterIP is the IP address of the service and is usually assigned randomly.",
    ),
    Col::string(
        "External-IP",
        "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.",
    ),
    Col::string("Port(s)", "The list of ports that are exposed by this service."),
    AGE,
    Col::string(
        "Selector",
        "Route service traffic to pods with label keys and values matching this selector.",
    )
    .wide(),
];

/// `loadBalancerStatusStringer` of Services and Ingresses (wide: never clipped): unique IPs or hostnames, sorted, comma-joined.
pub(super) fn load_balancer(status: &Value) -> String {
    let set: BTreeSet<&str> = status["ingress"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|i| {
            i["ip"]
                .as_str()
                .filter(|s| !s.is_empty())
                .or_else(|| i["hostname"].as_str().filter(|s| !s.is_empty()))
        })
        .collect();
    set.into_iter().collect::<Vec<_>>().join(",")
}

fn strings(v: &Value) -> Vec<&str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str).collect()
}

fn service_external_ip(svc: &Value) -> String {
    let spec = &svc["spec"];
    let external = strings(&spec["externalIPs"]);
    match spec["type"].as_str().unwrap_or("ClusterIP") {
        "ClusterIP" | "NodePort" if !external.is_empty() => external.join(","),
        "ClusterIP" | "NodePort" => NONE.into(),
        "LoadBalancer" => {
            let lb = load_balancer(&svc["status"]["loadBalancer"]);
            if !external.is_empty() {
                let mut all: Vec<&str> = if lb.is_empty() {
                    Vec::new()
                } else {
                    lb.split(',').collect()
                };
                all.extend(external);
                all.join(",")
            } else if !lb.is_empty() {
                lb
            } else {
                "<pending>".into()
            }
        }
        "ExternalName" => spec["externalName"].as_str().unwrap_or_default().into(),
        _ => "<unknown>".into(),
    }
}

fn service_ports(ports: &Value) -> String {
    let pieces: Vec<String> = ports
        .as_array()
        .into_iter()
        .flatten()
        .map(|p| {
            let protocol = str_or(&p["protocol"], "TCP");
            match p["nodePort"].as_i64().filter(|n| *n > 0) {
                Some(node_port) => format!("{}:{node_port}/{protocol}", int(&p["port"])),
                None => format!("{}/{protocol}", int(&p["port"])),
            }
        })
        .collect();
    if pieces.is_empty() {
        NONE.into()
    } else {
        pieces.join(",")
    }
}

/// `printService`.
pub fn service(svc: &Value, now: Timestamp) -> Row {
    let spec = &svc["spec"];
    let cluster_ip = spec["clusterIPs"][0]
        .as_str()
        .or_else(|| spec["clusterIP"].as_str())
        .filter(|s| !s.is_empty())
        .unwrap_or(NONE);
    vec![
        name(svc),
        json!(spec["type"].as_str().unwrap_or("ClusterIP")),
        json!(cluster_ip),
        json!(service_external_ip(svc)),
        json!(service_ports(&spec["ports"])),
        created(svc, now),
        json!(format_labels(&spec["selector"])),
    ]
    .into()
}

/// Node columns.
pub const NODE: &[Col] = &[
    NAME,
    Col::string("Status", "The status of the node"),
    Col::string("Roles", "The roles of the node"),
    AGE,
    Col::string("Version", "Kubelet Version reported by the node."),
    Col::string("Internal-IP", "List of addresses reachable to the node.").wide(),
    Col::string("External-IP", "List of addresses reachable to the node.").wide(),
    Col::string(
        "OS-Image",
        "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).",
    )
    .wide(),
    Col::string(
        "Kernel-Version",
        "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).",
    )
    .wide(),
    Col::string(
        "Container-Runtime",
        "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).",
    )
    .wide(),
];

fn node_address(node: &Value, ty: &str) -> String {
    node["status"]["addresses"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|a| a["type"] == ty)
        .and_then(|a| a["address"].as_str())
        .unwrap_or(NONE)
        .to_string()
}

/// `printNode`.
pub fn node(node: &Value, now: Timestamp) -> Row {
    // The last Ready condition wins, as in upstream's condition map.
    let ready = node["status"]["conditions"]
        .as_array()
        .and_then(|a| a.iter().rev().find(|c| c["type"] == "Ready"));
    let mut status = vec![match ready {
        Some(c) if c["status"] == "True" => "Ready",
        Some(_) => "NotReady",
        None => "Unknown",
    }];
    if node["spec"]["unschedulable"] == true {
        status.push("SchedulingDisabled");
    }
    let roles: BTreeSet<String> = node["metadata"]["labels"]
        .as_object()
        .into_iter()
        .flatten()
        .filter_map(|(k, v)| match k.strip_prefix("node-role.kubernetes.io/") {
            Some(role) if !role.is_empty() => Some(role.to_string()),
            Some(_) => None,
            None if k == "kubernetes.io/role" => v.as_str().filter(|s| !s.is_empty()).map(str::to_string),
            None => None,
        })
        .collect();
    let roles = if roles.is_empty() {
        NONE.to_string()
    } else {
        roles.into_iter().collect::<Vec<_>>().join(",")
    };
    let info = &node["status"]["nodeInfo"];
    vec![
        name(node),
        json!(status.join(",")),
        json!(roles),
        created(node, now),
        json!(info["kubeletVersion"].as_str().unwrap_or_default()),
        json!(node_address(node, "InternalIP")),
        json!(node_address(node, "ExternalIP")),
        json!(str_or(&info["osImage"], "<unknown>")),
        json!(str_or(&info["kernelVersion"], "<unknown>")),
        json!(str_or(&info["containerRuntimeVersion"], "<unknown>")),
    ]
    .into()
}

/// Event columns (both `v1` and `events.k8s.io/v1`, which kube-apiserver prints through the same printer).
pub const EVENT: &[Col] = &[
    Col::string("Last Seen", "The time at which the most recent occurrence of this event was recorded."),
    Col::string("Type", "Type of this event (Normal, Warning), new types could be added in the future"),
    Col::string("Reason", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status."),
    Col::string("Object", "The object that this event is about."),
    Col::string("Subobject", "If referring to a piece of an object instead of an entire object, this string should contain a valid JSON/Go field access statement, such as desiredState.manifest.containers[2].").wide(),
    Col::string("Source", "The component reporting this event. Should be a short machine understandable string.").wide(),
    Col::string("Message", "A human-readable description of the status of this operation."),
    Col::string("First Seen", "The time at which the event was first recorded. (Time of server receipt is in TypeMeta.)").wide(),
    Col::string("Count", "The number of times this event has occurred.").wide(),
    Col { format: "name", ..Col::string("Name", super::columns::NAME_DOC) }.wide(),
];

fn first_non_empty<'a>(a: &'a Value, b: &'a Value) -> &'a str {
    a.as_str()
        .filter(|s| !s.is_empty())
        .or_else(|| b.as_str())
        .unwrap_or_default()
}

/// `printEvent` of a core/v1 event (wide: every column).
pub fn event(ev: &Value, now: Timestamp) -> Row {
    let first = if age::parse(&ev["firstTimestamp"]).is_some() {
        age::since(&ev["firstTimestamp"], now)
    } else {
        age::since(&ev["eventTime"], now)
    };
    let mut last = if age::parse(&ev["lastTimestamp"]).is_some() {
        age::since(&ev["lastTimestamp"], now)
    } else {
        first.clone()
    };
    let mut count = int(&ev["count"]);
    if ev["series"].is_object() {
        last = age::since(&ev["series"]["lastObservedTime"], now);
        count = int(&ev["series"]["count"]);
    } else if count == 0 {
        count = 1;
    }
    let involved = &ev["involvedObject"];
    let kind = involved["kind"].as_str().unwrap_or_default().to_lowercase();
    let target = match involved["name"].as_str().filter(|s| !s.is_empty()) {
        Some(n) => format!("{kind}/{n}"),
        None => kind,
    };
    let component = first_non_empty(&ev["source"]["component"], &ev["reportingComponent"]);
    let instance = first_non_empty(&ev["source"]["host"], &ev["reportingInstance"]);
    let source = if instance.is_empty() {
        component.to_string()
    } else {
        format!("{component}, {instance}")
    };
    vec![
        json!(last),
        json!(ev["type"].as_str().unwrap_or_default()),
        json!(ev["reason"].as_str().unwrap_or_default()),
        json!(target),
        json!(involved["fieldPath"].as_str().unwrap_or_default()),
        json!(source),
        json!(ev["message"].as_str().unwrap_or_default().trim()),
        json!(first),
        json!(count),
        name(ev),
    ]
    .into()
}

/// `printEvent` of an `events.k8s.io/v1` event: converted to the core form first, as kube-apiserver stores it.
pub fn event_v1(ev: &Value, now: Timestamp) -> Row {
    match crate::store::events::v1_to_core(ev) {
        Ok(core) => event(&core, now),
        Err(_) => event(ev, now),
    }
}

/// Namespace columns.
pub const NAMESPACE: &[Col] = &[NAME, Col::string("Status", "The status of the namespace"), AGE];

/// `printNamespace`.
pub fn namespace(ns: &Value, now: Timestamp) -> Row {
    vec![
        name(ns),
        json!(ns["status"]["phase"].as_str().unwrap_or_default()),
        created(ns, now),
    ]
    .into()
}

/// Secret columns.
pub const SECRET: &[Col] = &[
    NAME,
    Col::string("Type", "Used to facilitate programmatic handling of secret data."),
    Col::string("Data", "Data contains the secret data."),
    AGE,
];

/// `printSecret`. kube-apiserver folds `stringData` into `data` on write, so its keys count too.
pub fn secret(s: &Value, now: Timestamp) -> Row {
    let keys: BTreeSet<&String> = ["data", "stringData"]
        .iter()
        .filter_map(|f| s[*f].as_object())
        .flat_map(|m| m.keys())
        .collect();
    vec![
        name(s),
        json!(s["type"].as_str().unwrap_or_default()),
        json!(keys.len()),
        created(s, now),
    ]
    .into()
}

/// ConfigMap columns.
pub const CONFIG_MAP: &[Col] = &[NAME, Col::string("Data", "Data contains the configuration data."), AGE];

/// `printConfigMap`: `data` and `binaryData` keys together.
pub fn config_map(cm: &Value, now: Timestamp) -> Row {
    vec![
        name(cm),
        json!(len(&cm["data"]) + len(&cm["binaryData"])),
        created(cm, now),
    ]
    .into()
}

/// ServiceAccount columns.
pub const SERVICE_ACCOUNT: &[Col] = &[
    NAME,
    Col::string(
        "Secrets",
        "Secrets is a list of the secrets in the same namespace that pods running using this ServiceAccount are allowed to use.",
    ),
    AGE,
];

/// `printServiceAccount`.
pub fn service_account(sa: &Value, now: Timestamp) -> Row {
    vec![name(sa), json!(len(&sa["secrets"])), created(sa, now)].into()
}

/// Endpoints columns.
pub const ENDPOINTS: &[Col] = &[
    NAME,
    Col::string("Endpoints", "The set of all endpoints is the union of all subsets."),
    AGE,
];

fn join_host_port(ip: &str, port: i64) -> String {
    if ip.contains(':') {
        format!("[{ip}]:{port}")
    } else {
        format!("{ip}:{port}")
    }
}

/// `formatEndpoints` with every port: up to three `ip:port`, then `+ N more...`.
fn format_endpoints(ep: &Value) -> String {
    const MAX: usize = 3;
    let subsets = ep["subsets"].as_array().map(Vec::as_slice).unwrap_or_default();
    if subsets.is_empty() {
        return NONE.into();
    }
    let mut list: Vec<String> = Vec::new();
    let mut more = false;
    let mut count = 0usize;
    for ss in subsets {
        let addresses = ss["addresses"].as_array().map(Vec::as_slice).unwrap_or_default();
        let ports = ss["ports"].as_array().map(Vec::as_slice).unwrap_or_default();
        if ports.is_empty() {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(a["ip"].as_str().unwrap_or_default().to_string());
            }
            continue;
        }
        for port in ports {
            count += addresses.len();
            for a in addresses {
                if list.len() == MAX {
                    more = true;
                    break;
                }
                list.push(join_host_port(a["ip"].as_str().unwrap_or_default(), int(&port["port"])));
            }
        }
    }
    let ret = list.join(",");
    if more {
        format!("{ret} + {} more...", count - MAX)
    } else {
        ret
    }
}

/// `printEndpoints`.
pub fn endpoints(ep: &Value, now: Timestamp) -> Row {
    vec![name(ep), json!(format_endpoints(ep)), created(ep, now)].into()
}

/// PersistentVolumeClaim columns.
pub const PVC: &[Col] = &[
    NAME,
    Col::string("Status", "phase represents the current phase of PersistentVolumeClaim."),
    Col::string(
        "Volume",
        "volumeName is the binding reference to the PersistentVolume backing this claim.",
    ),
    Col::string(
        "Capacity",
        "capacity represents the actual resources of the underlying volume.",
    ),
    Col::string(
        "Access Modes",
        "accessModes contains the actual access modes the volume backing the PVC has.",
    ),
    Col::string("StorageClass", "StorageClass of the pvc"),
    Col::string("VolumeAttributesClass", "VolumeAttributesClass of the pvc"),
    AGE,
    Col::string(
        "VolumeMode",
        "volumeMode defines what type of volume is required by the claim.",
    )
    .wide(),
];

/// `GetAccessModesAsString`: RWO, ROX, RWX, RWOP in that order.
fn access_modes(modes: &Value) -> String {
    let modes = strings(modes);
    [
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    ]
    .iter()
    .filter(|(m, _)| modes.contains(m))
    .map(|(_, short)| *short)
    .collect::<Vec<_>>()
    .join(",")
}

/// `printPersistentVolumeClaim`.
pub fn pvc(pvc: &Value, now: Timestamp) -> Row {
    let spec = &pvc["spec"];
    let phase = if pvc["metadata"]["deletionTimestamp"].is_string() {
        "Terminating"
    } else {
        pvc["status"]["phase"].as_str().unwrap_or_default()
    };
    let volume = spec["volumeName"].as_str().unwrap_or_default();
    let (capacity, modes) = if volume.is_empty() {
        (String::new(), String::new())
    } else {
        (
            pvc["status"]["capacity"]["storage"].as_str().unwrap_or("0").to_string(),
            access_modes(&pvc["status"]["accessModes"]),
        )
    };
    let class = spec["storageClassName"]
        .as_str()
        .or_else(|| pvc["metadata"]["annotations"]["volume.beta.kubernetes.io/storage-class"].as_str())
        .unwrap_or_default();
    vec![
        name(pvc),
        json!(phase),
        json!(volume),
        json!(capacity),
        json!(modes),
        json!(class),
        json!(str_or(&spec["volumeAttributesClassName"], "<unset>")),
        created(pvc, now),
        json!(str_or(&spec["volumeMode"], "<unset>")),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::http::table::test_clock::{meta_created, now};

    fn meta() -> Value {
        meta_created("2026-01-01T00:00:00Z")
    }

    #[test]
    fn print_service_cluster_ip_ports_and_selector() {
        let svc = json!({"metadata": meta(), "spec": {"type": "NodePort", "clusterIP": "10.96.0.10",
            "clusterIPs": ["10.96.0.10"], "selector": {"app": "a"},
            "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30080}, {"port": 53, "protocol": "UDP"}]}});
        assert_eq!(
            service(&svc, now()).cells,
            [
                json!("x"),
                json!("NodePort"),
                json!("10.96.0.10"),
                json!("<none>"),
                json!("80:30080/TCP,53/UDP"),
                json!("60m"),
                json!("app=a")
            ]
        );
        let headless =
            json!({"metadata": meta(), "spec": {"type": "ClusterIP", "clusterIP": "None", "clusterIPs": ["None"]}});
        assert_eq!(service(&headless, now()).cells[2], "None");
        assert_eq!(service(&headless, now()).cells[4], "<none>");
        let lb = json!({"metadata": meta(), "spec": {"type": "LoadBalancer"}, "status": {}});
        assert_eq!(service(&lb, now()).cells[3], "<pending>");
        let ext = json!({"metadata": meta(), "spec": {"type": "ExternalName", "externalName": "db.example.com"}});
        assert_eq!(service(&ext, now()).cells[3], "db.example.com");
    }

    #[test]
    fn print_node_status_roles_and_addresses() {
        let n = json!({"metadata": {"name": "n1", "creationTimestamp": "2026-01-01T00:00:00Z",
                "labels": {"node-role.kubernetes.io/control-plane": "", "kubernetes.io/role": "worker"}},
            "spec": {"unschedulable": true},
            "status": {"conditions": [{"type": "Ready", "status": "True"}],
                "addresses": [{"type": "InternalIP", "address": "10.0.0.1"}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "osImage": "Hollow"}}});
        assert_eq!(
            node(&n, now()).cells,
            [
                json!("n1"),
                json!("Ready,SchedulingDisabled"),
                json!("control-plane,worker"),
                json!("60m"),
                json!("v1.33.0"),
                json!("10.0.0.1"),
                json!("<none>"),
                json!("Hollow"),
                json!("<unknown>"),
                json!("<unknown>")
            ]
        );
        let bare = json!({"metadata": meta(), "status": {}});
        assert_eq!(node(&bare, now()).cells[1], "Unknown");
    }

    #[test]
    fn print_event_wide_cells_and_fallbacks() {
        let ev = json!({"metadata": {"name": "p.123", "creationTimestamp": "2026-01-01T00:00:00Z"},
            "involvedObject": {"kind": "Pod", "name": "p", "fieldPath": "spec.containers{c}"},
            "reason": "Scheduled", "type": "Normal", "message": " Successfully assigned \n",
            "source": {"component": "default-scheduler"},
            "firstTimestamp": "2026-01-01T00:50:00Z", "lastTimestamp": "2026-01-01T00:58:00Z", "count": 2});
        assert_eq!(
            event(&ev, now()).cells,
            [
                json!("2m"),
                json!("Normal"),
                json!("Scheduled"),
                json!("pod/p"),
                json!("spec.containers{c}"),
                json!("default-scheduler"),
                json!("Successfully assigned"),
                json!("10m"),
                json!(2),
                json!("p.123")
            ]
        );
        // An events.k8s.io-style event: eventTime only, reporting controller and instance, no count.
        let new = json!({"metadata": {"name": "e"}, "eventTime": "2026-01-01T00:59:00.000000Z",
            "involvedObject": {"kind": "Node"}, "reportingComponent": "kubelet", "reportingInstance": "n1"});
        let cells = event(&new, now()).cells;
        assert_eq!(cells[0], "60s");
        assert_eq!(cells[3], "node");
        assert_eq!(cells[5], "kubelet, n1");
        assert_eq!(cells[7], "60s");
        assert_eq!(cells[8], 1);
    }

    #[test]
    fn print_endpoints_lists_three_then_more() {
        let ep = json!({"metadata": meta(), "subsets": [{"addresses": [
            {"ip": "10.0.0.1"}, {"ip": "10.0.0.2"}, {"ip": "fd00::3"}, {"ip": "10.0.0.4"}],
            "ports": [{"port": 8080}]}]});
        assert_eq!(
            endpoints(&ep, now()).cells[1],
            "10.0.0.1:8080,10.0.0.2:8080,[fd00::3]:8080 + 1 more..."
        );
        assert_eq!(endpoints(&json!({"metadata": meta()}), now()).cells[1], "<none>");
    }

    #[test]
    fn print_small_core_kinds() {
        let cm = json!({"metadata": meta(), "data": {"a": "1"}, "binaryData": {"b": ""}});
        assert_eq!(config_map(&cm, now()).cells, [json!("x"), json!(2), json!("60m")]);
        let s = json!({"metadata": meta(), "type": "Opaque", "data": {"a": "", "b": "", "c": ""},
            "stringData": {"c": "x"}});
        assert_eq!(
            secret(&s, now()).cells,
            [json!("x"), json!("Opaque"), json!(3), json!("60m")]
        );
        let ns = json!({"metadata": meta(), "status": {"phase": "Active"}});
        assert_eq!(namespace(&ns, now()).cells, [json!("x"), json!("Active"), json!("60m")]);
        let sa = json!({"metadata": meta()});
        assert_eq!(service_account(&sa, now()).cells, [json!("x"), json!(0), json!("60m")]);
        let claim = json!({"metadata": meta(), "spec": {"volumeName": "pv1", "storageClassName": "standard"},
            "status": {"phase": "Bound", "capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteMany", "ReadWriteOnce"]}});
        assert_eq!(
            pvc(&claim, now()).cells,
            [
                json!("x"),
                json!("Bound"),
                json!("pv1"),
                json!("1Gi"),
                json!("RWO,RWX"),
                json!("standard"),
                json!("<unset>"),
                json!("60m"),
                json!("<unset>")
            ]
        );
    }
}
