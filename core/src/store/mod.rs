//! Where turns, threads and hosted files are kept.
//!
//! One trait, [`TurnStore`], shaped by the serverless budgets: a turn costs one round trip to
//! start ([`TurnStore::start_turn`]: claim the run and load the thread together) and one to
//! finish ([`TurnStore::finish_turn`]: save the thread and the run's recording together). That
//! is what lets the DynamoDB adapter stay within four requests per turn and the Durable
//! Object adapter within two round trips (plus one cheap [`TurnStore::latest_arrival`] read per
//! heartbeat while the agent runs).
//!
//! Expiry is exact in every implementation: an item past its `expires_at` is treated as absent
//! on read, whether or not the backend has deleted it yet.
//!
//! Overlapping turns on one thread follow [`crate::store::turn_state`]: every claim is an *arrival*
//! on its thread (numbered 1, 2, 3… by the store), the latest arrival is the live turn, and a
//! commit is conditional on the thread's version and on the run's claim token. Every backend
//! takes its decisions from [`crate::store::turn_state`] and supplies only the atomic primitives.

pub mod action_claims;
#[cfg(any(test, feature = "store-tests"))]
pub mod conformance;
pub mod connections;
pub(crate) mod memory;
pub mod sql;
mod sql_schema;
pub mod sql_store;
mod sql_tally;
pub mod text_parts;
/// The counters a store keeps for the meter (their home is [`crate::meter::tally`]); here too
/// because every store implements their primitives.
pub use crate::meter::tally;
pub mod turn_state;

use std::future::Future;

use serde::{Deserialize, Serialize};

pub use crate::store::action_claims::ActionClaim;
pub use crate::store::connections::{
    ConnectStage, ConnectState, ConnectionFilter, ConnectionKey, StoredConnection,
};

use crate::agent::context::{ContextPolicy, ThreadContext};
use crate::error::StoreError;
use crate::meter::tally::{Tally, TallyKey, TallyStore, TurnTake};
use crate::platform::maybe_send::{MaybeSend, MaybeSync};
use crate::protocol::Message;
use crate::wire::recording::Recording;

/// A request to run a turn, made before the agent starts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnClaim {
    /// The idempotency key: the protocol's run id, namespaced per protocol.
    pub run_key: String,
    /// The conversation key (see [`crate::keys::thread_key`]).
    pub thread_key: String,
    /// Digest of the request body: a run key reused with another body is a conflict.
    pub fingerprint: String,
    /// Now, in ms since the epoch.
    pub now_ms: u64,
    /// Until when the claim holds (ms since the epoch). A claim that outlives the process that
    /// made it (crash, timeout) expires then, and a later delivery may take the run over.
    pub lease_until_ms: u64,
    /// The fencing token of this claim (random, unique per delivery): a commit is accepted
    /// only while the run's record still carries it, so a delivery whose lease lapsed and was
    /// taken over can never overwrite what the delivery that took over recorded.
    pub token: String,
    /// The workspace the turn comes from (its storage form, see
    /// [`crate::keys::storage_id`]): a new thread is owned by it, and a thread
    /// owned by another workspace refuses the claim ([`TurnStart::OtherWorkspace`], decided by
    /// [`crate::store::turn_state::decide_owner`]).
    #[serde(default)]
    pub workspace: String,
}

/// What the store says about a claimed run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "camelCase")]
pub enum TurnStart {
    /// The run is ours to execute. `context` is the thread as stored, `None` if the thread is
    /// new or expired.
    Claimed {
        /// The stored thread.
        context: Option<ThreadContext>,
        /// The thread's version as loaded (0: no stored thread). The commit is conditional on
        /// it ([`TurnCommit::base_version`]).
        version: u64,
        /// This claim's arrival number on the thread (1 for the first turn ever claimed on
        /// it). The live turn is the latest arrival; an earlier one is superseded.
        arrival: u64,
    },
    /// The run already finished: send the recording instead of running it again.
    Finished {
        /// The recorded frames (everything after the first frame).
        recording: String,
    },
    /// Another delivery of this run holds a live claim.
    Running,
    /// This run key was used with a different request body.
    Conflict,
    /// The thread belongs to another workspace: nothing was claimed, counted or loaded.
    OtherWorkspace,
}

/// A finished turn to persist, in one write.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnCommit {
    /// The run's key.
    pub run_key: String,
    /// The run's fingerprint.
    pub fingerprint: String,
    /// The claim's fencing token ([`TurnClaim::token`]).
    pub token: String,
    /// The conversation key.
    pub thread_key: String,
    /// The thread version this turn loaded ([`TurnStart::Claimed`]).
    pub base_version: u64,
    /// This turn's arrival number ([`TurnStart::Claimed`]).
    pub arrival: u64,
    /// The thread after this turn, if nothing else was committed on it since it was loaded.
    pub context: ThreadContext,
    /// The messages this turn adds (its user message and its answer, stamped with
    /// [`TurnCommit::arrival`]): what is merged into the stored thread when another turn
    /// committed in between, or when this turn was superseded.
    pub messages: Vec<Message>,
    /// How much of the thread is kept after a merge.
    pub policy: ContextPolicy,
    /// Now, in ms since the epoch (a stored context expired by then merges as absent).
    pub now_ms: u64,
    /// When the thread expires (ms since the epoch).
    pub context_expires_at_ms: u64,
    /// What a replay of this run sends (moved out of the turn's writer, shared by clones).
    pub recording: Recording,
    /// When the recording expires (ms since the epoch).
    pub recording_expires_at_ms: u64,
}

/// What became of a commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum CommitOutcome {
    /// Nothing else was committed on the thread since the turn loaded it: saved as it is.
    Applied,
    /// Another (earlier) turn committed in between: this turn's messages were merged into the
    /// stored thread in arrival order, with this turn's state.
    Merged,
    /// A newer turn arrived while this one ran: its messages were kept (the answer marked
    /// interrupted) in arrival order, but its state and question were not.
    Superseded,
    /// The run's claim was taken over by another delivery (this one's lease lapsed): nothing
    /// was written.
    ClaimLost,
}

/// A file the agent produced, served to the user's browser by an unguessable token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HostedFile {
    /// 256-bit random token, hex.
    pub token: String,
    /// File name (sanitised).
    pub name: String,
    /// Content type.
    pub mime: String,
    /// Content.
    pub bytes: Vec<u8>,
    /// When the link stops working (ms since the epoch).
    pub expires_at_ms: u64,
}

/// Storage for turns, threads and hosted files.
///
/// Implementations: `MemoryStore` here, SQLite in the `runway` server, DynamoDB in
/// `runway-lambda`, a Durable Object in `runway-cloudflare`.
pub trait TurnStore: MaybeSend + MaybeSync + 'static {
    /// Claims `claim.run_key` and loads `claim.thread_key`, atomically with respect to other
    /// claims of the same run: of two concurrent claims, exactly one is [`TurnStart::Claimed`].
    ///
    /// In the same atomic step it applies the thread's owner
    /// ([`crate::store::turn_state::decide_owner`]): a thread nobody owns (new, expired, or
    /// stored before owners were recorded) becomes `claim.workspace`'s; a thread another
    /// workspace owns answers [`TurnStart::OtherWorkspace`] and writes nothing.
    fn start_turn(
        &self,
        claim: &TurnClaim,
    ) -> impl Future<Output = Result<TurnStart, StoreError>> + MaybeSend;

    /// Saves the thread and the run's recording, and releases the claim, as
    /// [`crate::store::turn_state::decide_commit`] says: only while the run's record still carries
    /// `commit.token`, and conditional on the thread's version (a stale version is merged, never
    /// overwritten).
    fn finish_turn(
        &self,
        commit: &TurnCommit,
    ) -> impl Future<Output = Result<CommitOutcome, StoreError>> + MaybeSend;

    /// The latest arrival on the thread (0 if none): the running turn whose arrival is lower
    /// has been superseded. Called a few times while an agent runs, so it must be one cheap
    /// read.
    fn latest_arrival(
        &self,
        thread_key: &str,
    ) -> impl Future<Output = Result<u64, StoreError>> + MaybeSend;

    /// Claims a one-time action of a thread (see [`crate::store::action_claims`]): true if the
    /// claim is `claim.holder`'s, as [`crate::store::action_claims::claim_wins`] decides,
    /// atomically with respect to every other claim of the action. Of any number of concurrent
    /// claims by different holders, exactly one is true.
    ///
    /// The default refuses every claim (fails closed): a store must implement it before an
    /// agent can run an approved action on it. Every store of runway does.
    fn claim_action(
        &self,
        claim: &ActionClaim,
    ) -> impl Future<Output = Result<bool, StoreError>> + MaybeSend {
        let _ = claim;
        async {
            Err(StoreError::Unavailable(
                "this store cannot claim actions".into(),
            ))
        }
    }

    /// Keeps a connection being made until it is claimed or `state.expires_at_ms`
    /// (see [`crate::store::connections`]).
    ///
    /// The default refuses (fails closed): a store must implement the vault before a
    /// provider can be connected on it.
    fn put_connect_state(
        &self,
        state: &ConnectState,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend {
        let _ = state;
        std::future::ready(Err(no_vault()))
    }

    /// Claims the state `id`: returns it and deletes it, in one atomic step, unless absent or
    /// expired at `now_ms`. Of any number of concurrent claims of one state, at most one gets
    /// it.
    fn claim_connect_state(
        &self,
        id: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Option<ConnectState>, StoreError>> + MaybeSend {
        let _ = (id, now_ms);
        std::future::ready(Err(no_vault()))
    }

    /// Stores the sealed vault entry of `key` (replacing any before it).
    fn put_connection(
        &self,
        key: &ConnectionKey,
        sealed: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend {
        let _ = (key, sealed);
        std::future::ready(Err(no_vault()))
    }

    /// The sealed vault entry of `key`, if any.
    fn get_connection(
        &self,
        key: &ConnectionKey,
    ) -> impl Future<Output = Result<Option<String>, StoreError>> + MaybeSend {
        let _ = key;
        std::future::ready(Err(no_vault()))
    }

    /// Up to `limit` vault entries `filter` names, sealed as stored, in an order of the
    /// store's own that does not change between calls, starting after the entry `after` (the
    /// last entry of the previous page; it need not exist any more). Fewer than `limit` only
    /// when no more follow. What `runway connections` lists, page by page.
    ///
    /// A store that cannot list every workspace's entries at once (see
    /// [`TurnStore::lists_every_workspace`]) refuses a filter without a workspace.
    fn list_connections(
        &self,
        filter: &ConnectionFilter,
        after: Option<&ConnectionKey>,
        limit: usize,
    ) -> impl Future<Output = Result<Vec<StoredConnection>, StoreError>> + MaybeSend {
        let _ = (filter, after, limit);
        std::future::ready(Err(no_vault()))
    }

    /// Whether [`TurnStore::list_connections`] serves a filter without a workspace (every
    /// workspace's entries at once). A store keeping each workspace's entries apart, with no
    /// index of the workspaces, lists one workspace at a time.
    fn lists_every_workspace(&self) -> bool {
        true
    }

    /// Deletes the vault entry of `key`; whether there was one. Deleting an absent entry
    /// changes nothing.
    fn delete_connection(
        &self,
        key: &ConnectionKey,
    ) -> impl Future<Output = Result<bool, StoreError>> + MaybeSend {
        let _ = key;
        std::future::ready(Err(no_vault()))
    }

    /// Stores a hosted file.
    fn put_file(
        &self,
        file: &HostedFile,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend;

    /// Looks a hosted file up by token; `None` if unknown or expired at `now_ms`.
    fn get_file(
        &self,
        token: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Option<HostedFile>, StoreError>> + MaybeSend;

    /// Counts one turn, the write `write_id`, in every row of `takes` (each created if absent,
    /// to expire at `expires_at_ms`) if none of them has reached its limit, else in none;
    /// `true` if counted. All or nothing, atomically with every other call on any of the
    /// rows, across processes: a turn refused by one row never holds a slot of another, not
    /// even for a moment (a workspace's turns stay free for its other workers while one
    /// worker's limit refuses). Of 100 concurrent calls on a row with a limit of 10, exactly
    /// 10 return `true`. Turns-per-minute limits ([`crate::meter`]).
    ///
    /// Idempotent per write (see [`crate::meter::tally`]): a `write_id` these rows already
    /// counted returns `true` and counts nothing more. Callers name the same rows, in the same
    /// order, every time they send a write id.
    ///
    /// The default refuses with [`StoreError::Unavailable`]: a store that keeps no counters
    /// cannot serve limits, and a turn under a limit fails closed.
    fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + MaybeSend {
        let _ = (takes, expires_at_ms, write_id);
        std::future::ready(Err(no_counters()))
    }

    /// Adds `tally` to the row `key`, field by field, atomically (the row is created if absent),
    /// once per `write_id`: a write already added to this row changes nothing (see
    /// [`crate::meter::tally`]). Rows take either `take_turns` or `add_tally` writes, never
    /// both. Its expiry becomes `expires_at_ms`: the callers give every
    /// write of a row the same expiry or a later one.
    fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend {
        let _ = (key, tally, expires_at_ms, write_id);
        std::future::ready(Err(no_counters()))
    }

    /// The rows of `part` that have not expired at `now_ms`, with their item names, in item
    /// order.
    fn tallies(
        &self,
        part: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Vec<(String, Tally)>, StoreError>> + MaybeSend {
        let _ = (part, now_ms);
        std::future::ready(Err(no_counters()))
    }
}

/// The meter keeps its counters in any turn store, through the store's own primitives.
impl<S: TurnStore> TallyStore for S {
    fn take_turns(
        &self,
        takes: &[TurnTake],
        expires_at_ms: u64,
        write_id: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + MaybeSend {
        TurnStore::take_turns(self, takes, expires_at_ms, write_id)
    }

    fn add_tally(
        &self,
        key: &TallyKey,
        tally: &Tally,
        expires_at_ms: u64,
        write_id: &str,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend {
        TurnStore::add_tally(self, key, tally, expires_at_ms, write_id)
    }

    fn tallies(
        &self,
        part: &str,
        now_ms: u64,
    ) -> impl Future<Output = Result<Vec<(String, Tally)>, StoreError>> + MaybeSend {
        TurnStore::tallies(self, part, now_ms)
    }
}

fn no_vault() -> StoreError {
    StoreError::Unavailable("this store keeps no connected accounts".into())
}

fn no_counters() -> StoreError {
    StoreError::Unavailable("this store keeps no usage counters".into())
}
