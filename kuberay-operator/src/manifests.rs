//! `kuberay-operator manifests [--namespace NS]`: plain install manifests for users without helm — the CRDs
//! followed by the Helm chart's render with its default values (`deploy/kuberay-operator.yaml`, which a test
//! keeps equal to `helm template`), moved into the requested namespace.

use anyhow::Context as _;
use clap::Args;
use serde_json::Value;

/// `helm template kuberay-operator helm-chart/kuberay-operator` (release namespace `default`), checked in.
const DEFAULT_RENDER: &str = include_str!("../../deploy/kuberay-operator.yaml");

/// Namespace the checked-in render was made for.
pub const RENDERED_NAMESPACE: &str = "default";

/// Arguments of `kuberay-operator manifests`.
#[derive(Debug, Args)]
pub struct ManifestsArgs {
    /// Namespace to install the operator into (the namespace must exist).
    #[arg(short = 'n', long, default_value = RENDERED_NAMESPACE)]
    namespace: String,
}

/// The chart's default render with every namespaced object, and every ServiceAccount subject of a binding,
/// in `namespace`.
pub fn chart_objects(namespace: &str) -> anyhow::Result<Vec<Value>> {
    let mut docs: Vec<Value> =
        ray_api::yaml::from_yaml_documents(DEFAULT_RENDER).context("reading deploy/kuberay-operator.yaml")?;
    docs.retain(|doc| !doc.is_null());
    for doc in &mut docs {
        if let Some(ns) = doc.pointer_mut("/metadata/namespace") {
            *ns = Value::String(namespace.to_owned());
        }
        if let Some(Value::Array(subjects)) = doc.get_mut("subjects") {
            for subject in subjects {
                if let Some(ns) = subject.get_mut("namespace") {
                    *ns = Value::String(namespace.to_owned());
                }
            }
        }
    }
    Ok(docs)
}

/// The CRDs and the chart's objects as one YAML stream.
pub fn render(namespace: &str) -> anyhow::Result<String> {
    let mut out = crate::crd::render_crds()?;
    for doc in chart_objects(namespace)? {
        out.push_str("---\n");
        out.push_str(&serde_saphyr::to_string(&doc).context("serialising a manifest to YAML")?);
    }
    Ok(out)
}

/// Prints the manifests on stdout.
pub fn run(args: &ManifestsArgs) -> anyhow::Result<()> {
    if args.namespace.is_empty() {
        anyhow::bail!("--namespace: must not be empty");
    }
    print!("{}", render(&args.namespace)?);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespace_moves_objects_and_binding_subjects() {
        let docs = chart_objects("ray-system").unwrap();
        let deployment = docs.iter().find(|d| d["kind"] == "Deployment").unwrap();
        assert_eq!(deployment["metadata"]["namespace"], "ray-system");
        let binding = docs.iter().find(|d| d["kind"] == "ClusterRoleBinding").unwrap();
        assert_eq!(binding["subjects"][0]["namespace"], "ray-system");
        let role = docs.iter().find(|d| d["kind"] == "ClusterRole").unwrap();
        assert!(role["metadata"].get("namespace").is_none());
    }
}
