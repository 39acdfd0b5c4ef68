//! The RBAC authorizer (`rbac.authorization.k8s.io/v1`), as kube-apiserver's: a request is allowed when a
//! rule of a role bound to the user allows it (ClusterRoleBindings everywhere, RoleBindings in their
//! namespace); members of `system:masters` may do anything. A binding whose role does not exist grants
//! nothing; the 403 then names the missing role, as upstream's `RBAC: ... not found` reason does.

use serde_json::Value;

use super::attributes::RequestAttributes;
use super::{GROUP_MASTERS, UserInfo};
use crate::kinds::Gvr;
use crate::store::{ListOptions, Store};

/// The RBAC API group.
pub const RBAC_GROUP: &str = "rbac.authorization.k8s.io";
/// The `*` wildcard of verbs, groups, resources and non-resource URLs.
const ALL: &str = "*";

/// `rbac.authorization.k8s.io/v1` `resource`.
pub fn rbac_gvr(resource: &str) -> Gvr {
    Gvr::new(RBAC_GROUP, "v1", resource)
}

/// An authorization decision and why (upstream's reason: the granting binding, or the errors met).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decision {
    /// Whether the request is allowed.
    pub allowed: bool,
    /// `RBAC: allowed by ...`, or the resolution errors of a denial (`RBAC: role... not found`), or "".
    pub reason: String,
}

/// The rules granted to a user by one binding: `ClusterRoleBinding "b" of ClusterRole "r" to User "u"`.
#[derive(Debug, Clone)]
pub struct Grant {
    /// Upstream's description of the binding and subject.
    pub source: String,
    /// The role's rules.
    pub rules: Vec<Value>,
}

/// The grants applying to `user` for requests in `namespace` ("" = cluster scope), and the errors resolving
/// the roles of bindings that apply (missing roles).
pub fn grants(store: &Store, user: &UserInfo, namespace: &str) -> (Vec<Grant>, Vec<String>) {
    let mut grants = Vec::new();
    let mut errors = Vec::new();
    let mut visit = |binding: &Value, binding_ns: &str| {
        let Some(subject) = applying_subject(binding, user, binding_ns) else {
            return;
        };
        let role_kind = binding["roleRef"]["kind"].as_str().unwrap_or_default();
        let role_name = binding["roleRef"]["name"].as_str().unwrap_or_default();
        let role = match role_kind {
            "ClusterRole" => store.get(&rbac_gvr("clusterroles"), None, role_name),
            _ => store.get(&rbac_gvr("roles"), Some(binding_ns), role_name),
        };
        let role = match role {
            Ok(r) => r,
            Err(_) => {
                errors.push(format!(
                    "{}.{RBAC_GROUP} {role_name:?} not found",
                    role_kind.to_lowercase()
                ));
                return;
            }
        };
        let binding_name = binding["metadata"]["name"].as_str().unwrap_or_default();
        let source = if binding_ns.is_empty() {
            format!("ClusterRoleBinding {binding_name:?} of {role_kind} {role_name:?} to {subject}")
        } else {
            format!(
                "RoleBinding {:?} of {role_kind} {role_name:?} to {subject}",
                format!("{binding_name}/{binding_ns}")
            )
        };
        let rules = role.value()["rules"].as_array().cloned().unwrap_or_default();
        grants.push(Grant { source, rules });
    };
    let all = ListOptions::default();
    if let Ok(list) = store.list(&rbac_gvr("clusterrolebindings"), None, &all) {
        for b in &list.items {
            visit(&b.value(), "");
        }
    }
    if !namespace.is_empty()
        && let Ok(list) = store.list(&rbac_gvr("rolebindings"), Some(namespace), &all)
    {
        for b in &list.items {
            visit(&b.value(), namespace);
        }
    }
    (grants, errors)
}

/// Decides a request: `system:masters` first, then RBAC.
pub fn authorize(store: &Store, user: &UserInfo, attrs: &RequestAttributes) -> Decision {
    if user.in_group(GROUP_MASTERS) {
        return Decision {
            allowed: true,
            reason: String::new(),
        };
    }
    let (grants, errors) = grants(store, user, &attrs.namespace);
    for grant in &grants {
        if grant.rules.iter().any(|rule| rule_allows(rule, attrs)) {
            return Decision {
                allowed: true,
                reason: format!("RBAC: allowed by {}", grant.source),
            };
        }
    }
    let reason = match errors.as_slice() {
        [] => String::new(),
        [one] => format!("RBAC: {one}"),
        many => format!("RBAC: [{}]", many.join(", ")),
    };
    Decision { allowed: false, reason }
}

/// The subject of `binding` that `user` is, described as upstream (`User "u"`, `Group "g"`,
/// `ServiceAccount "name/ns"`).
fn applying_subject(binding: &Value, user: &UserInfo, binding_ns: &str) -> Option<String> {
    binding["subjects"].as_array()?.iter().find_map(|s| {
        let name = s["name"].as_str().unwrap_or_default();
        match s["kind"].as_str()? {
            "User" => (user.name == name).then(|| format!("User {name:?}")),
            "Group" => user.in_group(name).then(|| format!("Group {name:?}")),
            "ServiceAccount" => {
                let ns = s["namespace"].as_str().filter(|n| !n.is_empty()).unwrap_or(binding_ns);
                (user.name == super::service_account_user(ns, name))
                    .then(|| format!("ServiceAccount {:?}", format!("{name}/{ns}")))
            }
            _ => None,
        }
    })
}

fn strings(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

fn has(list: &Value, item: &str) -> bool {
    strings(list).any(|s| s == ALL || s == item)
}

/// Whether one PolicyRule allows the request (upstream's `RuleAllows`).
pub fn rule_allows(rule: &Value, attrs: &RequestAttributes) -> bool {
    if !has(&rule["verbs"], &attrs.verb) {
        return false;
    }
    if !attrs.resource_request {
        return strings(&rule["nonResourceURLs"]).any(|url| {
            url == ALL || url == attrs.path || url.strip_suffix('*').is_some_and(|p| attrs.path.starts_with(p))
        });
    }
    if !has(&rule["apiGroups"], &attrs.api_group) {
        return false;
    }
    let combined = attrs.combined_resource();
    let resource_matches = strings(&rule["resources"]).any(|r| {
        r == ALL
            || r == combined
            || (!attrs.subresource.is_empty() && r.strip_prefix("*/") == Some(attrs.subresource.as_str()))
    });
    if !resource_matches {
        return false;
    }
    let mut names = strings(&rule["resourceNames"]).peekable();
    names.peek().is_none() || (!attrs.name.is_empty() && names.any(|n| n == attrs.name))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;
    use serde_json::json;

    fn attrs(verb: &str, group: &str, resource: &str, sub: &str, name: &str) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            resource_request: true,
            namespace: "default".into(),
            api_group: group.into(),
            api_version: "v1".into(),
            resource: resource.into(),
            subresource: sub.into(),
            name: name.into(),
            ..RequestAttributes::default()
        }
    }

    #[test]
    fn rules_match_verbs_groups_resources_subresources_and_names_as_upstream() {
        let rule = json!({"verbs": ["get", "list"], "apiGroups": [""], "resources": ["pods", "pods/log"]});
        assert!(rule_allows(&rule, &attrs("list", "", "pods", "", "")));
        assert!(rule_allows(&rule, &attrs("get", "", "pods", "log", "p")));
        assert!(
            !rule_allows(&rule, &attrs("get", "", "pods", "exec", "p")),
            "subresources are separate"
        );
        assert!(!rule_allows(&rule, &attrs("delete", "", "pods", "", "p")));
        assert!(!rule_allows(&rule, &attrs("list", "apps", "pods", "", "")));
        let star_sub = json!({"verbs": ["*"], "apiGroups": ["*"], "resources": ["*/scale"]});
        assert!(rule_allows(
            &star_sub,
            &attrs("update", "apps", "deployments", "scale", "d")
        ));
        assert!(!rule_allows(
            &star_sub,
            &attrs("update", "apps", "deployments", "", "d")
        ));
        let named = json!({"verbs": ["get"], "apiGroups": [""], "resources": ["configmaps"], "resourceNames": ["a"]});
        assert!(rule_allows(&named, &attrs("get", "", "configmaps", "", "a")));
        assert!(!rule_allows(&named, &attrs("get", "", "configmaps", "", "b")));
        assert!(!rule_allows(&named, &attrs("list", "", "configmaps", "", "")));
        let urls = json!({"verbs": ["get"], "nonResourceURLs": ["/healthz", "/apis/*"]});
        assert!(rule_allows(&urls, &RequestAttributes::non_resource("get", "/healthz")));
        assert!(rule_allows(
            &urls,
            &RequestAttributes::non_resource("get", "/apis/apps/v1")
        ));
        assert!(!rule_allows(&urls, &RequestAttributes::non_resource("get", "/metrics")));
        assert!(
            !rule_allows(&urls, &attrs("get", "", "pods", "", "")),
            "URL rules grant no resources"
        );
    }
}
