//! # runway-agents
//!
//! Ready-made agents, written against runway-core's public Agent API like any team's own:
//!
//! - [`EchoAgent`]: answers with the user's input.
//! - [`DemoAgent`]: deterministic and scripted (`/tool`, `/approve`, `/file`, `/slow 3`…), for
//!   demos and conformance checks.
//! - [`HttpProbeAgent`]: checks a runtime's HTTP client against a URL.
//! - [`ModelAgent`]: any OpenAI-compatible chat-completions endpoint, with HTTP tools, human
//!   approval and attachments ([`attachments`]).
//! - [`BuiltinAgent`]: one of them, chosen by name (`RUNWAY_AGENT`, read by [`settings`]).
//!
//! Adapters depend on this crate only to serve the built-in agents; a team's own agent needs
//! runway-core alone.
#![warn(missing_docs)]

pub mod attachments;
mod builtin;
mod demo;
mod echo;
mod http_probe;
mod model;
pub mod settings;

pub use builtin::BuiltinAgent;
pub use demo::DemoAgent;
pub use echo::EchoAgent;
pub use http_probe::HttpProbeAgent;
pub use model::*;
