//! kube-apiserver's bootstrap RBAC policy (the default ClusterRoles `cluster-admin`, `admin`, `edit`,
//! `view`, `system:discovery`, `system:public-info-viewer`, `system:basic-user` and their bindings), and the
//! ClusterRole aggregation controller that fills a ClusterRole with an `aggregationRule` from the
//! ClusterRoles its `clusterRoleSelectors` match.

use std::collections::BTreeMap;

use serde_json::{Value, json};

use super::rbac::rbac_gvr;
use super::{GROUP_AUTHENTICATED, GROUP_MASTERS};
use crate::store::{ListOptions, Store};

/// The group of unauthenticated requests (bound to `system:public-info-viewer`, as upstream).
const GROUP_UNAUTHENTICATED: &str = "system:unauthenticated";
/// Label prefix of the aggregation labels (`rbac.authorization.k8s.io/aggregate-to-view: "true"`).
const AGGREGATE_TO: &str = "rbac.authorization.k8s.io/aggregate-to-";
const READ: &[&str] = &["get", "list", "watch"];
const WRITE: &[&str] = &["create", "delete", "deletecollection", "patch", "update"];

fn rule(verbs: &[&str], group: &str, resources: &[&str]) -> Value {
    json!({"apiGroups": [group], "resources": resources, "verbs": verbs})
}

fn url_rule(verbs: &[&str], urls: &[&str]) -> Value {
    json!({"nonResourceURLs": urls, "verbs": verbs})
}

fn cluster_role(name: &str, labels: &[(String, &str)], rules: Vec<Value>, aggregate_from: Option<&str>) -> Value {
    let mut labels: BTreeMap<String, &str> = labels.iter().cloned().collect();
    labels.insert("kubernetes.io/bootstrapping".into(), "rbac-defaults");
    let mut role = json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "rules": rules,
    });
    if let Some(to) = aggregate_from {
        role["aggregationRule"] =
            json!({"clusterRoleSelectors": [{"matchLabels": {format!("{AGGREGATE_TO}{to}"): "true"}}]});
    }
    role
}

fn binding(name: &str, role: &str, groups: &[&str]) -> Value {
    let subjects: Vec<Value> = groups
        .iter()
        .map(|g| json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Group", "name": g}))
        .collect();
    json!({
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": {"kubernetes.io/bootstrapping": "rbac-defaults"}, "annotations": {"rbac.authorization.kubernetes.io/autoupdate": "true"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": subjects,
    })
}

fn aggregate_label(to: &str) -> (String, &'static str) {
    (format!("{AGGREGATE_TO}{to}"), "true")
}

/// The bootstrap ClusterRoles, with upstream's rules for the API groups kube-sim serves.
pub fn cluster_roles() -> Vec<Value> {
    let rw: Vec<&str> = READ.iter().chain(WRITE).copied().collect();
    let view_rules = vec![
        rule(
            READ,
            "",
            &[
                "pods",
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/status",
                "endpoints",
                "persistentvolumeclaims",
                "persistentvolumeclaims/status",
                "configmaps",
            ],
        ),
        rule(
            READ,
            "",
            &[
                "limitranges",
                "resourcequotas",
                "bindings",
                "events",
                "pods/status",
                "resourcequotas/status",
                "namespaces/status",
                "replicationcontrollers/status",
                "pods/log",
            ],
        ),
        rule(READ, "", &["namespaces"]),
        rule(READ, "discovery.k8s.io", &["endpointslices"]),
        rule(
            READ,
            "apps",
            &[
                "controllerrevisions",
                "statefulsets",
                "statefulsets/scale",
                "statefulsets/status",
                "daemonsets",
                "daemonsets/status",
                "deployments",
                "deployments/scale",
                "deployments/status",
                "replicasets",
                "replicasets/scale",
                "replicasets/status",
            ],
        ),
        rule(
            READ,
            "autoscaling",
            &["horizontalpodautoscalers", "horizontalpodautoscalers/status"],
        ),
        rule(READ, "batch", &["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
        rule(READ, "policy", &["poddisruptionbudgets", "poddisruptionbudgets/status"]),
        rule(
            READ,
            "networking.k8s.io",
            &["networkpolicies", "ingresses", "ingresses/status"],
        ),
    ];
    let edit_rules = vec![
        rule(
            READ,
            "",
            &[
                "pods/attach",
                "pods/proxy",
                "pods/exec",
                "pods/portforward",
                "secrets",
                "services/proxy",
            ],
        ),
        rule(&["impersonate"], "", &["serviceaccounts"]),
        rule(
            WRITE,
            "",
            &["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"],
        ),
        rule(&["create"], "", &["pods/eviction"]),
        rule(
            WRITE,
            "",
            &[
                "replicationcontrollers",
                "replicationcontrollers/scale",
                "serviceaccounts",
                "services",
                "services/proxy",
                "persistentvolumeclaims",
                "configmaps",
                "secrets",
                "events",
            ],
        ),
        rule(&["create"], "", &["serviceaccounts/token"]),
        rule(
            WRITE,
            "apps",
            &[
                "statefulsets",
                "statefulsets/scale",
                "daemonsets",
                "deployments",
                "deployments/scale",
                "deployments/rollback",
                "replicasets",
                "replicasets/scale",
            ],
        ),
        rule(WRITE, "autoscaling", &["horizontalpodautoscalers"]),
        rule(WRITE, "batch", &["jobs", "cronjobs"]),
        rule(WRITE, "policy", &["poddisruptionbudgets"]),
        rule(WRITE, "networking.k8s.io", &["networkpolicies", "ingresses"]),
        rule(&rw, "coordination.k8s.io", &["leases"]),
    ];
    let admin_rules = vec![
        rule(&["create"], "authorization.k8s.io", &["localsubjectaccessreviews"]),
        rule(&rw, "rbac.authorization.k8s.io", &["rolebindings", "roles"]),
    ];
    vec![
        cluster_role(
            "cluster-admin",
            &[],
            vec![rule(&["*"], "*", &["*"]), url_rule(&["*"], &["*"])],
            None,
        ),
        cluster_role("admin", &[], Vec::new(), Some("admin")),
        cluster_role("edit", &[aggregate_label("admin")], Vec::new(), Some("edit")),
        cluster_role("view", &[aggregate_label("edit")], Vec::new(), Some("view")),
        cluster_role(
            "system:aggregate-to-admin",
            &[aggregate_label("admin")],
            admin_rules,
            None,
        ),
        cluster_role("system:aggregate-to-edit", &[aggregate_label("edit")], edit_rules, None),
        cluster_role("system:aggregate-to-view", &[aggregate_label("view")], view_rules, None),
        cluster_role(
            "system:discovery",
            &[],
            vec![url_rule(
                &["get"],
                &[
                    "/api",
                    "/api/*",
                    "/apis",
                    "/apis/*",
                    "/healthz",
                    "/livez",
                    "/openapi",
                    "/openapi/*",
                    "/readyz",
                    "/version",
                    "/version/",
                ],
            )],
            None,
        ),
        cluster_role(
            "system:public-info-viewer",
            &[],
            vec![url_rule(
                &["get"],
                &["/healthz", "/livez", "/readyz", "/version", "/version/"],
            )],
            None,
        ),
        cluster_role(
            "system:basic-user",
            &[],
            vec![
                rule(&["create"], "authentication.k8s.io", &["selfsubjectreviews"]),
                rule(
                    &["create"],
                    "authorization.k8s.io",
                    &["selfsubjectaccessreviews", "selfsubjectrulesreviews"],
                ),
            ],
            None,
        ),
    ]
}

/// The bootstrap ClusterRoleBindings.
pub fn cluster_role_bindings() -> Vec<Value> {
    vec![
        binding("cluster-admin", "cluster-admin", &[GROUP_MASTERS]),
        binding("system:discovery", "system:discovery", &[GROUP_AUTHENTICATED]),
        binding("system:basic-user", "system:basic-user", &[GROUP_AUTHENTICATED]),
        binding(
            "system:public-info-viewer",
            "system:public-info-viewer",
            &[GROUP_AUTHENTICATED, GROUP_UNAUTHENTICATED],
        ),
    ]
}

/// Stores the bootstrap policy (objects that already exist are kept) and aggregates it.
pub fn install(store: &Store) {
    for role in cluster_roles() {
        let _ = store.create(&rbac_gvr("clusterroles"), None, role);
    }
    for b in cluster_role_bindings() {
        let _ = store.create(&rbac_gvr("clusterrolebindings"), None, b);
    }
    // Aggregated roles aggregate each other (view into edit into admin): settle the chain now.
    for _ in 0..AGGREGATION_DEPTH {
        if aggregate(store) == 0 {
            break;
        }
    }
}

/// The longest chain of aggregated roles settled at install (`view` -> `edit` -> `admin` is 3).
const AGGREGATION_DEPTH: usize = 8;

/// Whether a `clusterRoleSelectors` entry (a label selector: `matchLabels`, `matchExpressions`) matches
/// `labels`. An empty selector matches nothing here, as upstream's aggregation ignores it.
fn selector_matches(selector: &Value, labels: &Value) -> bool {
    let label = |k: &str| labels[k].as_str();
    let mut any = false;
    if let Some(m) = selector["matchLabels"].as_object() {
        for (k, v) in m {
            any = true;
            if label(k) != v.as_str() {
                return false;
            }
        }
    }
    for expr in selector["matchExpressions"].as_array().into_iter().flatten() {
        any = true;
        let key = expr["key"].as_str().unwrap_or_default();
        let values: Vec<&str> = expr["values"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        let ok = match expr["operator"].as_str().unwrap_or_default() {
            "In" => label(key).is_some_and(|l| values.contains(&l)),
            "NotIn" => !label(key).is_some_and(|l| values.contains(&l)),
            "Exists" => label(key).is_some(),
            "DoesNotExist" => label(key).is_none(),
            _ => false,
        };
        if !ok {
            return false;
        }
    }
    any
}

/// One pass of the aggregation controller: every ClusterRole with an `aggregationRule` gets the union of
/// the rules of the other ClusterRoles its selectors match (in name order, duplicates dropped). Returns how
/// many roles changed.
pub fn aggregate(store: &Store) -> usize {
    let Ok(list) = store.list(&rbac_gvr("clusterroles"), None, &ListOptions::default()) else {
        return 0;
    };
    let mut changed = 0;
    for role in list.items.iter().filter(|r| r.value()["aggregationRule"].is_object()) {
        let selectors = role.value()["aggregationRule"]["clusterRoleSelectors"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        let mut rules: Vec<Value> = Vec::new();
        for other in list.items.iter().filter(|o| o.name() != role.name()) {
            let labels = &other.value()["metadata"]["labels"];
            if selectors.iter().any(|s| selector_matches(s, labels)) {
                for r in other.value()["rules"].as_array().into_iter().flatten() {
                    if !rules.contains(r) {
                        rules.push(r.clone());
                    }
                }
            }
        }
        if role.value()["rules"].as_array().map(Vec::as_slice).unwrap_or_default() == rules.as_slice() {
            continue;
        }
        let mut updated = role.value();
        updated["rules"] = Value::Array(rules);
        // A concurrent writer wins; the next pass (triggered by its write) aggregates again.
        if store.update(&rbac_gvr("clusterroles"), None, updated, None).is_ok() {
            changed += 1;
        }
    }
    changed
}

/// Runs the aggregation controller: aggregates after every ClusterRole change, until the store is dropped.
pub async fn run_aggregation(store: Store) {
    let mut feed = store.change_feed(&[rbac_gvr("clusterroles")]);
    while feed.rx.recv().await.is_some() {
        while feed.rx.try_recv().is_ok() {}
        aggregate(&store);
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    #[test]
    fn selectors_match_labels_and_expressions() {
        let labels = json!({"a": "1", "b": "2"});
        assert!(selector_matches(&json!({"matchLabels": {"a": "1"}}), &labels));
        assert!(!selector_matches(&json!({"matchLabels": {"a": "2"}}), &labels));
        assert!(selector_matches(
            &json!({"matchExpressions": [{"key": "b", "operator": "In", "values": ["2", "3"]}]}),
            &labels
        ));
        assert!(!selector_matches(
            &json!({"matchExpressions": [{"key": "c", "operator": "Exists"}]}),
            &labels
        ));
        assert!(!selector_matches(&json!({}), &labels));
    }
}
