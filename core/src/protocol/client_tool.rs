//! Tools the client runs itself (AG-UI's `RunAgentInput.tools`, "frontend tools"): what the
//! client offers ([`ClientTool`], bounded and named as a model API takes a function name) and
//! what it sends back for a call of one ([`ClientToolResult`]).

use serde_json::Value;

use super::json_kind::json_kind;
use crate::error::BadRequest;

/// Most tools a client may offer in one run (OpenAI's chat-completions API takes at most 128).
pub const MAX_CLIENT_TOOLS: usize = 128;
/// Longest tool name (`^[a-zA-Z0-9_-]{1,64}$`, the function names chat-completions APIs take).
pub const MAX_CLIENT_TOOL_NAME_LEN: usize = 64;
/// Longest tool description, in bytes.
pub const MAX_CLIENT_TOOL_DESCRIPTION_BYTES: usize = 4 * 1024;
/// Largest `parameters` JSON Schema, in bytes of JSON.
pub const MAX_CLIENT_TOOL_PARAMETERS_BYTES: usize = 16 * 1024;
/// Longest result text of one call kept from the client, in bytes (cut beyond, marked).
pub const MAX_CLIENT_TOOL_RESULT_BYTES: usize = 64 * 1024;

/// A tool the client offers for this run and runs itself when the agent calls it: the call is
/// streamed to the client and the run ends with it pending; the client sends the result on the
/// next run ([`ClientToolResult`]).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientTool {
    /// Its name, as the model calls it (`^[a-zA-Z0-9_-]{1,64}$`, unique among the client's).
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// Its arguments as a JSON Schema object (`{"type": "object"}` when the client sent none).
    pub parameters: Value,
}

/// The result of a call of a [`ClientTool`], as the client sent it (an AG-UI `tool` message).
#[derive(Debug, Clone, PartialEq)]
pub struct ClientToolResult {
    /// The call it answers: the `toolCallId` of the call the agent made.
    pub tool_call_id: String,
    /// What the tool returned (its `error`, when it failed, as `Error: …`), at most
    /// [`MAX_CLIENT_TOOL_RESULT_BYTES`].
    pub content: String,
}

impl ClientTool {
    /// Validates `tools[i]` of a request.
    ///
    /// # Errors
    /// A [`BadRequest`] naming the field: a name that is not `^[a-zA-Z0-9_-]{1,64}$`, a
    /// description that is not a string or too long, `parameters` that is not an object or too
    /// large.
    pub fn from_value(value: &Value, i: usize) -> Result<Self, BadRequest> {
        let at = |f: &str| format!("tools[{i}].{f}");
        let obj = value
            .as_object()
            .ok_or_else(|| BadRequest::new(format!("tools[{i}] must be an object")))?;
        let name = match obj.get("name") {
            Some(Value::String(s)) => s.clone(),
            _ => return Err(BadRequest::new(format!("{} must be a string", at("name")))),
        };
        if !is_function_name(&name) {
            return Err(BadRequest::new(format!(
                "{} must be 1 to {MAX_CLIENT_TOOL_NAME_LEN} letters, digits, '_' or '-'",
                at("name")
            )));
        }
        let description = match obj.get("description") {
            None | Some(Value::Null) => String::new(),
            Some(Value::String(s)) if s.len() > MAX_CLIENT_TOOL_DESCRIPTION_BYTES => {
                return Err(BadRequest::new(format!(
                    "{} is longer than {MAX_CLIENT_TOOL_DESCRIPTION_BYTES} bytes",
                    at("description")
                )));
            }
            Some(Value::String(s)) => s.clone(),
            Some(other) => {
                return Err(BadRequest::new(format!(
                    "{} must be a string, got {}",
                    at("description"),
                    json_kind(other)
                )));
            }
        };
        let parameters = match obj.get("parameters") {
            None | Some(Value::Null) => serde_json::json!({"type": "object", "properties": {}}),
            Some(p @ Value::Object(_)) => {
                if serde_json::to_vec(p).map_or(usize::MAX, |v| v.len())
                    > MAX_CLIENT_TOOL_PARAMETERS_BYTES
                {
                    return Err(BadRequest::new(format!(
                        "{} is larger than {MAX_CLIENT_TOOL_PARAMETERS_BYTES} bytes",
                        at("parameters")
                    )));
                }
                p.clone()
            }
            Some(other) => {
                return Err(BadRequest::new(format!(
                    "{} must be a JSON Schema object, got {}",
                    at("parameters"),
                    json_kind(other)
                )));
            }
        };
        Ok(Self {
            name,
            description,
            parameters,
        })
    }

    /// Validates a request's whole `tools` list: each entry, at most [`MAX_CLIENT_TOOLS`], no
    /// name twice.
    ///
    /// # Errors
    /// A [`BadRequest`] naming the first entry refused.
    pub fn list_from(values: &[Value]) -> Result<Vec<Self>, BadRequest> {
        if values.len() > MAX_CLIENT_TOOLS {
            return Err(BadRequest::new(format!(
                "tools has more than {MAX_CLIENT_TOOLS} entries"
            )));
        }
        let mut tools: Vec<Self> = Vec::with_capacity(values.len());
        for (i, v) in values.iter().enumerate() {
            let tool = Self::from_value(v, i)?;
            if tools.iter().any(|t| t.name == tool.name) {
                return Err(BadRequest::new(format!(
                    "tools[{i}].name {:?} is offered twice",
                    tool.name
                )));
            }
            tools.push(tool);
        }
        Ok(tools)
    }
}

/// `^[a-zA-Z0-9_-]{1,64}$`: a function name every chat-completions API takes.
fn is_function_name(name: &str) -> bool {
    (1..=MAX_CLIENT_TOOL_NAME_LEN).contains(&name.len())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_tool_keeps_its_schema_and_gets_an_empty_one_when_it_has_none() {
        let t = ClientTool::from_value(
            &json!({"name": "confirm_order", "description": "Ask the user", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}, "metadata": {"x": 1}}),
            0,
        )
        .unwrap();
        assert_eq!(t.name, "confirm_order");
        assert_eq!(t.parameters["properties"]["id"]["type"], "string");
        let bare = ClientTool::from_value(&json!({"name": "ping"}), 0).unwrap();
        assert_eq!(bare.description, "");
        assert_eq!(bare.parameters["type"], "object");
    }

    #[test]
    fn names_sizes_and_counts_are_bounded() {
        for (tool, named) in [
            (json!({"name": ""}), "tools[0].name"),
            (json!({"name": "has space"}), "tools[0].name"),
            (json!({"name": "x".repeat(65)}), "tools[0].name"),
            (
                json!({"name": "ok", "description": 5}),
                "tools[0].description",
            ),
            (
                json!({"name": "ok", "description": "d".repeat(MAX_CLIENT_TOOL_DESCRIPTION_BYTES + 1)}),
                "tools[0].description",
            ),
            (
                json!({"name": "ok", "parameters": []}),
                "tools[0].parameters",
            ),
            (
                json!({"name": "ok", "parameters": {"description": "p".repeat(MAX_CLIENT_TOOL_PARAMETERS_BYTES)}}),
                "tools[0].parameters",
            ),
        ] {
            let e = ClientTool::list_from(std::slice::from_ref(&tool)).unwrap_err();
            assert!(e.message().contains(named), "{tool}: {e}");
        }
        assert!(ClientTool::from_value(&json!({"name": "x".repeat(64)}), 0).is_ok());
        let twice = [json!({"name": "a"}), json!({"name": "a"})];
        assert!(
            ClientTool::list_from(&twice)
                .unwrap_err()
                .message()
                .contains("twice")
        );
        let many = vec![json!({"name": "a"}); MAX_CLIENT_TOOLS + 1];
        assert!(ClientTool::list_from(&many).is_err());
    }
}
