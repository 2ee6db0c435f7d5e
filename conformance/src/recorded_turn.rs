//! A turn someone else played and recorded (the playground's page, in the
//! browser): the response head, every body chunk with its arrival time, and
//! how the stream ended. Judged with the same response-head checks,
//! [`StreamJudge`] and [`FrameRules`] as a live [`crate::turn`], and with
//! Console's clocks applied to the recorded times: what Console would have
//! cut, the verdict cuts there too.

use serde::{Deserialize, Serialize};

use crate::deadlines::{Deadlines, StreamLimits};
use crate::findings::{Code, Finding};
use crate::frame_rules::{FrameRules, RunIds, StreamEnd};
use crate::outcome::{ReadMode, TurnOutcome};
use crate::response_head::{ResponseHead, judge_response_head};
use crate::stream_judge::{Clock, StreamJudge, timeout_finding};

/// One chunk of the body as it arrived.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedChunk {
    /// Milliseconds from sending the request.
    pub at_ms: u64,
    /// The chunk, decoded as UTF-8.
    pub text: String,
}

/// How the recording ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RecordedEnd {
    /// The server closed the body cleanly.
    Closed,
    /// The body broke (reset, incomplete chunked body).
    Broken,
    /// The user stopped reading (Console's Stop: the connection is closed).
    Stopped,
}

/// A recorded `POST /runs` exchange.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedTurn {
    /// `runId` sent.
    pub run_id: String,
    /// `threadId` sent.
    pub thread_id: String,
    /// The HTTP status; absent when no response arrived.
    pub status: Option<u16>,
    /// Why no response arrived, or why the body broke.
    #[serde(default)]
    pub error: Option<String>,
    /// Milliseconds from sending the request to the response headers.
    #[serde(default)]
    pub headers_ms: Option<u64>,
    /// `Location`.
    #[serde(default)]
    pub location: Option<String>,
    /// `Content-Type`.
    #[serde(default)]
    pub content_type: Option<String>,
    /// `Cache-Control` (values joined with `, ` as a browser shows them).
    #[serde(default)]
    pub cache_control: Option<String>,
    /// `X-Accel-Buffering`.
    #[serde(default)]
    pub x_accel_buffering: Option<String>,
    /// The body, chunk by chunk, in arrival order.
    #[serde(default)]
    pub chunks: Vec<RecordedChunk>,
    /// How the body ended.
    pub end: RecordedEnd,
    /// Milliseconds from sending the request to the end of the body.
    pub end_ms: u64,
}

/// What Console would have made of a recorded turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnVerdict {
    /// How the turn ends for Console.
    pub outcome: TurnOutcome,
    /// Every finding, in the order noticed.
    pub findings: Vec<Finding>,
    /// Data frames judged (frames after a point where Console would have cut
    /// the turn are not).
    pub frames: usize,
    /// Body bytes judged.
    pub bytes: usize,
    /// Request to response headers, in ms.
    pub headers_ms: Option<u64>,
    /// Request to the first frame or comment, in ms.
    pub ttfb_ms: Option<u64>,
    /// Request to the first valid frame, in ms.
    pub first_valid_frame_ms: Option<u64>,
    /// Request to the end of the body, in ms.
    pub total_ms: u64,
    /// The longest silence between chunks before the final frame (from the
    /// response headers on), in ms.
    pub longest_silence_ms: u64,
}

/// Judges `turn` under Console's `deadlines` and `limits`.
pub fn judge_recorded_turn(
    turn: &RecordedTurn,
    deadlines: &Deadlines,
    limits: StreamLimits,
) -> TurnVerdict {
    let mut rules = FrameRules::new(RunIds {
        run_id: turn.run_id.clone(),
        thread_id: turn.thread_id.clone(),
    });
    let mut verdict = TurnVerdict {
        outcome: TurnOutcome::ClosedWithoutFinal,
        findings: Vec::new(),
        frames: 0,
        bytes: 0,
        headers_ms: turn.headers_ms,
        ttfb_ms: None,
        first_valid_frame_ms: None,
        total_ms: turn.end_ms,
        longest_silence_ms: 0,
    };
    let (end, unterminated) = judge_exchange(turn, deadlines, limits, &mut rules, &mut verdict);
    for mut f in rules.finish(end) {
        if f.code == Code::NoFinalFrame && unterminated > 0 {
            f.message.push_str(&format!(
                "; the stream ended inside a line ({unterminated} bytes without a line end), which Console drops"
            ));
        }
        verdict.findings.push(f);
    }
    verdict.frames = rules.frame_count();
    verdict
}

fn fail(verdict: &mut TurnVerdict, code: Code, message: String) -> (StreamEnd, usize) {
    verdict.findings.push(Finding::new(code, message));
    verdict.outcome = TurnOutcome::Failed { code };
    (StreamEnd::Failed, 0)
}

/// Returns how the stream ended for the rules, and the bytes of an
/// unterminated last line at a clean close.
fn judge_exchange(
    turn: &RecordedTurn,
    d: &Deadlines,
    limits: StreamLimits,
    rules: &mut FrameRules,
    verdict: &mut TurnVerdict,
) -> (StreamEnd, usize) {
    let ms = |t: std::time::Duration| t.as_millis() as u64;
    let whole = ms(d.turn);
    let (Some(status), Some(headers_ms)) = (turn.status, turn.headers_ms) else {
        let why = turn.error.as_deref().unwrap_or("no response");
        return fail(
            verdict,
            Code::UpstreamUnavailable,
            format!("POST /runs failed: {why}"),
        );
    };
    let headers_deadline = ms(d.connect + d.first_frame);
    if headers_ms > headers_deadline.min(whole) {
        return if whole <= headers_deadline {
            fail(
                verdict,
                Code::LimitExceeded,
                format!("the whole-turn deadline ({whole} ms) passed before the response headers"),
            )
        } else {
            fail(
                verdict,
                Code::TtfbTimeout,
                format!(
                    "no response headers within {headers_deadline} ms of the request (connect + first-frame deadlines)"
                ),
            )
        };
    }
    let head = ResponseHead {
        status,
        location: turn.location.clone(),
        content_type: turn.content_type.clone().unwrap_or_default(),
        cache_control: turn.cache_control.iter().cloned().collect(),
        x_accel_buffering: turn.x_accel_buffering.clone(),
    };
    match judge_response_head(&head) {
        Ok(warnings) => verdict.findings.extend(warnings),
        Err(f) => return fail(verdict, f.code, f.message),
    }

    let mut judge = StreamJudge::new(rules, limits, ReadMode::WholeTurn);
    let mut last_bytes = headers_ms;
    let mut first_frame: Option<u64> = None;
    let mut final_at: Option<u64> = None;
    let mut longest = 0u64;
    // The clock bounding the wait for what comes next: the next chunk, or the end.
    let clock_at = |final_at: Option<u64>, first_frame: Option<u64>, last_bytes: u64| {
        let (deadline, clock) = match (final_at, first_frame) {
            (Some(f), _) => (f + ms(d.after_final), Clock::AfterFinal),
            (None, None) => (headers_ms + ms(d.first_frame), Clock::FirstFrame),
            (None, Some(_)) => (last_bytes + ms(d.idle), Clock::Idle),
        };
        if clock != Clock::AfterFinal && whole <= deadline {
            (whole, Clock::Turn)
        } else {
            (deadline, clock)
        }
    };
    let mut ended = None;
    for chunk in &turn.chunks {
        let (deadline, clock) = clock_at(final_at, first_frame, last_bytes);
        if chunk.at_ms > deadline {
            ended = Some(match timeout_finding(clock, d) {
                None => (StreamEnd::Closed, 0),
                Some((code, message)) => fail(verdict, code, message),
            });
            break;
        }
        let now = chunk.at_ms.max(last_bytes);
        if final_at.is_none() {
            longest = longest.max(now - last_bytes);
        }
        last_bytes = now;
        let seen = judge.on_chunk(chunk.text.as_bytes());
        verdict.findings.extend(seen.findings);
        if seen.saw_frame {
            first_frame.get_or_insert(now);
        }
        if seen.saw_valid_frame {
            verdict.first_valid_frame_ms.get_or_insert(now);
        }
        if let Some(outcome) = seen.final_outcome
            && final_at.is_none()
        {
            final_at = Some(now);
            verdict.outcome = outcome;
        }
        if let Some(code) = seen.failed {
            verdict.outcome = TurnOutcome::Failed { code };
        }
        if let Some(end) = seen.stop {
            ended = Some((end, 0));
            break;
        }
    }
    let ended = ended.unwrap_or_else(|| {
        let (deadline, clock) = clock_at(final_at, first_frame, last_bytes);
        if turn.end_ms > deadline
            && turn.end != RecordedEnd::Stopped
            && let Some((code, message)) = timeout_finding(clock, d)
        {
            return fail(verdict, code, message);
        }
        match turn.end {
            _ if final_at.is_some() => (StreamEnd::Closed, 0),
            RecordedEnd::Closed => (StreamEnd::Closed, judge.pending()),
            RecordedEnd::Stopped => {
                verdict.outcome = TurnOutcome::StoppedByClient;
                (StreamEnd::Stopped, 0)
            }
            RecordedEnd::Broken => {
                let why = turn.error.as_deref().unwrap_or("the connection broke");
                fail(
                    verdict,
                    Code::StreamTruncated,
                    format!("the stream broke after {} frame(s): {why}", judge.frames()),
                )
            }
        }
    });
    verdict.bytes = judge.bytes();
    verdict.ttfb_ms = first_frame;
    verdict.longest_silence_ms = longest;
    if longest > ms(d.heartbeat) && !matches!(verdict.outcome, TurnOutcome::Failed { .. }) {
        verdict.findings.push(Finding::new(
            Code::HeartbeatGap,
            format!(
                "{longest} ms of silence between chunks: send a comment line at least every {} ms while busy",
                ms(d.heartbeat)
            ),
        ));
    }
    ended
}

#[cfg(test)]
mod tests {
    use super::*;

    fn turn(chunks: &[(u64, &str)], end: RecordedEnd, end_ms: u64) -> RecordedTurn {
        RecordedTurn {
            run_id: "r1".into(),
            thread_id: "t1".into(),
            status: Some(200),
            error: None,
            headers_ms: Some(5),
            location: None,
            content_type: Some("text/event-stream".into()),
            cache_control: Some("no-cache".into()),
            x_accel_buffering: Some("no".into()),
            chunks: chunks
                .iter()
                .map(|(at_ms, text)| RecordedChunk {
                    at_ms: *at_ms,
                    text: (*text).into(),
                })
                .collect(),
            end,
            end_ms,
        }
    }

    fn codes(v: &TurnVerdict) -> Vec<&'static str> {
        v.findings.iter().map(|f| f.code.as_str()).collect()
    }

    const GOOD: &str = "data: {\"type\":\"STEP_STARTED\",\"stepName\":\"s\"}\n\n\
        data: {\"type\":\"STEP_FINISHED\",\"stepName\":\"s\"}\n\n\
        data: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n\n\
        data: {\"type\":\"TEXT_MESSAGE_CONTENT\",\"messageId\":\"m\",\"delta\":\"hi\"}\n\n\
        data: {\"type\":\"TEXT_MESSAGE_END\",\"messageId\":\"m\"}\n\n\
        data: {\"type\":\"RUN_FINISHED\",\"outcome\":{\"type\":\"success\"}}\n\n";

    #[test]
    fn a_correct_turn_split_anywhere_has_no_finding() {
        for cut in [1, 7, 40, GOOD.len() - 1] {
            let v = judge_recorded_turn(
                &turn(
                    &[(6, &GOOD[..cut]), (9, &GOOD[cut..])],
                    RecordedEnd::Closed,
                    10,
                ),
                &Deadlines::default(),
                StreamLimits::default(),
            );
            assert_eq!(v.outcome, TurnOutcome::Finished, "cut at {cut}");
            assert!(v.findings.is_empty(), "{:?}", v.findings);
            // A frame counts once its line is complete.
            let first_line_done = cut > GOOD.find('\n').unwrap();
            let ttfb = if first_line_done { 6 } else { 9 };
            assert_eq!((v.frames, v.ttfb_ms, v.total_ms), (6, Some(ttfb), 10));
        }
    }

    #[test]
    fn frame_rule_findings_come_from_the_rules() {
        let body = "data: {\"type\":\"RUN_STARTED\"}\n\ndata: {\"type\":\"TEXT_MESSAGE_START\",\"messageId\":\"m\"}\n\n";
        let v = judge_recorded_turn(
            &turn(&[(6, body)], RecordedEnd::Closed, 8),
            &Deadlines::default(),
            StreamLimits::default(),
        );
        assert_eq!(codes(&v), ["RUN_STARTED_SENT", "NO_FINAL_FRAME"]);
        assert_eq!(v.outcome, TurnOutcome::ClosedWithoutFinal);
    }

    #[test]
    fn recorded_times_meet_consoles_clocks() {
        let d = Deadlines::default();
        // The first frame 10 s after the headers: Console gave up at 10 s.
        let late = turn(&[(10_006, GOOD)], RecordedEnd::Closed, 10_010);
        let v = judge_recorded_turn(&late, &d, StreamLimits::default());
        assert_eq!(codes(&v), ["TTFB_TIMEOUT"]);
        assert_eq!(v.frames, 0);
        // 20 s of silence mid-stream: tolerated, but a heartbeat gap.
        let (a, b) = GOOD.split_at(GOOD.find("\n\n").unwrap() + 2);
        let v = judge_recorded_turn(
            &turn(&[(6, a), (20_006, b)], RecordedEnd::Closed, 20_007),
            &d,
            StreamLimits::default(),
        );
        assert_eq!(codes(&v), ["HEARTBEAT_GAP"]);
        assert_eq!(v.longest_silence_ms, 20_000);
        // Closed 31 s after the last chunk without a final frame: idle timeout.
        let v = judge_recorded_turn(
            &turn(&[(6, a)], RecordedEnd::Closed, 31_007),
            &d,
            StreamLimits::default(),
        );
        assert_eq!(codes(&v), ["IDLE_TIMEOUT"]);
    }

    #[test]
    fn head_and_transport_failures() {
        let mut t = turn(&[], RecordedEnd::Closed, 8);
        t.status = Some(401);
        let v = judge_recorded_turn(&t, &Deadlines::default(), StreamLimits::default());
        assert_eq!(codes(&v), ["UPSTREAM_REJECTED"]);
        t.status = None;
        t.headers_ms = None;
        t.error = Some("connection refused".into());
        let v = judge_recorded_turn(&t, &Deadlines::default(), StreamLimits::default());
        assert_eq!(codes(&v), ["UPSTREAM_UNAVAILABLE"]);
        assert!(v.findings[0].message.contains("connection refused"));
        let mut t = turn(&[(6, &GOOD[..50])], RecordedEnd::Broken, 9);
        t.cache_control = None;
        let v = judge_recorded_turn(&t, &Deadlines::default(), StreamLimits::default());
        assert_eq!(codes(&v), ["MISSING_STREAM_HEADERS", "STREAM_TRUNCATED"]);
        // Stopped by the user: no end-of-stream finding.
        let t = turn(&[(6, &GOOD[..50])], RecordedEnd::Stopped, 9);
        let v = judge_recorded_turn(&t, &Deadlines::default(), StreamLimits::default());
        assert!(v.findings.is_empty(), "{:?}", v.findings);
        assert_eq!(v.outcome, TurnOutcome::StoppedByClient);
    }
}
