//! A wire protocol's writer, as the engine drives it.
//!
//! The engine is written once; each protocol supplies a sans-I/O writer that turns
//! [`AgentEvent`]s into its own bytes: Console's SSE frames ([`crate::adapter::FrameWriter`]) or
//! Lowkey's NDJSON events.

pub(crate) mod console;
pub(crate) mod json_text;
pub(crate) mod ledger;
pub(crate) mod lowkey;
pub(crate) mod recorder;
pub(crate) mod recording;

use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::platform::maybe_send::MaybeSend;
use crate::protocol::Interrupt;

/// A protocol writer for one turn.
pub trait Wire: MaybeSend + 'static {
    /// Content type of the response body.
    const CONTENT_TYPE: &'static str;

    /// Writes the first bytes, before any store or agent work.
    fn start(&mut self);
    /// Writes a keep-alive after a silence.
    fn heartbeat(&mut self);
    /// Renders one agent event. [`AgentEvent::File`] never reaches a wire: the engine hosts
    /// the file and passes an [`AgentEvent::Artifact`] instead.
    fn apply(&mut self, event: AgentEvent);
    /// Ends the turn; the final bytes are held back in [`Wire::take_final`].
    fn finish(&mut self, ending: Ending);
    /// Bytes ready to send.
    fn take_output(&mut self) -> String;
    /// The held-back final bytes, once finished.
    fn take_final(&mut self) -> Option<String>;
    /// How the turn ended, once it has (a limit can end it early).
    fn ending(&self) -> Option<&Ending>;
    /// Takes what a replay of this turn sends after the first bytes, once it has finished
    /// (moved out, not copied: see `crate::wire::recorder` for a recording that was not kept).
    fn take_recording(&mut self) -> String;
    /// The text the user saw.
    fn answer(&self) -> &str;
    /// Final bytes reporting an error, sent instead of the held-back final ones when the turn
    /// could not be committed.
    fn replacement_error(&mut self, code: TurnErrorCode, message: &str) -> String;
    /// Bytes that would end the stream now with an error, after everything taken so far
    /// (empty once the final bytes were taken or replaced). The writer is unchanged.
    fn abort_tail(&self, code: TurnErrorCode, message: &str) -> String;
}

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
    /// A failed ending.
    pub fn error(code: TurnErrorCode, message: impl Into<String>) -> Self {
        Self::Error {
            code,
            message: message.into(),
        }
    }
}
