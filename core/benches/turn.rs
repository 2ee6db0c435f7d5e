//! Cost of the core's own work per turn: encoding frames and driving a whole turn in process.
//!
//! `cargo bench -p runway-core --bench turn`

// A benchmark binary has no API; criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use runway_core::adapter::{Config, Ending, FrameWriter};
use runway_core::protocol::StreamLimits;
use runway_core::testing::{TestRunway, TestTurn, VirtualRuntime, receive};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};

/// Answers with the user's input (as `runway_agents::EchoAgent` does): the bench measures the
/// core, so it serves an agent of its own rather than one from a crate built on the core.
struct EchoAgent;

impl Agent for EchoAgent {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        if turn.input.is_empty() {
            out.text("(empty message)");
        } else {
            out.text(turn.input.clone());
        }
        Ok(Outcome::Done)
    }
}

/// Writes one turn: `deltas` text deltas, then the final frame; returns the SSE bytes.
fn write_turn(deltas: &[&str]) -> usize {
    let mut w = FrameWriter::new("01K5BH5PSX926W6RZ6YR1P8WWV", StreamLimits::default());
    w.start();
    let mut n = 0;
    for d in deltas {
        w.text(d);
        // The engine drains the writer after every event.
        n += w.take_output().len();
    }
    w.finish(Ending::Success);
    n += w.take_output().len();
    n + w.take_final().map_or(0, |f| f.len())
}

/// Throughput in bytes of SSE written (what the targets are stated in).
fn writer(c: &mut Criterion) {
    let small: Vec<&str> = vec!["Gold fell 0.5% yesterday. "; 1000];
    let big = "runway streams long answers in pieces. ".repeat(27_000); // ~1 MiB
    let big_deltas = [big.as_str()];
    let mut g = c.benchmark_group("writer");
    for (name, deltas) in [
        ("1,000 small deltas", &small[..]),
        ("1 MiB answer in one delta", &big_deltas[..]),
    ] {
        g.throughput(Throughput::Bytes(write_turn(deltas) as u64));
        g.bench_function(name, |b| b.iter(|| write_turn(deltas)));
    }
    g.finish();
    c.bench_function("writer: plain answer, 20 deltas", |b| {
        b.iter(|| write_turn(&small[..20]));
    });
}

fn whole_turn(c: &mut Criterion) {
    // Lambda's default writes 100 KiB of padding after the first frame (`first_flush_bytes`;
    // serve and Workers default to none): measured with and without, what the padding costs. The testing kit's runway: the real
    // engine and writer over the memory store, on a virtual clock (a turn that never waits
    // fires no timer).
    for (name, first_flush_bytes) in [
        (
            "engine: whole echo turn in process (memory store)",
            runway_core::adapter::FIRST_FLUSH_BYTES,
        ),
        ("engine: whole echo turn, no first-flush padding", 0),
    ] {
        let config = Config {
            first_flush_bytes,
            ..Config::unauthenticated()
        };
        let app = TestRunway::with(EchoAgent, VirtualRuntime::new(), config);
        let rt = app.runtime();
        let mut n = 0u64;
        c.bench_function(name, |b| {
            b.iter(|| {
                n += 1;
                let turn = TestTurn::new("hello")
                    .run_id(format!("r{n}"))
                    .thread(format!("t{}", n % 100));
                rt.block_on(async {
                    let reply = app.runway().handle(turn.request()).await;
                    let received = receive(reply, rt).await;
                    received.chunks.iter().map(|(_, c)| c.len()).sum::<usize>()
                })
            });
        });
    }
}

/// The same echo turn as AG-UI 1.0's `POST /agui` (no padding), beside Console's without
/// padding above: what the AG-UI route and dialect cost per turn.
fn whole_agui_turn(c: &mut Criterion) {
    let config = Config {
        first_flush_bytes: 0,
        ..Config::unauthenticated()
    };
    let app = TestRunway::with(EchoAgent, VirtualRuntime::new(), config);
    let rt = app.runtime();
    let mut n = 0u64;
    c.bench_function("engine: whole echo turn, AG-UI (POST /agui)", |b| {
        b.iter(|| {
            n += 1;
            let body = serde_json::json!({
                "threadId": format!("t{}", n % 100),
                "runId": format!("r{n}"),
                "messages": [{"id": format!("u{n}"), "role": "user", "content": "hello"}],
            });
            let request = http::Request::post("/agui")
                .header("host", "agent.example.com")
                .body(bytes::Bytes::from(body.to_string()))
                .expect("request");
            rt.block_on(async {
                let reply = app.runway().handle(request).await;
                let received = receive(reply, rt).await;
                received.chunks.iter().map(|(_, c)| c.len()).sum::<usize>()
            })
        });
    });
}

criterion_group!(benches, writer, whole_turn, whole_agui_turn);
criterion_main!(benches);
