//! [`NdjsonWriter`]: the sans-I/O writer of Lowkey's newline-delimited events.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::protocol::Limits;
use crate::wire::Ending;
use crate::wire::Wire;
use crate::wire::json_text::escaped_pieces;
use crate::wire::ledger::Ledger;
use crate::wire::recorder::RecordPool;

use crate::protocol::lowkey::LOWKEY_PROTOCOL_VERSION;

/// Bytes kept in reserve for the final event(s), so a turn can always end within the limits.
const FINAL_RESERVE: usize = 1024;
/// Longest `content` of a `status: working` line, in characters.
const MAX_STATUS_CHARS: usize = 80;
/// What the paragraph separator between two stretches of text is.
const PARAGRAPH: &str = "\n\n";

/// Writes one turn of Lowkey's external turn protocol v1 as `application/x-ndjson`: one
/// `ExternalAgentTurnEvent` per line, each echoing `protocolVersion: 1`.
///
/// It guarantees:
/// - the first line is `status: started` ([`NdjsonWriter::start`]), before anything else;
/// - text is streamed as `text` events as the agent writes it; a new stretch of text (after a
///   tool call, reasoning, a file or [`AgentEvent::EndMessage`]) starts with a blank line, so
///   the concatenated text reads as paragraphs;
/// - exactly one terminal line, `status: complete` or `error`, and nothing after it;
/// - no line longer than `limits.max_frame_bytes` (text is split) and a stream that ends with
///   `error` before `limits.max_stream_bytes` or `limits.max_frames` would be crossed (the
///   recording of a turn is stored, so it stays as bounded as Console's);
/// - a successful turn that produced no text ends with `error` instead of an empty answer.
///
/// How each [`AgentEvent`] is shown is tabled in the docs of the `wire::lowkey` module
/// (`core/src/wire/lowkey/mod.rs`).
///
/// The terminal line is held back ([`NdjsonWriter::take_final`]) so the engine can commit the
/// turn first and send an `error` instead if that fails.
#[derive(Debug)]
pub struct NdjsonWriter {
    limits: Limits,
    /// Output, recording, bytes and lines: the ledger Console's writer keeps too.
    ledger: Ledger,
    /// A stretch of text is open: the next text continues it.
    in_text: bool,
    /// Announced `Thinking…` for the current reasoning stretch.
    in_reasoning: bool,
    tools_seen: HashSet<String>,
    links: HashSet<String>,
    answer: String,
    answered: bool,
    final_line: Option<String>,
    ending: Option<Ending>,
}

impl NdjsonWriter {
    /// A writer keeping every line and the whole stream within `limits`.
    pub fn new(limits: Limits) -> Self {
        Self {
            limits,
            ledger: Ledger::new(RecordPool::process()),
            in_text: false,
            in_reasoning: false,
            tools_seen: HashSet::new(),
            links: HashSet::new(),
            answer: String::new(),
            answered: false,
            final_line: None,
            ending: None,
        }
    }

    /// Writes `status: started`. It is not part of the recorded turn: a replay writes its own
    /// first line at once and then the recording.
    pub fn start(&mut self) {
        debug_assert_eq!(self.ledger.frames(), 0, "start() must come first");
        let line = status_line("started", None);
        self.push(&line);
        self.ledger.start_recording();
    }

    /// Writes a keep-alive: a `status: working` line without content (Lowkey's reader needs a
    /// JSON object on every line, so a blank line or comment is not an option). Never recorded,
    /// counted against the stream limit, and skipped once the turn has ended or when room is
    /// short.
    pub fn heartbeat(&mut self) {
        if self.is_finished() {
            return;
        }
        let line = status_line("working", None);
        if self.ledger.stream_bytes() + line.len() + FINAL_RESERVE <= self.limits.max_stream_bytes
            && self.ledger.frames() + 3 <= self.limits.max_frames
        {
            self.ledger.push_unrecorded(&line, 1);
        }
    }

    /// Appends text to the answer as one or more `text` events.
    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() {
            return;
        }
        self.in_reasoning = false;
        let mut delta = std::borrow::Cow::Borrowed(delta);
        if !self.in_text && !self.answer.is_empty() {
            delta = std::borrow::Cow::Owned(format!("{PARAGRAPH}{delta}"));
        }
        if self.emit_text(&delta) {
            self.in_text = true;
            self.answered = true;
        }
    }

    /// Ends the current stretch of text: the next text starts a new paragraph.
    pub fn end_text(&mut self) {
        self.in_text = false;
    }

    /// Reasoning has no place in Lowkey's transcript: the first delta of a reasoning stretch
    /// becomes `status: working` "Thinking…", the reasoning text itself is not sent.
    pub fn reasoning(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() || self.in_reasoning {
            return;
        }
        self.in_text = false;
        self.in_reasoning = true;
        self.working("Thinking…");
    }

    /// Ends the current reasoning stretch.
    pub fn end_reasoning(&mut self) {
        self.in_reasoning = false;
    }

    /// A named step: `status: working` with the step's name.
    pub fn step_started(&mut self, name: &str) {
        if self.is_finished() {
            return;
        }
        self.working(name);
    }

    /// A tool call starts: `status: working` `Running <name>…` (once per call id). Text after
    /// it starts a new paragraph.
    pub fn tool_call_start(&mut self, id: &str, name: &str) {
        if self.is_finished() || !self.tools_seen.insert(id.to_owned()) {
            return;
        }
        self.in_text = false;
        self.in_reasoning = false;
        self.working(&format!("Running {name}…"));
    }

    /// Shows a file as its own paragraph of text: `File: [name](url)`. A URL already shown is
    /// not shown again.
    pub fn link(&mut self, name: &str, url: &str) {
        if self.is_finished() || url.is_empty() || !self.links.insert(url.to_owned()) {
            return;
        }
        let name = if name.trim().is_empty() { url } else { name };
        let name = name.replace(['[', ']', '\n', '\r'], " ");
        self.in_text = false;
        self.text(&format!("File: [{name}]({url})"));
        self.in_text = false;
    }

    /// Ends the turn and prepares the terminal line(s), held back in
    /// [`NdjsonWriter::take_final`]. Does nothing if the turn already ended.
    ///
    /// - [`Ending::Success`]: `status: complete` (or `error` if no text was sent);
    /// - [`Ending::Interrupt`]: the question as `text` ([`crate::Interrupt::as_text`]), then
    ///   `status: complete`; the next turn's message is the user's answer, and
    ///   [`crate::ThreadContext::pending_interrupt`] tells the agent what it asked;
    /// - [`Ending::Error`]: `error` with the user-safe message.
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
                    tracing::error!(code = "INTERRUPT_INVALID", error = %e, "agent asked an invalid question");
                    Ending::error(
                        TurnErrorCode::InterruptInvalid,
                        "The agent could not ask its question.",
                    )
                }
            },
            other => other,
        };
        let mut fin = String::new();
        let ending = match ending {
            Ending::Interrupt(i) => {
                let mut question = i.as_text();
                if !self.answer.is_empty() {
                    question.insert_str(0, PARAGRAPH);
                }
                let budget = self.text_budget();
                for piece in escaped_pieces(&question, budget) {
                    fin.push_str(&text_line(piece));
                }
                fin.push_str(&status_line("complete", None));
                let lines = fin.matches('\n').count();
                if self.ledger.stream_bytes() + fin.len() <= self.limits.max_stream_bytes
                    && self.ledger.frames() + lines <= self.limits.max_frames
                {
                    Ending::Interrupt(i)
                } else {
                    tracing::error!(code = "LIMIT_EXCEEDED", "question too long to send");
                    fin = error_line("The answer was too long and has been cut short.");
                    Ending::error(
                        TurnErrorCode::LimitExceeded,
                        "The answer was too long and has been cut short.",
                    )
                }
            }
            Ending::Success => {
                fin = status_line("complete", None);
                Ending::Success
            }
            Ending::Error { code, message } => {
                fin = error_line(&message);
                Ending::Error { code, message }
            }
        };
        self.ledger.count_final(&fin, fin.matches('\n').count());
        self.final_line = Some(fin);
        self.ending = Some(ending);
    }

    /// An `error` line to send in place of the prepared terminal line (when committing the
    /// turn failed). Not recorded.
    pub fn replacement_error(&mut self, message: &str) -> String {
        self.final_line = None;
        error_line(message)
    }

    /// The lines that would end the stream right now with `error`: pending output, then the
    /// `error` line. Empty once the terminal line has been taken (or replaced). Leaves the
    /// writer unchanged (see [`crate::adapter::TurnBody::abort`]).
    pub fn abort_tail(&self, message: &str) -> String {
        if self.ending.is_some() && self.final_line.is_none() {
            return String::new();
        }
        let mut out = self.ledger.pending().to_owned();
        out.push_str(&error_line(message));
        out
    }

    /// Lines ready to send, in order. The terminal line is not among them.
    pub fn take_output(&mut self) -> String {
        self.ledger.take_output()
    }

    /// The prepared terminal line(s), once the turn has ended.
    pub fn take_final(&mut self) -> Option<String> {
        self.final_line.take()
    }

    /// True once the turn has ended (by [`NdjsonWriter::finish`] or a limit).
    pub fn is_finished(&self) -> bool {
        self.ending.is_some()
    }

    /// How the turn ended, once it has.
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    /// Everything after the first line, terminal line included: what a replay sends (empty
    /// if the recording was not kept: see [`NdjsonWriter::take_recording`]).
    pub fn recording(&self) -> &str {
        self.ledger.recording().unwrap_or_default()
    }

    /// Counts this turn's recording in `pool` instead of the process's (tests).
    #[must_use]
    pub fn with_record_pool(mut self, pool: &'static RecordPool) -> Self {
        self.ledger.set_record_pool(pool);
        self
    }

    /// Takes what a replay sends, once the turn has finished: the recording, moved out. If it
    /// was not kept (recordings were at their memory bound, see [`RecordPool`]), an `error`
    /// event saying so instead, so a repeated delivery never runs the agent again.
    pub fn take_recording(&mut self) -> String {
        self.ledger.take_recording().unwrap_or_else(|| {
            error_line("This message was already answered, but the answer was too long to keep for a repeat. Please ask again.")
        })
    }

    /// The text the user saw (links included, the closing question not: the engine adds it to
    /// the transcript itself).
    pub fn answer(&self) -> &str {
        &self.answer
    }

    /// Bytes written so far, keep-alives included.
    pub fn stream_bytes(&self) -> usize {
        self.ledger.stream_bytes()
    }

    fn working(&mut self, content: &str) {
        let content: String = content.trim().chars().take(MAX_STATUS_CHARS).collect();
        let content = (!content.is_empty()).then_some(content);
        let line = status_line("working", content.as_deref());
        self.emit(line);
    }

    /// Budget for one `text` event's escaped content.
    fn text_budget(&self) -> usize {
        self.limits
            .max_frame_bytes
            .saturating_sub(text_line("").len() + 8)
    }

    /// Emits `content` as `text` events, each within the line limit. Returns false if the turn
    /// ended on a limit instead.
    fn emit_text(&mut self, content: &str) -> bool {
        let budget = self.text_budget();
        for piece in escaped_pieces(content, budget) {
            if !self.emit(text_line(piece)) {
                return false;
            }
            crate::turn::flow::keep_answer(&mut self.answer, piece);
        }
        true
    }

    /// Emits one line if it fits, keeping the final reserve; otherwise ends the turn with
    /// `error` and returns false.
    fn emit(&mut self, line: String) -> bool {
        if self.is_finished() {
            return false;
        }
        let fits_bytes =
            self.ledger.stream_bytes() + line.len() + FINAL_RESERVE <= self.limits.max_stream_bytes;
        let fits_lines = self.ledger.frames() + 3 <= self.limits.max_frames;
        if line.len() > self.limits.max_frame_bytes || !fits_bytes || !fits_lines {
            tracing::error!(
                code = "LIMIT_EXCEEDED",
                bytes = self.ledger.stream_bytes(),
                lines = self.ledger.frames(),
                "stream limit reached"
            );
            self.finish(Ending::error(
                TurnErrorCode::LimitExceeded,
                "The answer was too long and has been cut short.",
            ));
            return false;
        }
        self.push(&line);
        true
    }

    fn push(&mut self, line: &str) {
        let mark = self.ledger.mark();
        self.ledger.out().push_str(line);
        self.ledger.keep_since(mark);
    }

    /// The artifacts listed in a state snapshot (`{"artifacts": [...]}`) or added by a JSON
    /// Patch (`add`/`replace` under `/artifacts`).
    fn state_links(&mut self, value: &Value) {
        let mut items: Vec<&Value> = Vec::new();
        match value {
            Value::Object(obj) => {
                if let Some(Value::Array(a)) = obj.get("artifacts") {
                    items.extend(a.iter());
                }
            }
            Value::Array(ops) => {
                for op in ops {
                    let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                    let kind = op.get("op").and_then(Value::as_str).unwrap_or("");
                    if !(path == "/artifacts" || path.starts_with("/artifacts/"))
                        || !(kind == "add" || kind == "replace")
                    {
                        continue;
                    }
                    match op.get("value") {
                        Some(Value::Array(a)) => items.extend(a.iter()),
                        Some(v) => items.push(v),
                        None => {}
                    }
                }
            }
            _ => {}
        }
        let found: Vec<(String, String)> = items.into_iter().filter_map(artifact_link).collect();
        for (name, url) in found {
            self.link(&name, &url);
        }
    }
}

/// A terminal `error` event line, for an adapter that must end a live Lowkey stream by itself
/// (the Workers adapter's panic hook does this for Console's streams with `RUN_ERROR`).
pub fn error_event(message: &str) -> String {
    error_line(message)
}

/// True if `chunk` carries a terminal event (`status: complete` or `error`). Every line starts
/// with `{"protocolVersion":1,"type":` and quotes inside strings are escaped, so the pattern
/// cannot appear inside a `text` event's content.
pub fn has_terminal_event(chunk: &[u8]) -> bool {
    const PATTERNS: [&[u8]; 2] = [
        b"{\"protocolVersion\":1,\"type\":\"status\",\"status\":\"complete\"",
        b"{\"protocolVersion\":1,\"type\":\"error\"",
    ];
    PATTERNS
        .iter()
        .any(|p| chunk.windows(p.len()).any(|w| w == *p))
}

/// `(name, url)` of an artifact-shaped object.
fn artifact_link(v: &Value) -> Option<(String, String)> {
    let url = v.get("url").and_then(Value::as_str)?;
    let name = v.get("name").and_then(Value::as_str).unwrap_or("");
    Some((name.to_owned(), url.to_owned()))
}

fn status_line(status: &str, content: Option<&str>) -> String {
    let v = match content {
        Some(c) => json!({
            "protocolVersion": LOWKEY_PROTOCOL_VERSION, "type": "status",
            "status": status, "content": c,
        }),
        None => json!({
            "protocolVersion": LOWKEY_PROTOCOL_VERSION, "type": "status", "status": status,
        }),
    };
    line_of(&v)
}

fn text_line(content: &str) -> String {
    line_of(&json!({
        "protocolVersion": LOWKEY_PROTOCOL_VERSION, "type": "text", "content": content,
    }))
}

fn error_line(message: &str) -> String {
    line_of(&json!({
        "protocolVersion": LOWKEY_PROTOCOL_VERSION, "type": "error", "content": message,
    }))
}

/// Compact JSON never contains a raw newline, so one line is one event.
fn line_of(v: &Value) -> String {
    let mut s = v.to_string();
    s.push('\n');
    s
}

impl Wire for NdjsonWriter {
    const CONTENT_TYPE: &'static str = "application/x-ndjson";

    fn start(&mut self) {
        NdjsonWriter::start(self);
    }

    fn heartbeat(&mut self) {
        NdjsonWriter::heartbeat(self);
    }

    fn apply(&mut self, event: AgentEvent) {
        match event {
            AgentEvent::Text(t) => self.text(&t),
            AgentEvent::EndMessage => self.end_text(),
            AgentEvent::Reasoning(t) => self.reasoning(&t),
            AgentEvent::EndReasoning => self.end_reasoning(),
            AgentEvent::StepStarted(n) => self.step_started(&n),
            AgentEvent::ToolCallStart { id, name } => self.tool_call_start(&id, &name),
            AgentEvent::StepFinished(_)
            | AgentEvent::ToolCallArgs { .. }
            | AgentEvent::ToolCallEnd { .. }
            | AgentEvent::ToolCallResult { .. }
            | AgentEvent::ActivitySnapshot { .. }
            | AgentEvent::ActivityDelta { .. } => {}
            AgentEvent::StateSnapshot(v) | AgentEvent::StateDelta(v) => self.state_links(&v),
            AgentEvent::Artifact(a) => self.link(&a.name, &a.url),
            AgentEvent::File(_) => {
                tracing::error!("unhosted file reached the NDJSON writer; dropped");
            }
            AgentEvent::Custom { name, value } => {
                if name == "file"
                    && let Some((n, u)) = artifact_link(&value)
                {
                    self.link(&n, &u);
                }
            }
        }
    }

    fn finish(&mut self, ending: Ending) {
        NdjsonWriter::finish(self, ending);
    }

    fn take_output(&mut self) -> String {
        NdjsonWriter::take_output(self)
    }

    fn take_final(&mut self) -> Option<String> {
        NdjsonWriter::take_final(self)
    }

    fn ending(&self) -> Option<&Ending> {
        NdjsonWriter::ending(self)
    }

    fn take_recording(&mut self) -> String {
        NdjsonWriter::take_recording(self)
    }

    fn answer(&self) -> &str {
        NdjsonWriter::answer(self)
    }

    fn replacement_error(&mut self, code: TurnErrorCode, message: &str) -> String {
        tracing::debug!(code = %code, "terminal line replaced by an error");
        NdjsonWriter::replacement_error(self, message)
    }

    fn abort_tail(&self, _code: TurnErrorCode, message: &str) -> String {
        NdjsonWriter::abort_tail(self, message)
    }
}
