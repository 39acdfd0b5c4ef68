//! The resource registry: which group/version/resources exist and how each behaves (scope, subresources,
//! generation, name rule, discovery).

use std::fmt;

/// A group/version/resource triple (`resource` is the lowercase plural, e.g. `pods`).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Gvr {
    /// API group, empty for the core group.
    pub group: String,
    /// API version (`v1`).
    pub version: String,
    /// Plural resource name (`pods`).
    pub resource: String,
}

impl Gvr {
    /// Builds a GVR from its parts.
    pub fn new(group: &str, version: &str, resource: &str) -> Self {
        Self {
            group: group.to_string(),
            version: version.to_string(),
            resource: resource.to_string(),
        }
    }

    /// Core-group GVR (`v1`).
    pub fn core(resource: &str) -> Self {
        Self::new("", "v1", resource)
    }

    /// The `apiVersion` string of objects of this resource (`v1`, `batch/v1`).
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Well-known GVR: core/v1 pods.
    pub fn pods() -> Self {
        Self::core("pods")
    }
    /// Well-known GVR: core/v1 services.
    pub fn services() -> Self {
        Self::core("services")
    }
    /// Well-known GVR: core/v1 namespaces.
    pub fn namespaces() -> Self {
        Self::core("namespaces")
    }
    /// Well-known GVR: core/v1 nodes.
    pub fn nodes() -> Self {
        Self::core("nodes")
    }
    /// Well-known GVR: core/v1 serviceaccounts.
    pub fn service_accounts() -> Self {
        Self::core("serviceaccounts")
    }
    /// Well-known GVR: batch/v1 jobs.
    pub fn jobs() -> Self {
        Self::new("batch", "v1", "jobs")
    }
    /// Well-known GVR: apiextensions.k8s.io/v1 customresourcedefinitions.
    pub fn crds() -> Self {
        Self::new("apiextensions.k8s.io", "v1", "customresourcedefinitions")
    }
    /// Well-known GVR: admissionregistration.k8s.io/v1 validatingwebhookconfigurations.
    pub fn validating_webhook_configurations() -> Self {
        Self::new("admissionregistration.k8s.io", "v1", "validatingwebhookconfigurations")
    }
    /// Well-known GVR: scheduling.volcano.sh/v1beta1 podgroups.
    pub fn volcano_podgroups() -> Self {
        Self::new("scheduling.volcano.sh", "v1beta1", "podgroups")
    }
}

impl fmt::Display for Gvr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.group.is_empty() {
            write!(f, "{}/{}", self.version, self.resource)
        } else {
            write!(f, "{}/{}/{}", self.group, self.version, self.resource)
        }
    }
}

/// When `metadata.generation` is maintained and what bumps it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum GenerationRule {
    /// No generation at all (ConfigMap, Service, ...).
    None,
    /// 1 on create, +1 when `spec` changes (Pod, Job, Ingress, CRD).
    Spec,
    /// 1 on create, +1 on any change outside `metadata` and `status` (CRs with a status subresource).
    AllButMetadataAndStatus,
    /// 1 on create, +1 on any change outside `metadata`, status included (CRs without a status subresource).
    AllButMetadata,
}

/// Object name rule per kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameRule {
    /// DNS-1123 subdomain (≤253).
    Subdomain,
    /// DNS-1123 label (≤63, no dots).
    Label,
    /// DNS-1035 label (starts with a letter).
    Dns1035,
    /// Path segment: anything except `.`, `..`, `/` and `%`.
    PathSegment,
}

/// Everything the server needs to know about one served resource.
#[derive(Debug, Clone, PartialEq)]
pub struct ResourceInfo {
    /// The resource's group/version/plural.
    pub gvr: Gvr,
    /// Kind (`Pod`).
    pub kind: String,
    /// Singular name (`pod`).
    pub singular: String,
    /// Namespaced (true) or cluster-scoped (false).
    pub namespaced: bool,
    /// Whether `/status` is served and the main endpoint ignores `.status`.
    pub status_subresource: bool,
    /// Whether `/scale` is served (only reported in discovery).
    pub scale_subresource: bool,
    /// Generation rule.
    pub generation: GenerationRule,
    /// PUT without resourceVersion allowed.
    pub unconditional_update: bool,
    /// PUT on a missing object creates it.
    pub create_on_update: bool,
    /// DELETE returns the object rather than a Success Status.
    pub return_deleted_object: bool,
    /// Name validation rule.
    pub name_rule: NameRule,
    /// Strategic merge patch accepted (built-in kinds).
    pub strategic_merge: bool,
    /// Default deletion propagation is Orphan (batch/v1 Job).
    pub default_orphan: bool,
    /// Defined by a CustomResourceDefinition.
    pub custom: bool,
    /// Short names for discovery (`po`).
    pub short_names: Vec<String>,
    /// Discovery categories (`all`, so that `kubectl get all` lists the resource).
    pub categories: Vec<String>,
    /// The compiled `openAPIV3Schema` of a custom resource's version (none for built-in kinds).
    pub schema: Option<std::sync::Arc<crate::crd_schema::CrdValidator>>,
}

impl ResourceInfo {
    /// The `kind` of this resource's list (`PodList`).
    pub fn list_kind(&self) -> String {
        format!("{}List", self.kind)
    }

    /// A [`crate::error::Target`] for errors about `name`.
    pub fn target<'a>(&'a self, name: &'a str) -> crate::error::Target<'a> {
        crate::error::Target {
            group: &self.gvr.group,
            plural: &self.gvr.resource,
            kind: &self.kind,
            name,
        }
    }
}

struct Builtin {
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
    generation: GenerationRule,
    unconditional: bool,
    create_on_update: bool,
    return_deleted: bool,
    name_rule: NameRule,
    short: &'static [&'static str],
    scale: bool,
}

const fn b(
    group: &'static str,
    version: &'static str,
    plural: &'static str,
    kind: &'static str,
    namespaced: bool,
    status: bool,
    generation: GenerationRule,
) -> Builtin {
    Builtin {
        group,
        version,
        plural,
        kind,
        namespaced,
        status,
        generation,
        unconditional: true,
        create_on_update: false,
        return_deleted: false,
        name_rule: NameRule::Subdomain,
        short: &[],
        scale: false,
    }
}

/// An `apps/v1` workload kind: status and scale subresources.
fn apps(plural: &'static str, kind: &'static str, short: &'static [&'static str]) -> Builtin {
    Builtin {
        short,
        scale: plural != "daemonsets",
        ..b("apps", "v1", plural, kind, true, true, G::Spec)
    }
}

use GenerationRule as G;

fn builtin_table() -> Vec<Builtin> {
    vec![
        Builtin {
            return_deleted: true,
            short: &["po"],
            ..b("", "v1", "pods", "Pod", true, true, G::Spec)
        },
        Builtin {
            name_rule: NameRule::Dns1035,
            short: &["svc"],
            ..b("", "v1", "services", "Service", true, true, G::None)
        },
        Builtin {
            return_deleted: true,
            short: &["sa"],
            ..b("", "v1", "serviceaccounts", "ServiceAccount", true, false, G::None)
        },
        Builtin {
            short: &["cm"],
            ..b("", "v1", "configmaps", "ConfigMap", true, false, G::None)
        },
        b("", "v1", "secrets", "Secret", true, false, G::None),
        Builtin {
            short: &["pvc"],
            ..b(
                "",
                "v1",
                "persistentvolumeclaims",
                "PersistentVolumeClaim",
                true,
                true,
                G::None,
            )
        },
        Builtin {
            name_rule: NameRule::Label,
            short: &["ns"],
            ..b("", "v1", "namespaces", "Namespace", false, true, G::None)
        },
        Builtin {
            short: &["no"],
            ..b("", "v1", "nodes", "Node", false, true, G::None)
        },
        Builtin {
            create_on_update: true,
            short: &["ev"],
            ..b("", "v1", "events", "Event", true, false, G::None)
        },
        Builtin {
            create_on_update: true,
            short: &["ep"],
            ..b("", "v1", "endpoints", "Endpoints", true, false, G::None)
        },
        Builtin {
            create_on_update: true,
            short: &["ev"],
            ..b("events.k8s.io", "v1", "events", "Event", true, false, G::None)
        },
        Builtin {
            unconditional: false,
            create_on_update: true,
            ..b("coordination.k8s.io", "v1", "leases", "Lease", true, false, G::None)
        },
        rbac("roles", "Role", true),
        rbac("rolebindings", "RoleBinding", true),
        rbac("clusterroles", "ClusterRole", false),
        rbac("clusterrolebindings", "ClusterRoleBinding", false),
        b("batch", "v1", "jobs", "Job", true, true, G::Spec),
        // Kinds kubectl has generators for (`create quota|priorityclass|poddisruptionbudget`): stored, no controller.
        Builtin {
            short: &["quota"],
            ..b("", "v1", "resourcequotas", "ResourceQuota", true, true, G::None)
        },
        Builtin {
            short: &["pc"],
            ..b(
                "scheduling.k8s.io",
                "v1",
                "priorityclasses",
                "PriorityClass",
                false,
                false,
                G::None,
            )
        },
        Builtin {
            short: &["pdb"],
            ..b(
                "policy",
                "v1",
                "poddisruptionbudgets",
                "PodDisruptionBudget",
                true,
                true,
                G::Spec,
            )
        },
        apps("deployments", "Deployment", &["deploy"]),
        apps("replicasets", "ReplicaSet", &["rs"]),
        apps("statefulsets", "StatefulSet", &["sts"]),
        apps("daemonsets", "DaemonSet", &["ds"]),
        Builtin {
            short: &["ing"],
            ..b("networking.k8s.io", "v1", "ingresses", "Ingress", true, true, G::Spec)
        },
        Builtin {
            short: &["netpol"],
            ..b(
                "networking.k8s.io",
                "v1",
                "networkpolicies",
                "NetworkPolicy",
                true,
                false,
                G::Spec,
            )
        },
        b(
            "networking.k8s.io",
            "v1",
            "ingressclasses",
            "IngressClass",
            false,
            false,
            G::None,
        ),
        b(
            "discovery.k8s.io",
            "v1",
            "endpointslices",
            "EndpointSlice",
            true,
            false,
            G::None,
        ),
        b(
            "admissionregistration.k8s.io",
            "v1",
            "validatingwebhookconfigurations",
            "ValidatingWebhookConfiguration",
            false,
            false,
            G::AllButMetadata,
        ),
        Builtin {
            short: &["crd", "crds"],
            ..b(
                "apiextensions.k8s.io",
                "v1",
                "customresourcedefinitions",
                "CustomResourceDefinition",
                false,
                true,
                G::Spec,
            )
        },
    ]
}

/// The built-in resources kube-apiserver puts in the `all` category, by group and plural (listed whether or not
/// kube-sim serves them yet).
const CATEGORY_ALL: &[(&str, &str)] = &[
    ("", "pods"),
    ("", "services"),
    ("", "replicationcontrollers"),
    ("apps", "daemonsets"),
    ("apps", "deployments"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("batch", "jobs"),
    ("batch", "cronjobs"),
    ("autoscaling", "horizontalpodautoscalers"),
];

/// The discovery categories of a built-in resource.
fn builtin_categories(group: &str, plural: &str) -> Vec<String> {
    if CATEGORY_ALL.contains(&(group, plural)) {
        vec!["all".to_string()]
    } else {
        Vec::new()
    }
}

fn rbac(plural: &'static str, kind: &'static str, namespaced: bool) -> Builtin {
    Builtin {
        create_on_update: true,
        name_rule: NameRule::PathSegment,
        ..b(
            "rbac.authorization.k8s.io",
            "v1",
            plural,
            kind,
            namespaced,
            false,
            G::None,
        )
    }
}

/// The built-in resources served from startup.
pub fn builtin_resources() -> Vec<ResourceInfo> {
    builtin_table()
        .into_iter()
        .map(|t| ResourceInfo {
            gvr: Gvr::new(t.group, t.version, t.plural),
            singular: t.kind.to_lowercase(),
            kind: t.kind.to_string(),
            namespaced: t.namespaced,
            status_subresource: t.status,
            scale_subresource: t.scale,
            generation: t.generation,
            unconditional_update: t.unconditional,
            create_on_update: t.create_on_update,
            return_deleted_object: t.return_deleted,
            name_rule: t.name_rule,
            strategic_merge: true,
            default_orphan: t.group == "batch" && t.plural == "jobs",
            custom: false,
            short_names: t.short.iter().map(|s| s.to_string()).collect(),
            categories: builtin_categories(t.group, t.plural),
            schema: None,
        })
        .collect()
}

/// The resources a CustomResourceDefinition object defines (one per served version).
pub fn resources_from_crd(crd: &serde_json::Value) -> Vec<ResourceInfo> {
    let spec = &crd["spec"];
    let group = spec["group"].as_str().unwrap_or_default();
    let names = &spec["names"];
    let plural = names["plural"].as_str().unwrap_or_default();
    let kind = names["kind"].as_str().unwrap_or_default();
    if group.is_empty() || plural.is_empty() || kind.is_empty() {
        return Vec::new();
    }
    let singular = names["singular"]
        .as_str()
        .map(str::to_string)
        .unwrap_or_else(|| kind.to_lowercase());
    let namespaced = spec["scope"].as_str() != Some("Cluster");
    let short_names: Vec<String> = names["shortNames"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let categories: Vec<String> = names["categories"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
        .unwrap_or_default();
    let Some(versions) = spec["versions"].as_array() else {
        return Vec::new();
    };
    versions
        .iter()
        .filter(|v| v["served"].as_bool().unwrap_or(true))
        .filter_map(|v| {
            let version = v["name"].as_str()?;
            let status = v["subresources"].get("status").is_some();
            Some(ResourceInfo {
                gvr: Gvr::new(group, version, plural),
                kind: kind.to_string(),
                singular: singular.clone(),
                namespaced,
                status_subresource: status,
                scale_subresource: v["subresources"].get("scale").is_some(),
                generation: if status {
                    G::AllButMetadataAndStatus
                } else {
                    G::AllButMetadata
                },
                unconditional_update: false,
                create_on_update: false,
                return_deleted_object: false,
                name_rule: NameRule::Subdomain,
                strategic_merge: false,
                default_orphan: false,
                custom: true,
                short_names: short_names.clone(),
                categories: categories.clone(),
                schema: crate::crd_schema::CrdValidator::for_crd_version(v),
            })
        })
        .collect()
}
