//! JSON text written straight into an output buffer: the writers of both protocols encode
//! their frames with these instead of building a `serde_json::Value` per frame.
//!
//! The escaping is serde_json's, byte for byte (`"`, `\`, and control characters; short forms
//! for `\b \f \n \r \t`; nothing else), so frames read the same as before and a value written
//! through [`push_serialized`] and a string written through [`push_str_literal`] agree.

use serde::Serialize;

/// Bytes that JSON-escaping `c` inside a string produces (serde_json's escaping rules).
pub(crate) fn escaped_len(c: char) -> usize {
    match c {
        '"' | '\\' | '\n' | '\r' | '\t' | '\u{8}' | '\u{c}' => 2,
        c if (c as u32) < 0x20 => 6,
        c => c.len_utf8(),
    }
}

fn needs_escape(b: u8) -> bool {
    b < 0x20 || b == b'"' || b == b'\\'
}

/// Appends `s` as a JSON string literal, quotes included.
pub(crate) fn push_str_literal(out: &mut String, s: &str) {
    out.push('"');
    push_escaped(out, s);
    out.push('"');
}

/// Appends `s` JSON-escaped, without quotes.
pub(crate) fn push_escaped(out: &mut String, s: &str) {
    let bytes = s.as_bytes();
    let mut start = 0;
    let mut i = 0;
    while i < bytes.len() {
        // Skip 8 bytes at a time while none of them needs escaping.
        i += clean_prefix(&bytes[i..], false);
        let Some(&b) = bytes.get(i) else { break };
        if !needs_escape(b) {
            i += 1;
            continue;
        }
        // Every byte that needs escaping is ASCII, so `start..i` ends on a char boundary.
        out.push_str(&s[start..i]);
        match b {
            b'"' => out.push_str("\\\""),
            b'\\' => out.push_str("\\\\"),
            b'\n' => out.push_str("\\n"),
            b'\r' => out.push_str("\\r"),
            b'\t' => out.push_str("\\t"),
            0x08 => out.push_str("\\b"),
            0x0c => out.push_str("\\f"),
            b => {
                out.push_str("\\u00");
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
        i += 1;
        start = i;
    }
    out.push_str(&s[start..]);
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// How many leading bytes of `bytes` need no escaping, counted in whole 8-byte words (a word
/// with a byte that does, or with a non-ASCII byte when `ascii_only`, stops the count; the
/// caller looks at it byte by byte). SWAR: eight bytes per step, no `unsafe`.
fn clean_prefix(bytes: &[u8], ascii_only: bool) -> usize {
    const ONES: u64 = 0x0101_0101_0101_0101;
    const HIGH: u64 = 0x8080_8080_8080_8080;
    let has_zero = |v: u64| v.wrapping_sub(ONES) & !v & HIGH;
    let mut n = 0;
    for word in bytes.chunks_exact(8) {
        let mut w = [0u8; 8];
        w.copy_from_slice(word);
        let x = u64::from_le_bytes(w);
        // Bytes below 0x20 (may also flag some bytes at or above 0x80: they fall back).
        let control = x.wrapping_sub(ONES * 0x20) & !x & HIGH;
        let quote = has_zero(x ^ (ONES * u64::from(b'"')));
        let backslash = has_zero(x ^ (ONES * u64::from(b'\\')));
        let high = if ascii_only { x & HIGH } else { 0 };
        if control | quote | backslash | high != 0 {
            break;
        }
        n += 8;
    }
    n
}

/// Appends `value` as compact JSON (serde_json's output), without an intermediate string.
pub(crate) fn push_serialized<T: Serialize + ?Sized>(out: &mut String, value: &T) {
    let mark = out.len();
    if serde_json::to_writer(StringSink(out), value).is_err() {
        // Only a `Serialize` impl that fails (never a `Value`) gets here: leave `null`.
        out.truncate(mark);
        out.push_str("null");
    }
}

/// `io::Write` into a `String`. serde_json writes whole UTF-8 sequences per call (string
/// fragments end before ASCII escapes; numbers and punctuation are ASCII).
struct StringSink<'a>(&'a mut String);

impl std::io::Write for StringSink<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let s = std::str::from_utf8(buf)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, e))?;
        self.0.push_str(s);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// Pieces of `s` whose JSON-escaped length is at most `budget` bytes (at least 6), on
/// character boundaries, lazily: no allocation.
pub(crate) fn escaped_pieces(s: &str, budget: usize) -> EscapedPieces<'_> {
    EscapedPieces {
        rest: s,
        budget: budget.max(6),
        last_plain: false,
    }
}

/// See [`escaped_pieces`].
#[derive(Debug, Clone)]
pub(crate) struct EscapedPieces<'a> {
    rest: &'a str,
    budget: usize,
    last_plain: bool,
}

impl EscapedPieces<'_> {
    /// The piece last returned needs no escaping (it can be copied into JSON as it is).
    pub(crate) fn last_was_plain(&self) -> bool {
        self.last_plain
    }
}

impl<'a> Iterator for EscapedPieces<'a> {
    type Item = &'a str;

    fn next(&mut self) -> Option<&'a str> {
        if self.rest.is_empty() {
            return None;
        }
        let bytes = self.rest.as_bytes();
        // Fast path: plain ASCII needs no escaping, one byte each.
        let limit = bytes.len().min(self.budget);
        let mut end = clean_prefix(&bytes[..limit], true);
        while end < limit && bytes[end] < 0x80 && !needs_escape(bytes[end]) {
            end += 1;
        }
        if end == self.budget && end < bytes.len() {
            let (piece, rest) = self.rest.split_at(end);
            self.rest = rest;
            self.last_plain = true;
            return Some(piece);
        }
        let mut used = end;
        for (i, c) in self.rest[end..].char_indices() {
            let n = escaped_len(c);
            if used + n > self.budget {
                let (piece, rest) = self.rest.split_at(end + i);
                self.rest = rest;
                // Escaping changed nothing if it lengthened nothing.
                self.last_plain = used == piece.len();
                return Some(piece);
            }
            used += n;
        }
        let piece = self.rest;
        self.rest = "";
        self.last_plain = used == piece.len();
        Some(piece)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_len_matches_serde_json() {
        let sample = "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é✓😀/<\u{7f}";
        let predicted: usize = sample.chars().map(escaped_len).sum();
        let actual = serde_json::to_string(sample).unwrap().len() - 2;
        assert_eq!(predicted, actual);
    }

    #[test]
    fn literals_are_serde_jsons() {
        for s in [
            "",
            "plain",
            "a\"\\\n\r\t\u{8}\u{c}\u{1}\u{1f}é✓😀/<\u{7f}",
            "\u{0}x",
        ] {
            let mut out = String::new();
            push_str_literal(&mut out, s);
            assert_eq!(out, serde_json::to_string(s).unwrap());
        }
        let v = serde_json::json!({"b": [1, "x\"y", null], "a": {"é": 2.5}});
        let mut out = String::from("prefix:");
        push_serialized(&mut out, &v);
        assert_eq!(out, format!("prefix:{v}"));
    }

    #[test]
    fn every_special_byte_at_every_offset_is_escaped_like_serde_json() {
        for special in [
            "\"", "\\", "\n", "\u{1}", "\u{1f}", "é", "😀", " ", "~", "\u{7f}",
        ] {
            for at in 0..20 {
                let s = format!("{}{special}{}", "a".repeat(at), "b".repeat(19 - at));
                let mut out = String::new();
                push_str_literal(&mut out, &s);
                assert_eq!(out, serde_json::to_string(&s).unwrap(), "{s:?}");
                for budget in [6, 7, 8, 9, 16, 17] {
                    let pieces: Vec<&str> = escaped_pieces(&s, budget).collect();
                    assert_eq!(pieces.concat(), s);
                    for p in &pieces {
                        assert!(serde_json::to_string(p).unwrap().len() - 2 <= budget);
                        assert!(!p.is_empty());
                    }
                    let mut it = escaped_pieces(&s, budget);
                    while let Some(p) = it.next() {
                        let plain = serde_json::to_string(p).unwrap() == format!("\"{p}\"");
                        assert_eq!(it.last_was_plain(), plain, "{p:?}");
                    }
                }
            }
        }
    }

    #[test]
    fn pieces_respect_the_budget_and_boundaries() {
        let s = "😀".repeat(10) + &"\"".repeat(7) + "plain ascii text";
        for budget in [6, 9, 10, 64] {
            let pieces: Vec<&str> = escaped_pieces(&s, budget).collect();
            assert_eq!(pieces.concat(), s);
            for p in &pieces {
                assert!(!p.is_empty());
                assert!(serde_json::to_string(p).unwrap().len() - 2 <= budget);
            }
        }
        assert_eq!(escaped_pieces("", 10).count(), 0);
    }
}
