//! A model call that failed, and what the user is told then.

use std::time::Duration;

/// A model call that failed.
pub(super) enum RoundError {
    /// Nothing reached the user yet: worth another attempt.
    Retryable {
        detail: String,
        retry_after: Option<Duration>,
    },
    /// Give up: the user gets `user`.
    Fatal { user: &'static str, detail: String },
}

pub(super) const UNAVAILABLE: &str =
    "The model is not available right now. Please try again in a moment.";
pub(super) const CUT_OFF: &str = "The model's answer was cut off. Please try again.";
pub(super) const REFUSED: &str = "The agent could not get an answer from its model.";
pub(super) const TOO_LONG: &str = "The model's answer was too long, so it was stopped.";
