//! The frame writer: a sans-I/O state machine that turns what an agent says into a stream
//! Console accepts, whatever the agent does.
//!
//! Feed it agent output; drain encoded bytes with [`FrameWriter::take_output`]. It guarantees:
//! - the first frame is `STEP_STARTED` ([`FrameWriter::start`]), produced before anything else;
//! - each stretch of text is its own message, opened lazily on the first delta that is not
//!   only whitespace (so there is never an empty bubble) and closed before a tool call or
//!   reasoning starts;
//! - everything opened (text, reasoning, tool calls, steps) is closed before the final frame;
//! - exactly one final frame, `RUN_FINISHED` or `RUN_ERROR`, and nothing after it;
//! - never `RUN_STARTED` or `REASONING_END` (there is no way to ask for them);
//! - no frame over the frame limit: text and tool-argument deltas are split, an oversized tool
//!   result is truncated, any other oversized frame ends the turn with `RUN_ERROR`;
//! - the stream ends with `RUN_ERROR` before the stream-byte or frame-count limit is crossed:
//!   room for closing everything and the error frame is always held in reserve;
//! - `STATE_SNAPSHOT` / `STATE_DELTA` carry only `todos`, `artifacts` and `files`;
//! - a file is announced on one channel only (state `artifacts` or `CUSTOM` `file`);
//! - an interrupt is validated before it leaves: an invalid one becomes `RUN_ERROR`;
//! - a successful turn that produced no text ends with `RUN_ERROR` instead.
//!
//! The final frame is held back ([`FrameWriter::take_final`]) so the engine can commit the
//! turn to the store first and send `RUN_ERROR` instead if that fails.

use std::collections::HashSet;

use serde_json::{Map, Value, json};

use super::frame::{Field, encode};
use super::sse::HEARTBEAT;
use crate::error::TurnErrorCode;
use crate::protocol::Limits;
use crate::wire::Ending;
use crate::wire::json_text::escaped_pieces;
use crate::wire::ledger::Ledger;
use crate::wire::recorder::RecordPool;

/// State keys Console accepts in `STATE_SNAPSHOT` and `STATE_DELTA`.
pub const STATE_KEYS: [&str; 3] = ["todos", "artifacts", "files"];

/// The name of the step runway opens first and closes last.
pub const TURN_STEP: &str = "turn";

/// Bytes held back per open item so it can always be closed within the limits.
const CLOSE_RESERVE: usize = 384;
/// Bytes held back for the final frame.
const FINAL_RESERVE: usize = 1024;
/// Slack for the growing `event_id` sequence number in split frames.
const SPLIT_SLACK: usize = 32;

/// Summary of a finished turn, for logs and the thread's transcript.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// How it ended after the writer's own checks (an invalid interrupt became an error).
    pub ending: Ending,
}

/// The SSE frame writer for one turn of Console's protocol.
#[derive(Debug)]
pub struct FrameWriter {
    run_id: String,
    /// Every `event_id` is `{prefix}.{n}`: the prefix, JSON-escaped once.
    event_prefix: EscapedPrefix,
    limits: Limits,
    seq: u64,
    /// Output, recording, bytes and frames: the ledger Lowkey's writer keeps too.
    ledger: Ledger,
    /// The open text message's id.
    text: Option<MessageId>,
    /// The open reasoning message's id.
    reasoning: Option<MessageId>,
    tools: Vec<String>,
    tools_seen: HashSet<String>,
    steps: Vec<String>,
    next_message: u32,
    answer: String,
    answered: bool,
    artifacts: Vec<Value>,
    state_file_urls: HashSet<String>,
    custom_file_urls: HashSet<String>,
    final_frame: Option<String>,
    finished: Option<Finished>,
}

impl FrameWriter {
    /// A writer for the turn `run_id`.
    pub fn new(run_id: impl Into<String>, limits: Limits) -> Self {
        let run_id = run_id.into();
        Self {
            event_prefix: EscapedPrefix::new(&run_id),
            run_id,
            limits,
            seq: 0,
            ledger: Ledger::new(RecordPool::process()),
            text: None,
            reasoning: None,
            tools: Vec::new(),
            tools_seen: HashSet::new(),
            steps: Vec::new(),
            next_message: 0,
            answer: String::new(),
            answered: false,
            artifacts: Vec::new(),
            state_file_urls: HashSet::new(),
            custom_file_urls: HashSet::new(),
            final_frame: None,
            finished: None,
        }
    }

    /// Makes every `event_id` `{prefix}.{n}` instead of `{run_id}.{n}`. The service puts the
    /// request's fingerprint in it, so a replay (same body) repeats the original's ids while
    /// another request with the same `runId` (`RUN_ID_REUSED`) never collides with them.
    #[must_use]
    pub fn with_event_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.event_prefix = EscapedPrefix::new(&prefix.into());
        self
    }

    /// Counts this turn's recording in `pool` instead of the process's (tests).
    #[must_use]
    pub fn with_record_pool(mut self, pool: &'static RecordPool) -> Self {
        self.ledger.set_record_pool(pool);
        self
    }

    /// Writes the first frame, `STEP_STARTED`. It is not part of the recorded turn: a replay
    /// writes its own first frame at once and then the recording.
    pub fn start(&mut self) {
        debug_assert_eq!(self.seq, 0, "start() must come first");
        self.push_unchecked("STEP_STARTED", &[("stepName", Field::Str(TURN_STEP))]);
        self.steps.push(TURN_STEP.to_owned());
        self.ledger.start_recording();
    }

    /// Writes a heartbeat comment (counted against the stream limit, never recorded).
    pub fn heartbeat(&mut self) {
        if self.ledger.stream_bytes() + HEARTBEAT.len() + self.reserve_bytes()
            <= self.limits.max_stream_bytes
        {
            self.ledger.push_unrecorded(HEARTBEAT, 0);
        }
    }

    /// Appends text to the current message, opening one if none is open.
    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() {
            return;
        }
        if self.reasoning.is_some() {
            self.end_reasoning();
        }
        let id = match self.text {
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
                self.text = Some(id);
                if !self.answer.is_empty() {
                    crate::turn::flow::keep_answer(&mut self.answer, "\n\n");
                }
                id
            }
        };
        if self.emit_split("TEXT_MESSAGE_CONTENT", "messageId", id.as_str(), delta) {
            self.answered = true;
            crate::turn::flow::keep_answer(&mut self.answer, delta);
        }
    }

    /// Closes the current text message, so the next text starts a new one.
    pub fn end_text(&mut self) {
        if let Some(id) = self.text.take() {
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
        let id = match self.reasoning {
            Some(id) => id,
            None => {
                let id = self.new_message_id();
                if !self.emit(
                    "REASONING_MESSAGE_START",
                    &[
                        ("messageId", Field::Str(id.as_str())),
                        ("role", Field::Str("assistant")),
                    ],
                ) {
                    return;
                }
                self.reasoning = Some(id);
                id
            }
        };
        self.emit_split("REASONING_MESSAGE_CONTENT", "messageId", id.as_str(), delta);
    }

    /// Closes the current reasoning message.
    pub fn end_reasoning(&mut self) {
        if let Some(id) = self.reasoning.take() {
            self.emit(
                "REASONING_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            );
        }
    }

    /// Opens a named step.
    pub fn step_started(&mut self, name: &str) {
        if self.is_finished() {
            return;
        }
        if self.emit("STEP_STARTED", &[("stepName", Field::Str(name))]) {
            self.steps.push(name.to_owned());
        }
    }

    /// Closes the most recent open step with this name; unknown names are ignored.
    pub fn step_finished(&mut self, name: &str) {
        if self.is_finished() {
            return;
        }
        // Index 0 is runway's own step: the agent cannot close it early.
        if let Some(pos) = self.steps.iter().skip(1).rposition(|s| s == name) {
            self.steps.remove(pos + 1);
            self.emit("STEP_FINISHED", &[("stepName", Field::Str(name))]);
        }
    }

    /// Starts a tool call. Closes the current text stretch first: text after the call is a
    /// new message.
    pub fn tool_call_start(&mut self, id: &str, name: &str) {
        if self.is_finished() || self.tools_seen.contains(id) {
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
            self.tools.push(id.to_owned());
            self.tools_seen.insert(id.to_owned());
        }
    }

    /// Streams part of a tool call's arguments (a string, typically JSON text).
    pub fn tool_call_args(&mut self, id: &str, delta: &str) {
        if self.is_finished() || delta.is_empty() || !self.tools.iter().any(|t| t == id) {
            return;
        }
        self.emit_split("TOOL_CALL_ARGS", "toolCallId", id, delta);
    }

    /// Ends a tool call's arguments.
    pub fn tool_call_end(&mut self, id: &str) {
        if self.is_finished() {
            return;
        }
        if let Some(pos) = self.tools.iter().position(|t| t == id) {
            self.tools.remove(pos);
            self.emit("TOOL_CALL_END", &[("toolCallId", Field::Str(id))]);
        }
    }

    /// Sends a tool call's result. Ends the call first if it is still open. An oversized
    /// result is truncated rather than failing the turn.
    pub fn tool_call_result(&mut self, id: &str, content: &str) {
        if self.is_finished() || !self.tools_seen.contains(id) {
            return;
        }
        self.tool_call_end(id);
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
        self.emit("TOOL_CALL_RESULT", &fields(content));
    }

    /// `ACTIVITY_SNAPSHOT`.
    pub fn activity_snapshot(&mut self, message_id: &str, activity_type: &str, content: Value) {
        if self.is_finished() {
            return;
        }
        self.emit(
            "ACTIVITY_SNAPSHOT",
            &[
                ("messageId", Field::Str(message_id)),
                ("activityType", Field::Str(activity_type)),
                ("content", Field::Json(&content)),
            ],
        );
    }

    /// `ACTIVITY_DELTA` (a JSON Patch).
    pub fn activity_delta(&mut self, message_id: &str, patch: Value) {
        if self.is_finished() {
            return;
        }
        self.emit(
            "ACTIVITY_DELTA",
            &[
                ("messageId", Field::Str(message_id)),
                ("patch", Field::Json(&patch)),
            ],
        );
    }

    /// `STATE_SNAPSHOT`, keeping only the keys Console accepts. Nothing is sent if none remain.
    pub fn state_snapshot(&mut self, snapshot: Value) {
        if self.is_finished() {
            return;
        }
        let Value::Object(obj) = snapshot else {
            tracing::warn!(run_id = %self.run_id, "STATE_SNAPSHOT that is not an object dropped");
            return;
        };
        let mut kept: Map<String, Value> = obj
            .into_iter()
            .filter(|(k, _)| {
                let ok = STATE_KEYS.contains(&k.as_str());
                if !ok {
                    tracing::warn!(run_id = %self.run_id, key = %k, "state key Console drops removed");
                }
                ok
            })
            .collect();
        if let Some(Value::Array(items)) = kept.get_mut("artifacts") {
            items.retain(|a| self.claim_state_file(a));
        }
        if kept.is_empty() {
            return;
        }
        let snapshot = Value::Object(kept);
        self.emit("STATE_SNAPSHOT", &[("snapshot", Field::Json(&snapshot))]);
    }

    /// `STATE_DELTA` (a JSON Patch array), keeping only operations on accepted keys.
    pub fn state_delta(&mut self, patch: Value) {
        if self.is_finished() {
            return;
        }
        let Value::Array(ops) = patch else {
            tracing::warn!(run_id = %self.run_id, "STATE_DELTA that is not a JSON Patch array dropped");
            return;
        };
        let kept: Vec<Value> = ops
            .into_iter()
            .filter(|op| {
                let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                let key = path.trim_start_matches('/').split('/').next().unwrap_or("");
                STATE_KEYS.contains(&key)
            })
            .collect();
        if kept.is_empty() {
            return;
        }
        let delta = Value::Array(kept);
        self.emit("STATE_DELTA", &[("delta", Field::Json(&delta))]);
    }

    /// Announces a file the agent hosts: appended to this turn's `artifacts` and sent as a
    /// `STATE_SNAPSHOT` of them all. A URL already announced (on either channel) is not sent
    /// again: one file, one card.
    pub fn artifact(&mut self, artifact: Value) {
        if self.is_finished() || !self.claim_state_file(&artifact) {
            return;
        }
        self.artifacts.push(artifact);
        let artifacts = std::mem::take(&mut self.artifacts);
        self.emit(
            "STATE_SNAPSHOT",
            &[("snapshot", Field::Artifacts(&artifacts))],
        );
        self.artifacts = artifacts;
    }

    /// `CUSTOM` with `name` and `value`. A `file` whose URL was already sent as an artifact
    /// is dropped.
    pub fn custom(&mut self, name: &str, value: Value) {
        if self.is_finished() {
            return;
        }
        if name == "file"
            && let Some(url) = value.get("url").and_then(Value::as_str)
            && (self.state_file_urls.contains(url) || !self.custom_file_urls.insert(url.into()))
        {
            tracing::warn!(run_id = %self.run_id, "file already announced: CUSTOM file dropped");
            return;
        }
        self.emit(
            "CUSTOM",
            &[("name", Field::Str(name)), ("value", Field::Json(&value))],
        );
    }

    /// Ends the turn: closes everything still open and prepares the final frame, held back in
    /// [`FrameWriter::take_final`]. Does nothing if the turn already ended.
    pub fn finish(&mut self, ending: Ending) {
        if self.is_finished() {
            return;
        }
        let ending = match ending {
            Ending::Success if !self.answered => Ending::error(
                TurnErrorCode::EmptyAnswer,
                "The agent finished without an answer.",
            ),
            Ending::Interrupt(i) => match i.validate() {
                Ok(()) => Ending::Interrupt(i),
                Err(e) => {
                    tracing::error!(run_id = %self.run_id, code = "INTERRUPT_INVALID", error = %e, "agent asked an invalid question");
                    Ending::error(
                        TurnErrorCode::InterruptInvalid,
                        "The agent could not ask its question.",
                    )
                }
            },
            other => other,
        };
        self.close_all();
        let mut encoded = String::new();
        match &ending {
            Ending::Success => self.encode_next(
                &mut encoded,
                "RUN_FINISHED",
                &[("outcome", Field::Raw("{\"type\":\"success\"}"))],
            ),
            Ending::Interrupt(i) => {
                let outcome = json!({"type": "interrupt", "interrupts": [i.to_wire()]});
                self.encode_next(
                    &mut encoded,
                    "RUN_FINISHED",
                    &[("outcome", Field::Json(&outcome))],
                );
            }
            Ending::Error { code, message } => self.error_frame(&mut encoded, *code, message),
        }
        self.ledger.count_final(&encoded, 1);
        self.final_frame = Some(encoded);
        self.finished = Some(Finished { ending });
    }

    /// A `RUN_ERROR` frame to send in place of the prepared final frame (when committing the
    /// turn failed). Not recorded.
    pub fn replacement_error(&mut self, code: TurnErrorCode, message: &str) -> String {
        self.final_frame = None;
        let mut out = String::new();
        self.error_frame(&mut out, code, message);
        out
    }

    /// Bytes ready to send, in order. The final frame is not among them.
    pub fn take_output(&mut self) -> String {
        self.ledger.take_output()
    }

    /// True once bytes are waiting in [`FrameWriter::take_output`].
    pub fn has_output(&self) -> bool {
        !self.ledger.pending().is_empty()
    }

    /// The prepared final frame, once the turn has ended.
    pub fn take_final(&mut self) -> Option<String> {
        self.final_frame.take()
    }

    /// True once the turn has ended (by [`FrameWriter::finish`] or a limit).
    pub fn is_finished(&self) -> bool {
        self.finished.is_some()
    }

    /// How the turn ended, once it has.
    pub fn finished(&self) -> Option<&Finished> {
        self.finished.as_ref()
    }

    /// Everything after the first frame, final frame included: what a replay sends (empty
    /// if the recording was not kept: see [`FrameWriter::take_recording`]).
    pub fn recording(&self) -> &str {
        self.ledger.recording().unwrap_or_default()
    }

    /// Takes what a replay sends, once the turn has finished: the recording, moved out. If it
    /// was not kept (recordings were at their memory bound, see [`RecordPool`]), frames that
    /// close the turn step and end with `RUN_ERROR` `REPLAY_UNAVAILABLE` instead, so a repeated
    /// delivery never runs the agent again.
    pub fn take_recording(&mut self) -> String {
        if let Some(kept) = self.ledger.take_recording() {
            return kept;
        }
        let mut out = String::new();
        self.encode_next(
            &mut out,
            "STEP_FINISHED",
            &[("stepName", Field::Str(TURN_STEP))],
        );
        self.error_frame(
            &mut out,
            TurnErrorCode::ReplayUnavailable,
            "This message was already answered, but the answer was too long to keep for a repeat. Please ask again.",
        );
        out
    }

    /// The text the user saw, stretches separated by a blank line (its first MiB: what the
    /// thread keeps of it is far less).
    pub fn answer(&self) -> &str {
        &self.answer
    }

    /// Bytes written so far, comments included.
    pub fn stream_bytes(&self) -> usize {
        self.ledger.stream_bytes()
    }

    /// Frames written so far.
    pub fn frame_count(&self) -> usize {
        self.ledger.frames()
    }

    /// Closes everything open without limit checks: the reserve kept by [`Self::emit`]
    /// guarantees the room.
    fn close_all(&mut self) {
        if let Some(id) = self.text.take() {
            self.push_unchecked(
                "TEXT_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            );
        }
        if let Some(id) = self.reasoning.take() {
            self.push_unchecked(
                "REASONING_MESSAGE_END",
                &[("messageId", Field::Str(id.as_str()))],
            );
        }
        for id in std::mem::take(&mut self.tools) {
            self.push_unchecked("TOOL_CALL_END", &[("toolCallId", Field::Str(&id))]);
        }
        for name in std::mem::take(&mut self.steps).iter().rev() {
            self.push_unchecked("STEP_FINISHED", &[("stepName", Field::Str(name))]);
        }
    }

    /// The bytes that would end the stream right now with `RUN_ERROR` `code`, after
    /// everything already taken: pending output, frames closing whatever is open, and the
    /// error frame. Leaves the writer unchanged. Empty once the final frame has been taken
    /// (or replaced): nothing may follow it. Used when the process cannot finish the turn
    /// itself (see [`crate::adapter::TurnBody::abort`]).
    pub fn abort_tail(&self, code: TurnErrorCode, message: &str) -> String {
        if self.finished.is_some() && self.final_frame.is_none() {
            return String::new();
        }
        let mut out = self.ledger.pending().to_owned();
        let mut seq = self.seq;
        let mut frame = |out: &mut String, ty: &str, fields: &[(&str, Field<'_>)]| {
            encode(out, &self.event_prefix.0, seq, ty, fields);
            seq += 1;
        };
        if self.finished.is_none() {
            if let Some(id) = &self.text {
                frame(
                    &mut out,
                    "TEXT_MESSAGE_END",
                    &[("messageId", Field::Str(id.as_str()))],
                );
            }
            if let Some(id) = &self.reasoning {
                frame(
                    &mut out,
                    "REASONING_MESSAGE_END",
                    &[("messageId", Field::Str(id.as_str()))],
                );
            }
            for id in &self.tools {
                frame(&mut out, "TOOL_CALL_END", &[("toolCallId", Field::Str(id))]);
            }
            for name in self.steps.iter().rev() {
                frame(&mut out, "STEP_FINISHED", &[("stepName", Field::Str(name))]);
            }
        }
        frame(
            &mut out,
            "RUN_ERROR",
            &[
                ("message", Field::Str(message)),
                ("code", Field::Str(code.as_str())),
            ],
        );
        out
    }

    fn error_frame(&mut self, out: &mut String, code: TurnErrorCode, message: &str) {
        self.encode_next(
            out,
            "RUN_ERROR",
            &[
                ("message", Field::Str(message)),
                ("code", Field::Str(code.as_str())),
            ],
        );
    }

    fn claim_state_file(&mut self, artifact: &Value) -> bool {
        match artifact.get("url").and_then(Value::as_str) {
            Some(url) if self.custom_file_urls.contains(url) => {
                tracing::warn!(run_id = %self.run_id, "file already announced via CUSTOM: artifact dropped");
                false
            }
            Some(url) => self.state_file_urls.insert(url.to_owned()),
            None => true,
        }
    }

    fn new_message_id(&mut self) -> MessageId {
        self.next_message += 1;
        MessageId::new(self.next_message)
    }

    /// Encodes the next frame (the next `event_id`) into `out`.
    fn encode_next(&mut self, out: &mut String, ty: &str, fields: &[(&str, Field<'_>)]) {
        encode(out, &self.event_prefix.0, self.seq, ty, fields);
        self.seq += 1;
    }

    fn open_items(&self) -> usize {
        usize::from(self.text.is_some())
            + usize::from(self.reasoning.is_some())
            + self.tools.len()
            + self.steps.len()
    }

    fn reserve_bytes(&self) -> usize {
        (self.open_items() + 1) * CLOSE_RESERVE + FINAL_RESERVE
    }

    /// Room for a field's content in a frame of this shape whose content is empty (written
    /// into the output, measured, taken back: nothing is allocated).
    fn frame_budget(&mut self, ty: &str, empty: &[(&str, Field<'_>)]) -> usize {
        let mark = self.ledger.mark();
        encode(self.ledger.out(), &self.event_prefix.0, self.seq, ty, empty);
        let len = self.ledger.len_since(mark);
        self.ledger.discard_since(mark);
        self.limits
            .max_frame_bytes
            .saturating_sub(len + SPLIT_SLACK)
    }

    /// Emits `delta` as one or more `ty` frames keyed by `key: id`, each within the frame
    /// limit. Returns false if the turn ended on a limit instead.
    fn emit_split(&mut self, ty: &str, key: &str, id: &str, delta: &str) -> bool {
        // Escaping at most sextuples a byte: a delta that fits even so is one frame, and
        // needs no measuring (the common case: a model's deltas are a few bytes).
        let worst = 6 * (delta.len() + id.len()) + self.event_prefix.0.len() + 256;
        if worst + SPLIT_SLACK <= self.limits.max_frame_bytes {
            return self.emit(ty, &[(key, Field::Str(id)), ("delta", Field::Str(delta))]);
        }
        let budget = self.frame_budget(ty, &[(key, Field::Str(id)), ("delta", Field::Str(""))]);
        // Room for the whole delta at once, not by repeated doubling.
        self.ledger.reserve(delta.len() + delta.len() / 4);
        let mut pieces = escaped_pieces(delta, budget);
        while let Some(piece) = pieces.next() {
            let piece = if pieces.last_was_plain() {
                Field::Plain(piece)
            } else {
                Field::Str(piece)
            };
            if !self.emit(ty, &[(key, Field::Str(id)), ("delta", piece)]) {
                return false;
            }
        }
        true
    }

    /// Emits one frame if it fits, keeping the closing reserve; otherwise ends the turn with
    /// `RUN_ERROR` and returns false.
    fn emit(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) -> bool {
        if self.is_finished() {
            return false;
        }
        let mark = self.ledger.mark();
        encode(
            self.ledger.out(),
            &self.event_prefix.0,
            self.seq,
            ty,
            fields,
        );
        self.seq += 1;
        let len = self.ledger.len_since(mark);
        if len > self.limits.max_frame_bytes {
            self.ledger.discard_since(mark);
            tracing::error!(run_id = %self.run_id, code = "LIMIT_EXCEEDED", bytes = len, "frame over the frame limit refused");
            self.finish(Ending::error(
                TurnErrorCode::LimitExceeded,
                "The answer contained a part too large to send.",
            ));
            return false;
        }
        let fits_bytes =
            self.ledger.stream_bytes() + len + self.reserve_bytes() <= self.limits.max_stream_bytes;
        let fits_frames =
            self.ledger.frames() + 1 + self.open_items() + 2 <= self.limits.max_frames;
        if !fits_bytes || !fits_frames {
            self.ledger.discard_since(mark);
            tracing::error!(run_id = %self.run_id, code = "LIMIT_EXCEEDED", bytes = self.ledger.stream_bytes(), frames = self.ledger.frames(), "stream limit reached");
            self.finish(Ending::error(
                TurnErrorCode::LimitExceeded,
                "The answer was too long and has been cut short.",
            ));
            return false;
        }
        self.ledger.keep_since(mark);
        true
    }

    /// Writes a frame without limit checks (the first frame, closing frames).
    fn push_unchecked(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) {
        let mark = self.ledger.mark();
        encode(
            self.ledger.out(),
            &self.event_prefix.0,
            self.seq,
            ty,
            fields,
        );
        self.seq += 1;
        self.ledger.keep_since(mark);
    }
}

/// An `event_id` prefix, JSON-escaped.
#[derive(Debug)]
struct EscapedPrefix(String);

impl EscapedPrefix {
    fn new(prefix: &str) -> Self {
        let mut s = String::with_capacity(prefix.len());
        crate::wire::json_text::push_escaped(&mut s, prefix);
        Self(s)
    }
}

/// A message id runway makes, `m{n}`, kept inline (`Copy`): naming it in a frame allocates
/// nothing.
#[derive(Debug, Clone, Copy)]
struct MessageId {
    buf: [u8; 11],
    len: u8,
}

impl MessageId {
    fn new(n: u32) -> Self {
        let mut buf = [0u8; 11];
        buf[0] = b'm';
        let mut len = 1;
        let mut digits = [0u8; 10];
        let mut count = 0;
        let mut rest = n;
        loop {
            digits[count] = b'0' + (rest % 10) as u8;
            count += 1;
            rest /= 10;
            if rest == 0 {
                break;
            }
        }
        for d in digits[..count].iter().rev() {
            buf[len] = *d;
            len += 1;
        }
        Self {
            buf,
            len: len as u8,
        }
    }

    fn as_str(&self) -> &str {
        // Only ASCII digits after `m` are ever stored.
        std::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or("m")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::{ChoiceOption, Interrupt, ReviewItem};

    fn frames(s: &str) -> Vec<Value> {
        s.split("\n\n")
            .filter(|l| l.starts_with("data: "))
            .map(|l| serde_json::from_str(&l[6..]).unwrap())
            .collect()
    }

    fn types(s: &str) -> Vec<String> {
        frames(s)
            .iter()
            .map(|f| f["type"].as_str().unwrap().to_owned())
            .collect()
    }

    fn run(f: impl FnOnce(&mut FrameWriter)) -> (String, FrameWriter) {
        let mut w = FrameWriter::new("r1", Limits::default());
        w.start();
        f(&mut w);
        let mut all = w.take_output();
        if let Some(fin) = w.take_final() {
            all.push_str(&fin);
        }
        (all, w)
    }

    #[test]
    fn minimal_answer() {
        let (out, w) = run(|w| {
            w.text("Gold fell ");
            w.text("0.5% yesterday.");
            w.finish(Ending::Success);
        });
        assert_eq!(
            types(&out),
            [
                "STEP_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "STEP_FINISHED",
                "RUN_FINISHED"
            ]
        );
        let f = frames(&out);
        assert_eq!(f[6]["outcome"], json!({"type": "success"}));
        assert_eq!(w.answer(), "Gold fell 0.5% yesterday.");
        // The recording is everything after the first frame.
        assert_eq!(out.split_once("\n\n").unwrap().1, w.recording());
    }

    #[test]
    fn message_ids_are_m_and_a_number() {
        for n in [0, 1, 9, 10, 4_294_967_295] {
            assert_eq!(MessageId::new(n).as_str(), format!("m{n}"));
        }
    }

    #[test]
    fn the_recording_is_moved_out_whole_and_replays_byte_identically() {
        let (out, mut w) = run(|w| {
            w.text(&"long answer ".repeat(20_000));
            w.finish(Ending::Success);
        });
        assert_eq!(out.split_once("\n\n").unwrap().1, w.take_recording());
    }

    #[test]
    fn a_recording_beyond_the_pool_is_dropped_and_replays_as_replay_unavailable() {
        let pool = Box::leak(Box::new(crate::wire::recorder::RecordPool::new(0)));
        let mut w = FrameWriter::new("r1", Limits::default()).with_record_pool(pool);
        w.start();
        let answer = "x".repeat(3 * crate::wire::recorder::RECORDED_FLOOR_BYTES);
        w.text(&answer);
        w.finish(Ending::Success);
        let mut out = w.take_output();
        out.push_str(&w.take_final().unwrap());
        // The client still gets every frame of the answer.
        let streamed: String = frames(&out)
            .iter()
            .filter_map(|f| f["delta"].as_str().map(str::to_owned))
            .collect();
        assert_eq!(streamed, answer);
        assert_eq!(types(&out).last().unwrap(), "RUN_FINISHED");
        // A replay ends the turn step and says why it cannot repeat the answer.
        let replay = w.take_recording();
        assert_eq!(types(&replay), ["STEP_FINISHED", "RUN_ERROR"]);
        assert_eq!(frames(&replay)[1]["code"], "REPLAY_UNAVAILABLE");
        assert_eq!(pool.used(), 0, "the dropped recording's bytes went back");
    }

    #[test]
    fn text_stretches_around_tool_calls_are_separate_messages() {
        let (out, w) = run(|w| {
            w.text("Let me check.");
            w.tool_call_start("t1", "lookup");
            w.tool_call_args("t1", "{\"q\":1}");
            w.tool_call_result("t1", "found");
            w.text("It is there.");
            w.finish(Ending::Success);
        });
        assert_eq!(
            types(&out),
            [
                "STEP_STARTED",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "TOOL_CALL_START",
                "TOOL_CALL_ARGS",
                "TOOL_CALL_END",
                "TOOL_CALL_RESULT",
                "TEXT_MESSAGE_START",
                "TEXT_MESSAGE_CONTENT",
                "TEXT_MESSAGE_END",
                "STEP_FINISHED",
                "RUN_FINISHED"
            ]
        );
        let f = frames(&out);
        assert_ne!(f[1]["messageId"], f[8]["messageId"]);
        assert_eq!(f[5]["delta"], "{\"q\":1}");
        assert_eq!(w.answer(), "Let me check.\n\nIt is there.");
    }

    #[test]
    fn everything_open_is_closed_before_the_final_frame() {
        let (out, _) = run(|w| {
            w.step_started("search");
            w.reasoning("thinking");
            w.tool_call_start("t1", "x");
            w.text("partial");
            w.finish(Ending::error(TurnErrorCode::AgentError, "failed"));
        });
        let t = types(&out);
        assert_eq!(t.last().unwrap(), "RUN_ERROR");
        let mut open = HashSet::new();
        for f in frames(&out) {
            let ty = f["type"].as_str().unwrap();
            let key = ["messageId", "toolCallId", "stepName"]
                .iter()
                .find_map(|k| f.get(*k).and_then(Value::as_str))
                .unwrap_or("")
                .to_owned();
            if ty.ends_with("_START") || ty == "STEP_STARTED" {
                assert!(open.insert(key), "opened twice");
            } else if ty.ends_with("_END") || ty == "STEP_FINISHED" {
                assert!(open.remove(&key), "closed {key} never opened");
            }
        }
        assert!(open.is_empty(), "left open: {open:?}");
    }

    #[test]
    fn exactly_one_final_and_nothing_after() {
        let (out, _) = run(|w| {
            w.text("a");
            w.finish(Ending::Success);
            w.text("late");
            w.tool_call_start("t", "late");
            w.finish(Ending::error(TurnErrorCode::AgentError, "twice"));
        });
        let t = types(&out);
        assert_eq!(t.iter().filter(|t| t.starts_with("RUN_")).count(), 1);
        assert_eq!(t.last().unwrap(), "RUN_FINISHED");
        assert!(!out.contains("late"));
    }

    #[test]
    fn no_answer_is_an_error_not_an_empty_bubble() {
        let (out, w) = run(|w| {
            w.text("");
            w.tool_call_start("t1", "x");
            w.finish(Ending::Success);
        });
        let t = types(&out);
        assert!(!t.contains(&"TEXT_MESSAGE_START".to_owned()));
        assert_eq!(t.last().unwrap(), "RUN_ERROR");
        assert_eq!(frames(&out).last().unwrap()["code"], "EMPTY_ANSWER");
        assert!(matches!(
            w.finished().unwrap().ending,
            Ending::Error {
                code: TurnErrorCode::EmptyAnswer,
                ..
            }
        ));
    }

    #[test]
    fn never_run_started_or_reasoning_end() {
        let (out, _) = run(|w| {
            w.reasoning("hmm");
            w.end_reasoning();
            w.text("ok");
            w.finish(Ending::Success);
        });
        for t in types(&out) {
            assert!(t != "RUN_STARTED" && t != "REASONING_END", "{t}");
        }
    }

    #[test]
    fn large_text_is_split_under_the_frame_limit() {
        let big = "é\"".repeat(300_000);
        let (out, w) = run(|w| {
            w.text(&big);
            w.finish(Ending::Success);
        });
        let mut rebuilt = String::new();
        for chunk in out.split("\n\n").filter(|c| !c.is_empty()) {
            assert!(
                chunk.len() + 2 <= 256 * 1024,
                "frame of {} bytes",
                chunk.len()
            );
            let f: Value = serde_json::from_str(&chunk[6..]).unwrap();
            if f["type"] == "TEXT_MESSAGE_CONTENT" {
                rebuilt.push_str(f["delta"].as_str().unwrap());
            }
        }
        assert_eq!(rebuilt, big);
        assert_eq!(w.answer(), big);
        assert_eq!(types(&out).last().unwrap(), "RUN_FINISHED");
    }

    #[test]
    fn stream_limit_ends_with_run_error_before_crossing() {
        let limits = Limits {
            max_stream_bytes: 64 * 1024,
            ..Limits::default()
        };
        let mut w = FrameWriter::new("r1", limits);
        w.start();
        w.step_started("deep");
        w.tool_call_start("t", "x");
        let mut out = w.take_output();
        for _ in 0..1000 {
            w.text(&"x".repeat(1000));
            out.push_str(&w.take_output());
            if w.is_finished() {
                break;
            }
        }
        out.push_str(&w.take_final().unwrap());
        assert!(out.len() <= 64 * 1024, "{} bytes", out.len());
        let f = frames(&out);
        assert_eq!(f.last().unwrap()["type"], "RUN_ERROR");
        assert_eq!(f.last().unwrap()["code"], "LIMIT_EXCEEDED");
        let t = types(&out);
        assert!(t.contains(&"TEXT_MESSAGE_END".to_owned()));
        assert_eq!(t.iter().filter(|t| *t == "STEP_FINISHED").count(), 2);
    }

    #[test]
    fn frame_count_limit_ends_with_run_error_before_crossing() {
        let limits = Limits {
            max_frames: 50,
            ..Limits::default()
        };
        let mut w = FrameWriter::new("r1", limits);
        w.start();
        let mut out = w.take_output();
        for i in 0..100 {
            w.tool_call_start(&format!("t{i}"), "x");
            out.push_str(&w.take_output());
        }
        w.finish(Ending::Success);
        out.push_str(&w.take_final().unwrap());
        let f = frames(&out);
        assert!(f.len() <= 50, "{} frames", f.len());
        assert_eq!(f.last().unwrap()["code"], "LIMIT_EXCEEDED");
    }

    #[test]
    fn oversized_tool_result_is_truncated() {
        let (out, _) = run(|w| {
            w.tool_call_start("t1", "x");
            w.tool_call_result("t1", &"y".repeat(400_000));
            w.text("done");
            w.finish(Ending::Success);
        });
        let f = frames(&out);
        let result = f.iter().find(|f| f["type"] == "TOOL_CALL_RESULT").unwrap();
        assert!(
            result["content"]
                .as_str()
                .unwrap()
                .ends_with("…[truncated]")
        );
        assert_eq!(f.last().unwrap()["type"], "RUN_FINISHED");
    }

    #[test]
    fn oversized_unsplittable_frame_fails_the_turn() {
        let (out, _) = run(|w| {
            w.text("a");
            w.custom("blob", json!("z".repeat(300_000)));
            w.finish(Ending::Success);
        });
        assert_eq!(frames(&out).last().unwrap()["code"], "LIMIT_EXCEEDED");
    }

    #[test]
    fn state_keys_are_limited() {
        let (out, _) = run(|w| {
            w.state_snapshot(json!({"todos": [1], "secret": 2, "files": []}));
            w.state_snapshot(json!({"other": 1}));
            w.state_delta(json!([
                {"op": "add", "path": "/artifacts/0", "value": 1},
                {"op": "add", "path": "/mood", "value": 2}
            ]));
            w.text("a");
            w.finish(Ending::Success);
        });
        let f = frames(&out);
        let snaps: Vec<_> = f.iter().filter(|f| f["type"] == "STATE_SNAPSHOT").collect();
        assert_eq!(snaps.len(), 1);
        assert_eq!(snaps[0]["snapshot"], json!({"todos": [1], "files": []}));
        let delta = f.iter().find(|f| f["type"] == "STATE_DELTA").unwrap();
        assert_eq!(delta["delta"].as_array().unwrap().len(), 1);
    }

    #[test]
    fn one_file_one_channel() {
        let (out, _) = run(|w| {
            w.artifact(json!({"name": "a.csv", "url": "https://x.example/f/1"}));
            w.custom(
                "file",
                json!({"name": "a.csv", "url": "https://x.example/f/1"}),
            );
            w.artifact(json!({"name": "a.csv", "url": "https://x.example/f/1"}));
            w.custom(
                "file",
                json!({"name": "b.csv", "url": "https://x.example/f/2"}),
            );
            w.artifact(json!({"name": "b.csv", "url": "https://x.example/f/2"}));
            w.text("files");
            w.finish(Ending::Success);
        });
        let t = types(&out);
        assert_eq!(t.iter().filter(|t| *t == "STATE_SNAPSHOT").count(), 1);
        assert_eq!(t.iter().filter(|t| *t == "CUSTOM").count(), 1);
    }

    #[test]
    fn interrupts_are_validated_before_leaving() {
        let (out, _) = run(|w| {
            w.finish(Ending::Interrupt(Interrupt::Review {
                prompt: "ok?".into(),
                items: vec![ReviewItem {
                    id: None,
                    name: String::new(),
                    arguments: json!({}),
                }],
            }))
        });
        let last = frames(&out).pop().unwrap();
        assert_eq!(last["type"], "RUN_ERROR");
        assert_eq!(last["code"], "INTERRUPT_INVALID");

        let (out, _) = run(|w| {
            w.finish(Ending::Interrupt(Interrupt::Choice {
                prompt: "Which?".into(),
                options: vec![ChoiceOption {
                    id: "a".into(),
                    label: "A".into(),
                }],
            }))
        });
        let last = frames(&out).pop().unwrap();
        assert_eq!(last["type"], "RUN_FINISHED");
        assert_eq!(last["outcome"]["type"], "interrupt");
        assert_eq!(last["outcome"]["interrupts"].as_array().unwrap().len(), 1);
        assert_eq!(last["outcome"]["interrupts"][0]["kind"], "choice");
    }

    #[test]
    fn agent_cannot_close_runways_step_early() {
        let (out, _) = run(|w| {
            w.step_finished(TURN_STEP);
            w.text("a");
            w.finish(Ending::Success);
        });
        let t = types(&out);
        assert_eq!(t.iter().filter(|t| *t == "STEP_FINISHED").count(), 1);
        assert_eq!(t[t.len() - 2], "STEP_FINISHED");
    }

    #[test]
    fn whitespace_alone_opens_no_message() {
        let mut w = FrameWriter::new("r1", Limits::default());
        w.start();
        w.text("  \n");
        w.end_text();
        w.text("\t");
        w.finish(Ending::Success);
        let mut all = w.take_output();
        all.push_str(&w.take_final().unwrap());
        assert!(!all.contains("TEXT_MESSAGE"), "{all}");
        assert!(all.contains("EMPTY_ANSWER"), "{all}");

        let mut w = FrameWriter::new("r2", Limits::default());
        w.start();
        w.text("Hello");
        w.text(" ");
        w.text("world");
        w.finish(Ending::Success);
        assert_eq!(w.answer(), "Hello world");
    }

    #[test]
    fn abort_tail_closes_what_is_open_and_leaves_the_writer_unchanged() {
        let mut w = FrameWriter::new("r1", Limits::default()).with_event_id_prefix("r1.ab");
        w.start();
        w.tool_call_start("c1", "search");
        w.reasoning("hmm");
        let sent = w.take_output();
        let tail = w.abort_tail(TurnErrorCode::AgentPanic, "Sorry.");
        assert_eq!(tail, w.abort_tail(TurnErrorCode::AgentPanic, "Sorry."));
        let frames: Vec<Value> = format!("{sent}{tail}")
            .split("\n\n")
            .filter_map(|f| f.strip_prefix("data: "))
            .map(|d| serde_json::from_str(d).unwrap())
            .collect();
        let types: Vec<&str> = frames.iter().map(|f| f["type"].as_str().unwrap()).collect();
        assert_eq!(
            types,
            [
                "STEP_STARTED",
                "TOOL_CALL_START",
                "REASONING_MESSAGE_START",
                "REASONING_MESSAGE_CONTENT",
                "REASONING_MESSAGE_END",
                "TOOL_CALL_END",
                "STEP_FINISHED",
                "RUN_ERROR"
            ]
        );
        for (n, f) in frames.iter().enumerate() {
            assert_eq!(f["event_id"], format!("r1.ab.{n}"));
        }
        assert_eq!(frames.last().unwrap()["code"], "AGENT_PANIC");
        // Once the final frame is taken, nothing may follow it.
        w.finish(Ending::error(TurnErrorCode::AgentError, "x"));
        assert!(
            w.abort_tail(TurnErrorCode::AgentPanic, "Sorry.")
                .contains("RUN_ERROR")
        );
        let _ = w.take_output();
        let _ = w.take_final();
        assert_eq!(w.abort_tail(TurnErrorCode::AgentPanic, "Sorry."), "");
    }

    #[test]
    fn event_ids_are_unique_and_stable() {
        let (out, _) = run(|w| {
            w.text("a");
            w.finish(Ending::Success);
        });
        let ids: Vec<_> = frames(&out)
            .iter()
            .map(|f| f["event_id"].as_str().unwrap().to_owned())
            .collect();
        let unique: HashSet<_> = ids.iter().collect();
        assert_eq!(unique.len(), ids.len());
        assert_eq!(ids[0], "r1.0");
        let (out, _) = run(|w| {
            w.tool_call_start("t", "x");
            w.tool_call_result("t", "r");
            w.text("a");
            w.finish(Ending::Success);
        });
        let seqs: Vec<u64> = frames(&out)
            .iter()
            .map(|f| f["event_id"].as_str().unwrap()[3..].parse().unwrap())
            .collect();
        assert_eq!(seqs, (0..seqs.len() as u64).collect::<Vec<_>>(), "no gaps");
    }

    #[test]
    fn replacement_error_is_a_run_error() {
        let (_, mut w) = run(|w| {
            w.text("a");
            w.finish(Ending::Success);
        });
        let f = w.replacement_error(TurnErrorCode::StoreUnavailable, "store down");
        let v: Value = serde_json::from_str(f.trim_start_matches("data: ").trim()).unwrap();
        assert_eq!(v["type"], "RUN_ERROR");
        assert_eq!(v["code"], "STORE_UNAVAILABLE");
    }
}
