//! Discovery endpoints: `/version`, `/api`, `/api/v1`, `/apis`, `/apis/{g}`, `/apis/{g}/{v}`, as kube's discovery
//! and kubectl read them.

use std::collections::BTreeMap;
use std::sync::Arc;

use http::{Method, Response};
use serde_json::{Value, json};

use super::{Body, HttpState, value_response};
use crate::kinds::ResourceInfo;

/// The emulated Kubernetes version.
pub const EMULATED_MAJOR: &str = "1";
/// The emulated Kubernetes minor version.
pub const EMULATED_MINOR: &str = "33";

fn verbs(info: &ResourceInfo) -> Value {
    let _ = info;
    json!([
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch"
    ])
}

fn resource_list(group_version: &str, infos: &[Arc<ResourceInfo>]) -> Value {
    let mut resources = Vec::new();
    for r in infos {
        let mut entry = json!({
            "name": r.gvr.resource,
            "singularName": r.singular,
            "namespaced": r.namespaced,
            "kind": r.kind,
            "verbs": verbs(r),
        });
        if !r.short_names.is_empty() {
            entry["shortNames"] = json!(r.short_names);
        }
        if !r.categories.is_empty() {
            entry["categories"] = json!(r.categories);
        }
        resources.push(entry);
        if r.status_subresource {
            resources.push(json!({"name": format!("{}/status", r.gvr.resource), "singularName": "", "namespaced": r.namespaced, "kind": r.kind, "verbs": ["get", "patch", "update"]}));
        }
        if r.scale_subresource {
            resources.push(json!({"name": format!("{}/scale", r.gvr.resource), "singularName": "", "namespaced": r.namespaced, "group": "autoscaling", "version": "v1", "kind": "Scale", "verbs": ["get", "patch", "update"]}));
        }
    }
    json!({"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": group_version, "resources": resources})
}

fn groups(all: &[Arc<ResourceInfo>]) -> BTreeMap<String, Vec<String>> {
    let mut g: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for r in all.iter().filter(|r| !r.gvr.group.is_empty()) {
        let versions = g.entry(r.gvr.group.clone()).or_default();
        if !versions.contains(&r.gvr.version) {
            versions.push(r.gvr.version.clone());
        }
    }
    for versions in g.values_mut() {
        // Prefer v1 over betas over alphas, as Kubernetes version priority does.
        versions.sort_by_key(|v| {
            (
                !v.starts_with("v1") || v.contains("alpha") || v.contains("beta"),
                v.contains("alpha"),
                v.clone(),
            )
        });
    }
    g
}

fn group_json(name: &str, versions: &[String]) -> Value {
    let vs: Vec<Value> = versions
        .iter()
        .map(|v| json!({"groupVersion": format!("{name}/{v}"), "version": v}))
        .collect();
    let preferred = vs.first().cloned().unwrap_or(Value::Null);
    json!({"name": name, "versions": vs, "preferredVersion": preferred})
}

/// Serves a discovery request, `None` if the path is not a discovery path.
pub(super) fn serve(state: &HttpState, method: &Method, segs: &[&str], accept: &str) -> Option<Response<Body>> {
    if method != Method::GET {
        return None;
    }
    let _ = accept;
    let all = || state.store.resources();
    let resp = match segs {
        ["version"] => value_response(
            200,
            &json!({
                "major": EMULATED_MAJOR, "minor": EMULATED_MINOR, "gitVersion": format!("v{EMULATED_MAJOR}.{EMULATED_MINOR}.0-kube-sim"),
                "gitCommit": "kube-sim", "gitTreeState": "clean", "buildDate": "2026-01-01T00:00:00Z",
                "goVersion": "n/a", "compiler": "rustc", "platform": "linux/amd64"
            }),
        ),
        ["api"] => value_response(
            200,
            &json!({"kind": "APIVersions", "versions": ["v1"], "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": state.addr.to_string()}]}),
        ),
        ["api", "v1"] => {
            let core: Vec<_> = all()
                .into_iter()
                .filter(|r| r.gvr.group.is_empty() && r.gvr.version == "v1")
                .collect();
            value_response(200, &resource_list("v1", &core))
        }
        ["apis"] => {
            let gs: Vec<Value> = groups(&all()).iter().map(|(n, v)| group_json(n, v)).collect();
            value_response(200, &json!({"kind": "APIGroupList", "apiVersion": "v1", "groups": gs}))
        }
        ["apis", g] => {
            let gs = groups(&all());
            let versions = gs.get(*g)?;
            let mut v = group_json(g, versions);
            v["kind"] = json!("APIGroup");
            v["apiVersion"] = json!("v1");
            value_response(200, &v)
        }
        ["apis", g, v] => {
            let rs: Vec<_> = all()
                .into_iter()
                .filter(|r| r.gvr.group == *g && r.gvr.version == *v)
                .collect();
            if rs.is_empty() {
                return None;
            }
            value_response(200, &resource_list(&format!("{g}/{v}"), &rs))
        }
        _ => return None,
    };
    Some(resp)
}
