//! [`Message`] and [`Role`]: one message of a conversation, as both protocols carry it (Console's
//! `history`, Lowkey's `transcriptWindow`, AG-UI's `messages`) and as a thread's transcript
//! keeps it.

use serde::{Deserialize, Serialize};

/// Who said a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The person chatting.
    User,
    /// The agent.
    Assistant,
    /// A system notice.
    System,
}

/// One message of a thread's transcript.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who said it.
    pub role: Role,
    /// The text.
    pub content: String,
    /// The turn it came from, when known.
    #[serde(default, skip_serializing_if = "Option::is_none", rename = "runId")]
    pub run_id: Option<String>,
    /// True when the turn did not finish (error, deadline, disconnect): the text is what the
    /// user saw before it stopped.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub interrupted: bool,
    /// The arrival number of the turn it came from on its thread (see
    /// [`crate::store::turn_state`]): the transcript is kept in arrival order even when turns
    /// overlap. Absent on messages stored before arrivals existed (they sort first).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arrival: Option<u64>,
}

impl Message {
    /// A complete message.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            role,
            content: content.into(),
            run_id: None,
            interrupted: false,
            arrival: None,
        }
    }
}
