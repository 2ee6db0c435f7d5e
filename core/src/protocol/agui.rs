//! The `POST {base}/agui` body an AG-UI 1.0 client sends: `RunAgentInput`.
//!
//! Parsed liberally where AG-UI leaves the shape open (unknown fields, content parts, tools'
//! parameters are accepted as they come) and strictly where runway keys storage or limits on
//! a value: `threadId` and `runId` are non-empty strings of at most [`MAX_ID_LEN`] bytes, and
//! the workspace and user (`forwardedProps.workspaceId`, `forwardedProps.userId`) pass
//! Console's id rules ([`validate_id`]). Every list is bounded, like Console's body.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

use super::json_kind::json_kind;
use super::resume::{Decision, Resume};
use super::run_request::{MAX_ID_LEN, validate_id};
use crate::error::BadRequest;
use crate::protocol::{
    ClientTool, ClientToolResult, ContextEntry, MAX_CLIENT_TOOL_RESULT_BYTES, Message, Role,
};

/// The workspace a run without `forwardedProps.workspaceId` is counted in.
pub const DEFAULT_WORKSPACE: &str = "default";

/// The AG-UI `id` of the question run `run_id` ended with (runway asks one question per
/// run): what the next run's `resume[].interruptId` names.
pub fn interrupt_id(run_id: &str) -> String {
    format!("{run_id}.interrupt")
}

/// Token counts of one provider and model over a run: an entry of AG-UI 1.0's `usage[]` on
/// `RUN_FINISHED` and `RUN_ERROR` (`TokenUsage`: `outputTokens` includes `reasoningTokens`,
/// `totalTokens` is input plus output).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenUsage {
    /// Who served the model (`openai`, `azure`…), when the agent said.
    pub provider: Option<String>,
    /// The model.
    pub model: String,
    /// Prompt tokens.
    pub input_tokens: u64,
    /// Completion tokens, reasoning included.
    pub output_tokens: u64,
    /// The reasoning part of `output_tokens`.
    pub reasoning_tokens: u64,
}

impl TokenUsage {
    /// The entry as AG-UI writes it (every count at most 2^53 − 1, JSON's safe integers;
    /// `reasoningTokens` only when some were reported).
    pub fn to_json(&self) -> Value {
        const MAX_SAFE: u64 = (1 << 53) - 1;
        let n = |v: u64| Value::from(v.min(MAX_SAFE));
        let mut entry = Map::new();
        if let Some(p) = &self.provider {
            entry.insert("provider".into(), Value::String(p.clone()));
        }
        entry.insert("model".into(), Value::String(self.model.clone()));
        entry.insert("inputTokens".into(), n(self.input_tokens));
        entry.insert("outputTokens".into(), n(self.output_tokens));
        entry.insert(
            "totalTokens".into(),
            n(self.input_tokens.saturating_add(self.output_tokens)),
        );
        if self.reasoning_tokens > 0 {
            entry.insert("reasoningTokens".into(), n(self.reasoning_tokens));
        }
        Value::Object(entry)
    }
}

/// 12 hex digits of a digest of `run_id`: appended to the ids runway makes for a run's messages
/// and tool calls (`m1.{tag}`, `call-1.{tag}`), which are otherwise only unique in the run, so
/// they are unique in an AG-UI thread (a client merges an event into an earlier message of the
/// same id). The same run (a replay) gets the same ids.
pub fn run_tag(run_id: &str) -> [u8; 12] {
    let digest = Sha256::digest(run_id.as_bytes());
    let mut tag = [0u8; 12];
    hex::encode_to_slice(&digest[..6], &mut tag).unwrap_or_default();
    tag
}

/// Most entries in `messages`, `tools`, `context` or `resume`.
pub const MAX_LIST_LEN: usize = 1_000;

/// One AG-UI run, as a client sends it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunAgentInput {
    /// The conversation.
    pub thread_id: String,
    /// This run; the idempotency key.
    pub run_id: String,
    /// The run this one continues from, if the client names one.
    pub parent_run_id: Option<String>,
    /// The conversation as the client has it, oldest first.
    pub messages: Vec<InputMessage>,
    /// `messages` exactly as sent (ids, tool calls and content parts kept): what the
    /// `MESSAGES_SNAPSHOT` before an interrupt repeats, so applying it loses nothing.
    pub sent_messages: Vec<Value>,
    /// The client's view of the agent's state (`null` when absent).
    pub state: Value,
    /// Tools the client offers and runs itself (validated: [`ClientTool::list_from`]).
    pub tools: Vec<ClientTool>,
    /// Context entries (`description`, `value`), at most
    /// [`crate::protocol::MAX_CLIENT_CONTEXT_BYTES`] together.
    pub context: Vec<ContextEntry>,
    /// `forwardedProps`, as sent (`null` when absent).
    pub forwarded_props: Value,
    /// Answers to the previous run's interrupts (kept as sent).
    pub resume: Vec<Value>,
    /// `forwardedProps.workspaceId`, or [`DEFAULT_WORKSPACE`].
    pub workspace_id: String,
    /// `forwardedProps.userId`, if sent.
    pub user_id: Option<String>,
    /// A digest of the whole body: the same `runId` with another body is a different run.
    pub fingerprint: String,
}

/// One entry of `messages`, reduced to what runway's transcript keeps.
#[derive(Debug, Clone, PartialEq)]
pub struct InputMessage {
    /// The message's `id`.
    pub id: String,
    /// Its `role` as sent (`user`, `assistant`, `system`, `developer`, `tool`, `activity`,
    /// `reasoning`).
    pub role: String,
    /// Its text (text parts joined; other parts are named, not carried).
    pub content: String,
    /// A tool message's `toolCallId`.
    pub tool_call_id: Option<String>,
    /// A tool message's `error` (the tool failed), if sent.
    pub error: Option<String>,
}

impl InputMessage {
    /// Whether runway produced this message itself (the agent's side of the thread): an
    /// assistant, reasoning or activity message, or the result of a tool runway ran, which
    /// the client holds as the `tool` message `TOOL_CALL_RESULT` named `{toolCallId}-result`.
    /// A client tool's result (any other `tool` message) is the client's.
    pub fn is_agent_side(&self) -> bool {
        match (self.role.as_str(), &self.tool_call_id) {
            ("assistant" | "reasoning" | "activity", _) => true,
            ("tool", Some(call)) => is_server_result_id(&self.id, call),
            _ => false,
        }
    }

    /// A client tool's result, if this is one (a `tool` message runway did not produce).
    pub fn client_tool_result(&self) -> Option<ClientToolResult> {
        let call = self.tool_call_id.as_ref()?;
        if self.role != "tool" || is_server_result_id(&self.id, call) {
            return None;
        }
        let content = match &self.error {
            Some(e) if self.content.is_empty() => format!("Error: {e}"),
            Some(e) => format!("Error: {e}\n{}", self.content),
            None => self.content.clone(),
        };
        Some(ClientToolResult {
            tool_call_id: call.clone(),
            content: cut(content, MAX_CLIENT_TOOL_RESULT_BYTES),
        })
    }

    /// The message as runway's transcript keeps it; `None` for what the transcript does not
    /// keep (reasoning, activity).
    pub fn transcript_message(&self) -> Option<Message> {
        let role = match self.role.as_str() {
            "user" | "tool" => Role::User,
            "assistant" => Role::Assistant,
            "system" | "developer" => Role::System,
            _ => return None,
        };
        Some(Message::new(role, self.text()))
    }

    /// The text the agent reads for this message: a tool result is labelled with its call.
    pub fn text(&self) -> String {
        match (&self.tool_call_id, self.role.as_str()) {
            (Some(id), "tool") => format!("[tool result {id}] {}", self.content),
            _ => self.content.clone(),
        }
    }
}

impl RunAgentInput {
    /// Parses and validates a `POST /agui` body.
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
        let thread_id = run_id_field(obj, "threadId")?;
        let run_id = run_id_field(obj, "runId")?;
        let parent_run_id = match obj.get("parentRunId") {
            None | Some(Value::Null) => None,
            Some(_) => Some(run_id_field(obj, "parentRunId")?),
        };
        let sent_messages = list(obj, "messages", true)?;
        let messages = sent_messages
            .iter()
            .enumerate()
            .map(|(i, m)| input_message(m, i))
            .collect::<Result<Vec<_>, _>>()?;
        let sent_messages = sent_messages.to_vec();
        let tools = ClientTool::list_from(list(obj, "tools", false)?)?;
        let context = ContextEntry::list_from(list(obj, "context", false)?)?;
        let resume = list(obj, "resume", false)?.to_vec();
        for (i, entry) in resume.iter().enumerate() {
            if !entry.get("interruptId").is_some_and(Value::is_string) {
                return Err(BadRequest::new(format!(
                    "resume[{i}].interruptId must be a string"
                )));
            }
            match entry.get("status").and_then(Value::as_str) {
                Some("resolved" | "cancelled") => {}
                _ => {
                    return Err(BadRequest::new(format!(
                        "resume[{i}].status must be \"resolved\" or \"cancelled\""
                    )));
                }
            }
        }
        let forwarded_props = obj.get("forwardedProps").cloned().unwrap_or(Value::Null);
        let prop = |name: &str| -> Result<Option<String>, BadRequest> {
            let field = format!("forwardedProps.{name}");
            match forwarded_props.get(name) {
                None | Some(Value::Null) => Ok(None),
                Some(Value::String(s)) => {
                    validate_id(&field, s)?;
                    Ok(Some(s.clone()))
                }
                Some(other) => Err(BadRequest::new(format!(
                    "{field} must be a string, got {}",
                    json_kind(other)
                ))),
            }
        };
        let workspace_id = prop("workspaceId")?.unwrap_or_else(|| DEFAULT_WORKSPACE.to_owned());
        let user_id = prop("userId")?;
        let fingerprint = hex::encode(Sha256::digest(
            serde_json::to_vec(value).unwrap_or_default(),
        ));
        Ok(Self {
            thread_id,
            run_id,
            parent_run_id,
            messages,
            sent_messages,
            state: obj.get("state").cloned().unwrap_or(Value::Null),
            tools,
            context,
            forwarded_props,
            resume,
            workspace_id,
            user_id,
            fingerprint,
        })
    }

    /// The agent's [`Resume`] from `resume[]`: runway asks one question per run, so the first
    /// entry answers it. `cancelled` is a rejection; `resolved` carries Console's resume
    /// object as its `payload` (`{decision, message?, answers?, editedAction?}`, as the
    /// interrupt's `responseSchema` describes), and a `resolved` without a payload approves.
    ///
    /// # Errors
    /// A [`BadRequest`] when the payload is not a resume object.
    pub fn agent_resume(&self) -> Result<Option<Resume>, BadRequest> {
        let Some(entry) = self.resume.first() else {
            return Ok(None);
        };
        if entry.get("status").and_then(Value::as_str) == Some("cancelled") {
            return Ok(Some(Resume::from(Decision::Reject)));
        }
        match entry.get("payload") {
            None | Some(Value::Null) => Ok(Some(Resume::from(Decision::Approve))),
            Some(payload) => Resume::from_value(payload)
                .map(Some)
                .map_err(|e| BadRequest::new(format!("resume[0].payload: {}", e.message()))),
        }
    }

    /// The `interruptId` of each `resume[]` entry, in order (checked to be strings when parsed).
    pub fn resume_ids(&self) -> Vec<String> {
        self.resume
            .iter()
            .filter_map(|e| e.get("interruptId").and_then(Value::as_str))
            .map(str::to_owned)
            .collect()
    }

    /// Splits the client's history at runway's last word: the messages after the last one the
    /// agent's side said (assistant, reasoning, activity) are this run's input, everything
    /// before it is what the thread already holds. Returns (earlier messages, new messages).
    pub fn split_history(&self) -> (&[InputMessage], &[InputMessage]) {
        let new_from = self
            .messages
            .iter()
            .rposition(InputMessage::is_agent_side)
            .map_or(0, |i| i + 1);
        self.messages.split_at(new_from)
    }

    /// The client tools' results among this run's new messages ([`RunAgentInput::split_history`]),
    /// in order.
    pub fn tool_results(&self) -> Vec<ClientToolResult> {
        self.split_history()
            .1
            .iter()
            .filter_map(InputMessage::client_tool_result)
            .collect()
    }
}

/// Whether `message_id` is the id runway gives the result of call `call` it ran
/// (`TOOL_CALL_RESULT.messageId`, `{toolCallId}-result`).
fn is_server_result_id(message_id: &str, call: &str) -> bool {
    message_id
        .strip_suffix("-result")
        .is_some_and(|c| c == call)
}

/// `s` cut to at most `max` bytes on a character boundary, marked when cut.
fn cut(mut s: String, max: usize) -> String {
    if s.len() > max {
        let mut end = max;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        s.truncate(end);
        s.push_str("… [truncated]");
    }
    s
}

/// An AG-UI id runway keys storage on: a non-empty string of at most [`MAX_ID_LEN`] bytes
/// (any alphabet: keys use `storage_id`).
fn run_id_field(obj: &Map<String, Value>, field: &str) -> Result<String, BadRequest> {
    match obj.get(field) {
        Some(Value::String(s)) if s.is_empty() => {
            Err(BadRequest::new(format!("{field} must not be empty")))
        }
        Some(Value::String(s)) if s.len() > MAX_ID_LEN => Err(BadRequest::new(format!(
            "{field} is longer than {MAX_ID_LEN} bytes"
        ))),
        Some(Value::String(s)) => Ok(s.clone()),
        None | Some(Value::Null) => Err(BadRequest::new(format!("{field} is required"))),
        Some(other) => Err(BadRequest::new(format!(
            "{field} must be a string, got {}",
            json_kind(other)
        ))),
    }
}

/// The array `field` (required or not), at most [`MAX_LIST_LEN`] entries.
fn list<'v>(
    obj: &'v Map<String, Value>,
    field: &str,
    required: bool,
) -> Result<&'v [Value], BadRequest> {
    match obj.get(field) {
        Some(Value::Array(items)) if items.len() > MAX_LIST_LEN => Err(BadRequest::new(format!(
            "{field} has more than {MAX_LIST_LEN} entries"
        ))),
        Some(Value::Array(items)) => Ok(items),
        None | Some(Value::Null) if !required => Ok(&[]),
        None | Some(Value::Null) => Err(BadRequest::new(format!("{field} is required"))),
        Some(other) => Err(BadRequest::new(format!(
            "{field} must be an array, got {}",
            json_kind(other)
        ))),
    }
}

fn input_message(item: &Value, i: usize) -> Result<InputMessage, BadRequest> {
    let at = |f: &str| format!("messages[{i}].{f}");
    let obj = item
        .as_object()
        .ok_or_else(|| BadRequest::new(format!("messages[{i}] must be an object")))?;
    let string = |f: &str| match obj.get(f) {
        Some(Value::String(s)) => Ok(s.clone()),
        _ => Err(BadRequest::new(format!("{} must be a string", at(f)))),
    };
    let id = string("id")?;
    if id.len() > MAX_ID_LEN {
        return Err(BadRequest::new(format!(
            "{} is longer than {MAX_ID_LEN} bytes",
            at("id")
        )));
    }
    let role = string("role")?;
    if !matches!(
        role.as_str(),
        "user" | "assistant" | "system" | "developer" | "tool" | "activity" | "reasoning"
    ) {
        return Err(BadRequest::new(format!(
            "{} must be one of user, assistant, system, developer, tool, activity, reasoning",
            at("role")
        )));
    }
    let content = match obj.get("content") {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(s)) => s.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(
                |p| match (p.get("type").and_then(Value::as_str), p.get("text")) {
                    (Some("text"), Some(Value::String(t))) => t.clone(),
                    (Some(kind), _) => format!("[{kind}]"),
                    _ => String::new(),
                },
            )
            .collect::<Vec<_>>()
            .join(""),
        // Activity content is an object: not conversation text.
        Some(Value::Object(_)) => String::new(),
        Some(other) => {
            return Err(BadRequest::new(format!(
                "{} must be a string or an array of parts, got {}",
                at("content"),
                json_kind(other)
            )));
        }
    };
    let tool_call_id = match obj.get("toolCallId") {
        Some(Value::String(s)) => Some(s.clone()),
        _ if role == "tool" => {
            return Err(BadRequest::new(format!(
                "{} must be a string",
                at("toolCallId")
            )));
        }
        _ => None,
    };
    let error = match obj.get("error") {
        Some(Value::String(e)) if role == "tool" => Some(e.clone()),
        _ => None,
    };
    Ok(InputMessage {
        id,
        role,
        content,
        tool_call_id,
        error,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn base() -> Value {
        json!({
            "threadId": "t-1",
            "runId": "r-1",
            "messages": [{"id": "u1", "role": "user", "content": "hello"}],
            "tools": [],
            "context": [],
            "state": {},
            "forwardedProps": {}
        })
    }

    #[test]
    fn parses_a_minimal_input_and_accepts_unknown_fields() {
        let mut v = base();
        v["somethingNew"] = json!({"x": 1});
        v["messages"][0]["extra"] = json!(true);
        let r = RunAgentInput::from_value(&v).unwrap();
        assert_eq!((r.thread_id.as_str(), r.run_id.as_str()), ("t-1", "r-1"));
        assert_eq!(r.workspace_id, DEFAULT_WORKSPACE);
        assert_eq!(r.user_id, None);
        assert_eq!(r.messages[0].content, "hello");
    }

    #[test]
    fn workspace_and_user_come_from_forwarded_props_with_console_id_rules() {
        let mut v = base();
        v["forwardedProps"] = json!({"workspaceId": "ws-1", "userId": "u@x"});
        let r = RunAgentInput::from_value(&v).unwrap();
        assert_eq!(r.workspace_id, "ws-1");
        assert_eq!(r.user_id.as_deref(), Some("u@x"));
        for bad in [json!("a/b"), json!(""), json!(7)] {
            v["forwardedProps"] = json!({"workspaceId": bad});
            let e = RunAgentInput::from_value(&v).unwrap_err();
            assert!(e.message().contains("forwardedProps.workspaceId"), "{e}");
        }
    }

    #[test]
    fn invalid_input_names_the_field() {
        let cases = [
            ("threadId", json!(5), "threadId"),
            ("runId", json!(""), "runId"),
            ("messages", json!("x"), "messages"),
            ("messages", json!([{"id": "a", "role": "robot"}]), "role"),
            (
                "messages",
                json!([{"id": "a", "role": "tool", "content": "x"}]),
                "toolCallId",
            ),
            (
                "tools",
                json!([{"description": "no name"}]),
                "tools[0].name",
            ),
            ("context", json!([{"description": "d"}]), "context[0].value"),
            (
                "resume",
                json!([{"interruptId": "i", "status": "maybe"}]),
                "resume[0].status",
            ),
        ];
        for (field, value, named) in cases {
            let mut v = base();
            v[field] = value;
            let e = RunAgentInput::from_value(&v).unwrap_err();
            assert!(e.message().contains(named), "{field}: {e}");
        }
        let mut v = base();
        v.as_object_mut().unwrap().remove("messages");
        assert!(RunAgentInput::from_value(&v).is_err());
        v = base();
        v["runId"] = json!("x".repeat(MAX_ID_LEN + 1));
        assert!(RunAgentInput::from_value(&v).is_err());
        v = base();
        v["messages"] = json!(vec![
            json!({"id": "a", "role": "user", "content": ""});
            MAX_LIST_LEN + 1
        ]);
        assert!(RunAgentInput::from_value(&v).is_err());
    }

    #[test]
    fn the_new_messages_are_those_after_the_agents_last_word() {
        let mut v = base();
        v["messages"] = json!([
            {"id": "u1", "role": "user", "content": "one"},
            {"id": "a1", "role": "assistant", "content": "two"},
            {"id": "u2", "role": "user", "content": [{"type": "text", "text": "three"}, {"type": "image", "source": {"type": "url", "value": "https://x"}}]},
            {"id": "t1", "role": "tool", "toolCallId": "c1", "content": "42"}
        ]);
        let r = RunAgentInput::from_value(&v).unwrap();
        let (old, new) = r.split_history();
        assert_eq!(
            old.iter().map(|m| m.id.as_str()).collect::<Vec<_>>(),
            ["u1", "a1"]
        );
        assert_eq!(
            new.iter().map(InputMessage::text).collect::<Vec<_>>(),
            ["three[image]", "[tool result c1] 42"]
        );
    }

    #[test]
    fn a_client_tools_result_is_new_input_and_runways_own_tool_result_is_not() {
        let mut v = base();
        v["tools"] =
            json!([{"name": "confirm", "description": "Ask", "parameters": {"type": "object"}}]);
        v["messages"] = json!([
            {"id": "u1", "role": "user", "content": "time?"},
            {"id": "call-1", "role": "assistant", "toolCalls": [{"id": "call-1", "type": "function", "function": {"name": "clock", "arguments": "{}"}}]},
            {"id": "call-1-result", "role": "tool", "toolCallId": "call-1", "content": "12:00"}
        ]);
        let r = RunAgentInput::from_value(&v).unwrap();
        assert_eq!(r.tools[0].name, "confirm");
        assert!(r.split_history().1.is_empty(), "runway's own result");
        assert!(r.tool_results().is_empty());
        v["messages"] = json!([
            {"id": "u1", "role": "user", "content": "order?"},
            {"id": "a1", "role": "assistant", "toolCalls": [{"id": "call_x", "type": "function", "function": {"name": "confirm", "arguments": "{}"}}]},
            {"id": "t1", "role": "tool", "toolCallId": "call_x", "content": "yes"},
            {"id": "t2", "role": "tool", "toolCallId": "call_y", "content": "", "error": "denied"}
        ]);
        let r = RunAgentInput::from_value(&v).unwrap();
        assert_eq!(
            r.tool_results(),
            [
                ClientToolResult {
                    tool_call_id: "call_x".into(),
                    content: "yes".into()
                },
                ClientToolResult {
                    tool_call_id: "call_y".into(),
                    content: "Error: denied".into()
                }
            ]
        );
        v["tools"] = json!([{"name": "bad name"}]);
        assert!(RunAgentInput::from_value(&v).is_err());
    }

    #[test]
    fn resume_entries_become_the_agents_resume() {
        let with = |resume: Value| {
            let mut v = base();
            v["resume"] = resume;
            RunAgentInput::from_value(&v).unwrap().agent_resume()
        };
        assert_eq!(with(json!([])).unwrap(), None);
        let cancelled = json!([{"interruptId": "r.interrupt", "status": "cancelled"}]);
        assert_eq!(with(cancelled).unwrap().unwrap().decision, Decision::Reject);
        let bare = json!([{"interruptId": "r.interrupt", "status": "resolved"}]);
        assert_eq!(with(bare).unwrap().unwrap().decision, Decision::Approve);
        let answered = json!([{"interruptId": "r.interrupt", "status": "resolved",
            "payload": {"decision": "respond", "message": "Ada"}}]);
        let r = with(answered).unwrap().unwrap();
        assert_eq!(
            (r.decision, r.message.as_deref()),
            (Decision::Respond, Some("Ada"))
        );
        let bad = json!([{"interruptId": "r.interrupt", "status": "resolved", "payload": 3}]);
        assert!(
            with(bad)
                .unwrap_err()
                .message()
                .contains("resume[0].payload")
        );
    }

    #[test]
    fn the_fingerprint_follows_the_body() {
        let a = RunAgentInput::from_value(&base()).unwrap();
        let mut v = base();
        v["messages"][0]["content"] = json!("other");
        let b = RunAgentInput::from_value(&v).unwrap();
        assert_eq!(
            a.fingerprint,
            RunAgentInput::from_value(&base()).unwrap().fingerprint
        );
        assert_ne!(a.fingerprint, b.fingerprint);
    }
}
