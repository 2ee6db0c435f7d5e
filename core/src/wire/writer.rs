//! The writer of one turn, generic over the protocol's encoding (as rustls's
//! `ConnectionCommon<Side>` is one connection for client and server): [`Writer<Console>`] writes
//! Console's SSE frames ([`crate::adapter::FrameWriter`]), [`Writer<Lowkey>`] Lowkey's NDJSON
//! lines ([`crate::adapter::NdjsonWriter`]).
//!
//! What every protocol's stream must do is written here, once:
//! - the frame ledger: output not yet sent, the recording a replay sends, the bytes and frames
//!   the stream limits are checked against ([`Ledger`]);
//! - the limits: a frame that would cross the frame, stream or frame-count limit is refused and
//!   the turn ends with `LIMIT_EXCEEDED`, with room for closing what is open and the final frame
//!   always held in reserve ([`Encoding::reserve`]);
//! - the ending ([`Writer::finish`]): a successful turn with no answer becomes `EMPTY_ANSWER`,
//!   an invalid question `INTERRUPT_INVALID`; exactly one final frame, held back
//!   ([`Writer::take_final`]) so the engine commits the turn first and can send an error
//!   instead ([`Writer::replacement_error`]); nothing after it;
//! - keep-alives and the first-flush padding: sent and counted, never recorded;
//! - the abort tail ([`Writer::abort_tail`]): what ends the stream if the process dies now.
//!
//! An [`Encoding`] supplies only what is its own: how the first frame, an agent event, a
//! keep-alive and the final frames are encoded, and the state that takes (Console's open
//! messages, tool calls and steps; Lowkey's paragraphs).
//!
//! [`Writer<Console>`]: crate::wire::console::Console
//! [`Writer<Lowkey>`]: crate::wire::lowkey::Lowkey

use std::fmt;

use crate::agent::output::AgentEvent;
use crate::error::TurnErrorCode;
use crate::platform::maybe_send::MaybeSend;
use crate::protocol::agui::TokenUsage;
use crate::protocol::{Ending, StreamLimits};
use crate::wire::ledger::Ledger;
use crate::wire::recorder::RecordPool;

/// How much of the answer's text a writer keeps for the thread (the engine stores at most a
/// quarter of `ContextPolicy::max_transcript_bytes` of it, 32 KiB by default). The stream
/// itself carries all of it; holding all of an 8 MiB answer a second time is what made 100
/// long turns cost gigabytes.
pub(crate) const ANSWER_KEPT_BYTES: usize = 1024 * 1024;

/// A protocol's encoding of a turn: what a [`Writer`] needs to know that differs between
/// protocols. Crate-private, so only Console and Lowkey implement it.
pub(crate) trait Encoding: Sized + fmt::Debug + MaybeSend + 'static {
    /// Content type of the response body.
    const CONTENT_TYPE: &'static str;

    /// The keep-alive written after a silence, and how many frames it counts as.
    const KEEP_ALIVE: (&'static str, usize);

    /// Writes the first frame (kept, counted, not recorded).
    fn first_frame(w: &mut Writer<Self>);

    /// Bytes of padding that follow the first frame so a path that holds small chunks lets
    /// it go (see `Config::first_flush_bytes`), or `None` where the protocol has no room for
    /// padding.
    fn padding(bytes: usize) -> Option<String>;

    /// Bytes and frames held back so that whatever is open can be closed and the final frame
    /// still fits in the limits.
    fn reserve(w: &Writer<Self>) -> (usize, usize);

    /// Renders one event ([`AgentEvent::File`] never reaches it: the engine hosts the file
    /// and passes an [`AgentEvent::Artifact`] instead).
    fn apply(w: &mut Writer<Self>, event: AgentEvent);

    /// Closes whatever is open and encodes the final bytes of `ending` (already checked by
    /// [`Writer::finish`]); returns them, how many frames they are, and the ending they encode
    /// (an encoding may still turn it into an error, such as a question too long to send).
    fn end(w: &mut Writer<Self>, ending: Ending) -> (String, usize, Ending);

    /// Final bytes reporting `code`, with the message of [`TurnErrorCode::user_message`].
    fn error(w: &mut Writer<Self>, code: TurnErrorCode) -> String;

    /// Appends to `out` what would end the stream right now with `code`, after everything
    /// already written: frames closing whatever is open, and the error.
    fn abort(w: &Writer<Self>, out: &mut String, code: TurnErrorCode);

    /// What a replay sends when the recording was not kept (see [`RecordPool`]).
    fn unrecorded(w: &mut Writer<Self>) -> String {
        Self::error(w, TurnErrorCode::ReplayUnavailable)
    }

    /// Whether the final frame reports the run's token usage ([`Writer::report_usage`]): the
    /// engine gathers it only for a writer that sends it.
    fn reports_usage(_w: &Writer<Self>) -> bool {
        false
    }
}

/// The writer of one turn of a protocol: a sans-I/O state machine that turns what an agent
/// says into a stream the protocol's reader accepts, whatever the agent does.
///
/// Feed it agent output; drain encoded bytes with [`Writer::take_output`]; end it with
/// [`Writer::finish`] and take the held-back final frame with [`Writer::take_final`].
#[derive(Debug)]
pub struct Writer<E> {
    pub(in crate::wire) limits: StreamLimits,
    /// Output, recording, bytes and frames.
    pub(in crate::wire) ledger: Ledger,
    /// The text the user saw (its first [`ANSWER_KEPT_BYTES`]).
    pub(in crate::wire) answer: String,
    /// Some text was sent.
    pub(in crate::wire) answered: bool,
    /// Client tool calls sent and not answered by the agent: left for the client.
    pub(in crate::wire) client_calls: Vec<String>,
    /// The run's token usage per model, for the final frame (where the encoding reports it).
    pub(in crate::wire) usage: Vec<TokenUsage>,
    final_bytes: Option<String>,
    ending: Option<Ending>,
    /// The protocol's own state.
    pub(in crate::wire) enc: E,
}

// The encoding is crate-private on purpose (only Console and Lowkey implement it): the public
// methods below are reached through `FrameWriter` and `NdjsonWriter`.
#[allow(private_bounds)]
impl<E: Encoding> Writer<E> {
    /// A writer keeping the stream within `limits`, in the protocol's initial state `enc`.
    pub(in crate::wire) fn with_encoding(limits: StreamLimits, enc: E) -> Self {
        Self {
            limits,
            ledger: Ledger::new(RecordPool::process()),
            answer: String::new(),
            answered: false,
            client_calls: Vec::new(),
            usage: Vec::new(),
            final_bytes: None,
            ending: None,
            enc,
        }
    }

    /// Counts this turn's recording in `pool` instead of the process's (tests).
    #[must_use]
    pub fn with_record_pool(mut self, pool: &'static RecordPool) -> Self {
        self.ledger.set_record_pool(pool);
        self
    }

    /// Writes the first frame (Console's `STEP_STARTED`, Lowkey's `status: started`), before
    /// anything else. It is not part of the recorded turn: a replay writes its own first frame
    /// at once and then the recording.
    pub fn start(&mut self) {
        debug_assert_eq!(self.ledger.frames(), 0, "start() must come first");
        E::first_frame(self);
        self.ledger.start_recording();
    }

    /// Writes `bytes` of padding after the first frame, where the protocol has room for it
    /// (an SSE comment for Console; nothing for Lowkey): counted against the stream limit,
    /// never recorded.
    pub(crate) fn pad(&mut self, bytes: usize) {
        if bytes == 0 || self.is_finished() {
            return;
        }
        if let Some(padding) = E::padding(bytes)
            && self.fits(padding.len(), 0)
        {
            self.ledger.push_unrecorded_owned(padding, 0);
        }
    }

    /// Writes a keep-alive (Console's comment line, Lowkey's `status: working` without
    /// content): counted against the stream limit, never recorded, and skipped once the turn
    /// has ended or when room is short.
    pub fn heartbeat(&mut self) {
        let (keep_alive, frames) = E::KEEP_ALIVE;
        if !self.is_finished() && self.fits(keep_alive.len(), frames) {
            self.ledger.push_unrecorded(keep_alive, frames);
        }
    }

    /// Renders one agent event.
    pub(crate) fn apply(&mut self, event: AgentEvent) {
        if let AgentEvent::File(_) = event {
            // The engine hosts files and passes the artifact instead.
            tracing::error!("unhosted file reached the writer; dropped");
            return;
        }
        E::apply(self, event);
    }

    /// Ends the turn: closes everything still open and prepares the final frame, held back in
    /// [`Writer::take_final`]. Does nothing if the turn already ended (by a limit, say).
    ///
    /// A successful turn that sent no text ends with `EMPTY_ANSWER` instead, and a question
    /// that is not valid with `INTERRUPT_INVALID`: the protocol's reader never gets an empty
    /// bubble or a question it cannot show.
    pub fn finish(&mut self, ending: Ending) {
        if self.is_finished() {
            return;
        }
        let ending = match ending {
            // Calls left for the client are the answer of a run that said nothing.
            Ending::Success if !self.answered && self.client_calls.is_empty() => {
                Ending::failed(TurnErrorCode::EmptyAnswer)
            }
            Ending::Interrupt(i) => match i.validate() {
                Ok(()) => Ending::Interrupt(i),
                Err(e) => {
                    tracing::error!(code = "INTERRUPT_INVALID", error = %e, "agent asked an invalid question");
                    Ending::failed(TurnErrorCode::InterruptInvalid)
                }
            },
            other => other,
        };
        let (final_bytes, frames, ending) = E::end(self, ending);
        self.ledger.count_final(&final_bytes, frames);
        self.final_bytes = Some(final_bytes);
        self.ending = Some(ending);
    }

    /// The client tool calls this run leaves for the client (AG-UI's `pendingToolCallIds`).
    pub(crate) fn pending_client_calls(&self) -> &[String] {
        &self.client_calls
    }

    /// Whether the final frame reports token usage: call [`Writer::report_usage`] before
    /// [`Writer::finish`] then (AG-UI's `usage[]`).
    pub(crate) fn reports_usage(&self) -> bool {
        E::reports_usage(self)
    }

    /// The run's token usage, one entry per model, for the final frame.
    pub(crate) fn report_usage(&mut self, usage: Vec<TokenUsage>) {
        self.usage = usage;
    }

    /// Final bytes reporting `code`, to send in place of the prepared final frame (when
    /// committing the turn failed). Not recorded.
    pub fn replacement_error(&mut self, code: TurnErrorCode) -> String {
        self.final_bytes = None;
        E::error(self, code)
    }

    /// The bytes that would end the stream right now with `code`, after everything already
    /// taken: pending output, frames closing whatever is open, and the error. Leaves the
    /// writer unchanged. Empty once the final frame has been taken (or replaced): nothing may
    /// follow it. Used when the process cannot finish the turn itself (see
    /// [`crate::adapter::TurnBody::abort`]).
    pub fn abort_tail(&self, code: TurnErrorCode) -> String {
        if self.ending.is_some() && self.final_bytes.is_none() {
            return String::new();
        }
        let mut out = self.ledger.pending().to_owned();
        E::abort(self, &mut out, code);
        out
    }

    /// Bytes ready to send, in order. The final frame is not among them.
    pub fn take_output(&mut self) -> String {
        self.ledger.take_output()
    }

    /// True once bytes are waiting in [`Writer::take_output`].
    pub fn has_output(&self) -> bool {
        !self.ledger.pending().is_empty()
    }

    /// The prepared final frame(s), once the turn has ended.
    pub fn take_final(&mut self) -> Option<String> {
        self.final_bytes.take()
    }

    /// True once the turn has ended (by [`Writer::finish`] or a limit).
    pub fn is_finished(&self) -> bool {
        self.ending.is_some()
    }

    /// How the turn ended, once it has (after the writer's own checks: an invalid question
    /// became an error).
    pub fn ending(&self) -> Option<&Ending> {
        self.ending.as_ref()
    }

    /// Everything after the first frame, final frame included: what a replay sends (empty if
    /// the recording was not kept: see [`Writer::take_recording`]).
    pub fn recording(&self) -> &str {
        self.ledger.recording().unwrap_or_default()
    }

    /// Takes what a replay sends, once the turn has finished: the recording, moved out. If it
    /// was not kept (recordings were at their memory bound, see [`RecordPool`]), bytes that
    /// end the stream with `REPLAY_UNAVAILABLE` instead, so a repeated delivery never runs the
    /// agent again.
    pub fn take_recording(&mut self) -> String {
        match self.ledger.take_recording() {
            Some(kept) => kept,
            None => E::unrecorded(self),
        }
    }

    /// The text the user saw, stretches separated by a blank line (its first MiB: what the
    /// thread keeps of it is far less). A closing question is not in it: the engine adds that
    /// to the transcript itself.
    pub fn answer(&self) -> &str {
        &self.answer
    }

    /// Bytes written so far, keep-alives, padding and the final frame included.
    pub fn stream_bytes(&self) -> usize {
        self.ledger.stream_bytes()
    }

    /// Frames (Lowkey: lines) written so far.
    pub fn frame_count(&self) -> usize {
        self.ledger.frames()
    }

    /// Whether `bytes` more bytes that are `frames` frames fit, keeping the encoding's reserve.
    /// Bytes that are no frame (a comment) are never refused on the frame count.
    pub(in crate::wire) fn fits(&self, bytes: usize, frames: usize) -> bool {
        let (reserve_bytes, reserve_frames) = E::reserve(self);
        self.ledger.stream_bytes() + bytes + reserve_bytes <= self.limits.max_stream_bytes
            && (frames == 0
                || self.ledger.frames() + frames + reserve_frames <= self.limits.max_frames)
    }

    /// Keeps the frame the encoding wrote into the output since `mark` if it fits in the
    /// limits; otherwise takes it back, ends the turn with `LIMIT_EXCEEDED` and returns false.
    pub(in crate::wire) fn keep_frame(&mut self, mark: usize) -> bool {
        let len = self.ledger.len_since(mark);
        if len <= self.limits.max_frame_bytes && self.fits(len, 1) {
            self.ledger.keep_since(mark);
            return true;
        }
        self.ledger.discard_since(mark);
        tracing::error!(
            code = "LIMIT_EXCEEDED",
            frame_bytes = len,
            bytes = self.ledger.stream_bytes(),
            frames = self.ledger.frames(),
            "frame refused: it would cross the frame or stream limits"
        );
        self.finish(Ending::failed(TurnErrorCode::LimitExceeded));
        false
    }

    /// Adds `s` to the text the user saw, up to [`ANSWER_KEPT_BYTES`], cut at a character
    /// boundary.
    pub(in crate::wire) fn keep_answer(&mut self, s: &str) {
        let room = ANSWER_KEPT_BYTES.saturating_sub(self.answer.len());
        if s.len() <= room {
            self.answer.push_str(s);
            return;
        }
        let mut end = room;
        while !s.is_char_boundary(end) {
            end -= 1;
        }
        self.answer.push_str(&s[..end]);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::console::FrameWriter;

    #[test]
    fn the_kept_answer_stops_at_the_bound_on_a_character_boundary() {
        let mut w = FrameWriter::new("r", StreamLimits::default());
        w.answer = "a".repeat(ANSWER_KEPT_BYTES - 1);
        w.keep_answer("é and more");
        assert_eq!(
            w.answer.len(),
            ANSWER_KEPT_BYTES - 1,
            "é does not fit whole"
        );
        w.answer.clear();
        w.keep_answer(&"x".repeat(3 * ANSWER_KEPT_BYTES));
        assert_eq!(w.answer.len(), ANSWER_KEPT_BYTES);
        w.keep_answer("more");
        assert_eq!(w.answer.len(), ANSWER_KEPT_BYTES);
    }
}
