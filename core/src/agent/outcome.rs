//! How an agent ends its turn: [`Outcome`], or an [`AgentError`] (`crate::error`).

use crate::error::AgentError;
use crate::protocol::Interrupt;

/// How the agent ended its turn.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// The answer is complete.
    Done,
    /// The agent needs the user's decision before it goes on; the next turn carries it in
    /// [`Turn::resume`](crate::Turn::resume).
    Interrupt(Interrupt),
}

impl From<Interrupt> for Outcome {
    fn from(i: Interrupt) -> Self {
        Self::Interrupt(i)
    }
}

/// What [`Agent::run`](crate::Agent::run) returns.
pub type AgentResult = Result<Outcome, AgentError>;
