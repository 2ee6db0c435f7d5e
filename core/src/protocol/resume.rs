//! `resume`: the user's answer to the question the previous turn asked.
//!
//! The contract names the decisions but not the exact shape, so this reading is deliberately
//! liberal: `{"decision", "message"?, "answers"?, "editedAction"?}` where `answers` is an array
//! of strings or objects and `editedAction` is `{"name", "arguments", "id"?,
//! "originalArguments"?}` (or an array of them, one per edited call of a `review`) with
//! `arguments` either an object or a JSON string (decoded when it parses). Unknown fields are
//! ignored and an unknown decision is kept as [`Decision::Other`] rather than failing the turn.

use serde::Serialize;
use serde_json::Value;

use super::json_kind::json_kind;
use crate::error::BadRequest;

/// What the user decided.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Decision {
    /// `approval` or `review`: go ahead.
    Approve,
    /// `approval` or `review`: do not.
    Reject,
    /// `review`: go ahead with the arguments in [`Resume::edited_actions`].
    Edit,
    /// `choice`, `input` or `review`: the user answered in words ([`Resume::message`],
    /// [`Resume::answers`], and the turn's `input`).
    Respond,
    /// `authorization`: the popup closed successfully. Not proof that access was granted:
    /// check your own token store.
    Authorized,
    /// A decision this version does not know.
    #[serde(untagged)]
    Other(String),
}

impl Decision {
    fn parse(s: &str) -> Self {
        match s {
            "approve" => Self::Approve,
            "reject" => Self::Reject,
            "edit" => Self::Edit,
            "respond" => Self::Respond,
            "authorized" => Self::Authorized,
            other => Self::Other(other.to_owned()),
        }
    }

    /// The wire spelling.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Approve => "approve",
            Self::Reject => "reject",
            Self::Edit => "edit",
            Self::Respond => "respond",
            Self::Authorized => "authorized",
            Self::Other(s) => s,
        }
    }
}

/// An edited tool call a `review` came back with.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct EditedAction {
    /// The id of the call it edits ([`crate::protocol::ReviewItem::id`]; `id` or
    /// `toolCallId`), when the client sent it back.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Tool name.
    pub name: String,
    /// Arguments; a JSON string that parses is decoded, any other string is kept as a string.
    pub arguments: Value,
    /// The call's arguments as the card showed them (`originalArguments`), when sent: tells
    /// two calls of one tool apart without an id.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub original_arguments: Option<Value>,
}

impl EditedAction {
    fn from_value(v: &Value) -> Result<Self, BadRequest> {
        let a = v
            .as_object()
            .ok_or_else(|| BadRequest::new("resume.editedAction must be an object"))?;
        let name = a
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| BadRequest::new("resume.editedAction.name must be a string"))?
            .to_owned();
        let decoded = |v: Option<&Value>| match v {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => {
                Some(serde_json::from_str(s).unwrap_or_else(|_| Value::String(s.clone())))
            }
            Some(other) => Some(other.clone()),
        };
        let id = match a.get("id").or_else(|| a.get("toolCallId")) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(BadRequest::new("resume.editedAction.id must be a string")),
        };
        Ok(Self {
            id,
            name,
            arguments: decoded(a.get("arguments")).unwrap_or(Value::Object(Default::default())),
            original_arguments: decoded(a.get("originalArguments")),
        })
    }
}

/// The `resume` object of a turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Resume {
    /// What the user decided.
    pub decision: Decision,
    /// Free text the user typed, when any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// Structured answers (`choice`), strings or objects as sent.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub answers: Vec<Value>,
    /// The edited calls (`review` with `edit`): Console sends one, a client may send one per
    /// call the user edited.
    #[serde(rename = "editedAction", skip_serializing_if = "Vec::is_empty")]
    pub edited_actions: Vec<EditedAction>,
}

impl From<Decision> for Resume {
    /// The decision alone, with no message, answers or edited calls.
    fn from(decision: Decision) -> Self {
        Self {
            decision,
            message: None,
            answers: Vec::new(),
            edited_actions: Vec::new(),
        }
    }
}

impl Resume {
    pub(crate) fn from_value(v: &Value) -> Result<Self, BadRequest> {
        let obj = v
            .as_object()
            .ok_or_else(|| BadRequest::new("resume must be an object"))?;
        let decision = match obj.get("decision") {
            Some(Value::String(s)) => Decision::parse(s),
            None | Some(Value::Null) => return Err(BadRequest::new("resume.decision is required")),
            Some(other) => {
                return Err(BadRequest::new(format!(
                    "resume.decision must be a string, got {}",
                    json_kind(other)
                )));
            }
        };
        let message = match obj.get("message") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(BadRequest::new("resume.message must be a string")),
        };
        let answers = match obj.get("answers") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(a)) => a.clone(),
            Some(single @ (Value::String(_) | Value::Object(_))) => vec![single.clone()],
            Some(_) => return Err(BadRequest::new("resume.answers must be an array")),
        };
        let edited_actions = match obj.get("editedAction") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(all)) => all
                .iter()
                .map(EditedAction::from_value)
                .collect::<Result<_, _>>()?,
            Some(one) => vec![EditedAction::from_value(one)?],
        };
        Ok(Self {
            decision,
            message,
            answers,
            edited_actions,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_each_decision() {
        for (s, d) in [
            ("approve", Decision::Approve),
            ("reject", Decision::Reject),
            ("edit", Decision::Edit),
            ("respond", Decision::Respond),
            ("authorized", Decision::Authorized),
            ("later", Decision::Other("later".into())),
        ] {
            let r = Resume::from_value(&json!({ "decision": s })).unwrap();
            assert_eq!(r.decision, d);
            assert_eq!(r.decision.as_str(), s);
        }
    }

    #[test]
    fn edited_action_arguments_as_object_or_string() {
        let a = Resume::from_value(&json!({"decision": "edit",
            "editedAction": {"name": "book", "arguments": "{\"seat\":\"12A\"}"}}))
        .unwrap();
        assert_eq!(a.edited_actions[0].arguments, json!({"seat": "12A"}));
        let b = Resume::from_value(&json!({"decision": "edit",
            "editedAction": {"name": "book", "arguments": {"seat": "1C"}}}))
        .unwrap();
        assert_eq!(b.edited_actions[0].arguments, json!({"seat": "1C"}));
        assert_eq!(b.edited_actions[0].id, None);
    }

    #[test]
    fn edited_actions_carry_the_call_id_and_may_come_several() {
        let r = Resume::from_value(&json!({"decision": "edit", "editedAction": [
            {"id": "B-2", "name": "refund", "arguments": {"amount": 10}},
            {"toolCallId": "A-1", "name": "refund", "arguments": "{\"amount\":4}",
             "originalArguments": "{\"amount\":5}"}]}))
        .unwrap();
        assert_eq!(r.edited_actions.len(), 2);
        assert_eq!(r.edited_actions[0].id.as_deref(), Some("B-2"));
        assert_eq!(r.edited_actions[1].id.as_deref(), Some("A-1"));
        assert_eq!(r.edited_actions[1].arguments, json!({"amount": 4}));
        assert_eq!(
            r.edited_actions[1].original_arguments,
            Some(json!({"amount": 5}))
        );
        for bad in [
            json!({"decision": "edit", "editedAction": 3}),
            json!({"decision": "edit", "editedAction": [{"arguments": {}}]}),
            json!({"decision": "edit", "editedAction": {"name": "x", "id": 7}}),
        ] {
            assert!(Resume::from_value(&bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn answers_of_strings_or_objects() {
        let r = Resume::from_value(&json!({"decision": "respond", "message": "B",
            "answers": ["B", {"id": "b", "label": "B"}]}))
        .unwrap();
        assert_eq!(r.answers.len(), 2);
        assert_eq!(r.message.as_deref(), Some("B"));
    }

    #[test]
    fn decision_is_required() {
        assert!(Resume::from_value(&json!({})).is_err());
        assert!(Resume::from_value(&json!({"decision": 1})).is_err());
        assert!(Resume::from_value(&json!("approve")).is_err());
    }
}
