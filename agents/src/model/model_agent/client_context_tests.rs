//! The model agent with an AG-UI client's `context`, in process (`POST /agui` through the real
//! `Runway`, a scripted model endpoint): the entries reach the model as one system message
//! after the system prompt; a run without context sends none, and an oversized one is a 400.

use bytes::Bytes;
use runway_core::testing::{ScriptedHttp, ScriptedResponse, TestRunway, VirtualRuntime};
use serde_json::{Value, json};

use super::ModelAgent;
use crate::model::settings::ModelSettings;

const COMPLETIONS: &str = "https://api.openai.com/v1/chat/completions";

fn answer(text: &str) -> ScriptedResponse {
    let delta = json!({"choices": [{"index": 0, "delta": {"role": "assistant", "content": text}, "finish_reason": null}]});
    let end = json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]});
    ScriptedResponse::text(format!("data: {delta}\n\ndata: {end}\n\ndata: [DONE]\n\n"))
        .header("content-type", "text/event-stream")
}

fn post(body: &Value) -> http::Request<Bytes> {
    http::Request::post("/agui")
        .header("host", "agent.example.com")
        .body(Bytes::from(body.to_string()))
        .unwrap()
}

fn run(thread: &str, run: &str, context: Value) -> Value {
    json!({"threadId": thread, "runId": run, "context": context,
        "messages": [{"id": format!("{run}-u"), "role": "user", "content": "Which order is open?"}]})
}

#[tokio::test]
async fn the_clients_context_is_one_system_message_after_the_system_prompt() {
    let rt = VirtualRuntime::new();
    let http = ScriptedHttp::new()
        .post(COMPLETIONS, answer("Order 7."))
        .post(COMPLETIONS, answer("None."));
    let mut settings = ModelSettings::new("https://api.openai.com/v1", "gpt-4o-mini").unwrap();
    settings.system_prompt = Some("You help with orders.".into());
    let rw = TestRunway::with(
        ModelAgent::new(settings, rt.clone()),
        rt.clone(),
        runway_core::adapter::Config::unauthenticated(),
    )
    .with_http_client(http.clone());
    let context = json!([
        {"description": "The order open on screen", "value": "{\"id\":7}"},
        {"description": "The user's locale", "value": "vi-VN"}
    ]);
    let got = rw.request(post(&run("t1", "r1", context))).await;
    assert!(got.body().contains("Order 7."), "{}", got.body());
    let sent: Value = serde_json::from_slice(&http.requests()[0].body).unwrap();
    let messages = sent["messages"].as_array().unwrap();
    let roles: Vec<&str> = messages
        .iter()
        .map(|m| m["role"].as_str().unwrap())
        .collect();
    assert_eq!(roles, ["system", "system", "user"]);
    assert!(
        messages[0]["content"]
            .as_str()
            .unwrap()
            .starts_with("You help with orders.")
    );
    assert_eq!(
        messages[1]["content"],
        "Context from the user's application (each entry: what it is, then its value):\n\n\
         The order open on screen:\n{\"id\":7}\n\nThe user's locale:\nvi-VN"
    );
    // Without context, no such message: it is the client's of this run, not the thread's.
    rw.request(post(&run("t1", "r2", json!([])))).await;
    let sent: Value = serde_json::from_slice(&http.requests()[1].body).unwrap();
    let systems = sent["messages"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|m| m["role"] == "system")
        .count();
    assert_eq!(systems, 1);
    // Too much context is refused before anything runs.
    let huge = json!([{"description": "page", "value": "x".repeat(65 * 1024)}]);
    let got = rw.request(post(&run("t2", "r3", huge))).await;
    assert_eq!(got.status, 400, "{}", got.body());
    assert!(
        got.body().contains("context is larger than 64 KiB"),
        "{}",
        got.body()
    );
    assert_eq!(http.requests().len(), 2, "the model is not called");
}
