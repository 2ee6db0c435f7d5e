//! AG-UI runs through `Runway::handle`, in process: the worker named in the path
//! (`POST /agui/{agentId}`), and the workspace from `forwardedProps.workspaceId` choosing a
//! per-workspace override as a Console turn's `workspaceId` does.
// Served only in a build with runway-core's `agui` feature (on by default).
#![cfg(feature = "agui")]

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

/// Calls the client's `confirm` tool when offered; answers with the result the client sent.
struct Confirms;

impl Agent for Confirms {
    async fn run(&self, turn: &mut Turn, out: &Output) -> AgentResult {
        turn.usage().provider_model_call(
            "openai",
            "gpt-test",
            runway_core::ModelTokens {
                input: 10,
                output: 4,
                reasoning: 1,
            },
        );
        if let Some(result) = turn.client_tool_results().first() {
            out.text(format!(
                "got {} for {} (input {:?})",
                result.content, result.tool_call_id, turn.input
            ));
            return Ok(Outcome::Done);
        }
        let offered: Vec<&str> = turn
            .client_tools()
            .iter()
            .map(|t| t.name.as_str())
            .collect();
        if offered == ["confirm"] {
            let call = out.start_client_tool_call(format!("ct-{}", turn.run_id), "confirm");
            out.tool_args(&call, "{\"order\":7}");
            out.end_tool_call(&call);
        } else {
            out.text(format!("no client tools: {offered:?}"));
        }
        Ok(Outcome::Done)
    }
}

fn frames(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|f| serde_json::from_str::<Value>(f).unwrap())
        .collect()
}

#[tokio::test]
async fn a_client_tool_call_ends_the_run_and_its_result_continues_the_next() {
    let rw = TestRunway::new(Confirms);
    let tools = json!([{"name": "confirm", "description": "Ask the user", "parameters": {"type": "object"}}]);
    let asked = json!({
        "threadId": "t-ct", "runId": "r1", "tools": tools,
        "messages": [{"id": "u1", "role": "user", "content": "order 7"}]
    });
    let got = rw.request(post("/agui", &asked)).await;
    let f = frames(&got.body());
    let start = f.iter().find(|f| f["type"] == "TOOL_CALL_START").unwrap();
    assert_eq!(
        (&start["toolCallId"], &start["toolCallName"]),
        (&json!("ct-r1"), &json!("confirm"))
    );
    let last = f.last().unwrap();
    assert_eq!(
        last["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["ct-r1"]}),
        "{}",
        got.body()
    );
    assert_eq!(
        last["usage"],
        json!([{"provider": "openai", "model": "gpt-test", "inputTokens": 10, "outputTokens": 4, "totalTokens": 14, "reasoningTokens": 1}])
    );

    // The client answers the call; an unrelated id and a second answer are refused.
    let history = json!([
        {"id": "u1", "role": "user", "content": "order 7"},
        {"id": "ct-r1", "role": "assistant", "toolCalls": [{"id": "ct-r1", "type": "function", "function": {"name": "confirm", "arguments": "{\"order\":7}"}}]},
    ]);
    let with_result = |run: &str, call: &str| {
        let mut messages = history.as_array().unwrap().clone();
        messages.push(json!({"id": format!("tool-{run}"), "role": "tool", "toolCallId": call, "content": "yes"}));
        json!({"threadId": "t-ct", "runId": run, "tools": tools, "messages": messages})
    };
    let got = rw
        .request(post("/agui", &with_result("r2", "ct-nope")))
        .await;
    assert_eq!(
        frames(&got.body()).last().unwrap()["code"],
        "TOOL_RESULT_UNMATCHED",
        "{}",
        got.body()
    );
    // The refused run left the call pending: its answer still continues the loop.
    let got = rw.request(post("/agui", &with_result("r3", "ct-r1"))).await;
    assert_eq!(text(&got.body()), "got yes for ct-r1 (input \"\")");
    assert_eq!(
        frames(&got.body()).last().unwrap()["outcome"],
        json!({"type": "success"})
    );
    let got = rw.request(post("/agui", &with_result("r4", "ct-r1"))).await;
    assert_eq!(
        frames(&got.body()).last().unwrap()["code"],
        "TOOL_RESULT_UNMATCHED",
        "answered already: {}",
        got.body()
    );
}

#[tokio::test]
async fn a_console_turn_offers_no_client_tools_and_reports_no_usage() {
    let rw = TestRunway::new(Confirms);
    let t = rw.send(runway_core::testing::TestTurn::new("hello")).await;
    assert!(t.text().contains("no client tools: []"), "{}", t.text());
    let last = t.last().unwrap();
    assert!(last.get("usage").is_none(), "{last}");
}

/// Says something and calls a tool of its own, every run.
struct Chatty;

impl Agent for Chatty {
    async fn run(&self, _turn: &mut Turn, out: &Output) -> AgentResult {
        out.text("Let me look.");
        let call = out.tool_call("clock", &json!({}));
        out.tool_result(&call, "12:00");
        out.text("It is noon.");
        Ok(Outcome::Done)
    }
}

/// An AG-UI client keeps the whole thread and merges an event into an earlier message or tool
/// call of the same id: the ids of one run are never those of another.
#[tokio::test]
async fn message_and_tool_call_ids_differ_between_runs_of_a_thread() {
    let rw = TestRunway::new(Chatty);
    let ids = |body: &str| {
        frames(body)
            .iter()
            .flat_map(|f| [f["messageId"].as_str(), f["toolCallId"].as_str()])
            .flatten()
            .map(str::to_owned)
            .collect::<std::collections::BTreeSet<_>>()
    };
    let first = ids(&rw
        .request(post("/agui", &input("1", json!({}))))
        .await
        .body());
    let mut next = input("2", json!({}));
    next["threadId"] = json!("t-1");
    let second = ids(&rw.request(post("/agui", &next)).await.body());
    assert!(first.len() >= 4, "{first:?}");
    assert!(first.is_disjoint(&second), "{first:?} {second:?}");
}
