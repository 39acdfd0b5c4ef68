//! What the API server offers, read once at start-up: whether this is OpenShift (Routes instead of
//! Ingresses) and whether cert-manager is installed (the mTLS path). KubeRay decides both once at
//! start-up too, so installing cert-manager later needs an operator restart, as it does there.

use std::collections::BTreeSet;
use std::time::Duration;
use tracing::warn;

/// API groups whose presence marks an OpenShift cluster (any one suffices). Well-known groups rather
/// than any `*.openshift.io`, so an unrelated CRD in that domain does not switch Ingresses to Routes.
pub const OPENSHIFT_API_GROUPS: [&str; 3] = ["route.openshift.io", "security.openshift.io", "config.openshift.io"];

/// cert-manager's API group and the version the mTLS path uses.
pub const CERT_MANAGER_GROUP_VERSION: &str = "cert-manager.io/v1";

/// Attempts at reading the API groups before the operator gives up starting.
const DISCOVERY_ATTEMPTS: u32 = 5;
/// First wait between attempts; doubled after each failure.
const DISCOVERY_RETRY: Duration = Duration::from_millis(200);

/// The `group/version` pairs the API server serves (`GET /apis`).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ServerApiGroups {
    group_versions: BTreeSet<String>,
}

impl ServerApiGroups {
    /// Read the served groups, retrying a few times: a wrong answer here would silently pick Ingresses
    /// over Routes, or refuse mTLS clusters, for the operator's whole life.
    pub async fn discover(client: &kube::Client) -> anyhow::Result<Self> {
        let mut wait = DISCOVERY_RETRY;
        let mut attempt = 1;
        loop {
            match client.list_api_groups().await {
                Ok(list) => {
                    return Ok(Self::from_group_versions(
                        list.groups
                            .into_iter()
                            .flat_map(|g| g.versions.into_iter().map(|v| v.group_version)),
                    ));
                }
                Err(e) if attempt < DISCOVERY_ATTEMPTS => {
                    warn!(error = %e, retry_in = ?wait, "cannot list the API groups");
                    tokio::time::sleep(wait).await;
                    wait *= 2;
                    attempt += 1;
                }
                Err(e) => return Err(anyhow::Error::new(e).context("failed to retrieve server API groups")),
            }
        }
    }

    /// Build from `group/version` strings (as listed by discovery).
    pub fn from_group_versions(group_versions: impl IntoIterator<Item = String>) -> Self {
        Self {
            group_versions: group_versions.into_iter().collect(),
        }
    }

    /// Whether `group` is served in any version.
    pub fn has_group(&self, group: &str) -> bool {
        self.group_versions
            .iter()
            .any(|gv| gv.split_once('/').is_some_and(|(g, _)| g == group))
    }

    /// KubeRay's `IsOpenShiftCluster`: any of [`OPENSHIFT_API_GROUPS`] is served.
    pub fn is_openshift(&self) -> bool {
        OPENSHIFT_API_GROUPS.iter().any(|g| self.has_group(g))
    }

    /// cert-manager's `v1` API is served.
    pub fn has_cert_manager(&self) -> bool {
        self.group_versions.contains(CERT_MANAGER_GROUP_VERSION)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn groups(gvs: &[&str]) -> ServerApiGroups {
        ServerApiGroups::from_group_versions(gvs.iter().map(|s| (*s).to_owned()))
    }

    #[test]
    fn openshift_is_any_well_known_group_only() {
        assert!(!groups(&["apps/v1", "ray.io/v1"]).is_openshift());
        assert!(groups(&["route.openshift.io/v1"]).is_openshift());
        assert!(groups(&["security.openshift.io/v1"]).is_openshift());
        assert!(groups(&["config.openshift.io/v1"]).is_openshift());
        // A user CRD in the openshift.io domain is not OpenShift.
        assert!(!groups(&["widgets.openshift.io/v1"]).is_openshift());
    }

    #[test]
    fn cert_manager_needs_v1() {
        assert!(groups(&["cert-manager.io/v1"]).has_cert_manager());
        assert!(!groups(&["cert-manager.io/v1alpha2"]).has_cert_manager());
        assert!(!groups(&["acme.cert-manager.io/v1"]).has_cert_manager());
    }
}
