//! The runtime's state directory: one subdirectory per run (`<state>/<owner pid>.<n>/`), holding each
//! pod's files (volume contents, overlay upper and work directories, the sandbox setup script). Everything the
//! runtime writes to disk lives here, and a run's directory is removed when it stops; a startup sweep removes
//! the directories (and cgroups) of runs whose owner process died without cleaning up.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};

use super::{cgroups, signals};

/// Counts runtimes started by this process, so several in one process (tests) do not share a directory.
static RUNS: AtomicU32 = AtomicU32::new(0);

/// Identifies one runtime: the owning process and a per-process counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RunId {
    /// The process that owns the run; when it is gone, the run is stale.
    pub owner_pid: u32,
    /// Distinguishes runtimes of one process.
    pub seq: u32,
}

impl RunId {
    /// A new id for a runtime of this process.
    pub fn next() -> Self {
        Self {
            owner_pid: std::process::id(),
            seq: RUNS.fetch_add(1, Ordering::Relaxed),
        }
    }

    /// Parses `<pid>.<seq>`.
    pub fn parse(s: &str) -> Option<Self> {
        let (pid, seq) = s.split_once('.')?;
        Some(Self {
            owner_pid: pid.parse().ok()?,
            seq: seq.parse().ok()?,
        })
    }
}

impl std::fmt::Display for RunId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.owner_pid, self.seq)
    }
}

/// A run's directory.
#[derive(Debug, Clone)]
pub struct StateDir {
    dir: PathBuf,
}

impl StateDir {
    /// Sweeps stale runs under `base`, then creates this run's directory.
    pub fn create(base: &Path, run: &RunId) -> std::io::Result<Self> {
        std::fs::create_dir_all(base)?;
        let swept = sweep(base);
        if swept > 0 {
            tracing::info!(swept, "process runtime: removed the state of runs that were killed");
        }
        let dir = base.join(run.to_string());
        std::fs::create_dir_all(&dir)?;
        Ok(Self { dir })
    }

    /// The run's directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }

    /// The directory of pod `uid` (not created).
    pub fn pod_dir(&self, uid: &str) -> PathBuf {
        self.dir.join("pods").join(uid)
    }

    /// Removes the run's directory.
    pub fn remove(&self) {
        remove_tree(&self.dir);
    }
}

/// Removes a directory tree, logging (not failing) when it cannot.
pub fn remove_tree(dir: &Path) {
    if let Err(e) = std::fs::remove_dir_all(dir)
        && e.kind() != std::io::ErrorKind::NotFound
    {
        tracing::warn!(dir = %dir.display(), error = %e, "process runtime: could not remove state");
    }
}

/// Removes the run directories under `base` whose owner is gone, and the cgroups of dead runs; returns how
/// many directories went.
fn sweep(base: &Path) -> usize {
    cgroups::sweep_dead_runs();
    let Ok(entries) = std::fs::read_dir(base) else {
        return 0;
    };
    let mut swept = 0;
    for e in entries.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if let Some(run) = RunId::parse(&name)
            && !signals::pid_alive(run.owner_pid)
        {
            remove_tree(&e.path());
            swept += 1;
        }
    }
    swept
}
