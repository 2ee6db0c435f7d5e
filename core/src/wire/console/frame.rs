//! One SSE frame encoded straight into an output buffer: `data: ` and the frame's compact
//! JSON on one line (`type` first, then `event_id`, then the fields in order), then a blank
//! line. The same bytes serde_json would write for the equivalent object, with no
//! `serde_json::Value` built for the frame and nothing allocated beyond `out`'s growth.

use serde_json::Value;

use crate::wire::json_text::{push_serialized, push_str_literal};

/// A frame field's value.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Field<'a> {
    /// A string.
    Str(&'a str),
    /// A string known to need no JSON escaping (see `EscapedPieces::last_was_plain`).
    Plain(&'a str),
    /// Any JSON value (the agent's content, patches, interrupts).
    Json(&'a Value),
    /// JSON text written as it is (a constant such as `{"type":"success"}`).
    Raw(&'static str),
    /// `{"artifacts": [...]}`, without copying the list into a value.
    Artifacts(&'a [Value]),
}

/// Appends the frame `ty` with `event_id` `{prefix}.{seq}` (none when `escaped_prefix` is
/// `None`: AG-UI 1.0 has no such field) and `fields` to `out`. `escaped_prefix` is the prefix
/// already JSON-escaped; `ty` and the keys are runway's own names, which need no escaping.
pub(crate) fn encode(
    out: &mut String,
    escaped_prefix: Option<&str>,
    seq: u64,
    ty: &str,
    fields: &[(&str, Field<'_>)],
) {
    debug_assert!(plain(ty) && fields.iter().all(|(k, _)| plain(k)));
    out.push_str("data: {\"type\":\"");
    out.push_str(ty);
    out.push('"');
    if let Some(prefix) = escaped_prefix {
        out.push_str(",\"event_id\":\"");
        out.push_str(prefix);
        out.push('.');
        push_decimal(out, seq);
        out.push('"');
    }
    for (key, value) in fields {
        out.push_str(",\"");
        out.push_str(key);
        out.push_str("\":");
        match value {
            Field::Str(s) => push_str_literal(out, s),
            Field::Plain(s) => {
                out.push('"');
                out.push_str(s);
                out.push('"');
            }
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

/// Needs no JSON escaping.
fn plain(s: &str) -> bool {
    s.bytes().all(|b| b >= 0x20 && b != b'"' && b != b'\\')
}

/// `n` in decimal, without the formatting machinery.
fn push_decimal(out: &mut String, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    for d in &digits[i..] {
        out.push(char::from(*d));
    }
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
        let mut prefix = String::new();
        crate::wire::json_text::push_escaped(&mut prefix, "run\"1.ab");
        encode(
            &mut out,
            Some(&prefix),
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

    #[test]
    fn decimals() {
        for n in [0, 7, 10, 99, 12_345, u64::MAX] {
            let mut out = String::new();
            push_decimal(&mut out, n);
            assert_eq!(out, n.to_string());
        }
    }
}
