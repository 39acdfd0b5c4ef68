//! The schemas of built-in kinds, generated from `k8s-openapi`'s `schemars` implementations (the same
//! definitions kube-apiserver publishes, under the same names: `io.k8s.api.core.v1.Pod`).

use std::borrow::Cow;

use k8s_openapi::Resource;
use k8s_openapi::api::{
    admissionregistration, apps, authentication, authorization, autoscaling, batch, coordination, core, discovery,
    events, networking, policy, rbac, scheduling, storage,
};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions;
use k8s_openapi::schemars::{JsonSchema, Schema, SchemaGenerator};

/// A built-in kind whose schema kube-sim can publish when it serves the kind.
pub(super) struct BuiltinKind {
    /// API group, empty for the core group.
    pub group: &'static str,
    /// API version.
    pub version: &'static str,
    /// Kind.
    pub kind: &'static str,
    /// The definition name (`io.k8s.api.core.v1.Pod`).
    pub definition: fn() -> Cow<'static, str>,
    /// Adds the kind's schema and everything it references to a generator's definitions.
    pub generate: fn(&mut SchemaGenerator) -> Schema,
}

const fn entry<T: Resource + JsonSchema>() -> BuiltinKind {
    BuiltinKind {
        group: T::GROUP,
        version: T::VERSION,
        kind: T::KIND,
        definition: T::schema_name,
        generate: SchemaGenerator::subschema_for::<T>,
    }
}

/// Every kind kube-sim serves today or may serve (only served kinds are published). A kind served without an
/// entry here is published with its paths only.
const BUILTIN_KINDS: &[BuiltinKind] = &[
    entry::<core::v1::Pod>(),
    entry::<core::v1::Service>(),
    entry::<core::v1::ServiceAccount>(),
    entry::<core::v1::ConfigMap>(),
    entry::<core::v1::Secret>(),
    entry::<core::v1::PersistentVolumeClaim>(),
    entry::<core::v1::PersistentVolume>(),
    entry::<core::v1::Namespace>(),
    entry::<core::v1::Node>(),
    entry::<core::v1::Event>(),
    entry::<core::v1::Endpoints>(),
    entry::<core::v1::LimitRange>(),
    entry::<core::v1::ResourceQuota>(),
    entry::<core::v1::PodTemplate>(),
    entry::<core::v1::ReplicationController>(),
    entry::<events::v1::Event>(),
    entry::<coordination::v1::Lease>(),
    entry::<rbac::v1::Role>(),
    entry::<rbac::v1::RoleBinding>(),
    entry::<rbac::v1::ClusterRole>(),
    entry::<rbac::v1::ClusterRoleBinding>(),
    entry::<batch::v1::Job>(),
    entry::<batch::v1::CronJob>(),
    entry::<apps::v1::Deployment>(),
    entry::<apps::v1::ReplicaSet>(),
    entry::<apps::v1::StatefulSet>(),
    entry::<apps::v1::DaemonSet>(),
    entry::<apps::v1::ControllerRevision>(),
    entry::<autoscaling::v1::Scale>(),
    entry::<autoscaling::v2::HorizontalPodAutoscaler>(),
    entry::<policy::v1::PodDisruptionBudget>(),
    entry::<networking::v1::Ingress>(),
    entry::<networking::v1::IngressClass>(),
    entry::<networking::v1::NetworkPolicy>(),
    entry::<discovery::v1::EndpointSlice>(),
    entry::<scheduling::v1::PriorityClass>(),
    entry::<storage::v1::StorageClass>(),
    entry::<admissionregistration::v1::ValidatingWebhookConfiguration>(),
    entry::<admissionregistration::v1::MutatingWebhookConfiguration>(),
    entry::<apiextensions::v1::CustomResourceDefinition>(),
    entry::<authentication::v1::TokenRequest>(),
    entry::<authentication::v1::TokenReview>(),
    entry::<authentication::v1::SelfSubjectReview>(),
    entry::<authorization::v1::SelfSubjectAccessReview>(),
    entry::<authorization::v1::SelfSubjectRulesReview>(),
    entry::<authorization::v1::SubjectAccessReview>(),
    entry::<authorization::v1::LocalSubjectAccessReview>(),
];

/// Every built-in kind kube-sim knows the schema of.
pub(super) fn all() -> &'static [BuiltinKind] {
    BUILTIN_KINDS
}

/// The built-in kind `group/version/kind`, if kube-sim knows its schema.
pub(super) fn find(group: &str, version: &str, kind: &str) -> Option<&'static BuiltinKind> {
    BUILTIN_KINDS
        .iter()
        .find(|k| k.group == group && k.version == version && k.kind == kind)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used)]

    use super::*;

    #[test]
    fn every_builtin_kind_is_listed_once() {
        for (i, k) in BUILTIN_KINDS.iter().enumerate() {
            assert!(
                BUILTIN_KINDS[..i]
                    .iter()
                    .all(|o| (o.group, o.version, o.kind) != (k.group, k.version, k.kind)),
                "{}/{}/{} twice",
                k.group,
                k.version,
                k.kind
            );
        }
    }

    #[test]
    fn every_kind_kube_sim_serves_at_startup_has_a_schema() {
        for r in crate::kinds::builtin_resources() {
            assert!(
                find(&r.gvr.group, &r.gvr.version, &r.kind).is_some(),
                "no schema for {}",
                r.gvr
            );
        }
    }

    #[test]
    fn definition_names_are_upstream_names() {
        assert_eq!((find("", "v1", "Pod").unwrap().definition)(), "io.k8s.api.core.v1.Pod");
        assert_eq!(
            (find("apiextensions.k8s.io", "v1", "CustomResourceDefinition")
                .unwrap()
                .definition)(),
            "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.CustomResourceDefinition"
        );
    }
}
