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

mod agent;
pub mod agents;
mod auth;
mod config;
mod context;
mod engine;
mod error;
mod frame_writer;
pub mod hosted_files;
pub mod http_client;
pub mod lowkey;
mod maybe_send;
mod memory_store;
mod output;
pub mod protocol;
mod runtime;
mod service;
pub mod sse;
mod store;
#[cfg(feature = "tokio")]
mod tokio_runtime;
mod turn_body;
mod wire;

pub use agent::{Agent, AgentError, AgentResult, Outcome, Protocol, Turn};
pub use auth::AuthHeaders;
pub use config::{Config, MAX_BODY_BYTES};
pub use context::{ContextPolicy, Message, Role, ThreadContext, thread_key};
pub use error::{BadRequest, StoreError, TurnErrorCode};
pub use frame_writer::{Ending, Finished, FrameWriter, STATE_KEYS, TURN_STEP};
pub use http_client::{Http, HttpError, HttpResponse};
pub use maybe_send::{BoxFuture, MaybeSend, MaybeSync};
pub use memory_store::MemoryStore;
pub use output::{AgentEvent, Artifact, Output, OutputFile, ToolCall};
pub use protocol::Interrupt;
pub use runtime::Runtime;
pub use service::{Reply, Runway, json_error};
pub use store::{HostedFile, TurnClaim, TurnCommit, TurnStart, TurnStore};
#[cfg(feature = "tokio")]
pub use tokio_runtime::TokioRuntime;
pub use turn_body::TurnBody;
pub use wire::Wire;

/// The README's example compiles.
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
struct ReadmeDoctests;
