//! Console's encoding of a turn: [`FrameWriter`], the [`Writer`] that turns what an agent
//! says into a stream of SSE frames Console accepts, whatever the agent does. What every
//! protocol's writer does (limits, the held-back final frame, the recording, keep-alives, the
//! abort tail) is in [`crate::wire::writer`]; this file holds Console's encoding (the
//! [`Encoding`] the generic writer calls), the state it takes, and the writer's constructors.
//! The rest of the encoding is in this folder, one job a file: what is open and how it is
//! closed (`messages.rs`: text, reasoning, steps, tool calls; their ids in `message_id.rs`),
//! state, activities and files (`state.rs`), the final frames and interrupts
//! (`final_frames.rs`), and frames kept within the limits (`emit.rs`).

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use super::client_view::ClientView;
use super::frame::{Field, encode};
use super::message_id::{MessageId, RunTag};
use super::sse::HEARTBEAT;
use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::protocol::agui::run_tag;
use crate::protocol::{Ending, StreamLimits};
use crate::wire::writer::{Encoding, Writer};

/// The name of the step runway opens first and closes last.
pub const TURN_STEP: &str = "turn";

/// The AG-UI protocol version `RUN_STARTED` names (`@ag-ui/core`'s `PROTOCOL_VERSION`).
pub const AGUI_PROTOCOL_VERSION: &str = "1.0";

/// Bytes held back per open item so it can always be closed within the limits.
const CLOSE_RESERVE: usize = 384;
/// Bytes held back for the final frame.
const FINAL_RESERVE: usize = 1024;

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
pub(super) enum Dialect {
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

/// Console's encoding: SSE `data:` frames of AG-UI events, `:` comments as keep-alives, and
/// what is open (messages, tool calls, steps) so it can be closed before the final frame.
/// The same encoding serves AG-UI 1.0 clients in its AG-UI dialect ([`Writer::agui`]).
#[derive(Debug)]
pub struct Console {
    pub(super) dialect: Dialect,
    pub(super) run_id: String,
    /// The run's `threadId`, named on `RUN_FINISHED` as AG-UI 1.0 requires (Console allows it
    /// when it is the request's). `None` for a writer told no thread: then it is left out,
    /// never guessed (Console discards a final frame naming another thread).
    pub(super) thread_id: Option<String>,
    /// Each activity message's type: AG-UI 1.0 names it on every `ACTIVITY_DELTA`.
    pub(super) activity_types: HashMap<String, String>,
    /// Every `event_id` is `{prefix}.{n}`: the prefix, JSON-escaped once.
    pub(super) event_prefix: EscapedPrefix,
    pub(super) seq: u64,
    /// The open text message's id.
    pub(super) text: Option<MessageId>,
    /// The open reasoning message's id.
    pub(super) reasoning: Option<MessageId>,
    pub(super) tools: Vec<String>,
    pub(super) tools_seen: HashSet<String>,
    pub(super) steps: Vec<String>,
    pub(super) next_message: u32,
    pub(super) artifacts: Vec<Value>,
    pub(super) state_file_urls: HashSet<String>,
    pub(super) custom_file_urls: HashSet<String>,
    /// What the AG-UI client holds as the run goes (its messages and state), for the snapshots
    /// before an interrupt; `None` for Console, which keeps its own.
    pub(super) view: Option<Box<ClientView>>,
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
    pub(super) fn event_prefix(&self) -> Option<&str> {
        match self.dialect {
            Dialect::Console => Some(&self.event_prefix.0),
            Dialect::Agui { .. } => None,
        }
    }

    pub(super) fn is_agui(&self) -> bool {
        matches!(self.dialect, Dialect::Agui { .. })
    }

    /// Encodes the next frame (the next `event_id`) into `out`.
    pub(super) fn encode_next(&mut self, out: &mut String, ty: &str, fields: &[(&str, Field<'_>)]) {
        encode(out, self.event_prefix(), self.seq, ty, fields);
        self.seq += 1;
    }
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
        let encoded = w.final_frame(&ending);
        (encoded, 1, ending)
    }

    fn error(w: &mut FrameWriter, code: TurnErrorCode) -> String {
        w.run_error(code)
    }

    fn reports_usage(w: &FrameWriter) -> bool {
        w.enc.is_agui()
    }

    fn abort(w: &FrameWriter, out: &mut String, code: TurnErrorCode) {
        w.abort_frames(out, code);
    }

    /// Closes the turn step, then `RUN_ERROR` `REPLAY_UNAVAILABLE`.
    fn unrecorded(w: &mut FrameWriter) -> String {
        w.unrecorded_frames()
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
}

/// An `event_id` prefix, JSON-escaped.
#[derive(Debug)]
pub(super) struct EscapedPrefix(pub(super) String);

impl EscapedPrefix {
    fn new(prefix: &str) -> Self {
        let mut s = String::with_capacity(prefix.len());
        crate::wire::json_text::push_escaped(&mut s, prefix);
        Self(s)
    }
}
