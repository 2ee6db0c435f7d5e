//! [`TurnReport`]: one finished turn, as metrics and the usage store see it, and
//! [`TurnMetrics`], where an adapter sends it (a log line, a CloudWatch EMF line, a Workers
//! Analytics Engine data point, Prometheus counters).

use serde::Serialize;

use crate::error::TurnErrorCode;
use crate::meter::tally::Tally;
use crate::platform::maybe_send::{MaybeSend, MaybeSync};
use crate::protocol::LogId;

/// One finished turn.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TurnReport {
    /// `console` or `lowkey`.
    pub protocol: &'static str,
    /// The turn's id.
    pub run_id: String,
    /// The conversation's id.
    pub thread_id: String,
    /// The Digital Worker (Console `agentId`).
    pub worker: String,
    /// Its display name, when the workers file gives one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub worker_name: Option<String>,
    /// The calling organization (Console `workspaceId`).
    pub workspace: String,
    /// `SUCCESS`, `INTERRUPT`, or the `RUN_ERROR` code (`RATE_LIMITED`, `QUOTA_EXCEEDED`…).
    pub outcome: &'static str,
    /// When the turn started (ms since the epoch).
    pub started_at_ms: u64,
    /// From the request to the agent's first frame, in ms (`None`: the agent wrote nothing;
    /// runway's own `STEP_STARTED`, sent at once, is not counted).
    pub first_frame_ms: Option<u64>,
    /// From the request to the turn's end, in ms.
    pub duration_ms: u64,
    /// What the turn used, with its outcome counted (`turns` is 1).
    pub usage: Tally,
}

impl TurnReport {
    /// The estimated cost in US dollars.
    pub fn cost_usd(&self) -> f64 {
        self.usage.cost_micro_usd as f64 / 1_000_000.0
    }

    /// Model tokens, input and output.
    pub fn tokens(&self) -> u64 {
        self.usage.tokens()
    }

    /// The outcome in one of three classes, few enough to be a metric dimension whatever the
    /// outcomes seen: `ok` (`SUCCESS`, `INTERRUPT`), `refused` (by a limit: `RATE_LIMITED`,
    /// `QUOTA_EXCEEDED`), `error` (any other `RUN_ERROR` code).
    pub fn outcome_class(&self) -> &'static str {
        let refused = [TurnErrorCode::RateLimited, TurnErrorCode::QuotaExceeded];
        if matches!(self.outcome, "SUCCESS" | "INTERRUPT") {
            "ok"
        } else if refused.iter().any(|c| c.as_str() == self.outcome) {
            "refused"
        } else {
            "error"
        }
    }

    /// Logs the turn as one structured line (target `runway::usage`, message `turn usage`):
    /// the default [`TurnMetrics`], and what the others log beside their own output.
    pub fn log(&self) {
        tracing::info!(
            target: "runway::usage",
            runId = %LogId(&self.run_id),
            threadId = %LogId(&self.thread_id),
            agentId = %LogId(&self.worker),
            workspaceId = %LogId(&self.workspace),
            code = self.outcome,
            protocol = self.protocol,
            first_frame_ms = self.first_frame_ms,
            duration_ms = self.duration_ms,
            model_calls = self.usage.model_calls,
            input_tokens = self.usage.input_tokens,
            output_tokens = self.usage.output_tokens,
            reasoning_tokens = self.usage.reasoning_tokens,
            tool_calls = self.usage.tool_calls,
            tool_failures = self.usage.tool_failures,
            attachment_bytes = self.usage.attachment_bytes,
            cost_usd = self.cost_usd(),
            "turn usage"
        );
    }
}

/// Where each finished turn's [`TurnReport`] goes (`Runway::with_metrics`). Any
/// `Fn(&TurnReport)` is one.
pub trait TurnMetrics: MaybeSend + MaybeSync + 'static {
    /// Called once per turn that ran (or was refused), after its final frame.
    fn turn_ended(&self, report: &TurnReport);
}

impl<F: Fn(&TurnReport) + MaybeSend + MaybeSync + 'static> TurnMetrics for F {
    fn turn_ended(&self, report: &TurnReport) {
        self(report);
    }
}

/// The default [`TurnMetrics`]: [`TurnReport::log`].
#[derive(Debug, Clone, Copy, Default)]
pub struct LogLine;

impl TurnMetrics for LogLine {
    fn turn_ended(&self, report: &TurnReport) {
        report.log();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outcomes_fall_in_three_classes() {
        let class = |outcome: &'static str| {
            TurnReport {
                protocol: "console",
                run_id: String::new(),
                thread_id: String::new(),
                worker: String::new(),
                worker_name: None,
                workspace: String::new(),
                outcome,
                started_at_ms: 0,
                first_frame_ms: None,
                duration_ms: 0,
                usage: Tally::default(),
            }
            .outcome_class()
        };
        assert_eq!(class("SUCCESS"), "ok");
        assert_eq!(class("INTERRUPT"), "ok");
        assert_eq!(class(TurnErrorCode::RateLimited.as_str()), "refused");
        assert_eq!(class(TurnErrorCode::QuotaExceeded.as_str()), "refused");
        for code in [
            TurnErrorCode::AgentError,
            TurnErrorCode::TurnDeadline,
            TurnErrorCode::StoreUnavailable,
            TurnErrorCode::Superseded,
        ] {
            assert_eq!(class(code.as_str()), "error", "{code:?}");
        }
    }
}
