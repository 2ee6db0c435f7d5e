//! What kind of JSON value a request held where another was expected, as a refusal names it
//! ("`runId` must be a string, got a number").

use serde_json::Value;

/// "a string", "an array"…: the kind of `v`, for an error message.
pub(crate) fn json_kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}
