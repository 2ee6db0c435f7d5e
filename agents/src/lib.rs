//! # runway-agents
//!
//! Ready-made agents, written against runway-core's public Agent API like any team's own:
//!
//! - [`EchoAgent`]: answers with the user's input.
//! - [`DemoAgent`]: deterministic and scripted (`/tool`, `/approve`, `/file`, `/slow 3`…), for
//!   demos and conformance checks.
//! - [`HttpProbeAgent`]: checks a runtime's HTTP client against a URL.
//! - `ModelAgent` (feature `model`): any OpenAI-compatible chat-completions endpoint, with
//!   HTTP tools, human approval and attachments (the `attachments` module).
//! - [`BuiltinAgent`]: one of them, chosen by name (`RUNWAY_AGENT`, read by [`settings`]).
//!
//! Adapters depend on this crate only to serve the built-in agents; a team's own agent needs
//! runway-core alone.
#![warn(missing_docs)]

#[cfg(feature = "model")]
pub mod attachments;
mod builtin;
mod demo;
mod echo;
mod http_probe;
#[cfg(feature = "model")]
mod model;
pub mod settings;

pub use builtin::BuiltinAgent;
pub use demo::DemoAgent;
pub use echo::EchoAgent;
pub use http_probe::HttpProbeAgent;
#[cfg(feature = "model")]
pub use model::*;
