//! What ends a stream when the process cannot finish the turn itself (a panic on Workers
//! traps the whole instance): [`TurnBody::abort`], written by the core, closes what is open
//! and ends with `RUN_ERROR` `AGENT_PANIC`, with `event_id`s that continue the stream's.

use std::collections::HashSet;
use std::time::Duration;

use futures::StreamExt;
use futures::future::{Either, select};
use runway_core::adapter::{Reply, TurnBody};
use runway_core::testing::{TestRunway, TestTurn};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};
use serde_json::Value;

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

fn frames(sse: &[u8]) -> Vec<Value> {
    String::from_utf8_lossy(sse)
        .split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect()
}

/// Starts turn `run` saying `input` with the abort tail watched; after `wait`, reads its body
/// until `until` holds for what was read, then returns what was read and the body's
/// `abort()`, taken while the turn (if it has not ended) is still running.
async fn read_then_abort(
    app: &TestRunway<Stuck>,
    run: &str,
    input: &str,
    wait: Duration,
    until: impl Fn(&[Value]) -> bool,
) -> (Vec<u8>, Vec<u8>) {
    let rt = app.runtime();
    let turn = TestTurn::new(input).run_id(run).thread(run);
    rt.run(async {
        let Reply::Stream { response, turn } = app.runway().handle(turn.request()).await else {
            panic!("not a stream");
        };
        let mut body: TurnBody = response.into_body();
        body.watch_abort();
        let read = async move {
            rt.sleep(wait).await;
            let mut seen = Vec::new();
            while !until(&frames(&seen)) {
                let chunk = rt
                    .timeout(Duration::from_secs(5), body.next())
                    .await
                    .expect("a chunk in time")
                    .expect("body open")
                    .unwrap();
                seen.extend_from_slice(&chunk);
            }
            (seen, body)
        };
        // The process dies while the turn still runs, or after it ended.
        let running = async {
            turn.await;
            std::future::pending::<()>().await;
        };
        match select(std::pin::pin!(read), std::pin::pin!(running)).await {
            Either::Left(((seen, mut body), _running_turn)) => (seen, body.abort()),
            Either::Right(_) => unreachable!("never ends"),
        }
    })
    .await
}

fn has(ty: &'static str) -> impl Fn(&[Value]) -> bool {
    move |frames| frames.iter().any(|f| f["type"] == ty)
}

#[tokio::test]
async fn abort_closes_everything_open_and_ends_with_run_error() {
    let app = TestRunway::new(Stuck);
    let (seen, tail) = read_then_abort(
        &app,
        "r-abort",
        "go",
        Duration::ZERO,
        has("TEXT_MESSAGE_CONTENT"),
    )
    .await;
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
    let app = TestRunway::new(Stuck);
    let (_, tail) = read_then_abort(
        &app,
        "r-quick",
        "quick",
        Duration::ZERO,
        has("RUN_FINISHED"),
    )
    .await;
    assert_eq!(tail, Vec::<u8>::new());

    // A replay of the finished run ends with its recording: nothing may follow it either.
    let (_, drained) =
        read_then_abort(&app, "r-quick", "quick", Duration::from_millis(200), |_| {
            true
        })
        .await;
    let f = frames(&drained);
    assert_eq!(f.last().unwrap()["type"], "RUN_FINISHED", "{f:?}");
}
