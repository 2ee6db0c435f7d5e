//! What ends a stream when the process cannot finish the turn itself (a panic on Workers
//! traps the whole instance): [`TurnBody::abort`], written by the core, closes what is open
//! and ends with `RUN_ERROR` `AGENT_PANIC`, with `event_id`s that continue the stream's.

use std::collections::HashSet;
use std::time::Duration;

use bytes::Bytes;
use futures::StreamExt;
use runway_core::adapter::{Config, MemoryStore, Reply, Runtime, Runway, TurnBody};
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
        buf.fill(7);
    }
}

/// Opens a step and a text message, then never returns (as if it were about to panic).
struct Stuck;

impl Agent for Stuck {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        if turn.input == "quick" {
            out.text("done");
            return Ok(Outcome::Done);
        }
        out.step_started("search");
        out.text("Looking");
        std::future::pending::<()>().await;
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

fn frames(sse: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(sse)
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

async fn start(app: &Runway<Stuck, MemoryStore, Clock>, run: &str, input: &str) -> TurnBody {
    let Reply::Stream { response, turn } = app.handle(request(run, input)).await else {
        panic!("not a stream");
    };
    let body = response.into_body();
    body.watch_abort();
    tokio::spawn(turn);
    body
}

#[tokio::test]
async fn abort_closes_everything_open_and_ends_with_run_error() {
    let app = Runway::new(
        Stuck,
        MemoryStore::default(),
        Clock,
        Config::unauthenticated(),
    );
    let mut body = start(&app, "r-abort", "go").await;
    let mut seen = Vec::new();
    while !frames(&seen)
        .iter()
        .any(|f| f["type"] == "TEXT_MESSAGE_CONTENT")
    {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("a chunk in time")
            .expect("body open")
            .unwrap();
        seen.extend_from_slice(&chunk);
    }
    let tail = body.abort();
    let mut all = frames(&seen);
    all.extend(frames(&tail));
    let types: Vec<&str> = all.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert_eq!(
        types[types.len() - 4..],
        [
            "TEXT_MESSAGE_END",
            "STEP_FINISHED",
            "STEP_FINISHED",
            "RUN_ERROR"
        ],
        "{types:?}"
    );
    let last = all.last().unwrap();
    assert_eq!(last["code"], "AGENT_PANIC");
    assert_eq!(last["message"], runway_core::adapter::PANIC_MESSAGE);
    let steps: Vec<&Value> = all
        .iter()
        .filter(|f| f["type"] == "STEP_FINISHED")
        .collect();
    assert_eq!(steps[0]["stepName"], "search");
    assert_eq!(steps[1]["stepName"], "turn");
    let ids: Vec<&str> = all
        .iter()
        .map(|f| f["event_id"].as_str().unwrap())
        .collect();
    assert_eq!(
        ids.iter().collect::<HashSet<_>>().len(),
        ids.len(),
        "{ids:?}"
    );
}

#[tokio::test]
async fn abort_after_the_final_frame_adds_nothing() {
    let app = Runway::new(
        Stuck,
        MemoryStore::default(),
        Clock,
        Config::unauthenticated(),
    );
    let mut body = start(&app, "r-quick", "quick").await;
    let mut seen = Vec::new();
    while !frames(&seen).iter().any(|f| f["type"] == "RUN_FINISHED") {
        let chunk = tokio::time::timeout(Duration::from_secs(5), body.next())
            .await
            .expect("a chunk in time")
            .expect("body open")
            .unwrap();
        seen.extend_from_slice(&chunk);
    }
    assert_eq!(body.abort(), Vec::<u8>::new());

    // A replay of the finished run ends with its recording: nothing may follow it either.
    let mut replay = start(&app, "r-quick", "quick").await;
    tokio::time::sleep(Duration::from_millis(200)).await;
    let drained = replay.abort();
    let f = frames(&drained);
    assert_eq!(f.last().unwrap()["type"], "RUN_FINISHED", "{f:?}");
}
