//! `kubectl ray version`: the plugin's version and the KubeRay operator's, read from the image tag of its
//! Deployment.

use k8s_openapi::api::apps::v1::Deployment;
use kube::Api;
use kube::api::ListParams;
use ray_api::constants::KUBERNETES_APPLICATION_NAME_LABEL;

use crate::cli::KubeFlags;
use crate::kube_context::KubeContext;

/// The plugin's version: `KUBECTL_RAY_VERSION` at build time (a release tag), else `development`.
pub const PLUGIN_VERSION: &str = match option_env!("KUBECTL_RAY_VERSION") {
    Some(v) => v,
    None => "development",
};

/// The `app.kubernetes.io/name` values of an installed operator's Deployment.
const OPERATOR_APP_NAMES: &str = "kuberay-operator,kuberay";

/// Runs the command; never fails (a missing operator is a warning on stdout).
pub async fn run(flags: &KubeFlags) {
    println!("kubectl ray plugin version: {PLUGIN_VERSION}");
    match operator_version(flags).await {
        Ok(version) => println!("KubeRay operator version: {version}"),
        Err(e) => println!(
            "warning: KubeRay operator installation cannot be found: {e}. Did you install it with the name \
             \"kuberay-operator\"?"
        ),
    }
}

/// The image tag of the first operator Deployment in any namespace.
async fn operator_version(flags: &KubeFlags) -> Result<String, String> {
    let ctx = KubeContext::connect(flags).await.map_err(|e| e.to_string())?;
    let api: Api<Deployment> = Api::all(ctx.client.clone());
    let selector = format!("{KUBERNETES_APPLICATION_NAME_LABEL} in ({OPERATOR_APP_NAMES})");
    let list = api
        .list(&ListParams::default().labels(&selector))
        .await
        .map_err(|e| e.to_string())?;
    let image = list
        .items
        .first()
        .ok_or_else(|| "no KubeRay operator deployments found in any namespace".to_string())?
        .spec
        .as_ref()
        .and_then(|s| s.template.spec.as_ref())
        .and_then(|s| s.containers.first())
        .and_then(|c| c.image.clone())
        .ok_or_else(|| "the KubeRay operator deployment has no container image".to_string())?;
    Ok(image_tag(&image))
}

/// The tag of an image reference, with its digest: `repo:tag@sha256:d` gives `tag@sha256:d`.
pub fn image_tag(image: &str) -> String {
    let (name, digest) = match image.split_once('@') {
        Some((name, digest)) => (name, Some(digest)),
        None => (image, None),
    };
    let last_segment_start = name.rfind('/').map_or(0, |i| i + 1);
    let tag = name[last_segment_start..].split_once(':').map_or("", |(_, tag)| tag);
    match digest {
        Some(d) => format!("{tag}@{d}"),
        None => tag.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_keep_their_digest_and_ignore_registry_ports() {
        assert_eq!(image_tag("quay.io/kuberay/operator:v1.7.0"), "v1.7.0");
        assert_eq!(image_tag("localhost:5000/kuberay:v1@sha256:abc"), "v1@sha256:abc");
        assert_eq!(image_tag("kuberay"), "");
    }
}
