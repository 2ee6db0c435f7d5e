//! One CloudWatch Embedded Metric Format line per turn on stdout: CloudWatch Logs extracts the
//! metrics from it (namespace `RUNWAY_METRICS_NAMESPACE`, default `runway`), so dashboards and
//! alarms need no SDK call and no extra request.
//!
//! Every custom metric series costs $0.30 a month, so how many the line publishes is chosen
//! (`RUNWAY_METRICS_DETAIL`, [`MetricsDetail`]): by default at most 4 whatever the number of
//! workers, workspaces and outcomes. Everything else about the turn (worker, workspace, exact
//! outcome, tokens, cost, ids) rides along as plain members: searchable in Logs Insights, free
//! as metrics.

use std::fmt;
use std::str::FromStr;

use serde_json::{Value, json};

use runway_core::meter::{TurnMetrics, TurnReport};

/// The default namespace.
pub const DEFAULT_NAMESPACE: &str = "runway";

/// The setting choosing [`MetricsDetail`] (the template's `MetricsDetail` parameter).
pub const METRICS_DETAIL_SETTING: &str = "RUNWAY_METRICS_DETAIL";

/// How many metric series the EMF line publishes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum MetricsDetail {
    /// `pilot` (the default): `Turns` by `outcomeClass` (`ok`, `refused`, `error`) and
    /// `FirstFrameMs` without a dimension: at most 4 series, about $1.20 a month.
    #[default]
    Pilot,
    /// `worker`: the pilot's 4 series, plus `Turns`, `DurationMs`, `FirstFrameMs`,
    /// `InputTokens`, `OutputTokens`, `Tokens` and `CostUsd` by `worker` × `outcomeClass`: up
    /// to 21 more series per worker, about $6.30 a month each.
    Worker,
}

impl MetricsDetail {
    /// The setting's spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pilot => "pilot",
            Self::Worker => "worker",
        }
    }
}

impl fmt::Display for MetricsDetail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A `RUNWAY_METRICS_DETAIL` that is neither `pilot` nor `worker`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "RUNWAY_METRICS_DETAIL must be pilot (the default: at most 4 metric series) or worker \
     (up to 21 more series per worker, about $6.30 a month each), not {0:?}"
)]
pub struct BadMetricsDetail(String);

impl FromStr for MetricsDetail {
    type Err = BadMetricsDetail;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "" | "pilot" => Ok(Self::Pilot),
            "worker" => Ok(Self::Worker),
            _ => Err(BadMetricsDetail(s.to_owned())),
        }
    }
}

/// [`TurnMetrics`] writing an EMF line per turn to stdout.
#[derive(Debug, Clone)]
pub struct EmfLine {
    namespace: String,
    detail: MetricsDetail,
}

impl EmfLine {
    /// Metrics in `namespace` (at most 255 characters; longer is cut), the default
    /// [`MetricsDetail::Pilot`].
    pub fn new(namespace: &str) -> Self {
        let ns = namespace.trim();
        let ns = if ns.is_empty() { DEFAULT_NAMESPACE } else { ns };
        Self {
            namespace: ns.chars().take(255).collect(),
            detail: MetricsDetail::default(),
        }
    }

    /// The same line with `detail`'s metric series.
    pub fn with_detail(mut self, detail: MetricsDetail) -> Self {
        self.detail = detail;
        self
    }

    /// The EMF document of `r`.
    pub fn document(&self, r: &TurnReport) -> Value {
        let class = r.outcome_class();
        let mut doc = json!({
            "outcomeClass": class,
            "Turns": 1,
            "worker": dimension(&r.worker),
            "outcome": r.outcome,
            "DurationMs": r.duration_ms,
            "InputTokens": r.usage.input_tokens,
            "OutputTokens": r.usage.output_tokens,
            "Tokens": r.tokens(),
            "CostUsd": r.cost_usd(),
            "workspaceId": r.workspace,
            "runId": r.run_id,
            "threadId": r.thread_id,
            "protocol": r.protocol,
            "modelCalls": r.usage.model_calls,
            "reasoningTokens": r.usage.reasoning_tokens,
            "toolCalls": r.usage.tool_calls,
            "toolFailures": r.usage.tool_failures,
        });
        // Turns by outcome class: 3 series, what LimitRefusalsAlarm reads (`refused`).
        let mut directives = vec![json!({
            "Namespace": self.namespace,
            "Dimensions": [["outcomeClass"]],
            "Metrics": [{"Name": "Turns", "Unit": "Count"}],
        })];
        if let Some(ms) = r.first_frame_ms {
            doc["FirstFrameMs"] = json!(ms);
            // One series: an empty dimension set publishes the metric without dimensions.
            directives.push(json!({
                "Namespace": self.namespace,
                "Dimensions": [[]],
                "Metrics": [{"Name": "FirstFrameMs", "Unit": "Milliseconds"}],
            }));
        }
        if self.detail == MetricsDetail::Worker {
            let mut metrics = vec![
                json!({"Name": "Turns", "Unit": "Count"}),
                json!({"Name": "DurationMs", "Unit": "Milliseconds"}),
                json!({"Name": "InputTokens", "Unit": "Count"}),
                json!({"Name": "OutputTokens", "Unit": "Count"}),
                json!({"Name": "Tokens", "Unit": "Count"}),
                json!({"Name": "CostUsd", "Unit": "None"}),
            ];
            if r.first_frame_ms.is_some() {
                metrics.push(json!({"Name": "FirstFrameMs", "Unit": "Milliseconds"}));
            }
            directives.push(json!({
                "Namespace": self.namespace,
                "Dimensions": [["worker", "outcomeClass"]],
                "Metrics": metrics,
            }));
        }
        doc["_aws"] = json!({
            "Timestamp": r.started_at_ms + r.duration_ms,
            "CloudWatchMetrics": directives,
        });
        doc
    }

    /// The line written for `r`: its document as one line of JSON, nothing before or after
    /// (what Lambda hands CloudWatch Logs as one event).
    pub fn line(&self, r: &TurnReport) -> String {
        self.document(r).to_string()
    }
}

/// A dimension value: CloudWatch takes 1 to 1024 characters.
fn dimension(v: &str) -> String {
    let v: String = v.chars().take(1024).collect();
    if v.is_empty() { "-".into() } else { v }
}

impl TurnMetrics for EmfLine {
    fn turn_ended(&self, report: &TurnReport) {
        println!("{}", self.line(report));
    }
}
