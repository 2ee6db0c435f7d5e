//! The model turn of `ModelTurnBench`, natively: `cargo run --release -p runway-wasm-bench
//! --example model_turns -- TURNS`. For counting instructions under callgrind (the machine's
//! load does not change a count) as a proxy for the wasm32 figure of
//! `scripts/wasm-turn-cost.sh` (BENCHMARKS.md, "The Worker's own CPU per turn").

use runway_wasm_bench::ModelTurnBench;

fn main() {
    let turns = std::env::args()
        .nth(1)
        .and_then(|n| n.parse::<u32>().ok())
        .unwrap_or(20)
        .min(10_000);
    let mut bench = ModelTurnBench::new();
    let bytes = bench.run(turns);
    println!("{turns} model turns, {bytes} bytes of SSE");
}
