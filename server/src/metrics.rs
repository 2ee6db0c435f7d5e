//! `GET {base}/metrics` on `runway serve`: each finished turn's report (worker, outcome,
//! tokens, cost, timings) as Prometheus counters, in the Prometheus text exposition format
//! (0.0.4), behind the same header set as `/runs`. Every turn is also logged as one line
//! ([`TurnReport::log`]).
//!
//! The series are bounded whatever callers send: a worker the deployment lists (its workers
//! file) keeps its own `worker` label; any other `agentId` (one agent serving every id, as
//! without a workers file) is counted under `worker="other"`, and so is a listed id longer than
//! [`MAX_WORKER_LABEL_BYTES`]. [`MAX_SERIES`] caps the series as a backstop.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

use runway_core::meter::{Policy, TurnMetrics, TurnReport};

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The `worker` label of turns whose `agentId` is not a listed worker.
pub const OTHER_WORKER: &str = "other";

/// The longest `agentId` that becomes a `worker` label (a Console agentId is about 18).
pub const MAX_WORKER_LABEL_BYTES: usize = 128;

/// The most worker × outcome series kept; a turn that would start one more is counted under
/// `worker="other"`.
pub const MAX_SERIES: usize = 1_000;

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
    /// The agentIds that keep their own label.
    workers: Arc<BTreeSet<String>>,
    counts: Arc<Mutex<BTreeMap<(String, &'static str), Counts>>>,
}

impl Prometheus {
    /// Counters labelled with the workers `policy` lists; every other agentId is `other`.
    pub fn for_policy(policy: &Policy) -> Self {
        Self {
            workers: Arc::new(
                policy
                    .listed_workers()
                    .filter(|id| id.len() <= MAX_WORKER_LABEL_BYTES)
                    .map(str::to_owned)
                    .collect(),
            ),
            counts: Arc::default(),
        }
    }

    /// The `worker` label of `agent_id`.
    fn worker_label(&self, agent_id: &str) -> &str {
        match self.workers.get(agent_id) {
            Some(listed) => listed,
            None => OTHER_WORKER,
        }
    }
}

impl TurnMetrics for Prometheus {
    fn turn_ended(&self, r: &TurnReport) {
        r.log();
        let mut worker = self.worker_label(&r.worker);
        let mut all = self.counts.lock().unwrap_or_else(|p| p.into_inner());
        if all.len() >= MAX_SERIES && !all.contains_key(&(worker.to_owned(), r.outcome)) {
            worker = OTHER_WORKER;
        }
        let c = all.entry((worker.to_owned(), r.outcome)).or_default();
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

    fn report(worker: &str) -> TurnReport {
        TurnReport {
            protocol: "lowkey",
            run_id: "r".into(),
            thread_id: "t".into(),
            worker: worker.into(),
            worker_name: None,
            workspace: "w".into(),
            outcome: "SUCCESS",
            started_at_ms: 0,
            first_frame_ms: None,
            duration_ms: 1,
            usage: Default::default(),
        }
    }

    #[test]
    fn many_distinct_long_agent_ids_keep_the_text_small() {
        let workers =
            runway_core::Workers::new().add("918273688800000200", runway_agents::EchoAgent);
        let p = Prometheus::for_policy(workers.policy());
        p.turn_ended(&report("918273688800000200"));
        let small = p.render().len();
        for i in 0..2_000 {
            let id = format!("{i}{}\n", "x".repeat(16 * 1024));
            p.turn_ended(&report(&id));
        }
        let text = p.render();
        assert!(text.len() < 2 * small + 1024, "{} bytes", text.len());
        assert!(
            text.contains("runway_turns_total{worker=\"other\",outcome=\"SUCCESS\"} 2000\n"),
            "{text}"
        );
        assert!(
            text.contains(
                "runway_turns_total{worker=\"918273688800000200\",outcome=\"SUCCESS\"} 1\n"
            ),
            "{text}"
        );
    }

    #[test]
    fn the_series_are_capped_even_for_listed_workers() {
        let mut workers = runway_core::Workers::new();
        for i in 0..MAX_SERIES + 50 {
            workers = workers.add(format!("w{i}"), runway_agents::EchoAgent);
        }
        let p = Prometheus::for_policy(workers.policy());
        for i in 0..MAX_SERIES + 50 {
            p.turn_ended(&report(&format!("w{i}")));
        }
        let series = p
            .render()
            .lines()
            .filter(|l| l.starts_with("runway_turns_total{"))
            .count();
        assert_eq!(series, MAX_SERIES + 1, "the cap, then `other`");
    }

    #[test]
    fn renders_counters_per_worker_and_outcome() {
        let workers = runway_core::Workers::new().add("a\"b", runway_agents::EchoAgent);
        let p = Prometheus::for_policy(workers.policy());
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
