//! Rule 9, at the final frame: everything opened is closed (`FRAMES_LEFT_OPEN`), a successful
//! turn shows something (`EMPTY_BUBBLE`), an interrupt is one Console can build a question card
//! from (`INTERRUPT_REJECTED`, the turn fails), and the answer comes after the last tool call.

use serde_json::{Map, Value};

use super::{Disposition, FinalFrame, FrameRules, Out};
use crate::findings::Code;
use crate::interrupt::validate_interrupt_outcome;

impl FrameRules {
    pub(super) fn run_finished(
        &mut self,
        at: &str,
        frame: &Map<String, Value>,
        out: &mut Out,
    ) -> Disposition {
        let outcome = frame.get("outcome").cloned().unwrap_or(Value::Null);
        match outcome.get("type").and_then(Value::as_str) {
            Some("success") => {
                self.close_check(at, out);
                if !self.visible {
                    out.push(
                        Code::EmptyBubble,
                        format!("{at}: a successful turn with nothing to show: when there is nothing to say, send RUN_ERROR"),
                    );
                }
                self.final_frame = Some(FinalFrame::Success);
                Disposition::Final
            }
            Some("interrupt") => match validate_interrupt_outcome(&outcome) {
                Ok(()) => {
                    self.close_check(at, out);
                    self.final_frame = Some(FinalFrame::Interrupt(outcome));
                    Disposition::Final
                }
                Err(reason) => {
                    out.push(
                        Code::InterruptRejected,
                        format!("{at}: the question card cannot be built: {reason}"),
                    );
                    self.failed = true;
                    Disposition::Fatal(Code::InterruptRejected)
                }
            },
            other => {
                out.push(
                    Code::MalformedFrame,
                    format!(
                        "{at}: outcome.type must be \"success\" or \"interrupt\", got {}: dropped",
                        other
                            .map(|t| format!("{t:?}"))
                            .unwrap_or_else(|| "nothing".into())
                    ),
                );
                Disposition::Dropped
            }
        }
    }

    /// Checks, at the final frame, that everything opened was closed and
    /// that the answer came after the last tool call.
    /// `RUN_ERROR` with `message`: the final frame.
    pub(super) fn run_error(&mut self, at: &str, message: String, out: &mut Out) -> Disposition {
        self.close_check(at, out);
        self.final_frame = Some(FinalFrame::Error(message));
        Disposition::Final
    }

    fn close_check(&mut self, at: &str, out: &mut Out) {
        let open = self.open_summary();
        if !open.is_empty() {
            out.push(
                Code::FramesLeftOpen,
                format!("{at}: still open at the final frame: {open} (Console closes them, but never invents a TOOL_CALL_RESULT)"),
            );
        }
        if let (Some(text), Some(tool)) = (self.last_text_start, self.last_tool_start)
            && tool > text
        {
            out.push(
                Code::Ordering,
                format!("{at}: the last tool call (frame #{tool}) comes after the answer (frame #{text}): a tool call has to come before the answer that references it"),
            );
        }
    }

    /// What is still open, for a finding (empty if nothing is).
    pub(super) fn open_summary(&self) -> String {
        let mut parts = Vec::new();
        for (what, ids) in [
            ("TEXT_MESSAGE_START", &self.open_messages),
            ("TOOL_CALL_START", &self.open_tools),
            ("STEP_STARTED", &self.open_steps),
            ("REASONING_MESSAGE_START", &self.open_reasoning),
        ] {
            if !ids.is_empty() {
                parts.push(format!("{what} {}", ids.join(", ")));
            }
        }
        parts.join("; ")
    }
}
