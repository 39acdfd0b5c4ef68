//! The host commands the pod network runs: `ip` (iproute2), `unshare` and `nsenter` (util-linux), `umount`.
//!
//! The network is set up by these commands rather than raw netlink so that kube-sim needs no unsafe code and
//! every step is the one an operator would type to inspect or repair it.

use std::io::Write as _;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::sandbox::SandboxError;

/// Runs `program args…` and fails with its stderr when it exits non-zero.
pub fn run(program: &str, args: &[&str]) -> Result<(), SandboxError> {
    run_with_stdin(program, args, None)
}

/// Runs `program args…` feeding `stdin` (for `ip -batch -`) and fails with its stderr when it exits non-zero.
pub fn run_with_stdin(program: &str, args: &[&str], stdin: Option<&str>) -> Result<(), SandboxError> {
    let context = || format!("{program} {}", args.join(" "));
    let mut child = Command::new(program)
        .args(args)
        .stdin(if stdin.is_some() { Stdio::piped() } else { Stdio::null() })
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| SandboxError::Io {
            context: context(),
            source,
        })?;
    if let (Some(text), Some(mut pipe)) = (stdin, child.stdin.take()) {
        pipe.write_all(text.as_bytes()).map_err(|source| SandboxError::Io {
            context: context(),
            source,
        })?;
    }
    let out = child.wait_with_output().map_err(|source| SandboxError::Io {
        context: context(),
        source,
    })?;
    if out.status.success() {
        Ok(())
    } else {
        let stderr = String::from_utf8_lossy(&out.stderr);
        Err(SandboxError::Io {
            context: context(),
            source: std::io::Error::other(format!("{}: {}", out.status, stderr.trim())),
        })
    }
}

/// Runs the `ip -batch` script `script` in the host's network namespace.
pub fn ip_batch(script: &str) -> Result<(), SandboxError> {
    run_with_stdin("ip", &["-batch", "-"], Some(script))
}

/// Runs the `ip -batch` script `script` inside the network namespace bound at `netns`.
pub fn ip_batch_in(netns: &Path, script: &str) -> Result<(), SandboxError> {
    let net = format!("--net={}", netns.display());
    run_with_stdin("nsenter", &[&net, "ip", "-batch", "-"], Some(script))
}

/// Creates a network namespace and binds it at `path` (an existing or new regular file).
pub fn create_netns(path: &Path) -> Result<(), SandboxError> {
    std::fs::write(path, b"").map_err(|source| SandboxError::Io {
        context: format!("creating {}", path.display()),
        source,
    })?;
    let net = format!("--net={}", path.display());
    run("unshare", &[&net, "true"])
}

/// Unbinds and removes the network namespace file at `path`; the namespace dies with its last user.
pub fn remove_netns(path: &Path) -> Result<(), SandboxError> {
    let display = path.display().to_string();
    if is_mounted(path) {
        run("umount", &[&display])?;
    }
    match std::fs::remove_file(path) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(source) => Err(SandboxError::Io {
            context: format!("removing {display}"),
            source,
        }),
    }
}

/// Whether `path` is a mount point (listed in `/proc/self/mounts`).
pub fn is_mounted(path: &Path) -> bool {
    let wanted = path.display().to_string();
    std::fs::read_to_string("/proc/self/mounts")
        .map(|m| m.lines().any(|l| l.split(' ').nth(1) == Some(wanted.as_str())))
        .unwrap_or(false)
}

/// Names of the host's network interfaces.
pub fn link_names() -> Vec<String> {
    std::fs::read_dir("/sys/class/net")
        .map(|d| {
            d.filter_map(Result::ok)
                .filter_map(|e| e.file_name().into_string().ok())
                .collect()
        })
        .unwrap_or_default()
}

/// Deletes the host interface `name` (a veth's peer goes with it); a missing one is fine.
pub fn delete_link(name: &str) -> Result<(), SandboxError> {
    if !Path::new("/sys/class/net").join(name).exists() {
        return Ok(());
    }
    run("ip", &["link", "del", name])
}
