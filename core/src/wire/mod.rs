//! The sans-I/O writers: what an agent says, as the bytes of a protocol.
//!
//! One [`writer::Writer`] keeps every protocol's stream right (limits, the held-back final
//! frame, the recording, keep-alives, the abort tail); each protocol supplies only its
//! encoding: Console's SSE frames ([`console`], [`crate::adapter::FrameWriter`]) or Lowkey's
//! NDJSON lines ([`lowkey`], [`crate::adapter::NdjsonWriter`]). The engine drives either the same
//! way.
//!
//! Beside them: the ledger of a turn's output and counts ([`ledger`]), the recording a replay
//! sends and its process-wide bound ([`recorder`], [`recording`]), and JSON string encoding
//! ([`json_text`]).

pub(crate) mod console;
pub(crate) mod json_text;
pub(crate) mod ledger;
pub(crate) mod lowkey;
pub(crate) mod recorder;
pub(crate) mod recording;
pub(crate) mod writer;

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
