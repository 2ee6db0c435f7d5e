//! [`LogId`]: an id from a request (Console's `runId`, `threadId`, `agentId`, `workspaceId`;
//! Lowkey's `turnId`, session id, `pluginId`, `agentId`) as it may appear in a log line.
//!
//! A Lowkey id is any string: unescaped, a line feed in it forges a log line of the caller's
//! choosing, and a 60 KB id makes a 60 KB line. Every id that reaches a `tracing` field goes
//! through [`LogId`].

use std::fmt;

/// The most bytes of an id a log line shows (escapes included); the rest is replaced by a
/// marker saying how many bytes were left out.
pub const MAX_LOGGED_ID_BYTES: usize = 128;

/// An id rendered for a log line (`tracing::info!(runId = %LogId(&id), …)`): printed as is when
/// it is plain, with control characters (C0, DEL, C1), whitespace, invisible and
/// bidirectional formatting characters, `\` and `"` escaped as `\u{…}` (`\\`, `\"`), and cut
/// after [`MAX_LOGGED_ID_BYTES`] bytes with `…[+N bytes]`, N the bytes of the id not shown.
#[derive(Debug, Clone, Copy)]
pub struct LogId<'a>(pub &'a str);

/// Whether `c` could break a line, a field or a terminal, or hide what follows.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || c.is_whitespace()
        || matches!(c, '\\' | '"')
        // Zero-width and bidirectional formatting characters (Unicode category Cf) that make
        // a line read otherwise than it is.
        || matches!(c, '\u{200b}'..='\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2060}'..='\u{2069}' | '\u{feff}')
}

impl fmt::Display for LogId<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let id = self.0;
        // The usual id: short and printable ASCII, written in one piece.
        let plain = |b: u8| b.is_ascii_graphic() && b != b'\\' && b != b'"';
        if id.len() <= MAX_LOGGED_ID_BYTES && id.bytes().all(plain) {
            return f.write_str(id);
        }
        // Runs of plain characters are written whole; `written` counts the bytes shown.
        let (mut written, mut run_start) = (0, 0);
        for (at, c) in id.char_indices() {
            let escaped;
            let piece: Option<&str> = match c {
                '\\' => Some("\\\\"),
                '"' => Some("\\\""),
                c if needs_escape(c) => {
                    escaped = format!("\\u{{{:x}}}", c as u32);
                    Some(&escaped)
                }
                _ => None,
            };
            let len = piece.map_or(c.len_utf8(), str::len);
            if written + len > MAX_LOGGED_ID_BYTES {
                f.write_str(&id[run_start..at])?;
                return write!(f, "…[+{} bytes]", id.len() - at);
            }
            written += len;
            if let Some(piece) = piece {
                f.write_str(&id[run_start..at])?;
                f.write_str(piece)?;
                run_start = at + c.len_utf8();
            }
        }
        f.write_str(&id[run_start..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_plain_id_is_shown_as_is() {
        for id in [
            "run-1",
            "918273688800000300",
            "a.b:c_d-e~f@g+h=i",
            "ünïcode",
        ] {
            assert_eq!(LogId(id).to_string(), id);
        }
    }

    #[test]
    fn what_breaks_a_line_or_a_field_is_escaped() {
        assert_eq!(
            LogId("t1\nINFO forged line\r\x1b[2J\u{85}\u{202e} x\"\\").to_string(),
            "t1\\u{a}INFO\\u{20}forged\\u{20}line\\u{d}\\u{1b}[2J\\u{85}\\u{202e}\\u{20}x\\\"\\\\"
        );
    }

    #[test]
    fn a_long_id_is_cut_with_a_marker() {
        let id = "x".repeat(60_000);
        let shown = LogId(&id).to_string();
        assert_eq!(
            shown,
            format!("{}…[+{} bytes]", "x".repeat(128), 60_000 - 128)
        );
        // Escapes count toward the bound: a line of line feeds stays as short.
        let shown = LogId(&"\n".repeat(60_000)).to_string();
        assert!(shown.len() < MAX_LOGGED_ID_BYTES + 20, "{shown}");
        assert!(!shown.contains('\n'));
    }
}
