//! What a run measured: percentiles, rates, errors by kind, CPU and memory.

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{Value, json};

use crate::proc_stats::CpuTime;
use crate::turn::{ConnectionMode, ErrorKind};

/// A successful turn's times, all from before `connect`.
#[derive(Clone, Copy)]
struct Times {
    /// The connection was ready (zero when a keep-alive connection was reused).
    connected: Duration,
    first_frame: Duration,
    whole: Duration,
}

/// One turn's outcome.
pub struct Sample {
    outcome: Result<Times, ErrorKind>,
}

impl Sample {
    pub fn ok(connected: Duration, first_frame: Duration, whole: Duration) -> Self {
        Self {
            outcome: Ok(Times {
                connected,
                first_frame,
                whole,
            }),
        }
    }

    pub fn failed(kind: ErrorKind) -> Self {
        Self { outcome: Err(kind) }
    }
}

/// The server's side of a run, from /proc.
pub struct ServerFacts {
    pub pid: u32,
    pub cpu: CpuTime,
    pub peak_rss_kib: Option<u64>,
}

/// Everything a run observed.
pub struct RunFacts {
    pub base_url: String,
    pub concurrency: usize,
    pub connection: ConnectionMode,
    pub input_bytes: usize,
    pub thread_turns: usize,
    pub elapsed: Duration,
    pub samples: Vec<Sample>,
    pub client_cpu: Option<CpuTime>,
    pub server: Option<ServerFacts>,
    pub listen_overflows: Option<u64>,
}

/// A run's figures.
pub struct Report {
    facts: RunFacts,
    connect: Vec<Duration>,
    /// First frame counted from the connection being ready: the server's part, without the
    /// wait for `connect` (SYN queue, the client's own scheduling).
    first_frame_after_connect: Vec<Duration>,
    first_frame: Vec<Duration>,
    whole: Vec<Duration>,
    errors: BTreeMap<String, usize>,
}

/// p50, p90, p99 and max of sorted durations, in milliseconds.
fn percentiles(sorted: &[Duration]) -> Value {
    let at = |p: f64| {
        if sorted.is_empty() {
            return Value::Null;
        }
        // Nearest rank: the smallest value with at least p of the samples at or below it.
        let rank = ((p * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
        json!(round3(sorted[rank - 1].as_secs_f64() * 1e3))
    };
    json!({ "p50": at(0.50), "p90": at(0.90), "p99": at(0.99), "max": at(1.0) })
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

impl Report {
    pub fn new(facts: RunFacts) -> Self {
        let mut connect = Vec::new();
        let mut first_frame_after_connect = Vec::new();
        let mut first_frame = Vec::new();
        let mut whole = Vec::new();
        let mut errors = BTreeMap::new();
        for s in &facts.samples {
            match s.outcome {
                Ok(t) => {
                    connect.push(t.connected);
                    first_frame_after_connect.push(t.first_frame.saturating_sub(t.connected));
                    first_frame.push(t.first_frame);
                    whole.push(t.whole);
                }
                Err(kind) => *errors.entry(kind.label()).or_insert(0) += 1,
            }
        }
        connect.sort();
        first_frame_after_connect.sort();
        first_frame.sort();
        whole.sort();
        Self {
            facts,
            connect,
            first_frame_after_connect,
            first_frame,
            whole,
            errors,
        }
    }

    pub fn errors_total(&self) -> usize {
        self.errors.values().sum()
    }

    pub fn to_json(&self) -> Value {
        let f = &self.facts;
        let turns = f.samples.len();
        let ok = self.whole.len();
        let per_turn_ms =
            |cpu: &CpuTime| (turns > 0).then(|| round3(cpu.total_ms() as f64 / turns as f64));
        json!({
            "base_url": f.base_url,
            "concurrency": f.concurrency,
            "connection": f.connection.as_str(),
            "input_bytes": f.input_bytes,
            "thread_turns": f.thread_turns,
            "turns": turns,
            "ok": ok,
            "errors": self.errors_total(),
            "errors_by_kind": self.errors,
            "elapsed_s": round3(f.elapsed.as_secs_f64()),
            "turns_per_s": round3(ok as f64 / f.elapsed.as_secs_f64().max(1e-9)),
            "connect_ms": percentiles(&self.connect),
            "first_frame_after_connect_ms": percentiles(&self.first_frame_after_connect),
            "first_frame_ms": percentiles(&self.first_frame),
            "whole_turn_ms": percentiles(&self.whole),
            "listen_overflows": f.listen_overflows,
            "client_cpu_ms": f.client_cpu.as_ref().map(CpuTime::total_ms),
            "client_cpu_ms_per_turn": f.client_cpu.as_ref().and_then(per_turn_ms),
            "server": f.server.as_ref().map(|s| json!({
                "pid": s.pid,
                "cpu_user_ms": s.cpu.user_ms,
                "cpu_system_ms": s.cpu.system_ms,
                "cpu_ms_per_turn": per_turn_ms(&s.cpu),
                "peak_rss_kib": s.peak_rss_kib,
            })),
        })
    }

    pub fn to_text(&self) -> String {
        let j = self.to_json();
        let p = |v: &Value| {
            format!(
                "p50 {} ms, p90 {} ms, p99 {} ms, max {} ms",
                v["p50"], v["p90"], v["p99"], v["max"]
            )
        };
        let mut out = format!(
            "{} turns ({} ok) at concurrency {}, connection: {}; {} turns/s over {} s\n",
            j["turns"],
            j["ok"],
            j["concurrency"],
            self.facts.connection.as_str(),
            j["turns_per_s"],
            j["elapsed_s"]
        );
        out += &format!("connect:     {}\n", p(&j["connect_ms"]));
        out += &format!("first frame: {}\n", p(&j["first_frame_ms"]));
        out += &format!(
            "  after connect: {}\n",
            p(&j["first_frame_after_connect_ms"])
        );
        out += &format!("whole turn:  {}\n", p(&j["whole_turn_ms"]));
        out += &format!("errors: {} {}\n", j["errors"], j["errors_by_kind"]);
        if !j["listen_overflows"].is_null() {
            out += &format!(
                "listen overflows (system-wide): {}\n",
                j["listen_overflows"]
            );
        }
        out += &format!(
            "load tool CPU: {} ms per turn\n",
            j["client_cpu_ms_per_turn"]
        );
        if let Some(s) = j["server"].as_object() {
            out += &format!(
                "server: {} ms CPU per turn (user {} ms, system {} ms), peak RSS {} KiB\n",
                s["cpu_ms_per_turn"], s["cpu_user_ms"], s["cpu_system_ms"], s["peak_rss_kib"]
            );
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<Duration> = (1..=100).map(Duration::from_millis).collect();
        let p = percentiles(&v);
        assert_eq!(p["p50"], 50.0);
        assert_eq!(p["p90"], 90.0);
        assert_eq!(p["p99"], 99.0);
        assert_eq!(p["max"], 100.0);
        let one = percentiles(&[Duration::from_millis(7)]);
        assert_eq!(one["p99"], 7.0);
        assert!(percentiles(&[])["p50"].is_null());
    }
}
