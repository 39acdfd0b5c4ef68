//! Printers of the networking, discovery, RBAC, coordination and admission kinds kube-sim serves.

use jiff::Timestamp;
use serde_json::{Value, json};

use super::columns::{AGE, Col, NAME, Row};
use super::format::{NONE, created, int, len, list_with_more, name};

/// Ingress columns.
pub const INGRESS: &[Col] = &[
    NAME,
    Col::string(
        "Class",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    Col::string(
        "Hosts",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    Col::string(
        "Address",
        "Address is a list containing ingress points for the load-balancer",
    ),
    Col::string("Ports", "Ports of TLS configurations that open"),
    AGE,
];

/// `printIngress`.
pub fn ingress(ing: &Value, now: Timestamp) -> Row {
    const MAX: usize = 3;
    let rules = ing["spec"]["rules"].as_array().map(Vec::as_slice).unwrap_or_default();
    let mut hosts: Vec<&str> = Vec::new();
    let mut more = false;
    for rule in rules {
        if hosts.len() == MAX {
            more = true;
        }
        if let Some(h) = rule["host"].as_str().filter(|h| !h.is_empty())
            && !more
        {
            hosts.push(h);
        }
    }
    let hosts = if hosts.is_empty() {
        "*".to_string()
    } else if more {
        format!("{} + {} more...", hosts.join(","), rules.len() - MAX)
    } else {
        hosts.join(",")
    };
    let ports = if len(&ing["spec"]["tls"]) > 0 { "80, 443" } else { "80" };
    vec![
        name(ing),
        json!(ing["spec"]["ingressClassName"].as_str().unwrap_or(NONE)),
        json!(hosts),
        json!(super::core::load_balancer(&ing["status"]["loadBalancer"])),
        json!(ports),
        created(ing, now),
    ]
    .into()
}

/// NetworkPolicy columns.
pub const NETWORK_POLICY: &[Col] = &[
    NAME,
    Col::string(
        "Pod-Selector",
        "Selects the pods to which this NetworkPolicy object applies. The array of ingress rules is applied to any pods selected by this field. Multiple network policies can select the same set of pods. In this case, the ingress rules for each are combined additively. This field is NOT optional and follows standard label selector semantics. An empty podSelector matches all pods in this namespace.",
    ),
    AGE,
];

/// `printNetworkPolicy`.
pub fn network_policy(np: &Value, now: Timestamp) -> Row {
    vec![
        name(np),
        json!(super::format::format_label_selector(&np["spec"]["podSelector"])),
        created(np, now),
    ]
    .into()
}

/// IngressClass columns.
pub const INGRESS_CLASS: &[Col] = &[
    NAME,
    Col::string("Controller", "Controller that is responsible for handling this class"),
    Col::string("Parameters", "A reference to a resource with additional parameters"),
    AGE,
];

/// `printIngressClass`.
pub fn ingress_class(ic: &Value, now: Timestamp) -> Row {
    let p = &ic["spec"]["parameters"];
    let parameters = if p.is_object() {
        let kind = p["kind"].as_str().unwrap_or_default();
        let kind = match p["apiGroup"].as_str() {
            Some(g) => format!("{kind}.{g}"),
            None => kind.to_string(),
        };
        format!("{kind}/{}", p["name"].as_str().unwrap_or_default())
    } else {
        NONE.into()
    };
    vec![
        name(ic),
        json!(ic["spec"]["controller"].as_str().unwrap_or_default()),
        json!(parameters),
        created(ic, now),
    ]
    .into()
}

/// EndpointSlice columns.
pub const ENDPOINT_SLICE: &[Col] = &[
    NAME,
    Col::string(
        "AddressType",
        "addressType specifies the type of address carried by this EndpointSlice.",
    ),
    Col::string(
        "Ports",
        "ports specifies the list of network ports exposed by each endpoint in this slice.",
    ),
    Col::string("Endpoints", "endpoints is a list of unique endpoints in this slice."),
    AGE,
];

/// `printEndpointSlice`.
pub fn endpoint_slice(es: &Value, now: Timestamp) -> Row {
    const MAX: usize = 3;
    let ports: Vec<&Value> = es["ports"].as_array().into_iter().flatten().collect();
    let port_list: Vec<String> = ports
        .iter()
        .take(MAX)
        .map(|p| match (p["port"].as_i64(), p["name"].as_str()) {
            (Some(n), _) => n.to_string(),
            (None, Some(n)) => n.to_string(),
            _ => "*".into(),
        })
        .collect();
    let addresses: Vec<&str> = es["endpoints"]
        .as_array()
        .into_iter()
        .flatten()
        .flat_map(|e| {
            e["addresses"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
        })
        .collect();
    let address_list: Vec<String> = addresses.iter().take(MAX).map(|a| a.to_string()).collect();
    vec![
        name(es),
        json!(es["addressType"].as_str().unwrap_or_default()),
        json!(list_with_more(&port_list, ports.len(), MAX)),
        json!(list_with_more(&address_list, addresses.len(), MAX)),
        created(es, now),
    ]
    .into()
}

/// RoleBinding and ClusterRoleBinding columns.
pub const ROLE_BINDING: &[Col] = &[
    NAME,
    Col::string(
        "Role",
        "RoleRef can reference a Role in the current namespace or a ClusterRole in the global namespace.",
    ),
    AGE,
    Col::string("Users", "Users in the roleBinding").wide(),
    Col::string("Groups", "Groups in the roleBinding").wide(),
    Col::string("ServiceAccounts", "ServiceAccounts in the roleBinding").wide(),
];

/// ClusterRoleBinding columns.
pub const CLUSTER_ROLE_BINDING: &[Col] = &[
    NAME,
    Col::string(
        "Role",
        "RoleRef can only reference a ClusterRole in the global namespace.",
    ),
    AGE,
    Col::string("Users", "Users in the clusterRoleBinding").wide(),
    Col::string("Groups", "Groups in the clusterRoleBinding").wide(),
    Col::string("ServiceAccounts", "ServiceAccounts in the clusterRoleBinding").wide(),
];

/// `printRoleBinding` / `printClusterRoleBinding`: subjects split by kind (`rbac.SubjectsStrings`).
pub fn role_binding(rb: &Value, now: Timestamp) -> Row {
    let role_ref = format!(
        "{}/{}",
        rb["roleRef"]["kind"].as_str().unwrap_or_default(),
        rb["roleRef"]["name"].as_str().unwrap_or_default()
    );
    let (mut users, mut groups, mut sas) = (Vec::new(), Vec::new(), Vec::new());
    for s in rb["subjects"].as_array().into_iter().flatten() {
        let subject = s["name"].as_str().unwrap_or_default().to_string();
        match s["kind"].as_str() {
            Some("ServiceAccount") => sas.push(format!("{}/{subject}", s["namespace"].as_str().unwrap_or_default())),
            Some("User") => users.push(subject),
            Some("Group") => groups.push(subject),
            _ => {}
        }
    }
    vec![
        name(rb),
        json!(role_ref),
        created(rb, now),
        json!(users.join(", ")),
        json!(groups.join(", ")),
        json!(sas.join(", ")),
    ]
    .into()
}

/// Lease columns.
pub const LEASE: &[Col] = &[
    NAME,
    Col::string(
        "Holder",
        "holderIdentity contains the identity of the holder of a current lease.",
    ),
    AGE,
];

/// `printLease`.
pub fn lease(l: &Value, now: Timestamp) -> Row {
    vec![
        name(l),
        json!(l["spec"]["holderIdentity"].as_str().unwrap_or_default()),
        created(l, now),
    ]
    .into()
}

/// ValidatingWebhookConfiguration (and MutatingWebhookConfiguration) columns.
pub const WEBHOOK_CONFIGURATION: &[Col] = &[
    NAME,
    Col::integer(
        "Webhooks",
        "Webhooks indicates the number of webhooks registered in this configuration",
    ),
    AGE,
];

/// `printValidatingWebhook` / `printMutatingWebhook`.
pub fn webhook_configuration(w: &Value, now: Timestamp) -> Row {
    vec![name(w), json!(len(&w["webhooks"])), created(w, now)].into()
}

/// PriorityClass columns.
pub const PRIORITY_CLASS: &[Col] = &[
    NAME,
    Col::integer("Value", "value represents the integer value of this priority class."),
    Col {
        ty: "boolean",
        ..Col::string(
            "Global-Default",
            "globalDefault specifies whether this PriorityClass should be considered as the default priority for pods that do not have any priority class.",
        )
    },
    AGE,
    Col::string(
        "PreemptionPolicy",
        "preemptionPolicy is the Policy for preempting pods with lower priority.",
    )
    .wide(),
];

/// `printPriorityClass`.
pub fn priority_class(pc: &Value, now: Timestamp) -> Row {
    vec![
        name(pc),
        json!(int(&pc["value"])),
        json!(pc["globalDefault"].as_bool().unwrap_or_default()),
        created(pc, now),
        json!(pc["preemptionPolicy"].as_str().unwrap_or_default()),
    ]
    .into()
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use crate::http::table::test_clock::{meta_created, now};

    fn meta() -> Value {
        meta_created("2026-01-01T00:59:30Z")
    }

    #[test]
    fn print_ingress_hosts_address_and_ports() {
        let ing = json!({"metadata": meta(), "spec": {"ingressClassName": "nginx",
            "rules": [{"host": "a.example"}, {"host": "b.example"}], "tls": [{}]},
            "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}, {"hostname": "lb.example"}]}}});
        assert_eq!(
            ingress(&ing, now()).cells,
            [
                json!("x"),
                json!("nginx"),
                json!("a.example,b.example"),
                json!("1.2.3.4,lb.example"),
                json!("80, 443"),
                json!("30s")
            ]
        );
        let bare = json!({"metadata": meta(), "spec": {}});
        assert_eq!(
            ingress(&bare, now()).cells[1..5],
            [json!("<none>"), json!("*"), json!(""), json!("80")]
        );
    }

    #[test]
    fn print_role_binding_subjects_by_kind() {
        let rb = json!({"metadata": meta(), "roleRef": {"kind": "ClusterRole", "name": "view"},
            "subjects": [{"kind": "User", "name": "alice"}, {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "name": "sa", "namespace": "ns"}, {"kind": "User", "name": "bob"}]});
        assert_eq!(
            role_binding(&rb, now()).cells,
            [
                json!("x"),
                json!("ClusterRole/view"),
                json!("30s"),
                json!("alice, bob"),
                json!("devs"),
                json!("ns/sa")
            ]
        );
    }

    #[test]
    fn print_endpoint_slice_lease_and_webhooks() {
        let es = json!({"metadata": meta(), "addressType": "IPv4", "ports": [{"port": 80}, {"name": "metrics"}, {}],
            "endpoints": [{"addresses": ["10.0.0.1"]}]});
        assert_eq!(
            endpoint_slice(&es, now()).cells[1..4],
            [json!("IPv4"), json!("80,metrics,*"), json!("10.0.0.1")]
        );
        let empty = json!({"metadata": meta(), "addressType": "IPv4"});
        assert_eq!(
            endpoint_slice(&empty, now()).cells[2..4],
            [json!("<unset>"), json!("<unset>")]
        );
        let l = json!({"metadata": meta(), "spec": {"holderIdentity": "op-1"}});
        assert_eq!(lease(&l, now()).cells[1], "op-1");
        let w = json!({"metadata": meta(), "webhooks": [{}, {}]});
        assert_eq!(webhook_configuration(&w, now()).cells[1], 2);
    }
}
