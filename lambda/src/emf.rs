//! One CloudWatch Embedded Metric Format line per turn on stdout: CloudWatch Logs extracts the
//! metrics from it (namespace `RUNWAY_METRICS_NAMESPACE`, default `runway`; dimensions
//! `worker` and `outcome`, and `outcome` alone), so dashboards and alarms need no SDK call and no extra request.
//! The turn's ids ride along as plain members (searchable in Logs Insights, not dimensions:
//! they would make a metric per turn).

use serde_json::{Value, json};

use runway_core::meter::{TurnMetrics, TurnReport};

/// The default namespace.
pub const DEFAULT_NAMESPACE: &str = "runway";

/// [`TurnMetrics`] writing an EMF line per turn to stdout.
#[derive(Debug, Clone)]
pub struct EmfLine {
    namespace: String,
}

impl EmfLine {
    /// Metrics in `namespace` (at most 255 characters; longer is cut).
    pub fn new(namespace: &str) -> Self {
        let ns = namespace.trim();
        let ns = if ns.is_empty() { DEFAULT_NAMESPACE } else { ns };
        Self {
            namespace: ns.chars().take(255).collect(),
        }
    }

    /// The EMF document of `r`.
    pub fn document(&self, r: &TurnReport) -> Value {
        let mut metrics = vec![
            json!({"Name": "Turns", "Unit": "Count"}),
            json!({"Name": "DurationMs", "Unit": "Milliseconds"}),
            json!({"Name": "InputTokens", "Unit": "Count"}),
            json!({"Name": "OutputTokens", "Unit": "Count"}),
            json!({"Name": "Tokens", "Unit": "Count"}),
            json!({"Name": "CostUsd", "Unit": "None"}),
        ];
        let mut doc = json!({
            "worker": dimension(&r.worker),
            "outcome": r.outcome,
            "Turns": 1,
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
        if let Some(ms) = r.first_frame_ms {
            metrics.push(json!({"Name": "FirstFrameMs", "Unit": "Milliseconds"}));
            doc["FirstFrameMs"] = json!(ms);
        }
        doc["_aws"] = json!({
            "Timestamp": r.started_at_ms + r.duration_ms,
            "CloudWatchMetrics": [{
                "Namespace": self.namespace,
                // By worker and outcome, and by outcome alone (what an alarm on refusals
                // across every worker reads).
                "Dimensions": [["worker", "outcome"], ["outcome"]],
                "Metrics": metrics,
            }],
        });
        doc
    }
}

/// A dimension value: CloudWatch takes 1 to 1024 characters.
fn dimension(v: &str) -> String {
    let v: String = v.chars().take(1024).collect();
    if v.is_empty() { "-".into() } else { v }
}

impl TurnMetrics for EmfLine {
    fn turn_ended(&self, report: &TurnReport) {
        // stdout, one line, nothing before or after: what Lambda hands CloudWatch Logs.
        println!("{}", self.document(report));
    }
}
