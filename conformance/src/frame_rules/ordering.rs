//! Rule 7, ordering: a stretch of text closes before a tool call, content comes only for an
//! open message (text, reasoning, tool call), ids are unique within the turn, and steps close
//! by name; every other type is handed to its rule (state and files, the final frame).

use serde_json::{Map, Value};

use super::{Disposition, FrameRules, Message, Out};
use crate::findings::Code;

impl FrameRules {
    /// Applies a frame that passed the validity rules (see `validity.rs`).
    pub(super) fn apply(
        &mut self,
        index: usize,
        at: &str,
        frame_type: &str,
        frame: &Map<String, Value>,
        out: &mut Out,
    ) -> Disposition {
        let s = |k: &str| {
            frame
                .get(k)
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_owned()
        };
        match frame_type {
            "TEXT_MESSAGE_START" => {
                let id = s("messageId");
                if self.open_messages.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: message {id:?} is already open"),
                    );
                } else if self.seen_messages.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: messageId {id:?} reused within the turn: each stretch of text is its own message"),
                    );
                }
                if !self.open_tools.is_empty() {
                    out.push(
                        Code::Ordering,
                        format!(
                            "{at}: text starts while tool call(s) {} are still open",
                            self.open_tools.join(", ")
                        ),
                    );
                }
                self.open_messages.push(id.clone());
                self.seen_messages.insert(id.clone());
                self.messages.push(Message {
                    id,
                    text: String::new(),
                });
                self.last_text_start = Some(index);
            }
            "TEXT_MESSAGE_CONTENT" => {
                let id = s("messageId");
                if !self.open_messages.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: content for message {id:?}, which is not open (text after a tool call belongs to a new message)"),
                    );
                }
                let delta = s("delta");
                if !delta.trim().is_empty() {
                    self.visible = true;
                }
                match self.messages.iter_mut().rev().find(|m| m.id == id) {
                    Some(m) => m.text.push_str(&delta),
                    None => self.messages.push(Message { id, text: delta }),
                }
            }
            "TEXT_MESSAGE_END" => {
                let id = s("messageId");
                if let Some(pos) = self.open_messages.iter().position(|m| *m == id) {
                    self.open_messages.remove(pos);
                    let empty = self
                        .messages
                        .iter()
                        .rev()
                        .find(|m| m.id == id)
                        .is_none_or(|m| m.text.trim().is_empty());
                    if empty {
                        out.push(
                            Code::EmptyBubble,
                            format!("{at}: message {id:?} ended without any content but whitespace: the user sees an empty bubble"),
                        );
                    }
                } else {
                    out.push(Code::Ordering, format!("{at}: message {id:?} is not open"));
                }
            }
            "TOOL_CALL_START" => {
                let id = s("toolCallId");
                if !self.open_messages.is_empty() {
                    out.push(
                        Code::Ordering,
                        format!(
                            "{at}: text message(s) {} still open: a stretch of text closes before the next tool call",
                            self.open_messages.join(", ")
                        ),
                    );
                }
                if self.seen_tools.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: toolCallId {id:?} reused within the turn"),
                    );
                }
                self.open_tools.push(id.clone());
                self.seen_tools.insert(id);
                self.last_tool_start = Some(index);
                self.visible = true;
            }
            "TOOL_CALL_ARGS" => {
                let id = s("toolCallId");
                if !self.open_tools.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: tool call {id:?} is not open"),
                    );
                }
            }
            "TOOL_CALL_END" => {
                let id = s("toolCallId");
                match self.open_tools.iter().position(|t| *t == id) {
                    Some(pos) => {
                        self.open_tools.remove(pos);
                    }
                    None => out.push(
                        Code::Ordering,
                        format!("{at}: tool call {id:?} is not open"),
                    ),
                }
            }
            "TOOL_CALL_RESULT" => {
                let id = s("toolCallId");
                if !self.seen_tools.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: result for tool call {id:?}, which never started"),
                    );
                } else if self.open_tools.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: result for tool call {id:?} before its TOOL_CALL_END"),
                    );
                }
            }
            "STEP_STARTED" => self.open_steps.push(s("stepName")),
            "STEP_FINISHED" => {
                let name = s("stepName");
                match self.open_steps.iter().rposition(|n| *n == name) {
                    Some(pos) => {
                        self.open_steps.remove(pos);
                    }
                    None => out.push(
                        Code::Ordering,
                        format!("{at}: step {name:?} was not started"),
                    ),
                }
            }
            "REASONING_MESSAGE_START" => self.open_reasoning.push(s("messageId")),
            "REASONING_MESSAGE_CONTENT" => {
                let id = s("messageId");
                if !self.open_reasoning.contains(&id) {
                    out.push(
                        Code::Ordering,
                        format!("{at}: reasoning message {id:?} is not open"),
                    );
                }
            }
            "REASONING_MESSAGE_END" => {
                let id = s("messageId");
                match self.open_reasoning.iter().position(|r| *r == id) {
                    Some(pos) => {
                        self.open_reasoning.remove(pos);
                    }
                    None => out.push(
                        Code::Ordering,
                        format!("{at}: reasoning message {id:?} is not open"),
                    ),
                }
            }
            "ACTIVITY_SNAPSHOT" | "ACTIVITY_DELTA" => self.visible = true,
            "STATE_SNAPSHOT" => self.state_snapshot(at, frame, out),
            "STATE_DELTA" => self.state_delta(at, frame.get("delta").unwrap_or(&Value::Null), out),
            "CUSTOM" => self.custom(at, frame, out),
            "RUN_FINISHED" => return self.run_finished(at, frame, out),
            "RUN_ERROR" => return self.run_error(at, s("message"), out),
            _ => {}
        }
        Disposition::Accepted
    }
}
