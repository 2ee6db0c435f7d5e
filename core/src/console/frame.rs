//! One SSE frame encoded straight into an output buffer: `data: ` and the frame's compact
//! JSON on one line (`type` first, then `event_id`, then the fields in order), then a blank
//! line. The same bytes serde_json would write for the equivalent object, with no
//! `serde_json::Value` built for the frame and nothing allocated beyond `out`'s growth.

use std::fmt::Write as _;

use serde_json::Value;

use crate::json_text::{push_escaped, push_serialized, push_str_literal};

/// A frame field's value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    /// A string.
    Str(&'a str),
    /// Any JSON value (the agent's content, patches, interrupts).
    Json(&'a Value),
    /// JSON text written as it is (a constant such as `{"type":"success"}`).
    Raw(&'static str),
    /// `{"artifacts": [...]}`, without copying the list into a value.
    Artifacts(&'a [Value]),
}

/// Appends the frame `ty` with `event_id` `{prefix}.{seq}` and `fields` to `out`.
pub(crate) fn encode(
    out: &mut String,
    prefix: &str,
    seq: u64,
    ty: &str,
    fields: &[(&str, Field<'_>)],
) {
    out.push_str("data: {\"type\":");
    push_str_literal(out, ty);
    out.push_str(",\"event_id\":\"");
    push_escaped(out, prefix);
    let _ = write!(out, ".{seq}\"");
    for (key, value) in fields {
        out.push(',');
        push_str_literal(out, key);
        out.push(':');
        match value {
            Field::Str(s) => push_str_literal(out, s),
            Field::Json(v) => push_serialized(out, *v),
            Field::Raw(json) => out.push_str(json),
            Field::Artifacts(items) => {
                out.push_str("{\"artifacts\":");
                push_serialized(out, items);
                out.push('}');
            }
        }
    }
    out.push_str("}\n\n");
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn frames_are_what_serde_json_writes_for_the_same_object() {
        let content = json!({"b": [1, "x"], "a": null});
        let artifacts = [json!({"name": "r.pdf", "url": "https://x/\"q\""})];
        let mut out = String::new();
        encode(
            &mut out,
            "run\"1.ab",
            7,
            "CUSTOM",
            &[
                ("name", Field::Str("a\nb")),
                ("value", Field::Json(&content)),
                ("outcome", Field::Raw("{\"type\":\"success\"}")),
                ("snapshot", Field::Artifacts(&artifacts)),
            ],
        );
        let expected = json!({"type": "CUSTOM", "event_id": "run\"1.ab.7", "name": "a\nb",
            "value": content, "outcome": {"type": "success"},
            "snapshot": {"artifacts": artifacts}});
        assert_eq!(out, format!("data: {expected}\n\n"));
    }
}
