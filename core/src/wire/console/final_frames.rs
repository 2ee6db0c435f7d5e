//! How Console's stream ends: `RUN_FINISHED` (success, or an interrupt in Console's or
//! AG-UI's shape) or `RUN_ERROR`, with the run's token usage in the AG-UI dialect; the frames
//! that end a stream if the process dies (the abort tail); and the end of a replay that has no
//! recording.

use serde_json::{Map, Value, json};

use super::frame::{Field, encode};
use super::writer::{Console, TURN_STEP};
use crate::error::TurnErrorCode;
use crate::protocol::agui::{TokenUsage, interrupt_id};
use crate::protocol::{Ending, LogId};
use crate::wire::writer::Writer;

impl Console {
    /// `RUN_FINISHED` with `outcome`; AG-UI 1.0 requires the run's `threadId` and `runId` on it
    /// (in both dialects: Console accepts its own `threadId` and does not read `runId`), and
    /// takes the run's token usage (`usage[]`, when there is any; AG-UI dialect only).
    fn run_finished(&mut self, out: &mut String, outcome: Field<'_>, usage: &[TokenUsage]) {
        let usage = if self.is_agui() {
            usage_json(usage)
        } else {
            None
        };
        let mut fields = Vec::with_capacity(4);
        if let Some(thread_id) = &self.thread_id {
            fields.push(("threadId", Field::Str(thread_id)));
        }
        fields.push(("runId", Field::Str(&self.run_id)));
        fields.push(("outcome", outcome));
        if let Some(usage) = &usage {
            fields.push(("usage", Field::Json(usage)));
        }
        encode(out, self.event_prefix(), self.seq, "RUN_FINISHED", &fields);
        self.seq += 1;
    }

    /// `RUN_ERROR`; in the AG-UI dialect with the run's token usage (`usage[]`), when there is
    /// any.
    fn error_frame(
        &mut self,
        out: &mut String,
        code: TurnErrorCode,
        message: &str,
        usage: &[TokenUsage],
    ) {
        let usage = if self.is_agui() {
            usage_json(usage)
        } else {
            None
        };
        let mut fields = vec![
            ("message", Field::Str(message)),
            ("code", Field::Str(code.as_str())),
        ];
        if let Some(usage) = &usage {
            fields.push(("usage", Field::Json(usage)));
        }
        self.encode_next(out, "RUN_ERROR", &fields);
    }
}

/// AG-UI's `usage[]` of `usage`; `None` when empty (the field is left out).
fn usage_json(usage: &[TokenUsage]) -> Option<Value> {
    (!usage.is_empty()).then(|| Value::Array(usage.iter().map(TokenUsage::to_json).collect()))
}

impl Writer<Console> {
    /// The final frame for `ending` (everything open is closed already).
    pub(super) fn final_frame(&mut self, ending: &Ending) -> String {
        let w = self;
        let mut encoded = String::new();
        match ending {
            Ending::Success if w.enc.is_agui() && !w.client_calls.is_empty() => {
                let outcome = json!({"type": "success", "pendingToolCallIds": w.client_calls});
                w.enc
                    .run_finished(&mut encoded, Field::Json(&outcome), &w.usage);
            }
            Ending::Success => {
                w.enc
                    .run_finished(&mut encoded, Field::Raw("{\"type\":\"success\"}"), &w.usage)
            }
            Ending::Interrupt(i) => {
                let interrupt = if w.enc.is_agui() {
                    agui_interrupt(i.to_wire(), &w.enc.run_id)
                } else {
                    console_interrupt(i.to_wire(), &w.enc.run_id)
                };
                let outcome = json!({"type": "interrupt", "interrupts": [interrupt]});
                w.enc
                    .run_finished(&mut encoded, Field::Json(&outcome), &w.usage);
                // Encoded first so the snapshots leave room for it (no event ids in AG-UI:
                // the order of the sequence numbers does not show).
                w.snapshot_client_view(encoded.len());
            }
            Ending::Error { code, message } => {
                w.enc.error_frame(&mut encoded, *code, message, &w.usage);
            }
        }
        encoded
    }

    /// `RUN_ERROR` with `code`'s message for the user.
    /// AG-UI's interrupt rule: `STATE_SNAPSHOT` and `MESSAGES_SNAPSHOT` before the
    /// interrupting `RUN_FINISHED`, what the client holds now ([`ClientView`]). Each is sent
    /// only if it fits in a frame and leaves room for the final frame; a snapshot left out is
    /// logged (the client's own state and messages are still right: the snapshots repeat them).
    ///
    /// [`ClientView`]: super::client_view::ClientView
    fn snapshot_client_view(&mut self, final_bytes: usize) {
        let Some(view) = self.enc.view.take() else {
            return;
        };
        let (state, messages) = view.into_snapshots();
        match state {
            Some(state) => {
                let state = [("snapshot", Field::Json(&state))];
                self.push_if_fits("STATE_SNAPSHOT", &state, final_bytes);
            }
            None => {
                tracing::warn!(run_id = %LogId(&self.enc.run_id), "STATE_SNAPSHOT left out: a STATE_DELTA did not apply to the client's state");
            }
        }
        match messages {
            Some(messages) => {
                let messages = [("messages", Field::Json(&messages))];
                self.push_if_fits("MESSAGES_SNAPSHOT", &messages, final_bytes);
            }
            None => {
                tracing::warn!(run_id = %LogId(&self.enc.run_id), "MESSAGES_SNAPSHOT left out: the thread's messages outgrew a frame");
            }
        }
    }

    pub(super) fn run_error(&mut self, code: TurnErrorCode) -> String {
        let mut out = String::new();
        self.enc
            .error_frame(&mut out, code, code.user_message(), &self.usage);
        out
    }

    /// What ends the stream if the process dies now: everything open closed, then `RUN_ERROR`
    /// `code` (written into `out`; the writer does not change).
    pub(super) fn abort_frames(&self, out: &mut String, code: TurnErrorCode) {
        let w = self;
        let enc = &w.enc;
        let mut seq = enc.seq;
        let mut frame = |out: &mut String, ty: &str, fields: &[(&str, Field<'_>)]| {
            encode(out, enc.event_prefix(), seq, ty, fields);
            seq += 1;
        };
        if !w.is_finished() {
            if let Some(id) = &enc.text {
                frame(
                    out,
                    "TEXT_MESSAGE_END",
                    &[("messageId", Field::Str(id.as_str()))],
                );
            }
            if let Some(id) = &enc.reasoning {
                frame(
                    out,
                    "REASONING_MESSAGE_END",
                    &[("messageId", Field::Str(id.as_str()))],
                );
                if enc.is_agui() {
                    frame(
                        out,
                        "REASONING_END",
                        &[("messageId", Field::Str(id.as_str()))],
                    );
                }
            }
            for id in &enc.tools {
                frame(out, "TOOL_CALL_END", &[("toolCallId", Field::Str(id))]);
            }
            for name in enc.steps.iter().rev() {
                frame(out, "STEP_FINISHED", &[("stepName", Field::Str(name))]);
            }
        }
        frame(
            out,
            "RUN_ERROR",
            &[
                ("message", Field::Str(code.user_message())),
                ("code", Field::Str(code.as_str())),
            ],
        );
    }

    /// Closes the turn step, then `RUN_ERROR` `REPLAY_UNAVAILABLE`.
    pub(super) fn unrecorded_frames(&mut self) -> String {
        let w = self;
        let mut out = String::new();
        w.enc.encode_next(
            &mut out,
            "STEP_FINISHED",
            &[("stepName", Field::Str(TURN_STEP))],
        );
        let code = TurnErrorCode::ReplayUnavailable;
        w.enc.error_frame(&mut out, code, code.user_message(), &[]);
        out
    }
}

/// Console's interrupt (`kind`, `prompt`…) as an AG-UI 1.0 one: a stable `id` (one interrupt
/// per run, so the run's id names it), `reason` (the kind), `message` (the prompt),
/// `responseSchema` (the `resume[].payload` the client sends back is Console's resume object,
/// restricted to the decisions this kind takes), and the rest of Console's fields (`options`,
/// `items`, `provider`, `authorizeUrl`) in `metadata`: the official client strips any field
/// AG-UI does not define.
fn agui_interrupt(console: Value, run_id: &str) -> Value {
    let Value::Object(mut rest) = console else {
        return console;
    };
    let kind = match rest.remove("kind") {
        Some(Value::String(k)) => k,
        _ => String::new(),
    };
    let decisions: &[&str] = match kind.as_str() {
        "approval" => &["approve", "reject"],
        "review" => &["approve", "reject", "edit"],
        "authorization" => &["authorized", "reject"],
        _ => &["respond", "reject"],
    };
    // A client that does not know the reason renders `message`, `responseSchema` and
    // `metadata`, where Console's `kind` stays.
    let reason = interrupt_reason(&kind);
    rest.insert("kind".into(), Value::String(kind));
    let mut interrupt = Map::new();
    interrupt.insert("id".into(), Value::String(interrupt_id(run_id)));
    interrupt.insert("reason".into(), Value::String(reason));
    if let Some(Value::String(prompt)) = rest.remove("prompt") {
        interrupt.insert("message".into(), Value::String(prompt));
    }
    interrupt.insert(
        "responseSchema".into(),
        json!({
            "type": "object",
            "required": ["decision"],
            "properties": {
                "decision": {"enum": decisions},
                "message": {"type": "string"},
                "answers": {"type": "array"},
                "editedAction": {"type": ["object", "array"]}
            }
        }),
    );
    interrupt.insert("metadata".into(), Value::Object(rest));
    Value::Object(interrupt)
}

/// An interrupt's AG-UI `reason` for Console's `kind`: AG-UI's core reasons where one fits (a
/// yes/no, structured input); runway's own, namespaced as AG-UI asks, otherwise.
fn interrupt_reason(kind: &str) -> String {
    match kind {
        "approval" => "confirmation".to_owned(),
        "input" | "choice" => "input_required".to_owned(),
        other => format!("runway:{other}"),
    }
}

/// Console's interrupt as Console reads it (`kind`, `prompt`, `options`, `items`, `provider`,
/// `authorizeUrl`), plus the two fields AG-UI 1.0 requires of every interrupt: `id` (one
/// question per run, so the run's id names it) and `reason`. Console reads neither.
fn console_interrupt(console: Value, run_id: &str) -> Value {
    let Value::Object(mut fields) = console else {
        return console;
    };
    let reason = interrupt_reason(fields.get("kind").and_then(Value::as_str).unwrap_or(""));
    fields.insert("id".into(), Value::String(interrupt_id(run_id)));
    fields.insert("reason".into(), Value::String(reason));
    Value::Object(fields)
}
