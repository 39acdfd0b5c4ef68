//! RBAC escalation prevention, as kube-apiserver's RBAC storage does it: a user may create or update a Role
//! or ClusterRole only with rules it already holds (or with the `escalate` verb on it), and a binding only
//! to a role whose rules it already holds (or with the `bind` verb on that role). `system:masters` is
//! exempt. Only a `system:masters` member may set a ClusterRole's `aggregationRule` without `escalate`.

use std::collections::BTreeSet;

use serde_json::Value;

use super::attributes::RequestAttributes;
use super::rbac::{self, RBAC_GROUP, rbac_gvr};
use super::{GROUP_MASTERS, UserInfo};
use crate::error::{ApiError, Target};
use crate::store::Store;

/// Whether writes of `group/resource` are guarded (roles, cluster roles and their bindings).
pub fn guards(group: &str, resource: &str) -> bool {
    group == RBAC_GROUP
        && matches!(
            resource,
            "roles" | "clusterroles" | "rolebindings" | "clusterrolebindings"
        )
}

fn verb_allowed(store: &Store, user: &UserInfo, verb: &str, resource: &str, namespace: &str, name: &str) -> bool {
    let attrs = RequestAttributes {
        verb: verb.into(),
        resource_request: true,
        namespace: namespace.into(),
        api_group: RBAC_GROUP.into(),
        resource: resource.into(),
        name: name.into(),
        ..RequestAttributes::default()
    };
    rbac::authorize(store, user, &attrs).allowed
}

fn forbidden(resource: &str, kind: &str, name: &str, why: &str) -> ApiError {
    let target = Target {
        group: RBAC_GROUP,
        plural: resource,
        kind,
        name,
    };
    ApiError::forbidden(target, why, None)
}

/// Checks a create or update of the RBAC object `object` (`resource` in `namespace`) by `user`.
pub fn confirm(
    store: &Store,
    user: &UserInfo,
    resource: &str,
    namespace: &str,
    object: &Value,
) -> Result<(), ApiError> {
    if user.in_group(GROUP_MASTERS) {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    let kind = object["kind"].as_str().unwrap_or_default();
    let rules = match resource {
        "roles" | "clusterroles" => {
            if verb_allowed(store, user, "escalate", resource, namespace, name) {
                return Ok(());
            }
            if object["aggregationRule"].is_object() {
                return Err(forbidden(
                    resource,
                    kind,
                    name,
                    "must have cluster-admin privileges to use the aggregationRule",
                ));
            }
            object["rules"].as_array().cloned().unwrap_or_default()
        }
        _ => {
            let role_kind = object["roleRef"]["kind"].as_str().unwrap_or_default();
            let role_name = object["roleRef"]["name"].as_str().unwrap_or_default();
            let role_resource = if role_kind == "ClusterRole" {
                "clusterroles"
            } else {
                "roles"
            };
            if verb_allowed(store, user, "bind", role_resource, namespace, role_name) {
                return Ok(());
            }
            let role_ns = (role_resource == "roles").then_some(namespace);
            let role = store.get(&rbac_gvr(role_resource), role_ns, role_name).map_err(|_| {
                ApiError::new(
                    404,
                    "NotFound",
                    format!("{}.{RBAC_GROUP} {role_name:?} not found", role_kind.to_lowercase()),
                )
            })?;
            role.value()["rules"].as_array().cloned().unwrap_or_default()
        }
    };
    let missing = missing_rights(store, user, namespace, &rules);
    if missing.is_empty() {
        return Ok(());
    }
    let groups: Vec<String> = user.groups.iter().map(|g| format!("{g:?}")).collect();
    let why = format!(
        "user {:?} (groups=[{}]) is attempting to grant RBAC permissions not currently held:\n{}",
        user.name,
        groups.join(" "),
        missing.into_iter().collect::<Vec<_>>().join("\n")
    );
    Err(forbidden(resource, kind, name, &why))
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .map(str::to_owned)
        .collect()
}

/// A missing right before compaction: (apiGroup, resource or URL, resourceName, whether a resource).
type RightKey = (String, String, String, bool);

fn quoted(items: &[String]) -> String {
    let q: Vec<String> = items.iter().map(|i| format!("{i:?}")).collect();
    format!("[{}]", q.join(" "))
}

/// The rights of `rules` that `user` does not hold in `namespace`, compacted per (group, resource, names)
/// and rendered as upstream's `CompactString` (`{APIGroups:[""], Resources:["pods"], Verbs:["delete"]}`).
fn missing_rights(store: &Store, user: &UserInfo, namespace: &str, rules: &[Value]) -> BTreeSet<String> {
    let (grants, _) = rbac::grants(store, user, namespace);
    let held: Vec<&Value> = grants.iter().flat_map(|g| g.rules.iter()).collect();
    let covered = |attrs: &RequestAttributes| held.iter().any(|r| rbac::rule_allows(r, attrs));
    // Missing verbs per right, in rule order.
    let mut missing: Vec<(RightKey, Vec<String>)> = Vec::new();
    let mut note = |key: RightKey, verb: &str| match missing.iter_mut().find(|(k, _)| *k == key) {
        Some((_, verbs)) => verbs.push(verb.to_owned()),
        None => missing.push((key, vec![verb.to_owned()])),
    };
    for rule in rules {
        let verbs = strings(&rule["verbs"]);
        for url in strings(&rule["nonResourceURLs"]) {
            for verb in &verbs {
                if !covered(&RequestAttributes::non_resource(verb, &url)) {
                    note((String::new(), url.clone(), String::new(), false), verb);
                }
            }
        }
        let mut names = strings(&rule["resourceNames"]);
        if names.is_empty() {
            names.push(String::new());
        }
        for group in strings(&rule["apiGroups"]) {
            for resource in strings(&rule["resources"]) {
                for name in &names {
                    for verb in &verbs {
                        let attrs = RequestAttributes {
                            verb: verb.clone(),
                            resource_request: true,
                            namespace: namespace.to_owned(),
                            api_group: group.clone(),
                            resource: resource.clone(),
                            name: name.clone(),
                            ..RequestAttributes::default()
                        };
                        if !covered(&attrs) {
                            note((group.clone(), resource.clone(), name.clone(), true), verb);
                        }
                    }
                }
            }
        }
    }
    missing
        .into_iter()
        .map(|((group, target, name, is_resource), verbs)| {
            let mut parts = Vec::new();
            if is_resource {
                parts.push(format!("APIGroups:{}", quoted(&[group])));
                parts.push(format!("Resources:{}", quoted(&[target])));
                if !name.is_empty() {
                    parts.push(format!("ResourceNames:{}", quoted(&[name])));
                }
            } else {
                parts.push(format!("NonResourceURLs:{}", quoted(&[target])));
            }
            parts.push(format!("Verbs:{}", quoted(&verbs)));
            format!("{{{}}}", parts.join(", "))
        })
        .collect()
}
