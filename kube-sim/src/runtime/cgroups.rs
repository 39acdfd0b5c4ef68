//! Control groups for process pods: one per container under a per-run parent, used to find every process a
//! container started (so none survives deletion), to apply `resources.limits` and to detect OOM kills.
//!
//! Uses the cgroup v1 `memory` and `cpu` hierarchies when they are mounted and writable (this is what the
//! development machines offer); without them containers run unconfined and are tracked by process group only.

use std::path::{Path, PathBuf};

use super::signals;
use super::state_dir::RunId;

/// The v1 memory hierarchy.
const MEMORY_ROOT: &str = "/sys/fs/cgroup/memory";
/// The v1 cpu hierarchy.
const CPU_ROOT: &str = "/sys/fs/cgroup/cpu";
/// Prefix of the per-run parent cgroups (`kube-sim.<run id>`, see [`super::state_dir::RunId`]), also what the
/// startup sweep looks for.
const RUN_PREFIX: &str = "kube-sim.";
/// CFS period used for `cpu` limits, in microseconds (the kubelet's default).
const CFS_PERIOD_US: i128 = 100_000;

/// The parent cgroups of one runtime (one per hierarchy in use).
#[derive(Debug, Clone)]
pub struct CgroupRoot {
    memory: PathBuf,
    cpu: Option<PathBuf>,
}

/// One container's cgroups.
#[derive(Debug, Clone)]
pub struct Cgroup {
    memory: PathBuf,
    cpu: Option<PathBuf>,
}

impl CgroupRoot {
    /// Creates the per-run parents, or `None` when the hierarchies are not usable here.
    pub fn create(run: &RunId) -> Option<Self> {
        let name = format!("{RUN_PREFIX}{run}");
        let memory = Path::new(MEMORY_ROOT).join(&name);
        if let Err(e) = std::fs::create_dir_all(&memory) {
            tracing::info!(error = %e, "process runtime: no memory cgroup; containers run without limits");
            return None;
        }
        let cpu = Path::new(CPU_ROOT).join(&name);
        let cpu = std::fs::create_dir_all(&cpu).ok().map(|()| cpu);
        Some(Self { memory, cpu })
    }

    /// Creates the cgroup of container `name` of pod `pod_uid` (a fresh one: a leftover is emptied first).
    pub fn container(&self, pod_uid: &str, name: &str) -> std::io::Result<Cgroup> {
        let leaf = format!("{pod_uid}-{name}");
        let cg = Cgroup {
            memory: self.memory.join(&leaf),
            cpu: self.cpu.as_ref().map(|c| c.join(&leaf)),
        };
        cg.kill_all();
        cg.remove();
        std::fs::create_dir_all(&cg.memory)?;
        if let Some(c) = &cg.cpu {
            std::fs::create_dir_all(c)?;
        }
        Ok(cg)
    }

    /// Kills everything left and removes the per-run parents.
    pub fn destroy(&self) {
        for root in std::iter::once(&self.memory).chain(self.cpu.as_ref()) {
            destroy_tree(root);
        }
    }
}

/// Kills the processes of every cgroup under `dir` (depth one) and removes them and `dir`.
fn destroy_tree(dir: &Path) {
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            if e.path().is_dir() {
                kill_procs(&e.path());
                remove_cgroup(&e.path());
            }
        }
    }
    kill_procs(dir);
    remove_cgroup(dir);
}

fn kill_procs(dir: &Path) {
    // A fork racing with the kill would escape one round; a few rounds catch it.
    for _ in 0..3 {
        let pids = read_pids(dir);
        if pids.is_empty() {
            return;
        }
        pids.into_iter().for_each(signals::kill_pid);
    }
}

fn read_pids(dir: &Path) -> Vec<u32> {
    std::fs::read_to_string(dir.join("cgroup.procs"))
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .collect()
}

/// `rmdir` of a cgroup, retried briefly while its killed processes are being reaped.
fn remove_cgroup(dir: &Path) {
    for _ in 0..50 {
        match std::fs::remove_dir(dir) {
            Ok(()) => return,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(std::time::Duration::from_millis(10)),
        }
    }
    tracing::warn!(cgroup = %dir.display(), "process runtime: could not remove a cgroup");
}

impl Cgroup {
    /// The `cgroup.procs` files a process writes its pid into to join (before it execs the container).
    pub fn procs_files(&self) -> Vec<PathBuf> {
        std::iter::once(&self.memory)
            .chain(self.cpu.as_ref())
            .map(|d| d.join("cgroup.procs"))
            .collect()
    }

    /// Applies `limits.memory` (bytes) and `limits.cpu` (millicores).
    pub fn limit(&self, memory_bytes: Option<i128>, cpu_millis: Option<i128>) -> std::io::Result<()> {
        if let Some(bytes) = memory_bytes {
            std::fs::write(self.memory.join("memory.limit_in_bytes"), bytes.to_string())?;
        }
        if let (Some(millis), Some(cpu)) = (cpu_millis, &self.cpu) {
            let quota = (millis * CFS_PERIOD_US / 1000).max(1000);
            std::fs::write(cpu.join("cpu.cfs_period_us"), CFS_PERIOD_US.to_string())?;
            std::fs::write(cpu.join("cpu.cfs_quota_us"), quota.to_string())?;
        }
        Ok(())
    }

    /// How many processes the kernel OOM-killed in this cgroup so far.
    pub fn oom_kills(&self) -> u64 {
        std::fs::read_to_string(self.memory.join("memory.oom_control"))
            .unwrap_or_default()
            .lines()
            .find_map(|l| l.strip_prefix("oom_kill "))
            .and_then(|n| n.trim().parse().ok())
            .unwrap_or(0)
    }

    /// Sends SIGTERM to every process in the cgroup (a container's daemons included).
    pub fn terminate_all(&self) {
        read_pids(&self.memory).into_iter().for_each(|pid| {
            if let Some(p) = i32::try_from(pid).ok().and_then(rustix::process::Pid::from_raw) {
                let _ = rustix::process::kill_process(p, rustix::process::Signal::TERM);
            }
        });
    }

    /// Sends SIGKILL to every process in the cgroup.
    pub fn kill_all(&self) {
        kill_procs(&self.memory);
    }

    /// Removes the cgroup (after [`Cgroup::kill_all`]).
    pub fn remove(&self) {
        for d in std::iter::once(&self.memory).chain(self.cpu.as_ref()) {
            if d.exists() {
                remove_cgroup(d);
            }
        }
    }
}

/// Removes the per-run cgroups of runs whose owner process is gone, killing what they still hold.
pub fn sweep_dead_runs() -> usize {
    let mut swept = 0;
    for root in [MEMORY_ROOT, CPU_ROOT] {
        let Ok(entries) = std::fs::read_dir(root) else {
            continue;
        };
        for e in entries.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            let Some(run) = name.strip_prefix(RUN_PREFIX).and_then(RunId::parse) else {
                continue;
            };
            if !signals::pid_alive(run.owner_pid) {
                destroy_tree(&e.path());
                swept += 1;
            }
        }
    }
    swept
}
