//! A pod's volumes as files and mounts: the contents of configMap, secret, downwardAPI and projected volumes
//! (service-account token, CA, namespace) are written under the pod's state directory, and each
//! `volumeMount` becomes a [`Mount`] the sandbox setup performs inside the pod's mount namespace.

use std::collections::BTreeMap;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Component, Path, PathBuf};

use serde_json::{Value, json};

use super::compose::{ConfigError, ObjectSource};

/// Where in-cluster clients look for their credentials.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";
/// Lifetime of the tokens written into projected volumes (kubelet's default request: one hour).
const DEFAULT_TOKEN_SECONDS: u64 = 3607;
/// Default file mode of configMap, secret, downwardAPI and projected files.
const DEFAULT_MODE: u32 = 0o644;

/// What a projected service-account token needs from the API server.
pub trait TokenSource {
    /// A token bound to pod `namespace/pod` for `audiences`, valid `seconds`.
    fn projected_token(&self, namespace: &str, pod: &str, audiences: &[String], seconds: u64)
    -> Result<String, String>;
    /// The CA bundle clients verify the API server with (`ca.crt`).
    fn root_ca(&self) -> String;
}

/// A bind mount into a container's root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mount {
    /// Host path (inside the pod's mount namespace: a memory-backed emptyDir is a tmpfs there).
    pub source: PathBuf,
    /// Container path.
    pub target: String,
    /// Mount read-only.
    pub read_only: bool,
}

/// A pod's volumes, written under its state directory.
#[derive(Debug, Clone, Default)]
pub struct PodVolumes {
    /// Where each volume's files are, by volume name.
    pub sources: BTreeMap<String, PathBuf>,
    /// Directories the sandbox mounts a tmpfs on before anything else (memory-backed emptyDirs), with their
    /// size limit in bytes.
    pub tmpfs: Vec<(PathBuf, Option<i128>)>,
    /// The automatic `kube-api-access` files, unless `automountServiceAccountToken: false`.
    pub service_account: Option<PathBuf>,
}

/// Writes the contents of `pod`'s volumes under `dir`.
pub fn prepare(
    pod: &Value,
    dir: &Path,
    objects: &dyn ObjectSource,
    tokens: &dyn TokenSource,
) -> Result<PodVolumes, ConfigError> {
    let ns = pod["metadata"]["namespace"].as_str().unwrap_or("default");
    let pod_name = pod["metadata"]["name"].as_str().unwrap_or_default();
    let mut out = PodVolumes::default();
    for vol in pod["spec"]["volumes"].as_array().into_iter().flatten() {
        let name = vol["name"].as_str().unwrap_or_default();
        let vdir = dir.join("volumes").join(name);
        let source = if let Some(e) = vol.get("emptyDir") {
            mkdir(&vdir)?;
            if e["medium"] == "Memory" {
                out.tmpfs.push((vdir.clone(), super::quantity_of(&e["sizeLimit"])));
            }
            vdir
        } else if let Some(h) = vol.get("hostPath") {
            let p = PathBuf::from(h["path"].as_str().unwrap_or_default());
            if !p.exists() {
                return Err(ConfigError(format!(
                    "hostPath {} of volume {name:?} does not exist (the process runtime creates nothing on the host)",
                    p.display()
                )));
            }
            p
        } else {
            let files = volume_files(pod, vol, ns, pod_name, objects, tokens)?;
            write_files(&vdir, &files)?;
            vdir
        };
        out.sources.insert(name.to_string(), source);
    }
    if pod["spec"]["automountServiceAccountToken"] != false {
        let vdir = dir.join("volumes").join(".kube-api-access");
        let files = service_account_files(ns, pod_name, DEFAULT_TOKEN_SECONDS, tokens)?;
        write_files(&vdir, &files)?;
        out.service_account = Some(vdir);
    }
    Ok(out)
}

/// The mounts of `container`: its `volumeMounts` (with `subPath`), plus the service-account files when the
/// pod has them and the container mounts nothing there itself.
pub fn container_mounts(container: &Value, volumes: &PodVolumes) -> Result<Vec<Mount>, ConfigError> {
    let cname = container["name"].as_str().unwrap_or_default();
    let mut mounts = Vec::new();
    let declared = container["volumeMounts"].as_array().cloned().unwrap_or_default();
    for (i, m) in declared.iter().enumerate() {
        let name = m["name"].as_str().unwrap_or_default();
        let target = m["mountPath"].as_str().unwrap_or_default().to_string();
        let source = volumes.sources.get(name).ok_or_else(|| {
            ConfigError(format!(
                "container {cname}: volumeMounts[{i}].name: volume {name:?} is not defined"
            ))
        })?;
        let source = match m["subPath"].as_str().filter(|s| !s.is_empty()) {
            Some(sub) => source.join(safe_relative(sub)?),
            None => source.clone(),
        };
        mounts.push(Mount {
            source,
            target,
            read_only: m["readOnly"] == true,
        });
    }
    if let Some(sa) = &volumes.service_account
        && !declared.iter().any(|m| m["mountPath"] == SERVICE_ACCOUNT_DIR)
    {
        mounts.push(Mount {
            source: sa.clone(),
            target: SERVICE_ACCOUNT_DIR.into(),
            read_only: true,
        });
    }
    // Parents before children, as container runtimes order mounts, so a nested mountPath is not hidden.
    mounts.sort_by_key(|m| m.target.split('/').filter(|c| !c.is_empty()).count());
    Ok(mounts)
}

/// A file to write: relative path, contents, mode.
type VolumeFile = (PathBuf, Vec<u8>, u32);

fn mkdir(d: &Path) -> Result<(), ConfigError> {
    std::fs::create_dir_all(d).map_err(|e| ConfigError(format!("creating {}: {e}", d.display())))
}

fn write_files(dir: &Path, files: &[VolumeFile]) -> Result<(), ConfigError> {
    mkdir(dir)?;
    for (rel, data, mode) in files {
        let p = dir.join(rel);
        if let Some(parent) = p.parent() {
            mkdir(parent)?;
        }
        std::fs::write(&p, data).map_err(|e| ConfigError(format!("writing {}: {e}", p.display())))?;
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(*mode))
            .map_err(|e| ConfigError(format!("chmod {}: {e}", p.display())))?;
    }
    Ok(())
}

/// A relative path with no `..` or root, as volume `items[].path` and `subPath` must be.
fn safe_relative(p: &str) -> Result<PathBuf, ConfigError> {
    let path = Path::new(p);
    if path.components().all(|c| matches!(c, Component::Normal(_))) {
        Ok(path.to_path_buf())
    } else {
        Err(ConfigError(format!(
            "invalid path {p:?}: must be relative without '..'"
        )))
    }
}

fn mode_of(v: &Value, default: u32) -> u32 {
    v.as_u64().and_then(|m| u32::try_from(m).ok()).unwrap_or(default)
}

/// Files of a keyed source (configMap or secret data) with optional `items`.
fn keyed_files(
    data: &BTreeMap<String, String>,
    items: &Value,
    mode: u32,
    what: &str,
) -> Result<Vec<VolumeFile>, ConfigError> {
    match items.as_array().filter(|a| !a.is_empty()) {
        None => Ok(data
            .iter()
            .map(|(k, v)| (PathBuf::from(k), v.clone().into_bytes(), mode))
            .collect()),
        Some(items) => items
            .iter()
            .map(|it| {
                let key = it["key"].as_str().unwrap_or_default();
                let value = data
                    .get(key)
                    .ok_or_else(|| ConfigError(format!("configured key {key:?} not found in {what}")))?;
                let path = safe_relative(it["path"].as_str().unwrap_or(key))?;
                Ok((path, value.clone().into_bytes(), mode_of(&it["mode"], mode)))
            })
            .collect(),
    }
}

fn volume_files(
    pod: &Value,
    vol: &Value,
    ns: &str,
    pod_name: &str,
    objects: &dyn ObjectSource,
    tokens: &dyn TokenSource,
) -> Result<Vec<VolumeFile>, ConfigError> {
    let name = vol["name"].as_str().unwrap_or_default();
    if let Some(c) = vol.get("configMap") {
        return config_map_files(c, ns, mode_of(&c["defaultMode"], DEFAULT_MODE), objects);
    }
    if let Some(s) = vol.get("secret") {
        return secret_files(s, "secretName", ns, mode_of(&s["defaultMode"], DEFAULT_MODE), objects);
    }
    if let Some(d) = vol.get("downwardAPI") {
        return downward_files(pod, &d["items"], mode_of(&d["defaultMode"], DEFAULT_MODE));
    }
    if let Some(p) = vol.get("projected") {
        let mode = mode_of(&p["defaultMode"], DEFAULT_MODE);
        let mut out = Vec::new();
        for src in p["sources"].as_array().into_iter().flatten() {
            if let Some(t) = src.get("serviceAccountToken") {
                let audiences: Vec<String> = t["audience"].as_str().map(str::to_string).into_iter().collect();
                let secs = t["expirationSeconds"].as_u64().unwrap_or(DEFAULT_TOKEN_SECONDS);
                let token = tokens
                    .projected_token(ns, pod_name, &audiences, secs)
                    .map_err(|e| ConfigError(format!("minting the token of volume {name:?}: {e}")))?;
                let path = safe_relative(t["path"].as_str().unwrap_or("token"))?;
                out.push((path, token.into_bytes(), mode));
            } else if let Some(c) = src.get("configMap") {
                out.extend(config_map_files(c, ns, mode, objects)?);
            } else if let Some(s) = src.get("secret") {
                out.extend(secret_files(s, "name", ns, mode, objects)?);
            } else if let Some(d) = src.get("downwardAPI") {
                out.extend(downward_files(pod, &d["items"], mode)?);
            }
        }
        return Ok(out);
    }
    Err(ConfigError(format!(
        "volume {name:?}: this volume type is not supported by the process runtime"
    )))
}

fn config_map_files(
    c: &Value,
    ns: &str,
    mode: u32,
    objects: &dyn ObjectSource,
) -> Result<Vec<VolumeFile>, ConfigError> {
    let cm = c["name"].as_str().unwrap_or_default();
    match objects.config_map(ns, cm) {
        Some(data) => keyed_files(&data, &c["items"], mode, &format!("ConfigMap {ns}/{cm}")),
        None if c["optional"] == true => Ok(Vec::new()),
        None => Err(ConfigError(format!("configmap \"{cm}\" not found"))),
    }
}

fn secret_files(
    s: &Value,
    name_field: &str,
    ns: &str,
    mode: u32,
    objects: &dyn ObjectSource,
) -> Result<Vec<VolumeFile>, ConfigError> {
    let sec = s[name_field].as_str().unwrap_or_default();
    match objects.secret(ns, sec) {
        Some(data) => keyed_files(&data, &s["items"], mode, &format!("Secret {ns}/{sec}")),
        None if s["optional"] == true => Ok(Vec::new()),
        None => Err(ConfigError(format!("secret \"{sec}\" not found"))),
    }
}

/// `labels` / `annotations` as the downward API writes them: `key="value"` lines, sorted.
fn map_lines(m: &Value) -> String {
    m.as_object()
        .into_iter()
        .flatten()
        .map(|(k, v)| format!("{k}={}\n", json!(v.as_str().unwrap_or_default())))
        .collect()
}

fn downward_files(pod: &Value, items: &Value, mode: u32) -> Result<Vec<VolumeFile>, ConfigError> {
    let mut out = Vec::new();
    for it in items.as_array().into_iter().flatten() {
        let path = safe_relative(it["path"].as_str().unwrap_or_default())?;
        let mode = mode_of(&it["mode"], mode);
        let value = if let Some(f) = it.get("fieldRef") {
            match f["fieldPath"].as_str().unwrap_or_default() {
                "metadata.labels" => map_lines(&pod["metadata"]["labels"]),
                "metadata.annotations" => map_lines(&pod["metadata"]["annotations"]),
                "metadata.name" => pod["metadata"]["name"].as_str().unwrap_or_default().to_string(),
                "metadata.namespace" => pod["metadata"]["namespace"].as_str().unwrap_or_default().to_string(),
                "metadata.uid" => pod["metadata"]["uid"].as_str().unwrap_or_default().to_string(),
                other => {
                    let key = other
                        .strip_prefix("metadata.labels['")
                        .map(|k| ("labels", k))
                        .or_else(|| other.strip_prefix("metadata.annotations['").map(|k| ("annotations", k)));
                    match key.and_then(|(m, k)| Some((m, k.strip_suffix("']")?))) {
                        Some((m, k)) => pod["metadata"][m][k].as_str().unwrap_or_default().to_string(),
                        None => return Err(ConfigError(format!("unsupported downwardAPI fieldPath {other:?}"))),
                    }
                }
            }
        } else {
            return Err(ConfigError(format!(
                "downwardAPI item {}: only fieldRef is supported by the process runtime",
                path.display()
            )));
        };
        out.push((path, value.into_bytes(), mode));
    }
    Ok(out)
}

/// `token`, `ca.crt` and `namespace`, as the `kube-api-access` volume holds them.
fn service_account_files(
    ns: &str,
    pod_name: &str,
    seconds: u64,
    tokens: &dyn TokenSource,
) -> Result<Vec<VolumeFile>, ConfigError> {
    let token = tokens
        .projected_token(ns, pod_name, &[], seconds)
        .map_err(|e| ConfigError(format!("minting the service account token: {e}")))?;
    Ok(vec![
        (PathBuf::from("token"), token.into_bytes(), DEFAULT_MODE),
        (PathBuf::from("ca.crt"), tokens.root_ca().into_bytes(), DEFAULT_MODE),
        (PathBuf::from("namespace"), ns.as_bytes().to_vec(), DEFAULT_MODE),
    ])
}

/// Resolves container path `path` against the tree at `root` the way the container will see it: symlinks of
/// existing components are followed inside `root` (an absolute link target restarts at `root`), so a mount
/// target never escapes onto the host. Returns the container path.
pub fn resolve_in_root(root: &Path, path: &str) -> String {
    let mut parts: Vec<String> = Vec::new();
    let mut pending: Vec<String> = path.split('/').rev().map(str::to_string).collect();
    let mut hops = 0;
    while let Some(c) = pending.pop() {
        match c.as_str() {
            "" | "." => {}
            ".." => {
                parts.pop();
            }
            name => {
                let mut candidate = root.to_path_buf();
                candidate.extend(&parts);
                candidate.push(name);
                match std::fs::read_link(&candidate) {
                    Ok(target) if hops < 40 => {
                        hops += 1;
                        let t = target.to_string_lossy().into_owned();
                        if t.starts_with('/') {
                            parts.clear();
                        }
                        pending.extend(t.split('/').rev().map(str::to_string));
                    }
                    _ => parts.push(name.to_string()),
                }
            }
        }
    }
    format!("/{}", parts.join("/"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn symlinks_resolve_inside_the_root() {
        let root = std::env::temp_dir().join(format!("kube-sim-resolve-{}", std::process::id()));
        std::fs::create_dir_all(root.join("run")).unwrap();
        std::fs::create_dir_all(root.join("var")).unwrap();
        let _ = std::fs::remove_file(root.join("var/run"));
        std::os::unix::fs::symlink("/run", root.join("var/run")).unwrap();
        assert_eq!(resolve_in_root(&root, "/var/run/secrets/x"), "/run/secrets/x");
        assert_eq!(resolve_in_root(&root, "/a/../b"), "/b");
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn item_paths_stay_inside_the_volume() {
        assert!(safe_relative("a/b").is_ok());
        assert!(safe_relative("../x").is_err());
        assert!(safe_relative("/etc/passwd").is_err());
    }

    #[test]
    fn downward_labels_are_quoted_lines() {
        let pod = json!({"metadata": {"labels": {"a": "1", "b": "x\"y"}}});
        let files = downward_files(
            &pod,
            &json!([{"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}}]),
            0o644,
        )
        .unwrap();
        assert_eq!(
            String::from_utf8(files[0].1.clone()).unwrap(),
            "a=\"1\"\nb=\"x\\\"y\"\n"
        );
    }
}
