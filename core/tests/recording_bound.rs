//! The process-wide bound on recordings (`RecordPool`): long turns running at once keep at most
//! the pool's bytes of recordings; a turn past it streams its whole answer, and a repeated
//! delivery of its run answers `REPLAY_UNAVAILABLE` without running the agent again, while a
//! kept recording replays byte for byte. A test binary of its own: the pool is per process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use bytes::Bytes;
use futures::StreamExt;
use std::time::Duration;

use runway_core::adapter::{
    Config, MemoryStore, RecordPool, Reply, Runtime, Runway, TOTAL_RECORDED_BYTES,
};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::{Value, json};

#[derive(Clone, Copy)]
struct Clock;

impl Runtime for Clock {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
    fn now_ms(&self) -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    }
    fn fill_random(&self, buf: &mut [u8]) {
        static N: AtomicUsize = AtomicUsize::new(1);
        buf.fill(N.fetch_add(1, Ordering::Relaxed) as u8);
    }
}

/// Writes `input` MiB of text, in 64 KiB pieces, yielding between them (so turns interleave).
#[derive(Clone, Default)]
struct Long {
    runs: Arc<AtomicUsize>,
}

impl Agent for Long {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        self.runs.fetch_add(1, Ordering::SeqCst);
        let mib: usize = turn.input.parse().unwrap();
        for _ in 0..mib * 16 {
            out.text("w".repeat(64 * 1024));
            out.ready().await;
            tokio::task::yield_now().await;
        }
        Ok(Outcome::Done)
    }
}

fn request(run: &str, input: &str) -> http::Request<Bytes> {
    let body = json!({"protocolVersion": "1", "runId": run, "threadId": run, "agentId": "a",
                      "workspaceId": "w", "input": input});
    http::Request::post("/runs")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

async fn turn(app: Runway<Long, MemoryStore, Clock>, run: String, input: &str) -> String {
    let Reply::Stream { response, turn } = app.handle(request(&run, input)).await else {
        panic!("not a stream")
    };
    let engine = tokio::spawn(turn);
    let mut body = response.into_body();
    let mut all = Vec::new();
    while let Some(Ok(c)) = body.next().await {
        all.extend_from_slice(&c);
    }
    engine.await.unwrap();
    String::from_utf8(all).unwrap()
}

fn frames(sse: &str) -> Vec<Value> {
    sse.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|f| serde_json::from_str(f).unwrap())
        .collect()
}

/// Everything after the first frame.
fn after_first(sse: &str) -> &str {
    sse.split_once("\n\n").unwrap().1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_the_bound_recordings_are_dropped_and_replay_says_so() {
    let agent = Long::default();
    let app = Runway::new(
        agent.clone(),
        MemoryStore::default(),
        Clock,
        Config::unauthenticated(),
    );
    // 16 turns of 7 MiB at once: 112 MiB of recordings asked for, 64 MiB granted.
    let n = 16;
    let mib = 7;
    assert!(n * mib * 1024 * 1024 > TOTAL_RECORDED_BYTES + TOTAL_RECORDED_BYTES / 4);
    let originals =
        futures::future::join_all((0..n).map(|i| turn(app.clone(), format!("r{i}"), "7"))).await;
    assert_eq!(agent.runs.load(Ordering::SeqCst), n);
    assert_eq!(
        RecordPool::process().used(),
        0,
        "every turn gave its bytes back"
    );

    let (mut kept, mut dropped) = (0, 0);
    for (i, original) in originals.iter().enumerate() {
        // Every client got the whole answer.
        let f = frames(original);
        assert_eq!(f.last().unwrap()["type"], "RUN_FINISHED", "turn {i}");
        let text: usize = f
            .iter()
            .filter_map(|f| f["delta"].as_str())
            .map(str::len)
            .sum();
        assert_eq!(text, mib * 1024 * 1024, "turn {i}");

        let replay = turn(app.clone(), format!("r{i}"), "7").await;
        if after_first(&replay) == after_first(original) {
            kept += 1;
        } else {
            let r = frames(&replay);
            let types: Vec<&str> = r.iter().map(|f| f["type"].as_str().unwrap()).collect();
            assert_eq!(
                types,
                ["STEP_STARTED", "STEP_FINISHED", "RUN_ERROR"],
                "turn {i}"
            );
            assert_eq!(r[2]["code"], "REPLAY_UNAVAILABLE");
            assert_eq!(
                replay,
                turn(app.clone(), format!("r{i}"), "7").await,
                "stable"
            );
            dropped += 1;
        }
    }
    assert_eq!(
        agent.runs.load(Ordering::SeqCst),
        n,
        "no replay ran the agent"
    );
    assert!(kept >= 1, "the pool holds some whole recordings");
    assert!(
        kept * mib * 1024 * 1024 <= TOTAL_RECORDED_BYTES + TOTAL_RECORDED_BYTES / 4,
        "{kept} kept: more than the pool holds"
    );
    assert!(dropped >= 1, "{dropped} dropped");
}
