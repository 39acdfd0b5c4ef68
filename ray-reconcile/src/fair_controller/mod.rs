//! The controllers' runner: `--reconcile-concurrency` served first come, first served.
//!
//! kube-runtime's `Controller` limits concurrency by parking every object that falls due while its slots
//! are busy in a hash set, and starts whichever parked object the set yields first. Under a steady load
//! that is the same few objects again and again: with 100 RayJobs on slow dashboards re-triggering
//! themselves, 26 new RayJobs had not had a single pass after 90 s. Running it unbounded and limiting each
//! pass with a fair semaphore instead made every waiting pass a future in kube-runtime's runner, which
//! polls all of them on every wake: with 10,000 RayClusters due at once the operator fell from 200 to
//! about 80 pods/s.
//!
//! So [`FairController`] keeps kube-runtime's watches, stores and trigger mappings, and puts
//! controller-runtime's work queue (which KubeRay's concurrency is measured against) in front of the
//! reconciles: a FIFO of object keys ([`queue`]), at most `limit` passes at once, each pass reading the
//! latest object from the store when it starts. The runner's cost per event does not grow with the number
//! of objects waiting.
//!
//! Shutting down (or losing the leader lease) drops the objects still waiting; the passes already running
//! finish.

mod queue;

use std::fmt::Debug;
use std::future::Future;
use std::hash::Hash;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use futures::future::BoxFuture;
use futures::stream::{BoxStream, FuturesUnordered, SelectAll};
use futures::{FutureExt, Stream, StreamExt, TryStreamExt};
use kube::Resource;
use kube::runtime::controller::{self, trigger_owners};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::runtime::watcher;
use tokio::task::{JoinError, JoinHandle};
use tokio::time::Instant;
use tracing::{Instrument, error};

use queue::WorkQueue;

/// When a pass that panicked runs again (it has no error for the error policy to judge).
const PANICKED_PASS_RETRY: Duration = Duration::from_secs(5);

/// Where a requeue too far away to represent is put (kube-runtime's scheduler caps them likewise).
const FAR_FUTURE: Duration = Duration::from_secs(60 * 60 * 24 * 365);

/// What a pass asks for: to run again after a delay, or only on a change. kube-runtime's `Action`, whose
/// delay kube-runtime keeps to itself; the queue needs it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Action {
    requeue_after: Option<Duration>,
}

impl Action {
    /// Run again after `delay` unless a change triggers a pass sooner.
    #[must_use]
    pub const fn requeue(delay: Duration) -> Self {
        Self {
            requeue_after: Some(delay),
        }
    }

    /// Run again only when a change triggers a pass.
    #[must_use]
    pub const fn await_change() -> Self {
        Self { requeue_after: None }
    }

    /// The delay after which the object runs again, if any.
    #[must_use]
    pub const fn requeue_after(&self) -> Option<Duration> {
        self.requeue_after
    }
}

/// What one finished pass (or the trigger streams) reports: kube-runtime's controller result, so the
/// controllers log passes as before.
pub type PassResult<K, E> = Result<(ObjectRef<K>, Action), controller::Error<E, watcher::Error>>;

type Triggers<K> = BoxStream<'static, Result<ObjectRef<K>, watcher::Error>>;

/// A controller over `K` whose passes start in the order objects fell due, at most `limit` at once.
pub struct FairController<K>
where
    K: Resource + 'static,
    K::DynamicType: Eq + Hash,
{
    store: Store<K>,
    limit: u16,
    triggers: SelectAll<Triggers<K>>,
    shutdown: Option<BoxFuture<'static, ()>>,
}

impl<K> FairController<K>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Debug + Eq + Hash + Clone + Default + Send + Sync + Unpin,
{
    /// A controller reconciling the objects of `changes` (a reflector's applied objects, written to
    /// `store`), at most `limit` passes at once (0: no limit; `--reconcile-concurrency`).
    pub fn for_stream(
        changes: impl Stream<Item = Result<K, watcher::Error>> + Send + 'static,
        store: Store<K>,
        limit: u16,
    ) -> Self {
        let mut triggers = SelectAll::new();
        triggers.push(changes.map_ok(|object| key_of(&object)).boxed());
        Self {
            store,
            limit,
            triggers,
            shutdown: None,
        }
    }

    /// Also reconcile the objects `refs` names.
    #[must_use]
    pub fn reconcile_on(mut self, refs: impl Stream<Item = ObjectRef<K>> + Send + 'static) -> Self {
        self.triggers.push(refs.map(Ok).boxed());
        self
    }

    /// Also reconcile the owners (of kind `K`, by controller or plain owner reference) of the objects of
    /// `changes`.
    #[must_use]
    pub fn owns_stream<Child>(
        mut self,
        changes: impl Stream<Item = Result<Child, watcher::Error>> + Send + 'static,
    ) -> Self
    where
        Child: Resource<DynamicType = ()> + Send + 'static,
    {
        let owners = trigger_owners(changes, K::DynamicType::default(), ()).map_ok(|request| request.obj_ref);
        self.triggers.push(owners.boxed());
        self
    }

    /// Stop once `stop` resolves: waiting objects are dropped and running passes finish.
    #[must_use]
    pub fn graceful_shutdown_on(mut self, stop: impl Future<Output = ()> + Send + 'static) -> Self {
        self.shutdown = Some(stop.boxed());
        self
    }

    /// Runs `reconcile` (spawned, one task per pass) on each object as it falls due, `error_policy` deciding
    /// when a failed pass runs again. The stream reports every finished pass and ends after shutdown, or
    /// once every trigger stream ended, when the last running pass finished.
    pub fn run<Ctx, Fut, E>(
        self,
        reconcile: impl FnMut(Arc<K>, Arc<Ctx>) -> Fut + Send + 'static,
        error_policy: impl Fn(Arc<K>, &E, Arc<Ctx>) -> Action + Send + 'static,
        ctx: Arc<Ctx>,
    ) -> impl Stream<Item = PassResult<K, E>> + Send + 'static
    where
        Ctx: Send + Sync + 'static,
        Fut: Future<Output = Result<Action, E>> + Send + 'static,
        E: Send + 'static,
    {
        let ready = {
            let store = self.store.clone();
            async move {
                // A dropped writer means the watch is gone: nothing will fill the store, so run anyway
                // and let the passes find what they find.
                let _ = store.wait_until_ready().await;
            }
            .boxed()
        };
        let runner = Runner {
            queue: WorkQueue::default(),
            store: self.store,
            limit: if self.limit == 0 {
                usize::MAX
            } else {
                usize::from(self.limit)
            },
            triggers: self.triggers,
            shutdown: self.shutdown.unwrap_or_else(|| futures::future::pending().boxed()),
            accepting: true,
            ready: Some(ready),
            timer: Box::pin(tokio::time::sleep_until(Instant::now())),
            running: FuturesUnordered::new(),
            reconcile,
            error_policy,
            ctx,
        };
        futures::stream::unfold(runner, |mut runner| async move {
            let result = runner.next_result().await?;
            Some((result, runner))
        })
    }
}

/// The store key of `object` (no version or uid).
fn key_of<K>(object: &K) -> ObjectRef<K>
where
    K: Resource,
    K::DynamicType: Default,
{
    let meta = object.meta();
    let key = ObjectRef::new(meta.name.as_deref().unwrap_or_default());
    match &meta.namespace {
        Some(namespace) => key.within(namespace),
        None => key,
    }
}

/// A spawned pass, aborted if the runner is dropped before it finished.
struct SpawnedPass<T>(JoinHandle<T>);

impl<T> Future for SpawnedPass<T> {
    type Output = Result<T, JoinError>;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.0.poll_unpin(cx)
    }
}

impl<T> Drop for SpawnedPass<T> {
    fn drop(&mut self) {
        self.0.abort();
    }
}

/// A running pass: its object and what it returned.
type Running<K, E> = BoxFuture<'static, (ObjectRef<K>, Arc<K>, Result<Result<Action, E>, JoinError>)>;

/// The state of [`FairController::run`].
struct Runner<K, R, P, Ctx, E>
where
    K: Resource + 'static,
    K::DynamicType: Eq + Hash,
{
    queue: WorkQueue<ObjectRef<K>, Instant>,
    store: Store<K>,
    limit: usize,
    triggers: SelectAll<Triggers<K>>,
    shutdown: BoxFuture<'static, ()>,
    /// False once shutting down: no more triggers, no new passes.
    accepting: bool,
    /// Until the store holds its first list (`None` after): passes wait for it.
    ready: Option<BoxFuture<'static, ()>>,
    /// Fires at the queue's next timer.
    timer: Pin<Box<tokio::time::Sleep>>,
    running: FuturesUnordered<Running<K, E>>,
    reconcile: R,
    error_policy: P,
    ctx: Arc<Ctx>,
}

impl<K, R, P, Ctx, Fut, E> Runner<K, R, P, Ctx, E>
where
    K: Resource + Clone + Send + Sync + 'static,
    K::DynamicType: Debug + Eq + Hash + Clone + Default + Send + Sync + Unpin,
    R: FnMut(Arc<K>, Arc<Ctx>) -> Fut,
    P: Fn(Arc<K>, &E, Arc<Ctx>) -> Action,
    Ctx: Send + Sync + 'static,
    Fut: Future<Output = Result<Action, E>> + Send + 'static,
    E: Send + 'static,
{
    /// Runs until the next thing to report; `None` once shut down and drained.
    async fn next_result(&mut self) -> Option<PassResult<K, E>> {
        loop {
            if self.accepting {
                // Checked before starting anything, so that no pass starts after the stop, and timers
                // expire even while triggers keep every branch below busy.
                if (&mut self.shutdown).now_or_never().is_some() {
                    self.stop_accepting();
                } else {
                    self.queue.expire_timers(Instant::now());
                }
            }
            if let Some(gone) = self.start_due_passes() {
                return Some(Err(controller::Error::ObjectNotFound(Box::new(gone.erase()))));
            }
            let next_timer = self.queue.next_timer().filter(|_| self.accepting);
            if let Some(at) = next_timer {
                self.timer.as_mut().reset(at);
            }
            tokio::select! {
                // Finished passes first: they free slots.
                biased;
                Some((key, object, outcome)) = self.running.next(), if !self.running.is_empty() => {
                    if let Some(result) = self.finish(key, object, outcome) {
                        return Some(result);
                    }
                }
                () = &mut self.shutdown, if self.accepting => self.stop_accepting(),
                () = async { if let Some(ready) = self.ready.as_mut() { ready.await } }, if self.ready.is_some() && self.accepting => {
                    self.ready = None;
                }
                () = &mut self.timer, if next_timer.is_some() => self.queue.expire_timers(Instant::now()),
                trigger = self.triggers.next(), if self.accepting => match trigger {
                    Some(Ok(key)) => self.queue.trigger(key),
                    Some(Err(e)) => return Some(Err(controller::Error::QueueError(e))),
                    // Every trigger stream ended: nothing can make an object due any more.
                    None => self.stop_accepting(),
                },
                else => return None,
            }
        }
    }

    /// Starts due passes while slots are free; an object deleted while it waited is reported instead.
    fn start_due_passes(&mut self) -> Option<ObjectRef<K>> {
        if !self.accepting || self.ready.is_some() {
            return None;
        }
        while self.queue.running() < self.limit {
            let key = self.queue.start_next()?;
            let Some(object) = self.store.get(&key) else {
                self.queue.finish(&key, None);
                return Some(key);
            };
            let pass = (self.reconcile)(Arc::clone(&object), Arc::clone(&self.ctx)).in_current_span();
            let spawned = SpawnedPass(tokio::spawn(pass));
            self.running.push(async move { (key, object, spawned.await) }.boxed());
        }
        None
    }

    /// Books a finished pass and its next run; what to report of it.
    fn finish(
        &mut self,
        key: ObjectRef<K>,
        object: Arc<K>,
        outcome: Result<Result<Action, E>, JoinError>,
    ) -> Option<PassResult<K, E>> {
        let (requeue, result) = match outcome {
            Ok(Ok(action)) => (action.requeue_after(), Some(Ok((key.clone(), action)))),
            Ok(Err(e)) => {
                let action = (self.error_policy)(object, &e, Arc::clone(&self.ctx));
                let failed = controller::Error::ReconcilerFailed(e, Box::new(key.clone().erase()));
                (action.requeue_after(), Some(Err(failed)))
            }
            Err(e) if e.is_panic() => {
                // A panic is a bug; the operator keeps running and retries the object.
                error!(object = %key, error = %e, "reconcile pass panicked");
                (Some(PANICKED_PASS_RETRY), None)
            }
            // Cancelled: the runtime is shutting down.
            Err(_) => (None, None),
        };
        let now = Instant::now();
        let requeue_at = requeue.map(|after| now.checked_add(after).unwrap_or_else(|| now + FAR_FUTURE));
        self.queue.finish(&key, requeue_at);
        result
    }

    fn stop_accepting(&mut self) {
        self.accepting = false;
        self.queue.drop_waiting();
    }
}

#[cfg(test)]
mod tests;
