//! Cost of the core's own work per turn: encoding frames and driving a whole turn in process.
//!
//! `cargo bench -p runway-core --bench turn`

// A benchmark binary has no API; criterion's macros generate undocumented public functions.
#![allow(missing_docs)]

use std::time::Duration;

use bytes::Bytes;
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use futures::StreamExt;
use runway_core::adapter::{Config, Ending, FrameWriter, MemoryStore, Reply, Runtime, Runway};
use runway_core::protocol::Limits;
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};

/// Answers with the user's input: the cheapest agent, so the bench measures runway alone.
struct EchoAgent;

impl Agent for EchoAgent {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        out.text(turn.input.clone());
        Ok(Outcome::Done)
    }
}

#[derive(Clone, Copy)]
struct BenchRuntime;

impl Runtime for BenchRuntime {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64)
    }
    fn fill_random(&self, buf: &mut [u8]) {
        buf.fill(1);
    }
}

/// Writes one turn: `deltas` text deltas, then the final frame; returns the SSE bytes.
fn write_turn(deltas: &[&str]) -> usize {
    let mut w = FrameWriter::new("01K5BH5PSX926W6RZ6YR1P8WWV", Limits::default());
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
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .expect("runtime");
    let app = Runway::new(
        EchoAgent,
        MemoryStore::new(),
        BenchRuntime,
        Config::unauthenticated(),
    );
    let mut n = 0u64;
    c.bench_function("engine: whole echo turn in process (memory store)", |b| {
        b.iter(|| {
            n += 1;
            let body = format!(
                r#"{{"protocolVersion":"1","runId":"r{n}","threadId":"t{}","agentId":"a","workspaceId":"w","input":"hello"}}"#,
                n % 100
            );
            let req = http::Request::post("/runs").body(Bytes::from(body)).expect("request");
            rt.block_on(async {
                let Reply::Stream { response, turn } = app.handle(req).await else {
                    panic!("not a stream")
                };
                let (_, bytes) = futures::join!(turn, response.into_body().fold(0, |n, c| async move {
                    n + c.map_or(0, |c| c.len())
                }));
                bytes
            })
        });
    });
}

criterion_group!(benches, writer, whole_turn);
criterion_main!(benches);
