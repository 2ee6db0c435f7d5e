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
//!
//! One rule family a file: what makes a frame one Console reads (rules 1–5, `validity.rs`),
//! the order of what opens and closes (rule 7, `ordering.rs`), state keys and files (rules 6
//! and 8, `state_files.rs`) and the final frame (rule 9, `final_frame.rs`); this file holds the
//! engine's types and its bookkeeping (findings capped per code, rule 10 at the end).

use std::collections::{BTreeMap, BTreeSet, HashSet};

use serde_json::Value;

use crate::findings::{Code, Finding};

mod final_frame;
mod ordering;
mod state_files;
mod validity;

#[cfg(test)]
mod tests;

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
}

#[derive(Default)]
struct Out(Vec<Finding>);

impl Out {
    fn push(&mut self, code: Code, message: String) {
        self.0.push(Finding::new(code, message));
    }
}
