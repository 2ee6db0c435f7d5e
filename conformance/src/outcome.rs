//! How far a turn is read and how it ended: what the stream judge decides and every way of
//! playing a turn (live, recorded, the Test button) reports.

use serde::Serialize;

use crate::findings::Code;

/// How far to read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum ReadMode {
    /// Read the whole turn (to the final frame, then a short grace to catch
    /// frames sent after it).
    #[default]
    WholeTurn,
    /// The Test button: stop at the first valid frame.
    FirstValidFrame,
}

/// How the turn ended.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum TurnOutcome {
    /// `RUN_FINISHED` with `outcome.type = "success"`.
    Finished,
    /// `RUN_FINISHED` with a valid interrupt.
    Interrupted,
    /// `RUN_ERROR`.
    RunError {
        /// The agent's message.
        message: String,
    },
    /// The stream closed cleanly without a final frame (Console stores what
    /// arrived as complete).
    ClosedWithoutFinal,
    /// The Test button stopped at the first valid frame.
    StoppedAtFirstValidFrame,
    /// The client closed the connection before the final frame (Console's Stop; seen in
    /// recorded turns only).
    StoppedByClient,
    /// The turn failed with one of Console's error codes.
    Failed {
        /// The code.
        code: Code,
    },
}
