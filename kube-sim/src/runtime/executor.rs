//! `kubectl exec` into process pods: the command runs in the container's mount and network namespaces and
//! root, with its environment and working directory (through `nsenter`, as the exec probes do).

use std::process::Stdio;
use std::sync::Weak;

use super::ProcessRuntime;
use crate::sandbox::{ContainerExecutor, ExecProcess, ExecRequest, SandboxError};

/// The [`ContainerExecutor`] of a [`ProcessRuntime`] (which it does not keep alive).
#[derive(Debug)]
pub struct ProcessExecutor {
    runtime: Weak<ProcessRuntime>,
}

impl ProcessExecutor {
    /// An executor over `runtime`.
    pub fn new(runtime: Weak<ProcessRuntime>) -> Self {
        Self { runtime }
    }
}

impl ContainerExecutor for ProcessExecutor {
    /// Must be called within a tokio runtime (the process' pipes are tokio pipes).
    fn exec(&self, request: &ExecRequest) -> Result<ExecProcess, SandboxError> {
        let runtime = self
            .runtime
            .upgrade()
            .ok_or_else(|| SandboxError::Unsupported("the process runtime has stopped".into()))?;
        if request.command.is_empty() {
            return Err(SandboxError::Unsupported(
                "you must specify at least one command for the container".into(),
            ));
        }
        let target = runtime.exec_target(&request.namespace, &request.pod, &request.container)?;
        let mut cmd = tokio::process::Command::new(&target.prefix[0]);
        cmd.args(&target.prefix[1..])
            .args(&request.command)
            .env_clear()
            .envs(target.env.iter().map(|(k, v)| (k, v)))
            .stdin(if request.stdin { Stdio::piped() } else { Stdio::null() })
            .stdout(Stdio::piped())
            .kill_on_drop(true);
        // Without a terminal, stderr is its own stream; with one (not emulated: no pty) it joins stdout.
        if request.tty {
            cmd.stderr(Stdio::null());
        } else {
            cmd.stderr(Stdio::piped());
        }
        cmd.process_group(0);
        let mut child = cmd.spawn().map_err(|source| SandboxError::Io {
            context: "starting the exec'd process (nsenter)".into(),
            source,
        })?;
        let stdin = child.stdin.take().map(|s| Box::pin(s) as crate::sandbox::ExecInput);
        let stdout = child
            .stdout
            .take()
            .map(|s| Box::pin(s) as crate::sandbox::ExecOutput)
            .ok_or_else(|| SandboxError::Unsupported("no stdout".into()))?;
        let stderr = child.stderr.take().map(|s| Box::pin(s) as crate::sandbox::ExecOutput);
        let (tx, exit) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            let code = match child.wait().await {
                Ok(s) => s
                    .code()
                    .unwrap_or_else(|| 128 + std::os::unix::process::ExitStatusExt::signal(&s).unwrap_or(0)),
                Err(_) => 1,
            };
            let _ = tx.send(code);
        });
        Ok(ExecProcess {
            stdin,
            stdout,
            stderr,
            exit,
        })
    }

    fn runs_pod(&self, pod_uid: &str) -> bool {
        self.runtime.upgrade().is_some_and(|runtime| runtime.runs_pod(pod_uid))
    }
}
