//! # runway-core
//!
//! The turn engine behind runway: everything about serving a chat agent over Console's
//! External Agent contract (and Lowkey's external turn protocol), with no I/O of its own.
//!
//! The root is what an agent's author needs:
//!
//! - [`Agent`]: what you implement. You get the [`Turn`] and the thread's stored context
//!   ([`ThreadContext`]), and write to an [`Output`]; runway does frames, limits, heartbeats,
//!   idempotency and storage. End with [`Outcome::Done`] or an [`Interrupt`]; fail with an
//!   [`AgentError`].
//! - [`protocol`]: what a turn carries (attachments, the user's [`protocol::Resume`] decision).
//! - [`http_client`]: [`Turn::http`], the turn's HTTP client for models and APIs.
//!
//! Serving the agent is the adapters' job: `runway::serve(agent)` on one box,
//! `runway_lambda::run(agent)` on AWS Lambda, `runway_cloudflare::fetch(agent, ...)` on
//! Cloudflare Workers (`runway new` writes a crate with all three). What they are built from is
//! in [`adapter`]; the folders of this crate are its layers (see `ARCHITECTURE.md`):
//!
//! | folder | what it holds |
//! |---|---|
//! | `agent/` | the Agent API: [`Agent`], [`Turn`], [`Output`], [`Outcome`], [`ThreadContext`] |
//! | `protocol/` | both protocols' requests and the parts of a turn they share, as plain data |
//! | `http_client/` | [`Turn::http`]: requests bound to the turn's deadline and cancellation |
//! | `service/` | [`adapter::Runway`]: routes, auth, validation, hosted files, settings, [`Workers`] |
//! | `turn/` | the engine: claim → run → commit, heartbeats, deadline, back-pressure |
//! | `wire/` | the sans-I/O writers: Console's SSE frames and Lowkey's NDJSON lines |
//! | `meter/` | limits, usage and cost: admission, [`TurnUsage`], `/usage` |
//! | `store/` | [`adapter::TurnStore`], its state machine ([`store::turn_state`]), memory and SQL stores |
//! | `platform/` | [`adapter::Runtime`] (clock, timer, entropy) and [`MaybeSend`] |
//!
//! Compiles for `wasm32-unknown-unknown`: no tokio, no threads, no sockets. Futures are `Send`
//! on native targets and need not be on `wasm32` (see [`MaybeSend`]).
#![warn(missing_docs)]
// docs.rs (`--cfg docsrs`, nightly) marks each item behind a feature with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod agent;
pub mod connect;
mod error;
pub mod http_client;
mod keys;
pub mod meter;
mod platform;
pub mod protocol;
mod service;
pub mod store;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
mod turn;
mod wire;

pub use agent::{
    AccessToken, Agent, AgentError, AgentResult, Artifact, Connection, ConnectionError, DynAgent,
    Message, Outcome, Output, OutputFile, Protocol, Rejected, Role, SharedAgent, ThreadContext,
    ToolCall, Turn,
};
pub use http_client::{Http, HttpError, HttpResponse};
pub use meter::{ModelTokens, Price, TurnUsage, UsageLimits};
pub use platform::maybe_send::{MaybeSend, MaybeSync};
pub use protocol::Interrupt;
pub use service::workers::Workers;

/// Adapter plumbing: what runs an [`Agent`] on a platform. An agent's author does not need it.
pub mod adapter {
    pub use crate::agent::context::ContextPolicy;
    pub use crate::agent::pending::{TOTAL_PENDING_BYTES, total_pending_bytes};
    pub use crate::error::{BadRequest, StoreError, TurnErrorCode};
    pub use crate::keys::{storage_id, thread_key};
    pub use crate::platform::maybe_send::BoxFuture;
    pub use crate::platform::runtime::Runtime;
    #[cfg(feature = "tokio")]
    pub use crate::platform::tokio::TokioRuntime;
    pub use crate::protocol::Ending;
    pub use crate::service::access::{ALLOW_UNAUTHENTICATED, Access};
    pub use crate::service::auth::AuthHeaders;
    pub use crate::service::config::{Config, FIRST_FLUSH_BYTES, MAX_BODY_BYTES};
    pub use crate::service::intake::{BodyIntake, IntakeRefusal};
    pub use crate::service::os_settings::OsSettings;
    pub use crate::service::{PlatformOrigin, Reply, Runway, json_error};
    pub use crate::store::memory::MemoryStore;
    pub use crate::store::{
        ActionClaim, CommitOutcome, HostedFile, TurnClaim, TurnCommit, TurnStart, TurnStore,
    };
    pub use crate::turn::abort_tail::PANIC_MESSAGE;
    pub use crate::turn::body::TurnBody;
    pub use crate::turn::flow::{BODY_PIECE_BYTES, TURN_PENDING_BYTES};
    pub use crate::wire::console::sse;
    pub use crate::wire::console::{Console, FrameWriter, STATE_KEYS, TURN_STEP};
    pub use crate::wire::lowkey::{Lowkey, NdjsonWriter, error_event, has_terminal_event};
    pub use crate::wire::recorder::{RECORDED_FLOOR_BYTES, RecordPool, TOTAL_RECORDED_BYTES};
    pub use crate::wire::recording::Recording;
    pub use crate::wire::writer::Writer;
}

/// The README's example compiles.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
