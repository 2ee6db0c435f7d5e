//! What an AG-UI client holds once it has applied a run's events (`@ag-ui/client` 1.0's
//! `defaultApplyEvents`): its messages and its state. The AG-UI dialect of the frame writer
//! keeps it so that a run ending with an interrupt sends, before its `RUN_FINISHED`, the
//! `STATE_SNAPSHOT` and `MESSAGES_SNAPSHOT` AG-UI's interrupt rules ask for: everything a
//! client needs to persist the thread at the question, or to resume it elsewhere.
//!
//! The snapshot is the client's own history as it sent it (`RunAgentInput.messages`, its ids,
//! tool calls and content parts kept) followed by this run's messages as the client built them
//! from the events, so applying it loses nothing and duplicates nothing: a client replaces each
//! message by the snapshot's of the same id and drops the ones the snapshot lacks (activity
//! messages, which it does not send, it keeps). runway's stored transcript is not used: it keeps
//! neither AG-UI ids nor tool calls, and is trimmed.
//!
//! Bounded: the view stops following the run (and no `MESSAGES_SNAPSHOT` is sent) once the
//! messages would not fit in one frame ([`crate::protocol::StreamLimits::max_frame_bytes`]), so
//! it holds at most about a frame beyond the parsed input.

use serde_json::{Map, Value, json};

use crate::wire::json_patch;

/// The client's messages and state, as the run's events leave them.
#[derive(Debug)]
pub(super) struct ClientView {
    /// `None` once the messages outgrew `max_bytes`: no messages snapshot then.
    messages: Option<Vec<Value>>,
    /// `None` once a `STATE_DELTA` failed to apply: the client kept the state it had, this
    /// view has it partly patched, so no state snapshot then.
    state: Option<Value>,
    /// About how many bytes `messages` are as JSON.
    bytes: usize,
    max_bytes: usize,
}

/// Bytes a message takes in JSON beyond its text (braces, keys, ids).
const MESSAGE_OVERHEAD: usize = 128;

impl ClientView {
    /// The view of a client that sent `messages` and `state`, followed up to `max_bytes` of
    /// messages.
    pub(super) fn new(messages: Vec<Value>, state: Value, max_bytes: usize) -> Self {
        let mut counter = ByteCount(0);
        let bytes = match serde_json::to_writer(&mut counter, &messages) {
            Ok(()) => counter.0,
            Err(_) => usize::MAX,
        };
        let mut view = Self {
            messages: Some(messages),
            state: Some(state),
            bytes: 0,
            max_bytes,
        };
        view.grow(bytes);
        view
    }

    /// Counts `n` more bytes of messages; past the bound, stops following them.
    fn grow(&mut self, n: usize) {
        self.bytes = self.bytes.saturating_add(n);
        if self.bytes > self.max_bytes {
            self.messages = None;
        }
    }

    /// A text (`assistant`) or reasoning (`reasoning`) message starts.
    pub(super) fn message_started(&mut self, id: &str, role: &str) {
        self.grow(MESSAGE_OVERHEAD + id.len());
        if let Some(messages) = &mut self.messages {
            messages.push(json!({"id": id, "role": role, "content": ""}));
        }
    }

    /// Text for the message `id`.
    pub(super) fn message_content(&mut self, id: &str, delta: &str) {
        self.grow(delta.len());
        if let Some(content) = self
            .find(|m| m["id"] == id)
            .and_then(|m| m.get_mut("content"))
            && let Value::String(text) = content
        {
            text.push_str(delta);
        }
    }

    /// A tool call starts: a message of its own, named by the call, as the client makes one
    /// for a call without a `parentMessageId`.
    pub(super) fn tool_call_started(&mut self, id: &str, name: &str) {
        self.grow(MESSAGE_OVERHEAD + 2 * id.len() + name.len());
        if let Some(messages) = &mut self.messages {
            messages.push(json!({
                "id": id,
                "role": "assistant",
                "toolCalls": [{"id": id, "type": "function", "function": {"name": name, "arguments": ""}}]
            }));
        }
    }

    /// Arguments for the call `id`.
    pub(super) fn tool_call_args(&mut self, id: &str, delta: &str) {
        self.grow(delta.len());
        if let Some(Value::String(args)) = self
            .find(|m| m["id"] == id)
            .and_then(|m| m.pointer_mut("/toolCalls/0/function/arguments"))
        {
            args.push_str(delta);
        }
    }

    /// The result of call `call`: a `tool` message after the call's message and the results
    /// already after it, where the client puts it.
    pub(super) fn tool_result(&mut self, call: &str, message_id: &str, content: &str) {
        self.grow(MESSAGE_OVERHEAD + message_id.len() + call.len() + content.len());
        let Some(messages) = &mut self.messages else {
            return;
        };
        let result =
            json!({"id": message_id, "toolCallId": call, "role": "tool", "content": content});
        let holder = messages.iter().rposition(|m| {
            m["role"] == "assistant"
                && m["toolCalls"]
                    .as_array()
                    .is_some_and(|calls| calls.iter().any(|c| c["id"] == call))
        });
        match holder {
            None => messages.push(result),
            Some(at) => {
                let mut to = at + 1;
                while messages.get(to).is_some_and(|m| m["role"] == "tool") {
                    to += 1;
                }
                messages.insert(to, result);
            }
        }
    }

    /// A `STATE_SNAPSHOT`: the client's state becomes `snapshot`.
    pub(super) fn state_snapshot(&mut self, snapshot: Value) {
        self.state = Some(snapshot);
    }

    /// The `STATE_SNAPSHOT` runway sends for hosted files: `{"artifacts": [...]}`.
    pub(super) fn artifacts(&mut self, artifacts: &[Value]) {
        let mut state = Map::new();
        state.insert("artifacts".into(), Value::Array(artifacts.to_vec()));
        self.state = Some(Value::Object(state));
    }

    /// A `STATE_DELTA`, applied in place (no copy of the state per delta). One that does not
    /// apply the client skips whole; this view is then partly patched and stops following the
    /// state until the next `STATE_SNAPSHOT`.
    pub(super) fn state_delta(&mut self, patch: &Value) {
        if let Some(state) = &mut self.state
            && let Err(e) = json_patch::apply(state, patch)
        {
            tracing::warn!(error = %e.0, "STATE_DELTA does not apply to the client's state: no state snapshot until the next one");
            self.state = None;
        }
    }

    /// The state (unless a delta failed since the last snapshot) and the messages (when they
    /// stayed within the bound), for the snapshots.
    pub(super) fn into_snapshots(self) -> (Option<Value>, Option<Value>) {
        (self.state, self.messages.map(Value::Array))
    }

    /// The latest message matching `is`: the open one is nearly always the last.
    fn find(&mut self, is: impl Fn(&Value) -> bool) -> Option<&mut Value> {
        self.messages.as_mut()?.iter_mut().rev().find(|m| is(m))
    }
}

/// Counts the bytes written to it (a message list's JSON size, without building the text).
struct ByteCount(usize);

impl std::io::Write for ByteCount {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0 += buf.len();
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_view_follows_the_run_as_the_client_applies_it() {
        let sent = vec![json!({"id": "u1", "role": "user", "content": "go"})];
        let mut v = ClientView::new(sent, json!({"n": 1}), 64 * 1024);
        v.message_started("m1", "assistant");
        v.message_content("m1", "Let me ");
        v.tool_call_started("c1", "clock");
        v.message_content("m1", "look.");
        v.tool_call_args("c1", "{}");
        v.tool_call_started("c2", "clock");
        v.tool_result("c1", "c1-result", "12:00");
        v.state_delta(&json!([{"op": "replace", "path": "/n", "value": 2}]));
        v.state_delta(
            &json!([{"op": "add", "path": "/m", "value": 1}, {"op": "remove", "path": "/x"}]),
        );
        assert_eq!(
            v.state, None,
            "a delta that failed: the client's state is not known"
        );
        v.state_delta(&json!([{"op": "add", "path": "/m", "value": 1}]));
        assert_eq!(v.state, None);
        v.state_snapshot(json!({"n": 3}));
        v.state_delta(&json!([{"op": "replace", "path": "/n", "value": 4}]));
        let (state, messages) = v.into_snapshots();
        assert_eq!(
            state,
            Some(json!({"n": 4})),
            "known again from the next snapshot"
        );
        let messages = messages.unwrap();
        let ids: Vec<&str> = messages
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["id"].as_str().unwrap())
            .collect();
        assert_eq!(ids, ["u1", "m1", "c1", "c1-result", "c2"]);
        assert_eq!(messages[1]["content"], "Let me look.");
        assert_eq!(messages[2]["toolCalls"][0]["function"]["arguments"], "{}");
        assert_eq!(messages[3]["content"], "12:00");
    }

    #[test]
    fn messages_past_a_frame_are_not_followed() {
        let sent = vec![json!({"id": "u1", "role": "user", "content": "x".repeat(100)})];
        let mut v = ClientView::new(sent.clone(), Value::Null, 1000);
        v.message_started("m1", "assistant");
        v.message_content("m1", &"y".repeat(2000));
        assert_eq!(v.into_snapshots().1, None);
        assert_eq!(
            ClientView::new(sent, Value::Null, 50).into_snapshots().1,
            None
        );
    }
}
