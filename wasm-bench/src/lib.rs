//! Whole turns through the core on `wasm32-unknown-unknown`, for measuring the Worker's own
//! CPU per turn outside workerd (which does not expose it locally; see BENCHMARKS.md).
//!
//! [`TurnBench`] runs the same engine a Worker runs (`Runway::handle`, the demo agent, the
//! in-memory store standing in for the Durable Object) to the end of each turn's stream, on the
//! testing kit's virtual clock (`runway_core::testing`: no timer fires in a turn that never
//! waits, and it needs no executor). A
//! wasm module runs on one thread without preemption, so the wall time of
//! [`TurnBench::run`] measured by the host is CPU time. `scripts/wasm-turn-cost.sh` builds it
//! with the Worker's release profile and times it under Node (`wasm-bench/turn-cost.mjs`).
//! [`ModelTurnBench`] does the same for a model turn: the model agent, a tool call answered in
//! process, a 500-token streamed answer and its usage recorded.
//! This crate is not a dependency of the Worker and is never part of its upload.

mod model_turn;

pub use model_turn::{ANSWER_TOKENS, ModelTurnBench};

use futures::StreamExt;
use runway_agents::DemoAgent;
use runway_core::adapter::Reply;
use runway_core::testing::{TestRunway, TestTurn, VirtualRuntime};
use wasm_bindgen::prelude::wasm_bindgen;

/// The Worker's engine with the demo agent and an in-memory store.
#[wasm_bindgen]
pub struct TurnBench {
    app: TestRunway<DemoAgent<VirtualRuntime>>,
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
        let rt = VirtualRuntime::new();
        Self {
            app: TestRunway::with(
                DemoAgent::new(rt.clone()),
                rt,
                runway_core::adapter::Config::unauthenticated(),
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
        let turn = TestTurn::new(input)
            .run_id(format!("bench-run-{n}"))
            .thread(format!("bench-thread-{n}"));
        let rt = self.app.runtime();
        rt.block_on(async {
            let Reply::Stream { response, turn } = self.app.runway().handle(turn.request()).await
            else {
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
