//! The `ExternalAgentTurnRequest` Lowkey POSTs for one turn, parsed and validated.
//!
//! Validation follows the published shape field by field (the JSON Schema kept in
//! `infra/lowkey/schema/` says the same thing, and the tests hold the two together): a body
//! the schema refuses is refused here with a 400 naming the field, and a body it accepts is
//! accepted. Unknown fields are ignored, since a later protocol version adds fields.

use serde::Serialize;
use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::json_kind::json_kind;
use crate::error::BadRequest;
use crate::protocol::{Message, Role};

/// Lowkey's ids inside storage keys (built, with every other key, in the core's `keys.rs`).
pub use crate::keys::storage_id;

/// The external turn protocol version this crate speaks on `POST /lowkey/turn`.
pub const LOWKEY_PROTOCOL_VERSION: u64 = 1;

/// The route's path suffix, matched on the end of the request path like `/runs`.
pub const LOWKEY_TURN_PATH: &str = "/lowkey/turn";

/// One turn, as Lowkey sends it (`ExternalAgentTurnRequest`).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ExternalAgentTurnRequest {
    /// Always `1`.
    pub protocol_version: u64,
    /// The plugin whose `external:` agent block named this endpoint.
    pub plugin_id: String,
    /// The session and agent pairing; `id` is the resume key.
    pub session_handle: SessionHandle,
    /// This turn.
    pub turn: TurnInput,
    /// Recent history, oldest first, capped by [`TurnLimits::transcript_window_messages`].
    pub transcript_window: Vec<TranscriptMessage>,
    /// Caps Lowkey applied.
    pub limits: TurnLimits,
}

/// `sessionHandle`: which conversation this is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SessionHandle {
    /// Stable key for this session and agent pairing: runway keys the conversation by it.
    pub id: String,
    /// The project's absolute path on the Lowkey host.
    pub project_path: String,
    /// Lowkey's session id.
    pub session_id: String,
    /// The agent being called.
    pub agent_id: String,
}

/// `turn`: what the user said.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnInput {
    /// This turn's id: the idempotency key.
    pub turn_id: String,
    /// The user's message.
    pub message: String,
    /// True when no person is watching the turn.
    pub headless: bool,
    /// The user's name, when known.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_name: Option<String>,
}

/// Who said a transcript message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TranscriptRole {
    /// The person.
    User,
    /// An agent (this one or another one in the session).
    Agent,
    /// A system notice.
    System,
}

/// One entry of `transcriptWindow`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TranscriptMessage {
    /// Who said it.
    pub role: TranscriptRole,
    /// The text.
    pub content: String,
    /// When, in ms since the epoch.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timestamp: Option<f64>,
    /// The agent that said it (role `agent`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// That agent's display name.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_name: Option<String>,
    /// The turn it belongs to.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub turn_id: Option<String>,
}

/// `limits`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnLimits {
    /// Most transcript messages Lowkey sends.
    pub transcript_window_messages: u64,
}

impl ExternalAgentTurnRequest {
    /// Parses and validates a `POST /lowkey/turn` body.
    ///
    /// # Errors
    /// A [`BadRequest`] naming the first field that is missing, mistyped or invalid.
    pub fn from_json(body: &[u8]) -> Result<Self, BadRequest> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| BadRequest::new(format!("body is not valid JSON: {e}")))?;
        Self::from_value(&value)
    }

    /// Validates an already-parsed JSON body.
    ///
    /// # Errors
    /// A [`BadRequest`] naming the first field that is missing, mistyped or invalid.
    pub fn from_value(value: &Value) -> Result<Self, BadRequest> {
        let obj = object(value, "body")?;
        let protocol_version = match obj.get("protocolVersion") {
            None => return Err(BadRequest::new("protocolVersion is required")),
            Some(v) => match whole_number(v) {
                Some(LOWKEY_PROTOCOL_VERSION) => LOWKEY_PROTOCOL_VERSION,
                _ => {
                    return Err(BadRequest::new(format!(
                        "unsupported protocolVersion {v}: this agent speaks external turn protocol 1 (the number 1)"
                    )));
                }
            },
        };
        let plugin_id = id(obj, "pluginId", "pluginId")?;

        let sh = object(
            field(obj, "sessionHandle", "sessionHandle")?,
            "sessionHandle",
        )?;
        let session_handle = SessionHandle {
            id: id(sh, "id", "sessionHandle.id")?,
            project_path: string(sh, "projectPath", "sessionHandle.projectPath")?.to_owned(),
            session_id: id(sh, "sessionId", "sessionHandle.sessionId")?,
            agent_id: id(sh, "agentId", "sessionHandle.agentId")?,
        };

        let t = object(field(obj, "turn", "turn")?, "turn")?;
        let turn = TurnInput {
            turn_id: id(t, "turnId", "turn.turnId")?,
            message: string(t, "message", "turn.message")?.to_owned(),
            headless: match field(t, "headless", "turn.headless")? {
                Value::Bool(b) => *b,
                other => return Err(mistyped("turn.headless", "a boolean", other)),
            },
            user_name: optional_string(t, "userName", "turn.userName")?,
        };

        let window = match field(obj, "transcriptWindow", "transcriptWindow")? {
            Value::Array(items) => items,
            other => return Err(mistyped("transcriptWindow", "an array", other)),
        };
        let transcript_window = window
            .iter()
            .enumerate()
            .map(|(i, item)| transcript_message(item, i))
            .collect::<Result<Vec<_>, _>>()?;

        let l = object(field(obj, "limits", "limits")?, "limits")?;
        let cap = field(
            l,
            "transcriptWindowMessages",
            "limits.transcriptWindowMessages",
        )?;
        let limits = TurnLimits {
            transcript_window_messages: whole_number(cap).ok_or_else(|| {
                BadRequest::new(format!(
                    "limits.transcriptWindowMessages must be a non-negative integer, got {cap}"
                ))
            })?,
        };

        Ok(Self {
            protocol_version,
            plugin_id,
            session_handle,
            turn,
            transcript_window,
            limits,
        })
    }

    /// The idempotency digest: `pluginId`, `sessionHandle` and `turn`. The transcript window is
    /// left out on purpose: a retried delivery of the same turn may carry a window that moved
    /// on (another agent answered meanwhile), and that is still the same turn.
    pub fn fingerprint(&self) -> String {
        #[derive(Serialize)]
        #[serde(rename_all = "camelCase")]
        struct Identity<'a> {
            plugin_id: &'a str,
            session_handle: &'a SessionHandle,
            turn: &'a TurnInput,
        }
        let bytes = serde_json::to_vec(&Identity {
            plugin_id: &self.plugin_id,
            session_handle: &self.session_handle,
            turn: &self.turn,
        })
        .unwrap_or_default();
        hex_digest(&bytes)
    }

    /// The transcript window as the seed of a conversation runway does not know (new, or
    /// expired from the store): the last `limits.transcriptWindowMessages` entries, without
    /// this turn's own message. `agent` entries become [`Role::Assistant`]; another agent's
    /// entries are prefixed with its name so this agent does not take them for its own.
    pub fn seed_messages(&self) -> Vec<Message> {
        let me = &self.session_handle.agent_id;
        let mut window: Vec<&TranscriptMessage> = self
            .transcript_window
            .iter()
            .filter(|m| m.turn_id.as_deref() != Some(self.turn.turn_id.as_str()))
            .collect();
        if window.last().is_some_and(|m| {
            m.role == TranscriptRole::User && m.turn_id.is_none() && m.content == self.turn.message
        }) {
            window.pop();
        }
        let cap = usize::try_from(self.limits.transcript_window_messages).unwrap_or(usize::MAX);
        let skip = window.len().saturating_sub(cap);
        window
            .into_iter()
            .skip(skip)
            .map(|m| match m.role {
                TranscriptRole::User => Message::new(Role::User, m.content.clone()),
                TranscriptRole::System => Message::new(Role::System, m.content.clone()),
                TranscriptRole::Agent => match &m.agent_id {
                    Some(other) if other != me => {
                        let name = m.agent_name.as_deref().unwrap_or(other);
                        Message::new(Role::Assistant, format!("[{name}] {}", m.content))
                    }
                    _ => Message::new(Role::Assistant, m.content.clone()),
                },
            })
            .collect()
    }
}

fn hex_digest(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

fn transcript_message(item: &Value, i: usize) -> Result<TranscriptMessage, BadRequest> {
    let at = |f: &str| format!("transcriptWindow[{i}].{f}");
    let obj = match item {
        Value::Object(o) => o,
        other => {
            return Err(mistyped(
                &format!("transcriptWindow[{i}]"),
                "an object",
                other,
            ));
        }
    };
    let role = match string(obj, "role", &at("role"))? {
        "user" => TranscriptRole::User,
        "agent" => TranscriptRole::Agent,
        "system" => TranscriptRole::System,
        other => {
            return Err(BadRequest::new(format!(
                "{} must be \"user\", \"agent\" or \"system\", got {other:?}",
                at("role")
            )));
        }
    };
    let content = string(obj, "content", &at("content"))?.to_owned();
    let timestamp = match obj.get("timestamp") {
        None => None,
        Some(Value::Number(n)) => n.as_f64(),
        Some(other) => return Err(mistyped(&at("timestamp"), "a number", other)),
    };
    Ok(TranscriptMessage {
        role,
        content,
        timestamp,
        agent_id: optional_string(obj, "agentId", &at("agentId"))?,
        agent_name: optional_string(obj, "agentName", &at("agentName"))?,
        turn_id: optional_string(obj, "turnId", &at("turnId"))?,
    })
}

fn object<'v>(v: &'v Value, name: &str) -> Result<&'v Map<String, Value>, BadRequest> {
    v.as_object()
        .ok_or_else(|| mistyped(name, "a JSON object", v))
}

fn field<'v>(obj: &'v Map<String, Value>, key: &str, name: &str) -> Result<&'v Value, BadRequest> {
    obj.get(key)
        .ok_or_else(|| BadRequest::new(format!("{name} is required")))
}

fn string<'v>(obj: &'v Map<String, Value>, key: &str, name: &str) -> Result<&'v str, BadRequest> {
    match field(obj, key, name)? {
        Value::String(s) => Ok(s),
        other => Err(mistyped(name, "a string", other)),
    }
}

/// A required, non-empty string.
fn id(obj: &Map<String, Value>, key: &str, name: &str) -> Result<String, BadRequest> {
    let s = string(obj, key, name)?;
    if s.is_empty() {
        return Err(BadRequest::new(format!("{name} must not be empty")));
    }
    Ok(s.to_owned())
}

/// An optional string: absent is `None`; present must be a string (`null` included is refused,
/// as the schema does).
fn optional_string(
    obj: &Map<String, Value>,
    key: &str,
    name: &str,
) -> Result<Option<String>, BadRequest> {
    match obj.get(key) {
        None => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(other) => Err(mistyped(name, "a string when present", other)),
    }
}

/// A non-negative whole number, as JSON Schema counts them: `40` and `40.0` alike.
fn whole_number(v: &Value) -> Option<u64> {
    let n = v.as_number()?;
    n.as_u64().or_else(|| {
        let f = n.as_f64()?;
        (f.is_finite() && f >= 0.0 && f.fract() == 0.0 && f <= u64::MAX as f64).then_some(f as u64)
    })
}

fn mistyped(name: &str, expected: &str, got: &Value) -> BadRequest {
    BadRequest::new(format!("{name} must be {expected}, got {}", json_kind(got)))
}
