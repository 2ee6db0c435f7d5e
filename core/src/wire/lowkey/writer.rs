//! Lowkey's encoding of a turn: [`NdjsonWriter`], the writer of Lowkey's newline-delimited
//! events.

use std::collections::HashSet;

use serde_json::{Value, json};

use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::protocol::lowkey::LOWKEY_PROTOCOL_VERSION;
use crate::protocol::{Ending, StreamLimits};
use crate::wire::json_text::escaped_pieces;
use crate::wire::writer::{Encoding, Writer};

/// Bytes kept in reserve for the final event(s), so a turn can always end within the limits.
const FINAL_RESERVE: usize = 1024;
/// Longest `content` of a `status: working` line, in characters.
const MAX_STATUS_CHARS: usize = 80;
/// What the paragraph separator between two stretches of text is.
const PARAGRAPH: &str = "\n\n";
/// The keep-alive: `status: working` without content (Lowkey's reader needs a JSON object on
/// every line, so a blank line or comment is not an option).
const WORKING: &str = "{\"protocolVersion\":1,\"type\":\"status\",\"status\":\"working\"}\n";

/// Writes one turn of Lowkey's external turn protocol v1 as `application/x-ndjson`: one
/// `ExternalAgentTurnEvent` per line, each echoing `protocolVersion: 1`.
///
/// It guarantees:
/// - the first line is `status: started` ([`Writer::start`]), before anything else;
/// - text is streamed as `text` events as the agent writes it; a new stretch of text (after a
///   tool call, reasoning, a file or [`Output::end_message`](crate::Output::end_message))
///   starts with a blank line, so the concatenated text reads as paragraphs;
/// - exactly one terminal line, `status: complete` or `error`, and nothing after it;
/// - no line longer than `limits.max_frame_bytes` (text is split) and a stream that ends with
///   `error` before `limits.max_stream_bytes` or `limits.max_frames` would be crossed (the
///   recording of a turn is stored, so it stays as bounded as Console's);
/// - a successful turn that produced no text ends with `error` instead of an empty answer.
///
/// Reasoning becomes `status: working` "Thinking…", a tool call "Running `name`…", a file a
/// `File: [name](url)` paragraph; the rest of Console's richer output is not shown.
pub type NdjsonWriter = Writer<Lowkey>;

/// Lowkey's encoding: one JSON object per line, and where the text stands (paragraphs).
#[derive(Debug)]
pub struct Lowkey {
    /// A stretch of text is open: the next text continues it.
    in_text: bool,
    /// Announced `Thinking…` for the current reasoning stretch.
    in_reasoning: bool,
    tools_seen: HashSet<String>,
    links: HashSet<String>,
}

impl Encoding for Lowkey {
    const CONTENT_TYPE: &'static str = "application/x-ndjson";

    const KEEP_ALIVE: (&'static str, usize) = (WORKING, 1);

    fn first_frame(w: &mut NdjsonWriter) {
        w.push(&status_line("started", None));
    }

    /// None: every line must be an event Lowkey shows, and the protocol has no first-event
    /// deadline to protect (the first keep-alive, 2 s in, lets a held line go).
    fn padding(_bytes: usize) -> Option<String> {
        None
    }

    fn reserve(_w: &NdjsonWriter) -> (usize, usize) {
        (FINAL_RESERVE, 2)
    }

    fn apply(w: &mut NdjsonWriter, event: AgentEvent) {
        match event {
            AgentEvent::Text(t) => w.text(&t),
            AgentEvent::EndMessage => w.end_text(),
            AgentEvent::Reasoning(t) => w.reasoning(&t),
            AgentEvent::EndReasoning => w.end_reasoning(),
            AgentEvent::StepStarted(n) => w.step_started(&n),
            AgentEvent::ToolCallStart { id, name }
            | AgentEvent::ClientToolCallStart { id, name } => w.tool_call_start(&id, &name),
            AgentEvent::StepFinished(_)
            | AgentEvent::ToolCallArgs { .. }
            | AgentEvent::ToolCallEnd { .. }
            | AgentEvent::ToolCallResult { .. }
            | AgentEvent::ActivitySnapshot { .. }
            | AgentEvent::ActivityDelta { .. } => {}
            AgentEvent::StateSnapshot(v) | AgentEvent::StateDelta(v) => w.state_links(&v),
            AgentEvent::Artifact(a) => w.link(&a.name, &a.url),
            AgentEvent::File(_) => {}
            AgentEvent::Custom { name, value } => {
                if name == "file"
                    && let Some((n, u)) = artifact_link(&value)
                {
                    w.link(&n, &u);
                }
            }
        }
    }

    /// - [`Ending::Success`]: `status: complete`;
    /// - [`Ending::Interrupt`]: the question as `text` ([`crate::Interrupt::as_text`]), then
    ///   `status: complete`; the next turn's message is the user's answer, and
    ///   [`crate::ThreadContext::pending_interrupt`] tells the agent what it asked (`error`
    ///   `LIMIT_EXCEEDED` if the question does not fit);
    /// - [`Ending::Error`]: `error` with the user-safe message.
    fn end(w: &mut NdjsonWriter, ending: Ending) -> (String, usize, Ending) {
        let mut fin = String::new();
        let ending = match ending {
            Ending::Interrupt(i) => {
                let mut question = i.as_text();
                if !w.answer.is_empty() {
                    question.insert_str(0, PARAGRAPH);
                }
                let budget = w.text_budget();
                for piece in escaped_pieces(&question, budget) {
                    fin.push_str(&text_line(piece));
                }
                fin.push_str(&status_line("complete", None));
                let lines = fin.matches('\n').count();
                if w.ledger.stream_bytes() + fin.len() <= w.limits.max_stream_bytes
                    && w.ledger.frames() + lines <= w.limits.max_frames
                {
                    Ending::Interrupt(i)
                } else {
                    tracing::error!(code = "LIMIT_EXCEEDED", "question too long to send");
                    let code = TurnErrorCode::LimitExceeded;
                    fin = error_line(code.user_message());
                    Ending::failed(code)
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
        let lines = fin.matches('\n').count();
        (fin, lines, ending)
    }

    fn error(_w: &mut NdjsonWriter, code: TurnErrorCode) -> String {
        tracing::debug!(code = %code, "ended by an error line");
        error_line(code.user_message())
    }

    fn abort(_w: &NdjsonWriter, out: &mut String, code: TurnErrorCode) {
        out.push_str(&error_line(code.user_message()));
    }
}

impl Writer<Lowkey> {
    /// A writer keeping every line and the whole stream within `limits`.
    pub fn new(limits: StreamLimits) -> Self {
        Self::with_encoding(
            limits,
            Lowkey {
                in_text: false,
                in_reasoning: false,
                tools_seen: HashSet::new(),
                links: HashSet::new(),
            },
        )
    }

    /// Appends text to the answer as one or more `text` events.
    pub fn text(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() {
            return;
        }
        self.enc.in_reasoning = false;
        let mut delta = std::borrow::Cow::Borrowed(delta);
        if !self.enc.in_text && !self.answer.is_empty() {
            delta = std::borrow::Cow::Owned(format!("{PARAGRAPH}{delta}"));
        }
        if self.emit_text(&delta) {
            self.enc.in_text = true;
            self.answered = true;
        }
    }

    /// Ends the current stretch of text: the next text starts a new paragraph.
    pub fn end_text(&mut self) {
        self.enc.in_text = false;
    }

    /// Reasoning has no place in Lowkey's transcript: the first delta of a reasoning stretch
    /// becomes `status: working` "Thinking…", the reasoning text itself is not sent.
    pub fn reasoning(&mut self, delta: &str) {
        if delta.is_empty() || self.is_finished() || self.enc.in_reasoning {
            return;
        }
        self.enc.in_text = false;
        self.enc.in_reasoning = true;
        self.working("Thinking…");
    }

    /// Ends the current reasoning stretch.
    pub fn end_reasoning(&mut self) {
        self.enc.in_reasoning = false;
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
        if self.is_finished() || !self.enc.tools_seen.insert(id.to_owned()) {
            return;
        }
        self.enc.in_text = false;
        self.enc.in_reasoning = false;
        self.working(&format!("Running {name}…"));
    }

    /// Shows a file as its own paragraph of text: `File: [name](url)`. A URL already shown is
    /// not shown again.
    pub fn link(&mut self, name: &str, url: &str) {
        if self.is_finished() || url.is_empty() || !self.enc.links.insert(url.to_owned()) {
            return;
        }
        let name = if name.trim().is_empty() { url } else { name };
        let name = name.replace(['[', ']', '\n', '\r'], " ");
        self.enc.in_text = false;
        self.text(&format!("File: [{name}]({url})"));
        self.enc.in_text = false;
    }

    fn working(&mut self, content: &str) {
        let content: String = content.trim().chars().take(MAX_STATUS_CHARS).collect();
        let content = (!content.is_empty()).then_some(content);
        let line = status_line("working", content.as_deref());
        self.emit(&line);
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
            if !self.emit(&text_line(piece)) {
                return false;
            }
            self.keep_answer(piece);
        }
        true
    }

    /// Emits one line if it fits, keeping the final reserve; otherwise ends the turn with
    /// `error` and returns false.
    fn emit(&mut self, line: &str) -> bool {
        if self.is_finished() {
            return false;
        }
        let mark = self.ledger.mark();
        self.ledger.out().push_str(line);
        self.keep_frame(mark)
    }

    /// Writes a line without limit checks (the first line).
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
