//! # runway-agents
//!
//! Ready-made agents, written against runway-core's public Agent API like any team's own:
//!
//! - [`EchoAgent`]: answers with the user's input.
//! - [`DemoAgent`]: deterministic and scripted (`/tool`, `/approve`, `/file`, `/slow 3`…), for
//!   demos and conformance checks.
//! - [`HttpProbeAgent`]: checks a runtime's HTTP client against a URL.
//! - `ModelAgent` (feature `model`): any OpenAI-compatible chat-completions endpoint, with
//!   HTTP and MCP tools, human approval and attachments (the `attachments` module).
//! - [`BuiltinAgent`]: one of them, chosen by name (`RUNWAY_AGENT`, read by [`settings`]).
//! - `load_workers` (feature `model`): the workers file (`RUNWAY_WORKERS_FILE`): many Digital
//!   Workers on one deployment, with their limits.
//!
//! Adapters depend on this crate only to serve the built-in agents; a team's own agent needs
//! runway-core alone.
#![warn(missing_docs)]
// docs.rs (`--cfg docsrs`, nightly) marks each item behind a feature with the feature it needs.
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "model")]
pub mod attachments;
mod builtin;
mod demo;
mod echo;
mod http_probe;
#[cfg(feature = "model")]
mod model;
pub mod settings;
pub mod start_up_file;
#[cfg(feature = "model")]
mod toml_settings;
#[cfg(feature = "model")]
mod workers_file;

pub use builtin::BuiltinAgent;
pub use demo::DemoAgent;
pub use echo::EchoAgent;
pub use http_probe::HttpProbeAgent;
#[cfg(feature = "model")]
pub use model::*;
pub use settings::{WORKERS_FILE_SETTING, WORKERS_SETTING};
pub use start_up_file::{MAX_START_UP_FILE_BYTES, read_start_up_file, read_start_up_text};
#[cfg(feature = "model")]
pub use workers_file::{
    MAIN_AGENT, WorkersFileError, load_workers, workers_from_env, workers_from_settings,
};
