//! Server-Sent Events encoding as Console's minimal reader expects it: one `data:` line of
//! compact JSON per frame, a blank line after it, and `:` comment lines as heartbeats.

use serde_json::Value;

/// Encodes one frame. Compact JSON never contains a raw newline, so one line always suffices.
pub fn data_frame(frame: &Value) -> String {
    let mut s = String::with_capacity(128);
    s.push_str("data: ");
    s.push_str(&frame.to_string());
    s.push_str("\n\n");
    s
}

/// The heartbeat comment line. Console's idle clock resets on it; its reader ignores it.
pub const HEARTBEAT: &str = ": keep-alive\n\n";

/// Bytes that JSON-escaping `c` inside a string produces (serde_json's escaping rules).
pub(crate) fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

/// Splits `s` into pieces whose JSON-escaped length is at most `budget` bytes, on character
/// boundaries.
pub(crate) fn split_escaped(s: &str, budget: usize) -> Vec<&str> {
    let budget = budget.max(6);
    let mut pieces = Vec::new();
    let mut start = 0;
    let mut used = 0;
    for (i, c) in s.char_indices() {
        let n = escaped_len(c);
        if used + n > budget {
            pieces.push(&s[start..i]);
            start = i;
            used = 0;
        }
        used += n;
    }
    if start < s.len() {
        pieces.push(&s[start..]);
    }
    pieces
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn escaped_len_matches_serde_json() {
        let sample = "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é✓😀/<";
        let predicted: usize = sample.chars().map(escaped_len).sum();
        let actual = serde_json::to_string(sample).unwrap().len() - 2;
        assert_eq!(predicted, actual);
    }

    #[test]
    fn split_respects_budget_and_boundaries() {
        let s = "😀".repeat(10) + &"\"".repeat(7);
        let pieces = split_escaped(&s, 9);
        assert_eq!(pieces.concat(), s);
        for p in &pieces {
            assert!(serde_json::to_string(p).unwrap().len() - 2 <= 9);
        }
    }

    #[test]
    fn frame_is_one_data_line() {
        let f = data_frame(&json!({"type": "X", "delta": "a\nb"}));
        assert_eq!(f, "data: {\"type\":\"X\",\"delta\":\"a\\nb\"}\n\n");
    }
}
