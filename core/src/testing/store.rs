//! [`TestStore`]: the memory store, told to fail or to be slow, call kind by call kind.

use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::agent::context::ThreadContext;
use crate::error::StoreError;
use crate::meter::tally::{Tally, TallyKey, TurnTake};
use crate::store::memory::MemoryStore;
use crate::store::{
    ActionClaim, CommitOutcome, ConnectState, ConnectionFilter, ConnectionKey, HostedFile,
    StoredConnection, TurnClaim, TurnCommit, TurnStart, TurnStore,
};
use crate::testing::clock::VirtualRuntime;

/// The calls a [`TurnStore`](crate::adapter::TurnStore) answers, to aim a fault at one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreCall {
    /// `start_turn`: claim the run and load the thread.
    StartTurn,
    /// `finish_turn`: save the thread and the recording.
    FinishTurn,
    /// `latest_arrival`: the supersede check at heartbeats.
    LatestArrival,
    /// `put_file`: host a file.
    PutFile,
    /// `get_file`: serve a hosted file.
    GetFile,
    /// `take_turns`: count a turn against its turns-per-minute limits.
    TakeTurns,
    /// `add_tally`: add a turn's usage to a tally row.
    AddTally,
    /// `tallies`: read a part's tally rows (limits, `/usage`).
    Tallies,
    /// `claim_action`: claim an approved action before it runs.
    ClaimAction,
    /// `put_connect_state`, `claim_connect_state`, `put_connection`, `get_connection`,
    /// `list_connections`, `delete_connection`: the vault and the states of connections
    /// being made.
    Vault,
}

impl StoreCall {
    const ALL: [Self; CALL_KINDS] = [
        Self::StartTurn,
        Self::FinishTurn,
        Self::LatestArrival,
        Self::PutFile,
        Self::GetFile,
        Self::TakeTurns,
        Self::AddTally,
        Self::Tallies,
        Self::ClaimAction,
        Self::Vault,
    ];

    fn index(self) -> usize {
        self as usize
    }
}

/// How many kinds of call [`StoreCall`] names.
const CALL_KINDS: usize = 10;

#[derive(Debug, Clone, Default)]
struct Fault {
    error: Option<StoreError>,
    delay: Duration,
}

/// A [`MemoryStore`](crate::adapter::MemoryStore) that fails or is slow on demand: every call
/// of a kind waits its delay on the virtual clock, then fails with its error, until told
/// otherwise. Counts the calls of each kind.
///
/// # Example
///
/// ```
/// use runway_core::testing::{StoreCall, TestRunway, TestTurn};
/// use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
///
/// struct Hello;
/// impl Agent for Hello {
///     async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
///         out.text("Hello!");
///         Ok(Outcome::Done)
///     }
/// }
///
/// # runway_core::testing::VirtualRuntime::new().block_on(async {
/// let runway = TestRunway::new(Hello);
/// runway.store().fail(StoreCall::FinishTurn);
/// let frames = runway.send(TestTurn::new("hi")).await;
/// // The answer streamed, but it could not be saved: never a silent success.
/// assert_eq!(frames.error().unwrap().code, "STORE_UNAVAILABLE");
/// assert!(frames.saved().is_none());
/// # });
/// ```
pub struct TestStore {
    inner: MemoryStore,
    rt: VirtualRuntime,
    faults: Mutex<[Fault; CALL_KINDS]>,
    calls: [AtomicUsize; CALL_KINDS],
}

impl std::fmt::Debug for TestStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let calls: Vec<(StoreCall, usize)> = StoreCall::ALL
            .iter()
            .map(|c| (*c, self.calls(*c)))
            .collect();
        f.debug_struct("TestStore").field("calls", &calls).finish()
    }
}

impl TestStore {
    /// An empty store whose delays run on `rt`'s clock.
    pub fn new(rt: &VirtualRuntime) -> Self {
        Self {
            inner: MemoryStore::new(),
            rt: rt.clone(),
            faults: Mutex::default(),
            calls: Default::default(),
        }
    }

    /// Every `call` fails with `StoreError::Unavailable` from now on, until [`TestStore::heal`].
    pub fn fail(&self, call: StoreCall) {
        self.fail_with(
            call,
            StoreError::Unavailable("injected by TestStore".into()),
        );
    }

    /// Every `call` fails with `error` from now on, until [`TestStore::heal`].
    pub fn fail_with(&self, call: StoreCall, error: StoreError) {
        self.faults()[call.index()].error = Some(error);
    }

    /// `call` succeeds again (its delay stays).
    pub fn heal(&self, call: StoreCall) {
        self.faults()[call.index()].error = None;
    }

    /// Every `call` first waits `delay` of virtual time (zero: no delay). A delay beyond the
    /// engine's store timeout (8 s) makes the call time out.
    pub fn delay(&self, call: StoreCall, delay: Duration) {
        self.faults()[call.index()].delay = delay;
    }

    /// How many times `call` was made.
    pub fn calls(&self, call: StoreCall) -> usize {
        self.calls[call.index()].load(Ordering::SeqCst)
    }

    /// The thread stored under `thread_key` (see [`crate::adapter::thread_key`]), as a later
    /// turn would load it now; `None` if none was saved or it expired.
    pub fn thread(&self, thread_key: &str) -> Option<ThreadContext> {
        self.inner.thread(thread_key, self.rt.now_ms())
    }

    /// Stores `context` as thread `thread_key` for `ttl`, as if earlier turns had saved it.
    pub fn put_thread(&self, thread_key: &str, context: ThreadContext, ttl: Duration) {
        let expires = self.rt.now_ms() + ttl.as_millis() as u64;
        self.inner.put_thread(thread_key, context, expires);
    }

    fn faults(&self) -> std::sync::MutexGuard<'_, [Fault; CALL_KINDS]> {
        self.faults.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Counts `call`, waits its delay, and returns its injected error if any.
    async fn enter(&self, call: StoreCall) -> Result<(), StoreError> {
        self.calls[call.index()].fetch_add(1, Ordering::SeqCst);
        let Fault { error, delay } = self.faults()[call.index()].clone();
        if !delay.is_zero() {
            self.rt.sleep(delay).await;
        }
        error.map_or(Ok(()), Err)
    }
}

impl TurnStore for TestStore {
    async fn start_turn(&self, claim: &TurnClaim) -> Result<TurnStart, StoreError> {
        self.enter(StoreCall::StartTurn).await?;
        self.inner.start_turn(claim).await
    }

    async fn finish_turn(&self, commit: &TurnCommit) -> Result<CommitOutcome, StoreError> {
        self.enter(StoreCall::FinishTurn).await?;
        self.inner.finish_turn(commit).await
    }

    async fn latest_arrival(&self, thread_key: &str) -> Result<u64, StoreError> {
        self.enter(StoreCall::LatestArrival).await?;
        self.inner.latest_arrival(thread_key).await
    }

    async fn put_file(&self, file: &HostedFile) -> Result<(), StoreError> {
        self.enter(StoreCall::PutFile).await?;
        self.inner.put_file(file).await
    }

    async fn get_file(&self, token: &str, now_ms: u64) -> Result<Option<HostedFile>, StoreError> {
        self.enter(StoreCall::GetFile).await?;
        self.inner.get_file(token, now_ms).await
    }

    async fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<bool, StoreError> {
        self.enter(StoreCall::TakeTurns).await?;
        self.inner.take_turns(takes, expires_at_ms, write_id).await
    }

    async fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> Result<(), StoreError> {
        self.enter(StoreCall::AddTally).await?;
        self.inner
            .add_tally(key, tally, expires_at_ms, write_id)
            .await
    }

    async fn tallies(&self, part: &str, now_ms: u64) -> Result<Vec<(String, Tally)>, StoreError> {
        self.enter(StoreCall::Tallies).await?;
        self.inner.tallies(part, now_ms).await
    }

    async fn claim_action(&self, claim: &ActionClaim) -> Result<bool, StoreError> {
        self.enter(StoreCall::ClaimAction).await?;
        self.inner.claim_action(claim).await
    }

    async fn put_connect_state(&self, state: &ConnectState) -> Result<(), StoreError> {
        self.enter(StoreCall::Vault).await?;
        self.inner.put_connect_state(state).await
    }

    async fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> Result<Option<ConnectState>, StoreError> {
        self.enter(StoreCall::Vault).await?;
        self.inner.claim_connect_state(id, now_ms).await
    }

    async fn put_connection(&self, key: &ConnectionKey, sealed: &str) -> Result<(), StoreError> {
        self.enter(StoreCall::Vault).await?;
        self.inner.put_connection(key, sealed).await
    }

    async fn get_connection(&self, key: &ConnectionKey) -> Result<Option<String>, StoreError> {
        self.enter(StoreCall::Vault).await?;
        self.inner.get_connection(key).await
    }

    async fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> Result<Vec<StoredConnection>, StoreError> {
        self.enter(StoreCall::Vault).await?;
        self.inner.list_connections(filter, after, limit).await
    }

    async fn delete_connection(&self, key: &ConnectionKey) -> Result<bool, StoreError> {
        self.enter(StoreCall::Vault).await?;
        self.inner.delete_connection(key).await
    }
}
