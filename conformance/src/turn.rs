//! One chat turn, played the way Console plays it: `POST /runs`, the status
//! and headers checks, then the stream read through the minimal SSE reader
//! under Console's deadlines and limits, each frame judged by the rule
//! engine.

use std::time::{Duration, Instant, SystemTime};

use serde::Serialize;
use tokio::time::timeout_at;

use crate::findings::{Code, Finding};
use crate::first_frame_hold::{ChunkArrival, HoldWatch};
use crate::frame_rules::{FrameRules, RunIds, StreamEnd};
pub use crate::outcome::{ReadMode, TurnOutcome};
use crate::response_head::{ResponseHead, judge_response_head};
use crate::run_body::RunBody;
use crate::stream_judge::{Clock, StreamJudge, timeout_finding};
use crate::transport::{Endpoint, HeaderSet, Transport, classify_send_error};

/// Everything observed during one turn.
#[derive(Debug, Clone, Serialize)]
pub struct TurnReport {
    /// `runId` sent.
    pub run_id: String,
    /// `threadId` sent.
    pub thread_id: String,
    /// When the request was sent.
    #[serde(skip)]
    pub started_at: SystemTime,
    /// The HTTP status, when one arrived.
    pub http_status: Option<u16>,
    /// How the turn ended.
    pub outcome: TurnOutcome,
    /// Every finding, in the order noticed.
    pub findings: Vec<Finding>,
    /// The answer: the text of the last text message.
    pub answer: String,
    /// The text of every text message, one per line.
    pub all_text: String,
    /// Data frames received.
    pub frames: usize,
    /// Body bytes received.
    pub bytes: usize,
    /// Request start to response headers, in ms.
    pub headers_ms: Option<u64>,
    /// Request start to the first frame or comment, in ms.
    pub ttfb_ms: Option<u64>,
    /// Request start to the first valid frame, in ms.
    pub first_valid_frame_ms: Option<u64>,
    /// Request start to the end of reading, in ms.
    pub total_ms: u64,
    /// The longest silence between chunks before the final frame (from the
    /// response headers on), in ms.
    pub longest_silence_ms: u64,
    /// When the body's first chunks arrived, from the request (the first
    /// [`crate::first_frame_hold::KEPT_ARRIVALS`]): what `FIRST_FRAME_HELD` is judged on.
    pub arrivals: Vec<ChunkArrival>,
}

impl TurnReport {
    /// The error code that failed the turn, if any.
    pub fn error_code(&self) -> Option<Code> {
        match self.outcome {
            TurnOutcome::Failed { code } => Some(code),
            _ => None,
        }
    }

    /// Whether the turn produced a proper answer (`RUN_FINISHED` success).
    pub fn finished(&self) -> bool {
        self.outcome == TurnOutcome::Finished
    }
}

fn ms(d: Duration) -> u64 {
    d.as_millis() as u64
}

struct Run<'a> {
    transport: &'a Transport,
    rules: FrameRules,
    findings: Vec<Finding>,
    report: TurnReport,
    /// Bytes of an unterminated last line at a clean close.
    unterminated: usize,
}

fn fail_turn(findings: &mut Vec<Finding>, report: &mut TurnReport, code: Code, message: String) {
    tracing::debug!(%code, %message, "turn failed");
    findings.push(Finding::new(code, message));
    report.outcome = TurnOutcome::Failed { code };
}

impl Run<'_> {
    fn fail(&mut self, code: Code, message: String) {
        fail_turn(&mut self.findings, &mut self.report, code, message);
    }
}

/// Plays one turn with `body` (sent as `bytes`, so a replay can reuse the
/// exact bytes) and reports what Console would see.
pub async fn run_turn(
    transport: &Transport,
    headers: &HeaderSet,
    body: &RunBody,
    mode: ReadMode,
) -> TurnReport {
    run_turn_bytes(transport, headers, body, body.to_bytes(), mode).await
}

/// As [`run_turn`], with the exact request bytes given (they must encode
/// `body`).
pub async fn run_turn_bytes(
    transport: &Transport,
    headers: &HeaderSet,
    body: &RunBody,
    bytes: Vec<u8>,
    mode: ReadMode,
) -> TurnReport {
    let ids = RunIds {
        run_id: body.run_id.clone(),
        thread_id: body.thread_id.clone(),
    };
    let mut run = Run {
        transport,
        rules: FrameRules::new(ids),
        findings: Vec::new(),
        unterminated: 0,
        report: TurnReport {
            run_id: body.run_id.clone(),
            thread_id: body.thread_id.clone(),
            started_at: SystemTime::now(),
            http_status: None,
            outcome: TurnOutcome::ClosedWithoutFinal,
            findings: Vec::new(),
            answer: String::new(),
            all_text: String::new(),
            frames: 0,
            bytes: 0,
            headers_ms: None,
            ttfb_ms: None,
            first_valid_frame_ms: None,
            total_ms: 0,
            longest_silence_ms: 0,
            arrivals: Vec::new(),
        },
    };
    let start = Instant::now();
    let end = drive(&mut run, headers, bytes, mode, start).await;
    let mut findings = std::mem::take(&mut run.findings);
    for mut f in run.rules.finish(end) {
        if f.code == Code::NoFinalFrame && run.unterminated > 0 {
            f.message.push_str(&format!(
                "; the stream ended inside a line ({} bytes without a line end), which Console drops",
                run.unterminated
            ));
        }
        findings.push(f);
    }
    let mut report = run.report;
    report.answer = run.rules.answer().to_owned();
    report.all_text = run.rules.all_text();
    report.frames = run.rules.frame_count();
    report.total_ms = ms(start.elapsed());
    report.findings = findings;
    tracing::debug!(run_id = %report.run_id, outcome = ?report.outcome, findings = report.findings.len(), "turn done");
    report
}

async fn drive(
    run: &mut Run<'_>,
    headers: &HeaderSet,
    bytes: Vec<u8>,
    mode: ReadMode,
    start: Instant,
) -> StreamEnd {
    let transport = run.transport;
    let d = *transport.deadlines();
    let limits = transport.limits();
    if let Err(failure) = transport.precheck() {
        run.fail(failure.code(Endpoint::Runs), failure.describe());
        return StreamEnd::Failed;
    }
    let start_t = tokio::time::Instant::from_std(start);
    let whole = start_t + d.turn;
    let headers_deadline = start_t + d.connect + d.first_frame;
    let request = transport.runs_request(headers, bytes).send();
    let response = match timeout_at(headers_deadline.min(whole), request).await {
        Err(_) if whole <= headers_deadline => {
            run.fail(
                Code::LimitExceeded,
                format!(
                    "the whole-turn deadline ({} ms) passed before the response headers",
                    ms(d.turn)
                ),
            );
            return StreamEnd::Failed;
        }
        Err(_) => {
            run.fail(
                Code::TtfbTimeout,
                format!(
                    "no response headers within {} ms of the request (connect + first-frame deadlines)",
                    ms(d.connect + d.first_frame)
                ),
            );
            return StreamEnd::Failed;
        }
        Ok(Err(e)) => {
            let failure = classify_send_error(&e);
            run.fail(failure.code(Endpoint::Runs), failure.describe());
            return StreamEnd::Failed;
        }
        Ok(Ok(r)) => r,
    };
    let response_at = Instant::now();
    run.report.headers_ms = Some(ms(response_at - start));
    let status = response.status();
    run.report.http_status = Some(status.as_u16());
    let h = response.headers();
    let text = |v: &reqwest::header::HeaderValue| v.to_str().unwrap_or("").to_owned();
    let head = ResponseHead {
        status: status.as_u16(),
        location: h.get(reqwest::header::LOCATION).map(text),
        content_type: h
            .get(reqwest::header::CONTENT_TYPE)
            .map(text)
            .unwrap_or_default(),
        cache_control: h
            .get_all(reqwest::header::CACHE_CONTROL)
            .iter()
            .map(text)
            .collect(),
        x_accel_buffering: h.get("x-accel-buffering").map(text),
    };
    match judge_response_head(&head) {
        Ok(warnings) => run.findings.extend(warnings),
        Err(finding) => {
            run.fail(finding.code, finding.message);
            return StreamEnd::Failed;
        }
    }
    read_stream(run, response, mode, start, response_at, limits).await
}

async fn read_stream(
    run: &mut Run<'_>,
    mut response: reqwest::Response,
    mode: ReadMode,
    start: Instant,
    response_at: Instant,
    limits: crate::deadlines::StreamLimits,
) -> StreamEnd {
    let d = *run.transport.deadlines();
    let to_t = tokio::time::Instant::from_std;
    let whole = to_t(start) + d.turn;
    let mut judge = StreamJudge::new(&mut run.rules, limits, mode);
    let mut hold = HoldWatch::new(limits.max_frame_bytes);
    let mut last_bytes = response_at;
    let mut first_frame: Option<Instant> = None;
    let mut final_at: Option<Instant> = None;
    let mut longest = Duration::ZERO;
    let end = loop {
        let (deadline, clock) = match (final_at, first_frame) {
            (Some(f), _) => (to_t(f + d.after_final), Clock::AfterFinal),
            (None, None) => (to_t(response_at + d.first_frame), Clock::FirstFrame),
            (None, Some(_)) => (to_t(last_bytes + d.idle), Clock::Idle),
        };
        let (deadline, clock) = if clock != Clock::AfterFinal && whole <= deadline {
            (whole, Clock::Turn)
        } else {
            (deadline, clock)
        };
        let chunk = match timeout_at(deadline, response.chunk()).await {
            Err(_) => {
                let Some((code, message)) = timeout_finding(clock, &d) else {
                    break StreamEnd::Closed;
                };
                fail_turn(&mut run.findings, &mut run.report, code, message);
                break StreamEnd::Failed;
            }
            Ok(Err(e)) => {
                if final_at.is_some() {
                    break StreamEnd::Closed;
                }
                fail_turn(
                    &mut run.findings,
                    &mut run.report,
                    Code::StreamTruncated,
                    format!(
                        "the stream broke after {} frame(s): {}",
                        judge.frames(),
                        crate::transport::chain(&e)
                    ),
                );
                break StreamEnd::Failed;
            }
            Ok(Ok(None)) => break StreamEnd::Closed,
            Ok(Ok(Some(chunk))) => chunk,
        };
        let now = Instant::now();
        if final_at.is_none() {
            longest = longest.max(now - last_bytes);
        }
        last_bytes = now;
        hold.on_chunk(now - start, &chunk);
        let seen = judge.on_chunk(&chunk);
        run.findings.extend(seen.findings);
        if seen.saw_frame {
            first_frame.get_or_insert(now);
        }
        if seen.saw_valid_frame {
            run.report
                .first_valid_frame_ms
                .get_or_insert(ms(now - start));
        }
        if let Some(outcome) = seen.final_outcome
            && final_at.is_none()
        {
            final_at = Some(now);
            run.report.outcome = outcome;
        }
        if let Some(code) = seen.failed {
            tracing::debug!(%code, "turn failed");
            run.report.outcome = TurnOutcome::Failed { code };
        }
        if let Some(end) = seen.stop {
            if end == StreamEnd::Stopped && final_at.is_none() {
                run.report.outcome = TurnOutcome::StoppedAtFirstValidFrame;
            }
            break end;
        }
    };
    run.report.bytes = judge.bytes();
    if let Some(f) = first_frame {
        run.report.ttfb_ms = Some(ms(f - start));
    }
    run.report.longest_silence_ms = ms(longest);
    let held = hold.finish(d.first_flush);
    run.report.arrivals = held.arrivals;
    run.findings.extend(held.finding);
    if longest > d.heartbeat && run.report.error_code().is_none() {
        run.findings.push(Finding::new(
            Code::HeartbeatGap,
            format!(
                "{} ms of silence between chunks: send a comment line at least every {} ms while busy",
                ms(longest),
                ms(d.heartbeat)
            ),
        ));
    }
    if judge.pending() > 0 && end == StreamEnd::Closed && final_at.is_none() {
        run.unterminated = judge.pending();
    }
    end
}
