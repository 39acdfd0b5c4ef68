//! Locates KubeRay's reference material: its CRDs, sample YAML, Helm values and published benchmark
//! figures. The project keeps that material in a `shared/` directory beside the checkout (never copied
//! into the repository); this crate is the only place that knows where it is.
//!
//! Tests use the panicking accessors ([`samples_dir`], [`crd_path`], ...): a missing reference tree must
//! fail a test, never skip it. Binaries use [`try_shared_dir`] and report the error.
//!
//! The lookup order is: `$KUBERAY_SHARED_DIR`; `shared/` beside this workspace (fixed at compile time);
//! `shared/` beside any ancestor of the current directory or of the running executable.
//!
//! ```
//! let sample = kuberay_reference::sample_path("ray-cluster.sample.yaml");
//! assert!(sample.is_file());
//! assert!(kuberay_reference::sample_files().len() >= 90);
//! ```

use std::path::{Path, PathBuf};

/// The variable that overrides where the reference tree is.
pub const SHARED_DIR_VAR: &str = "KUBERAY_SHARED_DIR";

/// The KubeRay release the reference material describes, as its directory under `shared/reference/`.
pub const KUBERAY_RELEASE_DIR: &str = "kuberay-v1.7.0";

/// The reference tree was not found anywhere it is looked for.
#[derive(Debug, thiserror::Error)]
#[error(
    "KubeRay reference material not found: looked for a `shared/` directory holding `reference/{KUBERAY_RELEASE_DIR}` in {searched} (set ${SHARED_DIR_VAR} to point at it)"
)]
pub struct NotFound {
    /// The places searched, for the message.
    pub searched: String,
}

/// `shared/` beside this workspace, as the compiler saw it.
fn workspace_shared_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../shared")
}

fn holds_reference(dir: &Path) -> bool {
    dir.join("reference").join(KUBERAY_RELEASE_DIR).is_dir()
}

/// The `shared/` directory, or why it was not found.
pub fn try_shared_dir() -> Result<PathBuf, NotFound> {
    if let Some(dir) = std::env::var_os(SHARED_DIR_VAR) {
        let dir = PathBuf::from(dir);
        return if holds_reference(&dir) {
            Ok(dir)
        } else {
            Err(NotFound {
                searched: format!("${SHARED_DIR_VAR}={}", dir.display()),
            })
        };
    }
    let mut candidates = vec![workspace_shared_dir()];
    let starts = [std::env::current_dir().ok(), std::env::current_exe().ok()];
    for start in starts.iter().flatten() {
        candidates.extend(start.ancestors().map(|dir| dir.join("shared")));
    }
    match candidates.iter().find(|dir| holds_reference(dir)) {
        Some(dir) => Ok(dir.canonicalize().unwrap_or_else(|_| dir.clone())),
        None => Err(NotFound {
            searched: format!(
                "{} and the ancestors of the current directory and executable",
                workspace_shared_dir().display()
            ),
        }),
    }
}

/// The `shared/` directory; panics with [`NotFound`]'s message when it is missing (for tests).
pub fn shared_dir() -> PathBuf {
    match try_shared_dir() {
        Ok(dir) => dir,
        Err(not_found) => panic!("{not_found}"),
    }
}

/// `shared/reference/kuberay-v1.7.0`: KubeRay's CRDs, samples and Helm material.
pub fn kuberay_dir() -> PathBuf {
    shared_dir().join("reference").join(KUBERAY_RELEASE_DIR)
}

/// KubeRay's sample YAML directory.
pub fn samples_dir() -> PathBuf {
    kuberay_dir().join("samples")
}

/// One sample file by name, e.g. `ray-cluster.sample.yaml`.
pub fn sample_path(name: &str) -> PathBuf {
    samples_dir().join(name)
}

/// The text of one sample file; panics naming the path when it cannot be read.
pub fn sample_text(name: &str) -> String {
    read(&sample_path(name))
}

/// Every `.yaml` / `.yml` sample file, sorted by name.
pub fn sample_files() -> Vec<PathBuf> {
    let dir = samples_dir();
    let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("cannot read {}: {e}", dir.display()));
    let mut files: Vec<PathBuf> = entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "yaml" || ext == "yml"))
        .collect();
    files.sort();
    assert!(!files.is_empty(), "no sample files in {}", dir.display());
    files
}

/// KubeRay's CRD directory.
pub fn crds_dir() -> PathBuf {
    kuberay_dir().join("crds")
}

/// One of KubeRay's CRD files by name, e.g. `ray.io_rayclusters.yaml`.
pub fn crd_path(file: &str) -> PathBuf {
    crds_dir().join(file)
}

/// The text of one of KubeRay's CRD files; panics naming the path when it cannot be read.
pub fn crd_text(file: &str) -> String {
    read(&crd_path(file))
}

/// KubeRay's Helm material (`values.yaml`, the operator ClusterRole).
pub fn helm_dir() -> PathBuf {
    kuberay_dir().join("helm")
}

/// KubeRay's published benchmark figures, or why the reference tree was not found (for binaries).
pub fn try_bench_dir() -> Result<PathBuf, NotFound> {
    try_shared_dir().map(|dir| dir.join("bench"))
}

fn read(path: &Path) -> String {
    std::fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_four_crds_and_the_samples() {
        for file in [
            "ray.io_rayclusters.yaml",
            "ray.io_rayjobs.yaml",
            "ray.io_rayservices.yaml",
            "ray.io_raycronjobs.yaml",
        ] {
            assert!(crd_text(file).contains("CustomResourceDefinition"), "{file}");
        }
        assert!(sample_files().iter().all(|f| f.starts_with(samples_dir())));
        assert!(try_bench_dir().unwrap().is_dir());
        assert!(helm_dir().join("values.yaml").is_file());
    }
}
