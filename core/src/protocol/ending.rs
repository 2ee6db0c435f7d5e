//! [`Ending`]: how a turn ends, as every protocol reports it (Console's and AG-UI's
//! `RUN_FINISHED` / `RUN_ERROR`, Lowkey's final status) and as the meter counts it.

use crate::error::TurnErrorCode;
use crate::protocol::Interrupt;

/// How a turn ends.
#[derive(Debug, Clone, PartialEq)]
pub enum Ending {
    /// The agent answered.
    Success,
    /// The agent asks the user a question.
    Interrupt(Interrupt),
    /// The turn failed; `message` is shown to the user.
    Error {
        /// Logged and sent as `RUN_ERROR.code`.
        code: TurnErrorCode,
        /// User-safe text.
        message: String,
    },
}

impl Ending {
    /// A failed ending with its own message (an agent's error says what to tell the user).
    pub fn error(code: TurnErrorCode, message: impl Into<String>) -> Self {
        Self::Error {
            code,
            message: message.into(),
        }
    }

    /// A failed ending with the message of [`TurnErrorCode::user_message`].
    pub fn failed(code: TurnErrorCode) -> Self {
        Self::error(code, code.user_message())
    }

    /// The code, if the turn failed.
    pub fn error_code(&self) -> Option<TurnErrorCode> {
        match self {
            Self::Error { code, .. } => Some(*code),
            _ => None,
        }
    }
}
