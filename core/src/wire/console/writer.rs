//! Console's encoding of a turn: [`FrameWriter`], the [`Writer`] that turns what an agent
//! says into a stream of SSE frames Console accepts, whatever the agent does. What every
//! protocol's writer does (limits, the held-back final frame, the recording, keep-alives, the
//! abort tail) is in [`crate::wire::writer`]; this file holds only Console's encoding and the
//! state it takes.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value, json};

use super::client_view::ClientView;
use super::frame::{Field, encode};
use super::sse::HEARTBEAT;
use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::protocol::agui::{TokenUsage, interrupt_id, run_tag};
use crate::protocol::{Ending, LogId, StreamLimits};
use crate::wire::json_text::escaped_pieces;
use crate::wire::writer::{Encoding, Writer};

/// State keys Console accepts in `STATE_SNAPSHOT` and `STATE_DELTA`.
pub const STATE_KEYS: [&str; 3] = ["todos", "artifacts", "files"];

/// The name of the step runway opens first and closes last.
pub const TURN_STEP: &str = "turn";

/// The AG-UI protocol version `RUN_STARTED` names (`@ag-ui/core`'s `PROTOCOL_VERSION`).
pub const AGUI_PROTOCOL_VERSION: &str = "1.0";

/// Bytes held back per open item so it can always be closed within the limits.
const CLOSE_RESERVE: usize = 384;
/// Bytes held back for the final frame.
const FINAL_RESERVE: usize = 1024;
/// Slack for the growing `event_id` sequence number in split frames.
const SPLIT_SLACK: usize = 32;

/// The SSE frame writer for one turn of Console's protocol.
///
/// Feed it agent output; drain encoded bytes with [`Writer::take_output`]. It guarantees:
/// - the first frame is `STEP_STARTED` ([`Writer::start`]), produced before anything else;
/// - each stretch of text is its own message, opened lazily on the first delta that is not
///   only whitespace (so there is never an empty bubble) and closed before a tool call or
///   reasoning starts;
/// - everything opened (text, reasoning, tool calls, steps) is closed before the final frame;
/// - exactly one final frame, `RUN_FINISHED` or `RUN_ERROR`, and nothing after it;
/// - never `RUN_STARTED` or `REASONING_END` (there is no way to ask for them);
/// - no frame over the frame limit: text and tool-argument deltas are split, an oversized tool
///   result is truncated, any other oversized frame ends the turn with `RUN_ERROR`;
/// - the stream ends with `RUN_ERROR` before the stream-byte or frame-count limit is crossed:
///   room for closing everything and the error frame is always held in reserve;
/// - `STATE_SNAPSHOT` / `STATE_DELTA` carry only `todos`, `artifacts` and `files`;
/// - a file is announced on one channel only (state `artifacts` or `CUSTOM` `file`);
/// - an interrupt is validated before it leaves: an invalid one becomes `RUN_ERROR`;
/// - a successful turn that produced no text ends with `RUN_ERROR` instead.
///
/// The final frame is held back ([`Writer::take_final`]) so the engine can commit the turn to
/// the store first and send `RUN_ERROR` instead if that fails.
pub type FrameWriter = Writer<Console>;

/// Whose reader the frames are for. The frames are AG-UI events either way; AG-UI 1.0 clients
/// need a few things Console's contract forbids or does not know (see [`Writer::agui`]).
#[derive(Debug)]
enum Dialect {
    /// Console's External Agent contract.
    Console,
    /// Any AG-UI 1.0 client (`POST {base}/agui`).
    Agui {
        /// The run's `parentRunId`, if the client sent one.
        parent_run_id: Option<String>,
        /// Makes the run's message ids unique in the thread: an AG-UI client keeps the whole
        /// conversation and merges a message into an earlier one of the same id.
        run_tag: RunTag,
    },
}

/// [`run_tag`] of a run, kept inline.
#[derive(Debug, Clone, Copy)]
struct RunTag([u8; 12]);

/// Console's encoding: SSE `data:` frames of AG-UI events, `:` comments as keep-alives, and
/// what is open (messages, tool calls, steps) so it can be closed before the final frame.
/// The same encoding serves AG-UI 1.0 clients in its AG-UI dialect ([`Writer::agui`]).
#[derive(Debug)]
pub struct Console {
    dialect: Dialect,
    run_id: String,
    /// The run's `threadId`, named on `RUN_FINISHED` as AG-UI 1.0 requires (Console allows it
    /// when it is the request's). `None` for a writer told no thread: then it is left out,
    /// never guessed (Console discards a final frame naming another thread).
    thread_id: Option<String>,
    /// Each activity message's type: AG-UI 1.0 names it on every `ACTIVITY_DELTA`.
    activity_types: HashMap<String, String>,
    /// Every `event_id` is `{prefix}.{n}`: the prefix, JSON-escaped once.
    event_prefix: EscapedPrefix,
    seq: u64,
    /// The open text message's id.
    text: Option<MessageId>,
    /// The open reasoning message's id.
    reasoning: Option<MessageId>,
    tools: Vec<String>,
    tools_seen: HashSet<String>,
    steps: Vec<String>,
    next_message: u32,
    artifacts: Vec<Value>,
    state_file_urls: HashSet<String>,
    custom_file_urls: HashSet<String>,
    /// What the AG-UI client holds as the run goes (its messages and state), for the snapshots
    /// before an interrupt; `None` for Console, which keeps its own.
    view: Option<Box<ClientView>>,
}

impl Console {
    fn open_items(&self) -> usize {
        // AG-UI closes reasoning with two frames: the message and its span.
        let reasoning_frames = if self.is_agui() { 2 } else { 1 };
        usize::from(self.text.is_some())
            + reasoning_frames * usize::from(self.reasoning.is_some())
            + self.tools.len()
            + self.steps.len()
    }

    /// The escaped `event_id` prefix, or `None` in the AG-UI dialect: AG-UI 1.0 events have no
    /// `event_id`, and the official client strips it from every event with a warning.
    fn event_prefix(&self) -> Option<&str> {
        match self.dialect {
            Dialect::Console => Some(&self.event_prefix.0),
            Dialect::Agui { .. } => None,
        }
    }

    fn is_agui(&self) -> bool {
        matches!(self.dialect, Dialect::Agui { .. })
    }

    /// Encodes the next frame (the next `event_id`) into `out`.
    fn encode_next(&mut self, out: &mut String, ty: &str, fields: &[(&str, Field<'_>)]) {
        encode(out, self.event_prefix(), self.seq, ty, fields);
        self.seq += 1;
    }

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

impl Encoding for Console {
    const CONTENT_TYPE: &'static str = "text/event-stream";

    const KEEP_ALIVE: (&'static str, usize) = (HEARTBEAT, 0);

    fn first_frame(w: &mut FrameWriter) {
        debug_assert_eq!(w.enc.seq, 0, "start() must come first");
        if let Dialect::Agui { parent_run_id, .. } = &w.enc.dialect {
            let thread_id = w.enc.thread_id.clone().unwrap_or_default();
            let parent_run_id = parent_run_id.clone();
            let run_id = w.enc.run_id.clone();
            let mut fields = vec![
                ("threadId", Field::Str(&thread_id)),
                ("runId", Field::Str(&run_id)),
                ("protocolVersion", Field::Plain(AGUI_PROTOCOL_VERSION)),
            ];
            if let Some(parent) = &parent_run_id {
                fields.push(("parentRunId", Field::Str(parent)));
            }
            w.push_unchecked("RUN_STARTED", &fields);
        }
        w.push_unchecked("STEP_STARTED", &[("stepName", Field::Str(TURN_STEP))]);
        w.enc.steps.push(TURN_STEP.to_owned());
    }

    /// One comment line (Console's reader ignores it; a line is at most one frame long, the
    /// longest line the contract has a reader buffer), then a blank line: `bytes` exactly (at
    /// least `:` and the blank line).
    fn padding(bytes: usize) -> Option<String> {
        const TEXT: &str = ": first-flush padding (RUNWAY_FIRST_FLUSH_BYTES)";
        const SPACES: &str = match std::str::from_utf8(&[b' '; 1024]) {
            Ok(spaces) => spaces,
            Err(_) => panic!("spaces are UTF-8"),
        };
        let line = bytes.max(3) - 2;
        let mut pad = String::with_capacity(line + 2);
        pad.push_str(&TEXT[..line.min(TEXT.len())]);
        while pad.len() < line {
            pad.push_str(&SPACES[..SPACES.len().min(line - pad.len())]);
        }
        pad.push_str("\n\n");
        Some(pad)
    }

    fn reserve(w: &FrameWriter) -> (usize, usize) {
        let open = w.enc.open_items();
        ((open + 1) * CLOSE_RESERVE + FINAL_RESERVE, open + 2)
    }

    fn apply(w: &mut FrameWriter, event: AgentEvent) {
        match event {
            AgentEvent::Text(t) => w.text(&t),
            AgentEvent::EndMessage => w.end_text(),
            AgentEvent::Reasoning(t) => w.reasoning(&t),
            AgentEvent::EndReasoning => w.end_reasoning(),
            AgentEvent::StepStarted(n) => w.step_started(&n),
            AgentEvent::StepFinished(n) => w.step_finished(&n),
            AgentEvent::ToolCallStart { id, name } => w.tool_call_start(&id, &name),
            AgentEvent::ClientToolCallStart { id, name } => w.client_tool_call_start(&id, &name),
            AgentEvent::ToolCallArgs { id, delta } => w.tool_call_args(&id, &delta),
            AgentEvent::ToolCallEnd { id } => w.tool_call_end(&id),
            AgentEvent::ToolCallResult { id, content } => w.tool_call_result(&id, &content),
            AgentEvent::ActivitySnapshot {
                message_id,
                activity_type,
                content,
            } => w.activity_snapshot(&message_id, &activity_type, content),
            AgentEvent::ActivityDelta { message_id, patch } => {
                w.activity_delta(&message_id, patch);
            }
            AgentEvent::StateSnapshot(v) => w.state_snapshot(v),
            AgentEvent::StateDelta(v) => w.state_delta(v),
            AgentEvent::Artifact(a) => w.artifact(serde_json::to_value(a).unwrap_or_default()),
            AgentEvent::File(_) => {}
            AgentEvent::Custom { name, value } => w.custom(&name, value),
        }
    }

    /// Closes everything open (without limit checks: the reserve kept by [`Writer::keep_frame`]
    /// guarantees the room), then `RUN_FINISHED` or `RUN_ERROR`.
    fn end(w: &mut FrameWriter, ending: Ending) -> (String, usize, Ending) {
        w.close_all();
        let mut encoded = String::new();
        match &ending {
            // AG-UI 1.0: a run that finished with calls left for the client names them.
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
        (encoded, 1, ending)
    }

    fn error(w: &mut FrameWriter, code: TurnErrorCode) -> String {
        let mut out = String::new();
        w.enc
            .error_frame(&mut out, code, code.user_message(), &w.usage);
        out
    }

    fn reports_usage(w: &FrameWriter) -> bool {
        w.enc.is_agui()
    }

    fn abort(w: &FrameWriter, out: &mut String, code: TurnErrorCode) {
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
    fn unrecorded(w: &mut FrameWriter) -> String {
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

impl Writer<Console> {
    /// A writer for the turn `run_id`.
    pub fn new(run_id: impl Into<String>, limits: StreamLimits) -> Self {
        let run_id = run_id.into();
        Self::with_encoding(
            limits,
            Console {
                dialect: Dialect::Console,
                event_prefix: EscapedPrefix::new(&run_id),
                run_id,
                thread_id: None,
                activity_types: HashMap::new(),
                seq: 0,
                text: None,
                reasoning: None,
                tools: Vec::new(),
                tools_seen: HashSet::new(),
                steps: Vec::new(),
                next_message: 0,
                artifacts: Vec::new(),
                state_file_urls: HashSet::new(),
                custom_file_urls: HashSet::new(),
                view: None,
            },
        )
    }

    /// A writer for the AG-UI 1.0 run `run_id` of thread `thread_id` (`POST {base}/agui`): the
    /// same frames as Console's (which are AG-UI 1.0 events one by one already: `threadId` and
    /// `runId` on `RUN_FINISHED`, role `reasoning`, `activityType` on `ACTIVITY_DELTA`, an
    /// interrupt's `id` and `reason`), with what AG-UI 1.0 requires and Console's contract
    /// forbids or does not read: `RUN_STARTED` first (`threadId`, `runId`, `protocolVersion`,
    /// `parentRunId`), no `event_id` (AG-UI has none), reasoning in a
    /// `REASONING_START`/`REASONING_END` span, the agent's state unfiltered, and interrupts in
    /// AG-UI's shape (`message`, `responseSchema`, Console's other fields in `metadata`).
    pub fn agui(
        run_id: impl Into<String>,
        thread_id: impl Into<String>,
        parent_run_id: Option<String>,
        limits: StreamLimits,
    ) -> Self {
        let mut w = Self::new(run_id, limits).with_thread_id(thread_id);
        let run_tag = RunTag(run_tag(&w.enc.run_id));
        w.enc.dialect = Dialect::Agui {
            parent_run_id,
            run_tag,
        };
        w
    }

    /// Follows what the AG-UI client holds (it sent `messages` and `state`) so that a run ending
    /// with an interrupt sends `STATE_SNAPSHOT` and `MESSAGES_SNAPSHOT` before its
    /// `RUN_FINISHED`, as AG-UI's interrupt rules ask (`client_view.rs`). AG-UI dialect only:
    /// Console's writer ignores it.
    #[must_use]
    pub fn with_client_view(mut self, messages: Vec<Value>, state: Value) -> Self {
        if self.enc.is_agui() {
            let max = self.limits.max_frame_bytes;
            self.enc.view = Some(Box::new(ClientView::new(messages, state, max)));
        }
        self
    }

    /// Names the turn's `threadId` on `RUN_FINISHED`, as AG-UI 1.0 requires: Console's turns
    /// give the request's, which Console's envelope rule accepts.
    #[must_use]
    pub fn with_thread_id(mut self, thread_id: impl Into<String>) -> Self {
        self.enc.thread_id = Some(thread_id.into());
        self
    }

    /// Makes every `event_id` `{prefix}.{n}` instead of `{run_id}.{n}`. The service puts the
    /// request's fingerprint in it, so a replay (same body) repeats the original's ids while
    /// another request with the same `runId` (`RUN_ID_REUSED`) never collides with them.
    #[must_use]
    pub fn with_event_id_prefix(mut self, prefix: impl Into<String>) -> Self {
        self.enc.event_prefix = EscapedPrefix::new(&prefix.into());
        self
    }

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

    /// `ACTIVITY_SNAPSHOT`.
    pub fn activity_snapshot(&mut self, message_id: &str, activity_type: &str, content: Value) {
        if self.is_finished() {
            return;
        }
        self.enc
            .activity_types
            .insert(message_id.to_owned(), activity_type.to_owned());
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
        // AG-UI 1.0 names the activity's type on every delta. A delta before its snapshot has
        // none: AG-UI clients cannot apply it (dropped); Console reads only `messageId` (sent).
        if let Some(activity_type) = self.enc.activity_types.get(message_id).cloned() {
            self.emit(
                "ACTIVITY_DELTA",
                &[
                    ("messageId", Field::Str(message_id)),
                    ("activityType", Field::Str(&activity_type)),
                    ("patch", Field::Json(&patch)),
                ],
            );
            return;
        }
        if self.enc.is_agui() {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "ACTIVITY_DELTA before its ACTIVITY_SNAPSHOT dropped");
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
        if self.enc.is_agui() {
            // AG-UI state is the agent's own: any JSON value, carried as it is.
            if self.emit("STATE_SNAPSHOT", &[("snapshot", Field::Json(&snapshot))])
                && let Some(view) = &mut self.enc.view
            {
                view.state_snapshot(snapshot);
            }
            return;
        }
        let Value::Object(obj) = snapshot else {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "STATE_SNAPSHOT that is not an object dropped");
            return;
        };
        let mut kept: Map<String, Value> = obj
            .into_iter()
            .filter(|(k, _)| {
                let ok = STATE_KEYS.contains(&k.as_str());
                if !ok {
                    tracing::warn!(run_id = %LogId(&self.enc.run_id), key = %k, "state key Console drops removed");
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
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "STATE_DELTA that is not a JSON Patch array dropped");
            return;
        };
        let agui = self.enc.is_agui();
        let kept: Vec<Value> = ops
            .into_iter()
            .filter(|op| {
                if agui {
                    return true;
                }
                let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                let key = path.trim_start_matches('/').split('/').next().unwrap_or("");
                STATE_KEYS.contains(&key)
            })
            .collect();
        if kept.is_empty() {
            return;
        }
        let delta = Value::Array(kept);
        if self.emit("STATE_DELTA", &[("delta", Field::Json(&delta))])
            && let Some(view) = &mut self.enc.view
        {
            view.state_delta(&delta);
        }
    }

    /// Announces a file the agent hosts: appended to this turn's `artifacts` and sent as a
    /// `STATE_SNAPSHOT` of them all. A URL already announced (on either channel) is not sent
    /// again: one file, one card.
    pub fn artifact(&mut self, artifact: Value) {
        if self.is_finished() || !self.claim_state_file(&artifact) {
            return;
        }
        self.enc.artifacts.push(artifact);
        let artifacts = std::mem::take(&mut self.enc.artifacts);
        if self.emit(
            "STATE_SNAPSHOT",
            &[("snapshot", Field::Artifacts(&artifacts))],
        ) && let Some(view) = &mut self.enc.view
        {
            view.artifacts(&artifacts);
        }
        self.enc.artifacts = artifacts;
    }

    /// `CUSTOM` with `name` and `value`. A `file` whose URL was already sent as an artifact
    /// is dropped.
    pub fn custom(&mut self, name: &str, value: Value) {
        if self.is_finished() {
            return;
        }
        if name == "file"
            && let Some(url) = value.get("url").and_then(Value::as_str)
            && (self.enc.state_file_urls.contains(url)
                || !self.enc.custom_file_urls.insert(url.into()))
        {
            tracing::warn!(run_id = %LogId(&self.enc.run_id), "file already announced: CUSTOM file dropped");
            return;
        }
        self.emit(
            "CUSTOM",
            &[("name", Field::Str(name)), ("value", Field::Json(&value))],
        );
    }

    /// Closes everything open without limit checks: the reserve kept by [`Writer::keep_frame`]
    /// guarantees the room.
    fn close_all(&mut self) {
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

    /// AG-UI's interrupt rule: `STATE_SNAPSHOT` and `MESSAGES_SNAPSHOT` before the
    /// interrupting `RUN_FINISHED`, what the client holds now ([`ClientView`]). Each is sent
    /// only if it fits in a frame and leaves room for the final frame; a snapshot left out is
    /// logged (the client's own state and messages are still right: the snapshots repeat them).
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

    /// Writes a frame if it fits in the limits with `final_bytes` (one frame) still to come;
    /// otherwise leaves it out (logged) without ending the turn.
    fn push_if_fits(&mut self, ty: &str, fields: &[(&str, Field<'_>)], final_bytes: usize) {
        let mark = self.encode_frame(ty, fields);
        let len = self.ledger.len_since(mark);
        let limits = &self.limits;
        if len <= limits.max_frame_bytes
            && self.ledger.stream_bytes() + len + final_bytes <= limits.max_stream_bytes
            && self.ledger.frames() + 2 <= limits.max_frames
        {
            self.ledger.keep_since(mark);
        } else {
            self.ledger.discard_since(mark);
            tracing::warn!(run_id = %LogId(&self.enc.run_id), frame = ty, bytes = len, "snapshot left out: it does not fit in the limits");
        }
    }

    fn claim_state_file(&mut self, artifact: &Value) -> bool {
        match artifact.get("url").and_then(Value::as_str) {
            Some(url) if self.enc.custom_file_urls.contains(url) => {
                tracing::warn!(run_id = %LogId(&self.enc.run_id), "file already announced via CUSTOM: artifact dropped");
                false
            }
            Some(url) => self.enc.state_file_urls.insert(url.to_owned()),
            None => true,
        }
    }

    fn new_message_id(&mut self) -> MessageId {
        self.enc.next_message += 1;
        match &self.enc.dialect {
            Dialect::Agui { run_tag, .. } => MessageId::tagged(self.enc.next_message, run_tag),
            Dialect::Console => MessageId::new(self.enc.next_message),
        }
    }

    /// Room for a field's content in a frame of this shape whose content is empty (written
    /// into the output, measured, taken back: nothing is allocated).
    fn frame_budget(&mut self, ty: &str, empty: &[(&str, Field<'_>)]) -> usize {
        let mark = self.ledger.mark();
        encode(
            self.ledger.out(),
            self.enc.event_prefix(),
            self.enc.seq,
            ty,
            empty,
        );
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
        let worst = 6 * (delta.len() + id.len()) + self.enc.event_prefix.0.len() + 256;
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
        let mark = self.encode_frame(ty, fields);
        self.keep_frame(mark)
    }

    /// Writes a frame without limit checks (the first frame, closing frames).
    fn push_unchecked(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) {
        let mark = self.encode_frame(ty, fields);
        self.ledger.keep_since(mark);
    }

    /// Encodes the next frame (the next `event_id`) into the output; returns where it starts.
    fn encode_frame(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) -> usize {
        let mark = self.ledger.mark();
        self.enc.encode_next(self.ledger.out(), ty, fields);
        mark
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

/// A message id runway makes, `m{n}` (in the AG-UI dialect `m{n}.{run tag}`), kept inline
/// (`Copy`): naming it in a frame allocates nothing.
#[derive(Debug, Clone, Copy)]
pub(super) struct MessageId {
    buf: [u8; 24],
    len: u8,
}

impl MessageId {
    /// `m{n}.{tag}`: unique in the thread, where `m{n}` is unique in the run only.
    fn tagged(n: u32, tag: &RunTag) -> Self {
        let mut id = Self::new(n);
        let at = usize::from(id.len);
        id.buf[at] = b'.';
        id.buf[at + 1..at + 1 + tag.0.len()].copy_from_slice(&tag.0);
        id.len += 1 + tag.0.len() as u8;
        id
    }

    pub(super) fn new(n: u32) -> Self {
        let mut buf = [0u8; 24];
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

    pub(super) fn as_str(&self) -> &str {
        // Only ASCII (digits after `m`, then a dot and hex digits) is ever stored.
        std::str::from_utf8(&self.buf[..usize::from(self.len)]).unwrap_or("m")
    }
}
