//! The byte/frame ledger both protocol writers keep: the output not yet taken for sending,
//! the recording, and the counts the stream limits are checked against.
//!
//! A writer encodes a frame (an SSE `data:` line, a Lowkey NDJSON line) straight into the
//! output buffer ([`Ledger::out`]) after [`Ledger::mark`], then either keeps it
//! ([`Ledger::keep_since`]: counted, recorded) or takes it back ([`Ledger::discard_since`]:
//! it did not fit). No frame is built anywhere else first, so writing one allocates nothing
//! beyond the output buffer's (and the recording's) growth.

use crate::wire::recorder::{RecordPool, Recorder};

/// The size an empty output buffer starts at.
const FIRST_OUTPUT_BYTES: usize = 512;

/// Output, recording and counts of one turn's stream.
#[derive(Debug)]
pub(crate) struct Ledger {
    out: String,
    record: Recorder,
    stream_bytes: usize,
    frames: usize,
}

impl Ledger {
    /// An empty ledger whose recording counts in `pool`.
    pub(crate) fn new(pool: &'static RecordPool) -> Self {
        Self {
            out: String::new(),
            record: Recorder::new(pool),
            stream_bytes: 0,
            frames: 0,
        }
    }

    /// Counts the recording in `pool` instead (before anything is recorded).
    pub(crate) fn set_record_pool(&mut self, pool: &'static RecordPool) {
        self.record = Recorder::new(pool);
    }

    /// Records every frame kept from now on (the first frame is not part of a recording).
    pub(crate) fn start_recording(&mut self) {
        self.record.start();
    }

    /// The output buffer, to encode a frame into after [`Ledger::mark`].
    pub(crate) fn out(&mut self) -> &mut String {
        &mut self.out
    }

    /// Where the next frame starts. Output taken for sending leaves an empty buffer behind;
    /// the next frame starts it at a size most frames fit in, not by repeated doubling.
    pub(crate) fn mark(&mut self) -> usize {
        if self.out.capacity() == 0 {
            self.out.reserve(FIRST_OUTPUT_BYTES);
        }
        self.out.len()
    }

    /// Makes room for `n` more bytes of output (and of recording) at once.
    pub(crate) fn reserve(&mut self, n: usize) {
        self.out.reserve(n);
        self.record.reserve(n);
    }

    /// Bytes written since `mark`.
    pub(crate) fn len_since(&self, mark: usize) -> usize {
        self.out.len() - mark
    }

    /// Keeps the frame written since `mark`: counted, and recorded once recording started.
    pub(crate) fn keep_since(&mut self, mark: usize) {
        let frame = &self.out[mark..];
        self.stream_bytes += frame.len();
        self.frames += 1;
        self.record.push(frame);
    }

    /// Takes back what was written since `mark`.
    pub(crate) fn discard_since(&mut self, mark: usize) {
        self.out.truncate(mark);
    }

    /// Appends bytes that are sent and counted against the stream limit but never recorded
    /// (keep-alives); `frames` is how many frames they count as.
    pub(crate) fn push_unrecorded(&mut self, s: &str, frames: usize) {
        self.out.push_str(s);
        self.stream_bytes += s.len();
        self.frames += frames;
    }

    /// [`Ledger::push_unrecorded`] for bytes made for the purpose (the first-flush padding):
    /// taken as they are when nothing is waiting to be sent, not copied.
    pub(crate) fn push_unrecorded_owned(&mut self, s: String, frames: usize) {
        self.stream_bytes += s.len();
        self.frames += frames;
        if self.out.is_empty() {
            self.out = s;
        } else {
            self.out.push_str(&s);
        }
    }

    /// Counts and records `s`, the held-back final frame(s), without putting it in the output.
    pub(crate) fn count_final(&mut self, s: &str, frames: usize) {
        self.stream_bytes += s.len();
        self.frames += frames;
        self.record.push_final(s);
    }

    /// Takes the output written so far.
    pub(crate) fn take_output(&mut self) -> String {
        std::mem::take(&mut self.out)
    }

    /// The output written and not yet taken.
    pub(crate) fn pending(&self) -> &str {
        &self.out
    }

    /// The recording so far; `None` once dropped (see [`crate::wire::recorder`]).
    pub(crate) fn recording(&self) -> Option<&str> {
        self.record.kept()
    }

    /// Takes the recording; `None` if it was dropped.
    pub(crate) fn take_recording(&mut self) -> Option<String> {
        self.record.take()
    }

    /// Bytes of the stream so far (final frames and keep-alives included).
    pub(crate) fn stream_bytes(&self) -> usize {
        self.stream_bytes
    }

    /// Frames (or lines) of the stream so far.
    pub(crate) fn frames(&self) -> usize {
        self.frames
    }
}
