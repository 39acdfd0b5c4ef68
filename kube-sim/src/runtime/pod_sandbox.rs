//! A pod's sandbox: its network (from [`crate::sandbox::PodNetworking`]), its volumes' files, and the holder
//! process that owns the pod's mount namespace (see [`super::setup_script`]). Containers join the holder's
//! namespaces with `nsenter`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use super::cgroups::Cgroup;
use super::compose::ConfigError;
use super::launcher::with_pdeathsig;
use super::setup_script::{ContainerRoot, SandboxPlan, render};
use super::volumes::{PodVolumes, container_mounts};
use super::{Shared, signals, state_dir};
use crate::sandbox::{PodIdentity, PodNet};

/// The cgroup name of the holder (not a valid container name, so it cannot clash with one).
const HOLDER_CGROUP: &str = ".sandbox";

/// A created sandbox.
pub struct PodSandbox {
    /// The pod's state directory.
    pub dir: PathBuf,
    /// The pod's network.
    pub net: PodNet,
    /// The holder; its pid names the namespaces containers join.
    holder: Child,
    holder_cgroup: Option<Cgroup>,
    /// Container roots by container name.
    roots: Vec<(String, ContainerRoot)>,
    /// Whether the setup script finished.
    ready: bool,
    uid: String,
}

/// The state of sandbox creation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SandboxState {
    /// The setup is running.
    Creating,
    /// Ready for containers.
    Ready,
    /// The setup failed (message).
    Failed(String),
}

/// The pod's identity for the pod network.
fn identity(pod: &Value) -> PodIdentity {
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let name = s(&pod["metadata"]["name"]);
    PodIdentity {
        uid: s(&pod["metadata"]["uid"]),
        namespace: s(&pod["metadata"]["namespace"]),
        hostname: pod["spec"]["hostname"]
            .as_str()
            .map_or_else(|| name.clone(), str::to_string),
        name,
        subdomain: pod["spec"]["subdomain"].as_str().map(str::to_string),
        host_network: pod["spec"]["hostNetwork"] == true,
    }
}

impl PodSandbox {
    /// Attaches the network, writes the volumes and starts the holder.
    pub fn create(shared: &Shared, pod: &Value, dir: &Path) -> Result<Self, ConfigError> {
        let io = |what: &str, e: std::io::Error| ConfigError(format!("{what}: {e}"));
        let id = identity(pod);
        std::fs::create_dir_all(dir).map_err(|e| io("creating the pod state directory", e))?;
        let net = shared
            .config
            .networking
            .attach(&id)
            .map_err(|e| ConfigError(format!("failed to set up the pod network: {e}")))?;
        let result = Self::start_holder(shared, pod, dir, net.clone(), &id.uid);
        if result.is_err() {
            shared.config.networking.detach(&id.uid);
            state_dir::remove_tree(dir);
        }
        result
    }

    fn start_holder(shared: &Shared, pod: &Value, dir: &Path, net: PodNet, uid: &str) -> Result<Self, ConfigError> {
        let io = |what: &str, e: std::io::Error| ConfigError(format!("{what}: {e}"));
        let volumes: PodVolumes = super::volumes::prepare(pod, dir, &shared.objects(), &shared.objects())?;
        let mut roots = Vec::new();
        for list in ["initContainers", "containers"] {
            for c in pod["spec"][list].as_array().into_iter().flatten() {
                let name = c["name"].as_str().unwrap_or_default().to_string();
                let image = c["image"].as_str().unwrap_or_default();
                let mapping = shared
                    .mapping(image)
                    .ok_or_else(|| ConfigError(format!("image {image:?} has no mapping")))?;
                roots.push((
                    name.clone(),
                    ContainerRoot {
                        lower: mapping.root.root_dir(),
                        dir: dir.join("roots").join(&name),
                        mounts: container_mounts(c, &volumes)?,
                    },
                ));
            }
        }
        let mut etc_files = Vec::new();
        for (content, file, target) in [
            (&net.resolv_conf, "resolv.conf", "/etc/resolv.conf"),
            (&net.etc_hosts, "hosts", "/etc/hosts"),
        ] {
            if let Some(text) = content {
                let p = dir.join(file);
                std::fs::write(&p, text).map_err(|e| io("writing the pod's etc files", e))?;
                etc_files.push((p, target));
            }
        }
        let holder_cgroup = match &shared.cgroups {
            Some(root) => Some(
                root.container(uid, HOLDER_CGROUP)
                    .map_err(|e| io("creating the sandbox cgroup", e))?,
            ),
            None => None,
        };
        let plan = SandboxPlan {
            cgroup_procs: holder_cgroup.as_ref().map(Cgroup::procs_files).unwrap_or_default(),
            tmpfs: volumes.tmpfs.clone(),
            shm: dir.join("shm"),
            roots: roots.iter().map(|(_, r)| r.clone()).collect(),
            etc_files,
            ready_file: dir.join("ready"),
        };
        let script = dir.join("setup.sh");
        std::fs::write(&script, render(&plan)?).map_err(|e| io("writing the sandbox setup script", e))?;
        let stderr = std::fs::File::create(dir.join("setup.err")).map_err(|e| io("creating setup.err", e))?;
        let argv = with_pdeathsig(vec![
            "unshare".into(),
            "--mount".into(),
            "--propagation".into(),
            "private".into(),
            "--".into(),
            "/bin/sh".into(),
            script.to_string_lossy().into_owned(),
        ]);
        let mut cmd = Command::new(&argv[0]);
        cmd.args(&argv[1..])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(stderr);
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let holder = shared
            .launcher
            .spawn(cmd)
            .map_err(|e| io("starting the sandbox (setpriv, unshare)", e))?;
        Ok(Self {
            dir: dir.to_path_buf(),
            net,
            holder,
            holder_cgroup,
            roots,
            ready: false,
            uid: uid.to_string(),
        })
    }

    /// Whether the setup finished, is running or failed.
    pub fn poll(&mut self) -> SandboxState {
        if self.ready {
            return SandboxState::Ready;
        }
        if let Ok(Some(status)) = self.holder.try_wait() {
            let err = std::fs::read_to_string(self.dir.join("setup.err")).unwrap_or_default();
            return SandboxState::Failed(format!(
                "failed to create pod sandbox ({status}): {}",
                err.trim().lines().last().unwrap_or("no error output")
            ));
        }
        if self.dir.join("ready").exists() {
            self.ready = true;
            return SandboxState::Ready;
        }
        SandboxState::Creating
    }

    /// Container `name`'s root as the host reaches it (through the holder's `/proc/<pid>/root`).
    pub fn root_via_proc(&self, name: &str) -> Option<PathBuf> {
        let (_, root) = self.roots.iter().find(|(n, _)| n == name)?;
        let inner = root.root();
        Some(PathBuf::from(format!("/proc/{}/root", self.holder.id())).join(inner.strip_prefix("/").unwrap_or(&inner)))
    }

    /// The nsenter arguments that put a process in container `name` (mount and network namespaces, root,
    /// working directory), ending with `--`.
    pub fn nsenter_args(&self, name: &str, working_dir: &str, user: Option<(u32, u32)>) -> Option<Vec<String>> {
        let root = self.root_via_proc(name)?;
        let mut a = vec![
            "nsenter".to_string(),
            format!("--target={}", self.holder.id()),
            "--mount".into(),
        ];
        if let Some(netns) = &self.net.netns {
            a.push(format!("--net={}", netns.display()));
        }
        a.push(format!("--root={}", root.display()));
        a.push(format!("--wdns={working_dir}"));
        if let Some((uid, gid)) = user {
            a.push(format!("--setuid={uid}"));
            a.push(format!("--setgid={gid}"));
        }
        a.push("--".into());
        Some(a)
    }

    /// Kills the holder and removes the network and the state directory (after the containers are gone).
    pub fn teardown(mut self, shared: &Shared) {
        signals::signal_group(self.holder.id(), true);
        let _ = self.holder.kill();
        let _ = self.holder.wait();
        if let Some(cg) = &self.holder_cgroup {
            cg.kill_all();
            cg.remove();
        }
        shared.config.networking.detach(&self.uid);
        state_dir::remove_tree(&self.dir);
    }
}
