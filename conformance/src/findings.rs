//! What the emulator reports: Console's own error codes, the warnings for
//! what Console tolerates but users suffer from, and the onboarding
//! checklist's own codes.
//!
//! Every [`Finding`] carries exactly one [`Code`]; its [`Severity`] is fixed by
//! the code (see [`Code::severity`]), so the same misbehaviour is always
//! reported the same way.

use std::fmt;

use serde::{Serialize, Serializer};

/// How bad a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Console tolerates it, but the user sees something wrong (or a
    /// checklist item is only half met).
    Warning,
    /// Console fails the turn (or refuses the endpoint), or a checklist item
    /// is not met.
    Error,
}

/// Every code the emulator can report.
///
/// The first eleven are Console's own error codes, spelled exactly as in the
/// contract's "Error codes for log reconciliation" table. The `*` warnings are
/// the emulator's names for behaviour Console tolerates. The checklist codes
/// name onboarding checklist items Console cannot see within one turn.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Code {
    // ---- Console's error codes ----
    /// `/health` folded to unavailable (connection failure, 401/403, non-JSON,
    /// `down`, ...): Console would never send a turn.
    EndpointUnavailable,
    /// `/health` answered without `"1"` in `protocolVersions`, or `POST /runs`
    /// did not answer `text/event-stream`.
    ProtocolMismatch,
    /// `base_url` (or an address it resolves to) is one Console will not
    /// connect to (strict egress mode only).
    EgressRefused,
    /// No TCP/TLS handshake within the connect deadline.
    ConnectTimeout,
    /// `POST /runs` answered HTTP 3xx or 4xx.
    UpstreamRejected,
    /// `POST /runs` answered HTTP 5xx, or the connection failed.
    UpstreamUnavailable,
    /// The stream opened but no frame (or comment) arrived within the
    /// first-frame deadline.
    TtfbTimeout,
    /// Silence mid-stream longer than the idle deadline.
    IdleTimeout,
    /// The stream broke mid-way (connection reset, incomplete chunked body).
    StreamTruncated,
    /// Frame size, total bytes, frame count or the whole-turn deadline
    /// exceeded.
    LimitExceeded,
    /// The interrupt (question card) could not be built.
    InterruptRejected,

    // ---- warnings: Console tolerates, users suffer ----
    /// The stream closed cleanly without `RUN_FINISHED`/`RUN_ERROR`: Console
    /// stores a possibly truncated answer as complete.
    NoFinalFrame,
    /// Something opened (text message, tool call, step, reasoning message)
    /// was still open at the final frame.
    FramesLeftOpen,
    /// A text message without content, or a successful turn with nothing to
    /// show.
    EmptyBubble,
    /// A data frame arrived after the final frame (it is lost).
    FrameAfterFinal,
    /// The same file sent on both channels (`STATE_SNAPSHOT` artifacts and
    /// `CUSTOM` `file`): the user sees two cards.
    DuplicateFileChannel,
    /// `Cache-Control: no-cache` or `X-Accel-Buffering: no` missing on the
    /// stream response.
    MissingStreamHeaders,
    /// Silence between chunks longer than the heartbeat interval (15 s).
    HeartbeatGap,
    /// The first frame arrived late, or only with a later write: the path holds small
    /// chunks (see [`crate::first_frame_hold`]).
    FirstFrameHeld,
    /// The agent sent `RUN_STARTED`, which Console emits itself.
    RunStartedSent,
    /// The agent sent `REASONING_END`, which Console emits itself.
    ReasoningEndSent,
    /// A frame's `run_id`/`threadId` did not match the request: discarded.
    EnvelopeMismatch,
    /// A frame type Console does not handle: dropped.
    UnknownFrameType,
    /// A data line that is not a JSON object, has no `type`, or lacks a
    /// required field: dropped.
    MalformedFrame,
    /// Two data lines without a blank line between them: Console reads each
    /// line as a frame, a standard SSE reader would merge them.
    MissingFrameSeparator,
    /// A `STATE_SNAPSHOT`/`STATE_DELTA` key other than todos/artifacts/files:
    /// dropped.
    StateKeyDropped,
    /// Frames out of order: text spanning a tool call, a tool call after the
    /// answer, content for a message that is not open, reused ids.
    Ordering,
    /// `/health` answered `degraded`: chat still goes through.
    HealthDegraded,

    // ---- onboarding checklist codes ----
    /// A request without one of the agreed headers, or with a wrong value,
    /// was accepted.
    AuthNotEnforced,
    /// Wrong or missing credentials were refused, but not with 401.
    AuthNot401,
    /// The second of two turns on one thread did not see the first.
    ContextLost,
    /// Replaying a completed runId did not return the earlier result.
    NotIdempotent,
    /// A branch thread (`T:<branch>`) saw the context of `T`.
    BranchLeak,
    /// A runId reused with a different body was answered as a replay of the
    /// earlier turn.
    RunIdReuseReplayed,

    // ---- AG-UI 1.0 endpoints (`runway check --protocol agui`) ----
    /// An event does not pass AG-UI 1.0's event schema: an AG-UI client drops the run.
    AguiInvalidEvent,
    /// The run breaks AG-UI's lifecycle (`RUN_STARTED` first with the request's ids, everything
    /// opened closed, exactly one final event): an AG-UI client drops the run.
    AguiLifecycle,
    /// A body that is not a `RunAgentInput` was not refused with a 4xx.
    AguiInputAccepted,
}

impl Code {
    /// Every code, in the order of the documentation table.
    pub const ALL: [Code; 37] = [
        Code::EndpointUnavailable,
        Code::ProtocolMismatch,
        Code::EgressRefused,
        Code::ConnectTimeout,
        Code::UpstreamRejected,
        Code::UpstreamUnavailable,
        Code::TtfbTimeout,
        Code::IdleTimeout,
        Code::StreamTruncated,
        Code::LimitExceeded,
        Code::InterruptRejected,
        Code::NoFinalFrame,
        Code::FramesLeftOpen,
        Code::EmptyBubble,
        Code::FrameAfterFinal,
        Code::DuplicateFileChannel,
        Code::MissingStreamHeaders,
        Code::HeartbeatGap,
        Code::FirstFrameHeld,
        Code::RunStartedSent,
        Code::ReasoningEndSent,
        Code::EnvelopeMismatch,
        Code::UnknownFrameType,
        Code::MalformedFrame,
        Code::MissingFrameSeparator,
        Code::StateKeyDropped,
        Code::Ordering,
        Code::HealthDegraded,
        Code::AuthNotEnforced,
        Code::AuthNot401,
        Code::ContextLost,
        Code::NotIdempotent,
        Code::BranchLeak,
        Code::RunIdReuseReplayed,
        Code::AguiInvalidEvent,
        Code::AguiLifecycle,
        Code::AguiInputAccepted,
    ];

    /// The code as printed and serialized (`SCREAMING_SNAKE_CASE`).
    pub fn as_str(self) -> &'static str {
        match self {
            Code::EndpointUnavailable => "ENDPOINT_UNAVAILABLE",
            Code::ProtocolMismatch => "PROTOCOL_MISMATCH",
            Code::EgressRefused => "EGRESS_REFUSED",
            Code::ConnectTimeout => "CONNECT_TIMEOUT",
            Code::UpstreamRejected => "UPSTREAM_REJECTED",
            Code::UpstreamUnavailable => "UPSTREAM_UNAVAILABLE",
            Code::TtfbTimeout => "TTFB_TIMEOUT",
            Code::IdleTimeout => "IDLE_TIMEOUT",
            Code::StreamTruncated => "STREAM_TRUNCATED",
            Code::LimitExceeded => "LIMIT_EXCEEDED",
            Code::InterruptRejected => "INTERRUPT_REJECTED",
            Code::NoFinalFrame => "NO_FINAL_FRAME",
            Code::FramesLeftOpen => "FRAMES_LEFT_OPEN",
            Code::EmptyBubble => "EMPTY_BUBBLE",
            Code::FrameAfterFinal => "FRAME_AFTER_FINAL",
            Code::DuplicateFileChannel => "DUPLICATE_FILE_CHANNEL",
            Code::MissingStreamHeaders => "MISSING_STREAM_HEADERS",
            Code::HeartbeatGap => "HEARTBEAT_GAP",
            Code::FirstFrameHeld => "FIRST_FRAME_HELD",
            Code::RunStartedSent => "RUN_STARTED_SENT",
            Code::ReasoningEndSent => "REASONING_END_SENT",
            Code::EnvelopeMismatch => "ENVELOPE_MISMATCH",
            Code::UnknownFrameType => "UNKNOWN_FRAME_TYPE",
            Code::MalformedFrame => "MALFORMED_FRAME",
            Code::MissingFrameSeparator => "MISSING_FRAME_SEPARATOR",
            Code::StateKeyDropped => "STATE_KEY_DROPPED",
            Code::Ordering => "ORDERING",
            Code::HealthDegraded => "HEALTH_DEGRADED",
            Code::AuthNotEnforced => "AUTH_NOT_ENFORCED",
            Code::AuthNot401 => "AUTH_NOT_401",
            Code::ContextLost => "CONTEXT_LOST",
            Code::NotIdempotent => "NOT_IDEMPOTENT",
            Code::BranchLeak => "BRANCH_LEAK",
            Code::RunIdReuseReplayed => "RUN_ID_REUSE_REPLAYED",
            Code::AguiInvalidEvent => "AGUI_INVALID_EVENT",
            Code::AguiLifecycle => "AGUI_LIFECYCLE",
            Code::AguiInputAccepted => "AGUI_INPUT_ACCEPTED",
        }
    }

    /// Whether this is one of Console's own eleven error codes.
    pub fn is_console_error(self) -> bool {
        matches!(
            self,
            Code::EndpointUnavailable
                | Code::ProtocolMismatch
                | Code::EgressRefused
                | Code::ConnectTimeout
                | Code::UpstreamRejected
                | Code::UpstreamUnavailable
                | Code::TtfbTimeout
                | Code::IdleTimeout
                | Code::StreamTruncated
                | Code::LimitExceeded
                | Code::InterruptRejected
        )
    }

    /// The severity this code always has.
    pub fn severity(self) -> Severity {
        match self {
            c if c.is_console_error() => Severity::Error,
            Code::AuthNotEnforced
            | Code::ContextLost
            | Code::NotIdempotent
            | Code::BranchLeak
            | Code::AguiInvalidEvent
            | Code::AguiLifecycle => Severity::Error,
            _ => Severity::Warning,
        }
    }
}

impl fmt::Display for Code {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl Serialize for Code {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// One thing the emulator noticed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Finding {
    /// What kind of problem it is.
    pub code: Code,
    /// Always `code.severity()`.
    pub severity: Severity,
    /// A sentence for the operator: what was seen, and where.
    pub message: String,
}

impl Finding {
    /// A finding with the severity its code dictates.
    pub fn new(code: Code, message: impl Into<String>) -> Self {
        Finding {
            code,
            severity: code.severity(),
            message: message.into(),
        }
    }

    /// Whether this finding fails the turn / checklist item.
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }
}

impl fmt::Display for Finding {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.code, self.message)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;

    use super::*;

    #[test]
    fn codes_are_unique_and_console_errors_are_the_eleven() {
        let names: BTreeSet<&str> = Code::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(names.len(), Code::ALL.len());
        let console: Vec<&str> = Code::ALL
            .iter()
            .filter(|c| c.is_console_error())
            .map(|c| c.as_str())
            .collect();
        assert_eq!(
            console,
            [
                "ENDPOINT_UNAVAILABLE",
                "PROTOCOL_MISMATCH",
                "EGRESS_REFUSED",
                "CONNECT_TIMEOUT",
                "UPSTREAM_REJECTED",
                "UPSTREAM_UNAVAILABLE",
                "TTFB_TIMEOUT",
                "IDLE_TIMEOUT",
                "STREAM_TRUNCATED",
                "LIMIT_EXCEEDED",
                "INTERRUPT_REJECTED"
            ]
        );
        for c in Code::ALL {
            assert_eq!(
                c.severity() == Severity::Error,
                Finding::new(c, "").is_error()
            );
        }
    }
}
