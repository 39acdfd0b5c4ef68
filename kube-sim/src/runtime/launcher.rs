//! Starts the sandbox holder and container processes from one long-lived thread.
//!
//! Every process gets `PR_SET_PDEATHSIG(SIGKILL)` (through util-linux `setpriv`), so it dies with kube-sim
//! even when kube-sim is SIGKILLed. The kernel sends that signal when the *thread* that forked the process
//! exits, not the process; spawning from tokio's blocking pool (whose threads come and go) would kill
//! containers at random, so all spawns go through one thread that lives as long as the runtime.

use std::process::{Child, Command};
use std::sync::mpsc;

/// A spawn request: the command and where to send the result.
type Job = (Command, mpsc::Sender<std::io::Result<Child>>);

/// The spawning thread.
#[derive(Debug)]
pub struct Launcher {
    jobs: parking_lot::Mutex<mpsc::Sender<Job>>,
}

impl Launcher {
    /// Starts the spawning thread; it ends when the launcher is dropped.
    pub fn start() -> std::io::Result<Self> {
        let (tx, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("kube-sim-launcher".into())
            .spawn(move || {
                for (mut command, reply) in rx {
                    let _ = reply.send(command.spawn());
                }
            })?;
        Ok(Self {
            jobs: parking_lot::Mutex::new(tx),
        })
    }

    /// Spawns `command` from the launcher thread.
    pub fn spawn(&self, command: Command) -> std::io::Result<Child> {
        let (tx, rx) = mpsc::channel();
        self.jobs
            .lock()
            .send((command, tx))
            .map_err(|_| std::io::Error::other("the launcher thread is gone"))?;
        rx.recv()
            .map_err(|_| std::io::Error::other("the launcher thread is gone"))?
    }
}

/// `argv` prefixed so the process gets SIGKILL when the launcher thread (kube-sim) dies.
pub fn with_pdeathsig(argv: Vec<String>) -> Vec<String> {
    ["setpriv", "--pdeathsig", "KILL", "--"]
        .into_iter()
        .map(str::to_string)
        .chain(argv)
        .collect()
}

/// Quotes `s` for a POSIX shell (single quotes, `'` as `'\''`).
pub fn shell_quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', r"'\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quoting() {
        assert_eq!(shell_quote("a b"), "'a b'");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
    }
}
