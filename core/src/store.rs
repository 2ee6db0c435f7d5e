//! Where turns, threads and hosted files are kept.
//!
//! One trait, [`TurnStore`], shaped by the serverless budgets: a turn costs one round trip to
//! start ([`TurnStore::start_turn`]: claim the run and load the thread together) and one to
//! finish ([`TurnStore::finish_turn`]: save the thread and the run's recording together). That
//! is what lets the DynamoDB adapter stay within three requests per turn and the Durable
//! Object adapter within two round trips.
//!
//! Expiry is exact in every implementation: an item past its `expires_at` is treated as absent
//! on read, whether or not the backend has deleted it yet.

use std::future::Future;

use crate::context::ThreadContext;
use crate::error::StoreError;
use crate::maybe_send::{MaybeSend, MaybeSync};

/// A request to run a turn, made before the agent starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TurnClaim {
    /// The idempotency key: the protocol's run id, namespaced per protocol.
    pub run_key: String,
    /// The conversation key (see [`crate::context::thread_key`]).
    pub thread_key: String,
    /// Digest of the request body: a run key reused with another body is a conflict.
    pub fingerprint: String,
    /// Now, in ms since the epoch.
    pub now_ms: u64,
    /// Until when the claim holds (ms since the epoch). A claim that outlives the process that
    /// made it (crash, timeout) expires then, and a later delivery may take the run over.
    pub lease_until_ms: u64,
}

/// What the store says about a claimed run.
#[derive(Debug, Clone, PartialEq)]
pub enum TurnStart {
    /// The run is ours to execute. `context` is the thread as stored, `None` if the thread is
    /// new or expired.
    Claimed {
        /// The stored thread.
        context: Option<ThreadContext>,
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
}

/// A finished turn to persist, in one write.
#[derive(Debug, Clone, PartialEq)]
pub struct TurnCommit {
    /// The run's key.
    pub run_key: String,
    /// The run's fingerprint.
    pub fingerprint: String,
    /// The conversation key.
    pub thread_key: String,
    /// The thread after this turn.
    pub context: ThreadContext,
    /// When the thread expires (ms since the epoch).
    pub context_expires_at_ms: u64,
    /// What a replay of this run sends.
    pub recording: String,
    /// When the recording expires (ms since the epoch).
    pub recording_expires_at_ms: u64,
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
    fn start_turn(
        &self,
        claim: &TurnClaim,
    ) -> impl Future<Output = Result<TurnStart, StoreError>> + MaybeSend;

    /// Saves the thread and the run's recording, and releases the claim.
    fn finish_turn(
        &self,
        commit: &TurnCommit,
    ) -> impl Future<Output = Result<(), StoreError>> + MaybeSend;

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
}
