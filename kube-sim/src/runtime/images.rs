//! Which images run as real processes: `IMAGE=DIR` mappings to a host directory (a virtualenv-like tree whose
//! `bin` goes first on `PATH`) or to an unpacked OCI image (its `rootfs/` becomes the container's root).

use std::path::{Path, PathBuf};

use serde_json::Value;

/// How a mapped image's directory is used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ImageRoot {
    /// Run on the host filesystem with `DIR/bin` first on `PATH` (`--image-host`).
    Host(PathBuf),
    /// Run with an unpacked OCI image as root filesystem (`--image-rootfs`): `DIR/rootfs` when it exists
    /// (`umoci unpack` layout, with `DIR/config.json`), else `DIR` itself.
    Rootfs(PathBuf),
}

/// One `IMAGE=DIR` mapping.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImageMapping {
    /// The image reference as given; without a tag or digest it matches every tag of the repository.
    pub image: String,
    /// Where the image's files are.
    pub root: ImageRoot,
}

/// A malformed `IMAGE=DIR` argument.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid image mapping {0:?}: expected IMAGE=DIR with an absolute DIR")]
pub struct ImageMappingError(pub String);

impl ImageMapping {
    /// Parses `IMAGE=DIR`; `rootfs` picks [`ImageRoot::Rootfs`], else [`ImageRoot::Host`].
    pub fn parse(arg: &str, rootfs: bool) -> Result<Self, ImageMappingError> {
        let err = || ImageMappingError(arg.to_string());
        let (image, dir) = arg.split_once('=').ok_or_else(err)?;
        let dir = PathBuf::from(dir);
        if image.is_empty() || !dir.is_absolute() {
            return Err(err());
        }
        let root = if rootfs {
            ImageRoot::Rootfs(dir)
        } else {
            ImageRoot::Host(dir)
        };
        Ok(Self {
            image: image.to_string(),
            root,
        })
    }

    /// Whether `image` (a container's `image` field) is this mapping's image.
    pub fn matches(&self, image: &str) -> bool {
        let want = normalize(&self.image);
        let got = normalize(image);
        if want.tag.is_none() && want.digest.is_none() {
            return want.repo == got.repo;
        }
        want == got
    }
}

/// An image reference split into repository, tag and digest, with Docker Hub's implicit prefixes removed.
#[derive(Debug, PartialEq, Eq)]
struct ImageRef {
    repo: String,
    tag: Option<String>,
    digest: Option<String>,
}

fn normalize(image: &str) -> ImageRef {
    let (rest, digest) = match image.split_once('@') {
        Some((r, d)) => (r, Some(d.to_string())),
        None => (image, None),
    };
    let (repo, tag) = match rest.rsplit_once(':') {
        Some((r, t)) if !t.contains('/') => (r, Some(t.to_string())),
        _ => (rest, None),
    };
    let repo = repo
        .strip_prefix("docker.io/")
        .or_else(|| repo.strip_prefix("index.docker.io/"))
        .unwrap_or(repo);
    let repo = repo.strip_prefix("library/").unwrap_or(repo);
    ImageRef {
        repo: repo.to_string(),
        tag,
        digest,
    }
}

/// The first mapping matching `image`.
pub fn lookup<'a>(mappings: &'a [ImageMapping], image: &str) -> Option<&'a ImageMapping> {
    mappings.iter().find(|m| m.matches(image))
}

/// The image's OCI config (`Entrypoint`, `Cmd`, `Env`, `WorkingDir`, `User`) when a rootfs image has one.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ImageConfig {
    /// `config.Entrypoint`.
    pub entrypoint: Vec<String>,
    /// `config.Cmd`.
    pub cmd: Vec<String>,
    /// `config.Env` as `NAME=value` pairs.
    pub env: Vec<(String, String)>,
    /// `config.WorkingDir`.
    pub working_dir: Option<String>,
    /// `config.User` (`uid[:gid]`, numeric only).
    pub user: Option<(u32, Option<u32>)>,
}

impl ImageRoot {
    /// The directory that becomes `/` for the container (the host's `/` for [`ImageRoot::Host`]).
    pub fn root_dir(&self) -> PathBuf {
        match self {
            ImageRoot::Host(_) => PathBuf::from("/"),
            ImageRoot::Rootfs(dir) => {
                let nested = dir.join("rootfs");
                if nested.is_dir() { nested } else { dir.clone() }
            }
        }
    }

    /// The directory put first on `PATH`, for host images.
    pub fn bin_dir(&self) -> Option<PathBuf> {
        match self {
            ImageRoot::Host(dir) => Some(dir.join("bin")),
            ImageRoot::Rootfs(_) => None,
        }
    }

    /// Reads the OCI runtime/image config next to a rootfs (`config.json`); empty for host images or when
    /// absent or unreadable.
    pub fn config(&self) -> ImageConfig {
        match self {
            ImageRoot::Host(_) => ImageConfig::default(),
            ImageRoot::Rootfs(dir) => read_config(&dir.join("config.json")).unwrap_or_default(),
        }
    }
}

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .into_iter()
        .flatten()
        .filter_map(|s| s.as_str().map(str::to_string))
        .collect()
}

/// Reads either an OCI image config (`{"config": {"Entrypoint": ...}}`) or an OCI runtime spec as `umoci
/// unpack` writes it (`{"process": {"args": ..., "env": ..., "cwd": ..., "user": {...}}}`).
fn read_config(path: &Path) -> Option<ImageConfig> {
    let text = std::fs::read_to_string(path).ok()?;
    let v: Value = serde_json::from_str(&text).ok()?;
    let env_pairs = |e: &Value| {
        strings(e)
            .into_iter()
            .filter_map(|kv| kv.split_once('=').map(|(k, v)| (k.to_string(), v.to_string())))
            .collect::<Vec<_>>()
    };
    if let Some(cfg) = v.get("config").filter(|c| c.is_object()) {
        let user = cfg["User"].as_str().and_then(parse_user);
        return Some(ImageConfig {
            entrypoint: strings(&cfg["Entrypoint"]),
            cmd: strings(&cfg["Cmd"]),
            env: env_pairs(&cfg["Env"]),
            working_dir: cfg["WorkingDir"].as_str().filter(|s| !s.is_empty()).map(str::to_string),
            user,
        });
    }
    let process = v.get("process")?;
    let uid = process["user"]["uid"].as_u64().and_then(|u| u32::try_from(u).ok());
    let gid = process["user"]["gid"].as_u64().and_then(|g| u32::try_from(g).ok());
    Some(ImageConfig {
        // A runtime spec has the composed command line only: treat it as the entrypoint.
        entrypoint: strings(&process["args"]),
        cmd: Vec::new(),
        env: env_pairs(&process["env"]),
        working_dir: process["cwd"].as_str().filter(|s| !s.is_empty()).map(str::to_string),
        user: uid.map(|u| (u, gid)),
    })
}

fn parse_user(s: &str) -> Option<(u32, Option<u32>)> {
    let (u, g) = match s.split_once(':') {
        Some((u, g)) => (u, Some(g)),
        None => (s, None),
    };
    let uid = u.parse().ok()?;
    let gid = match g {
        Some(g) => Some(g.parse().ok()?),
        None => None,
    };
    Some((uid, gid))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn untagged_mapping_matches_every_tag() {
        let m = ImageMapping::parse("rayproject/ray=/opt/ray", false).unwrap();
        assert!(m.matches("rayproject/ray:2.46.0"));
        assert!(m.matches("docker.io/rayproject/ray"));
        assert!(!m.matches("rayproject/ray-ml:2.46.0"));
        let t = ImageMapping::parse("busybox:1.36=/opt/bb", true).unwrap();
        assert!(t.matches("docker.io/library/busybox:1.36"));
        assert!(!t.matches("busybox:1.37"));
        assert!(ImageMapping::parse("busybox", false).is_err());
        assert!(ImageMapping::parse("busybox=relative", false).is_err());
    }

    #[test]
    fn registry_port_is_not_a_tag() {
        let m = ImageMapping::parse("localhost:5000/app=/opt/app", false).unwrap();
        assert!(m.matches("localhost:5000/app:v1"));
    }

    #[test]
    fn reads_both_config_layouts() {
        let dir = std::env::temp_dir().join(format!("kube-sim-imgcfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let image = dir.join("config.json");
        std::fs::write(
            &image,
            r#"{"config":{"Entrypoint":["/e"],"Cmd":["c"],"Env":["A=1"],"WorkingDir":"/w","User":"7:8"}}"#,
        )
        .unwrap();
        let c = read_config(&image).unwrap();
        assert_eq!(c.entrypoint, vec!["/e"]);
        assert_eq!(c.env, vec![("A".to_string(), "1".to_string())]);
        assert_eq!(c.user, Some((7, Some(8))));
        std::fs::write(
            &image,
            r#"{"process":{"args":["/bin/sh"],"env":["PATH=/bin"],"cwd":"/","user":{"uid":0,"gid":0}}}"#,
        )
        .unwrap();
        let c = read_config(&image).unwrap();
        assert_eq!(c.entrypoint, vec!["/bin/sh"]);
        assert_eq!(c.working_dir.as_deref(), Some("/"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
