//! The model agent with an AG-UI client's own tools, in process (`POST /agui` through the real
//! `Runway`, a scripted model endpoint): a call of a client tool ends the run with it pending,
//! the client's result continues the loop on the next run, and each final event reports the
//! model's usage.

use bytes::Bytes;
use runway_core::testing::{ScriptedHttp, ScriptedResponse, TestRunway, VirtualRuntime};
use serde_json::{Value, json};

use super::ModelAgent;
use crate::model::settings::ModelSettings;
use crate::model::tools_file::parse_tools;

const COMPLETIONS: &str = "https://api.openai.com/v1/chat/completions";

/// A chat-completions event stream of `chunks` (each a `choices[0].delta`), then `usage`.
fn stream(deltas: &[Value], finish: &str, usage: Value) -> ScriptedResponse {
    let mut body = String::new();
    for d in deltas {
        let chunk = json!({"choices": [{"index": 0, "delta": d, "finish_reason": null}]});
        body.push_str(&format!("data: {chunk}\n\n"));
    }
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": finish}]});
    body.push_str(&format!("data: {end}\n\n"));
    body.push_str(&format!(
        "data: {}\n\n",
        json!({"choices": [], "usage": usage})
    ));
    body.push_str("data: [DONE]\n\n");
    ScriptedResponse::text(body).header("content-type", "text/event-stream")
}

fn post(body: &Value) -> http::Request<Bytes> {
    http::Request::post("/agui")
        .header("host", "agent.example.com")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

fn frames(body: &str) -> Vec<Value> {
    body.split("\n\n")
        .filter_map(|f| f.strip_prefix("data: "))
        .map(|f| serde_json::from_str::<Value>(f).unwrap())
        .collect()
}

fn agent(rt: &VirtualRuntime, tools_toml: &str) -> ModelAgent<VirtualRuntime> {
    let mut settings = ModelSettings::new("https://api.openai.com/v1", "gpt-4o-mini").unwrap();
    settings.tools = parse_tools(tools_toml, "test", &|_| None).unwrap().tools;
    ModelAgent::new(settings, rt.clone())
}

/// The configured `lookup_order`, which a client tool of the same name must not shadow.
const LOOKUP: &str = r#"
[[tools]]
name = "lookup_order"
description = "Configured lookup"
parameters = { type = "object", properties = { id = { type = "string" } } }
method = "GET"
url = "https://shop.example.com/orders/{id}"
"#;

#[tokio::test]
async fn a_client_tool_call_is_left_for_the_client_and_its_result_continues_the_loop() {
    let rt = VirtualRuntime::new();
    let call = json!({"role": "assistant", "tool_calls": [{"index": 0, "id": "call_abc", "type": "function",
        "function": {"name": "confirm_order", "arguments": "{\"id\":\"7\"}"}}]});
    let http = ScriptedHttp::new()
        .post(
            COMPLETIONS,
            stream(
                &[call],
                "tool_calls",
                json!({"prompt_tokens": 50, "completion_tokens": 9}),
            ),
        )
        .post(
            COMPLETIONS,
            stream(
                &[json!({"role": "assistant", "content": "Order 7 is confirmed."})],
                "stop",
                json!({"prompt_tokens": 70, "completion_tokens": 6, "completion_tokens_details": {"reasoning_tokens": 2}}),
            ),
        );
    let rw = TestRunway::with(
        agent(&rt, LOOKUP),
        rt.clone(),
        runway_core::adapter::Config::unauthenticated(),
    )
    .with_http_client(http.clone());
    let tools = json!([
        {"name": "confirm_order", "description": "Ask the user to confirm", "parameters": {"type": "object", "properties": {"id": {"type": "string"}}}},
        {"name": "lookup_order", "description": "The client's lookup", "parameters": {"type": "object"}}
    ]);
    let first = json!({"threadId": "t1", "runId": "r1", "tools": tools,
        "messages": [{"id": "u1", "role": "user", "content": "Confirm order 7"}]});
    let got = rw.request(post(&first)).await;
    let f = frames(&got.body());
    let types: Vec<&str> = f.iter().map(|f| f["type"].as_str().unwrap()).collect();
    assert!(
        !types.contains(&"TOOL_CALL_RESULT"),
        "never run here: {types:?}"
    );
    let start = f.iter().find(|f| f["type"] == "TOOL_CALL_START").unwrap();
    assert_eq!(
        (&start["toolCallId"], &start["toolCallName"]),
        (&json!("call_abc"), &json!("confirm_order"))
    );
    let last = f.last().unwrap();
    assert_eq!(
        last["outcome"],
        json!({"type": "success", "pendingToolCallIds": ["call_abc"]}),
        "{}",
        got.body()
    );
    assert_eq!(
        last["usage"],
        json!([{"provider": "openai", "model": "gpt-4o-mini", "inputTokens": 50, "outputTokens": 9, "totalTokens": 59}])
    );
    // The model is offered the client's tool beside the configured one, which wins a clash.
    let sent = http.requests();
    let request: Value = serde_json::from_slice(&sent[0].body).unwrap();
    let offered: Vec<(&str, &str)> = request["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["function"]["name"].as_str().unwrap(),
                t["function"]["description"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        offered,
        [
            ("lookup_order", "Configured lookup"),
            ("confirm_order", "Ask the user to confirm")
        ]
    );

    // The client ran it: its result (and only its result) is the next run's input.
    let second = json!({"threadId": "t1", "runId": "r2", "tools": tools, "messages": [
        {"id": "u1", "role": "user", "content": "Confirm order 7"},
        {"id": "call_abc", "role": "assistant", "toolCalls": [{"id": "call_abc", "type": "function", "function": {"name": "confirm_order", "arguments": "{\"id\":\"7\"}"}}]},
        {"id": "t-1", "role": "tool", "toolCallId": "call_abc", "content": "confirmed by Ada"}
    ]});
    let got = rw.request(post(&second)).await;
    let f = frames(&got.body());
    let text: String = f
        .iter()
        .filter(|f| f["type"] == "TEXT_MESSAGE_CONTENT")
        .map(|f| f["delta"].as_str().unwrap())
        .collect();
    assert_eq!(text, "Order 7 is confirmed.");
    let last = f.last().unwrap();
    assert_eq!(last["outcome"], json!({"type": "success"}));
    assert_eq!(last["usage"][0]["reasoningTokens"], 2);
    let sent = http.requests();
    assert_eq!(sent.len(), 2);
    let request: Value = serde_json::from_slice(&sent[1].body).unwrap();
    let roles: Vec<&str> = request["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "user", "assistant", "tool"]);
    assert_eq!(request["messages"][3]["tool_call_id"], "call_abc");
    assert_eq!(request["messages"][3]["content"], "confirmed by Ada");
    // The result is taken once: sent again (a new run), it answers nothing pending.
    let mut again = second.clone();
    again["runId"] = json!("r3");
    let got = rw.request(post(&again)).await;
    assert_eq!(
        frames(&got.body()).last().unwrap()["code"],
        "TOOL_RESULT_UNMATCHED",
        "{}",
        got.body()
    );
    assert_eq!(http.requests().len(), 2, "the model is not called again");
}
