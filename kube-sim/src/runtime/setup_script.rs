//! The shell script that builds a pod's sandbox inside a fresh mount namespace (run by the holder process
//! under `unshare --mount --propagation private`):
//!
//! - memory-backed emptyDirs and the pod's `/dev/shm` become tmpfs mounts (inside the namespace only);
//! - each container gets its own root: an overlay whose lower layer is the image's root (the host's `/` for
//!   `--image-host` images), whose upper and work layers are in the pod's state directory, so whatever the
//!   container writes, and every mountpoint created for it, stays in the state directory;
//! - `/proc`, `/sys` and `/dev` are bound in, then the container's volumes at their `mountPath`, then
//!   `/etc/resolv.conf` and `/etc/hosts` when the pod network provides them;
//! - it signals readiness by creating a file, then sleeps until killed; the namespace (and so every mount)
//!   goes away with the last process in it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use super::compose::ConfigError;
use super::launcher::shell_quote;
use super::volumes::{Mount, resolve_in_root};

/// Size of a pod's `/dev/shm` when no memory-backed emptyDir is mounted there (the container runtimes'
/// default).
const DEFAULT_SHM_BYTES: i128 = 64 * 1024 * 1024;
/// Kernel filesystems bound into every container root.
const SYSTEM_DIRS: [&str; 3] = ["/proc", "/sys", "/dev"];

/// One container's root filesystem.
#[derive(Debug, Clone)]
pub struct ContainerRoot {
    /// The image's root on the host (the overlay's lower layer).
    pub lower: PathBuf,
    /// Where the container's root is mounted (inside the namespace); also holds `upper/` and `work/` beside.
    pub dir: PathBuf,
    /// Its volume mounts.
    pub mounts: Vec<Mount>,
}

impl ContainerRoot {
    /// The mountpoint of the root.
    pub fn root(&self) -> PathBuf {
        self.dir.join("root")
    }
}

/// Everything the script sets up.
#[derive(Debug, Clone)]
pub struct SandboxPlan {
    /// Files the holder writes its pid into (cgroup membership) before anything else.
    pub cgroup_procs: Vec<PathBuf>,
    /// tmpfs mounts at host paths (memory-backed emptyDirs), with sizes.
    pub tmpfs: Vec<(PathBuf, Option<i128>)>,
    /// The pod's shared `/dev/shm` directory.
    pub shm: PathBuf,
    /// The container roots.
    pub roots: Vec<ContainerRoot>,
    /// Files bound over `/etc/resolv.conf` and `/etc/hosts`.
    pub etc_files: Vec<(PathBuf, &'static str)>,
    /// Created when the sandbox is ready.
    pub ready_file: PathBuf,
}

fn q(p: &Path) -> String {
    shell_quote(&p.to_string_lossy())
}

/// Overlay options must not contain the characters that separate them.
fn overlay_safe(p: &Path) -> Result<String, ConfigError> {
    let s = p.to_string_lossy().into_owned();
    if s.contains([',', ':', '\\']) {
        return Err(ConfigError(format!(
            "path {s:?} cannot be an overlay layer (contains ',', ':' or '\\\\')"
        )));
    }
    Ok(s)
}

/// The container path a mount target resolves to; refuses to create mountpoints on the host's kernel
/// filesystems (which are bound, not overlaid).
fn mount_target(lower: &Path, target: &str) -> Result<String, ConfigError> {
    let resolved = resolve_in_root(lower, target);
    let under_system = SYSTEM_DIRS
        .iter()
        .any(|d| resolved == *d || resolved.starts_with(&format!("{d}/")));
    let host_view = Path::new("/").join(resolved.trim_start_matches('/'));
    if under_system && !host_view.exists() {
        return Err(ConfigError(format!(
            "mountPath {target}: cannot create a mountpoint under {resolved} (a kernel filesystem bound from the host)"
        )));
    }
    Ok(resolved)
}

/// Renders the script.
pub fn render(plan: &SandboxPlan) -> Result<String, ConfigError> {
    let mut s = String::from("set -eu\n");
    for f in &plan.cgroup_procs {
        let _ = writeln!(s, "echo $$ > {}", q(f));
    }
    let tmpfs = |s: &mut String, dir: &Path, size: Option<i128>| {
        let opts = size.map_or(String::from("mode=1777"), |b| format!("mode=1777,size={b}"));
        let _ = writeln!(s, "mkdir -p {d}\nmount -t tmpfs -o {opts} tmpfs {d}", d = q(dir));
    };
    for (dir, size) in &plan.tmpfs {
        tmpfs(&mut s, dir, *size);
    }
    tmpfs(&mut s, &plan.shm, Some(DEFAULT_SHM_BYTES));
    for root in &plan.roots {
        let (upper, work, r) = (root.dir.join("upper"), root.dir.join("work"), root.root());
        let _ = writeln!(s, "mkdir -p {} {} {}", q(&upper), q(&work), q(&r));
        let opts = format!(
            "lowerdir={},upperdir={},workdir={}",
            overlay_safe(&root.lower)?,
            overlay_safe(&upper)?,
            overlay_safe(&work)?
        );
        let _ = writeln!(s, "mount -t overlay overlay -o {} {}", shell_quote(&opts), q(&r));
        for d in SYSTEM_DIRS {
            let t = r.join(d.trim_start_matches('/'));
            let _ = writeln!(s, "mkdir -p {t}\nmount --rbind {d} {t}", t = q(&t));
        }
        let shm_has_volume = root.mounts.iter().any(|m| m.target.trim_end_matches('/') == "/dev/shm");
        if !shm_has_volume {
            let _ = writeln!(s, "mount --bind {} {}", q(&plan.shm), q(&r.join("dev/shm")));
        }
        for m in &root.mounts {
            let target = mount_target(&root.lower, &m.target)?;
            let t = r.join(target.trim_start_matches('/'));
            if m.source.is_dir() {
                let _ = writeln!(s, "mkdir -p {}", q(&t));
            } else {
                let _ = writeln!(
                    s,
                    "mkdir -p {parent}\n[ -e {t} ] || : > {t}",
                    parent = q(t.parent().unwrap_or(&t)),
                    t = q(&t)
                );
            }
            let _ = writeln!(s, "mount --bind {} {}", q(&m.source), q(&t));
            if m.read_only {
                let _ = writeln!(s, "mount -o remount,bind,ro {}", q(&t));
            }
        }
        for (file, target) in &plan.etc_files {
            let t = r.join(target.trim_start_matches('/'));
            let _ = writeln!(s, "mkdir -p {}\n[ -e {t} ] || : > {t}", q(&r.join("etc")), t = q(&t));
            let _ = writeln!(s, "mount --bind {} {t}", q(file), t = q(&t));
        }
    }
    let _ = writeln!(s, ": > {}\nexec sleep infinity", q(&plan.ready_file));
    Ok(s)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_filesystems_get_no_new_mountpoints() {
        assert!(mount_target(Path::new("/"), "/dev/shm").is_ok());
        assert!(mount_target(Path::new("/"), "/dev/kube-sim-no-such-dir").is_err());
        assert!(mount_target(Path::new("/"), "/data").is_ok());
    }

    #[test]
    fn script_mounts_volumes_inside_the_root() {
        let plan = SandboxPlan {
            cgroup_procs: vec![],
            tmpfs: vec![],
            shm: "/st/shm".into(),
            roots: vec![ContainerRoot {
                lower: "/".into(),
                dir: "/st/roots/0".into(),
                mounts: vec![Mount {
                    source: "/st/volumes/cfg".into(),
                    target: "/data/cfg".into(),
                    read_only: true,
                }],
            }],
            etc_files: vec![],
            ready_file: "/st/ready".into(),
        };
        let s = render(&plan).unwrap();
        assert!(s.contains("mount -t overlay overlay -o 'lowerdir=/,upperdir=/st/roots/0/upper,workdir=/st/roots/0/work' '/st/roots/0/root'"));
        assert!(s.contains("mount -o remount,bind,ro '/st/roots/0/root/data/cfg'"));
        assert!(s.ends_with("exec sleep infinity\n"));
    }
}
