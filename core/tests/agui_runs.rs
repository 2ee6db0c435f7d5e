//! AG-UI runs through `Runway::handle`, in process: the worker named in the path
//! (`POST /agui/{agentId}`), and the workspace from `forwardedProps.workspaceId` choosing a
//! per-workspace override as a Console turn's `workspaceId` does.

use std::sync::Arc;

use bytes::Bytes;
use runway_core::testing::TestRunway;
use runway_core::{Agent, AgentResult, Outcome, Output, Turn, Workers};
use serde_json::{Value, json};

/// Answers with its name, the worker and the workspace it saw.
struct Named(&'static str);

impl Agent for Named {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        out.text(format!(
            "{} for {} in {}",
            self.0, turn.agent_id, turn.workspace_id
        ));
        Ok(Outcome::Done)
    }
}

fn post(path: &str, body: &Value) -> http::Request<Bytes> {
    http::Request::post(path)
        .header("host", "agent.example.com")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

fn input(run: &str, props: Value) -> Value {
    json!({
        "threadId": format!("t-{run}"),
        "runId": run,
        "messages": [{"id": format!("u-{run}"), "role": "user", "content": "hi"}],
        "forwardedProps": props
    })
}

/// The text of an SSE body's `TEXT_MESSAGE_CONTENT` frames.
fn text(body: &str) -> String {
    body.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|f| serde_json::from_str::<Value>(f).unwrap())
        .filter(|f| f["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|f| f["delta"].as_str().unwrap().to_owned())
        .collect()
}

#[tokio::test]
async fn the_path_names_the_worker_and_forwarded_props_the_workspace() {
    let workers = Workers::new()
        .add("w-a", Named("A"))
        .add("w-b", Named("B"))
        .add_for_workspace("w-a", "ws-x", Arc::new(Named("A for ws-x")));
    let rw = TestRunway::new(workers);

    let got = rw.request(post("/agui/w-a", &input("1", json!({})))).await;
    assert_eq!(got.status, 200);
    assert_eq!(text(&got.body()), "A for w-a in default");
    // RUN_STARTED is in the body before the agent runs (Console's first-frame rule).
    let first = std::str::from_utf8(&got.chunks[0].1).unwrap();
    assert!(
        first.starts_with("data: {\"type\":\"RUN_STARTED\",\"threadId\":\"t-1\",\"runId\":\"1\""),
        "{first}"
    );
    assert!(!first.contains("TEXT_MESSAGE"), "{first}");

    let got = rw
        .request(post(
            "/agui/w-a",
            &input("2", json!({"workspaceId": "ws-x"})),
        ))
        .await;
    assert_eq!(text(&got.body()), "A for ws-x for w-a in ws-x");

    let got = rw.request(post("/agui/w-b", &input("3", json!({})))).await;
    assert_eq!(text(&got.body()), "B for w-b in default");

    let got = rw
        .request(post("/agui/w-zzz", &input("4", json!({}))))
        .await;
    assert_eq!(got.status, 404, "{}", got.body());
    assert!(got.body().contains("w-zzz"), "{}", got.body());

    let got = rw.request(post("/agui", &input("5", json!({})))).await;
    assert_eq!(got.status, 404, "{}", got.body());
    assert!(got.body().contains("/agui/{agentId}"), "{}", got.body());
}

#[tokio::test]
async fn agui_alone_serves_the_only_worker_or_the_one_agent() {
    let rw = TestRunway::new(Workers::new().add("only", Named("O")));
    let got = rw.request(post("/agui", &input("1", json!({})))).await;
    assert_eq!(text(&got.body()), "O for only in default");

    let rw = TestRunway::new(Named("S"));
    let got = rw
        .request(post("/agui", &input("1", json!({"userId": "ada"}))))
        .await;
    assert_eq!(text(&got.body()), "S for default in default");
}
