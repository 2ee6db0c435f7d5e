//! Errors the core reports to adapters, and the one an agent ends its turn with
//! ([`AgentError`]).

use std::fmt;

/// A request the agent refuses with HTTP 400 and `{"error": message}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct BadRequest {
    message: String,
}

impl BadRequest {
    /// A refusal with a message safe to show the caller.
    pub fn new(message: impl Into<String>) -> Self {
        Self {
            message: message.into(),
        }
    }

    /// The message.
    pub fn message(&self) -> &str {
        &self.message
    }
}

/// A storage backend failure. The turn that meets one ends with `RUN_ERROR`, never a silent
/// success, and `/health` reports `degraded` for a while.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum StoreError {
    /// The backend could not be reached or answered with an error; worth retrying later.
    #[error("store unavailable: {0}")]
    Unavailable(String),
    /// The backend refused the request because of load, after the adapter's own retries.
    #[error("store throttled: {0}")]
    Throttled(String),
    /// Stored data could not be decoded.
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
    /// The item is larger than the backend can hold.
    #[error("item too large for the store: {0}")]
    TooLarge(String),
}

/// An error code carried in `RUN_ERROR.code` and logged with every line about a failed turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TurnErrorCode {
    /// The agent returned an error.
    AgentError,
    /// The agent panicked.
    AgentPanic,
    /// The agent ran past the turn deadline.
    TurnDeadline,
    /// The answer would cross Console's frame or stream limits.
    LimitExceeded,
    /// The agent asked an invalid question.
    InterruptInvalid,
    /// The agent finished with nothing to say.
    EmptyAnswer,
    /// The store failed before or after the agent ran.
    StoreUnavailable,
    /// The `runId` was already used with a different body.
    RunIdReused,
    /// The client went away.
    Cancelled,
    /// The agent's state did not fit the store.
    StateTooLarge,
    /// A newer turn on the same thread took over (or a retry of this run took its claim
    /// over): this one was stopped and recorded as interrupted.
    Superseded,
    /// A repeated delivery of a run that finished, whose recording was not kept (recordings
    /// were at their memory bound while it ran): the agent is not run again.
    ReplayUnavailable,
    /// A turns-per-minute limit of the workspace or worker refused the turn.
    RateLimited,
    /// A token or spend limit refused the turn, or stopped it mid-way.
    QuotaExceeded,
    /// The thread belongs to another workspace (the one that started it): the turn was
    /// refused before anything ran.
    ThreadOtherWorkspace,
    /// AG-UI: the thread has an open question and this run does not answer it (`resume[]`
    /// missing, or not naming it): refused before anything ran, the question still open.
    InterruptPending,
    /// AG-UI: `resume[]` names an interrupt that is not open on the thread (answered already,
    /// or never asked): refused before anything ran.
    ResumeUnmatched,
    /// AG-UI: a `tool` message answers a call that is not pending for the client on the
    /// thread (never made, answered already, or a call runway ran itself): refused before
    /// anything ran.
    ToolResultUnmatched,
}

impl TurnErrorCode {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::AgentError => "AGENT_ERROR",
            Self::AgentPanic => "AGENT_PANIC",
            Self::TurnDeadline => "TURN_DEADLINE",
            Self::LimitExceeded => "LIMIT_EXCEEDED",
            Self::InterruptInvalid => "INTERRUPT_INVALID",
            Self::EmptyAnswer => "EMPTY_ANSWER",
            Self::StoreUnavailable => "STORE_UNAVAILABLE",
            Self::RunIdReused => "RUN_ID_REUSED",
            Self::Cancelled => "CANCELLED",
            Self::StateTooLarge => "STATE_TOO_LARGE",
            Self::Superseded => "SUPERSEDED",
            Self::ReplayUnavailable => "REPLAY_UNAVAILABLE",
            Self::RateLimited => "RATE_LIMITED",
            Self::QuotaExceeded => "QUOTA_EXCEEDED",
            Self::ThreadOtherWorkspace => "THREAD_OTHER_WORKSPACE",
            Self::InterruptPending => "INTERRUPT_PENDING",
            Self::ResumeUnmatched => "RESUME_UNMATCHED",
            Self::ToolResultUnmatched => "TOOL_RESULT_UNMATCHED",
        }
    }
}

impl TurnErrorCode {
    /// What the user is told when a turn ends with this code: the `RUN_ERROR` frame's
    /// `message`, or the content of Lowkey's `error` line. The one table of these texts; an
    /// agent's own error may carry its own ([`crate::AgentError::with_user_message`]).
    pub const fn user_message(self) -> &'static str {
        match self {
            Self::AgentError | Self::AgentPanic => {
                "Sorry, something went wrong while answering. Please try again."
            }
            Self::TurnDeadline => "The agent took too long to answer.",
            Self::LimitExceeded => "The answer was too long and has been cut short.",
            Self::InterruptInvalid => "The agent could not ask its question.",
            Self::EmptyAnswer => "The agent finished without an answer.",
            Self::StoreUnavailable => {
                "The agent's storage is unavailable right now. Please try again."
            }
            Self::RunIdReused => "This turn id was already used for a different request.",
            Self::Cancelled => "The turn was cancelled.",
            Self::StateTooLarge => "The agent could not remember this conversation.",
            Self::Superseded => "Another request on this conversation took over from this one.",
            Self::ReplayUnavailable => {
                "This message was already answered, but the answer was too long to keep for a \
                 repeat. Please ask again."
            }
            Self::RateLimited => "Too many messages right now. Please try again in a minute.",
            // runway's own refusals name the limit and its reset (`meter::budget`); this is the
            // text of an agent's own `QUOTA_EXCEEDED` without a message.
            Self::QuotaExceeded => "A usage limit has been reached. Please try again later.",
            Self::ThreadOtherWorkspace => {
                "This conversation belongs to another workspace. Please start a new conversation."
            }
            Self::InterruptPending => {
                "The agent is waiting for an answer to its question: answer it first."
            }
            Self::ResumeUnmatched => "That answer is for a question that is not open.",
            Self::ToolResultUnmatched => {
                "That tool result answers a call the agent is not waiting for."
            }
        }
    }
}

impl TurnErrorCode {
    /// Whether a turn ending with this code was refused before its input reached the thread:
    /// its commit leaves the thread as it was (no message, the open question still open).
    pub const fn leaves_thread_unchanged(self) -> bool {
        matches!(
            self,
            Self::InterruptPending | Self::ResumeUnmatched | Self::ToolResultUnmatched
        )
    }
}

impl fmt::Display for TurnErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A failed turn. The user sees [`AgentError::user_message`] (a generic apology unless you set
/// one); the detail goes to the logs only.
///
/// Any `std::error::Error` converts into it with `?`. Like `anyhow::Error`, it does not itself
/// implement `std::error::Error` (that would conflict with the blanket conversion).
pub struct AgentError {
    user_message: Option<String>,
    detail: String,
    /// The `RUN_ERROR` code, when not `AGENT_ERROR` (a turn stopped by its budget).
    code: Option<TurnErrorCode>,
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
    pub(crate) fn with_code(mut self, code: TurnErrorCode) -> Self {
        self.code = Some(code);
        self
    }

    /// The `RUN_ERROR` code this error ends the turn with, when it is not `AGENT_ERROR`.
    pub fn code(&self) -> Option<TurnErrorCode> {
        self.code
    }

    /// What the user is shown.
    pub fn user_message(&self) -> &str {
        self.user_message
            .as_deref()
            .unwrap_or(TurnErrorCode::AgentError.user_message())
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
