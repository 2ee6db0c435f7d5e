//! The model's view of a thread, kept in the thread's state: the messages in the
//! chat-completions shape (tool calls and results included) and the tool calls waiting for the
//! user's approval. The system prompt is configuration and is never stored here.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::file_ref::FileRef;

/// The key of the thread state under which the transcript is kept.
pub const STATE_KEY: &str = "model";

/// One message as the chat-completions API takes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "role", rename_all = "lowercase")]
pub enum ChatMessage {
    /// The person chatting.
    User {
        /// What they said.
        content: String,
        /// The files attached to it (sent to the model as content parts).
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        files: Vec<FileRef>,
    },
    /// The model.
    Assistant {
        /// Its text (absent when it only called tools).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        content: Option<String>,
        /// The tools it called.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        tool_calls: Vec<ModelToolCall>,
    },
    /// A tool's result.
    Tool {
        /// The call it answers.
        tool_call_id: String,
        /// The result.
        content: String,
    },
}

/// A tool call as the model made it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ModelToolCall {
    /// The model's id for the call.
    pub id: String,
    /// Always `function`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Name and arguments.
    pub function: FunctionCall,
}

/// The function of a [`ModelToolCall`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FunctionCall {
    /// The tool's name.
    pub name: String,
    /// The arguments, as JSON text.
    pub arguments: String,
}

impl ModelToolCall {
    /// A function call.
    pub fn new(id: String, name: String, arguments: String) -> Self {
        Self {
            id,
            kind: "function".into(),
            function: FunctionCall { name, arguments },
        }
    }
}

/// What the thread state holds for the model agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Transcript {
    /// Messages, oldest first.
    #[serde(default)]
    pub messages: Vec<ChatMessage>,
    /// Calls of the last assistant message still waiting for the user's decision.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pending: Vec<ModelToolCall>,
    /// The id of the question the pending calls were asked in (random, drawn when asked):
    /// with a call's id, it names the action a decision claims
    /// ([`runway_core::Turn::claim_action`]), so each pending call is settled once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review: Option<String>,
    /// Calls of the last assistant message waiting for the user to connect an account (the
    /// `authorization` card): run on the turn that answers it, if the vault then has a token.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub connecting: Vec<ModelToolCall>,
    /// Calls of the last assistant message left for the client to run (its own tools, AG-UI's
    /// `pendingToolCallIds`): answered on the next turn by the results the client sends
    /// (`Turn::client_tool_results`), or as not run.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub awaiting_client: Vec<ModelToolCall>,
    /// Bytes of the files downloaded for this thread so far (bounded by
    /// `AttachmentSettings::max_thread_bytes`).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub kept_bytes: u64,
    /// The text of the model call in progress, as it streams (extended in place). Present
    /// only in a state saved while a model call ran: when the turn was cut there (the user
    /// left, the deadline passed, a newer turn took over) the agent was stopped before it could
    /// record the answer, and the next turn adds what the user saw ([`Transcript::recover`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partial: Option<String>,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// The partial answer of the transcript kept in `state` (saved with `partial: Some(..)`), to
/// extend in place as pieces stream: O(piece), and looked up once per model call, not per
/// piece.
pub fn partial_answer(state: &mut Value) -> Option<&mut String> {
    match state.get_mut(STATE_KEY).and_then(|m| m.get_mut("partial")) {
        Some(Value::String(s)) => Some(s),
        _ => None,
    }
}

/// What a call the turn never finished is answered with, so the transcript stays valid (every
/// tool call has a result).
pub const UNFINISHED_CALL: &str =
    "Not completed: the turn ended before this call returned; its outcome is unknown.";

impl Transcript {
    /// The transcript kept in `state` (empty when there is none or it does not parse: a thread
    /// whose state was written by another agent starts afresh rather than failing).
    pub fn from_state(state: &Value) -> Self {
        state
            .get(STATE_KEY)
            .and_then(|v| serde_json::from_value(v.clone()).ok())
            .unwrap_or_default()
    }

    /// Repairs a transcript whose turn was cut while the agent ran: the partial answer the
    /// user saw becomes an assistant message (cut to `max_bytes`), and a tool call left without
    /// a result (and not waiting for approval) gets a result saying it was not completed.
    pub fn recover(&mut self, max_bytes: usize) {
        if let Some(partial) = self.partial.take()
            && !partial.trim().is_empty()
        {
            self.messages.push(ChatMessage::Assistant {
                content: Some(truncate(&partial, max_bytes)),
                tool_calls: Vec::new(),
            });
        }
        let mut repaired = Vec::with_capacity(self.messages.len());
        let mut open: Vec<String> = Vec::new();
        let close = |open: &mut Vec<String>, out: &mut Vec<ChatMessage>| {
            for id in open.drain(..) {
                out.push(ChatMessage::Tool {
                    tool_call_id: id,
                    content: UNFINISHED_CALL.into(),
                });
            }
        };
        for m in std::mem::take(&mut self.messages) {
            match &m {
                ChatMessage::Tool { tool_call_id, .. } => open.retain(|id| id != tool_call_id),
                _ => close(&mut open, &mut repaired),
            }
            if let ChatMessage::Assistant { tool_calls, .. } = &m {
                open = tool_calls
                    .iter()
                    .map(|c| c.id.clone())
                    .filter(|id| {
                        !self.pending.iter().any(|p| &p.id == id)
                            && !self.connecting.iter().any(|p| &p.id == id)
                            && !self.awaiting_client.iter().any(|p| &p.id == id)
                    })
                    .collect();
            }
            repaired.push(m);
        }
        close(&mut open, &mut repaired);
        self.messages = repaired;
    }

    /// Whether a tool call of this transcript has the id `id`.
    pub fn has_call(&self, id: &str) -> bool {
        self.messages.iter().any(|m| {
            matches!(m, ChatMessage::Assistant { tool_calls, .. }
                if tool_calls.iter().any(|c| c.id == id))
        })
    }

    /// Writes the transcript into `state` (other keys are kept).
    pub fn save(&self, state: &mut Value) {
        if !state.is_object() {
            *state = Value::Object(Default::default());
        }
        if let Some(obj) = state.as_object_mut() {
            obj.insert(
                STATE_KEY.into(),
                serde_json::to_value(self).unwrap_or(Value::Null),
            );
        }
    }

    /// Drops the oldest messages until the transcript's JSON fits `budget` bytes. A tool call
    /// and its results go together, and the kept window starts at a user message (what every
    /// chat template expects after the system prompt).
    pub fn trim(&mut self, budget: usize) {
        let size = |m: &ChatMessage| serde_json::to_vec(m).map_or(0, |v| v.len() + 1);
        let mut total: usize = self.messages.iter().map(size).sum();
        let mut drop = 0;
        // Drop whole units: a message, plus the tool results that follow an assistant's calls.
        while total > budget && drop < self.messages.len() {
            total -= size(&self.messages[drop]);
            drop += 1;
            while drop < self.messages.len()
                && matches!(self.messages[drop], ChatMessage::Tool { .. })
            {
                total -= size(&self.messages[drop]);
                drop += 1;
            }
        }
        if drop > 0 {
            while drop < self.messages.len()
                && !matches!(self.messages[drop], ChatMessage::User { .. })
            {
                drop += 1;
            }
            self.messages.drain(..drop);
        }
        // A pending call whose assistant message was trimmed away cannot be answered.
        let messages = &self.messages;
        let kept = |p: &ModelToolCall| {
            messages.iter().any(|m| {
                matches!(m, ChatMessage::Assistant { tool_calls, .. }
                    if tool_calls.iter().any(|c| c.id == p.id))
            })
        };
        self.pending.retain(kept);
        self.awaiting_client.retain(kept);
        if self.pending.is_empty() {
            self.review = None;
        }
    }
}

/// `s` cut to at most `max` bytes on a character boundary, marked when cut.
pub fn truncate(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let mut end = max;
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}… [truncated]", &s[..end])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn user(s: &str) -> ChatMessage {
        ChatMessage::User {
            content: s.into(),
            files: Vec::new(),
        }
    }

    fn calls(ids: &[&str]) -> ChatMessage {
        ChatMessage::Assistant {
            content: None,
            tool_calls: ids
                .iter()
                .map(|i| ModelToolCall::new((*i).into(), "t".into(), "{}".into()))
                .collect(),
        }
    }

    fn result(id: &str, s: &str) -> ChatMessage {
        ChatMessage::Tool {
            tool_call_id: id.into(),
            content: s.into(),
        }
    }

    fn answer(s: &str) -> ChatMessage {
        ChatMessage::Assistant {
            content: Some(s.into()),
            tool_calls: vec![],
        }
    }

    #[test]
    fn the_window_never_splits_a_call_from_its_results() {
        let big = "x".repeat(400);
        let mut t = Transcript {
            messages: vec![
                user("first"),
                calls(&["a", "b"]),
                result("a", &big),
                result("b", &big),
                answer("done"),
                user("second"),
                calls(&["c"]),
                result("c", "small"),
                answer("ok"),
            ],
            pending: vec![],
            connecting: vec![],
            awaiting_client: vec![],
            review: None,
            kept_bytes: 0,
            partial: None,
        };
        let full: usize = t
            .messages
            .iter()
            .map(|m| serde_json::to_vec(m).unwrap().len() + 1)
            .sum();
        // Just too much: the oldest message goes, and with it everything up to the next user
        // message (never an orphan tool result or a call without results).
        t.trim(full - 1);
        assert_eq!(t.messages[0], user("second"));
        assert_eq!(t.messages.len(), 4);
        for (i, m) in t.messages.iter().enumerate() {
            if let ChatMessage::Tool { tool_call_id, .. } = m {
                assert!(t.messages[..i].iter().any(|p| matches!(p,
                    ChatMessage::Assistant { tool_calls, .. }
                        if tool_calls.iter().any(|c| &c.id == tool_call_id))));
            }
        }
    }

    #[test]
    fn a_pending_call_goes_with_its_message() {
        let mut t = Transcript {
            messages: vec![user("hi"), calls(&["a"])],
            connecting: vec![],
            awaiting_client: vec![],
            pending: vec![ModelToolCall::new("a".into(), "t".into(), "{}".into())],
            review: None,
            kept_bytes: 0,
            partial: None,
        };
        t.trim(1_000_000);
        assert_eq!(t.pending.len(), 1);
        t.trim(10);
        assert!(t.messages.is_empty());
        assert!(t.pending.is_empty());
    }

    #[test]
    fn a_cut_turn_keeps_what_the_user_saw_and_no_call_without_a_result() {
        let mut t = Transcript {
            messages: vec![user("hi"), calls(&["a", "b"]), result("a", "ok")],
            pending: vec![],
            connecting: vec![],
            awaiting_client: vec![],
            review: None,
            kept_bytes: 0,
            partial: None,
        };
        let mut state = serde_json::json!({});
        t.partial = Some(String::new());
        t.save(&mut state);
        let partial = partial_answer(&mut state).expect("saved with a partial answer");
        partial.push_str("Part one, ");
        partial.push_str("part two");
        let mut back = Transcript::from_state(&state);
        back.recover(1000);
        assert_eq!(
            back.messages,
            vec![
                user("hi"),
                calls(&["a", "b"]),
                result("a", "ok"),
                result("b", UNFINISHED_CALL),
                answer("Part one, part two"),
            ]
        );
        assert_eq!(back.partial, None);
        // Nothing to repair: unchanged; a call waiting for approval is not answered.
        let mut t = Transcript {
            messages: vec![user("hi"), calls(&["c"])],
            connecting: vec![],
            awaiting_client: vec![],
            pending: vec![ModelToolCall::new("c".into(), "t".into(), "{}".into())],
            review: None,
            kept_bytes: 0,
            partial: Some("  ".into()),
        };
        t.recover(1000);
        assert_eq!(t.messages, vec![user("hi"), calls(&["c"])]);
    }

    #[test]
    fn it_round_trips_through_the_state_beside_other_keys() {
        let mut state = serde_json::json!({"mine": 1});
        let t = Transcript {
            messages: vec![user("hi"), calls(&["a"])],
            connecting: vec![],
            awaiting_client: vec![],
            pending: vec![ModelToolCall::new("a".into(), "t".into(), "{}".into())],
            review: None,
            kept_bytes: 0,
            partial: None,
        };
        t.save(&mut state);
        assert_eq!(state["mine"], 1);
        assert_eq!(Transcript::from_state(&state), t);
        assert_eq!(
            Transcript::from_state(&serde_json::json!({"model": 3})),
            Transcript::default()
        );
    }
}
