//! The Agent API: what you implement to write a Digital Worker on runway.

use std::fmt;
use std::future::Future;

use crate::context::ThreadContext;
use crate::http_client::Http;
use crate::maybe_send::{MaybeSend, MaybeSync};
use crate::output::Output;
use crate::protocol::{Attachment, Interrupt, Resume};

/// Which wire protocol the turn arrived on. The agent rarely needs to know: runway renders its
/// output for either.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// Console's `POST /runs` (SSE).
    Console,
    /// Lowkey's `POST /lowkey/turn` (NDJSON).
    Lowkey,
}

/// One turn, as the agent sees it.
#[derive(Debug, Clone)]
pub struct Turn {
    /// The protocol the turn arrived on.
    pub protocol: Protocol,
    /// This turn's id (Console `runId`, Lowkey `turnId`).
    pub run_id: String,
    /// The conversation's id (Console `threadId`, Lowkey `sessionHandle.id`).
    pub thread_id: String,
    /// The Digital Worker being called.
    pub agent_id: String,
    /// The calling organization (Console `workspaceId`, Lowkey `pluginId`).
    pub workspace_id: String,
    /// The person chatting, when there is one.
    pub user_id: Option<String>,
    /// What the user typed (may be empty when [`Turn::resume`] carries a decision).
    pub input: String,
    /// Files attached to this turn.
    pub attachments: Vec<Attachment>,
    /// The answer to the question the previous turn asked.
    pub resume: Option<Resume>,
    /// The thread so far: earlier messages (this turn's input is not among them yet), the
    /// question asked last turn, and the agent's own [`ThreadContext::state`], which the agent
    /// may change and runway saves when the turn ends.
    pub context: ThreadContext,
    /// Absolute base URL this agent is reachable at (used for hosted-file links).
    pub public_base_url: String,
    /// This turn's HTTP client (see [`Turn::http`]).
    pub(crate) http: Http,
}

impl Turn {
    /// An HTTP client for calling models and APIs during this turn: requests end by the turn's
    /// deadline and when the turn ends, bodies stream as they arrive, and no URL or header
    /// value is logged. See [`Http`].
    pub fn http(&self) -> &Http {
        &self.http
    }

    /// True for Console's Test-button threads (`validate-<16 hex>`), kept only briefly.
    pub fn is_validation(&self) -> bool {
        crate::protocol::is_validation_thread(&self.thread_id)
    }
}

/// How the agent ended its turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The answer is complete.
    Done,
    /// The agent needs the user's decision before it goes on; the next turn carries it in
    /// [`Turn::resume`].
    Interrupt(Interrupt),
}

impl From<Interrupt> for Outcome {
    fn from(i: Interrupt) -> Self {
        Self::Interrupt(i)
    }
}

/// What [`Agent::run`] returns.
pub type AgentResult = Result<Outcome, AgentError>;

/// A failed turn. The user sees [`AgentError::user_message`] (a generic apology unless you set
/// one); the detail goes to the logs only.
///
/// Any `std::error::Error` converts into it with `?`. Like `anyhow::Error`, it does not itself
/// implement `std::error::Error` (that would conflict with the blanket conversion).
pub struct AgentError {
    user_message: Option<String>,
    detail: String,
}

impl AgentError {
    /// An error whose detail is logged; the user sees a generic apology.
    pub fn new(detail: impl fmt::Display) -> Self {
        Self {
            user_message: None,
            detail: detail.to_string(),
        }
    }

    /// An error with a message meant for the user.
    pub fn with_user_message(user_message: impl Into<String>, detail: impl fmt::Display) -> Self {
        Self {
            user_message: Some(user_message.into()),
            detail: detail.to_string(),
        }
    }

    /// What the user is shown.
    pub fn user_message(&self) -> &str {
        self.user_message
            .as_deref()
            .unwrap_or("Sorry, something went wrong while answering. Please try again.")
    }

    /// What is logged.
    pub fn detail(&self) -> &str {
        &self.detail
    }
}

impl fmt::Debug for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl fmt::Display for AgentError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.detail)
    }
}

impl<E: std::error::Error> From<E> for AgentError {
    fn from(e: E) -> Self {
        let mut detail = e.to_string();
        let mut source = e.source();
        while let Some(s) = source {
            detail.push_str(": ");
            detail.push_str(&s.to_string());
            source = s.source();
        }
        Self::new(detail)
    }
}

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
    /// things; return [`Outcome::Done`], or an [`Interrupt`] to ask the user something.
    fn run(&self, turn: &mut Turn, out: &Output) -> impl Future<Output = AgentResult> + MaybeSend;
}
