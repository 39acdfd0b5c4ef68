//! Job-info queries off the reconcile path (KubeRay's `AsyncJobInfoQuery`, our way): a Running RayJob's
//! `GET /api/jobs/<id>` runs in a background task, and a pass reads the answer the last query left instead
//! of waiting for the dashboard. A dashboard that answers slowly (or never, until the client's timeout)
//! then holds only its own query, never a reconcile worker that other RayJobs need.
//!
//! - At most one query per RayJob is in flight, and at most [`MAX_QUERIES_IN_FLIGHT`] in all (the others
//!   wait for a slot in the order they were started).
//! - A pass [`JobInfoQueries::take`]s the answer (each answer is read once, by one pass, as a fresh query
//!   was read before). When there is none yet the pass plans with
//!   [`DashboardObservation::NotQueried`] (wait), a query starts if none is in flight, and its answer
//!   triggers a reconcile of the RayJob (through [`JobInfoQueries::completions`]); the pass's own requeue
//!   is only a fallback ([`AWAITING_ANSWER_REQUEUE`]).
//! - After a pass that leaves the RayJob Running, [`JobInfoQueries::prefetch`] schedules the next query for
//!   when the pass would requeue (3 s), and its answer triggers the next pass: one pass per answer, every
//!   3 s plus the dashboard's latency, as KubeRay's synchronous query paces its passes. Started right away,
//!   the query would still be held by a slow dashboard at the requeue, and every answer would cost two
//!   passes (one finding nothing, one reading it). It is scheduled after the pass's actions, so an HTTPMode
//!   submission is never answered by a query that raced it.
//! - A RayJob that stops running or is deleted is [`JobInfoQueries::forget`]ten: the map holds only Running
//!   RayJobs, and a late answer for a forgotten or newer query is dropped.
//! - Each query remembers whether the pass that started it had seen the submitter finish. A "not found"
//!   from a query started before that is not read by a pass that sees it finished: the submitter may have
//!   submitted the job after the query was answered, and that pass would fail the RayJob with
//!   "Submitter completed but Ray job not found". It asks again instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use futures::Stream;
use kube::runtime::reflector::ObjectRef;
use ray_api::RayJob;
use tokio::sync::{Semaphore, broadcast};
use tracing::warn;

use super::dashboard::{DashboardClient, DashboardTarget, PROXY_TIMEOUT};
use super::plan::DashboardObservation;
use crate::runtime_util::ObjectKey;

/// Job-info queries in flight at once across every RayJob.
pub const MAX_QUERIES_IN_FLIGHT: usize = 256;
/// Answers a subscriber may fall behind before it skips some (it then relies on the pass's requeue).
pub const COMPLETION_FEED_CAPACITY: usize = 1024;
/// The requeue of a pass that waits for a query in flight: its answer triggers the next pass, at the latest
/// when the client's timeout turns it into an error answer; this only covers an answer whose trigger was
/// skipped. Requeueing every 3 s instead would run passes that have nothing new to read, several per
/// query on a slow dashboard.
pub const AWAITING_ANSWER_REQUEUE: Duration = PROXY_TIMEOUT.saturating_add(Duration::from_secs(3));

/// One RayJob's query state.
#[derive(Debug)]
struct Entry {
    /// The Ray job the query is about (`status.jobId`).
    job_id: String,
    /// Bumped whenever the entry starts over, so that a late answer of an older query is dropped.
    generation: u64,
    /// A query is running (or waiting for a slot).
    in_flight: bool,
    /// A pass found no answer and waits for one: the answer triggers a reconcile.
    waiting: bool,
    /// Whether the pass that started the query in flight had seen the submitter finish.
    query_after_submission: bool,
    /// The answer not yet read, and whether its query started after the submitter finished.
    answer: Option<(DashboardObservation, bool)>,
}

/// Where [`JobInfoQueries::take`] stands for one RayJob.
#[derive(Debug, PartialEq)]
enum Take {
    /// The answer to read.
    Answer(DashboardObservation),
    /// No answer; start a query of this generation.
    Start(u64),
    /// No answer; a query is already in flight.
    Pending,
}

/// The per-RayJob query table: no I/O, so its rules are tested on their own.
#[derive(Debug, Default)]
struct Table {
    entries: HashMap<ObjectKey, Entry>,
    next_generation: u64,
}

impl Table {
    /// The entry of `key` for `job_id`, started over when it was about another Ray job.
    fn entry(&mut self, key: &ObjectKey, job_id: &str) -> &mut Entry {
        self.next_generation += 1;
        let generation = self.next_generation;
        let entry = self.entries.entry(key.clone()).or_insert_with(|| Entry {
            job_id: job_id.to_owned(),
            generation,
            in_flight: false,
            waiting: false,
            query_after_submission: false,
            answer: None,
        });
        if entry.job_id != job_id {
            *entry = Entry {
                job_id: job_id.to_owned(),
                generation,
                in_flight: false,
                waiting: false,
                query_after_submission: false,
                answer: None,
            };
        }
        entry
    }

    /// A pass reads the answer; without one (or with an outdated "not found", see the module
    /// documentation) it waits for the query in flight or starts one. `submission_finished`: the pass saw
    /// the submitter finish.
    fn take(&mut self, key: &ObjectKey, job_id: &str, submission_finished: bool) -> Take {
        let entry = self.entry(key, job_id);
        if let Some((answer, after_submission)) = entry.answer.take() {
            let outdated = submission_finished && !after_submission && matches!(answer, DashboardObservation::NotFound);
            if !outdated {
                return Take::Answer(answer);
            }
        }
        entry.waiting = true;
        if entry.in_flight {
            return Take::Pending;
        }
        entry.in_flight = true;
        entry.query_after_submission = submission_finished;
        Take::Start(entry.generation)
    }

    /// After a pass: the generation of a query to start, unless one is in flight or an answer is unread. Its
    /// answer triggers a pass.
    fn prefetch(&mut self, key: &ObjectKey, job_id: &str, submission_finished: bool) -> Option<u64> {
        let entry = self.entry(key, job_id);
        if entry.in_flight || entry.answer.is_some() {
            return None;
        }
        entry.in_flight = true;
        entry.waiting = true;
        entry.query_after_submission = submission_finished;
        Some(entry.generation)
    }

    /// Whether query `generation` of `key` is still wanted (its RayJob was not forgotten or started over).
    fn is_current(&self, key: &ObjectKey, generation: u64) -> bool {
        self.entries
            .get(key)
            .is_some_and(|entry| entry.generation == generation)
    }

    /// Keeps the answer of query `generation`; whether a pass waits for it. A stale answer is dropped.
    fn complete(&mut self, key: &ObjectKey, generation: u64, answer: DashboardObservation) -> bool {
        match self.entries.get_mut(key) {
            Some(entry) if entry.generation == generation => {
                entry.in_flight = false;
                entry.answer = Some((answer, entry.query_after_submission));
                std::mem::take(&mut entry.waiting)
            }
            _ => false,
        }
    }

    fn forget(&mut self, key: &ObjectKey) {
        self.entries.remove(key);
    }
}

/// The background job-info queries of the RayJob controller (shared by its passes).
pub struct JobInfoQueries {
    dashboard: DashboardClient,
    slots: Arc<Semaphore>,
    table: Mutex<Table>,
    completions: broadcast::Sender<ObjectKey>,
}

impl JobInfoQueries {
    /// Queries through `dashboard`.
    pub fn new(dashboard: DashboardClient) -> Arc<Self> {
        let (completions, _) = broadcast::channel(COMPLETION_FEED_CAPACITY);
        Arc::new(Self {
            dashboard,
            slots: Arc::new(Semaphore::new(MAX_QUERIES_IN_FLIGHT)),
            table: Mutex::new(Table::default()),
            completions,
        })
    }

    fn table(&self) -> std::sync::MutexGuard<'_, Table> {
        self.table.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The answer about `job_id` the last query left for the RayJob `key` (read once); without one,
    /// `None`, and a query is started unless one is in flight (its answer will trigger a reconcile).
    /// `submission_finished`: the pass has seen the submitter (Job or sidecar container) finish.
    pub fn take(
        self: &Arc<Self>,
        key: &ObjectKey,
        job_id: &str,
        target: &DashboardTarget,
        submission_finished: bool,
    ) -> Option<DashboardObservation> {
        let taken = self.table().take(key, job_id, submission_finished);
        match taken {
            Take::Answer(answer) => Some(answer),
            Take::Start(generation) => {
                self.spawn(
                    key.clone(),
                    job_id.to_owned(),
                    target.clone(),
                    generation,
                    Duration::ZERO,
                );
                None
            }
            Take::Pending => None,
        }
    }

    /// Starts the next query for a RayJob that stays Running `after` from now, unless one is in flight or
    /// its answer is still unread; whether it did. Its answer triggers a pass.
    pub fn prefetch(
        self: &Arc<Self>,
        key: &ObjectKey,
        job_id: &str,
        target: &DashboardTarget,
        submission_finished: bool,
        after: Duration,
    ) -> bool {
        let generation = self.table().prefetch(key, job_id, submission_finished);
        if let Some(generation) = generation {
            self.spawn(key.clone(), job_id.to_owned(), target.clone(), generation, after);
        }
        generation.is_some()
    }

    /// Drops what is kept for the RayJob `key` (it stopped running, or is being deleted).
    pub fn forget(&self, key: &ObjectKey) {
        self.table().forget(key);
    }

    /// RayJobs tracked (Running RayJobs that were queried and not forgotten).
    pub fn tracked(&self) -> usize {
        self.table().entries.len()
    }

    fn spawn(
        self: &Arc<Self>,
        key: ObjectKey,
        job_id: String,
        target: DashboardTarget,
        generation: u64,
        after: Duration,
    ) {
        let queries = Arc::clone(self);
        tokio::spawn(async move {
            if !after.is_zero() {
                tokio::time::sleep(after).await;
                // Forgotten meanwhile (it stopped running, or was deleted): nobody reads the answer.
                if !queries.table().is_current(&key, generation) {
                    return;
                }
            }
            // The semaphore is never closed; were it, the query would run unbounded rather than not at all.
            let _slot = queries.slots.acquire().await.ok();
            let answer = queries.dashboard.job_info(&target, &job_id).await;
            let waited = queries.table().complete(&key, generation, answer);
            // No receiver (the controller stopped) is not an error.
            if waited {
                let _ = queries.completions.send(key);
            }
        });
    }

    /// Reconcile requests for RayJobs whose awaited answer arrived, limited to `namespace` when given (one
    /// watch scope of `--watch-namespace`).
    pub fn completions(&self, namespace: Option<String>) -> impl Stream<Item = ObjectRef<RayJob>> + Send + 'static {
        let receiver = self.completions.subscribe();
        futures::stream::unfold(receiver, move |mut receiver| {
            let namespace = namespace.clone();
            async move {
                loop {
                    match receiver.recv().await {
                        Ok((ns, name)) if namespace.as_ref().is_none_or(|scope| *scope == ns) => {
                            return Some((ObjectRef::new(&name).within(&ns), receiver));
                        }
                        Ok(_) => {}
                        Err(broadcast::error::RecvError::Lagged(skipped)) => {
                            warn!(skipped, "job-info answers fell behind; relying on requeues");
                        }
                        Err(broadcast::error::RecvError::Closed) => return None,
                    }
                }
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> ObjectKey {
        ("ns".to_owned(), name.to_owned())
    }

    #[test]
    fn one_query_per_rayjob_and_each_answer_read_once() {
        let mut table = Table::default();
        let Take::Start(first) = table.take(&key("a"), "j1", false) else {
            panic!("the first pass starts a query")
        };
        assert_eq!(table.take(&key("a"), "j1", false), Take::Pending);
        assert_eq!(table.prefetch(&key("a"), "j1", false), None, "one query per RayJob");
        assert!(
            matches!(table.take(&key("b"), "j2", false), Take::Start(_)),
            "other RayJobs query on their own"
        );
        assert!(
            table.complete(&key("a"), first, DashboardObservation::NotFound),
            "a pass waited"
        );
        assert_eq!(
            table.prefetch(&key("a"), "j1", false),
            None,
            "the answer is not read yet"
        );
        assert_eq!(
            table.take(&key("a"), "j1", false),
            Take::Answer(DashboardObservation::NotFound)
        );
        let next = table.prefetch(&key("a"), "j1", false).unwrap();
        assert!(table.is_current(&key("a"), next));
        assert!(
            table.complete(&key("a"), next, DashboardObservation::NotFound),
            "the answer of the next query triggers the next pass"
        );
        assert_eq!(
            table.take(&key("a"), "j1", false),
            Take::Answer(DashboardObservation::NotFound)
        );
    }

    #[test]
    fn answers_about_another_job_or_a_forgotten_rayjob_are_dropped() {
        let mut table = Table::default();
        let Take::Start(old) = table.take(&key("a"), "j1", false) else {
            panic!("starts")
        };
        // A retry gave the RayJob a new Ray job: the old query's answer is not about it.
        let Take::Start(new) = table.take(&key("a"), "j2", false) else {
            panic!("a new job starts its own query")
        };
        assert!(!table.complete(&key("a"), old, DashboardObservation::NotFound));
        assert_eq!(table.take(&key("a"), "j2", false), Take::Pending);
        table.forget(&key("a"));
        assert!(
            !table.is_current(&key("a"), new),
            "a scheduled query of a forgotten RayJob is not sent"
        );
        assert!(!table.complete(&key("a"), new, DashboardObservation::NotFound));
        assert!(table.entries.is_empty(), "a forgotten RayJob keeps nothing");
    }

    #[test]
    fn a_not_found_from_before_the_submitter_finished_is_asked_again() {
        let mut table = Table::default();
        // Prefetched while the submitter still ran: the job was not submitted yet.
        let early = table.prefetch(&key("a"), "j1", false).unwrap();
        table.complete(&key("a"), early, DashboardObservation::NotFound);
        // The next pass sees the submitter finished: that "not found" proves nothing, ask again.
        let Take::Start(fresh) = table.take(&key("a"), "j1", true) else {
            panic!("an outdated not-found starts a new query")
        };
        assert!(
            table.complete(&key("a"), fresh, DashboardObservation::NotFound),
            "the pass waits for it"
        );
        assert_eq!(
            table.take(&key("a"), "j1", true),
            Take::Answer(DashboardObservation::NotFound),
            "asked after the submitter finished: the job really is missing"
        );
        // Other answers from before are read as they are (the plan waits for a terminal status anyway).
        let early = table.prefetch(&key("b"), "j2", false).unwrap();
        table.complete(&key("b"), early, DashboardObservation::Error("timeout".into()));
        assert_eq!(
            table.take(&key("b"), "j2", true),
            Take::Answer(DashboardObservation::Error("timeout".into()))
        );
    }
}
