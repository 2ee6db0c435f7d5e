//! Whether the path between the agent and Console holds the first frame back, judged from when
//! each chunk arrives (sans I/O: the caller stamps every chunk with its arrival time).
//!
//! An agent that writes its first frame at once can still miss the first-frame deadline: a
//! proxy or a function URL that holds small chunks until a size threshold or the agent's next
//! write delivers that first frame only with the next write, which for a busy agent is its
//! first heartbeat. From the client's side such a path shows in two ways, and either one is
//! `FIRST_FRAME_HELD`:
//!
//! - **late**: the first frame (or comment) arrives more than
//!   [`Deadlines::first_flush`](crate::Deadlines::first_flush) (2 s) after the request, or
//! - **released by a later write**: the delivery that brings the first data frame (the chunks
//!   arriving within [`DELIVERY_WINDOW`] of it, as a TCP-level hold releases them together)
//!   arrives after half that threshold and also brings a heartbeat, which the agent wrote only
//!   after a silence: a second comment after the frame (the first one may be padding the agent
//!   wrote with the frame), or a comment whose text comes again later in the stream.
//!
//! A quick answer releases a held first frame at once (its text is the next write), so a path
//! that holds is proven only on a turn that keeps the agent busy: `runway check --slow-prompt`.

use std::collections::BTreeSet;
use std::time::Duration;

use serde::Serialize;

use crate::findings::{Code, Finding};
use crate::sse_reader::{SseLine, SseReader};

/// Chunks arriving this close after the one carrying the first data frame are the same
/// delivery: what a path released together.
pub const DELIVERY_WINDOW: Duration = Duration::from_millis(10);

/// Arrivals kept per turn for the report (the first ones: what the judgment is about).
pub const KEPT_ARRIVALS: usize = 16;

/// After the first delivery, how many more chunks are read for heartbeat texts.
const LATER_CHUNKS_READ: usize = 32;

/// Distinct comment texts remembered (each cut to [`COMMENT_TEXT_KEPT`] bytes).
const COMMENTS_KEPT: usize = 8;
const COMMENT_TEXT_KEPT: usize = 64;

/// One chunk of the response body, when it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ChunkArrival {
    /// Milliseconds from the request to this chunk.
    pub at_ms: u64,
    /// Its size in bytes.
    pub bytes: usize,
}

/// A line of the first delivery, after the first data frame.
#[derive(Debug, Clone, PartialEq, Eq)]
enum After {
    Frame,
    Comment { text: String, bytes: usize },
}

/// Watches one stream's first chunks (see the module docs).
#[derive(Debug)]
pub struct HoldWatch {
    reader: SseReader,
    arrivals: Vec<ChunkArrival>,
    first_at: Option<Duration>,
    first_data: Option<FirstData>,
    later_chunks: usize,
    later_comments: BTreeSet<String>,
    done: bool,
}

#[derive(Debug)]
struct FirstData {
    at: Duration,
    /// The first data line's size, separator included.
    bytes: usize,
    /// What followed it in the same delivery.
    after: Vec<After>,
    /// The delivery is over: later lines are not part of it.
    closed: bool,
}

/// The judgment over one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HoldVerdict {
    /// The first chunks' arrivals (at most [`KEPT_ARRIVALS`]).
    pub arrivals: Vec<ChunkArrival>,
    /// `FIRST_FRAME_HELD`, when the path held the first frame.
    pub finding: Option<Finding>,
}

impl HoldWatch {
    /// A watch reading lines of at most `max_line` bytes (longer ones end the watch: the
    /// stream judge reports them).
    pub fn new(max_line: usize) -> Self {
        HoldWatch {
            reader: SseReader::new(max_line),
            arrivals: Vec::new(),
            first_at: None,
            first_data: None,
            later_chunks: 0,
            later_comments: BTreeSet::new(),
            done: false,
        }
    }

    /// Feeds a chunk that arrived `at` after the request.
    pub fn on_chunk(&mut self, at: Duration, chunk: &[u8]) {
        if self.arrivals.len() < KEPT_ARRIVALS {
            self.arrivals.push(ChunkArrival {
                at_ms: at.as_millis() as u64,
                bytes: chunk.len(),
            });
        }
        if self.done {
            return;
        }
        if let Some(first) = &mut self.first_data
            && !first.closed
            && at.saturating_sub(first.at) > DELIVERY_WINDOW
        {
            first.closed = true;
        }
        if self.first_data.as_ref().is_some_and(|f| f.closed) {
            self.later_chunks += 1;
            if self.later_chunks > LATER_CHUNKS_READ || self.later_comments.len() >= COMMENTS_KEPT {
                self.done = true;
                return;
            }
        }
        let Ok(lines) = self.reader.feed(chunk) else {
            self.done = true;
            return;
        };
        for line in lines {
            match line {
                SseLine::Data(data) => {
                    self.first_at.get_or_insert(at);
                    match &mut self.first_data {
                        None => {
                            self.first_data = Some(FirstData {
                                at,
                                bytes: "data: \n\n".len() + data.len(),
                                after: Vec::new(),
                                closed: false,
                            });
                        }
                        Some(first) if !first.closed => first.after.push(After::Frame),
                        Some(_) => {}
                    }
                }
                SseLine::Comment(text) => {
                    self.first_at.get_or_insert(at);
                    let bytes = ":\n\n".len() + text.len();
                    let text = cut(&text);
                    match &mut self.first_data {
                        Some(first) if !first.closed => {
                            first.after.push(After::Comment { text, bytes });
                        }
                        Some(_) if self.later_comments.len() < COMMENTS_KEPT => {
                            self.later_comments.insert(text);
                        }
                        Some(_) | None => {}
                    }
                }
                SseLine::Blank | SseLine::Ignored(_) => {}
            }
        }
    }

    /// The judgment: `threshold` is how late a first frame may arrive (2 s by default).
    pub fn finish(self, threshold: Duration) -> HoldVerdict {
        let finding = self.held(threshold);
        HoldVerdict {
            arrivals: self.arrivals,
            finding,
        }
    }

    fn held(&self, threshold: Duration) -> Option<Finding> {
        let first_at = self.first_at?;
        let ms = |d: Duration| d.as_millis();
        let comments: Vec<(&str, usize)> = self
            .first_data
            .iter()
            .flat_map(|f| &f.after)
            .filter_map(|a| match a {
                After::Comment { text, bytes } => Some((text.as_str(), *bytes)),
                After::Frame => None,
            })
            .collect();
        // A heartbeat comes after a silence: a delivery within half the threshold of the
        // request is the agent's first write (whatever comments it padded it with).
        let heartbeat = self
            .first_data
            .as_ref()
            .is_some_and(|f| f.at >= threshold / 2)
            && (comments.len() >= 2
                || comments
                    .iter()
                    .any(|(text, _)| self.later_comments.contains(*text)));
        let late = first_at > threshold;
        if !late && !heartbeat {
            return None;
        }
        // The first write as the agent made it: the frame and, unless it was the heartbeat,
        // the comment right after it (runway's padding).
        let first_write = self.first_data.as_ref().map(|f| {
            let padding = comments
                .first()
                .filter(|(text, _)| comments.len() >= 2 || !self.later_comments.contains(*text))
                .map_or(0, |(_, bytes)| *bytes);
            f.bytes + padding
        });
        let how = match (heartbeat, self.first_data.as_ref()) {
            (true, Some(f)) => format!(
                "the first frame arrived {} ms after the request, in one delivery with a \
                 heartbeat the agent wrote only later: the path held it until the next write",
                ms(f.at)
            ),
            _ => format!(
                "the first frame arrived {} ms after the request (more than {} ms): a path \
                 that holds small chunks until the next write, a slow cold start, or an agent \
                 that writes nothing before its work",
                ms(first_at),
                ms(threshold)
            ),
        };
        let size = first_write
            .map(|b| format!(" (its first write was about {b} bytes)"))
            .unwrap_or_default();
        Some(Finding::new(
            Code::FirstFrameHeld,
            format!(
                "{how}. If the agent is runway: raise RUNWAY_FIRST_FLUSH_BYTES{size}, the \
                 padding written right after STEP_STARTED, until the first frame arrives on its \
                 own, or lower RUNWAY_HEARTBEAT_SECS; any other agent: write a comment of a few \
                 KiB right after the first frame"
            ),
        ))
    }
}

fn cut(text: &str) -> String {
    let mut end = text.len().min(COMMENT_TEXT_KEPT);
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text[..end].to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    const STEP: &str = "data: {\"type\":\"STEP_STARTED\",\"stepName\":\"turn\"}\n\n";
    const BEAT: &str = ": keep-alive\n\n";

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    fn judge(chunks: &[(u64, String)]) -> HoldVerdict {
        let mut w = HoldWatch::new(256 * 1024);
        for (at, bytes) in chunks {
            w.on_chunk(ms(*at), bytes.as_bytes());
        }
        w.finish(Duration::from_secs(2))
    }

    fn padding(n: usize) -> String {
        format!(":{}\n\n", " ".repeat(n))
    }

    #[test]
    fn a_first_frame_that_leaves_at_once_is_not_held() {
        let text = "data: {\"type\":\"TEXT_MESSAGE_START\"}\n\n".to_owned();
        for first in [STEP.to_owned(), format!("{STEP}{}", padding(2048))] {
            let v = judge(&[
                (40, first),
                (2040, BEAT.into()),
                (12040, BEAT.into()),
                (13000, text.clone()),
            ]);
            assert_eq!(v.finding, None);
            assert_eq!(v.arrivals.len(), 4);
            assert_eq!(v.arrivals[1].at_ms, 2040);
        }
    }

    #[test]
    fn a_first_frame_released_by_the_heartbeat_is_held_even_before_two_seconds() {
        // Padding too small for the path: frame, padding and the heartbeat in one delivery.
        let v = judge(&[
            (1500, format!("{STEP}{}{BEAT}", padding(100))),
            (2600, BEAT.into()),
        ]);
        let f = v.finding.expect("held");
        assert_eq!(f.code, Code::FirstFrameHeld);
        assert!(f.message.contains("RUNWAY_FIRST_FLUSH_BYTES"), "{f}");
        assert!(f.message.contains("one delivery with a heartbeat"), "{f}");
        // No padding: the comment is recognised as the heartbeat by its recurring text,
        // even when a TCP-level hold hands the two writes over as two chunks.
        let v = judge(&[
            (1500, STEP.into()),
            (1501, BEAT.into()),
            (2600, BEAT.into()),
        ]);
        assert!(v.finding.is_some());
    }

    #[test]
    fn late_is_held_and_padding_alone_is_not_a_heartbeat() {
        let v = judge(&[(2500, format!("{STEP}{}", padding(64)))]);
        let f = v.finding.expect("late");
        assert!(f.message.contains("2500 ms"), "{f}");
        // A cold start under 2 s with its padding: fine.
        let v = judge(&[
            (1900, format!("{STEP}{}", padding(64))),
            (3900, BEAT.into()),
        ]);
        assert_eq!(v.finding, None);
        // Padding written as repeated heartbeat-like comments, delivered at once: fine.
        let v = judge(&[
            (30, format!("{STEP}{BEAT}{BEAT}{BEAT}")),
            (2030, BEAT.into()),
        ]);
        assert_eq!(v.finding, None);
        // The agent's quick answer in the same delivery is no evidence of a hold.
        let v = judge(&[(
            30,
            format!("{STEP}data: {{\"type\":\"TEXT_MESSAGE_START\"}}\n\n"),
        )]);
        assert_eq!(v.finding, None);
    }

    #[test]
    fn only_the_first_arrivals_are_kept() {
        let chunks: Vec<(u64, String)> = (0..100).map(|i| (i * 100, BEAT.to_owned())).collect();
        assert_eq!(judge(&chunks).arrivals.len(), KEPT_ARRIVALS);
    }
}
