//! How an agent ends its turn: [`Outcome`], or an [`AgentError`].

use std::fmt;

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

/// A failed turn. The user sees [`AgentError::user_message`] (a generic apology unless you set
/// one); the detail goes to the logs only.
///
/// Any `std::error::Error` converts into it with `?`. Like `anyhow::Error`, it does not itself
/// implement `std::error::Error` (that would conflict with the blanket conversion).
pub struct AgentError {
    user_message: Option<String>,
    detail: String,
    /// The `RUN_ERROR` code, when not `AGENT_ERROR` (a turn stopped by its budget).
    code: Option<crate::error::TurnErrorCode>,
}

impl AgentError {
    /// An error whose detail is logged; the user sees a generic apology.
    pub fn new(detail: impl fmt::Display) -> Self {
        Self {
            user_message: None,
            detail: detail.to_string(),
            code: None,
        }
    }

    /// An error with a message meant for the user.
    pub fn with_user_message(user_message: impl Into<String>, detail: impl fmt::Display) -> Self {
        Self {
            user_message: Some(user_message.into()),
            detail: detail.to_string(),
            code: None,
        }
    }

    /// The same error, ending the turn with `code` instead of `AGENT_ERROR`.
    pub(crate) fn with_code(mut self, code: crate::error::TurnErrorCode) -> Self {
        self.code = Some(code);
        self
    }

    /// The `RUN_ERROR` code this error ends the turn with, when it is not `AGENT_ERROR`.
    pub fn code(&self) -> Option<crate::error::TurnErrorCode> {
        self.code
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
