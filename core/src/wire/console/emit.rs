//! Frames kept within the limits: each frame is encoded into the output, then kept only if
//! it leaves the reserve for closing what is open ([`Writer::keep_frame`]); a delta too large
//! for one frame is split into several.

use super::frame::{Field, encode};
use super::writer::Console;
use crate::protocol::LogId;
use crate::wire::json_text::escaped_pieces;
use crate::wire::writer::Writer;

/// Slack for the growing `event_id` sequence number in split frames.
const SPLIT_SLACK: usize = 32;

impl Writer<Console> {
    /// Room for a field's content in a frame of this shape whose content is empty (written
    /// into the output, measured, taken back: nothing is allocated).
    pub(super) fn frame_budget(&mut self, ty: &str, empty: &[(&str, Field<'_>)]) -> usize {
        let mark = self.ledger.mark();
        encode(
            self.ledger.out(),
            self.enc.event_prefix(),
            self.enc.seq,
            ty,
            empty,
        );
        let len = self.ledger.len_since(mark);
        self.ledger.discard_since(mark);
        self.limits
            .max_frame_bytes
            .saturating_sub(len + SPLIT_SLACK)
    }

    /// Emits `delta` as one or more `ty` frames keyed by `key: id`, each within the frame
    /// limit. Returns false if the turn ended on a limit instead.
    pub(super) fn emit_split(&mut self, ty: &str, key: &str, id: &str, delta: &str) -> bool {
        // Escaping at most sextuples a byte: a delta that fits even so is one frame, and
        // needs no measuring (the common case: a model's deltas are a few bytes).
        let worst = 6 * (delta.len() + id.len()) + self.enc.event_prefix.0.len() + 256;
        if worst + SPLIT_SLACK <= self.limits.max_frame_bytes {
            return self.emit(ty, &[(key, Field::Str(id)), ("delta", Field::Str(delta))]);
        }
        let budget = self.frame_budget(ty, &[(key, Field::Str(id)), ("delta", Field::Str(""))]);
        // Room for the whole delta at once, not by repeated doubling.
        self.ledger.reserve(delta.len() + delta.len() / 4);
        let mut pieces = escaped_pieces(delta, budget);
        while let Some(piece) = pieces.next() {
            let piece = if pieces.last_was_plain() {
                Field::Plain(piece)
            } else {
                Field::Str(piece)
            };
            if !self.emit(ty, &[(key, Field::Str(id)), ("delta", piece)]) {
                return false;
            }
        }
        true
    }

    /// Emits one frame if it fits, keeping the closing reserve; otherwise ends the turn with
    /// `RUN_ERROR` and returns false.
    pub(super) fn emit(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) -> bool {
        if self.is_finished() {
            return false;
        }
        let mark = self.encode_frame(ty, fields);
        self.keep_frame(mark)
    }

    /// Writes a frame without limit checks (the first frame, closing frames).
    pub(super) fn push_unchecked(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) {
        let mark = self.encode_frame(ty, fields);
        self.ledger.keep_since(mark);
    }

    /// Encodes the next frame (the next `event_id`) into the output; returns where it starts.
    fn encode_frame(&mut self, ty: &str, fields: &[(&str, Field<'_>)]) -> usize {
        let mark = self.ledger.mark();
        self.enc.encode_next(self.ledger.out(), ty, fields);
        mark
    }

    /// Writes a frame if it fits in the limits with `final_bytes` (one frame) still to come;
    /// otherwise leaves it out (logged) without ending the turn.
    pub(super) fn push_if_fits(
        &mut self,
        ty: &str,
        fields: &[(&str, Field<'_>)],
        final_bytes: usize,
    ) {
        let mark = self.encode_frame(ty, fields);
        let len = self.ledger.len_since(mark);
        let limits = &self.limits;
        if len <= limits.max_frame_bytes
            && self.ledger.stream_bytes() + len + final_bytes <= limits.max_stream_bytes
            && self.ledger.frames() + 2 <= limits.max_frames
        {
            self.ledger.keep_since(mark);
        } else {
            self.ledger.discard_since(mark);
            tracing::warn!(run_id = %LogId(&self.enc.run_id), frame = ty, bytes = len, "snapshot left out: it does not fit in the limits");
        }
    }
}
