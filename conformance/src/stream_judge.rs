//! The body of one `POST /runs` stream judged chunk by chunk, sans I/O and
//! without a clock: the byte and frame limits, Console's SSE reader, the frame
//! separator, and every data frame through the [`FrameRules`]. The caller owns
//! time (deadlines, arrival times): [`crate::turn`] reads a live response,
//! [`crate::recorded_turn`] replays chunks a browser recorded.

use crate::deadlines::{Deadlines, StreamLimits};
use crate::findings::{Code, Finding};
use crate::frame_rules::{Disposition, FinalFrame, FrameRules, StreamEnd};
use crate::outcome::{ReadMode, TurnOutcome};
use crate::sse_reader::{SseLine, SseReader};

/// What one chunk revealed.
#[derive(Debug, Default)]
pub struct ChunkReport {
    /// Findings, in the order noticed.
    pub findings: Vec<Finding>,
    /// The chunk held a data frame or a comment (the first-frame clock stops).
    pub saw_frame: bool,
    /// The chunk held a frame Console accepted (or a valid final frame).
    pub saw_valid_frame: bool,
    /// The chunk held the turn's final frame: how the turn ends.
    pub final_outcome: Option<TurnOutcome>,
    /// The turn failed with this code (its finding is in `findings`).
    pub failed: Option<Code>,
    /// Stop reading: the turn failed, or the read mode is satisfied.
    pub stop: Option<StreamEnd>,
}

/// Judges the chunks of one stream, in order.
#[derive(Debug)]
pub struct StreamJudge<'a> {
    rules: &'a mut FrameRules,
    reader: SseReader,
    limits: StreamLimits,
    mode: ReadMode,
    bytes: usize,
    frames: usize,
    final_seen: bool,
    /// A data line was read since the last blank line.
    in_block: bool,
    separator_reported: bool,
}

impl<'a> StreamJudge<'a> {
    /// A judge feeding `rules`, under `limits`, reading as `mode` asks.
    pub fn new(rules: &'a mut FrameRules, limits: StreamLimits, mode: ReadMode) -> Self {
        StreamJudge {
            rules,
            reader: SseReader::new(limits.max_frame_bytes),
            limits,
            mode,
            bytes: 0,
            frames: 0,
            final_seen: false,
            in_block: false,
            separator_reported: false,
        }
    }

    /// Body bytes fed so far.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    /// Data frames fed so far.
    pub fn frames(&self) -> usize {
        self.frames
    }

    /// Bytes of an unterminated last line still buffered.
    pub fn pending(&self) -> usize {
        self.reader.pending()
    }

    /// Feeds the next chunk of the body.
    pub fn on_chunk(&mut self, chunk: &[u8]) -> ChunkReport {
        let mut report = ChunkReport::default();
        self.bytes += chunk.len();
        if self.bytes > self.limits.max_stream_bytes {
            fail(
                &mut report,
                Code::LimitExceeded,
                format!("the stream exceeded {} bytes", self.limits.max_stream_bytes),
            );
            return report;
        }
        let lines = match self.reader.feed(chunk) {
            Ok(lines) => lines,
            Err(e) => {
                fail(
                    &mut report,
                    Code::LimitExceeded,
                    format!("one frame exceeded the per-frame limit: {e}"),
                );
                return report;
            }
        };
        for line in lines {
            match line {
                SseLine::Comment(_) => report.saw_frame = true,
                SseLine::Data(data) => {
                    report.saw_frame = true;
                    self.frames += 1;
                    if self.in_block && !self.separator_reported && !self.final_seen {
                        self.separator_reported = true;
                        report.findings.push(Finding::new(
                            Code::MissingFrameSeparator,
                            format!("frame #{} follows the previous data line without a blank line: frames are separated by a blank line", self.frames),
                        ));
                    }
                    self.in_block = true;
                    if self.frames > self.limits.max_frames {
                        fail(
                            &mut report,
                            Code::LimitExceeded,
                            format!("the stream exceeded {} frames", self.limits.max_frames),
                        );
                        return report;
                    }
                    let step = self.rules.on_frame(&data);
                    report.findings.extend(step.findings);
                    match step.disposition {
                        Disposition::Accepted | Disposition::Final => {
                            report.saw_valid_frame = true;
                            if step.disposition == Disposition::Final && !self.final_seen {
                                self.final_seen = true;
                                report.final_outcome = Some(match self.rules.final_frame() {
                                    Some(FinalFrame::Success) => TurnOutcome::Finished,
                                    Some(FinalFrame::Interrupt(_)) => TurnOutcome::Interrupted,
                                    Some(FinalFrame::Error(m)) => {
                                        TurnOutcome::RunError { message: m.clone() }
                                    }
                                    None => TurnOutcome::ClosedWithoutFinal,
                                });
                            }
                            if self.mode == ReadMode::FirstValidFrame {
                                report.stop = Some(StreamEnd::Stopped);
                                return report;
                            }
                        }
                        Disposition::Dropped => {}
                        Disposition::Fatal(code) => {
                            report.failed = Some(code);
                            report.stop = Some(StreamEnd::Failed);
                            return report;
                        }
                    }
                }
                SseLine::Blank => self.in_block = false,
                SseLine::Ignored(_) => {}
            }
        }
        report
    }
}

fn fail(report: &mut ChunkReport, code: Code, message: String) {
    report.findings.push(Finding::new(code, message));
    report.failed = Some(code);
    report.stop = Some(StreamEnd::Failed);
}

/// Which of Console's clocks bounds the wait for the next chunk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Clock {
    /// From the response headers to the first frame or comment.
    FirstFrame,
    /// Silence between chunks once the stream has started.
    Idle,
    /// The whole turn, from the request.
    Turn,
    /// The grace after the final frame (not a fault).
    AfterFinal,
}

/// The finding for a clock that ran out (`None` for [`Clock::AfterFinal`]).
pub(crate) fn timeout_finding(clock: Clock, d: &Deadlines) -> Option<(Code, String)> {
    let ms = |t: std::time::Duration| t.as_millis();
    Some(match clock {
        Clock::AfterFinal => return None,
        Clock::Turn => (
            Code::LimitExceeded,
            format!(
                "the turn exceeded the whole-turn deadline of {} ms",
                ms(d.turn)
            ),
        ),
        Clock::FirstFrame => (
            Code::TtfbTimeout,
            format!(
                "the stream opened but no frame or comment arrived within {} ms",
                ms(d.first_frame)
            ),
        ),
        Clock::Idle => (
            Code::IdleTimeout,
            format!(
                "more than {} ms of silence mid-stream (send a comment line as heartbeat)",
                ms(d.idle)
            ),
        ),
    })
}
