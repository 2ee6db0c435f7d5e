//! The process-wide bound on output written by agents and not yet taken by the engine
//! (`TOTAL_PENDING_BYTES`): past it, no agent is polled until clients have read enough. A
//! test binary of its own, because the count is per process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{
    Config, MemoryStore, Reply, Runtime, Runway, TOTAL_PENDING_BYTES, total_pending_bytes,
};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::json;

#[derive(Clone, Copy)]
struct VirtualClock;

impl Runtime for VirtualClock {
    type Sleep = tokio::time::Sleep;
    fn sleep(&self, d: Duration) -> Self::Sleep {
        tokio::time::sleep(d)
    }
    fn now_ms(&self) -> u64 {
        static START: std::sync::OnceLock<tokio::time::Instant> = std::sync::OnceLock::new();
        let start = *START.get_or_init(tokio::time::Instant::now);
        1_700_000_000_000
            + tokio::time::Instant::now()
                .duration_since(start)
                .as_millis() as u64
    }
    fn fill_random(&self, buf: &mut [u8]) {
        buf.fill(7);
    }
}

/// `big N`: N pieces of 1 MiB in one go (a synchronous burst); anything else: one short
/// answer.
/// Counts the runs that started.
#[derive(Clone, Default)]
struct Agentish {
    started: Arc<AtomicUsize>,
}

impl Agent for Agentish {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        self.started.fetch_add(1, Ordering::SeqCst);
        if let Some(n) = turn.input.strip_prefix("big ") {
            for _ in 0..n.parse::<usize>().unwrap() {
                out.text("z".repeat(1024 * 1024));
            }
            tokio::task::yield_now().await;
        } else {
            out.text("short answer");
        }
        Ok(Outcome::Done)
    }
}

fn request(run: &str, input: &str) -> http::Request<Bytes> {
    let body = json!({"protocolVersion": "1", "runId": run, "threadId": run, "agentId": "a",
                      "workspaceId": "w", "input": input});
    http::Request::post("/runs")
        .header("host", "agent.test")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn past_the_total_bound_no_agent_runs_until_clients_read() {
    let agent = Agentish::default();
    let app = Runway::new(
        agent.clone(),
        MemoryStore::default(),
        VirtualClock,
        Config::unauthenticated(),
    );
    // 16 turns whose clients read nothing: each has one 1 MiB piece being sent and three
    // waiting. Once 32 MiB wait, the agents of the turns still to start are not polled.
    let mut stalled = Vec::new();
    for i in 0..16 {
        let Reply::Stream { response, turn } = app.handle(request(&format!("s{i}"), "big 4")).await
        else {
            panic!("not a stream")
        };
        tokio::spawn(turn);
        stalled.push(response);
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    assert!(
        total_pending_bytes() > TOTAL_PENDING_BYTES,
        "{} bytes pending",
        total_pending_bytes()
    );
    let started = agent.started.load(Ordering::SeqCst);
    assert!(
        (11..16).contains(&started),
        "{started} agents started: the bound did not hold the rest back"
    );

    // A new turn with a reading client: its agent is not polled while the process is over.
    let Reply::Stream { response, turn } = app.handle(request("fresh", "hello")).await else {
        panic!("not a stream")
    };
    let engine = tokio::spawn(turn);
    let reader = tokio::spawn(async move {
        let mut body = response.into_body();
        let mut all = Vec::new();
        while let Some(Ok(c)) = body.next().await {
            all.extend_from_slice(&c);
        }
        String::from_utf8(all).unwrap()
    });
    tokio::time::sleep(Duration::from_secs(5)).await;
    assert_eq!(
        agent.started.load(Ordering::SeqCst),
        started,
        "an agent ran while the process was over its bound"
    );

    // The stalled clients leave: what they held is released and the new turn goes on.
    drop(stalled);
    tokio::time::timeout(Duration::from_secs(5), engine)
        .await
        .expect("the new turn finishes once the bound is free")
        .unwrap();
    let body = reader.await.unwrap();
    assert!(body.contains("short answer"), "{body}");
    assert!(body.contains("RUN_FINISHED"), "{body}");
    assert_eq!(total_pending_bytes(), 0);
}
