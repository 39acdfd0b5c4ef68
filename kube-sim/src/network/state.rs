//! The pod network's state directory: which kube-sim instance owns which slot, and the sweep that removes
//! what an instance killed with SIGKILL left behind.
//!
//! Every instance claims a numbered slot under the state root (`slot-<n>/`, holding an `owner` file with its
//! pid and process start time, and `netns/` with one bound namespace file per pod). The slot number picks
//! the instance's pod and service blocks and prefixes its interface names (`ksim<n>-…`), so concurrent
//! instances never collide. A slot whose owner is no longer alive is swept: its namespace files unbound and
//! removed, its interfaces deleted, the directory removed.

use std::path::{Path, PathBuf};

use super::host;
use crate::sandbox::SandboxError;

/// Name of the file in a slot directory naming its owner (`<pid> <start time>`).
const OWNER_FILE: &str = "owner";
/// Directory of a slot holding the pods' network namespace files.
pub const NETNS_DIR: &str = "netns";

/// A claimed slot; released (swept) by [`Slot::release`].
#[derive(Debug)]
pub struct Slot {
    /// The slot number.
    pub index: u32,
    /// `<root>/slot-<index>`.
    pub dir: PathBuf,
}

/// The interface name prefix of slot `index` (`ksim<index>-`).
pub fn link_prefix(index: u32) -> String {
    format!("ksim{index}-")
}

fn io_err(context: String) -> impl FnOnce(std::io::Error) -> SandboxError {
    move |source| SandboxError::Io { context, source }
}

/// This process's identity as written into `owner` files.
fn self_owner() -> String {
    let pid = std::process::id();
    format!("{pid} {}", start_time(pid).unwrap_or_default())
}

/// The start time (clock ticks since boot, field 22 of `/proc/<pid>/stat`) of a live process.
fn start_time(pid: u32) -> Option<String> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name (field 2) may hold spaces; the fields after its closing parenthesis do not.
    let after = stat.rsplit_once(')')?.1;
    after.split_whitespace().nth(19).map(str::to_string)
}

/// Whether the owner recorded as `text` (`<pid> <start time>`) is still running.
fn owner_alive(text: &str) -> bool {
    let mut parts = text.split_whitespace();
    let Some(pid) = parts.next().and_then(|p| p.parse::<u32>().ok()) else {
        return false;
    };
    match (start_time(pid), parts.next()) {
        (Some(now), Some(recorded)) => now == recorded,
        (Some(_), None) => true,
        (None, _) => false,
    }
}

/// Claims started by this process, numbering their staging directories.
static CLAIMS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);

/// Sweeps every slot under `root` whose owner is dead (and half-swept leftovers), then claims the lowest
/// free slot below `max_slots`.
pub fn claim(root: &Path, max_slots: u32) -> Result<Slot, SandboxError> {
    std::fs::create_dir_all(root).map_err(io_err(format!("creating {}", root.display())))?;
    sweep(root);
    let owner = self_owner();
    for index in 0..max_slots {
        let dir = root.join(format!("slot-{index}"));
        if dir.exists() {
            continue;
        }
        // Prepare the slot aside and rename it into place: renaming onto an existing (non-empty) slot
        // fails, so exactly one instance wins a race.
        // Unique per claim, not only per process: two simulators in one process (parallel tests) claim at once.
        let claim_number = CLAIMS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let staging = root.join(format!("staging-{}-{index}-{claim_number}", std::process::id()));
        std::fs::create_dir_all(staging.join(NETNS_DIR)).map_err(io_err(format!("creating {}", staging.display())))?;
        std::fs::write(staging.join(OWNER_FILE), &owner).map_err(io_err(format!("writing {}", staging.display())))?;
        match std::fs::rename(&staging, &dir) {
            Ok(()) => return Ok(Slot { index, dir }),
            Err(_) => {
                let _ = std::fs::remove_dir_all(&staging);
            }
        }
    }
    Err(SandboxError::Unsupported(format!(
        "no free pod network slot under {} (all {max_slots} in use)",
        root.display()
    )))
}

/// Removes what dead instances left under `root`: slots whose owner died and directories of interrupted
/// claims or sweeps. Never touches a live instance's slot.
pub fn sweep(root: &Path) {
    let Ok(entries) = std::fs::read_dir(root) else { return };
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        if let Some(index) = name.strip_prefix("slot-").and_then(|i| i.parse::<u32>().ok()) {
            let owner = std::fs::read_to_string(path.join(OWNER_FILE)).unwrap_or_default();
            if owner_alive(&owner) {
                continue;
            }
            // Take the dead slot out of the way first, so that only one sweeper cleans it and a claimer
            // may reuse the number at once.
            let doomed = root.join(format!("dead-{index}-{}", std::process::id()));
            if std::fs::rename(&path, &doomed).is_ok() {
                tracing::info!(slot = index, "sweeping the pod network of a dead kube-sim");
                clean(index, &doomed);
            }
        } else if let Some((index, pid)) = leftover(&name) {
            let alive = start_time(pid).is_some();
            if !alive {
                match index {
                    Some(index) if name.starts_with("dead-") => clean(index, &path),
                    _ => {
                        let _ = std::fs::remove_dir_all(&path);
                    }
                }
            }
        }
    }
}

/// Parses `dead-<slot>-<pid>` and `staging-<pid>-<slot>[-<claim>]` into (slot for `dead-`, the pid that made it).
fn leftover(name: &str) -> Option<(Option<u32>, u32)> {
    if let Some(rest) = name.strip_prefix("dead-") {
        let (slot, pid) = rest.split_once('-')?;
        return Some((slot.parse().ok(), pid.parse().ok()?));
    }
    let rest = name.strip_prefix("staging-")?;
    let (pid, _) = rest.split_once('-')?;
    Some((None, pid.parse().ok()?))
}

/// Removes a slot's namespaces (from its directory `dir`) and interfaces, then the directory.
pub fn clean(index: u32, dir: &Path) {
    if let Ok(files) = std::fs::read_dir(dir.join(NETNS_DIR)) {
        for f in files.filter_map(Result::ok) {
            if let Err(e) = host::remove_netns(&f.path()) {
                tracing::warn!(error = %e, "removing a pod network namespace");
            }
        }
    }
    let prefix = link_prefix(index);
    for link in host::link_names().into_iter().filter(|l| l.starts_with(&prefix)) {
        if let Err(e) = host::delete_link(&link) {
            tracing::warn!(error = %e, "removing a pod network interface");
        }
    }
    if let Err(e) = std::fs::remove_dir_all(dir) {
        tracing::warn!(error = %e, dir = %dir.display(), "removing a pod network state directory");
    }
}

impl Slot {
    /// The directory of the pods' namespace files.
    pub fn netns_dir(&self) -> PathBuf {
        self.dir.join(NETNS_DIR)
    }

    /// Removes everything of the slot (namespaces, interfaces, directory).
    pub fn release(&self) {
        clean(self.index, &self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owners_and_leftover_names() {
        assert!(owner_alive(&self_owner()));
        assert!(!owner_alive(""));
        assert!(!owner_alive("4294967290 1"));
        assert_eq!(leftover("dead-3-77"), Some((Some(3), 77)));
        assert_eq!(leftover("staging-77-3"), Some((None, 77)));
        assert_eq!(leftover("staging-77-3-12"), Some((None, 77)));
        assert_eq!(leftover("slot-3"), None);
    }

    #[test]
    fn claims_distinct_slots_and_sweeps_dead_ones() {
        let root = std::env::temp_dir().join(format!("kube-sim-state-test-{}", std::process::id()));
        let a = claim(&root, 4).unwrap();
        let b = claim(&root, 4).unwrap();
        assert_ne!(a.index, b.index);
        // A slot whose owner is dead is swept and reused.
        std::fs::write(a.dir.join(OWNER_FILE), "4294967290 1").unwrap();
        let c = claim(&root, 4).unwrap();
        assert_eq!(c.index, a.index);
        b.release();
        c.release();
        assert_eq!(std::fs::read_dir(&root).unwrap().count(), 0);
        std::fs::remove_dir_all(&root).unwrap();
    }

    #[test]
    fn concurrent_claims_in_one_process_get_distinct_slots() {
        // Two simulators of one test process claiming at once once shared a staging directory name, and
        // one failed with "creating .../staging-<pid>-0: No such file or directory".
        let root = std::env::temp_dir().join(format!("kube-sim-state-race-{}", std::process::id()));
        for _ in 0..20 {
            let claims: Vec<_> = (0..4)
                .map(|_| {
                    let root = root.clone();
                    std::thread::spawn(move || claim(&root, 8).unwrap())
                })
                .collect();
            let slots: Vec<Slot> = claims.into_iter().map(|c| c.join().unwrap()).collect();
            let mut indexes: Vec<u32> = slots.iter().map(|s| s.index).collect();
            indexes.sort_unstable();
            indexes.dedup();
            assert_eq!(indexes.len(), 4, "each claim gets its own slot");
            for slot in &slots {
                std::fs::remove_dir_all(&slot.dir).unwrap();
            }
        }
        assert_eq!(
            std::fs::read_dir(&root).unwrap().count(),
            0,
            "no staging directory is left"
        );
        std::fs::remove_dir_all(&root).unwrap();
    }
}
