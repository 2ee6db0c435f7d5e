//! Whole turns through the core on `wasm32-unknown-unknown`, for measuring the Worker's own
//! CPU per turn outside workerd (which does not expose it locally; see BENCHMARKS.md).
//!
//! [`TurnBench`] runs the same engine a Worker runs (`Runway::handle`, the demo agent, the
//! in-memory store standing in for the Durable Object) to the end of each turn's stream. A
//! wasm module runs on one thread without preemption, so the wall time of
//! [`TurnBench::run`] measured by the host is CPU time. `scripts/wasm-turn-cost.sh` builds it
//! with the Worker's release profile and times it under Node (`wasm-bench/turn-cost.mjs`).
//! This crate is not a dependency of the Worker and is never part of its upload.

use std::future::Future;
use std::pin::pin;
use std::task::{Context, Poll, Waker};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use runway_agents::DemoAgent;
use runway_core::adapter::{Config, MemoryStore, Reply, Runtime, Runway};
use wasm_bindgen::prelude::wasm_bindgen;

/// Polls before a turn that makes no progress is declared stuck (it never waits on anything:
/// the store is in memory and the only timers are the heartbeat and the deadline).
const MAX_POLLS: u64 = 10_000_000;

/// Clock and entropy for the bench: the host's clock, no timers ever fire.
#[derive(Clone, Copy, Debug)]
pub struct BenchRuntime;

impl Runtime for BenchRuntime {
    type Sleep = std::future::Pending<()>;

    fn sleep(&self, _: Duration) -> Self::Sleep {
        // Heartbeats and the turn deadline never fire: a bench turn never waits.
        std::future::pending()
    }

    fn now_ms(&self) -> u64 {
        #[cfg(target_arch = "wasm32")]
        {
            js_sys::Date::now() as u64
        }
        #[cfg(not(target_arch = "wasm32"))]
        {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis() as u64)
        }
    }

    fn fill_random(&self, buf: &mut [u8]) {
        // Only hosted-file tokens use it; the bench's turns host no files.
        buf.fill(7);
    }
}

/// Runs `fut` to completion on this thread, polling until it is ready.
fn drive<F: Future>(fut: F) -> F::Output {
    let mut fut = pin!(fut);
    let mut cx = Context::from_waker(Waker::noop());
    for _ in 0..MAX_POLLS {
        if let Poll::Ready(out) = fut.as_mut().poll(&mut cx) {
            return out;
        }
    }
    panic!("a bench turn made no progress after {MAX_POLLS} polls");
}

/// The Worker's engine with the demo agent and an in-memory store.
#[wasm_bindgen]
pub struct TurnBench {
    app: Runway<DemoAgent<BenchRuntime>, MemoryStore, BenchRuntime>,
    turns: u64,
}

impl Default for TurnBench {
    fn default() -> Self {
        Self::new()
    }
}

#[wasm_bindgen]
impl TurnBench {
    /// A fresh engine and store.
    #[wasm_bindgen(constructor)]
    pub fn new() -> Self {
        Self {
            app: Runway::new(
                DemoAgent::new(BenchRuntime),
                MemoryStore::new(),
                BenchRuntime,
                Config::unauthenticated(),
            ),
            turns: 0,
        }
    }

    /// Runs `count` whole turns saying `input`, each on a fresh thread, and returns the bytes
    /// of SSE they streamed. A turn that does not end with `RUN_FINISHED` panics.
    pub fn run(&mut self, count: u32, input: &str) -> f64 {
        let mut streamed = 0usize;
        for _ in 0..count {
            self.turns += 1;
            streamed += self.one_turn(input);
        }
        streamed as f64
    }

    fn one_turn(&self, input: &str) -> usize {
        let n = self.turns;
        let body = format!(
            r#"{{"protocolVersion":"1","runId":"bench-run-{n}","threadId":"bench-thread-{n}","agentId":"a","workspaceId":"w","input":{}}}"#,
            serde_json::Value::from(input)
        );
        let req = http::Request::post("/runs")
            .header(http::header::CONTENT_TYPE, "application/json")
            .body(Bytes::from(body))
            .expect("request");
        drive(async {
            let Reply::Stream { response, turn } = self.app.handle(req).await else {
                panic!("the bench turn was refused")
            };
            let drain = response.into_body().fold(
                (0usize, Vec::<u8>::new()),
                |(n, mut tail), chunk| async move {
                    let chunk = chunk.expect("stream");
                    tail.clear();
                    tail.extend_from_slice(&chunk[chunk.len().saturating_sub(256)..]);
                    (n + chunk.len(), tail)
                },
            );
            let ((), (bytes, tail)) = futures::join!(turn, drain);
            assert!(
                String::from_utf8_lossy(&tail).contains("RUN_FINISHED"),
                "the bench turn did not finish"
            );
            bytes
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_and_long_turns_finish() {
        let mut b = TurnBench::new();
        let plain = b.run(3, "Hello");
        assert!(plain > 300.0, "{plain}");
        let long = b.run(1, "/long 1048576");
        assert!(long > 1_048_576.0, "{long}");
    }
}
