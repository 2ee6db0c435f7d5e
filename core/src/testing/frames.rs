//! [`Frames`]: a Console turn as the client saw it, parsed for assertions, with the thread as
//! the store kept it.

use std::time::Duration;

use serde_json::Value;

use crate::agent::context::ThreadContext;
use crate::protocol::Interrupt;
use crate::testing::received::Received;

/// What a [`TestTurn`](super::TestTurn) produced: the frames Console would have read (parsed,
/// and as raw SSE), when each chunk arrived on the virtual clock, and the thread as saved after
/// the turn.
///
/// A request refused before any stream (a 4xx with `{"error"}`) has no frames:
/// [`Frames::status`] and [`Frames::refusal`] say why.
#[derive(Clone)]
pub struct Frames {
    received: Received,
    frames: Vec<Value>,
    saved: Option<ThreadContext>,
}

impl std::fmt::Debug for Frames {
    /// The status, the frames' types, the text and the error: what a failed assertion needs
    /// (the raw SSE is [`Frames::sse`]).
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("Frames");
        d.field("status", &self.status());
        if let Some(refusal) = self.refusal() {
            d.field("refusal", &refusal);
        }
        d.field("types", &self.types())
            .field("text", &self.text())
            .field("error", &self.error())
            .field("took", &self.received.took())
            .finish()
    }
}

/// A tool call as its frames showed it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SeenToolCall {
    /// `toolCallId`.
    pub id: String,
    /// `toolCallName`.
    pub name: String,
    /// The arguments' text, all `TOOL_CALL_ARGS` deltas joined.
    pub arguments: String,
    /// `TOOL_CALL_RESULT`'s content, if one was sent.
    pub result: Option<String>,
}

impl SeenToolCall {
    /// The arguments parsed as JSON (`Value::Null` if they are not JSON).
    pub fn arguments_json(&self) -> Value {
        serde_json::from_str(&self.arguments).unwrap_or(Value::Null)
    }
}

/// The `RUN_ERROR` a turn ended with.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RunError {
    /// `code`, such as `TURN_DEADLINE` or `AGENT_ERROR`.
    pub code: String,
    /// `message`: what the user is shown.
    pub message: String,
}

impl Frames {
    /// Parses what a client read, with the thread as saved afterwards.
    ///
    /// # Panics
    /// If a `data:` line is not JSON: runway never writes one.
    pub fn parse(received: Received, saved: Option<ThreadContext>) -> Self {
        let frames = if received.status == 200 {
            received
                .body()
                .split("\n\n")
                .filter_map(|event| event.strip_prefix("data: "))
                .map(|data| {
                    serde_json::from_str(data)
                        .unwrap_or_else(|e| panic!("a frame that is not JSON ({e}): {data}"))
                })
                .collect()
        } else {
            Vec::new()
        };
        Self {
            received,
            frames,
            saved,
        }
    }

    /// The HTTP status (200 for a streamed turn).
    pub fn status(&self) -> u16 {
        self.received.status
    }

    /// The `error` of a refused request (4xx `{"error": …}`).
    pub fn refusal(&self) -> Option<String> {
        if self.status() == 200 {
            return None;
        }
        let body: Value = serde_json::from_str(&self.received.body()).ok()?;
        body["error"].as_str().map(str::to_owned)
    }

    /// The body exactly as sent: Server-Sent Events for a turn.
    pub fn sse(&self) -> String {
        self.received.body()
    }

    /// The chunks as they arrived, with their arrival times.
    pub fn received(&self) -> &Received {
        &self.received
    }

    /// Every frame, parsed, in order.
    pub fn all(&self) -> &[Value] {
        &self.frames
    }

    /// The `type` of every frame, in order.
    pub fn types(&self) -> Vec<&str> {
        self.frames
            .iter()
            .map(|f| f["type"].as_str().unwrap_or(""))
            .collect()
    }

    /// The frames of type `ty`.
    pub fn of_type<'a>(&'a self, ty: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
        self.frames.iter().filter(move |f| f["type"] == ty)
    }

    /// The text of each assistant message, in order.
    pub fn messages(&self) -> Vec<String> {
        let mut messages: Vec<(String, String)> = Vec::new();
        for f in &self.frames {
            match f["type"].as_str() {
                Some("TEXT_MESSAGE_START") => {
                    messages.push((id(f, "messageId"), String::new()));
                }
                Some("TEXT_MESSAGE_CONTENT") => {
                    let mid = id(f, "messageId");
                    if let Some((_, text)) = messages.iter_mut().rev().find(|(m, _)| *m == mid) {
                        text.push_str(f["delta"].as_str().unwrap_or(""));
                    }
                }
                _ => {}
            }
        }
        messages.into_iter().map(|(_, text)| text).collect()
    }

    /// The whole answer: the messages joined by a blank line, as the thread's transcript
    /// keeps it.
    pub fn text(&self) -> String {
        self.messages().join("\n\n")
    }

    /// The reasoning text, all reasoning messages joined.
    pub fn reasoning(&self) -> String {
        self.of_type("REASONING_MESSAGE_CONTENT")
            .filter_map(|f| f["delta"].as_str())
            .collect()
    }

    /// The tool calls, in the order they started.
    pub fn tool_calls(&self) -> Vec<SeenToolCall> {
        let mut calls: Vec<SeenToolCall> = Vec::new();
        for f in &self.frames {
            let call_id = id(f, "toolCallId");
            let call = calls.iter_mut().find(|c| c.id == call_id);
            match (f["type"].as_str(), call) {
                (Some("TOOL_CALL_START"), None) => calls.push(SeenToolCall {
                    id: call_id,
                    name: f["toolCallName"].as_str().unwrap_or("").to_owned(),
                    arguments: String::new(),
                    result: None,
                }),
                (Some("TOOL_CALL_ARGS"), Some(c)) => {
                    c.arguments.push_str(f["delta"].as_str().unwrap_or(""));
                }
                (Some("TOOL_CALL_RESULT"), Some(c)) => {
                    c.result = f["content"].as_str().map(str::to_owned);
                }
                _ => {}
            }
        }
        calls
    }

    /// The last frame (`RUN_FINISHED` or `RUN_ERROR` for a turn that ended).
    pub fn last(&self) -> Option<&Value> {
        self.frames.last()
    }

    /// True if the turn ended with `RUN_FINISHED` and a `success` outcome.
    pub fn is_success(&self) -> bool {
        self.last()
            .is_some_and(|f| f["type"] == "RUN_FINISHED" && f["outcome"]["type"] == "success")
    }

    /// The question the turn ended with (`RUN_FINISHED` with an `interrupt` outcome).
    pub fn interrupt(&self) -> Option<Interrupt> {
        let f = self.last()?;
        if f["type"] != "RUN_FINISHED" || f["outcome"]["type"] != "interrupt" {
            return None;
        }
        serde_json::from_value(f["outcome"]["interrupts"][0].clone()).ok()
    }

    /// The `RUN_ERROR` the turn ended with.
    pub fn error(&self) -> Option<RunError> {
        let f = self.last()?;
        (f["type"] == "RUN_ERROR").then(|| RunError {
            code: f["code"].as_str().unwrap_or("").to_owned(),
            message: f["message"].as_str().unwrap_or("").to_owned(),
        })
    }

    /// When each heartbeat arrived (virtual time since the request). The first-flush padding
    /// is a comment too, but not a heartbeat.
    pub fn heartbeats(&self) -> Vec<Duration> {
        self.received
            .chunks
            .iter()
            .filter(|(_, c)| c.as_ref() == crate::wire::console::sse::HEARTBEAT.as_bytes())
            .map(|(t, _)| *t)
            .collect()
    }

    /// The thread as the store kept it after this turn (`None` if nothing was saved).
    pub fn saved(&self) -> Option<&ThreadContext> {
        self.saved.as_ref()
    }

    /// The agent's state as saved after this turn (`Value::Null` if none).
    pub fn state(&self) -> &Value {
        self.saved.as_ref().map_or(&Value::Null, |c| &c.state)
    }
}

fn id(frame: &Value, key: &str) -> String {
    frame[key].as_str().unwrap_or("").to_owned()
}
