//! # runway
//!
//! Serve your own [`Agent`](runway_core::Agent) on one box: axum + tokio with an embedded
//! SQLite store, over Console's External Agent contract and Lowkey's external turn protocol.
//!
//! Your binary's whole `main`:
//!
//! ```no_run
//! use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
//!
//! struct Hello;
//!
//! impl Agent for Hello {
//!     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
//!         out.text(format!("You said: {}", turn.input));
//!         Ok(Outcome::Done)
//!     }
//! }
//!
//! fn main() -> std::process::ExitCode {
//!     runway::serve(Hello)
//! }
//! ```
//!
//! It then takes the same command line and settings as `runway serve`:
//! `my-agent serve [--listen 127.0.0.1:8787] [--data-dir ./.runway]` with `RUNWAY_AUTH_HEADERS`,
//! `RUNWAY_HEARTBEAT_SECS`, `RUNWAY_TURN_DEADLINE_SECS`, `RUNWAY_CONTEXT_TTL_SECS`,
//! `RUNWAY_PUBLIC_URL`, `RUNWAY_NAME` and `RUNWAY_LOG` from the environment, and
//! `my-agent check BASE_URL ...` runs Console's onboarding checklist like `runway check`.
//! [`run`] is the same server for a binary that parses its own command line (the `runway`
//! binary itself uses it to serve the built-in agents).
#![warn(missing_docs)]

mod cli;
mod connections_cli;
mod data_dir;
mod listener;
mod logging;
mod metrics;
mod own_origin;
mod playground;
mod request_body;
mod serve;
mod serve_models;
mod shutdown;
mod sqlite_attachments;
mod sqlite_store;
mod sqlite_thread;
mod usage_cli;
mod write_stall;

pub use cli::{check, serve};
pub use connections_cli::{ConnectionsArgs, connections};
pub use logging::init as init_logging;
pub use playground::proxy::{PlaygroundArgs, run as playground};
pub use serve::{ServeArgs, run, run_with_providers};
pub use serve_models::ServeModels;
pub use sqlite_attachments::SqliteAttachmentStore;
pub use usage_cli::{UsageArgs, usage};
