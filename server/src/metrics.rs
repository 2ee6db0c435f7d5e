//! `GET {base}/metrics` on `runway serve`: each finished turn's report (worker, outcome,
//! tokens, cost, timings) as Prometheus counters, in the Prometheus text exposition format
//! (0.0.4), behind the same header set as `/runs`. Every turn is also logged as one line
//! ([`TurnReport::log`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use runway_core::meter::{TurnMetrics, TurnReport};

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

#[derive(Debug, Default, Clone, Copy)]
struct Counts {
    turns: u64,
    input_tokens: u64,
    output_tokens: u64,
    reasoning_tokens: u64,
    model_calls: u64,
    tool_calls: u64,
    tool_failures: u64,
    cost_micro_usd: u64,
    duration_ms: u64,
    first_frame_ms: u64,
    first_frames: u64,
}

/// The counters, per worker and outcome. Cheap to clone (shared).
#[derive(Debug, Clone, Default)]
pub struct Prometheus {
    counts: Arc<Mutex<BTreeMap<(String, String), Counts>>>,
}

impl TurnMetrics for Prometheus {
    fn turn_ended(&self, r: &TurnReport) {
        r.log();
        let mut all = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        let c = all
            .entry((r.worker.clone(), r.outcome.to_owned()))
            .or_default();
        c.turns += 1;
        c.input_tokens += r.usage.input_tokens;
        c.output_tokens += r.usage.output_tokens;
        c.reasoning_tokens += r.usage.reasoning_tokens;
        c.model_calls += r.usage.model_calls;
        c.tool_calls += r.usage.tool_calls;
        c.tool_failures += r.usage.tool_failures;
        c.cost_micro_usd += r.usage.cost_micro_usd;
        c.duration_ms += r.duration_ms;
        if let Some(ms) = r.first_frame_ms {
            c.first_frame_ms += ms;
            c.first_frames += 1;
        }
    }
}

/// A label value escaped as the format says (backslash, double quote, line feed).
fn label(v: &str) -> String {
    v.replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

impl Prometheus {
    /// The counters as the text exposition format.
    pub fn render(&self) -> String {
        let all = self
            .counts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .clone();
        type Get = fn(&Counts) -> f64;
        let families: [(&str, &str, Get); 10] = [
            (
                "runway_turns_total",
                "Turns, by worker (agentId) and outcome (SUCCESS, INTERRUPT or the RUN_ERROR code).",
                |c| c.turns as f64,
            ),
            ("runway_model_calls_total", "Calls to a model.", |c| {
                c.model_calls as f64
            }),
            (
                "runway_input_tokens_total",
                "Prompt tokens the model endpoints reported.",
                |c| c.input_tokens as f64,
            ),
            (
                "runway_output_tokens_total",
                "Completion tokens (reasoning included) the model endpoints reported.",
                |c| c.output_tokens as f64,
            ),
            (
                "runway_reasoning_tokens_total",
                "Completion tokens spent on reasoning.",
                |c| c.reasoning_tokens as f64,
            ),
            ("runway_tool_calls_total", "Tool calls run.", |c| {
                c.tool_calls as f64
            }),
            (
                "runway_tool_failures_total",
                "Tool calls that failed.",
                |c| c.tool_failures as f64,
            ),
            (
                "runway_cost_usd_total",
                "Estimated model spend in US dollars, from the workers file's prices.",
                |c| c.cost_micro_usd as f64 / 1e6,
            ),
            (
                "runway_turn_duration_seconds_total",
                "Sum of turn durations.",
                |c| c.duration_ms as f64 / 1e3,
            ),
            (
                "runway_first_frame_seconds_total",
                "Sum of the times to the agent's first frame (turns where it wrote one).",
                |c| c.first_frame_ms as f64 / 1e3,
            ),
        ];
        let mut out = String::new();
        for (name, help, get) in families {
            let _ = writeln!(out, "# HELP {name} {help}");
            let _ = writeln!(out, "# TYPE {name} counter");
            for ((worker, outcome), c) in &all {
                let _ = writeln!(
                    out,
                    "{name}{{worker=\"{}\",outcome=\"{}\"}} {}",
                    label(worker),
                    label(outcome),
                    get(c)
                );
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counters_per_worker_and_outcome() {
        let p = Prometheus::default();
        let mut r = TurnReport {
            protocol: "console",
            run_id: "r".into(),
            thread_id: "t".into(),
            worker: "a\"b".into(),
            worker_name: None,
            workspace: "w".into(),
            outcome: "SUCCESS",
            started_at_ms: 0,
            first_frame_ms: Some(250),
            duration_ms: 1500,
            usage: Default::default(),
        };
        r.usage.input_tokens = 21;
        r.usage.cost_micro_usd = 1500;
        p.turn_ended(&r);
        p.turn_ended(&r);
        let text = p.render();
        assert!(
            text.contains("runway_turns_total{worker=\"a\\\"b\",outcome=\"SUCCESS\"} 2\n"),
            "{text}"
        );
        assert!(
            text.contains("runway_input_tokens_total{worker=\"a\\\"b\",outcome=\"SUCCESS\"} 42\n"),
            "{text}"
        );
        assert!(
            text.contains("runway_cost_usd_total{worker=\"a\\\"b\",outcome=\"SUCCESS\"} 0.003\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "runway_turn_duration_seconds_total{worker=\"a\\\"b\",outcome=\"SUCCESS\"} 3\n"
            ),
            "{text}"
        );
    }
}
