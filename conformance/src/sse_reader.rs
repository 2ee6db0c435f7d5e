//! Console's minimal SSE reader, sans I/O: feed it the bytes as they arrive,
//! it hands back complete lines.
//!
//! Only `data:` lines carry frames, one JSON object per line. `event:`,
//! `id:`, `retry:` (and any other field) are ignored. A line starting with
//! `:` is a comment, used as the keep-alive heartbeat. A blank line separates
//! frames and carries nothing. Lines end with `\n`, `\r\n` or `\r`.

/// One complete line of the stream, as Console's reader sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SseLine {
    /// A `data:` line: the bytes after `data:` (one optional leading space
    /// removed). Expected to hold one JSON object.
    Data(Vec<u8>),
    /// A `:` comment line (heartbeat); the text after the colon.
    Comment(String),
    /// A field Console ignores (`event:`, `id:`, `retry:` or unknown).
    Ignored(String),
    /// An empty line: the separator between frames.
    Blank,
}

/// A line grew past the per-frame limit before it ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("a line exceeded {limit} bytes")]
pub struct LineTooLong {
    /// The limit that was exceeded.
    pub limit: usize,
}

/// Incremental line splitter and classifier.
#[derive(Debug)]
pub struct SseReader {
    partial: Vec<u8>,
    max_line: usize,
    /// The previous chunk ended with `\r`: a `\n` starting the next chunk
    /// belongs to the same line terminator.
    after_cr: bool,
}

impl SseReader {
    /// A reader that refuses lines longer than `max_line` bytes.
    pub fn new(max_line: usize) -> Self {
        SseReader {
            partial: Vec::new(),
            max_line,
            after_cr: false,
        }
    }

    /// Feeds the next chunk; returns every line it completed, in order.
    pub fn feed(&mut self, chunk: &[u8]) -> Result<Vec<SseLine>, LineTooLong> {
        let mut lines = Vec::new();
        for &byte in chunk {
            if self.after_cr {
                self.after_cr = false;
                if byte == b'\n' {
                    continue;
                }
            }
            match byte {
                b'\n' => lines.push(self.take_line()),
                b'\r' => {
                    lines.push(self.take_line());
                    self.after_cr = true;
                }
                _ => {
                    if self.partial.len() >= self.max_line {
                        return Err(LineTooLong {
                            limit: self.max_line,
                        });
                    }
                    self.partial.push(byte);
                }
            }
        }
        Ok(lines)
    }

    /// Bytes of an unterminated last line still buffered (Console drops
    /// them when the stream ends).
    pub fn pending(&self) -> usize {
        self.partial.len()
    }

    fn take_line(&mut self) -> SseLine {
        let line = std::mem::take(&mut self.partial);
        classify(line)
    }
}

fn classify(line: Vec<u8>) -> SseLine {
    if line.is_empty() {
        return SseLine::Blank;
    }
    if line[0] == b':' {
        return SseLine::Comment(String::from_utf8_lossy(&line[1..]).into_owned());
    }
    let (name, value) = match line.iter().position(|&b| b == b':') {
        Some(i) => (&line[..i], &line[i + 1..]),
        None => (&line[..], &[][..]),
    };
    if name == b"data" {
        let value = value.strip_prefix(b" ").unwrap_or(value);
        SseLine::Data(value.to_vec())
    } else {
        SseLine::Ignored(String::from_utf8_lossy(&line).into_owned())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(input: &[u8]) -> Vec<SseLine> {
        SseReader::new(1024).feed(input).unwrap()
    }

    #[test]
    fn data_lines_comments_and_ignored_fields() {
        let lines = all(b"event: x\nid: 7\nretry: 10\n: ping\ndata: {\"a\":1}\n\ndata:{}\n");
        assert_eq!(
            lines,
            vec![
                SseLine::Ignored("event: x".into()),
                SseLine::Ignored("id: 7".into()),
                SseLine::Ignored("retry: 10".into()),
                SseLine::Comment(" ping".into()),
                SseLine::Data(b"{\"a\":1}".to_vec()),
                SseLine::Blank,
                SseLine::Data(b"{}".to_vec()),
            ]
        );
    }

    #[test]
    fn split_across_chunks_and_crlf() {
        let mut r = SseReader::new(1024);
        assert!(r.feed(b"data: {\"x\"").unwrap().is_empty());
        assert_eq!(r.pending(), 10);
        let lines = r.feed(b":2}\r").unwrap();
        assert_eq!(lines, vec![SseLine::Data(b"{\"x\":2}".to_vec())]);
        // The \n completing the \r\n must not produce a blank line.
        assert_eq!(r.feed(b"\n\r\n").unwrap(), vec![SseLine::Blank]);
    }

    #[test]
    fn line_limit() {
        let mut r = SseReader::new(4);
        assert_eq!(r.feed(b"data\n").unwrap().len(), 1);
        assert_eq!(r.feed(b"data:x"), Err(LineTooLong { limit: 4 }));
    }
}
