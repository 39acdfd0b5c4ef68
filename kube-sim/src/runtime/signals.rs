//! Signals to process groups and liveness checks of pids, the only process-control system calls the
//! runtime makes itself (everything else goes through util-linux tools).

use rustix::process::{Pid, Signal};

/// Sends SIGTERM (`kill = false`) or SIGKILL to the process group `pgid`; a group that is gone is fine.
pub fn signal_group(pgid: u32, kill: bool) {
    let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) else {
        return;
    };
    let sig = if kill { Signal::KILL } else { Signal::TERM };
    if let Err(e) = rustix::process::kill_process_group(pid, sig)
        && e != rustix::io::Errno::SRCH
    {
        tracing::debug!(pgid, error = %e, "process runtime: signalling a process group failed");
    }
}

/// Sends SIGKILL to one process; a process that is gone is fine.
pub fn kill_pid(pid: u32) {
    if let Some(pid) = i32::try_from(pid).ok().and_then(Pid::from_raw) {
        let _ = rustix::process::kill_process(pid, Signal::KILL);
    }
}

/// Whether a process with this pid exists.
pub fn pid_alive(pid: u32) -> bool {
    i32::try_from(pid)
        .ok()
        .and_then(Pid::from_raw)
        .is_some_and(|p| rustix::process::test_kill_process(p).is_ok())
}
