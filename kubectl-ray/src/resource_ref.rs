//! The `NAME` or `TYPE/NAME` argument of `delete`, `session` and `log`: a bare name is a Ray cluster; TYPE is
//! `raycluster`, `rayjob` or `rayservice`.

use std::fmt;

/// The kinds a `TYPE/NAME` argument can name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum RayKind {
    /// `raycluster`.
    Cluster,
    /// `rayjob`.
    Job,
    /// `rayservice`.
    Service,
}

impl RayKind {
    /// The lower-case type word.
    pub fn as_str(self) -> &'static str {
        match self {
            RayKind::Cluster => "raycluster",
            RayKind::Job => "rayjob",
            RayKind::Service => "rayservice",
        }
    }

    /// The Kubernetes kind (`RayCluster`, ...).
    pub fn kind(self) -> &'static str {
        match self {
            RayKind::Cluster => ray_api::constants::CRD_KIND_RAY_CLUSTER,
            RayKind::Job => ray_api::constants::CRD_KIND_RAY_JOB,
            RayKind::Service => ray_api::constants::CRD_KIND_RAY_SERVICE,
        }
    }
}

impl fmt::Display for RayKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A parsed argument.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResourceRef {
    /// The kind.
    pub kind: RayKind,
    /// The object's name.
    pub name: String,
}

/// Why an argument was rejected.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceRefError {
    /// More than one `/`, or an empty part.
    #[error("invalid resource type/name: {0}")]
    Invalid(String),
    /// A TYPE that is not one of the three.
    #[error("unsupported resource type: {0}")]
    Unsupported(String),
}

/// How TYPE is compared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeCase {
    /// `RayCluster/x` works too (`delete`, `log`).
    Insensitive,
    /// Only the lower-case word (`session`).
    Sensitive,
}

/// Parses `NAME` or `TYPE/NAME`.
pub fn parse(arg: &str, case: TypeCase) -> Result<ResourceRef, ResourceRefError> {
    let parts: Vec<&str> = arg.split('/').collect();
    let (type_word, name) = match parts.as_slice() {
        [name] => ("raycluster", *name),
        [t, name] => (*t, *name),
        _ => return Err(ResourceRefError::Invalid(arg.to_string())),
    };
    if name.is_empty() || type_word.is_empty() {
        return Err(ResourceRefError::Invalid(arg.to_string()));
    }
    let word = match case {
        TypeCase::Insensitive => type_word.to_lowercase(),
        TypeCase::Sensitive => type_word.to_string(),
    };
    let kind = match word.as_str() {
        "raycluster" => RayKind::Cluster,
        "rayjob" => RayKind::Job,
        "rayservice" => RayKind::Service,
        _ => return Err(ResourceRefError::Unsupported(type_word.to_string())),
    };
    Ok(ResourceRef {
        kind,
        name: name.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_and_type_slash_names_parse() {
        assert_eq!(
            parse("c", TypeCase::Sensitive),
            Ok(ResourceRef {
                kind: RayKind::Cluster,
                name: "c".into()
            })
        );
        assert_eq!(
            parse("RayJob/j", TypeCase::Insensitive).map(|r| r.kind),
            Ok(RayKind::Job)
        );
        assert_eq!(
            parse("RayJob/j", TypeCase::Sensitive),
            Err(ResourceRefError::Unsupported("RayJob".into()))
        );
        assert_eq!(
            parse("a/b/c", TypeCase::Insensitive).map_err(|e| e.to_string()),
            Err("invalid resource type/name: a/b/c".into())
        );
        assert_eq!(
            parse("pod/x", TypeCase::Insensitive).map_err(|e| e.to_string()),
            Err("unsupported resource type: pod".into())
        );
    }
}
