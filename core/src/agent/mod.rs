//! The Agent API: what you implement to write a Digital Worker on runway.
//!
//! - [`Agent`] (this file): the trait.
//! - [`Turn`] (`turn.rs`): what a turn carries, and its HTTP client.
//! - [`Output`] (`output.rs`): what the agent writes, streamed as it is written.
//! - [`Outcome`] (`outcome.rs`) / [`AgentError`] (`crate::error`): how the turn ends.
//! - [`ThreadContext`] (`context.rs`): the thread's stored messages and the agent's own state.

use std::future::Future;

use crate::platform::maybe_send::{MaybeSend, MaybeSync};

pub(crate) mod context;
pub(crate) mod dyn_agent;
pub(crate) mod outcome;
pub(crate) mod output;
pub(crate) mod pending;
pub(crate) mod turn;
pub(crate) mod turn_actions;
pub(crate) mod turn_connections;

pub use crate::error::AgentError;
pub use crate::protocol::{Message, Role};
pub use context::ThreadContext;
pub use dyn_agent::{DynAgent, SharedAgent};
pub use outcome::{AgentResult, Outcome};
pub use output::{Artifact, Output, OutputFile, ToolCall};
pub use turn::{Protocol, Turn};
pub use turn_connections::{AccessToken, Connection, ConnectionError, Rejected};

/// A Digital Worker.
///
/// runway calls [`Agent::run`] once per turn with the turn and the thread's stored context,
/// streams what the agent writes to [`Output`] as it is written, sends heartbeats while it is
/// silent, stops it (drops the future) if the user presses Stop or the turn deadline passes,
/// and saves the thread afterwards. The agent never deals with frames, SSE, limits or
/// idempotency.
///
/// On native targets the future must be `Send` (it runs on tokio); on `wasm32` (Cloudflare
/// Workers) it need not be.
///
/// # Example
///
/// ```
/// use runway_core::{Agent, AgentResult, Interrupt, Outcome, Output, Turn};
/// use runway_core::protocol::Decision;
///
/// struct FlightDesk;
///
/// impl Agent for FlightDesk {
///     async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
///         // The answer to last turn's question arrives in `resume`.
///         if let Some(resume) = &turn.resume {
///             out.text(match resume.decision {
///                 Decision::Approve => "Booked.",
///                 _ => "Cancelled, nothing was booked.",
///             });
///             return Ok(Outcome::Done);
///         }
///         // The thread's earlier messages are in `turn.context`.
///         let earlier = turn.context.messages.len();
///         out.text(format!("{earlier} earlier messages. Looking up flights…"));
///         let call = out.tool_call("search_flights", &serde_json::json!({"from": "HAN"}));
///         out.tool_result(&call, "VN123 20 Aug 08:00");
///         out.text("VN123 leaves at 08:00.");
///         Ok(Interrupt::Approval { prompt: "Book VN123 on 20 Aug?".into() }.into())
///     }
/// }
/// ```
pub trait Agent: MaybeSend + MaybeSync + 'static {
    /// Answers one turn. Write the answer to `out`; change `turn.context.state` to remember
    /// things; return [`Outcome::Done`], or an [`Interrupt`](crate::Interrupt) to ask the user something.
    fn run(&self, turn: &mut Turn, out: &Output) -> impl Future<Output = AgentResult> + MaybeSend;
}

/// A `static` agent (or one leaked for the life of the process) is an agent: `&MyAgent`.
impl<A: Agent> Agent for &'static A {
    fn run(&self, turn: &mut Turn, out: &Output) -> impl Future<Output = AgentResult> + MaybeSend {
        (**self).run(turn, out)
    }
}

/// A shared agent is an agent: keep a clone to look at it after its turns (in tests, say).
impl<A: Agent> Agent for std::sync::Arc<A> {
    fn run(&self, turn: &mut Turn, out: &Output) -> impl Future<Output = AgentResult> + MaybeSend {
        (**self).run(turn, out)
    }
}
