//! Spotting the final frame in a chunk of the SSE body.

/// True if `chunk` carries a final frame (`RUN_FINISHED` or `RUN_ERROR`). The core's frame
/// writer puts `type` first in every frame and JSON-escapes every quote inside strings, so the
/// pattern cannot appear inside a text delta.
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
}
