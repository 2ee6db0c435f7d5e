//! What the client tells the agent about itself (AG-UI's `RunAgentInput.context`, CopilotKit's
//! readables): description/value pairs, bounded as a whole.

use serde_json::Value;

use super::json_kind::json_kind;
use crate::error::BadRequest;

/// Most bytes of all `context` entries of one run together (descriptions and values): they go
/// to the model with every call of the run, so more is refused (400) rather than cut
/// silently.
pub const MAX_CLIENT_CONTEXT_BYTES: usize = 64 * 1024;

/// One entry of the client's context: what it is and its value, both as the client sent them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContextEntry {
    /// What the value is ("The user's open order", say).
    pub description: String,
    /// The value, as text (often JSON).
    pub value: String,
}

impl ContextEntry {
    /// Validates a request's `context` list: each entry `{description, value}` with string
    /// fields, at most [`MAX_CLIENT_CONTEXT_BYTES`] in all.
    ///
    /// # Errors
    /// A [`BadRequest`] naming the entry and field that is not a string, or saying the whole
    /// is too large.
    pub fn list_from(items: &[Value]) -> Result<Vec<Self>, BadRequest> {
        let mut total = 0usize;
        let mut entries = Vec::with_capacity(items.len());
        for (i, item) in items.iter().enumerate() {
            let field = |f: &str| match item.get(f) {
                Some(Value::String(s)) => Ok(s.clone()),
                Some(other) => Err(BadRequest::new(format!(
                    "context[{i}].{f} must be a string, got {}",
                    json_kind(other)
                ))),
                None => Err(BadRequest::new(format!(
                    "context[{i}].{f} must be a string"
                ))),
            };
            let entry = Self {
                description: field("description")?,
                value: field("value")?,
            };
            total += entry.description.len() + entry.value.len();
            if total > MAX_CLIENT_CONTEXT_BYTES {
                return Err(BadRequest::new(format!(
                    "context is larger than {} KiB",
                    MAX_CLIENT_CONTEXT_BYTES / 1024
                )));
            }
            entries.push(entry);
        }
        Ok(entries)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn entries_are_strings_and_bounded_together() {
        let ok = ContextEntry::list_from(&[
            json!({"description": "Order", "value": "{\"id\":7}", "extra": 1}),
        ]);
        assert_eq!(
            ok.unwrap(),
            [ContextEntry {
                description: "Order".into(),
                value: "{\"id\":7}".into()
            }]
        );
        let e = ContextEntry::list_from(&[json!({"description": "d", "value": 3})]).unwrap_err();
        assert!(e.message().contains("context[0].value"), "{e}");
        let half = "x".repeat(MAX_CLIENT_CONTEXT_BYTES / 2);
        let entry = json!({"description": "", "value": half});
        assert!(ContextEntry::list_from(&[entry.clone(), entry.clone()]).is_ok());
        let e = ContextEntry::list_from(&[
            entry.clone(),
            entry.clone(),
            json!({"description": "d", "value": ""}),
        ])
        .unwrap_err();
        assert!(e.message().contains("context is larger than 64 KiB"), "{e}");
    }
}
