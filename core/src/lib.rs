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
//!
//! Serving the agent is the adapters' job: `runway::serve(agent)` on one box,
//! `runway_lambda::run(agent)` on AWS Lambda, `runway_cloudflare::fetch(agent, ...)` on
//! Cloudflare Workers (`runway new` writes a crate with all three). What they are built from is
//! in [`adapter`]:
//!
//! - [`adapter::FrameWriter`]: the sans-I/O state machine that makes any agent's output a
//!   stream Console accepts.
//! - [`adapter::Runway`]: routes, auth and validation as `http::Request` in,
//!   [`adapter::Reply`] out; an adapter is a few lines around it.
//! - [`adapter::TurnStore`] and [`adapter::Runtime`]: what a platform provides (storage;
//!   clock, timer, entropy).
//!
//! Compiles for `wasm32-unknown-unknown`: no tokio, no threads, no sockets. Futures are `Send`
//! on native targets and need not be on `wasm32` (see [`MaybeSend`]).
#![warn(missing_docs)]

mod abort_tail;
mod agent;
pub mod agents;
pub mod attachments;
mod auth;
mod config;
mod console;
mod context;
mod engine;
mod error;
mod flow;
pub mod hosted_files;
pub mod http_client;
mod json_text;
mod ledger;
pub mod lowkey;
mod maybe_send;
mod memory_store;
mod os_settings;
mod output;
pub mod protocol;
mod recorder;
mod recording;
mod refusal_log;
mod routing;
mod runtime;
mod service;
pub mod sql;
pub mod sql_store;
mod store;
#[cfg(any(test, feature = "store-tests"))]
pub mod store_tests;
pub mod text_parts;
#[cfg(feature = "tokio")]
mod tokio_runtime;
mod turn_body;
pub mod turn_state;
mod wire;

pub use agent::{Agent, AgentError, AgentResult, Outcome, Protocol, Turn};
pub use context::{Message, Role, ThreadContext};
pub use http_client::{Http, HttpError, HttpResponse};
pub use maybe_send::{MaybeSend, MaybeSync};
pub use output::{AgentEvent, Artifact, Output, OutputFile, ToolCall};
pub use protocol::Interrupt;

/// Adapter plumbing: what runs an [`Agent`] on a platform. An agent's author does not need it.
pub mod adapter {
    pub use crate::abort_tail::PANIC_MESSAGE;
    pub use crate::auth::AuthHeaders;
    pub use crate::config::{Config, MAX_BODY_BYTES};
    pub use crate::console::sse;
    pub use crate::console::{Finished, FrameWriter, STATE_KEYS, TURN_STEP};
    pub use crate::context::{ContextPolicy, thread_key};
    pub use crate::error::{BadRequest, StoreError, TurnErrorCode};
    pub use crate::flow::{
        BODY_PIECE_BYTES, TOTAL_PENDING_BYTES, TURN_PENDING_BYTES, total_pending_bytes,
    };
    pub use crate::maybe_send::BoxFuture;
    pub use crate::memory_store::MemoryStore;
    pub use crate::os_settings::OsSettings;
    pub use crate::output::OutputEvents;
    pub use crate::recorder::{RECORDED_FLOOR_BYTES, RecordPool, TOTAL_RECORDED_BYTES};
    pub use crate::recording::Recording;
    pub use crate::runtime::Runtime;
    pub use crate::service::{PlatformOrigin, Reply, Runway, json_error};
    pub use crate::store::{
        CommitOutcome, HostedFile, TurnClaim, TurnCommit, TurnStart, TurnStore,
    };
    #[cfg(feature = "tokio")]
    pub use crate::tokio_runtime::TokioRuntime;
    pub use crate::turn_body::TurnBody;
    pub use crate::wire::{Ending, Wire};
}

/// The README's example compiles.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
