//! Container logs: a bounded buffer of lines per pod container, kept by the hollow kubelet (start, stop, exit
//! code) and open to other simulated parties ([`PodLogs::append`]; the hollow Ray head logs what it does), read
//! by the pod `log` subresource. The previous run's lines are kept after a restart, for `previous=true`.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::Arc;

use parking_lot::Mutex;

/// Most bytes of log text kept per container run; older lines are dropped first, as log rotation would.
pub const MAX_LOG_BYTES: usize = 256 * 1024;

/// One line of a container's log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogLine {
    /// When it was written.
    pub at: jiff::Timestamp,
    /// The text, without the trailing newline.
    pub text: String,
    /// Its position in the container's log (counts from 1 and never repeats, even across rotation).
    pub seq: u64,
}

#[derive(Debug, Default)]
struct ContainerLog {
    lines: VecDeque<LogLine>,
    bytes: usize,
    previous: Option<Vec<LogLine>>,
    running: bool,
    started_once: bool,
    next_seq: u64,
}

impl ContainerLog {
    fn push(&mut self, text: &str) {
        for line in text.split('\n') {
            self.next_seq += 1;
            self.bytes += line.len() + 1;
            self.lines.push_back(LogLine {
                at: jiff::Timestamp::now(),
                text: line.to_string(),
                seq: self.next_seq,
            });
        }
        while self.bytes > MAX_LOG_BYTES {
            match self.lines.pop_front() {
                Some(l) => self.bytes -= l.text.len() + 1,
                None => break,
            }
        }
    }
}

/// What a reader sees of one container run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogSnapshot {
    /// The lines kept, oldest first.
    pub lines: Vec<LogLine>,
    /// Whether the container is still running (more lines may come).
    pub running: bool,
}

/// The log buffers of every pod container, by pod uid. Clones share the buffers.
#[derive(Clone)]
pub struct PodLogs {
    pods: Arc<Mutex<HashMap<String, BTreeMap<String, ContainerLog>>>>,
    /// Bumped on every write, so followers wake up.
    changed: Arc<tokio::sync::watch::Sender<u64>>,
}

impl Default for PodLogs {
    fn default() -> Self {
        Self {
            pods: Arc::default(),
            changed: Arc::new(tokio::sync::watch::channel(0).0),
        }
    }
}

impl std::fmt::Debug for PodLogs {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PodLogs")
            .field("pods", &self.pods.lock().len())
            .finish()
    }
}

/// Two handles are equal when they share the buffers.
impl PartialEq for PodLogs {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.pods, &other.pods)
    }
}

impl PodLogs {
    fn with<R>(&self, pod_uid: &str, container: &str, f: impl FnOnce(&mut ContainerLog) -> R) -> R {
        let r = {
            let mut pods = self.pods.lock();
            let log = pods
                .entry(pod_uid.to_string())
                .or_default()
                .entry(container.to_string())
                .or_default();
            f(log)
        };
        self.changed.send_modify(|n| *n += 1);
        r
    }

    /// A container (re)started: a restart keeps the last run's lines as the previous log; `text` is its first
    /// line(s).
    pub fn container_started(&self, pod_uid: &str, container: &str, text: &str) {
        self.with(pod_uid, container, |log| {
            if log.started_once {
                log.previous = Some(std::mem::take(&mut log.lines).into());
                log.bytes = 0;
            }
            log.started_once = true;
            log.running = true;
            log.push(text);
        });
    }

    /// A real process started for a container: like [`PodLogs::container_started`] without a line of its own,
    /// since the process writes its log.
    pub fn process_started(&self, pod_uid: &str, container: &str) {
        self.with(pod_uid, container, |log| {
            if log.started_once {
                log.previous = Some(std::mem::take(&mut log.lines).into());
                log.bytes = 0;
            }
            log.started_once = true;
            log.running = true;
        });
    }

    /// A container's real process exited (its last lines are its own output).
    pub fn process_stopped(&self, pod_uid: &str, container: &str) {
        self.with(pod_uid, container, |log| log.running = false);
    }

    /// A container stopped; `text` is its last line(s) (how it exited).
    pub fn container_stopped(&self, pod_uid: &str, container: &str, text: &str) {
        self.with(pod_uid, container, |log| {
            if log.running {
                log.push(text);
                log.running = false;
            }
        });
    }

    /// Appends lines (split at `\n`) to the current log of a container, as if the process printed them.
    pub fn append(&self, pod_uid: &str, container: &str, text: &str) {
        self.with(pod_uid, container, |log| log.push(text));
    }

    /// Drops the logs of a deleted pod.
    pub fn forget_pod(&self, pod_uid: &str) {
        if self.pods.lock().remove(pod_uid).is_some() {
            self.changed.send_modify(|n| *n += 1);
        }
    }

    /// The current run of a container, or with `previous` the last finished one (the current run itself once
    /// it stopped), `None` when there is none.
    pub fn read(&self, pod_uid: &str, container: &str, previous: bool) -> Option<LogSnapshot> {
        let pods = self.pods.lock();
        let log = pods.get(pod_uid)?.get(container)?;
        // While a crashed container waits to restart, its last run is the one `previous` means.
        if previous && log.running {
            return log.previous.clone().map(|lines| LogSnapshot { lines, running: false });
        }
        Some(LogSnapshot {
            lines: log.lines.iter().cloned().collect(),
            running: log.running,
        })
    }

    /// A receiver that changes whenever any log is written, for followers.
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changed.subscribe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn restart_keeps_the_previous_run() {
        let logs = PodLogs::default();
        logs.container_started("u", "c", "first run");
        logs.append("u", "c", "a\nb");
        logs.container_stopped("u", "c", "exit 1");
        let waiting = logs.read("u", "c", true).unwrap();
        assert_eq!(waiting.lines.len(), 4, "a stopped run is the previous one");
        logs.container_started("u", "c", "second run");
        let cur = logs.read("u", "c", false).unwrap();
        assert_eq!(
            cur.lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["second run"]
        );
        assert!(cur.running);
        let prev = logs.read("u", "c", true).unwrap();
        assert_eq!(
            prev.lines.iter().map(|l| l.text.as_str()).collect::<Vec<_>>(),
            ["first run", "a", "b", "exit 1"]
        );
        assert_eq!(cur.lines[0].seq, 5, "sequence numbers continue across runs");
        logs.forget_pod("u");
        assert!(logs.read("u", "c", false).is_none());
    }

    #[test]
    fn buffer_is_bounded() {
        let logs = PodLogs::default();
        let line = "x".repeat(1023);
        for _ in 0..(MAX_LOG_BYTES / 1024 + 10) {
            logs.append("u", "c", &line);
        }
        let cur = logs.read("u", "c", false).unwrap();
        assert_eq!(cur.lines.len(), MAX_LOG_BYTES / 1024);
    }
}
