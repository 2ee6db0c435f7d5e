//! What is open in Console's stream and how it is closed: text and reasoning messages (each
//! stretch its own message, with ids runway makes), steps and tool calls; all of it closed
//! before the final frame ([`Writer::close_all`]).

use super::frame::Field;
use super::message_id::MessageId;
use super::writer::{Console, Dialect};
use crate::wire::json_text::escaped_pieces;
use crate::wire::writer::Writer;

impl Writer<Console> {
    /// Appends text to the current message, opening one if none is open.
    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() {
            return;
        }
        if self.enc.reasoning.is_some() {
            self.end_reasoning();
        }
        let id = match self.enc.text {
            Some(id) => id,
            // Whitespace alone does not open a message: it would be an empty bubble.
            None if delta.trim().is_empty() => return,
            None => {
                let id = self.new_message_id();
                if !self.emit(
                    "TEXT_MESSAGE_START",
                    &[
                        ("messageId", Field::Str(id.as_str())),
                        ("role", Field::Str("assistant")),
                    ],
                ) {
                    return;
                }
                self.enc.text = Some(id);
                if let Some(view) = &mut self.enc.view {
                    view.message_started(id.as_str(), "assistant");
                }
                if !self.answer.is_empty() {
                    self.keep_answer("\n\n");
                }
                id
            }
        };
        if self.emit_split("TEXT_MESSAGE_CONTENT", "messageId", id.as_str(), delta) {
            self.answered = true;
            self.keep_answer(delta);
            if let Some(view) = &mut self.enc.view {
                view.message_content(id.as_str(), delta);
            }
        }
    }

    /// Closes the current text message, so the next text starts a new one.
    pub fn end_text(&mut self) {
        if let Some(id) = self.enc.text.take() {
            self.emit(
                "TEXT_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            );
        }
    }

    /// Appends to the current reasoning message, opening one if none is open.
    pub fn reasoning(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() {
            return;
        }
        self.end_text();
        let id = match self.enc.reasoning {
            Some(id) => id,
            None => {
                let id = self.new_message_id();
                // AG-UI 1.0 wraps reasoning messages in a span; one span per message here.
                if self.enc.is_agui()
                    && !self.emit("REASONING_START", &[("messageId", Field::Str(id.as_str()))])
                {
                    return;
                }
                // AG-UI 1.0's role for reasoning; Console reads only `messageId`.
                if !self.emit(
                    "REASONING_MESSAGE_START",
                    &[
                        ("messageId", Field::Str(id.as_str())),
                        ("role", Field::Str("reasoning")),
                    ],
                ) {
                    return;
                }
                self.enc.reasoning = Some(id);
                if let Some(view) = &mut self.enc.view {
                    view.message_started(id.as_str(), "reasoning");
                }
                id
            }
        };
        if self.emit_split("REASONING_MESSAGE_CONTENT", "messageId", id.as_str(), delta)
            && let Some(view) = &mut self.enc.view
        {
            view.message_content(id.as_str(), delta);
        }
    }

    /// Closes the current reasoning message.
    pub fn end_reasoning(&mut self) {
        if let Some(id) = self.enc.reasoning.take()
            && self.emit(
                "REASONING_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            )
            && self.enc.is_agui()
        {
            self.emit("REASONING_END", &[("messageId", Field::Str(id.as_str()))]);
        }
    }

    /// Opens a named step.
    pub fn step_started(&mut self, name: &str) {
        if self.is_finished() {
            return;
        }
        if self.emit("STEP_STARTED", &[("stepName", Field::Str(name))]) {
            self.enc.steps.push(name.to_owned());
        }
    }

    /// Closes the most recent open step with this name; unknown names are ignored.
    pub fn step_finished(&mut self, name: &str) {
        if self.is_finished() {
            return;
        }
        // Index 0 is runway's own step: the agent cannot close it early.
        if let Some(pos) = self.enc.steps.iter().skip(1).rposition(|s| s == name) {
            self.enc.steps.remove(pos + 1);
            self.emit("STEP_FINISHED", &[("stepName", Field::Str(name))]);
        }
    }

    /// Starts a tool call. Closes the current text stretch first: text after the call is a
    /// new message.
    pub fn tool_call_start(&mut self, id: &str, name: &str) {
        if self.is_finished() || self.enc.tools_seen.contains(id) {
            return;
        }
        self.end_text();
        self.end_reasoning();
        if self.emit(
            "TOOL_CALL_START",
            &[
                ("toolCallId", Field::Str(id)),
                ("toolCallName", Field::Str(name)),
            ],
        ) {
            self.enc.tools.push(id.to_owned());
            self.enc.tools_seen.insert(id.to_owned());
            if let Some(view) = &mut self.enc.view {
                view.tool_call_started(id, name);
            }
        }
    }

    /// Starts a call of a tool the client runs: a tool call like any other, which the run (in
    /// the AG-UI dialect) leaves pending for the client unless a result for it follows.
    pub fn client_tool_call_start(&mut self, id: &str, name: &str) {
        let seen = self.enc.tools_seen.contains(id);
        self.tool_call_start(id, name);
        if !seen && self.enc.is_agui() && self.enc.tools_seen.contains(id) {
            self.client_calls.push(id.to_owned());
        }
    }

    /// Streams part of a tool call's arguments (a string, typically JSON text).
    pub fn tool_call_args(&mut self, id: &str, delta: &str) {
        if self.is_finished() || delta.is_empty() || !self.enc.tools.iter().any(|t| t == id) {
            return;
        }
        if self.emit_split("TOOL_CALL_ARGS", "toolCallId", id, delta)
            && let Some(view) = &mut self.enc.view
        {
            view.tool_call_args(id, delta);
        }
    }

    /// Ends a tool call's arguments.
    pub fn tool_call_end(&mut self, id: &str) {
        if self.is_finished() {
            return;
        }
        if let Some(pos) = self.enc.tools.iter().position(|t| t == id) {
            self.enc.tools.remove(pos);
            self.emit("TOOL_CALL_END", &[("toolCallId", Field::Str(id))]);
        }
    }

    /// Sends a tool call's result. Ends the call first if it is still open. An oversized
    /// result is truncated rather than failing the turn.
    pub fn tool_call_result(&mut self, id: &str, content: &str) {
        if self.is_finished() || !self.enc.tools_seen.contains(id) {
            return;
        }
        self.tool_call_end(id);
        // Answered here: not left for the client.
        self.client_calls.retain(|c| c != id);
        let message_id = format!("{id}-result");
        let fields = |content| {
            [
                ("toolCallId", Field::Str(id)),
                ("messageId", Field::Str(&message_id)),
                ("role", Field::Str("tool")),
                ("content", Field::Str(content)),
            ]
        };
        let budget = self.frame_budget("TOOL_CALL_RESULT", &fields(""));
        let mut pieces = escaped_pieces(content, budget.saturating_sub(16));
        let truncated;
        let content = match (pieces.next(), pieces.next()) {
            (None, _) => "",
            (Some(only), None) => only,
            (Some(first), Some(_)) => {
                truncated = format!("{first}…[truncated]");
                &truncated
            }
        };
        if self.emit("TOOL_CALL_RESULT", &fields(content))
            && let Some(view) = &mut self.enc.view
        {
            view.tool_result(id, &message_id, content);
        }
    }

    /// Closes everything open without limit checks: the reserve kept by [`Writer::keep_frame`]
    /// guarantees the room.
    pub(super) fn close_all(&mut self) {
        if let Some(id) = self.enc.text.take() {
            self.push_unchecked(
                "TEXT_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            );
        }
        if let Some(id) = self.enc.reasoning.take() {
            self.push_unchecked(
                "REASONING_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            );
            if self.enc.is_agui() {
                self.push_unchecked("REASONING_END", &[("messageId", Field::Str(id.as_str()))]);
            }
        }
        for id in std::mem::take(&mut self.enc.tools) {
            self.push_unchecked("TOOL_CALL_END", &[("toolCallId", Field::Str(&id))]);
        }
        for name in std::mem::take(&mut self.enc.steps).iter().rev() {
            self.push_unchecked("STEP_FINISHED", &[("stepName", Field::Str(name))]);
        }
    }

    fn new_message_id(&mut self) -> MessageId {
        self.enc.next_message += 1;
        match &self.enc.dialect {
            Dialect::Agui { run_tag, .. } => MessageId::tagged(self.enc.next_message, run_tag),
            Dialect::Console => MessageId::new(self.enc.next_message),
        }
    }
}
