//! A conversation's own memory, kept by the agent because Console keeps none for it.
//!
//! Stored per thread key (see [`crate::keys::thread_key`]) with a TTL. `T` and `T:<branch>` are different
//! threads, so a fork never sees the other branch. The transcript is bounded by
//! [`ContextPolicy`]: the oldest messages are dropped first, so an item never outgrows a
//! DynamoDB item (400 KB) or a Durable Object value.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::protocol::{Interrupt, Message, Role};

/// Everything the agent remembers about one thread.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ThreadContext {
    /// The transcript, oldest first, bounded by [`ContextPolicy`].
    #[serde(default)]
    pub messages: Vec<Message>,
    /// Agent-defined state (`null` until the agent sets it).
    #[serde(default)]
    pub state: Value,
    /// The question the previous turn ended with, if it ended with one.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        rename = "pendingInterrupt"
    )]
    pub pending_interrupt: Option<Interrupt>,
    /// The client tool calls the previous turn left for the client to run (AG-UI's
    /// `pendingToolCallIds`): the next run's `tool` messages may answer these, and only these.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        rename = "pendingToolCalls"
    )]
    pub pending_tool_calls: Vec<String>,
    /// How many turns were recorded on this thread.
    #[serde(default)]
    pub turns: u64,
}

impl ThreadContext {
    /// A context seeded from messages the caller sent (Console's `history` on a fork, Lowkey's
    /// `transcriptWindow`), for a thread the store does not know.
    pub fn seeded(messages: Vec<Message>) -> Self {
        Self {
            messages,
            ..Self::default()
        }
    }

    /// The most recent message said by `role`.
    pub fn last(&self, role: Role) -> Option<&Message> {
        self.messages.iter().rev().find(|m| m.role == role)
    }

    /// Drops the oldest messages until the transcript fits `policy`.
    pub fn trim(&mut self, policy: &ContextPolicy) {
        let excess = self.messages.len().saturating_sub(policy.max_messages);
        self.messages.drain(..excess);
        let mut bytes: usize = self.messages.iter().map(|m| m.content.len() + 64).sum();
        let mut drop = 0;
        while bytes > policy.max_transcript_bytes && drop < self.messages.len() {
            bytes -= self.messages[drop].content.len() + 64;
            drop += 1;
        }
        self.messages.drain(..drop);
    }

    /// Serialized size of the agent's state.
    pub fn state_bytes(&self) -> usize {
        serde_json::to_vec(&self.state).map_or(0, |v| v.len())
    }
}

/// How much of a thread is kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextPolicy {
    /// At most this many messages (default 100).
    pub max_messages: usize,
    /// At most about this many bytes of message text (default 128 KiB).
    pub max_transcript_bytes: usize,
    /// Largest agent state accepted; a turn that grows it past this ends with `RUN_ERROR`
    /// (default 64 KiB).
    pub max_state_bytes: usize,
}

impl Default for ContextPolicy {
    fn default() -> Self {
        Self {
            max_messages: 100,
            max_transcript_bytes: 128 * 1024,
            max_state_bytes: 64 * 1024,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trim_keeps_the_newest() {
        let mut c = ThreadContext::default();
        for i in 0..10 {
            c.messages.push(Message::new(Role::User, format!("m{i}")));
        }
        c.trim(&ContextPolicy {
            max_messages: 3,
            ..ContextPolicy::default()
        });
        let kept: Vec<_> = c.messages.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(kept, ["m7", "m8", "m9"]);
    }

    #[test]
    fn trim_bounds_bytes() {
        let mut c = ThreadContext::default();
        for _ in 0..10 {
            c.messages.push(Message::new(Role::User, "x".repeat(1000)));
        }
        c.trim(&ContextPolicy {
            max_transcript_bytes: 3000,
            ..ContextPolicy::default()
        });
        assert_eq!(c.messages.len(), 2);
    }
}
