//! Impersonation (`Impersonate-User`, `Impersonate-Group`, `Impersonate-Uid`, `Impersonate-Extra-*`
//! headers, `kubectl --as`, `--as-group`, `--as-uid`): the requester needs the `impersonate` verb on each
//! thing it asks to be (`users`, `groups`, `serviceaccounts` in their namespace, `uids` and `userextras/<key>`
//! in `authentication.k8s.io`); the request then runs as the impersonated user.

use std::collections::BTreeMap;

use http::HeaderMap;

use super::attributes::RequestAttributes;
use super::{GROUP_AUTHENTICATED, UserInfo, rbac};
use crate::error::ApiError;
use crate::store::Store;

const USER_HEADER: &str = "impersonate-user";
const GROUP_HEADER: &str = "impersonate-group";
const UID_HEADER: &str = "impersonate-uid";
const EXTRA_HEADER_PREFIX: &str = "impersonate-extra-";

fn impersonate(resource: &str, group: &str, namespace: &str, name: &str) -> RequestAttributes {
    RequestAttributes {
        verb: "impersonate".into(),
        resource_request: true,
        namespace: namespace.into(),
        api_group: group.into(),
        resource: resource.into(),
        name: name.into(),
        ..RequestAttributes::default()
    }
}

/// The user a request acts as: `requester`, or whom its impersonation headers name once `requester` is
/// allowed to impersonate each of them (403 otherwise, 400 for groups, uid or extras without a user).
pub fn acting_user(store: &Store, requester: UserInfo, headers: &HeaderMap) -> Result<UserInfo, ApiError> {
    let values = |name: &str| -> Vec<String> {
        headers
            .get_all(name)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .map(str::to_owned)
            .collect()
    };
    let user = values(USER_HEADER).into_iter().next();
    let groups = values(GROUP_HEADER);
    let uid = values(UID_HEADER).into_iter().next();
    let mut extra: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for (name, value) in headers {
        if let (Some(key), Ok(v)) = (name.as_str().strip_prefix(EXTRA_HEADER_PREFIX), value.to_str()) {
            extra.entry(key.to_owned()).or_default().push(v.to_owned());
        }
    }
    let Some(user) = user else {
        if groups.is_empty() && uid.is_none() && extra.is_empty() {
            return Ok(requester);
        }
        return Err(ApiError::bad_request(
            "requested impersonation of groups, uid or extras without impersonating a user",
        ));
    };
    let mut checks = Vec::new();
    let mut acting = UserInfo {
        name: user.clone(),
        ..UserInfo::default()
    };
    match acting.service_account_name() {
        Some((ns, name)) => {
            checks.push(impersonate("serviceaccounts", "", ns, name));
            if groups.is_empty() {
                acting.groups = super::service_account_groups(ns);
            }
        }
        None => checks.push(impersonate("users", "", "", &user)),
    }
    for g in &groups {
        checks.push(impersonate("groups", "", "", g));
    }
    if let Some(uid) = &uid {
        checks.push(impersonate("uids", "authentication.k8s.io", "", uid));
    }
    for (key, vals) in &extra {
        for v in vals {
            let mut a = impersonate("userextras", "authentication.k8s.io", "", v);
            a.subresource = key.clone();
            checks.push(a);
        }
    }
    for attrs in &checks {
        let decision = rbac::authorize(store, &requester, attrs);
        if !decision.allowed {
            return Err(attrs.forbidden(&requester, &decision.reason));
        }
    }
    acting.groups.extend(groups);
    if !acting.in_group(GROUP_AUTHENTICATED) {
        acting.groups.push(GROUP_AUTHENTICATED.to_owned());
    }
    acting.uid = uid.unwrap_or_default();
    acting.extra = extra;
    Ok(acting)
}
