//! # runway-core
//!
//! The turn engine behind runway: everything about serving a chat agent over Console's
//! External Agent contract (and Lowkey's external turn protocol), with no I/O of its own.
//!
//! - [`Agent`]: what you implement. You get the turn and the thread's stored context, and
//!   write to an [`Output`]; runway does frames, limits, heartbeats, idempotency and storage.
//! - [`FrameWriter`]: the sans-I/O state machine that makes any agent's output a stream Console
//!   accepts.
//! - [`Runway`]: routes, auth and validation as `http::Request` in, [`Reply`] out; adapters
//!   (the `runway` server, `runway-lambda`, `runway-cloudflare`) are a few lines around it.
//! - [`TurnStore`] and [`Runtime`]: what a platform provides (storage; clock, timer, entropy).
//!
//! Compiles for `wasm32-unknown-unknown`: no tokio, no threads, no sockets. Futures are `Send`
//! on native targets and need not be on `wasm32` (see [`MaybeSend`]).
#![warn(missing_docs)]

mod abort_tail;
mod agent;
pub mod agents;
mod auth;
mod config;
mod context;
mod engine;
mod error;
mod flow;
mod frame_writer;
pub mod hosted_files;
pub mod http_client;
pub mod lowkey;
mod maybe_send;
mod memory_store;
mod os_settings;
mod output;
pub mod protocol;
mod refusal_log;
mod routing;
mod runtime;
mod service;
pub mod sql;
pub mod sql_store;
pub mod sse;
mod store;
#[cfg(any(test, feature = "store-tests"))]
pub mod store_tests;
pub mod text_parts;
#[cfg(feature = "tokio")]
mod tokio_runtime;
mod turn_body;
pub mod turn_state;
mod wire;

pub use abort_tail::PANIC_MESSAGE;
pub use agent::{Agent, AgentError, AgentResult, Outcome, Protocol, Turn};
pub use auth::AuthHeaders;
pub use config::{Config, MAX_BODY_BYTES};
pub use context::{ContextPolicy, Message, Role, ThreadContext, thread_key};
pub use error::{BadRequest, StoreError, TurnErrorCode};
pub use flow::{BODY_PIECE_BYTES, TOTAL_PENDING_BYTES, TURN_PENDING_BYTES, total_pending_bytes};
pub use frame_writer::{Ending, Finished, FrameWriter, STATE_KEYS, TURN_STEP};
pub use http_client::{Http, HttpError, HttpResponse};
pub use maybe_send::{BoxFuture, MaybeSend, MaybeSync};
pub use memory_store::MemoryStore;
pub use os_settings::OsSettings;
pub use output::OutputEvents;
pub use output::{AgentEvent, Artifact, Output, OutputFile, ToolCall};
pub use protocol::Interrupt;
pub use runtime::Runtime;
pub use service::{PlatformOrigin, Reply, Runway, json_error};
pub use store::{CommitOutcome, HostedFile, TurnClaim, TurnCommit, TurnStart, TurnStore};
#[cfg(feature = "tokio")]
pub use tokio_runtime::TokioRuntime;
pub use turn_body::TurnBody;
pub use wire::Wire;

/// The README's example compiles.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
