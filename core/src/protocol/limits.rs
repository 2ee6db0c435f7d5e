//! Console's per-turn limits.

/// Limits the frame writer keeps every stream under. Defaults are the contract's.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// Largest single SSE event, `data: ` prefix and blank line included (256 KiB).
    pub max_frame_bytes: usize,
    /// Largest whole stream, comments included (8 MiB).
    pub max_stream_bytes: usize,
    /// Most `data:` frames in one turn (20,000).
    pub max_frames: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self {
            max_frame_bytes: 256 * 1024,
            max_stream_bytes: 8 * 1024 * 1024,
            max_frames: 20_000,
        }
    }
}
