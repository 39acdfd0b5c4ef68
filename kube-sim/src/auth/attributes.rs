//! What a request asks to do, as kube-apiserver's authorizers see it (`authorizer.Attributes`), and the 403
//! it gets when nothing allows it.

use serde_json::json;

use super::UserInfo;
use crate::error::ApiError;

/// A request's verb and target: a resource request (`verb` on `group/resource[/subresource]`, maybe named,
/// maybe in a namespace) or a non-resource request (`verb` on a URL path).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestAttributes {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`, `impersonate`, ...
    /// (non-resource requests: the lowercased HTTP method).
    pub verb: String,
    /// Whether this is a resource request.
    pub resource_request: bool,
    /// The URL path (non-resource requests).
    pub path: String,
    /// Namespace ("" at the cluster scope).
    pub namespace: String,
    /// API group ("" for core).
    pub api_group: String,
    /// API version.
    pub api_version: String,
    /// Plural resource.
    pub resource: String,
    /// Subresource ("" for none).
    pub subresource: String,
    /// Object name ("" for collections).
    pub name: String,
}

impl RequestAttributes {
    /// A non-resource request.
    pub fn non_resource(verb: &str, path: &str) -> Self {
        Self {
            verb: verb.to_owned(),
            path: path.to_owned(),
            ..Self::default()
        }
    }

    /// The resource (with its subresource) as RBAC rules name it: `pods` or `pods/log`.
    pub fn combined_resource(&self) -> String {
        if self.subresource.is_empty() {
            self.resource.clone()
        } else {
            format!("{}/{}", self.resource, self.subresource)
        }
    }

    /// kube-apiserver's authorizer message: `User "u" cannot list resource "pods" in API group "" in the
    /// namespace "default"` (or `at the cluster scope`, or `cannot get path "/x"`).
    pub fn denial(&self, user: &UserInfo) -> String {
        if !self.resource_request {
            return format!("User {:?} cannot {} path {:?}", user.name, self.verb, self.path);
        }
        let scope = if self.namespace.is_empty() {
            "at the cluster scope".to_owned()
        } else {
            format!("in the namespace {:?}", self.namespace)
        };
        format!(
            "User {:?} cannot {} resource {:?} in API group {:?} {scope}",
            user.name,
            self.verb,
            self.combined_resource(),
            self.api_group
        )
    }

    /// The 403 `Forbidden` Status kube-apiserver answers: `pods is forbidden: <denial>[: <reason>]`
    /// (`pods "x" is forbidden: ...` for a named object, `forbidden: ...` for a path).
    pub fn forbidden(&self, user: &UserInfo, reason: &str) -> ApiError {
        let mut why = self.denial(user);
        if !reason.is_empty() {
            why = format!("{why}: {reason}");
        }
        let qualified = match (self.resource.as_str(), self.api_group.as_str()) {
            ("", _) => String::new(),
            (r, "") => r.to_owned(),
            (r, g) => format!("{r}.{g}"),
        };
        let message = match (qualified.is_empty(), self.name.is_empty()) {
            (true, _) => format!("forbidden: {why}"),
            (false, true) => format!("{qualified} is forbidden: {why}"),
            (false, false) => format!("{qualified} {:?} is forbidden: {why}", self.name),
        };
        let mut e = ApiError::new(403, "Forbidden", message);
        let mut details = serde_json::Map::new();
        if !self.name.is_empty() {
            details.insert("name".into(), json!(self.name));
        }
        if !self.api_group.is_empty() {
            details.insert("group".into(), json!(self.api_group));
        }
        if !self.resource.is_empty() {
            details.insert("kind".into(), json!(self.resource));
        }
        e.details = serde_json::Value::Object(details);
        e
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]
    use super::*;

    fn sa() -> UserInfo {
        UserInfo::service_account("default", "x", "u")
    }

    fn pods(verb: &str, namespace: &str, subresource: &str, name: &str) -> RequestAttributes {
        RequestAttributes {
            verb: verb.into(),
            resource_request: true,
            namespace: namespace.into(),
            api_version: "v1".into(),
            resource: "pods".into(),
            subresource: subresource.into(),
            name: name.into(),
            ..RequestAttributes::default()
        }
    }

    #[test]
    fn forbidden_messages_match_kube_apiserver() {
        assert_eq!(
            pods("list", "default", "", "").forbidden(&sa(), "").message,
            r#"pods is forbidden: User "system:serviceaccount:default:x" cannot list resource "pods" in API group "" in the namespace "default""#
        );
        assert_eq!(
            pods("list", "", "", "").forbidden(&sa(), "").message,
            r#"pods is forbidden: User "system:serviceaccount:default:x" cannot list resource "pods" in API group "" at the cluster scope"#
        );
        assert_eq!(
            pods("get", "default", "log", "p").forbidden(&sa(), "").message,
            r#"pods "p" is forbidden: User "system:serviceaccount:default:x" cannot get resource "pods/log" in API group "" in the namespace "default""#
        );
        let scale = RequestAttributes {
            api_group: "apps".into(),
            resource: "deployments".into(),
            ..pods("update", "ns", "scale", "d")
        };
        let e = scale.forbidden(&sa(), "");
        assert_eq!(
            e.message,
            r#"deployments.apps "d" is forbidden: User "system:serviceaccount:default:x" cannot update resource "deployments/scale" in API group "apps" in the namespace "ns""#
        );
        assert_eq!(e.details, json!({"name": "d", "group": "apps", "kind": "deployments"}));
        assert_eq!(
            RequestAttributes::non_resource("get", "/metrics")
                .forbidden(&sa(), "")
                .message,
            r#"forbidden: User "system:serviceaccount:default:x" cannot get path "/metrics""#
        );
    }
}
