//! What ends a streamed turn, per protocol: spotting the final frame in a chunk, and the
//! frame a panic ends a live stream with.

use runway_core::TurnErrorCode;
use runway_core::lowkey::{error_event, has_terminal_event};

/// What a panicked turn tells the user.
pub const PANIC_MESSAGE: &str = "Sorry, something went wrong while answering. Please try again.";

/// The protocol of a streamed body, told by its `Content-Type`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamKind {
    /// Console's SSE stream (`text/event-stream`).
    ConsoleSse,
    /// Lowkey's NDJSON stream (`application/x-ndjson`).
    LowkeyNdjson,
}

impl StreamKind {
    /// The kind of a body with this `Content-Type`.
    pub fn of(content_type: &str) -> Self {
        if content_type.starts_with("application/x-ndjson") {
            Self::LowkeyNdjson
        } else {
            Self::ConsoleSse
        }
    }

    /// True if `chunk` carries the stream's final frame (nothing may follow it).
    pub fn is_final(self, chunk: &[u8]) -> bool {
        match self {
            Self::ConsoleSse => has_final_frame(chunk),
            Self::LowkeyNdjson => has_terminal_event(chunk),
        }
    }

    /// The bytes that end a live stream of this kind when the isolate panics.
    pub fn panic_chunk(self) -> String {
        match self {
            Self::ConsoleSse => runway_core::sse::data_frame(&serde_json::json!({
                "type": "RUN_ERROR",
                "message": PANIC_MESSAGE,
                "code": TurnErrorCode::AgentPanic.as_str(),
            })),
            Self::LowkeyNdjson => error_event(PANIC_MESSAGE),
        }
    }
}

/// True if `chunk` carries a Console final frame (`RUN_FINISHED` or `RUN_ERROR`). The core's
/// frame writer puts `type` first in every frame and JSON-escapes every quote inside strings,
/// so the pattern cannot appear inside a text delta.
pub fn has_final_frame(chunk: &[u8]) -> bool {
    const PATTERNS: [&[u8]; 2] = [
        b"data: {\"type\":\"RUN_FINISHED\"",
        b"data: {\"type\":\"RUN_ERROR\"",
    ];
    PATTERNS
        .iter()
        .any(|p| chunk.windows(p.len()).any(|w| w == *p))
}

#[cfg(test)]
mod tests {
    use super::*;
    use runway_core::protocol::Limits;
    use runway_core::{Ending, FrameWriter};

    #[test]
    fn finds_the_final_frame_and_nothing_else() {
        let mut w = FrameWriter::new("r1", Limits::default());
        w.start();
        w.text("data: {\"type\":\"RUN_ERROR\" is only text here");
        let body = w.take_output();
        assert!(!has_final_frame(body.as_bytes()));
        w.finish(Ending::Success);
        let _ = w.take_output();
        let fin = w.take_final().unwrap();
        assert!(has_final_frame(fin.as_bytes()));
        assert!(!has_final_frame(b": keep-alive\n\n"));
    }

    #[test]
    fn panic_chunks_are_final_frames_of_their_protocol() {
        for (ct, kind) in [
            ("text/event-stream", StreamKind::ConsoleSse),
            ("application/x-ndjson", StreamKind::LowkeyNdjson),
        ] {
            assert_eq!(StreamKind::of(ct), kind);
            let chunk = kind.panic_chunk();
            assert!(kind.is_final(chunk.as_bytes()), "{chunk}");
        }
        let sse = StreamKind::ConsoleSse.panic_chunk();
        let v: serde_json::Value =
            serde_json::from_str(sse.trim().strip_prefix("data: ").unwrap()).unwrap();
        assert_eq!(v["type"], "RUN_ERROR");
        assert_eq!(v["code"], "AGENT_PANIC");
        assert!(!v["message"].as_str().unwrap().contains("panic"));
        let line: serde_json::Value =
            serde_json::from_str(StreamKind::LowkeyNdjson.panic_chunk().trim()).unwrap();
        assert_eq!(line["type"], "error");
    }
}
