//! The `POST /runs` body Console sends for one chat turn.
//!
//! Parsing is strict where a lenient reading would be wrong (ids are strings, never numbers:
//! a 63-bit id parsed as a float collapses two ids into one; `protocolVersion` is `"1"`), and
//! liberal where the contract leaves the shape open (`resume`, `history`), so an agent keeps
//! working when Console adds a field.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::attachment::Attachment;
use super::json_kind::json_kind;
use super::resume::Resume;
use crate::error::BadRequest;
use crate::protocol::{Message, Role};

/// The protocol version this crate speaks on `POST /runs`.
pub const PROTOCOL_VERSION: &str = "1";

/// Longest id accepted in `runId`, `threadId`, `agentId`, `workspaceId`, `userId`.
pub const MAX_ID_LEN: usize = 256;

/// One chat turn, as Console sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RunRequest {
    /// Always `"1"`.
    pub protocol_version: String,
    /// Id of this turn, new on every turn; the idempotency key.
    pub run_id: String,
    /// Conversation id; carries a `:<branch>` suffix after a fork.
    pub thread_id: String,
    /// The Digital Worker being called.
    pub agent_id: String,
    /// The calling organization.
    pub workspace_id: String,
    /// The person chatting; absent when no real person is behind the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub user_id: Option<String>,
    /// What the user typed; may be empty (for example when only `resume` carries a decision).
    pub input: String,
    /// Files the user attached to this turn.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attachments: Vec<Attachment>,
    /// The user's answer to the question the previous turn asked.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resume: Option<Resume>,
    /// Prior turns; in practice only present when the user forked the conversation.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub history: Vec<Message>,
}

impl RunRequest {
    /// Parses and validates a `POST /runs` body.
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
        let obj = value
            .as_object()
            .ok_or_else(|| BadRequest::new("body must be a JSON object"))?;
        let protocol_version = required_string(obj, "protocolVersion")?;
        if protocol_version != PROTOCOL_VERSION {
            return Err(BadRequest::new(format!(
                "unsupported protocolVersion {protocol_version:?}: this agent speaks \"1\""
            )));
        }
        let run_id = required_id(obj, "runId")?;
        let thread_id = required_id(obj, "threadId")?;
        let agent_id = required_id(obj, "agentId")?;
        let workspace_id = required_id(obj, "workspaceId")?;
        let user_id = match obj.get("userId") {
            None | Some(Value::Null) => None,
            Some(_) => Some(required_id(obj, "userId")?),
        };
        let input = required_string(obj, "input")?;
        let attachments = match obj.get("attachments") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(|(i, item)| Attachment::from_value(item, i))
                .collect::<Result<_, _>>()?,
            Some(_) => return Err(BadRequest::new("attachments must be an array")),
        };
        let resume = match obj.get("resume") {
            None | Some(Value::Null) => None,
            Some(v) => Some(Resume::from_value(v)?),
        };
        let history = match obj.get("history") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items.iter().filter_map(history_message).collect(),
            Some(_) => return Err(BadRequest::new("history must be an array")),
        };
        Ok(Self {
            protocol_version: protocol_version.to_owned(),
            run_id,
            thread_id,
            agent_id,
            workspace_id,
            user_id,
            input: input.to_owned(),
            attachments,
            resume,
            history,
        })
    }

    /// True for the single-use threads of Console's Test button (`validate-<16 hex>`).
    pub fn is_validation_thread(&self) -> bool {
        is_validation_thread(&self.thread_id)
    }
}

/// True for a `validate-<16 hex characters>` thread id, the shape Console's Test button uses.
pub fn is_validation_thread(thread_id: &str) -> bool {
    thread_id
        .strip_prefix("validate-")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

fn required_string<'v>(
    obj: &'v serde_json::Map<String, Value>,
    field: &str,
) -> Result<&'v str, BadRequest> {
    match obj.get(field) {
        Some(Value::String(s)) => Ok(s),
        None | Some(Value::Null) => Err(BadRequest::new(format!("{field} is required"))),
        Some(other) => Err(BadRequest::new(format!(
            "{field} must be a string, got {}",
            json_kind(other)
        ))),
    }
}

/// Ids become storage keys on every platform, so their alphabet is closed: Console's ids are
/// decimal integers, ULIDs, `validate-<hex>` and `<id>:<branch>`.
fn required_id(obj: &serde_json::Map<String, Value>, field: &str) -> Result<String, BadRequest> {
    let id = required_string(obj, field)?;
    validate_id(field, id)?;
    Ok(id.to_owned())
}

/// Checks that `id` is a usable identifier: 1 to [`MAX_ID_LEN`] characters from
/// `A-Z a-z 0-9 . _ : - ~ @ + =`.
///
/// # Errors
/// A [`BadRequest`] naming `field`.
pub fn validate_id(field: &str, id: &str) -> Result<(), BadRequest> {
    if id.is_empty() {
        return Err(BadRequest::new(format!("{field} must not be empty")));
    }
    if id.len() > MAX_ID_LEN {
        return Err(BadRequest::new(format!(
            "{field} is longer than {MAX_ID_LEN} characters"
        )));
    }
    if !id
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || b".:_-~@+=".contains(&b))
    {
        return Err(BadRequest::new(format!(
            "{field} may only contain A-Z a-z 0-9 . _ : - ~ @ + ="
        )));
    }
    Ok(())
}

/// Reads one `history` entry liberally: `{role, content}` where content is a string or an
/// array of `{text}` parts; `text` or `message` are accepted in place of `content`. Entries
/// with no recognisable text are skipped rather than failing the turn.
fn history_message(item: &Value) -> Option<Message> {
    let obj = item.as_object()?;
    let role = match obj.get("role").and_then(Value::as_str).unwrap_or("user") {
        "assistant" | "agent" | "ai" | "bot" => Role::Assistant,
        "system" => Role::System,
        "tool" => return None,
        _ => Role::User,
    };
    let content = ["content", "text", "message", "input"]
        .iter()
        .find_map(|k| obj.get(*k))
        .and_then(text_of)?;
    Some(Message::new(role, content))
}

fn text_of(v: &Value) -> Option<String> {
    match v {
        Value::String(s) => Some(s.clone()),
        Value::Array(parts) => {
            let text: Vec<&str> = parts
                .iter()
                .filter_map(|p| match p {
                    Value::String(s) => Some(s.as_str()),
                    Value::Object(o) => o.get("text").and_then(Value::as_str),
                    _ => None,
                })
                .collect();
            (!text.is_empty()).then(|| text.join(""))
        }
        _ => None,
    }
}

impl<'de> Deserialize<'de> for RunRequest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let value = Value::deserialize(d)?;
        Self::from_value(&value).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "protocolVersion": "1",
            "runId": "01K5BH5PSX926W6RZ6YR1P8WWV",
            "threadId": "918273645500123456",
            "agentId": "918273688800000200",
            "workspaceId": "918273600000000001",
            "userId": "918273644400000042",
            "input": "Where is order DH-99217 right now?"
        })
    }

    #[test]
    fn parses_the_contract_example() {
        let r = RunRequest::from_value(&base()).unwrap();
        assert_eq!(r.thread_id, "918273645500123456");
        assert_eq!(r.user_id.as_deref(), Some("918273644400000042"));
        assert!(r.attachments.is_empty() && r.resume.is_none() && r.history.is_empty());
    }

    #[test]
    fn numeric_id_is_refused_not_rounded() {
        let mut v = base();
        v["threadId"] = json!(918273645500123456u64);
        let e = RunRequest::from_value(&v).unwrap_err();
        assert!(e.message().contains("threadId must be a string"), "{e}");
    }

    #[test]
    fn protocol_version_must_be_string_one() {
        for bad in [json!(1), json!("2"), json!(null)] {
            let mut v = base();
            v["protocolVersion"] = bad;
            assert!(RunRequest::from_value(&v).is_err());
        }
    }

    #[test]
    fn missing_fields_are_named() {
        for field in ["runId", "threadId", "agentId", "workspaceId", "input"] {
            let mut v = base();
            v.as_object_mut().unwrap().remove(field);
            let e = RunRequest::from_value(&v).unwrap_err();
            assert!(e.message().contains(field), "{e}");
        }
    }

    #[test]
    fn user_id_is_optional_and_input_may_be_empty() {
        let mut v = base();
        v.as_object_mut().unwrap().remove("userId");
        v["input"] = json!("");
        let r = RunRequest::from_value(&v).unwrap();
        assert_eq!(r.user_id, None);
        assert_eq!(r.input, "");
    }

    #[test]
    fn ids_reject_path_and_control_characters() {
        for bad in ["a/b", "a b", "x\n", "", "../etc"] {
            let mut v = base();
            v["threadId"] = json!(bad);
            assert!(RunRequest::from_value(&v).is_err(), "{bad:?}");
        }
        let mut v = base();
        v["threadId"] = json!("918273645500123456:2");
        assert!(RunRequest::from_value(&v).is_ok());
    }

    #[test]
    fn validation_threads_are_recognised() {
        assert!(is_validation_thread("validate-0123456789abcdef"));
        assert!(!is_validation_thread("validate-0123"));
        assert!(!is_validation_thread("validate-0123456789abcdeg"));
        assert!(!is_validation_thread("918273645500123456"));
    }

    #[test]
    fn history_is_read_liberally() {
        let mut v = base();
        v["history"] = json!([
            {"role": "user", "content": "A"},
            {"role": "assistant", "content": [{"type": "text", "text": "B"}]},
            {"role": "tool", "content": "ignored"},
            {"role": "user", "text": "C"},
            42
        ]);
        let r = RunRequest::from_value(&v).unwrap();
        let got: Vec<_> = r
            .history
            .iter()
            .map(|m| (m.role, m.content.as_str()))
            .collect();
        assert_eq!(
            got,
            vec![(Role::User, "A"), (Role::Assistant, "B"), (Role::User, "C")]
        );
    }
}
