//! The frame rule engine, sans I/O: feed it the payload of each `data:` line
//! in order, it says what Console does with the frame and returns what it
//! noticed; at the end of the stream, tell it how the stream ended.
//!
//! Rules applied, in order, to each frame:
//!
//! 1. after the final frame, every data frame is lost (`FRAME_AFTER_FINAL`);
//! 2. the line must hold a JSON object with a string `type`
//!    (`MALFORMED_FRAME`, dropped);
//! 3. envelope: `run_id` / `threadId`, when present (not null), must equal the
//!    request's (`ENVELOPE_MISMATCH`, discarded);
//! 4. `RUN_STARTED` and `REASONING_END` must not be sent (`RUN_STARTED_SENT`,
//!    `REASONING_END_SENT`); other types Console does not handle are dropped
//!    (`UNKNOWN_FRAME_TYPE`);
//! 5. required fields per type (`MALFORMED_FRAME`, dropped);
//! 6. state keys: only `todos`, `artifacts`, `files` (`STATE_KEY_DROPPED`);
//! 7. ordering: text stretches close before a tool call, content only for
//!    open messages, ids unique within the turn, a tool call before the
//!    answer that follows it (`ORDERING`);
//! 8. one file, one channel (`DUPLICATE_FILE_CHANNEL`);
//! 9. at the final frame: everything opened is closed (`FRAMES_LEFT_OPEN`),
//!    no empty bubble (`EMPTY_BUBBLE`), a valid interrupt
//!    (`INTERRUPT_REJECTED`, the turn fails);
//! 10. at the end of the stream: a final frame was received
//!     (`NO_FINAL_FRAME`).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::{Map, Value};

use crate::findings::{Code, Finding};
use crate::interrupt::validate_interrupt_outcome;

/// The only keys Console accepts in `STATE_SNAPSHOT` / `STATE_DELTA`.
pub const STATE_KEYS: [&str; 3] = ["todos", "artifacts", "files"];

/// At most this many findings of one code are kept per turn; the rest are
/// counted in one summary finding.
const MAX_PER_CODE: usize = 3;

/// The ids of the request the stream answers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunIds {
    /// `runId` of the request.
    pub run_id: String,
    /// `threadId` of the request.
    pub thread_id: String,
}

/// What Console does with one frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Disposition {
    /// A valid frame, rendered.
    Accepted,
    /// Ignored by Console (malformed, unknown, mismatched, after the end).
    Dropped,
    /// A valid final frame (`RUN_FINISHED` or `RUN_ERROR`).
    Final,
    /// The frame fails the whole turn with this code.
    Fatal(Code),
}

/// The final frame of a turn.
#[derive(Debug, Clone, PartialEq)]
pub enum FinalFrame {
    /// `RUN_FINISHED` with `outcome.type = "success"`.
    Success,
    /// `RUN_FINISHED` with a valid interrupt outcome (the outcome object).
    Interrupt(Value),
    /// `RUN_ERROR` with its message.
    Error(String),
}

/// The result of feeding one frame.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// What Console does with it.
    pub disposition: Disposition,
    /// What it revealed (may be empty).
    pub findings: Vec<Finding>,
}

/// How the byte stream ended, as far as the rule engine cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamEnd {
    /// The server closed the stream cleanly (or the reader stopped after
    /// the final frame).
    Closed,
    /// The turn already failed with an error code (timeout, truncation,
    /// limit, ...); no end-of-stream rule applies.
    Failed,
    /// The reader stopped on purpose before the end (the Test button stops at
    /// the first valid frame); no end-of-stream rule applies.
    Stopped,
}

#[derive(Debug, Default)]
struct Message {
    id: String,
    text: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Field {
    Str,
    Object,
    Any,
}

fn required_fields(frame_type: &str) -> Option<&'static [(&'static str, Field)]> {
    use Field::*;
    let fields: &'static [(&'static str, Field)] = match frame_type {
        "TEXT_MESSAGE_START" | "TEXT_MESSAGE_END" => &[("messageId", Str)],
        "TEXT_MESSAGE_CONTENT" => &[("messageId", Str), ("delta", Str)],
        "RUN_FINISHED" => &[("outcome", Object)],
        "RUN_ERROR" => &[("message", Str)],
        "TOOL_CALL_START" => &[("toolCallId", Str), ("toolCallName", Str)],
        "TOOL_CALL_ARGS" => &[("toolCallId", Str), ("delta", Str)],
        "TOOL_CALL_END" => &[("toolCallId", Str)],
        "TOOL_CALL_RESULT" => &[("toolCallId", Str), ("content", Any)],
        "STEP_STARTED" | "STEP_FINISHED" => &[("stepName", Str)],
        "ACTIVITY_SNAPSHOT" => &[("messageId", Str), ("activityType", Str), ("content", Any)],
        "ACTIVITY_DELTA" => &[("messageId", Str), ("patch", Any)],
        "STATE_SNAPSHOT" => &[("snapshot", Object)],
        "STATE_DELTA" => &[("delta", Any)],
        "REASONING_MESSAGE_START" | "REASONING_MESSAGE_CONTENT" | "REASONING_MESSAGE_END" => {
            &[("messageId", Str)]
        }
        "CUSTOM" => &[("name", Str)],
        _ => return None,
    };
    Some(fields)
}

/// The rule engine for one turn.
#[derive(Debug)]
pub struct FrameRules {
    ids: RunIds,
    frames: usize,
    final_frame: Option<FinalFrame>,
    failed: bool,
    messages: Vec<Message>,
    open_messages: Vec<String>,
    seen_messages: HashSet<String>,
    open_tools: Vec<String>,
    seen_tools: HashSet<String>,
    open_steps: Vec<String>,
    open_reasoning: Vec<String>,
    last_text_start: Option<usize>,
    last_tool_start: Option<usize>,
    visible: bool,
    artifact_urls: BTreeSet<String>,
    custom_file_urls: BTreeSet<String>,
    duplicate_urls: BTreeSet<String>,
    per_code: BTreeMap<Code, usize>,
}

impl FrameRules {
    /// A fresh engine for the turn identified by `ids`.
    pub fn new(ids: RunIds) -> Self {
        FrameRules {
            ids,
            frames: 0,
            final_frame: None,
            failed: false,
            messages: Vec::new(),
            open_messages: Vec::new(),
            seen_messages: HashSet::new(),
            open_tools: Vec::new(),
            seen_tools: HashSet::new(),
            open_steps: Vec::new(),
            open_reasoning: Vec::new(),
            last_text_start: None,
            last_tool_start: None,
            visible: false,
            artifact_urls: BTreeSet::new(),
            custom_file_urls: BTreeSet::new(),
            duplicate_urls: BTreeSet::new(),
            per_code: BTreeMap::new(),
        }
    }

    /// Feeds the payload of one `data:` line.
    pub fn on_frame(&mut self, data: &[u8]) -> Step {
        self.frames += 1;
        let index = self.frames;
        let mut out = Out::default();
        let disposition = self.judge(index, data, &mut out);
        Step {
            disposition,
            findings: self.cap(out.0),
        }
    }

    /// Tells the engine how the stream ended; returns the end-of-stream
    /// findings plus one summary finding per code whose findings were
    /// capped.
    pub fn finish(&mut self, end: StreamEnd) -> Vec<Finding> {
        let mut found = Vec::new();
        if end == StreamEnd::Closed && self.final_frame.is_none() && !self.failed {
            let open = self.open_summary();
            let tail = if open.is_empty() {
                String::new()
            } else {
                format!(" (still open: {open})")
            };
            found.push(Finding::new(
                Code::NoFinalFrame,
                format!(
                    "the stream closed after {} frame(s) without RUN_FINISHED or RUN_ERROR{tail}: \
                     Console stores what arrived as a complete answer",
                    self.frames
                ),
            ));
        }
        let mut found = self.cap(found);
        for (code, count) in &self.per_code {
            if *count > MAX_PER_CODE {
                found.push(Finding::new(
                    *code,
                    format!(
                        "... and {} more {code} finding(s) in this turn",
                        count - MAX_PER_CODE
                    ),
                ));
            }
        }
        found
    }

    /// The final frame, once received.
    pub fn final_frame(&self) -> Option<&FinalFrame> {
        self.final_frame.as_ref()
    }

    /// Number of data frames fed so far.
    pub fn frame_count(&self) -> usize {
        self.frames
    }

    /// The answer: the text of the last text message of the turn.
    pub fn answer(&self) -> &str {
        self.messages.last().map(|m| m.text.as_str()).unwrap_or("")
    }

    /// The text of every text message of the turn, one per line.
    pub fn all_text(&self) -> String {
        self.messages
            .iter()
            .map(|m| m.text.as_str())
            .collect::<Vec<_>>()
            .join("\n")
    }

    fn cap(&mut self, findings: Vec<Finding>) -> Vec<Finding> {
        let mut kept = Vec::new();
        for f in findings {
            let n = self.per_code.entry(f.code).or_insert(0);
            *n += 1;
            if *n <= MAX_PER_CODE {
                kept.push(f);
            }
        }
        kept
    }

    fn open_summary(&self) -> String {
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

    fn judge(&mut self, index: usize, data: &[u8], out: &mut Out) -> Disposition {
        if self.final_frame.is_some() || self.failed {
            out.push(
                Code::FrameAfterFinal,
                format!("frame #{index} arrived after the final frame and is lost"),
            );
            return Disposition::Dropped;
        }
        let frame: Map<String, Value> = match serde_json::from_slice::<Value>(data) {
            Ok(Value::Object(map)) => map,
            Ok(_) => {
                out.push(
                    Code::MalformedFrame,
                    format!("frame #{index} is JSON but not an object: dropped"),
                );
                return Disposition::Dropped;
            }
            Err(e) => {
                out.push(
                    Code::MalformedFrame,
                    format!("frame #{index} is not JSON ({e}): dropped"),
                );
                return Disposition::Dropped;
            }
        };
        let frame_type = match frame.get("type") {
            Some(Value::String(t)) => t.clone(),
            _ => {
                out.push(
                    Code::MalformedFrame,
                    format!("frame #{index} has no string `type`: dropped"),
                );
                return Disposition::Dropped;
            }
        };
        let at = format!("frame #{index} {frame_type}");
        for (field, expected) in [
            ("run_id", &self.ids.run_id),
            ("threadId", &self.ids.thread_id),
        ] {
            if let Some(v) = frame.get(field)
                && !v.is_null()
                && v.as_str() != Some(expected.as_str())
            {
                out.push(
                    Code::EnvelopeMismatch,
                    format!(
                        "{at}: {field} {v} does not match the request's {expected:?}: discarded"
                    ),
                );
                return Disposition::Dropped;
            }
        }
        match frame_type.as_str() {
            "RUN_STARTED" => {
                out.push(
                    Code::RunStartedSent,
                    format!(
                        "{at}: do not send RUN_STARTED, Console emits it when it opens the turn"
                    ),
                );
                return Disposition::Dropped;
            }
            "REASONING_END" => {
                out.push(
                    Code::ReasoningEndSent,
                    format!("{at}: do not send REASONING_END, Console emits it alongside REASONING_MESSAGE_END"),
                );
                return Disposition::Dropped;
            }
            _ => {}
        }
        let Some(fields) = required_fields(&frame_type) else {
            out.push(
                Code::UnknownFrameType,
                format!("{at}: Console does not handle this frame type: dropped"),
            );
            return Disposition::Dropped;
        };
        for (name, kind) in fields {
            let ok = match (frame.get(*name), kind) {
                (None | Some(Value::Null), _) => false,
                (Some(v), Field::Str) => v.is_string(),
                (Some(v), Field::Object) => v.is_object(),
                (Some(_), Field::Any) => true,
            };
            if !ok {
                let wanted = match kind {
                    Field::Str => "a string",
                    Field::Object => "an object",
                    Field::Any => "present",
                };
                out.push(
                    Code::MalformedFrame,
                    format!("{at}: required field `{name}` must be {wanted}: dropped"),
                );
                return Disposition::Dropped;
            }
        }
        self.apply(index, &at, &frame_type, &frame, out)
    }

    fn apply(
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
            "STATE_SNAPSHOT" => {
                if let Some(Value::Object(snapshot)) = frame.get("snapshot") {
                    self.state_keys(at, snapshot.keys().map(String::as_str), out);
                    if snapshot.keys().any(|k| STATE_KEYS.contains(&k.as_str())) {
                        self.visible = true;
                    }
                    if let Some(artifacts) = snapshot.get("artifacts") {
                        let mut urls = BTreeSet::new();
                        collect_urls(artifacts, &mut urls);
                        self.add_file_urls(at, urls, true, out);
                    }
                }
            }
            "STATE_DELTA" => self.state_delta(at, frame.get("delta").unwrap_or(&Value::Null), out),
            "CUSTOM" => {
                self.visible = true;
                if frame.get("name").and_then(Value::as_str) == Some("file") {
                    let mut urls = BTreeSet::new();
                    collect_urls(frame.get("value").unwrap_or(&Value::Null), &mut urls);
                    self.add_file_urls(at, urls, false, out);
                }
            }
            "RUN_FINISHED" => return self.run_finished(at, frame, out),
            "RUN_ERROR" => {
                self.close_check(at, out);
                self.final_frame = Some(FinalFrame::Error(s("message")));
                return Disposition::Final;
            }
            _ => {}
        }
        Disposition::Accepted
    }

    fn run_finished(&mut self, at: &str, frame: &Map<String, Value>, out: &mut Out) -> Disposition {
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

    fn state_keys<'a>(&mut self, at: &str, keys: impl Iterator<Item = &'a str>, out: &mut Out) {
        let dropped: Vec<&str> = keys.filter(|k| !STATE_KEYS.contains(k)).collect();
        if !dropped.is_empty() {
            out.push(
                Code::StateKeyDropped,
                format!(
                    "{at}: state key(s) {} dropped: only todos, artifacts and files are accepted",
                    dropped.join(", ")
                ),
            );
        }
    }

    fn state_delta(&mut self, at: &str, delta: &Value, out: &mut Out) {
        match delta {
            Value::Array(ops) => {
                let mut keys = Vec::new();
                let mut urls = BTreeSet::new();
                for op in ops {
                    let path = op.get("path").and_then(Value::as_str).unwrap_or("");
                    let first = path
                        .trim_start_matches('/')
                        .split('/')
                        .next()
                        .unwrap_or("")
                        .replace("~1", "/")
                        .replace("~0", "~");
                    if first.is_empty() {
                        if let Some(Value::Object(root)) = op.get("value") {
                            keys.extend(root.keys().cloned());
                            if let Some(a) = root.get("artifacts") {
                                collect_urls(a, &mut urls);
                            }
                        }
                    } else {
                        if first == "artifacts"
                            && let Some(v) = op.get("value")
                        {
                            collect_urls(v, &mut urls);
                        }
                        keys.push(first);
                    }
                }
                if keys.iter().any(|k| STATE_KEYS.contains(&k.as_str())) {
                    self.visible = true;
                }
                self.state_keys(at, keys.iter().map(String::as_str), out);
                self.add_file_urls(at, urls, true, out);
            }
            Value::Object(map) => {
                if map.keys().any(|k| STATE_KEYS.contains(&k.as_str())) {
                    self.visible = true;
                }
                self.state_keys(at, map.keys().map(String::as_str), out);
                if let Some(a) = map.get("artifacts") {
                    let mut urls = BTreeSet::new();
                    collect_urls(a, &mut urls);
                    self.add_file_urls(at, urls, true, out);
                }
            }
            _ => {}
        }
    }

    fn add_file_urls(&mut self, at: &str, urls: BTreeSet<String>, artifacts: bool, out: &mut Out) {
        for url in urls {
            let other = if artifacts {
                &self.custom_file_urls
            } else {
                &self.artifact_urls
            };
            if other.contains(&url) && self.duplicate_urls.insert(url.clone()) {
                out.push(
                    Code::DuplicateFileChannel,
                    format!("{at}: file {url} sent both as a STATE_SNAPSHOT artifact and as CUSTOM name=file: the user sees two cards (one file, one channel)"),
                );
            }
            if artifacts {
                self.artifact_urls.insert(url);
            } else {
                self.custom_file_urls.insert(url);
            }
        }
    }
}

/// Collects the string values of every `url` key, at any depth.
fn collect_urls(v: &Value, urls: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, val) in map {
                match (k.as_str(), val) {
                    ("url", Value::String(u)) => {
                        urls.insert(u.clone());
                    }
                    _ => collect_urls(val, urls),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|i| collect_urls(i, urls)),
        _ => {}
    }
}

#[derive(Default)]
struct Out(Vec<Finding>);

impl Out {
    fn push(&mut self, code: Code, message: String) {
        self.0.push(Finding::new(code, message));
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn engine() -> FrameRules {
        FrameRules::new(RunIds {
            run_id: "11".into(),
            thread_id: "22".into(),
        })
    }

    /// Feeds frames, closes the stream, returns every code seen.
    fn codes(frames: &[Value]) -> Vec<Code> {
        let mut e = engine();
        let mut all = Vec::new();
        for f in frames {
            all.extend(e.on_frame(f.to_string().as_bytes()).findings);
        }
        all.extend(e.finish(StreamEnd::Closed));
        all.into_iter().map(|f| f.code).collect()
    }

    fn answer(text: &str) -> Vec<Value> {
        vec![
            json!({"type":"TEXT_MESSAGE_START","messageId":"a1","role":"assistant"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":text}),
            json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
        ]
    }

    fn finished() -> Value {
        json!({"type":"RUN_FINISHED","outcome":{"type":"success"}})
    }

    fn with_final(mut frames: Vec<Value>) -> Vec<Value> {
        frames.push(finished());
        frames
    }

    #[test]
    fn the_minimal_stream_is_clean() {
        let mut e = engine();
        for f in with_final(answer("Gold fell 0.5%")) {
            let step = e.on_frame(f.to_string().as_bytes());
            assert!(step.findings.is_empty(), "{:?}", step.findings);
        }
        assert!(e.finish(StreamEnd::Closed).is_empty());
        assert_eq!(e.final_frame(), Some(&FinalFrame::Success));
        assert_eq!(e.answer(), "Gold fell 0.5%");
    }

    #[test]
    fn a_full_clean_turn_with_tools_steps_reasoning_state_and_files() {
        let frames = vec![
            json!({"type":"STEP_STARTED","stepName":"plan","run_id":"11","threadId":"22"}),
            json!({"type":"REASONING_MESSAGE_START","messageId":"r1"}),
            json!({"type":"REASONING_MESSAGE_CONTENT","messageId":"r1","delta":"hm"}),
            json!({"type":"REASONING_MESSAGE_END","messageId":"r1"}),
            json!({"type":"TEXT_MESSAGE_START","messageId":"a1"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"Looking"}),
            json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
            json!({"type":"TOOL_CALL_START","toolCallId":"t1","toolCallName":"lookup"}),
            json!({"type":"TOOL_CALL_ARGS","toolCallId":"t1","delta":"{}"}),
            json!({"type":"TOOL_CALL_END","toolCallId":"t1"}),
            json!({"type":"TOOL_CALL_RESULT","toolCallId":"t1","content":"ok"}),
            json!({"type":"ACTIVITY_SNAPSHOT","messageId":"x","activityType":"plan","content":{}}),
            json!({"type":"STATE_SNAPSHOT","snapshot":{"artifacts":[{"url":"https://f.example.com/a.pdf"}],"todos":[]}}),
            json!({"type":"STATE_DELTA","delta":[{"op":"add","path":"/files/0","value":{}}]}),
            json!({"type":"CUSTOM","name":"file","value":{"url":"https://f.example.com/b.pdf"}}),
            json!({"type":"TEXT_MESSAGE_START","messageId":"a2"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a2","delta":"Done"}),
            json!({"type":"TEXT_MESSAGE_END","messageId":"a2"}),
            json!({"type":"STEP_FINISHED","stepName":"plan"}),
            finished(),
        ];
        assert_eq!(codes(&frames), vec![]);
    }

    #[test]
    fn envelope_mismatch_discards() {
        let mut e = engine();
        let step =
            e.on_frame(br#"{"type":"RUN_FINISHED","outcome":{"type":"success"},"run_id":"99"}"#);
        assert_eq!(step.disposition, Disposition::Dropped);
        assert_eq!(step.findings[0].code, Code::EnvelopeMismatch);
        let step = e.on_frame(br#"{"type":"STEP_STARTED","stepName":"s","threadId":22}"#);
        assert_eq!(step.findings[0].code, Code::EnvelopeMismatch);
        // null counts as absent.
        let step = e.on_frame(br#"{"type":"STEP_STARTED","stepName":"s","run_id":null}"#);
        assert_eq!(step.disposition, Disposition::Accepted);
    }

    #[test]
    fn each_rule_has_its_code() {
        let cases: Vec<(Vec<Value>, Code)> = vec![
            (with_final([vec![json!({"type":"TEXT_MESSAGE_CHUNK"})], answer("x")].concat()), Code::UnknownFrameType),
            (with_final([vec![json!({"type":"RUN_STARTED"})], answer("x")].concat()), Code::RunStartedSent),
            (with_final([vec![json!({"type":"REASONING_END"})], answer("x")].concat()), Code::ReasoningEndSent),
            (with_final([vec![json!({"type":"TOOL_CALL_START","toolCallId":"t"})], answer("x")].concat()), Code::MalformedFrame),
            (with_final([vec![json!({"type":"TOOL_CALL_ARGS","toolCallId":"t","delta":{}})], answer("x")].concat()), Code::MalformedFrame),
            (with_final([vec![json!([1])], answer("x")].concat()), Code::MalformedFrame),
            (with_final([vec![json!({"type":"STATE_SNAPSHOT","snapshot":{"todos":[],"mood":"ok"}})], answer("x")].concat()), Code::StateKeyDropped),
            (with_final([vec![json!({"type":"STATE_DELTA","delta":[{"op":"add","path":"/mood","value":1}]})], answer("x")].concat()), Code::StateKeyDropped),
            (answer("x"), Code::NoFinalFrame),
            (with_final(answer("")), Code::EmptyBubble),
            (vec![finished()], Code::EmptyBubble),
            (answer("x")[..2].iter().cloned().chain([finished()]).collect(), Code::FramesLeftOpen),
            ([with_final(answer("x")), answer("y")].concat(), Code::FrameAfterFinal),
            (with_final([answer("x"), vec![json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"late"})]].concat()), Code::Ordering),
            (with_final([answer("x"), vec![
                json!({"type":"TOOL_CALL_START","toolCallId":"t","toolCallName":"n"}),
                json!({"type":"TOOL_CALL_END","toolCallId":"t"}),
            ]].concat()), Code::Ordering),
            (with_final([vec![
                json!({"type":"STATE_SNAPSHOT","snapshot":{"artifacts":[{"url":"https://f.example.com/a.pdf"}]}}),
                json!({"type":"CUSTOM","name":"file","value":{"url":"https://f.example.com/a.pdf"}}),
            ], answer("x")].concat()), Code::DuplicateFileChannel),
        ];
        for (frames, expected) in cases {
            let got = codes(&frames);
            assert!(
                !got.is_empty() && got.iter().all(|c| *c == expected),
                "expected only {expected}, got {got:?} for {frames:?}"
            );
        }
    }

    #[test]
    fn text_spanning_a_tool_call_is_ordering_and_open_frames() {
        let frames = vec![
            json!({"type":"TEXT_MESSAGE_START","messageId":"a1"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"x"}),
            json!({"type":"TOOL_CALL_START","toolCallId":"t","toolCallName":"n"}),
            json!({"type":"TOOL_CALL_END","toolCallId":"t"}),
            json!({"type":"TEXT_MESSAGE_CONTENT","messageId":"a1","delta":"y"}),
            json!({"type":"TEXT_MESSAGE_END","messageId":"a1"}),
            finished(),
        ];
        let got = codes(&frames);
        assert!(got.contains(&Code::Ordering), "{got:?}");
    }

    #[test]
    fn interrupts() {
        let mut e = engine();
        let ok = json!({"type":"RUN_FINISHED","outcome":{"type":"interrupt","interrupts":[{"kind":"approval","prompt":"Go?"}]}});
        let step = e.on_frame(ok.to_string().as_bytes());
        assert_eq!(step.disposition, Disposition::Final);
        assert!(step.findings.is_empty());

        let mut e = engine();
        let bad = json!({"type":"RUN_FINISHED","outcome":{"type":"interrupt","interrupts":[{"kind":"poll"}]}});
        let step = e.on_frame(bad.to_string().as_bytes());
        assert_eq!(
            step.disposition,
            Disposition::Fatal(Code::InterruptRejected)
        );
        assert!(e.finish(StreamEnd::Failed).is_empty());
    }

    #[test]
    fn findings_are_capped_per_code() {
        let mut frames: Vec<Value> = (0..10).map(|_| json!({"type":"NOPE"})).collect();
        frames.extend(with_final(answer("x")));
        let got = codes(&frames);
        assert_eq!(got.len(), MAX_PER_CODE + 1);
    }
}
