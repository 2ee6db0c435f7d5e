//! The process-wide bound on output written by agents and not yet taken by the engine
//! (`TOTAL_PENDING_BYTES`): past it, no agent is polled until clients have read enough. A
//! test binary of its own, because the count is per process.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use futures::StreamExt;
use runway_core::adapter::{Reply, TOTAL_PENDING_BYTES, total_pending_bytes};
use runway_core::testing::{TestRunway, TestTurn, yield_now};
use runway_core::{Agent, AgentResult, Outcome, Output, Turn};

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
            yield_now().await;
        } else {
            out.text("short answer");
        }
        Ok(Outcome::Done)
    }
}

fn request(run: &str, input: &str) -> http::Request<bytes::Bytes> {
    TestTurn::new(input).run_id(run).thread(run).request()
}

#[tokio::test]
async fn past_the_total_bound_no_agent_runs_until_clients_read() {
    let agent = Agentish::default();
    let app = TestRunway::new(agent.clone());
    let rt = app.runtime();
    let runway = app.runway();
    rt.run(async {
        // 16 turns whose clients read nothing: each has one 1 MiB piece being sent and three
        // waiting. Once 32 MiB wait, the agents of the turns still to start are not polled.
        let mut stalled = Vec::new();
        let mut engines = Vec::new();
        for i in 0..16 {
            let Reply::Stream { response, turn } =
                runway.handle(request(&format!("s{i}"), "big 4")).await
            else {
                panic!("not a stream")
            };
            engines.push(turn);
            stalled.push(response);
        }
        let engines = futures::future::join_all(engines);
        let test = async {
            rt.sleep(Duration::from_secs(1)).await;
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

            // A new turn with a reading client: its agent is not polled while the process is
            // over its bound.
            let Reply::Stream { response, turn } = runway.handle(request("fresh", "hello")).await
            else {
                panic!("not a stream")
            };
            let reader = async {
                let mut body = response.into_body();
                let mut all = Vec::new();
                while let Some(Ok(c)) = body.next().await {
                    all.extend_from_slice(&c);
                }
                (String::from_utf8(all).unwrap(), rt.elapsed())
            };
            let clients = async {
                rt.sleep(Duration::from_secs(5)).await;
                assert_eq!(
                    agent.started.load(Ordering::SeqCst),
                    started,
                    "an agent ran while the process was over its bound"
                );
                // The stalled clients leave: what they held is released and the new turn
                // goes on.
                drop(stalled);
                rt.elapsed()
            };
            let ((), (body, done), left) = futures::join!(turn, reader, clients);
            assert!(
                done - left < Duration::from_secs(5),
                "the new turn finishes once the bound is free"
            );
            assert!(body.contains("short answer"), "{body}");
            assert!(body.contains("RUN_FINISHED"), "{body}");
        };
        futures::join!(engines, test);
    })
    .await;
    assert_eq!(total_pending_bytes(), 0);
}
